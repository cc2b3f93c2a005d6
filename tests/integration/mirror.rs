//! The writer is the decoder's mirror: every rule of docs/format.md §5.4, §6.4, §8 and §9.2 that
//! a writer can break is refused when writing, with the record and field named — and what the
//! writer accepts, the decoder accepts.

use metatf::container::{ByteOrder, Class, Trace};
use metatf::decode::{Event, Reader, RefError};
use metatf::dtd::{Interp, Schema};
use metatf::encode::{EncodeError, EncodeErrorKind, FieldIn, Fields, In, TraceWriter};
use metatf::MetaProperty;

use crate::util;

const DTD: &str = "tests/data/check/mirror.dtd";

fn writer(schema: &Schema) -> TraceWriter<'_> {
    TraceWriter::in_memory(schema, Class::Bits32, ByteOrder::Little, "mirror.dtd")
}

fn strings(w: &mut TraceWriter<'_>, s: &[&str]) {
    w.section_named("strings").unwrap();
    for s in s {
        w.write("string")
            .bytes("vfield.data", s.as_bytes())
            .done()
            .unwrap();
    }
}

/// Decode a trace and count its problems and damage.
fn decoder_problems(bytes: Vec<u8>, schema: &Schema) -> usize {
    let trace = Trace::from_bytes(bytes).unwrap();
    let reader = Reader::new(&trace, schema);
    let mut records = reader.records();
    let mut n = 0;
    while let Some(e) = records.next() {
        if !matches!(e, Event::Record(_)) {
            n += 1;
        }
    }
    n
}

fn is_ref(e: &EncodeError) -> Option<RefError> {
    match e.kind() {
        EncodeErrorKind::Reference(r) => Some(*r),
        _ => None,
    }
}

#[test]
fn fixed_value_is_refused() {
    let schema = util::schema(DTD);
    let mut w = writer(&schema);
    w.section_named("main").unwrap();
    let e = w.write("fixed").int("k", 6).done().unwrap_err();
    assert_eq!(
        e.to_string(),
        "fixed.k: value 6 differs from the DTD's fixed value 7"
    );
    w.write("fixed").int("k", 7).done().unwrap();
    assert_eq!(decoder_problems(w.finish_to_vec().unwrap(), &schema), 0);
}

#[test]
fn section_offset_between_elements_is_refused_when_the_table_is_written() {
    let schema = util::schema(DTD);
    let mut w = writer(&schema);
    strings(&mut w, &["ab", "cde"]);
    w.section_named("main").unwrap();
    // Elements start at 0 and 4 (tag, length, 2 bytes).
    w.write("ref").offset("s", 4).done().unwrap();
    let e = w.write("ref").offset("s", 1).done().unwrap_err();
    assert_eq!(e.field(), Some("s"));
    assert!(
        matches!(is_ref(&e), Some(RefError::BadOffset { offset: 1, .. })),
        "{e}"
    );
    let e = w.write("ref").offset("s", 200).done().unwrap_err();
    assert!(e.to_string().contains("outside section 2"), "{e}");
    assert_eq!(decoder_problems(w.finish_to_vec().unwrap(), &schema), 0);
}

#[test]
fn section_offset_before_its_table_is_checked_at_the_end() {
    let schema = util::schema(DTD);
    let mut w = writer(&schema);
    w.section_named("main").unwrap();
    w.write("ref").offset("s", 0).done().unwrap();
    w.write("ref").offset("s", 3).done().unwrap();
    strings(&mut w, &["ab", "cde"]);
    let e = w.finish_to_vec().unwrap_err();
    assert_eq!(e.record_index(), Some(2), "the second `ref` record");
    assert!(
        matches!(is_ref(&e), Some(RefError::BadOffset { offset: 3, .. })),
        "{e}"
    );
}

#[test]
fn a_reference_to_a_section_never_written_is_refused() {
    let schema = util::schema(DTD);
    let mut w = writer(&schema);
    w.section_named("main").unwrap();
    w.write("ref").offset("s", 0).done().unwrap();
    let e = w.finish_to_vec().unwrap_err();
    assert_eq!(
        is_ref(&e),
        Some(RefError::MissingSection { section: 2 }),
        "{e}"
    );
}

#[test]
fn section_stride_past_the_table_is_refused() {
    let schema = util::schema(DTD);
    let mut w = writer(&schema);
    strings(&mut w, &["a", "b"]);
    w.section_named("main").unwrap();
    w.write("walk").done().unwrap();
    w.write("walk").done().unwrap();
    let e = w.write("walk").done().unwrap_err();
    assert_eq!(e.field(), Some("w"));
    assert!(
        matches!(
            is_ref(&e),
            Some(RefError::BadIndex {
                index: 2,
                count: 2,
                ..
            })
        ),
        "{e}"
    );
    // A negative stride walks below the first element.
    w.write("back").done().unwrap();
    let e = w.write("back").done().unwrap_err();
    assert!(
        matches!(is_ref(&e), Some(RefError::BadIndex { index: -1, .. })),
        "{e}"
    );
    assert_eq!(decoder_problems(w.finish_to_vec().unwrap(), &schema), 0);
}

