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

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};

use memmap2::{Mmap, MmapOptions};

use super::IoError;
use crate::container::{ContainerError, Trace, TraceData};

/// A compression format, recognised by its magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compression {
    /// gzip (`1f 8b 08`); concatenated members are read as one stream, as `gzip -d` does.
    Gzip,
    /// Zstandard (`28 b5 2f fd`); several frames are read as one stream.
    Zstd,
    /// xz (`fd 37 7a 58 5a 00`); several streams are read as one.
    Xz,
    /// bzip2 (`BZh` + level `1`..`9` + a block or end-of-stream magic).
    Bzip2,
}

/// The most bytes [`Compression::detect`] looks at.
const MAGIC_LEN: usize = 10;

impl Compression {
    /// The format whose magic `prefix` starts with, if any; give at least 10 bytes when the
    /// input has them.
    // Design: gzip also needs its method byte (8 = deflate) and bzip2 its level digit and the
    // 48-bit magic of the first block (or of the end of an empty stream): `BZh` alone is three
    // printable letters a text input may well start with.
    pub fn detect(prefix: &[u8]) -> Option<Compression> {
        const BZ_BLOCK: [u8; 6] = [0x31, 0x41, 0x59, 0x26, 0x53, 0x59];
        const BZ_END: [u8; 6] = [0x17, 0x72, 0x45, 0x38, 0x50, 0x90];
        if prefix.starts_with(&[0x1f, 0x8b, 0x08]) {
            Some(Compression::Gzip)
        } else if prefix.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else if prefix.starts_with(&[0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]) {
            Some(Compression::Xz)
        } else if prefix.len() >= MAGIC_LEN
            && prefix.starts_with(b"BZh")
            && (b'1'..=b'9').contains(&prefix[3])
            && (prefix[4..10] == BZ_BLOCK || prefix[4..10] == BZ_END)
        {
            Some(Compression::Bzip2)
        } else {
            None
        }
    }

    /// The format's usual name: `gzip`, `zstd`, `xz`, `bzip2`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
            Compression::Bzip2 => "bzip2",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An input opened to be read from start to end once ([`Input::open_stream`]): a regular
/// file mapped as [`Input::open_with`] maps it, or anything else as a stream.
#[derive(Debug)]
pub enum Opening {
    /// A regular, uncompressed file, mapped.
    Whole(Input),
    /// A pipe, standard input, a FIFO, a device or a compressed input, not read yet.
    Stream(StreamInput),
}

/// An input read as a stream, decompressed on the fly if it starts with a compression magic
/// ([`Input::open_stream`]). Its reads count the bytes against the cap of its
/// [`InputOptions`], as [`Input::open_with`] would.
pub struct StreamInput {
    src: Box<dyn Read + Send>,
    path: PathBuf,
    compression: Option<Compression>,
    cap: u64,
    read: u64,
    /// An error met after some bytes of a read: those bytes are returned first, the error by
    /// the next read.
    pending: Option<IoError>,
}

impl fmt::Debug for StreamInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamInput")
            .field("path", &self.path)
            .field("compression", &self.compression)
            .field("read", &self.read)
            .finish_non_exhaustive()
    }
}

