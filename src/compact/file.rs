//! A compacted trace written to a file as `mtf compact` writes it: the whole-file compression
//! with a checked level ([`Compression`]), split streams written both ways with the smaller kept,
//! the derived DTD named and written beside the trace, and the output read back when asked
//! ([`compact_file`]).

// Design: whether split streams pay depends on the trace (docs/compression.md), and no estimate
// was found that predicts it well enough; so both encodings are written, each compressed as the
// output will be, and the smaller file is kept. The two candidates are temporary files in the
// output's folder, so that the chosen one is renamed into place without a copy across file
// systems, and nothing the user named is touched until the choice is made.

use std::io::{Read, Write};
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::container::Class;
use crate::decode::Reader;
use crate::dtd::Schema;
use crate::encode::TraceWriter;
use crate::io::{Input, IoError, Output, TempFile};
use crate::layout::Compiled;

use super::{compact_split, compact_with_progress, plan_split, verify, CompactError};
use super::{CompactOptions, CompactStats, Measure, SplitPlan};

/// A whole-file compressor for the output of [`compact_file`] (every reader of this crate
/// decompresses it transparently).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    /// zstd: levels 1 to 22, default 19.
    Zstd,
    /// xz: levels 0 to 9, default 9.
    Xz,
    /// gzip: levels 0 to 9, default 9.
    Gzip,
}

impl Codec {
    /// The levels this codec accepts.
    pub fn levels(self) -> RangeInclusive<u32> {
        match self {
            Codec::Zstd => 1..=22,
            Codec::Xz | Codec::Gzip => 0..=9,
        }
    }

    /// The level used when none is given: the smallest output the codec offers at a speed that
    /// still suits traces of hundreds of megabytes.
    pub fn default_level(self) -> u32 {
        match self {
            Codec::Zstd => 19,
            Codec::Xz | Codec::Gzip => 9,
        }
    }

    /// The codec's name as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Codec::Zstd => "zstd",
            Codec::Xz => "xz",
            Codec::Gzip => "gzip",
        }
    }
}

/// A codec with a level it accepts: the only way to build one is [`Compression::new`], which
/// checks the level, so a compressor is never handed one it would reject or panic on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compression {
    codec: Codec,
    level: u32,
}

/// A compression level that the codec does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, miette::Diagnostic)]
pub enum LevelError {
    /// The level is outside the codec's range.
    #[error(
        "compression level {level} is out of range for {}: valid levels are {} to {}",
        codec.name(),
        codec.levels().start(),
        codec.levels().end()
    )]
    #[diagnostic(code(mtf::compact::level))]
    OutOfRange {
        /// The codec.
        codec: Codec,
        /// The level given.
        level: u32,
    },
    /// A level was given without a codec.
    #[error("a compression level ({level}) was given without a compressor")]
    #[diagnostic(
        code(mtf::compact::level_without_codec),
        help("name the compressor too: --compress zstd (levels 1 to 22), xz or gzip (0 to 9)")
    )]
    NoCodec {
        /// The level given.
        level: u32,
    },
}

impl Compression {
    /// `codec` at `level`, or at its default level when `None`.
    ///
    /// ```
    /// use metatf::compact::{Codec, Compression};
    /// assert_eq!(Compression::new(Codec::Xz, None)?.level(), 9);
    /// assert!(Compression::new(Codec::Xz, Some(10)).is_err());
    /// # Ok::<(), metatf::compact::LevelError>(())
    /// ```
    pub fn new(codec: Codec, level: Option<u32>) -> Result<Compression, LevelError> {
        let level = level.unwrap_or(codec.default_level());
        if !codec.levels().contains(&level) {
            return Err(LevelError::OutOfRange { codec, level });
        }
        Ok(Compression { codec, level })
    }

    /// A codec or none, with a level or none: `None` for no compression; a level without a
    /// codec is an error (it would be ignored).
    pub fn choose(
        codec: Option<Codec>,
        level: Option<u32>,
    ) -> Result<Option<Compression>, LevelError> {
        match (codec, level) {
            (None, None) => Ok(None),
            (None, Some(level)) => Err(LevelError::NoCodec { level }),
            (Some(c), level) => Compression::new(c, level).map(Some),
        }
    }

    /// The codec.
    pub fn codec(self) -> Codec {
        self.codec
    }

    /// The level.
    pub fn level(self) -> u32 {
        self.level
    }

