//! The printers' per-record-type plans (a flat record's line built from precomputed keys, in
//! one buffer) write exactly the bytes of their general walk, for the text form, JSON lines and
//! CSV, with every option the plans serve: on random schemas and traces and on every shipped
//! trace.

use metatf::container::Trace;
use metatf::decode::{Event, Reader};
use metatf::text::{CsvPrinter, Format, Options, Printer};
use proptest::prelude::*;

use crate::roundtrip_prop::{random_dtd, random_trace};
use crate::util::{root, Rng};

/// Prints every record of `reader` both ways in every format and option; returns how many
/// records (per printing) were compared.
fn compare(reader: &Reader<'_>, what: &str) -> usize {
    let mut compared = 0;
    for format in [Format::Text, Format::Jsonl] {
        for (offsets, logical, strings) in [
            (false, false, false),
            (true, true, false),
            (false, false, true),
            (true, false, true),
        ] {
            let opts = Options {
                format,
                offsets,
                raw: false,
            };
            let make = || {
                Printer::new(reader, opts)
                    .with_logical_values(logical)
                    .with_int_strings(strings)
            };
            let (mut planned, mut walked) = (make(), make().without_plans());
            let mut records = reader.records();
            while let Some(event) = records.next() {
                let Event::Record(v) = event else { continue };
                let (mut a, mut b) = (Vec::new(), Vec::new());
                planned.record(&mut a, &v).unwrap();
                walked.record(&mut b, &v).unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&a),
                    String::from_utf8_lossy(&b),
                    "{what}: {format:?} offsets={offsets} logical={logical} strings={strings}, \
                     record {}",
                    v.index()
                );
                compared += 1;
            }
        }
    }
    for rid in 0..reader.schema().records.len() as u32 {
        let mut planned = CsvPrinter::new(reader, rid);
        let mut walked = CsvPrinter::new(reader, rid).without_plans();
        let mut records = reader.records();
        while let Some(event) = records.next() {
            let Event::Record(v) = event else { continue };
            if v.record_id() != rid {
                continue;
            }
            let (mut a, mut b) = (Vec::new(), Vec::new());
            planned.record(&mut a, &v).unwrap();
            walked.record(&mut b, &v).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&a),
                String::from_utf8_lossy(&b),
                "{what}: CSV of {}, record {}",
                v.name(),
                v.index()
            );
            compared += 1;
        }
    }
    compared
}

fn random(seed: u64) -> usize {
    let mut r = Rng(seed | 1);
    let dtd = random_dtd(&mut r);
    let schema = metatf::dtd::parse_str("random.dtd", &dtd).unwrap().schema;
    let trace = Trace::from_bytes(random_trace(&mut r, &schema)).unwrap();
    let reader = Reader::new(&trace, &schema);
    compare(&reader, &format!("seed {seed}\n{dtd}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(100), ..ProptestConfig::default() })]
    #[test]
    fn plans_print_what_the_walk_prints_on_random_traces(seed in any::<u64>()) {
        random(seed);
    }
}

#[test]
fn random_traces_have_records_to_compare() {
    let n: usize = (1..=20).map(random).sum();
    assert!(n > 100, "{n} records compared");
}

#[test]
fn plans_print_what_the_walk_prints_on_every_shipped_trace() {
    let mut paths: Vec<_> = ["traces", "tests/independent/t"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root().join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtf"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 20, "{paths:?}");
    let mut compared = 0;
    for path in paths {
        let opened = match metatf::open(&path) {
            Ok(o) => o,
            // The independent reader's cases include traces made to be refused.
            Err(_) if !path.starts_with(root().join("traces")) => continue,
            Err(e) => panic!("{}: {e}", path.display()),
        };
        compared += compare(&opened.reader(), &path.display().to_string());
    }
    assert!(compared > 5_000, "{compared} records compared");
}
