//! Borrowed views of one decoded record and its fields.

use std::fmt;

use crate::dtd::{RecordId, RecordType, Slot, SlotId, SlotKind};
use crate::layout::MetaProperty;

use super::error::RefError;
use super::reader::Reader;
use super::tables::Resolved;
use super::value::{ElementRef, FieldValue, Val, Value};

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

/// One decoded record, borrowed from [`Records`](super::Records) until its next call.
#[derive(Clone, Copy)]
pub struct RecordView<'d> {
    pub(crate) reader: &'d Reader<'d>,
    pub(crate) record_id: RecordId,
    pub(crate) section: u8,
    pub(crate) offset: u64,
    pub(crate) len: u64,
    pub(crate) index: u64,
    pub(crate) values: &'d [FieldValue],
    pub(crate) meta: Option<MetaChange>,
}

impl<'d> RecordView<'d> {
    /// The record type.
    pub fn record(&self) -> &'d RecordType {
        self.reader.schema.record(self.record_id)
    }

    /// The record type's id in the schema.
    pub fn record_id(&self) -> RecordId {
        self.record_id
    }

    /// The record type's name.
    pub fn name(&self) -> &'d str {
        &self.record().name
    }

    /// Whether this is a record a user counts: not a built-in (`section`, `metadata`,
    /// `comment`) and not an element of a table ([`Reader::is_table`]: a split stream's value,
    /// a string of a string table), whose value belongs to the field that refers to it.
    /// Record counts, `mtf info`, `dump --data-only`, CSV and Parquet show these.
    pub fn is_data(&self) -> bool {
        self.record().builtin.is_none() && !self.reader.is_table(self.section)
    }

    /// Whether the record is an element of a table ([`Reader::is_table`]).
    pub fn is_element(&self) -> bool {
        self.reader.is_table(self.section)
    }

    /// Section id of the region the record was read in (0 = global region).
    pub fn section(&self) -> u8 {
        self.section
    }

    /// Absolute byte offset of the record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Length of the record in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the record occupies no bytes (never: every record has a tag).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Index of the record in the trace, counting every record from 0 (approximate after a
    /// damaged region).
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The record's stored bytes.
    pub fn bytes(&self) -> &'d [u8] {
        self.reader.input.slice(self.offset, self.len)
    }

    /// Every decoded field occurrence, in order (repeats expanded), the tag first.
    pub fn fields(&self) -> impl ExactSizeIterator<Item = Field<'d>> + 'd {
        let reader = self.reader;
        let rt = self.record();
        self.values.iter().map(move |fv| Field {
            reader,
            def: &rt.slots[fv.slot as usize],
            fv,
        })
    }

    /// Each decoded field occurrence's slot and, for an integer, its value (`None` for a byte
    /// string or a reference), in order (repeats expanded), the tag first: what
    /// [`RecordView::fields`] gives, without making a [`Field`] of each (a pass over every
    /// record, such as the record counts of `mtf stats`).
    pub fn ints(&self) -> impl ExactSizeIterator<Item = (SlotId, Option<u64>)> + 'd {
        self.values.iter().map(|fv| {
            let v = match fv.value {
                Val::Int(v) => Some(v),
                _ => None,
            };
            (fv.slot, v)
        })
    }

    /// The first occurrence of a field by its display name (`size`, `vfield.data`).
    pub fn field(&self, name: &str) -> Option<Field<'d>> {
        let slot = self.record().slot_by_name(name)?;
        self.fields().find(|f| f.fv.slot == slot)
    }

    /// Every occurrence of a field by its display name (one per repeat item).
    pub fn field_all<'n>(&self, name: &'n str) -> impl Iterator<Item = Field<'d>> + 'n
    where
        'd: 'n,
    {
        let slot = self.record().slot_by_name(name);
        self.fields().filter(move |f| Some(f.fv.slot) == slot)
    }

    /// The logical value of the first occurrence of a field: what the field stands for once
    /// its interpretation is applied. A field read through a section (`sectionStride`,
    /// `sectionOffset`, docs/format.md §8) gives the value of the element it refers to, so
    /// that a field moved into a stream (`mtf compact --split`) reads as it did before.
    ///
    /// ```
    /// use metatf::decode::{ElementRef, Event};
    ///
    /// // `address` is read from section `addresses` here: `dump` shows `address=#0:0x1000`.
    /// let opened = metatf::open("traces/hatf-split-le64.mtf")?;
    /// let reader = opened.reader();
    /// let mut records = reader.records();
    /// while let Some(event) = records.next() {
    ///     if let Event::Record(r) = event {
    ///         if r.name() == "alloc" {
    ///             // The logical value: the address the element holds.
    ///             assert_eq!(r.get("address").and_then(|v| v.as_u64()), Some(0x1000));
    ///             // The reference the record stores, for those who ask.
    ///             assert_eq!(
    ///                 r.reference("address"),
    ///                 Some(ElementRef::Index { section: 2, index: 0 })
    ///             );
    ///             break;
    ///         }
    ///     }
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// A reference that leads nowhere (an invalid trace, reported as a
    /// [`Problem`](super::Problem)) gives the reference itself, [`Value::Ref`].
    pub fn get(&self, name: &str) -> Option<Value<'d>> {
        self.field(name).map(|f| f.logical())
    }

    /// The value of the first occurrence of a field as the record stores it: as
    /// [`RecordView::get`], except that a `sectionStride`/`sectionOffset` field gives the
    /// reference ([`Value::Ref`]) rather than the value it leads to.
    pub fn get_stored(&self, name: &str) -> Option<Value<'d>> {
        self.field(name).map(|f| f.value())
    }

    /// For a `sectionStride`/`sectionOffset` field, the reference the record stores (the
    /// element's index or byte offset in its section); `None` for any other field.
    pub fn reference(&self, name: &str) -> Option<ElementRef> {
        self.field(name).and_then(|f| f.reference())
    }

    /// How many field occurrences the record has (the tag included, repeats expanded).
    pub fn field_count(&self) -> usize {
        self.values.len()
    }

    /// The field occurrence at a position of [`RecordView::fields`].
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

