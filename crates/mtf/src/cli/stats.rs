//! `mtf stats TRACE`: records per type, integer fields, and per namespace the heap figures
//! (peak live bytes and when, totals, leaks, temporary allocations, lifetimes, sizes, top sites).

use std::path::PathBuf;

use clap::Args;

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
        (StatsFormat::Json, true) => json_text(&stats.at_peak_json(args.top)),
        (StatsFormat::Text, false) => stats.to_text(args.top),
        (StatsFormat::Text, true) => stats.at_peak_text(args.top),
    };
    emit(args.output.as_deref(), &text)?;
    Ok(EXIT_OK)
}
