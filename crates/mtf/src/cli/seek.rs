//! The seek index the writing subcommands put beside their output (`pack`, `compact`, `import`:
//! `--with-index`, `--no-index`), and where `mtf index` finds one; the reading subcommands'
//! `--index`/`--no-index` are `common::SeekArgs`.

use std::path::{Path, PathBuf};

use clap::Args;

use metatf::command::beside::{self, AfterWrite, WriteIndex};
use metatf::command::index::BesideError;
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

// Design: the index of a written trace is built by reading the finished file back, not by the
// writer as it goes: checkpoints are then exactly those a reader takes, whatever wrote the
// trace (pack, compact with its own metadata, import), at the cost of one decode — less than
// a tenth of the time of pack or import, a fraction of compact's.

/// After a writer committed `output`: build and write its seek index when `args` and its size
/// say so ([`after_write`](metatf::command::beside::after_write)). A failure is an error when
/// the index was asked for, else a warning; a stale index removed is said.
pub fn after_write(
    output: &Path,
    dtd: Option<&Path>,
    args: &WriteIndexArgs,
) -> Result<(), Failure> {
    let write = match (args.with_index, args.no_index) {
        (true, _) => WriteIndex::Always,
        (_, true) => WriteIndex::Never,
        _ => WriteIndex::Auto,
    };
    let name = |p: &Path| input_name(p).into_owned();
    let (path, failed, removed) = match beside::after_write(output, dtd, write, name) {
        AfterWrite::Nothing => return Ok(()),
        AfterWrite::Written { path, checkpoints } => {
            if !quiet() {
                let name = input_name(&path);
                line_to_stderr(&format!("{name}: seek index, {checkpoints} checkpoints"));
            }
            return Ok(());
        }
        AfterWrite::NotWritten {
            path,
            failed,
            removed,
        } => (path, failed, removed),
    };
    match &failed {
        // A trace whose live sets leave no room for a checkpoint: said, not written.
        Some(e @ BesideError::NoCheckpoint(_)) if !args.with_index => line_to_stderr(&format!(
            "warning: no seek index written: {e}; dump --from/--skip and -j read it from its \
             start (without --live it can be indexed)"
        )),
        Some(e) if !args.with_index => {
            line_to_stderr(&format!("warning: no seek index written: {e}"))
        }
        _ => {}
    }
    // The index of the trace replaced no longer fits it (a stale index makes `check` fail and
    // every seek warn); a failure to remove it is a warning.
    match removed {
        Some(Ok(())) if !quiet() => line_to_stderr(&format!(
            "{}: removed (the seek index of the trace replaced)",
            input_name(&path)
        )),
        Some(Err(e)) => line_to_stderr(&format!(
            "warning: {} belongs to the trace replaced and could not be removed ({e}): delete \
             it, or rebuild it with `mtf index`",
            input_name(&path)
        )),
        _ => {}
    }
    match failed {
        Some(e) if args.with_index => Err(error(
            super::exit::EXIT_USAGE,
            "mtf::index::write",
            format!("no seek index written: {e}"),
        )),
        _ => Ok(()),
    }
}
