//! Records as columns: one Parquet or Arrow IPC file per record type, and the heap tables
//! `events` and `blocks` ([`heap`]), for query engines (DuckDB, Polars, pandas, Spark,
//! DataFusion). `mtf export --to parquet|arrow [--table …] TRACE -o DIR` calls
//! [`write_parquet_from`]; docs/query.md has the tables' schemas.
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
//!   (null where the record stores the value itself); a field whose every reference leads to
//!   an integer (a split stream of `mtf compact --split`, a stream of addresses) is the integer
//!   alone, typed and named as the field that stores it, so that the schema does not depend on
//!   the encoding;
//!
//! The tag is left out (constant per file), and so are `section` and `metadata` records (the
//! structure and state changes of the container; their effect is in the values) and the
//! records of tables (`Reader::is_table`: the split streams of `mtf compact --split`, string
//! tables), whose values are in the fields that refer to them: a trace exports to the same
//! files and values whether its fields were moved into streams or not.
//!
//! The trace is read twice: a first pass finds, for every column, the narrowest type; the second
//! writes row groups as it goes (a third pass makes the heap tables, when asked for). Memory is
//! bounded by one batch of rows and one row group per open file, whatever the length of the
//! trace (and by the live blocks, for the heap tables).
//!
//! Arrow IPC files ([`ColumnarFormat::Arrow`]) hold the same columns uncompressed, strings as
//! plain values rather than dictionaries (an IPC file takes one dictionary per column for the
//! whole file; the export makes one per batch).

mod arrays;
mod export;
pub mod heap;
mod heap_export;
mod model;
mod parts;
mod scan;
mod table;
mod types;
mod writer;

use std::path::{Path, PathBuf};

use crate::decode::{EventPasses, Reader};
use crate::dtd::{Builtin, RecordId, RecordType};
use crate::io::{IoError, Output, StagedFolder};

use export::write_parquet_in;
pub use heap::{
    batches, HeapBatches, HeapOptions, HeapReading, HeapRows, HeapTable, HeapTableError,
    NamespaceReading, SiteNames,
};
pub use heap::{births_file, build_births, resumed_batches, resumed_table_batches};
pub use scan::{RecordBatches, RecordTables};

/// The file format of an export.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ColumnarFormat {
    /// Parquet files (`.parquet`), zstd-compressed, in row groups.
    #[default]
    Parquet,
    /// Arrow IPC files (`.arrow`, the Feather 2 file format), uncompressed so that a reader may
    /// map them; strings plain (no dictionaries).
    Arrow,
}

impl ColumnarFormat {
    /// The extension of its files, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            ColumnarFormat::Parquet => "parquet",
            ColumnarFormat::Arrow => "arrow",
        }
    }

    /// Its name as `mtf export --to` takes it.
    pub fn name(self) -> &'static str {
        match self {
            ColumnarFormat::Parquet => "Parquet",
            ColumnarFormat::Arrow => "Arrow IPC",
        }
    }
}

/// Which tables an export writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSet {
    /// One file per record type.
    pub records: bool,
    /// `events.EXT`: the heap events ([`HeapTable::Events`]).
    pub events: bool,
    /// `blocks.EXT`: the block lifetimes ([`HeapTable::Blocks`]).
    pub blocks: bool,
}

impl Default for TableSet {
    fn default() -> Self {
        TableSet {
            records: true,
            events: false,
            blocks: false,
        }
    }
}

impl TableSet {
    /// The heap tables asked for.
    pub fn heap(&self) -> Vec<HeapTable> {
        HeapTable::ALL
            .into_iter()
            .filter(|t| match t {
                HeapTable::Events => self.events,
                HeapTable::Blocks => self.blocks,
            })
            .collect()
    }
}

