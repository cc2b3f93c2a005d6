//! The resolved form of a DTD: per-scope tables from tag value to record layout.
//!
//! A [`Schema`] is what every other part of metatf works from. The decoder and the writer compile
//! it further into flat per-record programs; `mtf dtd show` prints it. Nothing here refers back
//! to DTD text except the spans kept for diagnostics.

// Design: record types are stored once in `Schema::records` and referred to by index
// (`RecordId`). Scopes hold only indices, so a global record visible from every section is not
// copied. Slots are the flattened scalar fields of a record (docs/format.md §4.4); the `layout`
// tree records how they nest, which only display code needs.

use std::collections::HashMap;

/// Index of a record type in [`Schema::records`].
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

/// The resolved DTD.
#[derive(Debug, Clone)]
pub struct Schema {
    /// The name the DTD was loaded under (file name, for messages).
    pub name: String,
    /// Width in bytes of every `tag` field (1..=8).
    pub tag_width: u8,
    /// Every taggable record type, of every scope, built-ins included.
    pub records: Vec<RecordType>,
    /// Scope 0 is the global scope; the others are the DTD's sections in declaration order.
    pub scopes: Vec<Scope>,
    /// Map from section id (1..=255) to index in `scopes`; entry 0 is always `Some(0)`.
    pub scope_of_section: Vec<Option<u16>>,
}

/// One scope: the global region or one section.
#[derive(Debug, Clone)]
pub struct Scope {
    /// Section id; 0 for the global scope.
    pub id: u8,
    /// Section name; `""` for the global scope.
    pub name: String,
    /// Every record type usable in this scope (global ones first, then the section's own), in
    /// definition order.
    pub records: Vec<RecordId>,
    /// Tag value → record type, for the records of `records`.
    pub by_tag: HashMap<u64, RecordId>,
    /// Where the section was declared (empty for the global scope).
    pub span: Span,
}

/// Which built-in record a record type is, if any (docs/format.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// `comment`, tag 1.
    Comment,
    /// `section`, tag 2.
    Section,
    /// `metadata`, tag 3.
    Metadata,
}

/// A taggable record type.
#[derive(Debug, Clone)]
pub struct RecordType {
    /// Record name, as written in the DTD.
    pub name: String,
    /// Tag value.
    pub tag: u64,
    /// Section id of the defining scope (0 = global).
    pub scope: u8,
    /// Set for the four prelude records.
    pub builtin: Option<Builtin>,
    /// Flattened scalar fields; slot 0 is `tag`.
    pub slots: Vec<Slot>,
    /// How the slots nest (nested records, repeats), in field order.
    pub layout: Vec<Node>,
    /// Where the record was defined (empty for the built-ins, which come from the prelude and
    /// not from the DTD text).
    pub span: Span,
}

/// One element of a record layout tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// A scalar field.
    Field(SlotId),
    /// A nested record instance, displayed as `name.inner`.
    Group {
        /// Field name of the nested record (e.g. `vfield`).
        name: String,
        /// Its fields.
        children: Vec<Node>,
    },
    /// `count * item`: the count slot is decoded first (it also appears as a `Field` just before
    /// this node), then `item` repeats.
    Repeat {
        /// Display name of the repeated group.
        name: String,
        /// The count field.
        count: SlotId,
        /// One occurrence.
        item: Vec<Node>,
    },
}

/// A scalar field of a record type.
#[derive(Debug, Clone, PartialEq)]
pub struct Slot {
    /// Full display path within the record (`address_2`, `vfield.data`, `frames.pc`).
    pub name: String,
    /// The field's type name (the identifier that selected its defaults, e.g. `address`).
    pub type_name: String,
    /// Integer or byte string.
    pub kind: SlotKind,
    /// Declared interpretation (the state every scope starts from).
    pub interp: Interp,
    /// Fixed value the field must have (`value` property).
    pub fixed: Option<u64>,
    /// Display hint.
    pub display: Display,
    /// Whether this slot lies inside a repeated item.
    pub in_repeat: bool,
    /// Non-reserved, non-display properties, kept for documentation.
    pub extra: Vec<(String, String)>,
}

