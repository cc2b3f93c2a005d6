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
mod ids;
pub(crate) mod parse;
pub(crate) mod resolve;
mod schema;

use std::io::Read;
use std::path::{Path, PathBuf};

#[cfg(feature = "fancy")]
pub use error::{render_plain, render_with};
pub use error::{DtdError, DtdErrors, DtdSource, DtdWarning, MAX_REPORTED};
pub use ids::{RecordId, SlotId, Span};
pub use schema::*;

/// The built-in records (docs/format.md §5), in the DTD language.
pub const PRELUDE: &str = include_str!("prelude.dtd");

/// The built-in fragments a DTD takes in with `include NAME;` (docs/format.md §3.5): name and
/// text. A fragment's text never changes once published (a new version gets a new name).
// Design: a fragment is resolved with the prelude, so its records see only each other and the
// built-ins and mean the same in every DTD that includes it, and its spans never point into the
// user's text (an error about a clash names the user's definition).
pub const FRAGMENTS: &[(&str, &str)] = &[("import", include_str!("fragment_import.dtd"))];

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
    #[error("cannot read DTD {}: {cause}", path.display())]
    #[diagnostic(code(mtf::dtd::io))]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause (in the message, so that it is said once).
        cause: std::io::Error,
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
    /// A file whose name does not end in `.dtd` and that does not parse as a DTD: its errors
    /// are not shown, since they would quote its text (docs/format.md §10).
    #[error(
        "{} is not a DTD: {count} error(s), the first at line {line}, column {column} (the text of a file whose name does not end in .dtd is not shown)",
        path.display()
    )]
    #[diagnostic(
        code(mtf::dtd::not_a_dtd),
        help("is this the right file? Name a DTD file `NAME.dtd` to see its errors")
    )]
    NotADtd {
        /// The file.
        path: PathBuf,
        /// How many errors it has.
        count: usize,
        /// The 1-based line of the first error.
        line: usize,
        /// The 1-based column (in characters) of the first error.
        column: usize,
    },
}

/// Parse and resolve the text of the DTD file `path` (already read, as [`read_file`] does):
/// [`parse_str`], except that the errors of a file whose name does not end in `.dtd` are
/// summed up as [`DtdLoadError::NotADtd`], without quoting its text.
pub fn parse_file_text(path: &Path, text: &str) -> Result<Loaded, DtdLoadError> {
    let name = path.display().to_string();
    match parse_str(&name, text) {
        Ok(l) => Ok(l),
        Err(e) => {
            let file = path.file_name().map(|n| n.to_string_lossy());
            // The rule of container::has_dtd_suffix (docs/format.md §10); dtd may not use
            // container (docs/architecture.md).
            let dtd_suffix = |n: &str| {
                n.len() > 4
                    && n.get(n.len() - 4..)
                        .is_some_and(|s| s.eq_ignore_ascii_case(".dtd"))
            };
            if file.is_some_and(|n| dtd_suffix(&n)) {
                return Err(e.into());
            }
            let offset = e.errors.first().map_or(0, |e| e.offset()).min(text.len());
            let before = text.get(..offset).unwrap_or("");
            let line = 1 + before.matches('\n').count();
            let column = 1 + before.rsplit('\n').next().map_or(0, |l| l.chars().count());
            Err(DtdLoadError::NotADtd {
                path: path.to_path_buf(),
                count: e.errors.len() + e.omitted,
                line,
                column,
            })
        }
    }
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
    let prelude_text = with_fragments(&dtd, &src).map_err(|e| DtdErrors::new(name, e))?;
    let (prelude, prelude_problems) = parse::parse(&prelude_text);
    debug_assert!(prelude_problems.is_empty(), "the prelude parses");
    let (schema, errors, warnings) = resolve::resolve(
        name,
        resolve::ParsedDtd {
            dtd: &prelude,
            text: &prelude_text,
        },
        resolve::ParsedDtd { dtd: &dtd, text },
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

/// The prelude followed by the fragments the DTD includes, each once.
fn with_fragments(dtd: &ast::Dtd, src: &error::Src) -> Result<String, Vec<DtdError>> {
    let mut text = PRELUDE.to_string();
    let mut seen: Vec<&str> = Vec::new();
    let mut errors = Vec::new();
    for item in &dtd.items {
        let ast::Item::Include(n) = item else {
            continue;
        };
        let fail = |msg: String| DtdError::Include {
            msg,
            src: src.clone(),
            span: error::sspan(n.span),
        };
        match FRAGMENTS.iter().find(|f| f.0 == n.name) {
            None => errors.push(fail(format!("no built-in fragment `{}`", n.name))),
            Some(_) if seen.contains(&n.name.as_str()) => {
                errors.push(fail(format!("fragment `{}` is included twice", n.name)))
            }
            Some((name, body)) => {
                seen.push(name);
                text.push('\n');
                text.push_str(body);
            }
        }
    }
    if errors.is_empty() {
        Ok(text)
    } else {
        Err(errors)
    }
}

/// Read, parse and resolve a DTD file: at most [`MAX_DTD_BYTES`] are read, whatever the file
/// is. Diagnostics name the file as given.
pub fn load(path: &Path) -> Result<Loaded, DtdLoadError> {
    let text = read_file(path)?;
    parse_file_text(path, &text)
}

/// Read a DTD file as text, capped at [`MAX_DTD_BYTES`] while reading, and checked to be UTF-8.
pub fn read_file(path: &Path) -> Result<String, DtdLoadError> {
    let io = |cause| DtdLoadError::Io {
        path: path.to_path_buf(),
        cause,
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
        .map_err(|cause| DtdLoadError::Io {
            path: path.to_path_buf(),
            cause,
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

    /// `include import;` takes in the fragment's records exactly as if its text were pasted;
    /// an unknown or repeated fragment, or an include in a section, is an error.
    #[test]
    fn include_takes_in_a_fragment_as_if_pasted() {
        let body = super::FRAGMENTS[0].1;
        let own = "x.width = 2; x.interpretation = none;\nsection s 1 { ev : (tag, x) { tag.value = 4; } }\n";
        let inc = parse_str("a.dtd", &format!("tag.width = 1;\ninclude import;\n{own}")).unwrap();
        let pasted = parse_str("b.dtd", &format!("tag.width = 1;\n{body}\n{own}")).unwrap();
        let shape = |s: &Schema, n: &str| {
            let r = s.record(s.record_by_name(0, n).unwrap());
            (
                r.tag,
                r.slots
                    .iter()
                    .map(|x| {
                        (
                            x.name.clone(),
                            format!("{:?}", x.kind),
                            format!("{:?}", x.interp),
                        )
                    })
                    .collect::<Vec<_>>(),
            )
        };
        for n in [
            "import_origin",
            "import_part",
            "import_raw",
            "import_entry",
            "import_routed",
            "import_archive",
        ] {
            assert_eq!(shape(&inc.schema, n), shape(&pasted.schema, n), "{n}");
        }
        let err = |text: &str| {
            let e = parse_str("c.dtd", text).unwrap_err();
            crate::dtd::render_plain(&e)
        };
        assert!(err("include nothing;\n").contains("no built-in fragment `nothing`"));
        assert!(err("include import;\ninclude import;\n").contains("included twice"));
        assert!(err("section s 1 { include import; }\n").contains("expected"));
        assert!(
            err("include import;\nimport_raw : (tag) { tag.value = 9; }\n").contains("import_raw")
        );
        // `include` is still a name elsewhere.
        parse_str("d.dtd", "include.width = 1; include.interpretation = none;\nr : (tag, include) { tag.value = 4; }\n").unwrap();
    }

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
