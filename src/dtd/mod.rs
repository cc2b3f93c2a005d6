//! The DTD language: text → AST ([`ast`]) → resolved [`Schema`] ([`resolve`]).
//!
//! Entry points: [`parse_str`] and [`load`]. Errors come back as [`DtdErrors`], a miette
//! diagnostic holding every problem found in the file.

pub mod schema;

pub use schema::*;
pub mod ast;
pub mod parse;
