//! `mtf index TRACE`: build (or with `--check`, verify) the seek index beside a trace
//! (docs/format.md §15); and what the reading subcommands share to start from one.

use std::path::{Path, PathBuf};

use clap::Args;

use metatf::decode::{Reader, Records};
use metatf::index::{self, BuildOptions, Index, IndexError, Target};

use super::common::{
    error, input_name, io_failure, line_to_stderr, open_salvaging, problem_text, quiet, Failure,
};
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// Arguments of `mtf index`.
#[derive(Debug, Args)]
pub struct IndexArgs {
    /// The trace (`-` for standard input, with `-o`; pipes and compressed traces too: offsets
    /// are in the decompressed trace).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Where to write the index (or, with `--check`, which index to verify); default
    /// `TRACE.idx`, where `dump --from` looks for it.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// A checkpoint every N records.
    #[arg(long, value_name = "N", default_value_t = index::DEFAULT_EVERY_RECORDS)]
    pub every: u64,
    /// ... or every N bytes of trace, whichever comes first.
    #[arg(long, value_name = "BYTES", default_value_t = index::DEFAULT_EVERY_BYTES)]
    pub every_bytes: u64,
    /// Verify the index against a full decode instead of writing one (a checkpoint that
    /// differs is reported with its number; status 1).
    #[arg(long)]
    pub check: bool,
}

/// Where the reading subcommands find a seek index.
#[derive(Debug, Args, Clone, Default)]
pub struct SeekArgs {
    /// The seek index (default: `TRACE.idx` when it exists; made by `mtf index`, `pack`,
    /// `compact`, `import`; `-` for standard input): `dump --from`/`--skip` start from it,
    /// `check` verifies it, `-j` cuts the trace at its checkpoints.
    #[arg(long, value_name = "FILE")]
    pub index: Option<PathBuf>,
    /// Ignore the index beside the trace.
    #[arg(long, conflicts_with = "index")]
    pub no_index: bool,
}

/// Refuse reading both the trace and its index from standard input.
pub fn refuse_both_stdin(trace: &Path, index: Option<&Path>) -> Result<(), Failure> {
    if trace.as_os_str() == "-" && index.is_some_and(|i| i.as_os_str() == "-") {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::index",
            "the trace and its seek index cannot both be standard input: name the index's file",
        ));
    }
    Ok(())
}

/// An index error as a failure: I/O as every I/O error, anything else status 1.
pub fn index_failure(e: &IndexError) -> Failure {
    match e {
        IndexError::Io(e) => io_failure(e),
        e => Failure::diagnostic(EXIT_INVALID_TRACE, e),
    }
}

fn index_path(trace: &Path, given: Option<&Path>) -> Option<PathBuf> {
    given
        .map(Path::to_path_buf)
        .or_else(|| index::sidecar(trace))
}

/// Whether a seek index is named, or found beside `trace`: a stream is then not decoded as it
/// arrives (an index seeks, and `-j` cuts the trace at its checkpoints).
pub fn has_index(trace: &Path, args: &SeekArgs) -> bool {
    !args.no_index
        && index_path(trace, args.index.as_deref())
            .is_some_and(|p| args.index.is_some() || p.is_file())
}

