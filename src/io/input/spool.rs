//! Reading a stream whole: kept in memory up to a few MiB, spooled to an unlinked temporary
//! file beyond.

use std::io::{self, Read};
use std::path::Path;

use memmap2::{Mmap, MmapOptions};

use super::{advise_sequential, Compression, InputData, InputOptions};
use crate::io::IoError;

/// How much of a stream is read at once while spooling.
pub(super) const SPOOL_CHUNK: usize = 1 << 20;

/// Reads all of `src` (a stream, decompressed if `format` is set): kept in memory up to
/// `options.spool_above` bytes, spooled to an unlinked temporary file and mapped beyond, at most
/// `options.cap` bytes in all. With `options.salvage`, a decompression fault after some output
/// gives that output and the error.
pub(super) fn drain(
    mut src: impl Read,
    path: &Path,
    format: Option<Compression>,
    options: &InputOptions,
) -> Result<(InputData, Option<IoError>), IoError> {
    let cap = options.cap;
    let too_large = || IoError::InputTooLarge {
        path: path.to_path_buf(),
        cap,
    };
    #[cfg(unix)]
    let in_memory = options.spool_above.min(cap);
    #[cfg(not(unix))]
    let in_memory = cap;
    let mut buf = Vec::new();
    let mut fault = read_head(&mut src, &mut buf, in_memory.saturating_add(1)).err();
    let mut total = buf.len() as u64;
    if total > cap {
        return Err(too_large());
    }
    #[cfg(unix)]
    let data = if fault.is_none() && total > in_memory {
        let (map, written, err) = spool(buf, &mut src, path, options)?;
        total = written;
        fault = err;
        InputData::Spooled(map)
    } else {
        InputData::Owned(buf)
    };
    // Everything up to the cap is in memory (`total > cap` returned above).
    #[cfg(not(unix))]
    let data = InputData::Owned(buf);
    let Some(e) = fault else {
        return Ok((data, None));
    };
    let e = classify(e, path, format);
    if options.salvage && total > 0 && matches!(e, IoError::Decompress { .. }) {
        Ok((data, Some(e)))
    } else {
        Err(e)
    }
}

