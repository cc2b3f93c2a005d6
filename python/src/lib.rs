//! `metatf._metatf`: the extension module under the Python package `metatf` (docs/python.md).
//!
//! A trace is opened once ([`metatf::OpenOptions`], as `mtf` opens it: mapped, or a compressed
//! trace decompressed and spooled) and shared by every table read from it. Tables leave as Arrow
//! record batches through the Arrow C data interface (arrow's `pyarrow` bridge): pyarrow takes
//! the buffers Rust filled, without a copy and without Python objects per value. Every error is a
//! `metatf.Error` (python/metatf/_errors.py) with the library's diagnostic code.

// Design: the batches of `Trace.batches` are made on a thread of their own that owns a share of
// the opened trace (`Arc<Opened>`) and hands them over a channel of two batches: a
// `pyarrow.RecordBatchReader` over a trace of any length holds a few batches, never the table,
// and no Rust borrow outlives a Python call. `Trace.table` and the others gather the batches
// with the interpreter released and give one `pyarrow.Table`.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use arrow_array::{
    ArrayRef, DictionaryArray, RecordBatch, RecordBatchReader, StringArray, UInt32Array,
    UInt64Array, UInt8Array,
};
use arrow_pyarrow::{IntoPyArrow, Table};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use metatf::columnar::{HeapOptions, HeapTable, RecordTables};
use metatf::command::jobs::Faults;
use metatf::command::stats::StatsOptions;
use metatf::command::Warning;
use metatf::decode::Event;
use metatf::dtd::RecordId;
use metatf::{OpenError, OpenOptions, Opened};
use miette::Diagnostic;
use pyo3::prelude::*;

/// Rows per batch unless the caller says otherwise.
const BATCH_ROWS: usize = 64 * 1024;

/// Where an error came from, for its Python class and attributes.
struct Raised {
    class: &'static str,
    message: String,
    code: Option<String>,
    path: Option<PathBuf>,
    offset: Option<u64>,
}

impl Raised {
    fn of(class: &'static str, e: &dyn Diagnostic, path: Option<&Path>) -> Raised {
        let mut message = e.to_string();
        if let Some(help) = e.help() {
            message.push_str(&format!("\n  help: {help}"));
        }
        Raised {
            class,
            message,
            code: e.code().map(|c| c.to_string()),
            path: path.map(Path::to_path_buf),
            offset: None,
        }
    }

    /// The Python exception: an instance of `metatf.<class>` with `code`, `path`, `offset`.
    fn into_py(self, py: Python<'_>) -> PyErr {
        let made = (|| -> PyResult<PyErr> {
            let errors = py.import("metatf._errors")?;
            let class = errors.getattr(self.class)?;
            let e = class.call1((self.message.clone(),))?;
            e.setattr("code", self.code.clone())?;
            e.setattr("path", self.path.as_ref().map(|p| p.display().to_string()))?;
            e.setattr("offset", self.offset)?;
            Ok(PyErr::from_value(e))
        })();
        made.unwrap_or_else(|e| e)
    }
}

