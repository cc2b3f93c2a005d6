//! Validating only (`Records::scan`) reports exactly what the full decoder reports: the same
//! problems and damage (messages, record indices, byte offsets), the same record counts per
//! type, the same dropped problems, and at every record boundary the same checkpoint — on
//! every shipped trace, on random traces, and on traces cut at every length and with flipped
//! bytes. A seek index built while scanning is the one built by a full decode, byte for byte.

use std::collections::BTreeMap;

use metatf::container::{ByteOrder, Class, Trace};
use metatf::decode::{Event, Reader, Records, ScanStop};
use metatf::dtd::{Interp, Schema};
use metatf::encode::{In, TraceWriter};
use metatf::index::{BuildOptions, Builder};
use metatf::MetaProperty;
use proptest::prelude::*;

use crate::util::{root, Rng};

/// What a validating caller can see of a decode: the problems and damage in order (each with
/// the number of records before it), the records per type, the record count, the problems
/// dropped, and the stored checkpoint at every record boundary whose record count `take`
/// selects.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    problems: Vec<String>,
    per_type: Vec<u64>,
    count: u64,
    dropped: u64,
    exact: bool,
    checkpoints: BTreeMap<u64, Vec<u8>>,
}

fn note(records: &Records<'_>, schema: &Schema, take: &dyn Fn(u64) -> bool, seen: &mut Seen) {
    let c = records.count();
    if records.at_record_boundary() && take(c) && !seen.checkpoints.contains_key(&c) {
        let mut b = Vec::new();
        records.checkpoint().to_bytes(schema, &mut b);
        seen.checkpoints.insert(c, b);
    }
}

fn event(e: Event<'_>, seen: &mut Seen) {
    match e {
        Event::Record(v) => seen.per_type[v.record_id() as usize] += 1,
        Event::Problem(p) => seen.problems.push(format!("{p} | {p:?}")),
        Event::Damage(d) => seen.problems.push(format!("{d} | {d:?}")),
    }
}

fn empty(reader: &Reader<'_>) -> Seen {
    Seen {
        problems: Vec::new(),
        per_type: vec![0; reader.schema().records.len()],
        count: 0,
        dropped: 0,
        exact: true,
        checkpoints: BTreeMap::new(),
    }
}

/// The full decoder, values kept, an event per record.
fn full(reader: &Reader<'_>, take: &dyn Fn(u64) -> bool) -> Seen {
    let mut seen = empty(reader);
    let mut records = reader.records();
    loop {
        note(&records, reader.schema(), take, &mut seen);
        let Some(e) = records.next() else { break };
        event(e, &mut seen);
    }
    seen.count = records.count();
    seen.dropped = records.dropped_problems();
    seen.exact = records.is_exact();
    seen
}

/// Validating only: `scan`, stopped at the record counts `take` selects (and wherever else
/// `stop_every` records fall), then `next`.
fn scanned(reader: &Reader<'_>, take: &dyn Fn(u64) -> bool, stop_every: u64) -> Seen {
    let mut seen = empty(reader);
    let mut records = reader.records();
    records.skip_values(true);
    let mut scanned = 0u64;
    loop {
        note(&records, reader.schema(), take, &mut seen);
        // Stop at the next selected count, so that the checkpoint there is the scan's.
        let mut next_taken = records.count() + 1;
        while next_taken < records.count() + stop_every && !take(next_taken) {
            next_taken += 1;
        }
        let stop = ScanStop {
            records: next_taken,
            offset: u64::MAX,
        };
        let mut per_type = std::mem::take(&mut seen.per_type);
        let n = records.scan(&mut per_type, stop);
        seen.per_type = per_type;
        scanned += n;
        if n > 0 {
            note(&records, reader.schema(), take, &mut seen);
            assert!(records.count() <= next_taken);
        }
        let Some(e) = records.next() else { break };
        event(e, &mut seen);
    }
    // Nothing is scanned once the decode has ended.
    assert_eq!(
        records.scan(&mut vec![0; seen.per_type.len()], ScanStop::NONE),
        0
    );
    seen.count = records.count();
    seen.dropped = records.dropped_problems();
    seen.exact = records.is_exact();
    assert!(scanned <= seen.count);
    seen
}

/// Compare both ways; returns how many records the scan stepped over (to show the test is not
/// vacuous).
fn same(reader: &Reader<'_>, what: &str) -> u64 {
    let every = |c: u64| c % 7 == 3 || c < 5;
    let want = full(reader, &every);
    for stop_every in [1, 5, u64::MAX / 2] {
        let got = scanned(reader, &every, stop_every);
        assert_eq!(got, want, "{what}: stopping every {stop_every}");
    }
    let all = |_| true;
    assert_eq!(
        scanned(reader, &all, u64::MAX / 2),
        full(reader, &all),
        "{what}"
    );
    // How much the scan took over.
    let mut records = reader.records();
    let mut per_type = vec![0; reader.schema().records.len()];
    let mut n = 0;
    loop {
        n += records.scan(&mut per_type, ScanStop::NONE);
        if records.next().is_none() {
            break;
        }
    }
    n
}

fn shipped() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(root().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtf"))
        .collect();
    v.sort();
    assert!(v.len() >= 10, "{v:?}");
    v
}

#[test]
fn every_shipped_trace_scans_as_it_decodes() {
    let mut scanned = 0;
    for path in shipped() {
        let opened = metatf::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        scanned += same(&opened.reader(), &path.display().to_string());
    }
    assert!(scanned > 50, "{scanned} records scanned");
}

/// Every shipped trace cut at many lengths, and with bytes flipped after its header.
#[test]
fn damaged_traces_scan_as_they_decode() {
    let mut r = Rng(0xc4ec);
    let mut cases = 0;
    for path in shipped() {
        let bytes = std::fs::read(&path).unwrap();
        let opened = metatf::open(&path).unwrap();
        let schema = opened.schema();
        let len = bytes.len();
        let mut variants: Vec<Vec<u8>> = Vec::new();
        // Cuts: the last 40 lengths, and 40 more spread over the file.
        for cut in (len.saturating_sub(40)..len).chain((0..40).map(|i| len * i / 40)) {
            variants.push(bytes[..cut].to_vec());
        }
        for _ in 0..40 {
            let mut b = bytes.clone();
            for _ in 0..1 + r.below(3) {
                let at = 64.min(len - 1) + r.below((len as u64).saturating_sub(64).max(1)) as usize;
                if at < len {
                    b[at] ^= 1 << r.below(8);
                }
            }
            variants.push(b);
        }
        for b in variants {
            let Ok(trace) = Trace::from_bytes(b) else {
                continue;
            };
            let reader = Reader::new(&trace, schema);
            same(&reader, &path.display().to_string());
            cases += 1;
        }
    }
    assert!(cases > 300, "{cases} damaged traces");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn random_traces_scan_as_they_decode(seed in any::<u64>()) {
        let mut r = Rng(seed);
        let dtd = crate::roundtrip_prop::random_dtd(&mut r);
        let schema = metatf::dtd::parse_str("random.dtd", &dtd).unwrap().schema;
        let bytes = crate::roundtrip_prop::random_trace(&mut r, &schema);
        for cut in [bytes.len(), bytes.len() - 1, bytes.len() - 2, bytes.len() * 3 / 4] {
            let Ok(trace) = Trace::from_bytes(bytes[..cut].to_vec()) else {
                continue;
            };
            same(&Reader::new(&trace, &schema), "random");
        }
    }
}

