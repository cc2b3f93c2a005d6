//! malloc-lab `.rep` traces as the drivers read them (issue 25): every header variant, sizes
//! left out, the header's operation count, `realloc` of an id that is not alive and to size 0,
//! `free(NULL)`, sizes of 4 GiB and more, the multi-threaded lines. Each fixture is imported
//! (from a file and through a pipe), checked, exported back byte for byte, and its
//! `mtf stats -f json` figures are set against an independent reading of the text written
//! here from mdriver.c's `read_trace` and `eval_mm_util` — never against mtf itself.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::util::{self, mtf, mtf_stdin, text};

/// How a course's driver reads the header (each driver knows its own).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Header {
    /// Four numbers; the third is the operation count (2002: heap size, ids, ops, weight;
    /// 3rd edition: weight, ids, ops, flag; CMU 2016: weight, ids, ops, max_alloc).
    Four,
    /// Two numbers: ids, ops (the multiple-heaps project).
    Two,
    /// Two numbers, then every operation begins with a thread number; `r` lines are skipped
    /// (the driver reads each line with `sscanf` and acts on `a` and `f` only).
    Threaded,
}

/// What the driver's reading of a trace amounts to.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Want {
    pub(crate) allocations: u64,
    pub(crate) frees: u64,
    pub(crate) bytes_allocated: u64,
    pub(crate) peak: u64,
    pub(crate) leaked_bytes: u64,
    pub(crate) leaked_blocks: u64,
}

/// `read_trace` as the drivers write it: `fscanf` over whitespace-separated tokens, so a size
/// that is not there leaves the previous one (`%u %u` stops at the next operation's letter);
/// reading stops after the header's operation count. Then the operations as `eval_mm_util`
/// plays them: `blocks[id]` starts NULL; `realloc(blocks[id], n)` of an id not alive is
/// `realloc(NULL, n)`, an allocation; `realloc(p, 0)` frees p and leaves `blocks[id]` NULL,
/// so a later `f id` is `free(NULL)`; `f -1` is `free(NULL)`.
pub(crate) fn mdriver(text: &str, header: Header) -> Want {
    let toks: Vec<&str> = text.split_whitespace().collect();
    let mut t = 0;
    let num = |t: &mut usize| -> u64 {
        let v = toks[*t].parse().unwrap();
        *t += 1;
        v
    };
    let ops = match header {
        Header::Four => {
            let h: Vec<u64> = (0..4).map(|_| num(&mut t)).collect();
            h[2]
        }
        Header::Two | Header::Threaded => {
            num(&mut t);
            num(&mut t)
        }
    };
    let mut w = Want::default();
    let mut live: HashMap<i64, u64> = HashMap::new();
    let mut nulled: HashSet<i64> = HashSet::new();
    let mut bytes: u64 = 0;
    let mut size: u64 = 0;
    for _ in 0..ops {
        if let Header::Threaded = header {
            t += 1; // the thread
        }
        let kind = toks[t];
        t += 1;
        let id: i64 = toks[t].parse().unwrap();
        t += 1;
        if let (Header::Threaded, "r") = (header, kind) {
            // The multi-threaded driver skips its `r` lines (`sscanf` of the whole line).
            t += 1;
            continue;
        }
        if kind != "f" {
            // `%u %u`: the size, when the next token is a number.
            if let Some(Ok(n)) = toks.get(t).map(|s| s.parse::<u64>()) {
                size = n;
                t += 1;
            }
        }
        match kind {
            "a" => {
                live.insert(id, size);
                nulled.remove(&id);
                w.allocations += 1;
                w.bytes_allocated += size;
                bytes += size;
            }
            "r" => {
                if let Some(old) = live.remove(&id) {
                    w.frees += 1;
                    bytes -= old;
                }
                if size == 0 {
                    nulled.insert(id);
                } else {
                    live.insert(id, size);
                    nulled.remove(&id);
                    w.allocations += 1;
                    w.bytes_allocated += size;
                    bytes += size;
                }
            }
            "f" if id == -1 => {}
            "f" => match live.remove(&id) {
                Some(old) => {
                    w.frees += 1;
                    bytes -= old;
                }
                None => assert!(nulled.contains(&id), "free of a dead block {id}"),
            },
            o => panic!("Bogus type character ({o})"),
        }
        w.peak = w.peak.max(bytes);
    }
    w.leaked_blocks = live.len() as u64;
    w.leaked_bytes = live.values().sum();
    w
}

