//! Analysis of a trace from the declarations in its DTD (extension `analysis/1`,
//! docs/format.md §14): what a heap did — ids defined and undefined, bytes allocated and freed,
//! nesting, monotonic fields — computed in one streaming pass over the library's public
//! reading API (`decode`, `dtd`, `open`).
//!
//! * [`event`]: the [`HeapEvent`] type that the checker, the statistics and `replay`/`simulate`
//!   share.
//! * [`interpret`]: the producer. [`Interpreter`] applies the declarations
//!   ([`crate::dtd::Schema::analysis`]) to one decoded record at a time and reports
//!   [`HeapEvent`]s and [`Finding`]s to a [`Sink`]; use it when you also look at the records
//!   themselves (statistics per record type). [`HeapEvents`] wraps a reader as an iterator of
//!   events. Both expose the declared namespaces ([`Interpreter::namespaces`]: name, kind,
//!   keyed, shared, sized), the time unit and [`Interpreter::site_name`].
//! * [`check`]: `mtf check`'s semantic pass: findings counted per kind, with the record that
//!   defined the id.
//!
//! Memory is proportional to the ids alive and the nesting levels open, bounded by
//! [`DEFAULT_MAX_TRACKED`] entries (see [`Interpreter::set_limit`]).
//!
//! ```
//! use metatf::analysis::{HeapOp, Interpreter};
//! use metatf::decode::Event;
//!
//! let opened = metatf::open("traces/android.mtf")?;
//! let reader = opened.reader();
//! let mut interp = Interpreter::new(reader.schema());
//! let mut events = Vec::new();
//! let mut records = reader.records();
//! while let Some(ev) = records.next() {
//!     if let Event::Record(r) = ev {
//!         interp.record(&r, &mut events); // a Vec<HeapEvent> is a Sink
//!     }
//! }
//! interp.finish(&mut events);
//! let frees = events.iter().filter(|e| matches!(e.op, HeapOp::Free { .. })).count();
//! assert!(frees > 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod check;
pub mod event;
pub mod interpret;

pub use crate::dtd::analysis::{Namespace, Severity, SpaceId, SpaceKind, TimeUnit};
pub use event::{HeapEvent, HeapOp, OpCounts, OpKind};
pub use interpret::{
    At, Finding, FindingKind, HeapEvents, Interpreter, Sink, DEFAULT_MAX_TRACKED, MAX_TRACKED,
};
pub mod diff;
#[cfg(feature = "plot")]
pub mod plot;
#[cfg(feature = "plot")]
pub mod report;
pub mod stats;
