//! `mtf report TRACE -o report.html`: one self-contained HTML page (summary, tables, inline SVG
//! charts) that works offline.

use std::path::PathBuf;

use clap::Args;

use metatf::analysis::report;

use super::common::{input_name, stats_of, Failure, SliceArgs};
use super::write::write_file;
use super::{EXIT_OK, EXIT_USAGE};

/// Arguments of `mtf report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The trace (`-` for standard input; pipes and compressed traces too).
    pub trace: PathBuf,
    /// The page to write (`-`: standard output).
    #[arg(short, long)]
    pub output: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Sites listed per ranking.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub top: usize,
    /// The slice.
    #[command(flatten)]
    pub slice: SliceArgs,
}

/// Run `mtf report`.
pub fn run(args: &ReportArgs) -> Result<i32, Failure> {
    let stats = stats_of(&args.trace, args.dtd.as_deref(), args.slice.window()?)?;
    let page = report::html(&input_name(&args.trace), &stats, args.top)
        .map_err(|e| Failure::diagnostic(EXIT_USAGE, &e))?;
    write_file(&args.output, page.as_bytes())?;
    Ok(EXIT_OK)
}
