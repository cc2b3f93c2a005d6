//! Decoding and dumping throughput on a generated HATF trace (criterion).
//!
//! `cargo bench --bench decode`. Figures are machine-dependent: compare runs side by side.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use metatf::container::{ByteOrder, Class, Trace};
use metatf::decode::{Event, Reader};
use metatf::dtd::Interp;
use metatf::encode::{In, TraceWriter};
use metatf::text::{Format, Options, Printer};
use metatf::MetaProperty;

const N: u64 = 200_000;

fn make_trace(schema: &metatf::dtd::Schema) -> Vec<u8> {
    let mut w = TraceWriter::in_memory(schema, Class::Bits64, ByteOrder::Little, "hatf10.dtd");
    w.section(1).unwrap();
    let alloc = w.lookup("alloc").unwrap();
    let free = w.lookup("free").unwrap();
    // A realistic mix: 1-byte sizes, delta-coded addresses and times.
    w.metadata(alloc, 1, MetaProperty::Width(1)).unwrap();
    w.metadata(alloc, 2, MetaProperty::Interp(Interp::Delta(0x10000)))
        .unwrap();
    w.metadata(alloc, 2, MetaProperty::Width(2)).unwrap();
    w.metadata(alloc, 3, MetaProperty::Interp(Interp::Delta(0)))
        .unwrap();
    w.metadata(alloc, 3, MetaProperty::Width(1)).unwrap();
    let mut addr = 0x10000u64;
    for i in 0..N {
        addr += 16 + (i % 7) * 8;
        w.record(
            alloc,
            &[
                In::Int(16 + i % 200),
                In::Int(addr),
                In::Int(i),
                In::Auto,
                In::Auto,
                In::Int(0),
                In::Bytes(vec![]),
            ],
        )
        .unwrap();
        if i % 2 == 1 {
            w.record(
                free,
                &[
                    In::Int(addr),
                    In::Auto,
                    In::Auto,
                    In::Auto,
                    In::Int(0),
                    In::Bytes(vec![]),
                ],
            )
            .unwrap();
        }
    }
    w.finish_to_vec().unwrap()
}

fn bench(c: &mut Criterion) {
    let dtd =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/dtds/hatf10.dtd")).unwrap();
    let schema = metatf::dtd::parse_str("hatf10.dtd", &dtd).unwrap().schema;
    let bytes = make_trace(&schema);
    let trace = Trace::from_bytes(bytes).unwrap();
    let nrecords = trace.header().nrecords;
    let mut g = c.benchmark_group("hatf");
    g.throughput(Throughput::Elements(nrecords));
    g.bench_function("decode", |b| {
        b.iter(|| {
            let reader = Reader::new(&trace, &schema);
            let mut records = reader.records();
            let mut sum = 0u64;
            while let Some(event) = records.next() {
                let Event::Record(r) = event else {
                    panic!("the generated trace is valid")
                };
                sum = sum.wrapping_add(r.len());
            }
            sum
        })
    });
    g.bench_function("dump_text", |b| {
        b.iter(|| {
            let reader = Reader::new(&trace, &schema);
            let mut p = Printer::new(
                &reader,
                Options {
                    format: Format::Text,
                    ..Options::default()
                },
            );
            let mut records = reader.records();
            let mut out = std::io::sink();
            while let Some(event) = records.next() {
                if let Event::Record(r) = event {
                    p.record(&mut out, &r).unwrap();
                }
            }
        })
    });
    // JSON lines written straight to the output (no value tree): compare with dump_text.
    g.bench_function("dump_jsonl", |b| {
        b.iter(|| {
            let reader = Reader::new(&trace, &schema);
            let mut p = Printer::new(
                &reader,
                Options {
                    format: Format::Jsonl,
                    ..Options::default()
                },
            );
            let mut records = reader.records();
            let mut out = std::io::sink();
            while let Some(event) = records.next() {
                if let Event::Record(r) = event {
                    p.record(&mut out, &r).unwrap();
                }
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
