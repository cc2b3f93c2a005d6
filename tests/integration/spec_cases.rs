//! Corner cases of docs/format.md and docs/text-format.md (issue 8, part C), run through the
//! binary: each builds a tiny DTD and a trace from the text form with `mtf pack`, checks the exact
//! `mtf dump` lines, and checks that `mtf dump | mtf pack` gives back the identical bytes.

use std::path::{Path, PathBuf};

use crate::util;

/// A DTD and a trace packed from `text` in a fresh folder.
struct Case {
    dir: tempfile::TempDir,
    dtd: PathBuf,
    trace: PathBuf,
}

impl Case {
    fn new(dtd: &str) -> Case {
        let dir = util::tempdir();
        let dtd_path = dir.path().join("case.dtd");
        std::fs::write(&dtd_path, dtd).unwrap();
        let trace = dir.path().join("case.mtf");
        Case {
            dir,
            dtd: dtd_path,
            trace,
        }
    }

    fn dtd(&self) -> &str {
        self.dtd.to_str().unwrap()
    }

    /// `mtf pack --dtd DTD - -o OUT` on `text`; returns (status, stderr).
    fn pack_to(&self, text: &str, out: &Path) -> (i32, String) {
        let o = util::mtf_stdin(
            &[
                "pack",
                "--dtd",
                self.dtd(),
                "-",
                "-o",
                out.to_str().unwrap(),
            ],
            text.as_bytes(),
        );
        (o.status.code().unwrap_or(-1), util::text(&o.stderr))
    }

    /// Pack `text` into the case's trace, which must succeed.
    fn pack(&self, text: &str) {
        let (code, err) = self.pack_to(text, &self.trace);
        assert_eq!(code, 0, "pack failed: {err}");
    }

    /// `mtf dump` of `trace`: (status, stdout, stderr).
    fn dump_of(&self, trace: &Path) -> (i32, String, String) {
        let o = util::mtf(&["dump", "--dtd", self.dtd(), trace.to_str().unwrap()]);
        (
            o.status.code().unwrap_or(-1),
            util::text(&o.stdout),
            util::text(&o.stderr),
        )
    }

    /// Dump the case's trace (which must be valid), compare it with `expected` (one record per
    /// line, after the header), and check that packing the dump gives the identical bytes.
    fn assert_dump_roundtrip(&self, expected: &[&str]) {
        let (code, out, err) = self.dump_of(&self.trace);
        assert_eq!(code, 0, "dump failed: {err}");
        let lines: Vec<&str> = out.lines().skip(1).collect();
        assert_eq!(lines, expected, "dump:\n{out}");
        let again = self.dir.path().join("again.mtf");
        let (code, err) = self.pack_to(&out, &again);
        assert_eq!(code, 0, "packing the dump failed: {err}");
        assert_eq!(
            std::fs::read(&self.trace).unwrap(),
            std::fs::read(&again).unwrap(),
            "dump | pack is not byte-identical"
        );
    }
}

const HEADER: &str = "%mtf 1 dtd=\"case.dtd\" class=32 order=little\n";

