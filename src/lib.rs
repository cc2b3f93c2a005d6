//! metatf: open any binary trace described by a Meta-TF DTD, without recompiling.
//!
//! The data flows through the modules in order:
//!
//! * [`dtd`]: DTD text → span-carrying AST → resolved [`dtd::Schema`];
//! * [`container`]: trace bytes → header and section index;
//! * [`decode`]: layouts + live metadata state → borrowed record views;
//! * [`mod@write`]: the mirror of `decode`, producing traces;
//! * [`cli`]: the `mtf` subcommands.
//!
//! The normative format is `docs/format.md`.
//!
//! Counting records per type in a shipped sample trace:
//!
//! ```
//! use metatf::{container::Trace, decode::Reader};
//!
//! let trace = Trace::open("traces/hatf-le32.mtf")?;
//! let dtd = std::fs::read_to_string("dtds/hatf10.dtd")?;
//! let schema = metatf::dtd::parse_str("hatf10.dtd", &dtd)?.schema;
//! let reader = Reader::from_trace(&trace, &schema);
//!
//! let mut counts = vec![0u64; schema.records.len()];
//! let mut records = reader.records();
//! while let Some(record) = records.next() {
//!     // A view borrows the decoder until the next call: nothing is allocated per record.
//!     let record = record?;
//!     counts[record.record_id as usize] += 1;
//!     if record.name() == "alloc" {
//!         let size = record.field("size").unwrap();
//!         assert!(size.as_u64().is_some());
//!     }
//! }
//! let allocs = counts[schema.record_by_name(1, "alloc").unwrap() as usize];
//! assert_eq!(allocs, 10);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod cli;
pub mod container;
pub mod decode;
pub mod dtd;
#[cfg(feature = "import")]
pub mod import;
pub mod text;
pub mod write;