/// The index the builder takes while scanning (`index::build` without times) is byte for byte
/// the one it takes from a full decode, whatever the spacing.
#[test]
fn an_index_built_while_scanning_is_the_full_decodes() {
    let mut compared = 0;
    let mut traces: Vec<(String, Schema, Vec<u8>)> = Vec::new();
    for path in shipped() {
        let opened = metatf::open(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        traces.push((path.display().to_string(), opened.schema().clone(), bytes));
    }
    for seed in 0..2 {
        let (schema, bytes) = fixed_trace(seed, seed == 1);
        traces.push(("generated".into(), schema, bytes));
        let (schema, bytes) = fixed_trace_for(&timed_dtd(), seed, seed == 1);
        traces.push(("generated, with times".into(), schema, bytes));
        let (schema, bytes) = fixed_trace_for(&delta_timed_dtd(), seed, seed == 0);
        traces.push(("generated, with one time field".into(), schema, bytes));
    }
    let mut scanning = 0;
    let mut timed = 0;
    for (path, schema, bytes) in &traces {
        let trace = Trace::from_bytes(bytes.clone()).unwrap();
        let reader = Reader::new(&trace, schema);
        let times = Builder::new(&reader, BuildOptions::default()).needs_values();
        scanning += !times as usize;
        if times {
            // The builder's scan steps over records of a DTD with times too.
            let mut b = Builder::new(&reader, BuildOptions::default());
            let mut records = reader.records();
            let mut per_type = vec![0; schema.records.len()];
            loop {
                b.before_next(&records);
                let n = b.scan(&mut records, &mut per_type, ScanStop::NONE);
                b.scanned(&records, n);
                timed += n;
                b.before_next(&records);
                let Some(e) = records.next() else { break };
                if let Event::Record(v) = e {
                    b.record(&v);
                }
            }
        }
        for (every_records, every_bytes) in [(1, 1 << 20), (3, 1 << 20), (50, 64), (1 << 16, 1)] {
            let options = BuildOptions {
                every_records,
                every_bytes,
            };
            let mut b = Builder::new(&reader, options);
            let mut records = reader.records();
            loop {
                b.before_next(&records);
                let Some(e) = records.next() else { break };
                if let Event::Record(v) = e {
                    b.record(&v);
                }
            }
            let want = b.finish("x").to_bytes();
            let got = metatf::index::build(&reader, &options);
            assert_eq!(got.to_bytes(), want, "{path}");
            compared += got.entries().len();
        }
    }
    assert!(compared > 100, "{compared} checkpoints");
    assert!(scanning >= 2, "{scanning} traces indexed while scanning");
    assert!(timed > 1000, "{timed} records with times scanned");
}

const DTD: &str = "
    tag.width = 1;
    x.width = 2;   x.interpretation = none;
    d.width = 1;   d.interpretation = delta 100;
    s.width = 2;   s.interpretation = none;  s.display = signed;
    k.interpretation = default 9;
    m.width = 1;   m.interpretation = none;
    label : (len, data) {
        len.width = 1;  len.interpretation = none;
        data.width = len.value;  data.interpretation = none;
    }
    flat : (tag, x, d, s, k) { tag.value = 4; }
    pair : (tag, d, x) { tag.value = 6; }
    text : (tag, vfield) { tag.value = 5; }
    // Byte strings whose lengths a field holds, and one of a constant length, between integers.
    lab : (tag, x, note : label, d, two : (m, b : label), c) {
        tag.value = 7;
        c.width = 3;  c.interpretation = none;
    }
    section data 1 {
        other : (tag, d, x) { tag.value = 8; }
    }
";

/// [`DTD`] with times (docs/format.md §14.4): a record's time is `d` (µs) plus `x` (ns), so
/// that a scan that reads times (for a seek index) has delta, plain and scaled fields to read.
fn timed_dtd() -> String {
    format!("{DTD}\nanalysis.version = 1;\nd.time = us;\nx.time = ns;\n")
}

/// [`DTD`] with one time field, `d` (ms): a record's time is the state a `delta` or `stride`
/// leaves where metadata makes `d` one (read by a scan from the plan's clock without a branch),
/// else the field as the plan reads it; `text` has no time.
fn delta_timed_dtd() -> String {
    format!("{DTD}\nanalysis.version = 1;\nd.time = ms;\n")
}

/// A trace of mostly fixed records, with every arithmetic interpretation switched on and off
/// by metadata, widths changed, variable records between them, in the global region and a
/// section.
fn fixed_trace(seed: u64, big: bool) -> (Schema, Vec<u8>) {
    fixed_trace_for(DTD, seed, big)
}

/// [`fixed_trace`] for the DTD `dtd` ([`DTD`] or [`timed_dtd`]).
fn fixed_trace_for(dtd: &str, seed: u64, big: bool) -> (Schema, Vec<u8>) {
    let schema = metatf::dtd::parse_str("scan.dtd", dtd).unwrap().schema;
    let order = if big {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    let mut w = TraceWriter::in_memory(&schema, Class::Bits64, order, "scan.dtd");
    let mut r = Rng(seed);
    for part in 0..2 {
        if part == 1 {
            w.section(1).unwrap();
        }
        let f = w.lookup("flat").unwrap();
        let t = w.lookup("text").unwrap();
        let lab = w.lookup("lab").unwrap();
        let p = Some(w.lookup(if part == 0 { "pair" } else { "other" }).unwrap());
        for i in 0..400u64 {
            let (x, s) = (r.below(200), r.below(100) as i64 - 50);
            // Values the current state can store; others are left out of the trace.
            let _ = w.record(f, &[In::Int(x), In::Int(100 + i), In::Neg(s), In::Auto]);
            if let Some(p) = p {
                let _ = w.record(p, &[In::Int(100 + 2 * i), In::Int(x)]);
            }
            if r.chance(10) {
                w.record(t, &[In::Int(2), In::Bytes(b"hi".to_vec())])
                    .unwrap();
            }
            if r.chance(3) {
                let n = r.below(5);
                let note: Vec<u8> = (0..n).map(|k| b'a' + k as u8).collect();
                let _ = w.record(
                    lab,
                    &[
                        In::Int(x),
                        In::Int(n),
                        In::Bytes(note),
                        In::Int(50 + i),
                        In::Int(1),
                        In::Int(1),
                        In::Bytes(b"z".to_vec()),
                        In::Int(r.below(1 << 20)),
                    ],
                );
            }
            if r.chance(8) {
                // The width or interpretation of a label's length, of `x` or `d`, of `c`.
                let slot = [1, 2, 4, 8][r.below(4) as usize];
                let prop = match r.below(4) {
                    0 => MetaProperty::Width(1 + r.below(2) as u8),
                    1 => MetaProperty::Interp(Interp::Default(r.below(4))),
                    2 => MetaProperty::Interp(Interp::Delta(r.below(50))),
                    _ => MetaProperty::Interp(Interp::None),
                };
                let _ = w.metadata(lab, slot, prop);
            }
            if r.chance(4) {
                let prop = match r.below(6) {
                    0 => MetaProperty::Width(1 + r.below(4) as u8),
                    1 => MetaProperty::Interp(Interp::BaseOffset(r.below(1000))),
                    2 => MetaProperty::Interp(Interp::Delta(r.below(50))),
                    3 => MetaProperty::Interp(Interp::Stride {
                        initial: r.below(100),
                        stride: r.below(7) as i64 - 3,
                    }),
                    4 => MetaProperty::Interp(Interp::Default(r.below(9))),
                    _ => MetaProperty::Interp(Interp::None),
                };
                let _ = w.metadata(f, 1 + r.below(3) as u16, prop);
            }
        }
    }
    let bytes = w.finish_to_vec().unwrap();
    (schema, bytes)
}

#[test]
fn generated_fixed_records_scan_as_they_decode_cut_and_flipped() {
    let mut scanned = 0;
    let mut r = Rng(0x5ca7);
    for seed in 0..8 {
        let (schema, bytes) = match seed {
            4 | 5 => fixed_trace_for(&timed_dtd(), seed, seed == 5),
            6 | 7 => fixed_trace_for(&delta_timed_dtd(), seed, seed == 6),
            _ => fixed_trace(seed, seed % 2 == 1),
        };
        let trace = Trace::from_bytes(bytes.clone()).unwrap();
        scanned += same(&Reader::new(&trace, &schema), "generated");
        let len = bytes.len();
        for i in 0..60 {
            let mut b = bytes.clone();
            if i % 2 == 0 {
                b.truncate(len - 1 - r.below(len as u64 / 2) as usize);
            } else {
                let at = 64 + r.below(len as u64 - 64) as usize;
                b[at] ^= 1 << r.below(8);
            }
            if let Ok(trace) = Trace::from_bytes(b) {
                same(&Reader::new(&trace, &schema), "generated, damaged");
            }
        }
    }
    assert!(scanned > 1000, "{scanned} records scanned");
}

/// Copies of trace `bytes` in `dir` named `{name}-…`: cut at each length of `cuts`, and one
/// with three bits flipped past its header.
fn damaged_copies(
    dir: &std::path::Path,
    name: &str,
    bytes: &[u8],
    cuts: &[usize],
    r: &mut Rng,
) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for (i, &cut) in cuts.iter().enumerate() {
        let path = dir.join(format!("{name}-{i}.mtf"));
        std::fs::write(&path, &bytes[..cut]).unwrap();
        out.push(path);
    }
    let mut b = bytes.to_vec();
    for _ in 0..3 {
        let at = 64 + r.below(b.len() as u64 - 64) as usize;
        b[at] ^= 1 << r.below(8);
    }
    let path = dir.join(format!("{name}-flipped.mtf"));
    std::fs::write(&path, &b).unwrap();
    out.push(path);
    out
}

/// Runs `mtf ARGS` and `mtf ARGS --no-scan`, which must print and exit the same; the
/// standard output.
#[cfg(feature = "cli")]
fn same_without_the_scan(args: &[&str]) -> String {
    use crate::util::{mtf, text};
    let got = mtf(args);
    let mut full = args.to_vec();
    full.push("--no-scan");
    let want = mtf(&full);
    assert_eq!(
        (text(&got.stdout), text(&got.stderr), got.status.code()),
        (text(&want.stdout), text(&want.stderr), want.status.code()),
        "mtf {}",
        args.join(" ")
    );
    text(&got.stdout)
}

/// `mtf check --no-semantic` prints the same and exits the same with and without the scan, on
/// one thread and on two (cut at regions, and at the checkpoints of an index), for every
/// shipped trace, generated ones, and damaged ones.
#[cfg(feature = "cli")]
#[test]
fn check_prints_the_same_with_and_without_the_scan() {
    use crate::util::{mtf, tempdir, text};
    let dir = tempdir();
    let mut traces: Vec<std::path::PathBuf> = shipped();
    let mut r = Rng(0xd1ff);
    for seed in 0..2 {
        let (_, bytes) = fixed_trace(seed, seed == 1);
        std::fs::write(dir.path().join("scan.dtd"), DTD).unwrap();
        let len = bytes.len();
        let cuts = [len, len - 1, len - 5, len / 2];
        traces.extend(damaged_copies(
            dir.path(),
            &format!("g{seed}"),
            &bytes,
            &cuts,
            &mut r,
        ));
        // One indexed, so that -j 2 cuts it at checkpoints.
        let path = dir.path().join(format!("g{seed}-indexed.mtf"));
        std::fs::write(&path, &bytes).unwrap();
        let p = path.to_str().unwrap();
        let o = mtf(&["index", "--every", "50", p]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        traces.push(path);
    }
    for path in &traces {
        let t = path.to_str().unwrap();
        for extra in [
            &["-j", "1"][..],
            &["-j", "2", "--chunk-bytes", "1"],
            &["--max-errors", "2"],
        ] {
            let args: Vec<&str> = ["check", "--no-semantic", t]
                .iter()
                .chain(extra)
                .copied()
                .collect();
            same_without_the_scan(&args);
        }
    }
}

/// [`DTD`] with heap declarations (docs/format.md §14) on fields whose widths and
/// interpretations the metadata records of [`fixed_trace_for`] change: `flat` allocates block
/// `x` of `d` bytes, `pair` and `other` free it, `lab` moves it (two actions: the general loop),
/// `d` is a time that must not go back; a byte string is read by no declaration.
fn heap_dtd() -> String {
    DTD.replace(
        "flat : (tag, x, d, s, k) { tag.value = 4; }",
        "flat : (tag, x, d, s, k) { tag.value = 4; x.defines = block; x.bytes = d.value; }",
    )
    .replace(
        "pair : (tag, d, x) { tag.value = 6; }",
        "pair : (tag, d, x) { tag.value = 6; x.undefines = block; }",
    )
    .replace(
        "other : (tag, d, x) { tag.value = 8; }",
        "other : (tag, d, x) { tag.value = 8; x.undefines = block; }",
    )
    .replace(
        "        tag.value = 7;\n",
        "        tag.value = 7; x.undefines = block; c.defines = block;\n",
    ) + "\nanalysis.version = 1;\nd.time = us;\nd.monotonic = trace;\nblock.unknown = info;\nblock.null = 0;\n"
}

/// The semantic `mtf check` (records a scan steps over checked from the values it reads of
/// them) prints the same and exits the same as with every record decoded whole (`--no-scan`),
/// for every shipped trace and generated heap traces whose fields change width and
/// interpretation as they go, whole, cut and flipped.
#[cfg(feature = "cli")]
#[test]
fn semantic_check_prints_the_same_with_and_without_the_scan() {
    use crate::util::{mtf, tempdir, text};
    let dir = tempdir();
    let mut traces: Vec<std::path::PathBuf> = shipped();
    let mut r = Rng(0x5e3a);
    std::fs::write(dir.path().join("scan.dtd"), heap_dtd()).unwrap();
    for seed in 0..3 {
        let (_, bytes) = fixed_trace_for(&heap_dtd(), seed, seed == 1);
        let len = bytes.len();
        let cuts = [len, len - 1, len / 2];
        traces.extend(damaged_copies(
            dir.path(),
            &format!("h{seed}"),
            &bytes,
            &cuts,
            &mut r,
        ));
        // One indexed beside it (`T.idx`), which `check` verifies on the way, its times read
        // by the scan: with a time after a byte string (`lab`'s `c`) for one of them.
        let dtd = match seed {
            0 => heap_dtd().replace("d.time = us;", "d.time = us;\nc.time = ns;"),
            _ => heap_dtd(),
        };
        let (_, bytes) = fixed_trace_for(&dtd, seed, seed == 1);
        let sub = dir.path().join(format!("i{seed}"));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("scan.dtd"), &dtd).unwrap();
        let path = sub.join(format!("h{seed}-indexed.mtf"));
        std::fs::write(&path, &bytes).unwrap();
        let p = path.to_str().unwrap();
        let o = mtf(&["index", "--every", "50", p]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        traces.push(path);
    }
    let mut findings = 0;
    for path in &traces {
        let t = path.to_str().unwrap();
        for extra in [&[][..], &["--max-errors", "3", "--max-info", "2"]] {
            let args: Vec<&str> = ["check", t].iter().chain(extra).copied().collect();
            let out = same_without_the_scan(&args);
            findings += out.matches("piece(s) of information").count();
            if t.contains("indexed") {
                assert!(out.contains("index valid"), "{out}");
            }
        }
    }
    assert!(findings > 10, "{findings} semantic reports");
}

/// The values a scan reads of the records it steps over (`Records::scan_values`) are those
/// their views give, for every integer field of every record type, whatever segment (after
/// which byte strings) it lies in, as widths and interpretations change; and times read by a
/// timed scan after byte strings are the views' (the `lab` type's `d` lies after one).
#[test]
fn scanned_values_are_the_views_ints() {
    use metatf::decode::ScanValues;
    use metatf::dtd::{SlotId, SlotKind};
    let mut scanned = 0;
    for seed in 0..6 {
        let dtd = if seed < 3 {
            timed_dtd()
        } else {
            DTD.to_string()
        };
        let (schema, bytes) = fixed_trace_for(&dtd, seed, seed % 2 == 1);
        let trace = Trace::from_bytes(bytes).unwrap();
        let reader = Reader::new(&trace, &schema);
        let lists: Vec<Vec<SlotId>> = schema
            .records
            .iter()
            .map(|rt| {
                // A metadata record is given with no values.
                if rt.builtin.is_some() {
                    return vec![];
                }
                let ints = rt.slots.iter().enumerate().skip(1);
                let ints = ints.filter(|(_, s)| matches!(s.kind, SlotKind::Int { .. }));
                ints.map(|(i, _)| i as SlotId).collect()
            })
            .collect();
        // Every record's values as its view gives them.
        let mut want = BTreeMap::new();
        let mut records = reader.records();
        while let Some(e) = records.next() {
            if let Event::Record(v) = e {
                let ints: Vec<_> = v.ints().collect();
                let of = |s: SlotId| ints.iter().find(|(t, _)| *t == s).and_then(|x| x.1);
                let list = &lists[v.record_id() as usize];
                let vals: Vec<Option<u64>> = list.iter().map(|&s| of(s)).collect();
                want.insert(v.index(), (v.record_id(), v.offset(), vals));
            }
        }
        let per: Vec<_> = lists.iter().map(|l| Some(l.clone().into())).collect();
        let mut values = ScanValues::new(per);
        let mut per_type = vec![0; schema.records.len()];
        let mut got = BTreeMap::new();
        let mut records = reader.records();
        loop {
            records.scan_values(&mut per_type, ScanStop::NONE, &mut values, |r| {
                let vals: Vec<Option<u64>> = r.values.iter().map(|&v| Some(v)).collect();
                got.insert(r.index, (r.record_id, r.offset, vals));
                true
            });
            if records.next().is_none() {
                break;
            }
        }
        let data = |r: &metatf::dtd::RecordId| schema.record(*r).builtin.is_none();
        let stepped = got.values().filter(|(r, _, _)| data(r)).count();
        assert!(stepped > 500, "{stepped} data records scanned");
        // The metadata records the scan applied were given too.
        assert!(
            got.len() - stepped > 50,
            "{} metadata records",
            got.len() - stepped
        );
        scanned += stepped;
        for (index, g) in &got {
            assert_eq!(Some(g), want.get(index), "record {index} (seed {seed})");
        }
        // A timed scan that reads only `lab`'s time, here `c`, a plain field after two byte
        // strings: its latest time is the largest `c` the views of `lab` records give.
        let lab = schema.record_by_name(0, "lab").unwrap();
        let d = schema.record(lab).slot_by_name("c").unwrap();
        let per: Vec<_> = (0..schema.records.len())
            .map(|r| {
                Some(
                    if r == lab as usize {
                        vec![(d, 1)]
                    } else {
                        vec![]
                    }
                    .into(),
                )
            })
            .collect();
        let mut times = metatf::decode::ScanTimes::new(per);
        let mut records = reader.records();
        loop {
            records.scan_timed(&mut per_type, ScanStop::NONE, &mut times);
            match records.next() {
                None => break,
                Some(Event::Record(v)) if v.record_id() == lab => {
                    let t = v.ints().find(|(s, _)| *s == d).and_then(|x| x.1).unwrap();
                    times.note(t);
                }
                Some(_) => {}
            }
        }
        let k = lists[lab as usize].iter().position(|&s| s == d).unwrap();
        let labs = want.values().filter(|(r, _, _)| *r == lab);
        let largest = labs.filter_map(|(_, _, v)| v[k]).max();
        assert!(largest.is_some());
        assert_eq!(times.latest(), largest, "seed {seed}");
    }
    assert!(scanned > 3000, "{scanned}");
}

/// The events of a decoder, with or without its scan ([`EventStream::scan_values`]), counting
/// the records the scan stepped over.
struct Views<'a, 'r> {
    records: &'a mut Records<'r>,
    scan: bool,
    scanned: u64,
}

impl metatf::decode::EventStream for Views<'_, '_> {
    fn next_event(&mut self) -> Option<Event<'_>> {
        self.records.next()
    }
    fn dropped_problems(&self) -> u64 {
        self.records.dropped_problems()
    }
    fn scan_values(
        &mut self,
        per_type: &mut [u64],
        stop: ScanStop,
        values: &mut metatf::decode::ScanValues,
        times: Option<&mut metatf::decode::ScanTimes>,
        each: &mut dyn FnMut(metatf::decode::Scanned<'_>) -> bool,
    ) -> u64 {
        if !self.scan {
            return 0;
        }
        let k = metatf::decode::EventStream::scan_values(
            &mut *self.records,
            per_type,
            stop,
            values,
            times,
            each,
        );
        self.scanned += k;
        k
    }
}

/// `mtf stats`' figures (heap, lifetimes, records per type with their fields' sums) of records
/// given as the values a scan read of them are those of their views, on heap traces whose
/// fields change width and interpretation as they go, whole and cut, and on every shipped
/// trace; and the scan does step over most records of the generated ones.
#[test]
fn stats_of_records_given_as_values_are_those_of_their_views() {
    use metatf::analysis::stats::{compute_from, Declared, Window};
    let figures = |reader: &Reader<'_>, schema: &Schema, scan: bool| {
        let mut records = reader.records();
        let mut views = Views {
            records: &mut records,
            scan,
            scanned: 0,
        };
        let mut source = Declared::new(schema);
        let stats = compute_from(reader, &mut views, &mut source, Window::all());
        (format!("{stats:?}"), views.scanned)
    };
    let mut scanned = 0;
    for seed in 0..4 {
        let (schema, bytes) = fixed_trace_for(&heap_dtd(), seed, seed % 2 == 1);
        let len = bytes.len();
        for cut in [len, len - 3, len / 3] {
            // A cut trace whose section index points past its end does not open.
            let Ok(trace) = Trace::from_bytes(bytes[..cut].to_vec()) else {
                assert!(cut < len);
                continue;
            };
            let reader = Reader::new(&trace, &schema);
            let (got, n) = figures(&reader, &schema, true);
            let (want, _) = figures(&reader, &schema, false);
            assert_eq!(got, want, "seed {seed}, cut at {cut}");
            assert!(got.contains("allocations: "), "{got}");
            scanned += n;
        }
    }
    assert!(scanned > 5000, "{scanned} records scanned");
    // The imported traces say the lines of their input their figures come from: those records
    // are scanned too.
    let mut with_lines = 0;
    for path in shipped() {
        let opened = metatf::open(&path).unwrap();
        let reader = opened.reader();
        let (got, n) = figures(&reader, opened.schema(), true);
        let (want, _) = figures(&reader, opened.schema(), false);
        assert_eq!(got, want, "{}", path.display());
        if got.contains("SourceLine {") {
            with_lines += 1;
            assert!(n > 0, "{}: no record scanned", path.display());
        }
    }
    assert!(with_lines >= 5, "{with_lines} shipped traces with lines");
}

/// A timed scan steps over records whose time is guarded (Android's `start.when = start;
/// start.isNot = 0`: a line without times has none), and its latest time is the largest start
/// (or `thread_done` end) of the lines that carry times, computed from the text itself; a
/// trace whose lines carry no times has no latest time.
#[test]
fn a_timed_scan_reads_guarded_times() {
    use crate::util::{import_into, tempdir};
    let dir = tempdir();
    let mut rng = Rng(0x5eed_7153);
    for timed_share in [60u64, 0] {
        let (mut text, mut want, mut lines) = (String::new(), None::<u64>, 0u64);
        // The largest time of the lines so far, after each line.
        let mut upto: Vec<Option<u64>> = Vec::new();
        let mut t: u64 = 1_000_000;
        let mut live: Vec<u64> = Vec::new();
        for i in 0..4000u64 {
            // Times mostly go forward (about 1,250 a line on average, so that the latest time
            // keeps changing), now and then back.
            t = if rng.below(10) == 0 {
                t.saturating_sub(rng.below(20_000))
            } else {
                t + rng.below(5_000)
            };
            let timed = rng.below(100) < timed_share;
            let times = |start: u64| format!(" {start} {}", start + rng_end(start));
            let tid = 100 + rng.below(3);
            if live.is_empty() || rng.below(2) == 0 {
                let a = 0x1000 + 16 * i;
                live.push(a);
                text += &format!("{tid}: malloc 0x{a:x} {}", 1 + rng.below(64));
            } else {
                let a = live.swap_remove(rng.below(live.len() as u64) as usize);
                text += &format!("{tid}: free 0x{a:x}");
            }
            if timed {
                text += &times(t);
                want = Some(want.map_or(t, |w| w.max(t)));
            }
            text.push('\n');
            lines += 1;
            upto.push(want);
        }
        let src = dir.path().join(format!("timed{timed_share}.txt"));
        std::fs::write(&src, &text).unwrap();
        let trace = import_into(dir.path(), &src, Some("android"));
        let opened = metatf::open(&trace).unwrap();
        let schema = opened.schema();
        let reader = opened.reader();
        let mut times = declared_times(schema);
        // The index of each line's record (one per line, after the import's own records;
        // metadata records between them).
        let mut line_records = Vec::new();
        let mut all = reader.records();
        while let Some(e) = all.next() {
            if let Event::Record(v) = e {
                if matches!(v.name(), "alloc" | "free") {
                    line_records.push(v.index());
                }
            }
        }
        assert_eq!(line_records.len() as u64, lines);
        // The latest time before record `r`: that of the lines whose records lie before it.
        let latest_before = |r: u64| match line_records.partition_point(|&x| x < r) {
            0 => None,
            k => upto[k - 1],
        };
        let mut per_type = vec![0; schema.records.len()];
        let mut records = reader.records();
        let mut viewed = 0;
        // Stops every few records, where the latest time must be that of the records before
        // (a checkpoint of a seek index takes it there): a time noted late or early fails.
        let mut next_stop = 7;
        loop {
            while next_stop < records.count() {
                next_stop += 1 + next_stop % 13;
            }
            let stop = ScanStop {
                records: next_stop,
                offset: u64::MAX,
            };
            records.scan_timed(&mut per_type, stop, &mut times);
            if records.count() == next_stop {
                assert_eq!(
                    times.latest(),
                    latest_before(next_stop),
                    "before {next_stop}"
                );
                next_stop += 1 + next_stop % 13;
                continue;
            }
            match records.next() {
                None => break,
                Some(Event::Record(v)) => {
                    viewed += 1;
                    note_view_time(schema, &v, &mut times);
                }
                Some(_) => {}
            }
        }
        assert_eq!(times.latest(), want, "{timed_share} % of the lines timed");
        // A seek index built every few records notes at each checkpoint the latest time of
        // the lines before it.
        let options = metatf::index::BuildOptions {
            every_records: 7,
            every_bytes: 1 << 20,
        };
        let built = metatf::index::build(&reader, &options);
        // And so does `mtf index`, which keeps the analysis' states beside (the scan then reads
        // the values the analysis wants too).
        let seek = dir.path().join(format!("timed{timed_share}.seek"));
        let (t, s) = (trace.to_str().unwrap(), seek.to_str().unwrap());
        let o = crate::util::mtf(&["index", "-q", "--every", "7", t, "-o", s]);
        assert!(o.status.success(), "{}", crate::util::text(&o.stderr));
        let written = metatf::index::Index::load(&seek).unwrap();
        for index in [built, written] {
            assert!(
                index.entries().len() > 500,
                "{} checkpoints",
                index.entries().len()
            );
            for e in index.entries() {
                assert_eq!(
                    e.time,
                    latest_before(e.record),
                    "checkpoint at {}",
                    e.record
                );
            }
        }
        // The scan stepped over nearly every line (`per_type` counts what it stepped over; the
        // others come as views).
        let stepped: u64 = per_type.iter().sum();
        assert!(
            stepped > lines * 9 / 10,
            "{stepped} of {lines} lines stepped over, {viewed} viewed"
        );
    }
}

/// The times a scan reads, as the DTD declares them: per record type its time fields, scaled
/// to the trace's unit, and their guards.
fn declared_times(schema: &Schema) -> metatf::decode::ScanTimes {
    let unit = schema.analysis.time_unit.unwrap();
    let per: Vec<_> = (0..schema.records.len())
        .map(|rid| {
            let decl = schema.analysis.records.get(rid);
            let list: Vec<_> = decl.map_or(vec![], |d| {
                d.time
                    .iter()
                    .map(|&(s, u)| (s, (u.nanos() / unit.nanos()).max(1)))
                    .collect()
            });
            Some(list.into())
        })
        .collect();
    let mut times = metatf::decode::ScanTimes::new(per);
    for (rid, decl) in schema.analysis.records.iter().enumerate() {
        for &(slot, _) in &decl.time {
            if let Some((_, g)) = decl.guards.iter().find(|(s, _)| *s == slot) {
                times.guard(rid, slot, g.slot, g.value, g.negated);
            }
        }
    }
    times
}

/// The time of a record the scan did not step over, read from its view (its guarded fields
/// only where their guard holds), noted in `times`.
fn note_view_time(
    schema: &Schema,
    v: &metatf::decode::RecordView<'_>,
    times: &mut metatf::decode::ScanTimes,
) {
    let Some(decl) = schema.analysis.records.get(v.record_id() as usize) else {
        return;
    };
    let int = |s| v.fields().find(|f| f.slot() == s).and_then(|f| f.number());
    for &(slot, _) in &decl.time {
        if decl.applies(slot, int) {
            times.note(int(slot).unwrap());
        }
    }
}

/// An end time a little after `start`.
fn rng_end(start: u64) -> u64 {
    1 + start % 997
}

/// A time read only from `default` fields (valgrind's `time`; Android's `start`, guarded by
/// itself) is noted once per plan by the scan, and again after every metadata record that
/// changes a default: at stops every few records, and in a seek index built every few records,
/// the latest time is the largest of the times the trace was written with before that point,
/// whatever fields the metadata records change (the time's own default, or another's).
#[test]
fn a_timed_scan_notes_default_times_again_after_metadata() {
    for guarded in [false, true] {
        let guard = if guarded {
            "t.when = t; t.isNot = 0;"
        } else {
            ""
        };
        let dtd = format!(
            "tag.width = 1;\nx.width = 2; x.interpretation = none;\n\
             t.interpretation = default 0;\nu.interpretation = default 0;\n\
             analysis.version = 1;\nt.time = us; {guard}\n\
             a : (tag, x, t, u) {{ tag.value = 4; }}\nb : (tag, x) {{ tag.value = 5; }}\n"
        );
        let schema = metatf::dtd::parse_str("d.dtd", &dtd).unwrap().schema;
        let mut w = TraceWriter::in_memory(&schema, Class::Bits64, ByteOrder::Little, "d.dtd");
        let (a, b) = (w.lookup("a").unwrap(), w.lookup("b").unwrap());
        let mut r = Rng(0xdef7);
        // Per record written, the largest time so far (`None` until a record has one).
        let (mut t, mut u, mut latest) = (0u64, 0u64, None::<u64>);
        let mut after: Vec<Option<u64>> = Vec::new();
        let meta = |w: &mut TraceWriter, field: &str, v: u64, after: &mut Vec<_>, latest| {
            let prop = metatf::MetaProperty::Interp(Interp::Default(v));
            w.metadata_named("a", field, prop).unwrap();
            after.push(latest);
        };
        for i in 0..3000u64 {
            match r.below(10) {
                // The time's default, forward or back (0: no time where guarded).
                0..=2 => {
                    t = match r.below(8) {
                        0 => 0,
                        1 => t.saturating_sub(r.below(500)),
                        _ => t + r.below(1000),
                    };
                    meta(&mut w, "t", t, &mut after, latest);
                }
                // Another field's default: the plan is patched, the time stays.
                3 => {
                    u += 1;
                    meta(&mut w, "u", u, &mut after, latest);
                }
                4 => {
                    w.record(b, &[In::Int(i % 500)]).unwrap();
                    after.push(latest);
                }
                _ => {
                    w.record(a, &[In::Int(i % 500), In::Auto, In::Auto])
                        .unwrap();
                    if !(guarded && t == 0) {
                        latest = Some(latest.map_or(t, |l| l.max(t)));
                    }
                    after.push(latest);
                }
            }
        }
        // Last, a record with the largest time, cut short: no time is noted of it.
        let huge = metatf::MetaProperty::Interp(Interp::Default(1 << 40));
        w.metadata_named("a", "t", huge).unwrap();
        w.record(a, &[In::Int(7), In::Auto, In::Auto]).unwrap();
        let mut bytes = w.finish_to_vec().unwrap();
        bytes.pop();
        let trace = Trace::from_bytes(bytes).unwrap();
        let reader = Reader::new(&trace, &schema);
        let mut times = declared_times(&schema);
        let mut records = reader.records();
        let mut per_type = vec![0; schema.records.len()];
        loop {
            records.scan_timed(&mut per_type, ScanStop::NONE, &mut times);
            match records.next() {
                None => break,
                Some(Event::Record(v)) => note_view_time(&schema, &v, &mut times),
                Some(_) => {}
            }
        }
        let stepped: u64 = per_type.iter().sum();
        assert!(stepped > 2900, "{stepped} stepped over");
        assert_eq!(
            times.latest(),
            latest,
            "guarded {guarded}: the cut record's time noted"
        );
        // The records before the first of these (the header's) have no time; after them, the
        // metadata record and the cut one.
        let mut all = reader.records();
        while all.next().is_some() {}
        let first = all.count() - 1 - after.len() as u64;
        let latest_before = |rec: u64| match rec.checked_sub(first) {
            None | Some(0) => None,
            Some(k) => after[k as usize - 1],
        };
        let options = metatf::index::BuildOptions {
            every_records: 5,
            every_bytes: 1 << 20,
        };
        let index = metatf::index::build(&reader, &options);
        assert!(index.entries().len() > 500, "{}", index.entries().len());
        for e in index.entries() {
            assert_eq!(
                e.time,
                latest_before(e.record),
                "guarded {guarded}: at {}",
                e.record
            );
        }
    }
}

/// Records that refer to a table (`sectionOffset`): fixed (`use`) and after a byte string
/// (`note`), the reference's width changed by metadata and the interpretation switched off and
/// on.
const REF_DTD: &str = "
tag.width = 1;
label : (len, data) {
    len.width = 1;  len.interpretation = none;
    data.width = len.value;  data.interpretation = none;
}
who.width = 2;  who.interpretation = sectionOffset names;
section main 1 {
    use : (tag, a, who, b) {
        tag.value = 4;
        a.width = 2;  a.interpretation = none;
        b.width = 2;  b.interpretation = delta 0;
    }
    note : (tag, txt : label, who, c) {
        tag.value = 5;
        c.width = 1;  c.interpretation = none;
    }
}
section names 2 {
    name : (tag, s : label) { tag.value = 4; }
}
";

/// A trace of [`REF_DTD`], the offsets of its elements in `names` and the length of that
/// section's content (from the lengths written, not from the decoder).
fn ref_trace(seed: u64) -> (Schema, Vec<u8>, Vec<u64>, u64) {
    let schema = metatf::dtd::parse_str("refs.dtd", REF_DTD).unwrap().schema;
    let mut w = TraceWriter::in_memory(&schema, Class::Bits64, ByteOrder::Little, "refs.dtd");
    // (A state of 0 would stay 0.)
    let mut r = Rng(0x9e37_79b9 ^ seed);
    w.section(2).unwrap();
    let name = w.lookup("name").unwrap();
    let mut starts = Vec::new();
    let mut at = 0u64;
    // Short names (the table's starts kept as bits) for even seeds, long ones for odd seeds
    // (looked up among its offsets).
    let long = seed % 2 == 1;
    // (Each within 2 bytes of offset.)
    for i in 0..if long { 200 } else { 300 } {
        let n = if long { 200 + r.below(50) } else { r.below(12) };
        starts.push(at);
        let s: Vec<u8> = (0..n).map(|k| b'a' + ((i + k) % 26) as u8).collect();
        w.record(name, &[In::Int(n), In::Bytes(s)]).unwrap();
        // tag, length, the bytes
        at += 2 + n;
    }
    w.section(1).unwrap();
    let (u, note) = (w.lookup("use").unwrap(), w.lookup("note").unwrap());
    let who = |rec| schema.record(rec).slot_by_name("who").unwrap();
    let mut wide = false;
    for i in 0..1500u64 {
        let target = starts[r.below(starts.len() as u64) as usize];
        if r.chance(50) {
            w.record(u, &[In::Int(i), In::Offset(target), In::Int(3 * i)])
                .unwrap();
        } else {
            let n = r.below(4);
            let txt = vec![b'x'; n as usize];
            w.record(
                note,
                &[
                    In::Int(n),
                    In::Bytes(txt),
                    In::Offset(target),
                    In::Int(i % 200),
                ],
            )
            .unwrap();
        }
        if r.chance(3) {
            let rec = if r.chance(50) { u } else { note };
            let prop = match r.below(3) {
                0 => {
                    wide = !wide;
                    MetaProperty::Width(if wide { 3 } else { 2 })
                }
                // Off and on again: the scan stops before these, the plan is made again.
                1 => MetaProperty::Interp(Interp::None),
                _ => MetaProperty::Interp(Interp::SectionOffset(2)),
            };
            w.metadata(rec, who(rec), prop).unwrap();
            // Back to a reference for the records that follow.
            let back = MetaProperty::Interp(Interp::SectionOffset(2));
            w.metadata(rec, who(rec), back).unwrap();
        }
    }
    let bytes = w.finish_to_vec().unwrap();
    (schema, bytes, starts, at)
}

/// A reference checked where a plan reads it (the scan, and the plan's decode) is reported
/// as the general path reports it: every reference overwritten with an offset that is no
/// element's start, or past the table, is one problem at its byte, and nothing else is.
#[test]
fn references_are_checked_where_a_plan_reads_them() {
    for seed in 0..4 {
        let (schema, bytes, starts, content) = ref_trace(seed);
        let trace = Trace::from_bytes(bytes.clone()).unwrap();
        // Where each reference lies, and its width, from the views.
        let mut refs = Vec::new();
        {
            let reader = Reader::new(&trace, &schema);
            let mut records = reader.records();
            while let Some(e) = records.next() {
                if let Event::Record(v) = e {
                    for f in v.fields() {
                        if f.reference().is_some() {
                            refs.push((f.offset(), f.stored().len()));
                        }
                    }
                }
            }
        }
        assert!(refs.len() > 1000, "{} references", refs.len());
        // All but the records the scan stops before (the first of each region, the metadata
        // records that switch `who` to a reference and the records whose plan they leave
        // stale) are stepped over: at least nine in ten.
        let reader = Reader::new(&trace, &schema);
        let n = same(&reader, "references");
        let total = full(&reader, &|_| false).count;
        assert!(n * 10 >= total * 9, "{n} of {total} records scanned");
        // Overwrite some: within the table but between elements, or past it.
        let mut r = Rng(seed ^ 0x7ef);
        let mut b = bytes.clone();
        let mut want = Vec::new();
        for &(at, width) in &refs {
            if !r.chance(11) {
                continue;
            }
            let value = if r.chance(50) {
                r.below(content.min(1 << (8 * width as u32)))
            } else {
                content + r.below(100)
            };
            let value = value.min((1u64 << (8 * width as u32)) - 1);
            b[at as usize..at as usize + width].copy_from_slice(&value.to_le_bytes()[..width]);
            if starts.binary_search(&value).is_err() {
                want.push(at);
            }
        }
        assert!(want.len() > 50, "{} bad references", want.len());
        let trace = Trace::from_bytes(b).unwrap();
        let reader = Reader::new(&trace, &schema);
        same(&reader, "references overwritten");
        let mut got = Vec::new();
        let mut records = reader.records();
        records.skip_values(true);
        let mut per_type = vec![0; schema.records.len()];
        loop {
            records.scan(&mut per_type, ScanStop::NONE);
            match records.next() {
                None => break,
                Some(Event::Problem(p)) => {
                    assert!(p.to_string().contains("sectionOffset"), "{p}");
                    got.push(p.at.offset);
                }
                Some(Event::Damage(d)) => panic!("{d}"),
                Some(Event::Record(_)) => {}
            }
        }
        assert_eq!(got, want, "seed {seed}");
    }
}

/// A scan that gives references (`ScanValues::with_references`) gives a reference into a
/// string table as the number its view's field carries (its offset) and the string it names
/// as the view resolves it; a reference into a table of integers, whose number is the integer
/// its element holds, stops it, so the general path gives that.
#[test]
fn scanned_references_are_those_of_the_views() {
    use metatf::decode::ScanValues;
    use metatf::dtd::SlotId;
    // `[2]` a table of integers instead of strings.
    for ints in [false, true] {
        for seed in 0..2 {
            let dtd = match ints {
                false => REF_DTD.to_string(),
                true => REF_DTD.replace(
                    "name : (tag, s : label) { tag.value = 4; }",
                    "name : (tag, s : label, v) { tag.value = 4; v.width = 2; v.interpretation = none; }",
                ),
            };
            let (schema, bytes) = if ints {
                // The strings' records get an integer after them: their value.
                let schema = metatf::dtd::parse_str("refs.dtd", &dtd).unwrap().schema;
                let mut w =
                    TraceWriter::in_memory(&schema, Class::Bits64, ByteOrder::Little, "refs.dtd");
                w.section(2).unwrap();
                let name = w.lookup("name").unwrap();
                for i in 0..50u64 {
                    w.record(name, &[In::Int(1), In::Bytes(b"n".to_vec()), In::Int(i)])
                        .unwrap();
                }
                w.section(1).unwrap();
                let u = w.lookup("use").unwrap();
                for i in 0..500u64 {
                    let target = 5 * (i % 50);
                    w.record(u, &[In::Int(i), In::Offset(target), In::Int(i)])
                        .unwrap();
                }
                let bytes = w.finish_to_vec().unwrap();
                (schema, bytes)
            } else {
                let (schema, bytes, _, _) = ref_trace(seed);
                (schema, bytes)
            };
            let trace = Trace::from_bytes(bytes).unwrap();
            let reader = Reader::new(&trace, &schema);
            let lists: Vec<Vec<SlotId>> = schema
                .records
                .iter()
                .map(|rt| match rt.name.as_str() {
                    "use" | "note" => ["who", "c", "a"]
                        .iter()
                        .filter_map(|n| rt.slot_by_name(n))
                        .collect(),
                    _ => vec![],
                })
                .collect();
            // Each reference's number and the string it leads to, as the views give them.
            let mut want = BTreeMap::new();
            let mut records = reader.records();
            while let Some(e) = records.next() {
                if let Event::Record(v) = e {
                    let list = &lists[v.record_id() as usize];
                    let vals: Vec<(Option<u64>, Option<Vec<u8>>)> = list
                        .iter()
                        .map(|&s| {
                            let f = v.fields().find(|f| f.slot() == s).unwrap();
                            (
                                f.number(),
                                f.reference().and(f.as_bytes()).map(|b| b.to_vec()),
                            )
                        })
                        .collect();
                    want.insert(v.index(), vals);
                }
            }
            let per: Vec<_> = lists.iter().map(|l| Some(l.clone().into())).collect();
            let mut values = ScanValues::new(per).with_references();
            let mut per_type = vec![0; schema.records.len()];
            let mut got = BTreeMap::new();
            let mut records = reader.records();
            loop {
                records.scan_values(&mut per_type, ScanStop::NONE, &mut values, |r| {
                    if r.values.is_empty() {
                        return true;
                    }
                    let vals: Vec<(Option<u64>, Option<Vec<u8>>)> = (0..r.values.len())
                        .map(|k| (Some(r.values[k]), r.bytes(k).map(|b| b.to_vec())))
                        .collect();
                    got.insert(r.index, vals);
                    true
                });
                if records.next().is_none() {
                    break;
                }
            }
            if ints {
                assert!(got.is_empty(), "{} records scanned", got.len());
                continue;
            }
            assert!(got.len() > 1000, "{} records scanned", got.len());
            for (i, vals) in &got {
                assert_eq!(Some(vals), want.get(i), "record {i}");
            }
        }
    }
}
