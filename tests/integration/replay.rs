//! `mtf replay` and `mtf simulate` end to end (issue 18): the fixtures of `tests/data/replay/`
//! imported, replayed against every allocator of the build and simulated; the counts set
//! against an independent count of the original text (a parser of its own, below), on every
//! input path (a file, `-`, a gzip-compressed trace).

use std::collections::HashMap;
use std::io::Write;

use serde_json::Value;

use crate::util::{self, mtf, mtf_stdin, text};

/// What a malloc-lab `.rep` text says, counted by hand: per kind, and the peak of live bytes.
/// `f -1` frees NULL: no event. A free of an id not live is no event either, but counted as
/// unknown. A size of 2³² or more is an allocation like any other (`mtf import` widens the
/// 4-byte size field of the HATF DTDs for it).
#[derive(Debug, Default, PartialEq)]
struct Count {
    allocs: u64,
    frees: u64,
    reallocs: u64,
    unknown_frees: u64,
    peak_live: u64,
}

fn count_rep(text: &str) -> Count {
    let mut c = Count::default();
    let mut live: HashMap<i64, u64> = HashMap::new();
    let mut bytes: u64 = 0;
    for line in text.lines().skip(4) {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["a", id, size] => {
                c.allocs += 1;
                let size: u64 = size.parse().unwrap();
                live.insert(id.parse().unwrap(), size);
                bytes += size;
            }
            // free(NULL): nothing happens.
            ["f", "-1"] => continue,
            ["f", id] => match live.remove(&id.parse().unwrap()) {
                Some(s) => {
                    c.frees += 1;
                    bytes -= s;
                }
                None => c.unknown_frees += 1,
            },
            ["r", id, size] => {
                c.reallocs += 1;
                let size: u64 = size.parse().unwrap();
                let id: i64 = id.parse().unwrap();
                if let Some(s) = live.insert(id, size) {
                    bytes -= s;
                }
                bytes += size;
            }
            _ => {}
        }
        c.peak_live = c.peak_live.max(bytes);
    }
    c
}

/// The same for an Android memory_replay text: `tid: malloc|calloc|memalign|realloc|free ...`.
fn count_android(text: &str) -> (Count, usize) {
    let mut c = Count::default();
    let mut live: HashMap<u64, u64> = HashMap::new();
    let mut threads = std::collections::HashSet::new();
    let mut bytes: u64 = 0;
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    for line in text.lines() {
        let (tid, rest) = line.split_once(": ").unwrap();
        let w: Vec<&str> = rest.split_whitespace().collect();
        let mut alloc = |c: &mut Count, ptr: u64, size: u64| {
            c.allocs += 1;
            live.insert(ptr, size);
            bytes += size;
        };
        match w.as_slice() {
            ["malloc", p, s] => alloc(&mut c, hex(p), s.parse().unwrap()),
            ["calloc", p, n, s] => alloc(
                &mut c,
                hex(p),
                n.parse::<u64>().unwrap() * s.parse::<u64>().unwrap(),
            ),
            ["memalign", p, _, s] => alloc(&mut c, hex(p), s.parse().unwrap()),
            // free(NULL): nothing happens.
            ["free", "0x0"] => continue,
            ["free", p] => match live.remove(&hex(p)) {
                Some(s) => {
                    c.frees += 1;
                    bytes -= s;
                }
                None => c.unknown_frees += 1,
            },
            ["realloc", new, old, s] => {
                let (new, old, s) = (hex(new), hex(old), s.parse::<u64>().unwrap());
                if old == 0 {
                    // realloc(NULL, n) allocates.
                    alloc(&mut c, new, s);
                } else if new == 0 && s == 0 {
                    // realloc(p, 0) frees.
                    match live.remove(&old) {
                        Some(x) => {
                            c.frees += 1;
                            bytes -= x;
                        }
                        None => c.unknown_frees += 1,
                    }
                } else {
                    c.reallocs += 1;
                    if let Some(x) = live.remove(&old) {
                        bytes -= x;
                    }
                    live.insert(new, s);
                    bytes += s;
                }
            }
            _ => continue,
        }
        threads.insert(tid.to_string());
        c.peak_live = c.peak_live.max(bytes);
    }
    (c, threads.len())
}

