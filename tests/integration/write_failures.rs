//! Writers lose nothing (issue 20 item 6, docs/robustness.md): every command that writes a file
//! (pack, compact with and without --split, import, export, export --to parquet, report, plot,
//! stats, diff, simulate, replay, index) is run by
//! its binary under
//! a full disk (RLIMIT_FSIZE, so that writes fail with EFBIG, and /dev/full), an unwritable
//! folder, input that turns bad half-way, and SIGINT/SIGTERM while writing. Each time the
//! existing output is untouched, no partial or temporary file is left (in the output's folder
//! or in TMPDIR), and the exit status says what happened (src/cli/exit.rs: 1 invalid input,
//! 2 I/O, 130/143 signals).

// Unsafe code: `libc` calls in the child before `exec` (limits, user ids).
#![allow(unsafe_code)]

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::util;

const BIN: &str = env!("CARGO_BIN_EXE_mtf");
const OLD: &[u8] = b"the output of an earlier run, which must survive\n";

/// Large inputs, made once per test in its own folder.
struct Inputs {
    dir: tempfile::TempDir,
    /// The text form of 100,000 allocations (4.5 MB).
    text: PathBuf,
    /// Its trace (1 MB).
    trace: PathBuf,
    /// A glibc mtrace log of 100,000 allocations (5 MB).
    mtrace: PathBuf,
    /// Its import (1.2 MB).
    imported: PathBuf,
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn text_lines(n: usize) -> Vec<String> {
    let mut lines = vec![
        "%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little".to_string(),
        "section 1".to_string(),
    ];
    for i in 0..n {
        lines.push(format!(
            "alloc size={} address={} vfield.data=\"\"",
            i % 200,
            4096 + 16 * i
        ));
    }
    lines
}

fn mtrace_lines(n: usize) -> Vec<String> {
    let mut lines = vec!["= Start".to_string()];
    for i in 0..n {
        lines.push(format!(
            "@ /tmp/alloc/allocs:[0x231f] + 0x{:x} 0x{:x}",
            0x5608_b2ca_b2a0u64 + 32 * i as u64,
            16 + i % 64
        ));
    }
    lines
}

fn inputs() -> Inputs {
    let dir = util::tempdir();
    // Readable by the unprivileged user the unwritable-folder test may run as.
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let text = dir.path().join("big.txt");
    fs::write(&text, text_lines(100_000).join("\n") + "\n").unwrap();
    let mtrace = dir.path().join("big.mtrace");
    fs::write(&mtrace, mtrace_lines(100_000).join("\n") + "\n= End\n").unwrap();
    let trace = dir.path().join("big.mtf");
    let imported = dir.path().join("imported.mtf");
    for args in [
        vec![
            "pack",
            "--dtd",
            "dtds/hatf10.dtd",
            s(&text),
            "-o",
            s(&trace),
        ],
        vec!["import", "--from", "mtrace", s(&mtrace), "-o", s(&imported)],
    ] {
        let out = util::mtf(&args);
        assert!(out.status.success(), "{}", util::text(&out.stderr));
    }
    for p in [&text, &mtrace, &trace, &imported] {
        fs::set_permissions(p, fs::Permissions::from_mode(0o644)).unwrap();
    }
    Inputs {
        dir,
        text,
        trace,
        mtrace,
        imported,
    }
}

/// A command that writes, with the output's file name (a folder for Parquet).
struct Writer {
    name: &'static str,
    args: Vec<String>,
    /// The output: a file name, or a folder and the file it holds.
    out: &'static str,
    folder_output: bool,
    /// Whether it can write a device (`-o /dev/full`) and standard output (`-o -`): a picture
    /// of `simulate` is named by its extension.
    device: bool,
    /// The file size limit under which it must fail: below its output's size.
    limit: u64,
}

impl Writer {
    /// The arguments with the output at `out`.
    fn args_to(&self, out: &str) -> Vec<String> {
        let mut a = self.args.clone();
        a.push("-o".into());
        a.push(out.into());
        a
    }
}

fn writers(i: &Inputs) -> Vec<Writer> {
    let w = |name, args: &[&str], out, folder_output| Writer {
        name,
        args: args.iter().map(|s| s.to_string()).collect(),
        out,
        folder_output,
        device: true,
        limit: 4 << 10,
    };
    vec![
        w(
            "pack",
            &["pack", "--dtd", "dtds/hatf10.dtd", s(&i.text)],
            "out.mtf",
            false,
        ),
        w("compact", &["compact", s(&i.trace)], "out.mtf", false),
        // With its derived DTD written beside the trace (when the streams pay).
        Writer {
            device: false,
            ..w(
                "compact --split",
                &["compact", "--split", s(&i.trace)],
                "out.mtf",
                false,
            )
        },
        w(
            "import",
            &["import", "--from", "mtrace", s(&i.mtrace)],
            "out.mtf",
            false,
        ),
        w("export", &["export", s(&i.imported)], "out.mtrace", false),
        w(
            "export --to parquet",
            &["export", "--to", "parquet", s(&i.trace)],
            "alloc.parquet",
            true,
        ),
        w("report", &["report", s(&i.trace)], "out.html", false),
        w(
            "plot",
            &["plot", "--format", "svg", s(&i.trace)],
            "out.svg",
            false,
        ),
        w(
            "stats",
            &["stats", "--format", "json", s(&i.trace)],
            "out.json",
            false,
        ),
        Writer {
            device: false,
            ..w("simulate", &["simulate", s(&i.trace)], "out.svg", false)
        },
        // Its picture, named by its extension (one run: the replay itself is not the point).
        Writer {
            device: false,
            ..w(
                "replay",
                &["replay", "--repeat", "1", s(&i.trace)],
                "out.svg",
                false,
            )
        },
        w(
            "diff",
            &["diff", "--format", "json", s(&i.trace), s(&i.imported)],
            "out.json",
            false,
        ),
        // The seek index of 100,000 records is 124 bytes.
        Writer {
            limit: 64,
            ..w("index", &["index", s(&i.trace)], "out.idx", false)
        },
    ]
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A folder holding an earlier output; returns (the folder, the `-o` argument, the old file).
fn with_old_output(root: &Path, w: &Writer) -> (PathBuf, String, PathBuf) {
    let folder = root.join(w.name.replace(' ', "_"));
    fs::create_dir(&folder).unwrap();
    fs::set_permissions(&folder, fs::Permissions::from_mode(0o755)).unwrap();
    let old = folder.join(w.out);
    fs::write(&old, OLD).unwrap();
    if w.folder_output {
        // An earlier export of the same trace (the last argument), which an export replaces.
        let trace = fs::canonicalize(w.args.last().unwrap()).unwrap();
        fs::write(folder.join(".mtf-export"), format!("{}\n", trace.display())).unwrap();
    }
    let arg = if w.folder_output {
        format!("{}/", folder.display())
    } else {
        old.display().to_string()
    };
    (folder, arg, old)
}

/// The checks every failure shares: the status, the old output intact, nothing else in its
/// folder or in the child's TMPDIR.
fn assert_lost_nothing(w: &Writer, out: &Output, code: i32, folder: &Path, old: &Path, tmp: &Path) {
    let stderr = util::text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{}: {stderr}", w.name);
    assert_eq!(
        fs::read(old).unwrap(),
        OLD,
        "{}: the old output changed",
        w.name
    );
    let mut expected = vec![w.out];
    if w.folder_output {
        expected.insert(0, ".mtf-export");
    }
    assert_eq!(
        entries(folder),
        expected,
        "{}: left behind in the output's folder ({stderr})",
        w.name
    );
    assert!(
        entries(tmp).is_empty(),
        "{}: left in TMPDIR: {:?}",
        w.name,
        entries(tmp)
    );
}

fn command(args: &[String], tmp: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .current_dir(util::root())
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn tmpdir(root: &Path) -> PathBuf {
    let t = root.join("tmp");
    fs::create_dir_all(&t).unwrap();
    fs::set_permissions(&t, fs::Permissions::from_mode(0o777)).unwrap();
    t
}

#[test]
fn a_full_disk_leaves_the_old_output_and_exits_2() {
    let i = inputs();
    let tmp = tmpdir(i.dir.path());
    for w in writers(&i) {
        let (folder, arg, old) = with_old_output(i.dir.path(), &w);
        let mut c = command(&w.args_to(&arg), &tmp);
        let size = w.limit;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            c.pre_exec(move || {
                // Files may grow to 4 KiB (64 bytes for the index): every output here is
                // larger. SIGXFSZ is ignored, so that a write past the limit fails with EFBIG
                // instead of killing.
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let limit = libc::rlimit {
                    rlim_cur: size,
                    rlim_max: size,
                };
                if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = c.output().unwrap();
        assert_lost_nothing(&w, &out, 2, &folder, &old, &tmp);
        let e = util::text(&out.stderr);
        assert!(e.contains("too large"), "{}: {e}", w.name);
    }
}

#[test]
fn a_full_standard_output_or_device_exits_2() {
    let i = inputs();
    let tmp = tmpdir(i.dir.path());
    for w in writers(&i).into_iter().filter(|w| w.device) {
        // `-o /dev/full`: the device is written directly, and its error names it.
        let target = if w.folder_output {
            "/dev/full/"
        } else {
            "/dev/full"
        };
        let out = command(&w.args_to(target), &tmp).output().unwrap();
        let e = util::text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {e}", w.name);
        if !w.folder_output {
            assert!(
                e.contains("/dev/full") && e.contains("No space left on device"),
                "{}: {e}",
                w.name
            );
            // `-o -` with standard output full.
            let out = command(&w.args_to("-"), &tmp)
                .stdout(fs::File::create("/dev/full").unwrap())
                .output()
                .unwrap();
            let e = util::text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{} -o -: {e}", w.name);
            assert!(
                e.contains("No space left on device"),
                "{} -o -: {e}",
                w.name
            );
        }
        assert!(entries(&tmp).is_empty(), "{}: {:?}", w.name, entries(&tmp));
    }
}

#[test]
fn an_unwritable_folder_leaves_the_old_output_and_exits_2() {
    let i = inputs();
    let tmp = tmpdir(i.dir.path());
    // SAFETY: reading the effective user id has no side effects.
    let root_user = unsafe { libc::geteuid() } == 0;
    for w in writers(&i) {
        let (folder, arg, old) = with_old_output(i.dir.path(), &w);
        fs::set_permissions(&old, fs::Permissions::from_mode(0o644)).unwrap();
        fs::set_permissions(&folder, fs::Permissions::from_mode(0o555)).unwrap();
        let mut c = command(&w.args_to(&arg), &tmp);
        if root_user {
            // The superuser may write anywhere: the child runs as `nobody`.
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                c.pre_exec(|| {
                    if libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(65534) != 0
                        || libc::setuid(65534) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let out = c.output().unwrap();
        fs::set_permissions(&folder, fs::Permissions::from_mode(0o755)).unwrap();
        assert_lost_nothing(&w, &out, 2, &folder, &old, &tmp);
        let e = util::text(&out.stderr);
        assert!(e.contains("Permission denied"), "{}: {e}", w.name);
    }
}

#[test]
fn input_that_turns_bad_half_way_leaves_the_old_output_and_exits_1() {
    let i = inputs();
    let tmp = tmpdir(i.dir.path());
    // pack: a line that names no record type, half-way.
    let mut lines = text_lines(100_000);
    lines[50_000] = "allok size=1 address=2 vfield.data=\"\"".into();
    let bad_text = i.dir.path().join("bad.txt");
    fs::write(&bad_text, lines.join("\n") + "\n").unwrap();
    // compact: a trace whose records turn to garbage half-way.
    let mut bytes = fs::read(&i.trace).unwrap();
    let half = bytes.len() / 2;
    bytes[half..half + 64].fill(0xee);
    let bad_trace = i.dir.path().join("bad.mtf");
    fs::write(&bad_trace, &bytes).unwrap();
    // import: a gzip stream corrupt half-way (the mapped lines before it are fine).
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all((mtrace_lines(100_000).join("\n") + "\n").as_bytes())
        .unwrap();
    let mut gz = gz.finish().unwrap();
    let half = gz.len() / 2;
    gz[half..half + 64].fill(0x55);
    let bad_gz = i.dir.path().join("bad.mtrace.gz");
    fs::write(&bad_gz, &gz).unwrap();
    let cases: [(&str, Vec<&str>, &str); 3] = [
        (
            "pack",
            vec!["pack", "--dtd", "dtds/hatf10.dtd", s(&bad_text)],
            "bad.txt:50001:1: no record type `allok`",
        ),
        ("compact", vec!["compact", s(&bad_trace)], "bad.mtf"),
        (
            "import",
            vec!["import", "--from", "mtrace", s(&bad_gz)],
            "bad.mtrace.gz",
        ),
    ];
    for (name, args, said) in cases {
        let w = Writer {
            name,
            args: args.iter().map(|s| s.to_string()).collect(),
            out: "out.mtf",
            folder_output: false,
            device: true,
            limit: 0,
        };
        let (folder, arg, old) = with_old_output(i.dir.path(), &w);
        let out = command(&w.args_to(&arg), &tmp).output().unwrap();
        assert_lost_nothing(&w, &out, 1, &folder, &old, &tmp);
        let e = util::text(&out.stderr);
        assert!(e.contains(said), "{name}: {e}");
    }
}

/// `mtf ARGS` reading its input from a FIFO that is fed half of `input` and then held open,
/// so that the command is still writing; `signal` is sent once its temporary output exists.
fn interrupted(
    root: &Path,
    name: &str,
    args: &[&str],
    input: &[u8],
    signal: i32,
) -> (Output, PathBuf, PathBuf, PathBuf) {
    let folder = root.join(format!("{name}-{signal}"));
    fs::create_dir(&folder).unwrap();
    let old = folder.join("out.mtf");
    fs::write(&old, OLD).unwrap();
    let tmp = root.join(format!("tmp-{name}-{signal}"));
    fs::create_dir(&tmp).unwrap();
    let fifo = root.join(format!("{name}-{signal}.fifo"));
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    // Opened for reading and writing, the FIFO never reaches its end while it is held here.
    let mut feed = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.push(s(&fifo).to_string());
    all.push("-o".into());
    all.push(s(&old).to_string());
    let child = command(&all, &tmp).spawn().unwrap();
    let half = &input[..input.len() / 2];
    let cut = half.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    feed.write_all(&half[..cut]).unwrap();
    // The temporary output appears beside the old one (and perhaps a spool in TMPDIR).
    let start = Instant::now();
    while entries(&folder).len() < 2 && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        entries(&folder).len() >= 2,
        "{name}: {:?}",
        entries(&folder)
    );
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: sending a signal to the child this test spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
    let out = child.wait_with_output().unwrap();
    drop(feed);
    (out, folder, old, tmp)
}

#[test]
fn sigint_and_sigterm_while_writing_leave_the_old_output() {
    let i = inputs();
    let text = fs::read(&i.text).unwrap();
    let mtrace = fs::read(&i.mtrace).unwrap();
    for signal in [libc::SIGINT, libc::SIGTERM] {
        for (name, args, input) in [
            ("pack", vec!["pack", "--dtd", "dtds/hatf10.dtd"], &text),
            ("import", vec!["import", "--from", "mtrace"], &mtrace),
        ] {
            let (out, folder, old, tmp) = interrupted(i.dir.path(), name, &args, input, signal);
            let w = Writer {
                name,
                args: vec![],
                out: "out.mtf",
                folder_output: false,
                device: true,
                limit: 0,
            };
            assert_lost_nothing(&w, &out, 128 + signal, &folder, &old, &tmp);
        }
    }
}

/// Runs `mtf ARGS` with files limited to 64 KiB (writes past it fail with EFBIG).
fn with_small_files(args: &[String], tmp: &Path) -> Output {
    let mut c = command(args, tmp);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: 64 << 10,
                rlim_max: 64 << 10,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c.output().unwrap()
}

/// Parquet export writes several files: a full disk on a later one must not leave the earlier
/// ones replaced (the folder would hold files of two runs), nor a folder it created.
#[test]
fn a_parquet_export_is_all_or_nothing() {
    let dir = util::tempdir();
    let tmp = tmpdir(dir.path());
    // A few allocations (a small alloc.parquet), then many frees (a large free.parquet).
    let mut lines = text_lines(10);
    for i in 0..100_000 {
        lines.push(format!(
            "free address={} vfield.data=\"x{i}\"",
            4096 + 16 * i
        ));
    }
    let text = dir.path().join("t.txt");
    fs::write(&text, lines.join("\n") + "\n").unwrap();
    let trace = dir.path().join("t.mtf");
    let out = util::mtf(&[
        "pack",
        "--dtd",
        "dtds/hatf10.dtd",
        s(&text),
        "-o",
        s(&trace),
    ]);
    assert!(out.status.success(), "{}", util::text(&out.stderr));
    let folder = dir.path().join("pq");
    // Without a limit: both files, alloc.parquet under 64 KiB and free.parquet over.
    let args = |to: &Path| -> Vec<String> {
        [
            "export",
            "--to",
            "parquet",
            s(&trace),
            "-o",
            &format!("{}/", to.display()),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let out = command(&args(&folder), &tmp).output().unwrap();
    assert!(out.status.success(), "{}", util::text(&out.stderr));
    assert_eq!(
        entries(&folder),
        [".mtf-export", "alloc.parquet", "free.parquet"]
    );
    assert!(fs::metadata(folder.join("alloc.parquet")).unwrap().len() < 64 << 10);
    assert!(fs::metadata(folder.join("free.parquet")).unwrap().len() > 64 << 10);
    // Earlier outputs in place: none is replaced when the second file cannot be written.
    fs::write(folder.join("alloc.parquet"), OLD).unwrap();
    fs::write(folder.join("free.parquet"), OLD).unwrap();
    let out = with_small_files(&args(&folder), &tmp);
    assert_eq!(out.status.code(), Some(2), "{}", util::text(&out.stderr));
    assert!(
        util::text(&out.stderr).contains("free.parquet"),
        "{}",
        util::text(&out.stderr)
    );
    assert_eq!(
        entries(&folder),
        [".mtf-export", "alloc.parquet", "free.parquet"]
    );
    for f in ["alloc.parquet", "free.parquet"] {
        assert!(fs::read(folder.join(f)).unwrap() == OLD, "{f} was replaced");
    }
    // A folder made for the export is removed again.
    let new = dir.path().join("new");
    let out = with_small_files(&args(&new), &tmp);
    assert_eq!(out.status.code(), Some(2), "{}", util::text(&out.stderr));
    assert!(!new.exists(), "{:?}", entries(&new));
    assert!(entries(&tmp).is_empty(), "{:?}", entries(&tmp));
}

/// The same for an export into several files (a trace of format et3 and its name maps).
#[test]
fn a_multi_file_export_is_all_or_nothing() {
    let dir = util::tempdir();
    let tmp = tmpdir(dir.path());
    let src = util::root().join("tests/data/import/et3");
    let input = dir.path().join("in");
    fs::create_dir(&input).unwrap();
    let names = ["trace", "classes.txt", "methods.txt", "fields.txt"];
    for n in names {
        fs::copy(src.join(n), input.join(n)).unwrap();
    }
    // A name map far larger than the 64 KiB files may have; the trace stays small.
    let mut methods = fs::read_to_string(input.join("methods.txt")).unwrap();
    // (About 100 KB: over the limit, but by less than the 64 KiB an output buffers, so that
    // the error shows only when the file is finished.)
    for i in 0..3300 {
        methods.push_str(&format!("{} SimpleTrace method{i}\n", 100_000 + i));
    }
    fs::write(input.join("methods.txt"), methods).unwrap();
    let trace = dir.path().join("t.mtf");
    let mut args = vec!["import", "--from", "et3"];
    let paths: Vec<String> = names
        .iter()
        .map(|n| input.join(n).display().to_string())
        .collect();
    args.extend(paths.iter().map(|s| s.as_str()));
    args.extend(["-o", s(&trace)]);
    let out = util::mtf(&args);
    assert!(out.status.success(), "{}", util::text(&out.stderr));
    let folder = dir.path().join("back");
    let export = |to: &Path| -> Vec<String> {
        ["export", s(&trace), "-o", &format!("{}/", to.display())]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let out = command(&export(&folder), &tmp).output().unwrap();
    assert!(out.status.success(), "{}", util::text(&out.stderr));
    let mut sorted = names.to_vec();
    sorted.sort();
    assert_eq!(entries(&folder), sorted);
    assert!(fs::metadata(folder.join("methods.txt")).unwrap().len() > 64 << 10);
    for n in names {
        fs::write(folder.join(n), OLD).unwrap();
    }
    let out = with_small_files(&export(&folder), &tmp);
    assert_eq!(out.status.code(), Some(2), "{}", util::text(&out.stderr));
    assert_eq!(entries(&folder), sorted);
    for n in names {
        assert!(fs::read(folder.join(n)).unwrap() == OLD, "{n} was replaced");
    }
    assert!(entries(&tmp).is_empty(), "{:?}", entries(&tmp));
}