impl StreamInput {
    /// An input that is already at its end (what is left of one handed over).
    pub(crate) fn empty() -> StreamInput {
        StreamInput {
            src: Box::new(io::empty()),
            path: PathBuf::new(),
            compression: None,
            cap: u64::MAX,
            read: 0,
            pending: None,
        }
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this is standard input (the path `-`).
    pub fn is_stdin(&self) -> bool {
        self.path.as_os_str() == "-"
    }

    /// The compression of the input, if any.
    pub fn compression(&self) -> Option<Compression> {
        self.compression
    }

    /// Bytes (decompressed) read so far.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// The error met after the bytes the last [`StreamInput::read_full`] returned, which the
    /// next call would return: taken, so that a reader that stops at a short read learns why.
    pub fn take_fault(&mut self) -> Option<IoError> {
        self.pending.take()
    }

    /// Reads up to `buf.len()` bytes (fewer only at the end: `0` is the end of the input).
    /// Errors as [`Input::open_with`] reports them: [`IoError::Read`],
    /// [`IoError::Decompress`], [`IoError::InputTooLarge`] past the cap.
    ///
    /// The bytes read before an error are returned first (a compressed stream cut short gives
    /// all it holds, as `zstd -dc` does), the error by the next call.
    pub fn read_full(&mut self, buf: &mut [u8]) -> Result<usize, IoError> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        let mut n = 0;
        while n < buf.len() {
            match self.src.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let e = classify(e, &self.path, self.compression);
                    if n == 0 {
                        return Err(e);
                    }
                    self.pending = Some(e);
                    break;
                }
            }
        }
        self.read += n as u64;
        if self.read > self.cap {
            return Err(IoError::InputTooLarge {
                path: self.path.clone(),
                cap: self.cap,
            });
        }
        Ok(n)
    }

    /// The whole input after all, as [`Input::open_with`] reads it (kept in memory or spooled
    /// to a temporary file), `head` being the bytes read from it so far.
    pub fn into_input(
        self,
        head: Vec<u8>,
        options: &InputOptions,
    ) -> Result<(Input, Option<IoError>), IoError> {
        let options = options.clone().cap(self.cap);
        if let Some(e) = self.pending {
            // The stream already failed after `head`: what `drain` makes of that error.
            if options.salvage && !head.is_empty() && matches!(e, IoError::Decompress { .. }) {
                let input = Input {
                    data: InputData::Owned(head),
                    path: self.path,
                    compression: self.compression,
                };
                return Ok((input, Some(e)));
            }
            return Err(e);
        }
        let (data, fault) = drain(
            Cursor::new(head).chain(self.src),
            &self.path,
            self.compression,
            &options,
        )?;
        Ok((
            Input {
                data,
                path: self.path,
                compression: self.compression,
            },
            fault,
        ))
    }
}

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

/// How [`Input::open_with`] reads an input that cannot be memory-mapped (a pipe, standard
/// input, a FIFO, a device, a compressed file).
///
/// ```
/// use metatf::io::{Input, InputOptions};
/// // Spool everything that cannot be mapped, in this folder, up to 1 GiB decompressed.
/// let options = InputOptions::new()
///     .spool_above(0)
///     .spool_dir(std::env::temp_dir())
///     .cap(1 << 30);
/// let (input, fault) = Input::open_with("traces/hatf-le32.mtf", &options)?;
/// assert!(input.is_mapped() && fault.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct InputOptions {
    cap: u64,
    salvage: bool,
    spool_above: u64,
    spool_dir: Option<PathBuf>,
}

impl Default for InputOptions {
    fn default() -> InputOptions {
        InputOptions::new()
    }
}

impl InputOptions {
    /// How many bytes of an input that cannot be mapped are kept in memory by default (4 MiB);
    /// a longer one is spooled to a temporary file.
    pub const DEFAULT_SPOOL_ABOVE: u64 = 4 << 20;

    /// The defaults: a cap of [`Input::DEFAULT_CAP`], no salvage, inputs over
    /// [`InputOptions::DEFAULT_SPOOL_ABOVE`] spooled to the system's temporary folder
    /// ([`std::env::temp_dir`], which honours `TMPDIR`).
    pub fn new() -> InputOptions {
        InputOptions {
            cap: Input::DEFAULT_CAP,
            salvage: false,
            spool_above: InputOptions::DEFAULT_SPOOL_ABOVE,
            spool_dir: None,
        }
    }

    /// The most bytes an input that cannot be mapped may hold once decompressed (in memory and
    /// in its temporary file together); more is [`IoError::InputTooLarge`]. A mapped file has
    /// no such limit.
    pub fn cap(mut self, cap: u64) -> InputOptions {
        self.cap = cap;
        self
    }

    /// With `true`, a compressed input that ends early or is corrupt after some output yields
    /// the bytes decompressed before the fault, with the error beside them.
    pub fn salvage(mut self, yes: bool) -> InputOptions {
        self.salvage = yes;
        self
    }

    /// Keep at most `bytes` of an input that cannot be mapped in memory: a longer one is copied
    /// to an unlinked temporary file as it is read, then mapped (on Unix; elsewhere it is read
    /// into memory). `0` spools every such input that is not empty.
    pub fn spool_above(mut self, bytes: u64) -> InputOptions {
        self.spool_above = bytes;
        self
    }

    /// The folder of the temporary file ([`std::env::temp_dir`] by default).
    pub fn spool_dir(mut self, folder: impl Into<PathBuf>) -> InputOptions {
        self.spool_dir = Some(folder.into());
        self
    }

