//! Temporary files: a process-wide registry of the live ones, and [`TempFile`].

// Design: a signal handler may not take a lock or free memory, so the registry is not cleaned
// from inside one. The CLI instead watches SIGINT/SIGTERM from an ordinary thread (signal-hook's
// iterator) and calls [`remove_temp_files`] there, then exits. The registry is a `Mutex` of
// paths keyed by a counter; a poisoned lock is recovered, since a list of paths cannot be left
// half-updated in a way that matters.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use super::IoError;

static REGISTRY: Mutex<BTreeMap<u64, PathBuf>> = Mutex::new(BTreeMap::new());
static COUNTER: AtomicU64 = AtomicU64::new(0);
/// Set by [`remove_temp_files`]: temporary files created afterwards are removed at once.
static STOPPING: AtomicBool = AtomicBool::new(false);

fn registry() -> MutexGuard<'static, BTreeMap<u64, PathBuf>> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Deletes every temporary file that an [`crate::io::Output`] or a [`TempFile`] of this process
/// still holds, and every [`crate::io::StagedFolder`] not yet put in place, and forgets them. Returns how many were removed.
///
/// Call it from an ordinary thread, typically the one that watches SIGINT and SIGTERM, right
/// before exiting: it takes a lock and allocates, so it is **not** async-signal-safe and must not
/// run inside a signal handler. The files are removed by path; the handles that refer to them
/// stay valid (on Unix), and the later drop of their owners finds nothing left to remove.
/// From then on, a temporary file that another thread creates is removed at once and its
/// creation fails, so none is left behind by a race with the exit.
pub fn remove_temp_files() -> usize {
    STOPPING.store(true, Ordering::SeqCst);
    remove_where(|_| true)
}

/// Removes (and forgets) the registered files whose path satisfies `pred`.
fn remove_where(pred: impl Fn(&Path) -> bool) -> usize {
    let taken: Vec<PathBuf> = {
        let mut reg = registry();
        let keys: Vec<u64> = reg
            .iter()
            .filter(|(_, p)| pred(p))
            .map(|(k, _)| *k)
            .collect();
        keys.iter().filter_map(|k| reg.remove(k)).collect()
    };
    // A registered folder (a `StagedFolder` being written) goes with what it holds.
    taken
        .iter()
        .filter(|path| match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(path).is_ok(),
            _ => std::fs::remove_file(path).is_ok(),
        })
        .count()
}

/// Records `path` as a live temporary file (or folder); the returned key removes it from the
/// registry.
pub(crate) fn register(path: &Path) -> u64 {
    let key = COUNTER.fetch_add(1, Ordering::Relaxed);
    registry().insert(key, path.to_path_buf());
    key
}

/// Whether [`remove_temp_files`] has run: nothing temporary may be made any more.
pub(crate) fn is_stopping() -> bool {
    STOPPING.load(Ordering::SeqCst)
}

/// Forgets a temporary file (it was renamed into place or removed by its owner).
pub(crate) fn unregister(key: u64) {
    registry().remove(&key);
}

/// Removes the registered `path` as [`remove_temp_files`] would, without stopping the process.
#[cfg(test)]
pub(crate) fn remove_registered(path: &Path) -> usize {
    remove_where(|p| p == path)
}

#[cfg(test)]
pub(crate) fn is_registered(path: &Path) -> bool {
    registry().values().any(|p| p == path)
}

/// Creates a new file in `folder` whose name starts with `prefix`, never opening an existing
/// one (`create_new`). On Unix it is created with mode `0o666`, so that the umask applies as to
/// any new file. The file is registered; the key is returned with the file and its path.
pub(crate) fn create_in(folder: &Path, prefix: &str) -> io::Result<(File, PathBuf, u64)> {
    create_in_mode(folder, prefix, 0o666)
}