fn import(format: &str, input: &str, dir: &std::path::Path) -> String {
    let t = dir.join(format!("{format}.mtf"));
    let out = mtf(&["import", "--from", format, input, "-o", t.to_str().unwrap()]);
    assert!(out.status.success(), "import: {}", text(&out.stderr));
    t.to_str().unwrap().to_string()
}

fn json(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)))
}

fn allocators() -> String {
    let mut a = vec!["system"];
    if cfg!(feature = "jemalloc") {
        a.push("jemalloc");
    }
    if cfg!(feature = "mimalloc") {
        a.push("mimalloc");
    }
    a.join(",")
}

/// What the text form of a trace (`mtf dump`, `mtf pack`) says: `alloc`, `free` and `realloc`
/// records of hatf-malloclab.dtd, by id.
fn count_text(text: &str) -> Count {
    let mut c = Count::default();
    let mut live: HashMap<String, u64> = HashMap::new();
    let mut bytes: u128 = 0;
    let mut peak: u128 = 0;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let kind = words.next().unwrap_or("");
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}=")))
                .map(str::to_string)
        };
        match kind {
            "alloc" => {
                c.allocs += 1;
                let size: u64 = field("size").unwrap().parse().unwrap();
                live.insert(field("id").unwrap(), size);
                bytes += size as u128;
            }
            "free" => {
                let id = field("id").unwrap();
                // free(NULL): nothing happens.
                if id == u64::MAX.to_string() {
                    continue;
                }
                match live.remove(&id) {
                    Some(s) => {
                        c.frees += 1;
                        bytes -= s as u128;
                    }
                    None => c.unknown_frees += 1,
                }
            }
            "realloc" => {
                c.reallocs += 1;
                let size: u64 = field("size").unwrap().parse().unwrap();
                if let Some(s) = live.insert(field("id").unwrap(), size) {
                    bytes -= s as u128;
                }
                bytes += size as u128;
            }
            _ => continue,
        }
        peak = peak.max(bytes);
    }
    c.peak_live = peak.min(u64::MAX as u128) as u64;
    c
}

/// Every allocator's every run counted what the text says, whatever the input path; `refused`
/// requests were over the maximum block size (their frees are then unknown too).
fn check_replay(doc: &Value, want: &Count, threads: u64, runs: usize, refused: u64) {
    let s = &doc["summary"];
    assert_eq!(s["allocs"], want.allocs, "{s}");
    assert_eq!(s["frees"], want.frees);
    assert_eq!(s["reallocs"], want.reallocs);
    assert_eq!(s["unknown_frees"], want.unknown_frees);
    assert_eq!(s["peak_live"], want.peak_live);
    assert_eq!(s["threads"], threads);
    let allocs = doc["allocators"].as_array().unwrap();
    assert_eq!(allocs.len(), allocators().split(',').count());
    for a in allocs {
        assert_eq!(a["failures"].as_array().unwrap().len(), 0, "{a}");
        let rs = a["runs"].as_array().unwrap();
        assert_eq!(rs.len(), runs);
        for r in rs {
            let c = &r["counts"];
            assert_eq!(c["allocs"], want.allocs, "{}", a["allocator"]);
            assert_eq!(c["frees"], want.frees);
            assert_eq!(c["reallocs"], want.reallocs);
            // In the trace's order the replay finds dead only the frees of refused blocks
            // (the trace's own unknown frees are no events).
            let refused_frees = refused.min(1);
            assert_eq!(c["unknown_frees"], refused_frees, "{c}");
            assert_eq!(c["refused"], refused);
            assert_eq!(c["failed"], 0);
            assert_eq!(r["threads"], threads);
            assert!(r["peak_rss"].as_u64().unwrap() > 0);
        }
    }
}

