//! Files, pipes and terminals as `mtf` meets them (issue 8, part B): `-o` writes like `cp`,
//! standard output may be closed or full, traces come from pipes, FIFOs and compressed files,
//! signals leave no temporary file, untrusted text is escaped, and every I/O error exits 2.

// Unsafe code: pipes, FIFOs, device nodes and signals made with `libc`.
#![allow(unsafe_code)]

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use metatf::container::{ByteOrder, Class};
use metatf::encode::TraceWriter;

use crate::util;

const BIN: &str = env!("CARGO_BIN_EXE_mtf");
const TRACE: &str = "traces/hatf-le32.mtf";
const SOURCE: &str = "traces/src/hatf-le32.txt";
const DTD: &str = "dtds/hatf10.dtd";

fn abs(rel: &str) -> String {
    util::root().join(rel).to_str().unwrap().to_string()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Run `mtf` through `sh -c`, with `$MTF` set to the binary, in the repository root.
fn sh(script: &str) -> Output {
    Command::new("sh")
        .args(["-c", script])
        .env("MTF", BIN)
        .current_dir(util::root())
        .output()
        .unwrap()
}

/// Run `mtf` with standard output the write end of a pipe whose read end is already closed:
/// every write fails with EPIPE, whatever the size of the output.
#[cfg(target_os = "linux")]
fn mtf_into_closed_pipe(args: &[&str]) -> Output {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for two descriptors; O_CLOEXEC keeps the read end out of the
    // children that other tests spawn meanwhile (one would keep the pipe open).
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just created and are owned here.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read_end);
    Command::new(BIN)
        .args(args)
        .current_dir(util::root())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn assert_status(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        util::text(&out.stdout),
        util::text(&out.stderr)
    );
}

/// `pack SOURCE -o out`, expecting success.
fn pack_to(out: &str) -> Output {
    let o = util::mtf(&["pack", "--dtd", DTD, SOURCE, "-o", out]);
    assert_status(&o, 0);
    o
}

/// The text form of a trace of `n` allocations, for outputs larger than a pipe's buffer.
fn many_allocs(n: u32) -> String {
    let mut text = String::from("%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection 1\n");
    for i in 0..n {
        text.push_str(&format!(
            "alloc size={} address={} vfield.data=\"\"\n",
            i % 200,
            4096 + 16 * i
        ));
    }
    text
}

// ---- item 1: `-o` never replaces what it should not ----

#[test]
fn pack_to_a_device_node_leaves_the_device_node() {
    // A private node for the null device (character 1,3), so that a regression cannot damage
    // the machine's own /dev/null; creating one needs root, so elsewhere /dev/null is only
    // written to, which a regression could not damage without root either.
    let dir = util::tempdir();
    let node = dir.path().join("null");
    let c = std::ffi::CString::new(node.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mknod with a valid NUL-terminated path; makedev(1, 3) is the null device.
    let made = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0;
    let target = if made {
        node
    } else {
        std::path::PathBuf::from("/dev/null")
    };
    let out = pack_to(s(&target));
    assert!(
        util::text(&out.stderr).starts_with(&format!("{}: 30 records", target.display())),
        "{}",
        util::text(&out.stderr)
    );
    let meta = fs::symlink_metadata(&target).unwrap();
    assert!(meta.file_type().is_char_device(), "{meta:?}");
}

#[test]
fn pack_to_a_fifo_writes_into_it() {
    let dir = util::tempdir();
    let fifo = dir.path().join("out.fifo");
    mkfifo(&fifo);
    // The read end is opened first, without blocking, so that `mtf` can open the FIFO at once
    // and a broken `mtf` (one that replaces the FIFO) makes the test fail rather than hang. The
    // trace (298 bytes) fits in the FIFO's buffer.
    let mut reader = {
        use std::os::unix::fs::OpenOptionsExt;
        fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo)
            .unwrap()
    };
    pack_to(s(&fifo));
    let mut got = Vec::new();
    reader.read_to_end(&mut got).unwrap();
    assert_eq!(got, fs::read(abs(TRACE)).unwrap());
    assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(entries(dir.path()), ["out.fifo"]);
}

#[test]
fn pack_through_a_symlink_replaces_the_target_and_keeps_the_link() {
    let dir = util::tempdir();
    let target = dir.path().join("real.mtf");
    let link = dir.path().join("link.mtf");
    fs::write(&target, b"old").unwrap();
    std::os::unix::fs::symlink("real.mtf", &link).unwrap();
    pack_to(s(&link));
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read_link(&link).unwrap(), Path::new("real.mtf"));
    assert_eq!(fs::read(&target).unwrap(), fs::read(abs(TRACE)).unwrap());
    assert_eq!(entries(dir.path()), ["link.mtf", "real.mtf"]);
}

