//! The decoder's fast path (records whose layout is fixed under the current metadata) decodes
//! the same values as the layout walker, and gives way to it when metadata changes a record
//! type, when a record type is not fixed, and when a record is cut short.

use metatf::container::{ByteOrder, Class, Trace};
use metatf::decode::{Event, Reader};
use metatf::dtd::{Interp, Schema};
use metatf::encode::{In, TraceWriter};
use metatf::MetaProperty;

const DTD: &str = "
    tag.width = 1;
    x.width = 2;   x.interpretation = none;
    d.width = 1;   d.interpretation = delta 100;
    s.width = 2;   s.interpretation = none;  s.display = signed;
    k.interpretation = default 9;
    flat : (tag, x, d, s, k) { tag.value = 4; }
    text : (tag, vfield) { tag.value = 5; }
";

fn schema() -> Schema {
    metatf::dtd::parse_str("fast.dtd", DTD).unwrap().schema
}

/// Every record's (name, values after the tag), and the problems and damage as text.
fn decode(schema: &Schema, bytes: Vec<u8>) -> (Vec<(String, Vec<String>)>, Vec<String>) {
    let trace = Trace::from_bytes(bytes).unwrap();
    let reader = Reader::new(&trace, schema);
    let mut records = reader.records();
    let (mut out, mut bad) = (Vec::new(), Vec::new());
    while let Some(event) = records.next() {
        match event {
            Event::Record(r) => {
                if r.name() == "metadata" {
                    continue;
                }
                let values = r
                    .fields()
                    .skip(1)
                    .map(|f| format!("{:?}", f.value()))
                    .collect();
                out.push((r.name().to_string(), values));
            }
            Event::Problem(p) => bad.push(p.to_string()),
            Event::Damage(d) => bad.push(d.to_string()),
        }
    }
    (out, bad)
}

fn flat(x: u64, d: u64, s: i64) -> Vec<In> {
    vec![In::Int(x), In::Int(d), In::Neg(s), In::Auto]
}

#[test]
fn metadata_changes_are_seen_by_the_next_record() {
    let schema = schema();
    let mut w = TraceWriter::in_memory(&schema, Class::Bits64, ByteOrder::Little, "fast.dtd");
    let f = w.lookup("flat").unwrap();
    let t = w.lookup("text").unwrap();
    let mut expected: Vec<(u64, u64, i64)> = Vec::new();
    let mut put = |w: &mut TraceWriter<'_>, x: u64, d: u64, s: i64| {
        w.record(f, &flat(x, d, s)).unwrap();
        expected.push((x, d, s));
    };
    put(&mut w, 7, 101, -2);
    put(&mut w, 65535, 50, 300);
    w.record(t, &[In::Int(2), In::Bytes(b"hi".to_vec())])
        .unwrap();
    // Wider, then based, then a stride: each takes effect at the next record.
    w.metadata(f, 1, MetaProperty::Width(4)).unwrap();
    put(&mut w, 70000, 60, -32768);
    w.metadata(f, 1, MetaProperty::Interp(Interp::BaseOffset(1 << 40)))
        .unwrap();
    put(&mut w, (1 << 40) - 5, 61, 0);
    w.metadata(f, 2, MetaProperty::Interp(Interp::Delta(7)))
        .unwrap();
    put(&mut w, 1 << 40, 8, 1);
    w.metadata(
        f,
        1,
        MetaProperty::Interp(Interp::Stride {
            initial: 10,
            stride: -3,
        }),
    )
    .unwrap();
    put(&mut w, 7, 9, 2);
    put(&mut w, 4, 10, 3);
    w.metadata(f, 1, MetaProperty::Interp(Interp::None))
        .unwrap();
    w.metadata(f, 1, MetaProperty::Width(1)).unwrap();
    put(&mut w, 255, 11, -1);
    // A fixed field shown signed is sign-extended on the fast path as on the walker's.
    w.metadata(f, 3, MetaProperty::Width(1)).unwrap();
    put(&mut w, 3, 12, -128);
    let (records, bad) = decode(&schema, w.finish_to_vec().unwrap());
    assert!(bad.is_empty(), "{bad:?}");
    let flats: Vec<_> = records.iter().filter(|(n, _)| n == "flat").collect();
    assert_eq!(flats.len(), expected.len());
    for ((_, got), (x, d, s)) in flats.iter().zip(&expected) {
        let want: Vec<String> = [
            format!("Int({x})"),
            format!("Int({d})"),
            format!("Int({})", *s as u64),
            "Int(9)".to_string(),
        ]
        .to_vec();
        assert_eq!(got, &want);
    }
    assert_eq!(records[2].0, "text");
}

