//! The seek index `pack`, `compact` and `import` put beside the trace they wrote: written when
//! asked or when the output is large, rewritten when one was there, and a stale one (of the
//! trace replaced) removed when none is written.

use std::path::{Path, PathBuf};

use super::index::{index_beside, BesideError};
use crate::index;

/// Traces from this size on get a seek index by default.
pub const AUTO_INDEX_BYTES: u64 = 64 << 20;

/// Whether a writer puts a seek index beside its output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WriteIndex {
    /// For outputs of [`AUTO_INDEX_BYTES`] and more, or where an index already was.
    #[default]
    Auto,
    /// Whatever the output's size; not writing it is an error.
    Always,
    /// Never; an index already beside the output is removed.
    Never,
}

/// What [`after_write`] did beside an output.
#[derive(Debug)]
pub enum AfterWrite {
    /// Nothing: standard output, not a regular file, or small with no index beside it.
    Nothing,
    /// The index at `path` written, with so many checkpoints.
    Written {
        /// The index file.
        path: PathBuf,
        /// Its checkpoints.
        checkpoints: usize,
    },
    /// No index written at `path` (`failed`: why, when one was to be written); the index that
    /// was there, belonging to the trace replaced, removed (`removed`: whether it was there and
    /// whether removing it failed).
    NotWritten {
        /// The index file.
        path: PathBuf,
        /// Why it could not be written.
        failed: Option<BesideError>,
        /// `None`: there was none; else the removal's result.
        removed: Option<std::io::Result<()>>,
    },
}

/// After a writer committed `output` (read with the DTD `dtd`): build and write its seek index
/// when `write` and its size say so (named `name`), else remove a stale one.
pub fn after_write(
    output: &Path,
    dtd: Option<&Path>,
    write: WriteIndex,
    name: impl FnOnce(&Path) -> String,
) -> AfterWrite {
    let Some(path) = index::sidecar(output).filter(|_| output.as_os_str() != "-") else {
        return AfterWrite::Nothing;
    };
    let Some(meta) = std::fs::metadata(output).ok().filter(|m| m.is_file()) else {
        return AfterWrite::Nothing;
    };
    // An analysis state beside the index (docs/format.md §15.4) belongs to the trace replaced:
    // removed. Should that fail, it is refused as stale when read (it is bound to its index).
    if let Some(state) = index::analysis::state_path(&path).filter(|p| p.is_file()) {
        let _ = std::fs::remove_file(state);
    }
    let failed = match write {
        WriteIndex::Never => None,
        // An index already beside the output belongs to the trace it replaced: rewritten.
        WriteIndex::Auto if meta.len() < AUTO_INDEX_BYTES && !path.is_file() => {
            return AfterWrite::Nothing
        }
        _ => match index_beside(output, dtd, &path, name(&path)) {
            Ok(b) => {
                let checkpoints = b.index.entries().len();
                return AfterWrite::Written { path, checkpoints };
            }
            Err(e) => Some(e),
        },
    };
    let removed = path.is_file().then(|| std::fs::remove_file(&path));
    AfterWrite::NotWritten {
        path,
        failed,
        removed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small trace gets no index unless asked; asked, it gets one, which `Never` removes.
    #[test]
    fn small_outputs_get_an_index_only_when_asked_and_never_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let trace = dir.path().join("t.mtf");
        let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/android.mtf");
        std::fs::copy(sample, &trace).unwrap();
        let name = |p: &Path| p.display().to_string();
        let idx = index::sidecar(&trace).unwrap();
        let auto = after_write(&trace, None, WriteIndex::Auto, name);
        assert!(matches!(auto, AfterWrite::Nothing) && !idx.is_file());
        let always = after_write(&trace, None, WriteIndex::Always, name);
        assert!(matches!(always, AfterWrite::Written { .. }), "{always:?}");
        assert!(idx.is_file());
        // An index already there is rewritten whatever the size.
        let again = after_write(&trace, None, WriteIndex::Auto, name);
        assert!(matches!(again, AfterWrite::Written { .. }));
        let never = after_write(&trace, None, WriteIndex::Never, name);
        assert!(matches!(
            never,
            AfterWrite::NotWritten {
                failed: None,
                removed: Some(Ok(())),
                ..
            }
        ));
        assert!(!idx.is_file());
    }
}
