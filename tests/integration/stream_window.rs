//! Issue 19 item 5: a piped or compressed trace is decoded as a stream from a bounded window
//! (`metatf::stream`), and every subcommand that reads it so gives byte for byte what the same
//! trace gives as a file — standard output, standard error (offsets included) and exit status —
//! with the window forced tiny (64 bytes) or to odd sizes (97, 1000), so that records, metadata,
//! repeats, byte strings and section boundaries cross refills, and records longer than half a
//! window make it grow and resume. Traces: every shipped one, each with a byte flipped in its
//! records, and the same compacted with live sets (extension live/1: metadata changes
//! mid-section and live-set state carried across refills).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::util;

const BIN: &str = env!("CARGO_BIN_EXE_mtf");

/// The commands compared, each given the trace as its last argument.
const COMMANDS: &[&[&str]] = &[
    &["check"],
    &["check", "--no-semantic"],
    &["dump"],
    &["dump", "--format", "jsonl"],
    &["dump", "-n", "3"],
    &["dump", "--skip", "5", "--offsets"],
    &["stats"],
];

/// Where the DTDs of the traces are looked up when not beside them (standard input, the
/// compressed copies in a temporary folder): `traces/` and the independent reader's cases.
fn dtds() -> std::ffi::OsString {
    std::env::join_paths([
        util::root().join("traces"),
        util::root().join("tests/independent/t"),
    ])
    .unwrap()
}

/// `mtf ARGS PATH`, or `mtf ARGS -` with `stdin` on a pipe, with `MTF_STREAM_WINDOW=window`.
fn run(args: &[&str], path: Option<&Path>, stdin: &[u8], window: &str) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .current_dir(util::root())
        .env("MTF_DTD_PATH", dtds())
        .env("MTF_STREAM_WINDOW", window)
        .env_remove("MTF_SPOOL_ABOVE");
    if let Some(p) = path {
        return cmd.arg(p).stdin(Stdio::null()).output().unwrap();
    }
    util::output_with_stdin(cmd.arg("-"), stdin)
}

