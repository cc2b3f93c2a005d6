//! `mtf stats TRACE`: records per type, integer fields, and per namespace the heap figures
//! (peak live bytes and when, totals, leaks, temporary allocations, lifetimes, sizes, top sites).

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;

use metatf::analysis::stats::{
    Clock, Position, SiteOrder, SiteSummary, SizeClass, SpaceSummary, Stats,
};
use metatf::command::stats::StatsOptions;

use super::common::{emit, json_text, stats_with, Failure, SeekArgs, SliceArgs, StatsFormat};
use super::EXIT_OK;

/// Arguments of `mtf stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The trace (`-` for standard input; pipes and compressed traces too).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = StatsFormat::Text)]
    pub format: StatsFormat,
    /// Sites listed per ranking.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Only the state at the peak: live bytes and blocks by site.
    #[arg(long)]
    pub at_peak: bool,
    /// Write to this file instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// The slice.
    #[command(flatten)]
    pub slice: SliceArgs,
    #[command(flatten)]
    pub jobs: super::jobs::JobsArgs,
    /// The seek index whose checkpoints cut the trace for `-j`.
    #[command(flatten)]
    pub seek: SeekArgs,
}

/// Run `mtf stats`.
pub fn run(args: &StatsArgs) -> Result<i32, Failure> {
    // An empty slice is refused before the trace is opened.
    args.slice.window()?;
    let options = StatsOptions {
        slice: args.slice.slice(),
        jobs: args.jobs.jobs(),
        seek: args.seek.options(),
    };
    let stats = stats_with(&args.trace, args.dtd.as_deref(), &options)?;
    let text = match (args.format, args.at_peak) {
        (StatsFormat::Json, false) => json_text(&stats.to_json(args.top)),
        (StatsFormat::Json, true) => json_text(&at_peak_json(&stats, args.top)),
        (StatsFormat::Text, false) => render(&stats, args.top),
        (StatsFormat::Text, true) => render_at_peak(&stats, args.top),
    };
    emit(args.output.as_deref(), &text)?;
    Ok(EXIT_OK)
}

fn at_peak_json(stats: &Stats, top: usize) -> serde_json::Value {
    use serde_json::json;
    json!({
        "schema": "mtf-stats-at-peak/2",
        "namespaces": stats.spaces.iter().map(|s| json!({
            "name": s.name,
            "peak": { "bytes": metatf::analysis::stats::json_bytes(s.peak_bytes), "blocks": s.peak_blocks,
                      "at": metatf::analysis::stats::json_at(s, s.peak_at) },
            "sites": s.top_sites(SiteOrder::Peak, top).map(|x| json!({
                "site": x.site, "name": x.name, "bytes": metatf::analysis::stats::json_bytes(x.peak_bytes), "blocks": x.peak_blocks,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// `12345678 bytes (11.8 MiB)`.
pub fn bytes(n: u128) -> String {
    if n < 1024 {
        return format!("{n} bytes");
    }
    format!(
        "{n} bytes ({})",
        metatf::analysis::stats::human_bytes(n as f64)
    )
}

/// `data record 123, time 456 ns, line 124 of trace.txt`, escaped for a terminal.
pub fn at(sp: &SpaceSummary, a: Position) -> String {
    metatf::escape::escape_for_terminal(&sp.position(a)).into_owned()
}

fn pct(a: u64, b: u64) -> String {
    if b == 0 {
        String::new()
    } else {
        format!(" ({:.1} %)", a as f64 * 100.0 / b as f64)
    }
}

/// A site's label: its name, else its id, else `(no site)`.
pub fn site_label(s: &SiteSummary) -> String {
    match (&s.name, s.site) {
        (Some(n), Some(id)) => format!("{} [{id}]", metatf::escape::escape_for_terminal(n)),
        (Some(n), None) => metatf::escape::escape_for_terminal(n).into_owned(),
        (None, Some(id)) => format!("site {id}"),
        (None, None) => "(no site)".to_string(),
    }
}

/// A log2 class as `[lo, hi]`.
pub fn class_label(c: &SizeClass) -> String {
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
pub fn render(s: &Stats, top: usize) -> String {
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
    let approx = |l: &metatf::analysis::stats::LifetimeSummary| if l.exact { "" } else { "≈" };
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
}

/// `--at-peak`: the state at each namespace's peak, by site.
pub fn render_at_peak(s: &Stats, top: usize) -> String {
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