#[test]
fn a_record_cut_short_is_reported_where_its_bytes_end() {
    let schema = schema();
    let mut w = TraceWriter::in_memory(&schema, Class::Bits64, ByteOrder::Little, "fast.dtd");
    let f = w.lookup("flat").unwrap();
    for i in 0..3 {
        w.record(f, &flat(i, 100 + i, 0)).unwrap();
    }
    let whole = w.finish_to_vec().unwrap();
    // Each flat record is 1 + 2 + 1 + 2 bytes; cut the last one inside its `s` field.
    let mut cut = whole.clone();
    cut.truncate(whole.len() - 1);
    let (records, bad) = decode(&schema, cut);
    assert_eq!(records.len(), 2, "{records:?}");
    // The walker's message: the field that does not fit and the byte where it starts.
    let start = whole.len() as u64 - 6;
    let at = format!(
        "byte {}, record #2, global region, flat.s: truncated: needs 2",
        start + 4
    );
    assert!(bad.len() == 1 && bad[0].starts_with(&at), "{bad:?}");
    let (whole_records, _) = decode(&schema, whole);
    assert_eq!(&whole_records[..2], &records[..]);
}

/// With values skipped, the problems, damage and record types are those of a full decode, and
/// `delta` state still advances: values read after skipping are the full decode's.
#[test]
fn skipping_values_validates_the_same_and_keeps_the_state() {
    let schema = schema();
    let mut w = TraceWriter::in_memory(&schema, Class::Bits64, ByteOrder::Little, "fast.dtd");
    let f = w.lookup("flat").unwrap();
    let t = w.lookup("text").unwrap();
    for i in 0..50u64 {
        w.record(f, &flat(i, 100 + 3 * i, -(i as i64))).unwrap();
        if i % 7 == 0 {
            w.record(t, &[In::Int(1), In::Bytes(vec![b'a'])]).unwrap();
        }
        if i == 20 {
            w.metadata(f, 2, MetaProperty::Width(2)).unwrap();
        }
    }
    let whole = w.finish_to_vec().unwrap();
    for bytes in [whole.clone(), whole[..whole.len() - 3].to_vec()] {
        let trace = Trace::from_bytes(bytes).unwrap();
        let reader = Reader::new(&trace, &schema);
        let (mut full, mut skipped) = (Vec::new(), Vec::new());
        for (skip, out) in [(false, &mut full), (true, &mut skipped)] {
            let mut records = reader.records();
            records.skip_values(skip);
            let mut n = 0;
            while let Some(event) = records.next() {
                // Values are compared after the first 30 events, which skip them (when asked).
                records_event(&event, out, n >= 30);
                n += 1;
                if n == 30 {
                    records.skip_values(false);
                }
            }
        }
        assert_eq!(full, skipped);
    }
}

fn records_event(event: &Event<'_>, out: &mut Vec<String>, values: bool) {
    out.push(match event {
        Event::Record(r) if values => format!(
            "{} {:?}",
            r.name(),
            r.fields().map(|f| f.value().as_u64()).collect::<Vec<_>>()
        ),
        Event::Record(r) => r.name().to_string(),
        Event::Problem(p) => p.to_string(),
        Event::Damage(d) => d.to_string(),
    });
}

const LABELS: &str = "
    tag.width = 1;
    x.width = 2;   x.interpretation = none;
    d.width = 1;   d.interpretation = delta 100;
    label : (len, data) {
        len.width = 1;  len.interpretation = none;
        data.width = len.value;  data.interpretation = none;
    }
    lab : (tag, x, note : label, d, tail : (len, data)) {
        tag.value = 4;
        tail.len.interpretation = default 2;
        tail.data.width = tail.len.value;  tail.data.interpretation = none;
    }
