//! metatf: open any binary trace described by a Meta-TF DTD, without recompiling.
//!
//! The data flows through the modules in order:
//!
//! * [`dtd`]: DTD text → span-carrying AST → resolved [`dtd::Schema`];
//! * [`container`]: trace bytes → header and section index;
//! * [`decode`]: layouts + live metadata state → borrowed record views;
//! * [`write`]: the mirror of `decode`, producing traces;
//! * [`cli`]: the `mtf` subcommands.
//!
//! The normative format is `docs/format.md`.
#![deny(missing_docs)]

pub mod cli;
pub mod container;
pub mod decode;
pub mod dtd;
pub mod text;
pub mod write;
