//! Figures by call stack and calling context (extension stacks/1, docs/stacks.md) from the
//! command line, checked against the formats' own readers: heaptrack_print's folded output for
//! heaptrack recordings (goldens in tests/data/heaptrack-stacks, written by heaptrack_print
//! 1.4.0), and for an Elephant Tracks 3 trace a stack of methods per thread computed here from
//! the trace's text (`M` pushes, `E` pops, `N`/`A` allocate under the stack, `D` frees).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::util::{mtf, mtf_stdin, root, tempdir, text};

const RECORDINGS: [&str; 5] = ["nested", "temporaries", "inlined", "threads", "templates"];
const HAND_WRITTEN: [&str; 2] = ["builtin-suppression", "unsized-suppression"];
const COSTS: [&str; 4] = ["allocations", "temporary", "peak", "leaked"];

fn stacks_dir() -> PathBuf {
    root().join("tests/data/heaptrack-stacks")
}

/// `mtf import` of a heaptrack file into `dir`.
fn import(input: &Path, dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(format!("{name}.mtf"));
    let o = mtf(&[
        "import",
        "--from",
        "heaptrack",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{name}: {}", text(&o.stderr));
    out
}

fn folded(trace: &Path, extra: &[&str]) -> String {
    let mut args = vec!["flamegraph", "--folded", trace.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = mtf(&args);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

#[test]
fn heaptrack_files_fold_as_heaptrack_print_writes_them() {
    let dir = tempdir();
    let inputs = RECORDINGS
        .iter()
        .map(|p| (p, format!("{p}.zst")))
        .chain(HAND_WRITTEN.iter().map(|p| (p, format!("{p}.txt"))));
    for (p, file) in inputs {
        let trace = import(&stacks_dir().join(file), dir.path(), p);
        for c in COSTS {
            let golden =
                std::fs::read_to_string(stacks_dir().join(format!("{p}.{c}.folded"))).unwrap();
            let ours = folded(&trace, &["--cost", c]);
            assert_eq!(
                ours, golden,
                "{p}, cost {c}: mtf flamegraph --folded differs from heaptrack_print -F"
            );
        }
    }
}

#[test]
fn folded_stacks_of_a_pipe_and_a_compressed_trace_are_the_file_s() {
    let dir = tempdir();
    let trace = import(&stacks_dir().join("threads.zst"), dir.path(), "threads");
    let want = folded(&trace, &["--cost", "peak"]);
    let bytes = std::fs::read(&trace).unwrap();
    let o = mtf_stdin(&["flamegraph", "--folded", "--cost", "peak", "-"], &bytes);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), want);
    let zst = dir.path().join("threads.mtf.zst");
    std::fs::write(&zst, super::util::compress("zst", &bytes)).unwrap();
    assert_eq!(folded(&zst, &["--cost", "peak"]), want);
}

#[test]
fn a_flame_graph_is_an_svg_naming_the_frames_and_never_replaces_its_input() {
    let dir = tempdir();
    let trace = import(&stacks_dir().join("nested.zst"), dir.path(), "nested");
    let svg = dir.path().join("nested.svg");
    let o = mtf(&[
        "flamegraph",
        trace.to_str().unwrap(),
        "--cost",
        "leaked",
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(
        s.starts_with("<?xml") && s.contains("<svg"),
        "{}",
        &s[..s.len().min(200)]
    );
    // The two leaking stacks (nested.leaked.folded): grow and recurse under main.
    for f in ["main (nested.c)", "grow (nested.c)", "recurse (nested.c)"] {
        assert!(s.contains(f), "the flame graph lacks {f}");
    }
    assert!(
        !s.contains("leaf_alloc"),
        "leaf_alloc leaks nothing: no box"
    );
    let before = std::fs::read(&trace).unwrap();
    let o = mtf(&[
        "flamegraph",
        trace.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert_eq!(std::fs::read(&trace).unwrap(), before);
}

#[test]
fn a_trace_without_stacks_is_told_so() {
    let o = mtf(&["flamegraph", "--folded", "traces/hatf-le32.mtf"]);
    assert_eq!(o.status.code(), Some(2));
    let e = text(&o.stderr);
    assert!(
        e.contains("mtf::usage::stacks") && e.contains("stacks/1"),
        "{e}"
    );
    let o = mtf(&["stats", "--by", "stack", "traces/malloclab.mtf"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}

#[test]
fn stats_by_stack_totals_are_the_statistics_totals() {
    let dir = tempdir();
    let trace = import(&stacks_dir().join("templates.zst"), dir.path(), "templates");
    let t = trace.to_str().unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        let o = mtf(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    };
    let stats = json(&["stats", "-f", "json", t]);
    let block = stats["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "block")
        .unwrap()
        .clone();
    for tree in ["top-down", "bottom-up", "callers"] {
        let v = json(&["stats", "--by", "stack", "--tree", tree, "-f", "json", t]);
        assert_eq!(v["total"]["allocations"], block["allocations"], "{tree}");
        assert_eq!(v["total"]["peak"], block["peak"]["bytes"], "{tree}");
    }
    // templates.cpp allocates through operator new: its frames are dropped (heaptrack's
    // reader), so the allocating functions are the callers.
    let o = mtf(&["stats", "--by", "stack", "--tree", "bottom-up", t]);
    let s = text(&o.stdout);
    assert!(!s.contains("operator new(unsigned long)"), "{s}");
    assert!(s.contains("Box<>::Box()"), "{s}");
}

#[test]
fn a_differential_flame_graph_and_deltas_by_stack() {
    let dir = tempdir();
    let a = import(&stacks_dir().join("nested.zst"), dir.path(), "a");
    let b = import(&stacks_dir().join("temporaries.zst"), dir.path(), "b");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let o = mtf(&["diff", a, b]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let s = text(&o.stdout);
    assert!(s.contains("by stack (allocations)"), "{s}");
    // nested.c's five leaf_alloc calls are gone in temporaries.c.
    assert!(s.contains("     5       0      -5  "), "{s}");
    let o = mtf(&["diff", "--flamegraph", "--folded", a, b]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines = text(&o.stdout);
    assert!(
        lines
            .lines()
            .any(|l| l.ends_with("leaf_alloc (nested.c) 5 0")),
        "{lines}"
    );
    let svg = dir.path().join("d.svg");
    let o = mtf(&["diff", "--flamegraph", a, b, "-o", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(std::fs::read_to_string(&svg)
        .unwrap()
        .contains("scratch (temporaries.c)"));
}

/// The calling contexts of an ET3 trace computed from its text: per thread a stack of method
/// ids, pushed by `M` and popped by `E`; an `N` or `A` counts under its thread's stack and
/// lives until its `D`. Reading stops before the first `D` whose time is `until` or later.
/// Returns, per context (`method A;method B`, root first), the allocations and the bytes live
/// at the end.
pub(crate) fn et3_contexts(trace: &str, until: Option<u64>) -> BTreeMap<String, (u64, u64)> {
    let mut stacks: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut live: BTreeMap<&str, (String, u64)> = BTreeMap::new();
    let mut out: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for line in trace.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "M" => stacks.entry(f[3]).or_default().push(f[1]),
            "E" => {
                stacks.entry(f[2]).or_default().pop();
            }
            "N" | "A" => {
                let ctx: Vec<String> = stacks
                    .get(f[6])
                    .map(|s| s.iter().map(|m| format!("method {m}")).collect())
                    .unwrap_or_default();
                let ctx = ctx.join(";");
                out.entry(ctx.clone()).or_default().0 += 1;
                live.insert(f[1], (ctx, f[2].parse().unwrap()));
            }
            "D" => {
                if until.is_some_and(|t| f[3].parse::<u64>().unwrap() >= t) {
                    break;
                }
                live.remove(f[1]);
            }
            _ => {}
        }
    }
    for (ctx, size) in live.into_values() {
        out.entry(ctx).or_default().1 += size;
    }
    out
}

/// Merged folded lines (`stack cost`) as a map.
fn by_stack(folded: &str) -> BTreeMap<String, u64> {
    folded
        .lines()
        .map(|l| {
            let (s, n) = l.rsplit_once(' ').unwrap();
            (s.to_string(), n.parse().unwrap())
        })
        .collect()
}

#[test]
fn et3_allocations_appear_under_their_calling_contexts() {
    let input = root().join("tests/data/stacks-et3/trace");
    let src = std::fs::read_to_string(&input).unwrap();
    let dir = tempdir();
    let trace = dir.path().join("et3.mtf");
    let o = mtf(&[
        "import",
        "--from",
        "et3",
        input.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let expect = et3_contexts(&src, None);
    let allocations: BTreeMap<String, u64> = expect
        .iter()
        .filter(|(_, v)| v.0 > 0)
        .map(|(k, v)| (k.clone(), v.0))
        .collect();
    let ours = by_stack(&folded(&trace, &["--merge", "--leaf-site", "no"]));
    assert_eq!(ours, allocations);
    let total: u64 = ours.values().sum();
    let allocs = src
        .lines()
        .filter(|l| l.starts_with("N ") || l.starts_with("A "))
        .count();
    assert_eq!(total, allocs as u64, "every allocation under a context");
    // What was live at a few moments (before the first death at or after time T).
    for t in [10, 40, 300, 1000] {
        let expect: BTreeMap<String, u64> = et3_contexts(&src, Some(t))
            .into_iter()
            .filter(|(_, v)| v.1 > 0)
            .map(|(k, v)| (k, v.1))
            .collect();
        let at = format!("t{t}");
        let ours = by_stack(&folded(
            &trace,
            &["--merge", "--leaf-site", "no", "--at", &at],
        ));
        assert_eq!(ours, expect, "live before {at}");
    }
}

/// Slices that end early are named from the records after them; only the records that can
/// change a name are read on. heaptrack's recordings, imported, keep their call stacks and
/// instruction pointers in sections after the heap's. On them and on every shipped trace the
/// figures, names and stack profiles of such slices are those of reading every record on, and
/// on some they differ from reading none on (the names do come from after the slice).
#[test]
fn a_slice_s_sites_are_named_from_the_records_after_it() {
    use super::analysis::Unplaced;
    use metatf::analysis::stats::{compute, Bound, Declared, Window};
    let dir = tempdir();
    // Each trace with its slices: (from, to) in data records.
    type Slices = Vec<(Option<u64>, u64)>;
    let mut traces: Vec<(PathBuf, Slices)> = Vec::new();
    for p in RECORDINGS {
        let trace = import(&stacks_dir().join(format!("{p}.zst")), dir.path(), p);
        let opened = metatf::open(&trace).unwrap();
        let all = compute(
            &opened.reader(),
            &mut Declared::new(opened.schema()),
            Window::all(),
        );
        let n = all.data_records;
        traces.push((trace, vec![(None, n / 4), (None, n / 2), (None, n - n / 8)]));
    }
    for entry in std::fs::read_dir(root().join("traces")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) == Some("mtf") {
            let windows = vec![
                (None, 1),
                (None, 10),
                (None, 20),
                (None, 40),
                (Some(5), 120),
            ];
            traces.push((path, windows));
        }
    }
    let (mut compared, mut named_later) = (0, 0);
    for (trace, windows) in &traces {
        let opened = metatf::open(trace).unwrap();
        let reader = opened.reader();
        for &(from, to) in windows {
            let window = Window {
                from: from.map(Bound::Record),
                to: Some(Bound::Record(to)),
            };
            let some = compute(&reader, &mut Declared::new(opened.schema()), window);
            let every = compute(
                &reader,
                &mut Unplaced(Declared::new(opened.schema()), true),
                window,
            );
            let (t, w) = (trace.display(), format!("{window:?}"));
            assert_eq!(format!("{some:?}"), format!("{every:?}"), "{t} {w}");
            let none = compute(
                &reader,
                &mut Unplaced(Declared::new(opened.schema()), false),
                window,
            );
            named_later += usize::from(format!("{none:?}") != format!("{every:?}"));
            compared += 1;
        }
    }
    assert!(
        compared >= 60 && named_later >= 5,
        "{compared} {named_later}"
    );
}
