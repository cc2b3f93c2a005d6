//! Defect cases of the specification (issue 31), each a folder of `tests/data/spec-cases/`
//! with a README saying what was wrong: the seek index's times through references (§15.1,
//! §14.4), names of a fragment's records (§3.5), the per-type field limit and the nesting of
//! expressions (§16), and the order of a checkpoint's slot states (§15.3).

use std::path::{Path, PathBuf};

use crate::util::{mtf, tempdir, text};

fn case(name: &str) -> PathBuf {
    crate::util::root().join("tests/data/spec-cases").join(name)
}

/// Copy a case's files into a fresh folder (an index is written beside its trace).
fn copy_case(name: &str) -> tempfile::TempDir {
    let dir = tempdir();
    for e in std::fs::read_dir(case(name)).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.path().join(p.file_name().unwrap())).unwrap();
    }
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The times a seek index stores, read as docs/format.md §15.1 lays the file out: for each
/// entry, the record it is taken before and its time (`None` without `hastime`).
fn index_times(idx: &[u8]) -> Vec<(u64, Option<u64>)> {
    let le64 = |at: usize| u64::from_le_bytes(idx[at..at + 8].try_into().unwrap());
    assert_eq!(&idx[..5], b"\x7fMTX\x01");
    let count = le64(48) as usize;
    let mut at = 56;
    let mut out = Vec::new();
    for _ in 0..count {
        let len = u32::from_le_bytes(idx[at..at + 4].try_into().unwrap()) as usize;
        let time = (idx[at + 4] == 1).then(|| le64(at + 5));
        // The stored checkpoint follows the 17 bytes of has-time, time and probe.
        out.push((le64(at + 4 + 17), time));
        at += 4 + len;
    }
    assert_eq!(at + 8, idx.len(), "the entries end at the checksum");
    out
}

