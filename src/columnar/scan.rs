//! The records tables of a trace as Arrow record batches, for a query engine that reads them in
//! place (`metatf::sql`): the export's column tree and batch builder (`Table`), one pass to
//! choose every column's type ([`RecordTables::observe`], the export's first pass), then the
//! batches of one record type over any run of records ([`RecordTables::batches`]), so that a
//! scan of one type builds that type's values only and a scan may start at a checkpoint.

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, SchemaRef};

use crate::decode::{Event, FieldWalk, Reader, Records};
use crate::dtd::RecordId;

use super::model::Table;
use super::{exported, BATCH_BYTES};

/// Every records table's columns, their types chosen from the values of the whole trace (as
/// `mtf export` chooses them: the same schemas as the exported files).
#[derive(Debug, Clone)]
pub struct RecordTables {
    /// Per record type (by id): its columns with their types, no rows; `None` for a type that
    /// is not a table (`section`, `metadata`).
    tables: Vec<Option<Table>>,
    schemas: Vec<Option<SchemaRef>>,
    records: u64,
    problems: u64,
}

impl RecordTables {
    /// One pass over the trace: every column's type, every type's row count.
    pub fn observe(reader: &Reader<'_>) -> RecordTables {
        RecordTables::observe_where(reader, |_| true)
    }

    /// As [`RecordTables::observe`] for the one record type `record`: only its values are
    /// looked at (a caller that wants one table, such as the Python package's `Trace.table`);
    /// every other type is then not a table here.
    pub fn observe_only(reader: &Reader<'_>, record: RecordId) -> RecordTables {
        RecordTables::observe_where(reader, |id| id == record)
    }

    fn observe_where(reader: &Reader<'_>, wanted: impl Fn(RecordId) -> bool) -> RecordTables {
        let mut tables: Vec<Option<Table>> = reader
            .schema()
            .records
            .iter()
            .enumerate()
            .map(|(id, rt)| (exported(rt) && wanted(id as RecordId)).then(|| Table::new(rt)))
            .collect();
        let (mut records, mut problems) = (0u64, 0u64);
        let mut it = reader.records();
        while let Some(event) = it.next() {
            match event {
                Event::Record(view) => {
                    records += 1;
                    if let Some(t) = &mut tables[view.record_id() as usize] {
                        if !view.is_element() {
                            t.observe(&view);
                        }
                    }
                }
                Event::Problem(_) | Event::Damage(_) => problems += 1,
            }
        }
        for t in tables.iter_mut().flatten() {
            t.choose_types();
        }
        let schemas = tables
            .iter()
            .map(|t| t.as_ref().map(Table::schema))
            .collect();
        RecordTables {
            tables,
            schemas,
            records,
            problems,
        }
    }

    /// A record type's table schema (that of its exported file); `None` for `section` and
    /// `metadata`, which are not tables.
    pub fn schema(&self, record: RecordId) -> Option<SchemaRef> {
        self.schemas.get(record as usize).cloned().flatten()
    }

    /// Rows of a record type's table (its records that are not elements of tables).
    pub fn rows(&self, record: RecordId) -> u64 {
        self.tables
            .get(record as usize)
            .and_then(Option::as_ref)
            .map_or(0, |t| t.rows)
    }

    /// Records in the trace, of every type.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Records that could not be decoded, and damaged regions.
    pub fn problems(&self) -> u64 {
        self.problems
    }

    /// The rows of record type `record` among the records `records` yields, until the record
    /// of index `until` (excluded; `None`: to the end), in batches of at most `batch_rows` rows.
    /// Only this type's values are built. `None` for a type that is not a table.
    pub fn batches<'r>(
        &self,
        reader: &'r Reader<'r>,
        record: RecordId,
        records: Records<'r>,
        until: Option<u64>,
        batch_rows: usize,
    ) -> Option<RecordBatches<'r>> {
        let table = self.tables.get(record as usize)?.clone()?;
        let schema = self.schema(record)?;
        Some(RecordBatches {
            table,
            schema,
            record,
            records,
            fields: FieldWalk::new(reader),
            until,
            batch_rows: batch_rows.max(1),
            done: false,
        })
    }
}

/// The batches of one records table ([`RecordTables::batches`]).
pub struct RecordBatches<'r> {
    table: Table,
    schema: SchemaRef,
    record: RecordId,
    records: Records<'r>,
    fields: FieldWalk,
    until: Option<u64>,
    batch_rows: usize,
    done: bool,
}

impl RecordBatches<'_> {
    fn take(&mut self) -> Result<RecordBatch, ArrowError> {
        self.table
            .take_batch(&self.schema)
            .map_err(ArrowError::InvalidArgumentError)
    }
}

impl Iterator for RecordBatches<'_> {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        while let Some(event) = self.records.next() {
            let Event::Record(view) = event else { continue };
            if self.until.is_some_and(|u| view.index() >= u) {
                break;
            }
            if view.record_id() != self.record || view.is_element() {
                continue;
            }
            self.table.push(&mut self.fields, &view);
            if self.table.batch_rows >= self.batch_rows || self.table.batch_bytes >= BATCH_BYTES {
                return Some(self.take());
            }
        }
        self.done = true;
        (self.table.batch_rows > 0).then(|| self.take())
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
                let table = RecordTables::observe_only(&reader, id);
                let Some(batches) = table.batches(&reader, id, reader.records(), None, 5) else {
                    continue;
                };
                let mine = batches.collect::<Result<Vec<_>, _>>()?;
                assert!(mine.iter().all(|b| b.num_rows() <= 5));
                let rows: usize = mine.iter().map(|b| b.num_rows()).sum();
                assert_eq!(rows as u64, table.rows(id));
                let file = out.join(file_name(reader.schema(), id));
                if !file.exists() {
                    assert_eq!(rows, 0, "{}: {}", path.display(), file.display());
                    continue;
                }
                let theirs: Vec<_> =
                    ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&file)?)?
                        .build()?
                        .collect::<Result<_, _>>()?;
                let schema = table.schema(id).ok_or("no schema")?;
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