fn text(lines: &[&str]) -> String {
    let mut s = HEADER.to_string();
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

const ONE_BYTE: &str = "n.width = 1; n.interpretation = none;
m.width = 1; m.interpretation = none;
k.width = 1; k.interpretation = none;
a.width = 1; a.interpretation = none;
b.width = 1; b.interpretation = none;
p.width = 1; p.interpretation = none;
z.width = 1; z.interpretation = none;
x.width = 1; x.interpretation = none;
";

/// Item 2: keys inside inner items are relative to the item, also when the names repeat at two
/// levels (`n*(n*(a,b))`, `m*k*p`, `g : (k*(b, k*(a,b)))`); the same shapes with different names
/// give the same keys.
#[test]
fn repeat_keys_when_names_repeat_at_two_levels() {
    let c = Case::new(&format!(
        "{ONE_BYTE}
r1 : (tag, n*(n*(a,b))) {{ tag.value = 4; }}
r2 : (tag, m*k*p) {{ tag.value = 5; }}
g : (k*(b, k*(a,b)));
r3 : (tag, g) {{ tag.value = 6; }}
r4 : (tag, n*(m*(a,b))) {{ tag.value = 7; }}
r5 : (tag, n*m*(a,b)) {{ tag.value = 8; }}
r6 : (tag, n*m*x) {{ tag.value = 9; }}
"
    ));
    let lines = [
        "r1 n=1 n_items=[{n=2 n_items=[{a=1 b=2} {a=3 b=4}]}]",
        "r2 m=2 p=[{k=1 p=[9]} {k=0 p=[]}]",
        "r3 g.k=1 g.k_items=[{b=5 k=1 k_items=[{a=6 b=7}]}]",
        "r4 n=1 n_items=[{m=2 m_items=[{a=1 b=2} {a=3 b=4}]}]",
        "r5 n=1 n_items=[{m=1 m_items=[{a=1 b=2}]}]",
        "r6 n=2 x=[{m=1 x=[7]} {m=2 x=[8 9]}]",
    ];
    c.pack(&text(&lines));
    c.assert_dump_roundtrip(&lines);
}

/// Item 3: an item that is exactly one scalar field reached through nested records and
/// composites is one list keyed by that field's name relative to the current level.
#[test]
fn single_field_item_through_nesting() {
    let c = Case::new(&format!(
        "{ONE_BYTE}
p : (z);
q : (p);
wrap : (x);
r : (tag, k*(p), k*q, k*p, n*(a), n*wrap) {{ tag.value = 4; }}
s : (tag, n*(k*(p))) {{ tag.value = 5; }}
"
    ));
    let lines = [
        "r k=2 k_items.p.z=[7 8] k_2=1 q.p.z=[9] k_3=2 p.z=[1 2] n=2 n_items.a=[1 2] n_2=2 wrap.x=[3 4]",
        "s n=2 n_items=[{k=1 k_items.p.z=[5]} {k=0 k_items.p.z=[]}]",
    ];
    c.pack(&text(&lines));
    c.assert_dump_roundtrip(&lines);
}

/// Item 4: a truncated field stops the region (docs/format.md §9.2): no later field of the same
/// record is decoded or reported, not even a zero-width field whose fixed value is wrong.
#[test]
fn truncated_field_stops_the_record() {
    let c = Case::new(
        "x.width = 2; x.interpretation = none;
y.width = 1; y.interpretation = none;
f.interpretation = default 5;
r : (tag, y, vfield, x) { tag.value = 4; }
s : (tag, y, vfield, f, x) { tag.value = 5; }
",
    );
    let lines = [
        "r y=1 vfield.length=2 vfield.data=x\"0102\" x=3",
        "s y=2 vfield.length=4 vfield.data=x\"01020304\" f=5 x=6",
    ];
    c.pack(&text(&lines));
    c.assert_dump_roundtrip(&lines);
    let whole = std::fs::read(&c.trace).unwrap();
    // Cut inside the second record's byte string (the global region runs to the end of the
    // file): the record is not printed and its `f` and `x` are never read.
    for cut in [1usize, 3, 5] {
        let short = c.dir.path().join(format!("short{cut}.mtf"));
        std::fs::write(&short, &whole[..whole.len() - cut]).unwrap();
        let (code, out, err) = c.dump_of(&short);
        assert_eq!(code, 1, "{err}");
        assert_eq!(out.lines().skip(1).collect::<Vec<_>>(), &lines[..1]);
        assert_eq!(err.matches('×').count(), 1, "one error only:\n{err}");
        assert!(
            err.contains("record #1") && err.contains("truncated"),
            "{err}"
        );
        let field = if cut == 1 { "s.x" } else { "s.vfield.data" };
        assert!(err.contains(field), "{err}");
    }
    // With a fixed value the zero-width field cannot have, only the truncation is reported.
    let bad = Case::new(
        "x.width = 2; x.interpretation = none;
y.width = 1; y.interpretation = none;
f.interpretation = default 5;
r : (tag, y, vfield, x) { tag.value = 4; }
s : (tag, y, vfield, f, x) { tag.value = 5; f.value = 6; }
",
    );
    let o = util::mtf_stdin(
        &["check", "--dtd", bad.dtd(), "-"],
        &whole[..whole.len() - 3],
    );
    let out = util::text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("s.vfield.data: truncated"), "{out}");
    assert!(!out.contains("s.f") && !out.contains("s.x"), "{out}");
    assert!(out.contains("INVALID, 1 problem(s)"), "{out}");
}

/// Item 5: a suffixed count names its composite repeat (`n_2_items`); a repeat of a repeat of a
/// composite is named after its count (`n*m*(a,b)` → `n_items`), of a scalar after the scalar.
#[test]
fn repeat_names_follow_the_suffixed_count() {
    let c = Case::new(&format!(
        "{ONE_BYTE}
r : (tag, n*(a), n*(b), a, n*a, n*n*(b)) {{ tag.value = 4; }}
"
    ));
    let lines =
        ["r n=1 n_items.a=[1] n_2=1 n_2_items.b=[2] a=3 n_3=2 a_2=[4 5] n_4=1 n_4_items=[{n=1 n_items.b=[6]}]"];
    c.pack(&text(&lines));
    c.assert_dump_roundtrip(&lines);
    let o = util::mtf(&["dtd", "show", c.dtd()]);
    let show = util::text(&o.stdout);
    for slot in ["n_2_items.b", "n_4_items.n", "n_4_items.n_items.b"] {
        assert!(show.contains(slot), "{slot} missing:\n{show}");
    }
}

