//! Decoded values: what one field of one record decodes to.

use crate::dtd::SlotId;

/// A reference into a section used as a table (docs/format.md §8), not yet followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

/// The interpreted value of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// An integer (modulo 2⁶⁴; `display = signed` fields hold the two's complement).
    Int(u64),
    /// A byte string: `len` bytes at absolute file offset `offset`.
    Bytes {
        /// Absolute byte offset in the trace.
        offset: u64,
        /// Length in bytes.
        len: u64,
    },
    /// An element of another section.
    Ref(ElementRef),
}

impl Value {
    /// The value as an integer: the integer itself, a byte string's length, a reference's
    /// offset or index. Used where a DTD expression reads a field's value.
    #[inline]
    pub fn as_number(self) -> u64 {
        match self {
            Value::Int(v) => v,
            Value::Bytes { len, .. } => len,
            Value::Ref(ElementRef::Offset { offset, .. }) => offset,
            Value::Ref(ElementRef::Index { index, .. }) => index as u64,
        }
    }
}

/// One decoded field occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldValue {
    /// Which slot of the record type.
    pub slot: SlotId,
    /// Absolute byte offset of the stored bytes.
    pub offset: u64,
    /// Stored width in bytes (0 for zero-width interpretations).
    pub width: u32,
    /// The stored bytes as an unsigned integer (0 for byte strings and zero-width fields).
    pub raw: u64,
    /// The interpreted value.
    pub value: Value,
}
