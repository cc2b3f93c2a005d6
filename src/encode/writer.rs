//! [`TraceWriter`]: writes a whole trace — records, sections, metadata, header — checking
//! everything a reader checks, including references between sections.
//!
//! Records stream into a spool (a temporary file, or memory); `finish` writes the header (which
//! needs the section sizes and the record count, known only at the end) followed by the records
//! to the destination. An unfinished writer leaves nothing under the target name, and memory does
//! not grow with the number of records (only with references that wait for their target
//! section, and with the element offsets of sections that `sectionOffset` fields point into).
//!
//! The destination is an [`Output`], with its semantics (those of `cp`): a regular file is
//! replaced atomically (through a symbolic link, the link's target), keeping its permission
//! bits, and a new one gets `0666 & !umask`; a device or FIFO is written directly; `-` is
//! standard output.

// Design: the spool is an `io::TempFile` in the target's folder when the target is a regular
// file (so that a full disk shows while records are written, not only at the end), else in the
// system's temporary folder. Both the spool and the output's temporary file are registered with
// `io::remove_temp_files`, so a SIGINT/SIGTERM watcher leaves nothing behind.

use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::container::{ByteOrder, Class, Header};
use crate::decode::{ElementRef, Reader, RefError, Window};
use crate::dtd::{Interp, RecordId, Schema, SlotId};
use crate::layout::{Compiled, MetaProperty};
use std::sync::Arc;

use super::assemble::{assemble, AssembleError, FieldIn, Fields};
use super::encoder::{Encoder, In};
use super::error::{EncodeError, EncodeErrorKind as K};
use crate::io::{IoError, Output, TempFile};

enum Body {
    File {
        out: Output,
        spool: BufWriter<TempFile>,
        /// The path named when the spool cannot be written: the output's, when the spool is in
        /// its folder (the user knows no other name), else the spool's.
        spool_name: PathBuf,
    },
    Memory(Vec<u8>),
}

impl Body {
    /// An error met while writing (`write`) or reading back (`!write`) the spool.
    fn spool_error(&self, write: bool, source: std::io::Error) -> EncodeError {
        let path = match self {
            Body::File { spool_name, .. } => spool_name.clone(),
            Body::Memory(_) => PathBuf::new(),
        };
        let e = if write {
            IoError::from_write(path, source)
        } else {
            IoError::Read { path, source }
        };
        EncodeError::new(K::File(e))
    }
}

/// What a finished write produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Records written, of every kind.
    pub nrecords: u64,
    /// Total file size in bytes.
    pub bytes: u64,
    /// Sections written, in order, with their sizes.
    pub sections: Vec<(u8, u64)>,
}

/// One section written or being written.
struct Written {
    id: u8,
    /// Offset of its `section` record in the record stream.
    start: u64,
    size: u64,
    /// Offset of its content (after the `section` record) in the record stream.
    content: u64,
    elements: u64,
    /// Element offsets relative to the content, kept for sections that `sectionOffset` may
    /// point into.
    offsets: Option<Vec<u64>>,
}

/// A reference whose target section was not complete when it was written.
struct Deferred {
    record_index: u64,
    record: RecordId,
    slot: SlotId,
    target: ElementRef,
}

/// Writes one trace for a schema.
pub struct TraceWriter<'s> {
    enc: Encoder<'s>,
    class: Class,
    order: ByteOrder,
    dtd_name: String,
    body: Body,
    buf: Vec<u8>,
    len: u64,
    global_len: u64,
    sections: Vec<Written>,
    nrecords: u64,
    tracked: [bool; 256],
    deferred: Vec<Deferred>,
    /// A record started with [`TraceWriter::write`] and dropped without `.done()`: its name
    /// and the index it would have had. `finish` refuses to write a trace that lost it.
    abandoned: Option<(String, u64)>,
}

