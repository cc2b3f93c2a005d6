//! Heap statistics in one streaming pass: what `mtf stats` prints, `mtf diff` compares and
//! `mtf plot`/`mtf report` draw.
//!
//! Two accumulators, both fed in trace order:
//!
//! * [`RecordCounter`] sees every decoded record ([`RecordView`]) and counts records per type
//!   and, per integer field, its count, minimum, maximum and sum. It needs no declarations.
//! * [`HeapStats`] sees the [`HeapEvent`]s that a trace's allocation declarations produce and
//!   keeps, per namespace, the live blocks (the only state that grows: memory is bounded by the
//!   live ids, never by the trace), the live bytes and their peak, totals, temporary
//!   allocations, lifetimes, the allocation size histogram and per-site figures.
//!
//! A [`Window`] (`--from`/`--to`) restricts the figures to a slice of the trace: the live state
//! is followed from the start of the trace (a free inside the slice must find its allocation),
//! but flows (allocations, frees, bytes allocated, temporary allocations, lifetimes ended, size
//! histogram) count only events inside the slice, and the peak is the highest live state
//! inside it (the state when it opens included). See docs/stats.md for every figure.
//!
//! The files, one purpose each: `window.rs` (the slice), `records.rs` (records per type and
//! integer fields), `heap.rs` (the heap model: live blocks, sites, namespaces), `lifetimes.rs`
//! and `classes.rs` (lifetime quantiles, log2 size classes), `curve.rs` (the sampled curve of
//! live bytes), `lines.rs` (an imported trace's input lines), `summary.rs` (the figures
//! returned), `source.rs` (where heap events come from), `pass.rs` (the one pass over a
//! trace), `json.rs` (the JSON form), `text.rs` (the text form), `human.rs` (byte counts for people).

mod classes;
mod curve;
mod heap;
mod human;
#[cfg(feature = "json")]
mod json;
mod lifetimes;
mod lines;
mod pass;
mod records;
mod source;
mod summary;
mod text;
mod window;

pub use classes::class_bounds;
pub use curve::{Curve, CurveBucket, CURVE_POINTS};
pub use heap::HeapStats;
pub use human::human_bytes;
#[cfg(feature = "json")]
pub use json::{json_at, json_bytes, json_int};
pub use lifetimes::EXACT_DISTINCT;
pub use lines::{SourceLine, SourceLines};
pub use pass::merge::{compute_chunk, ChunkStats};
#[cfg_attr(not(feature = "parallel"), allow(unused_imports))]
pub(crate) use pass::resume::restore_interpreter;
pub use pass::resume::{
    build_states, build_states_into, compare_states, compute_resumed, end_clock, end_head,
    state_head, BuiltStates, EndHead, StateHead, StatesCompared,
};
pub use pass::{compute, compute_from, compute_opened, compute_scoped, StatsScope};
pub use records::{FieldSummary, RecordCounter, TypeSummary};
#[doc(hidden)]
pub use source::Inlet;
pub use source::{Declared, HeapEventSource};
pub use summary::{
    Clock, LeafSummary, LifetimeSummary, Position, SiteOrder, SiteSummary, SizeClass, SpaceInfo,
    SpaceSummary, Stats,
};
pub use window::{Bound, Place, Window};

/// The `schema` value of `mtf stats --format json`.
pub const JSON_SCHEMA: &str = "mtf-stats/2";

#[cfg(test)]
mod tests;