/// As [`create_in`], with the Unix permission bits `mode` (before the umask).
fn create_in_mode(folder: &Path, prefix: &str, mode: u32) -> io::Result<(File, PathBuf, u64)> {
    #[cfg(not(unix))]
    let _ = mode;
    let pid = std::process::id();
    let mut last = None;
    for _ in 0..64 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = folder.join(format!("{prefix}{pid}-{n}-{nanos:08x}.tmp"));
        let mut options = OpenOptions::new();
        options.read(true).write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(mode);
        }
        match options.open(&path) {
            Ok(file) => {
                // Design: registered after creation, then the stop flag checked: either
                // `remove_temp_files` (which sets the flag before emptying the registry) sees
                // the entry, or this thread sees the flag; the file is never missed.
                let key = register(&path);
                if STOPPING.load(Ordering::SeqCst) {
                    unregister(key);
                    drop(file);
                    let _ = std::fs::remove_file(&path);
                    return Err(io::Error::new(
                        io::ErrorKind::Interrupted,
                        "the process is stopping",
                    ));
                }
                return Ok((file, path, key));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

/// A new scratch file in `folder`, readable by its owner only and already unlinked: nothing
/// is left on disk however the process ends (SIGKILL included), and its space is freed when the
/// last handle or memory map of it goes. For spooling an input that cannot be mapped
/// ([`crate::io::Input`]).
#[cfg(unix)]
pub(crate) fn unlinked_in(folder: &Path) -> Result<File, IoError> {
    let folder = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    let failed = |source| IoError::TempFile {
        folder: folder.to_path_buf(),
        source,
    };
    let (file, path, key) = create_in_mode(folder, ".mtf-input-", 0o600).map_err(failed)?;
    let removed = std::fs::remove_file(&path);
    unregister(key);
    match removed {
        Ok(()) => Ok(file),
        // A SIGINT watcher removed it first ([`remove_temp_files`]); the process is stopping.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(file),
        Err(e) => Err(failed(e)),
    }
}

/// A scratch file, removed when dropped: for writers that spool records before they know the
/// header. It is [`Read`], [`Write`] and [`Seek`] (unbuffered: wrap it in a `BufWriter` for many
/// small writes, then [`TempFile::rewind`] and read it back).
///
/// ```
/// use std::io::{Read, Write};
/// let mut spool = metatf::io::TempFile::new()?;
/// spool.write_all(b"records")?;
/// spool.rewind()?;
/// let mut back = String::new();
/// spool.read_to_string(&mut back)?;
/// assert_eq!(back, "records");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
// Design: the file keeps its name until dropped (rather than being unlinked at once on Unix) so
// that it behaves the same on every platform and shows up by name if the process is killed with
// SIGKILL; SIGINT and SIGTERM are covered by the registry and [`remove_temp_files`].
#[derive(Debug)]
pub struct TempFile {
    file: File,
    path: PathBuf,
    key: u64,
}

impl TempFile {
    /// A scratch file in the system's temporary folder ([`std::env::temp_dir`]).
    pub fn new() -> Result<TempFile, IoError> {
        TempFile::new_in(std::env::temp_dir())
    }

    /// A scratch file in `folder` (choose the output's folder to keep a later copy on one file
    /// system).
    pub fn new_in(folder: impl AsRef<Path>) -> Result<TempFile, IoError> {
        let folder = folder.as_ref();
        let folder = if folder.as_os_str().is_empty() {
            Path::new(".")
        } else {
            folder
        };
        let (file, path, key) =
            create_in(folder, ".mtf-spool-").map_err(|source| IoError::TempFile {
                folder: folder.to_path_buf(),
                source,
            })?;
        Ok(TempFile { file, path, key })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The open file, mutably.
    pub fn file_mut(&mut self) -> &mut File {
        &mut self.file
    }

    /// Goes back to the start, to read what was written.
    pub fn rewind(&mut self) -> io::Result<()> {
        self.file.seek(SeekFrom::Start(0)).map(|_| ())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        unregister(self.key);
        let _ = std::fs::remove_file(&self.path);
    }
}

impl Read for TempFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.file.read(buf)
    }
}

impl Write for TempFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Seek for TempFile {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.file.seek(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::testutil::TestDir;

    #[test]
    fn temp_file_round_trips_and_is_removed_on_drop() {
        let dir = TestDir::new("tempfile");
        let mut t = TempFile::new_in(&dir.0).unwrap();
        let path = t.path().to_path_buf();
        assert!(path.starts_with(&dir.0));
        assert!(is_registered(&path));
        t.write_all(b"hello spool").unwrap();
        t.rewind().unwrap();
        let mut s = String::new();
        t.read_to_string(&mut s).unwrap();
        assert_eq!(s, "hello spool");
        t.seek(SeekFrom::Start(6)).unwrap();
        s.clear();
        t.read_to_string(&mut s).unwrap();
        assert_eq!(s, "spool");
        drop(t);
        assert!(!path.exists());
        assert!(!is_registered(&path));
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn temp_file_in_missing_folder_is_a_typed_error() {
        let dir = TestDir::new("tempfile-missing");
        let err = TempFile::new_in(dir.0.join("nope")).unwrap_err();
        assert!(matches!(err, IoError::TempFile { .. }), "{err:?}");
        assert!(err.to_string().contains("nope"));
    }

    #[test]
    fn names_do_not_collide() {
        let dir = TestDir::new("tempfile-many");
        let files: Vec<_> = (0..50).map(|_| TempFile::new_in(&dir.0).unwrap()).collect();
        assert_eq!(dir.entries().len(), 50);
        drop(files);
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn remove_temp_files_deletes_live_files() {
        // Other tests run in parallel and hold temporary files, so only this test's folder is
        // cleaned; `remove_temp_files` is `remove_where(|_| true)`. The later drop must not fail.
        let dir = TestDir::new("tempfile-signal");
        let t = TempFile::new_in(&dir.0).unwrap();
        let u = TempFile::new_in(&dir.0).unwrap();
        let path = t.path().to_path_buf();
        let removed = remove_where(|p| p.starts_with(&dir.0));
        assert_eq!(removed, 2);
        assert!(dir.entries().is_empty());
        drop(u);
        assert!(!path.exists());
        assert!(!is_registered(&path));
        drop(t);
    }

    /// In a child (it sets the process-wide stop flag): what a SIGINT watcher does.
    #[test]
    #[ignore = "run in a child process by remove_temp_files_in_a_child"]
    fn child_remove_all() {
        if !crate::io::testutil::is_child() {
            return;
        }
        let dir = PathBuf::from(std::env::var_os(crate::io::testutil::CHILD_VAR).unwrap());
        let mut out = crate::io::Output::create(dir.join("out.mtf")).unwrap();
        out.write_all(b"partial").unwrap();
        let spool = TempFile::new_in(&dir).unwrap();
        let watcher = std::thread::spawn(remove_temp_files);
        let removed = watcher.join().unwrap();
        let left = std::fs::read_dir(&dir).unwrap().count();
        let refused = matches!(TempFile::new_in(&dir), Err(IoError::TempFile { .. }));
        drop(spool);
        drop(out);
        std::process::exit(if removed == 2 && left == 0 && refused {
            3
        } else {
            4
        });
    }

    #[test]
    fn remove_temp_files_in_a_child() {
        let dir = TestDir::new("tempfile-child");
        crate::io::testutil::child_leaves_folder_empty("io::temp::tests::child_remove_all", &dir);
    }
}
