//! The `SIGBUS` guard of mapped inputs.

use std::io;

/// Installs a `SIGBUS` handler that prints
/// `mtf: error: the input file shrank while it was being read (SIGBUS)` to standard error and
/// exits with status 2. The CLI calls it once at start.
///
/// A memory-mapped input that another process truncates raises `SIGBUS` when a lost page is
/// touched; without a handler the process dies with no message (status 135 in a shell).
// Design: the handler only calls `write(2)` and `_exit(2)`, both async-signal-safe; it cannot
// tell which input shrank (that would need a lock or an allocation), so the message names none.
// It does not return: returning from a SIGBUS handler re-executes the faulting access forever.
#[cfg(unix)]
pub fn install_sigbus_guard() -> io::Result<()> {
    extern "C" fn on_sigbus(_signal: libc::c_int) {
        const MSG: &[u8] = b"mtf: error: the input file shrank while it was being read (SIGBUS)\n";
        // SAFETY: write and _exit are async-signal-safe; MSG is a static buffer.
        unsafe {
            libc::write(2, MSG.as_ptr().cast(), MSG.len());
            libc::_exit(2);
        }
    }
    // SAFETY: the sigaction struct is zeroed (a valid "no flags, empty mask" value) then filled
    // in; the handler has the signature sigaction expects without SA_SIGINFO.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
