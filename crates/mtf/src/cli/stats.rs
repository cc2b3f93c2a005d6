//! `mtf stats TRACE`: records per type, integer fields, and per namespace the heap figures
//! (peak live bytes and when, totals, leaks, temporary allocations, lifetimes, sizes, top sites).

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use metatf::analysis::stats::{
    compute_from, At, Bound, Clock, SiteOrder, SiteSummary, SizeClass, SpaceSummary, Stats, Window,
};
use metatf::io::{Output, StdoutSink};

use super::common::{io_failure, Failure};
use super::heap::source_for;
use super::EXIT_OK;

/// Output format of `mtf stats` and `mtf diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StatsFormat {
    /// Tables for people.
    Text,
    /// One JSON document (schema in docs/stats.md).
    Json,
}

/// The slice of a trace: `--from`/`--to`.
#[derive(Debug, Args, Clone)]
pub struct SliceArgs {
    /// Start at this record index (`1234`) or declared time (`t1234`), inclusive.
    #[arg(long, value_name = "RECORD|tTIME")]
    pub from: Option<Bound>,
    /// End before this record index (`1234`) or declared time (`t1234`).
    #[arg(long, value_name = "RECORD|tTIME")]
    pub to: Option<Bound>,
}

impl SliceArgs {
    /// The window; an empty one (`--from` at or after `--to`, both records or both times) is
    /// a usage error.
    pub fn window(&self) -> Result<Window, Failure> {
        let empty = match (self.from, self.to) {
            (Some(Bound::Record(a)), Some(Bound::Record(b)))
            | (Some(Bound::Time(a)), Some(Bound::Time(b))) => a >= b,
            _ => false,
        };
        if empty {
            return Err(super::common::error(
                super::EXIT_USAGE,
                "mtf::usage::slice",
                "the slice is empty: --from must come before --to (--to is exclusive)",
            ));
        }
        Ok(Window {
            from: self.from,
            to: self.to,
        })
    }

    /// A slice by time needs a clock: a trace whose DTD declares no time (docs/format.md
    /// §14.4) is refused at once (`stats` also refuses a declared time that never moves, which
    /// only a pass can tell).
    pub fn need_declared_time(
        &self,
        schema: &metatf::dtd::Schema,
        trace: &Path,
    ) -> Result<(), Failure> {
        let by_time = [self.from, self.to].into_iter().find_map(|b| match b {
            Some(Bound::Time(t)) => Some(t),
            _ => None,
        });
        match by_time {
            Some(t) if schema.analysis.time_unit.is_none() => Err(super::common::error(
                super::EXIT_USAGE,
                "mtf::usage::no_clock",
                format!(
                    "{}: cannot slice by time (t{t}): the trace's DTD declares no time \
                     (docs/format.md §14.4); slice by record instead (--from N, --to N)",
                    metatf::escape::escape_path(trace)
                ),
            )),
            _ => Ok(()),
        }
    }
}

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
    pub seek: super::index::SeekArgs,
}

/// Opens a trace and computes its statistics.
pub fn stats_of(trace: &Path, dtd: Option<&Path>, window: Window) -> Result<Stats, Failure> {
    stats_on(
        trace,
        dtd,
        window,
        &super::jobs::JobsArgs::one(),
        &super::index::SeekArgs::default(),
    )
}

/// [`stats_of`], decoding on `jobs` threads (the heap events are interpreted here, in order).
pub fn stats_on(
    trace: &Path,
    dtd: Option<&Path>,
    window: Window,
    jobs: &super::jobs::JobsArgs,
    seek: &super::index::SeekArgs,
) -> Result<Stats, Failure> {
    // One pass in order unless -j asks for more threads or an index is there to cut at.
    let stream = jobs.jobs.is_none_or(|j| j == 1) && !super::index::has_index(trace, seek);
    // A damaged trace (cut short by a crashed tracer, plain or compressed) is read as dump and
    // check read it: the figures are those of the records it holds, the damage reported, and
    // the command exits 1 once its output is written.
    super::common::defer_damage();
    let (o, damaged) = super::common::open_for_pass(trace, dtd, true, stream)?;
    if damaged {
        super::common::mark_damaged();
    }
    let reader = o.reader();
    let mut source = source_for(&o)?;
    let jobs = &jobs.decide(true);
    let index = if jobs.threads() > 1 {
        super::index::load_for(trace, seek)
    } else {
        None
    };
    let plan = super::jobs::plan(&reader, jobs, index.as_ref());
    let stats = super::jobs::with_events(&o, &reader, plan.as_ref(), jobs, false, |records| {
        compute_from(&reader, records, source.as_mut(), window)
    });
    check_slice(trace, &stats)?;
    super::common::warn_other_dtd(trace, dtd, &o, stats.problems);
    Ok(stats)
}