";

/// Each `lab` record's values as the reader gives them: integers and byte strings.
fn labels(schema: &Schema, bytes: Vec<u8>, skip_first: usize) -> (Vec<String>, Vec<String>) {
    let trace = Trace::from_bytes(bytes).unwrap();
    let reader = Reader::new(&trace, schema);
    let mut records = reader.records();
    records.skip_values(skip_first > 0);
    let (mut out, mut bad) = (Vec::new(), Vec::new());
    let mut n = 0;
    while let Some(event) = records.next() {
        match event {
            Event::Record(r) if r.name() == "lab" => {
                n += 1;
                if n > skip_first {
                    let v: Vec<String> = r
                        .fields()
                        .skip(1)
                        .map(|f| match f.as_bytes() {
                            Some(b) => String::from_utf8_lossy(b).into_owned(),
                            None => f.value().as_u64().unwrap().to_string(),
                        })
                        .collect();
                    out.push(v.join(" "));
                }
            }
            Event::Record(_) => {}
            Event::Problem(p) => bad.push(p.to_string()),
            Event::Damage(d) => bad.push(d.to_string()),
        }
        if n == skip_first {
            records.skip_values(false);
        }
    }
    (out, bad)
}

/// Records with byte strings whose length a field holds (or a constant) are laid out by their
/// plan: the values are the ones written, before and after metadata changes the length field's
/// width or makes it a `default`, with values skipped for the first records or not; one cut
/// inside a string is reported where the walker reports it.
#[test]
fn byte_strings_of_a_field_given_length_decode_as_written() {
    let schema = metatf::dtd::parse_str("labels.dtd", LABELS).unwrap().schema;
    let mut w = TraceWriter::in_memory(&schema, Class::Bits64, ByteOrder::Little, "labels.dtd");
    let lab = w.lookup("lab").unwrap();
    let mut want = Vec::new();
    let mut put = |w: &mut TraceWriter<'_>, x: u64, note: &str, d: u64, len: In| {
        let n = note.len() as u64;
        w.record(
            lab,
            &[
                In::Int(x),
                len,
                In::Bytes(note.as_bytes().to_vec()),
                In::Int(d),
                In::Auto,
                In::Bytes(b"zz".to_vec()),
            ],
        )
        .unwrap();
        want.push(format!("{x} {n} {note} {d} 2 zz"));
    };
    for i in 0..6u64 {
        let note = &"abcdefgh"[..i as usize];
        put(&mut w, i, note, 101 + i, In::Int(note.len() as u64));
    }
    // A wider length, then a length that is a constant (`default 3`), then back.
    w.metadata(lab, 2, MetaProperty::Width(2)).unwrap();
    put(&mut w, 300, "wider", 110, In::Int(5));
    w.metadata(lab, 2, MetaProperty::Interp(Interp::Default(3)))
        .unwrap();
    put(&mut w, 301, "abc", 111, In::Auto);
    w.metadata(lab, 2, MetaProperty::Interp(Interp::Default(2)))
        .unwrap();
    put(&mut w, 302, "xy", 112, In::Auto);
    w.metadata(lab, 2, MetaProperty::Interp(Interp::None))
        .unwrap();
    put(&mut w, 303, "", 113, In::Int(0));
    let whole = w.finish_to_vec().unwrap();
    for skip in [0, 3, 8] {
        let (got, bad) = labels(&schema, whole.clone(), skip);
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(got, want[skip..], "values skipped for the first {skip}");
    }
    // The last record is tag, x (2), len (2), "" (0), d (1), tail len (`default 2`, no
    // bytes), tail data (2): cut inside the tail's data, the walker's message names it.
    let cut = whole[..whole.len() - 1].to_vec();
    let (got, bad) = labels(&schema, cut, 0);
    assert_eq!(got, want[..want.len() - 1]);
    assert!(
        bad.len() == 1 && bad[0].contains("lab.tail.data: truncated: needs 2"),
        "{bad:?}"
    );
}