#[test]
fn malloclab_replay_counts_what_the_text_says_on_every_input_path() {
    let dir = util::tempdir();
    let input = "tests/data/replay/messy.rep";
    let t = import("malloclab", input, dir.path());
    let want = count_rep(&std::fs::read_to_string(crate::util::root().join(input)).unwrap());
    let all = allocators();
    let args = |trace: &str| {
        vec![
            "replay",
            trace,
            "-a",
            &all,
            "--repeat",
            "2",
            "--format",
            "json",
            "--touch",
            "--max-block-size",
            "1000000000",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    let run = |a: Vec<String>, stdin: Option<&[u8]>| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        match stdin {
            Some(b) => mtf_stdin(&a, b),
            None => mtf(&a),
        }
    };
    let out = run(args(&t), None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The giant allocation (84·10¹⁵ bytes) is over --max-block-size: refused.
    check_replay(&json(&out), &want, 1, 2, 1);
    // Standard input.
    let bytes = std::fs::read(&t).unwrap();
    let out = run(args("-"), Some(&bytes));
    assert!(out.status.success(), "{}", text(&out.stderr));
    check_replay(&json(&out), &want, 1, 2, 1);
    // A gzip-compressed trace.
    let gz = dir.path().join("t.mtf.gz");
    let mut e = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    e.write_all(&bytes).unwrap();
    e.finish().unwrap();
    let out = run(args(gz.to_str().unwrap()), None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    check_replay(&json(&out), &want, 1, 2, 1);
}

#[test]
fn android_replay_on_threads_counts_what_the_text_says() {
    let dir = util::tempdir();
    let input = "tests/data/replay/android-threads.txt";
    let t = import("android", input, dir.path());
    let (want, threads) =
        count_android(&std::fs::read_to_string(crate::util::root().join(input)).unwrap());
    let all = allocators();
    for mode in ["ordered", "free"] {
        let out = mtf(&[
            "replay",
            &t,
            "-a",
            &all,
            "--repeat",
            "1",
            "--threads",
            mode,
            "-f",
            "json",
            "--max-block-size",
            "1000000000",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let doc = json(&out);
        if mode == "ordered" {
            check_replay(&doc, &want, threads as u64, 1, 1);
        } else {
            for a in doc["allocators"].as_array().unwrap() {
                let r = &a["runs"][0];
                assert_eq!(r["counts"]["allocs"], want.allocs);
                assert_eq!(r["counts"]["frees"], want.frees);
                assert_eq!(r["mode"], "free");
            }
        }
    }
    // The table names the refused request and the allocators.
    let out = mtf(&[
        "replay",
        &t,
        "-a",
        &all,
        "--repeat",
        "1",
        "--max-block-size",
        "400",
    ]);
    let table = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        table.contains("largest 84000000000000000 bytes, data record"),
        "{table}"
    );
    for a in all.split(',') {
        assert!(table.lines().any(|l| l.starts_with(a)), "{table}");
    }
}

/// A trace written from the text form, whose sizes need 8 bytes (metadata widens the field):
/// malloc-lab's giant requests and an impossible realloc are refused, or answered with null by
/// the allocator, and nothing crashes.
#[test]
fn impossible_sizes_unknown_frees_and_null_replay_without_crashing() {
    let dir = util::tempdir();
    let src = "tests/data/replay/messy.txt";
    let t = dir.path().join("messy.mtf");
    let t = t.to_str().unwrap();
    let out = mtf(&["pack", src, "-o", t]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let want = count_text(&std::fs::read_to_string(crate::util::root().join(src)).unwrap());
    // Frees: 0, 2, 3, 4 and the giant 1 (0 again and 7 are unknown; -1 is NULL).
    assert_eq!((want.allocs, want.frees, want.reallocs), (5, 5, 4));
    assert_eq!(want.unknown_frees, 2);
    let all = allocators();
    let out = mtf(&[
        "replay",
        t,
        "-a",
        &all,
        "--repeat",
        "1",
        "-f",
        "json",
        "--max-block-size",
        "1000000000",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The giant allocation and the giant realloc are refused; the giant's free is unknown.
    check_replay(&json(&out), &want, 1, 1, 2);
    // With no limit, the allocators themselves are asked: each answers null (counted as
    // failed) or the request has no valid layout (refused); still no crash.
    let out = mtf(&[
        "replay",
        t,
        "-a",
        &all,
        "--repeat",
        "1",
        "-f",
        "json",
        "--max-block-size",
        "18446744073709551615",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for a in json(&out)["allocators"].as_array().unwrap() {
        let c = &a["runs"][0]["counts"];
        let (f, r) = (
            c["failed"].as_u64().unwrap(),
            c["refused"].as_u64().unwrap(),
        );
        assert_eq!(f + r, 2, "{}: {c}", a["allocator"]);
    }
    // The simulator refuses them too.
    let out = mtf(&[
        "simulate",
        t,
        "-f",
        "json",
        "--max-block-size",
        "1000000000",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for p in json(&out)["policies"].as_array().unwrap() {
        assert_eq!(p["refused"], 2, "{p}");
        assert_eq!(p["peak_live"], 5100);
    }
}

#[test]
fn replay_refuses_bad_arguments_with_a_message() {
    let out = mtf(&["replay", "traces/malloclab.mtf", "-a", "tcmalloc"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown allocator 'tcmalloc'"));
    let out = mtf(&["replay", "traces/malloclab.mtf", "-o", "x.jpg"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains(".svg or .png"));
    let out = mtf(&["simulate", "traces/malloclab.mtf", "--policy", "worst-fit"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown policy 'worst-fit'"));
    let out = mtf(&["simulate", "traces/malloclab.mtf", "--align", "12"]);
    assert_eq!(out.status.code(), Some(2));
    let out = mtf(&["replay", "no/such/trace.mtf"]);
    assert_eq!(out.status.code(), Some(2));
}

#[cfg(feature = "plot")]
#[test]
fn replay_draws_rss_beside_live_bytes() {
    let dir = util::tempdir();
    let svg = dir.path().join("rss.svg");
    let out = mtf(&[
        "replay",
        "traces/malloclab.mtf",
        "-a",
        &allocators(),
        "--repeat",
        "1",
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg"), "{}", &s[..s.len().min(200)]);
    assert!(s.contains("trace live bytes"));
    for a in allocators().split(',') {
        assert!(s.contains(&format!("RSS above start, {a}")), "{a}");
    }
    let png = dir.path().join("heap.png");
    let out = mtf(&[
        "simulate",
        "traces/malloclab.mtf",
        "-o",
        png.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
}

/// The hand-worked traces of src/simulate/tests.rs as `.rep` text, through import and the CLI.
#[test]
fn simulated_utilisation_of_hand_made_traces() {
    let dir = util::tempdir();
    // T2 of the unit tests: 16, 8, 8, 8, 8 allocated; the 16 and the second 8 freed; 8 and
    // 16 allocated. First fit: heap 64; best fit and segregated: 48; next fit, buddy: 64.
    let rep = dir.path().join("t2.rep");
    std::fs::write(
        &rep,
        "0\n7\n9\n0\na 0 16\na 1 8\na 2 8\na 3 8\na 4 8\nf 0\nf 2\na 5 8\na 6 16\n",
    )
    .unwrap();
    let t = import("malloclab", rep.to_str().unwrap(), dir.path());
    let out = mtf(&["simulate", &t, "-f", "json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let got: Vec<(String, u64, f64)> = doc["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["policy"].as_str().unwrap().to_string(),
                p["peak_heap"].as_u64().unwrap(),
                p["utilisation"].as_f64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("first-fit", 64, 0.75),
        ("next-fit", 64, 0.75),
        ("best-fit", 48, 1.0),
        ("segregated", 48, 1.0),
        ("buddy", 64, 0.75),
    ];
    assert_eq!(got.len(), 5);
    for ((p, h, u), (wp, wh, wu)) in got.iter().zip(want) {
        assert_eq!((p.as_str(), *h), (wp, wh));
        assert!((u - wu).abs() < 1e-12, "{p}: {u}");
    }
    // The table, with a header: a 1-byte and a 9-byte block under an 8-byte header.
    let out = mtf(&["simulate", &t, "--policy", "best-fit", "--header", "8"]);
    let table = text(&out.stdout);
    assert!(table.contains("best-fit"), "{table}");
    assert!(!table.contains("first-fit"), "{table}");
}

// ---- Allocator libraries by path, and recorded timing (issue 30) ----

/// A bump allocator in C that counts the calls it gets and, at exit, appends them to the file
/// `BUMP_COUNTS` names: `malloc realloc posix_memalign free`, one line per process.
const BUMP_C: &str = r#"
#include <stddef.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/mman.h>
static char *arena;
static size_t used;
static const size_t cap = (size_t)1 << 30;
static unsigned long n_malloc, n_realloc, n_memalign, n_free;
static char *bump(size_t size, size_t align) {
    if (!arena) {
        void *a = mmap(0, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (a == MAP_FAILED) return 0;
        arena = a;
    }
    size_t need = size + align + 16;
    size_t start = __atomic_fetch_add(&used, need, __ATOMIC_RELAXED);
    if (start + need > cap) return 0;
    char *p = arena + start + 16;
    p += (align - ((size_t)p % align)) % align;
    ((size_t *)p)[-1] = size;
    return p;
}
void *malloc(size_t n) { __atomic_fetch_add(&n_malloc, 1, __ATOMIC_RELAXED); return bump(n, 16); }
void free(void *p) { if (p) __atomic_fetch_add(&n_free, 1, __ATOMIC_RELAXED); }
void *realloc(void *p, size_t n) {
    __atomic_fetch_add(&n_realloc, 1, __ATOMIC_RELAXED);
    char *q = bump(n, 16);
    if (q && p) { size_t old = ((size_t *)p)[-1]; memcpy(q, p, old < n ? old : n); }
    return q;
}
int posix_memalign(void **out, size_t align, size_t n) {
    __atomic_fetch_add(&n_memalign, 1, __ATOMIC_RELAXED);
    *out = bump(n, align);
    return *out ? 0 : 12;
}
__attribute__((destructor)) static void report(void) {
    const char *f = getenv("BUMP_COUNTS");
    if (!f) return;
    char line[128];
    int len = snprintf(line, sizeof line, "%lu %lu %lu %lu\n", n_malloc, n_realloc, n_memalign, n_free);
    int fd = open(f, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd >= 0) { if (write(fd, line, (size_t)len) < 0) {} close(fd); }
}
"#;

/// Builds the bump allocator into `dir`, or says why not (no C compiler).
fn build_bump(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    let src = dir.join("bump.c");
    std::fs::write(&src, BUMP_C).unwrap();
    let lib = dir.join("libbump.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    match std::process::Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
    {
        Ok(o) if o.status.success() => Some(lib),
        Ok(o) => panic!("{cc} failed on the bump allocator: {}", text(&o.stderr)),
        Err(e) => {
            eprintln!("note: no C compiler ({cc}: {e}): the allocator-library test is skipped");
            None
        }
    }
}

/// What a generated Android text asks of an allocator, counted from the text: blocks made by
/// malloc and calloc, by memalign with an alignment above 16, reallocs of live blocks, and the
/// free lines of live blocks.
#[derive(Debug, Default, PartialEq)]
struct Calls {
    plain: u64,
    aligned: u64,
    reallocs: u64,
    frees: u64,
}

/// A seeded Android memory_replay text on 3 threads: malloc, calloc, memalign, free and
/// realloc of live blocks only (so that every line is a call).
fn android_text(ops: usize, seed: u64) -> (String, Calls) {
    let mut rng = util::Rng(seed);
    let mut live: Vec<u64> = Vec::new();
    let mut next = 0x1000u64;
    let mut out = String::new();
    let mut c = Calls::default();
    for _ in 0..ops {
        let tid = 100 + rng.below(3);
        let r = rng.below(10);
        if live.is_empty() || r < 4 {
            next += 0x100;
            let size = 1 + rng.below(5000);
            match rng.below(3) {
                0 => {
                    out += &format!("{tid}: malloc {next:#x} {size}\n");
                    c.plain += 1;
                }
                1 => {
                    out += &format!("{tid}: calloc {next:#x} 4 {size}\n");
                    c.plain += 1;
                }
                _ => {
                    out += &format!("{tid}: memalign {next:#x} 64 {size}\n");
                    c.aligned += 1;
                }
            }
            live.push(next);
        } else if r < 8 {
            let i = rng.below(live.len() as u64) as usize;
            let p = live.swap_remove(i);
            out += &format!("{tid}: free {p:#x}\n");
            c.frees += 1;
        } else {
            let i = rng.below(live.len() as u64) as usize;
            next += 0x100;
            let size = 1 + rng.below(8000);
            out += &format!("{tid}: realloc {next:#x} {:#x} {size}\n", live[i]);
            live[i] = next;
            c.reallocs += 1;
        }
    }
    (out, c)
}

#[test]
fn an_allocator_library_by_path_gets_every_replayed_call() {
    let dir = util::tempdir();
    let Some(lib) = build_bump(dir.path()) else {
        return;
    };
    let (src, want) = android_text(3000, 7);
    let input = dir.path().join("gen.txt");
    std::fs::write(&input, &src).unwrap();
    let t = import("android", input.to_str().unwrap(), dir.path());
    let counts = dir.path().join("counts.txt");
    let lib_s = lib.to_str().unwrap();
    for mode in ["ordered", "free"] {
        let _ = std::fs::remove_file(&counts);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
            .args([
                "replay",
                &t,
                "-a",
                &format!("system,{lib_s}"),
                "--repeat",
                "2",
            ])
            .args(["--threads", mode, "-f", "json"])
            .env("BUMP_COUNTS", &counts)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let doc = json(&out);
        let a = &doc["allocators"][1];
        assert_eq!(a["allocator"], "libbump.so", "{a}");
        assert_eq!(a["path"], lib_s);
        assert_eq!(a["failures"].as_array().unwrap().len(), 0, "{a}");
        let runs = a["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(
            runs[0]["entry_points"],
            serde_json::json!(["malloc", "free", "realloc", "posix_memalign"])
        );
        // Each measuring process (and the one that checked the library first) wrote its calls:
        // the two runs got exactly the calls the text makes, and every block made was freed
        // (by the trace, or at the end of the replay).
        let lines: Vec<Vec<u64>> = std::fs::read_to_string(&counts)
            .unwrap()
            .lines()
            .map(|l| l.split(' ').map(|x| x.parse().unwrap()).collect())
            .collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[0], [0, 0, 0, 0], "the check makes no call");
        for l in &lines[1..] {
            let (plain, realloc, aligned, free) = (l[0], l[1], l[2], l[3]);
            if mode == "ordered" {
                assert_eq!(
                    (plain, realloc, aligned),
                    (want.plain, want.reallocs, want.aligned)
                );
                assert_eq!(free, plain + aligned, "{l:?}");
            } else {
                // Free-running threads may free a block before another thread made it: such
                // frees and reallocs are skipped, but every block made is freed.
                assert_eq!(
                    plain + aligned,
                    want.plain + want.aligned + (want.reallocs - realloc)
                );
                assert_eq!(free, plain + aligned);
            }
        }
        for r in runs {
            assert_eq!(r["counts"]["failed"], 0, "{r}");
            assert_eq!(r["counts"]["allocs"], want.plain + want.aligned);
        }
    }
    // The table names it by its file name, beside the system allocator.
    let out = mtf(&[
        "replay",
        &t,
        "-a",
        &format!("system,{lib_s}"),
        "--repeat",
        "1",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(
        table.lines().any(|l| l.starts_with("libbump.so ")) && table.contains("\nsystem "),
        "{table}"
    );
}

#[test]
fn debian_allocator_libraries_replay_beside_the_system_allocator() {
    let libs: Vec<String> = [
        "libtcmalloc_minimal.so.4",
        "libjemalloc.so.2",
        "libmimalloc.so.2",
    ]
    .iter()
    .map(|n| format!("/usr/lib/x86_64-linux-gnu/{n}"))
    .filter(|p| {
        let there = std::path::Path::new(p).exists();
        if !there {
            eprintln!("note: {p} is not installed (Debian packages libtcmalloc-minimal4, libjemalloc2, libmimalloc2.0): not tested");
        }
        there
    })
    .collect();
    if libs.is_empty() {
        return;
    }
    let dir = util::tempdir();
    let input = "tests/data/replay/android-threads.txt";
    let t = import("android", input, dir.path());
    let (want, threads) =
        count_android(&std::fs::read_to_string(crate::util::root().join(input)).unwrap());
    let all = format!("system,{}", libs.join(","));
    let out = mtf(&[
        "replay",
        &t,
        "-a",
        &all,
        "--repeat",
        "1",
        "-f",
        "json",
        "--max-block-size",
        "1000000000",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = json(&out);
    let allocs = doc["allocators"].as_array().unwrap();
    assert_eq!(allocs.len(), libs.len() + 1);
    for (a, p) in allocs[1..].iter().zip(&libs) {
        assert_eq!(a["path"], p.as_str());
        assert_eq!(a["failures"].as_array().unwrap().len(), 0, "{a}");
        let r = &a["runs"][0];
        assert_eq!(r["counts"], allocs[0]["runs"][0]["counts"], "{p}");
        assert_eq!(r["counts"]["allocs"], want.allocs);
        assert_eq!(r["counts"]["frees"], want.frees);
        assert_eq!(r["threads"], threads as u64);
        assert!(r["peak_rss"].as_u64().unwrap() > 0);
    }
}

#[test]
fn a_path_that_is_no_allocator_library_is_refused_by_name() {
    let t = "traces/android.mtf";
    let root = util::root();
    let cargo = root.join("Cargo.toml");
    let mut cases = vec![
        (
            "/nonexistent/libnone.so".to_string(),
            "/nonexistent/libnone.so: no such allocator library",
        ),
        (
            cargo.to_str().unwrap().to_string(),
            "cannot be loaded as a shared library",
        ),
    ];
    // A shared library that is no allocator: its malloc would be the C library's.
    let libz = "/usr/lib/x86_64-linux-gnu/libz.so.1";
    if std::path::Path::new(libz).exists() {
        cases.push((
            libz.to_string(),
            "libz.so.1: not an allocator library: it defines no `malloc` of its own",
        ));
    }
    for (lib, says) in cases {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
            .current_dir(&root)
            .args(["replay", t, "-a", &format!("system,{lib}")])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{lib}");
        let err = text(&out.stderr);
        assert!(
            err.contains(says) && err.contains("mtf::replay::library"),
            "{lib}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty());
        if lib.ends_with("libz.so.1") {
            assert!(
                err.contains("help: an allocator library exports at least malloc and free"),
                "{err}"
            );
        }
    }
}

/// An Android text with times: three operations 50 ms apart on two threads.
const GAPS: &str = "\
1: malloc 0x1000 100 5000000000 5000000300
2: malloc 0x2000 200 5050000000 5050000200
1: free 0x1000 5100000000 5100000100 100
";

/// The recorded span of an Android text: the last start time minus the first, from the text.
fn recorded_span(text: &str) -> u64 {
    let starts: Vec<u64> = text
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let n = match w[1] {
                "malloc" => 4,
                "free" => 3,
                _ => return None,
            };
            w.get(n).and_then(|s| s.parse().ok())
        })
        .collect();
    starts.iter().max().unwrap() - starts.iter().min().unwrap()
}

#[test]
fn recorded_timing_keeps_the_traces_gaps() {
    let dir = util::tempdir();
    let input = dir.path().join("gaps.txt");
    std::fs::write(&input, GAPS).unwrap();
    let t = import("android", input.to_str().unwrap(), dir.path());
    let span = recorded_span(GAPS);
    assert_eq!(span, 100_000_000);
    let run = |timing: &str| {
        let out = mtf(&[
            "replay", &t, "--timing", timing, "--repeat", "1", "-f", "json",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        json(&out)
    };
    let doc = run("recorded");
    assert_eq!(doc["timing"], "recorded");
    assert_eq!(doc["summary"]["duration_ns"], span);
    assert_eq!(doc["summary"]["timed"], 3);
    let r = &doc["allocators"][0]["runs"][0];
    assert_eq!(r["recorded_ns"], span);
    assert!(r["wall_ns"].as_u64().unwrap() >= span, "{r}");
    let late = &r["lateness"];
    assert_eq!(late["count"], 3, "{r}");
    // Late by less than the whole span: the bound says the gaps were slept, not how busy the
    // machine was (on two cores at a load of 15 a wake-up came tens of milliseconds late).
    assert!(late["max_ns"].as_u64().unwrap() < span, "{late}");
    let fast = run("fast");
    let r = &fast["allocators"][0]["runs"][0];
    assert!(r["wall_ns"].as_u64().unwrap() < span / 2, "{r}");
    assert!(r.get("lateness").is_none(), "{r}");
    // The text says both figures.
    let out = mtf(&["replay", &t, "--timing", "recorded", "--repeat", "1"]);
    let table = text(&out.stdout);
    assert!(table.contains("recorded duration 100.0 ms"), "{table}");
    assert!(table.contains("late p50 ms"), "{table}");
}

#[test]
fn recorded_timing_of_a_trace_without_times_is_refused() {
    let dir = util::tempdir();
    let cases = [
        (
            import("malloclab", "tests/data/replay/messy.rep", dir.path()),
            "declares no time field",
        ),
        (
            import(
                "android",
                "tests/data/replay/android-threads.txt",
                dir.path(),
            ),
            "none of the trace's",
        ),
    ];
    for (t, says) in cases {
        let out = mtf(&["replay", &t, "--timing", "recorded"]);
        assert_eq!(out.status.code(), Some(2));
        let err = text(&out.stderr);
        assert!(
            err.contains("--timing recorded needs the times") && err.contains(says),
            "{err}"
        );
        assert!(err.contains(&t), "the trace is named: {err}");
        assert!(out.stdout.is_empty());
    }
}

/// An Android text with times in which `blocks` blocks of 1 MiB are made, then freed with the
/// present bytes `present` (the program touched that many bytes of each).
fn present_text(blocks: u64, present: u64) -> String {
    let mut s = String::new();
    let t = 7_000_000_000u64;
    for i in 0..blocks {
        s += &format!(
            "1: malloc {:#x} 1048576 {} {}\n",
            0x10_0000 * (i + 1),
            t + i,
            t + i + 1
        );
    }
    for i in 0..blocks {
        let at = t + 1000 + i;
        s += &format!(
            "1: free {:#x} {at} {} {present}\n",
            0x10_0000 * (i + 1),
            at + 1
        );
    }
    s
}

/// The present bytes a text says, summed over its free lines (`… START END PRESENT`), each at
/// most its block's size (1 MiB here).
fn present_in_text(text: &str) -> u64 {
    text.lines()
        .filter(|l| l.contains(": free "))
        .map(|l| {
            l.rsplit(' ')
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap()
                .min(1 << 20)
        })
        .sum()
}

#[test]
fn recorded_timing_touches_the_present_bytes_of_each_block() {
    let dir = util::tempdir();
    let peak = |present: u64| {
        let src = present_text(48, present);
        let input = dir.path().join(format!("present-{present}.txt"));
        std::fs::write(&input, &src).unwrap();
        let t = import("android", input.to_str().unwrap(), dir.path());
        let out = mtf(&[
            "replay", &t, "--timing", "recorded", "--repeat", "1", "-f", "json",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let doc = json(&out);
        assert_eq!(doc["summary"]["present_blocks"], 48);
        let r = &doc["allocators"][0]["runs"][0];
        assert_eq!(r["present_blocks"], 48);
        assert_eq!(
            r["present_bytes"].as_u64().unwrap_or(0),
            present_in_text(&src)
        );
        r["peak_rss"].as_u64().unwrap() - r["rss_baseline"].as_u64().unwrap()
    };
    // All of every block touched: 48 MiB resident at the peak; none: (nearly) nothing, as the
    // C library maps blocks of 1 MiB without touching them.
    let full = peak(1 << 20);
    let none = peak(0);
    assert!(full >= 48 << 20, "{full}");
    assert!(none < 8 << 20, "{none}");
    // Half of each: between.
    let half = peak(1 << 19);
    assert!((24 << 20..40 << 20).contains(&half), "{half}");
}
