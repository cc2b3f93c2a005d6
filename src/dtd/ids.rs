//! The ids the resolved forms share: a record type, a slot, a span of DTD text. Both
//! [`super::Schema`] and [`super::analysis::Analysis`] index by them; neither refers to the
//! other for them.

/// Index of a record type in [`super::Schema::records`].
pub type RecordId = u32;

/// Index of a slot (flattened scalar field) within one record type; slot 0 is `tag`.
pub type SlotId = u16;

/// A byte range in the DTD source text, for diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// Byte offset of the first byte.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
}
