//! `mtf replay TRACE`: a trace's allocation events against real allocators, each measured in a
//! fresh child process (this binary, re-executed with the hidden `replay-child` subcommand), and
//! the figures side by side: operations per second, latency percentiles by kind of call, RSS
//! beside the trace's live bytes, fragmentation, page faults.

use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::{Args, ValueEnum};
use serde_json::{json, Value as Json};

use metatf::analysis::event::HeapEvent;
use metatf::io::{escape_path, StdoutSink, TempFile};
use metatf::replay::{
    self, ops, Allocator, OpsBuilder, OpsReader, Report, ThreadMode, TraceSummary,
};
use metatf::Opened;

use super::common::{io_failure, open, Failure};
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// How threads run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Threads {
    /// In the trace's order: each thread waits for its turn (deterministic).
    Ordered,
    /// Each thread as fast as it can (worst-case contention).
    Free,
}

/// Output of `replay` and `simulate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table on the terminal.
    Table,
    /// One JSON document.
    Json,
}

/// Arguments of `mtf replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The trace (`-` for standard input; pipes and compressed traces too).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Allocators to measure, side by side (comma-separated: system, jemalloc, mimalloc).
    #[arg(short, long, value_delimiter = ',', default_value = "system")]
    pub allocator: Vec<String>,
    /// Runs per allocator (each in a fresh process); figures are the median, with the spread.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Threads in the trace's order, or free-running.
    #[arg(long, value_enum, default_value_t = Threads::Ordered)]
    pub threads: Threads,
    /// Write to every page of each new block, so that RSS counts it.
    #[arg(long)]
    pub touch: bool,
    /// Refuse (count, do not make) requests larger than this many bytes (default: the machine's
    /// physical memory).
    #[arg(long, value_name = "BYTES")]
    pub max_block_size: Option<u64>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also draw RSS and the trace's live bytes over the replay, every allocator in one
    /// picture (`.svg` or `.png`).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of the hidden `mtf replay-child`: one measured replay, its report as JSON on
/// standard output.
#[derive(Debug, Args)]
pub struct ChildArgs {
    /// The operations file the parent wrote.
    pub ops: PathBuf,
    /// The allocator.
    #[arg(long)]
    pub allocator: String,
    /// Threads' order.
    #[arg(long, value_enum)]
    pub threads: Threads,
    /// Touch new pages.
    #[arg(long)]
    pub touch: bool,
    /// Largest request made.
    #[arg(long)]
    pub max_block_size: u64,
    /// Sample RSS after every this many operations.
    #[arg(long)]
    pub every: u64,
}

fn mode(t: Threads) -> ThreadMode {
    match t {
        Threads::Ordered => ThreadMode::Ordered,
        Threads::Free => ThreadMode::Free,
    }
}

/// Run the hidden `mtf replay-child`.
pub fn run_child(args: &ChildArgs) -> Result<i32, Failure> {
    let alloc = Allocator::from_name(&args.allocator).ok_or_else(|| {
        super::common::error(
            EXIT_USAGE,
            "mtf::usage::allocator",
            format!("unknown allocator {}", args.allocator),
        )
    })?;
    let file = std::fs::File::open(&args.ops).map_err(|e| {
        super::common::error(
            EXIT_USAGE,
            "mtf::io::ops",
            format!("{}: {e}", escape_path(&args.ops)),
        )
    })?;
    let reader = OpsReader::new(BufReader::with_capacity(1 << 20, file)).map_err(|e| {
        super::common::error(
            EXIT_USAGE,
            "mtf::io::ops",
            format!("{}: {e}", escape_path(&args.ops)),
        )
    })?;
    let options = replay::Options {
        threads: mode(args.threads),
        touch: args.touch,
        max_block_size: args.max_block_size,
        sample_every: args.every,
    };
    let (threads, count) = (reader.threads, reader.count);
    let report = replay::run(alloc, &options, threads, count, reader)
        .map_err(|e| Failure::diagnostic(EXIT_USAGE, &e))?;
    let text = serde_json::to_string(&report).map_err(|e| {
        super::common::error(
            EXIT_USAGE,
            "mtf::io::report",
            format!("writing the report: {e}"),
        )
    })?;
    let mut out = StdoutSink::new();
    writeln!(out, "{text}")?;
    out.flush()?;
    Ok(EXIT_OK)
}

