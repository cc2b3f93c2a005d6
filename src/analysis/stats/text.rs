//! The text form of the figures (`mtf stats`, `mtf stats --at-peak`; docs/stats.md): what a
//! person reads on a terminal, every name from the trace escaped.

use std::fmt::Write as _;

use crate::escape::escape_for_terminal;

use super::{
    Clock, LifetimeSummary, Position, SiteOrder, SiteSummary, SizeClass, SpaceSummary, Stats,
};

impl Stats {
    /// The text report, `top` sites per ranking (`mtf stats`).
    pub fn to_text(&self, top: usize) -> String {
        render(self, top)
    }

    /// The state at each namespace's peak, by site, `top` sites (`mtf stats --at-peak`).
    pub fn at_peak_text(&self, top: usize) -> String {
        render_at_peak(self, top)
    }

    /// The live state at the end of the slice, by site, `top` sites (`mtf stats --at`: the
    /// slice opens and closes at the moment).
    pub fn at_moment_text(&self, top: usize) -> String {
        let mut o = String::new();
        for sp in &self.spaces {
            if !sp.has_content() && !sp.has_bytes() {
                continue;
            }
            let _ = writeln!(
                o,
                "namespace {}: live {} in {} blocks before {}",
                sp.name,
                bytes(sp.live_bytes),
                sp.live_blocks,
                at(sp, sp.end)
            );
            let _ = writeln!(o, "  {:>14} {:>9}  site", "live bytes", "blocks");
            let mut shown = 0u64;
            for st in sp.top_sites(SiteOrder::Leaked, top) {
                shown += st.leaked_blocks;
                let _ = writeln!(
                    o,
                    "  {:>14} {:>9}  {}",
                    st.leaked_bytes,
                    st.leaked_blocks,
                    site_label(st)
                );
            }
            if shown < sp.live_blocks {
                let _ = writeln!(
                    o,
                    "  … {} more blocks at other sites (--top N)",
                    sp.live_blocks - shown
                );
            }
        }
        if o.is_empty() {
            o.push_str("nothing live at this moment\n");
        }
        o
    }
}

/// `12345678 bytes (11.8 MiB)`.
fn bytes(n: u128) -> String {
    if n < 1024 {
        return format!("{n} bytes");
    }
    format!("{n} bytes ({})", super::human_bytes(n as f64))
}

/// `data record 123, time 456 ns, line 124 of trace.txt`, escaped for a terminal.
fn at(sp: &SpaceSummary, a: Position) -> String {
    escape_for_terminal(&sp.position(a)).into_owned()
}

fn pct(a: u64, b: u64) -> String {
    if b == 0 {
        String::new()
    } else {
        format!(" ({:.1} %)", a as f64 * 100.0 / b as f64)
    }
}

/// A site's label: its name, else its id, else `(no site)`.
fn site_label(s: &SiteSummary) -> String {
    match (&s.name, s.site) {
        (Some(n), Some(id)) => format!("{} [{id}]", escape_for_terminal(n)),
        (Some(n), None) => escape_for_terminal(n).into_owned(),
        (None, Some(id)) => format!("site {id}"),
        (None, None) => "(no site)".to_string(),
    }
}

/// A log2 class as `[lo, hi]`.
fn class_label(c: &SizeClass) -> String {
    if c.lo == c.hi {
        format!("{}", c.lo)
    } else {
        format!("{}–{}", c.lo, c.hi)
    }
}

fn bar(n: u64, max: u64, width: usize) -> String {
    if max == 0 {
        return String::new();
    }
    let w = ((n as f64 / max as f64) * width as f64).ceil() as usize;
    "█".repeat(w.min(width))
}

fn slice_line(s: &Stats) -> String {
    let mut o = if s.window.is_all() {
        format!("data records {}", s.records)
    } else {
        format!(
            "slice        data records {}..{} ({} data records)",
            s.start.record, s.end.record, s.records
        )
    };
    match s.clock {
        Clock::None => o.push_str("\nclock        none: no record has a declared time"),
        Clock::Constant(t) => {
            let _ = write!(o, "\nclock        none: every declared time is {t}");
        }
        Clock::Moving => {}
    }
    o
}

