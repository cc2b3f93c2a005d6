//! Corner cases of extension analysis/1 (docs/format.md §14, docs/stats.md; issue 31): the case
//! files under `tests/data/spec-cases/analysis-*` and the decisions written for them, run
//! through `mtf check`, `mtf stats -f json` and the library's heap events. Every expectation is
//! worked out by hand from the text of §14 and docs/stats.md, in the comments beside it.

use std::path::{Path, PathBuf};

use metatf::analysis::{HeapEvent, HeapOp, Interpreter};
use metatf::decode::Event;
use metatf::text::InputFormat;
use serde_json::Value;

use crate::util;

const CASES: &str = "tests/data/spec-cases";

fn case(dir: &str, file: &str) -> PathBuf {
    util::root().join(CASES).join(dir).join(file)
}

/// `mtf check` of a trace with a DTD: (exit status, standard output).
fn check(trace: &Path, dtd: &Path) -> (i32, String) {
    let o = util::mtf(&[
        "check",
        "--dtd",
        dtd.to_str().unwrap(),
        trace.to_str().unwrap(),
    ]);
    (o.status.code().unwrap_or(-1), util::text(&o.stdout))
}

/// `mtf stats -f json`: the namespace named `ns`.
fn stats(trace: &Path, dtd: &Path, ns: &str) -> Value {
    let o = util::mtf(&[
        "stats",
        "-f",
        "json",
        "--dtd",
        dtd.to_str().unwrap(),
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", util::text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == ns)
        .unwrap_or_else(|| panic!("no namespace {ns}"))
        .clone()
}

/// The figures of a namespace this file compares: allocations, frees, moves, bytes allocated,
/// bytes freed, temporary, leaked blocks.
fn figures(n: &Value) -> [u64; 7] {
    let g = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("{v}"));
    [
        g(&n["allocations"]),
        g(&n["frees"]),
        g(&n["moves"]),
        g(&n["bytes_allocated"]),
        g(&n["bytes_freed"]),
        g(&n["temporary"]),
        g(&n["leaked"]["blocks"]),
    ]
}

/// A heap event as (record, namespace name, op).
type Ev = (u64, String, HeapOp);

/// The heap events of a trace.
fn events(trace: &Path, dtd: &Path) -> Vec<Ev> {
    let opened = metatf::OpenOptions::new().dtd(dtd).open(trace).unwrap();
    let reader = opened.reader();
    let mut interp = Interpreter::new(opened.schema());
    let mut out: Vec<HeapEvent> = Vec::new();
    let mut records = reader.records();
    while let Some(ev) = records.next() {
        match ev {
            Event::Record(r) => interp.record(&r, &mut out),
            Event::Problem(p) => panic!("decoding: {p}"),
            Event::Damage(d) => panic!("decoding: {d}"),
        }
    }
    let names = interp.namespaces();
    out.iter()
        .map(|e| (e.record, names[e.space as usize].name.clone(), e.op))
        .collect()
}

/// Pack `text` for a DTD of the decisions folder into a temporary trace.
fn packed(dtd: &Path, text: &str) -> (tempfile::TempDir, PathBuf) {
    let rel = dtd.strip_prefix(util::root()).unwrap();
    let schema = util::schema(rel.to_str().unwrap());
    let bytes = metatf::pack::pack_to_vec(&schema, text.as_bytes(), InputFormat::Text)
        .unwrap_or_else(|e| panic!("pack: {e}"));
    let dir = util::tempdir();
    let path = dir.path().join("t.mtf");
    std::fs::write(&path, bytes).unwrap();
    (dir, path)
}

fn alloc(id: u64, size: u64) -> HeapOp {
    HeapOp::Alloc {
        id,
        size,
        align: None,
    }
}

fn mv(old: u64, new: u64, size: Option<u64>) -> HeapOp {
    HeapOp::Move { old, new, size }
}

fn free(id: u64) -> HeapOp {
    HeapOp::Free { id }
}

fn ev(record: u64, ns: &str, op: HeapOp) -> Ev {
    (record, ns.to_string(), op)
}

// §14.3: a record that undefines an id and defines one in the same namespace and key moves a
// block, whatever else it defines in other namespaces. Each trace is `al a=1` then one record
// that undefines obj 1 and defines an obj id (and, but for mv1, an id of `res` or of the table
// `tab`): one allocation and one move of obj, no free.
#[test]
fn a_move_is_a_move_whatever_else_the_record_defines() {
    let dtd = case("analysis-move", "t.dtd");
    let cases: [(&str, Vec<Ev>, u64); 5] = [
        // mv1 a=1 b=2: obj 1 → 2.
        ("mv1", vec![ev(1, "obj", mv(1, 2, None))], 0),
        // mv5 a=1 b=2: a undefines obj 1 and defines res 1 (a field before b), b defines obj 2.
        (
            "mv5",
            vec![ev(1, "res", alloc(1, 0)), ev(1, "obj", mv(1, 2, None))],
            1,
        ),
        // mv6 a=1 b=3 c=2: res 3 first (field b), then obj 1 → 2 (field c).
        (
            "mv6",
            vec![ev(1, "res", alloc(3, 0)), ev(1, "obj", mv(1, 2, None))],
            1,
        ),
        // mv7 a=3 b=1: res 3 (field a), then obj 1 stays in place (field b undefines and
        // defines it).
        (
            "mv7",
            vec![ev(1, "res", alloc(3, 0)), ev(1, "obj", mv(1, 1, None))],
            1,
        ),
        // mvt a=3 b=1: a table defines no heap event; obj 1 in place.
        ("mvt_table", vec![ev(1, "obj", mv(1, 1, None))], 0),
    ];
    for (name, rest, res_allocs) in cases {
        let trace = case("analysis-move", &format!("{name}.mtf"));
        let mut want = vec![ev(0, "obj", alloc(1, 0))];
        want.extend(rest);
        assert_eq!(events(&trace, &dtd), want, "{name}");
        let (code, out) = check(&trace, &dtd);
        assert_eq!(code, 0, "{name}: {out}");
        assert!(out.contains("0 problem(s)"), "{name}: {out}");
        // allocations, frees, moves, bytes allocated and freed, temporary, leaked blocks
        assert_eq!(
            figures(&stats(&trace, &dtd, "obj")),
            [1, 0, 1, 0, 0, 0, 1],
            "{name}"
        );
        assert_eq!(
            figures(&stats(&trace, &dtd, "res"))[0],
            res_allocs,
            "{name}: res"
        );
    }
}

// §14.3, decision (several ids): undefines and defines of one namespace pair in field order; a
// define of the null id pairs with none; the frees of the undefines left over come first.
#[test]
fn several_ids_of_one_namespace_pair_in_field_order() {
    let dtd = case("analysis-decisions", "pairs.dtd");
    let (_dir, trace) = packed(
        &dtd,
        "%mtf 1 dtd=\"pairs.dtd\" class=32 order=little\n\
         al a=1\n\
         al a=2\n\
         u2 a=1 b=2 c=3\n\
         al a=4\n\
         d2 c=5 a=4 d=6\n\
         re a=5 c=0\n\
         re a=3 c=7\n",
    );
    let want = vec![
        ev(0, "blk", alloc(1, 8)),
        ev(1, "blk", alloc(2, 8)),
        // u2: a (1) pairs with c (3); b (2) is left over and freed first.
        ev(2, "blk", free(2)),
        ev(2, "blk", mv(1, 3, None)),
        ev(3, "blk", alloc(4, 8)),
        // d2: the first define (c = 5, before a in the record) takes the block of a (4); d
        // (6) is a new block, with no byte count.
        ev(4, "blk", mv(4, 5, None)),
        ev(4, "blk", alloc(6, 0)),
        // re with new id null: a free.
        ev(5, "blk", free(5)),
        // re: a realloc, 3 → 7 with 16 bytes.
        ev(6, "blk", mv(3, 7, Some(16))),
    ];
    assert_eq!(events(&trace, &dtd), want);
    // Allocations: 1, 2, 4, 6 and the realloc's new block = 5; frees: 2, 5 and the realloc's
    // old block = 3; moves without a byte count: 2. Bytes allocated 8+8+8+0+16 = 40; freed 8
    // (block 2) + 8 (block 4, moved to 5) + 8 (block 1, moved to 3) = 24. Temporary: block 2
    // (allocated at record 1, freed first in record 2) = 1. Alive at the end: 6 and 7.
    assert_eq!(
        figures(&stats(&trace, &dtd, "blk")),
        [5, 3, 2, 40, 24, 1, 2]
    );
}

// docs/stats.md, temporary: blocks are followed, not ids; a move is neither an allocation nor
// a free.
#[test]
fn temporary_allocations_follow_the_block() {
    let dtd = case("analysis-temporary", "t.dtd");
    // (trace, allocations, frees, moves, bytes allocated, bytes freed, temporary, leaked)
    let cases = [
        // al 1, mv 1 → 1, fr 1: the block is freed with nothing between.
        ("in_place", [1, 1, 1, 8, 8, 1, 0]),
        // al 1, mv 1 → 2, fr 2: the same block under its new id.
        ("moved", [1, 1, 1, 8, 8, 1, 0]),
        // al 1, mv 1 → 2, mv 2 → 1, fr 1.
        ("moved_back", [1, 1, 2, 8, 8, 1, 0]),
        // al 5 (A, 8), al 1 (B, 8), ud c=5 t=1 with 4 bytes, fr 5. Record 2 undefines 1 first
        // (§14.1): B is freed right after its allocation (temporary); then the define of the
        // live id 5 ends A — an allocation of a live id (`redefined`, docs/stats.md): A leaves
        // the live state without a free or a lifetime; then the new block C (5, 4 bytes) — a
        // move with a byte count is a free and an allocation. fr 5 frees C right after its
        // allocation (temporary). Allocations A, B, C = 3 (20 bytes); frees B, C = 2 (12
        // bytes); temporary 2.
        ("redefine_order", [3, 2, 0, 20, 12, 2, 0]),
    ];
    for (name, want) in cases {
        let trace = case("analysis-temporary", &format!("{name}.mtf"));
        assert_eq!(figures(&stats(&trace, &dtd, "blk")), want, "{name}");
    }
    // The order of record 2's events: B's free, then A's end, then C.
    let trace = case("analysis-temporary", "redefine_order.mtf");
    assert_eq!(
        events(&trace, &dtd),
        vec![
            ev(0, "blk", alloc(5, 8)),
            ev(1, "blk", alloc(1, 8)),
            ev(2, "blk", free(1)),
            ev(2, "blk", free(5)),
            ev(2, "blk", alloc(5, 4)),
            ev(3, "blk", free(5)),
        ]
    );
    // A free of an id that is not alive is no event: block 1 stays a candidate.
    let (_dir, trace) = packed(
        &dtd,
        "%mtf 1 dtd=\"t.dtd\" class=32 order=little\nal a=1\nfr a=9\nfr a=1\n",
    );
    let n = stats(&trace, &dtd, "blk");
    assert_eq!(
        (n["temporary"].as_u64(), n["unknown_frees"].as_u64()),
        (Some(1), Some(1))
    );
}

// §14.1: `definesNext` defines first, first + 1, …; the null id does nothing.
#[test]
fn defines_next_of_the_null_id_does_nothing() {
    let dtd = case("analysis-definesnext-null", "t.dtd");
    let trace = case("analysis-definesnext-null", "null.mtf");
    // blk.null = 0 and first = 0: record 0 defines 0, the null id (nothing); record 1 defines 1.
    assert_eq!(events(&trace, &dtd), vec![ev(1, "blk", alloc(1, 0))]);
    let (code, out) = check(&trace, &dtd);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("info: blk 1 is alive at the end"), "{out}");
    assert!(!out.contains("blk 0"), "{out}");
    assert!(
        out.contains("0 problem(s), 1 piece(s) of information"),
        "{out}"
    );
    assert_eq!(figures(&stats(&trace, &dtd, "blk")), [1, 0, 0, 0, 0, 0, 1]);
}