/// Run `mtf index`.
pub fn run(args: &IndexArgs) -> Result<i32, Failure> {
    let Some(path) = index_path(&args.trace, args.output.as_deref()) else {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::index",
            "standard input has no file beside it for the index: name one with -o FILE",
        ));
    };
    if !args.check {
        // `mtf index T -o T` replaced the trace by its index.
        super::common::refuse_same_file(&args.trace, &path)?;
    }
    let (o, damaged) = open_salvaging(&args.trace, args.dtd.as_deref())?;
    let reader = o.reader();
    let trace_name = input_name(&args.trace).into_owned();
    let index_name = input_name(&path).into_owned();
    if args.check {
        refuse_both_stdin(&args.trace, Some(&path))?;
        if path.as_os_str() != "-" && std::fs::metadata(&path).is_err() {
            return Err(error(
                super::EXIT_USAGE,
                "mtf::index::missing",
                format!(
                    "there is no seek index {} to verify: build it with `mtf index {}` (or name \
                     another with -o FILE)",
                    input_name(&path),
                    input_name(&args.trace)
                ),
            ));
        }
        let idx = Index::load(&path).map_err(|e| index_failure(&e))?;
        return match index::check(&reader, &idx) {
            Ok(()) => {
                if !quiet() {
                    println!(
                        "{index_name}: valid, {} checkpoints of {trace_name}",
                        idx.entries().len()
                    );
                }
                Ok(EXIT_OK)
            }
            Err(e) => Err(index_failure(&e)),
        };
    }
    if args.every == 0 || args.every_bytes == 0 {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::index",
            "--every and --every-bytes must be at least 1",
        ));
    }
    // `index::build`, with a progress bar.
    let mut builder = index::Builder::new(
        &reader,
        BuildOptions {
            every_records: args.every,
            every_bytes: args.every_bytes,
        },
    );
    let mut bar = super::progress::Progress::new(reader.bytes().len() as u64, "indexing", quiet());
    let mut records = reader.records();
    records.skip_values(!builder.needs_values());
    let mut n = 0u64;
    loop {
        builder.before_next(&records);
        let Some(event) = records.next() else { break };
        if let metatf::decode::Event::Record(v) = event {
            n += 1;
            bar.record(v.offset(), n);
            builder.record(&v);
        }
    }
    bar.finish();
    let waiting = builder.waiting();
    let idx = builder.finish(index_name.clone());
    if let (true, Some(w)) = (idx.entries().is_empty(), waiting) {
        // Checkpoints were due, but each would have held more live-set values than the trace
        // has bytes to spare for them: an index without one would only look like an index.
        return Err(no_checkpoint(&trace_name, &w));
    }
    idx.write(&path).map_err(|e| index_failure(&e))?;
    if !quiet() {
        let size = idx.to_bytes().len() as u64;
        let trace = reader.bytes().len().max(1) as f64;
        let why = if idx.entries().is_empty() {
            " (the trace is shorter than one interval: readers start from its beginning)"
        } else if waiting.is_some() {
            " (the last one due was not taken: its live sets were too large)"
        } else {
            ""
        };
        let line = format!(
            "{index_name}: {} checkpoints (every {} records or {} bytes){}, {} bytes ({:.3} % of \
             the trace){why}",
            idx.entries().len(),
            args.every,
            args.every_bytes,
            if idx.time_unit().is_some() {
                ", with declared times"
            } else {
                ""
            },
            size,
            100.0 * size as f64 / trace
        );
        // With `-o -` the index itself is on standard output: the summary goes to standard
        // error (it was written into the index's bytes).
        if path.as_os_str() == "-" {
            line_to_stderr(&line);
        } else {
            println!("{line}");
        }
    }
    Ok(if damaged { EXIT_INVALID_TRACE } else { EXIT_OK })
}

/// The failure for a trace whose live sets leave no room for a checkpoint.
fn no_checkpoint(trace: &str, w: &index::Waiting) -> Failure {
    use metatf::analysis::stats::human_bytes;
    super::common::Failure::diagnostic(
        EXIT_USAGE,
        &super::common::Flat::new(
            format!(
                "{trace}: no seek index written: a checkpoint holds the values of the trace's \
                 live sets (extension live/1), here {} values ({}), and is taken only where \
                 they take at most 1/16 of the trace bytes since the previous one \
                 (docs/format.md §15.3): the first would need {} of trace, and {} follow",
                w.live_values,
                human_bytes(8.0 * w.live_values as f64),
                human_bytes(w.bytes_needed as f64),
                human_bytes(w.bytes_there as f64),
            ),
            "mtf::index::live_sets",
            Some(
                "dump --from/--skip and -j read this trace from its start; the trace \
                 re-encoded without --live (`mtf compact TRACE -o OUT`) can be indexed"
                    .to_string(),
            ),
        ),
    )
}

/// The index a reading subcommand uses for `trace`: `--index FILE`, else `TRACE.idx` when it
/// exists; `None` with `--no-index` or without either. An index that cannot be read is an
/// error for the caller to report.
pub fn find_for(trace: &Path, args: &SeekArgs) -> Option<Result<Index, IndexError>> {
    if args.no_index {
        return None;
    }
    let path = index_path(trace, args.index.as_deref())?;
    if args.index.is_none() && !path.is_file() {
        return None;
    }
    Some(Index::load(&path))
}

