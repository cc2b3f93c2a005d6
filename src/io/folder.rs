//! Folders written as a whole (an export of one file per record type): [`StagedFolder`].

// Design: a folder output is written into a fresh hidden folder beside its target and put in
// place only when complete, so that the target holds the files of one run, never a mix of two
// (a second export whose trace has fewer record types left the first one's other files beside
// the new ones). On Linux the two folders are exchanged atomically (`renameat2` with
// `RENAME_EXCHANGE`), and the old one removed after; elsewhere (or on a file system without
// exchange) the old folder is renamed aside first, then the new one into place. What may be
// replaced is the caller's decision: this module only moves folders.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::IoError;

static STAGED: AtomicU64 = AtomicU64::new(0);

/// A folder being written beside `target`, removed with what it holds unless
/// [`StagedFolder::commit`] puts it in place.
#[derive(Debug)]
pub struct StagedFolder {
    path: PathBuf,
    target: PathBuf,
    done: bool,
    /// Its entry in the registry of temporary files: removed whole on SIGINT/SIGTERM
    /// ([`super::remove_temp_files`]).
    key: u64,
}

/// The folder of `target` (`.` for a bare name) and a hidden sibling name for it.
fn sibling(target: &Path, what: &str) -> PathBuf {
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(64).collect::<String>())
        .unwrap_or_default();
    let n = STAGED.fetch_add(1, Ordering::Relaxed);
    parent.join(format!(".{name}.mtf-{what}-{}-{n}", std::process::id()))
}

impl StagedFolder {
    /// Creates an empty hidden folder beside `target` (in the same file system, so that it can
    /// be renamed over it). Errors: [`IoError::MissingFolder`], [`IoError::Create`].
    pub fn beside(target: impl AsRef<Path>) -> Result<StagedFolder, IoError> {
        let target = target.as_ref();
        // A folder the user may not write is not replaced either (as `cp` refuses a read-only
        // file), although renaming over it would need only its parent's permission.
        #[cfg(unix)]
        if target.is_dir() {
            use std::os::unix::ffi::OsStrExt;
            if let Ok(c) = std::ffi::CString::new(target.as_os_str().as_bytes()) {
                // SAFETY: a valid NUL-terminated path.
                if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
                    return Err(IoError::Create {
                        path: target.to_path_buf(),
                        source: std::io::Error::last_os_error(),
                    });
                }
            }
        }
        let path = sibling(target, "new");
        std::fs::create_dir(&path).map_err(|source| {
            let missing = !path
                .parent()
                .is_some_and(|f| std::fs::metadata(f).is_ok_and(|m| m.is_dir()));
            if source.kind() == std::io::ErrorKind::NotFound && missing {
                IoError::MissingFolder {
                    path: target.to_path_buf(),
                    folder: path.parent().map(Path::to_path_buf).unwrap_or_default(),
                }
            } else {
                IoError::Create {
                    path: target.to_path_buf(),
                    source,
                }
            }
        })?;
        // Registered after creation, then the stop flag checked, as a temporary file is.
        let key = super::temp::register(&path);
        let staged = StagedFolder {
            path,
            target: target.to_path_buf(),
            done: false,
            key,
        };
        if super::temp::is_stopping() {
            return Err(IoError::Create {
                path: staged.target.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "the process is stopping",
                ),
            });
        }
        Ok(staged)
    }

    /// The folder to write into.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Puts the folder in place of the target: renamed to it if there is none (or an empty
    /// folder), else exchanged with it and the old folder, with everything in it, removed.
    /// Errors: [`IoError::Commit`]; the target is then left as it was.
    pub fn commit(mut self) -> Result<(), IoError> {
        let commit_err = |source| IoError::Commit {
            path: self.target.clone(),
            temp: self.path.clone(),
            source,
        };
        // An empty folder goes (as `rename` over it would do on Unix).
        let _ = std::fs::remove_dir(&self.target);
        if std::fs::symlink_metadata(&self.target).is_err() {
            std::fs::rename(&self.path, &self.target).map_err(commit_err)?;
            self.done = true;
            return Ok(());
        }
        if exchange(&self.path, &self.target) {
            // `path` now holds the old export.
            let _ = std::fs::remove_dir_all(&self.path);
            self.done = true;
            return Ok(());
        }
        let old = sibling(&self.target, "old");
        std::fs::rename(&self.target, &old).map_err(commit_err)?;
        if let Err(e) = std::fs::rename(&self.path, &self.target) {
            let _ = std::fs::rename(&old, &self.target);
            return Err(commit_err(e));
        }
        let _ = std::fs::remove_dir_all(&old);
        self.done = true;
        Ok(())
    }
}

