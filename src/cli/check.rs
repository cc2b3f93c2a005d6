//! `mtf check TRACE`: decode everything, report every problem (up to a limit) and a summary.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use metatf::decode::Event;
use metatf::io::StdoutSink;

use super::common::{input_name, open_salvaging_as, quiet, Failure};
use super::progress::Progress;
use super::{EXIT_INVALID_TRACE, EXIT_OK};

/// Arguments of `mtf check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The trace (`-` for standard input; pipes and gzip/zstd/xz/bzip2-compressed traces too).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Report at most N problems (all are counted).
    #[arg(long, default_value_t = 100)]
    pub max_errors: u64,
}

/// Run `mtf check`.
pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    let (o, damaged) = open_salvaging_as(&args.trace, args.dtd.as_deref(), false)?;
    let reader = o.reader();
    let mut per_type = vec![0u64; o.schema().records.len()];
    let mut reported = 0u64;
    let mut total = 0u64;
    let path = input_name(&args.trace);
    // A closed pipe (`mtf check T | head -1`) ends the command quietly with status 0; any other
    // failure to write is an I/O error (status 2): see `Failure::from`.
    let mut out = StdoutSink::new();
    if let Some(e) = o.damage() {
        total += 1;
        reported += 1;
        writeln!(out, "{path}: {}", e.innermost())?;
    } else if damaged {
        // The compressed stream ended early (reported on standard error when it was read).
        total += 1;
    }
    let mut bar = Progress::new(reader.bytes().len() as u64, "checking", quiet());
    let mut n = 0u64;
    let mut records = reader.records();
    while let Some(event) = records.next() {
        let problem: &dyn std::fmt::Display = match &event {
            Event::Record(v) => {
                per_type[v.record_id() as usize] += 1;
                n += 1;
                bar.record(v.offset(), n);
                continue;
            }
            Event::Problem(p) => p,
            Event::Damage(d) => d,
        };
        total += 1;
        if reported < args.max_errors {
            reported += 1;
            bar.suspend(|| -> std::io::Result<()> {
                writeln!(out, "{path}: {problem}")?;
                out.flush()
            })?;
        }
    }
    bar.finish();
    total += records.dropped_problems();
    let checked: u64 = per_type.iter().sum();
    if !quiet() {
        writeln!(out, "records checked: {checked}")?;
        for (rid, n) in per_type.iter().enumerate() {
            if *n > 0 {
                writeln!(out, "  {:<24} {n:>12}", o.schema().record(rid as u32).name)?;
            }
        }
    }
    if total > reported {
        writeln!(
            out,
            "… {} more problem(s) not shown (--max-errors {})",
            total - reported,
            args.max_errors
        )?;
    }
    let status = if total == 0 {
        writeln!(out, "{path}: valid")?;
        EXIT_OK
    } else {
        writeln!(out, "{path}: INVALID, {total} problem(s)")?;
        EXIT_INVALID_TRACE
    };
    out.finish()?;
    Ok(status)
}
