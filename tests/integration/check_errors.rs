//! `mtf check` problems, each from hand-assembled bytes, with the exact byte offset asserted.

use metatf::container::{Header, Trace, OFF_INTEGERS};
use metatf::decode::{DamageKind, Event, Position, ProblemKind, Reader, RefError};

use crate::util;

const DTD: &str = "tests/data/check/t.dtd";

/// `start` for a trace of this DTD name with `n` sections.
fn start(n: usize) -> u64 {
    Header::encoded_len(4, "t.dtd".len(), n)
}

/// The decoder's problems and damage in one shape, so each test asserts the kind it expects.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ErrorKind {
    UnknownTag {
        tag: u64,
    },
    Truncated {
        needed: u64,
        available: u64,
    },
    FixedValue {
        expected: u64,
        found: u64,
    },
    BadMetadata(String),
    MissingSectionRecord,
    SectionNumberMismatch {
        index: u8,
        record: u64,
    },
    MisplacedSection,
    UndeclaredSection,
    RepeatTooLong {
        count: u64,
        available: u64,
    },
    BadSectionOffset {
        section: u8,
        offset: u64,
        content: u64,
    },
    BadSectionIndex {
        section: u8,
        index: i64,
        count: u64,
    },
    MissingSection {
        section: u8,
    },
    RecordCount {
        header: u64,
        actual: u64,
    },
    Other(String),
}