/// The machine's physical memory in bytes (1 TiB where it cannot be told).
fn physical_memory() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(1 << 40, |kb| kb * 1024)
}

/// What reading a trace's heap events met besides the events.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Reading {
    /// Records that could not be decoded (and damaged regions).
    pub problems: u64,
    /// Lines the import kept verbatim (`import_raw` records): not events.
    pub raw_lines: u64,
    /// Where the interpreter stopped at its limit of tracked ids (the events after it are
    /// missing).
    pub stopped_at: Option<u64>,
    /// Frees (and reallocs) of ids that were not live: no event, counted here from the
    /// interpreter's findings. A free of the null id is neither.
    pub unknown_frees: u64,
}

/// The heap events of an opened trace's blocks — the namespaces of ids its DTD declares with
/// byte counts (docs/format.md §14) — in trace order, each handed to `f`.
pub(super) fn for_each_event(
    opened: &Opened,
    trace: &Path,
    mut f: impl FnMut(&HeapEvent),
) -> Result<Reading, Failure> {
    use metatf::analysis::{Interpreter, Sink, SpaceKind};
    use metatf::decode::Event;

    struct Blocks<'a, F> {
        f: &'a mut F,
        sized: Vec<bool>,
        unknown: u64,
        /// The current record's position among the data records (docs/stats.md, *Positions*):
        /// the events' `record`, the same for every encoding of the trace.
        data: u64,
    }
    impl<F: FnMut(&HeapEvent)> Blocks<'_, F> {
        fn sized(&self, space: u32) -> bool {
            self.sized.get(space as usize).copied().unwrap_or(false)
        }
    }
    impl<F: FnMut(&HeapEvent)> Sink for Blocks<'_, F> {
        fn event(&mut self, mut e: HeapEvent) {
            if self.sized(e.space) {
                e.record = self.data;
                (self.f)(&e);
            }
        }
        fn finding(&mut self, finding: metatf::analysis::Finding) {
            if finding.kind == metatf::analysis::FindingKind::NotAlive
                && finding.space.is_some_and(|s| self.sized(s))
            {
                self.unknown += 1;
            }
        }
    }

    let reader = opened.reader();
    let schema = reader.schema();
    let mut interp = Interpreter::new(schema);
    let sized: Vec<bool> = interp
        .namespaces()
        .iter()
        .map(|n| n.kind == SpaceKind::Ids && n.sized)
        .collect();
    if !sized.contains(&true) {
        return Err(super::common::error(
            EXIT_USAGE,
            "mtf::usage::analysis",
            format!(
                "{}: its DTD declares no allocations (no namespace of ids with byte counts, \
                 extension analysis/1 of docs/format.md §14), so there is nothing to replay",
                escape_path(trace)
            ),
        ));
    }
    let raw = schema
        .records
        .iter()
        .position(|r| r.name == "import_raw")
        .map(|i| i as metatf::dtd::RecordId);
    let mut sink = Blocks {
        f: &mut f,
        sized,
        unknown: 0,
        data: 0,
    };
    let mut reading = Reading::default();
    let mut records = reader.records();
    while let Some(ev) = records.next() {
        match ev {
            Event::Record(v) => {
                if Some(v.record_id()) == raw {
                    reading.raw_lines += 1;
                }
                interp.record(&v, &mut sink);
                if interp.stopped() && reading.stopped_at.is_none() {
                    reading.stopped_at = Some(sink.data);
                }
                if v.is_data() {
                    sink.data += 1;
                }
            }
            Event::Problem(_) | Event::Damage(_) => reading.problems += 1,
        }
    }
    reading.problems += records.dropped_problems();
    reading.unknown_frees = sink.unknown;
    Ok(reading)
}

