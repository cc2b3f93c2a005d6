//! Import fixes of issues 25 and 31: a failed realloc keeps its block (Android, valgrind);
//! the current Android memory_replay format (times, present bytes); heaptrack `i` lines with a
//! function but no file and line; ET2 name maps refused. Every figure is compared with an
//! independent computation over the original text, written here from the format's own reader.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::util::{self, mtf, text};

fn data(rel: &str) -> PathBuf {
    util::root().join("tests/data/import/alloc").join(rel)
}

/// Import `input` with `format` into a fresh folder; check; export and compare byte for byte.
/// Returns the folder (alive while held) and the trace's path.
fn import_checked(format: &str, input: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = util::tempdir();
    let t = dir.path().join("t.mtf");
    let out = mtf(&[
        "import",
        "--from",
        format,
        input.to_str().unwrap(),
        "-o",
        t.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "import {}: {err}", input.display());
    assert!(err.contains(" 0 kept as raw lines"), "{err}");
    let check = mtf(&["check", t.to_str().unwrap()]);
    let report = text(&check.stdout);
    assert!(check.status.success(), "check: {report}");
    assert!(report.contains(" 0 problem(s)"), "{report}");
    let back = dir.path().join("back.txt");
    let out = mtf(&["export", t.to_str().unwrap(), "-o", back.to_str().unwrap()]);
    assert!(out.status.success(), "export: {}", text(&out.stderr));
    assert!(
        std::fs::read(&back).unwrap() == std::fs::read(input).unwrap(),
        "{}: export differs",
        input.display()
    );
    (dir, t)
}

/// Peak live bytes, bytes and blocks alive at the end: what the trace's own reader makes of a
/// sequence of (op, new, old, bytes) in C's semantics, written from bionic's memory_replay and
/// valgrind's logs: a realloc frees its old block unless it failed (a null result for a size
/// above 0), and defines the new block unless that is null.
#[derive(Debug, Default, PartialEq)]
struct Heap {
    peak: u64,
    leaked_bytes: u64,
    leaked_blocks: u64,
}

enum Op {
    Alloc(u64, u64),
    Free(u64),
    Realloc { new: u64, old: u64, size: u64 },
}

fn replay(ops: &[Op]) -> Heap {
    let mut live: HashMap<u64, u64> = HashMap::new();
    let (mut cur, mut peak) = (0u64, 0u64);
    for op in ops {
        match *op {
            Op::Alloc(p, n) => {
                if p != 0 {
                    cur += n;
                    live.insert(p, n);
                }
            }
            Op::Free(p) => cur -= live.remove(&p).unwrap_or(0),
            Op::Realloc { new, old, size } => {
                let failed = new == 0 && size > 0;
                if old != 0 && !failed {
                    cur -= live.remove(&old).unwrap_or(0);
                }
                if new != 0 {
                    cur += size;
                    live.insert(new, size);
                }
            }
        }
        peak = peak.max(cur);
    }
    Heap {
        peak,
        leaked_bytes: live.values().sum(),
        leaked_blocks: live.len() as u64,
    }
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x").trim_start_matches("0X"), 16).unwrap()
}

/// bionic's FillInEntryFromString, reduced to what the heap needs: `TID: TYPE PTR ARGS
/// [START END [PRESENT]]`; calloc takes `nmemb * size` bytes.
fn android_ops(text: &str) -> Vec<Op> {
    let mut ops = Vec::new();
    for line in text.lines() {
        let (_, rest) = line.split_once(": ").unwrap();
        let w: Vec<&str> = rest.split(' ').collect();
        let ptr = hex(w[1]);
        let n = |i: usize| w[i].parse::<u64>().unwrap();
        match w[0] {
            "malloc" => ops.push(Op::Alloc(ptr, n(2))),
            "calloc" => ops.push(Op::Alloc(ptr, n(2) * n(3))),
            "memalign" => ops.push(Op::Alloc(ptr, n(3))),
            "free" => ops.push(Op::Free(ptr)),
            "realloc" => ops.push(Op::Realloc {
                new: ptr,
                old: hex(w[2]),
                size: n(3),
            }),
            "thread_done" => {}
            other => panic!("unknown Android operation {other}"),
        }
    }
    ops
}

/// valgrind `--trace-malloc=yes`: `--PID-- malloc(N) = P`, `free(P)`, `realloc(P,N) = Q`.
fn valgrind_ops(text: &str) -> Vec<Op> {
    let mut ops = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("--")) {
        let call = line.split("-- ").nth(1).unwrap();
        let (name, rest) = call.split_once('(').unwrap();
        let (args, result) = rest.split_once(')').unwrap();
        let result = result.strip_prefix(" = ").map(hex);
        let args: Vec<&str> = args.split(',').collect();
        match name {
            "malloc" => ops.push(Op::Alloc(result.unwrap(), args[0].parse().unwrap())),
            "free" => ops.push(Op::Free(hex(args[0]))),
            "realloc" => ops.push(Op::Realloc {
                new: result.unwrap(),
                old: hex(args[0]),
                size: args[1].parse().unwrap(),
            }),
            other => panic!("not in the fixture: {other}"),
        }
    }
    ops
}

