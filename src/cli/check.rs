//! `mtf check TRACE`: decode everything, report every problem (up to a limit) and a summary.

use std::path::PathBuf;

use clap::Args;

use metatf::decode::Event;

use super::common::{open, Failure};
use super::{EXIT_INVALID_TRACE, EXIT_OK};

/// Arguments of `mtf check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The trace file.
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(long)]
    pub dtd: Option<PathBuf>,
    /// Report at most N problems (all are counted).
    #[arg(long, default_value_t = 100)]
    pub max_errors: u64,
    /// Print only the problems and the verdict, not the per-type summary.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Run `mtf check`.
pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    let o = open(&args.trace, args.dtd.as_deref())?;
    let reader = o.reader();
    let mut per_type = vec![0u64; o.schema().records.len()];
    let mut reported = 0u64;
    let mut total = 0u64;
    let path = args.trace.display().to_string();
    let mut report = |e: &dyn std::fmt::Display| {
        total += 1;
        if reported < args.max_errors {
            reported += 1;
            println!("{path}: {e}");
        }
    };
    let mut records = reader.records();
    while let Some(event) = records.next() {
        match event {
            Event::Record(v) => per_type[v.record_id() as usize] += 1,
            Event::Problem(p) => report(&p),
            Event::Damage(d) => report(&d),
        }
    }
    total += records.dropped_problems();
    let checked: u64 = per_type.iter().sum();
    if !args.quiet {
        println!("records checked: {checked}");
        for (rid, n) in per_type.iter().enumerate() {
            if *n > 0 {
                println!("  {:<24} {n:>12}", o.schema().record(rid as u32).name);
            }
        }
    }
    if total > reported {
        println!(
            "… {} more problem(s) not shown (--max-errors {})",
            total - reported,
            args.max_errors
        );
    }
    if total == 0 {
        println!("{path}: valid");
        Ok(EXIT_OK)
    } else {
        println!("{path}: INVALID, {total} problem(s)");
        Ok(EXIT_INVALID_TRACE)
    }
}
