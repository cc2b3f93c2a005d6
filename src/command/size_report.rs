//! `mtf size-report`: the columns of the paper's Table 4 measured on one trace, in bytes per
//! data record, plain and compressed with gzip, zstd and xz — at their usual levels by default
//! ([`Levels::Usual`]: gzip -6, zstd -3, xz -1), at their top levels on request
//! ([`Levels::Best`]: gzip -9, zstd -19, xz -9). docs/compression.md says what each form is.

use std::io::{self, BufWriter, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::compact::{compact, CompactError, CompactOptions, Measure};
use crate::container::ContainerError;
use crate::decode::{Event, Reader, Value};
use crate::dtd::{Builtin, RecordType};
use crate::encode::{EncodeError, TraceWriter};
use crate::text::Printer;
use crate::Opened;

// Design: the simple binary and text forms are never held in memory. A first pass over the
// records counts their lengths; then each form is written again into each compressor, which
// writes into a sink that only counts bytes. Writing a form again costs far less than
// compressing it: nearly all the time goes to the compressors, so the 21 compressions (7 forms,
// 3 compressors) run on a pool of threads, one per core, the largest first; the report then
// takes about as long as its largest compression rather than the sum of them all. Each
// compressor keeps the exact settings of its command (the sizes do not change with the number
// of threads). Memory: at most one compressor's state per thread, xz's dictionary no larger
// than its form (see `xz_stream`). The encoded traces and the split streams, smaller than the
// input, are built in memory first.
//
// Design: the levels. The top levels cost minutes on a trace of a few MB (issue 25, item 17:
// 65–82 s on 6–9 MB traces): on the 79 MB text form of a 6.7 MB Android trace, measured with
// the command-line tools on one core of a loaded machine, zstd -19 took 117 s, xz -6 101 s and
// xz -9 46 s, against gzip -6 0.8 s, zstd -3 0.7 s and xz -1 4.7 s. The default is therefore
// each tool's usual level (gzip and zstd's defaults, -6 and -3) and for xz its fast preset -1
// (xz's default -6 is the slowest of all on long text; -1 came out smaller than -9 on that text
// form, 1.78 MB against 2.05 MB); `Levels::Best` (`mtf size-report --best`) keeps the top
// levels of the paper's comparison, for a report that may take minutes.

/// The compression levels of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Levels {
    /// gzip -6, zstd -3, xz -1: seconds on traces of several MB.
    #[default]
    Usual,
    /// gzip -9, zstd -19, xz -9: minutes on traces of several MB.
    Best,
}

impl Levels {
    /// gzip's level.
    pub fn gzip(self) -> u32 {
        match self {
            Levels::Usual => 6,
            Levels::Best => 9,
        }
    }

    /// zstd's level.
    pub fn zstd(self) -> i32 {
        match self {
            Levels::Usual => 3,
            Levels::Best => 19,
        }
    }

    /// xz's preset.
    pub fn xz(self) -> u32 {
        match self {
            Levels::Usual => 1,
            Levels::Best => 9,
        }
    }

    /// The compressors' columns as their commands are written (`gzip -6`, ...).
    pub fn headings(self) -> [String; 3] {
        [
            format!("gzip -{}", self.gzip()),
            format!("zstd -{}", self.zstd()),
            format!("xz -{}", self.xz()),
        ]
    }
}

/// How to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeReportOptions {
    /// Records per look-ahead window of the encoder (`mtf compact`'s rows).
    pub window: usize,
    /// Compressions run at once; 0: one per core.
    pub jobs: usize,
    /// The compression levels.
    pub levels: Levels,
}

impl Default for SizeReportOptions {
    /// Windows of 4,096 records, one compression per core, the usual levels.
    fn default() -> Self {
        SizeReportOptions {
            window: 4096,
            jobs: 0,
            levels: Levels::Usual,
        }
    }
}

/// One form of the trace: its bytes plain and with each compressor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The form's name, as the table shows it.
    pub form: &'static str,
    /// Its bytes.
    pub plain: u64,
    /// Its bytes compressed by gzip, zstd and xz, in that order.
    pub compressed: [u64; 3],
}