impl<'s> TraceWriter<'s> {
    fn with_body(
        schema: &'s Schema,
        compiled: Option<Arc<Compiled>>,
        class: Class,
        order: ByteOrder,
        dtd_name: &str,
        body: Body,
    ) -> TraceWriter<'s> {
        // Sections a declared `sectionOffset` points into keep their element offsets; others
        // only their element count, unless metadata points a field at them before they start.
        let mut tracked = [false; 256];
        for r in &schema.records {
            for s in &r.slots {
                if let Interp::SectionOffset(n) = s.interp {
                    tracked[n as usize] = true;
                }
            }
        }
        TraceWriter {
            enc: Encoder::new(
                schema,
                compiled.unwrap_or_else(|| Arc::new(Compiled::new(schema))),
                order,
                class,
            ),
            class,
            order,
            dtd_name: dtd_name.to_string(),
            body,
            buf: Vec::with_capacity(64),
            len: 0,
            global_len: 0,
            sections: Vec::new(),
            nrecords: 0,
            tracked,
            deferred: Vec::new(),
            abandoned: None,
        }
    }

    /// A writer that will write the trace to `path` when finished (and leave it untouched if
    /// it is not), with the semantics of [`Output::create`]: `-` is standard output, a device or
    /// FIFO is written directly, a regular file (new, existing, or the target of a symbolic link)
    /// is replaced atomically and keeps its permission bits.
    ///
    /// Errors: [`EncodeErrorKind::File`](super::EncodeErrorKind::File) if the output or the
    /// spool cannot be created.
    pub fn create(
        schema: &'s Schema,
        path: impl AsRef<Path>,
        class: Class,
        order: ByteOrder,
        dtd_name: &str,
    ) -> Result<TraceWriter<'s>, EncodeError> {
        Self::create_shared(schema, None, path, class, order, dtd_name)
    }

    /// As [`TraceWriter::create`], with the schema's compiled programs when a reader of the same
    /// schema has them already.
    pub(crate) fn create_shared(
        schema: &'s Schema,
        compiled: Option<Arc<Compiled>>,
        path: impl AsRef<Path>,
        class: Class,
        order: ByteOrder,
        dtd_name: &str,
    ) -> Result<TraceWriter<'s>, EncodeError> {
        let out = Output::create(path.as_ref())?;
        Self::to_output_shared(schema, compiled, out, class, order, dtd_name)
    }

    /// A writer that writes the trace to `out` (already created) when finished, and commits
    /// it. Records are spooled to a temporary file beside the target if `out` replaces a
    /// regular file, else in the system's temporary folder.
    ///
    /// ```
    /// use metatf::container::{ByteOrder, Class};
    /// use metatf::encode::TraceWriter;
    /// # let dir = std::env::temp_dir().join(format!("mtf-writer-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let dtd = std::fs::read_to_string("dtds/hatf10.dtd")?;
    /// let schema = metatf::dtd::parse_str("hatf10.dtd", &dtd).map_err(|e| e.to_string())?.schema;
    /// let out = metatf::io::Output::create(dir.join("t.mtf"))?;
    /// let mut w = TraceWriter::to_output(&schema, out, Class::Bits32, ByteOrder::Little, "hatf10.dtd")?;
    /// w.section_named("heap")?;
    /// w.write("alloc").int("size", 16).int("address", 4096).bytes("vfield.data", "").done()?;
    /// let summary = w.finish()?;
    /// assert_eq!(std::fs::metadata(dir.join("t.mtf"))?.len(), summary.bytes);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_output(
        schema: &'s Schema,
        out: Output,
        class: Class,
        order: ByteOrder,
        dtd_name: &str,
    ) -> Result<TraceWriter<'s>, EncodeError> {
        Self::to_output_shared(schema, None, out, class, order, dtd_name)
    }

    fn to_output_shared(
        schema: &'s Schema,
        compiled: Option<Arc<Compiled>>,
        out: Output,
        class: Class,
        order: ByteOrder,
        dtd_name: &str,
    ) -> Result<TraceWriter<'s>, EncodeError> {
        let (spool, spool_name) = if out.temp_path().is_some() {
            let folder = match out.target().parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            (TempFile::new_in(folder)?, out.path().to_path_buf())
        } else {
            let spool = TempFile::new()?;
            let name = spool.path().to_path_buf();
            (spool, name)
        };
        Ok(Self::with_body(
            schema,
            compiled,
            class,
            order,
            dtd_name,
            Body::File {
                out,
                spool: BufWriter::with_capacity(1 << 16, spool),
                spool_name,
            },
        ))
    }

    /// Where the trace is written, if this writer writes to a file or standard output.
    pub fn output(&self) -> Option<&Output> {
        match &self.body {
            Body::File { out, .. } => Some(out),
            Body::Memory(_) => None,
        }
    }

    /// A writer that builds the trace in memory; [`TraceWriter::finish_to_vec`] returns it.
    pub fn in_memory(
        schema: &'s Schema,
        class: Class,
        order: ByteOrder,
        dtd_name: &str,
    ) -> TraceWriter<'s> {
        Self::with_body(
            schema,
            None,
            class,
            order,
            dtd_name,
            Body::Memory(Vec::new()),
        )
    }

    /// The address class of the trace being written.
    pub fn class(&self) -> Class {
        self.class
    }

    /// The schema.
    pub fn schema(&self) -> &'s Schema {
        self.enc.schema()
    }

    /// Section id of the current scope (0 = global region).
    pub fn section_id(&self) -> u8 {
        self.enc.section()
    }

    /// Bytes written so far in the current section after its `section` record (the offset a
    /// `sectionOffset` to the next record gives), or in the global region.
    pub fn section_len(&self) -> u64 {
        match self.sections.last() {
            Some(s) => s.start + s.size - s.content,
            None => self.global_len,
        }
    }

    /// Records written so far, of every kind.
    pub fn records_written(&self) -> u64 {
        self.nrecords
    }

    /// A record type by name in the current section.
    pub fn lookup(&self, name: &str) -> Option<RecordId> {
        self.enc.lookup(name)
    }

    /// For a record type with no repeat: the keys of its fields in layout order, each with
    /// whether it is a byte string (what `mtf pack` reads without building [`Fields`]).
    pub(crate) fn plain_keys(&self, rid: RecordId) -> Option<(&[Box<str>], Vec<bool>)> {
        let prog = self.enc.compiled().program(rid);
        prog.ops
            .iter()
            .map(|op| match op {
                crate::layout::Op::Int(_) => Some(false),
                crate::layout::Op::Bytes(..) => Some(true),
                _ => None,
            })
            .collect::<Option<Vec<bool>>>()
            .map(|kinds| (&prog.keys[..], kinds))
    }

    fn emit(&mut self, element: bool) -> Result<(), EncodeError> {
        let n = self.buf.len() as u64;
        match &mut self.body {
            Body::File { spool, .. } => {
                if let Err(e) = spool.write_all(&self.buf) {
                    return Err(self.body.spool_error(true, e));
                }
            }
            Body::Memory(v) => v.extend_from_slice(&self.buf),
        }
        let at = self.len;
        self.len += n;
        match self.sections.last_mut() {
            Some(s) => {
                s.size += n;
                if element {
                    s.elements += 1;
                    if let Some(o) = &mut s.offsets {
                        o.push(at - s.content);
                    }
                }
            }
            None => self.global_len += n,
        }
        self.nrecords += 1;
        Ok(())
    }

    fn err(&self, e: EncodeError) -> EncodeError {
        e.with_index(self.nrecords)
    }

    /// Open section `id` (writes its `section` record). Each section may be opened once.
    pub fn section(&mut self, id: u8) -> Result<(), EncodeError> {
        if self.sections.iter().any(|s| s.id == id) {
            return Err(self.err(EncodeError::new(K::SectionTwice { id })));
        }
        let mut buf = std::mem::take(&mut self.buf);
        let r = self.enc.begin_section(id, &mut buf);
        self.buf = buf;
        r.map_err(|e| self.err(e))?;
        let start = self.len;
        self.sections.push(Written {
            id,
            start,
            size: 0,
            content: start + self.buf.len() as u64,
            elements: 0,
            offsets: self.tracked[id as usize].then(Vec::new),
        });
        self.emit(false)
    }

    /// Open a section by its DTD name (or its id written in decimal).
    pub fn section_named(&mut self, name: &str) -> Result<(), EncodeError> {
        let schema = self.enc.schema();
        let id = schema
            .scopes
            .iter()
            .find(|s| s.id != 0 && s.name == name)
            .map(|s| s.id)
            .or_else(|| {
                name.parse::<u8>()
                    .ok()
                    .filter(|&n| schema.scope_for(n).is_some())
            });
        match id {
            Some(id) => self.section(id),
            None => Err(self.err(EncodeError::new(K::UndeclaredSection {
                section: format!("`{name}`"),
            }))),
        }
    }

    /// Write a record from its field values in decoding order (repeats expanded, without the
    /// tag): the low-level form; see [`TraceWriter::write`] for fields by name.
    pub fn record(&mut self, record: RecordId, values: &[In]) -> Result<(), EncodeError> {
        let mut buf = std::mem::take(&mut self.buf);
        let r = self.enc.record(record, values, &mut buf);
        self.buf = buf;
        r.map_err(|e| self.err(e))?;
        self.check_refs(record)?;
        self.emit(true)
    }

    /// [`TraceWriter::record`] for `mtf pack`'s fast reader: the values of a record of plain
    /// fields as u64s (an integer modulo 2⁶⁴, a byte string as `start << 32 | len` into
    /// `line`), encoded by the record type's plan under the current state. `None` where the
    /// plan declines (nothing written, nothing changed): then write the record with
    /// [`TraceWriter::record`], which says why.
    pub(crate) fn record_fast(
        &mut self,
        record: RecordId,
        values: &[u64],
        line: &[u8],
    ) -> Option<Result<(), EncodeError>> {
        let mut buf = std::mem::take(&mut self.buf);
        let ok = self.enc.fast_record(record, values, line, &mut buf);
        self.buf = buf;
        // A plan's record has no reference to check.
        ok.then(|| self.emit(true))
    }

    /// Write a record of the named type (looked up in the current section) from its field
    /// values in decoding order, as [`TraceWriter::record`].
    pub fn record_named(&mut self, name: &str, values: &[In]) -> Result<(), EncodeError> {
        let rid = self
            .enc
            .lookup(name)
            .ok_or_else(|| self.err(EncodeError::new(K::UnknownRecord { name: name.into() })))?;
        self.record(rid, values)
    }

    /// Write a record of the named type from fields given by name (docs/text-format.md keys).
    /// Left-out lengths and counts are computed; `default`, `stride` and `sectionStride` fields
    /// may be left out.
    pub fn write_fields(&mut self, name: &str, fields: &Fields) -> Result<(), EncodeError> {
        self.write_fields_at(name, fields).map_err(|(_, e)| e)
    }

    /// As [`TraceWriter::write_fields`], also saying which top-level key an error concerns.
    pub(crate) fn write_fields_at(
        &mut self,
        name: &str,
        fields: &Fields,
    ) -> Result<(), AssembleError> {
        let Some(rid) = self.enc.lookup(name) else {
            let e = EncodeError::new(K::UnknownRecord { name: name.into() });
            return Err((None, self.err(e)));
        };
        let rt = self.enc.schema().record(rid);
        let values = assemble(rt, self.enc.compiled().program(rid), fields)
            .map_err(|(at, e)| (at, self.err(e)))?;
        self.record(rid, &values).map_err(|e| {
            let at = e
                .field()
                .and_then(|f| fields.0.iter().position(|(k, _)| k == f));
            (at, e)
        })
    }

    #[cfg(feature = "import")]
    /// The ordered values of a record of type `rid` from fields by name, as
    /// [`TraceWriter::write_fields`] would write them (for writers that reuse a template).
    pub(crate) fn assemble(&self, rid: RecordId, fields: &Fields) -> Result<Vec<In>, EncodeError> {
        let rt = self.enc.schema().record(rid);
        assemble(rt, self.enc.compiled().program(rid), fields).map_err(|(_, e)| e)
    }

    /// The live state of one slot of a record type in the current section.
    pub(crate) fn live(&self, rid: RecordId, slot: SlotId) -> Option<crate::layout::SlotState> {
        self.enc.live(rid, slot)
    }

    /// What a `live` field of set `set` stores for `value` now (docs/format.md §13): its
    /// position, or the set's length plus the value (`None` if that passes 2⁶⁴).
    pub(crate) fn live_stored(&self, set: u8, value: u64) -> Option<u64> {
        self.enc.live_stored(set, value)
    }

    /// Start a record of the named type, to be given fields by name:
    /// `w.write("alloc").int("size", 16).int("address", 4096).done()?`.
    ///
    /// The record is written by `.done()`. A builder dropped without it is a compile-time
    /// warning (`#[must_use]`), and if it happens anyway, [`TraceWriter::finish`] refuses to
    /// write the trace ([`EncodeErrorKind::AbandonedRecord`](super::EncodeErrorKind)): a record
    /// is never lost silently.
    pub fn write<'w>(&'w mut self, name: &str) -> RecordBuilder<'w, 's> {
        RecordBuilder {
            writer: self,
            name: name.to_string(),
            fields: Fields::new(),
            done: false,
        }
    }

    /// The error for a record dropped without `.done()`, if one was.
    fn check_abandoned(&self) -> Result<(), EncodeError> {
        match &self.abandoned {
            Some((name, index)) => {
                Err(EncodeError::new(K::AbandonedRecord { name: name.clone() }).with_index(*index))
            }
            None => Ok(()),
        }
    }

    /// Write a metadata record and apply it.
    pub fn metadata(
        &mut self,
        record: RecordId,
        slot: SlotId,
        prop: MetaProperty,
    ) -> Result<(), EncodeError> {
        let mut buf = std::mem::take(&mut self.buf);
        let r = self.enc.metadata(record, slot, prop, &mut buf);
        self.buf = buf;
        r.map_err(|e| self.err(e))?;
        if let MetaProperty::Interp(Interp::SectionOffset(n)) = prop {
            // Element offsets of a section not yet started are kept from now on; one already
            // written without them is checked by decoding it at the end.
            if !self.sections.iter().any(|s| s.id == n) {
                self.tracked[n as usize] = true;
            }
        }
        self.emit(false)
    }

    /// Write a metadata record naming the record type and field by name.
    pub fn metadata_named(
        &mut self,
        record: &str,
        field: &str,
        prop: MetaProperty,
    ) -> Result<(), EncodeError> {
        let rid = self.enc.lookup(record).ok_or_else(|| {
            self.err(EncodeError::new(K::UnknownRecord {
                name: record.into(),
            }))
        })?;
        let rt = self.enc.schema().record(rid);
        let slot = rt.slot_by_name(field).ok_or_else(|| {
            self.err(EncodeError::new(K::UnknownField {
                record: record.into(),
                key: field.into(),
            }))
        })?;
        self.metadata(rid, slot, prop)
    }

    /// Write a comment record.
    pub fn comment(&mut self, text: &str) -> Result<(), EncodeError> {
        let mut f = Fields::new();
        f.push("vfield.data", FieldIn::Bytes(text.as_bytes().to_vec()));
        self.write_fields("comment", &f)
    }

    /// Check the references the last record wrote, or keep them for later.
    fn check_refs(&mut self, record: RecordId) -> Result<(), EncodeError> {
        let current = self.enc.section();
        for i in 0..self.enc.refs.len() {
            let (target, slot) = self.enc.refs[i];
            let section = target.section();
            let done = self
                .sections
                .iter()
                .find(|s| s.id == section)
                .filter(|_| section != current);
            let verdict = match (done, target) {
                (Some(s), ElementRef::Index { index, .. }) => Some(check_index(s, index)),
                (Some(s), ElementRef::Offset { offset, .. }) => {
                    s.offsets.as_ref().map(|o| check_offset(s, o, offset))
                }
                _ => None,
            };
            match verdict {
                Some(Ok(())) => {}
                Some(Err(e)) => {
                    let rt = self.enc.schema().record(record);
                    let err = EncodeError::at(
                        &rt.name,
                        Some(&rt.slots[slot as usize].name),
                        K::Reference(e),
                    );
                    return Err(self.err(err));
                }
                None => self.deferred.push(Deferred {
                    record_index: self.nrecords,
                    record,
                    slot,
                    target,
                }),
            }
        }
        Ok(())
    }

    /// Check the references that waited for their section, decoding a section whose element
    /// offsets were not kept (each such section once, with the encoder's compiled programs).
    fn check_deferred(&mut self) -> Result<(), EncodeError> {
        if self.deferred.is_empty() {
            return Ok(());
        }
        let deferred = std::mem::take(&mut self.deferred);
        let schema = self.enc.schema();
        // Sections whose element offsets must be found by decoding them, each read back once.
        let mut loaded: Vec<(u8, Vec<u8>)> = Vec::new();
        for d in &deferred {
            let section = d.target.section();
            if let (ElementRef::Offset { .. }, Some(s)) = (
                d.target,
                self.sections
                    .iter()
                    .find(|s| s.id == section && s.offsets.is_none()),
            ) {
                if !loaded.iter().any(|(id, _)| *id == section) {
                    let (start, size) = (s.start, s.size);
                    loaded.push((section, self.read_back(start, size)?));
                }
            }
        }
        let readers: Vec<(u8, Reader<'_>)> = loaded
            .iter()
            .map(|(section, bytes)| {
                let window = Window::of_section(bytes, *section, self.order, self.class);
                let reader = Reader::from_window(window, schema, self.enc.compiled().clone());
                (*section, reader)
            })
            .collect();
        for d in &deferred {
            let section = d.target.section();
            let verdict = match self.sections.iter().find(|s| s.id == section) {
                None => Err(RefError::MissingSection { section }),
                Some(s) => match (d.target, &s.offsets) {
                    (ElementRef::Index { index, .. }, _) => check_index(s, index),
                    (ElementRef::Offset { offset, .. }, Some(o)) => check_offset(s, o, offset),
                    (ElementRef::Offset { .. }, None) => {
                        match readers.iter().find(|(id, _)| *id == section) {
                            // The element index is built once per reader, on first use.
                            Some((_, reader)) => reader.element(d.target).map(|_| ()),
                            None => Err(RefError::MissingSection { section }),
                        }
                    }
                },
            };
            if let Err(e) = verdict {
                let rt = schema.record(d.record);
                return Err(EncodeError::at(
                    &rt.name,
                    Some(&rt.slots[d.slot as usize].name),
                    K::Reference(e),
                )
                .with_index(d.record_index));
            }
        }
        Ok(())
    }

    fn read_back(&mut self, start: u64, size: u64) -> Result<Vec<u8>, EncodeError> {
        match &mut self.body {
            Body::Memory(v) => Ok(v[start as usize..(start + size) as usize].to_vec()),
            Body::File { spool, .. } => {
                if let Err(e) = spool.flush() {
                    return Err(self.body.spool_error(true, e));
                }
                let f = spool.get_mut();
                let mut out = vec![0; size as usize];
                let read = f
                    .seek(SeekFrom::Start(start))
                    .and_then(|_| f.read_exact(&mut out))
                    .and_then(|_| f.seek(SeekFrom::End(0)));
                match read {
                    Ok(_) => Ok(out),
                    Err(e) => Err(self.body.spool_error(false, e)),
                }
            }
        }
    }

    fn header(&self) -> Result<Vec<u8>, EncodeError> {
        let sections: Vec<(u8, u64)> = self.sections.iter().map(|s| (s.id, s.size)).collect();
        let mut out = Header::encode(
            self.class,
            self.order,
            &self.dtd_name,
            self.nrecords,
            self.global_len,
            &sections,
        )
        .map_err(|e| EncodeError::new(K::Container(e)))?;
        if self.enc.uses_live {
            Header::set_extensions(&mut out, crate::container::EXT_LIVE);
        }
        Ok(out)
    }

    /// Finish an in-memory trace (a writer made by [`TraceWriter::in_memory`]) and return its
    /// bytes.
    ///
    /// Errors: as [`TraceWriter::finish`]; on a writer that writes to a file,
    /// [`EncodeErrorKind::WrongFinish`](super::EncodeErrorKind::WrongFinish) (the output is
    /// then left as it was).
    pub fn finish_to_vec(mut self) -> Result<Vec<u8>, EncodeError> {
        if let Body::File { .. } = self.body {
            return Err(EncodeError::new(K::WrongFinish {
                called: "finish_to_vec",
                made: "create",
                instead: "finish",
            }));
        }
        self.check_abandoned()?;
        self.check_deferred()?;
        let mut out = self.header()?;
        if let Body::Memory(v) = &self.body {
            out.extend_from_slice(v);
        }
        Ok(out)
    }

    /// Finish a file trace: write the header and the records to the output and commit it
    /// ([`Output::commit`]: a regular file is renamed into place only now).
    ///
    /// Errors while writing are [`EncodeErrorKind::File`](super::EncodeErrorKind::File), naming
    /// the output; the target is then left as it was (for a regular file).
    ///
    /// On a writer made by [`TraceWriter::in_memory`], the error is
    /// [`EncodeErrorKind::WrongFinish`](super::EncodeErrorKind::WrongFinish).
    pub fn finish(mut self) -> Result<Summary, EncodeError> {
        if let Body::Memory(_) = self.body {
            return Err(EncodeError::new(K::WrongFinish {
                called: "finish",
                made: "in_memory",
                instead: "finish_to_vec",
            }));
        }
        self.check_abandoned()?;
        self.check_deferred()?;
        let header = self.header()?;
        let summary = Summary {
            nrecords: self.nrecords,
            bytes: header.len() as u64 + self.len,
            sections: self.sections.iter().map(|s| (s.id, s.size)).collect(),
        };
        let Body::File {
            mut out,
            spool,
            spool_name,
        } = self.body
        else {
            // Checked above.
            return Ok(summary);
        };
        let spool_err = |write: bool, e: std::io::Error| {
            let path = spool_name.clone();
            EncodeError::new(K::File(if write {
                IoError::from_write(path, e)
            } else {
                IoError::Read { path, source: e }
            }))
        };
        let mut records = spool
            .into_inner()
            .map_err(|e| spool_err(true, e.into_error()))?;
        records.rewind().map_err(|e| spool_err(false, e))?;
        out.write_all(&header).map_err(|e| out.error(e))?;
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            let n = match records.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(spool_err(false, e)),
            };
            out.write_all(&chunk[..n]).map_err(|e| out.error(e))?;
        }
        drop(records);
        out.commit()?;
        Ok(summary)
    }
}

