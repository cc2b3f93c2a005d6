//! The exit-status policy of every subcommand, in one place: the codes, the line every `--help`
//! ends with, and which code each kind of failure gets.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | success (for `check`: the trace is valid) |
//! | 1 | the input data is invalid: a trace that breaks the format (also compressed and cut short), text `pack` cannot write, input `import` refuses (another format, a damaged compressed input, an unreadable ZIP), a trace `export` cannot render, an output that reads back different |
//! | 2 | usage or I/O: wrong arguments, a file that cannot be read or written, a trace the command cannot work on (`export` of a trace that was not imported) |
//! | 3 | the DTD is unusable: invalid, or a file that cannot be read (missing, too large, not UTF-8), whether given with `--dtd` or named by the trace and found nowhere |
//! | 130, 143 | interrupted by SIGINT or SIGTERM |

use metatf::container::ContainerError;
use metatf::encode::{EncodeError, EncodeErrorKind};
use metatf::io::IoError;

/// Success (for `check`: the trace is valid).
pub const EXIT_OK: i32 = 0;
/// The input data is invalid (a trace, text to pack, a foreign trace to import).
pub const EXIT_INVALID_TRACE: i32 = 1;
/// I/O error or bad usage.
pub const EXIT_USAGE: i32 = 2;
/// The DTD is unusable.
pub const EXIT_BAD_DTD: i32 = 3;

/// The line that ends every subcommand's `--help` (and the README's statement).
pub const EXIT_HELP: &str =
    "Exit status: 0 success, 1 invalid trace or input, 2 usage or I/O error, 3 unusable DTD.";

/// `cmd` with [`EXIT_HELP`] under the help of every subcommand, at every depth (so that a
/// subcommand added later cannot miss it).
pub fn with_exit_help(cmd: clap::Command) -> clap::Command {
    // A subcommand's own text under its long help (`mtf sql`'s tables) keeps the line too.
    let cmd = match cmd.get_after_long_help().map(|h| h.to_string()) {
        Some(long) if !long.contains(EXIT_HELP) => {
            cmd.after_long_help(format!("{long}\n\n{EXIT_HELP}"))
        }
        _ => cmd,
    };
    cmd.after_help(EXIT_HELP).mut_subcommands(with_exit_help)
}

/// The status for a container error: one that could not be read is I/O, the rest make the
/// trace invalid.
pub fn for_container(e: &ContainerError) -> i32 {
    match e.innermost() {
        ContainerError::Io { .. } => EXIT_USAGE,
        _ => EXIT_INVALID_TRACE,
    }
}

/// The status for an error of the writer: a file that cannot be created or written is I/O;
/// anything else is a value or record the format does not allow (invalid input).
pub fn for_encode(e: &EncodeError) -> i32 {
    match e.kind() {
        EncodeErrorKind::File(_) => EXIT_USAGE,
        _ => EXIT_INVALID_TRACE,
    }
}

/// The status for an error of `import` or `export`, by its class: input the command refuses is
/// invalid input; a file that cannot be read or written, and a request that cannot be met (a
/// DTD that does not fit the mapping, an output name that does not fit), are I/O or usage.
#[cfg(feature = "import")]
pub fn for_import(class: metatf::import::ErrorClass) -> i32 {
    match class {
        metatf::import::ErrorClass::Input => EXIT_INVALID_TRACE,
        metatf::import::ErrorClass::Io | metatf::import::ErrorClass::Usage => EXIT_USAGE,
    }
}

/// The status for an error of the file layer: a compressed stream that cannot be decompressed
/// (cut short, or corrupt) is a damaged trace, read as docs/format.md §9.2 says, so it is
/// invalid input like the same trace cut short uncompressed; every other error is I/O.
pub fn for_io(e: &IoError) -> i32 {
    match e {
        IoError::Decompress { .. } => EXIT_INVALID_TRACE,
        _ => EXIT_USAGE,
    }
}

/// The status for a request a command of the library cannot carry out as asked
/// (`metatf::command::UsageError`: a slice that is empty or by time without a clock, options
/// that contradict each other, a record type or section the DTD lacks): a usage error.
pub fn for_usage(e: &metatf::command::UsageError) -> i32 {
    let _ = e;
    EXIT_USAGE
}

/// The status for a flame graph that cannot be drawn (no stack has the cost asked for: a usage
/// error) or written (an output error: status 2 as well).
#[cfg(feature = "flamegraph")]
pub fn for_stacks(e: &metatf::stacks::StacksError) -> i32 {
    let _ = e;
    EXIT_USAGE
}
