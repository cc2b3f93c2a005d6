//! Encoding errors: each names the record, the field and the record index it concerns.

use std::fmt;

use miette::Diagnostic;

use crate::decode::RefError;
use crate::io::IoError;
use crate::layout::{MetaRefused, WidthError};

/// An encoding error with its position: the record type, the field and the record index it
/// concerns, and what went wrong.
// Design: boxed, so that the `Result`s of the hot encoding path stay one word wide.
#[derive(Debug)]
pub struct EncodeError(Box<Inner>);

#[derive(Debug)]
struct Inner {
    record: Option<String>,
    field: Option<String>,
    record_index: Option<u64>,
    kind: EncodeErrorKind,
}

impl EncodeError {
    pub(crate) fn new(kind: EncodeErrorKind) -> EncodeError {
        EncodeError(Box::new(Inner {
            record: None,
            field: None,
            record_index: None,
            kind,
        }))
    }

    pub(crate) fn at(record: &str, field: Option<&str>, kind: EncodeErrorKind) -> EncodeError {
        EncodeError(Box::new(Inner {
            record: Some(record.to_string()),
            field: field.map(str::to_string),
            record_index: None,
            kind,
        }))
    }

    pub(crate) fn with_index(mut self, index: u64) -> EncodeError {
        self.0.record_index = Some(index);
        self
    }

    /// The record type, when known.
    pub fn record(&self) -> Option<&str> {
        self.0.record.as_deref()
    }

    /// The field's display name (or input key), when the error is in one field.
    pub fn field(&self) -> Option<&str> {
        self.0.field.as_deref()
    }

    /// Index of the record in the trace being written (every record counts), when known.
    pub fn record_index(&self) -> Option<u64> {
        self.0.record_index
    }

    /// What went wrong.
    pub fn kind(&self) -> &EncodeErrorKind {
        &self.0.kind
    }
}

impl From<std::io::Error> for EncodeError {
    fn from(e: std::io::Error) -> Self {
        EncodeError::new(EncodeErrorKind::Io(e))
    }
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.0.record, &self.0.field) {
            (Some(r), Some(fl)) => write!(f, "{r}.{fl}: ")?,
            (Some(r), None) => write!(f, "{r}: ")?,
            _ => {}
        }
        write!(f, "{}", self.0.kind)
    }
}

impl std::error::Error for EncodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The kind's text, its cause's included, is already in ours: a renderer that prints the
        // chain would print the same words two or three times.
        None
    }
}

impl From<IoError> for EncodeError {
    fn from(e: IoError) -> Self {
        EncodeError::new(EncodeErrorKind::File(e))
    }
}

impl Diagnostic for EncodeError {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.0.kind.code()))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        match &self.0.kind {
            EncodeErrorKind::File(e) => e.help(),
            _ => None,
        }
    }
}

/// The diagnostic code of an [`IoError`], as a `'static` string (the codes are fixed strings).
fn io_code(e: &IoError) -> &'static str {
    match e {
        IoError::Open { .. } => "mtf::io::open",
        IoError::Read { .. } => "mtf::io::read",
        IoError::IsFolder { .. } => "mtf::io::is_folder",
        IoError::InputTooLarge { .. } => "mtf::io::input_too_large",
        IoError::Decompress { .. } => "mtf::io::decompress",
        IoError::NoCompressionSupport { .. } | IoError::NoCompressionForOutput { .. } => {
            "mtf::io::no_compression_support"
        }
        IoError::MissingFolder { .. } => "mtf::io::missing_folder",
        IoError::DanglingSymlink { .. } => "mtf::io::dangling_symlink",
        IoError::OverwritesInput { .. } => "mtf::io::overwrites_input",
        IoError::Create { .. } => "mtf::io::create",
        IoError::NotAFolder { .. } => "mtf::io::not_a_folder",
        IoError::Write { .. } => "mtf::io::write",
        IoError::NoSpace { .. } => "mtf::io::no_space",
        IoError::FileTooLarge { .. } => "mtf::io::file_too_large",
        IoError::Commit { .. } => "mtf::io::commit",
        IoError::Spool { .. } => "mtf::io::spool",
        IoError::TempFile { .. } => "mtf::io::temp_file",
    }
}

