//! The DTD language: text → span-carrying AST → resolved [`Schema`].
//!
//! Entry points: [`parse_str`] (text), [`load`] (a file, capped at [`MAX_DTD_BYTES`]) and
//! [`load_bytes`]. Errors come back as [`DtdErrors`], a miette
//! diagnostic holding every problem found in the file; warnings (likely typos) come with the
//! result and never make a DTD unusable.
//!
//! ```
//! let loaded = metatf::dtd::parse_str("tiny.dtd", "
//!     size.width = 4; size.interpretation = none;
//!     alloc : (tag, size) { tag.value = 4; }
//! ").unwrap();
//! let alloc = loaded.schema.record_by_name(0, "alloc").unwrap();
//! assert_eq!(loaded.schema.record(alloc).slots[1].name, "size");
//! ```

// Design: the prelude (`prelude.dtd`) is ordinary DTD text, parsed on every load and resolved
// together with the user's DTD, so the built-ins follow exactly the same rules as user records.
// When the text has syntax errors, only those are reported: resolving a partly parsed file
// would mostly produce consequences of the syntax errors (a record whose `tag.value` line did
// not parse "has no tag value").

pub mod analysis;
pub(crate) mod ast;
mod error;
pub(crate) mod parse;
pub(crate) mod resolve;
mod schema;

use std::io::Read;
use std::path::{Path, PathBuf};

#[cfg(feature = "fancy")]
pub use error::{render_plain, render_with};
pub use error::{DtdError, DtdErrors, DtdSource, DtdWarning, MAX_REPORTED};
pub use schema::*;

/// The built-in records (docs/format.md §5), in the DTD language.
pub const PRELUDE: &str = include_str!("prelude.dtd");

/// A successfully resolved DTD.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The resolved schema.
    pub schema: Schema,
    /// Problems that do not make the DTD unusable (likely typos in property names).
    pub warnings: Vec<DtdWarning>,
}

pub use crate::limits::MAX_DTD_BYTES;

/// Failure to load a DTD file: it could not be read, is too large, is not UTF-8, or is not a
/// usable DTD.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum DtdLoadError {
    /// The file could not be opened or read.
    #[error("cannot read DTD {}: {source}", path.display())]
    #[diagnostic(code(mtf::dtd::io))]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file holds more than [`MAX_DTD_BYTES`] bytes.
    #[error("DTD {} is too large: more than {limit} bytes", path.display())]
    #[diagnostic(
        code(mtf::dtd::too_large),
        help("a DTD may hold at most 16 MiB; is this the right file?")
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The limit that was exceeded, in bytes.
        limit: u64,
    },
    /// The file is not UTF-8 text.
    #[error("DTD {} is not UTF-8: invalid byte at offset {offset} (line {line})", path.display())]
    #[diagnostic(code(mtf::dtd::not_utf8), help("a DTD is UTF-8 text"))]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// Byte offset of the first byte that is not part of valid UTF-8.
        offset: usize,
        /// The 1-based line that byte is on.
        line: usize,
    },
    /// The DTD has errors.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Invalid(#[from] DtdErrors),
}

/// Parse and resolve DTD text. `name` is used in messages (usually the file name).
pub fn parse_str(name: &str, text: &str) -> Result<Loaded, DtdErrors> {
    let src = error::DtdSource::new(name, text);
    let (dtd, problems) = parse::parse(text);
    if !problems.is_empty() {
        let errors = problems
            .into_iter()
            .map(|p| error::from_parse(p, &src))
            .collect();
        return Err(DtdErrors::new(name, errors));
    }
    let (prelude, prelude_problems) = parse::parse(PRELUDE);
    debug_assert!(prelude_problems.is_empty(), "the prelude parses");
    let (schema, errors, warnings) = resolve::resolve(
        name,
        resolve::Input {
            dtd: &prelude,
            text: PRELUDE,
        },
        resolve::Input { dtd: &dtd, text },
        &src,
    );
    match schema {
        Some(schema) if errors.is_empty() => Ok(Loaded {
            schema,
            warnings: error::cap_warnings(warnings),
        }),
        _ => Err(DtdErrors::new(name, errors)),
    }
}

