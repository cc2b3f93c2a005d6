//! Borrowed views of one decoded record and its fields.

use crate::dtd::{RecordId, RecordType, Slot, SlotId, SlotKind};

use super::reader::{Reader, Resolved};
use super::state::MetaProperty;
use super::value::{FieldValue, Value};

/// The change a metadata record made (symbolic form of its fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetaChange {
    /// The record type changed.
    pub record: RecordId,
    /// The slot changed.
    pub slot: SlotId,
    /// The new width or interpretation.
    pub property: MetaProperty,
}

/// One decoded record, borrowed from the decoder until its next call.
#[derive(Clone, Copy)]
pub struct RecordView<'d> {
    pub(crate) reader: &'d Reader<'d>,
    /// The record type.
    pub record_id: RecordId,
    /// Section id of the scope it was read in (0 = global region).
    pub section: u8,
    /// Absolute byte offset of the record.
    pub offset: u64,
    /// Length of the record in bytes.
    pub len: u64,
    /// Index of the record in the trace, counting every record from 0 (approximate after a
    /// region was skipped because of an error).
    pub index: u64,
    pub(crate) values: &'d [FieldValue],
    pub(crate) meta: Option<MetaChange>,
}

impl<'d> RecordView<'d> {
    /// The record type.
    pub fn record(&self) -> &'d RecordType {
        self.reader.schema.record(self.record_id)
    }

    /// The record type's name.
    pub fn name(&self) -> &'d str {
        &self.record().name
    }

    /// The record's stored bytes.
    pub fn bytes(&self) -> &'d [u8] {
        &self.reader.input.bytes[self.offset as usize..(self.offset + self.len) as usize]
    }

    /// Every decoded field occurrence, in order (repeats expanded).
    pub fn values(&self) -> &'d [FieldValue] {
        self.values
    }

    /// The fields, in order, with their definitions.
    pub fn fields(&self) -> impl Iterator<Item = Field<'d>> + 'd {
        let reader = self.reader;
        let rt = self.record();
        self.values.iter().map(move |fv| Field {
            reader,
            def: &rt.slots[fv.slot as usize],
            fv,
        })
    }

    /// The first occurrence of a field by its display name (`size`, `vfield.data`).
    pub fn field(&self, name: &str) -> Option<Field<'d>> {
        let slot = self.record().slot_by_name(name)?;
        self.fields().find(|f| f.fv.slot == slot)
    }

    /// The field occurrence at a position of [`RecordView::values`].
    pub fn field_at(&self, i: usize) -> Option<Field<'d>> {
        let fv = self.values.get(i)?;
        Some(Field {
            reader: self.reader,
            def: &self.record().slots[fv.slot as usize],
            fv,
        })
    }

    /// For a metadata record that was applied, the change it made.
    pub fn metadata(&self) -> Option<MetaChange> {
        self.meta
    }

    /// The reader this record came from.
    pub fn reader(&self) -> &'d Reader<'d> {
        self.reader
    }
}

impl std::fmt::Debug for RecordView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordView")
            .field("record", &self.name())
            .field("section", &self.section)
            .field("offset", &self.offset)
            .field("len", &self.len)
            .field("index", &self.index)
            .field("values", &self.values)
            .finish()
    }
}

/// One field occurrence of a record.
#[derive(Clone, Copy)]
pub struct Field<'d> {
    reader: &'d Reader<'d>,
    /// Its definition.
    pub def: &'d Slot,
    /// Its decoded form.
    pub fv: &'d FieldValue,
}

impl<'d> Field<'d> {
    /// Display name.
    pub fn name(&self) -> &'d str {
        &self.def.name
    }

    /// Interpreted value.
    pub fn value(&self) -> Value {
        self.fv.value
    }

    /// The integer value, for integer fields (the offset or index for references).
    pub fn as_u64(&self) -> Option<u64> {
        match self.fv.value {
            Value::Int(v) => Some(v),
            _ => None,
        }
    }

    /// The bytes of a byte-string field.
    pub fn as_bytes(&self) -> Option<&'d [u8]> {
        match self.fv.value {
            Value::Bytes { offset, len } => {
                Some(&self.reader.input.bytes[offset as usize..(offset + len) as usize])
            }
            _ => None,
        }
    }

    /// The stored bytes (empty for zero-width fields).
    pub fn stored(&self) -> &'d [u8] {
        let o = self.fv.offset as usize;
        &self.reader.input.bytes[o..o + self.fv.width as usize]
    }

    /// The stored value as an unsigned integer, for integer fields that occupy bytes.
    pub fn raw(&self) -> Option<u64> {
        match self.def.kind {
            SlotKind::Int { .. } if self.fv.width > 0 => Some(self.fv.raw),
            _ => None,
        }
    }

    /// For a `sectionOffset`/`sectionStride` field, the element it leads to.
    pub fn resolve(&self) -> Option<Result<Resolved, super::ErrorKind>> {
        match self.fv.value {
            Value::Ref(r) => Some(self.reader.resolve(r)),
            _ => None,
        }
    }
}
