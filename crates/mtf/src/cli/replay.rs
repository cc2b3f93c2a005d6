//! `mtf replay TRACE`: a trace's allocation events against real allocators, each measured in a
//! fresh child process (this binary, re-executed with the hidden `replay-child` subcommand), and
//! the figures side by side: operations per second, latency percentiles by kind of call, RSS
//! beside the trace's live bytes, fragmentation, page faults.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde_json::{json, Value as Json};

use metatf::command::replay::{
    median, prepare, run_child as measure, thread_mode_name, ChildOptions, Prepared, ReplayOptions,
    ReplayRunError, Replayed, Runs,
};
use metatf::io::{escape_path, StdoutSink};
use metatf::replay::{self, Allocator, Report, ThreadMode, TraceSummary};

use super::blocks::{picture_format, warn_reading, Format};
use super::common::{error, error_text, io_failure, line_to_stderr, open, Failure};
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// How threads run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Threads {
    /// In the trace's order: each thread waits for its turn (deterministic).
    Ordered,
    /// Each thread as fast as it can (worst-case contention).
    Free,
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

/// The failure for a replay error: the trace named before a missing declaration, an I/O
/// error as every I/O error, the rest in their own words (status 2).
fn replay_failure(trace: &Path, e: &ReplayRunError) -> Failure {
    match e {
        ReplayRunError::NoAllocations(e) => error(
            EXIT_USAGE,
            "mtf::usage::analysis",
            format!("{}: {e}", escape_path(trace)),
        ),
        ReplayRunError::Temp(e) => io_failure(e),
        e => Failure::diagnostic(EXIT_USAGE, e),
    }
}

