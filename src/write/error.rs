//! Writer errors: each names the record and field that could not be written.

use std::fmt;

/// What went wrong.
#[derive(Debug)]
pub enum WriteErrorKind {
    /// No record type of that name in the current section.
    UnknownRecord,
    /// A value that the field's width and interpretation cannot represent.
    Unrepresentable(String),
    /// Too few or too many field values, or the wrong kind of value.
    Shape(String),
    /// A metadata change the rules refuse (docs/format.md §5.4).
    Metadata(String),
    /// A section that cannot be opened (undeclared, already written).
    Section(String),
    /// The container could not be encoded.
    Container(String),
    /// Reading input or writing the file failed.
    Io(std::io::Error),
}

/// A writer error.
#[derive(Debug)]
pub struct WriteError {
    /// The record type, when known.
    pub record: Option<String>,
    /// The field, when known.
    pub field: Option<String>,
    /// What went wrong.
    pub kind: WriteErrorKind,
}

impl WriteError {
    pub(crate) fn new(kind: WriteErrorKind) -> WriteError {
        WriteError {
            record: None,
            field: None,
            kind,
        }
    }

    pub(crate) fn at(record: &str, field: Option<&str>, kind: WriteErrorKind) -> WriteError {
        WriteError {
            record: Some(record.to_string()),
            field: field.map(str::to_string),
            kind,
        }
    }
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError::new(WriteErrorKind::Io(e))
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.record, &self.field) {
            (Some(r), Some(fl)) => write!(f, "{r}.{fl}: ")?,
            (Some(r), None) => write!(f, "{r}: ")?,
            _ => {}
        }
        match &self.kind {
            WriteErrorKind::UnknownRecord => f.write_str("no such record type in this section"),
            WriteErrorKind::Unrepresentable(m)
            | WriteErrorKind::Shape(m)
            | WriteErrorKind::Metadata(m)
            | WriteErrorKind::Section(m)
            | WriteErrorKind::Container(m) => f.write_str(m),
            WriteErrorKind::Io(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for WriteError {}