/// The text report.
fn render(s: &Stats, top: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}", slice_line(s));
    if s.problems > 0 {
        let _ = writeln!(
            o,
            "problems     {} (figures cover what could be decoded; see mtf check)",
            s.problems
        );
    }
    // The heap first: it is what a reader of a trace asks about. Only the namespaces with
    // content are shown (docs/stats.md, *Which namespaces are shown*); the JSON has them all.
    if s.spaces.is_empty() {
        let _ = writeln!(
            o,
            "\nno heap figures: the DTD declares no namespaces of ids (docs/format.md)"
        );
    }
    let shown = s.shown_spaces();
    for sp in &shown {
        render_space(&mut o, sp, top);
    }
    let hidden = s.hidden_spaces();
    if shown.is_empty() && !s.spaces.is_empty() {
        let _ = writeln!(o, "\nno allocations in the slice");
    } else if !hidden.is_empty() {
        let names: Vec<&str> = hidden.iter().map(|sp| sp.name.as_str()).collect();
        let _ = writeln!(
            o,
            "\n(not shown, no bytes allocated: namespace{} {}; -f json has {})",
            if names.len() == 1 { "" } else { "s" },
            names.join(", "),
            if names.len() == 1 { "it" } else { "them" }
        );
    }
    let _ = writeln!(o, "\nrecords per type");
    for t in &s.types {
        let name = if t.section.is_empty() {
            t.name.clone()
        } else {
            format!("{} [{}]", t.name, t.section)
        };
        let _ = writeln!(o, "  {name:<28} {:>12}", t.count);
        for f in &t.fields {
            // A sum of ids, times or threads means nothing: left out (the JSON has it).
            let sum = if f.summable {
                format!("  sum {}", f.sum)
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "      {:<24} count {:>10}  min {:>12}  max {:>20}{sum}",
                f.name, f.count, f.min, f.max
            );
        }
    }
    o
}

fn render_space(o: &mut String, sp: &SpaceSummary, top: usize) {
    if sp.allocations == 0 && sp.frees == 0 && sp.live_blocks == 0 && sp.unknown_frees == 0 {
        let _ = writeln!(o, "\nnamespace {}: no allocations in the slice", sp.name);
        return;
    }
    let _ = writeln!(o, "\nnamespace {}", sp.name);
    let _ = writeln!(
        o,
        "  allocations          {}, {}",
        sp.allocations,
        bytes(sp.bytes_allocated)
    );
    let _ = writeln!(
        o,
        "  frees                {}, {}",
        sp.frees,
        bytes(sp.bytes_freed)
    );
    if sp.moves > 0 {
        let _ = writeln!(o, "  moves                {}", sp.moves);
    }
    if sp.sized {
        let _ = writeln!(
            o,
            "  peak live bytes      {} in {} blocks, at {}",
            bytes(sp.peak_bytes),
            sp.peak_blocks,
            at(sp, sp.peak_at)
        );
    }
    let _ = writeln!(
        o,
        "  most live blocks     {} at {}",
        sp.max_blocks,
        at(sp, sp.max_blocks_at)
    );
    let _ = writeln!(
        o,
        "  alive at the end     {} in {} blocks",
        bytes(sp.live_bytes),
        sp.live_blocks
    );
    let _ = writeln!(
        o,
        "  temporary            {}{}",
        sp.temporary,
        pct(sp.temporary, sp.allocations)
    );
    if sp.unknown_frees > 0 || sp.redefined > 0 {
        let _ = writeln!(
            o,
            "  frees not alive      {}   allocations of live ids {}",
            sp.unknown_frees, sp.redefined
        );
    }
    render_lifetimes(o, sp);
    render_histograms(o, sp);
    render_sites(o, sp, top);
}

/// The lifetimes' mean and quantiles, in data records and in declared time.
fn render_lifetimes(o: &mut String, sp: &SpaceSummary) {
    let unit = sp.time_unit.as_deref();
    let l = &sp.lifetime_records;
    // Quantiles from the HDR histogram (too many distinct lifetimes) are marked.
    let approx = |l: &LifetimeSummary| if l.exact { "" } else { "≈" };
    if l.count > 0 {
        let _ = writeln!(
            o,
            "  lifetime (data records)  mean {:.1}  median {a}{}  p99 {a}{}  max {}",
            l.mean,
            l.median,
            l.p99,
            l.max,
            a = approx(l)
        );
    }
    // Without a clock (times that move) there are no time lifetimes.
    if let Some(l) = sp.lifetime_time.as_ref().filter(|_| sp.clock) {
        let u = unit.unwrap_or("time units");
        let label = format!("lifetime ({u})");
        let _ = writeln!(
            o,
            "  {label:<24} mean {:.1}  median {a}{}  p99 {a}{}  max {}",
            l.mean,
            l.median,
            l.p99,
            l.max,
            a = approx(l)
        );
    }
}

/// The histograms of sizes and lifetimes.
fn render_histograms(o: &mut String, sp: &SpaceSummary) {
    let l = &sp.lifetime_records;
    if sp.sized && !sp.sizes.is_empty() {
        let _ = writeln!(o, "\n  allocation sizes (bytes)        count        bytes");
        let max = sp.sizes.iter().map(|c| c.count).max().unwrap_or(0);
        for c in &sp.sizes {
            let _ = writeln!(
                o,
                "    {:<24} {:>10} {:>12}  {}",
                class_label(c),
                c.count,
                c.bytes,
                bar(c.count, max, 30)
            );
        }
    }
    if !l.histogram.is_empty() {
        let _ = writeln!(o, "\n  lifetimes (data records)       count");
        let max = l.histogram.iter().map(|c| c.count).max().unwrap_or(0);
        for c in &l.histogram {
            let _ = writeln!(
                o,
                "    {:<24} {:>10}  {}",
                class_label(c),
                c.count,
                bar(c.count, max, 30)
            );
        }
    }
}