/// Item 5: a `.value` reference to a repeated field that has not occurred in the record reads 0,
/// never a previous record's value; within a record the most recent occurrence counts, also from
/// an earlier item.
#[test]
fn value_of_a_repeated_field_that_did_not_occur_is_0() {
    let c = Case::new(&format!(
        "{ONE_BYTE}
v : (tag, n*a, d) {{ tag.value = 4; d.width = a.value; d.interpretation = none; }}
w : (tag, n*(m*a, d)) {{ tag.value = 5; n_items.d.width = n_items.a.value; n_items.d.interpretation = none; }}
"
    ));
    let lines = [
        "v n=2 a=[1 2] d=x\"0102\"",
        "v n=0 a=[] d=x\"\"",
        "w n=2 n_items=[{m=1 a=[3] d=x\"010203\"} {m=0 a=[] d=x\"040506\"}]",
        "w n=1 n_items=[{m=0 a=[] d=x\"\"}]",
    ];
    c.pack(&text(&lines));
    c.assert_dump_roundtrip(&lines);
    // A previous record's `a` does not lend `d` a width.
    let (code, err) = c.pack_to(
        &text(&["v n=1 a=[2] d=x\"0102\"", "v n=0 a=[] d=x\"0102\""]),
        &c.dir.path().join("bad.mtf"),
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("v.d: 2 byte(s) given, but the width expression says 0"),
        "{err}"
    );
}

/// Item 5: `pack` computes a left-out length whenever the width expression is linear in it, and
/// fills a left-out count from its list; a count without its list must be 0.
#[test]
fn pack_fills_linear_lengths_and_counts() {
    let c = Case::new(&format!(
        "{ONE_BYTE}
len.width = 1; len.interpretation = none;
r : (tag, len, data) {{ tag.value = 4; data.width = len.value * 2 + 4; data.interpretation = none; }}
s : (tag, len, data) {{ tag.value = 5; data.width = 10 - len.value; data.interpretation = none; }}
t : (tag, a, len, data) {{ tag.value = 6; data.width = (len.value + a.value) * 2; data.interpretation = none; }}
q : (tag, n*a) {{ tag.value = 7; }}
"
    ));
    c.pack(&text(&[
        "r data=x\"0102030405060708\"",
        "s data=x\"0102\"",
        "t a=1 data=x\"01020304\"",
        "q a=[1 2]",
        "q n=0",
    ]));
    c.assert_dump_roundtrip(&[
        "r len=2 data=x\"0102030405060708\"",
        "s len=8 data=x\"0102\"",
        "t a=1 len=1 data=x\"01020304\"",
        "q n=2 a=[1 2]",
        "q n=0 a=[]",
    ]);
    let bad = c.dir.path().join("bad.mtf");
    for (line, message) in [
        (
            "r data=x\"010203\"",
            "r.len: cannot compute this left-out length from its byte string; give it",
        ),
        (
            "r data=x\"01\"",
            "r.len: cannot compute this left-out length from its byte string; give it",
        ),
        ("q n=2", "q.n: the count is 2 but the list has 0 item(s)"),
        (
            "q n=3 a=[1]",
            "q.n: the count is 3 but the list has 1 item(s)",
        ),
    ] {
        let (code, err) = c.pack_to(&text(&[line]), &bad);
        assert_eq!(code, 1, "{line}: {err}");
        assert!(err.contains(message), "{line}: {err}");
    }
}

/// `display = signed` shows delta, baseOffset, default and stride values as signed numbers, and
/// `pack` reads them back.
#[test]
fn signed_display_beyond_none() {
    let c = Case::new(
        "dl.width = 1; dl.interpretation = delta 0; dl.display = signed;
bo.width = 1; bo.interpretation = baseOffset 0; bo.display = signed;
df.interpretation = default -3; df.display = signed;
st.interpretation = stride 1 -1; st.display = signed;
u.width = 1; u.interpretation = delta 0;
s : (tag, dl, bo, df, st, u) { tag.value = 4; }
",
    );
    let lines = [
        "s dl=-2 bo=-1 df=-3 st=0 u=5",
        "s dl=-5 bo=3 df=-3 st=-1 u=18446744073709551605",
    ];
    c.pack(&text(&lines));
    c.assert_dump_roundtrip(&lines);
}