    /// Whether a compressed input cut short is salvaged ([`InputOptions::salvage`]).
    pub fn salvages(&self) -> bool {
        self.salvage
    }

    /// The cap ([`InputOptions::cap`]).
    pub fn max_bytes(&self) -> u64 {
        self.cap
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
        let read_failed = |source| IoError::Read {
            path: path.to_path_buf(),
            source,
        };
        let (mut raw, prefix): (Box<dyn Read + Send>, Vec<u8>) = if path.as_os_str() == "-" {
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
                    return Ok((
                        Input {
                            data: InputData::Mapped(map),
                            path: path.to_path_buf(),
                            compression: None,
                        },
                        None,
                    ));
                }
            }
            (Box::new(file), prefix)
        };
        let compression = Compression::detect(&prefix);
        // Errors of the raw input carry an `IoError::Read` through the decompressor, so that
        // they are told apart from a corrupt stream.
        let raw = Named {
            inner: Cursor::new(prefix).chain(&mut raw),
            path: path.to_path_buf(),
            format: None,
        };
        let (data, fault) = match compression {
            None => drain(raw, path, None, options)?,
            Some(format) => drain(
                decoder(BufReader::with_capacity(64 * 1024, raw), format, path)?,
                path,
                compression,
                options,
            )?,
        };
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
            if Compression::detect(&prefix).is_none() {
                if let Some(map) = map_regular(&file, &meta) {
                    return Ok(Opening::Whole(Input {
                        data: InputData::Mapped(map),
                        path: path.to_path_buf(),
                        compression: None,
                    }));
                }
            }
            (Box::new(file), prefix)
        };
        let compression = Compression::detect(&prefix);
        let raw = Named {
            inner: Cursor::new(prefix).chain(raw),
            path: path.to_path_buf(),
            format: None,
        };
        let src: Box<dyn Read + Send> = match compression {
            None => Box::new(raw),
            Some(format) => decoder(BufReader::with_capacity(64 * 1024, raw), format, path)?,
        };
        Ok(Opening::Stream(StreamInput {
            src,
            path: path.to_path_buf(),
            compression,
            cap: options.cap,
            read: 0,
            pending: None,
        }))
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

/// Reads the first [`MAGIC_LEN`] bytes of `raw` (fewer if it ends): short reads are normal on
/// pipes.
fn read_prefix(raw: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut prefix = Vec::with_capacity(MAGIC_LEN);
    raw.take(MAGIC_LEN as u64).read_to_end(&mut prefix)?;
    Ok(prefix)
}

/// How much of a stream is read at once while spooling.
const SPOOL_CHUNK: usize = 1 << 20;

/// Reads all of `src` (a stream, decompressed if `format` is set): kept in memory up to
/// `options.spool_above` bytes, spooled to an unlinked temporary file and mapped beyond, at most
/// `options.cap` bytes in all. With `options.salvage`, a decompression fault after some output
/// gives that output and the error.
fn drain(
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
fn spool(
    head: Vec<u8>,
    src: &mut impl Read,
    path: &Path,
    options: &InputOptions,
) -> Result<(Mmap, u64, Option<io::Error>), IoError> {
    use std::io::Write;
    let folder = options.spool_dir.clone().unwrap_or_else(std::env::temp_dir);
    let mut file = super::temp::unlinked_in(&folder)?;
    let mut total = 0u64;
    let failed = |written: u64, source| IoError::Spool {
        path: path.to_path_buf(),
        folder: folder.clone(),
        written,
        source,
    };
    for piece in head.chunks(SPOOL_CHUNK) {
        file.write_all(piece).map_err(|e| failed(total, e))?;
        total += piece.len() as u64;
    }
    drop(head);
    let mut chunk = vec![0u8; SPOOL_CHUNK];
    let mut fault = None;
    loop {
        match src.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                if total + n as u64 > options.cap {
                    return Err(IoError::InputTooLarge {
                        path: path.to_path_buf(),
                        cap: options.cap,
                    });
                }
                file.write_all(&chunk[..n]).map_err(|e| failed(total, e))?;
                total += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                fault = Some(e);
                break;
            }
        }
    }
    let len = usize::try_from(total).map_err(|_| failed(total, io::Error::other("too large")))?;
    // SAFETY: the file is read-only mapped, private to this process (mode 0600, unlinked before
    // any byte was written) and complete: nothing can shrink or change it under the map.
    let map = unsafe { MmapOptions::new().len(len).map(&file) }.map_err(|e| failed(total, e))?;
    advise_sequential(&map);
    Ok((map, total, fault))
}

