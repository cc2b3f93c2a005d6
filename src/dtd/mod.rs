//! The DTD language: text → AST ([`ast`]) → resolved [`Schema`] ([`resolve`]).
//!
//! Entry points: [`parse_str`] and [`load`]. Errors come back as [`DtdErrors`], a miette
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

pub mod ast;
pub mod error;
pub mod parse;
pub mod resolve;
pub mod schema;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use miette::NamedSource;

#[cfg(feature = "fancy")]
pub use error::{render_plain, render_with};
pub use error::{DtdError, DtdErrors, DtdWarning};
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

/// Failure to load a DTD file: it could not be read, or it is not a usable DTD.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum DtdLoadError {
    /// The file could not be read (or is not UTF-8).
    #[error("cannot read DTD {}: {source}", path.display())]
    #[diagnostic(code(mtf::dtd::io))]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The DTD has errors.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Invalid(#[from] DtdErrors),
}

/// Parse and resolve DTD text. `name` is used in messages (usually the file name).
pub fn parse_str(name: &str, text: &str) -> Result<Loaded, DtdErrors> {
    let src: error::Src = NamedSource::new(name, Arc::<str>::from(text));
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
        Some(schema) if errors.is_empty() => Ok(Loaded { schema, warnings }),
        _ => Err(DtdErrors::new(name, errors)),
    }
}

/// Read, parse and resolve a DTD file. Diagnostics name the file as given.
pub fn load(path: &Path) -> Result<Loaded, DtdLoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| DtdLoadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(parse_str(&path.display().to_string(), &text)?)
}
