//! The text form of a trace (docs/text-format.md): what `mtf dump` prints and `mtf pack` reads.

pub mod parse;
pub mod print;

pub use parse::{pack_lines, read_header, InputFormat, PackError, TextError, TextHeader};
pub use print::{DumpHeader, Format, Printer};
