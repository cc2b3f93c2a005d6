//! What can go wrong when a heap analysis is written for a viewer.

use std::io;

/// An error writing an export for a viewer (heaptrack, pprof, speedscope, DHAT, Chrome trace
/// events).
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ViewerError {
    /// The output could not be written.
    #[error("cannot write the {what}: {source}")]
    #[diagnostic(code(mtf::viewers::write))]
    Write {
        /// What was being written (`heaptrack file`, `pprof profile`, `export`).
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
    /// A record could not be read: a viewer's file holds every event of a trace or none.
    #[error("not exported: the trace is damaged: {message}")]
    #[diagnostic(
        code(mtf::viewers::damaged),
        help("`mtf check` says what is wrong; an export for a viewer holds every event of a trace or none")
    )]
    Damaged {
        /// The problem, with its place.
        message: String,
    },
    /// The trace has more live ids than the interpreter tracks: its events stopped there, and
    /// an export of the rest would be wrong.
    #[error("not exported: the trace has more live ids than the {limit} tracked{}", at_record(*record))]
    #[diagnostic(code(mtf::viewers::limit))]
    Limit {
        /// The limit.
        limit: u64,
        /// The data record where it was reached, where known.
        record: Option<u64>,
    },
}

fn at_record(r: Option<u64>) -> String {
    r.map_or_else(String::new, |r| format!(" (at data record {r})"))
}

impl ViewerError {
    pub(crate) fn write(what: &'static str) -> impl FnOnce(io::Error) -> ViewerError {
        move |source| ViewerError::Write { what, source }
    }
}

impl From<io::Error> for ViewerError {
    fn from(source: io::Error) -> ViewerError {
        ViewerError::Write {
            what: "export",
            source,
        }
    }
}

/// What [`choose_space`] knows of one namespace of the trace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpaceTraits<'a> {
    pub(crate) name: &'a str,
    /// A namespace of ids (allocations), not of nestings or tables.
    pub(crate) ids: bool,
    pub(crate) sized: bool,
    pub(crate) stacks: bool,
    /// It allocates (true where not known yet: a single pass decides before it reads).
    pub(crate) busy: bool,
}

/// The namespace a viewer's export shows, the same for every export: the one asked for, else
/// the first that allocates with stacks and sizes, or with sizes, else the first with sizes (a
/// heap, though idle: a trace of method calls does not become one of its bookkeeping ids), the
/// first that allocates, the first of ids.
pub(crate) fn choose_space(
    spaces: &[SpaceTraits<'_>],
    want: Option<&str>,
) -> Result<usize, ViewerError> {
    if let Some(want) = want {
        return spaces
            .iter()
            .position(|s| s.ids && s.name == want)
            .ok_or_else(|| ViewerError::NoSuchSpace {
                name: want.to_string(),
                have: spaces
                    .iter()
                    .filter(|s| s.ids)
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            });
    }
    let first = |f: &dyn Fn(&SpaceTraits<'_>) -> bool| spaces.iter().position(|s| s.ids && f(s));
    first(&|s| s.busy && s.sized && s.stacks)
        .or_else(|| first(&|s| s.busy && s.sized))
        .or_else(|| first(&|s| s.sized))
        .or_else(|| first(&|s| s.busy))
        .or_else(|| first(&|_| true))
        .ok_or(ViewerError::NoAllocations)
}

/// [`choose_space`] among the namespaces of `interp`'s DTD: `allocs`, the allocations each
/// made (`None` before a record is read: every namespace of ids may allocate).
pub(crate) fn choose_space_of(
    interp: &crate::analysis::Interpreter<'_>,
    allocs: Option<&[u64]>,
    want: Option<&str>,
) -> Result<u32, ViewerError> {
    let spaces: Vec<SpaceTraits<'_>> = interp
        .namespaces()
        .iter()
        .enumerate()
        .map(|(i, n)| SpaceTraits {
            name: &n.name,
            ids: n.kind == crate::analysis::SpaceKind::Ids,
            sized: n.sized,
            stacks: interp.has_stacks(i as u32),
            busy: allocs.is_none_or(|a| a.get(i).is_some_and(|&a| a > 0)),
        })
        .collect();
    choose_space(&spaces, want).map(|i| i as u32)
}
