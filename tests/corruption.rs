//! The corruption suite (issue 20 item 3; docs/robustness.md): every sample trace of `traces/`
//! cut at every length (a stride plus every length near the header, the section table and each
//! region's bounds for the larger ones) and damaged by seeded byte flips, insertions and
//! deletions; the `pack` sources (text and JSON lines) and every import fixture damaged the
//! same way; compressed traces cut short. The library calls behind `check`, `dump` (text and
//! JSON lines), `info` and `stats` must return an error or succeed: never panic, never loop
//! (the events of one input are bounded by its length), and never allocate more than a small
//! bound, measured by the counting allocator below.
//!
//! A binary of its own: a global allocator is per binary, and this one counts per thread, so
//! that the tests of this file can still run in parallel.

#![cfg(all(feature = "import", feature = "compression", feature = "json"))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use metatf::analysis::check::Check;
use metatf::analysis::stats::{compute, Declared, Window};
use metatf::container::{Trace, TraceData};
use metatf::decode::{Event, Reader};
use metatf::dtd::Schema;
use metatf::text::{DumpHeader, Format, InputFormat, Options, Printer};

// ---- the counting allocator ----

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn grew(size: usize, by: isize) {
    // `try_with`: the thread's slots may be gone while it exits.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + by;
        live.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

fn shrank(by: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get() - by as isize));
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters are
// thread-local cells that never allocate.
#[allow(unsafe_code)] // a counting global allocator
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size(), layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size(), layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        shrank(layout.size());
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            grew(new_size, new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The most bytes live at once (above what was live before) while one input is worked on: the
/// inputs are at most a few kB, so a reader that trusts a count or length it read would pass it
/// (the largest seen is about 0.8 MB, for an import; 2.4 MB for the xz decoder's window).
const MAX_PEAK: isize = 4 << 20;
/// The largest single allocation allowed while one input is worked on.
const MAX_ONE: usize = 4 << 20;

/// What `f` allocated on this thread: (peak live bytes above the start, largest allocation).
fn measured<T>(f: impl FnOnce() -> T) -> (T, isize, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    LARGEST.with(|l| l.set(0));
    let t = f();
    let peak = PEAK.with(Cell::get) - base;
    (t, peak, LARGEST.with(Cell::get))
}

// ---- inputs ----

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A small seeded generator (SplitMix64): the same damage on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Bytes that damage in interesting ways: extremes of a width, tags, separators.
const SPECIAL: &[u8] = &[
    0, 1, 2, 3, 0x7f, 0x80, 0xfe, 0xff, b'\n', b' ', b'"', b'=', b'{',
];

/// `n` damaged copies of `bytes`: each gets 1 to 4 flips, insertions or deletions.
fn mutations(bytes: &[u8], n: usize, seed: u64) -> Vec<(String, Vec<u8>)> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            let mut b = bytes.to_vec();
            let mut what = Vec::new();
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(b.len() + 1);
                let byte = if rng.below(3) == 0 {
                    SPECIAL[rng.below(SPECIAL.len())]
                } else {
                    rng.next() as u8
                };
                match rng.below(4) {
                    0 | 1 if at < b.len() => {
                        let bit = 1u8 << rng.below(8);
                        b[at] ^= if rng.below(2) == 0 { bit } else { byte };
                        what.push(format!("flip@{at}"));
                    }
                    2 => {
                        b.insert(at, byte);
                        what.push(format!("insert@{at}"));
                    }
                    _ if at < b.len() => {
                        b.remove(at);
                        what.push(format!("delete@{at}"));
                    }
                    _ => {}
                }
            }
            (format!("mutation {i} ({})", what.join(" ")), b)
        })
        .collect()
}

/// The lengths a trace of `len` bytes is cut at: all of them up to 2 KiB; beyond, every length
/// within 16 bytes of a boundary (`marks`) and of the first 512 bytes, and a stride of 5.
fn cut_lengths(len: usize, marks: &[usize]) -> Vec<usize> {
    if len <= 2048 {
        return (0..len).collect();
    }
    (0..len)
        .filter(|&n| n < 512 || n % 5 == 0 || marks.iter().any(|&m| n.abs_diff(m) <= 16))
        .collect()
}