fn stats_json(trace: &Path) -> serde_json::Value {
    let out = mtf(&["stats", "-f", "json", trace.to_str().unwrap()]);
    assert!(out.status.success(), "stats: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn heap_of(stats: &serde_json::Value) -> Heap {
    let ns = &stats["namespaces"][0];
    assert_eq!(ns["name"], "block");
    Heap {
        peak: ns["peak"]["bytes"].as_u64().unwrap(),
        leaked_bytes: ns["leaked"]["bytes"].as_u64().unwrap(),
        leaked_blocks: ns["leaked"]["blocks"].as_u64().unwrap(),
    }
}

#[test]
fn a_failed_realloc_keeps_its_block() {
    // `realloc 0x0 OLD SIZE` with SIZE > 0, `realloc(p,n) = 0x0`: the old block stays alive,
    // so the trace's later free of it checks clean (it was a double free before); a realloc
    // to size 0 still frees.
    for (format, file, ops) in [
        (
            "android",
            "android-failed-realloc.txt",
            android_ops as fn(&str) -> Vec<Op>,
        ),
        ("valgrind", "valgrind-failed-realloc.vg", valgrind_ops),
    ] {
        let input = data(file);
        let (_dir, t) = import_checked(format, &input);
        let want = replay(&ops(&std::fs::read_to_string(&input).unwrap()));
        assert_eq!(heap_of(&stats_json(&t)), want, "{file}");
    }
}

/// heaptrack_print's reading of an interpreted file, reduced to the sites: `s` strings
/// (1-based), `i ip module [function [file line]] …` (heaptrack's reader keeps the function even
/// when file and line are missing), `t ip parent` (1-based), `a size trace` (0-based), `+ info`.
/// Returns bytes allocated per innermost function name (`None`: a frame without a function).
fn heaptrack_sites(text: &str) -> HashMap<Option<String>, u64> {
    let (mut strings, mut ips, mut traces, mut infos) = (vec![], vec![], vec![], vec![]);
    let mut out = HashMap::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        let h = |i: usize| u64::from_str_radix(w[i], 16).unwrap() as usize;
        match w[0] {
            "s" => strings.push(line[2..].to_string()),
            "i" => ips.push((h(1), if w.len() > 3 { h(3) } else { 0 })),
            "t" => traces.push(h(1)),
            "a" => infos.push((h(1) as u64, h(2))),
            "+" => {
                let (size, trace) = infos[h(1)];
                // A frame without a function is named by its address (heaptrack_print's `0x…`).
                let (ip, function) = ips[traces[trace - 1] - 1];
                let name = Some(match function {
                    0 => format!("0x{ip:x}"),
                    f => strings[f - 1].clone(),
                });
                *out.entry(name).or_insert(0) += size;
            }
            _ => {}
        }
    }
    out
}

