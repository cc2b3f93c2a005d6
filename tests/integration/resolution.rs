//! A trace header's DTD name and a mapping's DTD name cannot make `mtf` read, or show, a file
//! outside the allowed folders (issue 20 item 5, docs/format.md §10): `../`, absolute paths,
//! names that are not `*.dtd`, symbolic links pointing out of the folder, `/proc` files, devices
//! and FIFOs; and a file that is not a DTD is never quoted in an error message.

// Unsafe code: `mkfifo`.
#![allow(unsafe_code)]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use metatf::container::{ByteOrder, Class};
use metatf::encode::TraceWriter;

use crate::util;

/// Lines of a file that must never appear in a message.
const SECRET: &str = "secret-line-one: 1234\nsecret-line-two: abcd\n";

/// A valid HATF trace in `dir` whose header names the DTD `name`.
fn trace_naming(dir: &Path, name: &str) -> PathBuf {
    let schema = util::schema("dtds/hatf10.dtd");
    let path = dir.join("t.mtf");
    let mut w =
        TraceWriter::create(&schema, &path, Class::Bits32, ByteOrder::Little, name).unwrap();
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

/// `mtf ARGS` with `MTF_DTD_PATH` set to `env` (or unset), killed after 20 s: a FIFO opened
/// for reading would block for ever.
fn mtf_env(args: &[&str], env: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mtf"));
    c.args(args)
        .current_dir(util::root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("MTF_DTD_PATH");
    if let Some(e) = env {
        c.env("MTF_DTD_PATH", e);
    }
    let mut child = c.spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("mtf {args:?} blocked");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

fn all(out: &Output) -> String {
    util::text(&out.stdout) + &util::text(&out.stderr)
}

fn assert_no_secret(out: &Output) {
    let t = all(out);
    assert!(!t.contains("secret-line"), "{t}");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The DTD text of hatf10.dtd.
fn hatf() -> String {
    std::fs::read_to_string(util::root().join("dtds/hatf10.dtd")).unwrap()
}

#[test]
fn a_dtd_beside_the_trace_is_found() {
    let dir = util::tempdir();
    std::fs::write(dir.path().join("mine.dtd"), hatf()).unwrap();
    let t = trace_naming(dir.path(), "mine.dtd");
    let out = mtf_env(&["check", "-q", s(&t)], None);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    // A link to a file in the same folder (or below it) is followed.
    let sub = dir.path().join("dtds");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("real.dtd"), hatf()).unwrap();
    symlink("dtds/real.dtd", dir.path().join("linked.dtd")).unwrap();
    let t = trace_naming(dir.path(), "linked.dtd");
    let out = mtf_env(&["check", "-q", s(&t)], None);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
}

#[test]
fn parent_folders_in_the_name_are_dropped() {
    let root = util::tempdir();
    let traces = root.path().join("traces");
    let outside = root.path().join("outside");
    std::fs::create_dir(&traces).unwrap();
    std::fs::create_dir(&outside).unwrap();
    // `traces/../outside/x.dtd` exists; only `traces/x.dtd` may be looked at.
    std::fs::write(outside.join("x.dtd"), hatf()).unwrap();
    let t = trace_naming(&traces, "../outside/x.dtd");
    let out = mtf_env(&["check", s(&t)], None);
    assert_eq!(out.status.code(), Some(3), "{}", all(&out));
    let e = util::text(&out.stderr);
    assert!(
        e.contains(&traces.join("x.dtd").display().to_string()),
        "{e}"
    );
    assert!(!e.contains(&outside.display().to_string()), "{e}");
}

#[test]
fn absolute_names_and_names_of_other_files_are_refused() {
    let dir = util::tempdir();
    for name in [
        "/etc/passwd",
        "../../../../etc/passwd",
        "/proc/self/environ",
        "passwd",
    ] {
        // Even a file of that name beside the trace is not read.
        std::fs::write(dir.path().join("passwd"), SECRET).unwrap();
        let t = trace_naming(dir.path(), name);
        let out = mtf_env(&["dump", s(&t)], None);
        assert_eq!(out.status.code(), Some(3), "{name}: {}", all(&out));
        let e = util::text(&out.stderr);
        assert!(
            e.contains("does not end in .dtd; give the DTD with --dtd"),
            "{e}"
        );
        assert!(!e.contains("root:"), "{e}");
        // The help says how to use a DTD that is refused here.
        assert!(
            e.contains("--dtd PATH (any file)") && e.contains("MTF_DTD_PATH"),
            "{e}"
        );
        assert_no_secret(&out);
    }
}

#[test]
fn links_pointing_out_of_the_folder_are_refused() {
    let root = util::tempdir();
    let traces = root.path().join("traces");
    let outside = root.path().join("outside");
    std::fs::create_dir(&traces).unwrap();
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("secret.dtd"), SECRET).unwrap();
    for (name, target) in [
        ("out.dtd", outside.join("secret.dtd")),
        ("passwd.dtd", PathBuf::from("/etc/passwd")),
        ("environ.dtd", PathBuf::from("/proc/self/environ")),
        ("zero.dtd", PathBuf::from("/dev/zero")),
    ] {
        symlink(&target, traces.join(name)).unwrap();
        let t = trace_naming(&traces, name);
        let out = mtf_env(&["info", s(&t)], None);
        assert_eq!(out.status.code(), Some(3), "{name}: {}", all(&out));
        let e = util::text(&out.stderr);
        let why = if name == "zero.dtd" {
            "(not used: not a regular file (a device, FIFO or socket))"
        } else {
            "(not used: a symbolic link to a file outside its folder)"
        };
        assert!(
            e.contains(&format!("{} {why}", traces.join(name).display())),
            "{e}"
        );
        assert!(!e.contains("root:"), "{e}");
        // The help says how to use a DTD that is refused here.
        assert!(
            e.contains("--dtd PATH (any file)") && e.contains("MTF_DTD_PATH"),
            "{e}"
        );
        assert_no_secret(&out);
    }
    // The same through a folder of MTF_DTD_PATH.
    let env_dir = root.path().join("env");
    std::fs::create_dir(&env_dir).unwrap();
    symlink(outside.join("secret.dtd"), env_dir.join("e.dtd")).unwrap();
    let t = trace_naming(&traces, "e.dtd");
    let out = mtf_env(&["check", s(&t)], Some(&env_dir));
    assert_eq!(out.status.code(), Some(3), "{}", all(&out));
    assert!(
        util::text(&out.stderr).contains("a symbolic link to a file outside its folder"),
        "{}",
        all(&out)
    );
    assert_no_secret(&out);
}

#[test]
fn fifos_are_never_opened() {
    let dir = util::tempdir();
    let fifo = dir.path().join("f.dtd");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let t = trace_naming(dir.path(), "f.dtd");
    // Would block for ever if the FIFO were opened (nobody writes to it).
    let out = mtf_env(&["check", s(&t)], None);
    assert_eq!(out.status.code(), Some(3), "{}", all(&out));
    assert!(
        util::text(&out.stderr)
            .contains("(not used: not a regular file (a device, FIFO or socket))"),
        "{}",
        all(&out)
    );
}

#[test]
fn proc_and_dev_files_are_refused_by_the_lookup() {
    use metatf::container::{candidate, Candidate};
    // The lookup itself, for names a header could never give (they do not end in .dtd).
    assert!(matches!(
        candidate(Path::new("/proc/self"), "status"),
        Candidate::Refused(_, "a file of /proc, /sys or /dev")
    ));
    assert!(matches!(
        candidate(Path::new("/dev"), "null"),
        Candidate::Refused(_, "not a regular file (a device, FIFO or socket)")
    ));
    assert!(matches!(
        candidate(Path::new("/dev"), "no-such.dtd"),
        Candidate::Missing(_)
    ));
}

#[test]
fn a_file_that_is_not_a_dtd_is_not_quoted() {
    let dir = util::tempdir();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, SECRET).unwrap();
    let t = util::root().join("traces/hatf-le32.mtf");
    for cmd in ["dump", "check", "info", "stats"] {
        let out = mtf_env(&[cmd, "--dtd", s(&notes), s(&t)], None);
        assert_eq!(out.status.code(), Some(3), "{cmd}: {}", all(&out));
        let e = util::text(&out.stderr);
        assert!(
            e.contains("notes.txt is not a DTD: 1 error(s), the first at line 1, column 7 (the text of a file whose name does not end in .dtd is not shown)"),
            "{cmd}: {e}"
        );
        assert_no_secret(&out);
    }
    let out = mtf_env(&["dtd", "check", s(&notes)], None);
    assert_eq!(out.status.code(), Some(3), "{}", all(&out));
    assert_no_secret(&out);
    let out = mtf_env(&["dtd", "check", "/etc/passwd"], None);
    assert_eq!(out.status.code(), Some(3), "{}", all(&out));
    assert!(!all(&out).contains("root:"), "{}", all(&out));
}

/// A mapping in `dir` whose `dtd` line names `dtd`, for the input `run.log` of the user
/// fixture.
fn mapping_naming(dir: &Path, dtd: &str) -> PathBuf {
    let text = std::fs::read_to_string(util::root().join("tests/data/import/user/allocs.map"))
        .unwrap()
        .replace("dtd      allocs.dtd", &format!("dtd      {dtd}"));
    assert!(text.contains(dtd));
    let p = dir.join("m.map");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_mappings_dtd_name_follows_the_same_rules() {
    let root = util::tempdir();
    let maps = root.path().join("maps");
    let outside = root.path().join("outside");
    std::fs::create_dir(&maps).unwrap();
    std::fs::create_dir(&outside).unwrap();
    let user_dtd = util::root().join("tests/data/import/user/allocs.dtd");
    std::fs::copy(&user_dtd, outside.join("allocs.dtd")).unwrap();
    std::fs::write(outside.join("secret.dtd"), SECRET).unwrap();
    let input = util::root().join("tests/data/import/user/run.log");
    let out_trace = root.path().join("o.mtf");
    let import = |map: &Path| {
        mtf_env(
            &["import", "--map", s(map), s(&input), "-o", s(&out_trace)],
            None,
        )
    };
    // `../outside/allocs.dtd`: only `maps/allocs.dtd` is looked at, and it is not there.
    let m = mapping_naming(&maps, "../outside/allocs.dtd");
    let out = import(&m);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(
        util::text(&out.stderr).contains("DTD ../outside/allocs.dtd of mapping `allocs` not found"),
        "{}",
        all(&out)
    );
    // Once it is beside the mapping, the same name works.
    std::fs::copy(&user_dtd, maps.join("allocs.dtd")).unwrap();
    let out = import(&m);
    assert_eq!(out.status.code(), Some(0), "{}", all(&out));
    std::fs::remove_file(maps.join("allocs.dtd")).unwrap();
    std::fs::remove_file(&out_trace).unwrap();
    // An absolute path, or a name that is not *.dtd.
    for name in ["/etc/passwd", "/proc/self/environ"] {
        let m = mapping_naming(&maps, name);
        let out = import(&m);
        assert_eq!(out.status.code(), Some(2), "{name}: {}", all(&out));
        let e = util::text(&out.stderr);
        assert!(e.contains("is not used: DTD name"), "{e}");
        assert!(e.contains("does not end in .dtd"), "{e}");
        assert!(!e.contains("root:"), "{e}");
    }
    // A link pointing out of the mapping's folder.
    symlink(outside.join("secret.dtd"), maps.join("linked.dtd")).unwrap();
    let m = mapping_naming(&maps, "linked.dtd");
    let out = import(&m);
    assert_eq!(out.status.code(), Some(2), "{}", all(&out));
    assert!(
        util::text(&out.stderr).contains("a symbolic link to a file outside its folder"),
        "{}",
        all(&out)
    );
    assert_no_secret(&out);
    assert!(!out_trace.exists());
}
