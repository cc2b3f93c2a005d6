//! Opening a trace together with its schema, the DTD found as docs/format.md §10 says.

use std::path::{Path, PathBuf};

use miette::Diagnostic;

use crate::container::{ContainerError, Located, Trace};
use crate::decode::Reader;
use crate::dtd::{DtdLoadError, DtdWarning, Schema};

/// Where the DTD of an opened trace came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DtdSource {
    /// Given explicitly.
    Explicit(PathBuf),
    /// Found beside the trace.
    TraceDir(PathBuf),
    /// Found in a folder of `MTF_DTD_PATH`.
    EnvPath(PathBuf),
    /// Built into the library (this repository's `dtds/`).
    Shipped(&'static str),
}

impl std::fmt::Display for DtdSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DtdSource::Explicit(p) => write!(f, "{} (--dtd)", p.display()),
            DtdSource::TraceDir(p) => write!(f, "{} (beside the trace)", p.display()),
            DtdSource::EnvPath(p) => write!(f, "{} (MTF_DTD_PATH)", p.display()),
            DtdSource::Shipped(n) => write!(f, "{n} (built into mtf)"),
        }
    }
}

/// Why a trace could not be opened with its DTD.
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum OpenError {
    /// The trace could not be read or its container is invalid.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Container(#[from] ContainerError),
    /// The DTD could not be read or is not usable.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Dtd(#[from] DtdLoadError),
    /// No DTD was found.
    #[error("{trace}: {reason}")]
    #[diagnostic(code(mtf::dtd::not_found), help("name the DTD with --dtd PATH"))]
    DtdNotFound {
        /// The trace.
        trace: String,
        /// Where it was looked for.
        reason: String,
        /// Whether the DTD was named explicitly (then a missing file is a usage error).
        explicit: bool,
    },
}

/// A trace opened with its schema.
pub struct Opened {
    trace: Trace<'static>,
    schema: Schema,
    source: DtdSource,
    text: String,
    warnings: Vec<DtdWarning>,
}

impl Opened {
    /// The trace (header, section index, bytes).
    pub fn trace(&self) -> &Trace<'static> {
        &self.trace
    }

    /// The schema of its DTD.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Where the DTD came from.
    pub fn dtd_source(&self) -> &DtdSource {
        &self.source
    }

    /// The DTD's text, as read when the trace was opened.
    pub fn dtd_text(&self) -> &str {
        &self.text
    }

    /// Problems in the DTD that do not make it unusable (likely typos).
    pub fn warnings(&self) -> &[DtdWarning] {
        &self.warnings
    }

    /// For a trace opened with [`open_salvaging`] whose container is damaged, what is wrong.
    pub fn damage(&self) -> Option<&ContainerError> {
        self.trace.damage()
    }

    /// A reader over the records (compiles the schema's record programs).
    pub fn reader(&self) -> Reader<'_> {
        Reader::new(&self.trace, &self.schema)
    }
}

/// Open the trace at `path` and the DTD its header names, looked up beside the trace, then in
/// `MTF_DTD_PATH`, then among the DTDs built into the library.
pub fn open(path: impl AsRef<Path>) -> Result<Opened, OpenError> {
    with_trace(Trace::open(path.as_ref())?, None)
}

/// Open the trace at `path` even when its container is damaged (a trace cut short by a crashed
/// tracer): the regions that can be trusted are decoded, and [`Opened::damage`] says what is
/// wrong. `dtd` as [`open_with_dtd`], or `None` to use the header's name.
pub fn open_salvaging(path: impl AsRef<Path>, dtd: Option<&Path>) -> Result<Opened, OpenError> {
    with_trace(Trace::open_salvaging(path.as_ref())?, dtd)
}

/// Open the trace at `path` with an explicit DTD file.
pub fn open_with_dtd(path: impl AsRef<Path>, dtd: impl AsRef<Path>) -> Result<Opened, OpenError> {
    with_trace(Trace::open(path.as_ref())?, Some(dtd.as_ref()))
}

/// Open a trace held in memory; `dtd` as [`open_with_dtd`], or the header's name looked up in
/// `MTF_DTD_PATH` and among the built-in DTDs.
pub fn open_bytes(bytes: Vec<u8>, dtd: Option<&Path>) -> Result<Opened, OpenError> {
    with_trace(Trace::from_bytes(bytes)?, dtd)
}

/// Find and load the DTD of an opened trace.
pub fn with_trace(trace: Trace<'static>, dtd: Option<&Path>) -> Result<Opened, OpenError> {
    let env = std::env::var_os("MTF_DTD_PATH");
    let located = trace.locate_dtd(dtd, env.as_deref());
    // The text is kept: a derived DTD (`mtf encode --split`) extends it, and a DTD read from a
    // FIFO cannot be read twice.
    let file = |p: &Path| -> Result<(crate::dtd::Loaded, String), OpenError> {
        let text = crate::dtd::read_file(p)?;
        let loaded =
            crate::dtd::parse_str(&p.display().to_string(), &text).map_err(DtdLoadError::from)?;
        Ok((loaded, text))
    };
    let ((loaded, text), source) = match located {
        Located::Explicit(p) => (file(&p)?, DtdSource::Explicit(p)),
        Located::TraceDir(p) => (file(&p)?, DtdSource::TraceDir(p)),
        Located::EnvPath(p) => (file(&p)?, DtdSource::EnvPath(p)),
        Located::Shipped(name, text) => (
            (
                crate::dtd::parse_str(name, text).map_err(DtdLoadError::from)?,
                text.to_string(),
            ),
            DtdSource::Shipped(name),
        ),
        Located::NotFound(nf) => {
            return Err(OpenError::DtdNotFound {
                trace: trace
                    .path()
                    .map_or_else(|| "<memory>".to_string(), |p| p.display().to_string()),
                reason: nf.to_string(),
                explicit: dtd.is_some(),
            })
        }
    };
    let mut schema = loaded.schema;
    if let DtdSource::Explicit(p) | DtdSource::TraceDir(p) | DtdSource::EnvPath(p) = &source {
        if let Some(n) = p.file_name() {
            schema.name = n.to_string_lossy().into_owned();
        }
    }
    Ok(Opened {
        trace,
        schema,
        source,
        text,
        warnings: loaded.warnings,
    })
}
