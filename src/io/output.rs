//! [`Output`]: where a command writes a file the user named.

// Design: the semantics are those of `cp` and `zstd -o`. A regular file is never written in
// place: a reader (or a crash) must see either the old file or the complete new one, so the data
// goes to a temporary file in the target's own folder (a rename is atomic only within one file
// system) and is renamed over the target on `commit`. A device, FIFO or socket cannot be replaced
// that way and is what the user asked to write to (`/dev/null`, `/dev/stdout`, `>(gzip >x)`), so
// it is written directly. A symbolic link is followed and its final target replaced, so that the
// link stays a link, as `cp` does; a dangling link is refused, as GNU `cp` does, since writing
// through one (say in /tmp) creates a file where the link's owner chose.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, BufWriter, Stdout, Write};
use std::path::{Path, PathBuf};

use super::temp::{create_in, unregister};
use super::{Compression, IoError};

/// The most symbolic links followed, as Linux's `MAXSYMLINKS`.
const MAX_LINKS: usize = 40;

/// A file being written: standard output, a device written directly, or a temporary file that
/// replaces a regular file on [`Output::commit`].
///
/// ```
/// use std::io::Write;
/// # let dir = std::env::temp_dir().join(format!("mtf-output-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let path = dir.join("out.txt");
/// let mut out = metatf::io::Output::create(&path)?;
/// writeln!(out, "hello")?;
/// assert!(!path.exists()); // nothing is visible before the commit
/// out.commit()?;
/// assert_eq!(std::fs::read_to_string(&path)?, "hello\n");
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Write errors come back from [`Write`] as [`std::io::Error`]; [`Output::error`] turns one into
/// an [`IoError`] that names the path and tells a full disk apart. Call [`Output::commit`] at the
/// end: dropping an `Output` without committing removes its temporary file (the target is left as
/// it was); for standard output and devices a drop flushes what is buffered, ignoring errors.
#[derive(Debug)]
pub struct Output {
    path: PathBuf,
    state: Option<State>,
    /// The compressor of an output whose name asks for one (`x.zst`), writing into a buffer
    /// that is moved on to `state` after each write.
    packer: Option<Box<Packer>>,
}

#[derive(Debug)]
enum State {
    Stdout(BufWriter<Stdout>),
    Direct {
        writer: BufWriter<File>,
        target: PathBuf,
    },
    Replace {
        writer: BufWriter<File>,
        temp: PathBuf,
        key: u64,
        target: PathBuf,
        /// The file being replaced, if there is one: its permission bits and owner are kept.
        existing: Option<Box<Metadata>>,
    },
}

impl Output {
    /// Opens the output `path`: `-` is standard output; an existing device, FIFO or socket
    /// (after following symbolic links) is opened for writing as it is; a regular file, new or
    /// existing, is written to a temporary file beside it (beside the link's final target for a
    /// symbolic link). Name a file called `-` as `./-`.
    ///
    /// Errors: [`IoError::IsFolder`], [`IoError::MissingFolder`],
    /// [`IoError::DanglingSymlink`], [`IoError::Create`] (permission denied, too many links, ...),
    /// [`IoError::OverwritesInput`] (the path is an input registered with
    /// [`super::protect_input`]).
    ///
    /// A name that ends in `.gz`, `.zst`, `.xz` or `.bz2` (in any case) is compressed so, as
    /// `gzip`, `zstd`, `xz` and `bzip2` write it at their default levels ([`Output::compression`]);
    /// [`Output::create_plain`] writes the bytes as they are whatever the name. Without the
    /// feature `compression` such a name is [`IoError::NoCompressionForOutput`].
    pub fn create(path: impl AsRef<Path>) -> Result<Output, IoError> {
        let path = path.as_ref();
        let format = Compression::for_name(path);
        let mut out = Output::create_plain(path)?;
        if let Some(format) = format {
            out.packer = Some(Box::new(Packer::new(format, path)?));
        }
        Ok(out)
    }

    /// As [`Output::create`], but the bytes are written as they are whatever the name: for a
    /// caller that compresses them itself.
    pub fn create_plain(path: impl AsRef<Path>) -> Result<Output, IoError> {
        let path = path.as_ref();
        let state = if path.as_os_str() == "-" {
            State::Stdout(BufWriter::new(io::stdout()))
        } else {
            super::guard::refuse_overwrite(path)?;
            open_state(path)?
        };
        Ok(Output {
            path: path.to_path_buf(),
            state: Some(state),
            packer: None,
        })
    }