impl fmt::Debug for RecordView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
    def: &'d Slot,
    pub(crate) fv: &'d FieldValue,
}

impl<'d> Field<'d> {
    /// Display name (`size`, `vfield.data`, `frames`).
    pub fn name(&self) -> &'d str {
        &self.def.name
    }

    /// The field's definition.
    pub fn def(&self) -> &'d Slot {
        self.def
    }

    /// The slot number (docs/format.md §4.4).
    pub fn slot(&self) -> SlotId {
        self.fv.slot
    }

    /// The interpreted value as the record stores it: for a `sectionStride`/`sectionOffset`
    /// field, the reference ([`Value::Ref`]); [`Field::logical`] follows it.
    pub fn value(&self) -> Value<'d> {
        self.fv.value.with(&self.reader.input)
    }

    /// The logical value: [`Field::value`], with a reference followed to the value of the
    /// element it leads to (through at most [`MAX_REF_HOPS`](super::MAX_REF_HOPS) look-ups).
    /// A reference that leads nowhere stays a [`Value::Ref`].
    pub fn logical(&self) -> Value<'d> {
        match self.fv.value {
            Val::Ref(r) => match self.reader.resolve(r) {
                Ok(resolved) => resolved.value,
                Err(_) => Value::Ref(r),
            },
            v => v.with(&self.reader.input),
        }
    }

    /// For a `sectionStride`/`sectionOffset` field, the stored reference.
    pub fn reference(&self) -> Option<ElementRef> {
        match self.fv.value {
            Val::Ref(r) => Some(r),
            _ => None,
        }
    }

    /// The logical integer value ([`Field::logical`]), for integer fields and references to
    /// integers; `None` for byte strings.
    pub fn as_u64(&self) -> Option<u64> {
        self.logical().as_u64()
    }

    /// The integer the field stands for where the analysis declarations need a number
    /// (docs/format.md §14.1: ids, times, depths): an integer field's value; for a
    /// `sectionOffset`/`sectionStride` field, the integer value of the element it leads to (a
    /// split stream) or, when that element is not an integer (a string) or cannot be reached,
    /// the number the field carries (its offset or index). `None` for a byte string.
    pub fn number(&self) -> Option<u64> {
        match self.fv.value {
            Val::Ref(r) => Some(match self.reader.resolve(r) {
                Ok(Resolved {
                    value: Value::Int(x),
                    ..
                }) => x,
                _ => r.number(),
            }),
            v => v.with(&self.reader.input).as_u64(),
        }
    }

    /// The bytes of a byte-string field, or of the string a reference leads to.
    pub fn as_bytes(&self) -> Option<&'d [u8]> {
        self.logical().as_bytes()
    }

    /// Absolute byte offset of the stored bytes.
    pub fn offset(&self) -> u64 {
        self.fv.offset
    }

    /// The stored bytes (empty for zero-width fields).
    pub fn stored(&self) -> &'d [u8] {
        self.reader
            .input
            .slice(self.fv.offset, self.fv.width as u64)
    }

    /// The stored value as an unsigned integer, for integer fields that occupy bytes.
    pub fn raw(&self) -> Option<u64> {
        match self.def.kind {
            SlotKind::Int { .. } if self.fv.width > 0 => Some(self.fv.raw),
            _ => None,
        }
    }

    /// For a `sectionOffset`/`sectionStride` field, the absolute offset of the record it names
    /// ([`Reader::element_offset`]).
    pub fn target_offset(&self) -> Option<Result<u64, RefError>> {
        self.reference().map(|r| self.reader.element_offset(r))
    }

    /// For a `sectionOffset`/`sectionStride` field, the element it leads to.
    pub fn resolve(&self) -> Option<Result<Resolved<'d>, RefError>> {
        self.reference().map(|r| self.reader.resolve(r))
    }
}

impl fmt::Debug for Field<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Field")
            .field("name", &self.name())
            .field("value", &self.value())
            .finish()
    }
}

impl fmt::Display for Field<'_> {
    /// `name=value`, with the value as [`Value`]'s `Display` shows it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.name(), self.value())
    }
}
