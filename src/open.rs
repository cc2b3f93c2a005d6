//! Opening a trace together with its schema, the DTD found as docs/format.md §10 says: the one
//! way in, [`open`] or [`OpenOptions`].
//!
//! The bytes come through [`crate::io::Input`], as for the `mtf` command line: a regular file is
//! mapped; `-` (standard input), a pipe, a FIFO or a device is read as a stream, and a gzip,
//! zstd, xz or bzip2 stream is decompressed on the fly (feature `compression`); such a stream is
//! kept in memory up to a few MiB and beyond that copied to an unlinked temporary file that is
//! mapped, so that memory stays bounded whatever the trace's size
//! ([`OpenOptions::spool_above`]).

// Design: one builder rather than an `open_*` function per combination of options (DTD, salvage,
// size cap): every caller, the command line included, goes through `OpenOptions::open`, so a trace
// that one of them reads, the others read too. The schema's record programs are compiled here,
// once, and shared by every reader and printer of the opened trace.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use miette::Diagnostic;

use crate::container::{ContainerError, Located, Trace};
use crate::decode::Reader;
use crate::dtd::{DtdLoadError, DtdWarning, Schema};
use crate::io::{Compression, Input, InputOptions, IoError, Opening, StreamInput};
use crate::layout::Compiled;
use crate::message::Message;

/// Where the DTD of an opened trace came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DtdSource {
    /// Given explicitly.
    Explicit(PathBuf),
    /// Found beside the trace.
    TraceDir(PathBuf),
    /// Found in a folder of `MTF_DTD_PATH`.
    EnvPath(PathBuf),
    /// Built into the library (this repository's `dtds/`).
    Shipped(&'static str),
}

impl std::fmt::Display for DtdSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DtdSource::Explicit(p) => write!(f, "{} (--dtd)", p.display()),
            DtdSource::TraceDir(p) => write!(f, "{} (beside the trace)", p.display()),
            DtdSource::EnvPath(p) => write!(f, "{} (MTF_DTD_PATH)", p.display()),
            DtdSource::Shipped(n) => write!(f, "{n} (built into mtf)"),
        }
    }
}

/// An environment variable of [`OpenOptions::from_env`] or [`OpenOptions::env_stream_window`] that does not hold a number of bytes.
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum EnvError {
    /// `MTF_STREAM_WINDOW` is not a number of bytes.
    #[error("MTF_STREAM_WINDOW is `{0}`, not a number of bytes")]
    #[diagnostic(
        code(mtf::usage::env),
        help(
            "unset it, or give the bytes of a piped or compressed trace to decode at once (default 4194304; 0 spools it to TMPDIR instead)"
        )
    )]
    WindowNotBytes(String),
    /// `MTF_STREAM_WINDOW` is larger than [`crate::limits::MAX_STREAM_WINDOW`].
    #[error("MTF_STREAM_WINDOW is `{0}`, more than the largest window ({max} bytes)", max = crate::limits::MAX_STREAM_WINDOW)]
    #[diagnostic(
        code(mtf::usage::env),
        help(
            "give at most that many bytes (default 4194304; 0 spools the stream to TMPDIR instead)"
        )
    )]
    WindowTooLarge(String),
    /// `MTF_SPOOL_ABOVE` is not a number of bytes.
    #[error("MTF_SPOOL_ABOVE is `{0}`, not a number of bytes")]
    #[diagnostic(
        code(mtf::usage::env),
        help(
            "unset it, or give the bytes of a piped or compressed trace to keep in memory before spooling it to TMPDIR (default 4194304)"
        )
    )]
    SpoolNotBytes(String),
}

/// The value of the environment variable `name` as a number, `None` when it is unset or empty
/// (as `NO_COLOR=`), or `Err` with its value escaped for a terminal.
fn env_number<T: std::str::FromStr>(name: &str) -> Option<Result<T, String>> {
    let value = std::env::var_os(name).filter(|v| !v.is_empty())?;
    Some(
        value
            .to_str()
            .and_then(|v| v.trim().parse::<T>().ok())
            .ok_or_else(|| crate::io::escape_for_terminal(&value.to_string_lossy()).into_owned()),
    )
}

