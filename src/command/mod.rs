//! What each `mtf` subcommand decides, as library calls: `mtf check`, `dump`, `stats`, `diff`,
//! `info`, `simulate`, `replay`, `size-report` and the seek index of `index` are each an entry point here that takes plain options (no command-line types:
//! every options struct has a `Default`) and an opened trace, and returns a report value, or
//! writes records through a sink the caller gives. The `mtf` command line parses its
//! arguments, opens the trace, calls these and renders what they return; a Python package or a
//! SQL provider calls the same functions.
//!
//! * [`check`]: decode everything, the semantic pass, the seek index verified, the verdict;
//! * [`dump`]: the records that pass a filter and a slice, written by a caller's [`dump::DumpSink`],
//!   on one thread or several (`-j`), in trace order either way;
//! * [`stats`]: the statistics of a trace or a slice of it;
//! * [`diff`]: two traces' statistics compared;
//! * [`info`]: the header, the regions and the records per type.
//!
//! What they share: [`slice`] (`--from`/`--to`), [`seek`] (the seek index beside a trace),
//! [`jobs`] (the threads of one pass and a stream's faults; the events from [`crate::events::read`]). What they
//! cannot do as asked is a [`UsageError`] (each with a code, `mtf::usage::…`); what they notice
//! on the way without stopping is a [`Warning`], given to the caller to show.
//!
//! Whether a trace is opened to be streamed is the caller's choice; the options say what they
//! need (`…Options::streams`): no seek index to use and one thread.
//! * [`simulate`], [`replay`] (the block events of [`blocks`]), [`size_report`], [`index`].

pub mod beside;
pub mod blocks;
#[cfg(feature = "parallel")]
pub mod check;
#[cfg(feature = "parallel")]
pub mod diff;
#[cfg(feature = "parallel")]
pub mod dump;
mod error;
mod hint;
pub mod index;
#[cfg(feature = "parallel")]
pub mod info;
#[cfg(feature = "parallel")]
pub mod jobs;
// The children report in JSON.
#[cfg(all(feature = "replay", feature = "json"))]
pub mod replay;
#[cfg(feature = "parallel")]
pub mod resume;
#[cfg(feature = "parallel")]
pub mod seek;
pub mod simulate;
#[cfg(feature = "compression")]
pub mod size_report;
#[cfg(feature = "parallel")]
pub mod slice;
#[cfg(feature = "parallel")]
pub mod stacks;
#[cfg(feature = "parallel")]
mod state_chunks;
#[cfg(feature = "parallel")]
pub mod stats;

pub use error::{CommandError, UsageError};
pub use hint::not_a_trace_help;

use crate::index::IndexError;

/// Something a command noticed and went on: for the caller to show (the command line writes
/// each on standard error).
#[derive(Debug)]
#[non_exhaustive]
pub enum Warning {
    /// A seek index that cannot be read or does not fit the trace: decoding starts at the
    /// beginning of the trace instead.
    IndexSkipped(IndexError),
    /// A seek index's tables file (docs/format.md §15.6) that cannot be used: a decode from a
    /// checkpoint finds the tables with a pass over the trace's metadata records instead.
    TablesSkipped(IndexError),
    /// A seek index whose checkpoints cannot cut the trace for `-j`: decoded without it.
    IndexNotForPlan(IndexError),
    /// A seek index named but not verified (a check of a slice reads only part of the trace).
    IndexNotVerified {
        /// The index's name, escaped for a terminal.
        index: String,
    },
    /// A seek index without the analysis states `stats -j N` and `check -j N` start their
    /// threads from (docs/format.md §15.4): the analysis runs on one thread.
    NoAnalysisState {
        /// The index's name, escaped for a terminal.
        index: String,
    },
    /// `--from` lies past the last record: the output is that of an empty slice.
    PastEnd(String),
}

#[cfg(all(test, feature = "parallel"))]
mod tests;