const TABLES: &str = "e.width = 1; e.interpretation = none;
o.width = 1; o.interpretation = sectionOffset tab;
i.interpretation = sectionStride tab 1;
c.width = 1; c.interpretation = sectionOffset tab;
ci.interpretation = sectionStride tab 2;
a.width = 1; a.interpretation = none;
section tab 1 { t : (tag, e) { tag.value = 9; } }
r : (tag, o, i) { tag.value = 4; }
q : (tag, c*a, ci*a) { tag.value = 5; }
";

/// Item 5: a count read through `sectionOffset`/`sectionStride` counts the offset or index the
/// record carries, not the element it leads to.
#[test]
fn count_through_a_reference_is_the_number_carried() {
    let c = Case::new(TABLES);
    let lines = [
        "q c=@2:7 a=[1 2] ci=#0:5 a_2=[]",
        "q c=@0:5 a=[] ci=#2:9 a_2=[3 4]",
        "section number=1:tab",
        "t e=5",
        "t e=7",
        "t e=9",
    ];
    c.pack(&text(&lines));
    c.assert_dump_roundtrip(&lines);
}

/// Item 5: a reference into a section whose region stopped at damage works for the elements
/// before the damage and is an error after it.
#[test]
fn reference_into_a_damaged_section() {
    let c = Case::new(TABLES);
    let lines = [
        "r o=@0:5 i=#0:5",
        "r o=@2:7 i=#1:7",
        "r o=@4:9 i=#2:9",
        "section number=1:tab",
        "t e=5",
        "t e=7",
        "t e=9",
    ];
    c.pack(&text(&lines));
    c.assert_dump_roundtrip(&lines);
    // Replace the third element's tag with an unknown one: the section stops decoding there.
    let mut bytes = std::fs::read(&c.trace).unwrap();
    let n = bytes.len();
    assert_eq!(bytes[n - 2], 9);
    bytes[n - 2] = 0x77;
    let damaged = c.dir.path().join("damaged.mtf");
    std::fs::write(&damaged, &bytes).unwrap();
    let (code, out, err) = c.dump_of(&damaged);
    assert_eq!(code, 1);
    assert_eq!(
        out.lines().skip(1).collect::<Vec<_>>(),
        [
            "r o=@0:5 i=#0:5",
            "r o=@2:7 i=#1:7",
            "r o=@4:? i=#2:?",
            "section number=1:tab",
            "t e=5",
            "t e=7",
        ]
    );
    let at = n - 2;
    let expected = format!("which is damaged at byte {at} before the element");
    assert_eq!(err.matches(&expected).count(), 2, "{err}");
    assert!(err.contains("r.o: refers to section 1") && err.contains("r.i: refers to section 1"));
    assert!(err.contains("unknown tag 119"), "{err}");
    assert_eq!(err.matches('×').count(), 3, "{err}");
}

/// The writer checks a forward reference when the trace is finished: one that leads to no
/// element is refused.
#[test]
fn pack_refuses_a_forward_reference_to_no_element() {
    let c = Case::new(TABLES);
    let bad = c.dir.path().join("bad.mtf");
    for (lines, message) in [
        (
            ["r o=@1 i=#0", "section tab", "t e=5", "t e=7"],
            "r.o: sectionOffset 1 is not the start of an element of section 1",
        ),
        (
            ["r o=@4 i=#0", "section tab", "t e=5", "t e=7"],
            "r.o: sectionOffset 4 is outside section 1",
        ),
    ] {
        let (code, err) = c.pack_to(&text(&lines), &bad);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(message), "{err}");
        assert!(!bad.exists());
    }
}

/// A left-out count read through `sectionStride` is the cursor, which both rules of
/// docs/text-format.md ("a left-out repeat count from its list"; "sectionStride: … or leave the
/// key out") allow leaving out when the list has that many items. `pack` fills the count from
/// the list as an integer instead and refuses it.
#[test]
fn left_out_section_stride_count() {
    let c = Case::new(TABLES);
    c.pack(&text(&[
        "q c=@2 a=[1 2] a_2=[]",
        "q c=@0 a=[] a_2=[3 4]",
        "section tab",
        "t e=5",
        "t e=7",
        "t e=9",
    ]));
    c.assert_dump_roundtrip(&[
        "q c=@2:7 a=[1 2] ci=#0:5 a_2=[]",
        "q c=@0:5 a=[] ci=#2:9 a_2=[3 4]",
        "section number=1:tab",
        "t e=5",
        "t e=7",
        "t e=9",
    ]);
}