/// Saves an input that failed, for reproduction, and says where.
fn save(name: &str, what: &str, bytes: &[u8]) -> String {
    let dir = root().join("target").join("corruption-failures");
    let _ = std::fs::create_dir_all(&dir);
    let file = dir.join(format!(
        "{}-{}",
        name.replace('/', "_"),
        what.split(' ').take(2).collect::<Vec<_>>().join("-")
    ));
    let _ = std::fs::write(&file, bytes);
    file.display().to_string()
}

/// The largest peak and the largest allocation seen over every input (shown by each test).
static MOST_LIVE: AtomicUsize = AtomicUsize::new(0);
static MOST_ONE: AtomicUsize = AtomicUsize::new(0);

fn most() -> String {
    format!(
        "at most {} bytes live at once, {} in one allocation (so far, over every test)",
        MOST_LIVE.load(Ordering::Relaxed),
        MOST_ONE.load(Ordering::Relaxed)
    )
}

/// Runs `f` on one input: a panic, or more memory than allowed, fails the test naming the input
/// (saved under target/corruption-failures/).
fn guarded(name: &str, what: &str, bytes: &[u8], f: impl FnOnce() -> Result<(), String>) {
    let (result, peak, one) = measured(|| catch_unwind(AssertUnwindSafe(f)));
    MOST_LIVE.fetch_max(peak.max(0) as usize, Ordering::Relaxed);
    MOST_ONE.fetch_max(one, Ordering::Relaxed);
    match result {
        Ok(Ok(())) => {}
        Ok(Err(why)) => panic!(
            "{name}, {what}: {why}; input at {}",
            save(name, what, bytes)
        ),
        Err(_) => panic!(
            "{name}, {what}: panicked; input at {}",
            save(name, what, bytes)
        ),
    }
    assert!(
        peak <= MAX_PEAK && one <= MAX_ONE,
        "{name}, {what}: {peak} bytes live at once, {one} in one allocation; input at {}",
        save(name, what, bytes)
    );
}

// ---- the library calls of check, dump, info and stats ----

/// The most events one input may give: a record takes at least one byte, and each record
/// gives at most one damage event and a bounded list of problems.
fn event_bound(len: usize) -> u64 {
    4 * len as u64 + 64
}

/// What `mtf check`, `dump` (text and JSON lines), `info` and `stats` do with a trace's bytes
/// and a schema, through the library: the container is salvaged as those commands do.
fn read_all(bytes: &[u8], schema: &Schema) -> Result<(), String> {
    let Ok(trace) = Trace::salvage(TraceData::Borrowed(bytes), None) else {
        return Ok(()); // refused: an error, not a panic
    };
    let reader = Reader::new(&trace, schema);
    let bound = event_bound(bytes.len());
    let h = trace.header();

    // info: the header, records per region, problems.
    let _ = format!("{:?} {:?} {}", h.class, h.byte_order, h.dtd_name);
    let regions = reader.regions().to_vec();
    let mut per_region = vec![0u64; regions.len()];
    let mut events = 0u64;
    let mut records = reader.records();
    while let Some(e) = records.next() {
        events += 1;
        if events > bound {
            return Err(format!("info: more than {bound} events"));
        }
        if let Event::Record(v) = &e {
            if let Some(i) = regions
                .iter()
                .position(|r| (r.start..r.end).contains(&v.offset()))
            {
                per_region[i] += 1;
            }
        }
    }
    let _ = records.dropped_problems();

    // check: decoding problems and the semantic pass, findings described.
    let mut check = Check::new(schema);
    let mut events = 0u64;
    let mut records = reader.records();
    let mut described = 0;
    while let Some(e) = records.next() {
        events += 1;
        if events > bound {
            return Err(format!("check: more than {bound} events"));
        }
        match &e {
            Event::Record(v) => {
                let found = check.record(v).to_vec();
                for f in found.iter().take(4 - described.min(4)) {
                    described += 1;
                    let _ = check.describe(f);
                }
            }
            Event::Problem(p) => {
                let _ = p.to_string();
            }
            Event::Damage(d) => {
                let _ = d.to_string();
            }
        }
    }
    for f in check.finish().to_vec().iter().take(4) {
        let _ = check.describe(f);
    }

    // dump, text and JSON lines, into a sink that counts.
    for format in [Format::Text, Format::Jsonl] {
        let mut printer = Printer::new(
            &reader,
            Options {
                format,
                offsets: true,
                raw: true,
            },
        );
        let mut out = Counted(0);
        let dh = DumpHeader {
            dtd: &h.dtd_name,
            class: h.class,
            order: h.byte_order,
        };
        printer.header(&mut out, &dh).map_err(|e| e.to_string())?;
        let mut events = 0u64;
        let mut records = reader.records();
        while let Some(e) = records.next() {
            events += 1;
            if events > bound {
                return Err(format!("dump: more than {bound} events"));
            }
            if let Event::Record(v) = e {
                printer.record(&mut out, &v).map_err(|e| e.to_string())?;
            }
        }
        // The output of one record is bounded by what the record holds.
        if out.0 > 64 * bytes.len() as u64 + 4096 {
            return Err(format!("dump: {} bytes of output", out.0));
        }
    }

    // stats: every figure, over the whole trace.
    let mut source = Declared::new(schema);
    let stats = compute(&reader, &mut source, Window::all());
    let _ = format!("{:?}", stats.records);
    Ok(())
}

