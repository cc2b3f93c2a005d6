//! Write a small HATF trace whose metadata records change a field's width and interpretation
//! half-way: `cargo run --example write_trace -- OUT.mtf`, then `mtf dump OUT.mtf`.
//!
//! The writer checks every value against the live state (the width, the interpretation), as
//! the decoder will read it. `cargo test` runs the test at the bottom, which reads it back.

// Under `cargo test` the example is built as a test: its `main` is not called.
#![cfg_attr(test, allow(dead_code))]

use std::path::Path;

use metatf::container::{ByteOrder, Class};
use metatf::dtd::Interp;
use metatf::encode::TraceWriter;
use metatf::MetaProperty;

/// The sizes and addresses written.
const ALLOCS: [(u64, u64); 6] = [
    (16, 0x1000),
    (32, 0x1010),
    (8, 0x1030),
    (24, 0x1038),
    (64, 0x1050),
    (100_000, 0x9000),
];

fn write(out: &Path) -> Result<u64, Box<dyn std::error::Error>> {
    // The DTD built into `mtf` under the name the header will carry.
    let text = metatf::container::shipped_dtd("hatf10.dtd").ok_or("hatf10.dtd is built in")?;
    let schema = metatf::dtd::parse_str("hatf10.dtd", text)
        .map_err(|e| e.to_string())?
        .schema;
    let mut w = TraceWriter::create(&schema, out, Class::Bits32, ByteOrder::Little, "hatf10.dtd")?;
    w.comment("written by examples/write_trace.rs")?;
    w.section_named("heap")?;
    for (i, &(size, address)) in ALLOCS.iter().enumerate() {
        match i {
            // Small sizes from here on: one byte each.
            2 => w.metadata_named("alloc", "size", MetaProperty::Width(1))?,
            // Addresses as signed one-byte steps from the previous address.
            3 => {
                w.metadata_named(
                    "alloc",
                    "address",
                    MetaProperty::Interp(Interp::Delta(0x1030)),
                )?;
                w.metadata_named("alloc", "address", MetaProperty::Width(1))?;
            }
            // A size that needs four bytes, an address far away: widen both again.
            5 => {
                w.metadata_named("alloc", "size", MetaProperty::Width(4))?;
                w.metadata_named("alloc", "address", MetaProperty::Interp(Interp::None))?;
                w.metadata_named("alloc", "address", MetaProperty::Width(4))?;
            }
            _ => {}
        }
        w.write("alloc")
            .int("size", size)
            .int("address", address)
            .bytes("vfield.data", "")
            .done()?;
    }
    Ok(w.finish()?.bytes)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(out) = std::env::args().nth(1) else {
        eprintln!("usage: write_trace OUT.mtf");
        std::process::exit(2);
    };
    let bytes = write(Path::new(&out))?;
    println!("{out}: {bytes} bytes");
    Ok(())
}

#[test]
fn the_trace_reads_back() {
    use metatf::decode::Event;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.mtf");
    write(&out).unwrap();
    let opened = metatf::open(&out).unwrap();
    let reader = opened.reader();
    let mut got = Vec::new();
    let mut metadata = 0;
    let mut records = reader.records();
    while let Some(event) = records.next() {
        let Event::Record(r) = event else {
            panic!("a problem")
        };
        match r.name() {
            "alloc" => got.push((
                r.get("size").unwrap().as_u64().unwrap(),
                r.get("address").unwrap().as_u64().unwrap(),
            )),
            "metadata" => metadata += 1,
            _ => {}
        }
    }
    assert_eq!(got, ALLOCS);
    assert_eq!(metadata, 6);
}
