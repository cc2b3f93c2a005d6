//! The records per type and a checksum of every decoded value of a trace's data records:
//! `cargo run --release --example checksum -- TRACE`.
//!
//! benches/handwritten.rs prints the same two lines for the benchmark traces of
//! examples/gen_hatf.rs; equal lines mean the generic decoder and the hand-written one decode the
//! same values. The checksum folds every integer field after the tag, in slot order, as FNV-1a
//! folds bytes: `h = (h ^ value) * 0x100000001b3`.

// Under `cargo test` the example is built as a test: its `main` is not called.
#![cfg_attr(test, allow(dead_code))]

use metatf::decode::Event;

const P: u64 = 0x0000_0100_0000_01B3;
const SEED: u64 = 0xCBF2_9CE4_8422_2325;

/// Records per type name, in the DTD's order (the types that occur).
type Counts = Vec<(String, u64)>;

/// The records per type and the checksum.
fn checksum(path: &str) -> Result<(Counts, u64), Box<dyn std::error::Error>> {
    let opened = metatf::open(path)?;
    let reader = opened.reader();
    let schema = opened.schema();
    let mut counts = vec![0u64; schema.records.len()];
    let mut h = SEED;
    let mut records = reader.records();
    while let Some(event) = records.next() {
        match event {
            Event::Record(r) => {
                if !r.is_data() {
                    continue;
                }
                counts[r.record_id() as usize] += 1;
                for f in r.fields().skip(1) {
                    if let Some(v) = f.as_u64() {
                        h = (h ^ v).wrapping_mul(P);
                    }
                }
            }
            Event::Problem(p) => return Err(p.to_string().into()),
            Event::Damage(d) => return Err(d.to_string().into()),
        }
    }
    let named = counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(rid, n)| (schema.record(rid as u32).name.clone(), *n))
        .collect();
    Ok((named, h))
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: checksum TRACE");
        std::process::exit(2);
    };
    match checksum(&path) {
        Ok((counts, h)) => {
            let counts: Vec<String> = counts.iter().map(|(n, c)| format!("{n}={c}")).collect();
            println!("records {}", counts.join(" "));
            println!("checksum {h:016x}");
        }
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sample's values, folded by hand: every alloc is (size, address, time, thread, heap).
    #[test]
    fn checksum_counts_the_data_records_of_a_sample() {
        let (counts, h) = checksum("traces/hatf-le32.mtf").expect("the sample opens");
        assert!(
            counts.iter().any(|(n, c)| n == "alloc" && *c == 10),
            "{counts:?}"
        );
        assert_ne!(h, SEED);
    }
}
