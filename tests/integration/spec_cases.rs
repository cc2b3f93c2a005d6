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
        assert_eq!(err.lines().count(), 1, "one error only:\n{err}");
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
