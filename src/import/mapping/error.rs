//! Why a mapping cannot be used: a file that cannot be read, a problem in its text (with its
//! line and column), a DTD that cannot be found or loaded.

use std::sync::Arc;

use miette::{Diagnostic, NamedSource, SourceSpan};

/// Why a mapping file could not be loaded.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[non_exhaustive]
pub enum MappingLoadError {
    /// The file could not be read, is too large or is not UTF-8.
    #[error("cannot read mapping {path}: {message}")]
    #[diagnostic(code(mtf::import::mapping_io))]
    Read {
        /// The file, as given.
        path: String,
        /// What failed.
        message: String,
    },
    /// The mapping has an error.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Parse(Box<MapError>),
}

/// Why the DTD of a mapping could not be loaded.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[non_exhaustive]
pub enum MappingDtdError {
    /// The DTD file could not be loaded.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Load(#[from] crate::dtd::DtdLoadError),
    /// Neither beside the mapping nor among the shipped DTDs.
    #[error("DTD {dtd} of mapping `{mapping}` not found")]
    #[diagnostic(
        code(mtf::import::dtd_not_found),
        help("put it beside the mapping file, or give --dtd")
    )]
    NotFound {
        /// The DTD the mapping names.
        dtd: String,
        /// The mapping's format name.
        mapping: String,
    },
    /// The name or the file it leads to may not be used (docs/format.md §10).
    #[error("DTD {dtd} of mapping `{mapping}` is not used: {why}")]
    #[diagnostic(
        code(mtf::import::dtd_refused),
        help("a mapping names a DTD file beside it (a name ending in .dtd, no folder); give another one with --dtd")
    )]
    Refused {
        /// The DTD the mapping names (escaped for a terminal).
        dtd: String,
        /// The mapping's format name.
        mapping: String,
        /// Why.
        why: String,
    },
}

/// A problem in a mapping file, with its position.
#[derive(Debug, Clone, thiserror::Error, Diagnostic)]
#[error("{file}:{line}:{col}: {message}")]
#[diagnostic(code(mtf::import::mapping), help("see docs/mappings.md"))]
pub struct MapError {
    /// Mapping file name.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong.
    pub message: String,
    /// The mapping source.
    #[source_code]
    pub src: NamedSource<Arc<str>>,
    /// Where.
    #[label("here")]
    pub span: SourceSpan,
}
