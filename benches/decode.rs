//! Decoding and dumping throughput on a generated HATF trace (criterion).
//!
//! `cargo bench --bench decode`. Figures are machine-dependent: compare runs side by side.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use metatf::analysis::check::Check;
use metatf::container::{ByteOrder, Class, Trace};
use metatf::decode::{Event, Reader};
use metatf::dtd::Interp;
use metatf::encode::{In, TraceWriter};
use metatf::pack::pack_to_vec;
use metatf::text::{DumpHeader, Format, InputFormat, Options, Printer};
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
    // `mtf pack` of the dumps above: the lexer and the encoder, from memory to memory.
    for (name, format, input_format) in [
        ("pack_text", Format::Text, InputFormat::Text),
        ("pack_jsonl", Format::Jsonl, InputFormat::Jsonl),
    ] {
        let reader = Reader::new(&trace, &schema);
        let mut p = Printer::new(
            &reader,
            Options {
                format,
                ..Options::default()
            },
        );
        let mut text = Vec::new();
        let h = trace.header();
        p.header(
            &mut text,
            &DumpHeader {
                dtd: &h.dtd_name,
                class: h.class,
                order: h.byte_order,
            },
        )
        .unwrap();
        let mut records = reader.records();
        while let Some(event) = records.next() {
            if let Event::Record(r) = event {
                p.record(&mut text, &r).unwrap();
            }
        }
        g.bench_function(name, |b| {
            b.iter(|| pack_to_vec(&schema, &text[..], input_format).unwrap().len())
        });
    }
    // `mtf check`'s semantic pass (the DTD's analysis declarations) over decoded records.
    let dtd = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/hatf-bench.dtd"
    ))
    .unwrap();
    let bench_schema = metatf::dtd::parse_str("hatf-bench.dtd", &dtd)
        .unwrap()
        .schema;
    let packed = {
        // The same records in the benchmark DTD: alloc/free with 8-byte addresses.
        let mut w = TraceWriter::in_memory(
            &bench_schema,
            Class::Bits64,
            ByteOrder::Little,
            "hatf-bench.dtd",
        );
        w.section(1).unwrap();
        let alloc = w.lookup("alloc").unwrap();
        let free = w.lookup("free").unwrap();
        let mut live = Vec::new();
        for i in 0..N {
            let addr = 0x7f00_0000_0000 + i * 64;
            w.record(
                alloc,
                &[
                    In::Int(16 + i % 200),
                    In::Int(addr),
                    In::Auto,
                    In::Auto,
                    In::Auto,
                ],
            )
            .unwrap();
            live.push(addr);
            if i % 2 == 1 {
                let a = live.swap_remove((i as usize * 7) % live.len());
                w.record(free, &[In::Int(a), In::Auto, In::Auto, In::Auto])
                    .unwrap();
            }
        }
        Trace::from_bytes(w.finish_to_vec().unwrap()).unwrap()
    };
    g.bench_function("check_semantic", |b| {
        b.iter(|| {
            let reader = Reader::new(&packed, &bench_schema);
            let mut check = Check::new(&bench_schema);
            let mut records = reader.records();
            let mut found = 0usize;
            while let Some(event) = records.next() {
                if let Event::Record(r) = event {
                    found += check.record(&r).len();
                }
            }
            found + check.finish().len()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