#[test]
fn section_stride_into_a_later_table_is_checked_at_the_end() {
    let schema = util::schema(DTD);
    let mut w = writer(&schema);
    w.section_named("main").unwrap();
    for _ in 0..3 {
        w.write("walk").done().unwrap();
    }
    strings(&mut w, &["a", "b"]);
    let e = w.finish_to_vec().unwrap_err();
    assert!(
        matches!(is_ref(&e), Some(RefError::BadIndex { index: 2, .. })),
        "{e}"
    );
}

#[test]
fn offsets_into_a_section_set_by_metadata_after_it_was_written_are_checked() {
    let schema = util::schema(DTD);
    let mut w = writer(&schema);
    // No declared `sectionOffset` points into `other`: its element offsets are not kept.
    w.section_named("other").unwrap();
    w.write("o").int("v", 1).done().unwrap();
    w.write("o").int("v", 2).done().unwrap();
    w.section_named("main").unwrap();
    w.metadata_named("plain", "v", MetaProperty::Interp(Interp::SectionOffset(3)))
        .unwrap();
    w.write("plain").offset("v", 2).done().unwrap();
    w.write("plain").offset("v", 1).done().unwrap();
    // Checked at the end by decoding `other`.
    let e = w.finish_to_vec().unwrap_err();
    assert_eq!(e.record_index(), Some(6));
    assert!(
        matches!(is_ref(&e), Some(RefError::BadOffset { offset: 1, .. })),
        "{e}"
    );
}

#[test]
fn too_many_empty_items_are_refused() {
    let schema = util::schema(DTD);
    let mut w = writer(&schema);
    w.section_named("main").unwrap();
    let e = w
        .record_named("empty", &[In::Int(metatf::MAX_EMPTY_REPEAT + 1)])
        .unwrap_err();
    assert_eq!(e.field(), Some("n"));
    assert!(
        matches!(e.kind(), EncodeErrorKind::RepeatTooLong { .. }),
        "{e}"
    );
    // At that limit, a 5-byte record holds far more than its own allowance (one occurrence per
    // field, 3, and 64 per byte): the excess, 65,215, comes out of the writer's reserve of 2^21,
    // which lasts 32 such records.
    for _ in 0..32 {
        w.record_named("empty", &[In::Int(metatf::MAX_EMPTY_REPEAT)])
            .unwrap();
    }
    let e = w
        .record_named("empty", &[In::Int(metatf::MAX_EMPTY_REPEAT)])
        .unwrap_err();
    assert!(
        matches!(e.kind(), EncodeErrorKind::SparseRecord { bytes: 5, .. }),
        "{e}"
    );
    assert!(
        e.to_string().contains(
            "field occurrences in 5 byte(s); the limit is 10595 (one per field of its type, 64 per byte, and what is left of a writer's reserve of 2097152)"
        ),
        "{e}"
    );
    // With the reserve (nearly) spent, a record's own allowance is still there: 3 + 64·5
    // occurrences, the tag and the count among them. Written, and read back.
    let most = 3 + 64 * 5 - 2;
    w.record_named("empty", &[In::Int(most)]).unwrap();
    assert_eq!(decoder_problems(w.finish_to_vec().unwrap(), &schema), 0);
}

/// The reader's side of the bound: records of 5 bytes holding 65,535 items of no bytes each
/// draw on the trace's reserve of 2^22 occurrences; the 65th is refused, and decoding resumes
/// at the next region. The work a trace can cause is bounded by its size.
#[test]
fn sparse_records_are_refused_by_the_reader() {
    let schema = util::schema(DTD);
    // section main: the section record, then 70 × `empty` with n = 65,535 (4 bytes).
    let mut main = vec![2, 1];
    for _ in 0..70 {
        main.extend_from_slice(&[11, 0xff, 0xff, 0, 0]);
    }
    let t = util::assemble("mirror.dtd", 71, &[], &[(1, main)]);
    let trace = metatf::container::Trace::from_bytes(t).unwrap();
    let reader = metatf::decode::Reader::new(&trace, &schema);
    let mut records = reader.records();
    let mut damage = Vec::new();
    let mut n = 0;
    while let Some(e) = records.next() {
        match e {
            metatf::decode::Event::Damage(d) => damage.push(d.to_string()),
            metatf::decode::Event::Record(_) => n += 1,
            metatf::decode::Event::Problem(_) => {}
        }
    }
    assert_eq!(n, 1 + 64);
    assert_eq!(damage.len(), 1, "{damage:?}");
    assert!(
        damage[0].contains("field occurrences in 5 byte(s); the limit is")
            && damage[0].contains("what is left of the trace's reserve of 4194304"),
        "{damage:?}"
    );
}