/// Why a trace could not be opened with its DTD.
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum OpenError {
    /// The trace could not be read (a missing file, a folder, a corrupt compressed stream, an
    /// input larger than [`OpenOptions::max_input_bytes`]).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Io(#[from] IoError),
    /// The trace's container is invalid.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Container(#[from] ContainerError),
    /// The DTD could not be read or is not usable.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Dtd(#[from] DtdLoadError),
    /// No DTD was found.
    #[error("{trace}: {reason}")]
    #[diagnostic(
        code(mtf::dtd::not_found),
        help(
            "name the DTD with --dtd PATH (any file), or put it beside the trace or in a folder listed in MTF_DTD_PATH, as a file or a symbolic link to a file in the same folder or below (docs/format.md §10)"
        )
    )]
    DtdNotFound {
        /// The trace.
        trace: String,
        /// Where it was looked for.
        reason: String,
        /// Whether the DTD was named explicitly (then a missing file is a usage error).
        explicit: bool,
    },
}

/// How to open a trace: which DTD, whether to salvage a damaged container, how much to read into
/// memory. [`open`] is `OpenOptions::new().open(path)`.
///
/// ```
/// use std::io::Write;
/// use metatf::OpenOptions;
///
/// // A gzip-compressed trace (as `gzip -c traces/hatf-le32.mtf > t.mtf.gz` writes it).
/// let dir = tempfile::tempdir()?;
/// let gz = dir.path().join("t.mtf.gz");
/// let mut e = flate2::write::GzEncoder::new(std::fs::File::create(&gz)?, Default::default());
/// e.write_all(&std::fs::read("traces/hatf-le32.mtf")?)?;
/// e.finish()?;
///
/// // `metatf::open(&gz)` reads it as it is; here with the DTD named explicitly.
/// let opened = OpenOptions::new().dtd("dtds/hatf10.dtd").open(&gz)?;
/// assert_eq!(opened.schema().name, "hatf10.dtd");
/// # #[cfg(feature = "compression")]
/// assert_eq!(opened.compression(), Some(metatf::io::Compression::Gzip));
///
/// // A trace cut short is refused, or opened with what can be trusted when salvaging.
/// let bytes = std::fs::read("traces/hatf-le32.mtf")?;
/// let cut = bytes[..bytes.len() - 3].to_vec();
/// assert!(OpenOptions::new().open_bytes(cut.clone()).is_err());
/// let salvaged = OpenOptions::new().salvage(true).open_bytes(cut)?;
/// assert!(salvaged.damage().is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenOptions {
    dtd: Option<PathBuf>,
    salvage: bool,
    input: InputOptions,
    stream: Option<usize>,
}

impl Default for OpenOptions {
    fn default() -> OpenOptions {
        OpenOptions::new()
    }
}

impl OpenOptions {
    /// The defaults: the DTD the header names (docs/format.md §10), a damaged container refused,
    /// at most [`Input::DEFAULT_CAP`] bytes in a trace that cannot be mapped, spooled to a
    /// temporary file beyond [`InputOptions::DEFAULT_SPOOL_ABOVE`].
    pub fn new() -> OpenOptions {
        OpenOptions {
            dtd: None,
            salvage: false,
            input: InputOptions::new(),
            stream: None,
        }
    }

    /// With `true`, a trace that cannot be mapped (a pipe, standard input, a compressed trace)
    /// is read as a stream in one pass, from a window of
    /// [`DEFAULT_STREAM_WINDOW`](crate::limits::DEFAULT_STREAM_WINDOW) bytes, with no temporary
    /// file: [`crate::events::read`] gives its events as they arrive (a mapped file is opened
    /// as always, and read as a file). Only the header and the section table are read
    /// when it opens; [`Opened::trace`] holds just those ([`Trace::is_head`]). A trace whose DTD
    /// reads sections as tables (`sectionStride`, `sectionOffset`: random access) is spooled as
    /// without this option. [`OpenOptions::salvage`] still applies to a mapped file and to a
    /// spooled stream; a streamed trace whose container turns out damaged (its regions depend on
    /// the length of the whole input, known only at its end) stops there with the error a file
    /// opened without salvage gives ([`crate::stream::StreamError`]).
    pub fn stream(mut self, yes: bool) -> OpenOptions {
        self.stream = yes.then_some(crate::limits::DEFAULT_STREAM_WINDOW);
        self
    }

