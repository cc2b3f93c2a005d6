//! The inputs no [`super::Output`] may replace: [`protect_input`], [`refuse_overwrite`].

// Design: one process-wide list of the files a command reads (its traces, DTDs, mappings,
// indexes), by identity (device and inode, after following symbolic links, so that a link or a
// hard link to an input is the input), checked in one place: `Output::create`, which every
// writer goes through (a trace, a text file, each file of an export to a folder, a seek index).
// A command that registers its inputs before it starts cannot replace one of them whatever it
// writes and wherever the name comes from (`-o`, a part of an export, a derived DTD), as `cp a a`
// refuses. Standard input counts by what it is (`mtf stats - -o T < T`). The list is empty for a
// library user who never calls `protect_input`: nothing changes for them.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::IoError;

/// A protected input: its identity and the name it was given by.
struct Protected {
    dev: u64,
    ino: u64,
    path: PathBuf,
}

static PROTECTED: Mutex<Vec<Protected>> = Mutex::new(Vec::new());

fn protected() -> std::sync::MutexGuard<'static, Vec<Protected>> {
    match PROTECTED.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The identity of the regular file `path` names (after following links; `-` is standard
/// input), if it is one.
fn identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let meta = if path.as_os_str() == "-" {
            // Standard input redirected from a file.
            std::fs::metadata("/dev/stdin").ok()?
        } else {
            std::fs::metadata(path).ok()?
        };
        meta.is_file().then(|| (meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Registers `path` (`-` for standard input) as an input of this process: [`super::Output`]
/// then refuses to replace or write into that file ([`IoError::OverwritesInput`]), whatever
/// name the output is given (a symbolic or hard link to it, say). Anything but a regular file
/// (a pipe, a device, a missing path) is not registered.
pub fn protect_input(path: impl AsRef<Path>) {
    let path = path.as_ref();
    if let Some((dev, ino)) = identity(path) {
        let mut list = protected();
        // Entries whose name no longer names their file (deleted inputs) go: their inode
        // number may be this file's now.
        list.retain(|p| identity(&p.path) == Some((p.dev, p.ino)));
        if !list.iter().any(|p| p.dev == dev && p.ino == ino) {
            list.push(Protected {
                dev,
                ino,
                path: path.to_path_buf(),
            });
        }
    }
}

/// Refuses an output `path` that is one of the inputs registered with [`protect_input`]
/// (checked by identity, after following symbolic links): [`IoError::OverwritesInput`] naming
/// both. `-` and a path that does not exist yet pass.
pub fn refuse_overwrite(path: impl AsRef<Path>) -> Result<(), IoError> {
    let path = path.as_ref();
    if path.as_os_str() == "-" {
        return Ok(());
    }
    let Some((dev, ino)) = identity(path) else {
        return Ok(());
    };
    // An entry counts only while its name still names that file: an input deleted since (a
    // temporary file, a library user's long-lived process) may have its inode number reused by
    // a new file, which is no input.
    let list = protected();
    let hit = list
        .iter()
        .find(|p| p.dev == dev && p.ino == ino && identity(&p.path) == Some((dev, ino)));
    match hit {
        Some(p) => Err(IoError::OverwritesInput {
            path: path.to_path_buf(),
            input: p.path.clone(),
        }),
        None => Ok(()),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::io::testutil::TestDir;
    use crate::io::Output;

    #[test]
    fn an_input_is_refused_by_any_name() {
        let dir = TestDir::new("guard");
        let input = dir.0.join("in.mtf");
        std::fs::write(&input, b"trace").unwrap();
        let other = dir.0.join("other.txt");
        std::fs::write(&other, b"other").unwrap();
        let hard = dir.0.join("hard.mtf");
        std::fs::hard_link(&input, &hard).unwrap();
        let soft = dir.0.join("soft.mtf");
        std::os::unix::fs::symlink("in.mtf", &soft).unwrap();
        protect_input(&input);
        for name in [&input, &hard, &soft, &dir.0.join("./in.mtf")] {
            let err = Output::create(name).unwrap_err();
            assert!(matches!(err, IoError::OverwritesInput { .. }), "{err:?}");
            assert!(err.to_string().contains("in.mtf"), "{err}");
            assert!(refuse_overwrite(name).is_err());
        }
        assert_eq!(std::fs::read(&input).unwrap(), b"trace");
        // Other files and new ones are written as always.
        assert!(refuse_overwrite(&other).is_ok());
        assert!(refuse_overwrite(dir.0.join("new.txt")).is_ok());
        assert!(refuse_overwrite("-").is_ok());
        let mut out = Output::create(&other).unwrap();
        std::io::Write::write_all(&mut out, b"new").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read(&other).unwrap(), b"new");
    }

    #[test]
    fn a_deleted_input_protects_no_file_that_reuses_its_inode() {
        let dir = TestDir::new("guard-gone");
        let input = dir.0.join("gone.mtf");
        std::fs::write(&input, b"trace").unwrap();
        protect_input(&input);
        let (dev, ino) = identity(&input).unwrap();
        std::fs::remove_file(&input).unwrap();
        // A new file, wherever its inode comes from, is not the deleted input; the check is
        // made against what the input's name names now.
        let fresh = dir.0.join("fresh.txt");
        std::fs::write(&fresh, b"x").unwrap();
        assert!(refuse_overwrite(&fresh).is_ok());
        // Registering a file again drops the stale entry, so a new input whose inode number
        // was the deleted one's is protected under its own name.
        protect_input(&fresh);
        assert!(!protected()
            .iter()
            .any(|p| (p.dev, p.ino) == (dev, ino) && p.path == input));
        assert!(refuse_overwrite(&fresh).is_err());
    }
}
