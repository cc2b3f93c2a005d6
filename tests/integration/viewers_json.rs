//! `mtf export --to speedscope|dhat|chrome` (metatf::viewer): every figure set against an
//! independent reading of the original text — an Android memory_replay trace read as bionic's
//! memory_replay plays it (written here, with each block's thread, birth and death), malloc-lab
//! traces as mdriver.c's `read_trace` reads them (`malloclab::mdriver`), heaptrack recordings
//! by heaptrack_print's own folded output (tests/data/heaptrack-stacks) — and the files checked
//! against their formats' rules: speedscope's file-format schema (its rules written out here),
//! the Trace Event Format's, and DHAT's viewer itself (dh_view.html in headless Chromium, where
//! the machine has both).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::util::{self, mtf, root, tempdir, text};

/// What an Android trace amounts to, read line by line as bionic's memory_replay plays it
/// (`bionic::bionic` says how each operation ends and makes blocks; here each block also keeps
/// its size, thread, birth record and birth time). The clock is the start time of the latest
/// line that has times with a start other than 0 (`thread_done`: its one time), as the trace's
/// DTD declares; a data record is a line.
#[derive(Debug, Default, PartialEq)]
struct Android {
    /// DHAT's figures of the one program point (the trace has no sites).
    tb: u128,
    tbk: u64,
    tl: u128,
    gb: u128,
    gbk: u64,
    eb: u128,
    ebk: u64,
    /// Live blocks at the first peak (the point's own maximum is the peak: one point).
    tg: u64,
    te: u64,
    /// The peak's line (from 0).
    peak_line: u64,
    /// The highest live bytes of the blocks each thread allocated.
    threads: BTreeMap<u64, u128>,
    /// Whether a time other than 0 was declared.
    timed: bool,
}

fn android(text: &str) -> Android {
    struct Block {
        size: u64,
        thread: u64,
        born: (u64, u64),
    }
    let lines: Vec<&str> = text.lines().collect();
    // First the clock of every line, to know whether lifetimes are in ns or in lines.
    let mut clocks = Vec::new();
    let mut clock = 0u64;
    let mut first: Option<u64> = None;
    for line in &lines {
        let w: Vec<&str> = line.split_whitespace().collect();
        let args = match w[1] {
            "malloc" => 2,
            "calloc" | "memalign" | "realloc" => 3,
            _ => 1,
        };
        let times: Vec<u64> = w[2 + args..].iter().map(|t| t.parse().unwrap()).collect();
        let t = if w[1] == "thread_done" {
            times.first().copied()
        } else if times.len() >= 2 {
            Some(times[0]).filter(|&s| s != 0)
        } else {
            None
        };
        if let Some(t) = t {
            clock = t;
        }
        if first.is_none() {
            first = Some(if times.is_empty() { 0 } else { clock });
        }
        clocks.push(clock);
    }
    let timed = clocks.iter().any(|&c| c != 0);
    let mut a = Android {
        timed,
        ..Android::default()
    };
    let when = |i: usize| if timed { clocks[i] } else { i as u64 };
    let start = if timed { first.unwrap_or(0) } else { 0 };
    let mut live: HashMap<u64, Block> = HashMap::new();
    let (mut bytes, mut blocks) = (0u128, 0u64);
    let mut per_thread: HashMap<u64, u128> = HashMap::new();
    let mut tl = 0u128;
    for (i, line) in lines.iter().enumerate() {
        let (thread, free, alloc) = crate::bionic::bionic_line(line);
        let now = when(i);
        // The blocks that end on this line: the one freed, and one an allocation replaces.
        let mut ended = Vec::new();
        if let Some(b) = free.and_then(|p| live.remove(&p)) {
            ended.push(b);
        }
        if let Some((p, size)) = alloc {
            let b = Block {
                size,
                thread,
                born: (i as u64, clocks[i]),
            };
            if let Some(old) = live.insert(p, b) {
                ended.push(old);
            }
            bytes += u128::from(size);
            blocks += 1;
            a.tb += u128::from(size);
            a.tbk += 1;
            *per_thread.entry(thread).or_default() += u128::from(size);
        }
        for b in ended {
            bytes -= u128::from(b.size);
            blocks -= 1;
            *per_thread.get_mut(&b.thread).unwrap() -= u128::from(b.size);
            tl += u128::from(now - if timed { b.born.1 } else { b.born.0 });
        }
        if alloc.is_some() {
            let m = a.threads.entry(thread).or_default();
            *m = (*m).max(per_thread[&thread]);
        }
        if bytes > a.gb {
            a.gb = bytes;
            a.gbk = blocks;
            a.peak_line = i as u64;
            a.tg = now - start;
        }
    }
    for b in live.values() {
        let end = when(lines.len() - 1);
        tl += u128::from(end - if timed { b.born.1 } else { b.born.0 });
    }
    a.tl = tl;
    a.eb = bytes;
    a.ebk = blocks;
    a.te = when(lines.len() - 1) - start;
    a
}

