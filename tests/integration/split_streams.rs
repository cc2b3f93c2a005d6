//! Issue 16 item 3: split streams (`mtf compact --split`) are an encoding detail. Record counts,
//! bytes per record, `info`, `dump --data-only`, CSV and Parquet show the logical records of a
//! split trace, each stream value as its field's value, exactly as for the trace unsplit.

use std::path::PathBuf;

use metatf::compact::CompactOptions;
use metatf::decode::Event;
use metatf::encode::TraceWriter;

use crate::util;

/// `trace` (a shipped sample of the shipped DTD `dtd`) with every varying field moved into a
/// stream, written with its derived DTD into a new folder.
pub fn split_copy(trace: &str, dtd: &str) -> (tempfile::TempDir, PathBuf) {
    let o = metatf::open(util::root().join(trace)).unwrap();
    let h = o.trace().header();
    let text = std::fs::read_to_string(util::root().join(dtd)).unwrap();
    let r = o.reader();
    let opts = CompactOptions::default();
    let plan = metatf::compact::plan_split(&r, &text, &opts)
        .unwrap()
        .expect("fields that vary");
    let dir = util::tempdir();
    std::fs::write(dir.path().join("derived.dtd"), &plan.dtd_text).unwrap();
    let derived = metatf::dtd::parse_str("derived.dtd", &plan.dtd_text)
        .unwrap()
        .schema;
    let mut w = TraceWriter::in_memory(&derived, h.class, h.byte_order, "derived.dtd");
    let stats = metatf::compact::compact_split(&r, &mut w, &opts, &plan, &mut |_, _| {}).unwrap();
    // The summary's data records are the input's logical records, not the stream elements.
    assert_eq!(stats.data_records, data_records(&o));
    let split = dir.path().join("split.mtf");
    std::fs::write(&split, w.finish_to_vec().unwrap()).unwrap();
    (dir, split)
}

/// The records a user counts, and the records of tables.
fn data_records(o: &metatf::Opened) -> u64 {
    let reader = o.reader();
    let mut n = 0;
    let mut records = reader.records();
    while let Some(e) = records.next() {
        match e {
            Event::Record(r) => n += u64::from(r.is_data()),
            _ => panic!("a problem"),
        }
    }
    n
}

const SAMPLES: [(&str, &str); 3] = [
    ("traces/et3.mtf", "dtds/et3.dtd"),
    ("traces/jvm_trace.mtf", "dtds/jvm_trace.dtd"),
    ("traces/android.mtf", "dtds/hatf-android.dtd"),
];

/// A JSON line without its `index` and `offset` (where the record is, which an encoding
/// changes), or a CSV line without its `record_index` and `byte_offset` columns.
fn without_position(line: &str) -> String {
    match (line.find(",\"index\":"), line.find(",\"fields\":")) {
        (Some(a), Some(b)) if a < b => format!("{}{}", &line[..a], &line[b..]),
        _ => line.splitn(3, ',').nth(2).unwrap_or(line).to_string(),
    }
}

#[test]
fn split_streams_do_not_change_the_data_record_count() {
    for (trace, dtd) in SAMPLES {
        let (_dir, split) = split_copy(trace, dtd);
        let plain = metatf::open(util::root().join(trace)).unwrap();
        let o = metatf::open(&split).unwrap();
        // Streams are tables: their records are elements, not data.
        let reader = o.reader();
        let streams = reader
            .regions()
            .iter()
            .filter(|r| reader.is_table(r.section))
            .count();
        assert!(streams > 1, "{trace}");
        assert_eq!(data_records(&o), data_records(&plain), "{trace}");
        assert!(data_records(&o) > 0);
    }
}

