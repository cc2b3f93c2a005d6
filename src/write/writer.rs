//! [`TraceWriter`]: writes a whole trace — records, sections, header — safely.
//!
//! Records stream into a temporary file beside the target; `finish` writes the header (which
//! needs the section sizes and the record count, known only at the end) into a second temporary
//! file, appends the records, and renames it into place. An interrupted write leaves nothing
//! under the target name, and memory does not grow with the number of records.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::container::{ByteOrder, Class, Header};
use crate::decode::MetaProperty;
use crate::dtd::{RecordId, Schema, SlotId};

use super::encoder::{Encoder, In};
use super::error::{WriteError, WriteErrorKind};

enum Body {
    File {
        target: PathBuf,
        tmp: BufWriter<tempfile::NamedTempFile>,
    },
    Memory(Vec<u8>),
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

/// Writes one trace for a schema.
pub struct TraceWriter<'s> {
    enc: Encoder<'s>,
    class: Class,
    order: ByteOrder,
    dtd_name: String,
    body: Body,
    buf: Vec<u8>,
    global_len: u64,
    sections: Vec<(u8, u64)>,
    nrecords: u64,
    used: [bool; 256],
}

impl<'s> TraceWriter<'s> {
    fn with_body(
        schema: &'s Schema,
        class: Class,
        order: ByteOrder,
        dtd_name: &str,
        body: Body,
    ) -> TraceWriter<'s> {
        TraceWriter {
            enc: Encoder::new(schema, order == ByteOrder::Big, class.word_size() as u8),
            class,
            order,
            dtd_name: dtd_name.to_string(),
            body,
            buf: Vec::with_capacity(64),
            global_len: 0,
            sections: Vec::new(),
            nrecords: 0,
            used: [false; 256],
        }
    }

    /// A writer that will create `path` when finished (and nothing if it is not).
    pub fn create(
        schema: &'s Schema,
        path: impl AsRef<Path>,
        class: Class,
        order: ByteOrder,
        dtd_name: &str,
    ) -> Result<TraceWriter<'s>, WriteError> {
        let target = path.as_ref().to_path_buf();
        let tmp = temp_beside(&target, ".mtf-records-")?;
        Ok(Self::with_body(
            schema,
            class,
            order,
            dtd_name,
            Body::File {
                target,
                tmp: BufWriter::with_capacity(1 << 16, tmp),
            },
        ))
    }

    /// A writer that builds the trace in memory; `finish_to_vec` returns it.
    pub fn in_memory(
        schema: &'s Schema,
        class: Class,
        order: ByteOrder,
        dtd_name: &str,
    ) -> TraceWriter<'s> {
        Self::with_body(schema, class, order, dtd_name, Body::Memory(Vec::new()))
    }

    /// The encoder (current section, live state, record lookup).
    pub fn encoder(&self) -> &Encoder<'s> {
        &self.enc
    }

    fn emit(&mut self) -> Result<(), WriteError> {
        let n = self.buf.len() as u64;
        match &mut self.body {
            Body::File { tmp, .. } => tmp.write_all(&self.buf)?,
            Body::Memory(v) => v.extend_from_slice(&self.buf),
        }
        match self.sections.last_mut() {
            Some((_, size)) => *size += n,
            None => self.global_len += n,
        }
        self.nrecords += 1;
        Ok(())
    }

    /// Open section `id` (writes its `section` record). Each section may be opened once.
    pub fn begin_section(&mut self, id: u8) -> Result<(), WriteError> {
        if self.used[id as usize] {
            return Err(WriteError::new(WriteErrorKind::Section(format!(
                "section {id} was already written; a section occurs once per trace"
            ))));
        }
        let mut buf = std::mem::take(&mut self.buf);
        let r = self.enc.begin_section(id, &mut buf);
        self.buf = buf;
        r?;
        self.used[id as usize] = true;
        self.sections.push((id, 0));
        self.emit()
    }

    /// Write a record from its field values in decoding order (without the tag).
    pub fn record(&mut self, record: RecordId, values: &[In]) -> Result<(), WriteError> {
        let mut buf = std::mem::take(&mut self.buf);
        let r = self.enc.record(record, values, &mut buf);
        self.buf = buf;
        r?;
        self.emit()
    }

    /// Write a record by name (looked up in the current section).
    pub fn record_named(&mut self, name: &str, values: &[In]) -> Result<(), WriteError> {
        let rid = self
            .enc
            .lookup(name)
            .ok_or_else(|| WriteError::at(name, None, WriteErrorKind::UnknownRecord))?;
        self.record(rid, values)
    }

    /// Write a metadata record and apply it.
    pub fn metadata(
        &mut self,
        record: RecordId,
        slot: SlotId,
        prop: MetaProperty,
    ) -> Result<(), WriteError> {
        let mut buf = std::mem::take(&mut self.buf);
        let r = self.enc.metadata(record, slot, prop, &mut buf);
        self.buf = buf;
        r?;
        self.emit()
    }

    /// Write a comment record.
    pub fn comment(&mut self, text: &str) -> Result<(), WriteError> {
        let len = text.len() as u64;
        self.record_named(
            "comment",
            &[In::Int(len), In::Bytes(text.as_bytes().to_vec())],
        )
    }

    fn header(&self) -> Result<Vec<u8>, WriteError> {
        Header::encode(
            self.class,
            self.order,
            &self.dtd_name,
            self.nrecords,
            self.global_len,
            &self.sections,
        )
        .map_err(|e| WriteError::new(WriteErrorKind::Container(e.to_string())))
    }

    /// Finish an in-memory trace.
    pub fn finish_to_vec(self) -> Result<Vec<u8>, WriteError> {
        let mut out = self.header()?;
        match self.body {
            Body::Memory(v) => out.extend_from_slice(&v),
            Body::File { .. } => {
                return Err(WriteError::new(WriteErrorKind::Container(
                    "finish_to_vec on a file writer; use finish".into(),
                )))
            }
        }
        Ok(out)
    }

    /// Finish a file trace: write the header and records to a temporary file, then rename it
    /// into place.
    pub fn finish(self) -> Result<Summary, WriteError> {
        let header = self.header()?;
        let summary = Summary {
            nrecords: self.nrecords,
            bytes: header.len() as u64
                + self.global_len
                + self.sections.iter().map(|s| s.1).sum::<u64>(),
            sections: self.sections.clone(),
        };
        let Body::File { target, tmp } = self.body else {
            return Err(WriteError::new(WriteErrorKind::Container(
                "finish on an in-memory writer; use finish_to_vec".into(),
            )));
        };
        let mut records = tmp.into_inner().map_err(|e| e.into_error())?;
        records.as_file_mut().seek(SeekFrom::Start(0))?;
        let out = temp_beside(&target, ".mtf-trace-")?;
        let mut w = BufWriter::with_capacity(1 << 16, out);
        w.write_all(&header)?;
        copy(records.as_file_mut(), &mut w)?;
        let out = w.into_inner().map_err(|e| e.into_error())?;
        out.as_file().sync_all()?;
        out.persist(&target)
            .map_err(|e| WriteError::from(e.error))?;
        Ok(summary)
    }
}

/// A temporary file in the target's folder, so that the final rename stays on one file system.
fn temp_beside(target: &Path, prefix: &str) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    tempfile::Builder::new()
        .prefix(prefix)
        .suffix(".tmp")
        .tempfile_in(dir)
}

fn copy(from: &mut File, to: &mut impl Write) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0;
    loop {
        let n = from.read(&mut buf)?;
        if n == 0 {
            return Ok(total);
        }
        to.write_all(&buf[..n])?;
        total += n as u64;
    }
}
