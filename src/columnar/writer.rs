//! One file being written, Parquet or Arrow IPC: its Arrow schema, writer properties (Parquet:
//! zstd, row groups; both: the DTD, record and section, or the heap table, in the key-value
//! metadata), batches handed over, the footer.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray, RecordBatch, StructArray};
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType, Field, Fields, Schema as ArrowSchema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::decode::Reader;
use crate::dtd::RecordId;
use crate::io::Output;

use super::heap::HeapTable;
use super::model::Table;
use super::{ColumnarFormat, ParquetError, ParquetOptions, ROW_GROUP_BYTES};

// Both boxed: one per file, and the two writers differ in size.
enum Sink {
    Parquet(Box<ArrowWriter<Output>>),
    Ipc(Box<FileWriter<Output>>),
}

pub(super) struct TableWriter {
    path: PathBuf,
    /// The schema the batches are made to (with the records tables' dictionaries).
    schema: SchemaRef,
    sink: Sink,
}

/// A file's key-value metadata (Parquet) or schema metadata (Arrow IPC).
type Meta = Vec<(String, String)>;

impl TableWriter {
    /// The file of a record type's rows.
    pub(super) fn create(
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
        let meta = vec![
            ("mtf.dtd".to_string(), reader.schema().name.clone()),
            ("mtf.record".to_string(), rt.name.clone()),
            (
                "mtf.section".to_string(),
                if section.is_empty() {
                    "global"
                } else {
                    section
                }
                .to_string(),
            ),
        ];
        TableWriter::open(path, schema, t.plain_columns(), meta, opts)
    }

    /// The file of a heap table.
    pub(super) fn create_heap(
        reader: &Reader<'_>,
        table: HeapTable,
        path: PathBuf,
        opts: &ParquetOptions,
    ) -> Result<TableWriter, ParquetError> {
        // Nearly unique in every row: no dictionary (see `Table::plain_columns`).
        let plain = [
            "record",
            "record_index",
            "id",
            "last_id",
            "old_id",
            "alloc_record",
            "free_record",
            "time",
            "alloc_time",
            "free_time",
        ];
        let schema = table.schema();
        let plain = schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .filter(|n| plain.contains(&n.as_str()))
            .collect();
        let meta = vec![
            ("mtf.dtd".to_string(), reader.schema().name.clone()),
            ("mtf.table".to_string(), table.name().to_string()),
        ];
        TableWriter::open(path, schema, plain, meta, opts)
    }

    fn open(
        path: PathBuf,
        schema: SchemaRef,
        plain: Vec<String>,
        meta: Meta,
        opts: &ParquetOptions,
    ) -> Result<TableWriter, ParquetError> {
        let out = Output::create(&path)?;
        let sink = match opts.format {
            ColumnarFormat::Parquet => {
                let mut props = WriterProperties::builder();
                for name in plain {
                    props = props.set_column_dictionary_enabled(ColumnPath::new(vec![name]), false);
                }
                let props = props
                    .set_compression(Compression::ZSTD(ZstdLevel::default()))
                    .set_max_row_group_row_count(Some(opts.row_group_rows))
                    .set_created_by(format!("mtf {}", env!("CARGO_PKG_VERSION")))
                    .set_key_value_metadata(Some(
                        meta.into_iter().map(|(k, v)| KeyValue::new(k, v)).collect(),
                    ))
                    .build();
                let w = ArrowWriter::try_new(out, schema.clone(), Some(props))
                    .map_err(|e| write_error(&path, e))?;
                Sink::Parquet(Box::new(w))
            }
            ColumnarFormat::Arrow => {
                let mut m: HashMap<String, String> = meta.into_iter().collect();
                m.insert(
                    "mtf.created_by".into(),
                    format!("mtf {}", env!("CARGO_PKG_VERSION")),
                );
                let ipc = ArrowSchema::new(plain_fields(schema.fields())).with_metadata(m);
                let w = FileWriter::try_new(out, &ipc).map_err(|e| arrow_error(&path, e))?;
                Sink::Ipc(Box::new(w))
            }
        };
        Ok(TableWriter { path, schema, sink })
    }

    /// The rows gathered in `t`, as one batch.
    pub(super) fn write(&mut self, t: &mut Table) -> Result<(), ParquetError> {
        let batch = t
            .take_batch(&self.schema)
            .map_err(|m| ParquetError::Write {
                path: self.path.clone(),
                message: m,
            })?;
        self.write_batch(&batch)
    }