fn check_index(s: &Written, index: i64) -> Result<(), RefError> {
    if index >= 0 && (index as u64) < s.elements {
        Ok(())
    } else {
        Err(RefError::BadIndex {
            section: s.id,
            index,
            count: s.elements,
        })
    }
}

fn check_offset(s: &Written, offsets: &[u64], offset: u64) -> Result<(), RefError> {
    match offsets.binary_search(&offset) {
        Ok(_) => Ok(()),
        Err(_) => Err(RefError::BadOffset {
            section: s.id,
            offset,
            content: s.start + s.size - s.content,
        }),
    }
}

/// A record being given its fields by name; see [`TraceWriter::write`]. Nothing is written
/// until [`RecordBuilder::done`]; forgetting it is a warning (an error under
/// `#![deny(unused_must_use)]`):
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// # use metatf::container::{ByteOrder, Class};
/// # use metatf::encode::TraceWriter;
/// # let schema = metatf::dtd::load("dtds/hatf10.dtd".as_ref()).unwrap().schema;
/// let mut w = TraceWriter::in_memory(&schema, Class::Bits32, ByteOrder::Little, "hatf10.dtd");
/// w.write("alloc").int("size", 16);
/// ```
///
/// and a builder dropped anyway makes [`TraceWriter::finish`] fail rather than write a trace
/// without the record.
#[must_use = "the record is written only by `.done()`"]
pub struct RecordBuilder<'w, 's> {
    writer: &'w mut TraceWriter<'s>,
    name: String,
    fields: Fields,
    done: bool,
}