    /// The compression the output's name asked for ([`Output::create`]), if any.
    pub fn compression(&self) -> Option<Compression> {
        self.packer.as_ref().map(|p| p.format())
    }

    /// Whether this is standard output (the path `-`).
    pub fn is_stdout(&self) -> bool {
        matches!(self.state, Some(State::Stdout(_)))
    }

    /// The path as given to [`Output::create`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file finally written: for a regular file, the final target of the chain of
    /// symbolic links; otherwise the path as given (`-` for standard output).
    pub fn target(&self) -> &Path {
        match &self.state {
            Some(State::Direct { target, .. }) | Some(State::Replace { target, .. }) => target,
            _ => &self.path,
        }
    }

    /// The temporary file that receives the data, if the target is a regular file.
    pub fn temp_path(&self) -> Option<&Path> {
        match &self.state {
            Some(State::Replace { temp, .. }) => Some(temp),
            _ => None,
        }
    }

    /// Turns an error returned by this output's [`Write`] methods into an [`IoError`] naming the
    /// path: [`IoError::NoSpace`], [`IoError::FileTooLarge`] or [`IoError::Write`].
    pub fn error(&self, source: io::Error) -> IoError {
        IoError::from_write(&self.path, source)
    }

    /// Finishes the output. Standard output and devices are flushed. A regular file is flushed,
    /// `fsync`ed, given the permission bits (and, where allowed, the owner) of the file it
    /// replaces, renamed over the target, and its folder is `fsync`ed (best effort). On error the
    /// temporary file is removed and the target is left as it was.
    pub fn commit(mut self) -> Result<(), IoError> {
        let path = self.path.clone();
        if let Some(packer) = self.packer.take() {
            // The end of the compressed stream, then the output's own commit.
            let rest = (*packer)
                .finish()
                .map_err(|e| IoError::from_write(&path, e))?;
            self.writer()
                .write_all(&rest)
                .map_err(|e| IoError::from_write(&path, e))?;
        }
        match self.state.take() {
            None => Ok(()),
            Some(State::Stdout(mut w)) => w.flush().map_err(|e| IoError::from_write(path, e)),
            Some(State::Direct { mut writer, .. }) => {
                // Design: no fsync: it fails with EINVAL on pipes and most devices.
                writer.flush().map_err(|e| IoError::from_write(path, e))
            }
            Some(State::Replace {
                writer,
                temp,
                key,
                target,
                existing,
            }) => {
                let result = replace(&path, writer, &temp, &target, existing.as_deref());
                if result.is_err() {
                    let _ = std::fs::remove_file(&temp);
                }
                unregister(key);
                result
            }
        }
    }

    fn writer(&mut self) -> &mut dyn Write {
        match self.state.as_mut().expect("output used after commit") {
            State::Stdout(w) => w,
            State::Direct { writer, .. } | State::Replace { writer, .. } => writer,
        }
    }
}

// Design: a compressed output's `flush` moves on what the compressor has produced and flushes
// that, but does not end a compressed block: flushing the compressor itself at every caller's
// flush would cost compression, and the stream is complete only at `commit` anyway.
impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.packer.is_some() {
            self.write_all(buf)?;
            return Ok(buf.len());
        }
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let Some(packer) = self.packer.as_mut() else {
            return self.writer().write_all(buf);
        };
        packer.write_all(buf)?;
        self.move_packed()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

impl Output {
    /// Moves what the compressor has produced on to the file.
    fn move_packed(&mut self) -> io::Result<()> {
        let Some(mut packed) = self.packer.as_mut().map(|p| p.take()) else {
            return Ok(());
        };
        let result = if packed.is_empty() {
            Ok(())
        } else {
            self.writer().write_all(&packed)
        };
        packed.clear();
        if let Some(p) = self.packer.as_mut() {
            p.give_back(packed);
        }
        result
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Some(State::Replace {
            writer, temp, key, ..
        }) = self.state.take()
        {
            // Discard the buffer rather than flushing it into a file about to be removed.
            let (file, _) = writer.into_parts();
            drop(file);
            let _ = std::fs::remove_file(&temp);
            unregister(key);
        }
    }
}

