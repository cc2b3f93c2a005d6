//! Heap-allocation traces into HATF (issue 10): every fixture of `tests/data/import/alloc/`
//! (Android memory_replay, valgrind, glibc mtrace, malloc-lab, heaptrack) is imported, checked,
//! exported and compared byte for byte (compressed inputs with their decompressed text); the
//! records are HATF's; the Android sample of `../shared/data` round-trips when present.

use std::io::Read;
use std::path::Path;

use crate::util::{self, mtf, text};

fn data(rel: &str) -> String {
    format!("tests/data/import/alloc/{rel}")
}

/// The bytes of a file, decompressed when it is gzip or zstd.
fn plain(path: &Path) -> Vec<u8> {
    let raw = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    if raw.starts_with(&[0x1f, 0x8b]) {
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_end(&mut out)
            .unwrap();
        out
    } else if raw.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        let o = std::process::Command::new("zstd")
            .args(["-dc", path.to_str().unwrap()])
            .output();
        match o {
            Ok(o) if o.status.success() => o.stdout,
            _ => Vec::new(), // no zstd tool: compared through mtf's own reader below
        }
    } else {
        raw
    }
}

/// Import with `format`, check, export; compare with the (decompressed) input. Returns the
/// import's standard error and the trace's dump.
fn round_trip(format: &str, input: &Path) -> (String, String) {
    let dir = util::tempdir();
    let trace = dir.path().join("t.mtf");
    let t = trace.to_str().unwrap();
    let out = mtf(&["import", "--from", format, input.to_str().unwrap(), "-o", t]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "import {}: {err}", input.display());
    let check = mtf(&["check", "-q", t]);
    assert!(check.status.success(), "check: {}", text(&check.stdout));
    let back = dir.path().join("back");
    let out = mtf(&["export", t, "-o", back.to_str().unwrap()]);
    assert!(out.status.success(), "export: {}", text(&out.stderr));
    let got = std::fs::read(&back).unwrap();
    let want = if metatf::import::zipio::is_zip(input) {
        let mut z = zip::ZipArchive::new(std::fs::File::open(input).unwrap()).unwrap();
        let mut b = Vec::new();
        z.by_index(0).unwrap().read_to_end(&mut b).unwrap();
        let mut z2 = zip::ZipArchive::new(std::fs::File::open(&back).unwrap()).unwrap();
        let mut g = Vec::new();
        z2.by_index(0).unwrap().read_to_end(&mut g).unwrap();
        assert!(g == b, "{}: ZIP entry differs", input.display());
        b
    } else {
        let p = plain(input);
        if !p.is_empty() || std::fs::metadata(input).unwrap().len() == 0 {
            assert!(
                got == p,
                "{}: export differs from the input",
                input.display()
            );
        }
        p
    };
    assert!(!want.is_empty() || got.is_empty());
    let dump = mtf(&["dump", "--data-only", t]);
    assert!(dump.status.success(), "{}", text(&dump.stderr));
    (err, text(&dump.stdout))
}

fn raw_count(stderr: &str) -> u64 {
    let s = stderr.split(" kept as raw lines").next().unwrap();
    s.rsplit(", ").next().unwrap().trim().parse().unwrap()
}

#[test]
fn every_allocation_fixture_round_trips_byte_for_byte() {
    // (format, fixture, lines kept raw)
    let cases: &[(&str, &str, u64)] = &[
        ("android", "android-systemui.txt", 0),
        ("android", "android-odd.txt", 4),
        ("valgrind", "valgrind-allocs.vg", 3),
        ("valgrind", "valgrind-odd.vg", 6),
        ("mtrace", "mtrace-allocs.mtrace", 0),
        ("mtrace", "mtrace-odd.mtrace", 4),
        ("malloclab", "malloclab-2002.rep", 0),
        ("malloclab", "malloclab-3e.rep", 2),
        ("heaptrack", "heaptrack-sort.zst", 0),
        ("heaptrack", "heaptrack-sort.gz", 0),
        ("heaptrack", "heaptrack-v2.txt", 0),
        ("heaptrack_raw", "heaptrack-sort.raw.zst", 0),
    ];
    for (format, file, raw) in cases {
        let p = util::root().join(data(file));
        let (err, _) = round_trip(format, &p);
        assert_eq!(raw_count(&err), *raw, "{file}: {err}");
    }
}