/// The sizes of a trace's forms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeReport {
    /// The data records (the divisor of bytes per record).
    pub data_records: u64,
    /// All records, built-ins and table elements included.
    pub records: u64,
    /// The levels measured at.
    pub levels: Levels,
    /// The forms, in the table's order.
    pub rows: Vec<Row>,
}

impl SizeReport {
    /// `bytes` per data record.
    pub fn per_record(&self, bytes: u64) -> f64 {
        bytes as f64 / self.data_records.max(1) as f64
    }

    /// The table of `mtf size-report`: a heading naming the trace (`trace`, already escaped
    /// for a terminal) and its records, then bytes per data record of each form, plain and
    /// compressed.
    pub fn write_text(&self, w: &mut dyn Write, trace: &str) -> io::Result<()> {
        writeln!(
            w,
            "{trace}: {} data records ({} records in all); bytes per data record",
            self.data_records, self.records
        )?;
        let [gz, zst, xz] = self.levels.headings();
        writeln!(
            w,
            "{:<32} {:>9} {:>9} {:>9} {:>9}",
            "form", "plain", gz, zst, xz
        )?;
        for row in &self.rows {
            let [g, z, x] = row.compressed.map(|n| self.per_record(n));
            writeln!(
                w,
                "{:<32} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
                row.form,
                self.per_record(row.plain),
                g,
                z,
                x
            )?;
        }
        Ok(())
    }
}

/// Told how far the compressions are: [`Meter::start`] once with the bytes all of them will
/// read, then [`Meter::advance`] from any thread as they read them.
pub trait Meter: Sync {
    /// The compressions are about to read `total` bytes.
    fn start(&self, total: u64) {
        let _ = total;
    }
    /// `bytes` more were read.
    fn advance(&self, bytes: u64) {
        let _ = bytes;
    }
}

/// No report of progress.
impl Meter for () {}

/// Why a size report could not be made.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum SizeReportError {
    /// The trace has a problem (the report needs every record).
    #[error("{0}")]
    #[diagnostic(code(mtf::trace::invalid))]
    Invalid(io::Error),
    /// Re-encoding the trace failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Compact(CompactError),
    /// Finishing a re-encoded trace failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Encode(EncodeError),
    /// The re-encoded trace could not be read back.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Reread(ContainerError),
    /// A compressor failed.
    #[error("compressing: {0}")]
    #[diagnostic(code(mtf::io::compress))]
    Compress(io::Error),
}

/// As `mtf dump --data-only`: what `mtf import` keeps beside the format's records is not part
/// of the forms (it is in the input's bytes, the naive row).
fn is_import_record(r: &RecordType) -> bool {
    r.name.starts_with("import_") && (247..=254).contains(&r.tag)
}

/// A sink that only counts the bytes written to it.
#[derive(Default)]
struct Count(u64);

impl Write for Count {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The compressors measured, in the order of the table's columns.
#[derive(Clone, Copy)]
enum Kind {
    Gzip,
    Zstd,
    Xz,
}

const KINDS: [Kind; 3] = [Kind::Gzip, Kind::Zstd, Kind::Xz];

/// `xz -LEVEL` (LZMA2 preset `level`, CRC64 check) with the dictionary cut to the input's `len`
/// bytes (at least 4 KiB, at most the preset's). With a dictionary at least as long as the input
/// the compressed data is that of `xz -LEVEL` (compared byte for byte with xz 5.4: only the
/// block header, which records the dictionary size, and its CRC differ; the size is the same),
/// and the match finder, whose tables follow the dictionary size, needs less memory for a small
/// form.
fn xz_stream(level: u32, len: u64) -> io::Result<xz2::stream::Stream> {
    let mut opts = xz2::stream::LzmaOptions::new_preset(level)?;
    // The presets' dictionaries (xz(1), "Presets").
    let preset_dict: u64 = match level {
        0 => 256 << 10,
        1 => 1 << 20,
        2 => 2 << 20,
        3 | 4 => 4 << 20,
        5 | 6 => 8 << 20,
        7 => 16 << 20,
        8 => 32 << 20,
        _ => 64 << 20,
    };
    opts.dict_size(len.clamp(4 << 10, preset_dict) as u32);
    let mut filters = xz2::stream::Filters::new();
    filters.lzma2(&opts);
    Ok(xz2::stream::Stream::new_stream_encoder(
        &filters,
        xz2::stream::Check::Crc64,
    )?)
}

/// A form: something that writes the same bytes each time it is called.
type Emit<'a> = dyn FnMut(&mut dyn Write) -> io::Result<()> + 'a;

/// A writer that counts what goes through it on the progress bar.
struct Tick<'p, W> {
    inner: W,
    progress: &'p dyn Meter,
}