/// Case `index-time-of-text-reference`: `b`'s time field `r` (microseconds) is a
/// `sectionOffset` into a section of strings. As every role of §14.1, it counts as the number it
/// carries (the offset 5: 5,000 ns), so the index stores 5,000 from the checkpoint after `b`
/// on, as `mtf check`'s monotonic check counts it; an index that stores 9 there is refused.
#[test]
fn index_time_of_a_time_read_through_a_reference_into_text() {
    let dir = copy_case("index-time-of-text-reference");
    let trace = dir.path().join("t.mtf");
    // The fixture is the text beside it.
    let o = mtf(&[
        "pack",
        s(&dir.path().join("t.txt")),
        "-o",
        s(&dir.path().join("again.mtf")),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read(&trace).unwrap(),
        std::fs::read(dir.path().join("again.mtf")).unwrap()
    );

    // The expected times, from the text alone: each line after the header is one record; `a`'s
    // `t` is in ns, `b`'s `r=@N` carries N microseconds; the time before a checkpoint is the
    // largest so far (§15.1).
    let txt = std::fs::read_to_string(dir.path().join("t.txt")).unwrap();
    let mut expected = Vec::new();
    let mut largest: Option<u64> = None;
    for (i, line) in txt.lines().skip(1).enumerate() {
        let t = if let Some(v) = line.strip_prefix("a t=") {
            Some(v.parse::<u64>().unwrap())
        } else {
            line.strip_prefix("b r=@")
                .map(|v| v.parse::<u64>().unwrap() * 1000)
        };
        if let Some(t) = t {
            largest = Some(largest.map_or(t, |m| m.max(t)));
        }
        expected.push((i as u64 + 1, largest));
    }
    assert_eq!(expected[5], (6, Some(5000)));

    let o = mtf(&["index", "--every", "1", s(&trace)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let idx = dir.path().join("t.mtf.idx");
    assert_eq!(index_times(&std::fs::read(&idx).unwrap()), expected);
    let o = mtf(&["index", "--check", s(&trace)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // Seeking by time from the index finds what a decode from the start finds.
    let seek = mtf(&["dump", "--from", "t10", s(&trace)]);
    let full = mtf(&["dump", "--no-index", "--from", "t10", s(&trace)]);
    assert!(seek.status.success(), "{}", text(&seek.stderr));
    assert_eq!(text(&seek.stdout), text(&full.stdout));
    assert!(
        text(&seek.stdout).contains("\nb r=@5"),
        "{}",
        text(&seek.stdout)
    );

    // The index of the report, which stores 9 before record 6, is refused by both checks.
    std::fs::copy(dir.path().join("t.idx"), &idx).unwrap();
    let o = mtf(&["index", "--check", "--color", "never", s(&trace)]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("mtf::index::mismatch"), "{err}");
    assert!(
        err.contains(
            "checkpoint 5 (record 6) differs from a full decode: the largest time before it is \
             9 ns, a full decode has 5000 ns"
        ),
        "{err}"
    );
    let o = mtf(&["check", "--color", "never", s(&trace)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stdout).contains("a full decode has 5000 ns"));
}

/// Case `dtd-fragment-name`: a user record named like a record of an included fragment is
/// refused as a built-in name is (§3.5: `reserved_name`, not `duplicate_record`), with its labels
/// in the user's DTD — at the definition and at the `include` — never into the fragment's text.
/// `contrast_vfield.dtd` is the built-in case it must look like.
#[test]
fn a_fragment_record_name_is_reserved_and_labelled_in_the_users_dtd() {
    let dir = case("dtd-fragment-name");
    for (file, name, line) in [
        ("contrast_vfield.dtd", "vfield", 2),
        ("user_bytes32.dtd", "bytes32", 3),
        ("section_import_raw.dtd", "import_raw", 3),
    ] {
        let o = mtf(&["dtd", "check", "--color", "never", s(&dir.join(file))]);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{file}: {err}");
        assert!(err.contains("mtf::dtd::reserved_name"), "{file}: {err}");
        assert!(!err.contains("duplicate"), "{file}: {err}");
        assert!(!err.contains("Failed to read"), "{file}: {err}");
        // The `reserved` label is under the user's definition, on its line of the user's file.
        let def = format!(" {line} │ ");
        let at = err.find(&def).unwrap_or_else(|| panic!("{file}: {err}"));
        assert!(
            err[at..].lines().next().unwrap().contains(name),
            "{file}: {err}"
        );
        assert!(err.contains("╰── reserved"), "{file}: {err}");
        if name == "vfield" {
            assert!(err.contains("is a built-in record type"), "{err}");
        } else {
            assert!(
                err.contains(&format!(
                    "`{name}` is a record type of the built-in fragment `import` and cannot be \
                     redefined"
                )),
                "{err}"
            );
            assert!(err.contains(" 1 │ include import;"), "{err}");
            assert!(err.contains("╰── taken in here"), "{err}");
        }
    }
}

/// Case `dtd-fields-limit`: a record of a tag and 65,535 fields, written flat and as a nested
/// group (the case's `flat.dtd` and `nested.dtd`, generated here byte for byte), expands to the
/// same 65,536 slots, the most slot numbers of 16 bits (§4.4, §16): both are accepted; one
/// field more is refused in both forms, and in the form of repeats, whose counts are slots too.
#[test]
fn a_record_type_has_one_slot_limit_however_its_fields_are_grouped() {
    let fields = |n: usize| vec!["a"; n].join(", ");
    let flat = |n: usize| {
        format!(
            "a.width = 1; a.interpretation = none;\nr : (tag, {}) {{ tag.value = 4; }}\n",
            fields(n)
        )
    };
    let nested = |n: usize| {
        format!(
            "a.width = 1; a.interpretation = none;\nbig : ({});\nr : (tag, big) {{ tag.value = 4; }}\n",
            fields(n)
        )
    };
    let readme = std::fs::read_to_string(case("dtd-fields-limit").join("README")).unwrap();
    assert!(readme.contains("65,535 fields"), "{readme}");
    for (form, text) in [("flat", flat(65_535)), ("nested", nested(65_535))] {
        let loaded = metatf::dtd::parse_str("case.dtd", &text)
            .unwrap_or_else(|e| panic!("{form}: {}", metatf::dtd::render_plain(&e)));
        let s = &loaded.schema;
        let r = s.record(s.record_by_name(0, "r").unwrap());
        assert_eq!(r.slots.len(), 65_536, "{form}");
        assert!(r.slots.last().unwrap().name.ends_with("a_65535"), "{form}");
    }
    // `n*a` is two slots (the count and the item): 32,767 of them and the tag are 65,535.
    let repeats = |n: usize| {
        format!(
            "a.width = 1; a.interpretation = none; n.width = 1; n.interpretation = none;\n\
             r : (tag, {}) {{ tag.value = 4; }}\n",
            vec!["n*a"; n].join(", ")
        )
    };
    assert!(metatf::dtd::parse_str("case.dtd", &repeats(32_767)).is_ok());
    for (form, text) in [
        ("flat", flat(65_536)),
        ("nested", nested(65_536)),
        ("repeats", repeats(32_768)),
    ] {
        let e = metatf::dtd::parse_str("case.dtd", &text).expect_err(form);
        let e = metatf::dtd::render_plain(&e);
        assert!(e.contains("mtf::dtd::limit"), "{form}: {e}");
        assert!(
            e.contains("record type `r` has more than 65536 slots (scalar fields, `tag` included)"),
            "{form}: {e}"
        );
        assert_eq!(e.matches("× ").count(), 2, "{form}: one error: {e}");
    }
}

/// How expressions count toward the 64 levels of §16 (§3.4): an operator is a level above its
/// operands, a pair of parentheses a level above what it holds, whatever the spacing and however
/// the operators group.
#[test]
fn expression_levels_count_operators_and_parentheses() {
    let width = |e: &str| {
        let text =
            format!("x.width = {e}; x.interpretation = none;\nr : (tag, x) {{ tag.value = 4; }}\n");
        metatf::dtd::parse_str("e.dtd", &text).map_err(|e| metatf::dtd::render_plain(&e))
    };
    let sum = |terms: usize| vec!["0"; terms - 1].join(" + ") + " + 1";
    let product = |factors: usize| vec!["1"; factors].join("*");
    let parens = |n: usize, inner: &str| format!("{}{inner}{}", "(".repeat(n), ")".repeat(n));
    let accepted = [
        sum(65),                                // 64 `+`
        format!("{} - 1", sum(64)),             // 63 `+` and a `-`
        format!("{} + 1", product(64)),         // 63 `*` below a `+`
        format!("1 + {}", product(64)),         // the same on the right
        parens(64, "1"),                        // 64 pairs
        parens(63, "0 + 1"),                    // 63 pairs and a `+`
        format!("({}) * 1", parens(61, "1*1")), // `*`, 62 pairs, `*`
    ];
    for e in &accepted {
        if let Err(err) = width(e) {
            panic!("{e}: {err}");
        }
    }
    let refused = [
        sum(66),
        format!("{} + 1", product(65)), // 64 `*` below a `+`: 65 levels
        format!("1 + {}", product(65)),
        parens(65, "1"),
        parens(64, "0 + 1"),
        format!("({}) * 1", parens(62, "1*1")),
    ];
    for e in &refused {
        let err = width(e).err().unwrap_or_else(|| panic!("accepted: {e}"));
        assert!(err.contains("mtf::dtd::limit"), "{e}: {err}");
        assert!(err.contains("nesting deeper than 64 levels"), "{e}: {err}");
    }
    // Spacing changes nothing.
    assert!(width(&sum(65).replace(' ', "")).is_ok());
    assert!(width(&sum(66).replace(' ', "\n")).is_err());
}

/// The order of a scope's slot states in a stored checkpoint (§15.3): built-ins, the included
/// fragments' records (wherever the `include` is), the global records as written (one written
/// after a section block too), then the section's own. The expected numbers are counted by hand
/// from §5's prelude and §3.5's fragment text.
#[test]
fn checkpoint_slot_states_follow_the_scopes_order_of_record_types() {
    let dir = tempdir();
    let dtd = "a.width = 1; a.interpretation = none;\nb.width = 2; b.interpretation = none;\n\
               g1 : (tag, a, b) { tag.value = 4; }\n\
               section s 1 { l1 : (tag, b, a) { tag.value = 5; } }\n\
               include import;\n\
               g2 : (tag, a) { tag.value = 6; }\n";
    std::fs::write(dir.path().join("t.dtd"), dtd).unwrap();
    let txt = "%mtf 1 dtd=\"t.dtd\" class=32 order=little\n\
               metadata g2.a width 2\n\
               g2 a=300\n\
               section s\n\
               metadata g1.b width 1\n\
               metadata g2.a width 2\n\
               metadata l1.a width 2\n\
               l1 b=1 a=300\n";
    std::fs::write(dir.path().join("t.txt"), txt).unwrap();
    let trace = dir.path().join("t.mtf");
    let o = mtf(&["pack", s(&dir.path().join("t.txt")), "-o", s(&trace)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = mtf(&["index", "--every", "1", s(&trace)]);
    assert!(o.status.success(), "{}", text(&o.stderr));

    // The taggable record types in the scope's order with their slot counts (§4.4).
    let order: &[(&str, u32)] = &[
        ("comment", 3), // tag, vfield.length, vfield.data
        ("section", 2),
        ("metadata", 5),
        ("import_origin", 8), // tag, version, container, files, format (2), mapping (2)
        ("import_part", 7),
        ("import_raw", 3),
        ("import_noeol", 1),
        ("import_chunk", 3),
        ("import_archive", 3),
        ("import_entry", 10),
        ("import_routed", 3),
        ("g1", 3),
        ("g2", 2),
        ("l1", 3), // section `s` only
    ];
    let base = |name: &str| -> u32 {
        order
            .iter()
            .take_while(|(n, _)| *n != name)
            .map(|(_, c)| c)
            .sum()
    };
    let global_slots = base("l1");
    let section_slots = global_slots + 3;
    // g1.b is slot 2 of g1, g2.a slot 1 of g2, l1.a slot 2 of l1.
    let (g1_b, g2_a, l1_a) = (base("g1") + 2, base("g2") + 1, base("l1") + 2);
    assert_eq!((global_slots, g1_b, g2_a, l1_a), (53, 50, 52, 55));

    // Each entry's stored state (§15.1, §15.3): section, nslots, and the changed slots.
    let idx = std::fs::read(dir.path().join("t.mtf.idx")).unwrap();
    let le32 = |at: usize| u32::from_le_bytes(idx[at..at + 4].try_into().unwrap());
    let count = u64::from_le_bytes(idx[48..56].try_into().unwrap()) as usize;
    let mut at = 56;
    let mut states = Vec::new();
    for _ in 0..count {
        let cp = at + 4 + 17;
        let flags = idx[cp + 20];
        assert_ne!(flags & 4, 0, "a state follows");
        let st = cp + 29;
        let (nslots, nchanged) = (le32(st + 1), le32(st + 5) as usize);
        let changed: Vec<u32> = (0..nchanged).map(|k| le32(st + 9 + 40 * k)).collect();
        states.push((idx[st], nslots, changed));
        at += 4 + le32(at) as usize;
    }
    let g = |changed: Vec<u32>| (0u8, global_slots, changed);
    let sec = |changed: Vec<u32>| (1u8, section_slots, changed);
    assert_eq!(
        states,
        [
            g(vec![g2_a]),
            g(vec![g2_a]),
            sec(vec![]),
            sec(vec![g1_b]),
            sec(vec![g1_b, g2_a]),
            sec(vec![g1_b, g2_a, l1_a]),
            sec(vec![g1_b, g2_a, l1_a]),
        ]
    );
    // And the index resumes the decode: every checkpoint verified against a full one.
    let o = mtf(&["index", "--check", s(&trace)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}