/// A writer that counts and discards.
struct Counted(u64);

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Every trace of `traces/`, with its schema (the DTD its header names, from `dtds/`).
fn sample_traces() -> Vec<(String, Vec<u8>, Schema, Vec<usize>)> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(root().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtf"))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "{names:?}");
    names
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            let trace = Trace::from_slice(&bytes).unwrap();
            let dtd = trace.header().dtd_name.clone();
            let text = std::fs::read_to_string(root().join("dtds").join(&dtd)).unwrap();
            let schema = metatf::dtd::parse_str(&dtd, &text).ok().unwrap().schema;
            // Boundaries: the end of the header and section table, and each region's bounds.
            let mut marks = vec![trace.header().start as usize];
            for (_, r) in trace.sections().regions() {
                marks.push(r.start as usize);
                marks.push(r.end as usize);
            }
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, bytes, schema, marks)
        })
        .collect()
}

#[test]
fn traces_cut_at_every_length() {
    let mut inputs = 0;
    for (name, bytes, schema, marks) in sample_traces() {
        // The whole trace first: it must read without a problem at all.
        read_all(&bytes, &schema).unwrap();
        for n in cut_lengths(bytes.len(), &marks) {
            let cut = &bytes[..n];
            guarded(&name, &format!("cut at {n}"), cut, || {
                read_all(cut, &schema)
            });
            inputs += 1;
        }
    }
    eprintln!("{inputs} cut traces read; {}", most());
    assert!(inputs > 10_000, "{inputs}");
}

#[test]
fn traces_with_flips_insertions_and_deletions() {
    let mut inputs = 0;
    for (i, (name, bytes, schema, _)) in sample_traces().into_iter().enumerate() {
        for (what, m) in mutations(&bytes, 300, 0x5eed_0000 + i as u64) {
            guarded(&name, &what, &m, || read_all(&m, &schema));
            inputs += 1;
        }
    }
    eprintln!("{inputs} damaged traces read; {}", most());
}

/// The way in that `mtf` itself takes (`OpenOptions`: header, DTD lookup by the header's name,
/// salvage), on a sample of the damaged traces: the DTD is parsed again for each, so fewer.
#[test]
fn damaged_traces_through_open_options() {
    for (i, (name, bytes, _, _)) in sample_traces().into_iter().enumerate() {
        let mut inputs: Vec<(String, Vec<u8>)> = mutations(&bytes, 24, 0x0fe0_0000 + i as u64);
        for n in (0..bytes.len()).step_by(97) {
            inputs.push((format!("cut at {n}"), bytes[..n].to_vec()));
        }
        for (what, m) in inputs {
            guarded(&name, &what, &m, || {
                for salvage in [false, true] {
                    match metatf::OpenOptions::new()
                        .salvage(salvage)
                        .open_bytes(m.clone())
                    {
                        Ok(o) => read_all(o.trace().bytes(), o.schema())?,
                        Err(e) => {
                            let _ = e.to_string();
                        }
                    }
                }
                Ok(())
            });
        }
    }
}