#[test]
fn heaptrack_frames_without_file_and_line_keep_their_function() {
    // `i IP MODULE FUNCTION` (a third of the `i` lines of a real heaptrack_gui recording): the
    // site is named by the function, as heaptrack_print names it.
    let input = data("heaptrack-function-only.txt");
    let (dir, t) = import_checked("heaptrack", &input);
    let dump = mtf(&["dump", "-s", "ips", t.to_str().unwrap()]);
    assert!(
        text(&dump.stdout).contains("hasframe=2 function=4 file=0 line=0 ninl=0 inl=[]"),
        "{}",
        text(&dump.stdout)
    );
    let stats = stats_json(&t);
    let ns = &stats["namespaces"][0];
    let got: HashMap<Option<String>, u64> = ns["sites"]["by_allocated"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().map(str::to_string),
                s["bytes_allocated"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = heaptrack_sites(&std::fs::read_to_string(&input).unwrap());
    assert_eq!(got, want);
    assert_eq!(want.get(&Some("compute".to_string())), Some(&64));
    drop(dir);
}

/// One line of the current memory_replay grammar, as bionic's FillInEntryFromString reads it:
/// `TID: TYPE PTR ARGS [START_NS END_NS [PRESENT]]` (thread_done: `TID: thread_done 0x0
/// [END_NS]`); a START of 0 means no times (FormatEntry writes none then).
struct Entry {
    op: Option<Op>,
    start: u64,
    end: u64,
}

fn android_entry(line: &str) -> Entry {
    let (_, rest) = line.split_once(": ").unwrap();
    let w: Vec<&str> = rest.split(' ').collect();
    let ptr = hex(w[1]);
    let n = |i: usize| w.get(i).map_or(0, |s| s.parse::<i64>().unwrap() as u64);
    let (op, args) = match w[0] {
        "malloc" => (Some(Op::Alloc(ptr, n(2))), 1),
        "calloc" => (Some(Op::Alloc(ptr, n(2) * n(3))), 2),
        "memalign" => (Some(Op::Alloc(ptr, n(3))), 2),
        "free" => (Some(Op::Free(ptr)), 0),
        "realloc" => (
            Some(Op::Realloc {
                new: ptr,
                old: hex(w[2]),
                size: n(3),
            }),
            2,
        ),
        "thread_done" => {
            return Entry {
                op: None,
                start: 0,
                end: n(2),
            }
        }
        other => panic!("unknown Android operation {other}"),
    };
    Entry {
        op,
        start: n(2 + args),
        end: n(3 + args),
    }
}

#[test]
fn current_android_format_times_and_present_bytes() {
    // Times in ns on every operation and the present bytes on free and realloc: imported and
    // exported byte for byte (every field shown by dump), the times declared so that `stats`
    // gives lifetimes in ns (a line without times has the time of the latest that had one).
    let input = data("android-timed.txt");
    let text_in = std::fs::read_to_string(&input).unwrap();
    let (_dir, t) = import_checked("android", &input);
    let dump = text(&mtf(&["dump", "--data-only", t.to_str().unwrap()]).stdout);
    assert!(
        dump.contains("free address=0xa000 time=0 thread=1000 heap=0 timed=1 start=1000003000 end=1000003100 haspresent=1 present=16"),
        "{dump}"
    );
    assert!(dump.contains("destroyThread thread=1000 timed=1 end=1000010000"));
    // The independent computation: bionic's reading of each line, C's semantics of the heap.
    let entries: Vec<Entry> = text_in.lines().map(android_entry).collect();
    let ops: Vec<Op> = text_in
        .lines()
        .map(android_entry)
        .filter_map(|e| e.op)
        .collect();
    let stats = stats_json(&t);
    assert_eq!(heap_of(&stats), replay(&ops));
    let (mut clock, mut born, mut lifetimes) = (None, HashMap::new(), Vec::new());
    for e in &entries {
        let own = if e.op.is_some() { e.start } else { e.end };
        if own != 0 {
            clock = Some(own);
        }
        let now = clock;
        let mut end_of = |p: u64| {
            if let (Some(b), Some(n)) = (born.remove(&p), now) {
                lifetimes.push(n - b);
            }
        };
        match e.op {
            Some(Op::Alloc(p, _)) if p != 0 => {
                born.insert(p, now.unwrap());
            }
            Some(Op::Free(p)) => end_of(p),
            Some(Op::Realloc { new, old, size }) => {
                if old != 0 && !(new == 0 && size > 0) {
                    end_of(old);
                }
                if new != 0 {
                    born.insert(new, now.unwrap());
                }
            }
            _ => {}
        }
    }
    lifetimes.sort_unstable();
    let ns = &stats["namespaces"][0];
    assert_eq!(ns["time_unit"], "ns");
    let l = &ns["lifetime"]["time"];
    assert_eq!(l["count"].as_u64().unwrap(), lifetimes.len() as u64);
    assert_eq!(l["min"].as_u64().unwrap(), lifetimes[0]);
    assert_eq!(l["max"].as_u64().unwrap(), *lifetimes.last().unwrap());
    let mean = lifetimes.iter().sum::<u64>() as f64 / lifetimes.len() as f64;
    assert_eq!(l["mean"].as_f64().unwrap(), mean);
    // Quantiles within 0.1 % (an HDR histogram of 3 significant digits, docs/stats.md).
    let median = lifetimes[(lifetimes.len() - 1) / 2] as f64;
    let got = l["median"].as_u64().unwrap() as f64;
    assert!(
        (got - median).abs() <= median / 1000.0 + 1.0,
        "{got} {median}"
    );
    assert_eq!(stats["slice"]["end"]["time"].as_u64(), Some(1_000_010_000));
}

#[test]
fn current_android_lines_that_break_the_grammar_stay_raw() {
    // Present bytes without the times, one time alone, a time with a sign: bionic refuses these
    // lines ("Failed to read timestamps"), so they are kept verbatim, never guessed at.
    let dir = util::tempdir();
    let input = dir.path().join("odd.txt");
    std::fs::write(
        &input,
        "1: malloc 0xa000 16 5 6\n1: free 0xa000 7\n1: malloc 0xb000 16 5\n1: free 0xb000 -5 6\n1: free 0xb000 8 9 16\n",
    )
    .unwrap();
    let t = dir.path().join("t.mtf");
    let out = mtf(&[
        "import",
        "--from",
        "android",
        "--keep-unmatched",
        input.to_str().unwrap(),
        "-o",
        t.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("2 as records of the format, 3 kept as raw lines"),
        "{err}"
    );
    assert!(err.contains("odd.txt:2:1, "), "{err}");
    assert!(err.contains("odd.txt:4:1"), "{err}");
}

#[test]
fn et2_name_maps_are_refused_with_a_message() {
    // `*.classes.list`, `*.methods.list`, `*.fields.list` were imported as trace lines, all
    // kept raw, without a word: they are refused by name, nothing written.
    let dir = util::tempdir();
    let trace = util::root().join("tests/data/import/et2/trace");
    for name in ["prog.classes.list", "prog.methods.list", "prog.fields.list"] {
        let map = dir.path().join(name);
        std::fs::write(&map, "1  java.lang.String  <init>\n").unwrap();
        let t = dir.path().join("t.mtf");
        let out = mtf(&[
            "import",
            "--from",
            "et3",
            trace.to_str().unwrap(),
            map.to_str().unwrap(),
            "-o",
            t.to_str().unwrap(),
        ]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("mtf::import::refused"), "{err}");
        assert!(err.contains(name), "{err}");
        assert!(err.contains("Elephant Tracks 2"), "{err}");
        assert!(!t.exists());
    }
    // The trace alone still imports.
    let t = dir.path().join("t.mtf");
    let out = mtf(&[
        "import",
        "--from",
        "et3",
        trace.to_str().unwrap(),
        "-o",
        t.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// The README's DuckDB query for the peak of live bytes (the first statement of its block).
fn readme_peak_query() -> String {
    let readme = std::fs::read_to_string(util::root().join("README.md")).unwrap();
    let start = readme
        .find("```sql\n-- mtf import systemui.zip")
        .expect("the README's DuckDB block");
    let block = &readme[start + "```sql\n".len()..];
    let end = block.find(";\n").expect("the peak query's end");
    block[..end].to_string()
}

#[test]
#[cfg(feature = "parquet")]
fn the_readme_duckdb_query_gives_the_peak_of_stats() {
    // The query over `blocks`, on a fixture of every imported format: its peak and data record
    // are `mtf stats`'s for every namespace that holds bytes, and, on Android's realloc outcomes
    // (moved, in place, of NULL, to size 0, failed) and calloc's nmemb × size, the independent
    // replay's. Skipped without duckdb.
    let python = std::env::var("MTF_PYTHON").unwrap_or_else(|_| "python3".into());
    let has = std::process::Command::new(&python)
        .args(["-c", "import duckdb"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has {
        eprintln!("skipped: {python} cannot import duckdb (pip install duckdb, or MTF_PYTHON)");
        return;
    }
    let query = readme_peak_query();
    for (format, file) in [
        ("android", "android-timed.txt"),
        ("android", "android-failed-realloc.txt"),
        ("android", "android-systemui.txt"),
        ("valgrind", "valgrind-allocs.vg"),
        ("valgrind", "valgrind-failed-realloc.vg"),
        ("mtrace", "mtrace-allocs.mtrace"),
        ("malloclab", "malloclab-2002.rep"),
        ("heaptrack", "heaptrack-v2.txt"),
        ("heaptrack", "heaptrack-suppressions.txt"),
    ] {
        let input = data(file);
        let dir = util::tempdir();
        let t = dir.path().join("t.mtf");
        let out = mtf(&[
            "import",
            "--from",
            format,
            input.to_str().unwrap(),
            "-o",
            t.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{file}: {}", text(&out.stderr));
        let pq = dir.path().join("pq");
        let out = mtf(&[
            "export",
            "-q",
            "--to",
            "parquet",
            "--table",
            "blocks",
            t.to_str().unwrap(),
            "-o",
            pq.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let q = query.replace("'pq/", &format!("'{}/", pq.display()));
        let out = std::process::Command::new(&python)
            .args([
                "-c",
                "import duckdb, sys\nfor r in duckdb.sql(sys.argv[1]).fetchall(): print(*r)",
                &q,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let rows: HashMap<String, (u64, u64)> = text(&out.stdout)
            .lines()
            .map(|l| {
                let w: Vec<&str> = l.split(' ').collect();
                (
                    w[0].to_string(),
                    (w[1].parse().unwrap(), w[2].parse().unwrap()),
                )
            })
            .collect();
        let stats = stats_json(&t);
        let mut seen = 0;
        for ns in stats["namespaces"].as_array().unwrap() {
            let peak = ns["peak"]["bytes"].as_u64().unwrap();
            if peak == 0 {
                continue;
            }
            seen += 1;
            let at = ns["peak"]["at"]["data_record"].as_u64().unwrap();
            let name = ns["name"].as_str().unwrap();
            assert_eq!(rows.get(name), Some(&(peak, at)), "{file} {name}");
        }
        assert!(seen > 0, "{file}");
        if format == "android" {
            let want = replay(&android_ops(&std::fs::read_to_string(&input).unwrap()));
            assert_eq!(rows["block"].0, want.peak, "{file}");
        }
    }
}

#[test]
#[ignore = "reads the real samples in ../shared/data, which a clone does not have: cargo test -- --ignored"]
fn shared_android_sample_gives_the_figures_of_its_own_reader() {
    // The AOSP sample: the peak, the bytes and blocks alive at the end of `mtf stats` are those
    // of an independent replay of the text (10,441,709 bytes at the peak; 53,645 blocks alive).
    let zip = util::root().join("../shared/data/android_memory_replay/systemui.zip");
    if !zip.is_file() {
        eprintln!("skipped: {} is absent", zip.display());
        return;
    }
    let mut text_in = String::new();
    {
        use std::io::Read;
        let mut z = zip::ZipArchive::new(std::fs::File::open(&zip).unwrap()).unwrap();
        z.by_index(0).unwrap().read_to_string(&mut text_in).unwrap();
    }
    let want = replay(&android_ops(&text_in));
    assert_eq!(want.peak, 10_441_709);
    assert_eq!(want.leaked_blocks, 53_645);
    let dir = util::tempdir();
    let t = dir.path().join("t.mtf");
    let out = mtf(&[
        "import",
        "-q",
        zip.to_str().unwrap(),
        "-o",
        t.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(heap_of(&stats_json(&t)), want);
}

/// heaptrack_print's reader rules — the stop functions (`main`, `__libc_start_main`,
/// `__static_initialization_and_destruction_0`), the leaf frames dropped (`operator new` of
/// `unsigned long` and `unsigned int`, plain and `[]`) and the built-in leak suppressions of
/// heaptrack 1.4.0 (accumulatedtracedata.cpp, suppressions.cpp) — are records that
/// heaptrack.map's `emit` lines write at the start of the trace, before the recording's own;
/// export leaves them out. An embedded `S leak:PATTERN` line is a `suppression` record. The
/// recording's strings keep their numbers: the site is named after string 1.
#[test]
fn heaptrack_reader_rules_are_implied_records_and_s_lines_suppressions() {
    let dir = util::tempdir();
    let input = dir.path().join("rec.txt");
    let rec =
        "v 10400 3\nS 9 leak:foo*\ns 7 compute\ni 5 1 1 0 0\nt 1 0\na 8 1\n+ 0\nS leak:bar \n";
    std::fs::write(&input, rec).unwrap();
    let (_keep, t) = import_checked("heaptrack", &input);
    let out = mtf(&["dump", "-s", "heap", t.to_str().unwrap()]);
    let dump = text(&out.stdout).to_string();
    let recs: Vec<String> = dump
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.split_once(' ')?;
            let value = rest.split_once(".data=")?.1;
            Some(format!("{name} {value}"))
        })
        .collect();
    let mut want: Vec<String> = vec![r#"import_part "rec.txt""#.into()];
    for f in [
        "main",
        "__libc_start_main",
        "__static_initialization_and_destruction_0",
    ] {
        want.push(format!("stackStop \"{f}\""));
    }
    for f in [
        "operator new(unsigned long)",
        "operator new[](unsigned long)",
        "operator new(unsigned int)",
        "operator new[](unsigned int)",
    ] {
        want.push(format!("stackSkip \"{f}\""));
    }
    for f in [
        "__nss_module_allocate",
        "__gconv_read_conf",
        "__new_exitfn",
        "tzset_internal",
        "dl_open_worker",
        "g_main_context_new",
        "g_thread_self",
    ] {
        want.push(format!("leakSuppression \"{f}\""));
    }
    want.push(r#"suppression "foo*""#.into());
    want.push(r#"suppression "bar ""#.into());
    assert_eq!(recs, want, "{dump}");
    let stats = stats_json(&t);
    let sites = &stats["namespaces"][0]["sites"]["by_allocated"];
    assert_eq!(sites[0]["name"], "compute", "{sites}");
}

/// A real recording whose program embeds leak suppressions (`__lsan_default_suppressions`):
/// heaptrack writes them as `S LEN leak:PATTERN` lines in the raw file and heaptrack_interpret
/// passes them on; both import them as `suppression` records, read here from the text.
#[test]
fn heaptrack_embedded_suppressions_of_a_recording() {
    for (format, file) in [
        ("heaptrack", "heaptrack-suppressions.txt"),
        ("heaptrack_raw", "heaptrack-suppressions.raw.txt"),
    ] {
        let input = data(file);
        let want: Vec<String> = std::fs::read_to_string(&input)
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix("S "))
            .map(|l| {
                let (len, rest) = l.split_once(' ').unwrap();
                let pattern = rest.strip_prefix("leak:").unwrap();
                assert_eq!(usize::from_str_radix(len, 16).unwrap(), rest.len());
                format!(
                    "suppression haslen=1 len={} pattern.len={} pattern.data=\"{pattern}\"",
                    rest.len(),
                    pattern.len()
                )
            })
            .collect();
        assert_eq!(want.len(), 2, "{file}");
        let (_keep, t) = import_checked(format, &input);
        let out = mtf(&["dump", "-s", "heap", t.to_str().unwrap()]);
        let dump = text(&out.stdout).to_string();
        let got: Vec<&str> = dump
            .lines()
            .filter(|l| l.starts_with("suppression "))
            .collect();
        assert_eq!(got, want, "{file}");
    }
}

/// Repeated groups in a user's mapping: a repeat of one field (`frames : n*pc`), items with a
/// field the group does not read (written 0), and items in a section that a `ref` points into,
/// whose records are laid out before they are written (their size counts the items). A value
/// too wide for an item's field keeps its line raw. Export gives the input back.
#[test]
fn repeated_groups_in_a_users_mapping() {
    let dir = util::tempdir();
    let path = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    std::fs::write(path("r.dtd"), R_DTD).unwrap();
    std::fs::write(path("r.map"), R_MAP).unwrap();
    let input = "E 1 a b ffff;\nE 2;\nP 3,1=2,3=4\nR 1\nN 2 1 1/2 3/4\nN 3 2\nN 4 3 5/6\nN 5 2 7/8 9/10 11/12\nE 3 10000;\nP 9\n";
    std::fs::write(path("in.txt"), input).unwrap();
    let out = mtf(&[
        "import",
        "--map",
        &path("r.map"),
        &path("in.txt"),
        "-o",
        &path("o.mtf"),
    ]);
    let err = text(&out.stderr).to_string();
    assert!(out.status.success(), "{err}");
    assert!(err.contains("1 kept as raw lines"), "{err}");
    assert!(
        err.contains("in.txt:9: ev.frames: value 65536 does not fit"),
        "{err}"
    );
    let out = mtf(&["check", "--dtd", &path("r.dtd"), &path("o.mtf")]);
    assert!(out.status.success(), "{}", text(&out.stdout));
    let out = mtf(&["dump", "--dtd", &path("r.dtd"), &path("o.mtf")]);
    let dump = text(&out.stdout).to_string();
    for want in [
        "ev id=1 n=3 frames=[10 11 65535] extra=0",
        "ev id=2 n=0 frames=[] extra=0",
        "pair id=3 m=2 kv=[{k=1 v=2 z=0} {k=3 v=4 z=0}]",
        "pair id=9 m=0 kv=[]",
        // A root is 5 bytes, a node 11 and 8 per item: the parents' offsets.
        "node id=2 parent=@0:1 c=2 kids=[{a=1 b=2} {a=3 b=4}]",
        "node id=3 parent=@5:4 c=0 kids=[]",
        "node id=4 parent=@32:0 c=1 kids=[{a=5 b=6}]",
        "node id=5 parent=@5:4 c=3 kids=[{a=7 b=8} {a=9 b=10} {a=11 b=12}]",
    ] {
        assert!(dump.lines().any(|l| l == want), "{want}\n{dump}");
    }
    let out = mtf(&[
        "export",
        "--dtd",
        &path("r.dtd"),
        &path("o.mtf"),
        "-o",
        &path("back.txt"),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(path("back.txt")).unwrap(), input);
}

const R_DTD: &str = r#"tag.width = 1;
include import;
bytes16 : (len, data) {
    len.width = 2;  len.interpretation = none;
    data.width = len.value;  data.interpretation = none;  data.display = text;
}
num.width = 4; num.interpretation = none;
section main 1 {
    ev : (tag, id : num, frames : n*pc, extra : num) { tag.value = 4; n.width = 1; n.interpretation = none; frames.width = 2; frames.interpretation = none; }
    pair : (tag, id : num, kv : m*(k : num, v : num, z : num)) { tag.value = 5; m.width = 1; m.interpretation = none; }
}
section nodes 2 {
    node : (tag, id : num, parent : num, kids : c*(a : num, b : num)) { tag.value = 4; c.width = 2; c.interpretation = none; parent.interpretation = sectionOffset nodes; }
    root : (tag, id : num) { tag.value = 5; }
}
"#;

const R_MAP: &str = r#"format rtest
dtd r.dtd
part p section main
record ev 'E {id:dec}[*frames: {frames:hex}];'
record pair 'P {id:dec}[*kv:,{k:dec}={v:dec}]'
record root section nodes 'R {id:dec}'
record node section nodes 'N {id:dec} {parent:dec}[*kids: {a:dec}/{b:dec}]' ref parent=nodes
"#;
