//! Helpers for the tests of `crate::io`.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

static DIRS: AtomicU64 = AtomicU64::new(0);

/// A fresh empty folder under the system's temporary folder, removed on drop.
pub(crate) struct TestDir(pub PathBuf);

impl TestDir {
    pub(crate) fn new(name: &str) -> TestDir {
        let n = DIRS.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("mtf-io-test-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TestDir(dir)
    }

    /// The names in the folder, sorted.
    pub(crate) fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The environment variable that tells a child test it is the child.
pub(crate) const CHILD_VAR: &str = "MTF_IO_TEST_CHILD";

/// Whether this process is a child started by [`run_child`] (child tests return at once
/// otherwise, so that `cargo test -- --ignored` does not run them in the parent).
pub(crate) fn is_child() -> bool {
    std::env::var_os(CHILD_VAR).is_some()
}

/// Runs the ignored test `name` (full path, e.g. `io::input::tests::child_sigbus`) alone in a new
/// process of this test binary, with `CHILD_VAR` set to `arg`, the given standard output, and
/// standard error captured. Used for what would harm the test process: signals, resource limits,
/// closing standard output.
pub(crate) fn run_child(name: &str, arg: &str, stdout: Stdio) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .args([
            name,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, arg)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// Makes a FIFO at `path` (mode 0600).
#[cfg(unix)]
pub(crate) fn mkfifo(path: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// Runs the child test `name` ([`run_child`]) on the folder `dir`, which it must leave empty,
/// and checks that it exits with status 3 (what child tests exit with when all went well).
pub(crate) fn child_leaves_folder_empty(name: &str, dir: &TestDir) {
    let out = run_child(name, dir.0.to_str().unwrap(), Stdio::null());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(dir.entries().is_empty(), "{:?}", dir.entries());
}