/// The [`IoError`] for an error met while reading a stream: a read error of the raw input
/// (carried through the decompressor by [`Named`]) as it is, anything else a decompression
/// error when there is a decompressor.
fn classify(e: io::Error, path: &Path, format: Option<Compression>) -> IoError {
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

/// Tells the kernel a map will be read from start to end (more read-ahead); advice only.
fn advise_sequential(map: &Mmap) {
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    #[cfg(not(unix))]
    let _ = map;
}

/// Bytes held in memory, decompressed if they start with a compression magic, as
/// [`Input::open_with`] treats a file (spooled beyond `options.spool_above`, at most
/// `options.cap` bytes once decompressed); bytes that are not compressed are given back as
/// they are.
pub(crate) fn decompress_bytes(
    bytes: Vec<u8>,
    options: &InputOptions,
) -> Result<(InputData, Option<IoError>), IoError> {
    let path = Path::new("<memory>");
    match Compression::detect(&bytes) {
        None => Ok((InputData::Owned(bytes), None)),
        Some(format) => drain(
            decoder(&bytes[..], format, path)?,
            path,
            Some(format),
            options,
        ),
    }
}

/// A decoder of `format` reading from `src`.
#[cfg(feature = "compression")]
fn decoder<'a, R: io::BufRead + Send + 'a>(
    src: R,
    format: Compression,
    path: &Path,
) -> Result<Box<dyn Read + Send + 'a>, IoError> {
    Ok(match format {
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(src)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(src).map_err(
            |source| IoError::Decompress {
                path: path.to_path_buf(),
                format,
                source,
            },
        )?),
        Compression::Xz => Box::new(xz2::bufread::XzDecoder::new_multi_decoder(src)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(src)),
    })
}

/// Without the `compression` feature every compressed input is refused.
#[cfg(not(feature = "compression"))]
fn decoder<'a, R: io::BufRead + Send + 'a>(
    _src: R,
    format: Compression,
    path: &Path,
) -> Result<Box<dyn Read + Send + 'a>, IoError> {
    Err(IoError::NoCompressionSupport {
        path: path.to_path_buf(),
        format,
    })
}

/// A reader whose errors name the input.
struct Named<R> {
    inner: R,
    path: PathBuf,
    format: Option<Compression>,
}

impl<R> Named<R> {
    fn wrap(path: &Path, format: Option<Compression>, source: io::Error) -> io::Error {
        if source.get_ref().is_some_and(|e| e.is::<IoError>()) {
            return source;
        }
        let kind = source.kind();
        let path = path.to_path_buf();
        let err = match format {
            Some(format) => IoError::Decompress {
                path,
                format,
                source,
            },
            None => IoError::Read { path, source },
        };
        io::Error::new(kind, err)
    }
}

impl<R: Read> Read for Named<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner
            .read(buf)
            .map_err(|e| Self::wrap(&self.path, self.format, e))
    }
}

impl<R: BufRead> BufRead for Named<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let (path, format) = (&self.path, self.format);
        self.inner
            .fill_buf()
            .map_err(|e| Self::wrap(path, format, e))
    }

    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt)
    }
}