impl<W: Write> Write for Tick<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.progress.advance(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A zstd context at `level` with no pledged size, as `zstd::stream::write::Encoder::new`
/// makes. Streams compressed one after the other with one context come out as with a fresh
/// context each, without allocating and clearing its tables (about 80 MB) again for every small
/// stream (a trace of many record types has dozens of split streams).
fn zstd_context(level: i32) -> io::Result<ZstdContext> {
    let mut c = ZstdContext::create();
    c.set_parameter(zstd::zstd_safe::CParameter::CompressionLevel(level))
        .map_err(|code| {
            io::Error::other(format!("zstd: {}", zstd::zstd_safe::get_error_name(code)))
        })?;
    Ok(c)
}

type ZstdContext = zstd::zstd_safe::CCtx<'static>;

/// The size of the stream `emit` writes (`len` bytes) once compressed by `kind`.
fn compressed(
    kind: Kind,
    levels: Levels,
    len: u64,
    zstd: Option<&mut ZstdContext>,
    progress: &dyn Meter,
    emit: &mut Emit<'_>,
) -> io::Result<u64> {
    // Forms are written a few bytes at a time: buffered before they reach the compressor.
    fn feed<W: Write>(e: W, progress: &dyn Meter, emit: &mut Emit<'_>) -> io::Result<W> {
        let mut b = BufWriter::with_capacity(1 << 16, Tick { inner: e, progress });
        emit(&mut b)?;
        Ok(b.into_inner().map_err(|e| e.into_error())?.inner)
    }
    let mut n = Count(0);
    match kind {
        Kind::Gzip => {
            let e = flate2::write::GzEncoder::new(&mut n, flate2::Compression::new(levels.gzip()));
            feed(e, progress, emit)?.finish()?;
        }
        Kind::Zstd => {
            let e = match zstd {
                Some(c) => zstd::stream::write::Encoder::with_context(&mut n, c),
                None => zstd::stream::write::Encoder::new(&mut n, levels.zstd())?,
            };
            feed(e, progress, emit)?.finish()?;
        }
        Kind::Xz => {
            let e = xz2::write::XzEncoder::new_stream(&mut n, xz_stream(levels.xz(), len)?);
            feed(e, progress, emit)?.finish()?;
        }
    }
    Ok(n.0)
}

/// What a compression of the report reads: a form written again for each compressor, bytes
/// held in memory, or streams held in memory, each compressed on its own and the sizes summed.
#[derive(Clone, Copy)]
enum Form<'a> {
    Emit(&'a (dyn Fn(&mut dyn Write) -> io::Result<()> + Sync)),
    Bytes(&'a [u8]),
    Streams(&'a [Vec<u8>]),
}

/// One compression of the report: a form (the table's row) with a compressor (its column).
struct Job<'a> {
    row: usize,
    column: usize,
    kind: Kind,
    levels: Levels,
    /// The bytes it feeds the compressor.
    len: u64,
    form: Form<'a>,
}

impl Job<'_> {
    /// How long it takes, roughly (bytes times the compressor's cost per byte, measured on
    /// text forms): the longest start first.
    fn weight(&self) -> u64 {
        let per_byte = match self.kind {
            Kind::Gzip => 1,
            Kind::Xz => 3,
            Kind::Zstd => 6,
        };
        self.len.saturating_mul(per_byte)
    }

    fn run(&self, progress: &dyn Meter) -> io::Result<u64> {
        match self.form {
            Form::Emit(f) => {
                compressed(self.kind, self.levels, self.len, None, progress, &mut |w| {
                    f(w)
                })
            }
            Form::Bytes(b) => {
                compressed(self.kind, self.levels, self.len, None, progress, &mut |w| {
                    w.write_all(b)
                })
            }
            Form::Streams(streams) => {
                // One zstd context for all the streams of a form (see `zstd_context`).
                let mut zstd = match self.kind {
                    Kind::Zstd => Some(zstd_context(self.levels.zstd())?),
                    _ => None,
                };
                let mut total = 0;
                for s in streams {
                    total += compressed(
                        self.kind,
                        self.levels,
                        s.len() as u64,
                        zstd.as_mut(),
                        progress,
                        &mut |w| w.write_all(s),
                    )?;
                }
                Ok(total)
            }
        }
    }
}

/// The compressed sizes of `jobs`, run on `threads` threads, the heaviest first; in the order
/// of `jobs`.
fn run_jobs(jobs: &[Job<'_>], threads: usize, progress: &dyn Meter) -> io::Result<Vec<u64>> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(jobs[i].weight()));
    let next = AtomicUsize::new(0);
    let results: Vec<Mutex<Option<io::Result<u64>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            scope.spawn(|| {
                while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let r = jobs[i].run(progress);
                    if let Ok(mut slot) = results[i].lock() {
                        *slot = Some(r);
                    }
                }
            });
        }
    });
    results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| Err(io::Error::other("a compression did not finish")))
        })
        .collect()
}