    /// As [`OpenOptions::stream`] with a window of `bytes` (at least 1 and at most
    /// [`crate::limits::MAX_STREAM_WINDOW`]; memory is taken as bytes arrive; a record longer
    /// than half of it grows it for a while, up to [`crate::limits::MAX_STREAM_WINDOW`]).
    pub fn stream_window(mut self, bytes: usize) -> OpenOptions {
        self.stream = Some(bytes.clamp(1, crate::limits::MAX_STREAM_WINDOW as usize));
        self
    }

    /// The defaults, with what the environment sets, as the `mtf` command line opens every
    /// trace: `MTF_SPOOL_ABOVE` (bytes, [`OpenOptions::spool_above`]; `0` spools every trace
    /// that cannot be mapped; unset or empty: the default).
    pub fn from_env() -> Result<OpenOptions, EnvError> {
        let options = OpenOptions::new();
        Ok(match env_number::<u64>("MTF_SPOOL_ABOVE") {
            Some(bytes) => options.spool_above(bytes.map_err(EnvError::SpoolNotBytes)?),
            None => options,
        })
    }

    /// The window of [`OpenOptions::stream_window`] the environment sets for a trace read in
    /// one pass: `MTF_STREAM_WINDOW` (bytes; 4 MiB when unset or empty), or `None` when it is 0
    /// (such a trace is then spooled, not streamed).
    pub fn env_stream_window() -> Result<Option<usize>, EnvError> {
        match env_number::<usize>("MTF_STREAM_WINDOW") {
            None => Ok(Some(crate::limits::DEFAULT_STREAM_WINDOW)),
            Some(Ok(0)) => Ok(None),
            Some(Ok(b)) if b as u64 <= crate::limits::MAX_STREAM_WINDOW => Ok(Some(b)),
            Some(Ok(_)) => {
                let value = std::env::var_os("MTF_STREAM_WINDOW").unwrap_or_default();
                let value = crate::io::escape_for_terminal(&value.to_string_lossy()).into_owned();
                Err(EnvError::WindowTooLarge(value))
            }
            Some(Err(v)) => Err(EnvError::WindowNotBytes(v)),
        }
    }

    /// Use this DTD file instead of the one the header names.
    pub fn dtd(mut self, path: impl Into<PathBuf>) -> OpenOptions {
        self.dtd = Some(path.into());
        self
    }

    /// As [`OpenOptions::dtd`], or the header's DTD for `None`.
    pub fn dtd_opt(mut self, path: Option<impl Into<PathBuf>>) -> OpenOptions {
        self.dtd = path.map(Into::into);
        self
    }

    /// Open a trace even when its container is damaged (a trace cut short by a crashed tracer):
    /// the regions that can be trusted are decoded, and [`Opened::damage`] says what is wrong.
    /// A compressed trace that ends early is opened with what was decompressed, and
    /// [`Opened::input_fault`] says so.
    pub fn salvage(mut self, yes: bool) -> OpenOptions {
        self.salvage = yes;
        self
    }

    /// The most bytes a trace that cannot be mapped (a pipe, standard input, a compressed
    /// trace, bytes given to [`OpenOptions::open_bytes`] compressed) may hold once decompressed;
    /// more is [`IoError::InputTooLarge`]. A mapped file does not count. Such a trace is held in
    /// memory only up to [`OpenOptions::spool_above`] bytes and in a temporary file beyond, so
    /// this bounds the disk it may fill (and stops an endless stream), not memory.
    pub fn max_input_bytes(mut self, cap: u64) -> OpenOptions {
        self.input = self.input.cap(cap);
        self
    }

    /// Keep at most `bytes` of a trace that cannot be mapped in memory (4 MiB by default): a
    /// longer one is copied, decompressed, to an unlinked temporary file as it is read and
    /// mapped from there, and its pages are released behind the reader as a mapped file's are
    /// (Unix; elsewhere it is read into memory). It needs that much free disk in the temporary
    /// folder; `0` spools every such trace.
    pub fn spool_above(mut self, bytes: u64) -> OpenOptions {
        self.input = self.input.spool_above(bytes);
        self
    }

    /// The folder for the temporary file of [`OpenOptions::spool_above`] (by default the
    /// system's, [`std::env::temp_dir`], which honours `TMPDIR`).
    pub fn spool_dir(mut self, folder: impl Into<PathBuf>) -> OpenOptions {
        self.input = self.input.spool_dir(folder);
        self
    }