    /// Compress all of `input` into `out`.
    pub fn compress(self, input: &mut impl Read, out: &mut impl Write) -> std::io::Result<()> {
        #[cfg(feature = "compression")]
        match self.codec {
            Codec::Zstd => zstd::stream::copy_encode(input, out, self.level as i32),
            Codec::Xz => {
                let mut e = xz2::write::XzEncoder::new(out, self.level);
                std::io::copy(input, &mut e)?;
                e.finish().map(|_| ())
            }
            Codec::Gzip => {
                let mut e =
                    flate2::write::GzEncoder::new(out, flate2::Compression::new(self.level));
                std::io::copy(input, &mut e)?;
                e.finish().map(|_| ())
            }
        }
        #[cfg(not(feature = "compression"))]
        {
            let _ = (input, out);
            Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "this build of metatf has no compression (feature `compression`)",
            ))
        }
    }
}

/// How [`compact_file`] writes.
#[derive(Debug, Clone, Default)]
pub struct FileOptions {
    /// How the records are chosen. Its [`CompactOptions::measure`] is set by `compression`:
    /// plain bytes without, estimated compressed bytes with.
    pub compact: CompactOptions,
    /// Whole-file compression, or none.
    pub compression: Option<Compression>,
    /// The output's address class; `None` keeps the input's.
    pub class: Option<Class>,
    /// Also try split streams (docs/compression.md), keeping them only if the file is smaller.
    pub split: bool,
    /// Read the output back and check that it decodes to the input's values.
    pub verify: bool,
}

/// What became of split streams in [`compact_file`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Streams {
    /// Not asked for.
    NotAsked,
    /// No field varies: there is nothing to move, and the output uses the input's DTD.
    NothingVaries,
    /// Written, but the trace without them was smaller and was kept (with the input's DTD).
    NotKept,
    /// Kept: the output names the derived DTD, written beside it.
    Kept {
        /// The derived DTD's name (in the trace's header).
        dtd_name: String,
        /// Where it was written.
        dtd_path: PathBuf,
    },
}

/// What [`compact_file`] did.
#[derive(Debug, Clone)]
pub struct FileReport {
    /// What the encoding pass did (of the encoding kept).
    pub stats: CompactStats,
    /// The size of the trace before compression.
    pub trace_bytes: u64,
    /// The bytes written to the output: the trace, compressed when it is compressed (also when
    /// the output is standard output or a FIFO).
    pub file_bytes: u64,
    /// What became of split streams.
    pub streams: Streams,
    /// With [`FileOptions::verify`], the records compared; `None` when not asked or when the
    /// output is not a file that can be read back (standard output, a FIFO).
    pub verified: Option<u64>,
}

impl FileReport {
    /// What `mtf compact` says once the output is written, a line each: verification, sizes
    /// (per data record; compressed ones as `opts.compression` made them), what the encoder
    /// changed, the live sets and streams, and what became of `--live` and `--split`.
    pub fn summary(&self, opts: &FileOptions, elapsed: std::time::Duration) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(n) = self.verified {
            lines.push(format!("verified: {n} records decode to the same values"));
        } else if opts.verify {
            lines.push("not verified: the output is not a file that can be read back".into());
        }
        let stats = &self.stats;
        let per = |b: u64| b as f64 / stats.data_records.max(1) as f64;
        let compressed = match opts.compression {
            Some(c) => format!(
                ", {} bytes with {} -{} ({:.3} B/record)",
                self.file_bytes,
                c.codec().name(),
                c.level(),
                per(self.file_bytes)
            ),
            None => String::new(),
        };
        lines.push(format!(
            "{} records ({} data) → {} bytes ({:.3} B/record){compressed}; {} interpretation and {} width changes; {:.2} s",
            stats.records_in,
            stats.data_records,
            self.trace_bytes,
            per(self.trace_bytes),
            stats.interp_changes,
            stats.width_changes,
            elapsed.as_secs_f64()
        ));
        lines.extend(stats.live_sets.iter().cloned());
        lines.extend(stats.streams.iter().cloned());
        match &self.streams {
            Streams::NotAsked => {}
            Streams::NothingVaries => {
                lines.push("--split: no field varies; the output uses the input's DTD".into())
            }
            Streams::NotKept => lines.push(
                "streams not kept: the trace without them is smaller, and uses the input's DTD"
                    .into(),
            ),
            Streams::Kept { dtd_name, .. } => lines.push(format!(
                "streams kept (smaller): the output names the derived DTD {dtd_name}, written beside it"
            )),
        }
        if opts.compact.live && stats.live_sets.is_empty() {
            lines.push(
                "no field pays as a live-set position: the output is plain Meta-TF 1.0".into(),
            );
        }
        lines
    }
}