// §14.1, `monotonic`: a series is a type name with its key; every declaration is checked.
#[test]
fn monotonic_series_by_key_and_every_declaration() {
    let dtd = case("analysis-monotonic", "t.dtd");
    // ra x=10 is the series of x over the whole trace; rb x=5 k=0 the series of x keyed by k,
    // for k = 0: apart, so nothing goes backwards (key0 and key1 alike).
    for name in ["key0", "key1"] {
        let (code, out) = check(&case("analysis-monotonic", &format!("{name}.mtf")), &dtd);
        assert_eq!(code, 0, "{name}: {out}");
        assert!(out.contains("0 problem(s)"), "{name}: {out}");
    }
    // rc x=10 y=0 k=1: time 10; x declares the time monotonic per k, y over the whole trace.
    // rd y=5: time 5, over the whole trace: backwards after rc's 10.
    let (code, out) = check(&case("analysis-monotonic", "two_time_fields.mtf"), &dtd);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("record 1 (rd) at byte 37: time goes backwards: 5 after 10 (record 0 (rc)"),
        "{out}"
    );
    assert!(out.contains("1 problem(s)"), "{out}");
}

// §14.1, `kind = table`: a name given again and names at the end are not reported, even with
// `atEnd = error`.
#[test]
fn a_table_is_names_not_ids() {
    let dtd = case("analysis-decisions", "table.dtd");
    let (_dir, trace) = packed(
        &dtd,
        "%mtf 1 dtd=\"table.dtd\" class=32 order=little\n\
         nm id=1 name.data=\"a\"\n\
         nm id=1 name.data=\"b\"\n",
    );
    let (code, out) = check(&trace, &dtd);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("0 problem(s), 0 piece(s) of information"),
        "{out}"
    );
    assert_eq!(events(&trace, &dtd), vec![]);
}

