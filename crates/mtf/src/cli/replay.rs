//! `mtf replay TRACE`: a trace's allocation events against real allocators, each measured in a
//! fresh child process (this binary, re-executed with the hidden `replay-child` subcommand), and
//! the figures side by side: operations per second, latency percentiles by kind of call, RSS
//! beside the trace's live bytes, fragmentation, page faults.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use metatf::command::replay::{
    prepare, run_child as measure, ChildOptions, Prepared, ReplayOptions, ReplayRunError, Replayed,
};
use metatf::io::{escape_path, StdoutSink};
use metatf::replay::{is_library_name, Allocator, Probe, ThreadMode, Timing};

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

/// When operations run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TimingArg {
    /// As fast as possible.
    Fast,
    /// At the trace's recorded times (its gaps kept per thread), blocks touched as the trace's
    /// present bytes say.
    Recorded,
}

/// Arguments of `mtf replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The trace (`-` for standard input; pipes and compressed traces too).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Allocators to measure, side by side (comma-separated: system, jemalloc, mimalloc, or an
    /// allocator library by its path, e.g. /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4).
    #[arg(short, long, value_delimiter = ',', default_value = "system")]
    pub allocator: Vec<String>,
    /// Runs per allocator (each in a fresh process); figures are the median, with the spread.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Threads in the trace's order, or free-running.
    #[arg(long, value_enum, default_value_t = Threads::Ordered)]
    pub threads: Threads,
    /// As fast as possible, or at the trace's recorded times (a trace whose DTD declares times).
    #[arg(long, value_enum, default_value_t = TimingArg::Fast)]
    pub timing: TimingArg,
    /// Write to every page of each new block, so that RSS counts it.
    #[arg(long)]
    pub touch: bool,
    /// Refuse (count, do not make) requests larger than this many bytes (default: the machine's
    /// physical memory).
    #[arg(long, value_name = "BYTES")]
    pub max_block_size: Option<u64>,
    /// Sites shown in the tables of waste by size class and site (0: no tables).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also draw RSS and the trace's live bytes over the replay, every allocator in one
    /// picture, and the waste by size class at the live peak (`.svg` or `.png`).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Arguments of the hidden `mtf replay-child`: one measured replay, its report as JSON on
/// standard output.
#[derive(Debug, Args)]
pub struct ChildArgs {
    /// The operations file the parent wrote.
    #[arg(required_unless_present = "check")]
    pub ops: Option<PathBuf>,
    /// The allocator (a built-in name, or a library's path).
    #[arg(long)]
    pub allocator: String,
    /// Only load the allocator: its reason on standard output and status 2 when it cannot be.
    #[arg(long)]
    pub check: bool,
    /// Threads' order.
    #[arg(long, value_enum, default_value_t = Threads::Ordered)]
    pub threads: Threads,
    /// When operations run.
    #[arg(long, value_enum, default_value_t = TimingArg::Fast)]
    pub timing: TimingArg,
    /// Touch new pages.
    #[arg(long)]
    pub touch: bool,
    /// Largest request made.
    #[arg(long, default_value_t = u64::MAX)]
    pub max_block_size: u64,
    /// Sample RSS after every this many operations.
    #[arg(long, default_value_t = 1)]
    pub every: u64,
    /// Attribute the waste after this many operations (and at the end).
    #[arg(long)]
    pub frag_at: Option<u64>,
    /// The sites of the blocks' records, for the attribution.
    #[arg(long)]
    pub sites: Option<PathBuf>,
}

fn timing(t: TimingArg) -> Timing {
    match t {
        TimingArg::Fast => Timing::Fast,
        TimingArg::Recorded => Timing::Recorded,
    }
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
        ReplayRunError::NoTimes(_) => Failure::diagnostic(
            EXIT_USAGE,
            &metatf::Message::new(
                format!("{}: {e}", escape_path(trace)),
                "mtf::usage::timing",
                miette::Diagnostic::help(e).map(|h| h.to_string()),
            ),
        ),
        e => Failure::diagnostic(EXIT_USAGE, e),
    }
}