#[test]
fn info_counts_logical_records_of_a_split_trace() {
    for (trace, dtd) in SAMPLES {
        let (_dir, split) = split_copy(trace, dtd);
        let line = |t: &str| {
            let r = util::mtf(&["info", t]);
            assert!(r.status.success(), "{}", util::text(&r.stderr));
            let out = util::text(&r.stdout);
            let data = out
                .lines()
                .find(|l| l.starts_with("data records"))
                .unwrap_or_else(|| panic!("{out}"))
                .split_whitespace()
                .last()
                .unwrap_or_default()
                .to_string();
            (data, out)
        };
        let (a, _) = line(trace);
        let (b, out) = line(split.to_str().unwrap());
        assert_eq!(a, b, "{trace}");
        assert!(out.contains("(table)"), "{out}");
        assert!(out.contains("elements of tables"), "{out}");
    }
}

#[test]
fn dump_data_only_of_a_split_trace_equals_the_unsplit_one() {
    for (trace, dtd) in SAMPLES {
        let (_dir, split) = split_copy(trace, dtd);
        for format in ["text", "jsonl"] {
            let dump = |t: &str| {
                let r = util::mtf(&["dump", "--data-only", "--no-header", "-f", format, t]);
                assert!(r.status.success(), "{}", util::text(&r.stderr));
                let out = util::text(&r.stdout);
                if format == "jsonl" {
                    out.lines()
                        .map(without_position)
                        .collect::<Vec<_>>()
                        .join("\n")
                } else {
                    out
                }
            };
            let (a, b) = (dump(trace), dump(split.to_str().unwrap()));
            assert!(!a.is_empty());
            assert!(a == b, "{trace} ({format}): the dumps differ");
        }
    }
}

#[test]
fn csv_of_a_split_trace_equals_the_unsplit_one() {
    let (_dir, split) = split_copy("traces/android.mtf", "dtds/hatf-android.dtd");
    let csv = |t: &str| {
        let r = util::mtf(&["dump", "-f", "csv", "-r", "alloc", t]);
        assert!(r.status.success(), "{}", util::text(&r.stderr));
        let out = util::text(&r.stdout);
        out.lines().map(without_position).collect::<Vec<_>>()
    };
    let a = csv("traces/android.mtf");
    assert!(a.len() > 2, "{a:?}");
    assert_eq!(a, csv(split.to_str().unwrap()));
}

/// `mtf stats` and `mtf info` assume the DTD's tables rather than first reading the whole trace
/// for metadata records that make others (`Reader::speculate_tables`), and read the trace again
/// when one does. In `hatf-split-le64` the sections `names` and `addresses` become tables only by
/// metadata records after their records: the statistics count, per type, the records that the
/// library's reader (which reads the trace for those metadata records first) calls data
/// records, and none of the tables' elements.
#[test]
fn stats_and_info_read_again_when_metadata_makes_a_table_after_its_records() {
    let trace = util::root().join("traces/hatf-split-le64.mtf");
    let o = metatf::open(&trace).unwrap();
    let reader = o.reader();
    let (mut data, mut elements) = (std::collections::BTreeMap::new(), 0);
    let mut records = reader.records();
    while let Some(e) = records.next() {
        if let Event::Record(r) = e {
            if r.is_data() {
                *data.entry(r.name().to_string()).or_insert(0u64) += 1;
            } else if r.is_element() {
                elements += 1;
            }
        }
    }
    assert!(elements >= 6, "the elements of `names` and `addresses`");
    let out = util::mtf(&["stats", "-f", "json", "-j", "1", trace.to_str().unwrap()]);
    assert!(out.status.success(), "{}", util::text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let counted: std::collections::BTreeMap<String, u64> = json["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(counted, data);
    // `mtf info` counts the data records the same way.
    let out = util::mtf(&["info", trace.to_str().unwrap()]);
    assert!(out.status.success(), "{}", util::text(&out.stderr));
    let line = util::text(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("data records").map(|n| n.trim().to_string()))
        .expect("a line of data records");
    assert_eq!(line, data.values().sum::<u64>().to_string());
}