// §14.3, decision (dead ids): a byte count that reads a field of an id that is not alive is
// not computable, reported with the reference's severity; the block counts 0 bytes.
#[test]
fn a_byte_count_of_a_dead_id_is_not_computable() {
    let dtd = case("analysis-decisions", "dead.dtd");
    let (_dir, trace) = packed(
        &dtd,
        "%mtf 1 dtd=\"dead.dtd\" class=32 order=little\n\
         ai i=1 size=16\n\
         al i=1 addr=100\n\
         al i=2 addr=200\n",
    );
    let (code, out) = check(&trace, &dtd);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("record 2 (al) at byte 42: refers to info 2, which is not alive"),
        "{out}"
    );
    assert!(
        out.contains(
            "record 2 (al) at byte 42: its byte count reads a field of info 2, which is not alive: the block counts 0 bytes"
        ),
        "{out}"
    );
    assert!(
        out.contains("byte count not computable        error             1"),
        "{out}"
    );
    // blk 100 has info 1's 16 bytes, blk 200 none.
    assert_eq!(
        events(&trace, &dtd)
            .into_iter()
            .filter(|e| e.1 == "blk")
            .collect::<Vec<_>>(),
        vec![ev(1, "blk", alloc(100, 16)), ev(2, "blk", alloc(200, 0))]
    );
}

