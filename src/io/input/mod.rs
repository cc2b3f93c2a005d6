//! [`Input`]: reading a trace or a text input from what the user named.

// Design: a regular file is memory-mapped, so that a multi-gigabyte trace costs no copy and no
// heap. Compression is recognised by magic bytes, never by name: `<(zcat x)`, `-` and a `.mtf`
// that is really gzipped all work, and a file called `x.gz` that is not compressed is read as it
// is.
//
// Design: everything that cannot be mapped (pipes, FIFOs, character devices, `/dev/stdin`,
// `<(cat f)`, `/proc` files that report size 0, compressed files) is read as a stream, through
// the decompressor if there is one, and kept in memory only up to `spool_above` bytes (4 MiB by
// default); a longer input is copied, as it arrives, to a temporary file that is unlinked as
// soon as it is created, and that file is then memory-mapped like a regular trace. The decoder
// releases the pages of a mapping behind its cursor (`Trace::release_before`), so reading a
// piped or compressed trace of any size holds a bounded window in memory, exactly as reading a
// file does, and every subcommand keeps the random access it needs (tables read through
// `sectionStride`/`sectionOffset` references into any section, salvage of a damaged container,
// the pre-pass that finds tables, `compact`'s two passes) with no change to the decoder.
// The price: disk space in the temporary folder (TMPDIR) equal to the decompressed trace, and
// no output before the whole input has arrived. The alternative, a decoder over a sliding
// window of the stream, would serve sequential readers only: every record view, byte string
// and table element addresses the trace as one byte slice by absolute offset, and the tables
// of a split trace lie after the records that refer to them. The cap (`max_input_bytes`, 16 GiB
// by default) now bounds the disk a stream may fill (and an endless one such as `/dev/zero`),
// not memory. On platforms other than Unix (no unlinking of an open file) the stream is read
// into memory, up to the cap, as before.

mod compression;
mod options;
#[cfg(unix)]
mod sigbus;
mod spool;
mod stream;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapOptions};

use super::IoError;
use crate::container::{ContainerError, Trace, TraceData};

pub(crate) use compression::decompress_bytes;
pub use compression::Compression;
use compression::{decoder, Named, MAGIC_LEN};
pub use options::InputOptions;
#[cfg(unix)]
pub use sigbus::install_sigbus_guard;
use spool::drain;
pub(crate) use spool::Kept;
pub use stream::{Opening, StreamInput};

/// The bytes of an [`Input`]: a memory map or an owned buffer.
#[derive(Debug)]
pub enum InputData {
    /// A read-only map of a regular file, exactly as long as `fstat` reported when it was opened.
    Mapped(Mmap),
    /// Bytes read (and, if compressed, decompressed) into memory: an input that cannot be
    /// mapped and is at most [`InputOptions::spool_above`] bytes long.
    Owned(Vec<u8>),
    /// A longer input that cannot be mapped, copied (decompressed) to an unlinked temporary file
    /// and mapped from there (Unix).
    Spooled(Mmap),
}

impl InputData {
    /// All the bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match self {
            InputData::Mapped(m) | InputData::Spooled(m) => m,
            InputData::Owned(v) => v,
        }
    }
}

impl AsRef<[u8]> for InputData {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

impl From<InputData> for TraceData<'static> {
    fn from(data: InputData) -> TraceData<'static> {
        match data {
            InputData::Mapped(m) | InputData::Spooled(m) => TraceData::Mmap(m),
            InputData::Owned(v) => TraceData::Owned(v),
        }
    }
}

impl From<Input> for TraceData<'static> {
    fn from(input: Input) -> TraceData<'static> {
        input.data.into()
    }
}