// ---- pack input ----

/// The text and JSON-lines forms of the traces that have sources (`traces/src/`).
fn pack_sources() -> Vec<(String, Vec<u8>, Schema, InputFormat)> {
    let mut out = Vec::new();
    for name in ["hatf-le32", "hatf-be64", "hatf-split-le64"] {
        let text = std::fs::read(root().join(format!("traces/src/{name}.txt"))).unwrap();
        let bytes = std::fs::read(root().join(format!("traces/{name}.mtf"))).unwrap();
        let trace = Trace::from_slice(&bytes).unwrap();
        let dtd = trace.header().dtd_name.clone();
        let dtd_text = std::fs::read_to_string(root().join("dtds").join(&dtd)).unwrap();
        let schema = metatf::dtd::parse_str(&dtd, &dtd_text).ok().unwrap().schema;
        // The JSON lines `dump --format jsonl` writes for the trace.
        let reader = Reader::new(&trace, &schema);
        let mut printer = Printer::new(
            &reader,
            Options {
                format: Format::Jsonl,
                ..Options::default()
            },
        );
        let mut jsonl = Vec::new();
        let h = trace.header();
        printer
            .header(
                &mut jsonl,
                &DumpHeader {
                    dtd: &h.dtd_name,
                    class: h.class,
                    order: h.byte_order,
                },
            )
            .unwrap();
        let mut records = reader.records();
        while let Some(e) = records.next() {
            if let Event::Record(v) = e {
                printer.record(&mut jsonl, &v).unwrap();
            }
        }
        out.push((
            format!("{name}.txt"),
            text,
            schema.clone(),
            InputFormat::Text,
        ));
        out.push((format!("{name}.jsonl"), jsonl, schema, InputFormat::Jsonl));
    }
    out
}

#[test]
fn pack_input_cut_and_damaged() {
    let mut inputs = 0;
    for (i, (name, text, schema, format)) in pack_sources().into_iter().enumerate() {
        // The undamaged source packs.
        metatf::pack::pack_to_vec(&schema, &text[..], format).unwrap();
        let mut all: Vec<(String, Vec<u8>)> = (0..text.len())
            .step_by(3)
            .map(|n| (format!("cut at {n}"), text[..n].to_vec()))
            .collect();
        all.extend(mutations(&text, 300, 0xbac0_0000 + i as u64));
        for (what, m) in all {
            guarded(&name, &what, &m, || {
                // A trace that packs must read back without panicking either.
                if let Ok(trace) = metatf::pack::pack_to_vec(&schema, &m[..], format) {
                    read_all(&trace, &schema)?;
                }
                Ok(())
            });
            inputs += 1;
        }
    }
    eprintln!("{inputs} damaged pack inputs; {}", most());
}

// ---- importers ----

/// Each import fixture with the shipped format (or the user mapping) that reads it.
const IMPORTS: &[(&str, &str)] = &[
    ("alloc/android-odd.txt", "android"),
    ("alloc/android-systemui.txt", "android"),
    ("alloc/valgrind-odd.vg", "valgrind"),
    ("alloc/mtrace-odd.mtrace", "mtrace"),
    ("alloc/malloclab-2002.rep", "malloclab"),
    ("alloc/malloclab-3e.rep", "malloclab"),
    ("alloc/heaptrack-v2.txt", "heaptrack"),
    ("alloc/heaptrack-sort.gz", "heaptrack_raw"),
    ("et_merlin/odd.txt", "et_merlin"),
    ("et_merlin/crlf.txt", "et_merlin"),
    ("et3/trace", "et3"),
    ("jvm/trace.txt", "jvm_trace"),
    ("jvm/run.zip", "jvm_trace"),
    ("tptp/trace.xml", "tptp"),
    ("tptp/two.trcxml", "tptp"),
    ("user/run.log", "user/allocs.map"),
];

