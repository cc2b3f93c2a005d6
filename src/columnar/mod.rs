//! Records as columns: one Parquet file per record type, for query engines (DuckDB, Polars,
//! pandas, Spark, DataFusion). `mtf export --to parquet TRACE -o DIR` calls [`write_parquet`].
//!
//! Each record type that occurs in the trace becomes one file, `RECORD.parquet` (or
//! `SECTION.RECORD.parquet` when several sections define a record type of that name), whose rows
//! are the records in trace order:
//!
//! * `record_index` (the record's index in the trace), `byte_offset` (its absolute offset) and
//!   `section` (the section id of its region, 0 for the global region);
//! * one column per field of the DTD, named by its name within its parent, holding the
//!   **interpreted** value in the narrowest Arrow type that holds every value of the trace
//!   (`UInt8`…`UInt64`, or `Int8`…`Int64` for `display = signed`); byte strings as `Utf8` when
//!   the field is displayed as text and every value is valid UTF-8, else `Binary`;
//! * nested records as structs, repeats as lists (of the item's single field, or of structs);
//! * a `sectionOffset`/`sectionStride` field as two columns: the value it leads to (a
//!   dictionary-encoded string for elements of a string section, an integer for numbers; null
//!   where the reference leads nowhere; the stored integer where a metadata record switched
//!   the field away from the reference), and `FIELD_ref`, the stored offset or element index
//!   (null where the record stores the value itself).
//!
//! The tag is left out (constant per file), and so are `section` and `metadata` records (the
//! structure and state changes of the container; their effect is in the values) and the
//! records of tables (`Reader::is_table`: the split streams of `mtf compact --split`, string
//! tables), whose values are in the fields that refer to them: a trace exports to the same
//! files and values whether its fields were moved into streams or not.
//!
//! The trace is read twice: a first pass finds, for every column, the narrowest type; the second
//! writes row groups as it goes. Memory is bounded by one batch of rows and one row group per
//! open file, whatever the length of the trace.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, BinaryArray, DictionaryArray, Int16Array, Int32Array, Int64Array, Int8Array,
    ListArray, RecordBatch, StringArray, StructArray, UInt16Array, UInt32Array, UInt64Array,
    UInt8Array,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields, Schema as ArrowSchema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::decode::{ElementRef, Event, EventStream, Reader, RecordView, Value};
use crate::decode::{FieldWalk, Visit};
use crate::dtd::{Builtin, Display, RecordId, RecordType, SlotKind};
use crate::io::{IoError, Output, StagedFolder};
use crate::layout::Shape;

/// How [`write_parquet`] writes.
#[derive(Debug, Clone)]
pub struct ParquetOptions {
    /// Rows gathered before they are handed to the Parquet writer as one Arrow batch.
    pub batch_rows: usize,
    /// Rows per row group (a row group is also closed when its encoded size passes 128 MiB).
    pub row_group_rows: usize,
    /// Write nothing for a trace with problems or damaged regions
    /// ([`ParquetError::Damaged`], found by the first pass, before any file is created),
    /// rather than the files of the records that can be read.
    pub refuse_problems: bool,
    /// The trace's name, kept in the folder ([`EXPORT_MARKER`]) so that a later export of the
    /// same trace may replace the folder and an export of another trace is refused.
    pub source: Option<PathBuf>,
}

impl Default for ParquetOptions {
    fn default() -> Self {
        ParquetOptions {
            batch_rows: 64 * 1024,
            row_group_rows: 1024 * 1024,
            refuse_problems: false,
            source: None,
        }
    }
}

/// The file that marks a folder as a Parquet export of `mtf` (hidden; query engines reading
/// `DIR/*.parquet` do not see it): its text names the trace exported.
pub const EXPORT_MARKER: &str = ".mtf-export";

/// Where [`write_parquet`] is, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// 1 while finding the column types, 2 while writing.
    pub pass: u8,
    /// Byte offset in the trace reached.
    pub position: u64,
    /// The trace's length in bytes.
    pub total: u64,
    /// Records read so far in this pass.
    pub records: u64,
}

/// One file written.
#[derive(Debug, Clone)]
pub struct TableReport {
    /// The file.
    pub path: PathBuf,
    /// The record type.
    pub record: RecordId,
    /// Rows written.
    pub rows: u64,
}

/// What [`write_parquet`] did.
#[derive(Debug, Clone, Default)]
pub struct ParquetReport {
    /// The files written, in the order of the schema's record types.
    pub tables: Vec<TableReport>,
    /// Records read (all types).
    pub records: u64,
    /// Problems and damaged regions met (their records are not exported).
    pub problems: u64,
    /// The first problems met, as messages (at most 100).
    pub messages: Vec<String>,
}

