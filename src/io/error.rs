//! The errors of [`crate::io`].

// Design: one flat enum, one variant per situation a caller may want to treat differently (the
// CLI exits 2 on [`IoError::NoSpace`] and [`IoError::FileTooLarge`] with a message naming the
// path). Every variant names the path; `-` is shown as "standard input" or "standard output", and
// other paths are escaped for the terminal, since a path may hold control characters.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use miette::Diagnostic;
use thiserror::Error;

use super::input::Compression;
use crate::escape::escape_path;

/// An input could not be read or an output could not be written.
#[derive(Debug, Error, Diagnostic)]
#[non_exhaustive]
pub enum IoError {
    /// An input could not be opened (missing, unreadable, ...).
    #[error("cannot open {}: {source}", input_name(path))]
    #[diagnostic(code(mtf::io::open))]
    Open {
        /// The path given.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// An input could not be measured, mapped or read.
    #[error("cannot read {}: {source}", input_name(path))]
    #[diagnostic(code(mtf::io::read))]
    Read {
        /// The path given.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A folder was named where a file was expected.
    #[error("{} is a folder, not a file", escape_path(path))]
    #[diagnostic(code(mtf::io::is_folder))]
    IsFolder {
        /// The path given.
        path: PathBuf,
    },

    /// An input that cannot be memory-mapped (a pipe, a device, a compressed file) is larger
    /// than the cap (`OpenOptions::max_input_bytes`) once decompressed.
    #[error(
        "{} is larger than {cap} bytes, the limit for inputs that cannot be memory-mapped",
        input_name(path)
    )]
    #[diagnostic(
        code(mtf::io::input_too_large),
        help("pass a regular, uncompressed file: it is memory-mapped and has no such limit")
    )]
    InputTooLarge {
        /// The path given.
        path: PathBuf,
        /// The cap in bytes (after decompression for a compressed input).
        cap: u64,
    },

    /// A compressed input is corrupt or truncated.
    #[error("cannot decompress {} ({format}): {source}", input_name(path))]
    #[diagnostic(code(mtf::io::decompress))]
    Decompress {
        /// The path given.
        path: PathBuf,
        /// The compression detected from the magic bytes.
        format: Compression,
        /// The decoder's error.
        #[source]
        source: std::io::Error,
    },

    /// A compressed input was given to a build without the `compression` feature.
    #[error(
        "{} is {format}-compressed, but mtf was built without compression support",
        input_name(path)
    )]
    #[diagnostic(
        code(mtf::io::no_compression_support),
        help("decompress it first, or rebuild with the cargo feature `compression`")
    )]
    NoCompressionSupport {
        /// The path given.
        path: PathBuf,
        /// The compression detected from the magic bytes.
        format: Compression,
    },

    /// An output's name asks for compression (`x.zst`) in a build without the `compression`
    /// feature.
    #[error(
        "cannot write {}: its name asks for {format} compression, but mtf was built without compression support",
        output_name(path)
    )]
    #[diagnostic(
        code(mtf::io::no_compression_support),
        help("name the output without the compression extension, or rebuild with the cargo feature `compression`")
    )]
    NoCompressionForOutput {
        /// The path given.
        path: PathBuf,
        /// The compression its extension names.
        format: Compression,
    },

    /// The folder an output would be created in does not exist.
    #[error(
        "cannot create {}: the folder {} does not exist",
        output_name(path),
        escape_path(folder)
    )]
    #[diagnostic(code(mtf::io::missing_folder))]
    MissingFolder {
        /// The path given.
        path: PathBuf,
        /// The folder that is missing.
        folder: PathBuf,
    },

    /// An output names a symbolic link whose target does not exist.
    #[error(
        "not writing through the dangling symbolic link {} (its target {} does not exist)",
        escape_path(path),
        escape_path(target)
    )]
    #[diagnostic(
        code(mtf::io::dangling_symlink),
        help("remove the link or create its target first")
    )]
    DanglingSymlink {
        /// The path given.
        path: PathBuf,
        /// The final target of the chain of links.
        target: PathBuf,
    },

    /// An output folder (one file per record type) names a file that is not a folder.
    #[error("{} is a file, not a folder", output_name(path))]
    #[diagnostic(
        code(mtf::io::not_a_folder),
        help(
            "this output is a folder with one file per record type; name a new or existing folder"
        )
    )]
    NotAFolder {
        /// The path given.
        path: PathBuf,
    },

    /// An output names a file the command reads ([`crate::io::protect_input`]): writing it would
    /// replace the input before it was read.
    #[error("{}", overwrite_message(path, input))]
    #[diagnostic(
        code(mtf::io::overwrites_input),
        help("write the output to another file (then rename it over the input if that is what you want)")
    )]
    OverwritesInput {
        /// The output path given.
        path: PathBuf,
        /// The input, as it was named.
        input: PathBuf,
    },

    /// An output could not be created or opened (permission denied, symlink loop, ...).
    #[error("cannot create {}: {source}", output_name(path))]
    #[diagnostic(code(mtf::io::create))]
    Create {
        /// The path given.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// Writing an output failed for a reason other than the two below.
    #[error("cannot write {}: {source}", output_name(path))]
    #[diagnostic(code(mtf::io::write))]
    Write {
        /// The path given.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The device holding an output is full (`ENOSPC`), or the disk quota is exhausted.
    #[error("cannot write {}: {source}", output_name(path))]
    #[diagnostic(code(mtf::io::no_space))]
    NoSpace {
        /// The path given.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// An output grew beyond what the file system or the process limit allows (`EFBIG`).
    #[error(
        "cannot write {}: it is too large for its file system or the file-size limit ({source})",
        output_name(path)
    )]
    #[diagnostic(code(mtf::io::file_too_large))]
    FileTooLarge {
        /// The path given.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The finished temporary file could not be renamed over the target.
    #[error(
        "cannot move the finished temporary file {} to {}: {source}",
        escape_path(temp),
        output_name(path)
    )]
    #[diagnostic(code(mtf::io::commit))]
    Commit {
        /// The path given.
        path: PathBuf,
        /// The temporary file (removed after the failure).
        temp: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A temporary file could not be created.
    #[error("cannot create a temporary file in {}: {source}", escape_path(folder))]
    #[diagnostic(
        code(mtf::io::temp_file),
        help(
            "temporary files (a piped or compressed trace spooled to disk, scratch files of compact and replay) go to TMPDIR, or /tmp when it is unset: set TMPDIR to a folder that exists, is writable and has room"
        )
    )]
    TempFile {
        /// The folder the file was to be created in.
        folder: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// An input that cannot be mapped (a pipe, standard input, a compressed file) could not be
    /// copied to the temporary file it is read from: the temporary folder's disk is full, say.
    #[error(
        "cannot copy {} to a temporary file in {} ({written} bytes written): {source}",
        input_name(path),
        escape_path(folder)
    )]
    #[diagnostic(
        code(mtf::io::spool),
        help(
            "a trace read from a pipe, standard input or a compressed file is copied, decompressed, to an unlinked temporary file in TMPDIR and read from there, so that memory stays bounded; it needs as much free space as the decompressed trace: set TMPDIR to a folder with room, or decompress the trace to a regular file first"
        )
    )]
    Spool {
        /// The input.
        path: PathBuf,
        /// The folder of the temporary file.
        folder: PathBuf,
        /// Bytes written to it before the failure.
        written: u64,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl IoError {
    /// The path the error concerns (`-` for standard input or output; the folder for
    /// [`IoError::TempFile`]).
    pub fn path(&self) -> &Path {
        use IoError::*;
        match self {
            Open { path, .. }
            | Read { path, .. }
            | IsFolder { path }
            | NotAFolder { path }
            | InputTooLarge { path, .. }
            | Decompress { path, .. }
            | NoCompressionSupport { path, .. }
            | NoCompressionForOutput { path, .. }
            | MissingFolder { path, .. }
            | DanglingSymlink { path, .. }
            | OverwritesInput { path, .. }
            | Create { path, .. }
            | Write { path, .. }
            | NoSpace { path, .. }
            | FileTooLarge { path, .. }
            | Commit { path, .. }
            | Spool { path, .. } => path,
            TempFile { folder, .. } => folder,
        }
    }

    /// Whether the error is [`IoError::NoSpace`] or [`IoError::FileTooLarge`]: the output did
    /// not fit, as opposed to a broken input or a bad path.
    pub fn is_out_of_space(&self) -> bool {
        matches!(self, IoError::NoSpace { .. } | IoError::FileTooLarge { .. })
    }

    /// Classifies an error met while writing the output at `path`: `ENOSPC` and `EDQUOT` become
    /// [`IoError::NoSpace`], `EFBIG` becomes [`IoError::FileTooLarge`], anything else
    /// [`IoError::Write`].
    pub fn from_write(path: impl Into<PathBuf>, source: std::io::Error) -> IoError {
        let path = path.into();
        match write_failure(&source) {
            WriteFailure::NoSpace => IoError::NoSpace { path, source },
            WriteFailure::TooLarge => IoError::FileTooLarge { path, source },
            WriteFailure::Other => IoError::Write { path, source },
        }
    }
}

enum WriteFailure {
    NoSpace,
    TooLarge,
    Other,
}

// Design: `ErrorKind::StorageFull` and `FileTooLarge` are stable only since Rust 1.83 and the
// crate supports 1.80, so the raw OS codes are compared.
fn write_failure(e: &std::io::Error) -> WriteFailure {
    #[cfg(unix)]
    {
        match e.raw_os_error() {
            Some(libc::ENOSPC) | Some(libc::EDQUOT) => WriteFailure::NoSpace,
            Some(libc::EFBIG) => WriteFailure::TooLarge,
            _ => WriteFailure::Other,
        }
    }
    #[cfg(windows)]
    {
        // ERROR_HANDLE_DISK_FULL, ERROR_DISK_FULL; ERROR_FILE_TOO_LARGE.
        match e.raw_os_error() {
            Some(39) | Some(112) => WriteFailure::NoSpace,
            Some(223) => WriteFailure::TooLarge,
            _ => WriteFailure::Other,
        }
    }
    #[cfg(not(any(unix, windows)))]
    {
        let _ = e;
        WriteFailure::Other
    }
}

/// How an input path is shown in a message: `-` is "standard input"; other paths are escaped for
/// a terminal.
pub fn input_name(path: &Path) -> Cow<'_, str> {
    if path.as_os_str() == "-" {
        Cow::Borrowed("standard input")
    } else {
        escape_path(path)
    }
}