/// The class of an error opening a trace.
fn open_error(e: &OpenError, path: &Path) -> Raised {
    use metatf::io::IoError;
    let class = match e {
        OpenError::Io(IoError::Open { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            "TraceNotFoundError"
        }
        OpenError::Io(_) => "OpenError",
        OpenError::Container(_) => "DecodeError",
        OpenError::Dtd(_) | OpenError::DtdNotFound { .. } => "DtdError",
    };
    let mut r = Raised::of(class, e, Some(path));
    if let OpenError::Container(c) = e {
        r.offset = c.offset();
    }
    r
}

/// A trace opened with its DTD (`metatf.open`).
#[pyclass(frozen, module = "metatf")]
struct Trace {
    opened: Arc<Opened>,
    path: PathBuf,
    /// Opened with `salvage=True`: records that cannot be decoded are left out of the tables
    /// (as `mtf export` leaves them out) rather than raised.
    salvage: bool,
}

/// One of the tables `Trace.batches` gives.
enum Which {
    Records,
    Heap(HeapTable),
    Record(RecordId),
}

impl Trace {
    fn raise(&self, class: &'static str, e: &dyn Diagnostic) -> Raised {
        Raised::of(class, e, Some(&self.path))
    }

    /// The record types that have a table, by the name `mtf export` gives their files.
    fn record_tables(&self) -> Vec<(String, RecordId)> {
        let schema = self.opened.schema();
        (0..schema.records.len())
            .filter_map(|i| {
                let id = i as RecordId;
                let name = metatf::columnar::file_name_as(
                    schema,
                    id,
                    metatf::columnar::ColumnarFormat::Arrow,
                );
                let stem = name.strip_suffix(".arrow")?.to_string();
                let rt = &schema.records[i];
                let has_table = !matches!(
                    rt.builtin,
                    Some(metatf::dtd::Builtin::Section | metatf::dtd::Builtin::Metadata)
                );
                has_table.then_some((stem, id))
            })
            .collect()
    }

    fn which(&self, name: &str, heap: bool) -> Result<Which, Raised> {
        if heap {
            match name {
                "records" => return Ok(Which::Records),
                "events" => return Ok(Which::Heap(HeapTable::Events)),
                "blocks" => return Ok(Which::Heap(HeapTable::Blocks)),
                _ => {}
            }
        }
        let tables = self.record_tables();
        if let Some((_, id)) = tables.iter().find(|(n, _)| n == name) {
            return Ok(Which::Record(*id));
        }
        let names: Vec<&str> = tables.iter().map(|(n, _)| n.as_str()).collect();
        Err(Raised {
            class: "TableError",
            message: format!(
                "{}: no table `{name}`; the trace's record types are {}{}",
                self.path.display(),
                names.join(", "),
                if heap {
                    ", and the tables records, events, blocks"
                } else {
                    ""
                }
            ),
            code: Some("mtf::python::no_table".into()),
            path: Some(self.path.clone()),
            offset: None,
        })
    }

    /// Every batch of a table, made on this thread (the interpreter released by the caller).
    fn gather(
        &self,
        which: &Which,
        batch_rows: usize,
    ) -> Result<(SchemaRef, Vec<RecordBatch>), Raised> {
        let batches = std::cell::RefCell::new(Vec::new());
        let (o, path) = (&self.opened, &self.path);
        let schema = produce(
            o,
            path,
            self.salvage,
            which,
            batch_rows,
            &mut |b| {
                batches.borrow_mut().push(b);
                true
            },
            Some(&mut || batches.borrow_mut().clear()),
        )?;
        Ok((schema, batches.into_inner()))
    }

    fn table_of(&self, py: Python<'_>, which: Which, batch_rows: usize) -> PyResult<Py<PyAny>> {
        let (schema, batches) = py
            .detach(|| self.gather(&which, batch_rows))
            .map_err(|r| r.into_py(py))?;
        let table = Table::try_new(batches, schema)
            .map_err(|e| arrow_raised(&e, &self.path).into_py(py))?;
        Ok(table.into_pyarrow(py)?.unbind())
    }
}

fn arrow_raised(e: &ArrowError, path: &Path) -> Raised {
    Raised {
        class: "Error",
        message: format!("{}: {e}", path.display()),
        code: Some("mtf::python::arrow".into()),
        path: Some(path.to_path_buf()),
        offset: None,
    }
}

/// The schema of `records`: one row per record of the trace.
fn records_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("record_index", DataType::UInt64, false),
        Field::new("byte_offset", DataType::UInt64, false),
        Field::new("section", DataType::UInt8, false),
        Field::new(
            "type",
            DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8)),
            false,
        ),
    ]))
}

