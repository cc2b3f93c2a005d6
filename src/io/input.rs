//! [`Input`]: reading a trace or a text input from what the user named.

// Design: a regular file is memory-mapped, so that a multi-gigabyte trace costs no copy and no
// heap; everything else (pipes, FIFOs, character devices, `/dev/stdin`, `<(cat f)`, `/proc`
// files that report size 0, compressed files) is read into memory, with a cap so that an endless
// or enormous stream ends in an error naming the path rather than in the OOM killer. Compression
// is recognised by magic bytes, never by name: `<(zcat x)`, `-` and a `.mtf` that is really
// gzipped all work, and a file called `x.gz` that is not compressed is read as it is.

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

/// The bytes of an [`Input`]: a memory map or an owned buffer.
#[derive(Debug)]
pub enum InputData {
    /// A read-only map of a regular file, exactly as long as `fstat` reported when it was opened.
    Mapped(Mmap),
    /// Bytes read (and, if compressed, decompressed) into memory.
    Owned(Vec<u8>),
}

impl InputData {
    /// All the bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match self {
            InputData::Mapped(m) => m,
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
            InputData::Mapped(m) => TraceData::Mmap(m),
            InputData::Owned(v) => TraceData::Owned(v),
        }
    }
}

impl From<Input> for TraceData<'static> {
    fn from(input: Input) -> TraceData<'static> {
        input.data.into()
    }
}

/// A whole input in memory (mapped or read), decompressed if it was compressed.
///
/// ```
/// let input = metatf::io::Input::open("traces/hatf-le32.mtf")?;
/// assert!(input.bytes().starts_with(b"\x7fMTF"));
/// let trace = input.into_trace()?;
/// assert!(trace.bytes().len() > 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    /// The default cap on an input read into memory: 16 GiB.
    pub const DEFAULT_CAP: u64 = crate::limits::DEFAULT_INPUT_CAP;

    /// Opens `path` (`-` for standard input) with the [`Input::DEFAULT_CAP`].
    pub fn open(path: impl AsRef<Path>) -> Result<Input, IoError> {
        Input::open_with_cap(path, Input::DEFAULT_CAP)
    }

    /// Opens `path` (`-` for standard input). A regular file with a non-zero size is mapped,
    /// exactly as long as `fstat` on the opened file reports; anything else, and a file that
    /// cannot be mapped, is read into memory, at most `cap` bytes. A compressed input is
    /// decompressed into memory, at most `cap` bytes once decompressed.
    ///
    /// Errors: [`IoError::Open`], [`IoError::IsFolder`], [`IoError::Read`],
    /// [`IoError::InputTooLarge`], [`IoError::Decompress`], [`IoError::NoCompressionSupport`].
    pub fn open_with_cap(path: impl AsRef<Path>, cap: u64) -> Result<Input, IoError> {
        Input::open_inner(path.as_ref(), cap, false).map(|(input, _)| input)
    }

    /// As [`Input::open`], but a compressed input that ends early or is corrupt after some
    /// output (a trace written by a tracer that crashed) yields the bytes decompressed before
    /// the fault, with the error beside them, so that what they hold can still be shown.
    pub fn open_salvaging(path: impl AsRef<Path>) -> Result<(Input, Option<IoError>), IoError> {
        Input::open_inner(path.as_ref(), Input::DEFAULT_CAP, true)
    }

    /// As [`Input::open_salvaging`], with a cap as [`Input::open_with_cap`].
    pub fn open_salvaging_with_cap(
        path: impl AsRef<Path>,
        cap: u64,
    ) -> Result<(Input, Option<IoError>), IoError> {
        Input::open_inner(path.as_ref(), cap, true)
    }

    fn open_inner(
        path: &Path,
        cap: u64,
        salvage: bool,
    ) -> Result<(Input, Option<IoError>), IoError> {
        let data = if path.as_os_str() == "-" {
            InputData::Owned(read_capped(io::stdin().lock(), path, cap)?)
        } else {
            let file = open_file(path)?;
            let meta = file.metadata().map_err(|source| IoError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            match map_regular(&file, &meta) {
                Some(map) => InputData::Mapped(map),
                // Size 0 is an empty file or a /proc file whose size is unknown: read either.
                None => InputData::Owned(read_capped(file, path, cap)?),
            }
        };
        let compression = Compression::detect(data.bytes());
        let mut fault = None;
        let data = match compression {
            None => data,
            Some(format) => {
                let (out, err) = decompress_all(data.bytes(), format, path, cap, salvage)?;
                fault = err;
                InputData::Owned(out)
            }
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
        // Short reads are normal on pipes: read until MAGIC_LEN bytes or the end.
        let mut prefix = Vec::with_capacity(MAGIC_LEN);
        while prefix.len() < MAGIC_LEN {
            let mut buf = [0u8; MAGIC_LEN];
            let want = MAGIC_LEN - prefix.len();
            match raw.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(n) => prefix.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(IoError::Read {
                        path: path.to_path_buf(),
                        source,
                    })
                }
            }
        }
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
    unsafe { MmapOptions::new().len(len).map(file) }.ok()
}

/// Reads all of `reader`, failing if it holds more than `cap` bytes.
fn read_capped(reader: impl Read, path: &Path, cap: u64) -> Result<Vec<u8>, IoError> {
    let mut buf = Vec::new();
    reader
        .take(cap.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|source| IoError::Read {
            path: path.to_path_buf(),
            source,
        })?;
    if buf.len() as u64 > cap {
        return Err(IoError::InputTooLarge {
            path: path.to_path_buf(),
            cap,
        });
    }
    Ok(buf)
}

/// Decompresses a whole input held in memory, at most `cap` bytes of output. With `salvage`,
/// a fault after some output gives that output and the error.
fn decompress_all(
    bytes: &[u8],
    format: Compression,
    path: &Path,
    cap: u64,
    salvage: bool,
) -> Result<(Vec<u8>, Option<IoError>), IoError> {
    let mut out = Vec::new();
    let mut fault = None;
    // `read_to_end` keeps in `out` what was read before an error.
    if let Err(source) = decoder(bytes, format, path)?
        .take(cap.saturating_add(1))
        .read_to_end(&mut out)
    {
        let e = IoError::Decompress {
            path: path.to_path_buf(),
            format,
            source,
        };
        if !salvage || out.is_empty() {
            return Err(e);
        }
        fault = Some(e);
    }
    if out.len() as u64 > cap {
        return Err(IoError::InputTooLarge {
            path: path.to_path_buf(),
            cap,
        });
    }
    Ok((out, fault))
}

/// Bytes held in memory, decompressed if they start with a compression magic (at most `cap`
/// bytes once decompressed), as [`Input::open_with_cap`] treats a file; with `salvage`, a stream
/// that ends early yields what was decompressed and the error beside it.
pub(crate) fn decompress_bytes(
    bytes: Vec<u8>,
    cap: u64,
    salvage: bool,
) -> Result<(Vec<u8>, Option<IoError>), IoError> {
    match Compression::detect(&bytes) {
        None => Ok((bytes, None)),
        Some(format) => decompress_all(&bytes, format, Path::new("<memory>"), cap, salvage),
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
        // Exactly at the cap is fine.
        let f = Path::new("f");
        assert_eq!(read_capped(&sample(100)[..], f, 100).unwrap().len(), 100);
        assert!(read_capped(&sample(101)[..], f, 100).is_err());
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