/// Reads `src` into `buf` until its end or `limit` bytes, whichever comes first, growing `buf`
/// to at most `limit` bytes (where `read_to_end` could double past it); what was read before an
/// error stays in `buf`.
fn read_head(src: &mut impl Read, buf: &mut Vec<u8>, limit: u64) -> io::Result<()> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    loop {
        if buf.len() == buf.capacity() {
            let want = buf.capacity().saturating_mul(2).max(64 << 10).min(limit);
            if want <= buf.len() {
                return Ok(());
            }
            buf.reserve_exact(want - buf.len());
        }
        let at = buf.len();
        // At most 256 KiB zeroed per read (a pipe gives 64 KiB at a time).
        let room = (buf.capacity() - at).min(limit - at).min(256 << 10);
        if room == 0 {
            return Ok(());
        }
        buf.resize(at + room, 0);
        match src.read(&mut buf[at..]) {
            Ok(n) => {
                buf.truncate(at + n);
                if n == 0 {
                    return Ok(());
                }
            }
            Err(e) => {
                buf.truncate(at);
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

/// Copies `head` and then the rest of `src` to an unlinked temporary file and maps it; returns
/// the map, its length and the read error that ended the copy early, if one did.
#[cfg(unix)]
pub(super) fn spool(
    head: Vec<u8>,
    src: &mut impl Read,
    path: &Path,
    options: &InputOptions,
) -> Result<(Mmap, u64, Option<io::Error>), IoError> {
    Kept::new(options)?.finish(head, src, path, options.cap)
}

/// The bytes of a stream read so far, kept in an unlinked temporary file as a reader drops them
/// from its window (`metatf::stream`), so that the whole input can still be mapped after all
/// ([`StreamInput::into_input_kept`](super::StreamInput::into_input_kept)) when the reader
/// turns out to need random access. Unix only: elsewhere [`Kept::start`] gives `None`.
#[cfg(unix)]
pub(crate) struct Kept {
    file: std::fs::File,
    folder: std::path::PathBuf,
    written: u64,
}

#[cfg(unix)]
impl Kept {
    /// An empty spool in the folder of `options`, or `None` when it cannot be made (the reader
    /// then goes on without it).
    pub(crate) fn start(options: &InputOptions) -> Option<Kept> {
        Kept::new(options).ok()
    }

    fn new(options: &InputOptions) -> Result<Kept, IoError> {
        let folder = options.spool_dir.clone().unwrap_or_else(std::env::temp_dir);
        let file = crate::io::temp::unlinked_in(&folder)?;
        Ok(Kept {
            file,
            folder,
            written: 0,
        })
    }

    /// Bytes kept so far.
    pub(crate) fn len(&self) -> u64 {
        self.written
    }

    fn failed(&self, path: &Path, source: io::Error) -> IoError {
        IoError::Spool {
            path: path.to_path_buf(),
            folder: self.folder.clone(),
            written: self.written,
            source,
        }
    }

    /// Appends `bytes`, the next bytes of the input `path`.
    pub(crate) fn keep(&mut self, bytes: &[u8], path: &Path) -> Result<(), IoError> {
        use std::io::Write;
        for piece in bytes.chunks(SPOOL_CHUNK) {
            self.file
                .write_all(piece)
                .map_err(|e| self.failed(path, e))?;
            self.written += piece.len() as u64;
        }
        Ok(())
    }

    /// Appends `head` and then the rest of `src`, at most `cap` bytes in all, and maps the
    /// whole; returns the map, its length and the read error that ended the copy early, if one
    /// did.
    pub(super) fn finish(
        mut self,
        head: Vec<u8>,
        src: &mut impl Read,
        path: &Path,
        cap: u64,
    ) -> Result<(Mmap, u64, Option<io::Error>), IoError> {
        self.keep(&head, path)?;
        drop(head);
        let mut chunk = vec![0u8; SPOOL_CHUNK];
        let mut fault = None;
        loop {
            match src.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    if self.written + n as u64 > cap {
                        return Err(IoError::InputTooLarge {
                            path: path.to_path_buf(),
                            cap,
                        });
                    }
                    self.keep(&chunk[..n], path)?;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    fault = Some(e);
                    break;
                }
            }
        }
        let total = self.written;
        let len =
            usize::try_from(total).map_err(|_| self.failed(path, io::Error::other("too large")))?;
        // SAFETY: the file is read-only mapped, private to this process (mode 0600, unlinked
        // before any byte was written) and complete: nothing can shrink or change it under the
        // map.
        let map = unsafe { MmapOptions::new().len(len).map(&self.file) }
            .map_err(|e| self.failed(path, e))?;
        advise_sequential(&map);
        Ok((map, total, fault))
    }
}

/// Without unlinked temporary files, nothing is kept ([`Kept::start`] is `None`).
#[cfg(not(unix))]
pub(crate) struct Kept(std::convert::Infallible);

#[cfg(not(unix))]
impl Kept {
    pub(crate) fn start(_options: &InputOptions) -> Option<Kept> {
        None
    }
    pub(crate) fn len(&self) -> u64 {
        match self.0 {}
    }
    pub(crate) fn keep(&mut self, _bytes: &[u8], _path: &Path) -> Result<(), IoError> {
        match self.0 {}
    }
    pub(super) fn finish(
        self,
        _head: Vec<u8>,
        _src: &mut impl Read,
        _path: &Path,
        _cap: u64,
    ) -> Result<(Mmap, u64, Option<io::Error>), IoError> {
        match self.0 {}
    }
}

/// The [`IoError`] for an error met while reading a stream: a read error of the raw input
/// (carried through the decompressor by [`Named`]) as it is, anything else a decompression
/// error when there is a decompressor.
pub(super) fn classify(e: io::Error, path: &Path, format: Option<Compression>) -> IoError {
    if e.get_ref().is_some_and(|inner| inner.is::<IoError>()) {
        let kind = e.kind();
        match e.into_inner().map(|inner| inner.downcast::<IoError>()) {
            Some(Ok(inner)) => return *inner,
            // Not reached: the check above found an `IoError` inside.
            _ => {
                return IoError::Read {
                    path: path.to_path_buf(),
                    source: kind.into(),
                }
            }
        }
    }
    match format {
        Some(format) => IoError::Decompress {
            path: path.to_path_buf(),
            format,
            source: e,
        },
        None => IoError::Read {
            path: path.to_path_buf(),
            source: e,
        },
    }
}
