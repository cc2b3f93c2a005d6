//! `mtf size-report TRACE`: the columns of the paper's Table 4 measured on one trace, in bytes
//! per data record, plain and with gzip -9, zstd -19 and xz -9 (docs/compression.md says what
//! each form is).

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use clap::Args;

use metatf::compact::{compact, CompactOptions, Measure};
use metatf::decode::{Event, Reader, Value};
use metatf::dtd::Builtin;
use metatf::encode::TraceWriter;
use metatf::io::StdoutSink;
use metatf::text::Printer;

use super::common::{error, open, quiet, render, Failure};
use super::progress::Progress;
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// Arguments of `mtf size-report`.
#[derive(Debug, Args)]
pub struct SizeReportArgs {
    /// The trace.
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Records per look-ahead window of the encoder.
    #[arg(long, default_value_t = 4096)]
    pub window: usize,
    /// Compressions run at once (each form with each compressor is one); 0: one per core.
    #[arg(short = 'j', long = "jobs", value_name = "N", default_value_t = 0)]
    pub jobs: usize,
}

// Design: the simple binary and text forms are never held in memory. A first pass over the
// records counts their lengths; then each form is written again into each compressor (gzip -9,
// zstd -19, xz -9), which writes into a sink that only counts bytes. Writing a form again costs
// far less than compressing it: nearly all the time goes to the compressors (zstd -19 and xz -9
// take 10–50 s alone on the 50 MB text form of a 6 MB trace), so the 21 compressions (7 forms,
// 3 compressors) run on a pool of threads, one per core, the largest first; the report then
// takes about as long as its largest compression rather than the sum of them all. Each
// compressor keeps the exact settings of its command (the sizes do not change with the number
// of threads). Memory: at most one compressor's state per thread, xz's dictionary no larger
// than its form (see `xz9`). The encoded traces and the split streams, smaller than the input,
// are built in memory first.

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

/// xz -9 (LZMA2 preset 9, CRC64 check) with the dictionary cut to the input's `len` bytes
/// (at least 4 KiB, at most preset 9's 64 MiB). With a dictionary at least as long as the input
/// the compressed data is that of `xz -9` (compared byte for byte with xz 5.4: only the block
/// header, which records the dictionary size, and its CRC differ; the size is the same), and the
/// match finder, whose tables follow the dictionary size, needs less memory for a small form.
fn xz9(len: u64) -> io::Result<xz2::stream::Stream> {
    let mut opts = xz2::stream::LzmaOptions::new_preset(9)?;
    opts.dict_size(len.clamp(4 << 10, 64 << 20) as u32);
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
    progress: &'p Progress,
}

impl<W: Write> Write for Tick<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.progress.inc_bytes(n as u64);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A zstd context at level 19 with no pledged size, as `zstd::stream::write::Encoder::new`
/// makes. Streams compressed one after the other with one context come out as with a fresh
/// context each, without allocating and clearing its tables (about 80 MB) again for every small
/// stream (a trace of many record types has dozens of split streams).
fn zstd19() -> io::Result<ZstdContext> {
    let mut c = ZstdContext::create();
    c.set_parameter(zstd::zstd_safe::CParameter::CompressionLevel(19))
        .map_err(|code| {
            io::Error::other(format!("zstd: {}", zstd::zstd_safe::get_error_name(code)))
        })?;
    Ok(c)
}

type ZstdContext = zstd::zstd_safe::CCtx<'static>;