/// What went wrong while encoding.
#[derive(Debug, thiserror::Error)]
pub enum EncodeErrorKind {
    /// No record type of that name in the current section.
    #[error("no record type `{name}` in this section")]
    UnknownRecord {
        /// The name given.
        name: String,
    },
    /// A section that the DTD does not declare.
    #[error("section {section} is not declared in the DTD")]
    UndeclaredSection {
        /// The id or name given.
        section: String,
    },
    /// [`TraceWriter::finish`](super::TraceWriter::finish) on a writer made by
    /// [`TraceWriter::in_memory`](super::TraceWriter::in_memory), or
    /// [`TraceWriter::finish_to_vec`](super::TraceWriter::finish_to_vec) on one that writes to a
    /// file: nothing is written.
    #[error("`{called}` on a writer made by `{made}`; call `{instead}` instead")]
    WrongFinish {
        /// The method called.
        called: &'static str,
        /// How the writer was made.
        made: &'static str,
        /// The method to call.
        instead: &'static str,
    },
    /// A record started with [`TraceWriter::write`](super::TraceWriter::write) was dropped
    /// without `.done()`: the trace would lack it, so it is not written.
    #[error(
        "record `{name}` was started with `write` but dropped without `.done()`; the trace is \
         not written without it"
    )]
    AbandonedRecord {
        /// The record type's name.
        name: String,
    },
    /// A section written twice.
    #[error("section {id} was already written; a section occurs once per trace")]
    SectionTwice {
        /// The id.
        id: u8,
    },
    /// `section` or `metadata` given as an ordinary record.
    #[error("write `{name}` records with the writer's {method} method")]
    Builtin {
        /// The built-in's name.
        name: &'static str,
        /// The method to use.
        method: &'static str,
    },
    /// An unsigned value that does not fit the field's width.
    #[error("value {value} does not fit in {width} byte(s) (interpretation none)")]
    DoesNotFit {
        /// The value as given.
        value: String,
        /// The live width.
        width: u8,
    },
    /// A difference that does not fit the field's width.
    #[error("value {value} is {diff} from {from} {reference}, which does not fit in {width} signed byte(s)")]
    DiffDoesNotFit {
        /// The value.
        value: u64,
        /// The signed difference.
        diff: i64,
        /// `base` or `the previous value`.
        from: &'static str,
        /// The base or previous value.
        reference: u64,
        /// The live width.
        width: u8,
    },
    /// A value other than the current default.
    #[error("value {value} differs from the current default {default}")]
    NotDefault {
        /// The value.
        value: u64,
        /// The default.
        default: u64,
    },
    /// A value off the stride.
    #[error("value {value} does not match the stride: expected {expected}")]
    NotStride {
        /// The value.
        value: u64,
        /// The next value of the stride.
        expected: u64,
    },
    /// A value that is not in the live set a `live` field reads and that the set's length plus
    /// the value cannot represent (it passes 2⁶⁴; docs/format.md §13).
    #[error("value {value} is not in live set {set}, and {len} + {value} (the set's length plus the value) passes 2^64")]
    NotLive {
        /// The value.
        value: u64,
        /// The live set.
        set: u8,
        /// Values in the set.
        len: usize,
    },
    /// An element index other than the stride cursor.
    #[error("element #{index} does not match the stride cursor: expected #{expected}")]
    NotCursor {
        /// The index given.
        index: i64,
        /// The cursor.
        expected: i64,
    },
    /// A section offset wider than the field.
    #[error("offset {offset} does not fit in {width} byte(s)")]
    OffsetDoesNotFit {
        /// The offset.
        offset: u64,
        /// The live width.
        width: u8,
    },
    /// A value other than the DTD's fixed value.
    #[error("value {value} differs from the DTD's fixed value {fixed}")]
    FixedValue {
        /// The value.
        value: u64,
        /// The fixed value.
        fixed: u64,
    },
    /// A byte string whose length disagrees with its width expression.
    #[error("{given} byte(s) given, but the width expression says {expected}")]
    LengthMismatch {
        /// Bytes given.
        given: u64,
        /// The width expression's value.
        expected: u64,
    },
    /// A width expression that cannot be evaluated.
    #[error("bad width: {0}")]
    BadWidth(WidthError),
    /// The wrong kind of value for the field.
    #[error("{given} does not suit a field with interpretation {interp}")]
    WrongKind {
        /// `an integer`, `a byte string`, `a section offset`, `an element index`.
        given: &'static str,
        /// The live interpretation, or `byte string`.
        interp: &'static str,
    },
    /// No value for a field whose interpretation needs one.
    #[error("no value given; the field's interpretation {interp} needs one")]
    Missing {
        /// The live interpretation.
        interp: &'static str,
    },
    /// More values than the record holds.
    #[error("{given} value(s) given, more than the record holds")]
    TooManyValues {
        /// Values given.
        given: usize,
    },
    /// A key that names no field of the record.
    #[error("record `{record}` has no field `{key}`")]
    UnknownField {
        /// The record.
        record: String,
        /// The key.
        key: String,
    },
    /// A key given twice.
    #[error("field `{key}` is given twice")]
    DuplicateField {
        /// The key.
        key: String,
    },
    /// A repeat given something other than a list, or an item that is not a group.
    #[error("{0}")]
    Shape(&'static str),
    /// A count field that disagrees with its list.
    #[error("the count is {count} but the list has {items} item(s)")]
    CountMismatch {
        /// The count given.
        count: u64,
        /// Items in the list.
        items: u64,
    },
    /// A length field left out that cannot be computed from its byte string.
    #[error("cannot compute this left-out length from its byte string; give it")]
    CannotInfer,
    /// More occurrences of an empty item than a reader accepts (docs/format.md §6.4).
    #[error("repeat count {count} of items that may occupy no bytes is over the limit of {limit}")]
    RepeatTooLong {
        /// The count.
        count: u64,
        /// The limit.
        limit: u64,
    },
    /// More field occurrences than a record may hold (docs/format.md §6.4).
    #[error("record has more than {limit} field occurrences")]
    RecordTooLarge {
        /// The limit.
        limit: usize,
    },
    /// More field occurrences than the record's bytes allow (docs/format.md §6.4).
    #[error(
        "record has {fields} field occurrences in {bytes} byte(s); the limit is {limit} (one per field of its type, {} per byte, and what is left of a writer's reserve of {})",
        crate::limits::MAX_OCCURRENCES_PER_BYTE,
        crate::limits::SPARSE_RESERVE / 2
    )]
    SparseRecord {
        /// Field occurrences written when the limit was passed.
        fields: u64,
        /// Bytes of the record written so far.
        bytes: u64,
        /// The limit for those bytes.
        limit: u64,
    },
    /// A metadata change the rules refuse.
    #[error("{0}")]
    Metadata(MetaRefused),
    /// A reference that leads to no element.
    #[error("{0}")]
    Reference(RefError),
    /// The header could not be encoded.
    #[error("{0}")]
    Container(crate::container::HeaderEncodeError),
    /// Writing failed.
    #[error("{0}")]
    Io(#[source] std::io::Error),
    /// The output file or the spool of records could not be created or written: the error
    /// names the path and tells a full disk ([`IoError::NoSpace`]) or a file over the size limit
    /// ([`IoError::FileTooLarge`]) apart. Its diagnostic code is the [`IoError`]'s own
    /// (`mtf::io::…`).
    #[error("{0}")]
    File(#[source] IoError),
}

impl EncodeErrorKind {
    /// The diagnostic code, `mtf::encode::…`.
    pub fn code(&self) -> &'static str {
        use EncodeErrorKind as K;
        match self {
            K::UnknownRecord { .. } => "mtf::encode::unknown_record",
            K::UndeclaredSection { .. } | K::SectionTwice { .. } => "mtf::encode::section",
            K::Builtin { .. } => "mtf::encode::builtin",
            K::WrongFinish { .. } => "mtf::encode::wrong_finish",
            K::AbandonedRecord { .. } => "mtf::encode::abandoned_record",
            K::DoesNotFit { .. }
            | K::DiffDoesNotFit { .. }
            | K::OffsetDoesNotFit { .. }
            | K::NotDefault { .. }
            | K::NotStride { .. }
            | K::NotLive { .. }
            | K::NotCursor { .. } => "mtf::encode::unrepresentable",
            K::FixedValue { .. } => "mtf::encode::fixed_value",
            K::LengthMismatch { .. } | K::BadWidth(_) | K::CannotInfer => "mtf::encode::length",
            K::WrongKind { .. }
            | K::Missing { .. }
            | K::TooManyValues { .. }
            | K::UnknownField { .. }
            | K::DuplicateField { .. }
            | K::Shape(_)
            | K::CountMismatch { .. } => "mtf::encode::shape",
            K::RepeatTooLong { .. } | K::RecordTooLarge { .. } | K::SparseRecord { .. } => {
                "mtf::encode::limit"
            }
            K::Metadata(_) => "mtf::encode::metadata",
            K::Reference(_) => "mtf::encode::reference",
            K::Container(_) => "mtf::encode::container",
            K::Io(_) => "mtf::encode::io",
            K::File(e) => io_code(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn file_errors_keep_the_io_code_and_message() {
        let p = || PathBuf::from("out.mtf");
        let e = || std::io::Error::other("boom");
        let cases = [
            IoError::Open {
                path: p(),
                source: e(),
            },
            IoError::Read {
                path: p(),
                source: e(),
            },
            IoError::IsFolder { path: p() },
            IoError::InputTooLarge { path: p(), cap: 1 },
            IoError::MissingFolder {
                path: p(),
                folder: p(),
            },
            IoError::DanglingSymlink {
                path: p(),
                target: p(),
            },
            IoError::Create {
                path: p(),
                source: e(),
            },
            IoError::Write {
                path: p(),
                source: e(),
            },
            IoError::NoSpace {
                path: p(),
                source: e(),
            },
            IoError::FileTooLarge {
                path: p(),
                source: e(),
            },
            IoError::Commit {
                path: p(),
                temp: p(),
                source: e(),
            },
            IoError::TempFile {
                folder: p(),
                source: e(),
            },
        ];
        for io in cases {
            let want_code = io.code().unwrap().to_string();
            let want_text = io.to_string();
            let err = EncodeError::from(io);
            assert_eq!(err.code().unwrap().to_string(), want_code);
            assert_eq!(err.to_string(), want_text);
        }
    }
}