/// As [`find_for`], an index that cannot be read reported as a warning (reading then starts
/// at the beginning).
pub fn load_for(trace: &Path, args: &SeekArgs) -> Option<Index> {
    match find_for(trace, args)? {
        Ok(idx) => Some(idx),
        Err(e) => {
            warn(&e);
            None
        }
    }
}

fn warn(e: &IndexError) {
    line_to_stderr(&format!(
        "{}\n  (warning: decoding from the start of the trace instead)",
        problem_text("index", e)
    ));
}

/// A decode from the checkpoint of `idx` nearest before `target`, or `None` (decode from the
/// start) when there is none before it or the index does not fit (reported as a warning).
pub fn start<'r>(idx: &Index, reader: &'r Reader<'r>, target: Target) -> Option<Records<'r>> {
    match idx.seek(reader, target) {
        Ok(found) => found.map(|(_, records)| records),
        Err(e) => {
            warn(&e);
            None
        }
    }
}

/// Traces from this size on get a seek index from `pack`, `compact` and `import` by default.
pub const AUTO_INDEX_BYTES: u64 = 64 << 20;

/// Whether `pack`, `compact` and `import` write a seek index beside their output.
#[derive(Debug, Args, Clone, Default)]
pub struct WriteIndexArgs {
    /// Write the seek index beside the output (`OUT.idx`) whatever its size. By default it is
    /// written for outputs of 64 MiB and more, and rewritten when one is already there.
    #[arg(long, conflicts_with = "no_index")]
    pub with_index: bool,
    /// Write no seek index (one already beside the output belonged to the trace replaced: it
    /// is removed).
    #[arg(long)]
    pub no_index: bool,
}

/// Remove the index `path` left beside a trace just replaced, which no longer fits it (a stale
/// index makes `check` fail and every seek warn); a failure is a warning.
fn remove_stale(path: &Path) {
    if !path.is_file() {
        return;
    }
    match std::fs::remove_file(path) {
        Ok(()) => {
            if !quiet() {
                line_to_stderr(&format!(
                    "{}: removed (the seek index of the trace replaced)",
                    input_name(path)
                ));
            }
        }
        Err(e) => line_to_stderr(&format!(
            "warning: {} belongs to the trace replaced and could not be removed ({e}): delete \
             it, or rebuild it with `mtf index`",
            input_name(path)
        )),
    }
}

// Design: the index of a written trace is built by reading the finished file back, not by the
// writer as it goes: checkpoints are then exactly those a reader takes, whatever wrote the
// trace (pack, compact with its own metadata, import), at the cost of one decode — less than
// a tenth of the time of pack or import, a fraction of compact's.

/// After a writer committed `output`: build and write its seek index when `args` and its size
/// say so. A failure is an error when the index was asked for, else a warning.
pub fn after_write(
    output: &Path,
    dtd: Option<&Path>,
    args: &WriteIndexArgs,
) -> Result<(), Failure> {
    if output.as_os_str() == "-" {
        return Ok(());
    }
    let Some(path) = index::sidecar(output) else {
        return Ok(());
    };
    let Ok(meta) = std::fs::metadata(output) else {
        return Ok(());
    };
    if !meta.is_file() {
        return Ok(());
    }
    if args.no_index {
        remove_stale(&path);
        return Ok(());
    }
    // An index already beside the output belongs to the trace it replaced: rewritten.
    if !args.with_index && meta.len() < AUTO_INDEX_BYTES && !path.is_file() {
        return Ok(());
    }
    let built = metatf::OpenOptions::new()
        .dtd_opt(dtd)
        .open(output)
        .map_err(|e| e.to_string())
        .and_then(|o| {
            let mut idx = index::build(&o.reader(), &BuildOptions::default());
            idx.set_name(input_name(&path).into_owned());
            idx.write(&path).map_err(|e| e.to_string())?;
            Ok(idx.entries().len())
        });
    match built {
        Ok(n) => {
            if !quiet() {
                line_to_stderr(&format!(
                    "{}: seek index, {n} checkpoints",
                    input_name(&path)
                ));
            }
            Ok(())
        }
        Err(e) if args.with_index => {
            remove_stale(&path);
            Err(error(
                super::exit::EXIT_USAGE,
                "mtf::index::write",
                format!("no seek index written: {e}"),
            ))
        }
        Err(e) => {
            line_to_stderr(&format!("warning: no seek index written: {e}"));
            remove_stale(&path);
            Ok(())
        }
    }
}
