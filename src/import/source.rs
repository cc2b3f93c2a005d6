//! Where the exporter reads: the library's generic decoder, with field access by name.
//!
//! All calls into the decoder API are in this file, so that a change of that API touches only
//! [`TraceSource`] and [`Rec`].

use crate::container::Trace;
use crate::decode::{Event, Reader, RecordView, Value};
use crate::dtd::{RecordId, Schema};

/// An opened trace with its schema, read record by record.
pub struct TraceSource<'a> {
    reader: Reader<'a>,
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
        }
    }

    /// The schema.
    pub fn schema(&self) -> &'a Schema {
        self.reader.schema()
    }

    /// Call `f` for every record in file order; stops at the first decoding error or error
    /// from `f`.
    pub fn for_each(
        &self,
        mut f: impl FnMut(&Rec<'_, '_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut records = self.reader.records();
        while let Some(event) = records.next() {
            match event {
                Event::Record(view) => f(&Rec { view: &view })?,
                Event::Problem(p) => return Err(p.to_string()),
                Event::Damage(d) => return Err(d.to_string()),
            }
        }
        Ok(())
    }
}

impl<'d> Rec<'_, 'd> {
    /// The record type's name.
    pub fn name(&self) -> &'d str {
        self.view.name()
    }

    /// The record type.
    pub fn record_id(&self) -> RecordId {
        self.view.record_id()
    }

    /// The integer value of field `name`.
    pub fn int(&self, name: &str) -> Option<u64> {
        self.view.field(name)?.as_u64()
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
