//! Validating only (`Records::scan`) reports exactly what the full decoder reports: the same
//! problems and damage (messages, record indices, byte offsets), the same record counts per
//! type, the same dropped problems, and at every record boundary the same checkpoint — on
//! every shipped trace, on random traces, and on traces cut at every length and with flipped
//! bytes. A seek index built while scanning is the one built by a full decode, byte for byte.

use std::collections::BTreeMap;

use metatf::container::Trace;
use metatf::decode::{Event, Reader, Records, ScanStop};
use metatf::dtd::Schema;
use metatf::index::{BuildOptions, Builder};
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
    assert!(scanned > 1000, "{scanned} records scanned");
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
    assert!(cases > 500, "{cases} damaged traces");
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
    for path in shipped() {
        let opened = metatf::open(&path).unwrap();
        let reader = opened.reader();
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
            assert_eq!(got.to_bytes(), want, "{}", path.display());
            compared += got.entries().len();
        }
    }
    assert!(compared > 100, "{compared} checkpoints");
}
