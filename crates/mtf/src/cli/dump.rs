//! `mtf dump TRACE`: one line per record, streamed.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use metatf::command::dump::{dump, DumpOptions, DumpSink};
use metatf::command::{CommandError, Warning};
use metatf::io::{classify, StdoutFailure, StdoutSink};

use super::common::{input_name, io_failure, line_to_stderr, problem_text, quiet, usage_failure};
use super::common::{Failure, SeekArgs, SliceArgs};
use super::progress::Progress;
use super::{EXIT_INVALID_TRACE, EXIT_OK};

/// Output format of `mtf dump`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DumpFormat {
    /// `record key=value …` lines (what `mtf pack` reads).
    Text,
    /// One JSON object per line, after a header object (what `mtf pack` reads).
    Jsonl,
    /// CSV for spreadsheets: one record type (`--record NAME`), a header row, one row per record.
    Csv,
}

/// Arguments of `mtf dump`.
#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The traces (`-` for standard input; pipes and gzip/zstd/xz/bzip2-compressed traces too,
    /// decoded as they arrive unless -j N or a seek index asks for the whole trace),
    /// dumped one after the other.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Only these sections (name, id, or `global`); repeatable.
    #[arg(short, long = "section", value_name = "SECTION")]
    pub sections: Vec<String>,
    /// Only these record types; repeatable.
    #[arg(short, long = "record", value_name = "NAME")]
    pub records: Vec<String>,
    /// Skip the first N records that pass the filters.
    #[arg(long, default_value_t = 0)]
    pub skip: u64,
    /// Print at most N records (per trace).
    #[arg(short = 'n', long)]
    pub limit: Option<u64>,
    /// Prefix every record with `@offset`.
    #[arg(long)]
    pub offsets: bool,
    /// Show stored values too (`value~0xraw`).
    #[arg(long)]
    pub raw: bool,
    /// Hide metadata, section and comment records (shown by default, so that the dump can be
    /// packed back into the same trace).
    #[arg(long)]
    pub data_only: bool,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = DumpFormat::Text)]
    pub format: DumpFormat,
    /// Leave out the header line (`%mtf …`, the JSON header object, the CSV column names).
    /// `mtf pack` needs the header of text and JSON lines.
    #[arg(long)]
    pub no_header: bool,
    /// JSON lines: write integer values as strings ("18446744073709551615"), for tools that
    /// lose precision above 2^53; `mtf pack` reads them back.
    #[arg(long)]
    pub int_strings: bool,
    /// Only the records of a slice (`--from`/`--to`: record index, or `tTIME`). With a seek
    /// index (`TRACE.idx`, `mtf index`), `--from` (and `--skip` without filters) start at the
    /// nearest checkpoint before: problems in the records before it are not seen.
    #[command(flatten)]
    pub slice: SliceArgs,
    /// Which seek index to use.
    #[command(flatten)]
    pub seek: SeekArgs,
    #[command(flatten)]
    pub jobs: super::jobs::JobsArgs,
}

/// Run `mtf dump`: every trace in turn; the exit status is the worst of them.
pub fn run(args: &DumpArgs) -> Result<i32, Failure> {
    let options = options(args);
    options
        .check_traces(&args.traces)
        .map_err(|e| usage_failure(&e))?;
    let mut w = StdoutSink::new();
    let mut status = EXIT_OK;
    for trace in &args.traces {
        let s = match dump_one(&options, args.dtd.as_deref(), trace, &mut w) {
            Ok(s) => s,
            // A closed pipe (`mtf dump t | head`) is a normal way to stop reading.
            Err(StdoutFailure::Closed) => return Ok(status),
            Err(StdoutFailure::Failed(e)) => return Err(io_failure(&e)),
        };
        status = status.max(s);
    }
    Ok(status)
}

/// The library's options.
fn options(args: &DumpArgs) -> DumpOptions {
    DumpOptions {
        sections: args.sections.clone(),
        records: args.records.clone(),
        skip: args.skip,
        limit: args.limit,
        offsets: args.offsets,
        raw: args.raw,
        data_only: args.data_only,
        format: match args.format {
            DumpFormat::Text => metatf::command::dump::DumpFormat::Text,
            DumpFormat::Jsonl => metatf::command::dump::DumpFormat::Jsonl,
            DumpFormat::Csv => metatf::command::dump::DumpFormat::Csv,
        },
        header: !args.no_header,
        int_strings: args.int_strings,
        slice: args.slice.slice(),
        seek: args.seek.options(),
        jobs: args.jobs.jobs(),
        // To a pipe or a file, lines go out 64 KiB at a time. To a terminal, each line as it
        // comes.
        batched: !std::io::stdout().is_terminal(),
    }
}

/// Dump one trace; a trace that cannot be opened is reported and gives its status.
fn dump_one(
    options: &DumpOptions,
    dtd: Option<&Path>,
    trace: &Path,
    w: &mut StdoutSink,
) -> Result<i32, StdoutFailure> {
    let failed = |w: &mut StdoutSink, f: Failure| -> Result<i32, StdoutFailure> {
        w.flush().map_err(classify)?;
        if !f.message.is_empty() {
            line_to_stderr(&f.message);
        }
        Ok(f.code)
    };
    // Decoded as it arrives unless -j asks for threads or an index is there to seek with.
    let (o, damaged) = match super::common::open_for_pass(trace, dtd, true, options.streams(trace))
    {
        Ok(x) => x,
        Err(f) => return failed(w, f),
    };
    // Dumping to a file or a pipe shows progress on a terminal's standard error; dumping to
    // the terminal does not (the bar would mix with the records).
    let mut sink = Problems {
        bar: Progress::when(
            o.reader().bytes().len() as u64,
            "dumping",
            !quiet() && std::io::stderr().is_terminal() && !std::io::stdout().is_terminal(),
        ),
        path: input_name(trace).into_owned(),
    };
    let result = dump(&o, trace, options, super::common::faults(&o), w, &mut sink);
    sink.bar.finish();
    match result {
        // A damaged container was reported when it was opened; what it holds is still shown.
        Ok(r) if r.invalid || damaged => Ok(EXIT_INVALID_TRACE),
        Ok(_) => Ok(EXIT_OK),
        Err(CommandError::Write(e)) => Err(classify(e)),
        Err(e) => failed(w, super::common::command_failure(e)),
    }
}

/// Where a dump's problems go: standard error, around the progress bar.
struct Problems {
    bar: Progress,
    path: String,
}

impl DumpSink for Problems {
    fn problem(&mut self, problem: &dyn miette::Diagnostic) {
        let text = problem_text(&self.path, problem);
        self.bar.suspend(|| line_to_stderr(&text));
    }

    fn progress(&mut self, offset: u64, records: u64) {
        self.bar.record(offset, records);
    }

    fn warning(&mut self, w: Warning) {
        self.bar.suspend(|| super::common::warn(w));
    }
}
