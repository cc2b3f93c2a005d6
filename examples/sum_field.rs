//! Iterate over one record type and sum one of its fields:
//! `cargo run --example sum_field -- TRACE [RECORD [FIELD]]` (default: `alloc size`).
//!
//! Values are interpreted: a field stored as a delta or as an offset from a base, or narrowed
//! by a metadata record half-way through the trace, reads as the number it stands for.
//! `cargo test` runs the test at the bottom on a sample trace.

// Under `cargo test` the example is built as a test: its `main` is not called.
#![cfg_attr(test, allow(dead_code))]

use metatf::decode::Event;

/// The number of records of type `record` and the sum of their `field` (modulo 2^64).
fn sum(path: &str, record: &str, field: &str) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let opened = metatf::open(path)?;
    let reader = opened.reader();
    let (mut n, mut total) = (0u64, 0u64);
    let mut records = reader.records();
    while let Some(event) = records.next() {
        match event {
            Event::Record(r) if r.name() == record => {
                let value = r.get(field).and_then(|v| v.as_u64()).ok_or_else(|| {
                    format!("record {} has no integer field `{field}`", r.index())
                })?;
                n += 1;
                total = total.wrapping_add(value);
            }
            Event::Record(_) => {}
            Event::Problem(p) => return Err(p.to_string().into()),
            Event::Damage(d) => return Err(d.to_string().into()),
        }
    }
    Ok((n, total))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: sum_field TRACE [RECORD [FIELD]]");
        std::process::exit(2);
    };
    let record = args.get(1).map_or("alloc", String::as_str);
    let field = args.get(2).map_or("size", String::as_str);
    let (n, total) = sum(path, record, field)?;
    println!("{n} {record} records, {field} sums to {total}");
    Ok(())
}

#[test]
fn sums_the_allocated_bytes_of_the_sample_trace() {
    let (n, total) = sum("traces/hatf-le32.mtf", "alloc", "size").unwrap();
    assert_eq!(n, 10);
    // The sizes of traces/src/hatf-le32.txt, some stored in one byte after a metadata record.
    let expected: u64 = std::fs::read_to_string("traces/src/hatf-le32.txt")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("alloc "))
        .filter_map(|l| l.split(' ').find_map(|kv| kv.strip_prefix("size=")))
        .map(|v| v.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, expected);
}

/// Issue 16 item 11: a field read through a section (`sectionStride`) sums as the addresses it
/// stands for, not as the references the records store.
#[test]
fn sums_a_field_read_through_a_section() {
    let (n, total) = sum("traces/hatf-split-le64.mtf", "alloc", "address").unwrap();
    assert_eq!(n, 4);
    // traces/src/hatf-split-le64.txt: three allocs take the addresses stream's elements 0, 1
    // and 2 (stride 1), the fourth stores its address itself.
    let text = std::fs::read_to_string("traces/src/hatf-split-le64.txt").unwrap();
    let stream: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("addr address=0x"))
        .map(|h| u64::from_str_radix(h, 16).unwrap())
        .collect();
    let own: u64 = text
        .lines()
        .filter(|l| l.starts_with("alloc ") && l.contains("address=0x"))
        .filter_map(|l| l.split(' ').find_map(|kv| kv.strip_prefix("address=0x")))
        .map(|h| u64::from_str_radix(h, 16).unwrap())
        .sum();
    assert_eq!(total, stream[0] + stream[1] + stream[2] + own);
}

#[test]
fn runs_on_every_shipped_trace() {
    let mut n = 0;
    for e in std::fs::read_dir("traces").unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|e| e == "mtf") {
            sum(&p.display().to_string(), "alloc", "size")
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            n += 1;
        }
    }
    assert!(n >= 10);
}
