//! Heap analyses in the files other people's viewers open (`mtf export --to
//! heaptrack|pprof|speedscope|dhat|chrome`, docs/formats.md, *Exports for viewers*):
//! heaptrack's own data file, read by `heaptrack_print` and `heaptrack_gui`; pprof's
//! `profile.proto`, read by `go tool pprof`; and, from one pass over the heap events ([`read`])
//! that gives a [`HeapView`], [`write_speedscope`] (speedscope's sampled profiles weighted by
//! bytes and counts), [`write_dhat`] (DHAT's JSON as valgrind's dh_view.html loads it) and
//! [`write_chrome`] (Chrome/Perfetto trace events: counters and the peak as an instant).
//!
//! Each writer takes what the library's reading API gives — the heap events of a trace
//! ([`crate::analysis::HeapEvents`], with the interpreter's stacks) or a
//! [`StackProfile`](crate::stacks::StackProfile) — and a [`std::io::Write`]; where the bytes go
//! (a file replaced atomically, compressed by its name, standard output) is the caller's
//! [`crate::io::Output`].

// Design: a module of its own, beside `stacks` and `columnar`, rather than more mapping files:
// a mapping writes a trace's records back in their own format, losslessly, and knows nothing
// of what they mean; these writers write what the records *mean* (blocks alive, stacks, the
// peak), which only the heap events and the stack profile know, so they work on every format
// whose DTD declares its allocations. Every export shows the same namespace by default
// (`error::choose_space`) and fails with the same errors (`ViewerError`).
//
// Design (the view of speedscope, DHAT and Chrome trace events): one pass of its own over the
// interpreter's heap events (through `events::read`: a file, a pipe, a compressed stream alike)
// and the interpreter's own `stack_profile` for the frames, rather than the statistics pass:
// DHAT wants figures the statistics do not keep per site (the total lifetime, a site's own
// maximum in blocks) and the trace-event counters want every change of the live state in time,
// so one pass keeps all of them and the three formats agree with one another. Its memory is
// bounded by the live blocks, the program points and the points kept of the curves
// (`ViewOptions::points`), never by the length of the trace. The figures follow `mtf stats` (a
// realloc ends a block and starts one; an allocation of a live id in a namespace that is not
// shared ends the old block), checked against `mtf stats` and against computations over the
// original text.

#[cfg(feature = "json")]
mod chrome;
#[cfg(feature = "json")]
mod dhat;
mod error;
pub mod heaptrack;
#[cfg(feature = "json")]
mod pass;
#[cfg(feature = "pprof")]
pub mod pprof;
mod sites;
#[cfg(feature = "json")]
mod speedscope;
#[cfg(all(test, feature = "json"))]
mod tests;
#[cfg(feature = "json")]
mod view;

#[cfg(feature = "json")]
pub use chrome::write_chrome;
#[cfg(feature = "json")]
pub use dhat::write_dhat;
pub use error::ViewerError;
pub use heaptrack::{write_heaptrack, HeaptrackOptions, HeaptrackReport};
#[cfg(feature = "json")]
pub use pass::read;
#[cfg(feature = "pprof")]
pub use pprof::{write_pprof, PprofOptions, PprofReport};
pub use sites::{profile_of, site_profile};
#[cfg(feature = "json")]
pub use speedscope::write_speedscope;
#[cfg(feature = "json")]
pub(crate) use view::{num, Stacks};
#[cfg(feature = "json")]
pub use view::{Curve, HeapView, PointFigures, Sample, ViewOptions, DEFAULT_POINTS};