/// A whole input, mapped or read, decompressed if it was compressed.
///
/// ```
/// let input = metatf::io::Input::open("traces/hatf-le32.mtf")?;
/// assert!(input.bytes().starts_with(b"\x7fMTF"));
/// let trace = input.into_trace()?;
/// assert!(trace.bytes().len() > 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A regular, uncompressed file is mapped. Anything else is read as a stream, decompressed on
/// the fly, and kept in memory up to [`InputOptions::spool_above`] bytes; a longer one is copied
/// to an unlinked temporary file that is then mapped, so that its pages too can be released
/// behind a reader ([`Trace::release_before`]): memory stays bounded whatever the input's size,
/// at the cost of disk space equal to the decompressed input.
///
/// A mapped file must not shrink while it is open: touching a page past its new end raises
/// `SIGBUS`. The CLI calls [`install_sigbus_guard`] to turn that into a message and exit status 2.
#[derive(Debug)]
pub struct Input {
    data: InputData,
    path: PathBuf,
    compression: Option<Compression>,
}

impl Input {
    /// The default cap on an input that cannot be mapped: 16 GiB once decompressed.
    pub const DEFAULT_CAP: u64 = crate::limits::DEFAULT_INPUT_CAP;

    /// Opens `path` (`-` for standard input) with the default [`InputOptions`].
    pub fn open(path: impl AsRef<Path>) -> Result<Input, IoError> {
        Input::open_with_cap(path, Input::DEFAULT_CAP)
    }

    /// Opens `path` (`-` for standard input). A regular, uncompressed file with a non-zero size
    /// is mapped, exactly as long as `fstat` on the opened file reports; anything else (and a
    /// file that cannot be mapped) is read as a stream, decompressed if it is compressed, at
    /// most `cap` bytes once decompressed (see [`InputOptions`]).
    ///
    /// Errors: [`IoError::Open`], [`IoError::IsFolder`], [`IoError::Read`],
    /// [`IoError::InputTooLarge`], [`IoError::Decompress`], [`IoError::NoCompressionSupport`],
    /// [`IoError::TempFile`], [`IoError::Spool`].
    pub fn open_with_cap(path: impl AsRef<Path>, cap: u64) -> Result<Input, IoError> {
        Input::open_with(path, &InputOptions::new().cap(cap)).map(|(input, _)| input)
    }

    /// As [`Input::open`], but a compressed input that ends early or is corrupt after some
    /// output (a trace written by a tracer that crashed) yields the bytes decompressed before
    /// the fault, with the error beside them, so that what they hold can still be shown.
    pub fn open_salvaging(path: impl AsRef<Path>) -> Result<(Input, Option<IoError>), IoError> {
        Input::open_with(path, &InputOptions::new().salvage(true))
    }

    /// As [`Input::open_salvaging`], with a cap as [`Input::open_with_cap`].
    pub fn open_salvaging_with_cap(
        path: impl AsRef<Path>,
        cap: u64,
    ) -> Result<(Input, Option<IoError>), IoError> {
        Input::open_with(path, &InputOptions::new().salvage(true).cap(cap))
    }

    /// Opens `path` (`-` for standard input) as `options` say; the second value is the fault of
    /// a compressed input opened with [`InputOptions::salvage`].
    pub fn open_with(
        path: impl AsRef<Path>,
        options: &InputOptions,
    ) -> Result<(Input, Option<IoError>), IoError> {
        let path = path.as_ref();
        let (src, compression) = match open_raw(path)? {
            Raw::Mapped(input) => return Ok((input, None)),
            Raw::Stream { src, compression } => (src, compression),
        };
        let (data, fault) = drain(src, path, compression, options)?;
        Ok((
            Input {
                data,
                path: path.to_path_buf(),
                compression,
            },
            fault,
        ))
    }

    /// Opens `path` (`-` for standard input) to be read once from start to end: a regular,
    /// uncompressed file is mapped as [`Input::open_with`] maps it; anything else is returned
    /// unread, as a stream decompressed on the fly, for a reader that holds only a window of it
    /// (`metatf::stream`). The cap of `options` applies to the bytes read from the stream.
    pub fn open_stream(path: impl AsRef<Path>, options: &InputOptions) -> Result<Opening, IoError> {
        let path = path.as_ref();
        Ok(match open_raw(path)? {
            Raw::Mapped(input) => Opening::Whole(input),
            Raw::Stream { src, compression } => {
                Opening::Stream(StreamInput::new(src, path, compression, options.cap))
            }
        })
    }