    /// Open the trace at `path`: a file (mapped), `-` for standard input, a pipe, a FIFO, or a
    /// compressed stream of any of these. The DTD is looked up beside a trace given by path (not
    /// beside standard input), then in `MTF_DTD_PATH`, then among the DTDs built into the library.
    pub fn open(&self, path: impl AsRef<Path>) -> Result<Opened, OpenError> {
        let path = path.as_ref();
        if let Some(window) = self.stream {
            match Input::open_stream(path, &self.input)? {
                Opening::Whole(input) => return self.opened_from(path, input, None),
                Opening::Stream(src) => return self.open_streamed(path, src, window),
            }
        }
        let (input, fault) = Input::open_with(path, &self.input.clone().salvage(self.salvage))?;
        self.opened_from(path, input, fault)
    }

    /// A trace read as a stream: its header and section table now, its records through
    /// `Opened::stream`. Whatever cannot be streamed, or is not a plausible head, is read
    /// whole as [`OpenOptions::open`] reads it (so its errors are the same).
    fn open_streamed(
        &self,
        path: &Path,
        mut src: StreamInput,
        window: usize,
    ) -> Result<Opened, OpenError> {
        let whole = |src: StreamInput, buf: Vec<u8>| -> Result<Opened, OpenError> {
            let (input, fault) = src.into_input(buf, &self.input.clone().salvage(self.salvage))?;
            self.opened_from(path, input, fault)
        };
        // Reads until `buf` holds `n` bytes; false at the end of the input.
        let read_to = |src: &mut StreamInput, buf: &mut Vec<u8>, n: usize| {
            let have = buf.len();
            if have >= n {
                return Ok::<bool, IoError>(true);
            }
            buf.resize(n, 0);
            let got = src.read_full(&mut buf[have..])?;
            buf.truncate(have + got);
            Ok(buf.len() == n)
        };
        // The fixed header, the integers (8 bytes wide at most) and the longest DTD name: a
        // shorter input is read whole (a few hundred bytes).
        // Design: a short trace is read whole, as a file is, so that a trace whose metadata
        // makes a section a table (`compact --split`) reads as a file does whatever its
        // window; a longer one falls back to reading whole only while its window still holds
        // its start (see `TraceStream`).
        const HEAD_MIN: usize = 16 + 3 * 8 + 255;
        let mut buf = Vec::new();
        if !read_to(&mut src, &mut buf, HEAD_MIN)? {
            return whole(src, buf);
        }
        let Ok(header) = crate::container::Header::parse_fields(&buf) else {
            return whole(src, buf);
        };
        // At most 255 sections (their ids are distinct); a larger table cannot be valid, and the
        // error a file gives for it depends on the file's length.
        let most = header.header_len + 255 * 3 * header.int_width as u64;
        if header.start < header.header_len || header.start > most {
            return whole(src, buf);
        }
        let start = header.start as usize;
        // The records' first byte too: an input that ends at `start` is read whole.
        if !read_to(&mut src, &mut buf, start + 1)? {
            return whole(src, buf);
        }
        let named = (!src.is_stdin()).then(|| path.to_path_buf());
        let Ok(trace) = Trace::stream_head(buf[..start].to_vec(), named) else {
            return whole(src, buf);
        };
        let name = if src.is_stdin() {
            "<stdin>".to_string()
        } else {
            path.display().to_string()
        };
        let mut o = self.with_trace(trace, name)?;
        o.compression = src.compression();
        let tables = o.schema.records.iter().any(|rt| {
            rt.slots.iter().any(|s| {
                matches!(
                    s.interp,
                    crate::dtd::Interp::SectionOffset(_) | crate::dtd::Interp::SectionStride { .. }
                )
            })
        });
        if tables {
            // Sections read as tables: random access; the DTD already loaded is kept.
            let (input, fault) = src.into_input(buf, &self.input.clone().salvage(self.salvage))?;
            o.trace = if self.salvage {
                input.into_trace_salvaging()?
            } else {
                input.into_trace()?
            };
            o.fault = fault;
            return Ok(o);
        }
        o.stream = std::sync::Mutex::new(Some((src, buf, window)));
        Ok(o)
    }