/// How [`write_parquet`] writes.
#[derive(Debug, Clone)]
pub struct ParquetOptions {
    /// Parquet or Arrow IPC files.
    pub format: ColumnarFormat,
    /// The tables written.
    pub tables: TableSet,
    /// Hive-style partitions of this many data records: each table is a folder of parts,
    /// `TABLE/part=K/data.EXT` holding the rows of data records `K × N` to `(K + 1) × N − 1`
    /// (for `blocks`, the lifetimes that end there; the blocks alive at the end in the part of
    /// the end of the trace). `None`: one file per table.
    pub partition_records: Option<u64>,
    /// Hive-style partitions by time buckets of this span: each table is a folder of parts,
    /// `TABLE/time_bucket=S/data.EXT`, `S` the bucket's start in the trace's time unit (a
    /// multiple of the span), holding the rows of the data records whose clock is in
    /// `S..S + span` (docs/query.md, *Partitions by time*). Not with `partition_records`.
    pub partition_time: Option<TimeSpan>,
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
            format: ColumnarFormat::Parquet,
            tables: TableSet::default(),
            partition_records: None,
            partition_time: None,
            batch_rows: 64 * 1024,
            row_group_rows: 1024 * 1024,
            refuse_problems: false,
            source: None,
        }
    }
}

/// The span of a time bucket ([`ParquetOptions::partition_time`]): `count` of `unit`, or of
/// the trace's own time unit (docs/format.md §14.4) when `unit` is `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeSpan {
    /// How many units.
    pub count: u64,
    /// The unit; `None`: the trace's.
    pub unit: Option<crate::analysis::TimeUnit>,
}

impl std::str::FromStr for TimeSpan {
    type Err = String;

    /// `1000000` (the trace's units), `500ms`, `1s`, `250us`, `100ns`.
    fn from_str(s: &str) -> Result<TimeSpan, String> {
        let wrong = || {
            format!(
                "`{s}`: a span is a whole number above 0, in the trace's time unit or followed by ns, us, ms or s"
            )
        };
        let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (n, unit) = s.split_at(digits);
        let unit = match unit {
            "" => None,
            u => Some(
                crate::analysis::TimeUnit::ALL
                    .iter()
                    .find(|(k, t)| *k == u && *t != crate::analysis::TimeUnit::Tick)
                    .map(|(_, t)| *t)
                    .ok_or_else(wrong)?,
            ),
        };
        match n.parse::<u64>() {
            Ok(count) if count > 0 => Ok(TimeSpan { count, unit }),
            _ => Err(wrong()),
        }
    }
}

impl std::fmt::Display for TimeSpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}", self.count, self.unit.map_or("", |u| u.keyword()))
    }
}

/// The file that marks a folder as a Parquet export of `mtf` (hidden; query engines reading
/// `DIR/*.parquet` do not see it): its text names the trace exported.
pub const EXPORT_MARKER: &str = ".mtf-export";