/// Says on standard error what the events leave out.
pub(super) fn warn_reading(trace: &Path, r: &Reading) {
    let name = escape_path(trace);
    if r.problems > 0 {
        super::common::line_to_stderr(&format!(
            "mtf: {name}: {} records could not be decoded and are not replayed (mtf check shows them)",
            r.problems
        ));
    }
    if r.raw_lines > 0 {
        super::common::line_to_stderr(&format!(
            "mtf: {name}: {} lines the import kept verbatim (not records of the format, or values \
             too wide for its DTD) are not replayed",
            r.raw_lines
        ));
    }
    if let Some(at) = r.stopped_at {
        super::common::line_to_stderr(&format!(
            "mtf: {name}: too many live ids to track: the events after data record {at} are missing"
        ));
    }
}

/// One allocator's runs.
struct Runs {
    alloc: Allocator,
    reports: Vec<Report>,
    failures: Vec<String>,
}

/// Run `mtf replay`.
pub fn run(args: &ReplayArgs) -> Result<i32, Failure> {
    let mut allocs = Vec::new();
    for name in &args.allocator {
        match Allocator::from_name(name.trim()) {
            Some(a) if !allocs.contains(&a) => allocs.push(a),
            Some(_) => {}
            None => {
                let have: Vec<&str> = Allocator::available().iter().map(|a| a.name()).collect();
                return Err(super::common::error(
                    EXIT_USAGE,
                    "mtf::usage::allocator",
                    format!(
                        "unknown allocator '{}': this mtf has {}",
                        metatf::escape::escape_for_terminal(name),
                        have.join(", ")
                    ),
                ));
            }
        }
    }
    if let Some(out) = &args.output {
        picture_format(out)?;
    }
    let max_block_size = args.max_block_size.unwrap_or_else(physical_memory);
    let opened = open(&args.trace, args.dtd.as_deref())?;

    // The operations, decoded once into a temporary file that every child reads.
    let temp = TempFile::new().map_err(|e| io_failure(&e))?;
    let write_failure = |e: std::io::Error| {
        super::common::error(
            EXIT_USAGE,
            "mtf::io::temp",
            format!("writing the replay operations to a temporary file: {e}"),
        )
    };
    let mut builder = OpsBuilder::new();
    let reading = {
        let mut w = BufWriter::with_capacity(1 << 20, temp.file());
        ops::write_ops_header(&mut w).map_err(write_failure)?;
        let mut err = None;
        let reading = for_each_event(&opened, &args.trace, |e| {
            let op = builder.op(e);
            if err.is_none() {
                err = ops::write_op(&mut w, &op).err();
            }
        })?;
        if let Some(e) = err {
            return Err(write_failure(e));
        }
        ops::finish_ops_header(&mut w, builder.threads(), builder.events())
            .map_err(write_failure)?;
        w.flush().map_err(write_failure)?;
        drop(w);
        let mut file = temp.file();
        ops::mark_last_ops(&mut file, builder.last_ops()).map_err(write_failure)?;
        reading
    };
    warn_reading(&args.trace, &reading);
    let problems = reading.problems + u64::from(reading.stopped_at.is_some());
    drop(opened);
    let mut summary = builder.finish();
    summary.unknown_frees += reading.unknown_frees;

    let exe = std::env::current_exe().map_err(|e| {
        super::common::error(
            EXIT_USAGE,
            "mtf::io::exe",
            format!("finding the mtf executable to run: {e}"),
        )
    })?;
    let mut runs: Vec<Runs> = allocs
        .iter()
        .map(|&alloc| Runs {
            alloc,
            reports: Vec::new(),
            failures: Vec::new(),
        })
        .collect();
    // Round-robin over the allocators, so that a drift of the machine touches each alike.
    for _ in 0..args.repeat {
        for r in runs.iter_mut() {
            match child(
                &exe,
                temp.path(),
                r.alloc,
                args,
                max_block_size,
                summary.every,
            ) {
                Ok(report) => r.reports.push(report),
                Err(msg) => r.failures.push(msg),
            }
        }
    }

    if let Some(out) = &args.output {
        let title = format!(
            "mtf replay {}: RSS and live bytes",
            escape_path(&args.trace)
        );
        write_picture(out, &title, &summary.live, &runs_for_plot(&runs))?;
    }
    let mut w = StdoutSink::new();
    match args.format {
        Format::Json => {
            let doc = json!({
                "trace": escape_path(&args.trace).to_string(),
                "summary": summary,
                "undecodable_records": problems,
                "threads": match args.threads { Threads::Ordered => "ordered", Threads::Free => "free" },
                "touch": args.touch,
                "max_block_size": max_block_size,
                "allocators": runs.iter().map(|r| json!({
                    "allocator": r.alloc.name(),
                    "median": medians(&r.reports),
                    "runs": r.reports,
                    "failures": r.failures,
                })).collect::<Vec<_>>(),
            });
            writeln!(
                w,
                "{}",
                serde_json::to_string_pretty(&doc).unwrap_or_default()
            )?;
        }
        Format::Table => table(&mut w, &summary, problems, &runs, args)?,
    }
    w.flush()?;
    let failed = runs.iter().any(|r| !r.failures.is_empty());
    for r in &runs {
        for f in &r.failures {
            super::common::line_to_stderr(&super::common::error_text(
                "mtf::replay::failed",
                format!("{}: {f}", r.alloc.name()),
            ));
        }
    }
    Ok(if failed || problems > 0 {
        EXIT_INVALID_TRACE
    } else {
        EXIT_OK
    })
}

