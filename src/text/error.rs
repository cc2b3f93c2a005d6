//! Errors in text-form and JSON-lines input, each with its line and column.

use std::fmt;

use miette::Diagnostic;

use crate::encode::EncodeError;

/// An error in a line of input.
#[derive(Debug, thiserror::Error)]
#[error("line {line}, column {column}: {kind}")]
pub struct TextError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters (in a JSON line, of the key concerned; 1 when none is).
    pub column: usize,
    /// What is wrong.
    #[source]
    pub kind: TextErrorKind,
}

impl Diagnostic for TextError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(match &self.kind {
            TextErrorKind::Encode(e) => e.kind().code(),
            _ => "mtf::text::syntax",
        }))
    }
}

/// What is wrong with a line.
#[derive(Debug, thiserror::Error)]
pub enum TextErrorKind {
    /// Input that does not match the text form.
    #[error("{0}")]
    Syntax(&'static str),
    /// A number over 2⁶⁴−1.
    #[error("number {digits} is larger than 2^64-1")]
    NumberTooLarge {
        /// Its digits.
        digits: String,
    },
    /// An unknown `\` escape in a string.
    #[error("unknown escape \\{escape}")]
    UnknownEscape {
        /// The character after the backslash.
        escape: char,
    },
    /// `key` not followed by `=`.
    #[error("expected `=` after `{key}`")]
    ExpectedEquals {
        /// The key.
        key: String,
    },
    /// A header item other than dtd, class and order.
    #[error("bad header item `{key}` (dtd=\"…\", class=32|64, order=little|big)")]
    BadHeaderItem {
        /// The key.
        key: String,
    },
    /// A bare word where a field's value belongs (`size=abc`).
    #[error(
        "`{word}` is not a value: give a number (16, 0x10, -3), a byte string in quotes \
         (\"…\") or in hex (x\"…\")"
    )]
    WordNotValue {
        /// The word, as written.
        word: String,
    },
    /// A key of a JSON line that a record's line does not have (a misspelt `"fields"`).
    #[error(
        "unknown key `{key}`: a record's line has \"record\", \"section\", \"index\", \
         \"offset\" and \"fields\" (a metadata record's \"set\")"
    )]
    UnknownJsonKey {
        /// The key.
        key: String,
    },
    /// A JSON line that does not parse.
    #[error("bad JSON: {message}")]
    Json {
        /// The JSON parser's message.
        message: String,
    },
    /// A line too long.
    #[error("line is longer than {mib} MiB")]
    LineTooLong {
        /// The limit in MiB.
        mib: u64,
    },
    /// A record name that the current section does not have.
    #[error("no record type `{name}` in this section")]
    UnknownRecord {
        /// The name.
        name: String,
    },
    /// A section that the DTD does not declare.
    #[error("`{given}` is not a section declared in the DTD")]
    UnknownSection {
        /// As given.
        given: String,
    },
    /// `record.field` of a metadata line that names no field.
    #[error("record `{record}` has no field `{field}`")]
    UnknownField {
        /// The record.
        record: String,
        /// The field.
        field: String,
    },
    /// A metadata property that does not exist.
    #[error("unknown property `{property}` (width, none, baseOffset, delta, default, sectionOffset, stride, sectionStride)")]
    UnknownProperty {
        /// As given.
        property: String,
    },
    /// The wrong number of metadata arguments.
    #[error("`{property}` takes {want} argument(s), {given} given")]
    ArgumentCount {
        /// The property.
        property: String,
        /// Arguments it takes.
        want: usize,
        /// Arguments given.
        given: usize,
    },
    /// A metadata argument of the wrong kind.
    #[error("`{property}` needs {what} as argument {index}")]
    Argument {
        /// The property.
        property: String,
        /// 1-based.
        index: usize,
        /// `an integer`, `a declared section (id or name)`, `a width 0..8`.
        what: &'static str,
    },
    /// A value the writer refuses (or a key it does not know).
    #[error("{0}")]
    Encode(#[source] EncodeError),
}
