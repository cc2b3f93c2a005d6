//! The wire layout of the built-in records (docs/format.md §5), taken from the prelude as
//! resolved in the schema rather than written into the decoder and the encoder.

// Design: `section` and `metadata` are records like any other in the prelude, but both the
// decoder and the encoder treat them specially (a section record opens a scope; a metadata
// record's value words depend on its property code and the trace class). Their field widths are
// read from the schema here, once, so the two sides cannot disagree and the prelude stays the
// single description of the bytes.

use crate::dtd::{Builtin, RecordId, Schema, SlotKind};

/// Widths and ids of the built-in records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Wire {
    /// Width of every tag.
    pub(crate) tag: u8,
    /// The `comment` record type.
    pub(crate) comment: RecordId,
    /// The `section` record type.
    pub(crate) section: RecordId,
    /// Width of `section.number`.
    pub(crate) section_number: u8,
    /// The `metadata` record type.
    pub(crate) metadata: RecordId,
    /// Widths of `metadata.record`, `metadata.field` and `metadata.property` (slots 1..=3); the
    /// value words (slot 4) follow the class.
    pub(crate) meta_fields: [u8; 3],
}

impl Wire {
    /// Read the built-ins' layout from a resolved schema.
    pub(crate) fn new(schema: &Schema) -> Wire {
        let width = |rid: RecordId, slot: usize| -> u8 {
            match schema.record(rid).slots.get(slot).map(|s| &s.kind) {
                Some(SlotKind::Int { width }) => *width,
                // The prelude declares these as integers; a schema without them is not one the
                // resolver produces.
                _ => 1,
            }
        };
        let section = schema.builtin(Builtin::Section);
        let metadata = schema.builtin(Builtin::Metadata);
        Wire {
            tag: schema.tag_width,
            comment: schema.builtin(Builtin::Comment),
            section,
            section_number: width(section, 1),
            metadata,
            meta_fields: [width(metadata, 1), width(metadata, 2), width(metadata, 3)],
        }
    }
}