fn is_address(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("addr") || n.contains("ptr")
}

/// Split an encoded trace into streams: record bytes outside fields, then one stream per field
/// chosen by `key` (`None` keeps a field in the main stream).
fn split(reader: &Reader<'_>, key: impl Fn(&str, u32, u16) -> Option<u64>) -> Vec<Vec<u8>> {
    let mut main = Vec::new();
    let mut keys: Vec<u64> = Vec::new();
    let mut streams: Vec<Vec<u8>> = Vec::new();
    let mut records = reader.records();
    while let Some(ev) = records.next() {
        let Event::Record(v) = ev else { continue };
        let bytes = v.bytes();
        if v.record().builtin.is_some_and(|b| b != Builtin::Comment) {
            main.extend_from_slice(bytes);
            continue;
        }
        let mut covered = vec![false; bytes.len()];
        for f in v.fields().skip(1) {
            let Some(k) = key(f.name(), v.record_id(), f.slot()) else {
                continue;
            };
            let data: &[u8] = match f.value() {
                Value::Bytes(b) => b,
                _ => f.stored(),
            };
            if data.is_empty() {
                continue;
            }
            let at = (f.offset() - v.offset()) as usize;
            covered[at..at + data.len()].fill(true);
            let i = match keys.iter().position(|&x| x == k) {
                Some(i) => i,
                None => {
                    keys.push(k);
                    streams.push(Vec::new());
                    streams.len() - 1
                }
            };
            streams[i].extend_from_slice(data);
        }
        main.extend(
            bytes
                .iter()
                .zip(&covered)
                .filter(|(_, c)| !**c)
                .map(|(b, _)| *b),
        );
    }
    streams.insert(0, main);
    streams
}

fn encoded(
    o: &Opened,
    window: usize,
    measure: Measure,
    live: bool,
) -> Result<Vec<u8>, SizeReportError> {
    let h = o.trace().header();
    let mut w = TraceWriter::in_memory(o.schema(), h.class, h.byte_order, &h.dtd_name);
    compact(
        &o.reader(),
        &mut w,
        &CompactOptions {
            window,
            measure,
            live,
            ..CompactOptions::default()
        },
    )
    .map_err(SizeReportError::Compact)?;
    w.finish_to_vec().map_err(SizeReportError::Encode)
}