/// The `block` figures of `mtf stats -f json`.
fn stats(trace: &str) -> Want {
    let out = mtf(&["stats", "-f", "json", trace]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ns = &doc["namespaces"][0];
    assert_eq!(ns["name"], "block");
    assert_eq!(ns["unknown_frees"], 0, "{ns}");
    assert_eq!(ns["redefined"], 0, "{ns}");
    Want {
        allocations: ns["allocations"].as_u64().unwrap(),
        frees: ns["frees"].as_u64().unwrap(),
        bytes_allocated: ns["bytes_allocated"].as_u64().unwrap(),
        peak: ns["peak"]["bytes"].as_u64().unwrap(),
        leaked_bytes: ns["leaked"]["bytes"].as_u64().unwrap(),
        leaked_blocks: ns["leaked"]["blocks"].as_u64().unwrap(),
    }
}

pub(crate) const FIXTURES: [(&str, Header, &str); 6] = [
    (
        "2002.rep",
        Header::Four,
        "header2002 heapsize=20000 ids=6 ops=13 weight=1",
    ),
    (
        "3e.rep",
        Header::Four,
        "header3 weight=2 ids=6 ops=16 flag=1",
    ),
    (
        "cmu2016.rep",
        Header::Four,
        "headerCmu weight=1 ids=4 ops=10 maxAlloc=8400008589934593",
    ),
    ("short.rep", Header::Two, "header2 ids=5 ops=9"),
    // CRLF line ends and a space after a left-out size, as the 3rd edition's alaska.rep.
    (
        "crlf.rep",
        Header::Four,
        "header3 weight=0 ids=3 ops=7 flag=0",
    ),
    ("threads.rep", Header::Threaded, "header2 ids=3 ops=8"),
];

pub(crate) fn fixture(name: &str) -> std::path::PathBuf {
    util::root().join("tests/data/import/malloclab").join(name)
}

#[test]
fn every_variant_gives_the_figures_of_mdriver_and_round_trips() {
    let dir = util::tempdir();
    for (name, header, head) in FIXTURES {
        let path = fixture(name);
        let input = std::fs::read(&path).unwrap();
        let want = mdriver(std::str::from_utf8(&input).unwrap(), header);
        assert!(want.allocations > 0, "{name}");
        let t = dir.path().join(format!("{name}.mtf"));
        let t = t.to_str().unwrap();
        // Detected from the content, from a file and through a pipe alike.
        let out = mtf(&["import", path.to_str().unwrap(), "-o", t]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("detected format malloclab"),
            "{name}"
        );
        assert_eq!(stats(t), want, "{name}");
        let piped = dir.path().join(format!("{name}.piped.mtf"));
        let out = mtf_stdin(&["import", "-", "-o", piped.to_str().unwrap()], &input);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert_eq!(
            stats(piped.to_str().unwrap()),
            want,
            "{name} through a pipe"
        );
        // Consistent, as mdriver plays it.
        let check = mtf(&["check", t]);
        assert!(check.status.success(), "{name}: {}", text(&check.stdout));
        // The header's variant, by name.
        let dump = mtf(&["dump", t]);
        assert!(
            text(&dump.stdout).contains(head),
            "{name}: {}",
            text(&dump.stdout)
        );
        // Back byte for byte.
        let back = dir.path().join(name);
        let out = mtf(&["export", t, "-o", back.to_str().unwrap()]);
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert!(
            std::fs::read(&back).unwrap() == input,
            "{name}: export differs"
        );
    }
}

#[test]
fn the_cmu_header_names_the_peak_that_stats_finds() {
    // CMU's driver reads the 4th header number as the most bytes the trace holds at once
    // (`data_bytes`): the trace's own statement of its peak.
    let rep = std::fs::read_to_string(fixture("cmu2016.rep")).unwrap();
    let declared: u64 = rep.lines().nth(3).unwrap().trim().parse().unwrap();
    assert_eq!(mdriver(&rep, Header::Four).peak, declared);
    let dir = util::tempdir();
    let t = dir.path().join("t.mtf");
    let path = fixture("cmu2016.rep");
    let out = mtf(&["import", path.to_str().unwrap(), "-o", t.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(stats(t.to_str().unwrap()).peak, declared);
}

#[test]
fn the_figures_are_those_worked_out_by_hand() {
    // The independent reader itself, on the 3rd-edition fixture: a 0 100; a 1 (100); r 1 300;
    // r 2 50 (realloc of NULL); f 0; a 3 8; r 3 0 (frees 3); f 3 (free(NULL)); f -1;
    // r 0 10 (0 was freed: an allocation); a 4 4096; a 5 (4096); f 4; r 5 (4096); f 1; f 2;
    // and two lines after the 16 operations, which the driver does not read.
    let text = std::fs::read_to_string(fixture("3e.rep")).unwrap();
    let w = mdriver(&text, Header::Four);
    assert_eq!(
        w,
        Want {
            allocations: 9,
            frees: 7,
            bytes_allocated: 100 + 100 + 300 + 50 + 8 + 10 + 4096 + 4096 + 4096,
            peak: 100 + 300 + 50 + 10 + 4096 + 4096 - 100,
            leaked_bytes: 10 + 4096,
            leaked_blocks: 2,
        }
    );
}

#[test]
fn operations_after_the_count_are_kept_raw_and_said_so() {
    let dir = util::tempdir();
    let t = dir.path().join("t.mtf");
    let out = mtf(&[
        "import",
        fixture("3e.rep").to_str().unwrap(),
        "-o",
        t.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("2 kept as raw lines"), "{err}");
    assert!(
        err.contains("kept raw: 2 come after the 16 the header announces (`ops`)"),
        "{err}"
    );
    // A trace whose lines mostly come after its count is refused, naming that cause.
    let mut rep = String::from("1\n1\n2\n0\na 0 8\nf 0\n");
    for i in 0..20 {
        rep.push_str(&format!("a {i} 8\n"));
    }
    let out = mtf_stdin(
        &[
            "import",
            "--from",
            "malloclab",
            "-",
            "-o",
            t.to_str().unwrap(),
        ],
        rep.as_bytes(),
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("mtf::import::unmatched"), "{err}");
    assert!(
        err.contains("20 come after the 2 the header announces (`ops`)"),
        "{err}"
    );
    assert!(!err.contains("probably not"), "{err}");
}

#[test]
fn sizes_of_4_gib_and_more_are_records_with_a_widened_field() {
    let dir = util::tempdir();
    let t = dir.path().join("t.mtf");
    let out = mtf(&[
        "import",
        fixture("cmu2016.rep").to_str().unwrap(),
        "-o",
        t.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert!(err.contains("0 kept as raw lines"), "{err}");
    let dump = text(&mtf(&["dump", t.to_str().unwrap()]).stdout);
    // A metadata record widens the size of the records that need it, only those.
    assert!(dump.contains("metadata alloc.size width 7"), "{dump}");
    assert!(dump.contains("alloc size=8400000000000000 "), "{dump}");
    assert!(dump.contains("metadata realloc.size width 5"), "{dump}");
    assert!(dump.contains("realloc size=4294967297 "), "{dump}");
    assert!(!dump.contains("import_raw"), "{dump}");
    // A number no 64-bit field holds is the cause the refusal names.
    let rep = "1\n1\n12\n0\n".to_string() + &"a 0 99999999999999999999\n".repeat(12);
    let out = mtf_stdin(
        &[
            "import",
            "--from",
            "malloclab",
            "-",
            "-o",
            t.to_str().unwrap(),
        ],
        rep.as_bytes(),
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("12 match a rule but hold a value that cannot be stored (the first at -:5: a decimal number of more than 64 bits)"),
        "{err}"
    );
    assert!(err.contains("--keep-unmatched imports it anyway"), "{err}");
}

#[test]
fn a_value_widened_in_a_long_trace_is_narrowed_back() {
    // One giant among many small sizes: after a run of small ones the field is narrowed back
    // to its declared 4 bytes, so the trace does not grow by 4 bytes per later record.
    let mut rep = String::from("1\n1\n1002\n0\na 0 8400000000000000\nf 0\n");
    for _ in 0..500 {
        rep.push_str("a 0 16\nf 0\n");
    }
    let dir = util::tempdir();
    let t = dir.path().join("t.mtf");
    let out = mtf_stdin(&["import", "-", "-o", t.to_str().unwrap()], rep.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let dump = text(&mtf(&["dump", t.to_str().unwrap()]).stdout);
    assert!(dump.contains("metadata alloc.size width 7"), "{dump}");
    assert!(dump.contains("metadata alloc.size width 4"), "{dump}");
    assert_eq!(dump.matches("metadata alloc.size").count(), 2, "{dump}");
    let want = mdriver(&rep, Header::Four);
    assert_eq!(stats(t.to_str().unwrap()), want);
}

#[test]
fn a_double_free_is_still_an_error() {
    // `r 1 0` leaves id 1 NULL (its `f 1` is free(NULL)); `f 0` twice frees a dangling pointer.
    let rep = "1\n2\n6\n0\na 0 8\na 1 8\nr 1 0\nf 1\nf 0\nf 0\n";
    let dir = util::tempdir();
    let t = dir.path().join("t.mtf");
    let out = mtf_stdin(&["import", "-", "-o", t.to_str().unwrap()], rep.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let check = mtf(&["check", t.to_str().unwrap()]);
    assert!(!check.status.success());
    let report = text(&check.stdout);
    assert!(
        report.contains("undefines block 0, which is not alive"),
        "{report}"
    );
    assert_eq!(report.matches("which is not alive").count(), 1, "{report}");
    // The record named after it is the first free, which undefined the block.
    let line = report
        .lines()
        .find(|l| l.contains("which is not alive"))
        .unwrap_or_default();
    assert!(line.contains("; undefined by record"), "{line}");
    assert!(!line.contains("; defined by"), "{line}");
}

#[test]
fn a_size_left_out_after_a_realloc_to_0_is_0() {
    // `r 0 0` leaves the driver's size at 0: `a 1` is malloc(0), `r 1` is realloc(p, 0).
    let rep = "1\n2\n4\n0\na 0 8\nr 0 0\na 1\nr 1\n";
    let want = mdriver(rep, Header::Four);
    assert_eq!(
        (want.allocations, want.frees, want.leaked_blocks),
        (2, 2, 0)
    );
    let dir = util::tempdir();
    let t = dir.path().join("t.mtf");
    let out = mtf_stdin(&["import", "-", "-o", t.to_str().unwrap()], rep.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(stats(t.to_str().unwrap()), want);
    let back = dir.path().join("back.rep");
    let out = mtf(&["export", t.to_str().unwrap(), "-o", back.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&back).unwrap(), rep);
}

/// A long 3rd-edition `.rep` text: `a`, `f`, `r` (some to size 0) over `ids` ids, from a
/// fixed linear congruential sequence.
fn generated_rep(ids: u64, ops: u64) -> String {
    let mut s: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: u64| {
        s = s
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (s >> 33) % n
    };
    let mut live = vec![false; ids as usize];
    let mut body = String::new();
    for _ in 0..ops {
        let id = next(ids);
        let size = 1 + next(5000);
        if live[id as usize] {
            match next(4) {
                0 => {
                    body.push_str(&format!("r {id} {size}\n"));
                }
                1 => {
                    body.push_str(&format!("r {id} 0\n"));
                    live[id as usize] = false;
                }
                _ => {
                    body.push_str(&format!("f {id}\n"));
                    live[id as usize] = false;
                }
            }
        } else {
            body.push_str(&format!("a {id} {size}\n"));
            live[id as usize] = true;
        }
    }
    format!("1\n{ids}\n{ops}\n0\n{body}")
}

/// The live bytes and blocks before each operation line (1-based line numbers), as
/// `eval_mm_util` plays a 3rd-edition trace whose operations all carry their size.
fn live_before_lines(rep: &str) -> HashMap<usize, (u64, u64)> {
    let mut live: HashMap<u64, u64> = HashMap::new();
    let mut bytes = 0u64;
    let mut at = HashMap::new();
    for (i, line) in rep.lines().enumerate().skip(4) {
        at.insert(i + 1, (bytes, live.len() as u64));
        let t: Vec<&str> = line.split_whitespace().collect();
        let id: u64 = t[1].parse().unwrap();
        if let Some(old) = live.remove(&id) {
            bytes -= old;
        }
        if t[0] != "f" {
            let size: u64 = t[2].parse().unwrap();
            if size > 0 {
                live.insert(id, size);
                bytes += size;
            }
        }
    }
    at
}

#[test]
fn any_moment_read_from_the_index_states_is_the_one_mdriver_plays_to() {
    // `stats --at N` and `--at-peak` start at the nearest checkpoint whose analysis state the
    // index stores (docs/format.md §15.4): the live bytes and blocks they give before a record
    // are those of the driver's own reading of the text up to that record's line.
    let rep = generated_rep(300, 20_000);
    let want = mdriver(&rep, Header::Four);
    let lines = live_before_lines(&rep);
    let dir = util::tempdir();
    let src = dir.path().join("long.rep");
    std::fs::write(&src, &rep).unwrap();
    let t = dir.path().join("long.mtf");
    let t = t.to_str().unwrap();
    let out = mtf(&["import", src.to_str().unwrap(), "-o", t]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = mtf(&["index", "-q", "--every", "700", t]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let states = std::fs::metadata(format!("{t}.idx.state")).unwrap().len();
    assert!(
        states > 10_000,
        "the index stores analysis states ({states} bytes)"
    );
    let moment = |args: &[&str]| -> (u64, u64, usize) {
        let mut all = vec!["stats", "-f", "json"];
        all.extend_from_slice(args);
        all.push(t);
        let out = mtf(&all);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["schema"], "mtf-stats-at/1", "{args:?}");
        let live = &doc["namespaces"][0]["live"];
        (
            live["bytes"].as_u64().unwrap(),
            live["blocks"].as_u64().unwrap(),
            live["before"]["line"].as_u64().unwrap() as usize,
        )
    };
    for n in [3u64, 699, 700, 701, 5_123, 12_345, 19_999, 20_001] {
        let (bytes, blocks, line) = moment(&["--at", &n.to_string()]);
        // Data records (docs/stats.md): the import's origin and part, the header, then one per
        // operation from line 5.
        assert_eq!(line as u64, n + 2, "record {n}");
        assert_eq!(
            lines[&line],
            (bytes, blocks),
            "before record {n} (line {line})"
        );
    }
    let out = mtf(&["stats", "-f", "json", "--at-peak", t]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let peak = &doc["namespaces"][0]["peak"];
    assert_eq!(peak["bytes"].as_u64(), Some(want.peak), "the peak");
    // Its record is the first operation after which the driver holds the peak.
    let line = peak["at"]["line"].as_u64().unwrap() as usize;
    let after = |l: usize| lines.get(&(l + 1)).map(|&(b, _)| b);
    let first = (5..lines.len() + 4)
        .find(|&l| after(l) == Some(want.peak))
        .expect("the peak is reached before the last operation");
    assert_eq!(line, first, "the peak's line");
    assert_eq!(
        (peak["blocks"].as_u64().unwrap(), line as u64),
        (
            lines[&(first + 1)].1,
            peak["at"]["data_record"].as_u64().unwrap() + 2
        ),
        "the blocks at the peak, and its data record"
    );
}