/// A slice by time needs a clock: without one (no record has a time, or every time is the
/// same) it is refused, as it would be empty or the whole trace by accident. A `--from` past the
/// end is said on standard error (the figures are those of an empty slice, as `mtf dump`'s).
fn check_slice(trace: &Path, stats: &Stats) -> Result<(), Failure> {
    let name = metatf::escape::escape_path(trace);
    let w = stats.window;
    let by_time = [w.from, w.to].into_iter().find_map(|b| match b {
        Some(Bound::Time(t)) => Some(t),
        _ => None,
    });
    if let Some(t) = by_time {
        let why = match stats.clock {
            Clock::Moving => None,
            Clock::None => Some("no record has a declared time".to_string()),
            Clock::Constant(c) => Some(format!("every declared time is {c}")),
        };
        if let Some(why) = why {
            return Err(super::common::error(
                super::EXIT_USAGE,
                "mtf::usage::no_clock",
                format!(
                    "{name}: cannot slice by time (t{t}): the trace has no clock ({why}); \
                     slice by data record instead (--from N, --to N)"
                ),
            ));
        }
    }
    if stats.records == 0 && stats.start.record >= stats.data_records {
        let past = match w.from {
            Some(Bound::Record(r)) => Some(format!("data record {r}")),
            Some(Bound::Time(t)) => Some(format!("time {t}")),
            None => None,
        };
        if let Some(past) = past {
            super::common::line_to_stderr(&format!(
                "{name}: no data record at or after --from ({past}): the trace has {} data records{}",
                stats.data_records,
                match (stats.clock, stats.end.time) {
                    (Clock::Moving, Some(t)) => format!(", the last time is {t}"),
                    _ => String::new(),
                }
            ));
        }
    }
    Ok(())
}

/// Writes `text` to `output` (a file through [`Output`], atomically) or standard output.
pub fn emit(output: Option<&Path>, text: &str) -> Result<(), Failure> {
    match output {
        Some(p) if p.as_os_str() != "-" => {
            let mut out = Output::create(p).map_err(|e| io_failure(&e))?;
            out.write_all(text.as_bytes())
                .map_err(|e| io_failure(&out.error(e)))?;
            out.commit().map_err(|e| io_failure(&e))
        }
        _ => {
            let mut out = StdoutSink::new();
            out.write_all(text.as_bytes())?;
            out.finish()?;
            Ok(())
        }
    }
}

/// Run `mtf stats`.
pub fn run(args: &StatsArgs) -> Result<i32, Failure> {
    let stats = stats_on(
        &args.trace,
        args.dtd.as_deref(),
        args.slice.window()?,
        &args.jobs,
        &args.seek,
    )?;
    let text = match (args.format, args.at_peak) {
        (StatsFormat::Json, false) => json_text(&stats.to_json(args.top)),
        (StatsFormat::Json, true) => json_text(&at_peak_json(&stats, args.top)),
        (StatsFormat::Text, false) => render(&stats, args.top),
        (StatsFormat::Text, true) => render_at_peak(&stats, args.top),
    };
    emit(args.output.as_deref(), &text)?;
    Ok(EXIT_OK)
}

/// Pretty JSON with a final newline.
pub fn json_text(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
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
pub fn at(sp: &SpaceSummary, a: At) -> String {
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
    let unit = sp.time_unit.as_deref();
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
