//! Files the user names on the command line: reading inputs, writing outputs, and showing
//! untrusted text on a terminal.
//!
//! * [`Input`]: a trace or a text input (`-` is standard input); regular files are memory-mapped,
//!   anything else is read as a stream, kept in memory up to a few MiB and spooled to an unlinked
//!   temporary file beyond ([`InputOptions`]), with a cap; gzip, zstd, xz and bzip2 are
//!   decompressed transparently (detected by their magic bytes).
//! * [`Output`]: where a command writes a file, with the semantics of `cp`: regular files are
//!   replaced atomically on [`Output::commit`], devices and FIFOs are written directly, `-` is
//!   standard output.
//! * [`protect_input`], [`refuse_overwrite`]: the files a command reads, which no [`Output`]
//!   replaces.
//! * [`StagedFolder`]: a folder output written beside its target and put in place whole.
//! * [`TempFile`]: a scratch file removed on drop.
//! * [`remove_temp_files`]: deletes every live temporary file, for a SIGINT/SIGTERM watcher.
//! * [`install_sigbus_guard`]: turns the `SIGBUS` of a mapped file that shrank into a message.
//! * [`escape_for_terminal`], [`escape_bytes_for_terminal`], [`escape_path`]: re-exported from
//!   [`crate::escape`], which every layer uses to show untrusted text.
//! * [`StdoutSink`], [`classify`]: printing to standard output, stopping quietly on a closed pipe.
//!
//! Every error is an [`IoError`] that names the path it concerns.

// Unsafe code (docs/architecture.md, *Unsafe code*): mapping a file, the SIGBUS guard, and the
// `libc` calls on descriptors and paths that std does not offer.
#![allow(unsafe_code)]

// Design: this module is the only place that touches file-system semantics (symlinks, devices,
// permission bits, temporary names, signals); the rest of the crate sees byte slices, `Write` and
// `BufRead`. That keeps the platform-specific code (`#[cfg(unix)]`) in one folder.

mod error;
mod folder;
mod guard;
mod input;
mod output;
mod stdout;
mod temp;
#[cfg(test)]
#[cfg_attr(not(unix), allow(dead_code))]
mod testutil;

pub use crate::escape::{escape_bytes_for_terminal, escape_for_terminal, escape_path};
pub use error::{input_name, IoError};
pub use folder::StagedFolder;
pub use guard::{protect_input, refuse_overwrite};
pub(crate) use input::{decompress_bytes, Kept};
pub use input::{
    map_file, release_mapped, Compression, Input, InputData, InputOptions, Opening, StreamInput,
};
pub use output::Output;
pub use stdout::{classify, StdoutFailure, StdoutSink};
#[cfg(all(unix, feature = "parallel"))]
pub(crate) use temp::unlinked_in;
pub use temp::{remove_temp_files, TempFile};

#[cfg(unix)]
pub use input::install_sigbus_guard;