/// One pass over the records: the data records in the simple binary form (1-byte tag, 4-byte
/// integers, 8 when a value needs it, 4-byte length before byte strings) to `simple`, and in
/// `mtf dump`'s text form to `ascii`, when given. Returns the data records and all records; a
/// problem in the trace is an `InvalidData` error.
fn data_forms(
    reader: &Reader<'_>,
    mut simple: Option<&mut dyn Write>,
    mut ascii: Option<&mut dyn Write>,
) -> io::Result<(u64, u64)> {
    // The logical records, as `mtf dump --data-only` prints them: elements of tables (split
    // streams, string tables) are the values of the fields that refer to them.
    let mut printer = Printer::new(reader, Default::default()).with_logical_values(true);
    let mut data = 0u64;
    let mut all = 0u64;
    let mut records = reader.records();
    while let Some(ev) = records.next() {
        let v = match ev {
            Event::Record(v) => v,
            Event::Problem(p) => {
                return Err(io::Error::new(io::ErrorKind::InvalidData, p.to_string()))
            }
            Event::Damage(d) => {
                return Err(io::Error::new(io::ErrorKind::InvalidData, d.to_string()))
            }
        };
        all += 1;
        if !v.is_data() {
            continue;
        }
        data += 1;
        // As `dump --data-only`: what `mtf import` keeps beside the format's records is not
        // part of the forms (it is in the input's bytes, the naive row).
        if is_import_record(v.record()) {
            continue;
        }
        if let Some(w) = ascii.as_mut() {
            printer.record(w, &v)?;
        }
        let Some(w) = simple.as_mut() else { continue };
        w.write_all(&[v.record().tag as u8])?;
        for f in v.fields().skip(1) {
            match f.logical() {
                Value::Bytes(b) => {
                    w.write_all(&(b.len() as u32).to_le_bytes())?;
                    w.write_all(b)?;
                }
                other => {
                    let n = match other {
                        Value::Ref(r) => r.number(),
                        _ => other.as_u64().unwrap_or(0),
                    };
                    if n >> 32 == 0 {
                        w.write_all(&(n as u32).to_le_bytes())?;
                    } else {
                        w.write_all(&n.to_le_bytes())?;
                    }
                }
            }
        }
    }
    Ok((data, all))
}

/// The forms' names, in the table's order.
const FORMS: [&str; 7] = [
    "simple binary (4-byte fields)",
    "ASCII (mtf dump text form)",
    "naive Meta-TF (the input)",
    "mtf compact (Meta-TF 1.0)",
    "mtf compact --live",
    "split stream (every field)",
    "split address",
];

/// The compressions of `forms` (each with each compressor), as rows and columns of the table.
fn jobs_of<'a>(forms: &[(u64, Form<'a>)], levels: Levels) -> Vec<Job<'a>> {
    let mut jobs = Vec::new();
    for (row, &(plain, form)) in forms.iter().enumerate() {
        let len = match form {
            Form::Emit(_) => plain,
            Form::Bytes(b) => b.len() as u64,
            Form::Streams(s) => streams_len(s),
        };
        for (column, kind) in KINDS.into_iter().enumerate() {
            jobs.push(Job {
                row,
                column,
                kind,
                levels,
                len,
                form,
            });
        }
    }
    jobs
}

fn streams_len(s: &[Vec<u8>]) -> u64 {
    s.iter().map(|x| x.len() as u64).sum()
}

