//! Analysis of a trace from the declarations in its DTD: what a heap did (ids defined and
//! undefined, bytes allocated and freed, nesting, monotonic fields), computed in one streaming
//! pass over the library's public reading API.
//!
//! [`event`] holds the event type that the checker, the statistics and `replay`/`simulate`
//! share.

pub mod diff;
pub mod event;
#[cfg(feature = "plot")]
pub mod plot;
#[cfg(feature = "plot")]
pub mod report;
pub mod stats;
