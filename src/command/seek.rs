//! Where the reading commands find a trace's seek index (docs/format.md §15), and how they start
//! from one.

use std::path::{Path, PathBuf};

use crate::decode::{Reader, Records};
use crate::index::{self, Index, IndexError, Target};

use super::{UsageError, Warning};

/// Which seek index a command uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SeekOptions {
    /// The index file (`-` for standard input); by default `TRACE.idx` when it exists.
    pub index: Option<PathBuf>,
    /// Ignore the index beside the trace.
    pub no_index: bool,
}

impl SeekOptions {
    /// Refuse reading both `trace` and its index from standard input.
    pub fn refuse_both_stdin(&self, trace: &Path) -> Result<(), UsageError> {
        let stdin = |p: &Path| p.as_os_str() == "-";
        if stdin(trace) && self.index.as_deref().is_some_and(stdin) {
            return Err(UsageError::IndexAndTraceStdin);
        }
        Ok(())
    }

    /// Where the index of `trace` is: the one named, else the sidecar (none for standard
    /// input).
    fn path(&self, trace: &Path) -> Option<PathBuf> {
        self.index.clone().or_else(|| index::sidecar(trace))
    }

    /// Where the index of `trace` would be: the one named, else `TRACE.idx` (`None` for
    /// standard input), whether or not it exists.
    pub fn index_path(&self, trace: &Path) -> Option<PathBuf> {
        self.path(trace)
    }

    /// Whether a seek index is named, or found beside `trace`: a stream is then not decoded as
    /// it arrives (an index seeks, and `-j` cuts the trace at its checkpoints).
    pub fn has_index(&self, trace: &Path) -> bool {
        !self.no_index
            && self
                .path(trace)
                .is_some_and(|p| self.index.is_some() || p.is_file())
    }

    /// The index for `trace`: the one named, else `TRACE.idx` when it exists; `None` when
    /// there is none to use. An index that cannot be read is an error for the caller.
    pub fn find(&self, trace: &Path) -> Option<Result<Index, IndexError>> {
        if self.no_index {
            return None;
        }
        let path = self.path(trace)?;
        if self.index.is_none() && !path.is_file() {
            return None;
        }
        Some(Index::load(&path))
    }

    /// As [`SeekOptions::find`], an index that cannot be read given to `warn` (reading then
    /// starts at the beginning).
    pub fn load(&self, trace: &Path, warn: &mut dyn FnMut(Warning)) -> Option<Index> {
        match self.find(trace)? {
            Ok(idx) => {
                if let Some(e) = idx.tables_problem() {
                    warn(Warning::TablesSkipped(e));
                }
                Some(idx)
            }
            Err(e) => {
                warn(Warning::IndexSkipped(e));
                None
            }
        }
    }
}

/// A decode from the checkpoint of `idx` nearest before `target`, or `None` (decode from the
/// start) when there is none before it or the index does not fit (given to `warn`).
pub fn start<'r>(
    idx: &Index,
    reader: &'r Reader<'r>,
    target: Target,
    warn: &mut dyn FnMut(Warning),
) -> Option<Records<'r>> {
    match idx.seek(reader, target) {
        Ok(found) => found.map(|(_, records)| records),
        Err(e) => {
            warn(Warning::IndexSkipped(e));
            None
        }
    }
}