fn runs_for_plot(runs: &[Runs]) -> Vec<(&'static str, &Report)> {
    runs.iter()
        .filter_map(|r| median_run(&r.reports).map(|rep| (r.alloc.name(), rep)))
        .collect()
}

/// The run whose wall time is the median.
fn median_run(reports: &[Report]) -> Option<&Report> {
    let mut v: Vec<&Report> = reports.iter().collect();
    v.sort_by_key(|r| r.wall_ns);
    v.get(v.len() / 2).copied()
}

/// One measured replay in a fresh process.
fn child(
    exe: &Path,
    ops: &Path,
    alloc: Allocator,
    args: &ReplayArgs,
    max_block_size: u64,
    every: u64,
) -> Result<Report, String> {
    let mut cmd = Command::new(exe);
    cmd.arg("replay-child")
        .arg(ops)
        .arg("--allocator")
        .arg(alloc.name())
        .arg("--threads")
        .arg(match args.threads {
            Threads::Ordered => "ordered",
            Threads::Free => "free",
        })
        .arg("--max-block-size")
        .arg(max_block_size.to_string())
        .arg("--every")
        .arg(every.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if args.touch {
        cmd.arg("--touch");
    }
    let out = cmd
        .output()
        .map_err(|e| format!("could not start {}: {e}", escape_path(exe)))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "the measuring process failed ({}): {}",
            out.status,
            err.trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("unreadable report: {e}"))
}

fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The median of a figure over runs, and its spread: (max − min) / median.
fn med_spread(reports: &[Report], f: impl Fn(&Report) -> f64) -> (f64, f64) {
    let v: Vec<f64> = reports.iter().map(f).collect();
    let m = median(v.clone());
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let spread = if m > 0.0 && v.len() > 1 {
        (hi - lo) / m
    } else {
        0.0
    };
    (m, spread)
}