/// Where [`write_parquet`] is, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// 1 while finding the column types, 2 while writing the records, 3 while writing the
    /// heap tables.
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
    /// The record type (for a heap table: [`RecordId::MAX`]).
    pub record: RecordId,
    /// The heap table, for `events` and `blocks`.
    pub heap: Option<HeapTable>,
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
    /// What reading the heap events met, when a heap table was written.
    pub heap: Option<HeapReading>,
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
    #[error("{} looks like a file name, but a columnar export (Parquet, Arrow) writes one file per table into a folder", crate::io::escape_path(path))]
    #[diagnostic(
        code(mtf::parquet::folder),
        help("give -o FOLDER: an existing folder, a name without an extension, or a name ending with /")
    )]
    NotAFolderName {
        /// The output as given.
        path: PathBuf,
    },
    /// The output folder holds files that are not an earlier export of the same trace.
    #[error("{} is not empty and is not an earlier export of {}: not replacing what it holds ({reason})", crate::io::escape_path(path), crate::io::escape_path(trace))]
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
    /// A heap table could not be made.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Heap(#[from] HeapTableError),
    /// The trace has problems or damaged regions and [`ParquetOptions::refuse_problems`] is set:
    /// nothing was written.
    #[error("not exported: the trace has {problems} problem(s) or damaged region(s), the first: {first}; nothing was written")]
    #[diagnostic(
        code(mtf::parquet::damaged),
        help("`mtf check` lists them; a columnar export holds every record of a trace or none")
    )]
    Damaged {
        /// Problems and damaged regions found.
        problems: u64,
        /// The first of them.
        first: String,
    },
    /// A partition by time cannot be made: the trace has no clock.
    #[error("cannot partition by time: the trace has no clock ({reason})")]
    #[diagnostic(
        code(mtf::parquet::no_clock),
        help("partition by data records instead (--partition-by records:N); docs/stats.md, *Time, and traces without a clock*")
    )]
    NoClock {
        /// Why: no time declared, none carried, or one value only.
        reason: String,
    },
    /// The partitions asked for cannot be made (a span that is no whole number of the trace's
    /// unit, a duration for a clock of ticks, both kinds of partitions).
    #[error("{message}")]
    #[diagnostic(code(mtf::parquet::partition))]
    Partition {
        /// What is wrong.
        message: String,
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

/// As [`write_parquet`], the events of each pass read from `events` (which must yield the
/// events of `reader`'s trace, through `reader`, as `reader.records()` does): the files are the
/// same, byte for byte, whatever decodes them.
pub fn write_parquet_from(
    reader: &Reader<'_>,
    dir: &Path,
    opts: &ParquetOptions,
    progress: &mut dyn FnMut(Progress),
    events: &mut EventPasses<'_>,
) -> Result<ParquetReport, ParquetError> {
    check_folder(dir, opts)?;
    // Design: the export is written into a fresh folder beside `dir` and put in place whole
    // (`io::StagedFolder`), so that the folder holds the files of one export, never files of
    // an earlier one beside them; a failed export leaves `dir` as it was.
    let parts = parts::Parts::plan(reader, opts, events)?;
    let staged = StagedFolder::beside(dir)?;
    let mut report = if opts.tables.records {
        write_parquet_in(
            reader,
            staged.path(),
            opts,
            parts.as_ref(),
            progress,
            events,
        )?
    } else {
        ParquetReport::default()
    };
    let heap = opts.tables.heap();
    if !heap.is_empty() {
        heap_export::write_heap_in(
            reader,
            parts::Target {
                dir: staged.path(),
                parts: parts.as_ref(),
            },
            &heap,
            opts,
            progress,
            events,
            &mut report,
        )?;
    }
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
        // A folder of a partitioned table's parts (`part=K/data.EXT` only) is replaced with the
        // export as a whole, and only when the marker names the same trace (below); any other
        // folder is not an export's.
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir()) && is_parts(&entry.path());
        if name == EXPORT_MARKER && is_file {
            marked = true;
        } else if !(is_dir
            || is_file
                && [".parquet", ".arrow"]
                    .iter()
                    .any(|e| name.to_string_lossy().ends_with(e)))
        {
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
            "it holds Parquet or Arrow files but no {EXPORT_MARKER} naming the trace they came from"
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

/// Whether `dir` holds only what a partitioned export writes: `part=K` (`time_bucket=S`) folders of one
/// `data.parquet` or `data.arrow` each.
fn is_parts(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().all(|part| {
        let name = part.file_name();
        let name = name.to_string_lossy();
        parts::is_part_folder(&name)
            && std::fs::read_dir(part.path()).is_ok_and(|files| {
                files.flatten().all(|f| {
                    let n = f.file_name();
                    f.file_type().is_ok_and(|t| t.is_file())
                        && (n == "data.parquet" || n == "data.arrow")
                })
            })
    })
}

/// Whether a record type becomes a file: every type but `section` and `metadata`.
fn exported(rt: &RecordType) -> bool {
    !matches!(rt.builtin, Some(Builtin::Section | Builtin::Metadata))
}

/// `RECORD.parquet`, or `SECTION.RECORD.parquet` when another section defines a record type of
/// the same name (`global` for the global scope), or when the record type is named as a heap
/// table (`events`, `blocks`), whose files have those names.
pub fn file_name(schema: &crate::dtd::Schema, record: RecordId) -> String {
    file_name_as(schema, record, ColumnarFormat::Parquet)
}

/// [`file_name`] with the extension of `format`.
pub fn file_name_as(
    schema: &crate::dtd::Schema,
    record: RecordId,
    format: ColumnarFormat,
) -> String {
    let ext = format.extension();
    let rt = schema.record(record);
    let shared = schema
        .records
        .iter()
        .filter(|r| r.name == rt.name && exported(r))
        .count()
        > 1
        || HeapTable::ALL.iter().any(|t| t.name() == rt.name);
    if shared {
        let section = match schema.scope_for(rt.scope) {
            Some(s) if rt.scope != 0 => s.name.as_str(),
            _ => "global",
        };
        format!("{section}.{}.{ext}", rt.name)
    } else {
        format!("{}.{ext}", rt.name)
    }
}