#[test]
fn pack_new_file_mode_follows_the_umask() {
    let dir = util::tempdir();
    for (umask, mode) in [("022", 0o644), ("027", 0o640), ("077", 0o600)] {
        let path = dir.path().join(format!("u{umask}.mtf"));
        let out = sh(&format!(
            "umask {umask}; exec \"$MTF\" pack --dtd {DTD} {SOURCE} -o '{}'",
            path.display()
        ));
        assert_status(&out, 0);
        let got = fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(got, mode, "umask {umask}: {got:o}");
    }
}

#[test]
fn pack_keeps_the_mode_of_an_existing_file() {
    let dir = util::tempdir();
    let path = dir.path().join("old.mtf");
    fs::write(&path, b"old contents").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    let old_ino = fs::metadata(&path).unwrap().ino();
    pack_to(s(&path));
    let meta = fs::metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o640);
    assert_ne!(
        meta.ino(),
        old_ino,
        "replaced by a rename, not written in place"
    );
    assert_eq!(fs::read(&path).unwrap(), fs::read(abs(TRACE)).unwrap());
    assert_eq!(entries(dir.path()), ["old.mtf"]);
}

#[test]
fn pack_dash_writes_the_trace_to_stdout() {
    let dir = util::tempdir();
    let file = dir.path().join("file.mtf");
    pack_to(s(&file));
    let out = Command::new(BIN)
        .args(["pack", "--dtd", &abs(DTD), &abs(SOURCE), "-o", "-"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_status(&out, 0);
    assert_eq!(out.stdout, fs::read(&file).unwrap());
    assert!(
        util::text(&out.stderr).starts_with("standard output: 30 records, 298 bytes"),
        "{}",
        util::text(&out.stderr)
    );
    // No file called `-`, no temporary file left.
    assert_eq!(entries(dir.path()), ["file.mtf"]);
}

#[test]
fn pack_over_the_file_size_limit_exits_2_and_leaves_nothing() {
    let dir = util::tempdir();
    let src = dir.path().join("big.txt");
    fs::write(&src, many_allocs(20_000)).unwrap();
    let out_dir = dir.path().join("out");
    fs::create_dir(&out_dir).unwrap();
    let target = out_dir.join("big.mtf");
    // 16 blocks of 512 or 1024 bytes: far below the 200 kB trace.
    let out = sh(&format!(
        "ulimit -f 16; exec \"$MTF\" pack --dtd {DTD} '{}' -o '{}'",
        src.display(),
        target.display()
    ));
    assert_status(&out, 2);
    let e = util::text(&out.stderr);
    assert!(
        e.contains(&format!("cannot write {}", target.display())) && e.contains("too large"),
        "{e}"
    );
    assert!(entries(&out_dir).is_empty(), "{:?}", entries(&out_dir));
}

// ---- item 2: no panic on a closed or full standard output ----

/// A DTD whose listing (`mtf dtd show`) is far larger than a pipe's buffer.
fn big_dtd(dir: &Path) -> PathBuf {
    let mut text = String::from("tag.width = 2;\nsection s 1 {\n");
    for i in 0..3000 {
        text.push_str(&format!("  rec{i}: (tag) {{ tag.value = {}; }}\n", i + 4));
    }
    text.push_str("}\n");
    let path = dir.join("big.dtd");
    fs::write(&path, text).unwrap();
    path
}

/// A trace of 20 000 records, each breaking a fixed value of `strict.dtd` (`mtf check --dtd
/// strict.dtd --max-errors 100000` prints a line for each).
fn trace_with_many_problems(dir: &Path) -> (PathBuf, PathBuf) {
    let loose = "tag.width = 1;\nx.width = 1; x.interpretation = none;\nsection s 1 {\n  r: (tag, x) { tag.value = 4; }\n}\n";
    let strict = loose.replace("tag.value = 4;", "tag.value = 4; x.value = 7;");
    fs::write(dir.join("loose.dtd"), loose).unwrap();
    fs::write(dir.join("strict.dtd"), strict).unwrap();
    let mut text = String::from("%mtf 1 dtd=\"loose.dtd\" class=32 order=little\nsection 1\n");
    for _ in 0..20_000 {
        text.push_str("r x=8\n");
    }
    let trace = dir.join("many.mtf");
    let out = util::mtf_stdin(
        &[
            "pack",
            "--dtd",
            s(&dir.join("loose.dtd")),
            "-",
            "-o",
            s(&trace),
        ],
        text.as_bytes(),
    );
    assert_status(&out, 0);
    (trace, dir.join("strict.dtd"))
}

#[test]
fn check_and_dtd_show_into_head_exit_0_quietly() {
    let dir = util::tempdir();
    let (trace, strict) = trace_with_many_problems(dir.path());
    let dtd = big_dtd(dir.path());
    for script in [
        format!(
            "\"$MTF\" check --dtd '{}' --max-errors 100000 '{}' | head -1",
            strict.display(),
            trace.display()
        ),
        format!("\"$MTF\" dtd show '{}' | head -1", dtd.display()),
    ] {
        let out = Command::new("bash")
            .args(["-o", "pipefail", "-c", &script])
            .env("MTF", BIN)
            .output()
            .unwrap();
        assert_status(&out, 0);
        assert_eq!(util::text(&out.stdout).lines().count(), 1, "{script}");
        assert!(
            out.stderr.is_empty(),
            "{script}: {}",
            util::text(&out.stderr)
        );
    }
}

#[cfg(target_os = "linux")]
#[test]
fn every_printing_command_exits_0_quietly_on_a_closed_pipe() {
    let dir = util::tempdir();
    let dtd = big_dtd(dir.path());
    for args in [
        &["check", TRACE][..],
        &["info", TRACE],
        &["dump", TRACE],
        &["dtd", "show", DTD],
        &["dtd", "show", s(&dtd)],
        &["dtd", "check", DTD],
        &["pack", "--dtd", DTD, SOURCE, "-o", "-"],
    ] {
        let out = mtf_into_closed_pipe(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            util::text(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{args:?}: {}",
            util::text(&out.stderr)
        );
    }
}

#[cfg(target_os = "linux")]
#[test]
fn dev_full_is_an_io_error_with_a_message() {
    for cmd in [
        format!("check {TRACE}"),
        format!("info {TRACE}"),
        format!("dump {TRACE}"),
        format!("dtd show {DTD}"),
        format!("dtd check {DTD}"),
        format!("pack --dtd {DTD} {SOURCE} -o -"),
    ] {
        let out = sh(&format!("exec \"$MTF\" {cmd} >/dev/full"));
        assert_status(&out, 2);
        let e = util::text(&out.stderr);
        assert!(
            e.contains("cannot write standard output: No space left on device"),
            "{cmd}: {e}"
        );
        assert!(!e.contains("panicked"), "{cmd}: {e}");
    }
    // `-o /dev/full`: the device is written directly, and its error names it.
    let out = util::mtf(&["pack", "--dtd", DTD, SOURCE, "-o", "/dev/full"]);
    assert_status(&out, 2);
    let e = util::text(&out.stderr);
    assert!(
        e.contains("cannot write /dev/full: No space left on device"),
        "{e}"
    );
    assert!(fs::symlink_metadata("/dev/full")
        .unwrap()
        .file_type()
        .is_char_device());
}

// ---- item 5: pipes and files that cannot be mapped ----

#[test]
fn traces_from_stdin_pipes_and_fifos_decode_like_the_file() {
    let reference = util::mtf(&["dump", TRACE]);
    assert_status(&reference, 0);
    let bytes = fs::read(abs(TRACE)).unwrap();

    // `cat T | mtf dump --dtd D -`
    let out = util::mtf_stdin(&["dump", "--dtd", DTD, "-"], &bytes);
    assert_status(&out, 0);
    assert_eq!(out.stdout, reference.stdout);
    // `cat T | mtf dump /dev/stdin` (the DTD found from the header's name).
    let out = util::mtf_stdin(&["dump", "/dev/stdin"], &bytes);
    assert_status(&out, 0);
    assert_eq!(out.stdout, reference.stdout);

    // `mtf check /dev/stdin < T`
    let out = Command::new(BIN)
        .args(["check", "/dev/stdin"])
        .current_dir(util::root())
        .stdin(fs::File::open(abs(TRACE)).unwrap())
        .output()
        .unwrap();
    assert_status(&out, 0);
    assert!(util::text(&out.stdout).ends_with("/dev/stdin: valid\n"));

    // `mtf check <(cat T)`
    let out = Command::new("bash")
        .args(["-c", &format!("\"$MTF\" dump <(cat {TRACE})")])
        .env("MTF", BIN)
        .current_dir(util::root())
        .output()
        .unwrap();
    assert_status(&out, 0);
    assert_eq!(out.stdout, reference.stdout);

    // A FIFO.
    let dir = util::tempdir();
    let fifo = dir.path().join("t.fifo");
    mkfifo(&fifo);
    let writer = {
        let (fifo, bytes) = (fifo.clone(), bytes.clone());
        std::thread::spawn(move || fs::write(fifo, bytes).unwrap())
    };
    let out = util::mtf(&["dump", "--dtd", DTD, s(&fifo)]);
    writer.join().unwrap();
    assert_status(&out, 0);
    assert_eq!(out.stdout, reference.stdout);
}

#[test]
fn gzip_compressed_trace_is_read() {
    let dir = util::tempdir();
    let gz = dir.path().join("t.mtf.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&fs::read(abs(TRACE)).unwrap()).unwrap();
    fs::write(&gz, enc.finish().unwrap()).unwrap();
    let reference = util::mtf(&["dump", TRACE]);
    let out = util::mtf(&["dump", "--dtd", DTD, s(&gz)]);
    assert_status(&out, 0);
    assert_eq!(out.stdout, reference.stdout);
    // And from standard input, with `check`.
    let out = util::mtf_stdin(&["check", "-"], &fs::read(&gz).unwrap());
    assert_status(&out, 0);
    assert!(util::text(&out.stdout).ends_with("standard input: valid\n"));
    // The text input of `pack` may be compressed too.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&fs::read(abs(SOURCE)).unwrap()).unwrap();
    let packed = dir.path().join("packed.mtf");
    let out = util::mtf_stdin(
        &["pack", "--dtd", DTD, "-", "-o", s(&packed)],
        &enc.finish().unwrap(),
    );
    assert_status(&out, 0);
    assert_eq!(fs::read(&packed).unwrap(), fs::read(abs(TRACE)).unwrap());
}

#[test]
fn trace_that_shrinks_while_mapped_is_an_error_not_a_crash() {
    let dir = util::tempdir();
    let src = dir.path().join("big.txt");
    fs::write(&src, many_allocs(100_000)).unwrap();
    let trace = dir.path().join("big.mtf");
    let out = util::mtf(&["pack", "--dtd", DTD, s(&src), "-o", s(&trace)]);
    assert_status(&out, 0);
    let mut child = Command::new(BIN)
        .args(["dump", s(&trace)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    // The dump (1 MB) is blocked on the pipe: cut the file under it, then read the rest.
    fs::OpenOptions::new()
        .write(true)
        .open(&trace)
        .unwrap()
        .set_len(1000)
        .unwrap();
    std::io::copy(&mut stdout, &mut std::io::sink()).unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "{status:?}: {stderr}");
    assert!(
        stderr.contains("shrank while it was being read"),
        "{stderr}"
    );
}

// ---- item 1 (signals): SIGINT/SIGTERM remove the temporary files ----

#[test]
fn sigterm_during_pack_from_a_fifo_leaves_no_temp_file() {
    let dir = util::tempdir();
    let fifo = dir.path().join("in.fifo");
    mkfifo(&fifo);
    let out_dir = dir.path().join("out");
    fs::create_dir(&out_dir).unwrap();
    // Opened for reading and writing, the FIFO never reaches its end while this test holds it.
    let mut input = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    input
        .write_all(b"%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection 1\n")
        .unwrap();
    let child = Command::new(BIN)
        .args([
            "pack",
            "--dtd",
            DTD,
            s(&fifo),
            "-o",
            s(&out_dir.join("t.mtf")),
        ])
        .current_dir(util::root())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the output's temporary file and the spool exist, then a little more.
    let start = Instant::now();
    while entries(&out_dir).len() < 2 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(entries(&out_dir).len(), 2, "{:?}", entries(&out_dir));
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: sending a signal to the child this test spawned.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", util::text(&out.stderr));
    assert!(entries(&out_dir).is_empty(), "{:?}", entries(&out_dir));
    drop(input);
}

// ---- item 7: no terminal injection ----

/// A trace whose header names the DTD `\e[31mhatf10.dtd`, written with the writer API.
fn trace_with_hostile_dtd_name(dir: &Path) -> PathBuf {
    let schema = util::schema(DTD);
    let path = dir.join("hostile.mtf");
    let mut w = TraceWriter::create(
        &schema,
        &path,
        Class::Bits32,
        ByteOrder::Little,
        "\x1b[31mhatf10.dtd",
    )
    .unwrap();
    w.section_named("heap").unwrap();
    w.write("alloc")
        .int("size", 16)
        .int("address", 4096)
        .bytes("vfield.data", "")
        .done()
        .unwrap();
    w.finish().unwrap();
    path
}

#[test]
fn info_escapes_a_dtd_name_with_an_escape_sequence() {
    let dir = util::tempdir();
    let trace = trace_with_hostile_dtd_name(dir.path());
    let out = util::mtf(&["info", "--dtd", DTD, s(&trace)]);
    assert_status(&out, 0);
    let text = util::text(&out.stdout);
    assert!(!text.contains('\x1b'), "{text:?}");
    assert!(
        text.contains("dtd         \\x1B[31mhatf10.dtd → "),
        "{text}"
    );

    // Without --dtd the name is looked for and not found: the message escapes it too.
    let out = util::mtf(&["info", s(&trace)]);
    assert_status(&out, 3);
    let e = util::text(&out.stderr);
    assert!(!e.contains('\x1b'), "{e:?}");
    assert!(
        e.contains("cannot find the DTD \"\\x1B[31mhatf10.dtd\""),
        "{e}"
    );
}

#[test]
fn file_names_in_messages_are_escaped() {
    let dir = util::tempdir();
    let name = dir.path().join("x\x1b]0;title\x07.mtf");
    fs::write(&name, b"\x7fMTF").unwrap();
    let out = util::mtf(&["check", s(&name)]);
    assert_status(&out, 1);
    let e = util::text(&out.stderr);
    assert!(!e.contains('\x1b') && !e.contains('\x07'), "{e:?}");
    assert!(
        e.contains("x\\x1B]0;title\\x07.mtf: truncated trace"),
        "{e}"
    );
}

// ---- item 8: messages that say what happened ----

#[test]
fn check_reports_a_damaged_container_once() {
    let dir = util::tempdir();
    let whole = fs::read(abs(TRACE)).unwrap();
    for len in [40, whole.len() - 10] {
        let cut = dir.path().join("cut.mtf");
        fs::write(&cut, &whole[..len]).unwrap();
        let out = util::mtf(&["check", s(&cut)]);
        assert_status(&out, 1);
        let all = format!("{}{}", util::text(&out.stdout), util::text(&out.stderr));
        let first = all.lines().next().unwrap_or_default().to_string();
        // The container's damage is a problem of the report, said once (not also on stderr).
        let damage = first.split(": ").nth(1).unwrap_or_default();
        assert!(!damage.is_empty(), "{all}");
        assert_eq!(all.matches(damage).count(), 1, "{all}");
    }
}

#[test]
fn trace_errors_name_the_file_once() {
    let dir = util::tempdir();
    let cut = dir.path().join("cut.mtf");
    fs::write(&cut, &fs::read(abs(TRACE)).unwrap()[..40]).unwrap();
    let out = util::mtf(&["dump", s(&cut)]);
    assert_status(&out, 1);
    let e = util::text(&out.stderr);
    assert_eq!(e.matches("cut.mtf").count(), 1, "{e}");
    assert_eq!(
        e.matches("needs 12 bytes of section headers").count(),
        1,
        "{e}"
    );
    assert!(e.contains("mtf::trace::invalid"), "{e}");

    // From standard input the trace is called so.
    let out = util::mtf_stdin(&["dump", "-"], b"hello, world\n");
    assert_status(&out, 1);
    let e = util::text(&out.stderr);
    assert!(e.contains("standard input: not a Meta-TF trace"), "{e}");

    // A missing trace is an I/O error, status 2, named once.
    let missing = dir.path().join("missing.mtf");
    let out = util::mtf(&["info", s(&missing)]);
    assert_status(&out, 2);
    let e = util::text(&out.stderr);
    assert_eq!(e.matches("missing.mtf").count(), 1, "{e}");
    assert!(e.contains("No such file or directory"), "{e}");
}

#[cfg(target_os = "linux")]
#[test]
fn full_stderr_does_not_panic() {
    // Nowhere is left to report a failure to write standard error: the status still tells.
    let dir = util::tempdir();
    let cut = dir.path().join("cut.mtf");
    fs::write(&cut, &fs::read(abs(TRACE)).unwrap()[..40]).unwrap();
    let out = sh(&format!(
        "exec \"$MTF\" check '{}' 2>/dev/full",
        cut.display()
    ));
    assert_status(&out, 1);
    let packed = dir.path().join("p.mtf");
    let out = sh(&format!(
        "exec \"$MTF\" pack --dtd {DTD} {SOURCE} -o '{}' 2>/dev/full",
        packed.display()
    ));
    assert_status(&out, 0);
    assert_eq!(fs::read(&packed).unwrap(), fs::read(abs(TRACE)).unwrap());
}