/// Storage kind of a slot.
#[derive(Debug, Clone, PartialEq)]
pub enum SlotKind {
    /// An integer of the given declared width (0..=8 bytes).
    Int {
        /// Declared width in bytes.
        width: u8,
    },
    /// A byte string whose length is computed per record.
    Bytes {
        /// Length in bytes.
        width: Expr,
    },
}

/// A width expression over earlier fields of the same record (docs/format.md §3.4).
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A constant.
    Const(u64),
    /// The interpreted value of an earlier slot (its most recent occurrence).
    Value(SlotId),
    /// Sum.
    Add(Box<Expr>, Box<Expr>),
    /// Difference (an error if negative).
    Sub(Box<Expr>, Box<Expr>),
    /// Product.
    Mul(Box<Expr>, Box<Expr>),
}

/// A field interpretation with its arguments (docs/format.md §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interp {
    /// The stored value itself.
    None,
    /// Always this value; width 0.
    Default(u64),
    /// Base plus the signed stored value.
    BaseOffset(u64),
    /// Previous value plus the signed stored value; the initial previous value.
    Delta(u64),
    /// Previous value plus a fixed stride; width 0.
    Stride {
        /// Initial previous value.
        initial: u64,
        /// Signed stride.
        stride: i64,
    },
    /// A byte offset into the content of a section.
    SectionOffset(u8),
    /// Successive elements of a section; width 0.
    SectionStride {
        /// Section id.
        section: u8,
        /// Signed step of the element cursor.
        stride: i64,
    },
}

impl Interp {
    /// Whether this interpretation forces width 0.
    pub fn is_zero_width(self) -> bool {
        matches!(
            self,
            Interp::Default(_) | Interp::Stride { .. } | Interp::SectionStride { .. }
        )
    }

    /// The keyword used in DTDs and dumps.
    pub fn keyword(self) -> &'static str {
        match self {
            Interp::None => "none",
            Interp::Default(_) => "default",
            Interp::BaseOffset(_) => "baseOffset",
            Interp::Delta(_) => "delta",
            Interp::Stride { .. } => "stride",
            Interp::SectionOffset(_) => "sectionOffset",
            Interp::SectionStride { .. } => "sectionStride",
        }
    }
}

impl std::fmt::Display for Interp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Interp::None => f.write_str("none"),
            Interp::Default(v) => write!(f, "default {v}"),
            Interp::BaseOffset(v) => write!(f, "baseOffset {v}"),
            Interp::Delta(v) => write!(f, "delta {v}"),
            Interp::Stride { initial, stride } => write!(f, "stride {initial} {stride}"),
            Interp::SectionOffset(s) => write!(f, "sectionOffset {s}"),
            Interp::SectionStride { section, stride } => {
                write!(f, "sectionStride {section} {stride}")
            }
        }
    }
}

/// How `mtf dump` shows a value (the `display` property).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Display {
    /// Unsigned decimal (integers) or hex digits (byte strings).
    #[default]
    Decimal,
    /// `0x…`.
    Hex,
    /// Signed decimal; also sign-extends `none` stored values.
    Signed,
    /// Quoted UTF-8 text (byte strings).
    Text,
    /// Hex digits (byte strings).
    Bytes,
}

impl Schema {
    /// The scope for a section id (0 = global), if the DTD declares it.
    pub fn scope_for(&self, section: u8) -> Option<&Scope> {
        self.scope_of_section
            .get(section as usize)
            .copied()
            .flatten()
            .map(|i| &self.scopes[i as usize])
    }

    /// A record type by id.
    pub fn record(&self, id: RecordId) -> &RecordType {
        &self.records[id as usize]
    }

    /// Find a record type by name as seen from a scope (section id, 0 = global).
    pub fn record_by_name(&self, section: u8, name: &str) -> Option<RecordId> {
        let scope = self.scope_for(section)?;
        scope
            .records
            .iter()
            .copied()
            .find(|&r| self.records[r as usize].name == name)
    }

    /// The built-in record of a kind (always present in a resolved schema).
    pub fn builtin(&self, which: Builtin) -> RecordId {
        self.records
            .iter()
            .position(|r| r.builtin == Some(which))
            .expect("the prelude defines every built-in") as RecordId
    }
}

impl RecordType {
    /// Slot index by display name.
    pub fn slot_by_name(&self, name: &str) -> Option<SlotId> {
        self.slots
            .iter()
            .position(|s| s.name == name)
            .map(|i| i as SlotId)
    }
}
