//! The seek index the writing subcommands put beside their output (`pack`, `compact`, `import`:
//! `--with-index`, `--no-index`), and where `mtf index` finds one; the reading subcommands'
//! `--index`/`--no-index` are `common::SeekArgs`.

use std::path::{Path, PathBuf};

use clap::Args;

use metatf::command::index::{index_beside, BesideError};
use metatf::command::seek::SeekOptions;

use metatf::index::{self, IndexError};

use super::common::{error, input_name, io_failure, line_to_stderr, quiet, usage_failure, Failure};
use super::EXIT_INVALID_TRACE;

/// Refuse reading both the trace and its index from standard input
/// ([`SeekOptions::refuse_both_stdin`]).
pub fn refuse_both_stdin(trace: &Path, index: Option<&Path>) -> Result<(), Failure> {
    let seek = SeekOptions {
        index: index.map(Path::to_path_buf),
        no_index: false,
    };
    seek.refuse_both_stdin(trace).map_err(|e| usage_failure(&e))
}

/// An index error as a failure: I/O as every I/O error, anything else status 1.
pub fn index_failure(e: &IndexError) -> Failure {
    match e {
        IndexError::Io(e) => io_failure(e),
        e => Failure::diagnostic(EXIT_INVALID_TRACE, e),
    }
}

pub fn index_path(trace: &Path, given: Option<&Path>) -> Option<PathBuf> {
    given
        .map(Path::to_path_buf)
        .or_else(|| index::sidecar(trace))
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
    let built = index_beside(output, dtd, &path, input_name(&path).into_owned())
        .map(|b| b.index.entries().len());
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
        // A trace whose live sets leave no room for a checkpoint: said, not written.
        Err(e @ BesideError::NoCheckpoint(_)) if !args.with_index => {
            line_to_stderr(&format!(
                "warning: no seek index written: {e}; dump --from/--skip and -j read it from its \
                 start (without --live it can be indexed)"
            ));
            remove_stale(&path);
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
