//! Decoded values: what one field of one record decodes to.

use std::fmt;

use crate::dtd::SlotId;

/// A reference into a section used as a table (docs/format.md §8), not yet followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementRef {
    /// `sectionOffset`: a byte offset into the content of `section`.
    Offset {
        /// Section id.
        section: u8,
        /// Byte offset from the start of the section's content.
        offset: u64,
    },
    /// `sectionStride`: the element with this index.
    Index {
        /// Section id.
        section: u8,
        /// Element index (may be out of range in an invalid trace).
        index: i64,
    },
}

impl ElementRef {
    /// The section referred to.
    pub fn section(self) -> u8 {
        match self {
            ElementRef::Offset { section, .. } | ElementRef::Index { section, .. } => section,
        }
    }

    /// The number the record carries: the byte offset, or the element index (docs/format.md
    /// §3.4: what `.value` references and fixed values see).
    pub fn number(self) -> u64 {
        match self {
            ElementRef::Offset { offset, .. } => offset,
            ElementRef::Index { index, .. } => index as u64,
        }
    }
}

impl fmt::Display for ElementRef {
    /// The text form: `@offset` or `#index`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElementRef::Offset { offset, .. } => write!(f, "@{offset}"),
            ElementRef::Index { index, .. } => write!(f, "#{index}"),
        }
    }
}

/// The interpreted value of a field, borrowing the trace for byte strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    /// An integer, modulo 2⁶⁴ (`display = signed` fields hold the two's complement).
    Int(u64),
    /// A byte string.
    Bytes(&'a [u8]),
    /// An element of another section; see [`Field::resolve`](super::Field::resolve).
    Ref(ElementRef),
}

impl<'a> Value<'a> {
    /// The integer, for an integer value only (a byte string or a reference is not a number).
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Value::Int(v) => Some(v),
            _ => None,
        }
    }

    /// The integer as signed (two's complement), for an integer value only.
    pub fn as_i64(self) -> Option<i64> {
        self.as_u64().map(|v| v as i64)
    }

    /// The bytes, for a byte string only.
    pub fn as_bytes(self) -> Option<&'a [u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The text, for a byte string that is valid UTF-8.
    pub fn as_str(self) -> Option<&'a str> {
        self.as_bytes().and_then(|b| std::str::from_utf8(b).ok())
    }

    /// The reference, for a `sectionOffset`/`sectionStride` value only.
    pub fn as_ref(self) -> Option<ElementRef> {
        match self {
            Value::Ref(r) => Some(r),
            _ => None,
        }
    }
}

impl fmt::Display for Value<'_> {
    /// The text form of docs/text-format.md with default display: decimal integers, `x"…"`
    /// byte strings, `@offset`/`#index` references.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Bytes(b) => {
                f.write_str("x\"")?;
                for x in *b {
                    write!(f, "{x:02x}")?;
                }
                f.write_str("\"")
            }
            Value::Ref(r) => write!(f, "{r}"),
        }
    }
}

/// A decoded value as the decoder stores it: byte strings by position, so that a record's values
/// hold no borrow and its buffer is reused from record to record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Val {
    Int(u64),
    Bytes { offset: u64, len: u64 },
    Ref(ElementRef),
}

impl Val {
    /// With the trace's bytes, the public value.
    #[inline]
    pub(crate) fn with<'a>(self, input: &'a super::Window<'_>) -> Value<'a> {
        match self {
            Val::Int(v) => Value::Int(v),
            Val::Bytes { offset, len } => Value::Bytes(input.slice(offset, len)),
            Val::Ref(r) => Value::Ref(r),
        }
    }

    /// The number an expression sees: the integer, a byte string's length, a reference's
    /// offset or index (docs/format.md §3.4).
    #[inline]
    pub(crate) fn number(self) -> u64 {
        match self {
            Val::Int(v) => v,
            Val::Bytes { len, .. } => len,
            Val::Ref(r) => r.number(),
        }
    }
}

/// One decoded field occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FieldValue {
    /// Which slot of the record type.
    pub(crate) slot: SlotId,
    /// Absolute byte offset of the stored bytes.
    pub(crate) offset: u64,
    /// Stored width in bytes (0 for zero-width interpretations).
    pub(crate) width: u32,
    /// The stored bytes as an unsigned integer (0 for byte strings and zero-width fields).
    pub(crate) raw: u64,
    /// The interpreted value.
    pub(crate) value: Val,
}