/// Run the hidden `mtf replay-child`.
pub fn run_child(args: &ChildArgs) -> Result<i32, Failure> {
    let alloc = Allocator::from_name(&args.allocator).ok_or_else(|| {
        error(
            EXIT_USAGE,
            "mtf::usage::allocator",
            format!("unknown allocator {}", args.allocator),
        )
    })?;
    let options = ChildOptions {
        threads: mode(args.threads),
        touch: args.touch,
        max_block_size: args.max_block_size,
        sample_every: args.every,
    };
    let report = measure(&args.ops, alloc, &options).map_err(|e| match e {
        ReplayRunError::Run(e) => Failure::diagnostic(EXIT_USAGE, &e),
        e => Failure::diagnostic(EXIT_USAGE, &e),
    })?;
    let text = serde_json::to_string(&report).map_err(|e| {
        error(
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

/// The allocators `names` choose, each once, in the order named.
fn allocators(names: &[String]) -> Result<Vec<Allocator>, Failure> {
    let mut allocs = Vec::new();
    for name in names {
        match Allocator::from_name(name.trim()) {
            Some(a) if !allocs.contains(&a) => allocs.push(a),
            Some(_) => {}
            None => {
                let have: Vec<&str> = Allocator::available().iter().map(|a| a.name()).collect();
                return Err(error(
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
    Ok(allocs)
}

/// Run `mtf replay`.
pub fn run(args: &ReplayArgs) -> Result<i32, Failure> {
    let options = ReplayOptions {
        allocators: allocators(&args.allocator)?,
        repeat: args.repeat,
        threads: mode(args.threads),
        touch: args.touch,
        max_block_size: args.max_block_size,
        executable: None,
    };
    if let Some(out) = &args.output {
        picture_format(out)?;
    }
    let opened = open(&args.trace, args.dtd.as_deref())?;
    // The operations, decoded once into a temporary file that every child reads.
    let prepared = prepare(&opened).map_err(|e| replay_failure(&args.trace, &e))?;
    warn_reading(&args.trace, &prepared.reading);
    drop(opened);
    let replayed = prepared
        .run(&options)
        .map_err(|e| replay_failure(&args.trace, &e))?;
    if let Some(out) = &args.output {
        let title = format!(
            "mtf replay {}: RSS and live bytes",
            escape_path(&args.trace)
        );
        let runs: Vec<(&str, &Report)> = replayed
            .runs
            .iter()
            .filter_map(|r| r.median_run().map(|rep| (r.alloc.name(), rep)))
            .collect();
        write_picture(out, &title, &prepared.summary.live, &runs)?;
    }
    let mut w = StdoutSink::new();
    match args.format {
        Format::Json => json_out(&mut w, args, &prepared, &replayed)?,
        Format::Table => table(&mut w, args, &prepared, &replayed)?,
    }
    w.flush()?;
    let failed = replayed.runs.iter().any(|r| !r.failures.is_empty());
    for r in &replayed.runs {
        for f in &r.failures {
            line_to_stderr(&error_text(
                "mtf::replay::failed",
                format!("{}: {f}", r.alloc.name()),
            ));
        }
    }
    Ok(if failed || prepared.reading.problems() > 0 {
        EXIT_INVALID_TRACE
    } else {
        EXIT_OK
    })
}

fn json_out(
    w: &mut StdoutSink,
    args: &ReplayArgs,
    prepared: &Prepared,
    replayed: &Replayed,
) -> Result<(), Failure> {
    let doc = json!({
        "trace": escape_path(&args.trace).to_string(),
        "summary": prepared.summary,
        "undecodable_records": prepared.reading.problems(),
        "threads": thread_mode_name(mode(args.threads)),
        "touch": args.touch,
        "max_block_size": replayed.max_block_size,
        "allocators": replayed.runs.iter().map(|r| json!({
            "allocator": r.alloc.name(),
            "median": medians(r),
            "runs": r.reports,
            "failures": r.failures,
        })).collect::<Vec<_>>(),
    });
    writeln!(
        w,
        "{}",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    )?;
    Ok(())
}

fn medians(runs: &Runs) -> Json {
    let reports = &runs.reports;
    let ms = |f: &dyn Fn(&Report) -> f64| {
        let (m, s) = runs.median_spread(f);
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

/// The lines above the tables: what the trace says, what was left out, how it was replayed.
fn summary(
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
    Ok(())
}

/// Speed, memory and faults: one line per allocator.
fn speed_table(w: &mut StdoutSink, runs: &[Runs]) -> Result<(), Failure> {
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
        let (wall, ws) = r.median_spread(|r| r.wall_ns as f64 / 1e6);
        let (ops, os) = r.median_spread(|r| r.ops_per_sec());
        let (calls, cs) = r.median_spread(|r| r.calls_per_sec());
        let (rss, _) = r.median_spread(|r| r.peak_rss.saturating_sub(r.rss_baseline) as f64);
        let (frag, _) = r.median_spread(|r| r.fragmentation_at_peak().unwrap_or(0.0));
        let (minflt, _) = r.median_spread(|r| r.minor_faults as f64);
        let (majflt, _) = r.median_spread(|r| r.major_faults as f64);
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
    Ok(())
}

/// Latency percentiles: one line per allocator and kind of call.
fn latency_table(w: &mut StdoutSink, runs: &[Runs]) -> Result<(), Failure> {
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

fn table(
    w: &mut StdoutSink,
    args: &ReplayArgs,
    prepared: &Prepared,
    replayed: &Replayed,
) -> Result<(), Failure> {
    let problems = prepared.reading.problems();
    summary(w, &prepared.summary, problems, &replayed.runs, args)?;
    writeln!(w)?;
    speed_table(w, &replayed.runs)?;
    writeln!(w)?;
    latency_table(w, &replayed.runs)
}

/// Draws the trace's live bytes and each run's RSS into `out` (written atomically).
fn write_picture(
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
        super::write::write_bytes(out, &bytes)
    }
    #[cfg(not(feature = "plot"))]
    {
        let _ = (title, live, runs);
        picture_format(out).map(|_| ())
    }
}
