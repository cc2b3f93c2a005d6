//! `mtf size-report TRACE`: the columns of the paper's Table 4 measured on one trace, in bytes
//! per data record, plain and with gzip -9, zstd -19 and xz -9 (docs/compression.md says what
//! each form is).

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use metatf::compact::{encode, Measure, Options};
use metatf::decode::{Event, Reader, Value};
use metatf::dtd::Builtin;
use metatf::encode::TraceWriter;
use metatf::io::StdoutSink;
use metatf::text::Printer;

use super::common::{open, render, Failure};
use super::encode::{compress, Compress};
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// Arguments of `mtf size-report`.
#[derive(Debug, Args)]
pub struct SizeReportArgs {
    /// The trace.
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(long)]
    pub dtd: Option<PathBuf>,
    /// Records per look-ahead window of the encoder.
    #[arg(long, default_value_t = 4096)]
    pub window: usize,
}

/// The compressed sizes of a set of streams (each compressed on its own).
fn sizes(streams: &[&[u8]]) -> [u64; 4] {
    let mut out = [0u64; 4];
    for s in streams {
        out[0] += s.len() as u64;
        for (i, (k, l)) in [(Compress::Gzip, 9), (Compress::Zstd, 19), (Compress::Xz, 9)]
            .into_iter()
            .enumerate()
        {
            let mut v = Vec::new();
            compress(k, l, &mut &s[..], &mut v).expect("in memory");
            out[i + 1] += v.len() as u64;
        }
    }
    out
}

fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(|s| &s[..]).collect()
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

fn encoded(o: &metatf::Opened, window: usize, measure: Measure) -> Result<Vec<u8>, Failure> {
    let h = o.trace().header();
    let mut w = TraceWriter::in_memory(o.schema(), h.class, h.byte_order, &h.dtd_name);
    encode(
        &o.reader(),
        &mut w,
        &Options {
            window,
            measure,
            live: true,
            ..Options::default()
        },
    )
    .map_err(|e| Failure::new(EXIT_INVALID_TRACE, render(&e)))?;
    w.finish_to_vec()
        .map_err(|e| Failure::new(EXIT_USAGE, render(&e)))
}

/// The DTD file an opened trace used, to open a re-encoded copy with.
pub fn dtd_path(o: &metatf::Opened, given: Option<&Path>) -> Option<PathBuf> {
    given
        .map(Path::to_path_buf)
        .or_else(|| match o.dtd_source() {
            metatf::DtdSource::Explicit(p)
            | metatf::DtdSource::TraceDir(p)
            | metatf::DtdSource::EnvPath(p) => Some(p.clone()),
            metatf::DtdSource::Shipped(_) => None,
        })
}

/// Run `mtf size-report`.
pub fn run(args: &SizeReportArgs) -> Result<i32, Failure> {
    let o = open(&args.trace, args.dtd.as_deref())?;
    let reader = o.reader();
    // Simple binary (1-byte tag, 4-byte integers, 8 when a value needs it, 4-byte length before
    // byte strings) and the ASCII text form of the data records.
    let mut simple = Vec::new();
    let mut ascii = Vec::new();
    let mut printer = Printer::new(&reader, Default::default());
    let mut data = 0u64;
    let mut all = 0u64;
    let mut records = reader.records();
    while let Some(ev) = records.next() {
        let v = match ev {
            Event::Record(v) => v,
            Event::Problem(p) => return Err(Failure::new(EXIT_INVALID_TRACE, p.to_string())),
            Event::Damage(d) => return Err(Failure::new(EXIT_INVALID_TRACE, d.to_string())),
        };
        all += 1;
        if v.record().builtin.is_some() {
            continue;
        }
        data += 1;
        printer.record(&mut ascii, &v).expect("in memory");
        simple.push(v.record().tag as u8);
        for f in v.fields().skip(1) {
            match f.value() {
                Value::Bytes(b) => {
                    simple.extend_from_slice(&(b.len() as u32).to_le_bytes());
                    simple.extend_from_slice(b);
                }
                other => {
                    let n = match other {
                        Value::Ref(r) => r.number(),
                        _ => other.as_u64().unwrap_or(0),
                    };
                    if n >> 32 == 0 {
                        simple.extend_from_slice(&(n as u32).to_le_bytes());
                    } else {
                        simple.extend_from_slice(&n.to_le_bytes());
                    }
                }
            }
        }
    }
    drop(records);
    let dtd = dtd_path(&o, args.dtd.as_deref());
    let best_plain = encoded(&o, args.window, Measure::Bytes)?;
    let best = encoded(&o, args.window, Measure::Compressed)?;
    let reopened = metatf::open_bytes(best.clone(), dtd.as_deref())
        .map_err(|e| Failure::new(EXIT_USAGE, render(&e)))?;
    let r2 = reopened.reader();
    let columns = split(&r2, |_, rid, slot| Some(((rid as u64) << 16) | slot as u64));
    let address = split(&r2, |name, _, _| is_address(name).then_some(1));
    let mut rows: Vec<(&str, [u64; 4])> = vec![
        ("simple binary (4-byte fields)", sizes(&[&simple])),
        ("ASCII (mtf dump text form)", sizes(&[&ascii])),
        ("naive Meta-TF (the input)", sizes(&[o.trace().bytes()])),
    ];
    let mut b = sizes(&[&best]);
    b[0] = best_plain.len() as u64;
    rows.push(("mtf encode (best)", b));
    rows.push(("split stream (every field)", sizes(&refs(&columns))));
    rows.push(("split address", sizes(&refs(&address))));
    let mut out = StdoutSink::new();
    let d = data.max(1) as f64;
    writeln!(
        out,
        "{}: {data} data records ({all} records in all); bytes per data record",
        args.trace.display()
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