/// Why [`write_parquet`] failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ParquetError {
    /// Creating or writing a file failed.
    #[error(transparent)]
    #[diagnostic(code(mtf::parquet::io))]
    Io(#[from] IoError),
    /// The Parquet or Arrow library refused the data.
    #[error("writing {path}: {message}")]
    #[diagnostic(code(mtf::parquet::write))]
    Write {
        /// The file.
        path: PathBuf,
        /// The library's message.
        message: String,
    },
    /// The output names a file, not a folder: one file per record type is written into a folder.
    #[error("{} looks like a file name, but Parquet export writes one file per record type into a folder", crate::io::escape_path(path))]
    #[diagnostic(
        code(mtf::parquet::folder),
        help("give -o FOLDER: an existing folder, a name without an extension, or a name ending with /")
    )]
    NotAFolderName {
        /// The output as given.
        path: PathBuf,
    },
    /// The output folder holds files that are not an earlier export of the same trace.
    #[error("{} is not empty and is not an earlier Parquet export of {}: not replacing what it holds ({reason})", crate::io::escape_path(path), crate::io::escape_path(trace))]
    #[diagnostic(
        code(mtf::parquet::folder_not_empty),
        help("name a new or empty folder; an export replaces a folder only when it holds an earlier export of the same trace, and then as a whole")
    )]
    FolderNotEmpty {
        /// The output folder.
        path: PathBuf,
        /// The trace being exported.
        trace: PathBuf,
        /// What makes it something else.
        reason: String,
    },
    /// The trace has problems or damaged regions and [`ParquetOptions::refuse_problems`] is set:
    /// nothing was written.
    #[error("not exported: the trace has {problems} problem(s) or damaged region(s), the first: {first}; nothing was written")]
    #[diagnostic(
        code(mtf::parquet::damaged),
        help("`mtf check` lists them; a Parquet export holds every record of a trace or none")
    )]
    Damaged {
        /// Problems and damaged regions found.
        problems: u64,
        /// The first of them.
        first: String,
    },
}

/// Progress is reported every this many records.
const PROGRESS_EVERY: u64 = 1 << 16;
/// A row group is closed when its encoded size passes this.
const ROW_GROUP_BYTES: usize = 128 << 20;
/// A batch is handed over early when its byte strings pass this.
const BATCH_BYTES: usize = 64 << 20;