    /// An opened input (mapped, in memory or spooled) with its DTD.
    fn opened_from(
        &self,
        path: &Path,
        input: Input,
        fault: Option<IoError>,
    ) -> Result<Opened, OpenError> {
        let compression = input.compression();
        let name = if input.is_stdin() {
            "<stdin>".to_string()
        } else {
            path.display().to_string()
        };
        let trace = if self.salvage {
            input.into_trace_salvaging()?
        } else {
            input.into_trace()?
        };
        let mut o = self.with_trace(trace, name)?;
        o.fault = fault;
        o.compression = compression;
        Ok(o)
    }

    /// Open a trace held in memory; the DTD is `dtd`, or the header's name looked up in
    /// `MTF_DTD_PATH` and among the built-in DTDs.
    pub fn open_bytes(&self, bytes: Vec<u8>) -> Result<Opened, OpenError> {
        // Compressed bytes are read as a compressed file is.
        let compression = Compression::detect(&bytes);
        let (data, fault) =
            crate::io::decompress_bytes(bytes, &self.input.clone().salvage(self.salvage))?;
        let trace = if self.salvage {
            Trace::salvage(data.into(), None)?
        } else {
            Trace::from_data(data.into(), None)?
        };
        let mut o = self.with_trace(trace, "<memory>".to_string())?;
        o.fault = fault;
        o.compression = compression;
        Ok(o)
    }

    /// Find and load the DTD of a checked trace.
    fn with_trace(&self, trace: Trace<'static>, name: String) -> Result<Opened, OpenError> {
        let dtd = self.dtd.as_deref();
        let env = std::env::var_os("MTF_DTD_PATH");
        let located = trace.locate_dtd(dtd, env.as_deref());
        // The text is kept: a derived DTD (`mtf compact --split`) extends it, and a DTD read from
        // a FIFO cannot be read twice.
        let file = |p: &Path| -> Result<(crate::dtd::Loaded, String), OpenError> {
            let text = crate::dtd::read_file(p)?;
            let loaded = crate::dtd::parse_file_text(p, &text)?;
            Ok((loaded, text))
        };
        let ((loaded, text), source) = match located {
            Located::Explicit(p) => (file(&p)?, DtdSource::Explicit(p)),
            Located::TraceDir(p) => (file(&p)?, DtdSource::TraceDir(p)),
            Located::EnvPath(p) => (file(&p)?, DtdSource::EnvPath(p)),
            Located::Shipped(name, text) => (
                (
                    crate::dtd::parse_str(name, text).map_err(DtdLoadError::from)?,
                    text.to_string(),
                ),
                DtdSource::Shipped(name),
            ),
            Located::NotFound(nf) => {
                return Err(OpenError::DtdNotFound {
                    trace: name,
                    reason: nf.to_string(),
                    explicit: dtd.is_some(),
                })
            }
        };
        let mut schema = loaded.schema;
        if let DtdSource::Explicit(p) | DtdSource::TraceDir(p) | DtdSource::EnvPath(p) = &source {
            if let Some(n) = p.file_name() {
                schema.name = n.to_string_lossy().into_owned();
            }
        }
        let compiled = Arc::new(Compiled::new(&schema));
        Ok(Opened {
            trace,
            schema,
            compiled,
            source,
            text,
            warnings: loaded.warnings,
            fault: None,
            compression: None,
            stream: std::sync::Mutex::new(None),
            stream_input: self.input.clone().salvage(self.salvage),
        })
    }
}

/// A trace opened with its schema, from [`open`] or [`OpenOptions::open`].
pub struct Opened {
    trace: Trace<'static>,
    schema: Schema,
    compiled: Arc<Compiled>,
    source: DtdSource,
    text: String,
    warnings: Vec<DtdWarning>,
    fault: Option<IoError>,
    compression: Option<Compression>,
    /// A trace opened to be streamed: its input, the bytes read from it, the window size.
    #[allow(clippy::type_complexity)]
    stream: std::sync::Mutex<Option<(StreamInput, Vec<u8>, usize)>>,
    /// How a stream that needs random access is read whole after all.
    stream_input: InputOptions,
}

