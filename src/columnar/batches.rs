//! One record type's rows as Arrow record batches in memory, as `mtf export` writes them to that
//! type's file (the same columns, types and values): for a library caller that hands them on
//! without a file, such as the Python package's `Trace.table`.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let opened = metatf::open("traces/hatf-le32.mtf")?;
//! let reader = opened.reader();
//! let id = opened.schema().records.iter().position(|r| r.name == "alloc").unwrap_or(0);
//! let mut table = metatf::columnar::RecordTable::observe(&reader, id as metatf::dtd::RecordId)
//!     .ok_or("not a record type with rows")?;
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
