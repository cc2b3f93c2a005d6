//! `mtf check TRACE`: decode everything, report every problem (up to a limit) and a summary.

use std::fmt::Display;
use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use metatf::command::check::{check, CheckOptions, CheckSink, Verdict};
use metatf::command::Warning;
use metatf::index::IndexError;
use metatf::io::StdoutSink;

use super::common::{command_failure, input_name, quiet, usage_failure, Failure};
use super::progress::Progress;
use super::{EXIT_INVALID_TRACE, EXIT_OK};

/// Arguments of `mtf check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The trace (`-` for standard input; pipes and gzip/zstd/xz/bzip2-compressed traces too,
    /// decoded as they arrive from a window of MTF_STREAM_WINDOW bytes, with no temporary file;
    /// a trace whose DTD reads sections as tables, or one given with -j N or a seek index, is
    /// read through an unlinked temporary file in TMPDIR as large as the decompressed trace).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Report at most N problems (all are counted).
    #[arg(long, default_value_t = 100)]
    pub max_errors: u64,
    /// Decode only: skip the checks the DTD's analysis declarations ask for (ids defined
    /// before use, nesting, monotonic values; docs/format.md §14).
    #[arg(long)]
    pub no_semantic: bool,
    /// Track at most N ids, open nesting levels and keys at once (semantic checks stop beyond).
    #[arg(long, default_value_t = metatf::analysis::DEFAULT_MAX_TRACKED, value_name = "N")]
    pub max_ids: usize,
    /// Show at most N pieces of information (ids alive at the end); all are counted.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub max_info: u64,
    /// Report only the problems of a slice (`--from`/`--to`: record index, or `tTIME`); the
    /// trace is still decoded and interpreted from its start.
    #[command(flatten)]
    pub slice: super::common::SliceArgs,
    #[command(flatten)]
    pub jobs: super::jobs::JobsArgs,
    /// Decode every record through the decoder's events, never stepping over records that
    /// cannot be invalid but for their length (for tests: the output must be the same).
    #[arg(long, hide = true)]
    pub no_scan: bool,
    /// The seek index to verify (when the whole trace is checked): every checkpoint must be
    /// the one a full decode takes there. With `-j N` and no semantic pass, its checkpoints
    /// also cut the trace, and each thread compares the decoder's state where its part ends
    /// with the stored checkpoint (the checkpoints' declared times are verified by `-j 1`).
    /// With `-j N` and the semantic pass, where the index carries analysis states
    /// (INDEX.state, written by `mtf index`) and --max-ids is left as it is, each part of the
    /// trace between two checkpoints with a state is interpreted on its own thread from the
    /// state there, with the same output as `-j 1`; where it ends must be the next state.
    #[command(flatten)]
    pub seek: super::common::SeekArgs,
}

/// Run `mtf check`.
pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    let options = CheckOptions {
        max_errors: args.max_errors,
        semantic: !args.no_semantic,
        max_ids: args.max_ids,
        // With --quiet, no piece of information is shown.
        max_info: if quiet() { 0 } else { args.max_info },
        slice: args.slice.slice(),
        jobs: args.jobs.jobs(),
        scan: !args.no_scan,
        seek: args.seek.options(),
    };
    options
        .seek
        .refuse_both_stdin(&args.trace)
        .map_err(|e| usage_failure(&e))?;
    // Decoded as it arrives unless -j asks for threads or an index is there to verify.
    let stream = options.streams(&args.trace);
    let (o, _) = super::common::open_for_pass(&args.trace, args.dtd.as_deref(), false, stream)?;
    // A closed pipe (`mtf check T | head -1`) ends the command quietly with status 0; any other
    // failure to write is an I/O error (status 2): see `Failure::from`.
    let mut lines = Lines {
        out: StdoutSink::new(),
        bar: Progress::new(o.reader().bytes().len() as u64, "checking", quiet()),
        path: input_name(&args.trace).into_owned(),
    };
    let faults = super::common::faults(&o);
    let report = check(&o, &args.trace, &options, faults, &mut lines).map_err(command_failure)?;
    let mut out = lines.out;
    out.write_all(report.summary_text(&o, &options, quiet()).as_bytes())?;
    out.write_all(
        report
            .verdict_text(&input_name(&args.trace), &options)
            .as_bytes(),
    )?;
    out.finish()?;
    Ok(match report.verdict {
        Verdict::Valid => EXIT_OK,
        _ => EXIT_INVALID_TRACE,
    })
}

/// Where `mtf check` writes what it finds: standard output, the trace named first, around the
/// progress bar.
struct Lines {
    out: StdoutSink,
    bar: Progress,
    path: String,
}

impl Lines {
    fn line(&mut self, line: &str) -> std::io::Result<()> {
        let out = &mut self.out;
        self.bar.suspend(|| -> std::io::Result<()> {
            writeln!(out, "{line}")?;
            out.flush()
        })
    }
}

impl CheckSink for Lines {
    fn problem(&mut self, problem: &dyn Display) -> std::io::Result<()> {
        let line = format!("{}: {problem}", self.path);
        self.line(&line)
    }

    fn index_problem(&mut self, e: &IndexError) -> std::io::Result<()> {
        self.line(&e.to_string())
    }

    fn finding(&mut self, text: &str, info: bool) -> std::io::Result<()> {
        let line = if info {
            format!("{}: info: {text}", self.path)
        } else {
            format!("{}: {text}", self.path)
        };
        self.line(&line)
    }

    fn index_valid(
        &mut self,
        name: &str,
        checkpoints: usize,
        threads: Option<usize>,
        states: Option<usize>,
    ) -> std::io::Result<()> {
        if quiet() {
            return Ok(());
        }
        match (threads, states) {
            (None, _) => writeln!(self.out, "{name}: index valid ({checkpoints} checkpoints)"),
            (Some(n), Some(s)) => writeln!(
                self.out,
                "{name}: index states valid ({checkpoints} checkpoints, on {n} threads from {s} \
                 analysis state{}; their spacing and times are verified by -j 1, every state by \
                 mtf index --check)",
                if s == 1 { "" } else { "s" }
            ),
            (Some(n), None) => writeln!(
                self.out,
                "{name}: index states valid ({checkpoints} checkpoints, on {n} threads; their \
                 spacing and times are verified by -j 1)"
            ),
        }
    }

    fn progress(&mut self, offset: u64, records: u64) {
        self.bar.record(offset, records);
    }

    fn done(&mut self) {
        self.bar.finish();
    }

    fn warning(&mut self, w: Warning) {
        super::common::warn(w);
    }
}