/// The message of [`IoError::OverwritesInput`].
fn overwrite_message(output: &Path, input: &Path) -> String {
    let out = output_name(output);
    if output == input {
        format!("{out} is an input of this command: not writing over it")
    } else if input.as_os_str() == "-" {
        format!("{out} is the file standard input reads: not writing over it")
    } else {
        format!(
            "{out} is the same file as {}, an input of this command: not writing over it",
            escape_path(input)
        )
    }
}

/// How an output path is shown: `-` is "standard output".
pub(crate) fn output_name(path: &Path) -> Cow<'_, str> {
    if path.as_os_str() == "-" {
        Cow::Borrowed("standard output")
    } else {
        escape_path(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn write_errors_are_classified_by_os_code() {
        let e = |code| std::io::Error::from_raw_os_error(code);
        assert!(matches!(
            IoError::from_write("a", e(libc::ENOSPC)),
            IoError::NoSpace { .. }
        ));
        assert!(matches!(
            IoError::from_write("a", e(libc::EFBIG)),
            IoError::FileTooLarge { .. }
        ));
        assert!(matches!(
            IoError::from_write("a", e(libc::EIO)),
            IoError::Write { .. }
        ));
        assert!(IoError::from_write("a", e(libc::EDQUOT)).is_out_of_space());
    }

    #[test]
    fn messages_name_the_path() {
        let err = IoError::from_write("-", std::io::Error::other("boom"));
        assert_eq!(err.to_string(), "cannot write standard output: boom");
        let err = IoError::Open {
            path: "a\x1bb".into(),
            source: std::io::Error::other("gone"),
        };
        assert_eq!(err.to_string(), "cannot open a\\x1Bb: gone");
        assert_eq!(err.path(), Path::new("a\x1bb"));
    }
}