#[test]
fn realloc_outcomes_and_extra_fields_are_hatf_records() {
    let (_, d) = round_trip("android", &util::root().join(data("android-odd.txt")));
    for want in [
        "alloc size=48 address=0xb48390a0 time=0 thread=100 heap=0 func=0 nmemb=0 align=0",
        "alloc size=8 address=0xb48c1100 time=0 thread=200 heap=0 func=1 nmemb=32 align=0",
        "reallocAllocFree size=150 old=0x93605280 address=0x96b90920",
        "realloc size=200 old=0x96b90920 address=0x96b90920",
        "reallocAlloc size=16 old=0x0 address=0x96b90a00",
        "reallocFree size=0 old=0x96b90a00 address=0x0",
        "alloc size=104 address=0xae42d080 time=0 thread=400 heap=0 func=2 nmemb=0 align=16",
        "destroyThread thread=600",
        "alloc size=8 address=0x1234567890",
    ] {
        assert!(d.contains(want), "missing `{want}` in\n{d}");
    }
    let (_, d) = round_trip("valgrind", &util::root().join(data("valgrind-odd.vg")));
    for want in [
        "reallocAlloc size=1600 old=0x0 address=0x4a412f0",
        "realloc size=2048 old=0x4a412f0 address=0x4a412f0",
        "reallocAllocFree size=4096 old=0x4a412f0 address=0x4a42000",
        "reallocFree size=0 old=0x4a42000 address=0x0",
        "alloc size=8 address=0x4a40040 time=0 thread=0 heap=0 pid=7 func=20 nmemb=0",
        "alloc size=32 address=0x4d6f200 time=0 thread=0 heap=0 pid=7 func=0 nmemb=0 align=64",
        "free address=0x4d6f200 time=0 thread=0 heap=0 pid=7 func=7",
    ] {
        assert!(d.contains(want), "missing `{want}` in\n{d}");
    }
    let (_, d) = round_trip("mtrace", &util::root().join(data("mtrace-odd.mtrace")));
    assert!(
        d.contains(r#"realloc size=48 old=0x4052c0 address=0x4052c0"#),
        "{d}"
    );
    assert!(
        d.contains(r#"reallocAllocFree size=12288 old=0x4052c0"#),
        "{d}"
    );
    assert!(d.contains(r#"alloc size=0 address=0x4052c0"#), "{d}");
    // A string-table reference, shown as the string it leads to.
    assert!(d.contains(r#"caller=""#), "{d}");
    let (_, d) = round_trip("malloclab", &util::root().join(data("malloclab-3e.rep")));
    assert!(d.contains("header3 weight=1 ids=4 ops=10 flag=0"), "{d}");
    assert!(
        d.contains("free address=0x0 time=0 thread=0 heap=0 id=18446744073709551615"),
        "{d}"
    );
    let (_, d) = round_trip("malloclab", &util::root().join(data("malloclab-2002.rep")));
    assert!(
        d.contains("header2002 heapsize=20000 ids=6 ops=13 weight=1"),
        "{d}"
    );
    let (_, d) = round_trip(
        "heaptrack_raw",
        &util::root().join(data("heaptrack-sort.raw.zst")),
    );
    assert!(d.contains("alloc size=72704 address=0x"), "{d}");
}

#[test]
fn allocation_formats_are_detected() {
    let dir = util::tempdir();
    for (file, format) in [
        ("android-systemui.txt", "android"),
        ("valgrind-allocs.vg", "valgrind"),
        ("mtrace-allocs.mtrace", "mtrace"),
        ("heaptrack-sort.zst", "heaptrack"),
        ("heaptrack-sort.raw.zst", "heaptrack_raw"),
    ] {
        let t = dir.path().join("t.mtf");
        let out = mtf(&["import", &data(file), "-o", t.to_str().unwrap()]);
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("detected format {format} (")),
            "{file}: {err}"
        );
    }
}

/// The Android sample in `../shared/data` (not part of the repository).
#[test]
#[ignore = "reads the real samples in ../shared/data, which a clone does not have: cargo test -- --ignored"]
fn shared_android_sample_round_trips() {
    let zip = util::root().join("../shared/data/android_memory_replay/systemui.zip");
    if !zip.is_file() {
        eprintln!("skipped: {} is absent", zip.display());
        return;
    }
    let (err, _) = round_trip("android", &zip);
    assert_eq!(raw_count(&err), 0, "{err}");
    assert!(err.contains("786454 units"), "{err}");
}

/// heaptrack's instruction pointers and trace tree go to sections `ips` and `traces` of their
/// own (routed records, docs/mappings.md), in file order; a trace node's parent is a
/// `sectionOffset` to the parent's record, and export still gives back the input.
#[test]
fn heaptrack_ips_and_traces_are_sections_with_parent_links() {
    let input = util::root().join(data("heaptrack-sort.gz"));
    let (_, _) = round_trip("heaptrack", &input);
    let text_in = String::from_utf8(plain(&input)).unwrap();
    let ips = text_in.lines().filter(|l| l.starts_with("i ")).count();
    // (ip, parent) of each `t` line, in file order.
    let nodes: Vec<(u64, u64)> = text_in
        .lines()
        .filter_map(|l| l.strip_prefix("t "))
        .map(|l| {
            let (ip, p) = l.split_once(' ').unwrap();
            (
                u64::from_str_radix(ip, 16).unwrap(),
                u64::from_str_radix(p, 16).unwrap(),
            )
        })
        .collect();
    assert!(
        ips > 10 && nodes.len() > 10,
        "{ips} ips, {} nodes",
        nodes.len()
    );
    assert!(
        nodes.iter().any(|n| n.1 > 1),
        "the fixture has nested nodes"
    );

    let dir = util::tempdir();
    let t = dir.path().join("t.mtf");
    let out = mtf(&[
        "import",
        "--from",
        "heaptrack",
        input.to_str().unwrap(),
        "-o",
        t.to_str().unwrap(),
    ]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(&format!("section ips: {ips} records (routed)")),
        "{err}"
    );
    assert!(
        err.contains(&format!("section traces: {} records (routed)", nodes.len())),
        "{err}"
    );
    let t = t.to_str().unwrap();
    let out = mtf(&["check", t]);
    assert!(out.status.success(), "{}", text(&out.stderr));

    let dump = |section: &str| {
        let out = mtf(&["dump", "-s", section, t]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).to_string()
    };
    // Every `i` line is an ipFrames of section ips, none is left in section heap.
    let d = dump("ips");
    assert_eq!(
        d.lines().filter(|l| l.starts_with("ipFrames ")).count(),
        ips,
        "{d}"
    );
    let heap = dump("heap");
    assert!(
        !heap.contains("ipFrames") && !heap.contains("traceNode"),
        "{heap}"
    );
    assert!(heap.contains("import_routed") || dump("global").contains("import_routed"));

    // Every `t` line is a traceRoot (parent 0) or a traceNode of section traces, in order.
    let d = dump("traces");
    let recs: Vec<&str> = d
        .lines()
        .filter(|l| l.starts_with("traceRoot ") || l.starts_with("traceNode "))
        .collect();
    assert_eq!(recs.len(), nodes.len(), "{d}");
    // Record offsets: tag (1 byte) + ip (8), + parent (4) for a traceNode.
    let mut offsets = Vec::new();
    let mut at = 0u64;
    for n in &nodes {
        offsets.push(at);
        at += if n.1 == 0 { 9 } else { 13 };
    }
    for (k, (rec, &(ip, parent))) in recs.iter().zip(&nodes).enumerate() {
        assert!(rec.contains(&format!(" ip={ip}")), "node {k}: {rec}");
        if parent == 0 {
            assert!(rec.starts_with("traceRoot "), "node {k}: {rec}");
            continue;
        }
        // `parent=@OFF:…`: the offset of the parent's record (the `parent`-th `t` line).
        let p = (parent - 1) as usize;
        let want = format!("parent=@{}:", offsets[p]);
        assert!(rec.contains(&want), "node {k}: {rec} lacks {want}");
    }
}

/// heaptrack writes an instruction pointer's frames as `i IP MODULE [FN FILE LINE [FN FILE
/// LINE]…]`: the first frame, then each frame inlined into it, innermost first. The first is
/// `function`, `file`, `line` of `ipFrames`, the others the items of its repeat `inl`, in
/// order, as read here from the text; export gives the recording back byte for byte.
#[test]
fn heaptrack_inlined_frames_are_items_of_a_repeat() {
    let mut items_seen = 0;
    for name in ["inlined.zst", "threads.zst"] {
        let input = util::root().join("tests/data/heaptrack-stacks").join(name);
        round_trip("heaptrack", &input);
        let text_in = String::from_utf8(plain(&input)).unwrap();
        if text_in.is_empty() {
            eprintln!("no zstd tool: the frames of {name} are not compared");
            continue;
        }
        // Per `i` line, in order: its frames after the first.
        let want: Vec<String> = text_in
            .lines()
            .filter_map(|l| l.strip_prefix("i "))
            .map(|l| {
                let w: Vec<u64> = l
                    .split(' ')
                    .map(|x| u64::from_str_radix(x, 16).unwrap())
                    .collect();
                let inl: Vec<String> = w
                    .get(5..)
                    .unwrap_or_default()
                    .chunks(3)
                    .map(|c| format!("{{function={} file={} line={}}}", c[0], c[1], c[2]))
                    .collect();
                items_seen += inl.len();
                format!("ninl={} inl=[{}]", inl.len(), inl.join(" "))
            })
            .collect();
        let dir = util::tempdir();
        let t = dir.path().join("t.mtf");
        let t = t.to_str().unwrap();
        let out = mtf(&["import", input.to_str().unwrap(), "-o", t]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let out = mtf(&["dump", "-s", "ips", t]);
        let d = text(&out.stdout).to_string();
        let got: Vec<&str> = d
            .lines()
            .filter(|l| l.starts_with("ipFrames "))
            .map(|l| &l[l.find(" ninl=").unwrap() + 1..])
            .collect();
        assert_eq!(got, want, "{name}");
    }
    assert!(items_seen >= 3, "the recordings have inlined frames");
}

/// A repeated group reads at most 4,096 items from a unit: a longer chain of frames stays a
/// raw line, which the import names, and export still gives the input back.
#[test]
fn heaptrack_frames_over_the_repeat_limit_stay_raw() {
    let dir = util::tempdir();
    let input = dir.path().join("long.txt");
    let over = format!("i 7f 8 c d 79{}\n", " 1 2 3".repeat(4097));
    let at = format!("i 7f 8 c d 79{}\n", " 1 2 3".repeat(4096));
    std::fs::write(&input, format!("v 10400 3\n{over}{at}")).unwrap();
    let (err, _) = round_trip("heaptrack", &input);
    assert!(err.contains("1 kept as raw lines"), "{err}");
    assert!(
        err.contains("long.txt:2: 4097 items of repeat `inl`, more than the limit of 4096"),
        "{err}"
    );
}