    /// One batch of the file's schema.
    pub(super) fn write_batch(&mut self, batch: &RecordBatch) -> Result<(), ParquetError> {
        match &mut self.sink {
            Sink::Parquet(w) => {
                w.write(batch).map_err(|e| write_error(&self.path, e))?;
                if w.in_progress_size() > ROW_GROUP_BYTES {
                    w.flush().map_err(|e| write_error(&self.path, e))?;
                }
            }
            Sink::Ipc(w) => {
                let columns = batch.columns().iter().map(plain_array).collect();
                RecordBatch::try_new(w.schema().clone(), columns)
                    .and_then(|b| w.write(&b))
                    .map_err(|e| arrow_error(&self.path, e))?;
            }
        }
        Ok(())
    }

    /// Writes the rest and the footer, and flushes it all to the temporary file (a write error,
    /// a full disk, shows here); the caller commits the output.
    pub(super) fn finish(mut self, t: &mut Table) -> Result<(PathBuf, Output), ParquetError> {
        if t.batch_rows > 0 {
            self.write(t)?;
        }
        self.close()
    }

    /// [`TableWriter::finish`] for a file whose batches were all written.
    pub(super) fn close(self) -> Result<(PathBuf, Output), ParquetError> {
        let mut out = match self.sink {
            Sink::Parquet(w) => (*w).into_inner().map_err(|e| write_error(&self.path, e))?,
            Sink::Ipc(mut w) => {
                w.finish().map_err(|e| arrow_error(&self.path, e))?;
                w.into_inner().map_err(|e| arrow_error(&self.path, e))?
            }
        };
        std::io::Write::flush(&mut out).map_err(|e| out.error(e))?;
        Ok((self.path, out))
    }
}

// Design: an Arrow IPC file holds one dictionary per column for the whole file (a replacement
// is an error of the format), while the records tables make a dictionary per batch (bounded
// memory); so the IPC export writes those columns as their values, plain strings or bytes,
// which every Arrow reader takes, and which the file's uncompressed buffers map as they are.
/// The fields with every dictionary replaced by its value type, at any depth.
fn plain_fields(fields: &Fields) -> Vec<Field> {
    fields
        .iter()
        .map(|f| f.as_ref().clone().with_data_type(plain_type(f.data_type())))
        .collect()
}

fn plain_type(t: &DataType) -> DataType {
    match t {
        DataType::Dictionary(_, v) => plain_type(v),
        DataType::Struct(fs) => DataType::Struct(plain_fields(fs).into()),
        DataType::List(f) => DataType::List(Arc::new(
            f.as_ref().clone().with_data_type(plain_type(f.data_type())),
        )),
        other => other.clone(),
    }
}

/// `a` with every dictionary replaced by its values, at any depth.
fn plain_array(a: &ArrayRef) -> ArrayRef {
    match a.data_type() {
        DataType::Dictionary(..) => {
            let d = a.as_any_dictionary();
            let values = plain_array(d.values());
            let keys = d.keys();
            // `take` by the keys: a null key gives a null value.
            match arrow_select::take::take(values.as_ref(), keys, None) {
                Ok(v) => v,
                Err(_) => a.clone(),
            }
        }
        DataType::Struct(_) => {
            let Some(s) = a.as_any().downcast_ref::<StructArray>() else {
                return a.clone();
            };
            let columns: Vec<ArrayRef> = s.columns().iter().map(plain_array).collect();
            let fields: Fields = s
                .fields()
                .iter()
                .zip(&columns)
                .map(|(f, c)| f.as_ref().clone().with_data_type(c.data_type().clone()))
                .collect::<Vec<_>>()
                .into();
            match StructArray::try_new(fields, columns, s.nulls().cloned()) {
                Ok(s) => Arc::new(s),
                Err(_) => a.clone(),
            }
        }
        DataType::List(f) => {
            let Some(l) = a.as_any().downcast_ref::<ListArray>() else {
                return a.clone();
            };
            let values = plain_array(l.values());
            let f = Arc::new(
                f.as_ref()
                    .clone()
                    .with_data_type(values.data_type().clone()),
            );
            match ListArray::try_new(f, l.offsets().clone(), values, l.nulls().cloned()) {
                Ok(l) => Arc::new(l),
                Err(_) => a.clone(),
            }
        }
        _ => a.clone(),
    }
}

pub(super) fn write_error(path: &Path, e: parquet::errors::ParquetError) -> ParquetError {
    // An I/O error from the output keeps its message (it names the file and tells a full disk).
    ParquetError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

fn arrow_error(path: &Path, e: arrow_schema::ArrowError) -> ParquetError {
    ParquetError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}
