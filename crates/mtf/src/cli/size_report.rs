//! `mtf size-report TRACE`: the columns of the paper's Table 4 measured on one trace, in bytes
//! per data record, plain and compressed (`metatf::command::size_report`); this file parses,
//! calls and renders, with a progress bar on a terminal.

use std::path::PathBuf;

use clap::Args;

use metatf::command::size_report::{
    size_report, Levels, Meter, SizeReportError, SizeReportOptions,
};
use metatf::io::StdoutSink;

use super::common::{error, input_name, open, quiet, render, Failure};
use super::progress::Progress;
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// Arguments of `mtf size-report`.
#[derive(Debug, Args)]
pub struct SizeReportArgs {
    /// The trace.
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Records per look-ahead window of the encoder.
    #[arg(long, default_value_t = 4096)]
    pub window: usize,
    /// Compressions run at once (each form with each compressor is one); 0: one per core.
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value_t = 0)]
    pub jobs: usize,
    /// Compress at the top levels (gzip -9, zstd -19, xz -9: minutes on a trace of several MB)
    /// instead of the usual ones (gzip -6, zstd -3, xz -1: seconds).
    #[arg(long)]
    pub best: bool,
}

/// The progress bar, made when the compressions' length is known.
struct Bar(std::sync::OnceLock<Progress>);

impl Meter for Bar {
    fn start(&self, total: u64) {
        let _ = self.0.set(Progress::new(total, "compressing", quiet()));
    }

    fn advance(&self, bytes: u64) {
        if let Some(p) = self.0.get() {
            p.inc_bytes(bytes);
        }
    }
}

/// Run `mtf size-report`.
pub fn run(args: &SizeReportArgs) -> Result<i32, Failure> {
    let o = open(&args.trace, args.dtd.as_deref())?;
    let options = SizeReportOptions {
        window: args.window,
        jobs: args.jobs,
        levels: if args.best {
            Levels::Best
        } else {
            Levels::Usual
        },
    };
    let bar = Bar(std::sync::OnceLock::new());
    let report = size_report(&o, &options, &bar);
    if let Some(p) = bar.0.get() {
        p.finish();
    }
    let report = report.map_err(|e| match e {
        SizeReportError::Invalid(e) => error(
            EXIT_INVALID_TRACE,
            "mtf::trace::invalid",
            format!("{}: {e}", input_name(&args.trace)),
        ),
        SizeReportError::Compact(e) => Failure::new(EXIT_INVALID_TRACE, render(&e)),
        SizeReportError::Reread(e) => Failure::new(EXIT_INVALID_TRACE, render(&e)),
        SizeReportError::Encode(e) => Failure::new(EXIT_USAGE, render(&e)),
        e @ SizeReportError::Compress(_) => Failure::diagnostic(EXIT_USAGE, &e),
    })?;
    let mut out = StdoutSink::new();
    report.write_text(&mut out, &input_name(&args.trace))?;
    // Flushing is where a full disk or a closed pipe shows up.
    out.finish()?;
    Ok(EXIT_OK)
}