impl Compression {
    /// The compression a file name asks for by its extension: `.gz`, `.zst`, `.xz`, `.bz2`
    /// (in any case).
    pub fn for_name(path: &Path) -> Option<Compression> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "gz" => Some(Compression::Gzip),
            "zst" => Some(Compression::Zstd),
            "xz" => Some(Compression::Xz),
            "bz2" => Some(Compression::Bzip2),
            _ => None,
        }
    }
}

/// A compressor writing into a buffer of its own.
// Design: the compressor owns a `Vec`, not the file: the file stays in `State`, where `commit`
// needs it (fsync, rename), and what is compressed is moved on after each write.
#[cfg(feature = "compression")]
enum Packer {
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
    Xz(xz2::write::XzEncoder<Vec<u8>>),
    Bzip2(bzip2::write::BzEncoder<Vec<u8>>),
}

#[cfg(not(feature = "compression"))]
enum Packer {}

impl std::fmt::Debug for Packer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Packer({})", self.format())
    }
}

#[cfg(feature = "compression")]
impl Packer {
    /// A compressor of `format` at the level its command-line tool uses by default.
    fn new(format: Compression, path: &Path) -> Result<Packer, IoError> {
        let buf = Vec::with_capacity(64 * 1024);
        Ok(match format {
            Compression::Gzip => Packer::Gzip(flate2::write::GzEncoder::new(
                buf,
                flate2::Compression::new(6),
            )),
            Compression::Zstd => {
                Packer::Zstd(zstd::stream::write::Encoder::new(buf, 3).map_err(|source| {
                    IoError::Create {
                        path: path.to_path_buf(),
                        source,
                    }
                })?)
            }
            Compression::Xz => Packer::Xz(xz2::write::XzEncoder::new(buf, 6)),
            Compression::Bzip2 => Packer::Bzip2(bzip2::write::BzEncoder::new(
                buf,
                bzip2::Compression::new(9),
            )),
        })
    }

    fn format(&self) -> Compression {
        match self {
            Packer::Gzip(_) => Compression::Gzip,
            Packer::Zstd(_) => Compression::Zstd,
            Packer::Xz(_) => Compression::Xz,
            Packer::Bzip2(_) => Compression::Bzip2,
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Packer::Gzip(e) => e.write_all(buf),
            Packer::Zstd(e) => e.write_all(buf),
            Packer::Xz(e) => e.write_all(buf),
            Packer::Bzip2(e) => e.write_all(buf),
        }
    }

    fn buffer(&mut self) -> &mut Vec<u8> {
        match self {
            Packer::Gzip(e) => e.get_mut(),
            Packer::Zstd(e) => e.get_mut(),
            Packer::Xz(e) => e.get_mut(),
            Packer::Bzip2(e) => e.get_mut(),
        }
    }

    /// What has been compressed so far (the buffer is handed back by [`Packer::give_back`]).
    fn take(&mut self) -> Vec<u8> {
        std::mem::take(self.buffer())
    }

    fn give_back(&mut self, buf: Vec<u8>) {
        let mine = self.buffer();
        if mine.is_empty() {
            *mine = buf;
        }
    }

    /// Ends the stream: the rest of the compressed bytes.
    fn finish(self) -> io::Result<Vec<u8>> {
        match self {
            Packer::Gzip(e) => e.finish(),
            Packer::Zstd(e) => e.finish(),
            Packer::Xz(e) => e.finish(),
            Packer::Bzip2(e) => e.finish(),
        }
    }
}

#[cfg(not(feature = "compression"))]
impl Packer {
    fn new(format: Compression, path: &Path) -> Result<Packer, IoError> {
        Err(IoError::NoCompressionForOutput {
            path: path.to_path_buf(),
            format,
        })
    }
    fn format(&self) -> Compression {
        match *self {}
    }
    fn write_all(&mut self, _: &[u8]) -> io::Result<()> {
        match *self {}
    }
    fn take(&mut self) -> Vec<u8> {
        match *self {}
    }
    fn give_back(&mut self, _: Vec<u8>) {
        match *self {}
    }
    fn finish(self) -> io::Result<Vec<u8>> {
        match self {}
    }
}

/// The end of a chain of symbolic links.
struct Resolved {
    /// The final target.
    target: PathBuf,
    /// Its metadata, if it exists.
    meta: Option<Metadata>,
    /// Whether a link on the way is a "magic" one of `/proc` or `/dev/fd`.
    magic: bool,
    /// The descriptor of this process that the first `/proc/self/fd/N`, `/dev/fd/N` or
    /// `/proc/<pid>/fd/N` link on the way stands for.
    fd: Option<i32>,
}