fn medians(reports: &[Report]) -> Json {
    let ms = |f: &dyn Fn(&Report) -> f64| {
        let (m, s) = med_spread(reports, f);
        json!({"median": m, "spread": s})
    };
    let mut lat = serde_json::Map::new();
    for kind in ["alloc", "free", "realloc"] {
        if reports.iter().any(|r| r.latency_of(kind).is_some()) {
            let q = |g: fn(&replay::Latency) -> u64| {
                ms(&|r: &Report| r.latency_of(kind).map_or(0.0, |l| g(l) as f64))
            };
            lat.insert(
                kind.to_string(),
                json!({
                    "p50_ns": q(|l| l.p50_ns),
                    "p99_ns": q(|l| l.p99_ns),
                    "p999_ns": q(|l| l.p999_ns),
                }),
            );
        }
    }
    json!({
        "runs": reports.len(),
        "wall_ms": ms(&|r| r.wall_ns as f64 / 1e6),
        "ops_per_sec": ms(&|r| r.ops_per_sec()),
        "calls_per_sec": ms(&|r| r.calls_per_sec()),
        "peak_rss": ms(&|r| r.peak_rss as f64),
        "peak_rss_above_baseline": ms(&|r| r.peak_rss.saturating_sub(r.rss_baseline) as f64),
        "fragmentation_at_peak": ms(&|r| r.fragmentation_at_peak().unwrap_or(0.0)),
        "minor_faults": ms(&|r| r.minor_faults as f64),
        "major_faults": ms(&|r| r.major_faults as f64),
        "latency": lat,
    })
}

fn mib(b: f64) -> String {
    format!("{:.1}", b / (1024.0 * 1024.0))
}

fn pct(s: f64) -> String {
    format!("±{:.0}%", s * 50.0)
}

fn table(
    w: &mut StdoutSink,
    s: &TraceSummary,
    problems: u64,
    runs: &[Runs],
    args: &ReplayArgs,
) -> Result<(), Failure> {
    writeln!(
        w,
        "trace: {} events ({} allocs, {} frees, {} reallocs, {} moves) on {} thread{}; \
         peak live {} bytes after event {}",
        s.events,
        s.allocs,
        s.frees,
        s.reallocs,
        s.moves,
        s.threads,
        if s.threads == 1 { "" } else { "s" },
        s.peak_live,
        s.peak_event
    )?;
    if s.unknown_frees > 0 {
        writeln!(
            w,
            "       {} frees or reallocs of blocks not live in the trace (allocated before tracing began): skipped",
            s.unknown_frees
        )?;
    }
    if problems > 0 {
        writeln!(
            w,
            "       {problems} records could not be decoded (mtf check shows them)"
        )?;
    }
    let threads = match args.threads {
        Threads::Ordered => "in trace order",
        Threads::Free => "free-running",
    };
    writeln!(
        w,
        "replay: threads {threads}{}; {} run{} per allocator, each in a fresh process; \
         median (± half the range)",
        if args.touch { ", pages touched" } else { "" },
        args.repeat,
        if args.repeat == 1 { "" } else { "s" }
    )?;
    for r in runs {
        if let Some(first) = r.reports.first() {
            let c = &first.counts;
            if c.refused > 0 || c.failed > 0 {
                let largest = first
                    .largest_refused
                    .map(|(rec, size)| format!(" (largest {size} bytes, data record {rec})"))
                    .unwrap_or_default();
                writeln!(
                    w,
                    "{}: {} requests refused as larger than --max-block-size or impossible{largest}; \
                     {} answered with no memory",
                    r.alloc.name(),
                    c.refused,
                    c.failed
                )?;
            }
        }
    }
    writeln!(w)?;
    writeln!(
        w,
        "{:<9} {:>13} {:>16} {:>16} {:>14} {:>13} {:>12} {:>6}",
        "allocator",
        "wall ms",
        "ops/s",
        "calls/s in call",
        "peak RSS MiB",
        "RSS/live@pk",
        "minflt",
        "majflt"
    )?;
    for r in runs {
        if r.reports.is_empty() {
            writeln!(w, "{:<9} (no run succeeded)", r.alloc.name())?;
            continue;
        }
        let rs = &r.reports;
        let (wall, ws) = med_spread(rs, |r| r.wall_ns as f64 / 1e6);
        let (ops, os) = med_spread(rs, |r| r.ops_per_sec());
        let (calls, cs) = med_spread(rs, |r| r.calls_per_sec());
        let (rss, _) = med_spread(rs, |r| r.peak_rss.saturating_sub(r.rss_baseline) as f64);
        let (frag, _) = med_spread(rs, |r| r.fragmentation_at_peak().unwrap_or(0.0));
        let (minflt, _) = med_spread(rs, |r| r.minor_faults as f64);
        let (majflt, _) = med_spread(rs, |r| r.major_faults as f64);
        writeln!(
            w,
            "{:<9} {:>13} {:>16} {:>16} {:>14} {:>13} {:>12} {:>6}",
            r.alloc.name(),
            format!("{wall:.1} {}", pct(ws)),
            format!("{:.0} {}", ops, pct(os)),
            format!("{:.0} {}", calls, pct(cs)),
            mib(rss),
            format!("{frag:.2}"),
            format!("{minflt:.0}"),
            format!("{majflt:.0}"),
        )?;
    }
    writeln!(w)?;
    writeln!(
        w,
        "{:<9} {:<8} {:>10} {:>9} {:>9} {:>9} {:>10}",
        "latency", "call", "calls", "p50 ns", "p99 ns", "p99.9 ns", "max ns"
    )?;
    for r in runs {
        for kind in ["alloc", "free", "realloc"] {
            let rs: Vec<&Report> = r
                .reports
                .iter()
                .filter(|x| x.latency_of(kind).is_some())
                .collect();
            if rs.is_empty() {
                continue;
            }
            let q = |g: fn(&replay::Latency) -> u64| {
                median(
                    rs.iter()
                        .filter_map(|x| x.latency_of(kind).map(|l| g(l) as f64))
                        .collect(),
                )
            };
            writeln!(
                w,
                "{:<9} {:<8} {:>10.0} {:>9.0} {:>9.0} {:>9.0} {:>10.0}",
                r.alloc.name(),
                kind,
                q(|l| l.count),
                q(|l| l.p50_ns),
                q(|l| l.p99_ns),
                q(|l| l.p999_ns),
                q(|l| l.max_ns),
            )?;
        }
    }
    Ok(())
}