/// Re-encode the trace of `reader` ([`compact`](super::compact)) into `output` as `opts` say;
/// `dtd_text` is the text of the input's DTD (needed for split streams) and `dtd_name` the name
/// the output's header gives it.
///
/// `output` is written as [`Output::create`] writes (`-` is standard output; a regular file is
/// replaced atomically; without [`FileOptions::compression`], a name ending in `.zst`, `.gz`,
/// `.xz` or `.bz2` is compressed so at the tool's default level; with it, the name is not
/// looked at). With [`FileOptions::split`], the output must be a file: the derived DTD
/// is written beside it (`NAME.split-HASH.dtd`, left as it is if a file of that name has the
/// same text; a file of that name with other text is an error).
///
/// ```
/// use metatf::compact::{compact_file, Codec, Compression, FileOptions};
/// # let dir = std::env::temp_dir().join(format!("mtf-compact-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let opened = metatf::open("traces/hatf-le32.mtf")?;
/// let opts = FileOptions {
///     compression: Some(Compression::new(Codec::Zstd, None)?), // level 19
///     verify: true,
///     ..FileOptions::default()
/// };
/// let out = dir.join("small.mtf.zst");
/// let name = &opened.trace().header().dtd_name;
/// let report = compact_file(&opened.reader(), opened.dtd_text(), name, &out, &opts, &mut |_, _| {})?;
/// assert_eq!(report.verified, Some(20));
/// assert!(report.file_bytes < report.trace_bytes);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn compact_file(
    reader: &Reader<'_>,
    dtd_text: &str,
    dtd_name: &str,
    output: &Path,
    opts: &FileOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<FileReport, CompactError> {
    let copts = CompactOptions {
        measure: if opts.compression.is_some() {
            Measure::Compressed
        } else {
            Measure::Bytes
        },
        ..opts.compact
    };
    let plan = if opts.split {
        if output.as_os_str() == "-" {
            return Err(CompactError::SplitNeedsFile);
        }
        split_plan(reader, dtd_text, dtd_name, &copts)?
    } else {
        None
    };
    let job = Job {
        reader,
        dtd_name,
        opts,
        class: opts.class.unwrap_or(reader.class()),
        // Each schema is compiled once: the input's programs are the reader's, the derived
        // DTD's are shared by its writer and the reader that verifies the output.
        derived: plan.as_ref().map(|p| (p, Arc::new(Compiled::new(&p.1)))),
        copts,
    };
    let (mut stats, trace_bytes, file_bytes, streams) = match job.derived {
        None => {
            let (stats, bytes, written) = job.write(false, output, progress)?;
            let streams = if opts.split {
                Streams::NothingVaries
            } else {
                Streams::NotAsked
            };
            (stats, bytes, written, streams)
        }
        Some((p, _)) => job.write_split(p, output, progress)?,
    };
    if !matches!(streams, Streams::Kept { .. }) {
        stats.streams.clear();
    }
    let readable = output.as_os_str() != "-" && file_size(output).is_some();
    let verified = match opts.verify && readable {
        true => Some(job.read_back(output, &streams)?),
        false => None,
    };
    Ok(FileReport {
        stats,
        trace_bytes,
        file_bytes,
        streams,
        verified,
    })
}

/// The size of the regular file at `p`, if it is one.
fn file_size(p: &Path) -> Option<u64> {
    std::fs::metadata(p)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len())
}

/// A split plan: how the streams are cut, the derived DTD's schema and its name.
type Split = (SplitPlan, Schema, String);