/// Imports `path` with `m` into a trace in memory; the trace, if any, is then read.
fn import_one(
    m: &metatf::import::Mapping,
    schema: &Schema,
    path: &Path,
    keep: bool,
) -> Result<(), String> {
    use metatf::import::{order_inputs, ImportInput, Importer};
    let Ok(input) = ImportInput::open(path) else {
        return Ok(());
    };
    let Ok((inputs, container)) = order_inputs(m, vec![input]) else {
        return Ok(());
    };
    let writer = metatf::encode::TraceWriter::in_memory(
        schema,
        metatf::container::Class::Bits64,
        metatf::container::ByteOrder::Little,
        &m.dtd,
    );
    let Ok(mut imp) = Importer::new(m, writer, schema, container, 1) else {
        return Ok(());
    };
    imp.keep_unmatched(keep);
    for input in inputs {
        if let Err(e) = imp.import_input(input) {
            let _ = e.to_string();
            return Ok(());
        }
    }
    let Ok((writer, _)) = imp.finish() else {
        return Ok(());
    };
    if let Ok(trace) = writer.finish_to_vec() {
        read_all(&trace, schema)?;
    }
    Ok(())
}

#[test]
fn import_inputs_damaged() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = 0;
    for (i, (rel, format)) in IMPORTS.iter().enumerate() {
        let path = root().join("tests/data/import").join(rel);
        let m = if format.ends_with(".map") {
            metatf::import::Mapping::load(&root().join("tests/data/import").join(format)).unwrap()
        } else {
            metatf::import::shipped::by_name(format).unwrap()
        };
        let map_file = format
            .ends_with(".map")
            .then(|| root().join("tests/data/import").join(format));
        let schema = m.load_dtd(map_file.as_deref(), None).unwrap().schema;
        let bytes = std::fs::read(&path).unwrap();
        // The fixture itself imports.
        import_one(&m, &schema, &path, true).unwrap();
        let mut all: Vec<(String, Vec<u8>)> = (0..bytes.len())
            .step_by(1 + bytes.len() / 40)
            .map(|n| (format!("cut at {n}"), bytes[..n].to_vec()))
            .collect();
        all.extend(mutations(&bytes, 60, 0x1390_0000 + i as u64));
        // The file keeps the fixture's name: some formats choose a part by it.
        let sub = dir.path().join(i.to_string());
        std::fs::create_dir_all(&sub).unwrap();
        let file = sub.join(path.file_name().unwrap());
        for (what, m_bytes) in all {
            std::fs::write(&file, &m_bytes).unwrap();
            guarded(rel, &what, &m_bytes, || {
                import_one(&m, &schema, &file, true)?;
                import_one(&m, &schema, &file, false)
            });
            inputs += 1;
        }
    }
    eprintln!("{inputs} damaged import inputs; {}", most());
}

// ---- compressed inputs cut short ----

#[test]
fn compressed_traces_cut_short() {
    let path = root().join("traces/hatf-le32.mtf");
    let plain = std::fs::read(&path).unwrap();
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&plain).unwrap();
        e.finish().unwrap()
    };
    let zst = zstd::encode_all(&plain[..], 3).unwrap();
    let xz = {
        let mut e = xz2::write::XzEncoder::new(Vec::new(), 6);
        e.write_all(&plain).unwrap();
        e.finish().unwrap()
    };
    let bz2 = {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
        e.write_all(&plain).unwrap();
        e.finish().unwrap()
    };
    let dtd = root().join("dtds/hatf10.dtd");
    let mut inputs = 0;
    for (name, bytes) in [("gz", gz), ("zst", zst), ("xz", xz), ("bz2", bz2)] {
        // The whole stream decompresses to the trace.
        let o = metatf::OpenOptions::new()
            .dtd(&dtd)
            .open_bytes(bytes.clone())
            .unwrap();
        assert_eq!(o.trace().bytes(), &plain[..], "{name}");
        for n in 0..bytes.len() {
            let cut = bytes[..n].to_vec();
            guarded(name, &format!("cut at {n}"), &cut, || {
                for salvage in [false, true] {
                    let r = metatf::OpenOptions::new()
                        .dtd(&dtd)
                        .salvage(salvage)
                        .open_bytes(cut.clone());
                    match r {
                        Ok(o) => read_all(o.trace().bytes(), o.schema())?,
                        Err(e) => {
                            let _ = e.to_string();
                        }
                    }
                }
                Ok(())
            });
            inputs += 1;
        }
    }
    eprintln!("{inputs} cut compressed traces; {}", most());
}