#[cfg(feature = "plot")]
type PictureFormat = metatf::replay::plot::PictureFormat;
#[cfg(not(feature = "plot"))]
type PictureFormat = ();

/// The picture format `-o` names, or a usage error.
pub(super) fn picture_format(out: &Path) -> Result<PictureFormat, Failure> {
    #[cfg(feature = "plot")]
    {
        PictureFormat::of(out).ok_or_else(|| {
            super::common::error(
                EXIT_USAGE,
                "mtf::usage::output",
                format!(
                    "{}: a picture is written as .svg or .png (the name's extension says which)",
                    escape_path(out)
                ),
            )
        })
    }
    #[cfg(not(feature = "plot"))]
    Err(super::common::error(
        EXIT_USAGE,
        "mtf::usage::output",
        format!(
            "{}: this mtf was built without pictures (feature plot)",
            escape_path(out)
        ),
    ))
}

/// Draws the trace's live bytes and each run's RSS into `out` (written atomically).
pub(super) fn write_picture(
    out: &Path,
    title: &str,
    live: &[metatf::simulate::Sample],
    runs: &[(&str, &Report)],
) -> Result<(), Failure> {
    #[cfg(feature = "plot")]
    {
        let format = picture_format(out)?;
        let bytes = metatf::replay::plot::chart(format, title, live, runs)
            .map_err(|e| Failure::diagnostic(EXIT_USAGE, &e))?;
        let mut o = metatf::io::Output::create(out).map_err(|e| io_failure(&e))?;
        o.write_all(&bytes).map_err(|e| io_failure(&o.error(e)))?;
        o.commit().map_err(|e| io_failure(&e))
    }
    #[cfg(not(feature = "plot"))]
    {
        let _ = (title, live, runs);
        picture_format(out).map(|_| ())
    }
}