/// Makes the batches of `which`, each given to `each` (which returns false to stop); the schema
/// once done. A record that cannot be decoded stops the table with its error (a trace opened
/// with `salvage=True` gives the rows of the regions that can be read).
fn produce(
    o: &Opened,
    path: &Path,
    salvage: bool,
    which: &Which,
    batch_rows: usize,
    each: &mut dyn FnMut(RecordBatch) -> bool,
    restart: Option<&mut dyn FnMut()>,
) -> Result<SchemaRef, Raised> {
    let batch_rows = batch_rows.max(1);
    let reader = o.reader();
    match which {
        Which::Records => {
            let schema = records_schema();
            let names: Vec<&str> = o.schema().records.iter().map(|r| r.name.as_str()).collect();
            let values: ArrayRef = Arc::new(StringArray::from(names));
            let (mut index, mut offset, mut section, mut types) =
                (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let mut flush = |index: &mut Vec<u64>,
                             offset: &mut Vec<u64>,
                             section: &mut Vec<u8>,
                             types: &mut Vec<u32>|
             -> Result<bool, Raised> {
                let keys = UInt32Array::from(std::mem::take(types));
                let dict = DictionaryArray::try_new(keys, values.clone())
                    .map_err(|e| arrow_raised(&e, path))?;
                let batch = RecordBatch::try_new(
                    schema.clone(),
                    vec![
                        Arc::new(UInt64Array::from(std::mem::take(index))),
                        Arc::new(UInt64Array::from(std::mem::take(offset))),
                        Arc::new(UInt8Array::from(std::mem::take(section))),
                        Arc::new(dict),
                    ],
                )
                .map_err(|e| arrow_raised(&e, path))?;
                Ok(each(batch))
            };
            let mut records = reader.records();
            while let Some(event) = records.next() {
                match event {
                    Event::Record(v) => {
                        index.push(v.index());
                        offset.push(v.offset());
                        section.push(v.section());
                        types.push(v.record_id());
                        if index.len() >= batch_rows
                            && !flush(&mut index, &mut offset, &mut section, &mut types)?
                        {
                            return Ok(schema);
                        }
                    }
                    Event::Problem(_) | Event::Damage(_) if !salvage => {
                        return Err(first_fault(o, path));
                    }
                    _ => {}
                }
            }
            if !index.is_empty() {
                flush(&mut index, &mut offset, &mut section, &mut types)?;
            }
            Ok(schema)
        }
        Which::Heap(table) => {
            let mut options = HeapOptions {
                batch_rows,
                refuse_problems: !salvage,
                ..HeapOptions::default()
            };
            let heap_error = |e: metatf::columnar::HeapTableError| match e {
                metatf::columnar::HeapTableError::Damaged { .. } => first_fault(o, path),
                e => Raised::of("Error", &e, Some(path)),
            };
            // Names of sites that come after the rows needing them (an imported heaptrack
            // trace's tables at its end) are found by a first reading, as `mtf export` does:
            // for a stream before the first batch; for a table gathered whole (`restart`), by
            // the reading itself, made again only when such names turned up.
            if restart.is_none() {
                let mut first = metatf::columnar::batches(&reader, *table, options.clone())
                    .map_err(heap_error)?;
                for b in first.by_ref() {
                    b.map_err(heap_error)?;
                }
                let late = first.late_names();
                if !late.is_empty() {
                    options.site_names = Arc::new(late);
                }
            }
            let mut batches =
                metatf::columnar::batches(&reader, *table, options.clone()).map_err(heap_error)?;
            for b in batches.by_ref() {
                if !each(b.map_err(heap_error)?) {
                    return Ok(table.schema());
                }
            }
            let late = batches.late_names();
            if let (Some(restart), false) = (restart, late.is_empty()) {
                restart();
                options.site_names = Arc::new(late);
                let batches =
                    metatf::columnar::batches(&reader, *table, options).map_err(heap_error)?;
                for b in batches {
                    if !each(b.map_err(heap_error)?) {
                        break;
                    }
                }
            }
            Ok(table.schema())
        }
        Which::Record(id) => {
            let t = RecordTables::observe_only(&reader, *id);
            let Some(schema) = t.schema(*id) else {
                return Ok(Arc::new(Schema::empty()));
            };
            if t.problems() > 0 && !salvage {
                return Err(first_fault(o, path));
            }
            if let Some(batches) = t.batches(&reader, *id, reader.records(), None, batch_rows) {
                for b in batches {
                    if !each(b.map_err(|e| arrow_raised(&e, path))?) {
                        break;
                    }
                }
            }
            Ok(schema)
        }
    }
}

/// The first record of `o` that cannot be decoded, or damaged region, as an error: the tables
/// of a trace not opened with `salvage=True` hold every record or raise this.
fn first_fault(o: &Opened, path: &Path) -> Raised {
    let reader = o.reader();
    let mut records = reader.records();
    while let Some(event) = records.next() {
        let (mut r, offset) = match event {
            Event::Record(_) => continue,
            Event::Problem(p) => (Raised::of("DecodeError", &*p, Some(path)), p.at.offset),
            Event::Damage(d) => (Raised::of("DecodeError", &*d, Some(path)), d.at.offset),
        };
        r.message = format!(
            "{}: {}\n  help: `mtf check` lists every problem; metatf.open(..., salvage=True) reads the records that can be decoded",
            path.display(),
            r.message
        );
        r.offset = Some(offset);
        return r;
    }
    Raised {
        class: "DecodeError",
        message: format!("{}: a record cannot be decoded", path.display()),
        code: Some("mtf::decode::record".into()),
        path: Some(path.to_path_buf()),
        offset: None,
    }
}

/// A `RecordBatchReader` over the batches a producing thread sends.
struct Channel {
    schema: SchemaRef,
    rx: Receiver<Result<RecordBatch, ArrowError>>,
}

impl Iterator for Channel {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.rx.recv().ok()
    }
}

