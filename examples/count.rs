//! Count the records of each type in a trace: `cargo run --example count -- TRACE`.
//!
//! The DTD is found as `mtf` finds it (beside the trace, `MTF_DTD_PATH`, or built in).

use metatf::decode::Event;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: count TRACE");
        std::process::exit(2);
    };
    let opened = metatf::open(&path)?;
    let reader = opened.reader();
    let schema = opened.schema();
    let mut counts = vec![0u64; schema.records.len()];
    let mut problems = 0u64;
    let mut records = reader.records();
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
    for (rid, n) in counts.iter().enumerate() {
        if *n > 0 {
            println!("{:<20} {n}", schema.record(rid as u32).name);
        }
    }
    if problems > 0 {
        eprintln!("{problems} problem(s)");
        std::process::exit(1);
    }
    Ok(())
}