    /// A buffered stream of the input `path` (`-` for standard input), decompressed on the fly
    /// if it starts with a compression magic. Nothing is capped: the caller reads line by line.
    ///
    /// Read errors carry an [`IoError`] naming the path (`Read`, or `Decompress` for a corrupt
    /// compressed stream): find it with `e.get_ref().and_then(|e| e.downcast_ref::<IoError>())`.
    pub fn reader(path: impl AsRef<Path>) -> Result<Box<dyn BufRead + Send>, IoError> {
        let path = path.as_ref();
        let mut raw: Box<dyn Read + Send> = if path.as_os_str() == "-" {
            Box::new(io::stdin())
        } else {
            Box::new(open_file(path)?)
        };
        let prefix = read_prefix(&mut raw).map_err(|source| IoError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let format = Compression::detect(&prefix);
        let whole = Cursor::new(prefix).chain(raw);
        let stream: Box<dyn Read + Send> = match format {
            None => Box::new(whole),
            Some(format) => decoder(BufReader::with_capacity(64 * 1024, whole), format, path)?,
        };
        Ok(Box::new(Named {
            inner: BufReader::with_capacity(64 * 1024, stream),
            path: path.to_path_buf(),
            format,
        }))
    }

    /// All the bytes (decompressed if the input was compressed).
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        self.data.bytes()
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this is standard input (the path `-`).
    pub fn is_stdin(&self) -> bool {
        self.path.as_os_str() == "-"
    }

    /// Whether the bytes are a memory map of the file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.data, InputData::Mapped(_))
    }

    /// Whether the bytes were copied (decompressed) to a temporary file and are mapped from
    /// there ([`InputOptions::spool_above`]).
    pub fn is_spooled(&self) -> bool {
        matches!(self.data, InputData::Spooled(_))
    }

    /// The compression the input had, if any.
    pub fn compression(&self) -> Option<Compression> {
        self.compression
    }

    /// The bytes, handed over.
    pub fn into_data(self) -> InputData {
        self.data
    }

    /// Checks the input as a trace ([`Trace::from_data`]); the path is kept for DTD lookup and
    /// errors, except for standard input.
    pub fn into_trace(self) -> Result<Trace<'static>, ContainerError> {
        let path = (!self.is_stdin()).then(|| self.path.clone());
        Trace::from_data(self.data.into(), path)
    }

    /// As [`Input::into_trace`], but a trace whose container is damaged (cut short, say) is
    /// opened with what can be trusted ([`Trace::salvage`]); [`Trace::damage`] says what is
    /// wrong.
    pub fn into_trace_salvaging(self) -> Result<Trace<'static>, ContainerError> {
        let path = (!self.is_stdin()).then(|| self.path.clone());
        Trace::salvage(self.data.into(), path)
    }
}

impl AsRef<[u8]> for Input {
    fn as_ref(&self) -> &[u8] {
        self.bytes()
    }
}

/// An input as opened: a regular, uncompressed file mapped, or anything else as a stream
/// (decompressed on the fly when it starts with a compression magic).
enum Raw {
    Mapped(Input),
    Stream {
        src: Box<dyn Read + Send>,
        compression: Option<Compression>,
    },
}