impl RecordBatchReader for Channel {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[pymethods]
impl Trace {
    /// The trace's path as given to `metatf.open`.
    #[getter]
    fn path(&self) -> String {
        self.path.display().to_string()
    }

    /// The name of the DTD the trace was read with.
    #[getter]
    fn dtd(&self) -> String {
        self.opened.schema().name.clone()
    }

    /// The record types that have a table (every type but `section` and `metadata`), named as
    /// `mtf export` names their files: `RECORD`, or `SECTION.RECORD` where two sections define
    /// a record type of that name.
    #[getter]
    fn record_types(&self) -> Vec<String> {
        self.record_tables().into_iter().map(|(n, _)| n).collect()
    }

    /// The records of one record type as a `pyarrow.Table`, as `mtf export --to arrow` writes
    /// them: `record_index`, `byte_offset`, `section`, then one column per field of the DTD
    /// with its interpreted value (docs/query.md).
    #[pyo3(signature = (name, *, batch_rows = BATCH_ROWS))]
    fn table(&self, py: Python<'_>, name: &str, batch_rows: usize) -> PyResult<Py<PyAny>> {
        let which = self.which(name, false).map_err(|r| r.into_py(py))?;
        self.table_of(py, which, batch_rows)
    }

    /// One row per record of the trace, in trace order: `record_index`, `byte_offset`,
    /// `section`, `type` (the record type's name, dictionary-encoded).
    #[pyo3(signature = (*, batch_rows = BATCH_ROWS))]
    fn records(&self, py: Python<'_>, batch_rows: usize) -> PyResult<Py<PyAny>> {
        self.table_of(py, Which::Records, batch_rows)
    }

    /// One row per heap event, as `mtf export --table events` writes them (docs/query.md).
    #[pyo3(signature = (*, batch_rows = BATCH_ROWS))]
    fn events(&self, py: Python<'_>, batch_rows: usize) -> PyResult<Py<PyAny>> {
        self.table_of(py, Which::Heap(HeapTable::Events), batch_rows)
    }

