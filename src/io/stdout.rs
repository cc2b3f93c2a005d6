//! Printing to standard output: stopping quietly when the reader goes away.

// Design: Rust ignores SIGPIPE, so a write to a closed pipe (`mtf check T | head -1`) fails
// with `BrokenPipe`, and `println!` panics on it. A command that prints writes through
// [`StdoutSink`] instead and, on an error, asks [`classify`]: a closed pipe means the reader has
// all it wanted, so the command stops with status 0 and no message, as `cat` would be stopped
// by SIGPIPE; any other failure (ENOSPC on `>/dev/full`) is a real error naming standard output.

use std::io::{self, BufWriter, IsTerminal, Stdout, Write};

use super::IoError;

/// What a failed write to standard output means for the command.
#[derive(Debug)]
pub enum StdoutFailure {
    /// The reader closed the pipe: stop quietly, exit status 0.
    Closed,
    /// A real error (disk full, I/O error, ...), naming standard output.
    Failed(IoError),
}

impl StdoutFailure {
    /// `Ok(())` for [`StdoutFailure::Closed`], the error otherwise: for a command's last line,
    /// `sink.finish().or_else(StdoutFailure::ignore_closed)?`.
    pub fn ignore_closed(self) -> Result<(), IoError> {
        match self {
            StdoutFailure::Closed => Ok(()),
            StdoutFailure::Failed(e) => Err(e),
        }
    }
}

impl From<io::Error> for StdoutFailure {
    fn from(e: io::Error) -> StdoutFailure {
        classify(e)
    }
}

/// Classifies an error from writing to standard output: `BrokenPipe` is
/// [`StdoutFailure::Closed`]; anything else is [`StdoutFailure::Failed`] with an [`IoError`]
/// (`NoSpace`, `FileTooLarge` or `Write`) whose path is `-`, shown as "standard output".
pub fn classify(e: io::Error) -> StdoutFailure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        StdoutFailure::Closed
    } else {
        StdoutFailure::Failed(IoError::from_write("-", e))
    }
}

/// Buffered standard output for commands that print.
///
/// ```no_run
/// use std::io::Write;
/// use metatf::io::{StdoutFailure, StdoutSink};
///
/// fn print_all(lines: &[&str]) -> Result<(), StdoutFailure> {
///     let mut out = StdoutSink::new();
///     for line in lines {
///         writeln!(out, "{line}")?; // a closed pipe becomes StdoutFailure::Closed
///     }
///     out.finish()
/// }
/// # let _ = print_all(&["a"]).or_else(StdoutFailure::ignore_closed);
/// ```
// Design: block-buffered when standard output is a pipe or file (one write per 64 KiB rather
// than per line, which matters for dumps of millions of records); on a terminal the sink writes
// through to `Stdout`, which is line-buffered, so that a slow command shows its lines as they
// come.
#[derive(Debug)]
pub struct StdoutSink {
    inner: BufWriter<Stdout>,
}

impl StdoutSink {
    /// Standard output, buffered unless it is a terminal.
    pub fn new() -> StdoutSink {
        let stdout = io::stdout();
        let capacity = if stdout.is_terminal() { 0 } else { 64 * 1024 };
        StdoutSink {
            inner: BufWriter::with_capacity(capacity, stdout),
        }
    }

    /// Flushes what is buffered; an error is classified as by [`classify`].
    pub fn finish(mut self) -> Result<(), StdoutFailure> {
        self.inner.flush().map_err(classify)
    }
}

impl Default for StdoutSink {
    fn default() -> StdoutSink {
        StdoutSink::new()
    }
}

// The printers write a record in many small pieces: these forward to the `BufWriter` inline, so
// that a piece costs a copy into the buffer and not a call across crates.
impl Write for StdoutSink {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner.write_all(buf)
    }

    #[inline]
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::testutil::is_child;
    use std::process::Stdio;

    #[test]
    fn broken_pipe_is_closed() {
        let e = io::Error::from(io::ErrorKind::BrokenPipe);
        assert!(matches!(classify(e), StdoutFailure::Closed));
        assert!(StdoutFailure::Closed.ignore_closed().is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn other_errors_name_standard_output() {
        let e = io::Error::from_raw_os_error(libc::EPIPE);
        assert!(matches!(classify(e), StdoutFailure::Closed));
        match classify(io::Error::from_raw_os_error(libc::ENOSPC)) {
            StdoutFailure::Failed(err) => {
                assert!(matches!(err, IoError::NoSpace { .. }), "{err:?}");
                assert!(err.to_string().contains("standard output"), "{err}");
            }
            other => panic!("{other:?}"),
        }
        match classify(io::Error::from_raw_os_error(libc::EIO)) {
            StdoutFailure::Failed(err) => assert!(matches!(err, IoError::Write { .. })),
            other => panic!("{other:?}"),
        }
    }

    /// In a child whose standard output is `CHILD_VAR`'s mode: prints a lot and reports how
    /// the sink failed through the exit status (3 closed, 4 no space, 5 other, 6 no failure).
    #[test]
    #[ignore = "run in a child process by the tests below"]
    fn child_print() {
        if !is_child() {
            return;
        }
        #[cfg(unix)]
        if std::env::var_os(crate::io::testutil::CHILD_VAR).as_deref() == Some("full".as_ref()) {
            // The harness has printed its header; from here on standard output is /dev/full.
            use std::os::fd::AsRawFd;
            let full = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap();
            // SAFETY: both descriptors are open.
            assert_eq!(unsafe { libc::dup2(full.as_raw_fd(), 1) }, 1);
        }
        let result = (|| -> Result<(), StdoutFailure> {
            let mut out = StdoutSink::new();
            for i in 0..100_000 {
                writeln!(out, "line {i}")?;
            }
            out.finish()
        })();
        let code = match result {
            Err(StdoutFailure::Closed) => 3,
            Err(StdoutFailure::Failed(IoError::NoSpace { .. })) => 4,
            Err(StdoutFailure::Failed(e)) => {
                eprintln!("{e}");
                5
            }
            Ok(()) => 6,
        };
        std::process::exit(code);
    }

    #[cfg(unix)]
    #[test]
    fn closed_pipe_in_a_child_is_closed() {
        use std::io::BufRead;
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "io::stdout::tests::child_print",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(crate::io::testutil::CHILD_VAR, "pipe")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Read up to the first line the sink printed (after the harness's own lines), then
        // close the pipe, as `head -1` does.
        let mut pipe = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("line 0") {
            line.clear();
            assert_ne!(
                pipe.read_line(&mut line).unwrap(),
                0,
                "child printed nothing"
            );
        }
        drop(pipe);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(3), "{status:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn dev_full_in_a_child_is_no_space() {
        let out =
            crate::io::testutil::run_child("io::stdout::tests::child_print", "full", Stdio::null());
        assert_eq!(
            out.status.code(),
            Some(4),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
