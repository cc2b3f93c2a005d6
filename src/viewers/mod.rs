//! Heap analyses in the files other people's viewers open (`mtf export --to heaptrack|pprof`):
//! heaptrack's own data file, read by `heaptrack_print` and `heaptrack_gui`, and pprof's
//! `profile.proto`, read by `go tool pprof` (docs/formats.md, *Exports for viewers*).
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
// whose DTD declares its allocations.

mod error;
pub mod heaptrack;
#[cfg(feature = "pprof")]
pub mod pprof;
mod sites;

pub use error::ViewerError;
pub use heaptrack::{write_heaptrack, HeaptrackOptions, HeaptrackReport};
#[cfg(feature = "pprof")]
pub use pprof::{write_pprof, PprofOptions, PprofReport};
pub use sites::{profile_of, site_profile};