impl Drop for RecordBuilder<'_, '_> {
    fn drop(&mut self) {
        if !self.done && self.writer.abandoned.is_none() {
            let index = self.writer.nrecords;
            self.writer.abandoned = Some((std::mem::take(&mut self.name), index));
        }
    }
}

impl RecordBuilder<'_, '_> {
    /// An integer field.
    pub fn int(mut self, key: &str, v: u64) -> Self {
        self.fields.push(key, FieldIn::Int(v));
        self
    }

    /// A signed integer field (two's complement).
    pub fn signed(mut self, key: &str, v: i64) -> Self {
        self.fields.push(
            key,
            if v < 0 {
                FieldIn::Neg(v)
            } else {
                FieldIn::Int(v as u64)
            },
        );
        self
    }

    /// A byte-string field (its length field, if left out, is computed).
    pub fn bytes(mut self, key: &str, v: impl Into<Vec<u8>>) -> Self {
        self.fields.push(key, FieldIn::Bytes(v.into()));
        self
    }

    /// A `sectionOffset` field: the byte offset into the target section's content.
    pub fn offset(mut self, key: &str, offset: u64) -> Self {
        self.fields.push(key, FieldIn::Offset(offset));
        self
    }

    /// Any value, including lists and groups for repeats.
    pub fn value(mut self, key: &str, v: FieldIn) -> Self {
        self.fields.push(key, v);
        self
    }

    /// Write the record.
    pub fn done(mut self) -> Result<(), EncodeError> {
        self.done = true;
        let fields = std::mem::take(&mut self.fields);
        self.writer.write_fields(&self.name, &fields)
    }
}
