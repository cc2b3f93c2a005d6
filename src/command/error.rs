//! The errors of the command entry points: a request that cannot be met as asked (usage), or an
//! output that could not be written. Each has a code (`mtf::usage::…`), which the command line
//! maps to its exit status in one place (`cli/exit.rs`).

use miette::Diagnostic;
use thiserror::Error;

/// A request a command cannot carry out as asked: its options contradict each other or do not
/// fit the trace (a slice by time of a trace without a clock, a record type its DTD lacks).
#[derive(Debug, Error, Diagnostic)]
#[non_exhaustive]
pub enum UsageError {
    /// `--from` at or after `--to`, both records or both times.
    #[error("the slice is empty: --from must come before --to (--to is exclusive)")]
    #[diagnostic(code(mtf::usage::slice))]
    EmptySlice,
    /// A moment (`--at`) and a slice (`--from`/`--to`) together.
    #[error("--at is a moment, not a slice: give --at, or --from/--to, not both")]
    #[diagnostic(code(mtf::usage::slice))]
    AtAndSlice,
    /// A slice by time of a trace whose DTD declares no time (docs/format.md §14.4).
    #[error(
        "{trace}: cannot slice by time (t{time}): the trace's DTD declares no time \
         (docs/format.md §14.4); slice by record instead (--from N, --to N)"
    )]
    #[diagnostic(code(mtf::usage::no_clock))]
    NoDeclaredTime {
        /// The trace, escaped for a terminal.
        trace: String,
        /// The time asked for.
        time: u64,
    },
    /// A slice by time of a trace whose records have no time, or always the same one.
    #[error(
        "{trace}: cannot slice by time (t{time}): the trace has no clock ({why}); slice by \
         data record instead (--from N, --to N)"
    )]
    #[diagnostic(code(mtf::usage::no_clock))]
    NoClock {
        /// The trace, escaped for a terminal.
        trace: String,
        /// The time asked for.
        time: u64,
        /// Why there is no clock.
        why: String,
    },
    /// The trace and its seek index both read from standard input.
    #[error("the trace and its seek index cannot both be standard input: name the index's file")]
    #[diagnostic(code(mtf::usage::index))]
    IndexAndTraceStdin,
    /// One seek index named for several traces.
    #[error(
        "--index names the seek index of one trace, and {traces} traces are given: dump them \
         one at a time, or leave --index out (each trace's own TRACE.idx is used)"
    )]
    #[diagnostic(code(mtf::usage::index))]
    IndexOfMany {
        /// The traces given.
        traces: usize,
    },
    /// Both traces of a comparison read from standard input.
    #[error("standard input can be only one of the two traces")]
    #[diagnostic(code(mtf::usage::stdin))]
    BothStdin,
    /// CSV asked for with other than one record type.
    #[error(
        "--format csv prints one record type (a CSV file has one set of columns): give exactly \
         one -r NAME ({given} given), e.g. `mtf dump -f csv -r alloc T > alloc.csv`"
    )]
    #[diagnostic(code(mtf::usage::csv))]
    CsvTypes {
        /// The record types given.
        given: usize,
    },
    /// CSV of a record type whose columns differ between the sections that define it.
    #[error(
        "record types named `{name}` differ from section to section: choose one with -s SECTION"
    )]
    #[diagnostic(code(mtf::usage::csv))]
    CsvColumns {
        /// The record type's name.
        name: String,
    },
    /// Figures by stack asked of a trace (or a namespace) without stacks, or contradicting
    /// options of a stack profile.
    #[error("{0}")]
    #[diagnostic(code(mtf::usage::stacks))]
    Stacks(String),
    /// A record type the DTD does not declare.
    #[error("the DTD has no record type `{name}`")]
    #[diagnostic(code(mtf::usage::record))]
    NoRecord {
        /// The name asked for.
        name: String,
    },
    /// A section the DTD does not declare.
    #[error("no section `{asked}` in the DTD; it declares: global (0), {declared}")]
    #[diagnostic(code(mtf::usage::section))]
    NoSection {
        /// The section asked for.
        asked: String,
        /// The sections the DTD declares, `name (id)`, comma-separated.
        declared: String,
    },
}

/// Why a command entry point stopped.
#[derive(Debug, Error, Diagnostic)]
#[non_exhaustive]
pub enum CommandError {
    /// The request cannot be carried out as asked.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Usage(#[from] UsageError),
    /// The caller's output could not be written (a closed pipe among them).
    #[error("cannot write the output: {0}")]
    #[diagnostic(code(mtf::io::write))]
    Write(#[from] std::io::Error),
}