/// Write one Parquet file per record type of `reader`'s trace into the folder `dir`, with the
/// marker [`EXPORT_MARKER`]. The export is written into a new folder beside `dir` and put in
/// place whole once complete ([`crate::io::StagedFolder`]): `dir` then holds this export's
/// files only; on error it is left as it was. `dir` may be new, empty, or an earlier export of
/// the same trace ([`ParquetOptions::source`]); anything else is
/// [`ParquetError::FolderNotEmpty`], refused before the trace is read. `progress` is called
/// now and then.
pub fn write_parquet(
    reader: &Reader<'_>,
    dir: &Path,
    opts: &ParquetOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<ParquetReport, ParquetError> {
    write_parquet_from(reader, dir, opts, progress, &mut |consume| {
        consume(&mut reader.records())
    })
}

/// Runs a consumer over every event of a trace in trace order: `reader.records()`, or the
/// events of a trace decoded on several threads (`metatf::parallel::events`), which yield the
/// same events. Called once per pass.
pub type EventSource<'s> = dyn FnMut(&mut dyn FnMut(&mut dyn EventStream)) + 's;

/// As [`write_parquet`], the events of each pass read from `events` (which must yield the
/// events of `reader`'s trace, through `reader`, as `reader.records()` does): the files are the
/// same, byte for byte, whatever decodes them.
pub fn write_parquet_from(
    reader: &Reader<'_>,
    dir: &Path,
    opts: &ParquetOptions,
    progress: &mut dyn FnMut(Progress),
    events: &mut EventSource<'_>,
) -> Result<ParquetReport, ParquetError> {
    check_folder(dir, opts)?;
    // Design: the export is written into a fresh folder beside `dir` and put in place whole
    // (`io::StagedFolder`), so that the folder holds the files of one export, never files of
    // an earlier one beside them; a failed export leaves `dir` as it was.
    let staged = StagedFolder::beside(dir)?;
    let mut report = write_parquet_in(reader, staged.path(), opts, progress, events)?;
    let source = opts.source.as_deref().map_or_else(|| "-".into(), identity);
    let marker = staged.path().join(EXPORT_MARKER);
    let mut out = Output::create_plain(&marker)?;
    std::io::Write::write_all(&mut out, format!("{source}\n").as_bytes())
        .map_err(|e| out.error(e))?;
    out.commit()?;
    staged.commit()?;
    for t in &mut report.tables {
        if let Some(name) = t.path.file_name() {
            t.path = dir.join(name);
        }
    }
    Ok(report)
}

/// How a trace is named in [`EXPORT_MARKER`]: its canonical path, `-` for standard input.
fn identity(path: &Path) -> String {
    if path.as_os_str() == "-" {
        return "-".to_string();
    }
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// Refuses an output that is a file, a new folder named like a file, or a folder that holds
/// anything but an earlier export of the same trace ([`EXPORT_MARKER`] naming it, and Parquet
/// files).
fn check_folder(dir: &Path, opts: &ParquetOptions) -> Result<(), ParquetError> {
    if dir.exists() && !dir.is_dir() {
        return Err(IoError::NotAFolder {
            path: dir.to_path_buf(),
        }
        .into());
    }
    // Design: a new folder named like a file (`x.parquet`) is refused rather than created, so
    // that a user who expected one file is not handed a folder; the same rule as a multi-file
    // import export (src/import/export.rs).
    let slash = dir.as_os_str().to_string_lossy().ends_with('/');
    if !dir.exists() && !slash && dir.extension().is_some() {
        return Err(ParquetError::NotAFolderName {
            path: dir.to_path_buf(),
        });
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let source = opts.source.clone().unwrap_or_else(|| "-".into());
    let refuse = |reason: String| ParquetError::FolderNotEmpty {
        path: dir.to_path_buf(),
        trace: source.clone(),
        reason,
    };
    let mut marked = false;
    let mut other = None;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if name == EXPORT_MARKER && is_file {
            marked = true;
        } else if !(is_file && name.to_string_lossy().ends_with(".parquet")) {
            other.get_or_insert_with(|| name.to_string_lossy().into_owned());
        }
    }
    if let Some(name) = other {
        return Err(refuse(format!(
            "it holds {}, which an export does not write",
            crate::io::escape_for_terminal(&name)
        )));
    }
    let is_empty = std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_none());
    if is_empty {
        return Ok(());
    }
    if !marked {
        return Err(refuse(format!(
            "it holds Parquet files but no {EXPORT_MARKER} naming the trace they came from"
        )));
    }
    let written = std::fs::read_to_string(dir.join(EXPORT_MARKER)).unwrap_or_default();
    let ours = opts.source.as_deref().map_or_else(|| "-".into(), identity);
    if written.trim_end_matches('\n') != ours {
        return Err(refuse(format!(
            "it is an export of {}",
            crate::io::escape_for_terminal(written.trim_end())
        )));
    }
    Ok(())
}

fn write_parquet_in(
    reader: &Reader<'_>,
    dir: &Path,
    opts: &ParquetOptions,
    progress: &mut dyn FnMut(Progress),
    events: &mut EventSource<'_>,
) -> Result<ParquetReport, ParquetError> {
    let schema = reader.schema();
    let total = reader.bytes().len() as u64;
    let mut fields = FieldWalk::new(reader);
    let mut report = ParquetReport::default();

    // Pass 1: the shape and value range of every column.
    let mut tables: Vec<Option<Table>> = schema
        .records
        .iter()
        .map(|rt| exported(rt).then(|| Table::new(rt)))
        .collect();
    let mut n = 0u64;
    events(&mut |records| {
        while let Some(event) = records.next_event() {
            match event {
                Event::Record(view) => {
                    n += 1;
                    if n.is_multiple_of(PROGRESS_EVERY) {
                        progress(Progress {
                            pass: 1,
                            position: view.offset(),
                            total,
                            records: n,
                        });
                    }
                    // Elements of tables (split streams, string tables) are the values of the
                    // fields that refer to them, not rows of their own.
                    if let Some(t) = &mut tables[view.record_id() as usize] {
                        if !view.is_element() {
                            t.observe(&view);
                        }
                    }
                }
                Event::Problem(p) => {
                    report.problems += 1;
                    if report.messages.len() < 100 {
                        report.messages.push(p.to_string());
                    }
                }
                Event::Damage(d) => {
                    report.problems += 1;
                    if report.messages.len() < 100 {
                        report.messages.push(d.to_string());
                    }
                }
            }
        }
    });
    report.records = n;
    if opts.refuse_problems && report.problems > 0 {
        return Err(ParquetError::Damaged {
            problems: report.problems,
            first: report.messages.first().cloned().unwrap_or_default(),
        });
    }
    progress(Progress {
        pass: 1,
        position: total,
        total,
        records: n,
    });

    // The files: only for record types that occur.
    std::fs::create_dir_all(dir).map_err(|source| IoError::Create {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut writers: Vec<Option<TableWriter>> = Vec::with_capacity(tables.len());
    for (id, t) in tables.iter_mut().enumerate() {
        match t {
            Some(t) if t.rows > 0 => {
                let path = dir.join(file_name(schema, id as RecordId));
                writers.push(Some(TableWriter::create(
                    reader,
                    t,
                    id as RecordId,
                    path,
                    opts,
                )?));
            }
            _ => writers.push(None),
        }
    }

    // Pass 2: the values.
    let mut n = 0u64;
    let mut failed = None;
    events(&mut |records| {
        while let Some(event) = records.next_event() {
            let Event::Record(view) = event else { continue };
            n += 1;
            if n.is_multiple_of(PROGRESS_EVERY) {
                progress(Progress {
                    pass: 2,
                    position: view.offset(),
                    total,
                    records: n,
                });
            }
            let id = view.record_id() as usize;
            if view.is_element() {
                continue;
            }
            if let (Some(t), Some(w)) = (&mut tables[id], &mut writers[id]) {
                t.push(&mut fields, &view);
                if t.batch_rows >= opts.batch_rows || t.batch_bytes >= BATCH_BYTES {
                    if let Err(e) = w.write(t) {
                        failed = Some(e);
                        return;
                    }
                }
            }
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    // Design: every file is written out and flushed before the first is renamed into place, so
    // that a full disk or any other write error leaves the folder as it was (no file replaced,
    // none added): the folder never holds files from two different runs.
    let mut done = Vec::new();
    for (id, w) in writers.into_iter().enumerate() {
        if let (Some(t), Some(w)) = (&mut tables[id], w) {
            done.push((id, w.finish(t)?));
        }
    }
    for (id, (path, out)) in done {
        out.commit()?;
        report.tables.push(TableReport {
            path,
            record: id as RecordId,
            rows: tables[id].as_ref().map_or(0, |t| t.rows),
        });
    }
    progress(Progress {
        pass: 2,
        position: total,
        total,
        records: n,
    });
    Ok(report)
}

/// Whether a record type becomes a file: every type but `section` and `metadata`.
fn exported(rt: &RecordType) -> bool {
    !matches!(rt.builtin, Some(Builtin::Section | Builtin::Metadata))
}

/// `RECORD.parquet`, or `SECTION.RECORD.parquet` when another section defines a record type of
/// the same name (`global` for the global scope).
pub fn file_name(schema: &crate::dtd::Schema, record: RecordId) -> String {
    let rt = schema.record(record);
    let shared = schema
        .records
        .iter()
        .filter(|r| r.name == rt.name && exported(r))
        .count()
        > 1;
    if shared {
        let section = match schema.scope_for(rt.scope) {
            Some(s) if rt.scope != 0 => s.name.as_str(),
            _ => "global",
        };
        format!("{section}.{}.parquet", rt.name)
    } else {
        format!("{}.parquet", rt.name)
    }
}

// ---- the column tree ----------------------------------------------------------------------

/// A column as the DTD shapes it.
#[derive(Debug)]
enum Col {
    /// A scalar field: index into `Table::leaves`.
    Leaf(usize),
    /// A nested record.
    Struct(Vec<(String, Col)>),
    /// A repeat: index into `Table::lists`, and its item.
    List(usize, Box<Col>),
}

/// Values of a column sampled in pass 1 to decide its dictionary encoding.
const DICT_SAMPLE: u32 = 1 << 16;

/// Distinct values among the first [`DICT_SAMPLE`] of a column.
#[derive(Debug, Default, Clone)]
struct Sample {
    seen: u32,
    distinct: std::collections::HashSet<u64, foldhash::fast::FixedState>,
}

impl Sample {
    fn add(&mut self, v: u64) {
        if self.seen < DICT_SAMPLE {
            self.seen += 1;
            self.distinct.insert(v);
        }
    }

    fn add_bytes(&mut self, b: &[u8]) {
        if self.seen < DICT_SAMPLE {
            use std::hash::BuildHasher;
            self.add(foldhash::fast::FixedState::with_seed(0).hash_one(b));
        }
    }

    /// Whether a dictionary pays: the values sampled repeat, on average, at least twice.
    fn repeats(&self) -> bool {
        self.distinct.len() as u64 * 2 <= u64::from(self.seen)
    }
}

/// Value range and kinds seen in one scalar field.
#[derive(Debug, Default, Clone)]
struct Stats {
    sample: Sample,
    ints: bool,
    umax: u64,
    smin: i64,
    smax: i64,
    non_utf8: bool,
    refs: bool,
    ref_index: bool,
    ref_umax: u64,
    ref_smin: i64,
    ref_smax: i64,
    res_bytes: bool,
    res_non_utf8: bool,
    res_ints: bool,
    res_umax: u64,
    res_other: bool,
}

impl Stats {
    fn int(&mut self, v: u64) {
        self.ints = true;
        self.umax = self.umax.max(v);
        self.smin = self.smin.min(v as i64);
        self.smax = self.smax.max(v as i64);
    }
}

/// The Arrow type chosen for one scalar field, with its values of the current batch.
#[derive(Debug)]
enum Data {
    U(DataType, Vec<u64>),
    I(DataType, Vec<i64>),
    Bytes {
        utf8: bool,
        data: Vec<u8>,
        offsets: Vec<i32>,
    },
    Ref {
        index: bool,
        number: DataType,
        /// The stored reference's number; `None` where the record stores the value itself.
        numbers: Vec<Option<u64>>,
        res: Resolved,
    },
}

/// The values references lead to.
#[derive(Debug)]
enum Resolved {
    /// Dictionary-encoded strings (or bytes): keys into values of this batch.
    Dict {
        utf8: bool,
        keys: Vec<Option<i32>>,
        map: HashMap<ElementRef, Option<i32>>,
        data: Vec<u8>,
        offsets: Vec<i32>,
    },
    /// Integers.
    Int(DataType, Vec<Option<u64>>),
    /// Anything else, in the text form.
    Text(Vec<Option<String>>),
}

#[derive(Debug)]
struct Leaf {
    display: Display,
    bytes: bool,
    stats: Stats,
    data: Option<Data>,
}

#[derive(Debug, Default)]
struct List {
    offsets: Vec<i32>,
    items: i32,
}

/// One record type's columns.
#[derive(Debug)]
struct Table {
    cols: Vec<(String, Col)>,
    leaves: Vec<Leaf>,
    lists: Vec<List>,
    /// Leaf of each slot.
    leaf_of_slot: Vec<Option<usize>>,
    /// List of each count slot.
    list_of_count: HashMap<usize, usize>,
    rows: u64,
    batch_rows: usize,
    batch_bytes: usize,
    index: Vec<u64>,
    offset: Vec<u64>,
    section: Vec<u8>,
}

impl Table {
    fn new(rt: &RecordType) -> Table {
        let mut t = Table {
            cols: Vec::new(),
            leaves: Vec::new(),
            lists: Vec::new(),
            leaf_of_slot: vec![None; rt.slots.len()],
            list_of_count: HashMap::new(),
            rows: 0,
            batch_rows: 0,
            batch_bytes: 0,
            index: Vec::new(),
            offset: Vec::new(),
            section: Vec::new(),
        };
        t.cols = t.build(rt, &Shape::of(rt));
        t
    }

    /// The columns of a shape (the layout's, keyed as the compiled program keys the fields).
    fn build(&mut self, rt: &RecordType, shape: &[Shape]) -> Vec<(String, Col)> {
        let mut cols = Vec::new();
        for node in shape {
            match node {
                Shape::Field { key, slot } => {
                    let slot = *slot as usize;
                    let def = &rt.slots[slot];
                    let i = self.leaves.len();
                    self.leaves.push(Leaf {
                        display: def.display,
                        bytes: matches!(def.kind, SlotKind::Bytes { .. }),
                        stats: Stats::default(),
                        data: None,
                    });
                    self.leaf_of_slot[slot] = Some(i);
                    cols.push((key.clone(), Col::Leaf(i)));
                }
                Shape::Group { key, members } => {
                    let inside = self.build(rt, members);
                    cols.push((key.clone(), Col::Struct(inside)));
                }
                Shape::List {
                    key,
                    count,
                    item,
                    single,
                } => {
                    let l = self.lists.len();
                    self.lists.push(List {
                        offsets: vec![0],
                        items: 0,
                    });
                    self.list_of_count.insert(*count as usize, l);
                    let mut inside = self.build(rt, item);
                    // A list of one scalar field is a list of that field, named by the list.
                    let col = if *single && inside.len() == 1 {
                        inside.pop().expect("one").1
                    } else {
                        Col::Struct(inside)
                    };
                    cols.push((key.clone(), Col::List(l, Box::new(col))));
                }
            }
        }
        cols
    }

    /// Pass 1: widen the columns' ranges by one record.
    fn observe(&mut self, view: &RecordView<'_>) {
        self.rows += 1;
        let reader = view.reader();
        for f in view.fields().skip(1) {
            let Some(Some(i)) = self.leaf_of_slot.get(f.slot() as usize) else {
                continue;
            };
            let s = &mut self.leaves[*i].stats;
            match f.value() {
                Value::Int(v) => {
                    s.int(v);
                    s.sample.add(v);
                }
                Value::Bytes(b) => {
                    s.non_utf8 |= std::str::from_utf8(b).is_err();
                    s.sample.add_bytes(b);
                }
                Value::Ref(r) => {
                    s.refs = true;
                    match r {
                        ElementRef::Offset { offset, .. } => s.ref_umax = s.ref_umax.max(offset),
                        ElementRef::Index { index, .. } => {
                            s.ref_index = true;
                            s.ref_smin = s.ref_smin.min(index);
                            s.ref_smax = s.ref_smax.max(index);
                        }
                    }
                    match reader.resolve(r).map(|res| res.value) {
                        Ok(Value::Bytes(b)) => {
                            s.res_bytes = true;
                            s.res_non_utf8 |= std::str::from_utf8(b).is_err();
                        }
                        Ok(Value::Int(v)) => {
                            s.res_ints = true;
                            s.res_umax = s.res_umax.max(v);
                        }
                        Ok(Value::Ref(_)) => s.res_other = true,
                        Err(_) => {}
                    }
                }
            }
        }
    }

    /// After pass 1: choose every leaf's type.
    fn choose_types(&mut self) {
        for leaf in &mut self.leaves {
            let s = &leaf.stats;
            leaf.data = Some(if s.refs {
                let number = if s.ref_index {
                    signed_type(s.ref_smin.min(0), s.ref_smax)
                } else {
                    unsigned_type(s.ref_umax)
                };
                // The logical value: what a reference leads to, or the integer a record stores
                // where a metadata record switched the field away from the reference.
                let res_ints = s.res_ints || s.ints;
                let res = if s.res_other || (s.res_bytes && res_ints) {
                    Resolved::Text(Vec::new())
                } else if res_ints {
                    Resolved::Int(unsigned_type(s.res_umax.max(s.umax)), Vec::new())
                } else {
                    Resolved::Dict {
                        utf8: !s.res_non_utf8,
                        keys: Vec::new(),
                        map: HashMap::new(),
                        data: Vec::new(),
                        offsets: vec![0],
                    }
                };
                Data::Ref {
                    index: s.ref_index,
                    number,
                    numbers: Vec::new(),
                    res,
                }
            } else if leaf.bytes {
                Data::Bytes {
                    utf8: leaf.display == Display::Text && !s.non_utf8,
                    data: Vec::new(),
                    offsets: vec![0],
                }
            } else if leaf.display == Display::Signed {
                Data::I(signed_type(s.smin, s.smax), Vec::new())
            } else {
                Data::U(unsigned_type(s.umax), Vec::new())
            });
        }
    }

    /// Pass 2: append one record.
    fn push(&mut self, fields: &mut FieldWalk, view: &RecordView<'_>) {
        let reader = view.reader();
        self.index.push(view.index());
        self.offset.push(view.offset());
        self.section.push(view.section());
        let mut last_slot = usize::MAX;
        let mut open: Vec<usize> = Vec::new();
        let leaves = &mut self.leaves;
        let lists = &mut self.lists;
        let list_of_count = &self.list_of_count;
        let leaf_of_slot = &self.leaf_of_slot;
        let mut bytes = 0usize;
        let _ = fields.visit(view, |v| -> Result<(), ()> {
            match v {
                Visit::Field(_, f) => {
                    last_slot = f.slot() as usize;
                    if let Some(Some(i)) = leaf_of_slot.get(last_slot) {
                        bytes += leaves[*i].push(reader, f.value());
                    }
                }
                Visit::ListStart(_) => {
                    if let Some(&l) = list_of_count.get(&last_slot) {
                        open.push(l);
                    }
                }
                Visit::ItemStart(..) => {}
                Visit::ItemEnd(_) => {
                    if let Some(&l) = open.last() {
                        lists[l].items += 1;
                    }
                }
                Visit::ListEnd => {
                    if let Some(l) = open.pop() {
                        let n = lists[l].items;
                        lists[l].offsets.push(n);
                    }
                }
            }
            Ok(())
        });
        self.rows_pushed();
        self.batch_bytes += bytes;
    }

    fn rows_pushed(&mut self) {
        self.batch_rows += 1;
    }

    fn schema(&self) -> Arc<ArrowSchema> {
        let mut fields = vec![
            Field::new(self.meta_name("record_index"), DataType::UInt64, false),
            Field::new(self.meta_name("byte_offset"), DataType::UInt64, false),
            Field::new(self.meta_name("section"), DataType::UInt8, false),
        ];
        for (name, col) in &self.cols {
            fields.extend(self.fields_of(name, col));
        }
        Arc::new(ArrowSchema::new(fields))
    }

    /// The columns written without a dictionary: `record_index` and `byte_offset` (unique in
    /// every row), and the scalar fields at the top of the record whose sampled values do not
    /// repeat (`Sample::repeats`).
    // Design: Parquet writers start every column with a dictionary and fall back to plain
    // pages once the dictionary passes its page size limit; for a column of nearly unique
    // values (addresses, times, offsets) that is a hash table of every value for nothing, which
    // was about 30 % of the export's time of a HATF trace. The first 65,536 values of each
    // field, seen anyway in the first pass, decide it. Fields inside groups and lists, and
    // the values references lead to, keep the writer's default.
    fn plain_columns(&self) -> Vec<String> {
        let mut v = vec![
            self.meta_name("record_index"),
            self.meta_name("byte_offset"),
        ];
        for (name, col) in &self.cols {
            if let Col::Leaf(i) = col {
                let leaf = &self.leaves[*i];
                if !leaf.stats.refs && !leaf.stats.sample.repeats() {
                    v.push(name.clone());
                }
            }
        }
        v
    }

    /// A meta column's name, with `_` in front while a field has it.
    fn meta_name(&self, base: &str) -> String {
        let mut name = base.to_string();
        while self
            .cols
            .iter()
            .any(|(n, _)| *n == name || *n == format!("{name}_ref"))
        {
            name.insert(0, '_');
        }
        name
    }

    /// The Arrow fields of a column (two for a reference).
    fn fields_of(&self, name: &str, col: &Col) -> Vec<Field> {
        match col {
            Col::Leaf(i) => match self.leaves[*i].data.as_ref().expect("typed") {
                Data::U(t, _) | Data::I(t, _) => vec![Field::new(name, t.clone(), false)],
                Data::Bytes { utf8, .. } => vec![Field::new(
                    name,
                    if *utf8 {
                        DataType::Utf8
                    } else {
                        DataType::Binary
                    },
                    false,
                )],
                Data::Ref { number, res, .. } => {
                    let res_type = match res {
                        Resolved::Dict { utf8, .. } => DataType::Dictionary(
                            Box::new(DataType::Int32),
                            Box::new(if *utf8 {
                                DataType::Utf8
                            } else {
                                DataType::Binary
                            }),
                        ),
                        Resolved::Int(t, _) => t.clone(),
                        Resolved::Text(_) => DataType::Utf8,
                    };
                    vec![
                        Field::new(name, res_type, true),
                        Field::new(format!("{name}_ref"), number.clone(), true),
                    ]
                }
            },
            Col::Struct(children) => {
                let mut fs = Vec::new();
                for (n, c) in children {
                    fs.extend(self.fields_of(n, c));
                }
                vec![Field::new(name, DataType::Struct(Fields::from(fs)), false)]
            }
            Col::List(_, item) => {
                let inner = self.fields_of("item", item);
                let item = if inner.len() == 1 {
                    inner.into_iter().next().expect("one")
                } else {
                    // A reference as a list item: both columns in a struct.
                    Field::new("item", DataType::Struct(Fields::from(inner)), false)
                };
                vec![Field::new(name, DataType::List(Arc::new(item)), false)]
            }
        }
    }

    /// The batch gathered so far, emptied.
    fn take_batch(&mut self, schema: &Arc<ArrowSchema>) -> Result<RecordBatch, String> {
        let mut arrays: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(std::mem::take(&mut self.index))),
            Arc::new(UInt64Array::from(std::mem::take(&mut self.offset))),
            Arc::new(UInt8Array::from(std::mem::take(&mut self.section))),
        ];
        let cols = std::mem::take(&mut self.cols);
        for (_, col) in &cols {
            arrays.extend(self.arrays_of(col)?);
        }
        self.cols = cols;
        self.batch_rows = 0;
        self.batch_bytes = 0;
        RecordBatch::try_new(schema.clone(), arrays).map_err(|e| e.to_string())
    }

    fn arrays_of(&mut self, col: &Col) -> Result<Vec<ArrayRef>, String> {
        Ok(match col {
            Col::Leaf(i) => self.leaves[*i].take(),
            Col::Struct(children) => {
                let mut fields = Vec::new();
                let mut arrays = Vec::new();
                for (n, c) in children {
                    let a = self.arrays_of(c)?;
                    let f = self.fields_of(n, c);
                    fields.extend(f);
                    arrays.extend(a);
                }
                vec![Arc::new(
                    StructArray::try_new(Fields::from(fields), arrays, None)
                        .map_err(|e| e.to_string())?,
                )]
            }
            Col::List(l, item) => {
                let mut inner = self.arrays_of(item)?;
                let mut fields = self.fields_of("item", item);
                let (field, values): (Field, ArrayRef) = if inner.len() == 1 {
                    (fields.remove(0), inner.remove(0))
                } else {
                    let s = StructArray::try_new(Fields::from(fields), inner, None)
                        .map_err(|e| e.to_string())?;
                    (
                        Field::new("item", s.data_type().clone(), false),
                        Arc::new(s),
                    )
                };
                let list = &mut self.lists[*l];
                let offsets = std::mem::replace(&mut list.offsets, vec![0]);
                list.items = 0;
                vec![Arc::new(
                    ListArray::try_new(
                        Arc::new(field),
                        OffsetBuffer::new(ScalarBuffer::from(offsets)),
                        values,
                        None,
                    )
                    .map_err(|e| e.to_string())?,
                )]
            }
        })
    }
}

impl Leaf {
    /// Append one value; returns the bytes it added to byte-string buffers.
    fn push(&mut self, reader: &Reader<'_>, value: Value<'_>) -> usize {
        match self.data.as_mut().expect("typed") {
            Data::U(_, v) => v.push(number(value)),
            Data::I(_, v) => v.push(number(value) as i64),
            Data::Bytes { data, offsets, .. } => {
                let b = value.as_bytes().unwrap_or_default();
                data.extend_from_slice(b);
                offsets.push(data.len() as i32);
                return b.len();
            }
            Data::Ref { numbers, res, .. } => {
                let Value::Ref(r) = value else {
                    numbers.push(None);
                    res.push_plain(value);
                    return 0;
                };
                numbers.push(Some(r.number()));
                match res {
                    Resolved::Dict {
                        keys,
                        map,
                        data,
                        offsets,
                        ..
                    } => {
                        let key = *map.entry(r).or_insert_with(|| match reader.resolve(r) {
                            Ok(res) => {
                                let b = res.value.as_bytes().unwrap_or_default();
                                data.extend_from_slice(b);
                                offsets.push(data.len() as i32);
                                Some(offsets.len() as i32 - 2)
                            }
                            Err(_) => None,
                        });
                        keys.push(key);
                    }
                    Resolved::Int(_, v) => {
                        v.push(reader.resolve(r).ok().and_then(|x| x.value.as_u64()))
                    }
                    Resolved::Text(v) => v.push(reader.resolve(r).ok().map(|x| text_of(x.value))),
                }
            }
        }
        0
    }

    /// The arrays of the batch, emptied.
    fn take(&mut self) -> Vec<ArrayRef> {
        match self.data.as_mut().expect("typed") {
            Data::U(t, v) => vec![unsigned_array(t, std::mem::take(v))],
            Data::I(t, v) => vec![signed_array(t, std::mem::take(v))],
            Data::Bytes {
                utf8,
                data,
                offsets,
            } => vec![bytes_array(*utf8, data, offsets)],
            Data::Ref {
                index,
                number,
                numbers,
                res,
            } => {
                let numbers = std::mem::take(numbers);
                let nulls =
                    NullBuffer::from(numbers.iter().map(Option::is_some).collect::<Vec<_>>());
                let values = numbers.into_iter().map(Option::unwrap_or_default);
                let n: ArrayRef = if *index {
                    signed_array(number, values.map(|x| x as i64).collect())
                } else {
                    unsigned_array(number, values.collect())
                };
                let n = with_nulls(n, nulls);
                let r: ArrayRef = match res {
                    Resolved::Dict {
                        utf8,
                        keys,
                        map,
                        data,
                        offsets,
                    } => {
                        map.clear();
                        let values = bytes_array(*utf8, data, offsets);
                        let keys = Int32Array::from(std::mem::take(keys));
                        Arc::new(
                            DictionaryArray::<Int32Type>::try_new(keys, values)
                                .expect("keys index the values"),
                        )
                    }
                    Resolved::Int(t, v) => {
                        let v = std::mem::take(v);
                        let nulls =
                            NullBuffer::from(v.iter().map(Option::is_some).collect::<Vec<_>>());
                        let a = unsigned_array(
                            t,
                            v.into_iter().map(Option::unwrap_or_default).collect(),
                        );
                        with_nulls(a, nulls)
                    }
                    Resolved::Text(v) => Arc::new(StringArray::from(std::mem::take(v))),
                };
                vec![r, n]
            }
        }
    }
}

/// A value in a text column: a UTF-8 byte string as it is, other values in the text form.
fn text_of(value: Value<'_>) -> String {
    match value.as_str() {
        Some(s) => s.to_string(),
        None => value.to_string(),
    }
}

/// `a` with the null mask `nulls` (of the same length).
fn with_nulls(a: ArrayRef, nulls: NullBuffer) -> ArrayRef {
    arrow_array::make_array(
        a.to_data()
            .into_builder()
            .nulls(Some(nulls))
            .build()
            .expect("same length"),
    )
}

impl Resolved {
    /// A value the record stores itself (the field is not a reference in this record).
    fn push_plain(&mut self, value: Value<'_>) {
        match (self, value) {
            (Resolved::Int(_, v), Value::Int(x)) => v.push(Some(x)),
            (Resolved::Text(v), value) => v.push(Some(text_of(value))),
            (r, _) => r.push_null(),
        }
    }

    fn push_null(&mut self) {
        match self {
            Resolved::Dict { keys, .. } => keys.push(None),
            Resolved::Int(_, v) => v.push(None),
            Resolved::Text(v) => v.push(None),
        }
    }
}

fn number(v: Value<'_>) -> u64 {
    match v {
        Value::Int(x) => x,
        Value::Bytes(b) => b.len() as u64,
        Value::Ref(r) => r.number(),
    }
}

fn unsigned_type(max: u64) -> DataType {
    if max <= u8::MAX as u64 {
        DataType::UInt8
    } else if max <= u16::MAX as u64 {
        DataType::UInt16
    } else if max <= u32::MAX as u64 {
        DataType::UInt32
    } else {
        DataType::UInt64
    }
}

fn signed_type(min: i64, max: i64) -> DataType {
    let fits = |lo: i64, hi: i64| min >= lo && max <= hi;
    if fits(i8::MIN as i64, i8::MAX as i64) {
        DataType::Int8
    } else if fits(i16::MIN as i64, i16::MAX as i64) {
        DataType::Int16
    } else if fits(i32::MIN as i64, i32::MAX as i64) {
        DataType::Int32
    } else {
        DataType::Int64
    }
}

fn unsigned_array(t: &DataType, v: Vec<u64>) -> ArrayRef {
    match t {
        DataType::UInt8 => Arc::new(UInt8Array::from_iter_values(v.into_iter().map(|x| x as u8))),
        DataType::UInt16 => Arc::new(UInt16Array::from_iter_values(
            v.into_iter().map(|x| x as u16),
        )),
        DataType::UInt32 => Arc::new(UInt32Array::from_iter_values(
            v.into_iter().map(|x| x as u32),
        )),
        _ => Arc::new(UInt64Array::from(v)),
    }
}

fn signed_array(t: &DataType, v: Vec<i64>) -> ArrayRef {
    match t {
        DataType::Int8 => Arc::new(Int8Array::from_iter_values(v.into_iter().map(|x| x as i8))),
        DataType::Int16 => Arc::new(Int16Array::from_iter_values(
            v.into_iter().map(|x| x as i16),
        )),
        DataType::Int32 => Arc::new(Int32Array::from_iter_values(
            v.into_iter().map(|x| x as i32),
        )),
        _ => Arc::new(Int64Array::from(v)),
    }
}

fn bytes_array(utf8: bool, data: &mut Vec<u8>, offsets: &mut Vec<i32>) -> ArrayRef {
    let data = std::mem::take(data);
    let offsets = std::mem::replace(offsets, vec![0]);
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    if utf8 {
        // Checked in pass 1: every value is valid UTF-8.
        Arc::new(StringArray::new(offsets, data.into(), None))
    } else {
        Arc::new(BinaryArray::new(offsets, data.into(), None))
    }
}

// ---- files ------------------------------------------------------------------------------

struct TableWriter {
    path: PathBuf,
    schema: Arc<ArrowSchema>,
    writer: ArrowWriter<Output>,
}

impl TableWriter {
    fn create(
        reader: &Reader<'_>,
        t: &mut Table,
        record: RecordId,
        path: PathBuf,
        opts: &ParquetOptions,
    ) -> Result<TableWriter, ParquetError> {
        t.choose_types();
        let schema = t.schema();
        let rt = reader.schema().record(record);
        let section = reader.section_name(rt.scope);
        let mut props = WriterProperties::builder();
        for name in t.plain_columns() {
            props = props.set_column_dictionary_enabled(ColumnPath::new(vec![name]), false);
        }
        let props = props
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_size(opts.row_group_rows)
            .set_created_by(format!("mtf {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(vec![
                KeyValue::new("mtf.dtd".into(), reader.schema().name.clone()),
                KeyValue::new("mtf.record".into(), rt.name.clone()),
                KeyValue::new(
                    "mtf.section".into(),
                    if section.is_empty() {
                        "global"
                    } else {
                        section
                    }
                    .to_string(),
                ),
            ]))
            .build();
        let out = Output::create(&path)?;
        let writer = ArrowWriter::try_new(out, schema.clone(), Some(props))
            .map_err(|e| write_error(&path, e))?;
        Ok(TableWriter {
            path,
            schema,
            writer,
        })
    }

    fn write(&mut self, t: &mut Table) -> Result<(), ParquetError> {
        let batch = t
            .take_batch(&self.schema)
            .map_err(|m| ParquetError::Write {
                path: self.path.clone(),
                message: m,
            })?;
        self.writer
            .write(&batch)
            .map_err(|e| write_error(&self.path, e))?;
        if self.writer.in_progress_size() > ROW_GROUP_BYTES {
            self.writer
                .flush()
                .map_err(|e| write_error(&self.path, e))?;
        }
        Ok(())
    }

    /// Writes the rest and the footer, and flushes it all to the temporary file (a write error,
    /// a full disk, shows here); the caller commits the output.
    fn finish(mut self, t: &mut Table) -> Result<(PathBuf, Output), ParquetError> {
        if t.batch_rows > 0 {
            self.write(t)?;
        }
        let mut out = self
            .writer
            .into_inner()
            .map_err(|e| write_error(&self.path, e))?;
        std::io::Write::flush(&mut out).map_err(|e| out.error(e))?;
        Ok((self.path, out))
    }
}

fn write_error(path: &Path, e: parquet::errors::ParquetError) -> ParquetError {
    // An I/O error from the output keeps its message (it names the file and tells a full disk).
    ParquetError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}
