//! `mtf index TRACE`: build (or with `--check`, verify) the seek index beside a trace
//! (docs/format.md §15). What the other subcommands share about seek indexes is in
//! `seek.rs`.

use std::path::{Path, PathBuf};

use clap::Args;

use metatf::command::index::build_index;
use metatf::command::resume::{build_state, verify_births, verify_state, DEFAULT_STATE_BUDGET};
use metatf::decode::Reader;
use metatf::index::analysis::{births_path, state_path, AnalysisState};
use metatf::index::{self, BuildOptions, Index};

use super::common::{error, input_name, line_to_stderr, open_salvaging, quiet, Failure};
use super::seek::{index_failure, index_path, refuse_both_stdin};
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
    /// The analysis states (`INDEX.state`, docs/format.md §15.4) take at most this percentage
    /// of the trace bytes before each checkpoint (and 2 GiB in all); a checkpoint beyond it
    /// gets no state. 0 writes no state (and removes one left beside the index).
    #[arg(long, value_name = "PERCENT", default_value_t = DEFAULT_STATE_BUDGET)]
    pub state_budget: u64,
    /// Also write the births of the blocks alive at each checkpoint with a state
    /// (`INDEX.births`, docs/format.md §15.5): what `mtf sql` needs to read the `blocks` table
    /// in parts from those checkpoints. One more pass over the trace.
    #[arg(long)]
    pub births: bool,
}