/// `mtf export TRACE --to FORMAT -o OUT` (quietly); the document written.
fn export(trace: &Path, format: &str, out: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "export",
        trace.to_str().unwrap(),
        "--to",
        format,
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = mtf(&args);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    let bytes = std::fs::read(out).unwrap();
    let bytes = if out.extension().is_some_and(|e| e == "gz") {
        use std::io::Read;
        let mut s = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut s)
            .unwrap();
        s
    } else {
        bytes
    };
    serde_json::from_slice(&bytes).unwrap()
}

fn import(src: &Path, dir: &Path) -> PathBuf {
    util::import_into(dir, src, None)
}

fn alloc_fixture(name: &str) -> PathBuf {
    root().join("tests/data/import/alloc").join(name)
}

/// speedscope's file-format schema (https://www.speedscope.app/file-format-schema.json,
/// draft-06), its rules for a file of sampled profiles written out: `$schema` the schema's
/// address, `shared.frames` objects with a string `name` (and a string `file`, numeric `line`
/// where present), `profiles` of type `sampled` with a string `name`, a `unit` of the six,
/// numeric `startValue`/`endValue`, `samples` arrays of numbers and `weights` numbers. And what
/// speedscope assumes beyond the schema: a sample's frames index `shared.frames`, one weight per
/// sample, `endValue - startValue` their sum.
fn check_speedscope(d: &Value) {
    assert_eq!(
        d["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );
    let frames = d["shared"]["frames"].as_array().expect("shared.frames");
    for f in frames {
        assert!(f["name"].is_string(), "{f}");
        assert!(f.get("file").is_none_or(Value::is_string), "{f}");
        assert!(f.get("line").is_none_or(Value::is_number), "{f}");
    }
    for key in ["name", "exporter"] {
        assert!(d.get(key).is_none_or(Value::is_string));
    }
    assert!(d["activeProfileIndex"].is_number());
    let profiles = d["profiles"].as_array().expect("profiles");
    assert_eq!(profiles.len(), 4);
    for p in profiles {
        assert_eq!(p["type"], "sampled");
        assert!(p["name"].is_string());
        let unit = p["unit"].as_str().unwrap();
        assert!(
            [
                "bytes",
                "microseconds",
                "milliseconds",
                "nanoseconds",
                "none",
                "seconds"
            ]
            .contains(&unit),
            "{unit}"
        );
        let samples = p["samples"].as_array().unwrap();
        let weights = p["weights"].as_array().unwrap();
        assert_eq!(samples.len(), weights.len());
        for s in samples {
            for i in s.as_array().unwrap() {
                assert!(i.as_u64().unwrap() < frames.len() as u64);
            }
        }
        let sum: u64 = weights.iter().map(|w| w.as_u64().unwrap()).sum();
        assert_eq!(
            p["endValue"].as_u64().unwrap() - p["startValue"].as_u64().unwrap(),
            sum
        );
    }
}

/// The Trace Event Format's rules for what is written (the JSON object form): `traceEvents`
/// an array of objects each with a `ph`; counters (`C`) with a name, a numeric `ts`, a `pid`,
/// and numeric `args`; instants (`i`) with a scope `s` of `g`, `p` or `t`; metadata (`M`) with
/// `args.name`; `displayTimeUnit` `ms` or `ns`. Returns the highest value of each counter.
fn check_chrome(d: &Value) -> BTreeMap<String, f64> {
    assert!(["ms", "ns"].contains(&d["displayTimeUnit"].as_str().unwrap()));
    let mut highs = BTreeMap::new();
    for e in d["traceEvents"].as_array().unwrap() {
        let ph = e["ph"].as_str().unwrap();
        assert!(e["pid"].is_number(), "{e}");
        match ph {
            "C" => {
                assert!(e["ts"].as_f64().unwrap() >= 0.0, "{e}");
                let args = e["args"].as_object().unwrap();
                assert_eq!(args.len(), 1, "{e}");
                for v in args.values() {
                    let h = highs
                        .entry(e["name"].as_str().unwrap().to_string())
                        .or_insert(0.0f64);
                    *h = h.max(v.as_f64().unwrap());
                }
            }
            "i" => {
                assert!(["g", "p", "t"].contains(&e["s"].as_str().unwrap()));
                assert!(e["ts"].is_number());
            }
            "M" => assert!(e["args"]["name"].is_string()),
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    highs
}

/// The one program point of a trace without sites, as DHAT's fields.
fn one_point(d: &Value) -> &Value {
    let pps = d["pps"].as_array().unwrap();
    assert_eq!(pps.len(), 1, "{d}");
    assert_eq!(d["ftbl"][0], "[root]");
    &pps[0]
}

fn dhat_matches(d: &Value, want: &Android, what: &str) {
    let p = one_point(d);
    let got = |k: &str| p[k].as_u64().unwrap() as u128;
    assert_eq!(got("tb"), want.tb, "{what}: tb");
    assert_eq!(got("tbk"), want.tbk as u128, "{what}: tbk");
    // Lifetimes in declared time; in data records they are not lines (an imported line may
    // be more than one data record), which this reading cannot know.
    if want.timed {
        assert_eq!(got("tl"), want.tl, "{what}: tl");
    }
    assert_eq!(got("gb"), want.gb, "{what}: gb");
    assert_eq!(got("gbk"), want.gbk as u128, "{what}: gbk");
    // One point: its own maximum is the peak.
    assert_eq!(got("mb"), want.gb, "{what}: mb");
    assert_eq!(got("mbk"), want.gbk as u128, "{what}: mbk");
    assert_eq!(got("eb"), want.eb, "{what}: eb");
    assert_eq!(got("ebk"), want.ebk as u128, "{what}: ebk");
    if want.timed {
        assert_eq!(d["tg"].as_u64().unwrap(), want.tg, "{what}: tg");
        assert_eq!(d["te"].as_u64().unwrap(), want.te, "{what}: te");
    }
    assert_eq!(d["tu"], if want.timed { "ns" } else { "records" }, "{what}");
    assert_eq!(d["dhatFileVersion"], 2);
    assert_eq!(d["mode"], "heap");
    assert_eq!(d["bklt"], true);
    assert_eq!(d["bkacc"], false);
}

#[test]
fn android_traces_export_the_figures_bionic_plays() {
    let dir = tempdir();
    for name in [
        "android-timed.txt",
        "android-systemui.txt",
        "android-failed-realloc.txt",
    ] {
        let src = alloc_fixture(name);
        let want = android(&std::fs::read_to_string(&src).unwrap());
        let trace = import(&src, dir.path());
        let d = export(&trace, "dhat", &dir.path().join("a.dhat.json"), &[]);
        dhat_matches(&d, &want, name);

        let s = export(
            &trace,
            "speedscope",
            &dir.path().join("a.speedscope.json"),
            &[],
        );
        check_speedscope(&s);
        let ends: Vec<u64> = s["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["endValue"].as_u64().unwrap())
            .collect();
        assert_eq!(
            ends,
            [want.tb as u64, want.tbk, want.gb as u64, want.eb as u64],
            "{name}: bytes, allocations, peak, leaked"
        );

        let c = export(&trace, "chrome", &dir.path().join("a.trace.json"), &[]);
        let highs = check_chrome(&c);
        assert_eq!(highs["live bytes"], want.gb as f64, "{name}");
        for (t, high) in &want.threads {
            assert_eq!(
                highs[&format!("live bytes, thread {t}")],
                *high as f64,
                "{name}: thread {t}"
            );
        }
        let peak = c["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "peak")
            .unwrap();
        assert_eq!(peak["args"]["bytes"].as_u64().unwrap() as u128, want.gb);
        // The data record of the peak is the one `mtf stats` names (an imported line may be
        // more than one data record).
        let o = mtf(&["stats", "-f", "json", trace.to_str().unwrap()]);
        let stats: Value = serde_json::from_slice(&o.stdout).unwrap();
        let at = &stats["namespaces"][0]["peak"]["at"];
        assert_eq!(peak["args"]["record"], at["data_record"], "{name}");
        assert_eq!(at["line"].as_u64().unwrap(), want.peak_line + 1, "{name}");
        if want.timed {
            // Microseconds from the declared nanoseconds.
            let start_ns = d["tg"].as_u64().unwrap();
            assert_eq!(
                peak["ts"].as_f64().unwrap(),
                (start_ns + first_time(&src)) as f64 / 1000.0
            );
        } else {
            assert_eq!(peak["ts"], at["data_record"]);
            assert_eq!(d["tg"], at["data_record"]);
        }
    }
}

/// The start time of the first line of an Android trace.
fn first_time(src: &Path) -> u64 {
    let t = std::fs::read_to_string(src).unwrap();
    let w: Vec<&str> = t.lines().next().unwrap().split_whitespace().collect();
    w[w.len() - 2].parse().unwrap()
}

#[test]
fn the_peak_counter_is_mtf_stats_peak_with_few_points() {
    // A long trace thinned to a few points keeps its peak exactly, as `mtf stats` gives it.
    let dir = tempdir();
    let src = alloc_fixture("android-systemui.txt");
    let want = android(&std::fs::read_to_string(&src).unwrap());
    let trace = import(&src, dir.path());
    let o = mtf(&["stats", "-f", "json", trace.to_str().unwrap()]);
    let stats: Value = serde_json::from_slice(&o.stdout).unwrap();
    let peak = stats["namespaces"][0]["peak"]["bytes"].as_u64().unwrap();
    assert_eq!(peak as u128, want.gb);
    let c = export(
        &trace,
        "chrome",
        &dir.path().join("t.trace.json.gz"),
        &["--points", "6"],
    );
    let highs = check_chrome(&c);
    assert_eq!(highs["live bytes"], peak as f64);
    let total = c["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "live bytes")
        .count();
    assert!(total <= 6, "{total} points");
    assert_eq!(c["otherData"]["thinned"], true);
}

#[test]
fn malloc_lab_traces_export_what_mdriver_reads() {
    use super::malloclab::{mdriver, Header};
    let dir = tempdir();
    for (name, header) in [("2002.rep", Header::Four), ("3e.rep", Header::Four)] {
        let src = root().join("tests/data/import/malloclab").join(name);
        let want = mdriver(&std::fs::read_to_string(&src).unwrap(), header);
        let trace = import(&src, dir.path());
        let d = export(&trace, "dhat", &dir.path().join("m.dhat.json"), &[]);
        let p = one_point(&d);
        assert_eq!(p["tbk"].as_u64().unwrap(), want.allocations, "{name}");
        assert_eq!(p["tb"].as_u64().unwrap(), want.bytes_allocated, "{name}");
        assert_eq!(p["gb"].as_u64().unwrap(), want.peak, "{name}");
        assert_eq!(p["eb"].as_u64().unwrap(), want.leaked_bytes, "{name}");
        assert_eq!(p["ebk"].as_u64().unwrap(), want.leaked_blocks, "{name}");
        let s = export(&trace, "speedscope", &dir.path().join("m.json"), &[]);
        check_speedscope(&s);
        let c = export(&trace, "chrome", &dir.path().join("m.trace.json"), &[]);
        assert_eq!(check_chrome(&c)["live bytes"], want.peak as f64, "{name}");
    }
}

/// heaptrack_print's folded lines (`frame (file);…; cost`) as stacks of function names (the
/// file left out, as speedscope shows a frame's file apart), equal stacks added up.
fn folded_by_function(text: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let (stack, cost) = line.rsplit_once(' ').unwrap();
        let names: Vec<&str> = stack
            .trim_end_matches(';')
            .split(';')
            .map(|f| match f.rsplit_once(" (") {
                Some((name, _)) if f.ends_with(')') => name,
                _ => f,
            })
            .collect();
        let cost: u64 = cost.parse().unwrap();
        if cost > 0 {
            *out.entry(names.join(";")).or_default() += cost;
        }
    }
    out
}

fn speedscope_by_stack(d: &Value, profile: usize) -> BTreeMap<String, u64> {
    let frames = d["shared"]["frames"].as_array().unwrap();
    let p = &d["profiles"][profile];
    let mut out = BTreeMap::new();
    for (s, w) in p["samples"]
        .as_array()
        .unwrap()
        .iter()
        .zip(p["weights"].as_array().unwrap())
    {
        let names: Vec<&str> = s
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                frames[i.as_u64().unwrap() as usize]["name"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        *out.entry(names.join(";")).or_default() += w.as_u64().unwrap();
    }
    out
}

#[test]
fn heaptrack_recordings_export_heaptrack_print_s_stacks() {
    let dir = tempdir();
    let stacks = root().join("tests/data/heaptrack-stacks");
    for name in ["nested", "inlined", "threads"] {
        let trace = util::import_into(
            dir.path(),
            &stacks.join(format!("{name}.zst")),
            Some("heaptrack"),
        );
        let s = export(&trace, "speedscope", &dir.path().join("h.json"), &[]);
        check_speedscope(&s);
        for (profile, cost) in [(1, "allocations"), (2, "peak"), (3, "leaked")] {
            let golden =
                std::fs::read_to_string(stacks.join(format!("{name}.{cost}.folded"))).unwrap();
            // heaptrack_print -F lists a node's inlined frames innermost first, where speedscope
            // wants every stack root first: stacks with inlined frames are compared as sets of
            // frames (nested.c has none but the loader's, whose two are one function).
            let key = |m: BTreeMap<String, u64>| -> BTreeMap<String, u64> {
                if name == "nested" {
                    return m;
                }
                let mut out = BTreeMap::new();
                for (k, v) in m {
                    let mut f: Vec<&str> = k.split(';').collect();
                    f.sort_unstable();
                    *out.entry(f.join(";")).or_default() += v;
                }
                out
            };
            assert_eq!(
                key(speedscope_by_stack(&s, profile)),
                key(folded_by_function(&golden)),
                "{name}: {cost}"
            );
        }
        // DHAT: the same program points, innermost frame first; their figures add up to
        // heaptrack_print's.
        let d = export(&trace, "dhat", &dir.path().join("h.dhat.json"), &[]);
        let ftbl = d["ftbl"].as_array().unwrap();
        let mut by_stack: BTreeMap<String, u64> = BTreeMap::new();
        for p in d["pps"].as_array().unwrap() {
            let mut names: Vec<String> = p["fs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    let f = ftbl[i.as_u64().unwrap() as usize].as_str().unwrap();
                    // `0xADDR: function (file:line)` → `function`.
                    let f = f.split_once(": ").map_or(f, |(_, r)| r);
                    f.rsplit_once(" (").map_or(f, |(n, _)| n).to_string()
                })
                .collect();
            names.reverse();
            let gb = p["gb"].as_u64().unwrap();
            if gb > 0 {
                *by_stack.entry(names.join(";")).or_default() += gb;
            }
        }
        // Each site of a heaptrack recording is a program point: its own highest live bytes
        // are the site's `max_live_bytes` in `mtf stats` (DHAT's "max live"), and its
        // allocations the site's.
        let o = mtf(&[
            "stats",
            "-f",
            "json",
            "--top",
            "1000",
            trace.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let stats: Value = serde_json::from_slice(&o.stdout).unwrap();
        let mut sites: Vec<(u64, u64)> = stats["namespaces"][0]["sites"]["by_allocated"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x["max_live_bytes"].as_u64().unwrap(),
                    x["allocations"].as_u64().unwrap(),
                )
            })
            .collect();
        let mut points: Vec<(u64, u64)> = d["pps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["mb"].as_u64().unwrap(), p["tbk"].as_u64().unwrap()))
            .collect();
        sites.sort_unstable();
        points.sort_unstable();
        assert_eq!(points, sites, "{name}: (mb, tbk) of each point");
        let golden = std::fs::read_to_string(stacks.join(format!("{name}.peak.folded"))).unwrap();
        let total = |m: &BTreeMap<String, u64>| m.values().sum::<u64>();
        let golden = folded_by_function(&golden);
        assert_eq!(total(&by_stack), total(&golden), "{name}: DHAT gb");
        if name == "nested" {
            assert_eq!(by_stack, golden, "{name}: DHAT gb");
        }
    }
}

#[test]
fn pipes_compressed_inputs_and_standard_output_give_the_file_s_export() {
    let dir = tempdir();
    let trace = import(&alloc_fixture("android-timed.txt"), dir.path());
    let bytes = std::fs::read(&trace).unwrap();
    for format in ["speedscope", "dhat", "chrome"] {
        let file = dir.path().join(format!("x.{format}.json"));
        let from_file = export(&trace, format, &file, &[]);
        for input in [bytes.clone(), util::compress("zst", &bytes)] {
            let o = util::mtf_stdin(&["export", "-", "--to", format, "-o", "-"], &input);
            assert!(o.status.success(), "{}", text(&o.stderr));
            let piped: Value = serde_json::from_slice(&o.stdout).unwrap();
            // The same document, but for the name of the input.
            let name = trace.to_str().unwrap();
            let renamed = serde_json::to_string(&piped)
                .unwrap()
                .replace("standard input", name);
            assert_eq!(
                renamed,
                serde_json::to_string(&from_file).unwrap(),
                "{format}"
            );
        }
    }
    // A compressed output by its name.
    let c = export(&trace, "chrome", &dir.path().join("x.trace.json.gz"), &[]);
    assert!(check_chrome(&c).contains_key("live bytes"));
}

#[test]
fn wrong_requests_are_refused_with_the_trace_named() {
    let dir = tempdir();
    let trace = import(&alloc_fixture("android-timed.txt"), dir.path());
    let t = trace.to_str().unwrap();
    let out = dir.path().join("o.json");
    let o = mtf(&[
        "export",
        t,
        "--to",
        "dhat",
        "--space",
        "nope",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains(t) && err.contains("`nope`") && err.contains("block"),
        "{err}"
    );
    assert!(!out.exists());
    let o = mtf(&["export", t, "--to", "chrome", "--points", "1", "-o", "-"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--points"), "{}", text(&o.stderr));
    // The output may not be the input.
    let before = std::fs::read(&trace).unwrap();
    let o = mtf(&["export", t, "--to", "dhat", "-o", t]);
    assert_ne!(o.status.code(), Some(0));
    assert_eq!(std::fs::read(&trace).unwrap(), before);
}

/// Where Chromium and valgrind's dh_view.html are installed: the DHAT export of a heaptrack
/// recording loaded by dh_view itself (its own `buildTree` and `displayTree`, the file's data
/// handed to them as its file input would), and the page it shows read back: no error, the
/// totals and the frames of the program points.
#[test]
fn dh_view_shows_the_dhat_export() {
    let view = Path::new("/usr/libexec/valgrind");
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            std::process::Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let (Some(chromium), true) = (chromium, view.join("dh_view.html").exists()) else {
        eprintln!(
            "note: dh_view_shows_the_dhat_export skipped: needs chromium and valgrind's dh_view.html (apt-get install chromium valgrind)"
        );
        return;
    };
    let dir = tempdir();
    let trace = util::import_into(
        dir.path(),
        &root().join("tests/data/heaptrack-stacks/nested.zst"),
        Some("heaptrack"),
    );
    let data = dir.path().join("nested.dhat.json");
    export(&trace, "dhat", &data, &[]);
    for f in ["dh_view.js", "dh_view.css"] {
        std::fs::copy(view.join(f), dir.path().join(f)).unwrap();
    }
    let html = std::fs::read_to_string(view.join("dh_view.html")).unwrap();
    let json = std::fs::read_to_string(&data).unwrap();
    let page = html
        .replace(
            "<body onload=\"onLoad()\">",
            "<body onload=\"onLoad(); mtfLoad()\">",
        )
        .replace(
            "<script src=\"dh_view.js\"></script>",
            &format!(
                "<script src=\"dh_view.js\"></script>\n<script>function mtfLoad() {{ tryFunc(() => {{ gFilename = \"nested.dhat.json\"; gData = {}; buildTree(); displayTree(); }}); }}</script>",
                json.trim()
            ),
        );
    assert!(
        page.contains("mtfLoad()\""),
        "dh_view.html changed its body"
    );
    let file = dir.path().join("page.html");
    std::fs::write(&file, page).unwrap();
    let o = std::process::Command::new("timeout")
        .args([
            "120",
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--dump-dom",
        ])
        .arg(format!("file://{}", file.display()))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&o.stdout);
    assert!(
        !dom.contains("class=\"error\""),
        "dh_view shows an error: {dom}"
    );
    // The text the page shows (tags left out).
    let mut shown_text = String::new();
    let mut in_tag = false;
    for c in dom.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => shown_text.push(c),
            _ => {}
        }
    }
    let dom = shown_text;
    // heaptrack_print's figures for this recording (nested.print.txt): 15 allocations of
    // 73,884 bytes, 73,660 bytes at the peak, 304 leaked.
    for shown in [
        "PP 1/1",
        "73,884 bytes (100%",
        "in 15 blocks (100%",
        "At t-gmax: 73,660 bytes (100%) in 12 blocks",
        "At t-end:  304 bytes (100%) in 3 blocks",
        "leaf_alloc (./nested.c:11)",
    ] {
        assert!(
            dom.contains(shown),
            "dh_view does not show `{shown}`: {dom}"
        );
    }
}

#[test]
fn et3_calling_contexts_are_the_stacks_of_the_exports() {
    // The calling contexts computed from the trace's text (`stacks::et3_contexts`: per thread
    // a stack of methods, `M` pushes, `E` pops, `N`/`A` allocate under it, `D` frees).
    let input = root().join("tests/data/stacks-et3/trace");
    let src = std::fs::read_to_string(&input).unwrap();
    let want = super::stacks::et3_contexts(&src, None);
    let dir = tempdir();
    let trace = util::import_into(dir.path(), &input, Some("et3"));
    let s = export(&trace, "speedscope", &dir.path().join("e.json"), &[]);
    check_speedscope(&s);
    let nonzero = |f: fn(&(u64, u64)) -> u64| -> BTreeMap<String, u64> {
        want.iter()
            .filter(|(_, v)| f(v) > 0)
            .map(|(k, v)| (k.clone(), f(v)))
            .collect()
    };
    assert_eq!(speedscope_by_stack(&s, 1), nonzero(|v| v.0), "allocations");
    assert_eq!(speedscope_by_stack(&s, 3), nonzero(|v| v.1), "leaked bytes");
    // DHAT: one program point per context (innermost frame first), the same figures.
    let d = export(&trace, "dhat", &dir.path().join("e.dhat.json"), &[]);
    let ftbl = d["ftbl"].as_array().unwrap();
    let mut tbk: BTreeMap<String, u64> = BTreeMap::new();
    for p in d["pps"].as_array().unwrap() {
        let mut names: Vec<&str> = p["fs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| ftbl[i.as_u64().unwrap() as usize].as_str().unwrap())
            .collect();
        names.reverse();
        *tbk.entry(names.join(";")).or_default() += p["tbk"].as_u64().unwrap();
    }
    assert_eq!(tbk, nonzero(|v| v.0));
}

#[test]
fn every_sample_trace_exports_with_the_peak_mtf_stats_gives() {
    // Every format the tool imports, as its sample in traces/: the exports are written, follow
    // their formats' rules, and the peak counter is `mtf stats`' peak (for a namespace without
    // sizes, its most live blocks).
    let dir = tempdir();
    for entry in std::fs::read_dir(root().join("traces")).unwrap() {
        let trace = entry.unwrap().path();
        if trace.extension().is_none_or(|e| e != "mtf") {
            continue;
        }
        let o = mtf(&["stats", "-f", "json", trace.to_str().unwrap()]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let stats: Value = serde_json::from_slice(&o.stdout).unwrap();
        let d = export(&trace, "dhat", &dir.path().join("d.json"), &[]);
        let space = d["cmd"].as_str().unwrap().rsplit_once(" (").unwrap().1;
        let ns = stats["namespaces"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| space.starts_with(&format!("{}, ", n["name"].as_str().unwrap())))
            .unwrap();
        let s = export(&trace, "speedscope", &dir.path().join("s.json"), &[]);
        check_speedscope(&s);
        let c = export(&trace, "chrome", &dir.path().join("c.json"), &[]);
        let highs = check_chrome(&c);
        let sum = |k: &str| -> u64 {
            d["pps"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p[k].as_u64().unwrap())
                .sum()
        };
        let name = trace.display();
        assert_eq!(sum("tbk"), ns["allocations"].as_u64().unwrap(), "{name}");
        if ns["sized"] == true {
            let peak = ns["peak"]["bytes"].as_u64().unwrap();
            assert_eq!(highs["live bytes"], peak as f64, "{name}");
            assert_eq!(sum("gb"), peak, "{name}");
            assert_eq!(sum("gbk"), ns["peak"]["blocks"].as_u64().unwrap(), "{name}");
            assert_eq!(sum("tb"), ns["bytes_allocated"].as_u64().unwrap(), "{name}");
            assert_eq!(sum("eb"), ns["leaked"]["bytes"].as_u64().unwrap(), "{name}");
        } else {
            let most = ns["max_blocks"]["blocks"].as_u64().unwrap();
            assert_eq!(highs["live blocks"], most as f64, "{name}");
            assert_eq!(sum("gbk"), most, "{name}");
        }
        assert_eq!(
            sum("ebk"),
            ns["leaked"]["blocks"].as_u64().unwrap(),
            "{name}"
        );
    }
}
