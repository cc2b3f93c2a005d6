//! The writer (`mtf pack`, `mtf encode`) and `mtf compact`: text-form input with a built-in DTD
//! is encoded; the trace written must then
//!
//! * decode without a single problem or damage (a writer never writes an invalid trace);
//! * decode to the values it was given: dumping it and packing the dump gives the same bytes
//!   (docs/text-format.md, *Round trip*: every trace the writer makes is in that class);
//! * compact (plain and with live sets) into a trace that `compact::verify` finds equal, value
//!   for value.
//!
//! These are assertions: a failure is a crash.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::compact::{compact, verify, CompactOptions};
use metatf::container::Trace;
use metatf::decode::{Event, Reader};
use metatf::encode::TraceWriter;
use metatf::text::{DumpHeader, InputFormat, Options, Printer};

fuzz_target!(|data: &[u8]| {
    let Some((bytes, schema)) = metatf_fuzz::pack_text(data, InputFormat::Text) else {
        return;
    };
    let trace = Trace::from_bytes(bytes.clone()).expect("the writer's trace opens");
    let reader = Reader::new(&trace, schema);
    // Decode cleanly, and dump.
    let mut dump = Vec::new();
    let mut printer = Printer::new(&reader, Options::default());
    let h = trace.header();
    printer
        .header(
            &mut dump,
            &DumpHeader {
                dtd: &h.dtd_name,
                class: h.class,
                order: h.byte_order,
            },
        )
        .expect("to memory");
    let mut records = reader.records();
    while let Some(e) = records.next() {
        match e {
            Event::Record(v) => printer.record(&mut dump, &v).expect("to memory"),
            Event::Problem(p) => panic!("the writer's trace has a problem: {p}"),
            Event::Damage(d) => panic!("the writer's trace is damaged: {d}"),
        }
    }
    drop(records);
    // Its dump packs back to the same bytes.
    let again =
        metatf::pack::pack_to_vec(schema, &dump[..], InputFormat::Text).unwrap_or_else(|e| {
            panic!(
                "the dump of the writer's trace does not pack: {e}\n{}",
                String::from_utf8_lossy(&dump)
            )
        });
    assert!(
        again == bytes,
        "dump | pack changed the trace\n{}",
        String::from_utf8_lossy(&dump)
    );
    // Compact, plain and with live sets: the same values.
    for live in [false, true] {
        let mut w = TraceWriter::in_memory(schema, h.class, h.byte_order, &h.dtd_name);
        let opts = CompactOptions {
            window: 64,
            live,
            ..CompactOptions::default()
        };
        match compact(&reader, &mut w, &opts) {
            Ok(_) => {}
            Err(e) => panic!("compact refused the writer's trace: {e}"),
        }
        let out = w.finish_to_vec().expect("compact's writer finishes");
        let t2 = Trace::from_bytes(out).expect("compact's trace opens");
        let r2 = Reader::new(&t2, schema);
        if let Err(e) = verify(&reader, &r2) {
            panic!("compact changed values (live {live}): {e}");
        }
    }
});