/// Installs a `SIGBUS` handler that prints
/// `mtf: error: the input file shrank while it was being read (SIGBUS)` to standard error and
/// exits with status 2. The CLI calls it once at start.
///
/// A memory-mapped input that another process truncates raises `SIGBUS` when a lost page is
/// touched; without a handler the process dies with no message (status 135 in a shell).
// Design: the handler only calls `write(2)` and `_exit(2)`, both async-signal-safe; it cannot
// tell which input shrank (that would need a lock or an allocation), so the message names none.
// It does not return: returning from a SIGBUS handler re-executes the faulting access forever.
#[cfg(unix)]
pub fn install_sigbus_guard() -> io::Result<()> {
    extern "C" fn on_sigbus(_signal: libc::c_int) {
        const MSG: &[u8] = b"mtf: error: the input file shrank while it was being read (SIGBUS)\n";
        // SAFETY: write and _exit are async-signal-safe; MSG is a static buffer.
        unsafe {
            libc::write(2, MSG.as_ptr().cast(), MSG.len());
            libc::_exit(2);
        }
    }
    // SAFETY: the sigaction struct is zeroed (a valid "no flags, empty mask" value) then filled
    // in; the handler has the signature sigaction expects without SA_SIGINFO.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::testutil::TestDir;
    use std::io::Write;

    fn sample(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn regular_files_are_mapped_exactly() {
        let dir = TestDir::new("in-map");
        let path = dir.0.join("t.bin");
        let data = sample(10_000);
        std::fs::write(&path, &data).unwrap();
        let input = Input::open(&path).unwrap();
        assert!(input.is_mapped());
        assert!(!input.is_stdin());
        assert_eq!(input.bytes(), &data[..]);
        assert_eq!(input.compression(), None);
        assert_eq!(input.path(), path);
        assert!(matches!(
            TraceData::from(input.into_data()),
            TraceData::Mmap(_)
        ));
    }

    #[test]
    fn empty_files_are_not_mapped() {
        let dir = TestDir::new("in-empty");
        let path = dir.0.join("empty");
        std::fs::write(&path, b"").unwrap();
        let input = Input::open(&path).unwrap();
        assert!(!input.is_mapped());
        assert!(input.bytes().is_empty());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn proc_files_of_size_zero_are_read() {
        let input = Input::open("/proc/self/status").unwrap();
        assert!(!input.is_mapped());
        assert!(input.bytes().starts_with(b"Name:"));
    }

    #[cfg(unix)]
    #[test]
    fn fifos_and_devices_are_read_with_a_cap() {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let dir = TestDir::new("in-fifo");
        let fifo = dir.0.join("fifo");
        let c = CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(fifo, sample(5000)).unwrap())
        };
        let input = Input::open(&fifo).unwrap();
        writer.join().unwrap();
        assert!(!input.is_mapped());
        assert_eq!(input.bytes(), &sample(5000)[..]);

        // /dev/zero never ends: the cap stops it, and the error names the path and the cap.
        let err = Input::open_with_cap("/dev/zero", 1 << 20).unwrap_err();
        assert!(matches!(err, IoError::InputTooLarge { cap, .. } if cap == 1 << 20));
        let msg = err.to_string();
        assert!(
            msg.contains("/dev/zero") && msg.contains("1048576"),
            "{msg}"
        );
        // Exactly at the cap is fine, in memory and spooled.
        let f = Path::new("f");
        for spool_above in [0, 10, 1000] {
            let options = InputOptions::new().cap(100).spool_above(spool_above);
            let (data, _) = drain(&sample(100)[..], f, None, &options).unwrap();
            assert_eq!(data.bytes(), &sample(100)[..]);
            assert_eq!(
                matches!(data, InputData::Spooled(_)),
                cfg!(unix) && spool_above < 100
            );
            let err = drain(&sample(101)[..], f, None, &options).unwrap_err();
            assert!(matches!(err, IoError::InputTooLarge { cap: 100, .. }));
        }
    }

    /// Gives `len` bytes of [`sample`]'s pattern without holding them.
    struct Pattern {
        at: usize,
        len: usize,
    }

    impl Read for Pattern {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.len - self.at).min(100_000);
            for (i, b) in buf[..n].iter_mut().enumerate() {
                *b = ((self.at + i) * 7 % 251) as u8;
            }
            self.at += n;
            Ok(n)
        }
    }

    #[cfg(unix)]
    #[test]
    fn long_streams_are_spooled_to_an_unlinked_file() {
        let dir = TestDir::new("in-spool");
        let options = InputOptions::new().spool_above(4096).spool_dir(&dir.0);
        let f = Path::new("f");
        // Short: in memory, no file.
        let (data, _) = drain(Pattern { at: 0, len: 4096 }, f, None, &options).unwrap();
        assert!(matches!(data, InputData::Owned(_)));
        // Long: mapped from a file that is already gone from the folder.
        let len = 3 * SPOOL_CHUNK + 5;
        let (data, fault) = drain(Pattern { at: 0, len }, f, None, &options).unwrap();
        assert!(fault.is_none());
        assert!(matches!(data, InputData::Spooled(_)));
        assert_eq!(data.bytes(), &sample(len)[..]);
        assert!(dir.entries().is_empty(), "{:?}", dir.entries());
        // The trace releases its pages as a mapped file's.
        assert!(matches!(TraceData::from(data), TraceData::Mmap(_)));
        // Over the cap while spooling: an error, and nothing left behind.
        let capped = options.clone().cap(SPOOL_CHUNK as u64 + 1);
        let err = drain(Pattern { at: 0, len }, f, None, &capped).unwrap_err();
        assert!(matches!(err, IoError::InputTooLarge { .. }), "{err:?}");
        assert!(dir.entries().is_empty());
        // No temporary folder: a typed error naming it.
        let missing = options.clone().spool_dir(dir.0.join("nope"));
        let err = drain(Pattern { at: 0, len }, f, None, &missing).unwrap_err();
        assert!(matches!(err, IoError::TempFile { .. }), "{err:?}");
        assert!(err.to_string().contains("nope"), "{err}");
    }

    /// The file system refuses to grow the spool (as when the disk fills): `IoError::Spool`,
    /// naming the input and the folder, with the disk use in its help.
    #[cfg(unix)]
    #[test]
    #[ignore = "run in a child process by a_full_disk_is_a_spool_error"]
    fn child_spool_fsize() {
        if !crate::io::testutil::is_child() {
            return;
        }
        let dir = PathBuf::from(std::env::var_os(crate::io::testutil::CHILD_VAR).unwrap());
        // SAFETY: plain libc calls with valid arguments; the child runs this test alone.
        unsafe {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: 1 << 20,
                rlim_max: 1 << 20,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
        }
        let options = InputOptions::new().spool_above(0).spool_dir(&dir);
        let err = drain(
            Pattern {
                at: 0,
                len: 3 << 20,
            },
            Path::new("in.zst"),
            None,
            &options,
        )
        .unwrap_err();
        let help = miette::Diagnostic::help(&err).map(|h| h.to_string());
        let ok = matches!(err, IoError::Spool { written, .. } if written > 0)
            && err.to_string().contains("in.zst")
            && help.is_some_and(|h| h.contains("TMPDIR") && h.contains("free space"));
        let left = std::fs::read_dir(&dir).unwrap().count();
        std::process::exit(if ok && left == 0 { 3 } else { 4 });
    }

    #[cfg(unix)]
    #[test]
    fn a_full_disk_is_a_spool_error() {
        let dir = TestDir::new("in-spool-full");
        let out = crate::io::testutil::run_child(
            "io::input::tests::child_spool_fsize",
            dir.0.to_str().unwrap(),
            std::process::Stdio::null(),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{stderr}");
        assert!(dir.entries().is_empty());
    }

    #[test]
    fn errors_name_the_path() {
        let dir = TestDir::new("in-errors");
        let missing = dir.0.join("missing.mtf");
        let err = Input::open(&missing).unwrap_err();
        assert!(matches!(err, IoError::Open { .. }), "{err:?}");
        assert!(err.to_string().contains("missing.mtf"), "{err}");
        let err = Input::open(&dir.0).unwrap_err();
        assert!(matches!(err, IoError::IsFolder { .. }), "{err:?}");
        assert!(matches!(
            Input::reader(&missing).err().unwrap(),
            IoError::Open { .. }
        ));
    }

    #[test]
    fn shipped_trace_converts_into_a_trace() {
        let input = Input::open("traces/hatf-le32.mtf").unwrap();
        let trace = input.into_trace().unwrap();
        assert!(trace.bytes().starts_with(b"\x7fMTF"));
    }

    #[test]
    fn detection_needs_the_full_magic() {
        assert_eq!(
            Compression::detect(b"\x1f\x8b\x08\0"),
            Some(Compression::Gzip)
        );
        assert_eq!(Compression::detect(b"\x1f\x8b\x07\0"), None);
        assert_eq!(Compression::detect(b"BZh is a word"), None);
        assert_eq!(Compression::detect(b"BZh9"), None);
        assert_eq!(
            Compression::detect(b"BZh91AY&SY..."),
            Some(Compression::Bzip2)
        );
        assert_eq!(Compression::detect(b"\x7fMTF"), None);
        assert_eq!(Compression::detect(b""), None);
    }

    #[test]
    fn plain_text_streams_line_by_line() {
        let dir = TestDir::new("in-text");
        let path = dir.0.join("lines.txt");
        std::fs::write(&path, "a\nBZh\nc").unwrap();
        let lines: Vec<String> = Input::reader(&path)
            .unwrap()
            .lines()
            .map(Result::unwrap)
            .collect();
        assert_eq!(lines, ["a", "BZh", "c"]);
        let short = dir.0.join("short.txt");
        std::fs::write(&short, "x").unwrap();
        let mut s = String::new();
        Input::reader(&short)
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "x");
    }

    #[cfg(feature = "compression")]
    mod compressed {
        use super::*;

        fn compress(format: Compression, data: &[u8]) -> Vec<u8> {
            match format {
                Compression::Gzip => {
                    let mut e =
                        flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                    e.write_all(data).unwrap();
                    e.finish().unwrap()
                }
                Compression::Zstd => zstd::stream::encode_all(data, 3).unwrap(),
                Compression::Xz => {
                    let mut e = xz2::write::XzEncoder::new(Vec::new(), 6);
                    e.write_all(data).unwrap();
                    e.finish().unwrap()
                }
                Compression::Bzip2 => {
                    let mut e =
                        bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
                    e.write_all(data).unwrap();
                    e.finish().unwrap()
                }
            }
        }

        const ALL: [Compression; 4] = [
            Compression::Gzip,
            Compression::Zstd,
            Compression::Xz,
            Compression::Bzip2,
        ];

        #[test]
        fn each_format_is_detected_and_decompressed() {
            let dir = TestDir::new("in-compressed");
            let text: Vec<u8> = (0..2000)
                .flat_map(|i| format!("line {i}\n").into_bytes())
                .collect();
            for format in ALL {
                for (name, data) in [("text", text.clone()), ("empty", Vec::new())] {
                    let packed = compress(format, &data);
                    assert_eq!(Compression::detect(&packed), Some(format), "{format}");
                    // A misleading name: detection is by content.
                    let path = dir.0.join(format!("{name}-{format}.txt"));
                    std::fs::write(&path, &packed).unwrap();
                    let input = Input::open(&path).unwrap();
                    assert_eq!(input.compression(), Some(format));
                    assert!(!input.is_mapped());
                    assert_eq!(input.bytes(), &data[..], "{format} {name}");
                    let mut streamed = Vec::new();
                    Input::reader(&path)
                        .unwrap()
                        .read_to_end(&mut streamed)
                        .unwrap();
                    assert_eq!(streamed, data, "{format} {name} streamed");
                }
            }
        }

        #[test]
        fn concatenated_streams_are_read_whole() {
            let dir = TestDir::new("in-concat");
            for format in ALL {
                let mut packed = compress(format, b"first\n");
                packed.extend(compress(format, b"second\n"));
                let path = dir.0.join(format.name());
                std::fs::write(&path, &packed).unwrap();
                assert_eq!(Input::open(&path).unwrap().bytes(), b"first\nsecond\n");
                let lines: Vec<String> = Input::reader(&path)
                    .unwrap()
                    .lines()
                    .map(Result::unwrap)
                    .collect();
                assert_eq!(lines, ["first", "second"], "{format}");
            }
        }

        #[test]
        fn compressed_streams_spool_and_salvage_alike() {
            let dir = TestDir::new("in-spool-compressed");
            let spool = dir.0.join("spool");
            std::fs::create_dir(&spool).unwrap();
            // Little redundancy, so that a stream cut at two thirds has given some output.
            let data: Vec<u8> = (0..300_000u64)
                .map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 59) as u8)
                .collect();
            for format in ALL {
                let packed = compress(format, &data);
                let path = dir.0.join(format!("whole.{}", format.name()));
                std::fs::write(&path, &packed).unwrap();
                let spooled = InputOptions::new().spool_above(1000).spool_dir(&spool);
                let (input, fault) = Input::open_with(&path, &spooled).unwrap();
                assert!(fault.is_none());
                assert_eq!(input.compression(), Some(format));
                assert_eq!(input.is_spooled(), cfg!(unix), "{format}");
                assert_eq!(input.bytes(), &data[..], "{format}");
                // Cut short: the same error, or with salvage the same bytes, spooled or not.
                let cut = dir.0.join(format!("cut.{}", format.name()));
                std::fs::write(&cut, &packed[..packed.len() * 2 / 3]).unwrap();
                let in_memory = InputOptions::new().spool_above(u64::MAX);
                let a = Input::open_with(&cut, &in_memory).unwrap_err();
                let b = Input::open_with(&cut, &spooled).unwrap_err();
                assert_eq!(a.to_string(), b.to_string(), "{format}");
                let a = Input::open_with(&cut, &in_memory.salvage(true));
                let b = Input::open_with(&cut, &spooled.clone().salvage(true));
                match (a, b) {
                    (Ok((a, fa)), Ok((b, fb))) => {
                        assert!(!a.bytes().is_empty() && data.starts_with(a.bytes()));
                        assert_eq!(a.bytes(), b.bytes(), "{format}");
                        assert!(matches!(fb, Some(IoError::Decompress { .. })), "{format}");
                        assert_eq!(fa.map(|e| e.to_string()), fb.map(|e| e.to_string()));
                    }
                    // Nothing came out before the fault (bzip2 decodes 900 kB blocks; the zstd
                    // reader gives nothing from a read that ends in a fault): the same error.
                    (Err(a), Err(b)) if format != Compression::Gzip => {
                        assert_eq!(a.to_string(), b.to_string())
                    }
                    (a, b) => panic!("{format}: {a:?} / {b:?}"),
                }
            }
            assert!(dir.entries().iter().all(|e| !e.starts_with(".mtf")));
            assert_eq!(std::fs::read_dir(&spool).unwrap().count(), 0);
        }

        #[test]
        fn decompression_is_capped() {
            let dir = TestDir::new("in-bomb");
            let path = dir.0.join("bomb");
            std::fs::write(&path, compress(Compression::Zstd, &vec![0; 1 << 20])).unwrap();
            let err = Input::open_with_cap(&path, 1000).unwrap_err();
            assert!(
                matches!(err, IoError::InputTooLarge { cap: 1000, .. }),
                "{err:?}"
            );
        }

        #[test]
        fn corrupt_streams_name_the_path_and_format() {
            let dir = TestDir::new("in-corrupt");
            for format in ALL {
                let mut packed = compress(format, &sample(50_000));
                let n = packed.len();
                packed.truncate(n / 2);
                let path = dir.0.join(format!("cut.{}", format.name()));
                std::fs::write(&path, &packed).unwrap();
                let err = Input::open(&path).unwrap_err();
                assert!(
                    matches!(err, IoError::Decompress { format: f, .. } if f == format),
                    "{format}: {err:?}"
                );
                assert!(err.to_string().contains(format.name()), "{err}");
                let mut sink = Vec::new();
                let e = Input::reader(&path)
                    .unwrap()
                    .read_to_end(&mut sink)
                    .unwrap_err();
                let inner = e.get_ref().and_then(|e| e.downcast_ref::<IoError>());
                assert!(
                    matches!(inner, Some(IoError::Decompress { .. })),
                    "{format}: {e:?}"
                );
            }
        }
    }

    #[cfg(not(feature = "compression"))]
    #[test]
    fn without_the_feature_compressed_inputs_are_refused() {
        let dir = TestDir::new("in-nofeature");
        let path = dir.0.join("x.gz");
        std::fs::write(&path, b"\x1f\x8b\x08\0\0\0\0\0\0\x03").unwrap();
        let err = Input::open(&path).unwrap_err();
        assert!(
            matches!(err, IoError::NoCompressionSupport { .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("without compression support"));
        assert!(Input::reader(&path).is_err());
    }

    /// In a child: maps the file named by the child variable, truncates it, touches a lost page.
    #[cfg(unix)]
    #[test]
    #[ignore = "run in a child process by sigbus_guard_reports_a_shrunk_file"]
    fn child_sigbus() {
        if !crate::io::testutil::is_child() {
            return;
        }
        let path = PathBuf::from(std::env::var_os(crate::io::testutil::CHILD_VAR).unwrap());
        install_sigbus_guard().unwrap();
        let input = Input::open(&path).unwrap();
        assert!(input.is_mapped());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        // SAFETY: in bounds of the map; the page behind it is gone, which is the point.
        let byte = unsafe { std::ptr::read_volatile(&input.bytes()[3 * 4096]) };
        // Not reached: SIGBUS exits with status 2.
        std::process::exit(i32::from(byte) + 10);
    }

    #[cfg(unix)]
    #[test]
    fn sigbus_guard_reports_a_shrunk_file() {
        let dir = TestDir::new("in-sigbus");
        let path = dir.0.join("shrinks.mtf");
        std::fs::write(&path, vec![1u8; 4 * 65536]).unwrap();
        let out = crate::io::testutil::run_child(
            "io::input::tests::child_sigbus",
            path.to_str().unwrap(),
            std::process::Stdio::null(),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{:?} {stderr}", out.status);
        assert!(
            stderr.contains("mtf: error: the input file shrank while it was being read (SIGBUS)"),
            "{stderr}"
        );
    }
}
