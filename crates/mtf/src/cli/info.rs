//! `mtf info TRACE`: header, DTD origin, section table, records per type.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use metatf::command::info::info;
use metatf::command::jobs::Faults;

use metatf::io::StdoutSink;

use super::common::{input_name, open_for_pass, Failure};
use super::{EXIT_INVALID_TRACE, EXIT_OK};

/// Arguments of `mtf info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The trace (`-` for standard input; pipes and gzip/zstd/xz/bzip2-compressed traces too,
    /// decoded as they arrive from a window of MTF_STREAM_WINDOW bytes, with no temporary file;
    /// a trace whose DTD reads sections as tables is read through an unlinked temporary file in
    /// TMPDIR as large as the decompressed trace).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
}

/// Run `mtf info`.
pub fn run(args: &InfoArgs) -> Result<i32, Failure> {
    // One pass: a piped or compressed trace is decoded as it arrives.
    let (o, damaged) = open_for_pass(&args.trace, args.dtd.as_deref(), true, true)?;
    let path = args.trace.clone();
    let faults = Faults {
        on_fault: Some(Box::new(move |e| {
            let f = super::common::stream_failure(&path, e);
            super::common::line_to_stderr(&f.message);
            std::process::exit(f.code);
        })),
        ..Faults::default()
    };
    let report = info(&o, faults);
    let errors = report.problems + u64::from(damaged);
    let mut w = StdoutSink::new();
    w.write_all(report.to_text(&o, &input_name(&args.trace)).as_bytes())?;
    if errors > 0 {
        writeln!(w, "\n{errors} problem(s): run `mtf check` for details")?;
    }
    // A closed pipe ends quietly with status 0; a full disk is status 2 (`Failure::from`).
    w.finish()?;
    Ok(if errors > 0 {
        EXIT_INVALID_TRACE
    } else {
        EXIT_OK
    })
}