/// The descriptor `N` if `link` is `/proc/self/fd/N`, `/proc/<our pid>/fd/N` or `/dev/fd/N`.
fn own_fd(link: &Path) -> Option<i32> {
    let pid = format!("/proc/{}/fd", std::process::id());
    let rest = link
        .strip_prefix("/proc/self/fd")
        .or_else(|_| link.strip_prefix("/dev/fd"))
        .or_else(|_| link.strip_prefix(&pid))
        .ok()?;
    rest.to_str()?.parse().ok()
}

/// Follows symbolic links from `path` to the final target.
fn resolve(path: &Path) -> Result<Resolved, IoError> {
    let create_err = |source| IoError::Create {
        path: path.to_path_buf(),
        source,
    };
    let mut current = path.to_path_buf();
    let mut magic = false;
    let mut fd = None;
    for _ in 0..=MAX_LINKS {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                magic |= current.starts_with("/proc") || current.starts_with("/dev/fd");
                fd = fd.or_else(|| own_fd(&current));
                let link = std::fs::read_link(&current).map_err(create_err)?;
                current = match current.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
            }
            Ok(meta) => {
                return Ok(Resolved {
                    target: current,
                    meta: Some(meta),
                    magic,
                    fd,
                })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if current != path && parent_exists(&current) {
                    return Err(IoError::DanglingSymlink {
                        path: path.to_path_buf(),
                        target: current,
                    });
                }
                return Ok(Resolved {
                    target: current,
                    meta: None,
                    magic,
                    fd,
                });
            }
            Err(e) => return Err(create_err(e)),
        }
    }
    Err(create_err(io::Error::other(
        "too many levels of symbolic links",
    )))
}

/// The folder a file at `path` lives in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

fn parent_exists(path: &Path) -> bool {
    folder_of(path).is_dir()
}

fn open_state(path: &Path) -> Result<State, IoError> {
    let create_err = |source| IoError::Create {
        path: path.to_path_buf(),
        source,
    };
    let direct = |truncate: bool| -> Result<State, IoError> {
        let file = OpenOptions::new()
            .write(true)
            .truncate(truncate)
            .open(path)
            .map_err(create_err)?;
        Ok(State::Direct {
            writer: BufWriter::with_capacity(64 * 1024, file),
            target: path.to_path_buf(),
        })
    };
    // Design: the kernel's view (`stat`, following links) decides first. `/dev/stdout`,
    // `/dev/fd/63` (from `>(cmd)`) and `/proc/self/fd/N` are "magic" links whose text
    // (`pipe:[1234]`, or the path of a file that may have been replaced since) does not name the
    // open file; only `open` on the link itself reaches it.
    let followed = match std::fs::metadata(path) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(create_err(e)),
    };
    match &followed {
        Some(m) if m.is_dir() => {
            return Err(IoError::IsFolder {
                path: path.to_path_buf(),
            })
        }
        // A device, FIFO or socket: written as it is, never truncated or replaced.
        Some(m) if !m.is_file() => return direct(false),
        _ => {}
    }
    let Resolved {
        target,
        meta,
        magic,
        fd,
    } = resolve(path)?;
    if let (Some(followed), Some(resolved)) = (&followed, &meta) {
        if magic || !same_file(followed, resolved) {
            // A magic link to a regular file (`{ mtf ... -o /dev/stdout; echo; } > file`):
            // written through a duplicate of the descriptor, so that the offset (and
            // `O_APPEND` of `>>`) is shared with the shell and with later writers; a link to
            // another process's descriptor is opened and truncated, as `cp` does.
            #[cfg(unix)]
            if let Some(fd) = fd {
                use std::os::fd::BorrowedFd;
                // SAFETY: `fd` is open in this process (its /proc or /dev/fd link was just
                // read); it is only borrowed long enough to duplicate it.
                let owned = unsafe { BorrowedFd::borrow_raw(fd) }
                    .try_clone_to_owned()
                    .map_err(create_err)?;
                return Ok(State::Direct {
                    writer: BufWriter::with_capacity(64 * 1024, File::from(owned)),
                    target: path.to_path_buf(),
                });
            }
            #[cfg(not(unix))]
            let _ = fd;
            return direct(true);
        }
    }
    match meta {
        Some(m) if m.is_dir() => Err(IoError::IsFolder {
            path: path.to_path_buf(),
        }),
        Some(m) if !m.is_file() => direct(false),
        existing => {
            if existing.is_some() {
                // Design: a rename needs only the folder's permission, so it would replace a
                // read-only file that `cp` refuses to overwrite; opening the file for writing
                // (without truncating it) asks the same question `cp` asks, and gets the same
                // answer (EACCES for a read-only file, ETXTBSY for a running program).
                OpenOptions::new()
                    .write(true)
                    .open(&target)
                    .map_err(|source| IoError::Create {
                        path: path.to_path_buf(),
                        source,
                    })?;
            }
            let folder = folder_of(&target);
            let name = target
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            // Keep the temporary name within NAME_MAX (255 bytes).
            let mut short: String = name.chars().take(64).collect();
            short.retain(|c| c != '/');
            let prefix = format!(".{short}.mtf-");
            let (file, temp, key) = create_in(folder, &prefix).map_err(|source| {
                // "Not found" from a folder that is there (`/proc`, a file system that takes
                // no new files) is no missing folder.
                let missing = !std::fs::metadata(folder).is_ok_and(|m| m.is_dir());
                if source.kind() == io::ErrorKind::NotFound && missing {
                    IoError::MissingFolder {
                        path: path.to_path_buf(),
                        folder: folder.to_path_buf(),
                    }
                } else {
                    IoError::Create {
                        path: path.to_path_buf(),
                        source,
                    }
                }
            })?;
            Ok(State::Replace {
                writer: BufWriter::with_capacity(64 * 1024, file),
                temp,
                key,
                target,
                existing: existing.map(Box::new),
            })
        }
    }
}