// §14.1, decision (repeats): a role on a repeated field acts on its first occurrence only.
#[test]
fn a_role_on_a_repeated_field_reads_its_first_occurrence() {
    let dtd = case("analysis-decisions", "repeat.dtd");
    let (_dir, trace) = packed(
        &dtd,
        "%mtf 1 dtd=\"repeat.dtd\" class=32 order=little\n\
         al a=1\n\
         al a=2\n\
         batch n=2 a=[1 2]\n",
    );
    assert_eq!(
        events(&trace, &dtd),
        vec![
            ev(0, "blk", alloc(1, 8)),
            ev(1, "blk", alloc(2, 8)),
            ev(2, "blk", free(1)),
        ]
    );
}

// §14.3: a record with a byte count defines exactly one id, and at most one byte count has no
// guard; the messages say which rule.
#[test]
fn byte_count_rules_are_refused_with_their_own_message() {
    for (file, msg) in [
        (
            "two_defines.dtd",
            "record `al` declares a byte count and defines 2 ids of `obj`: which one it counts is unclear",
        ),
        (
            "two_counts.dtd",
            "record `al` has two byte counts without a guard (`when`/`is`)",
        ),
    ] {
        let path = case("analysis-decisions", file);
        let o = util::mtf(&["dtd", "check", path.to_str().unwrap()]);
        let err = util::text(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{file}: {err}");
        assert!(err.contains("mtf::dtd::bad_analysis"), "{file}: {err}");
        assert!(err.contains(msg), "{file}: {err}");
        assert!(!err.contains("two namespaces"), "{file}: {err}");
    }
}
