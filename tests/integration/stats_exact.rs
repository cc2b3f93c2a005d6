//! `mtf stats` figures against independent computations written here from the formats' own
//! semantics (issue 25), the spec cases of issue 31 (`tests/data/spec-cases/`), positions that
//! are the same for every encoding, and traces without a clock.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::Value;

use crate::util;

/// `mtf stats -f json ARGS…`, which must succeed.
fn stats_json(args: &[&str]) -> Value {
    let mut all = vec!["stats", "-f", "json"];
    all.extend_from_slice(args);
    let o = util::mtf(&all);
    assert!(o.status.success(), "{args:?}: {}", util::text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// The nearest-rank quantile: the ⌈q·n⌉-th smallest.
fn quantile(sorted: &[u64], q: f64) -> u64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// An Elephant Tracks 3 trace (the format of `formats/et3.map`): allocations (`N`), deaths with
/// a logical time (`D`), method entries and exits as noise, and a comment line that the import
/// keeps raw. Lifetimes spread far beyond 2048 lines.
fn et3_text(seed: u64, objects: u64) -> String {
    let mut r = util::Rng(seed);
    let mut out = String::new();
    let mut live: Vec<u64> = Vec::new();
    let mut time = 1u64;
    let mut next = 1u64;
    let thread = 1283928880u64;
    while next <= objects || !live.is_empty() {
        let k = r.below(100);
        // While allocating, a few die young; then the rest die in random order: lifetimes from
        // one line to about twice the number of objects.
        let allocating = next <= objects;
        if allocating && (k < 80 || live.is_empty()) {
            let size = 16 + 8 * r.below(6);
            out.push_str(&format!(
                "N {next} {size} {} {} 0 {thread}\n",
                2 + r.below(3),
                50 + r.below(4)
            ));
            live.push(next);
            next += 1;
        } else if (allocating && k < 88) || (!allocating && k < 85) {
            let i = if allocating {
                live.len() - 1 - r.below(live.len().min(4) as u64) as usize
            } else {
                r.below(live.len() as u64) as usize
            };
            let id = live.swap_remove(i);
            time += r.below(4);
            out.push_str(&format!("D {id} {thread} {time}\n"));
        } else if k < 97 {
            out.push_str(&format!("M {} 0 {thread}\nE {} {thread}\n", 20 + k, 20 + k));
        } else {
            out.push_str("# a line no rule matches\n");
        }
    }
    out
}

/// What an independent reading of an ET3 text gives: per line, `N`/`A` allocate `objid` with
/// `size` bytes, `D` frees it and carries the logical clock, which every later line has until
/// the next `D` (docs/format.md §14.4). Lifetimes in lines (one record per line) and in time.
#[derive(Debug, Default)]
struct Et3 {
    lines: Vec<u64>,
    times: Vec<u64>,
    peak: u64,
    peak_line: u64,
    unknown: u64,
}

fn et3_independent(text: &str) -> Et3 {
    let mut r = Et3::default();
    let mut live: HashMap<&str, (u64, u64, Option<u64>)> = HashMap::new();
    let mut clock: Option<u64> = None;
    let mut bytes = 0u64;
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.first().copied() {
            Some("N" | "A") => {
                let size: u64 = w[2].parse().unwrap();
                live.insert(w[1], (n, size, clock));
                bytes += size;
                if bytes > r.peak {
                    r.peak = bytes;
                    r.peak_line = n;
                }
            }
            Some("D") => {
                let t: u64 = w[3].parse().unwrap();
                clock = Some(t);
                match live.remove(w[1]) {
                    Some((born, size, t0)) => {
                        bytes -= size;
                        r.lines.push(n - born);
                        if let Some(t0) = t0 {
                            r.times.push(t - t0);
                        }
                    }
                    None => r.unknown += 1,
                }
            }
            _ => {}
        }
    }
    r.lines.sort_unstable();
    r.times.sort_unstable();
    r
}

/// Writes `text` as `trace` in a fresh folder and imports it as ET3; returns the folder and
/// the trace.
fn import_et3(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = util::tempdir();
    let src = dir.path().join("trace");
    std::fs::write(&src, text).unwrap();
    let out = dir.path().join("t.mtf");
    let o = util::mtf(&[
        "import",
        "--from",
        "et3",
        src.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", util::text(&o.stderr));
    (dir, out)
}

fn check_lifetimes(l: &Value, want: &[u64], what: &str) {
    assert!(want.len() > 100, "{what}: too few lifetimes to test");
    assert_eq!(u(&l["count"]), want.len() as u64, "{what}");
    assert_eq!(u(&l["min"]), want[0], "{what}");
    assert_eq!(u(&l["max"]), *want.last().unwrap(), "{what}");
    assert_eq!(u(&l["median"]), quantile(want, 0.5), "{what}: median");
    assert_eq!(u(&l["p99"]), quantile(want, 0.99), "{what}: p99");
    assert_eq!(l["quantiles_exact"], Value::Bool(true), "{what}");
    let mean = want.iter().sum::<u64>() as f64 / want.len() as f64;
    assert!((l["mean"].as_f64().unwrap() - mean).abs() < 1e-9, "{what}");
}

#[test]
fn lifetime_quantiles_are_exact_in_data_records_and_in_time() {
    let text = et3_text(7, 6000);
    let want = et3_independent(&text);
    // The case of the issue: most lifetimes beyond 2047 (the histogram clamped them there).
    assert!(
        quantile(&want.lines, 0.5) > 2048,
        "{}",
        quantile(&want.lines, 0.5)
    );
    assert!(quantile(&want.times, 0.99) > 2048);
    let (_dir, t) = import_et3(&text);
    let j = stats_json(&[t.to_str().unwrap()]);
    let ns = &j["namespaces"][0];
    assert_eq!(j["clock"], "moving");
    // A record per line: lifetimes in data records are lifetimes in lines.
    check_lifetimes(&ns["lifetime"]["data_records"], &want.lines, "data records");
    check_lifetimes(&ns["lifetime"]["time"], &want.times, "time");
    assert_eq!(u(&ns["peak"]["bytes"]), want.peak);
    assert_eq!(u(&ns["peak"]["at"]["line"]), want.peak_line);
    assert_eq!(ns["peak"]["at"]["file"], "trace");
    assert_eq!(u(&ns["unknown_frees"]), want.unknown);
    // The text says the same.
    let o = util::mtf(&["stats", t.to_str().unwrap()]);
    let shown = util::text(&o.stdout);
    let line = format!(
        "median {}  p99 {}  max {}",
        quantile(&want.lines, 0.5),
        quantile(&want.lines, 0.99),
        want.lines.last().unwrap()
    );
    assert!(shown.contains(&line), "{line}\n{shown}");
    assert!(
        shown.contains(&format!("line {} of trace", want.peak_line)),
        "{shown}"
    );
}

#[test]
fn every_encoding_of_the_same_records_gives_the_same_figures() {
    let text = et3_text(11, 1500);
    let (dir, t) = import_et3(&text);
    let base = stats_json(&[t.to_str().unwrap()]);
    for (name, extra) in [
        ("c.mtf", vec![]),
        ("l.mtf", vec!["--live"]),
        ("s.mtf", vec!["--split"]),
        ("x.mtf", vec!["--live", "--compress", "xz"]),
    ] {
        let out = dir.path().join(name);
        let mut args = vec!["compact", t.to_str().unwrap(), "-o", out.to_str().unwrap()];
        args.extend(extra.iter().copied());
        let o = util::mtf(&args);
        assert!(o.status.success(), "{args:?}: {}", util::text(&o.stderr));
        let again = stats_json(&[out.to_str().unwrap()]);
        assert_eq!(again, base, "{args:?}");
        // And slices: the same positions select the same records.
        for (from, to) in [("100", "2000"), ("r2500", "r2600")] {
            let a = stats_json(&["--from", from, "--to", to, t.to_str().unwrap()]);
            let b = stats_json(&["--from", from, "--to", to, out.to_str().unwrap()]);
            assert_eq!(a, b, "{args:?} {from}..{to}");
        }
    }
}

/// Android memory_replay (`tests/data/import/alloc/android-systemui.txt`): the peak's line,
/// found by reading the text as memory_replay does, and a clock that does not exist.
#[test]
fn android_positions_are_lines_and_it_has_no_clock() {
    let src = util::root().join("tests/data/import/alloc/android-systemui.txt");
    let text = std::fs::read_to_string(&src).unwrap();
    // Independent (bionic's memory_replay): the peak and the first line reaching it.
    let (peak, peak_line, _, _) = crate::bionic::bionic(&text);
    let peak = u64::try_from(peak).unwrap();
    let dir = util::tempdir();
    let t = dir.path().join("a.mtf");
    let o = util::mtf(&["import", src.to_str().unwrap(), "-o", t.to_str().unwrap()]);
    assert!(o.status.success());
    let t = t.to_str().unwrap();
    let j = stats_json(&[t]);
    let ns = &j["namespaces"][0];
    assert_eq!(u(&ns["peak"]["bytes"]), peak);
    assert_eq!(u(&ns["peak"]["at"]["line"]), peak_line);
    assert_eq!(ns["peak"]["at"]["file"], "android-systemui.txt");
    // No line carries bionic's start and end times (the DTD's clock, `start`): no clock, no
    // times, no lifetimes in time.
    assert_eq!(j["clock"], "none");
    assert_eq!(ns["peak"]["at"]["time"], Value::Null);
    assert_eq!(ns["lifetime"]["time"], Value::Null);
    let o = util::mtf(&["stats", t]);
    let shown = util::text(&o.stdout);
    assert!(shown.contains("clock        none"), "{shown}");
    assert!(!shown.contains("time 0"), "{shown}");
    assert!(shown.contains(&format!("line {peak_line} of android-systemui.txt")));
    // A time slice is refused; so are plot's and report's.
    for cmd in [
        vec!["stats", "--from", "t5", t],
        vec!["stats", "--to", "t5", t],
        vec!["report", "--from", "t5", t, "-o", "-"],
    ] {
        let o = util::mtf(&cmd);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}");
        let err = util::text(&o.stderr);
        assert!(err.contains("no clock"), "{cmd:?}: {err}");
        assert!(o.stdout.is_empty(), "{cmd:?}");
    }
    // A --from past the end says so (and the figures are those of an empty slice).
    let o = util::mtf(&["stats", "--from", "99999", t]);
    assert!(o.status.success());
    let err = util::text(&o.stderr);
    assert!(
        err.contains(
            "no data record at or after --from (data record 99999): the trace has 71 data records"
        ),
        "{err}"
    );
}

fn case(dir: &str, file: &str) -> String {
    let p: PathBuf = util::root()
        .join("tests/data/spec-cases")
        .join(dir)
        .join(file);
    p.to_str().unwrap().to_string()
}

/// `analysis-redefined`: an allocation of a live id is what `mtf check` reports, and not a free.
#[test]
fn spec_case_redefined() {
    let t = case("analysis-redefined", "redefine.mtf");
    let j = stats_json(&[&t]);
    let ns = &j["namespaces"][0];
    assert_eq!(u(&ns["redefined"]), 1);
    assert_eq!(u(&ns["allocations"]), 2);
    assert_eq!(u(&ns["frees"]), 1, "the lost block is no free");
    assert_eq!(u(&ns["lifetime"]["data_records"]["count"]), 1);
    assert_eq!(u(&ns["leaked"]["blocks"]), 0);
    let o = util::mtf(&["check", &t]);
    let out = util::text(&o.stdout) + &util::text(&o.stderr);
    let n = out
        .lines()
        .find(|l| l.contains("define of a live id"))
        .and_then(|l| l.split_whitespace().last())
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(n, "1", "{out}");
}

/// `analysis-unknown-free-record`: a free of an id not alive counts at its own record, in
/// every slice. The independent count reads the case's text: `fr` of an id not alive.
#[test]
fn spec_case_unknown_free_record() {
    for name in ["first", "second", "shift"] {
        let text =
            std::fs::read_to_string(case("analysis-unknown-free-record", &format!("{name}.txt")))
                .unwrap();
        // Data records in order (the header line is not one) and whether each frees a dead id.
        let mut live = std::collections::HashSet::new();
        let dead: Vec<bool> = text
            .lines()
            .skip(1)
            .map(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                let id = w.get(1).map(|a| a.trim_start_matches("a=").to_string());
                match w[0] {
                    "al" => {
                        live.insert(id.unwrap());
                        false
                    }
                    "fr" => !live.remove(&id.unwrap()),
                    _ => false,
                }
            })
            .collect();
        let t = case("analysis-unknown-free-record", &format!("{name}.mtf"));
        let n = dead.len();
        for from in 0..=n {
            for to in from + 1..=n + 1 {
                let want = dead[from..to.min(n)].iter().filter(|d| **d).count() as u64;
                let j = stats_json(&["--from", &from.to_string(), "--to", &to.to_string(), &t]);
                let got = u(&j["namespaces"][0]["unknown_frees"]);
                assert_eq!(got, want, "{name} {from}..{to}");
                if want > 0 {
                    let o = util::mtf(&[
                        "stats",
                        "--from",
                        &from.to_string(),
                        "--to",
                        &to.to_string(),
                        &t,
                    ]);
                    let shown = util::text(&o.stdout);
                    assert!(
                        shown.contains(&format!("frees not alive      {want}")),
                        "{name} {from}..{to}: {shown}"
                    );
                }
            }
        }
    }
}

/// `analysis-sums-64`: byte figures beyond 2⁶⁴ − 1 are exact (decimal strings in the JSON), and
/// the peak is where they are highest.
#[test]
fn spec_case_sums_beyond_64_bits() {
    let t = case("analysis-sums-64", "big.mtf");
    let j = stats_json(&[&t]);
    let ns = &j["namespaces"][0];
    let big = (u64::MAX as u128) + 2 + 5;
    assert_eq!(ns["peak"]["bytes"], Value::String(big.to_string()));
    assert_eq!(u(&ns["peak"]["at"]["data_record"]), 2);
    assert_eq!(u(&ns["peak"]["blocks"]), 3);
    assert_eq!(ns["bytes_allocated"], Value::String(big.to_string()));
    assert_eq!(u(&ns["bytes_freed"]), u64::MAX);
    assert_eq!(u(&ns["leaked"]["bytes"]), 7);
    let sizes = ns["sizes"].as_array().unwrap();
    let top = sizes.iter().find(|c| u(&c["lo"]) == 1 << 63).unwrap();
    assert_eq!(u(&top["bytes"]), u64::MAX);
    let o = util::mtf(&["stats", &t]);
    assert!(o.status.success());
    let shown = util::text(&o.stdout);
    assert!(
        shown.contains(&format!("peak live bytes      {big} bytes")),
        "{shown}"
    );
    assert!(shown.contains("at data record 2"), "{shown}");
    // diff compares them exactly too.
    let o = util::mtf(&["diff", "-f", "json", &t, &t]);
    assert!(o.status.success(), "{}", util::text(&o.stderr));
    let d: Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &d["namespaces"][0]["figures"]["peak_bytes"];
    assert_eq!(f["a"], Value::String(big.to_string()));
    assert_eq!(u(&f["delta"]), 0);
}

/// What mdriver's `read_trace` (CS:APP malloc lab) makes of a `.rep` text: four header numbers
/// (suggested heap size or weight, number of ids, number of operations, weight or flag), then
/// one operation per line: `a id size` allocates block `id`, `r id size` reallocates it (its
/// old block ends, a new one of `size` bytes starts), `f id` frees it. Lifetimes in lines.
#[derive(Debug, Default, PartialEq)]
struct Rep {
    allocations: u64,
    frees: u64,
    peak: u64,
    peak_line: u64,
    leaked: u64,
    lifetimes: Vec<u64>,
}

fn mdriver(text: &str) -> Rep {
    let mut r = Rep::default();
    let mut live: HashMap<u64, (u64, u64)> = HashMap::new();
    let mut bytes = 0u64;
    // As `read_trace`: every request after the 4 header numbers, to the end of the file (it
    // then asserts that their number is the header's; `malloclab-2002.rep` has one more).
    for (i, line) in text.lines().enumerate().skip(4) {
        let n = i as u64 + 1;
        let w: Vec<&str> = line.split_whitespace().collect();
        let id: u64 = w[1].parse().unwrap();
        if w[0] == "f" || w[0] == "r" {
            if let Some((born, size)) = live.remove(&id) {
                bytes -= size;
                r.frees += 1;
                r.lifetimes.push(n - born);
            }
        }
        if w[0] == "a" || w[0] == "r" {
            let size: u64 = w[2].parse().unwrap();
            live.insert(id, (n, size));
            bytes += size;
            r.allocations += 1;
            if bytes > r.peak {
                r.peak = bytes;
                r.peak_line = n;
            }
        }
    }
    r.leaked = live.values().map(|v| v.1).sum();
    r.lifetimes.sort_unstable();
    r
}

/// A malloc-lab trace of `ids` blocks: each allocated once, some reallocated, all freed, in an
/// order that makes lifetimes of up to about `2 × ids` lines.
fn rep_text(seed: u64, ids: u64) -> String {
    let mut r = util::Rng(seed);
    let mut ops = Vec::new();
    let mut live: Vec<u64> = Vec::new();
    let mut next = 0;
    while next < ids || !live.is_empty() {
        if next < ids && (r.chance(70) || live.is_empty()) {
            ops.push(format!("a {next} {}", 1 + r.below(5000)));
            live.push(next);
            next += 1;
        } else {
            let i = r.below(live.len() as u64) as usize;
            if r.chance(20) {
                ops.push(format!("r {} {}", live[i], 1 + r.below(9000)));
            } else {
                ops.push(format!("f {}", live.swap_remove(i)));
            }
        }
    }
    format!("20000\n{ids}\n{}\n1\n{}\n", ops.len(), ops.join("\n"))
}

#[test]
fn malloclab_figures_match_mdriver() {
    let dir = util::tempdir();
    let big = dir.path().join("big.rep");
    std::fs::write(&big, rep_text(3, 3000)).unwrap();
    // (`malloclab-3e.rep`'s odd lines — `f  1` with two spaces, which fscanf reads and the
    // import keeps verbatim, and `f -1` — are not compared here.)
    for src in [
        util::root().join("tests/data/import/alloc/malloclab-2002.rep"),
        big,
    ] {
        let text = std::fs::read_to_string(&src).unwrap();
        let want = mdriver(&text);
        let t = dir.path().join("t.mtf");
        let o = util::mtf(&[
            "import",
            "--from",
            "malloclab",
            src.to_str().unwrap(),
            "-o",
            t.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", util::text(&o.stderr));
        let j = stats_json(&[t.to_str().unwrap()]);
        let ns = &j["namespaces"][0];
        let name = src.display().to_string();
        assert_eq!(u(&ns["allocations"]), want.allocations, "{name}");
        assert_eq!(u(&ns["frees"]), want.frees, "{name}");
        assert_eq!(u(&ns["peak"]["bytes"]), want.peak, "{name}");
        // The 4-line header is one record: the line is the input's all the same.
        assert_eq!(u(&ns["peak"]["at"]["line"]), want.peak_line, "{name}");
        assert_eq!(u(&ns["leaked"]["bytes"]), want.leaked, "{name}");
        let l = &ns["lifetime"]["data_records"];
        assert_eq!(u(&l["count"]), want.lifetimes.len() as u64, "{name}");
        assert_eq!(u(&l["median"]), quantile(&want.lifetimes, 0.5), "{name}");
        assert_eq!(u(&l["p99"]), quantile(&want.lifetimes, 0.99), "{name}");
        assert_eq!(u(&l["max"]), *want.lifetimes.last().unwrap(), "{name}");
        let o = util::mtf(&["check", t.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", util::text(&o.stdout));
    }
}

/// An Android trace in a ZIP (as AOSP ships `systemui.zip`): the entry's date, which the
/// import keeps in `import_entry.time`, is no clock, and the lines are the entry's.
#[test]
fn a_zipped_trace_has_no_clock_from_its_entry_date() {
    use std::io::Write;
    use zip::write::{FileOptions, FullFileOptions};
    let text =
        std::fs::read(util::root().join("tests/data/import/alloc/android-systemui.txt")).unwrap();
    let dir = util::tempdir();
    let src = dir.path().join("systemui.zip");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&src).unwrap());
    let when = zip::DateTime::from_date_and_time(2015, 9, 11, 18, 3, 4).unwrap();
    let o: FullFileOptions<'_> = FileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(when);
    z.start_file("systemui.txt", o).unwrap();
    z.write_all(&text).unwrap();
    z.finish().unwrap();
    let t = dir.path().join("z.mtf");
    let o = util::mtf(&[
        "import",
        "--from",
        "android",
        src.to_str().unwrap(),
        "-o",
        t.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", util::text(&o.stderr));
    let zipped = stats_json(&[t.to_str().unwrap()]);
    assert_eq!(zipped["clock"], "none");
    let ns = &zipped["namespaces"][0];
    assert_eq!(ns["lifetime"]["time"], Value::Null);
    assert_eq!(ns["peak"]["at"]["file"], "systemui.txt");
    // The same lines and figures as the plain text's import, but for the two records more
    // (`import_entry`, and the ZIP's positions therefore one later).
    let plain = dir.path().join("p.mtf");
    let src = util::root().join("tests/data/import/alloc/android-systemui.txt");
    let o = util::mtf(&[
        "import",
        src.to_str().unwrap(),
        "-o",
        plain.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let plain = stats_json(&[plain.to_str().unwrap()]);
    let p = &plain["namespaces"][0];
    assert_eq!(ns["peak"]["at"]["line"], p["peak"]["at"]["line"]);
    assert_eq!(ns["peak"]["bytes"], p["peak"]["bytes"]);
    assert_eq!(ns["lifetime"], p["lifetime"]);
}

/// A trace cut short: the problems `stats` counts are those `mtf check` counts, the damage to
/// the container (a section running past the end of the file) included, wherever the cut is.
#[test]
fn a_cut_trace_counts_the_problems_check_counts() {
    let whole = std::fs::read(util::root().join("traces/valgrind.mtf")).unwrap();
    let dir = util::tempdir();
    let t = dir.path().join("cut.mtf");
    for keep in [whole.len() / 2, whole.len() * 9 / 10, whole.len() - 1] {
        std::fs::write(&t, &whole[..keep]).unwrap();
        let t = t.to_str().unwrap();
        let check = util::text(&util::mtf(&["check", t]).stdout);
        let counted: u64 = check
            .rsplit("INVALID, ")
            .next()
            .and_then(|s| s.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{keep}: {check}"));
        let json = util::text(&util::mtf(&["stats", "-f", "json", t]).stdout);
        assert!(
            json.contains(&format!("\"problems\": {counted},")),
            "{keep} bytes: check counts {counted}; {json}"
        );
    }
}

/// heaptrack's recording of `sort` (tests/data/import/alloc/heaptrack-sort.zst), imported: the
/// peak's input line is the line of the allocation that reached it, found here by reading the
/// recording as heaptrack_print does (`+ INFO` adds the info's size, `- INFO` takes it away);
/// the records the mapping writes before the input (heaptrack_print's stop functions, skipped
/// frames and leak suppressions, `emit`) are no lines of it. The same from the seek index's
/// analysis states, on two threads and for a slice.
#[test]
fn heaptrack_positions_are_the_recording_s_lines() {
    let src = util::root().join("tests/data/import/alloc/heaptrack-sort.zst");
    let raw = zstd::decode_all(std::fs::File::open(&src).unwrap()).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (mut sizes, mut live, mut peak, mut peak_line) = (Vec::new(), 0u64, 0u64, 0u64);
    for (i, l) in text.lines().enumerate() {
        let mut w = l.split(' ');
        let (op, arg) = (
            w.next(),
            w.next().and_then(|x| u64::from_str_radix(x, 16).ok()),
        );
        match (op, arg) {
            (Some("a"), Some(size)) => sizes.push(size),
            (Some("+"), Some(info)) => {
                live += sizes[info as usize];
                if live > peak {
                    (peak, peak_line) = (live, i as u64 + 1);
                }
            }
            (Some("-"), Some(info)) => live -= sizes[info as usize],
            _ => {}
        }
    }
    assert!(text
        .lines()
        .nth(peak_line as usize - 1)
        .unwrap()
        .starts_with("+ "));
    let dir = util::tempdir();
    let t = dir.path().join("h.mtf");
    let o = util::mtf(&["import", src.to_str().unwrap(), "-o", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", util::text(&o.stderr));
    let t = t.to_str().unwrap();
    let o = util::mtf(&["index", "--every", "50", t]);
    assert!(o.status.success(), "{}", util::text(&o.stderr));
    for args in [
        vec![t, "--no-index"],
        vec!["-j", "2", t],
        vec!["--from", "100", t],
    ] {
        let j = stats_json(&args);
        let ns = &j["namespaces"][0];
        assert_eq!(u(&ns["peak"]["bytes"]), peak, "{args:?}");
        assert_eq!(u(&ns["peak"]["at"]["line"]), peak_line, "{args:?}");
        assert_eq!(ns["peak"]["at"]["file"], "heaptrack-sort.zst", "{args:?}");
    }
}