/// Whether two `stat` results describe the same file.
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        a.dev() == b.dev() && a.ino() == b.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        true
    }
}

/// Flushes, syncs and renames the temporary file over the target.
fn replace(
    path: &Path,
    writer: BufWriter<File>,
    temp: &Path,
    target: &Path,
    existing: Option<&Metadata>,
) -> Result<(), IoError> {
    let write_err = |e| IoError::from_write(path, e);
    let file = writer.into_inner().map_err(|e| write_err(e.into_error()))?;
    if let Some(meta) = existing {
        keep_attributes(&file, meta).map_err(|source| IoError::Write {
            path: path.to_path_buf(),
            source,
        })?;
    }
    file.sync_all().map_err(write_err)?;
    drop(file);
    std::fs::rename(temp, target).map_err(|source| IoError::Commit {
        path: path.to_path_buf(),
        temp: temp.to_path_buf(),
        source,
    })?;
    sync_folder(folder_of(target));
    Ok(())
}

/// Gives the new file the owner (best effort) and permission bits of the one it replaces.
// Design: the owner is set first, since changing it may clear set-id bits. The set-user-id,
// set-group-id and sticky bits are dropped, as they would be by writing to the file in place.
fn keep_attributes(file: &File, meta: &Metadata) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let mine = file.metadata()?;
        if mine.uid() != meta.uid() || mine.gid() != meta.gid() {
            // Only root may give a file away; a plain user keeps the file as theirs, as cp does.
            let _ = std::os::unix::fs::fchown(file, Some(meta.uid()), Some(meta.gid()));
        }
        file.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o777))
    }
    #[cfg(not(unix))]
    {
        file.set_permissions(meta.permissions())
    }
}

