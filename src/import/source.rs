//! Where the exporter reads: the library's generic decoder, with field access by name.
//!
//! All calls into the decoder API are in this file, so that a change of that API touches only
//! [`TraceSource`] and [`Rec`].

use crate::container::Trace;
use crate::decode::{ElementRef, Event, EventStream, Reader, RecordView, Records, Value};
use crate::dtd::{RecordId, Schema};

/// An opened trace with its schema, read record by record.
pub struct TraceSource<'a> {
    reader: Reader<'a>,
    dtd_name: &'a str,
    /// Read a damaged trace as far as it goes ([`TraceSource::salvaging`]).
    salvage: bool,
    /// The damage stepped over while salvaging.
    damage: std::cell::RefCell<Vec<String>>,
}

/// One decoded record, with fields read by name.
pub struct Rec<'v, 'd> {
    view: &'v RecordView<'d>,
}

impl<'a> TraceSource<'a> {
    /// Bind a trace to its schema.
    pub fn new(trace: &'a Trace<'_>, schema: &'a Schema) -> TraceSource<'a> {
        TraceSource {
            reader: Reader::new(trace, schema),
            dtd_name: trace.dtd_name(),
            salvage: false,
            damage: Default::default(),
        }
    }

    /// Read through `reader` (a reader of an opened trace: `metatf::Opened::reader`).
    pub fn from_reader(reader: Reader<'a>, dtd_name: &'a str) -> TraceSource<'a> {
        TraceSource {
            reader,
            dtd_name,
            salvage: false,
            damage: Default::default(),
        }
    }

    /// With `true`, [`TraceSource::for_each_of`] steps over the damage of a trace (a region cut
    /// short by a crashed tracer: the records before it are read, the rest of the region is
    /// not) instead of stopping there; [`TraceSource::damage`] lists what it stepped over. A
    /// record that breaks the format still stops it.
    pub fn salvaging(mut self, yes: bool) -> TraceSource<'a> {
        self.salvage = yes;
        self
    }

    /// The damage stepped over while salvaging, as messages, in trace order.
    pub fn damage(&self) -> Vec<String> {
        self.damage.borrow().clone()
    }

    /// As [`TraceSource::for_each_in`], stepping over damage when salvaging
    /// ([`TraceSource::salvaging`]).
    pub fn for_each_of(
        &self,
        events: &mut dyn EventStream,
        f: impl FnMut(&Rec<'_, '_>) -> Result<(), String>,
    ) -> Result<(), String> {
        walk(events, self.salvage.then_some(&self.damage), f)
    }

    /// The reader.
    pub fn reader(&self) -> &Reader<'a> {
        &self.reader
    }

    /// Let `consume` read the trace's events, decoded here from the start.
    pub fn events(&self, consume: &mut dyn FnMut(&mut dyn EventStream)) {
        consume(&mut self.reader.records())
    }

    /// The DTD name the trace's header gives.
    pub fn dtd_name(&self) -> &'a str {
        self.dtd_name
    }

    /// The schema.
    pub fn schema(&self) -> &'a Schema {
        self.reader.schema()
    }

    /// Call `f` for every record in file order; stops at the first decoding error or error
    /// from `f`.
    pub fn for_each(
        &self,
        f: impl FnMut(&Rec<'_, '_>) -> Result<(), String>,
    ) -> Result<(), String> {
        Self::for_each_in(&mut self.reader.records(), f)
    }

    /// As [`TraceSource::for_each`], the events read from `events` (the events of this trace,
    /// in trace order: `metatf::parallel::events` decodes them on several threads).
    pub fn for_each_in(
        events: &mut dyn EventStream,
        f: impl FnMut(&Rec<'_, '_>) -> Result<(), String>,
    ) -> Result<(), String> {
        walk(events, None, f)
    }
}

/// The records of one section, read on demand alongside [`TraceSource::for_each`].
pub struct Cursor<'a> {
    records: Records<'a>,
}

impl Cursor<'_> {
    /// Call `f` with the next record of the section; `None` at its end.
    pub fn next<T>(
        &mut self,
        f: impl FnOnce(&Rec<'_, '_>) -> Result<T, String>,
    ) -> Option<Result<T, String>> {
        match self.records.next()? {
            Event::Record(view) => Some(f(&Rec { view: &view })),
            Event::Problem(p) => Some(Err(p.to_string())),
            Event::Damage(d) => Some(Err(d.to_string())),
        }
    }
}

impl<'a> TraceSource<'a> {
    /// A cursor over the records of section `section` only.
    pub fn cursor(&self, section: u8) -> Cursor<'_> {
        Cursor {
            records: self.reader.section_records(section),
        }
    }
}

impl<'d> Rec<'_, 'd> {
    /// The section id of the record (0: the global region).
    pub fn section(&self) -> u8 {
        self.view.section()
    }

    /// Size of the record in bytes.
    pub fn size(&self) -> u64 {
        self.view.len()
    }

    /// The byte offset a `sectionOffset` field `name` holds.
    pub fn ref_offset(&self, name: &str) -> Option<u64> {
        match self.view.field(name)?.value() {
            Value::Ref(ElementRef::Offset { offset, .. }) => Some(offset),
            _ => None,
        }
    }

    /// The record type's name.
    pub fn name(&self) -> &'d str {
        self.view.name()
    }

    /// The record type.
    pub fn record_id(&self) -> RecordId {
        self.view.record_id()
    }

    /// The integer value of field `name`; for a field read through a section (a stream of
    /// `mtf compact --split`), the integer its element holds.
    pub fn int(&self, name: &str) -> Option<u64> {
        let f = self.view.field(name)?;
        match f.value() {
            Value::Ref(_) => f.resolve()?.ok()?.value.as_u64(),
            _ => f.as_u64(),
        }
    }

    /// The integer values of every occurrence of field `name` (one per repeat item).
    pub fn ints_all<'n>(&self, name: &'n str) -> impl Iterator<Item = u64> + 'n
    where
        'd: 'n,
    {
        self.view.field_all(name).filter_map(|f| f.as_u64())
    }

    /// The bytes of field `name`: a byte string, or the string a `sectionOffset` leads to.
    pub fn bytes(&self, name: &str) -> Option<&'d [u8]> {
        let f = self.view.field(name)?;
        match f.value() {
            Value::Bytes(b) => Some(b),
            Value::Ref(_) => f.resolve()?.ok()?.value.as_bytes(),
            Value::Int(_) => None,
        }
    }
}

/// The one loop over a trace's events: `f` for each record; a problem ends it, and so does
/// damage unless `salvaged` collects it (then the records after it follow).
fn walk(
    events: &mut dyn EventStream,
    salvaged: Option<&std::cell::RefCell<Vec<String>>>,
    mut f: impl FnMut(&Rec<'_, '_>) -> Result<(), String>,
) -> Result<(), String> {
    while let Some(event) = events.next_event() {
        match event {
            Event::Record(view) => f(&Rec { view: &view })?,
            Event::Problem(p) => return Err(p.to_string()),
            Event::Damage(d) => match salvaged {
                Some(list) => list.borrow_mut().push(d.to_string()),
                None => return Err(d.to_string()),
            },
        }
    }
    Ok(())
}
