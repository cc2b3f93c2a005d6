//! metatf: open any binary trace described by a Meta-TF DTD, without recompiling.
//!
//! The data flows through the modules in order (`docs/architecture.md` says what may use what):
//!
//! * [`dtd`]: DTD text → span-carrying AST → resolved [`dtd::Schema`];
//! * [`container`]: trace bytes → header and section index;
//! * `layout` (internal): compiled record programs, the one layout walker, the live metadata
//!   state — shared by reading and writing;
//! * [`decode`]: records as events over borrowed views; [`encode`]: its mirror, the writer;
//! * [`text`]: the text form and JSON lines, printed and parsed; [`pack`] joins it to the
//!   writer.
//!
//! What the `mtf` subcommands that read decide — a check, a dump, a statistics run, a
//! comparison, a trace's summary — is in [`command`] (the reading ones need feature `parallel`): plain options in, a
//! report out, for the command line and every other caller alike.
//!
//! A trace is opened in one way, [`open`] (or [`OpenOptions`] for an explicit DTD, salvaging
//! a damaged trace, a cap on memory, bytes in memory): from a file, `-`, a pipe or a FIFO,
//! compressed or not, as the `mtf` command line reads it. [`limits`] gathers every bound the
//! library puts on input.
//!
//! The normative format is `docs/format.md`. Counting records per type in a sample trace:
//!
//! ```
//! use metatf::decode::Event;
//!
//! let opened = metatf::open("traces/hatf-le32.mtf")?;
//! let reader = opened.reader();
//! let schema = opened.schema();
//! let mut counts = vec![0u64; schema.records.len()];
//! let mut records = reader.records();
//! while let Some(event) = records.next() {
//!     // A view borrows the reader until the next call: nothing is allocated per record.
//!     match event {
//!         Event::Record(r) => {
//!             counts[r.record_id() as usize] += 1;
//!             if r.name() == "alloc" {
//!                 assert!(r.get("size").and_then(|v| v.as_u64()).is_some());
//!             }
//!         }
//!         Event::Problem(p) => panic!("{p}"),
//!         Event::Damage(d) => panic!("{d}"),
//!     }
//! }
//! let allocs = counts[schema.record_by_name(1, "alloc").unwrap() as usize];
//! assert_eq!(allocs, 10);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod analysis;
#[cfg(feature = "parquet")]
pub mod columnar;
pub mod command;
pub mod compact;
pub mod container;
pub mod decode;
pub mod dtd;
pub mod encode;
pub mod escape;
pub mod events;
pub mod frag;
#[cfg(feature = "import")]
pub mod import;
pub mod index;
pub mod io;
mod layout;
pub mod limits;
mod message;
mod open;
pub mod pack;
#[cfg(feature = "parallel")]
pub mod parallel;
#[cfg(feature = "plot")]
pub mod picture;
#[cfg(feature = "replay")]
pub mod replay;
pub mod simulate;
#[cfg(feature = "sql")]
pub mod sql;
pub mod stacks;
pub mod stream;
pub mod text;
pub mod viewers;

/// Internals for this crate's own property tests; not part of the API and not covered by any
/// compatibility promise.
#[doc(hidden)]
pub mod __internal {
    pub use crate::layout::ScopeState;
}

pub use layout::{
    MetaProperty, MetaRefused, Shape, WidthError, MAX_EMPTY_REPEAT, MAX_FIELDS_PER_RECORD,
};
pub use message::Message;
pub use open::{open, other_dtd_warning, DtdSource, EnvError, OpenError, OpenOptions, Opened};

/// The README's examples, compiled as doc tests so that they stay true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