/// The top sites, by three rankings.
fn render_sites(o: &mut String, sp: &SpaceSummary, top: usize) {
    let named = sp.sites.iter().any(|s| s.site.is_some());
    if named {
        for (title, order) in [
            ("at the peak", SiteOrder::Peak),
            ("alive at the end (leaked)", SiteOrder::Leaked),
            ("allocated", SiteOrder::Allocated),
        ] {
            let _ = writeln!(o, "\n  top sites by bytes {title}");
            let _ = writeln!(
                o,
                "    {:>14} {:>9} {:>14} {:>10} {:>14}  site",
                "peak bytes", "blocks", "leaked bytes", "blocks", "allocated"
            );
            if sp.top_sites(order, 1).next().is_none() {
                let _ = writeln!(o, "    (none)");
            }
            for st in sp.top_sites(order, top) {
                let _ = writeln!(
                    o,
                    "    {:>14} {:>9} {:>14} {:>10} {:>14}  {}",
                    st.peak_bytes,
                    st.peak_blocks,
                    st.leaked_bytes,
                    st.leaked_blocks,
                    st.bytes_allocated,
                    site_label(st)
                );
            }
        }
    }
    // Where the trace has stacks (extension stacks/1), say where to see them.
    if let Some(p) = sp.stacks.as_ref().filter(|p| !p.leaves.is_empty()) {
        let what = if p.contexts {
            "calling contexts"
        } else {
            "call stacks"
        };
        let _ = writeln!(
            o,
            "\n  {what}: {} site{} under {} stack node{} (mtf stats --by stack, mtf flamegraph)",
            p.leaves.len(),
            if p.leaves.len() == 1 { "" } else { "s" },
            p.nodes.len(),
            if p.nodes.len() == 1 { "" } else { "s" }
        );
    }
}

/// `--at-peak`: the state at each namespace's peak, by site.
fn render_at_peak(s: &Stats, top: usize) -> String {
    let mut o = String::new();
    let shown = s.shown_spaces();
    if shown.is_empty() && !s.spaces.is_empty() {
        let _ = writeln!(o, "no allocations in the slice");
    }
    for sp in shown {
        if sp.allocations == 0 && sp.peak_blocks == 0 {
            let _ = writeln!(o, "namespace {}: no allocations in the slice", sp.name);
            continue;
        }
        let _ = writeln!(
            o,
            "namespace {}: peak {} in {} blocks at {}",
            sp.name,
            bytes(sp.peak_bytes),
            sp.peak_blocks,
            at(sp, sp.peak_at)
        );
        let _ = writeln!(o, "  {:>14} {:>9}  site", "live bytes", "blocks");
        for st in sp.top_sites(SiteOrder::Peak, top) {
            let _ = writeln!(
                o,
                "  {:>14} {:>9}  {}",
                st.peak_bytes,
                st.peak_blocks,
                site_label(st)
            );
        }
        let shown: u64 = sp
            .top_sites(SiteOrder::Peak, top)
            .map(|s| s.peak_blocks)
            .sum();
        if shown < sp.peak_blocks {
            let _ = writeln!(
                o,
                "  … {} more blocks at other sites (--top N)",
                sp.peak_blocks - shown
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(site: Option<u64>, name: Option<&str>) -> SiteSummary {
        SiteSummary {
            site,
            name: name.map(str::to_string),
            allocations: 0,
            bytes_allocated: 0,
            peak_bytes: 0,
            peak_blocks: 0,
            max_live_bytes: 0,
            leaked_bytes: 0,
            leaked_blocks: 0,
            temporary: 0,
        }
    }

    #[test]
    fn bytes_are_exact_then_binary_units_from_1024() {
        assert_eq!(bytes(1023), "1023 bytes");
        assert_eq!(bytes(1024), "1024 bytes (1.0 KiB)");
        assert_eq!(bytes(12_345_678), "12345678 bytes (11.8 MiB)");
    }

    #[test]
    fn sites_are_labelled_by_name_then_id_and_escaped() {
        assert_eq!(site_label(&site(Some(7), Some("main"))), "main [7]");
        assert_eq!(site_label(&site(None, Some("main"))), "main");
        assert_eq!(site_label(&site(Some(7), None)), "site 7");
        assert_eq!(site_label(&site(None, None)), "(no site)");
        // A name from the trace never reaches a terminal raw.
        assert!(!site_label(&site(Some(1), Some("a\u{1b}[2Jb"))).contains('\u{1b}'));
    }

    #[test]
    fn classes_and_bars() {
        let c = |lo, hi| SizeClass {
            lo,
            hi,
            count: 0,
            bytes: 0,
        };
        assert_eq!(class_label(&c(8, 8)), "8");
        assert_eq!(class_label(&c(9, 16)), "9–16");
        assert_eq!(bar(0, 0, 30), "");
        assert_eq!(bar(10, 10, 30).chars().count(), 30);
        assert_eq!(bar(1, 10, 30).chars().count(), 3);
        assert_eq!(pct(1, 4), " (25.0 %)");
        assert_eq!(pct(1, 0), "");
    }
}
