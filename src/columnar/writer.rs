//! One Parquet file being written: its Arrow schema, writer properties (zstd, row groups, the
//! DTD, record and section in the key-value metadata), batches handed over, the footer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_schema::Schema as ArrowSchema;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::decode::Reader;
use crate::dtd::RecordId;
use crate::io::Output;

use super::model::Table;
use super::{ParquetError, ParquetOptions, ROW_GROUP_BYTES};

pub(super) struct TableWriter {
    path: PathBuf,
    schema: Arc<ArrowSchema>,
    writer: ArrowWriter<Output>,
}

impl TableWriter {
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

    pub(super) fn write(&mut self, t: &mut Table) -> Result<(), ParquetError> {
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
    pub(super) fn finish(mut self, t: &mut Table) -> Result<(PathBuf, Output), ParquetError> {
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

pub(super) fn write_error(path: &Path, e: parquet::errors::ParquetError) -> ParquetError {
    // An I/O error from the output keeps its message (it names the file and tells a full disk).
    ParquetError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}