#[derive(Debug)]
struct DecodeError {
    offset: u64,
    record_index: Option<u64>,
    section: u8,
    record: Option<String>,
    field: Option<String>,
    kind: ErrorKind,
    text: String,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

fn found(at: Position, kind: ErrorKind, text: String) -> DecodeError {
    DecodeError {
        offset: at.offset,
        record_index: at.record_index,
        section: at.section,
        record: at.record,
        field: at.field,
        kind,
        text,
    }
}

fn problem(at: Position, k: ProblemKind) -> DecodeError {
    let text = format!("{at}: {k}");
    let kind = match k {
        ProblemKind::FixedValue { expected, found } => ErrorKind::FixedValue { expected, found },
        ProblemKind::Metadata(m) => ErrorKind::BadMetadata(m.to_string()),
        ProblemKind::SectionNumberMismatch { index, record } => {
            ErrorKind::SectionNumberMismatch { index, record }
        }
        ProblemKind::MisplacedSection => ErrorKind::MisplacedSection,
        ProblemKind::Reference(RefError::BadOffset {
            section,
            offset,
            content,
        }) => ErrorKind::BadSectionOffset {
            section,
            offset,
            content,
        },
        ProblemKind::Reference(RefError::BadIndex {
            section,
            index,
            count,
        }) => ErrorKind::BadSectionIndex {
            section,
            index,
            count,
        },
        ProblemKind::Reference(RefError::MissingSection { section }) => {
            ErrorKind::MissingSection { section }
        }
        ProblemKind::RecordCount { header, actual } => ErrorKind::RecordCount { header, actual },
        other => ErrorKind::Other(other.to_string()),
    };
    found(at, kind, text)
}

fn damage(at: Position, k: DamageKind) -> DecodeError {
    let text = format!("{at}: {k}");
    let kind = match k {
        DamageKind::UnknownTag { tag } => ErrorKind::UnknownTag { tag },
        DamageKind::Truncated { needed, available } => ErrorKind::Truncated { needed, available },
        DamageKind::UnknownMetaCode { .. } => ErrorKind::BadMetadata(k.to_string()),
        DamageKind::MissingSectionRecord => ErrorKind::MissingSectionRecord,
        DamageKind::UndeclaredSection => ErrorKind::UndeclaredSection,
        DamageKind::RepeatTooLong { count, available } => {
            ErrorKind::RepeatTooLong { count, available }
        }
        other => ErrorKind::Other(other.to_string()),
    };
    found(at, kind, text)
}

fn problems(bytes: Vec<u8>) -> (Vec<DecodeError>, u64) {
    let schema = util::schema(DTD);
    let trace = Trace::from_bytes(bytes).expect("container is valid");
    let reader = Reader::new(&trace, &schema);
    let mut records = reader.records();
    let mut out = Vec::new();
    let mut ok = 0;
    while let Some(event) = records.next() {
        match event {
            Event::Record(_) => ok += 1,
            Event::Problem(p) => out.push(problem(p.at, p.kind)),
            Event::Damage(d) => out.push(damage(d.at, d.kind)),
        }
    }
    (out, ok)
}

fn main_section(records: &[u8]) -> (u8, Vec<u8>) {
    let mut b = vec![2, 1];
    b.extend_from_slice(records);
    (1, b)
}

fn strings_section(strings: &[&str]) -> (u8, Vec<u8>) {
    let mut b = vec![2, 2];
    for s in strings {
        b.push(4);
        b.push(s.len() as u8);
        b.extend_from_slice(s.as_bytes());
    }
    (2, b)
}

fn only(p: &[DecodeError]) -> &DecodeError {
    assert_eq!(p.len(), 1, "expected one problem, got {p:#?}");
    &p[0]
}

#[test]
fn valid_trace_has_no_problems() {
    let t = util::assemble(
        "t.dtd",
        6,
        &[],
        &[
            strings_section(&["ab"]),
            main_section(&[4, 1, 0, 2, 8, 0, 9]),
        ],
    );
    let (p, n) = problems(t);
    assert!(p.is_empty(), "{p:#?}");
    assert_eq!(n, 6);
}

#[test]
fn unknown_tag_reports_its_offset() {
    let t = util::assemble("t.dtd", 3, &[], &[main_section(&[4, 1, 0, 2, 0x63])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(e.kind, ErrorKind::UnknownTag { tag: 0x63 });
    assert_eq!(e.offset, start(1) + 6);
    assert_eq!(e.record_index, Some(2));
    assert_eq!(e.section, 1);
}

#[test]
fn truncated_record_names_the_field() {
    let t = util::assemble("t.dtd", 2, &[], &[main_section(&[4, 1, 0])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(
        e.kind,
        ErrorKind::Truncated {
            needed: 1,
            available: 0
        }
    );
    assert_eq!(e.offset, start(1) + 5);
    assert_eq!(e.record.as_deref(), Some("ev"));
    assert_eq!(e.field.as_deref(), Some("b"));
}

#[test]
fn fixed_value_mismatch() {
    let t = util::assemble("t.dtd", 2, &[], &[main_section(&[5, 8])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(
        e.kind,
        ErrorKind::FixedValue {
            expected: 7,
            found: 8
        }
    );
    assert_eq!(e.offset, start(1) + 3);
    assert_eq!(e.field.as_deref(), Some("k"));
}

#[test]
fn metadata_naming_an_unknown_record() {
    let t = util::assemble(
        "t.dtd",
        2,
        &[],
        &[main_section(&[3, 0x63, 1, 0, 1, 0, 0, 0])],
    );
    let (p, _) = problems(t);
    let e = only(&p);
    assert!(
        matches!(&e.kind, ErrorKind::BadMetadata(m) if m.contains("tag 99")),
        "{e}"
    );
    assert_eq!(e.offset, start(1) + 3);
}

#[test]
fn metadata_naming_an_unknown_field() {
    let t = util::assemble("t.dtd", 2, &[], &[main_section(&[3, 4, 9, 0, 1, 0, 0, 0])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert!(
        matches!(&e.kind, ErrorKind::BadMetadata(m) if m.contains("no field 9")),
        "{e}"
    );
    assert_eq!(e.offset, start(1) + 4);
}

#[test]
fn metadata_with_an_unknown_property_stops_the_section() {
    let t = util::assemble("t.dtd", 3, &[], &[main_section(&[3, 4, 1, 9, 4, 1, 0, 2])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert!(
        matches!(&e.kind, ErrorKind::BadMetadata(m) if m.contains("property code 9")),
        "{e}"
    );
    assert_eq!(e.offset, start(1) + 5);
}

#[test]
fn metadata_width_the_decoder_cannot_honour() {
    let t = util::assemble("t.dtd", 2, &[], &[main_section(&[3, 4, 1, 0, 9, 0, 0, 0])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert!(
        matches!(&e.kind, ErrorKind::BadMetadata(m) if m.contains("width 9")),
        "{e}"
    );
    assert_eq!(e.offset, start(1) + 5);
}

#[test]
fn metadata_width_on_a_zero_width_interpretation() {
    // walk.w is sectionStride: a width is refused.
    let t = util::assemble(
        "t.dtd",
        4,
        &[],
        &[
            strings_section(&["a"]),
            main_section(&[3, 9, 1, 0, 2, 0, 0, 0]),
        ],
    );
    let (p, _) = problems(t);
    let e = only(&p);
    assert!(
        matches!(&e.kind, ErrorKind::BadMetadata(m) if m.contains("width 2")),
        "{e}"
    );
    assert_eq!(e.offset, start(2) + 5 + 2 + 3);
}

#[test]
fn section_record_disagreeing_with_the_index() {
    let t = util::assemble("t.dtd", 1, &[], &[(1, vec![2, 2])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(
        e.kind,
        ErrorKind::SectionNumberMismatch {
            index: 1,
            record: 2
        }
    );
    assert_eq!(e.offset, start(1) + 1);
}

#[test]
fn section_without_its_section_record() {
    let t = util::assemble("t.dtd", 1, &[], &[(1, vec![4, 1, 0, 2])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(e.kind, ErrorKind::MissingSectionRecord);
    assert_eq!(e.offset, start(1));
}

#[test]
fn section_record_in_the_middle_of_a_section() {
    let t = util::assemble("t.dtd", 3, &[], &[main_section(&[4, 1, 0, 2, 2, 1])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(e.kind, ErrorKind::MisplacedSection);
    assert_eq!(e.offset, start(1) + 6);
}

#[test]
fn section_not_declared_in_the_dtd() {
    let t = util::assemble("t.dtd", 1, &[], &[(7, vec![2, 7])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(e.kind, ErrorKind::UndeclaredSection);
    assert_eq!(e.offset, start(1));
    assert_eq!(e.section, 7);
}

#[test]
fn nrecords_mismatch_points_at_the_header_field() {
    let t = util::assemble("t.dtd", 3, &[], &[main_section(&[4, 1, 0, 2])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(
        e.kind,
        ErrorKind::RecordCount {
            header: 3,
            actual: 2
        }
    );
    assert_eq!(e.offset, OFF_INTEGERS + 8);
}

#[test]
fn section_offset_outside_its_section() {
    let t = util::assemble(
        "t.dtd",
        4,
        &[],
        &[strings_section(&["a"]), main_section(&[8, 5])],
    );
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(
        e.kind,
        ErrorKind::BadSectionOffset {
            section: 2,
            offset: 5,
            content: 3
        }
    );
    assert_eq!(e.offset, start(2) + 5 + 3);
    assert!(e.to_string().contains("outside section 2"));
}

#[test]
fn section_offset_inside_a_record() {
    let t = util::assemble(
        "t.dtd",
        4,
        &[],
        &[strings_section(&["a"]), main_section(&[8, 1])],
    );
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(
        e.kind,
        ErrorKind::BadSectionOffset {
            section: 2,
            offset: 1,
            content: 3
        }
    );
    assert!(e.to_string().contains("not the start of an element"));
}

#[test]
fn section_offset_to_a_section_the_trace_lacks() {
    let t = util::assemble("t.dtd", 2, &[], &[main_section(&[8, 0])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(e.kind, ErrorKind::MissingSection { section: 2 });
    assert_eq!(e.offset, start(1) + 3);
}

#[test]
fn section_stride_past_the_end_of_its_section() {
    let t = util::assemble(
        "t.dtd",
        5,
        &[],
        &[strings_section(&["a"]), main_section(&[9, 9])],
    );
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(
        e.kind,
        ErrorKind::BadSectionIndex {
            section: 2,
            index: 1,
            count: 1
        }
    );
    // The field has width 0: its offset is right after the second record's tag.
    assert_eq!(e.offset, start(2) + 5 + 2 + 1 + 1);
}

#[test]
fn impossible_repeat_count() {
    let t = util::assemble("t.dtd", 2, &[], &[main_section(&[6, 200, 1])]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(
        e.kind,
        ErrorKind::RepeatTooLong {
            count: 200,
            available: 1
        }
    );
    // At the count field (section record 2 bytes, tag 1 byte), not past it.
    assert_eq!(e.offset, start(1) + 3);
}

#[test]
fn repeat_of_an_empty_item_is_limited() {
    // rep.x becomes `default 0` (width 0) and rep.n four bytes wide; a count of 70,000 then
    // repeats nothing 70,000 times, which the decoder refuses (docs/format.md §6.4).
    let records = [
        3, 6, 2, 4, 0, 0, 0, 0, // metadata rep.x default 0
        3, 6, 1, 0, 4, 0, 0, 0, // metadata rep.n width 4
        6, 0x70, 0x11, 0x01, 0x00, // rep n=70000
    ];
    let t = util::assemble("t.dtd", 4, &[], &[main_section(&records)]);
    let (p, _) = problems(t);
    let e = only(&p);
    assert_eq!(
        e.kind,
        ErrorKind::RepeatTooLong {
            count: 70_000,
            available: 0
        }
    );
    // At the count field: section record, two metadata records, the tag.
    assert_eq!(e.offset, start(1) + 2 + 16 + 1);
    // 65,536 empty occurrences are fine (one record may draw on the trace's reserve, §6.4).
    let records = [
        3, 6, 2, 4, 0, 0, 0, 0, 3, 6, 1, 0, 4, 0, 0, 0, 6, 0x00, 0x00, 0x01, 0x00,
    ];
    let t = util::assemble("t.dtd", 4, &[], &[main_section(&records)]);
    let (p, n) = problems(t);
    assert!(p.is_empty(), "{p:#?}");
    assert_eq!(n, 4);
}

#[test]
fn a_bad_record_resynchronises_at_the_next_section() {
    // Section 1 is damaged at its second record; section 2 after it still decodes.
    let t = util::assemble(
        "t.dtd",
        4,
        &[],
        &[
            main_section(&[4, 1, 0, 2, 0x77, 0, 0]),
            strings_section(&["xy"]),
        ],
    );
    let (p, ok) = problems(t);
    let e = only(&p);
    assert_eq!(e.kind, ErrorKind::UnknownTag { tag: 0x77 });
    assert_eq!(e.offset, start(2) + 6);
    // section 1's record, its ev, then section 2's record and string
    assert_eq!(ok, 4);
}

#[test]
fn bytes_after_the_last_record_are_a_container_error() {
    let mut t = util::assemble("t.dtd", 2, &[], &[main_section(&[4, 1, 0, 2])]);
    t.push(0xee);
    let Err(e) = Trace::from_bytes(t) else {
        panic!("trailing byte is rejected")
    };
    // The error points at the section table entry whose size fails to cover the file, and names
    // where the stray bytes begin.
    match e.innermost() {
        metatf::container::ContainerError::LastSectionShort { end, file_len, .. } => {
            assert_eq!((*end, *file_len), (start(1) + 6, start(1) + 7));
        }
        other => panic!("unexpected error {other}"),
    }
    assert!(
        e.to_string().contains(&format!("ends at {}", start(1) + 6)),
        "{e}"
    );
}

#[test]
fn record_running_past_its_section_into_the_next() {
    // ev needs 4 bytes but only 3 are left before section 2 starts.
    let t = util::assemble(
        "t.dtd",
        3,
        &[],
        &[main_section(&[4, 1, 0]), strings_section(&[])],
    );
    let (p, _) = problems(t);
    let e = only(&p);
    assert!(matches!(e.kind, ErrorKind::Truncated { .. }));
    assert_eq!(e.offset, start(2) + 5);
}

#[test]
fn check_cli_exit_codes_and_offsets() {
    let dir = util::tempdir();
    let good = dir.path().join("good.mtf");
    let bad = dir.path().join("bad.mtf");
    std::fs::write(
        &good,
        util::assemble("t.dtd", 3, &[], &[main_section(&[4, 1, 0, 2, 5, 7])]),
    )
    .unwrap();
    std::fs::write(
        &bad,
        util::assemble("t.dtd", 2, &[], &[main_section(&[5, 8])]),
    )
    .unwrap();
    let out = util::mtf(&["check", "--dtd", DTD, good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stdout));
    let out = util::mtf(&["check", "--dtd", DTD, bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let s = util::text(&out.stdout);
    assert!(
        s.contains(&format!(
            "byte {}, record #1, section main (1), fixed.k: value 8 differs",
            start(1) + 3
        )),
        "{s}"
    );
    assert!(s.contains("fixed"), "{s}");
    let out = util::mtf(&[
        "check",
        "--dtd",
        DTD,
        dir.path().join("missing.mtf").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let out = util::mtf(&[
        "check",
        "--dtd",
        "tests/data/check/no-such.dtd",
        good.to_str().unwrap(),
    ]);
    // A --dtd that is not there is an unusable DTD, as one the header names and found nowhere.
    assert_eq!(out.status.code(), Some(3));
    assert!(util::text(&out.stderr).contains("mtf::dtd::not_found"));
}

/// docs/format.md §9.2: a section that begins with a `section` record of another number, and
/// `section` records out of place, are reported and do not stop their region, which is decoded
/// in the scope of the section table's id (tests/independent/t/t18).
#[test]
fn a_section_record_with_another_number_does_not_stop_its_region() {
    let out = util::mtf(&[
        "dump",
        "tests/independent/t/t18.mtf",
        "-d",
        "tests/independent/t/t18.dtd",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = util::text(&out.stdout);
    // Both `ra` records of section 1 (one value byte: section 1's scope, not section 2's `rb`).
    assert!(
        text.contains("ra v=7\n") && text.contains("ra v=8\n"),
        "{text}"
    );
    assert!(text.contains("rb v=1 v_2=2"), "{text}");
    let err = util::text(&out.stderr);
    assert_eq!(err.matches('×').count(), 3, "{err}");
    assert!(
        err.contains("section record says section 2, the section index says 1"),
        "{err}"
    );
}
