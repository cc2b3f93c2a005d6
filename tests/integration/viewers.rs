//! `mtf export --to heaptrack|pprof` read by the viewers' own programs: heaptrack_print
//! (Debian's heaptrack) and `go tool pprof` (Debian's golang-go), each skipped with a note where
//! the machine does not have it, and the pprof file parsed here with prost from message types
//! written in this file from profile.proto. Their figures are set against `mtf stats -f json`
//! and, for malloc-lab traces, against mdriver.c's own reading of the text
//! (`crate::malloclab::mdriver`); a heaptrack recording against what heaptrack_print prints for
//! the original file.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::malloclab::{mdriver, Header, FIXTURES};
use crate::util::{compress, import_into, mtf, mtf_stdin, root, tempdir, text};

/// The figures a viewer shows: allocations, temporary allocations, the peak and the bytes
/// leaked (and, where the viewer has them, the bytes allocated and the blocks at the peak and
/// at the end).
#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
struct Figures {
    allocations: u64,
    temporary: u64,
    peak: u64,
    leaked: u64,
}

/// Whether a program runs here; a note on standard error if not.
fn have(program: &str, args: &[&str]) -> bool {
    let ok = Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("note: `{program}` is not installed: its part of this test is skipped");
    }
    ok
}

/// `mtf stats -f json`'s namespace `space` (the first that allocates where `None`).
fn stats_space(trace: &Path, space: Option<&str>) -> Value {
    let o = mtf(&["stats", "-f", "json", trace.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let spaces = v["namespaces"].as_array().unwrap();
    spaces
        .iter()
        .find(|s| match space {
            Some(n) => s["name"] == n,
            None => s["allocations"].as_u64().unwrap() > 0 && s["sized"] == true,
        })
        .or_else(|| {
            spaces
                .iter()
                .find(|s| space.is_none() && s["sized"] == true)
        })
        .or_else(|| {
            spaces
                .iter()
                .find(|s| space.is_none() && s["allocations"].as_u64().unwrap() > 0)
        })
        .unwrap_or(&spaces[0])
        .clone()
}

fn stats_figures(s: &Value) -> Figures {
    Figures {
        allocations: s["allocations"].as_u64().unwrap(),
        temporary: s["temporary"].as_u64().unwrap(),
        peak: s["peak"]["bytes"].as_u64().unwrap(),
        leaked: s["leaked"]["bytes"].as_u64().unwrap(),
    }
}

/// What heaptrack_print finds in a heaptrack file: the exact figures from its folded stacks of
/// each cost (the summary rounds bytes), checked against the summary's counts.
fn heaptrack_print(file: &Path, dir: &Path) -> Figures {
    let mut f = Figures::default();
    for cost in ["allocations", "temporary", "peak", "leaked"] {
        let folded = dir.join(format!("folded.{cost}"));
        let o = Command::new("heaptrack_print")
            .arg("-F")
            .arg(&folded)
            .args(["--flamegraph-cost-type", cost])
            .arg(file)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            !text(&o.stderr).contains("failed to parse"),
            "{}: {}",
            file.display(),
            text(&o.stderr)
        );
        let sum: u64 = std::fs::read_to_string(&folded)
            .unwrap()
            .lines()
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        match cost {
            "allocations" => f.allocations = sum,
            "temporary" => f.temporary = sum,
            "peak" => f.peak = sum,
            _ => f.leaked = sum,
        }
        if cost == "allocations" {
            let out = text(&o.stdout);
            let count = |what: &str| -> u64 {
                let l = out.lines().find(|l| l.starts_with(what)).unwrap();
                l[what.len()..]
                    .split_whitespace()
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            };
            assert_eq!(count("calls to allocation functions: "), sum, "{out}");
            f.temporary = count("temporary memory allocations: ");
        }
    }
    f
}

/// `mtf export T --to heaptrack -o NAME` in `dir`.
fn export(trace: &Path, to: &str, dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    let o = mtf(&[
        "export",
        trace.to_str().unwrap(),
        "--to",
        to,
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(
        o.status.success(),
        "{}: {}",
        trace.display(),
        text(&o.stderr)
    );
    out
}

/// The sample traces of every imported format, as the repository ships them, and the text
/// fixtures of ET2 and ET3 (with its name maps) and of the JVM trace imported into `dir`.
fn samples(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = [
        "android",
        "android-timed",
        "et3",
        "et_merlin",
        "jvm_trace",
        "malloclab",
        "mtrace",
        "tptp",
        "valgrind",
        "hatf-le32",
    ]
    .iter()
    .map(|t| root().join(format!("traces/{t}.mtf")))
    .collect();
    let et3 = root().join("tests/data/import/et3");
    let out = dir.join("et3-text.mtf");
    let mut args = vec!["import".to_string(), "--from".into(), "et3".into()];
    for f in ["trace", "classes.txt", "methods.txt", "fields.txt"] {
        args.push(et3.join(f).to_str().unwrap().to_string());
    }
    args.extend(["-o".into(), out.to_str().unwrap().to_string()]);
    let o = mtf(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", text(&o.stderr));
    v.push(out);
    v.push(import_into(
        dir,
        &root().join("tests/data/import/et2/trace"),
        Some("et3"),
    ));
    v.push(import_into(
        dir,
        &root().join("tests/data/import/jvm/trace.txt"),
        None,
    ));
    v
}

#[test]
fn heaptrack_print_reads_the_export_of_every_format_with_the_figures_of_stats() {
    let dir = tempdir();
    let ht = have("heaptrack_print", &["--version"]);
    let mut traces = samples(dir.path());
    for rep in ["2002.rep", "cmu2016.rep", "3e.rep", "short.rep"] {
        traces.push(import_into(
            dir.path(),
            &root().join("tests/data/import/malloclab").join(rep),
            None,
        ));
    }
    traces.push(import_into(
        dir.path(),
        &root().join("tests/data/import/tptp/trace.xml"),
        None,
    ));
    for (i, t) in traces.iter().enumerate() {
        let want = stats_figures(&stats_space(t, None));
        // Compressed by the name, zstd as heaptrack 1.4 writes, gzip as older ones.
        let name = if i % 2 == 0 {
            "x.heaptrack.zst"
        } else {
            "x.heaptrack.gz"
        };
        let file = export(t, "heaptrack", dir.path(), name);
        if ht {
            assert_eq!(heaptrack_print(&file, dir.path()), want, "{}", t.display());
        }
    }
}

#[test]
fn a_malloclab_export_has_the_figures_mdriver_reads_from_the_text() {
    let dir = tempdir();
    if !have("heaptrack_print", &["--version"]) {
        return;
    }
    for (rep, header, _) in FIXTURES {
        let src = root().join("tests/data/import/malloclab").join(rep);
        let want = mdriver(&std::fs::read_to_string(&src).unwrap(), header);
        let t = import_into(dir.path(), &src, None);
        let file = export(&t, "heaptrack", dir.path(), "m.heaptrack.zst");
        let got = heaptrack_print(&file, dir.path());
        assert_eq!(got.allocations, want.allocations, "{rep}");
        assert_eq!(got.peak, want.peak, "{rep}");
        assert_eq!(got.leaked, want.leaked_bytes, "{rep}");
    }
}

const RECORDINGS: [&str; 5] = ["nested", "temporaries", "inlined", "threads", "templates"];

/// The summary lines of heaptrack_print's report (without the file's name and the RSS, which
/// an export cannot know).
fn report_without_header(s: &str) -> String {
    s.lines()
        .filter(|l| !l.starts_with("reading file") && !l.starts_with("peak RSS"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_heaptrack_recording_goes_back_byte_for_byte_and_its_events_give_the_same_figures() {
    let dir = tempdir();
    let ht = have("heaptrack_print", &["--version"]);
    let src = root().join("tests/data/heaptrack-stacks");
    for name in RECORDINGS {
        let original = src.join(format!("{name}.zst"));
        let t = import_into(dir.path(), &original, Some("heaptrack"));
        // `--to heaptrack` of a trace imported from heaptrack: the mapping's export, exact.
        let back = export(&t, "heaptrack", dir.path(), "back.zst");
        let unzstd = |p: &Path| {
            let mut v = Vec::new();
            zstd::Decoder::new(std::fs::File::open(p).unwrap())
                .unwrap()
                .read_to_end(&mut v)
                .unwrap();
            v
        };
        assert_eq!(unzstd(&back), unzstd(&original), "{name}");
        // The same recording written from its heap events by the library.
        let o = metatf::open(&t).unwrap();
        let mut bytes = Vec::new();
        let r = metatf::viewers::write_heaptrack(
            &o.reader(),
            &metatf::viewers::HeaptrackOptions::default(),
            &mut bytes,
        )
        .unwrap();
        assert!(r.stacks, "{name}");
        // … and by the command line: `--space` asks for the events of a recording.
        let events = dir.path().join("events.heaptrack");
        let o = mtf(&[
            "export",
            t.to_str().unwrap(),
            "--to",
            "heaptrack",
            "--space",
            "block",
            "-o",
            events.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let cli = std::fs::read(&events).unwrap();
        let body = |b: &[u8]| -> Vec<String> {
            text(b)
                .lines()
                .filter(|l| !l.starts_with("X "))
                .map(str::to_string)
                .collect()
        };
        assert_eq!(body(&cli), body(&bytes), "{name}");
        let want = stats_figures(&stats_space(&t, Some("block")));
        assert_eq!(
            (r.allocations, r.peak as u64, r.leaked as u64),
            (want.allocations, want.peak, want.leaked),
            "{name}"
        );
        if !ht {
            continue;
        }
        let golden = std::fs::read_to_string(src.join(format!("{name}.print.txt"))).unwrap();
        let of = |p: &Path| {
            let o = Command::new("heaptrack_print").arg(p).output().unwrap();
            assert!(o.status.success());
            report_without_header(&text(&o.stdout))
        };
        assert_eq!(of(&back), report_without_header(&golden), "{name}");
        // The events' file: the figures of the original's report, exactly.
        let figures = |s: &str| -> Vec<String> {
            s.lines()
                .filter(|l| {
                    l.starts_with("calls to allocation functions")
                        || l.starts_with("temporary memory allocations")
                        || l.starts_with("peak heap memory consumption")
                        || l.starts_with("total memory leaked")
                })
                // The rate after the count depends on the run's length, which the events'
                // file gives in the trace's own time.
                .map(|l| l.split(" (").next().unwrap_or(l).to_string())
                .collect()
        };
        assert_eq!(figures(&of(&events)), figures(&golden), "{name}");
        // Its stacks: heaptrack_print's folded lines of each cost are the original's (in
        // another order: the allocation infos are numbered as the events come).
        for cost in ["allocations", "temporary", "peak", "leaked"] {
            let folded = dir.path().join("events.folded");
            let o = Command::new("heaptrack_print")
                .arg("-F")
                .arg(&folded)
                .args(["--flamegraph-cost-type", cost])
                .arg(&events)
                .output()
                .unwrap();
            assert!(o.status.success());
            let sorted = |t: String| {
                let mut v: Vec<String> = t.lines().map(str::to_string).collect();
                v.sort();
                v
            };
            let want = std::fs::read_to_string(src.join(format!("{name}.{cost}.folded"))).unwrap();
            assert_eq!(
                sorted(std::fs::read_to_string(&folded).unwrap()),
                sorted(want),
                "{name} {cost}"
            );
        }
    }
}

/// profile.proto's messages, the fields read here, written from the .proto's field numbers.
mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
    }
}

/// A pprof file's totals by sample type name, parsed here.
fn pprof_totals(file: &Path) -> (proto::Profile, Vec<(String, i64)>) {
    use prost::Message;
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(file).unwrap())
        .read_to_end(&mut raw)
        .unwrap();
    let p = proto::Profile::decode(raw.as_slice()).unwrap();
    let name = |i: i64| p.string_table[i as usize].clone();
    let totals = p
        .sample_type
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let sum = p.sample.iter().map(|s| s.value[k]).sum();
            (format!("{}/{}", name(t.r#type), name(t.unit)), sum)
        })
        .collect();
    (p, totals)
}

/// What the totals of each sample type must be: `mtf stats`' figures of the namespace.
fn pprof_want(s: &Value) -> Vec<(String, i64)> {
    let n = |v: &Value| v.as_i64().unwrap();
    vec![
        ("alloc_objects/count".into(), n(&s["allocations"])),
        ("alloc_space/bytes".into(), n(&s["bytes_allocated"])),
        ("inuse_objects/count".into(), n(&s["peak"]["blocks"])),
        ("inuse_space/bytes".into(), n(&s["peak"]["bytes"])),
        ("leaked_objects/count".into(), n(&s["leaked"]["blocks"])),
        ("leaked_space/bytes".into(), n(&s["leaked"]["bytes"])),
    ]
}

/// `go tool pprof -raw`'s samples, summed per sample type.
fn go_pprof_totals(file: &Path) -> Vec<i64> {
    let o = Command::new("go")
        .args(["tool", "pprof", "-raw"])
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let mut totals = Vec::new();
    let mut in_samples = false;
    for l in out.lines() {
        if l.starts_with("Samples:") {
            in_samples = true;
            continue;
        }
        if l.starts_with("Locations") {
            break;
        }
        let Some((values, _)) = l.split_once(':') else {
            continue;
        };
        if !in_samples || values.contains('/') {
            continue;
        }
        let v: Vec<i64> = values
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        totals.resize(v.len(), 0);
        for (t, x) in totals.iter_mut().zip(v) {
            *t += x;
        }
    }
    totals
}

/// The total `go tool pprof -top -sample_index=INDEX` shows ("… of 22508B total"; bytes with
/// `-unit=byte`, so that they are not rounded to kB).
fn go_top_total(file: &Path, index: &str) -> i64 {
    let unit = if index.ends_with("_space") {
        "-unit=byte"
    } else {
        "-unit=minimum"
    };
    let o = Command::new("go")
        .args(["tool", "pprof", "-top", unit])
        .arg(format!("-sample_index={index}"))
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let Some(l) = out
        .lines()
        .find(|l| l.starts_with("Showing nodes accounting for"))
    else {
        // An empty profile: pprof shows no line of totals.
        return 0;
    };
    let total = l.rsplit(" of ").next().unwrap().trim_end_matches(" total");
    total
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .unwrap()
}

#[test]
fn pprof_profiles_sum_to_the_figures_of_stats_and_go_tool_pprof_reads_them() {
    let dir = tempdir();
    let go = have("go", &["version"]);
    let mut traces = samples(dir.path());
    traces.push(import_into(
        dir.path(),
        &root().join("tests/data/heaptrack-stacks/inlined.zst"),
        Some("heaptrack"),
    ));
    traces.push(import_into(
        dir.path(),
        &root().join("tests/data/import/tptp/trace.xml"),
        None,
    ));
    for t in &traces {
        let s = stats_space(t, None);
        let file = export(t, "pprof", dir.path(), "x.pb.gz");
        let (p, totals) = pprof_totals(&file);
        let want = pprof_want(&s);
        assert_eq!(totals, want, "{}", t.display());
        assert_eq!(
            p.string_table[p.default_sample_type as usize],
            "inuse_space",
            "{}",
            t.display()
        );
        // Every sample's locations exist, and every location's functions.
        for smp in &p.sample {
            assert!(!smp.location_id.is_empty());
            for id in &smp.location_id {
                let loc = p.location.iter().find(|l| l.id == *id).unwrap();
                for line in &loc.line {
                    assert!(p.function.iter().any(|f| f.id == line.function_id));
                }
            }
        }
        if go {
            let got = go_pprof_totals(&file);
            let all: Vec<i64> = want.iter().map(|w| w.1).collect();
            assert_eq!(got, all, "{}", t.display());
            // `-top`'s total of the default type (bytes at the peak) and of the allocations.
            for (index, k) in [("inuse_space", 3), ("alloc_objects", 0)] {
                assert_eq!(
                    go_top_total(&file, index),
                    want[k].1,
                    "{} {index}",
                    t.display()
                );
            }
        }
    }
}

#[test]
fn a_malloclab_profile_has_the_figures_mdriver_reads_from_the_text() {
    let dir = tempdir();
    let src = root().join("tests/data/import/malloclab/cmu2016.rep");
    let want = mdriver(&std::fs::read_to_string(&src).unwrap(), Header::Four);
    let t = import_into(dir.path(), &src, None);
    let (_, totals) = pprof_totals(&export(&t, "pprof", dir.path(), "m.pb.gz"));
    let get = |k: &str| totals.iter().find(|(n, _)| n == k).unwrap().1 as u64;
    assert_eq!(get("alloc_objects/count"), want.allocations);
    assert_eq!(get("alloc_space/bytes"), want.bytes_allocated);
    assert_eq!(get("inuse_space/bytes"), want.peak);
    assert_eq!(get("leaked_space/bytes"), want.leaked_bytes);
    assert_eq!(get("leaked_objects/count"), want.leaked_blocks);
}

#[test]
fn a_java_profile_names_its_methods_and_classes() {
    let dir = tempdir();
    let file = export(
        &root().join("traces/et3.mtf"),
        "pprof",
        dir.path(),
        "j.pb.gz",
    );
    let (p, _) = pprof_totals(&file);
    let names: Vec<&str> = p
        .function
        .iter()
        .map(|f| p.string_table[f.name as usize].as_str())
        .collect();
    assert!(names.contains(&"SimpleTrace.main"), "{names:?}");
    assert!(names.contains(&"java.lang.String"), "{names:?}");
}

#[test]
fn a_trace_from_a_pipe_or_compressed_exports_as_from_its_file() {
    let dir = tempdir();
    let t = root().join("traces/android-timed.mtf");
    let events = |b: &[u8]| -> Vec<String> {
        text(b)
            .lines()
            .filter(|l| l.starts_with(['a', '+', '-', 'c']))
            .map(str::to_string)
            .collect()
    };
    let o = mtf(&[
        "export",
        t.to_str().unwrap(),
        "--to",
        "heaptrack",
        "-o",
        "-",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let want = events(&o.stdout);
    assert!(want.iter().any(|l| l.starts_with("c ")), "{want:?}");
    let bytes = std::fs::read(&t).unwrap();
    let o = mtf_stdin(&["export", "-", "--to", "heaptrack", "-o", "-"], &bytes);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(events(&o.stdout), want);
    let z = dir.path().join("t.mtf.zst");
    std::fs::write(&z, compress("zst", &bytes)).unwrap();
    let out = export(&z, "heaptrack", dir.path(), "t.heaptrack.gz");
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&out).unwrap())
        .read_to_end(&mut plain)
        .unwrap();
    assert_eq!(events(&plain), want);
    // pprof from standard input: the same totals.
    let o = mtf_stdin(&["export", "-", "--to", "pprof", "-o", "-"], &bytes);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let piped = dir.path().join("piped.pb.gz");
    std::fs::write(&piped, &o.stdout).unwrap();
    let file = export(&t, "pprof", dir.path(), "file.pb.gz");
    assert_eq!(pprof_totals(&piped).1, pprof_totals(&file).1);
}

#[test]
fn standard_output_and_wrong_arguments() {
    let t = root().join("traces/android.mtf");
    let o = mtf(&[
        "export",
        t.to_str().unwrap(),
        "--to",
        "heaptrack",
        "-o",
        "-",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).starts_with("v 10400 3\n"));
    let o = mtf(&[
        "export",
        t.to_str().unwrap(),
        "--to",
        "heaptrack",
        "--space",
        "nope",
        "-o",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("no namespace of allocations `nope`"));
    let o = mtf(&["export", t.to_str().unwrap(), "--space", "block", "-o", "-"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--space goes with"));
    let o = mtf(&[
        "export",
        t.to_str().unwrap(),
        "--to",
        "pprof",
        "-o",
        t.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    // A DTD that declares no allocations: nothing to show, and the trace is named.
    let dir = tempdir();
    let dtd = std::fs::read_to_string(root().join("dtds/hatf10.dtd")).unwrap();
    let plain: String = dtd
        .lines()
        .filter(|l| {
            ![
                "defines",
                "bytes",
                "block.",
                "heaps.",
                "thread.thread",
                "size.size",
                "time.time",
                ".site",
                "key",
            ]
            .iter()
            .any(|w| l.contains(w))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let plain_dtd = dir.path().join("plain.dtd");
    std::fs::write(&plain_dtd, plain).unwrap();
    let hatf = root().join("traces/hatf-le32.mtf");
    for to in ["heaptrack", "pprof"] {
        let o = mtf(&[
            "export",
            hatf.to_str().unwrap(),
            "--dtd",
            plain_dtd.to_str().unwrap(),
            "--to",
            to,
            "-o",
            "-",
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("hatf-le32.mtf: its DTD declares no allocations"),
            "{}",
            text(&o.stderr)
        );
        assert!(o.stdout.is_empty());
    }
}