impl Opened {
    /// The trace (header, section index, bytes).
    pub fn trace(&self) -> &Trace<'static> {
        &self.trace
    }

    /// The schema of its DTD.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Where the DTD came from.
    pub fn dtd_source(&self) -> &DtdSource {
        &self.source
    }

    /// The DTD's text, as read when the trace was opened.
    pub fn dtd_text(&self) -> &str {
        &self.text
    }

    /// Problems in the DTD that do not make it unusable (likely typos).
    pub fn warnings(&self) -> &[DtdWarning] {
        &self.warnings
    }

    /// For a trace opened with [`OpenOptions::salvage`] whose container is damaged, what is
    /// wrong.
    pub fn damage(&self) -> Option<&ContainerError> {
        self.trace.damage()
    }

    /// For a compressed trace opened with [`OpenOptions::salvage`] whose stream ended early or
    /// is corrupt, the error; the trace holds what was decompressed before it.
    pub fn input_fault(&self) -> Option<&IoError> {
        self.fault.as_ref()
    }

    /// The compression the trace was stored with, if any.
    pub fn compression(&self) -> Option<Compression> {
        self.compression
    }

    /// Whether the trace is read as a stream ([`OpenOptions::stream`]): [`Opened::trace`] holds
    /// its header and section table only, and its records come from [`crate::events::read`]
    /// (once).
    pub fn is_streamed(&self) -> bool {
        self.trace.is_head()
    }

    /// For a trace read as a stream ([`Opened::is_streamed`]), its events, read as they arrive
    /// from a bounded window (once: `None` the second time, and for a trace that is not
    /// streamed). [`Opened::reader`] still gives the schema, the regions and the section names,
    /// but not the records. The one way to get a trace's events is [`crate::events::read`],
    /// which takes this for a streamed trace.
    pub(crate) fn stream(&self) -> Option<crate::stream::TraceStream<'_>> {
        let mut slot = match self.stream.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let (src, buf, window) = slot.take()?;
        let name = if src.is_stdin() {
            "<stdin>".to_string()
        } else {
            src.path().display().to_string()
        };
        Some(crate::stream::TraceStream::new(
            crate::stream::Head {
                trace: &self.trace,
                schema: &self.schema,
                compiled: self.compiled.clone(),
                name,
                input: self.stream_input.clone(),
            },
            src,
            buf,
            window,
        ))
    }

    /// A reader over the records. The schema's record programs were compiled when the trace
    /// was opened; every reader shares them.
    pub fn reader(&self) -> Reader<'_> {
        Reader::with_compiled(&self.trace, &self.schema, self.compiled.clone())
    }
}

/// Open the trace at `path` (a file, `-` for standard input, a pipe, a compressed stream) and
/// the DTD its header names, looked up beside the trace, then in `MTF_DTD_PATH`, then among the
/// DTDs built into the library: `OpenOptions::new().open(path)`.
pub fn open(path: impl AsRef<Path>) -> Result<Opened, OpenError> {
    OpenOptions::new().open(path)
}

/// After a trace was read with a DTD given by the user (`dtd`): when the DTD given is not the one the trace's header
/// names and the decode found problems, say that the DTD is likely the wrong one (the figures
/// of a trace read with another format's DTD can look plausible: a 2.8 GiB allocation).
pub fn other_dtd_warning(
    o: &Opened,
    trace: &Path,
    dtd: Option<&Path>,
    problems: u64,
) -> Option<Message> {
    let given = dtd.and_then(Path::file_name)?;
    let named = o.trace().header().dtd_name.clone();
    // Only the last component of the header's name is used to find a DTD (docs/format.md §10).
    let named_file = named.rsplit(['/', '\\']).next().unwrap_or(&named);
    if problems == 0 || given.to_string_lossy() == named_file {
        return None;
    }
    let message = format!(
        "{} names the DTD {}, but --dtd gave {}, and decoding with it found {problems} \
         problem{}: the figures are likely wrong",
        crate::io::input_name(trace),
        crate::io::escape_for_terminal(named_file),
        crate::io::escape_path(Path::new(given)),
        if problems == 1 { "" } else { "s" },
    );
    let help = "leave out --dtd to read the trace with the DTD it names, or run `mtf check` \
                with the same --dtd to see the problems";
    Some(Message::warning(
        message,
        "mtf::dtd::other",
        Some(help.to_string()),
    ))
}