#[test]
fn records_with_too_many_field_occurrences_are_refused() {
    let schema = util::schema(DTD);
    let mut w = writer(&schema);
    w.section_named("main").unwrap();
    // 17,000 × 250 empty items: each item's 4-byte count keeps the record within 64
    // occurrences per byte, but together they pass 2^22 occurrences.
    let mut values = vec![In::Int(17_000)];
    for _ in 0..17_000 {
        values.push(In::Int(250));
        values.extend(std::iter::repeat_n(In::Auto, 250));
    }
    let e = w.record_named("nested", &values).unwrap_err();
    assert!(
        matches!(e.kind(), EncodeErrorKind::RecordTooLarge { .. }),
        "{e}"
    );
}

#[test]
fn a_count_without_its_list_is_refused() {
    let schema = util::schema(DTD);
    let mut w = writer(&schema);
    w.section_named("main").unwrap();
    let mut f = Fields::new();
    f.push("n", FieldIn::Int(2));
    let e = w.write_fields("empty", &f).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            EncodeErrorKind::CountMismatch { count: 2, items: 0 }
        ),
        "{e}"
    );
    f.push("z", FieldIn::List(vec![FieldIn::Int(0), FieldIn::Int(0)]));
    w.write_fields("empty", &f).unwrap();
}

#[test]
fn metadata_the_reader_refuses_is_refused() {
    let schema = util::schema(DTD);
    let mut w = writer(&schema);
    w.section_named("main").unwrap();
    let plain = w.lookup("plain").unwrap();
    let walk = w.lookup("walk").unwrap();
    for (rid, slot, p, what) in [
        (plain, 0, MetaProperty::Width(1), "tag field"),
        (plain, 9, MetaProperty::Width(1), "no field 9"),
        (walk, 1, MetaProperty::Width(2), "has width 0"),
        (
            plain,
            1,
            MetaProperty::Interp(Interp::SectionOffset(9)),
            "not declared",
        ),
    ] {
        let e = w.metadata(rid, slot, p).unwrap_err();
        assert!(e.to_string().contains(what), "{what}: {e}");
    }
    // A class-1 trace cannot hold a 2^32 base in its 4-byte word.
    let e = w
        .metadata(plain, 1, MetaProperty::Interp(Interp::BaseOffset(1 << 32)))
        .unwrap_err();
    assert!(e.to_string().contains("4-byte metadata word"), "{e}");
    // Nothing refused was written: the trace is valid.
    assert_eq!(decoder_problems(w.finish_to_vec().unwrap(), &schema), 0);
}

#[test]
fn sections_are_written_once_and_only_if_declared() {
    let schema = util::schema(DTD);
    let mut w = writer(&schema);
    w.section_named("main").unwrap();
    assert!(w
        .section_named("main")
        .unwrap_err()
        .to_string()
        .contains("already written"));
    assert!(w
        .section(9)
        .unwrap_err()
        .to_string()
        .contains("not declared"));
    assert!(w.section_named("nosuch").is_err());
    // A record of another section.
    let e = w.write("o").int("v", 1).done().unwrap_err();
    assert_eq!(e.to_string(), "no record type `o` in this section");
}

/// `mtf pack` names the line and the field of both refusals the issue reported: a repeat of
/// 70,000 empty items, and a `sectionOffset` between two elements.
#[test]
fn pack_refuses_what_check_would_reject() {
    let mut text = String::from("%mtf 1 dtd=\"mirror.dtd\" class=32 order=little\nsection main\n");
    text.push_str(&format!("empty z=[{}]\n", vec!["0"; 70_000].join(" ")));
    let (out, path, _dir) = util::pack_stdin(DTD, text.as_bytes());
    let e = util::text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(
        e.contains("-:3:") && e.contains("empty.n") && e.contains("65536"),
        "{e}"
    );
    assert!(!path.exists());

    let text = "%mtf 1 dtd=\"mirror.dtd\" class=32 order=little\nsection strings\n\
                string vfield.data=\"ab\"\nstring vfield.data=\"cde\"\nsection main\n\
                ref s=@4\nref s=@2\n";
    let (out, path, _dir) = util::pack_stdin(DTD, text.as_bytes());
    let e = util::text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{e}");
    assert!(
        e.contains("-:7:5") && e.contains("ref.s") && e.contains("not the start of an element"),
        "{e}"
    );
    assert!(!path.exists());
}