/// What [`compact_file`] works with.
struct Job<'a, 'r> {
    reader: &'a Reader<'r>,
    dtd_name: &'a str,
    opts: &'a FileOptions,
    copts: CompactOptions,
    class: Class,
    /// Split streams to try, with the derived DTD's compiled programs.
    derived: Option<(&'a Split, Arc<Compiled>)>,
}

/// What one encoding wrote: its statistics, the trace's bytes, the bytes written.
type Written = (CompactStats, u64, u64);

impl Job<'_, '_> {
    /// Write the trace to `to`, with split streams (`split`) or without, compressed when
    /// asked.
    fn write(
        &self,
        split: bool,
        to: &Path,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<Written, CompactError> {
        let reader = self.reader;
        let plan = self.derived.as_ref().filter(|_| split);
        let (schema, name, compiled) = match plan {
            Some(((_, schema, name), c)) => (schema, name.as_str(), c.clone()),
            None => (reader.schema(), self.dtd_name, reader.compiled.clone()),
        };
        let order = reader.byte_order();
        let Some(compression) = self.opts.compression else {
            let mut w =
                TraceWriter::create_shared(schema, Some(compiled), to, self.class, order, name)?;
            let stats = self.encode(split, &mut w, progress)?;
            let bytes = w.finish()?.bytes;
            return Ok((stats, bytes, bytes));
        };
        let tmp = TempFile::new()?;
        let at = tmp.path();
        let mut w =
            TraceWriter::create_shared(schema, Some(compiled), at, self.class, order, name)?;
        let stats = self.encode(split, &mut w, progress)?;
        let bytes = w.finish()?.bytes;
        let written = compress_to(&compression, &tmp, to)?;
        Ok((stats, bytes, written))
    }

    /// Encode the input into `w`, with split streams (`split`) or without.
    fn encode(
        &self,
        split: bool,
        w: &mut TraceWriter<'_>,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<CompactStats, CompactError> {
        match self.derived.as_ref().filter(|_| split) {
            Some(((plan, _, _), _)) => compact_split(self.reader, w, &self.copts, plan, progress),
            None => compact_with_progress(self.reader, w, &self.copts, progress),
        }
    }

    /// Write the trace both ways, with split streams and without, and keep the smaller one
    /// in `output` (with the derived DTD beside it when the streams are kept).
    fn write_split(
        &self,
        p: &Split,
        output: &Path,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<(CompactStats, u64, u64, Streams), CompactError> {
        let folder = match output.parent() {
            Some(f) if !f.as_os_str().is_empty() => f,
            _ => Path::new("."),
        };
        let rows = TempFile::new_in(folder)?;
        let cols = TempFile::new_in(folder)?;
        let plain = self.write(false, rows.path(), progress)?;
        let streamed = self.write(true, cols.path(), progress)?;
        let (chosen, (stats, bytes, _), streams) =
            if file_size(cols.path()) < file_size(rows.path()) {
                // A different file of the derived DTD's name is refused before anything is
                // written.
                let dtd_path = derived_dtd_path(folder, &p.2, &p.0.dtd_text)?;
                let kept = Streams::Kept {
                    dtd_name: p.2.clone(),
                    dtd_path,
                };
                (cols, streamed, kept)
            } else {
                (rows, plain, Streams::NotKept)
            };
        // Compressed already, or plain to be compressed as the name says.
        let mut out = if self.opts.compression.is_some() {
            Output::create_plain(output)?
        } else {
            Output::create(output)?
        };
        let mut f = std::fs::File::open(chosen.path()).map_err(|e| IoError::Read {
            path: chosen.path().to_path_buf(),
            source: e,
        })?;
        let written = std::io::copy(&mut f, &mut out).map_err(|e| out.error(e))?;
        std::io::Write::flush(&mut out).map_err(|e| out.error(e))?;
        // Design: the derived DTD is written once the trace is complete (in its temporary
        // file), itself to a temporary file renamed into place, and put in place just before
        // the trace: a failed compact leaves neither file (a DTD it put in place is removed
        // again if the trace cannot be), and a trace is never in place without the DTD it
        // names.
        let placed = match &streams {
            Streams::Kept { dtd_path, .. } => write_derived_dtd(dtd_path, &p.0.dtd_text)?,
            _ => None,
        };
        if let Err(e) = out.commit() {
            if let Some(d) = placed {
                let _ = std::fs::remove_file(d);
            }
            return Err(e.into());
        }
        Ok((stats, bytes, written, streams))
    }

    /// Read `output` back and compare its values with the input's: the records compared.
    fn read_back(&self, output: &Path, streams: &Streams) -> Result<u64, CompactError> {
        // The output is read back with the schema it was written with: the input's, or the
        // derived one (which the header names and which was written beside it).
        let reader = self.reader;
        let (schema, compiled) = match (streams, &self.derived) {
            (Streams::Kept { .. }, Some(((_, schema, _), c))) => (schema, c.clone()),
            _ => (reader.schema(), reader.compiled.clone()),
        };
        let trace = Input::open(output)?
            .into_trace()
            .map_err(|e| CompactError::Invalid(e.to_string()))?;
        let back = Reader::with_compiled(&trace, schema, compiled);
        verify(reader, &back)
    }
}

/// Compress the trace written to `tmp` into `to` (compressed here: the name is not to
/// compress it again); the bytes written.
fn compress_to(compression: &Compression, tmp: &TempFile, to: &Path) -> Result<u64, CompactError> {
    let mut out = Output::create_plain(to)?;
    let mut f = std::fs::File::open(tmp.path()).map_err(|e| IoError::Read {
        path: tmp.path().to_path_buf(),
        source: e,
    })?;
    let mut counted = Counter {
        inner: &mut out,
        n: 0,
    };
    let mut buf = std::io::BufWriter::with_capacity(1 << 16, &mut counted);
    let done = compression
        .compress(&mut f, &mut buf)
        .and_then(|()| buf.flush());
    drop(buf);
    let written = counted.n;
    done.map_err(|e| out.error(e))?;
    out.commit()?;
    Ok(written)
}

/// A writer that counts the bytes it passes on.
struct Counter<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for Counter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The plan of split streams, the derived DTD's schema and its name: the input DTD's, with a
/// hash of the derived text (different plans never share a name).
fn split_plan(
    reader: &Reader<'_>,
    dtd_text: &str,
    dtd_name: &str,
    opts: &CompactOptions,
) -> Result<Option<(SplitPlan, Schema, String)>, CompactError> {
    let Some(plan) = plan_split(reader, dtd_text, opts)? else {
        return Ok(None);
    };
    let base = dtd_name.rsplit(['/', '\\']).next().unwrap_or("trace.dtd");
    let stem = base.strip_suffix(".dtd").unwrap_or(base);
    // FNV-1a: stable across builds and platforms, unlike the standard library's hasher.
    let mut hash = 0xcbf29ce484222325u64;
    for b in plan.dtd_text.bytes() {
        hash = (hash ^ b as u64).wrapping_mul(0x100000001b3);
    }
    let name = format!("{stem}.split-{:08x}.dtd", hash as u32);
    let schema = crate::dtd::parse_str(&name, &plan.dtd_text)
        .map_err(|e| CompactError::DerivedDtd(e.to_string()))?
        .schema;
    Ok(Some((plan, schema, name)))
}

/// Where the derived DTD `name` goes in `folder`: a file of that name with a different text is
/// an error (one with the same text is used as it is).
fn derived_dtd_path(folder: &Path, name: &str, text: &str) -> Result<PathBuf, CompactError> {
    let path = folder.join(name);
    match std::fs::read(&path) {
        Ok(existing) if existing != text.as_bytes() => Err(CompactError::DerivedDtdExists { path }),
        _ => Ok(path),
    }
}

/// Write the derived DTD to `path` (atomically), unless a file with the same text is there;
/// the path when this call put the file there.
fn write_derived_dtd(path: &Path, text: &str) -> Result<Option<PathBuf>, CompactError> {
    match std::fs::read(path) {
        Ok(existing) if existing == text.as_bytes() => Ok(None),
        Ok(_) => Err(CompactError::DerivedDtdExists {
            path: path.to_path_buf(),
        }),
        Err(_) => {
            let mut out = Output::create(path)?;
            out.write_all(text.as_bytes()).map_err(|e| out.error(e))?;
            out.commit()?;
            Ok(Some(path.to_path_buf()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_outside_each_codecs_range_are_refused() {
        for (codec, bad, good) in [
            (Codec::Xz, 10, 0),
            (Codec::Gzip, 10, 9),
            (Codec::Zstd, 0, 22),
            (Codec::Zstd, 23, 1),
        ] {
            let e = Compression::new(codec, Some(bad)).unwrap_err();
            let levels = codec.levels();
            let (lo, hi) = (levels.start(), levels.end());
            assert!(
                e.to_string()
                    .contains(&format!("valid levels are {lo} to {hi}")),
                "{e}"
            );
            assert_eq!(Compression::new(codec, Some(good)).unwrap().level(), good);
        }
        assert_eq!(
            Compression::choose(None, Some(5)),
            Err(LevelError::NoCodec { level: 5 })
        );
        assert_eq!(Compression::choose(None, None), Ok(None));
    }

    #[cfg(feature = "compression")]
    #[test]
    fn every_level_of_every_codec_compresses_without_panicking() {
        for codec in [Codec::Zstd, Codec::Xz, Codec::Gzip] {
            // xz at every level would allocate its largest dictionaries several times over.
            let levels: Vec<u32> = match codec {
                Codec::Xz => vec![0, 6, 9],
                _ => codec.levels().collect(),
            };
            for level in levels {
                let c = Compression::new(codec, Some(level)).unwrap();
                let mut out = Vec::new();
                c.compress(&mut &b"abcabcabc"[..], &mut out).unwrap();
                assert!(!out.is_empty());
            }
        }
    }
}