/// Measures the forms of `opened`'s trace plain and compressed; `meter` is told how far the
/// compressions are.
pub fn size_report(
    opened: &Opened,
    options: &SizeReportOptions,
    meter: &dyn Meter,
) -> Result<SizeReport, SizeReportError> {
    let reader = opened.reader();
    // A first pass counts the records and the length of the two forms written from them.
    let (mut simple_len, mut ascii_len) = (Count(0), Count(0));
    let (data, all) = data_forms(&reader, Some(&mut simple_len), Some(&mut ascii_len))
        .map_err(SizeReportError::Invalid)?;
    // `mtf compact` as Meta-TF 1.0, and with live sets (extension live/1): uncompressed as
    // written for plain bytes, compressed as written for compression.
    let window = options.window;
    let plain10 = encoded(opened, window, Measure::Bytes, false)?.len() as u64;
    let best10 = encoded(opened, window, Measure::Compressed, false)?;
    let plain_live = encoded(opened, window, Measure::Bytes, true)?.len() as u64;
    let best = encoded(opened, window, Measure::Compressed, true)?;
    // The compacted copy is read with the schema already loaded: it names the same DTD.
    let reopened =
        crate::container::Trace::from_bytes(best.clone()).map_err(SizeReportError::Reread)?;
    let r2 = Reader::new(&reopened, opened.schema());
    let columns = split(&r2, |_, rid, slot| Some(((rid as u64) << 16) | slot as u64));
    let address = split(&r2, |name, _, _| is_address(name).then_some(1));
    let simple_form = |w: &mut dyn Write| data_forms(&opened.reader(), Some(w), None).map(drop);
    let ascii_form = |w: &mut dyn Write| data_forms(&opened.reader(), None, Some(w)).map(drop);
    let input = opened.trace().bytes();
    let forms: [(u64, Form<'_>); 7] = [
        (simple_len.0, Form::Emit(&simple_form)),
        (ascii_len.0, Form::Emit(&ascii_form)),
        (input.len() as u64, Form::Bytes(input)),
        (plain10, Form::Bytes(&best10)),
        (plain_live, Form::Bytes(&best)),
        (streams_len(&columns), Form::Streams(&columns)),
        (streams_len(&address), Form::Streams(&address)),
    ];
    let jobs = jobs_of(&forms, options.levels);
    let threads = match options.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    meter.start(jobs.iter().map(|j| j.len).sum());
    let sizes = run_jobs(&jobs, threads, meter).map_err(SizeReportError::Compress)?;
    let mut rows: Vec<Row> = FORMS
        .iter()
        .zip(&forms)
        .map(|(form, (plain, _))| Row {
            form,
            plain: *plain,
            compressed: [0; 3],
        })
        .collect();
    for (job, size) in jobs.iter().zip(sizes) {
        rows[job.row].compressed[job.column] = size;
    }
    Ok(SizeReport {
        data_records: data,
        records: all,
        levels: options.levels,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_levels_name_their_commands() {
        assert_eq!(Levels::default(), Levels::Usual);
        assert_eq!(Levels::Usual.headings(), ["gzip -6", "zstd -3", "xz -1"]);
        assert_eq!(Levels::Best.headings(), ["gzip -9", "zstd -19", "xz -9"]);
    }

    /// The input's row is the input compressed whole, at each set of levels, and the meter
    /// hears of every byte the compressions read.
    #[test]
    fn the_input_row_is_the_input_compressed() {
        struct Bytes(std::sync::atomic::AtomicU64, std::sync::atomic::AtomicU64);
        impl Meter for Bytes {
            fn start(&self, total: u64) {
                self.0.store(total, Ordering::Relaxed);
            }
            fn advance(&self, bytes: u64) {
                self.1.fetch_add(bytes, Ordering::Relaxed);
            }
        }
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/hatf-le32.mtf");
        let o = crate::open(path).expect("the sample trace opens");
        let input = std::fs::read(path).expect("the sample trace");
        for levels in [Levels::Usual, Levels::Best] {
            let meter = Bytes(Default::default(), Default::default());
            let options = SizeReportOptions {
                levels,
                jobs: 2,
                ..SizeReportOptions::default()
            };
            let r = size_report(&o, &options, &meter).expect("measured");
            assert_eq!(r.levels, levels);
            let row = &r.rows[2];
            assert_eq!(row.plain, input.len() as u64);
            let mut gz =
                flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(levels.gzip()));
            gz.write_all(&input).expect("gzip");
            let gz = gz.finish().expect("gzip").len() as u64;
            let zst = zstd::encode_all(&input[..], levels.zstd())
                .expect("zstd")
                .len() as u64;
            assert_eq!(row.compressed[..2], [gz, zst]);
            let total = meter.0.load(Ordering::Relaxed);
            assert!(total > 0);
            assert_eq!(meter.1.load(Ordering::Relaxed), total);
        }
    }
}
