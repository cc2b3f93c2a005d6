//! Count the records of each type in a trace: `cargo run --example count -- TRACE`.
//!
//! The DTD is found as `mtf` finds it (beside the trace, `MTF_DTD_PATH`, or built in).
//! `cargo test` runs the test at the bottom on a sample trace.

// Under `cargo test` the example is built as a test: its `main` is not called.
#![cfg_attr(test, allow(dead_code))]

use metatf::decode::Event;

/// Records per type name, in the DTD's order.
type Counts = Vec<(String, u64)>;

/// The records per type and the number of problems met.
fn count(path: &str) -> Result<(Counts, u64), Box<dyn std::error::Error>> {
    let opened = metatf::open(path)?;
    let reader = opened.reader();
    let schema = opened.schema();
    let mut counts = vec![0u64; schema.records.len()];
    let mut problems = 0u64;
    let mut records = reader.records();
    // `Records` lends each record until the next call: nothing is allocated per record.
    while let Some(event) = records.next() {
        match event {
            Event::Record(r) => counts[r.record_id() as usize] += 1,
            Event::Problem(p) => {
                problems += 1;
                eprintln!("{p}");
            }
            Event::Damage(d) => {
                problems += 1;
                eprintln!("{d}");
            }
        }
    }
    let named = counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(rid, n)| (schema.record(rid as u32).name.clone(), *n))
        .collect();
    Ok((named, problems))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: count TRACE");
        std::process::exit(2);
    };
    let (counts, problems) = count(&path)?;
    for (name, n) in counts {
        println!("{name:<20} {n}");
    }
    if problems > 0 {
        eprintln!("{problems} problem(s)");
        std::process::exit(1);
    }
    Ok(())
}

#[test]
fn counts_the_sample_trace() {
    let (counts, problems) = count("traces/hatf-le32.mtf").unwrap();
    assert_eq!(problems, 0);
    assert!(counts.contains(&("alloc".to_string(), 10)), "{counts:?}");
}

/// Every shipped trace (issue 16: the examples run on each).
#[cfg(test)]
fn shipped_traces() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("traces")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtf"))
        .map(|p| p.display().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn counts_every_shipped_trace() {
    let traces = shipped_traces();
    assert!(traces.len() >= 10, "{traces:?}");
    for t in traces {
        let (counts, problems) = count(&t).unwrap_or_else(|e| panic!("{t}: {e}"));
        assert_eq!(problems, 0, "{t}");
        assert!(!counts.is_empty(), "{t}");
    }
}
