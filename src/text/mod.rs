//! The text form of a trace (docs/text-format.md): what `mtf dump` prints and `mtf pack` reads,
//! its JSON-lines twin, and the listing of a schema that `mtf dtd show` prints.
//!
//! Printing reads [`decode`](crate::decode) views; reading produces [`Line`]s whose records
//! carry [`Fields`](crate::encode::Fields) by name, which [`crate::pack`] hands to the writer.
//! Nothing here does I/O beyond the `Write`/`BufRead` it is given.

mod csv_out;
mod error;
#[cfg(feature = "json")]
mod json_in;
#[cfg(feature = "json")]
mod json_out;
mod lex;
mod line;
mod linebuf;
mod lines;
mod meta;
mod print;
mod schema;
mod shipped;
mod value;

pub use csv_out::CsvPrinter;
pub use error::{TextError, TextErrorKind};
pub use line::{Arg, Line, Parsed, SectionRef, TextHeader};
pub use lines::{line_str, LineError, LineReader, MAX_LINE};
pub(crate) use meta::{meta_property, section_id};

/// The column of the key `field` of the `"fields"` object of a JSON line (for an error found
/// after the line was read).
#[cfg(feature = "json")]
pub(crate) fn json_field_column(line: &str, field: &str) -> Option<usize> {
    json_in::key_column(&json_in::json_keys(line), "fields", Some(field))
}
pub use print::{DumpHeader, Format, Options, Printer};
pub use schema::{schema_listing, schema_summary};
pub use shipped::shipped_listing;
pub use value::{write_string, write_value};

/// Which input syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// The text form.
    Text,
    /// JSON lines.
    #[cfg(feature = "json")]
    Jsonl,
}

/// Parse one input line; `None` for blank and comment lines. `line` is its 1-based number.
pub fn parse_line(format: InputFormat, s: &str, line: usize) -> Result<Option<Parsed>, TextError> {
    match format {
        InputFormat::Text => line::parse_text_line(s, line),
        #[cfg(feature = "json")]
        InputFormat::Jsonl => json_in::parse_json_line(s, line),
    }
}