/// Exit status, standard output and error, with the trace's name replaced by `TRACE`; on
/// standard error, the lines a message was wrapped into (where, depends on the name's length)
/// joined again.
fn normal(out: &Output, name: &str) -> (Option<i32>, String, String) {
    let fix = |b: &[u8]| {
        util::text(b)
            .replace(name, "TRACE")
            .replace("standard input", "TRACE")
            .replace("<stdin>", "TRACE")
    };
    let unwrap = |s: String| {
        s.replace('│', " ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    (
        out.status.code(),
        fix(&out.stdout),
        unwrap(fix(&out.stderr)),
    )
}

/// Every command gives the same from `plain` (a file) as from a pipe and from compressed files
/// and pipes, at every window size.
fn compare(label: &str, plain: &Path, dir: &Path) {
    let bytes = std::fs::read(plain).unwrap();
    let name = plain.to_str().unwrap();
    let zst = dir.join(format!("{label}.mtf.zst"));
    std::fs::write(&zst, util::compress("zst", &bytes)).unwrap();
    let gz = util::compress("gz", &bytes);
    let xz = dir.join(format!("{label}.mtf.xz"));
    std::fs::write(&xz, util::compress("xz", &bytes)).unwrap();
    for args in COMMANDS {
        let want = normal(&run(args, Some(plain), &[], "0"), name);
        assert!(matches!(want.0, Some(0..=3)), "{label} {args:?}: {want:?}");
        for window in ["64", "97", "1000", "4194304"] {
            let mut got = vec![
                ("pipe", normal(&run(args, None, &bytes, window), name)),
                (
                    "zst file",
                    normal(&run(args, Some(&zst), &[], window), zst.to_str().unwrap()),
                ),
            ];
            if window == "97" {
                got.push(("gz pipe", normal(&run(args, None, &gz, window), name)));
                got.push((
                    "xz file",
                    normal(&run(args, Some(&xz), &[], window), xz.to_str().unwrap()),
                ));
            }
            for (way, g) in got {
                assert_eq!(g, want, "{label} {args:?} by {way}, window {window}");
            }
        }
    }
}

fn shipped() -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(util::root().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtf"))
        .collect();
    v.sort();
    assert!(v.len() >= 10, "{v:?}");
    v
}

#[test]
fn every_shipped_trace_streams_as_it_reads_from_a_file_at_any_window() {
    let dir = util::tempdir();
    for path in shipped() {
        let label = path.file_stem().unwrap().to_str().unwrap().to_string();
        compare(&label, &path, dir.path());
    }
}

#[test]
fn damaged_records_stream_with_the_same_problems_and_offsets() {
    let dir = util::tempdir();
    for path in shipped() {
        let label = format!("{}-flipped", path.file_stem().unwrap().to_str().unwrap());
        let mut bytes = std::fs::read(&path).unwrap();
        // A byte two thirds into the file: a record's tag, length or value.
        let at = bytes.len() * 2 / 3;
        bytes[at] ^= 0xff;
        let plain = dir.path().join(format!("{label}.mtf"));
        std::fs::write(&plain, &bytes).unwrap();
        compare(&label, &plain, dir.path());
    }
}

/// The independent reader's cases (tests/independent/t): metadata changes mid-section,
/// repeats, byte strings, sections, and live sets (extension live/1: t12, t13, t16, t17, whose
/// live-set state crosses refills), valid and invalid alike.
#[test]
fn spec_cases_and_live_set_traces_stream_with_their_state_across_refills() {
    let dir = util::tempdir();
    let mut cases: Vec<_> = std::fs::read_dir(util::root().join("tests/independent/t"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtf"))
        .collect();
    cases.sort();
    let live = cases
        .iter()
        .filter(|p| std::fs::read(p).unwrap().get(8) == Some(&1))
        .count();
    assert!(live >= 3, "{live} live/1 traces among {cases:?}");
    for path in cases {
        let label = path.file_stem().unwrap().to_str().unwrap().to_string();
        compare(&label, &path, dir.path());
    }
}

#[test]
fn a_stream_writes_nothing_to_the_temporary_folder() {
    let bytes = std::fs::read(util::root().join("traces/hatf-le32.mtf")).unwrap();
    let dir = util::tempdir();
    let missing = dir.path().join("no-such-folder");
    for args in [&["check"][..], &["dump"], &["stats"]] {
        let out = util::output_with_stdin(
            Command::new(BIN)
                .args(args)
                .arg("-")
                .current_dir(util::root())
                // Everything that is not mapped would be spooled, were it not streamed.
                .env("MTF_SPOOL_ABOVE", "0")
                .env_remove("MTF_STREAM_WINDOW")
                .env("TMPDIR", &missing),
            &bytes,
        );
        assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stderr));
    }
    // A bad MTF_STREAM_WINDOW is a usage error.
    let out = util::mtf_stdin(&["check", "-"], &bytes);
    assert_eq!(out.status.code(), Some(0));
    let out = Command::new(BIN)
        .args(["check", "traces/hatf-le32.mtf"])
        .current_dir(util::root())
        .env("MTF_STREAM_WINDOW", "big")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(util::text(&out.stderr).contains("MTF_STREAM_WINDOW"));
}

#[test]
fn a_stream_cut_short_reports_the_container_error_of_the_file() {
    let dir = util::tempdir();
    for name in ["hatf-le32", "hatf-be64", "malloclab"] {
        let bytes = std::fs::read(util::root().join(format!("traces/{name}.mtf"))).unwrap();
        for cut in [1, 7, bytes.len() / 2] {
            let short = &bytes[..bytes.len() - cut];
            // The error a file opened without salvage gives: `stats` opens so.
            let plain = dir.path().join(format!("{name}-{cut}.mtf"));
            std::fs::write(&plain, short).unwrap();
            let want = normal(
                &run(&["stats"], Some(&plain), &[], "0"),
                plain.to_str().unwrap(),
            );
            assert_eq!(want.0, Some(1), "{want:?}");
            for window in ["64", "97", "4194304"] {
                let got = normal(
                    &run(&["stats"], None, short, window),
                    plain.to_str().unwrap(),
                );
                assert_eq!(got, want, "{name} cut by {cut}, window {window}");
                // `check` and `dump` (which salvage a file) say the same error, status 1.
                for args in [&["check"][..], &["dump"]] {
                    let got = normal(&run(args, None, short, window), "x");
                    assert_eq!(got.0, Some(1), "{args:?} {got:?}");
                    // The message, without its code and help.
                    let error = want.2.split_once("× ").map_or(&*want.2, |(_, e)| e);
                    let error = error.split(" help:").next().unwrap().trim();
                    // `stats` salvages as `check` and `dump` do, and says so.
                    let error = error.split(" (showing the records").next().unwrap().trim();
                    assert!(
                        got.1.contains(error) || got.2.contains(error),
                        "{args:?}: {error} in {got:?}"
                    );
                }
                // `dump` gives the records of the salvaged file, then the error: nothing the
                // bytes hold is lost because the damage shows only at the stream's end.
                let file = normal(
                    &run(&["dump"], Some(&plain), &[], "0"),
                    plain.to_str().unwrap(),
                );
                let got = normal(
                    &run(&["dump"], None, short, window),
                    plain.to_str().unwrap(),
                );
                assert_eq!(
                    got.1, file.1,
                    "dump of {name} cut by {cut}, window {window}"
                );
            }
        }
        // Bytes after the last section: found once the stream has ended.
        let mut long = bytes.clone();
        long.extend_from_slice(b"xyz");
        let plain = dir.path().join(format!("{name}-long.mtf"));
        std::fs::write(&plain, &long).unwrap();
        let want = normal(
            &run(&["stats"], Some(&plain), &[], "0"),
            plain.to_str().unwrap(),
        );
        assert_eq!(want.0, Some(1), "{want:?}");
        let got = normal(&run(&["stats"], None, &long, "64"), plain.to_str().unwrap());
        // The salvaged file decodes the bytes after its last section as records of it (one
        // problem more); the stream, which finds them after that section has ended, does not.
        let figures = |s: &str| {
            s.lines()
                .filter(|l| !l.starts_with("problems "))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(got.0, want.0, "{name} with bytes after its last section");
        assert_eq!(
            figures(&got.1),
            figures(&want.1),
            "{name} with bytes after its last section"
        );
        assert_eq!(got.2, want.2, "{name} with bytes after its last section");
        let file = normal(
            &run(&["dump"], Some(&plain), &[], "0"),
            plain.to_str().unwrap(),
        );
        let got = normal(&run(&["dump"], None, &long, "64"), plain.to_str().unwrap());
        assert_eq!(
            got.1, file.1,
            "dump of {name} with bytes after its last section"
        );
        assert_eq!(got.0, Some(1));
    }
}

#[test]
fn the_library_streams_the_events_a_file_gives() {
    use metatf::decode::{Event, EventStream};
    use metatf::events::{read, EventOptions};
    use metatf::stream::StreamError;
    let dir = util::tempdir();
    for path in shipped() {
        let bytes = std::fs::read(&path).unwrap();
        let zst = dir.path().join("t.mtf.zst");
        std::fs::write(&zst, util::compress("zst", &bytes)).unwrap();
        let lines = |events: &mut dyn EventStream| {
            let mut v = Vec::new();
            while let Some(e) = events.next_event() {
                v.push(match e {
                    Event::Record(r) => {
                        let fields: Vec<String> =
                            r.fields().map(|f| format!("{:?}", f.value())).collect();
                        format!("{} {} {:?} {fields:?}", r.offset(), r.name(), r.len())
                    }
                    Event::Problem(p) => p.to_string(),
                    Event::Damage(d) => d.to_string(),
                });
            }
            v
        };
        let file = metatf::open(&path).unwrap();
        let want = lines(&mut file.reader().records());
        for window in [64, 97, 4096] {
            let opened = metatf::OpenOptions::new()
                .stream_window(window)
                .open(&zst)
                .unwrap();
            if !opened.is_streamed() {
                // A DTD with tables: spooled, read whole.
                assert_eq!(opened.trace().bytes(), &bytes[..]);
                continue;
            }
            assert!(opened.trace().bytes().len() < bytes.len());
            let reader = opened.reader();
            let (got, end) = read(&opened, &reader, &EventOptions::new(), |_| {}, lines);
            assert_eq!(got, want, "{path:?} window {window}");
            assert!(end.fault.is_none());
            assert_eq!(end.stream.map(|s| s.bytes), Some(bytes.len() as u64));
            // Given once: a second read has no events and says why.
            let (again, end) = read(&opened, &reader, &EventOptions::new(), |_| {}, lines);
            assert!(again.is_empty());
            assert!(matches!(end.fault, Some(StreamError::ReadAlready)));
        }
    }
}

/// The events of `events` as lines: each record with its offset, length and values; problems
/// and damage as they read.
fn event_lines(events: &mut dyn metatf::decode::EventStream) -> Vec<String> {
    use metatf::decode::Event;
    let mut v = Vec::new();
    while let Some(e) = events.next_event() {
        v.push(match e {
            Event::Record(r) => {
                let fields: Vec<String> = r.fields().map(|f| format!("{:?}", f.value())).collect();
                format!("{} {} {} {fields:?}", r.offset(), r.name(), r.len())
            }
            Event::Problem(p) => p.to_string(),
            Event::Damage(d) => d.to_string(),
        });
    }
    v
}

/// How many random traces were streamed (not read whole).
static STREAMED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A random DTD and trace (the generators of roundtrip_prop.rs), maybe with bytes flipped or cut
/// off: streamed from a gzip file at `window` bytes, the same events as the file, or the file's
/// container error at the end.
fn random_stream_matches_file(seed: u64, flips: &[(usize, u8)], cut: usize, window: usize) {
    use crate::roundtrip_prop::{random_dtd, random_trace};
    let mut r = util::Rng(seed | 1);
    let dtd = random_dtd(&mut r);
    let schema = metatf::dtd::parse_str("random.dtd", &dtd).unwrap().schema;
    let mut bytes = random_trace(&mut r, &schema);
    for &(at, x) in flips {
        if !bytes.is_empty() {
            let i = at % bytes.len();
            bytes[i] ^= x | 1;
        }
    }
    bytes.truncate(bytes.len() - cut % (bytes.len() / 4 + 1));
    let dir = util::tempdir();
    let dtd_path = dir.path().join("random.dtd");
    std::fs::write(&dtd_path, &dtd).unwrap();
    std::fs::create_dir(dir.path().join("a")).unwrap();
    std::fs::create_dir(dir.path().join("b")).unwrap();
    let (plain, gz) = (dir.path().join("a/t.mtf"), dir.path().join("b/t.mtf"));
    std::fs::write(&plain, &bytes).unwrap();
    std::fs::write(&gz, util::compress("gz", &bytes)).unwrap();
    let file = metatf::OpenOptions::new().dtd(&dtd_path).open(&plain);
    let streamed = metatf::OpenOptions::new()
        .dtd(&dtd_path)
        .stream_window(window)
        .open(&gz);
    let name = |s: String| {
        s.replace("/a/t.mtf", "/t.mtf")
            .replace("/b/t.mtf", "/t.mtf")
    };
    match (file, streamed) {
        (Err(a), Err(b)) => assert_eq!(name(a.to_string()), name(b.to_string())),
        (file, Ok(s)) => {
            if !s.is_streamed() {
                // Read whole (tables, or too short to stream): as a file.
                match file {
                    Ok(f) => assert_eq!(
                        event_lines(&mut s.reader().records()),
                        event_lines(&mut f.reader().records())
                    ),
                    Err(e) => panic!("the file fails ({e}), the stream opens"),
                }
                return;
            }
            STREAMED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let reader = s.reader();
            let options = metatf::events::EventOptions::new();
            let (got, end) = metatf::events::read(&s, &reader, &options, |_| {}, event_lines);
            match (file, end.fault.as_ref()) {
                (Ok(f), None) => assert_eq!(got, event_lines(&mut f.reader().records())),
                // A metadata record that makes a field a reference: what a stream cannot read
                // (reached before the end, where a damaged container would be found).
                (_, Some(metatf::stream::StreamError::RandomAccess { .. })) => {}
                (Err(a), Some(b)) => assert_eq!(name(a.to_string()), name(b.to_string())),
                (f, fault) => panic!(
                    "file {:?}, stream fault {fault:?}",
                    f.as_ref().map(|_| ()).map_err(|e| e.to_string())
                ),
            }
        }
        (Ok(_), Err(b)) => panic!("the file opens, the stream fails: {b}"),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64),
        ..proptest::prelude::ProptestConfig::default()
    })]
    #[test]
    fn random_traces_stream_as_they_read_from_a_file(
        seed in proptest::prelude::any::<u64>(),
        flips in proptest::collection::vec(
            (proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>()),
            0..3,
        ),
        cut in 0usize..8,
        window in proptest::sample::select(vec![1usize, 7, 64, 97, 1000]),
    ) {
        random_stream_matches_file(seed, &flips, cut, window);
    }
}