    /// One row per block lifetime, as `mtf export --table blocks` writes them (docs/query.md).
    #[pyo3(signature = (*, batch_rows = BATCH_ROWS))]
    fn blocks(&self, py: Python<'_>, batch_rows: usize) -> PyResult<Py<PyAny>> {
        self.table_of(py, Which::Heap(HeapTable::Blocks), batch_rows)
    }

    /// A table as a `pyarrow.RecordBatchReader` that decodes while it is read: `records`,
    /// `events`, `blocks`, or a record type's name.
    #[pyo3(signature = (name, *, batch_rows = BATCH_ROWS))]
    fn batches(&self, py: Python<'_>, name: &str, batch_rows: usize) -> PyResult<Py<PyAny>> {
        let which = self.which(name, true).map_err(|r| r.into_py(py))?;
        let opened = self.opened.clone();
        let path = self.path.clone();
        let salvage = self.salvage;
        let (schema_tx, schema_rx) = sync_channel::<Result<SchemaRef, Raised>>(1);
        let (tx, rx) = sync_channel::<Result<RecordBatch, ArrowError>>(2);
        std::thread::spawn(move || {
            // The schema first: known before any row for every table but a record type's,
            // whose first pass types its columns.
            let known = match &which {
                Which::Records => Some(records_schema()),
                Which::Heap(t) => Some(t.schema()),
                Which::Record(_) => None,
            };
            let mut schema_tx = Some(schema_tx);
            if let Some(s) = known {
                if let Some(stx) = schema_tx.take() {
                    let _ = stx.send(Ok(s));
                }
            }
            let mut first = true;
            let result = produce(
                &opened,
                &path,
                salvage,
                &which,
                batch_rows,
                &mut |b| {
                    if first {
                        first = false;
                        if let Some(stx) = schema_tx.take() {
                            let _ = stx.send(Ok(b.schema()));
                        }
                    }
                    tx.send(Ok(b)).is_ok()
                },
                None,
            );
            match result {
                Ok(s) => {
                    if let Some(stx) = schema_tx.take() {
                        let _ = stx.send(Ok(s));
                    }
                }
                Err(r) => match schema_tx.take() {
                    Some(stx) => {
                        let _ = stx.send(Err(r));
                    }
                    None => {
                        let _ = tx.send(Err(ArrowError::ExternalError(Box::new(
                            std::io::Error::other(format!(
                                "{} [{}]",
                                r.message,
                                r.code.unwrap_or_default()
                            )),
                        ))));
                    }
                },
            }
        });
        let schema = py
            .detach(move || schema_rx.recv())
            .map_err(|_| {
                Raised {
                    class: "Error",
                    message: format!("{}: the reading thread stopped", self.path.display()),
                    code: Some("mtf::python::thread".into()),
                    path: Some(self.path.clone()),
                    offset: None,
                }
                .into_py(py)
            })?
            .map_err(|r| r.into_py(py))?;
        let reader: Box<dyn RecordBatchReader + Send> = Box::new(Channel { schema, rx });
        Ok(reader.into_pyarrow(py)?.unbind())
    }

    /// The figures of `mtf stats -f json` as a dict (docs/stats.md has the schema): records and
    /// integer fields per type, and per namespace the heap figures; `top` sites per ranking.
    #[pyo3(signature = (*, top = 10))]
    fn stats(&self, py: Python<'_>, top: usize) -> PyResult<Py<PyAny>> {
        let mut warnings = Vec::new();
        let text = py
            .detach(|| {
                let stats = metatf::command::stats::stats(
                    &self.opened,
                    &self.path,
                    &StatsOptions::default(),
                    Faults::default(),
                    &mut |w| warnings.push(warning_text(w)),
                )
                .map_err(|e| self.raise("Error", &e))?;
                serde_json::to_string(&stats.to_json(top)).map_err(|e| Raised {
                    class: "Error",
                    message: e.to_string(),
                    code: Some("mtf::python::json".into()),
                    path: Some(self.path.clone()),
                    offset: None,
                })
            })
            .map_err(|r| r.into_py(py))?;
        if !warnings.is_empty() {
            let warn = py.import("warnings")?;
            for w in warnings {
                warn.call_method1("warn", (w,))?;
            }
        }
        Ok(py.import("json")?.call_method1("loads", (text,))?.unbind())
    }

