//! Issue 19 item 5: a trace read from a pipe, a FIFO, standard input or a compressed file (gzip,
//! zstd, xz, bzip2; as a file or on standard input) gives exactly what the same trace gives as a
//! mapped file — the same standard output, standard error and exit status from `check`, `dump`,
//! `stats` and `info` — whether it is kept in memory or spooled to a temporary file
//! (`MTF_STREAM_WINDOW=0 MTF_SPOOL_ABOVE=0` spools even these small traces) or decoded as a
//! stream from a window (the default for `check`, `dump` and `stats`; `MTF_STREAM_WINDOW` as
//! small as 64 bytes, or odd sizes, so that records, metadata, repeats, byte strings and
//! section boundaries all cross refills), for every shipped trace (the split trace's tables
//! included) and for damaged ones. Memory itself is bounded by the spool or the window: see
//! tests/bounded_memory.rs.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::util;

const BIN: &str = env!("CARGO_BIN_EXE_mtf");

/// The commands compared, each given the trace as its last argument.
const COMMANDS: &[&[&str]] = &[&["check"], &["dump"], &["stats"], &["info"]];

/// How the trace reaches `mtf`.
enum Way<'a> {
    /// By path (a regular file, compressed or not, or a FIFO fed by a thread).
    Path(&'a Path),
    /// `-`, standard input a pipe fed with these bytes.
    Pipe(&'a [u8]),
    /// `-`, standard input this file (not a pipe: `mtf ... - < FILE`).
    Redirect(&'a Path),
    /// A FIFO at this path, fed with these bytes.
    Fifo(&'a Path, &'a [u8]),
}

/// Runs `mtf ARGS TRACE` with `MTF_SPOOL_ABOVE` set to `spool` (unset for `None`); with
/// `Some`, `MTF_STREAM_WINDOW=0` too, so that the spool is used rather than a stream.
fn run(args: &[&str], way: Way<'_>, spool: Option<&str>) -> Output {
    run_with(args, way, spool, None)
}

/// As [`run`], with `MTF_STREAM_WINDOW` set to `window` when given.
fn run_with(args: &[&str], way: Way<'_>, spool: Option<&str>, window: Option<&str>) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).current_dir(util::root());
    match spool {
        Some(v) => cmd.env("MTF_SPOOL_ABOVE", v).env("MTF_STREAM_WINDOW", "0"),
        None => cmd.env_remove("MTF_SPOOL_ABOVE"),
    };
    match window {
        Some(w) => cmd.env("MTF_STREAM_WINDOW", w),
        None if spool.is_none() => cmd.env_remove("MTF_STREAM_WINDOW"),
        None => &mut cmd,
    };
    match way {
        Way::Path(p) => cmd.arg(p).stdin(Stdio::null()).output().unwrap(),
        Way::Redirect(p) => cmd
            .arg("-")
            .stdin(std::fs::File::open(util::root().join(p)).unwrap())
            .output()
            .unwrap(),
        Way::Pipe(bytes) => util::output_with_stdin(cmd.arg("-"), bytes),
        Way::Fifo(p, bytes) => {
            let (fifo, data) = (p.to_path_buf(), bytes.to_vec());
            let feeder = std::thread::spawn(move || {
                // `mtf` opens the FIFO once; an error here (it exited early) is its own report.
                let _ = std::fs::write(fifo, data);
            });
            let out = cmd.arg(p).stdin(Stdio::null()).output().unwrap();
            feeder.join().unwrap();
            out
        }
    }
}

/// Standard output and error with the name the trace was given as replaced by `TRACE`.
fn normal(out: &Output, name: &str) -> (Option<i32>, String, String) {
    let fix = |b: &[u8]| {
        util::text(b)
            .replace(name, "TRACE")
            .replace("standard input", "TRACE")
            .replace("<stdin>", "TRACE")
    };
    (out.status.code(), fix(&out.stdout), fix(&out.stderr))
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// Every way of giving `mtf` the trace `bytes` (saved as `plain` already) gives the output the
/// plain file gives, for every command; `label` names the case in failures.
fn compare_every_way(label: &str, plain: &Path, bytes: &[u8], dir: &Path) {
    compare_every_way_as(label, plain, bytes, dir, false)
}

/// As [`compare_every_way`]; with `container_damaged`, a stream (which finds the damage only at
/// its end) must give the same exit status and the same container error, not the same output.
fn compare_every_way_as(
    label: &str,
    plain: &Path,
    bytes: &[u8],
    dir: &Path,
    container_damaged: bool,
) {
    let plain_name = plain.to_str().unwrap();
    let mut files = Vec::new();
    for kind in ["gz", "zst", "xz", "bz2"] {
        let packed = dir.join(format!("{label}.mtf.{kind}"));
        std::fs::write(&packed, util::compress(kind, bytes)).unwrap();
        files.push(packed);
    }
    #[cfg(unix)]
    let fifo = {
        let f = dir.join(format!("{label}.fifo"));
        mkfifo(&f);
        f
    };
    for args in COMMANDS {
        let reference = run(args, Way::Path(plain), None);
        let want = normal(&reference, plain_name);
        assert!(
            matches!(want.0, Some(0..=3)),
            "{label} {args:?}: {}",
            want.2
        );
        let mut got = Vec::new();
        for spool in [Some("0"), None] {
            got.push((
                format!("pipe, spool {spool:?}"),
                normal(&run(args, Way::Pipe(bytes), spool), plain_name),
            ));
            for f in &files {
                let name = f.to_str().unwrap();
                got.push((
                    format!("{name}, spool {spool:?}"),
                    normal(&run(args, Way::Path(f), spool), name),
                ));
            }
        }
        got.push((
            "redirect".into(),
            normal(&run(args, Way::Redirect(plain), Some("0")), plain_name),
        ));
        let zst = &files[1];
        got.push((
            "zstd on a pipe".into(),
            normal(
                &run(args, Way::Pipe(&std::fs::read(zst).unwrap()), Some("0")),
                plain_name,
            ),
        ));
        #[cfg(unix)]
        {
            let name = fifo.to_str().unwrap();
            got.push((
                "fifo".into(),
                normal(&run(args, Way::Fifo(&fifo, bytes), Some("0")), name),
            ));
        }
        for (way, g) in got {
            if container_damaged && way.contains("spool None") && args[0] != "info" {
                assert_same_container_error(&g, &want, &format!("{label} {args:?} by {way}"));
            } else {
                assert_eq!(g, want, "{label} {args:?} by {way}");
            }
        }
    }
}

/// The shipped traces whose DTD `mtf` finds without a path (built in), so that standard input
/// reads as the file does.
fn shipped() -> Vec<std::path::PathBuf> {
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
fn every_shipped_trace_reads_the_same_from_every_kind_of_input() {
    let dir = util::tempdir();
    for path in shipped() {
        let rel = path.strip_prefix(util::root()).unwrap().to_path_buf();
        let label = rel.file_stem().unwrap().to_str().unwrap().to_string();
        let bytes = std::fs::read(&path).unwrap();
        compare_every_way(&label, &rel, &bytes, dir.path());
    }
    // Nothing spooled is left in the folder of the test's own files.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".mtf"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A stream whose container turns out damaged at its end: the same exit status, and the
/// container error the file reports (the same text, offsets included) on standard error.
fn assert_same_container_error(
    got: &(Option<i32>, String, String),
    want: &(Option<i32>, String, String),
    what: &str,
) {
    if got == want {
        // A trace read whole (a DTD with tables, or one too short to stream) salvages as a file.
        return;
    }
    assert_eq!(got.0, want.0, "{what}: {got:?}");
    let error = want
        .1
        .lines()
        .chain(want.2.lines())
        .find(|l| l.contains("runs past the end"))
        .unwrap_or_else(|| panic!("{what}: no container error in {want:?}"));
    let error = error.split_once("section header").map_or(error, |(_, e)| e);
    assert!(
        got.1.contains(error) || got.2.contains(error),
        "{what}: `{error}` not in {got:?}"
    );
}

#[test]
fn damaged_traces_report_the_same_errors_and_offsets_from_every_kind_of_input() {
    let dir = util::tempdir();
    for name in ["hatf-split-le64", "hatf-le32"] {
        let bytes = std::fs::read(util::root().join(format!("traces/{name}.mtf"))).unwrap();
        // Cut short (a damaged container, salvaged), and a corrupted record byte.
        let cut = bytes[..bytes.len() - 7].to_vec();
        let mut flipped = bytes.clone();
        let at = bytes.len() - 20;
        flipped[at] ^= 0xff;
        for (what, b) in [("cut", cut), ("flipped", flipped)] {
            let label = format!("{name}-{what}");
            let plain = dir.path().join(format!("{label}.mtf"));
            std::fs::write(&plain, &b).unwrap();
            compare_every_way_as(&label, &plain, &b, dir.path(), what == "cut");
        }
    }
}

#[test]
fn a_spool_that_cannot_be_created_names_the_folder_and_exits_2() {
    let bytes = std::fs::read(util::root().join("traces/hatf-le32.mtf")).unwrap();
    let dir = util::tempdir();
    let missing = dir.path().join("no-such-folder");
    let out = util::output_with_stdin(
        Command::new(BIN)
            .args(["check", "-"])
            .current_dir(util::root())
            .env("MTF_SPOOL_ABOVE", "0")
            .env("MTF_STREAM_WINDOW", "0")
            .env("TMPDIR", &missing),
        &bytes,
    );
    let err = util::text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no-such-folder"), "{err}");
    // ... and says what to do.
    assert!(err.contains("set TMPDIR to a folder that exists"), "{err}");
    // A bad MTF_SPOOL_ABOVE is a usage error, not ignored.
    let out = Command::new(BIN)
        .args(["check", "traces/hatf-le32.mtf"])
        .current_dir(util::root())
        .env("MTF_SPOOL_ABOVE", "lots")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(util::text(&out.stderr).contains("MTF_SPOOL_ABOVE"));
    // An empty one counts as unset (it was refused as "MTF_SPOOL_ABOVE is , not a number").
    let out = Command::new(BIN)
        .args(["check", "traces/hatf-le32.mtf"])
        .current_dir(util::root())
        .env("MTF_SPOOL_ABOVE", "")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stderr));
}

#[test]
fn the_library_spools_and_reads_the_same_records() {
    use metatf::decode::Event;
    let path = util::root().join("traces/hatf-split-le64.mtf");
    let bytes = std::fs::read(&path).unwrap();
    let dir = util::tempdir();
    let zst = dir.path().join("t.mtf.zst");
    std::fs::write(&zst, util::compress("zst", &bytes)).unwrap();
    let spool_dir = dir.path().join("spool");
    std::fs::create_dir(&spool_dir).unwrap();
    let lines = |o: &metatf::Opened| {
        let reader = o.reader();
        let mut records = reader.records();
        let mut v = Vec::new();
        while let Some(e) = records.next() {
            v.push(match e {
                Event::Record(r) => format!("{} {} {:?}", r.offset(), r.name(), r.len()),
                Event::Problem(p) => p.to_string(),
                Event::Damage(d) => d.to_string(),
            });
        }
        v
    };
    let file = metatf::open(&path).unwrap();
    let spooled = metatf::OpenOptions::new()
        .spool_above(0)
        .spool_dir(&spool_dir)
        .open(&zst)
        .unwrap();
    assert_eq!(lines(&spooled), lines(&file));
    assert_eq!(spooled.trace().bytes(), &bytes[..]);
    // The spool is unlinked at once: the folder is empty while the trace is open.
    assert_eq!(std::fs::read_dir(&spool_dir).unwrap().count(), 0);
    // Compressed bytes given in memory are spooled too, and read the same.
    let again = metatf::OpenOptions::new()
        .spool_above(0)
        .spool_dir(&spool_dir)
        .open_bytes(util::compress("xz", &bytes))
        .unwrap();
    assert_eq!(lines(&again), lines(&file));
    // The cap still bounds what a stream may hold.
    let err = metatf::OpenOptions::new()
        .spool_above(0)
        .max_input_bytes(100)
        .open(&zst)
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            metatf::OpenError::Io(metatf::io::IoError::InputTooLarge { cap: 100, .. })
        ),
        "{err:?}"
    );
}

// ---- traces over 4 GiB (header integers of 8 bytes, docs/format.md §2.1) ----

/// A DTD with a record that carries a byte string as long as its 8-byte `n` says.
const BIG_DTD: &str = "
    tag.width = 1;
    n.width = 8;   n.interpretation = none;
    x.width = 4;   x.interpretation = none;
    blob : (tag, n, data) { tag.value = 4; data.width = n.value; data.interpretation = none; }
    section main 1 {
        r : (tag, x) { tag.value = 5; }
    }
";

/// Bytes of the blob: past 4 GiB, so that the records after it lie beyond offset 2³².
const BLOB: u64 = (1 << 32) + 4099;

/// Writes `big.mtf` in `dir`: in the global region a blob record (its bytes a hole of a sparse
/// file, no disk used), then section 1 with records `r` with `x` = 0..10, all past 4 GiB (the
/// section's start needs 8-byte header integers); returns its path.
#[cfg(target_pointer_width = "64")]
fn sparse_big_trace(dir: &Path) -> std::path::PathBuf {
    use metatf::container::{ByteOrder, Class, Header};
    use std::io::{Seek, SeekFrom};
    std::fs::write(dir.join("big.dtd"), BIG_DTD).unwrap();
    let mut tail = vec![2, 1];
    tail.extend((0..10u32).flat_map(|x| [vec![5], x.to_le_bytes().to_vec()].concat()));
    let global = 1 + 8 + BLOB;
    let header = Header::encode(
        Class::Bits64,
        ByteOrder::Little,
        "big.dtd",
        12,
        global,
        &[(1, tail.len() as u64)],
    )
    .unwrap();
    assert_eq!(header[7], 8, "intwidth 8 for a region over 4 GiB");
    let path = dir.join("big.mtf");
    let mut f = std::fs::File::create(&path).unwrap();
    f.write_all(&header).unwrap();
    f.write_all(&[4]).unwrap();
    f.write_all(&BLOB.to_le_bytes()).unwrap();
    f.seek(SeekFrom::Current(BLOB as i64)).unwrap();
    f.write_all(&tail).unwrap();
    path
}

#[cfg(target_pointer_width = "64")]
#[test]
fn a_trace_over_4_gib_is_read_with_64_bit_offsets() {
    use metatf::decode::Event;
    let dir = util::tempdir();
    let path = sparse_big_trace(dir.path());
    let opened = metatf::open(&path).unwrap();
    assert_eq!(opened.trace().header().int_width, 8);
    let reader = opened.reader();
    let mut records = reader.records();
    let mut seen = Vec::new();
    while let Some(e) = records.next() {
        match e {
            Event::Record(r) => {
                let last = r.fields().last().unwrap();
                seen.push((r.offset(), r.name().to_string(), last.as_u64()));
            }
            other => panic!("{other:?}"),
        }
    }
    let start = opened.trace().bytes().len() as u64 - 52 - 9 - BLOB;
    assert_eq!(seen[0], (start, "blob".to_string(), None));
    assert_eq!(seen[1].0, start + 9 + BLOB);
    assert_eq!(opened.trace().sections().regions().count(), 1);
    for (i, (offset, name, x)) in seen[2..].iter().enumerate() {
        assert_eq!(*offset, start + 9 + BLOB + 2 + 5 * i as u64);
        assert!(*offset > 1 << 32);
        assert_eq!((name.as_str(), *x), ("r", Some(i as u64)));
    }
    assert_eq!(seen.len(), 12);
    // The command line: valid, and the offsets past 4 GiB shown as they are.
    let out = util::mtf(&["check", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stderr));
    let out = util::mtf(&["info", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stderr));
}

/// The same trace through a pipe: spooled (4 GiB of disk for a moment), read the same.
/// Ignored by default for the disk and time it takes; run with
/// `cargo test --release --test integration over_4_gib_through -- --ignored`.
#[cfg(target_pointer_width = "64")]
#[test]
#[ignore = "writes 4 GiB to the temporary folder"]
fn a_trace_over_4_gib_through_a_pipe_is_spooled_and_read() {
    let dir = util::tempdir();
    let path = sparse_big_trace(dir.path());
    let file = util::mtf(&[
        "check",
        "--dtd",
        dir.path().join("big.dtd").to_str().unwrap(),
        path.to_str().unwrap(),
    ]);
    let piped = Command::new("sh")
        .args(["-c", "cat \"$T\" | \"$MTF\" check --dtd \"$D\" -"])
        .env("T", &path)
        .env("D", dir.path().join("big.dtd"))
        .env("MTF", BIN)
        .output()
        .unwrap();
    assert_eq!(
        piped.status.code(),
        Some(0),
        "{}",
        util::text(&piped.stderr)
    );
    assert_eq!(
        util::text(&piped.stdout).replace("standard input", "T"),
        util::text(&file.stdout).replace(path.to_str().unwrap(), "T")
    );
}