/// Run the hidden `mtf replay-child`.
pub fn run_child(args: &ChildArgs) -> Result<i32, Failure> {
    let alloc = if is_library_name(&args.allocator) {
        match Allocator::load_library(Path::new(&args.allocator)) {
            Ok(a) => a,
            Err(e) if args.check => {
                // The reason and the advice, for the parent to say in its own words.
                let mut out = StdoutSink::new();
                writeln!(out, "{e}")?;
                if let Some(help) = miette::Diagnostic::help(&e) {
                    writeln!(out, "{help}")?;
                }
                out.flush()?;
                return Ok(EXIT_USAGE);
            }
            Err(e) => return Err(Failure::diagnostic(EXIT_USAGE, &e)),
        }
    } else {
        Allocator::from_name(&args.allocator).ok_or_else(|| {
            error(
                EXIT_USAGE,
                "mtf::usage::allocator",
                format!("unknown allocator {}", args.allocator),
            )
        })?
    };
    let Some(ops) = args.ops.as_deref().filter(|_| !args.check) else {
        return Ok(EXIT_OK);
    };
    let options = ChildOptions {
        threads: mode(args.threads),
        timing: timing(args.timing),
        touch: args.touch,
        max_block_size: args.max_block_size,
        sample_every: args.every,
    };
    let probe = Probe::new(args.frag_at, args.sites.clone());
    let report = measure(ops, alloc, &options, probe).map_err(|e| match e {
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
        let name = name.trim();
        if is_library_name(name) {
            let a = Allocator::library(Path::new(name));
            if !allocs.contains(&a) {
                allocs.push(a);
            }
            continue;
        }
        match Allocator::from_name(name) {
            Some(a) if !allocs.contains(&a) => allocs.push(a),
            Some(_) => {}
            None => {
                let have: Vec<&str> = Allocator::available().iter().map(|a| a.name()).collect();
                return Err(error(
                    EXIT_USAGE,
                    "mtf::usage::allocator",
                    format!(
                        "unknown allocator '{}': this mtf has {} (or give an allocator library by its path, such as ./libmyalloc.so)",
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
        timing: timing(args.timing),
        touch: args.touch,
        max_block_size: args.max_block_size,
        executable: None,
        top: args.top,
    };
    if let Some(out) = &args.output {
        picture_format(out)?;
    }
    let opened = open(&args.trace, args.dtd.as_deref())?;
    // The operations, decoded once into a temporary file that every child reads.
    let prepared = prepare(&opened).map_err(|e| replay_failure(&args.trace, &e))?;
    warn_reading(&args.trace, &prepared.reading);
    drop(opened);
    // A recorded replay lasts the trace's duration per run: said first when that is long.
    let runs = u64::from(args.repeat) * options.allocators.len() as u64;
    let secs = prepared.summary.duration_ns / 1_000_000_000;
    if options.timing == Timing::Recorded && secs * runs >= 10 && prepared.check_times().is_ok() {
        line_to_stderr(&format!(
            "mtf: {}: replaying at the recorded times: {secs} s per run, {runs} runs",
            escape_path(&args.trace)
        ));
    }
    let replayed = prepared
        .run(&options)
        .map_err(|e| replay_failure(&args.trace, &e))?;
    if let Some(out) = &args.output {
        write_picture(out, &args.trace, &prepared, &replayed)?;
    }
    let mut w = StdoutSink::new();
    match args.format {
        Format::Json => {
            let doc = replayed.to_json(&escape_path(&args.trace), &prepared);
            let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
            writeln!(w, "{text}")?;
        }
        Format::Table => replayed.write_text(&mut w, &prepared)?,
    }
    w.flush()?;
    for r in &replayed.runs {
        for f in &r.failures {
            line_to_stderr(&error_text(
                "mtf::replay::failed",
                format!("{}: {f}", r.alloc.name()),
            ));
        }
    }
    Ok(if replayed.failed() || prepared.reading.problems() > 0 {
        EXIT_INVALID_TRACE
    } else {
        EXIT_OK
    })
}

/// Draws the trace's live bytes and each run's RSS into `out` (written atomically).
fn write_picture(
    out: &Path,
    trace: &Path,
    prepared: &Prepared,
    replayed: &Replayed,
) -> Result<(), Failure> {
    // Without pictures (feature plot) the format is `()`: only the check that one is asked.
    #[cfg_attr(not(feature = "plot"), allow(clippy::let_unit_value))]
    let format = picture_format(out)?;
    #[cfg(feature = "plot")]
    {
        let title = format!("mtf replay {}: RSS and live bytes", escape_path(trace));
        let bytes = replayed
            .chart(format, &title, prepared)
            .map_err(|e| Failure::diagnostic(EXIT_USAGE, &e))?;
        super::write::write_bytes(out, &bytes)
    }
    #[cfg(not(feature = "plot"))]
    {
        let _ = (format, trace, prepared, replayed);
        Ok(())
    }
}
