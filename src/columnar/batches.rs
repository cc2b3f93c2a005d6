//! One record type's rows as Arrow record batches in memory, as `mtf export` writes them to that
//! type's file (the same columns, types and values): for a library caller that hands them on
//! without a file, such as the Python package's `Trace.table`.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let opened = metatf::open("traces/hatf-le32.mtf")?;
//! let reader = opened.reader();
//! let id = opened.schema().records.iter().position(|r| r.name == "alloc").ok_or("no alloc")?;
//! let mut table = metatf::columnar::RecordTable::observe(&reader, id as metatf::dtd::RecordId)
//!     .ok_or("not a record type with a table")?;
//! let mut rows = 0;
//! table.batches(&reader, 1024, &mut |b| {
//!     rows += b.num_rows() as u64;
//!     true
//! })?;
//! assert_eq!(rows, table.rows());
//! # Ok(())
//! # }
//! ```

// Design: the two passes of the export (the narrowest type of each column is known only after
// every value was seen) split into two calls, so that a caller learns the schema before the first
// batch and may stream the batches (a channel to another thread) with memory bounded by one
// batch; the columns are those of `model::Table`, so a table here and an exported file cannot
// differ.

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::decode::{Event, Reader};
use crate::dtd::RecordId;

use super::model::Table;
use super::{exported, file_name_as, ColumnarFormat, ParquetError, BATCH_BYTES};

/// One record type's columns, typed by a first pass over the trace ([`RecordTable::observe`]),
/// ready to give its rows as batches ([`RecordTable::batches`]).
pub struct RecordTable {
    table: Table,
    record: RecordId,
    schema: SchemaRef,
    problems: u64,
}

impl RecordTable {
    /// The first pass over `reader`'s trace for the record type `record`: its rows counted and
    /// its columns typed. `None` for a type that has no table (`section` and `metadata` records,
    /// an id out of range); a type that does not occur has a table with no rows.
    pub fn observe(reader: &Reader<'_>, record: RecordId) -> Option<RecordTable> {
        let rt = reader.schema().records.get(record as usize)?;
        if !exported(rt) {
            return None;
        }
        let mut table = Table::new(rt);
        let mut problems = 0;
        let mut records = reader.records();
        while let Some(event) = records.next() {
            match event {
                Event::Record(view) => {
                    if view.record_id() == record && !view.is_element() {
                        table.observe(&view);
                    }
                }
                Event::Problem(_) | Event::Damage(_) => problems += 1,
            }
        }
        table.choose_types();
        let schema = table.schema();
        Some(RecordTable {
            table,
            record,
            schema,
            problems,
        })
    }

    /// The Arrow schema of the batches (that of the Parquet export's file: references to
    /// strings as dictionaries).
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The rows the first pass found.
    pub fn rows(&self) -> u64 {
        self.table.rows
    }

    /// The records the first pass could not decode, and damaged regions (no rows of theirs).
    pub fn problems(&self) -> u64 {
        self.problems
    }

    /// The second pass: the rows in trace order, in batches of at most `batch_rows` rows (or
    /// fewer, when their byte strings pass 64 MiB), each given to `each`, which returns `false`
    /// to stop early.
    pub fn batches(
        &mut self,
        reader: &Reader<'_>,
        batch_rows: usize,
        each: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<(), ParquetError> {
        let batch_rows = batch_rows.max(1);
        let mut fields = crate::decode::FieldWalk::new(reader);
        let mut records = reader.records();
        while let Some(event) = records.next() {
            let Event::Record(view) = event else { continue };
            if view.record_id() != self.record || view.is_element() {
                continue;
            }
            self.table.push(&mut fields, &view);
            if (self.table.batch_rows >= batch_rows || self.table.batch_bytes >= BATCH_BYTES)
                && !each(self.take(reader)?)
            {
                return Ok(());
            }
        }
        if self.table.batch_rows > 0 {
            each(self.take(reader)?);
        }
        Ok(())
    }

    fn take(&mut self, reader: &Reader<'_>) -> Result<RecordBatch, ParquetError> {
        self.table
            .take_batch(&self.schema)
            .map_err(|message| ParquetError::Write {
                path: file_name_as(reader.schema(), self.record, ColumnarFormat::Arrow).into(),
                message,
            })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_select::concat::concat_batches;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use super::*;
    use crate::columnar::{file_name, write_parquet, ParquetOptions};

    /// Every record type of every sample trace: the batches in memory are the rows of the
    /// Parquet file the export writes, column for column (read back by the parquet crate).
    #[test]
    fn batches_are_the_rows_of_the_exported_file() -> Result<(), Box<dyn std::error::Error>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut compared = 0;
        for entry in std::fs::read_dir(root.join("traces"))? {
            let path = entry?.path();
            if path.extension().is_none_or(|e| e != "mtf") {
                continue;
            }
            let opened = crate::open(&path)?;
            let reader = opened.reader();
            let dir = tempfile::tempdir()?;
            let out = dir.path().join("pq");
            write_parquet(&reader, &out, &ParquetOptions::default(), &mut |_| {})?;
            for id in 0..reader.schema().records.len() {
                let id = id as RecordId;
                let Some(mut table) = RecordTable::observe(&reader, id) else {
                    continue;
                };
                let mut mine = Vec::new();
                table.batches(&reader, 5, &mut |b| {
                    mine.push(b);
                    true
                })?;
                assert!(mine.iter().all(|b| b.num_rows() <= 5));
                let rows: usize = mine.iter().map(|b| b.num_rows()).sum();
                assert_eq!(rows as u64, table.rows());
                let file = out.join(file_name(reader.schema(), id));
                if !file.exists() {
                    assert_eq!(rows, 0, "{}: {}", path.display(), file.display());
                    continue;
                }
                let theirs: Vec<_> =
                    ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&file)?)?
                        .build()?
                        .collect::<Result<_, _>>()?;
                let schema = table.schema();
                let a = concat_batches(&schema, &mine)?;
                let b = concat_batches(&theirs[0].schema(), &theirs)?;
                assert_eq!(a.num_rows(), b.num_rows(), "{}", file.display());
                assert_eq!(a.num_columns(), b.num_columns(), "{}", file.display());
                for (x, y) in a.columns().iter().zip(b.columns()) {
                    let x = arrow_cast_plain(x);
                    let y = arrow_cast_plain(y);
                    assert_eq!(x, y, "{}", file.display());
                }
                compared += 1;
            }
        }
        assert!(compared > 20, "{compared} tables compared");
        Ok(())
    }

    /// A column as its values' text (dictionaries unpacked, whatever the reader chose).
    fn arrow_cast_plain(a: &Arc<dyn arrow_array::Array>) -> Vec<String> {
        (0..a.len())
            .map(|i| {
                let s = a.slice(i, 1);
                format!("{:?}", ScalarText(&s))
            })
            .collect()
    }

    struct ScalarText<'a>(&'a Arc<dyn arrow_array::Array>);

    impl std::fmt::Debug for ScalarText<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            use arrow_array::cast::AsArray;
            use arrow_array::types::Int32Type;
            use arrow_array::Array;
            match self.0.as_dictionary_opt::<Int32Type>() {
                Some(d) => {
                    if d.is_null(0) {
                        write!(f, "null")
                    } else {
                        let k = d.keys().value(0) as usize;
                        write!(f, "{:?}", d.values().slice(k, 1))
                    }
                }
                None => write!(f, "{:?}", self.0),
            }
        }
    }
}