/// Opens `path` (`-` for standard input) for [`Input::open_with`] and [`Input::open_stream`].
fn open_raw(path: &Path) -> Result<Raw, IoError> {
    let read_failed = |source| IoError::Read {
        path: path.to_path_buf(),
        source,
    };
    let (raw, prefix): (Box<dyn Read + Send>, Vec<u8>) = if path.as_os_str() == "-" {
        let mut stdin = io::stdin();
        let prefix = read_prefix(&mut stdin).map_err(read_failed)?;
        (Box::new(stdin), prefix)
    } else {
        let mut file = open_file(path)?;
        let meta = file.metadata().map_err(read_failed)?;
        let prefix = read_prefix(&mut file).map_err(read_failed)?;
        // A compressed file is streamed from the file, not mapped: its pages would stay
        // resident while the decompressor reads it.
        if Compression::detect(&prefix).is_none() {
            // Size 0 is an empty file or a /proc file whose size is unknown: read either.
            if let Some(map) = map_regular(&file, &meta) {
                return Ok(Raw::Mapped(Input {
                    data: InputData::Mapped(map),
                    path: path.to_path_buf(),
                    compression: None,
                }));
            }
        }
        (Box::new(file), prefix)
    };
    let compression = Compression::detect(&prefix);
    // Errors of the raw input carry an `IoError::Read` through the decompressor, so that they
    // are told apart from a corrupt stream.
    let raw = Named {
        inner: Cursor::new(prefix).chain(raw),
        path: path.to_path_buf(),
        format: None,
    };
    let src: Box<dyn Read + Send> = match compression {
        None => Box::new(raw),
        Some(format) => decoder(BufReader::with_capacity(64 * 1024, raw), format, path)?,
    };
    Ok(Raw::Stream { src, compression })
}

fn open_file(path: &Path) -> Result<File, IoError> {
    let file = File::open(path).map_err(|source| IoError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    // On Unix a folder opens fine and fails only on read (EISDIR): say so plainly.
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(IoError::IsFolder {
            path: path.to_path_buf(),
        });
    }
    Ok(file)
}

/// Maps a regular file of non-zero size, exactly `meta.len()` bytes; `None` if it is not one or
/// the map fails (a file system that cannot map falls back to reading).
fn map_regular(file: &File, meta: &std::fs::Metadata) -> Option<Mmap> {
    if !meta.is_file() || meta.len() == 0 {
        return None;
    }
    let len = usize::try_from(meta.len()).ok()?;
    // SAFETY: the map is read-only. If another process shrinks the file while it is mapped,
    // touching the lost pages raises SIGBUS, which `install_sigbus_guard` turns into a clean
    // exit; the bytes may change under us otherwise, which the decoder treats as any other
    // (checked) input. This is the usual contract of memmap2's read-only maps.
    let map = unsafe { MmapOptions::new().len(len).map(file) }.ok()?;
    advise_sequential(&map);
    Some(map)
}

/// Maps a regular file of non-zero size read-only, as a trace is mapped (`None` where it cannot
/// be: the caller reads it instead); for files read beside a trace, such as an index's states.
pub fn map_file(file: &File) -> Option<Mmap> {
    let meta = file.metadata().ok()?;
    map_regular(file, &meta)
}

/// Lets the operating system drop from memory the pages of `map` in `at..at + len` (`at` a
/// multiple of the page size): they stay readable, read again from the file when touched.
#[allow(unsafe_code)]
pub fn release_mapped(map: &Mmap, at: usize, len: usize) {
    #[cfg(unix)]
    if at.checked_add(len).is_some_and(|end| end <= map.len()) && len > 0 {
        // SAFETY: a read-only file-backed map (`map_regular`): MADV_DONTNEED drops clean
        // page-cache pages from this process only; a later read faults them back in from the
        // file, so no slice into the map reads anything else.
        let _ = unsafe { map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, at, len) };
    }
    #[cfg(not(unix))]
    let _ = (map, at, len);
}

/// Reads the first [`MAGIC_LEN`] bytes of `raw` (fewer if it ends): short reads are normal on
/// pipes.
fn read_prefix(raw: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut prefix = Vec::with_capacity(MAGIC_LEN);
    raw.take(MAGIC_LEN as u64).read_to_end(&mut prefix)?;
    Ok(prefix)
}

/// Tells the kernel a map will be read from start to end (more read-ahead); advice only.
pub(super) fn advise_sequential(map: &Mmap) {
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    #[cfg(not(unix))]
    let _ = map;
}