/// Read, parse and resolve a DTD file: at most [`MAX_DTD_BYTES`] are read, whatever the file
/// is. Diagnostics name the file as given.
pub fn load(path: &Path) -> Result<Loaded, DtdLoadError> {
    let text = read_file(path)?;
    Ok(parse_str(&path.display().to_string(), &text)?)
}

/// Read a DTD file as text, capped at [`MAX_DTD_BYTES`] while reading, and checked to be UTF-8.
pub fn read_file(path: &Path) -> Result<String, DtdLoadError> {
    let io = |source| DtdLoadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    read_capped(file, path)
}

/// Read DTD text from any reader (`path` is used in messages), with the same cap and checks as
/// [`read_file`].
pub fn read_capped(reader: impl Read, path: &Path) -> Result<String, DtdLoadError> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_DTD_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| DtdLoadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    text_of(bytes, path)
}

/// Parse and resolve a DTD given as bytes (embedded in a binary, read from elsewhere): the same
/// size and UTF-8 checks as [`load`], then [`parse_str`]. `name` is used in messages.
pub fn load_bytes(name: &str, bytes: &[u8]) -> Result<Loaded, DtdLoadError> {
    let text = text_of(bytes.to_vec(), Path::new(name))?;
    Ok(parse_str(name, &text)?)
}

fn text_of(bytes: Vec<u8>, path: &Path) -> Result<String, DtdLoadError> {
    if bytes.len() as u64 > MAX_DTD_BYTES {
        return Err(DtdLoadError::TooLarge {
            path: path.to_path_buf(),
            limit: MAX_DTD_BYTES,
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        DtdLoadError::NotUtf8 {
            path: path.to_path_buf(),
            offset,
            line,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(e: &DtdLoadError) -> String {
        use miette::Diagnostic;
        e.code().map(|c| c.to_string()).unwrap_or_default()
    }

    #[test]
    fn load_reports_io_with_path() {
        let e = load(Path::new("/no/such/dir/x.dtd")).unwrap_err();
        assert_eq!(code(&e), "mtf::dtd::io");
        assert!(e.to_string().contains("/no/such/dir/x.dtd"), "{e}");
    }

    #[test]
    fn cap_is_applied_while_reading() {
        // An endless reader stands for /dev/zero, a FIFO or a /proc file.
        let e = read_capped(std::io::repeat(b' '), Path::new("zero")).unwrap_err();
        assert!(
            matches!(
                e,
                DtdLoadError::TooLarge {
                    limit: MAX_DTD_BYTES,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(code(&e), "mtf::dtd::too_large");
        assert!(e.to_string().contains("zero"));
        let exact = vec![b' '; MAX_DTD_BYTES as usize];
        assert!(read_capped(&exact[..], Path::new("x")).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn dev_zero_is_bounded() {
        let e = load(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(code(&e), "mtf::dtd::too_large");
    }

    #[test]
    fn not_utf8_reports_offset_and_line() {
        let e = load_bytes("b.dtd", b"x.width = 1;\n// caf\xC3\n").unwrap_err();
        assert!(
            matches!(
                e,
                DtdLoadError::NotUtf8 {
                    offset: 19,
                    line: 2,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(code(&e), "mtf::dtd::not_utf8");
        assert!(e.to_string().contains("b.dtd"));
    }

    #[test]
    fn load_bytes_parses() {
        let l = load_bytes("ok.dtd", b"").unwrap();
        assert_eq!(l.schema.records.len(), 3);
        let e = load_bytes("bad.dtd", b"x.width = ;").unwrap_err();
        assert!(matches!(e, DtdLoadError::Invalid(_)));
    }
}
