//! Golden tests of resolved DTDs: every `tests/data/dtd/valid/*.dtd`, and the shipped
//! `dtds/hatf10.dtd`, must resolve, and `mtf dtd show`'s text (plus any warnings) must equal
//! `*.show`. Regenerate with `MTF_BLESS=1 cargo test`.

use std::fs;
use std::path::{Path, PathBuf};

use metatf::dtd::{self, Builtin, Expr, Interp, SlotKind};
use metatf::text::schema_listing as format_schema;

/// The repository root (this test belongs to crates/mtf, two folders down).
fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .canonicalize()
        .unwrap()
}

fn load(path: &Path) -> dtd::Loaded {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let text = fs::read_to_string(path).unwrap();
    dtd::parse_str(&name, &text).unwrap_or_else(|e| panic!("{}", dtd::render_plain(&e)))
}

fn shown(loaded: &dtd::Loaded) -> String {
    let mut out = format_schema(&loaded.schema);
    for w in &loaded.warnings {
        out.push_str("\n--- warning\n");
        out.push_str(&dtd::render_plain(w));
    }
    out
}

#[test]
fn valid_goldens() {
    let dir = root().join("tests/data/dtd/valid");
    let bless = std::env::var_os("MTF_BLESS").is_some();
    let mut cases: Vec<(PathBuf, PathBuf)> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "dtd"))
        .map(|p| (p.clone(), p.with_extension("show")))
        .collect();
    cases.push((root().join("dtds/hatf10.dtd"), dir.join("hatf10.show")));
    cases.sort();
    let mut failures = Vec::new();
    for (path, golden) in cases {
        let out = shown(&load(&path));
        if bless {
            fs::write(&golden, &out).unwrap();
            continue;
        }
        match fs::read_to_string(&golden) {
            Ok(expected) if expected == out => {}
            Ok(expected) => failures.push(format!(
                "{}: output differs from {}\n--- expected\n{expected}\n--- actual\n{out}",
                path.display(),
                golden.display()
            )),
            Err(_) => failures.push(format!(
                "{}: no golden (run with MTF_BLESS=1)",
                path.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn hatf10_structure() {
    let l = load(&root().join("dtds/hatf10.dtd"));
    let s = &l.schema;
    assert!(l.warnings.is_empty());
    assert_eq!(s.tag_width, 1);
    assert_eq!(s.scopes.len(), 2);
    let heap = s.scope_for(1).unwrap();
    assert_eq!(heap.name, "heap");
    for (name, tag) in [
        ("alloc", 4),
        ("realloc", 5),
        ("free", 6),
        ("createHeap", 7),
        ("destroyHeap", 8),
        ("createThread", 9),
        ("destroyThread", 10),
        ("comment", 1),
        ("section", 2),
        ("metadata", 3),
    ] {
        let r = s
            .record_by_name(1, name)
            .unwrap_or_else(|| panic!("{name}"));
        assert_eq!(s.record(r).tag, tag);
        assert_eq!(heap.by_tag[&tag], r);
    }
    // HATF records are not visible globally; built-ins are.
    assert!(s.record_by_name(0, "alloc").is_none());
    assert_eq!(s.scope_for(0).unwrap().records.len(), 3);
    let realloc = s.record(s.record_by_name(1, "realloc").unwrap());
    let names: Vec<_> = realloc.slots.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tag",
            "address",
            "address_2",
            "time",
            "thread",
            "heap",
            "vfield.length",
            "vfield.data"
        ]
    );
    // docs/format.md §4.4
    let alloc = s.record(s.record_by_name(1, "alloc").unwrap());
    assert_eq!(alloc.slot_by_name("vfield.data"), Some(7));
    assert_eq!(alloc.slots[3].interp, Interp::Default(0));
    assert_eq!(alloc.slots[3].kind, SlotKind::Int { width: 0 });
    assert_eq!(
        alloc.slots[7].kind,
        SlotKind::Bytes {
            width: Expr::Value(6)
        }
    );
    assert_eq!(alloc.slots[0].fixed, Some(4));
    assert!(s.scope_of_section.len() == 256 && s.scope_of_section[1] == Some(1));
    let meta = s.record(s.builtin(Builtin::Metadata));
    assert_eq!(meta.slots[4].kind, SlotKind::Int { width: 0 });
    assert_eq!(meta.slots[1].kind, SlotKind::Int { width: 1 });
}

#[test]
fn cli_check_and_show() {
    let mtf = env!("CARGO_BIN_EXE_mtf");
    let out = std::process::Command::new(mtf)
        .current_dir(root())
        .args(["dtd", "check", "dtds/hatf10.dtd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "dtds/hatf10.dtd: ok (7 record types and the 3 built-in ones in 1 section)\n"
    );

    let out = std::process::Command::new(mtf)
        .current_dir(root())
        .args(["dtd", "check", "tests/data/dtd/errors/several_errors.dtd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("several_errors.dtd: 5 errors"), "{err}");
    assert!(err.contains("several_errors.dtd:6:19"), "{err}");
    assert!(!err.contains('\u{1b}'), "no colours when not a terminal");

    let out = std::process::Command::new(mtf)
        .current_dir(root())
        .args(["dtd", "check", "no/such/file.dtd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/file.dtd"));

    let out = std::process::Command::new(mtf)
        .current_dir(root())
        .args(["dtd", "show", "dtds/hatf10.dtd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let heap = text
        .split("section heap (id 1)")
        .nth(1)
        .expect("heap section listed");
    // The built-ins are named under the section and shown in full under the global scope.
    assert!(
        heap.contains("also global: comment (tag 1), section (tag 2), metadata (tag 3)"),
        "built-ins missing from section heap:\n{text}"
    );
    for r in ["comment: tag 1", "section: tag 2", "metadata: tag 3"] {
        assert!(
            text.contains(&format!("record {r}")),
            "{r} missing:\n{text}"
        );
    }
    for r in [
        "alloc: tag 4",
        "realloc: tag 5",
        "free: tag 6",
        "createHeap: tag 7",
        "destroyHeap: tag 8",
        "createThread: tag 9",
        "destroyThread: tag 10",
    ] {
        assert!(
            heap.contains(&format!("record {r}")),
            "{r} missing:\n{text}"
        );
    }

    // Warnings do not make a DTD unusable.
    let out = std::process::Command::new(mtf)
        .current_dir(root())
        .args(["dtd", "check", "tests/data/dtd/valid/interpretations.dtd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown property `widht`"));
}

/// A zero-width interpretation set more specifically than a non-zero width keeps that width
/// as the last non-zero width (docs/format.md §4.3): the field starts at width 0 and `none`
/// restores it.
#[test]
fn zero_width_by_interpretation_keeps_the_last_width() {
    let l = dtd::parse_str(
        "t.dtd",
        "len.width = 2; len.interpretation = none;
         a : (tag, len) { tag.value = 4; len.interpretation = default 7; }
         b : (tag, len) { tag.value = 5; }",
    )
    .unwrap_or_else(|e| panic!("{}", dtd::render_plain(&e)));
    let s = &l.schema;
    let a = s.record(s.record_by_name(0, "a").unwrap());
    assert_eq!(a.slots[1].kind, SlotKind::Int { width: 2 });
    assert_eq!(a.slots[1].interp, Interp::Default(7));
    assert_eq!(a.slots[1].initial_width(), 0);
    let b = s.record(s.record_by_name(0, "b").unwrap());
    assert_eq!(b.slots[1].initial_width(), 2);
    // HATF's time has no width at all: width 0, last width 0.
    let hatf = load(&root().join("dtds/hatf10.dtd"));
    let alloc = hatf
        .schema
        .record(hatf.schema.record_by_name(1, "alloc").unwrap());
    assert_eq!(alloc.slots[3].kind, SlotKind::Int { width: 0 });
}

/// `name : type { tag.value = …; }` is `name : (tag, type)`; without `tag.value` it is an alias
/// of the type (docs/format.md §4.2).
#[test]
fn record_defined_by_a_type() {
    let l = dtd::parse_str(
        "t.dtd",
        "x.width = 1; x.interpretation = none;
         pair : (x, y : x);
         twin : pair;
         r : pair { tag.value = 4; }
         s : (tag, twin, p : twin) { tag.value = 5; }",
    )
    .unwrap_or_else(|e| panic!("{}", dtd::render_plain(&e)));
    let s = &l.schema;
    let names = |n: &str| -> Vec<String> {
        let r = s.record(s.record_by_name(0, n).unwrap());
        r.slots.iter().map(|s| s.name.clone()).collect()
    };
    assert_eq!(names("r"), ["tag", "pair.x", "pair.y"]);
    assert_eq!(names("s"), ["tag", "twin.x", "twin.y", "p.x", "p.y"]);
    assert!(
        s.record_by_name(0, "twin").is_none(),
        "an alias is not taggable"
    );
}

/// docs/format.md §4.3: a field of a global nested type gets the defaults of the section of the
/// record it is used in; §3.4: a negative intermediate in a width expression is an error.
#[test]
fn nested_defaults_and_negative_intermediates() {
    let l = dtd::parse_str(
        "t.dtd",
        "x.width = 1; x.interpretation = none; a.width = 1; a.interpretation = none;
         inner : (x);
         g : (tag, inner) { tag.value = 4; }
         section s 1 {
             x.width = 2;
             r : (tag, inner, a, data) { tag.value = 5; data.width = a.value - 4 + 8;
                                        data.interpretation = none; }
         }",
    )
    .unwrap_or_else(|e| panic!("{}", dtd::render_plain(&e)));
    let s = &l.schema;
    let g = s.record(s.record_by_name(0, "g").unwrap());
    let r = s.record(s.record_by_name(1, "r").unwrap());
    assert_eq!(g.slots[1].kind, SlotKind::Int { width: 1 });
    assert_eq!(r.slots[1].kind, SlotKind::Int { width: 2 });
    let SlotKind::Bytes { width } = &r.slots[3].kind else {
        panic!("{:?}", r.slots[3].kind)
    };
    // (a - 4) + 8 with a = 2: the intermediate 2 - 4 is negative.
    assert!(metatf::decode::eval_width(width, &[0, 0, 2, 0]).is_err());
    assert_eq!(metatf::decode::eval_width(width, &[0, 0, 5, 0]), Ok(9));
}