/// Makes a rename durable: `fsync` on the folder (Unix only; errors ignored).
fn sync_folder(folder: &Path) {
    #[cfg(unix)]
    if let Ok(dir) = File::open(folder) {
        let _ = dir.sync_all();
    }
    #[cfg(not(unix))]
    let _ = folder;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::temp::is_registered;
    use crate::io::testutil::TestDir;

    fn write_and_commit(path: &Path, data: &[u8]) -> Result<(), IoError> {
        let mut out = Output::create(path)?;
        out.write_all(data).map_err(|e| out.error(e))?;
        out.commit()
    }

    #[test]
    fn new_file_appears_only_on_commit() {
        let dir = TestDir::new("out-new");
        let path = dir.0.join("new.mtf");
        let mut out = Output::create(&path).unwrap();
        assert!(!out.is_stdout());
        assert_eq!(out.path(), path);
        out.write_all(b"data").unwrap();
        out.flush().unwrap();
        let temp = out.temp_path().unwrap().to_path_buf();
        assert_eq!(temp.parent(), Some(dir.0.as_path()));
        assert!(is_registered(&temp));
        assert!(!path.exists());
        out.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"data");
        assert!(!temp.exists());
        assert!(!is_registered(&temp));
        assert_eq!(dir.entries(), ["new.mtf"]);
    }

    #[cfg(unix)]
    #[test]
    fn new_file_gets_the_default_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = TestDir::new("out-mode");
        // std creates files with 0o666 & !umask: the reference.
        let reference = dir.0.join("reference");
        File::create(&reference).unwrap();
        let path = dir.0.join("new");
        write_and_commit(&path, b"x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&path), mode(&reference));
    }

    #[cfg(unix)]
    #[test]
    fn existing_file_is_replaced_and_keeps_its_mode() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = TestDir::new("out-existing");
        let path = dir.0.join("old");
        std::fs::write(&path, b"old contents, longer").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let old_ino = std::fs::metadata(&path).unwrap().ino();
        let mut out = Output::create(&path).unwrap();
        out.write_all(b"new").unwrap();
        out.flush().unwrap();
        // The target is untouched until the commit.
        assert_eq!(std::fs::read(&path).unwrap(), b"old contents, longer");
        out.commit().unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(meta.permissions().mode() & 0o7777, 0o640);
        assert_ne!(
            meta.ino(),
            old_ino,
            "replaced by rename, not written in place"
        );
        assert_eq!(dir.entries(), ["old"]);
    }

    #[test]
    fn drop_without_commit_leaves_the_target_alone() {
        let dir = TestDir::new("out-drop");
        let path = dir.0.join("keep");
        std::fs::write(&path, b"keep me").unwrap();
        let mut out = Output::create(&path).unwrap();
        out.write_all(&[7; 200_000]).unwrap();
        let temp = out.temp_path().unwrap().to_path_buf();
        assert!(temp.exists());
        drop(out);
        assert!(!temp.exists());
        assert!(!is_registered(&temp));
        assert_eq!(std::fs::read(&path).unwrap(), b"keep me");
        assert_eq!(dir.entries(), ["keep"]);
    }

    #[cfg(unix)]
    #[test]
    fn symlink_chains_are_followed_and_stay_links() {
        use std::os::unix::fs::symlink;
        let dir = TestDir::new("out-link");
        std::fs::create_dir(dir.0.join("real")).unwrap();
        std::fs::create_dir(dir.0.join("links")).unwrap();
        let target = dir.0.join("real/t.mtf");
        std::fs::write(&target, b"old").unwrap();
        // links/b -> ../real/t.mtf (relative, in another folder); links/a -> b.
        symlink("../real/t.mtf", dir.0.join("links/b")).unwrap();
        symlink("b", dir.0.join("links/a")).unwrap();
        let link = dir.0.join("links/a");
        let mut out = Output::create(&link).unwrap();
        assert_eq!(out.target(), dir.0.join("links/../real/t.mtf"));
        assert_eq!(
            out.temp_path().unwrap().parent(),
            Some(dir.0.join("links/../real").as_path()),
            "the temporary file is beside the final target"
        );
        out.write_all(b"new").unwrap();
        out.commit().unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(std::fs::symlink_metadata(dir.0.join("links/b"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(std::fs::read(&link).unwrap(), b"new");
        assert_eq!(
            std::fs::read_dir(dir.0.join("real")).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[cfg(unix)]
    #[test]
    fn dangling_and_looping_symlinks_are_refused() {
        use std::os::unix::fs::symlink;
        let dir = TestDir::new("out-badlink");
        symlink("missing", dir.0.join("dangling")).unwrap();
        let err = Output::create(dir.0.join("dangling")).unwrap_err();
        assert!(matches!(err, IoError::DanglingSymlink { .. }), "{err:?}");
        assert!(!dir.0.join("missing").exists());
        symlink("loop2", dir.0.join("loop1")).unwrap();
        symlink("loop1", dir.0.join("loop2")).unwrap();
        let err = Output::create(dir.0.join("loop1")).unwrap_err();
        assert!(matches!(err, IoError::Create { .. }), "{err:?}");
        assert!(err.to_string().contains("symbolic links"), "{err}");
    }

    #[test]
    fn missing_folder_and_folder_targets_are_typed_errors() {
        let dir = TestDir::new("out-missing");
        let path = dir.0.join("no/such/folder/x.mtf");
        let err = Output::create(&path).unwrap_err();
        assert!(matches!(err, IoError::MissingFolder { .. }), "{err:?}");
        assert_eq!(err.path(), path);
        assert!(err.to_string().contains("does not exist"), "{err}");
        let err = Output::create(&dir.0).unwrap_err();
        assert!(matches!(err, IoError::IsFolder { .. }), "{err:?}");
    }

    #[cfg(unix)]
    #[test]
    fn unwritable_folder_is_a_create_error() {
        use std::os::unix::fs::PermissionsExt;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // Root ignores permission bits; /proc refuses new files for everyone.
            // /proc is there: its refusal is no missing folder (issue: "the folder /proc does
            // not exist").
            let err = Output::create("/proc/mtf-cannot-create-here").unwrap_err();
            assert!(matches!(err, IoError::Create { .. }), "{err:?}");
            assert!(!err.to_string().contains("does not exist"), "{err}");
            return;
        }
        let dir = TestDir::new("out-readonly");
        let ro = dir.0.join("ro");
        std::fs::create_dir(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        let err = Output::create(ro.join("x")).unwrap_err();
        assert!(matches!(err, IoError::Create { .. }), "{err:?}");
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn read_only_files_are_not_replaced() {
        use std::os::unix::fs::PermissionsExt;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            return; // root may write any file, as with cp
        }
        let dir = TestDir::new("out-readonly-file");
        let path = dir.0.join("ro");
        std::fs::write(&path, b"keep").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        let err = Output::create(&path).unwrap_err();
        assert!(matches!(err, IoError::Create { .. }), "{err:?}");
        assert_eq!(std::fs::read(&path).unwrap(), b"keep");
        assert_eq!(dir.entries(), ["ro"]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn devices_are_written_directly() {
        write_and_commit(Path::new("/dev/null"), &[1; 100_000]).unwrap();
        let meta = std::fs::symlink_metadata("/dev/null").unwrap();
        assert!(!meta.is_file(), "/dev/null is still a device");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn dev_full_is_no_space() {
        let err = write_and_commit(Path::new("/dev/full"), &[1; 100_000]).unwrap_err();
        assert!(matches!(err, IoError::NoSpace { .. }), "{err:?}");
        assert!(err.is_out_of_space());
        assert!(err.to_string().contains("/dev/full"), "{err}");
        // A small write fails on commit, when the buffer is flushed.
        let mut out = Output::create("/dev/full").unwrap();
        out.write_all(b"x").unwrap();
        let err = out.commit().unwrap_err();
        assert!(matches!(err, IoError::NoSpace { .. }), "{err:?}");
    }

    #[cfg(unix)]
    #[test]
    fn fifos_are_written_directly() {
        let dir = TestDir::new("out-fifo");
        let fifo = dir.0.join("fifo");
        crate::io::testutil::mkfifo(&fifo);
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_and_commit(&fifo, b"through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), b"through the pipe");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo());
        assert_eq!(dir.entries(), ["fifo"]);
    }

    /// In a child: a file-size limit of 4 KiB, SIGXFSZ ignored, a 100 KB output. Exits 3 if the
    /// error is `FileTooLarge`.
    #[cfg(unix)]
    #[test]
    #[ignore = "run in a child process by file_size_limit_is_file_too_large"]
    fn child_efbig() {
        if !crate::io::testutil::is_child() {
            return;
        }
        let path = PathBuf::from(std::env::var_os(crate::io::testutil::CHILD_VAR).unwrap());
        // SAFETY: plain libc calls on this (child) process, with valid arguments.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: 4096,
                rlim_max: 4096,
            };
            assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
        }
        let err = write_and_commit(&path, &[0; 100_000]).unwrap_err();
        eprintln!("{err}");
        let temps = std::fs::read_dir(path.parent().unwrap()).unwrap().count();
        std::process::exit(
            if matches!(err, IoError::FileTooLarge { .. }) && temps == 0 {
                3
            } else {
                4
            },
        );
    }

    #[cfg(unix)]
    #[test]
    fn file_size_limit_is_file_too_large() {
        let dir = TestDir::new("out-efbig");
        let path = dir.0.join("big.mtf");
        let out = crate::io::testutil::run_child(
            "io::output::tests::child_efbig",
            path.to_str().unwrap(),
            std::process::Stdio::null(),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(stderr.contains("big.mtf: it is too large"), "{stderr}");
        assert!(dir.entries().is_empty(), "{:?}", dir.entries());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn magic_links_to_open_files_are_written_in_place() {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::MetadataExt;
        let dir = TestDir::new("out-magic");
        let path = dir.0.join("redirected");
        std::fs::write(&path, b"old and longer").unwrap();
        let held = OpenOptions::new().write(true).open(&path).unwrap();
        let ino = held.metadata().unwrap().ino();
        // As `-o /dev/stdout` with standard output redirected to a file.
        let magic = PathBuf::from(format!("/proc/self/fd/{}", held.as_raw_fd()));
        let mut out = Output::create(&magic).unwrap();
        assert!(out.temp_path().is_none());
        out.write_all(b"new").unwrap();
        out.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new and longer");
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), ino);

        // The offset is shared with the descriptor, as `{ mtf -o /dev/stdout; echo; } > f`
        // needs: a later write through the descriptor goes after the output.
        let mut held = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let magic = PathBuf::from(format!("/dev/fd/{}", held.as_raw_fd()));
        write_and_commit(&magic, b"first\n").unwrap();
        held.write_all(b"second\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first\nsecond\n");

        // A pipe behind a magic link, as `-o >(cmd)` gives.
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: both descriptors were just created and are owned here.
        let (read_end, write_end) = unsafe {
            use std::os::fd::FromRawFd;
            (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
        };
        let magic = PathBuf::from(format!("/proc/self/fd/{}", write_end.as_raw_fd()));
        write_and_commit(&magic, b"piped").unwrap();
        drop(write_end);
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut &read_end, &mut got).unwrap();
        assert_eq!(got, b"piped");
        assert_eq!(dir.entries(), ["redirected"]);
    }

    #[cfg(feature = "compression")]
    #[test]
    fn a_compressed_name_is_compressed() {
        let dir = TestDir::new("out-compressed");
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for (name, format) in [
            ("a.gz", Compression::Gzip),
            ("a.ZST", Compression::Zstd),
            ("a.xz", Compression::Xz),
            ("a.bz2", Compression::Bzip2),
        ] {
            let path = dir.0.join(name);
            let mut out = Output::create(&path).unwrap();
            assert_eq!(out.compression(), Some(format));
            for chunk in data.chunks(7000) {
                out.write_all(chunk).unwrap();
                out.flush().unwrap();
            }
            out.commit().unwrap();
            let written = std::fs::read(&path).unwrap();
            assert_eq!(Compression::detect(&written), Some(format), "{name}");
            let back = crate::io::Input::open(&path).unwrap();
            assert_eq!(back.bytes(), &data[..], "{name}");
            // create_plain leaves the bytes as they are.
            write_plain(&path, b"plain");
            assert_eq!(std::fs::read(&path).unwrap(), b"plain");
        }
        // Dropped before the commit: nothing written, nothing left.
        let mut out = Output::create(dir.0.join("b.zst")).unwrap();
        out.write_all(&data).unwrap();
        drop(out);
        assert!(!dir.0.join("b.zst").exists());
        assert_eq!(Compression::for_name(Path::new("x.mtf")), None);
        assert_eq!(Compression::for_name(Path::new("gz")), None);
    }

    #[cfg(feature = "compression")]
    fn write_plain(path: &Path, data: &[u8]) {
        let mut out = Output::create_plain(path).unwrap();
        assert_eq!(out.compression(), None);
        out.write_all(data).unwrap();
        out.commit().unwrap();
    }

    #[test]
    fn dash_is_stdout() {
        let out = Output::create("-").unwrap();
        assert!(out.is_stdout());
        assert_eq!(out.target(), Path::new("-"));
        assert!(out.temp_path().is_none());
        out.commit().unwrap();
    }

    #[test]
    fn bare_names_use_the_current_folder() {
        assert_eq!(folder_of(Path::new("x.mtf")), Path::new("."));
        assert_eq!(folder_of(Path::new("/x.mtf")), Path::new("/"));
        assert_eq!(folder_of(Path::new("a/x.mtf")), Path::new("a"));
    }
}
