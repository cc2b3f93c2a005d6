//! What can go wrong when a heap analysis is written for a viewer.

use std::io;

/// An error writing an export for a viewer (heaptrack, pprof).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ViewerError {
    /// The output could not be written.
    #[error("cannot write the {what}: {source}")]
    #[diagnostic(code(mtf::viewers::write))]
    Write {
        /// What was being written (`heaptrack file`, `pprof profile`).
        what: &'static str,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// The trace's DTD declares no namespace of allocations (ids that come alive and die).
    #[error("its DTD declares no allocations (a namespace of ids with `defines`): there is no heap to export")]
    #[diagnostic(
        code(mtf::viewers::no_allocations),
        help("docs/format.md §14 says how a DTD declares what its records allocate and free")
    )]
    NoAllocations,
    /// The namespace asked for is not one of the trace's namespaces of allocations.
    #[error("no namespace of allocations `{name}`; the trace has: {have}")]
    #[diagnostic(code(mtf::viewers::space))]
    NoSuchSpace {
        /// The name asked for.
        name: String,
        /// The namespaces of allocations it has, comma-separated.
        have: String,
    },
    /// The trace has more live ids than the interpreter tracks: its events stopped there, and
    /// an export of the rest would be wrong.
    #[error("the trace has more live ids than the {limit} tracked: not exported")]
    #[diagnostic(code(mtf::viewers::limit))]
    Limit {
        /// The limit.
        limit: usize,
    },
}

impl ViewerError {
    pub(crate) fn write(what: &'static str) -> impl FnOnce(io::Error) -> ViewerError {
        move |source| ViewerError::Write { what, source }
    }
}