    /// The result of an SQL query over this trace's tables (a table per record type,
    /// `records`, `events`, `blocks`: docs/query.md) as a `pyarrow.Table`. `engine`:
    /// `"datafusion"`, the library's own (a build with the cargo feature `sql`), reading the
    /// trace in place; `"duckdb"`, DuckDB over the tables the query names, made whole first
    /// (`pip install duckdb`); by default the library's own where this build has it, else
    /// DuckDB.
    #[pyo3(signature = (query, *, engine = None))]
    fn sql(slf: &Bound<'_, Self>, query: &str, engine: Option<&str>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        let me = slf.get();
        match engine {
            None if cfg!(feature = "sql") => sql::query(py, me, query),
            Some("datafusion") => sql::query(py, me, query),
            None | Some("duckdb") => Ok(py
                .import("metatf._duckdb")?
                .call_method1("sql", (slf, query))?
                .unbind()),
            Some(other) => Err(Raised {
                class: "SqlError",
                message: format!("no SQL engine `{other}`: the engines are datafusion and duckdb"),
                code: Some("mtf::python::engine".into()),
                path: Some(me.path.clone()),
                offset: None,
            }
            .into_py(py)),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "metatf.Trace({:?}, dtd={:?})",
            self.path.display().to_string(),
            self.opened.schema().name
        )
    }
}

#[cfg(feature = "sql")]
mod sql {
    use super::*;

    pub(super) fn query(py: Python<'_>, t: &Trace, query: &str) -> PyResult<Py<PyAny>> {
        let paths = [t.path.clone()];
        let (schema, batches) = py
            .detach(|| metatf::sql::query(&paths, query))
            .map_err(|e| t.raise("SqlError", &e).into_py(py))?;
        let table =
            Table::try_new(batches, schema).map_err(|e| arrow_raised(&e, &t.path).into_py(py))?;
        Ok(table.into_pyarrow(py)?.unbind())
    }
}

#[cfg(not(feature = "sql"))]
mod sql {
    use super::*;

    pub(super) fn query(py: Python<'_>, t: &Trace, _query: &str) -> PyResult<Py<PyAny>> {
        Err(Raised {
            class: "SqlError",
            message: "this build of metatf has no SQL engine: build the package with the cargo feature `sql` (docs/python.md)".into(),
            code: Some("mtf::python::no_sql".into()),
            path: Some(t.path.clone()),
            offset: None,
        }
        .into_py(py))
    }
}

/// A warning of a command as `mtf` words it.
fn warning_text(w: Warning) -> String {
    match w {
        Warning::IndexSkipped(e) => format!("{e} (decoding from the start of the trace instead)"),
        Warning::IndexNotForPlan(e) => format!("{e} (decoding without the index)"),
        Warning::PastEnd(note) => note,
        other => format!("{other:?}"),
    }
}

/// Open a trace with its DTD.
#[pyfunction]
#[pyo3(signature = (path, dtd = None, *, salvage = false))]
fn open(py: Python<'_>, path: PathBuf, dtd: Option<PathBuf>, salvage: bool) -> PyResult<Trace> {
    let options = OpenOptions::from_env()
        .map_err(|e| Raised::of("OpenError", &e, Some(&path)).into_py(py))?
        .dtd_opt(dtd)
        .salvage(salvage);
    let opened = py
        .detach(|| options.open(&path))
        .map_err(|e| open_error(&e, &path).into_py(py))?;
    Ok(Trace {
        opened: Arc::new(opened),
        path,
        salvage,
    })
}

#[pymodule]
fn _metatf(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_class::<Trace>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("HAS_SQL", cfg!(feature = "sql"))?;
    Ok(())
}