impl Drop for StagedFolder {
    fn drop(&mut self) {
        super::temp::unregister(self.key);
        if !self.done {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Exchanges two paths atomically, if the platform and the file system can.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let (Ok(a), Ok(b)) = (
        std::ffi::CString::new(a.as_os_str().as_bytes()),
        std::ffi::CString::new(b.as_os_str().as_bytes()),
    ) else {
        return false;
    };
    // SAFETY: two valid NUL-terminated paths, relative to the current folder.
    let r = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    r == 0
}

#[cfg(not(target_os = "linux"))]
fn exchange(_: &Path, _: &Path) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::testutil::TestDir;

    #[test]
    fn a_staged_folder_replaces_the_whole_target_or_nothing() {
        let dir = TestDir::new("staged");
        let target = dir.0.join("out");
        // New target.
        let s = StagedFolder::beside(&target).unwrap();
        std::fs::write(s.path().join("a"), b"1").unwrap();
        std::fs::write(s.path().join("b"), b"1").unwrap();
        s.commit().unwrap();
        assert_eq!(dir.entries(), ["out"]);
        // Replaced whole: b does not survive.
        let s = StagedFolder::beside(&target).unwrap();
        std::fs::write(s.path().join("a"), b"2").unwrap();
        s.commit().unwrap();
        let mut names: Vec<_> = std::fs::read_dir(&target)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["a"]);
        assert_eq!(std::fs::read(target.join("a")).unwrap(), b"2");
        // Dropped: nothing changes, nothing is left.
        let s = StagedFolder::beside(&target).unwrap();
        std::fs::write(s.path().join("c"), b"3").unwrap();
        drop(s);
        assert_eq!(dir.entries(), ["out"]);
        // A missing parent folder.
        let err = StagedFolder::beside(dir.0.join("no/out")).unwrap_err();
        assert!(matches!(err, IoError::MissingFolder { .. }), "{err:?}");
    }

    /// Issue 25, item 18: `export --to parquet` interrupted by Ctrl-C left its hidden staging
    /// folder. A staged folder is in the registry of temporary files until it is put in place
    /// or dropped, and the signal watcher's cleanup removes it with what it holds.
    #[test]
    fn a_staged_folder_is_removed_whole_by_the_cleanup_of_a_signal() {
        use crate::io::temp::{is_registered, remove_registered};
        let dir = TestDir::new("staged-signal");
        let target = dir.0.join("out");
        let s = StagedFolder::beside(&target).unwrap();
        std::fs::write(s.path().join("a.parquet"), b"1").unwrap();
        let staging = s.path().to_path_buf();
        assert!(is_registered(&staging));
        assert_eq!(remove_registered(&staging), 1);
        assert!(!staging.exists());
        assert!(dir.entries().is_empty(), "{:?}", dir.entries());
        drop(s);
        // Put in place, it is no longer temporary.
        let s = StagedFolder::beside(&target).unwrap();
        let staging = s.path().to_path_buf();
        s.commit().unwrap();
        assert!(!is_registered(&staging));
        assert_eq!(dir.entries(), ["out"]);
    }
}