/// `mtf index --check`: the index at `path` verified against a full decode.
fn verify(args: &IndexArgs, path: &Path, reader: &Reader<'_>) -> Result<i32, Failure> {
    refuse_both_stdin(&args.trace, Some(path))?;
    if path.as_os_str() != "-" && std::fs::metadata(path).is_err() {
        return Err(error(
            super::EXIT_USAGE,
            "mtf::index::missing",
            format!(
                "there is no seek index {} to verify: build it with `mtf index {}` (or name \
                 another with -o FILE)",
                input_name(path),
                input_name(&args.trace)
            ),
        ));
    }
    let mut idx = Index::load(path).map_err(|e| index_failure(&e))?;
    idx.set_name(input_name(path).into_owned());
    index::check(reader, &idx).map_err(|e| index_failure(&e))?;
    // The analysis state beside it (docs/format.md §15.4), compared with a full pass's.
    let mut kept = None;
    let state = match state_path(path).filter(|p| p.is_file()) {
        None => String::new(),
        Some(sp) => {
            let stored = AnalysisState::load(&sp).map_err(|e| index_failure(&e))?;
            stored
                .fits(&idx, reader.schema())
                .map_err(|e| index_failure(&e))?;
            let mut stored = stored;
            stored.set_name(input_name(&sp).into_owned());
            // The states a full pass takes where one is stored, each compared as it is made.
            if !verify_state(reader, &stored, &idx).map_err(|e| index_failure(&e))? {
                return Err(error(
                    super::EXIT_INVALID_TRACE,
                    "mtf::index::mismatch",
                    format!(
                        "{}: a full pass makes no analysis state of this trace (its DTD \
                         declares no namespace of ids, or the trace has problems): delete it",
                        input_name(&sp)
                    ),
                ));
            }
            let line = format!(
                ", analysis state at {} of them and at the end",
                stored.stored()
            );
            kept = Some(stored);
            line
        }
    };
    // The births beside it (docs/format.md §15.5), rebuilt as `mtf index --births` builds
    // them at the checkpoints the (verified) state has, and compared.
    let births = match births_path(path).filter(|p| p.is_file()) {
        None => String::new(),
        Some(bp) => {
            let mut stored = AnalysisState::load_births(&bp).map_err(|e| index_failure(&e))?;
            stored.set_name(input_name(&bp).into_owned());
            stored
                .fits(&idx, reader.schema())
                .map_err(|e| index_failure(&e))?;
            let why = match &kept {
                None => {
                    "there is no analysis state beside the index, and births are kept only \
                         at the checkpoints with one: rebuild both with `mtf index --births`, \
                         or delete it"
                }
                Some(_) => "a full pass makes no births of this trace: delete it",
            };
            let fresh = kept
                .as_ref()
                .and_then(|state| births_file(reader, &idx, state));
            let Some(fresh) = fresh else {
                return Err(error(
                    super::EXIT_INVALID_TRACE,
                    "mtf::index::mismatch",
                    format!("{}: {why}", input_name(&bp)),
                ));
            };
            verify_births(&stored, &fresh, &idx).map_err(|e| index_failure(&e))?;
            format!(", births at {} of them", stored.stored())
        }
    };
    let tables = if idx.has_tables() {
        ", tables file"
    } else {
        ""
    };
    if !quiet() {
        println!(
            "{}: valid, {} checkpoints of {}{state}{births}{tables}",
            input_name(path),
            idx.entries().len(),
            input_name(&args.trace)
        );
    }
    Ok(EXIT_OK)
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
        return verify(args, &path, &reader);
    }
    if args.every == 0 || args.every_bytes == 0 {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::index",
            "--every and --every-bytes must be at least 1",
        ));
    }
    // `index::build`, with a progress bar.
    let mut bar = super::progress::Progress::new(reader.bytes().len() as u64, "indexing", quiet());
    let options = BuildOptions {
        every_records: args.every,
        every_bytes: args.every_bytes,
    };
    let built = build_index(&reader, &options, index_name.clone(), &mut |at, n| {
        bar.record(at, n)
    });
    bar.finish();
    if let Some(w) = built.no_checkpoint() {
        // Checkpoints were due, but each would have held more live-set values than the trace
        // has bytes to spare for them: an index without one would only look like an index.
        return Err(no_checkpoint(&trace_name, w));
    }
    built.index.write(&path).map_err(|e| index_failure(&e))?;
    // The analysis state at the checkpoints (docs/format.md §15.4), where the DTD declares
    // namespaces of ids; a state left from an earlier index is removed.
    let mut state_line = String::new();
    if let Some(sp) = state_path(&path) {
        let state = if args.state_budget == 0 {
            None
        } else {
            build_state(&reader, &built.index, args.state_budget)
        };
        // The births, with --births, at the checkpoints with a state; a births file left from
        // an earlier index is removed.
        #[cfg(feature = "parquet")]
        let births = match (&state, args.births) {
            (Some(state), true) => births_file(&reader, &built.index, state),
            _ => None,
        };
        // The births are the SQL tables' (the library's columnar module): a build without
        // Parquet writes none, and says so when asked for them.
        #[cfg(not(feature = "parquet"))]
        let births: Option<AnalysisState> = {
            if args.births {
                super::common::line_to_stderr(
                    "warning: --births needs mtf built with the feature parquet (the SQL tables'): \
                     no births written",
                );
            }
            None
        };
        if let Some(bp) = births_path(&path) {
            match &births {
                Some(b) => b.write(&bp).map_err(|e| index_failure(&e))?,
                None => remove_stale(&bp)?,
            }
        }
        match state {
            Some(state) => {
                state.write(&sp).map_err(|e| index_failure(&e))?;
                state_line = format!(
                    "{}: analysis state at {} of {} checkpoints and at the end, {} bytes",
                    input_name(&sp),
                    state.stored(),
                    built.index.entries().len(),
                    state.file_len()
                );
                if let (Some(b), Some(bp)) = (&births, births_path(&path)) {
                    state_line += &format!(
                        "\n{}: births of the live blocks at {} checkpoints, {} bytes",
                        input_name(&bp),
                        b.stored(),
                        b.to_bytes().len()
                    );
                }
            }
            None => remove_stale(&sp)?,
        }
    }
    if let (true, Some(tp)) = (
        built.index.has_tables(),
        metatf::index::tables::tables_path(&path),
    ) {
        if !state_line.is_empty() {
            state_line.push('\n');
        }
        state_line += &format!(
            "{}: which of the trace's sections are tables, for reading from a checkpoint",
            input_name(&tp)
        );
    }
    if !quiet() {
        let line = built.summary(&index_name, &options, reader.bytes().len());
        let line = if state_line.is_empty() {
            line
        } else {
            format!("{line}\n{state_line}")
        };
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

/// Removes a file left beside an earlier index (a state or births file this index does not
/// have).
fn remove_stale(p: &Path) -> Result<(), Failure> {
    if p.is_file() {
        std::fs::remove_file(p).map_err(|e| {
            error(
                EXIT_USAGE,
                "mtf::io::write",
                format!("cannot remove the stale {}: {e}", input_name(p)),
            )
        })?;
    }
    Ok(())
}

/// The births file of an index (`metatf::columnar::births_file`, docs/format.md §15.5).
#[cfg(any(feature = "parquet", feature = "sql"))]
fn births_file(reader: &Reader<'_>, index: &Index, state: &AnalysisState) -> Option<AnalysisState> {
    metatf::columnar::births_file(reader, index, state)
}

/// A binary built without the heap tables (feature `parquet`) makes no births.
#[cfg(not(any(feature = "parquet", feature = "sql")))]
fn births_file(_: &Reader<'_>, _: &Index, _: &AnalysisState) -> Option<AnalysisState> {
    None
}
