//! `mtf diff A B`: two traces' heap figures side by side, sorted by change.

use std::path::PathBuf;

use clap::Args;

use metatf::command::diff::{diff, DiffOptions};

use super::common::{emit, json_text, stats_with, usage_failure, Failure, SliceArgs, StatsFormat};
use super::EXIT_OK;

/// Arguments of `mtf diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The base trace (`-` for standard input).
    pub a: PathBuf,
    /// The trace compared with it.
    pub b: PathBuf,
    /// The DTD of A, instead of the one its header names.
    #[arg(long, value_name = "DTD")]
    pub dtd_a: Option<PathBuf>,
    /// The DTD of B, instead of the one its header names.
    #[arg(long, value_name = "DTD")]
    pub dtd_b: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = StatsFormat::Text)]
    pub format: StatsFormat,
    /// Sites and size classes listed.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Write to this file instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// The same slice of both traces.
    #[command(flatten)]
    pub slice: SliceArgs,
}

/// Run `mtf diff`.
pub fn run(args: &DiffArgs) -> Result<i32, Failure> {
    let options = DiffOptions {
        slice: args.slice.slice(),
    };
    let each = options
        .check(&args.a, &args.b)
        .map_err(|e| usage_failure(&e))?;
    let a = stats_with(&args.a, args.dtd_a.as_deref(), &each)?;
    let b = stats_with(&args.b, args.dtd_b.as_deref(), &each)?;
    let d = diff(&a, &b);
    let text = match args.format {
        StatsFormat::Json => json_text(&d.to_json(args.top)),
        StatsFormat::Text => d.to_text(args.top),
    };
    emit(args.output.as_deref(), &text)?;
    Ok(EXIT_OK)
}
