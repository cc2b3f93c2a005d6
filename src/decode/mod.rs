//! The generic decoder: compiled record programs + live metadata state → borrowed record views.
//!
//! Build a [`Reader`] from a trace and its schema (or use [`crate::open`]), then walk
//! [`Reader::records`]: each [`Event`] is a record, a problem, or damage to a region.

mod checkpoint;
mod detached;
mod error;
mod reader;
mod records;
mod tables;
mod value;
mod view;
mod visit;

pub use checkpoint::{Checkpoint, ResumeError, StoredError};
pub use detached::{Detached, Replay};
pub use error::{Damage, DamageKind, Position, Problem, ProblemKind, RefError};
pub(crate) use reader::{Bytes, Window};
pub use reader::{Reader, Region};
pub(crate) use records::{Decoder, Stop};
pub use records::{
    Event, EventPasses, EventStream, Records, ScanStop, ScanTimes, ScanValues, Scanned,
    MAX_PROBLEMS_PER_RECORD, MAX_SCAN_VALUES,
};
pub use tables::{Resolved, MAX_REF_HOPS};

pub(crate) use value::Val;
pub use value::{ElementRef, Value};
pub use view::{Field, MetaChange, RecordView};
pub(crate) use visit::{FieldWalk, Visit};

/// Evaluate a width expression over the most recent values of a record's slots (indexed by
/// slot), as the decoder does (docs/format.md §3.4).
pub use crate::layout::eval_width;
