//! The writer refuses values it cannot represent, naming the record and the field, and leaves
//! its state as it was.

use metatf::container::{ByteOrder, Class, Trace};
use metatf::decode::{Event, Reader, Value};
use metatf::dtd::Interp;
use metatf::encode::{EncodeError as WriteError, In, TraceWriter};
use metatf::MetaProperty;

use crate::util;

fn writer(schema: &metatf::dtd::Schema) -> TraceWriter<'_> {
    let mut w = TraceWriter::in_memory(schema, Class::Bits32, ByteOrder::Little, "hatf10.dtd");
    w.section(1).unwrap();
    w
}

/// alloc: size, address, time, thread, heap, vfield.length, vfield.data
fn alloc(size: In, address: In, time: In) -> Vec<In> {
    vec![
        size,
        address,
        time,
        In::Auto,
        In::Auto,
        In::Int(0),
        In::Bytes(vec![]),
    ]
}

fn message(e: WriteError) -> String {
    e.to_string()
}

#[test]
fn default_field_given_another_value() {
    let schema = util::schema("dtds/hatf10.dtd");
    let mut w = writer(&schema);
    let e = w
        .record_named("alloc", &alloc(In::Int(1), In::Int(2), In::Int(5)))
        .unwrap_err();
    assert_eq!(
        message(e),
        "alloc.time: value 5 differs from the current default 0"
    );
}

#[test]
fn delta_that_does_not_fit() {
    let schema = util::schema("dtds/hatf10.dtd");
    let mut w = writer(&schema);
    let a = w.lookup("alloc").unwrap();
    w.metadata(a, 3, MetaProperty::Interp(Interp::Delta(100)))
        .unwrap();
    w.metadata(a, 3, MetaProperty::Width(1)).unwrap();
    w.record(a, &alloc(In::Int(1), In::Int(2), In::Int(227)))
        .unwrap();
    let e = w
        .record(a, &alloc(In::Int(1), In::Int(2), In::Int(356)))
        .unwrap_err();
    assert_eq!(
        message(e),
        "alloc.time: value 356 is 129 from the previous value 227, which does not fit in 1 signed byte(s)"
    );
    // The refused record changed nothing: the next delta is still taken from 227.
    w.record(a, &alloc(In::Int(1), In::Int(2), In::Int(100)))
        .unwrap();
    let bytes = w.finish_to_vec().unwrap();
    let trace = Trace::from_bytes(bytes).unwrap();
    let reader = Reader::new(&trace, &schema);
    let mut records = reader.records();
    let mut times = Vec::new();
    while let Some(event) = records.next() {
        let Event::Record(r) = event else {
            panic!("{event:?}")
        };
        if r.name() == "alloc" {
            times.push(r.field("time").unwrap().value().as_u64().unwrap());
        }
    }
    assert_eq!(times, vec![227, 100]);
    let _ = Value::Int(0);
}

#[test]
fn stride_that_does_not_match() {
    let schema = util::schema("dtds/hatf10.dtd");
    let mut w = writer(&schema);
    let f = w.lookup("free").unwrap();
    w.metadata(
        f,
        1,
        MetaProperty::Interp(Interp::Stride {
            initial: 4096,
            stride: 16,
        }),
    )
    .unwrap();
    let free = |a: In| {
        vec![
            a,
            In::Auto,
            In::Auto,
            In::Auto,
            In::Int(0),
            In::Bytes(vec![]),
        ]
    };
    w.record(f, &free(In::Int(4112))).unwrap();
    w.record(f, &free(In::Auto)).unwrap();
    let e = w.record(f, &free(In::Int(4160))).unwrap_err();
    assert_eq!(
        message(e),
        "free.address: value 4160 does not match the stride: expected 4144"
    );
}

#[test]
fn base_offset_out_of_reach() {
    let schema = util::schema("dtds/hatf10.dtd");
    let mut w = writer(&schema);
    let a = w.lookup("alloc").unwrap();
    w.metadata(a, 2, MetaProperty::Interp(Interp::BaseOffset(1000)))
        .unwrap();
    w.metadata(a, 2, MetaProperty::Width(1)).unwrap();
    let e = w
        .record(a, &alloc(In::Int(1), In::Int(1200), In::Auto))
        .unwrap_err();
    assert_eq!(
        message(e),
        "alloc.address: value 1200 is 200 from base 1000, which does not fit in 1 signed byte(s)"
    );
}

#[test]
fn byte_string_and_its_length_disagree() {
    let schema = util::schema("dtds/hatf10.dtd");
    let mut w = writer(&schema);
    let v = vec![
        In::Int(1),
        In::Int(2),
        In::Auto,
        In::Auto,
        In::Auto,
        In::Int(3),
        In::Bytes(b"ab".to_vec()),
    ];
    let e = w.record_named("alloc", &v).unwrap_err();
    assert_eq!(
        message(e),
        "alloc.vfield.data: 2 byte(s) given, but the width expression says 3"
    );
}

#[test]
fn shape_errors() {
    let schema = util::schema("dtds/hatf10.dtd");
    let mut w = writer(&schema);
    let e = w.record_named("alloc", &[In::Int(1)]).unwrap_err();
    assert_eq!(
        message(e),
        "alloc.address: no value given; the field's interpretation none needs one"
    );
    let mut long = alloc(In::Int(1), In::Int(2), In::Auto);
    long.push(In::Int(9));
    let e = w.record_named("alloc", &long).unwrap_err();
    assert!(message(e).contains("more than the record holds"));
    let e = w.record_named("nosuch", &[]).unwrap_err();
    assert_eq!(message(e), "no record type `nosuch` in this section");
    let e = w.section(1).unwrap_err();
    assert!(message(e).contains("already written"));
    let e = w.section(9).unwrap_err();
    assert!(message(e).contains("not declared"));
}

#[test]
fn metadata_the_rules_refuse() {
    let schema = util::schema("dtds/hatf10.dtd");
    let mut w = writer(&schema);
    let a = w.lookup("alloc").unwrap();
    let e = w.metadata(a, 3, MetaProperty::Width(2)).unwrap_err();
    assert!(message(e)
        .contains("width 2 on field `alloc.time` whose interpretation `default` has width 0"));
    let e = w.metadata(a, 0, MetaProperty::Width(2)).unwrap_err();
    assert!(message(e).contains("tag field"));
    // A 64-bit base does not fit a 32-bit trace's metadata word.
    let e = w
        .metadata(a, 2, MetaProperty::Interp(Interp::BaseOffset(1 << 40)))
        .unwrap_err();
    assert!(message(e).contains("does not fit the 4-byte metadata word"));
}

#[test]
fn records_of_another_section_are_refused() {
    let schema = util::schema("dtds/hatf10-split.dtd");
    let mut w = TraceWriter::in_memory(&schema, Class::Bits64, ByteOrder::Big, "hatf10-split.dtd");
    // The global region holds only global records.
    assert!(w.record_named("alloc", &[]).is_err());
    w.comment("global comment").unwrap();
    w.section(2).unwrap();
    let e = w.record_named("alloc", &[]).unwrap_err();
    assert_eq!(message(e), "no record type `alloc` in this section");
    w.record_named("addr", &[In::Int(0x1000)]).unwrap();
}
