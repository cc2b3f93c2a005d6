//! What can go wrong when a stack profile is written out.

use std::io;

/// An error writing folded stacks, a tree or a flame graph.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum StacksError {
    /// The output could not be written.
    #[error("cannot write the {what}: {source}")]
    #[diagnostic(code(mtf::stacks::write))]
    Write {
        /// What was being written (`folded stacks`, `flame graph`).
        what: &'static str,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// No stack has a cost of the one asked for: a picture would be empty.
    #[error("no stack has a cost of {cost}: nothing to draw")]
    #[diagnostic(
        code(mtf::stacks::empty),
        help(
            "choose another cost (allocations, bytes, temporary, peak, leaked) or a longer slice"
        )
    )]
    Empty {
        /// The cost's name.
        cost: &'static str,
    },
}

impl StacksError {
    pub(crate) fn write(what: &'static str) -> impl FnOnce(io::Error) -> StacksError {
        move |source| StacksError::Write { what, source }
    }
}