/// The size of the stream `emit` writes (`len` bytes) once compressed by `kind`.
fn compressed(
    kind: Kind,
    len: u64,
    zstd: Option<&mut ZstdContext>,
    progress: &Progress,
    emit: &mut Emit<'_>,
) -> io::Result<u64> {
    // Forms are written a few bytes at a time: buffered before they reach the compressor.
    fn feed<W: Write>(e: W, progress: &Progress, emit: &mut Emit<'_>) -> io::Result<W> {
        let mut b = BufWriter::with_capacity(1 << 16, Tick { inner: e, progress });
        emit(&mut b)?;
        Ok(b.into_inner().map_err(|e| e.into_error())?.inner)
    }
    let mut n = Count(0);
    match kind {
        Kind::Gzip => {
            let e = flate2::write::GzEncoder::new(&mut n, flate2::Compression::new(9));
            feed(e, progress, emit)?.finish()?;
        }
        Kind::Zstd => {
            let e = match zstd {
                Some(c) => zstd::stream::write::Encoder::with_context(&mut n, c),
                None => zstd::stream::write::Encoder::new(&mut n, 19)?,
            };
            feed(e, progress, emit)?.finish()?;
        }
        Kind::Xz => {
            let e = xz2::write::XzEncoder::new_stream(&mut n, xz9(len)?);
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

    fn run(&self, progress: &Progress) -> io::Result<u64> {
        match self.form {
            Form::Emit(f) => compressed(self.kind, self.len, None, progress, &mut |w| f(w)),
            Form::Bytes(b) => {
                compressed(self.kind, self.len, None, progress, &mut |w| w.write_all(b))
            }
            Form::Streams(streams) => {
                // One zstd context for all the streams of a form (see `zstd19`).
                let mut zstd = match self.kind {
                    Kind::Zstd => Some(zstd19()?),
                    _ => None,
                };
                let mut total = 0;
                for s in streams {
                    total += compressed(
                        self.kind,
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
fn run_jobs(jobs: &[Job<'_>], threads: usize, progress: &Progress) -> io::Result<Vec<u64>> {
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
    o: &metatf::Opened,
    window: usize,
    measure: Measure,
    live: bool,
) -> Result<Vec<u8>, Failure> {
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
    .map_err(|e| Failure::new(EXIT_INVALID_TRACE, render(&e)))?;
    w.finish_to_vec()
        .map_err(|e| Failure::new(EXIT_USAGE, render(&e)))
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
        if super::common::is_import_record(v.record()) {
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

/// Run `mtf size-report`.
pub fn run(args: &SizeReportArgs) -> Result<i32, Failure> {
    let o = open(&args.trace, args.dtd.as_deref())?;
    let reader = o.reader();
    // A first pass counts the records and the length of the two forms written from them.
    let (mut simple_len, mut ascii_len) = (Count(0), Count(0));
    let (data, all) =
        data_forms(&reader, Some(&mut simple_len), Some(&mut ascii_len)).map_err(|e| {
            let path = super::common::input_name(&args.trace);
            error(
                EXIT_INVALID_TRACE,
                "mtf::trace::invalid",
                format!("{path}: {e}"),
            )
        })?;
    // `mtf compact` as Meta-TF 1.0, and with live sets (extension live/1): uncompressed as
    // written for plain bytes, compressed as written for compression.
    let plain10 = encoded(&o, args.window, Measure::Bytes, false)?.len() as u64;
    let best10 = encoded(&o, args.window, Measure::Compressed, false)?;
    let plain_live = encoded(&o, args.window, Measure::Bytes, true)?.len() as u64;
    let best = encoded(&o, args.window, Measure::Compressed, true)?;
    // The compacted copy is read with the schema already loaded: it names the same DTD.
    let reopened = metatf::container::Trace::from_bytes(best.clone())
        .map_err(|e| Failure::new(EXIT_INVALID_TRACE, render(&e)))?;
    let r2 = metatf::decode::Reader::new(&reopened, o.schema());
    let columns = split(&r2, |_, rid, slot| Some(((rid as u64) << 16) | slot as u64));
    let address = split(&r2, |name, _, _| is_address(name).then_some(1));
    let streams_len = |s: &[Vec<u8>]| s.iter().map(|x| x.len() as u64).sum::<u64>();
    let simple_form = |w: &mut dyn Write| data_forms(&o.reader(), Some(w), None).map(drop);
    let ascii_form = |w: &mut dyn Write| data_forms(&o.reader(), None, Some(w)).map(drop);
    let input = o.trace().bytes();
    let forms: [(&str, u64, Form<'_>); 7] = [
        (
            "simple binary (4-byte fields)",
            simple_len.0,
            Form::Emit(&simple_form),
        ),
        (
            "ASCII (mtf dump text form)",
            ascii_len.0,
            Form::Emit(&ascii_form),
        ),
        (
            "naive Meta-TF (the input)",
            input.len() as u64,
            Form::Bytes(input),
        ),
        ("mtf compact (Meta-TF 1.0)", plain10, Form::Bytes(&best10)),
        ("mtf compact --live", plain_live, Form::Bytes(&best)),
        (
            "split stream (every field)",
            streams_len(&columns),
            Form::Streams(&columns),
        ),
        (
            "split address",
            streams_len(&address),
            Form::Streams(&address),
        ),
    ];
    let mut jobs = Vec::new();
    for (row, (_, _, form)) in forms.iter().enumerate() {
        let len = match form {
            Form::Emit(_) => forms[row].1,
            Form::Bytes(b) => b.len() as u64,
            Form::Streams(s) => streams_len(s),
        };
        for (column, kind) in KINDS.into_iter().enumerate() {
            jobs.push(Job {
                row,
                column: column + 1,
                kind,
                len,
                form: *form,
            });
        }
    }
    let threads = match args.jobs {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let total: u64 = jobs.iter().map(|j| j.len).sum();
    let progress = Progress::new(total, "compressing", quiet());
    let sizes = run_jobs(&jobs, threads, &progress)
        .map_err(|e| error(EXIT_USAGE, "mtf::io::compress", format!("compressing: {e}")))?;
    progress.finish();
    let mut rows: Vec<(&str, [u64; 4])> = forms
        .iter()
        .map(|(n, plain, _)| (*n, [*plain, 0, 0, 0]))
        .collect();
    for (job, size) in jobs.iter().zip(sizes) {
        rows[job.row].1[job.column] = size;
    }
    let mut out = StdoutSink::new();
    let d = data.max(1) as f64;
    writeln!(
        out,
        "{}: {data} data records ({all} records in all); bytes per data record",
        super::common::input_name(&args.trace)
    )?;
    writeln!(
        out,
        "{:<32} {:>9} {:>9} {:>9} {:>9}",
        "form", "plain", "gzip -9", "zstd -19", "xz -9"
    )?;
    for (name, s) in &rows {
        writeln!(
            out,
            "{name:<32} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            s[0] as f64 / d,
            s[1] as f64 / d,
            s[2] as f64 / d,
            s[3] as f64 / d
        )?;
    }
    // Flushing is where a full disk or a closed pipe shows up.
    out.finish()?;
    Ok(EXIT_OK)
}
