//! The heap tables of an export: one pass over the trace's events feeding a [`HeapRows`] per
//! table asked for, each batch handed to its file as it is made.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{Array, RecordBatch};

use crate::decode::{Event, EventPasses, Reader};
use crate::dtd::RecordId;

use super::export::part_path;
use super::heap::{HeapOptions, HeapRows, HeapTable, SiteNames};
use super::parts::{Parts, Target};
use super::writer::TableWriter;
use super::{ParquetError, ParquetOptions, ParquetReport, Progress, TableReport, PROGRESS_EVERY};

/// The file (or, partitioned, the files) of one heap table.
struct Files<'o> {
    table: HeapTable,
    dir: PathBuf,
    opts: &'o ParquetOptions,
    parts: Option<&'o Parts>,
    /// The open file, and its part when partitioned.
    open: Option<(Option<u64>, TableWriter)>,
    rows: u64,
}

impl Files<'_> {
    /// Hands the batches made to the files; `end` is the position of the end of the trace,
    /// once known (the part of the blocks alive at the end).
    fn drain(
        &mut self,
        reader: &Reader<'_>,
        rows: &mut HeapRows<'_>,
        end: u64,
    ) -> Result<(), ParquetError> {
        while let Some(b) = rows.next_batch() {
            self.rows += b.num_rows() as u64;
            let Some(parts) = self.parts else {
                self.writer(reader, None)?.write_batch(&b)?;
                continue;
            };
            // Rows come in the order of their part's key: cut the batch where it changes.
            let key = b
                .column_by_name(match self.table {
                    HeapTable::Events => "record",
                    HeapTable::Blocks => "free_record",
                })
                .map(|c| c.as_primitive::<UInt64Type>().clone());
            let part_of = |i: usize| -> u64 {
                parts.key(
                    key.as_ref()
                        .map_or(end, |k| if k.is_null(i) { end } else { k.value(i) }),
                )
            };
            let mut start = 0;
            while start < b.num_rows() {
                let part = part_of(start);
                let mut stop = start + 1;
                while stop < b.num_rows() && part_of(stop) == part {
                    stop += 1;
                }
                let slice: RecordBatch = b.slice(start, stop - start);
                self.writer(reader, Some(part))?.write_batch(&slice)?;
                start = stop;
            }
        }
        Ok(())
    }

    /// The file for rows of `part`: the open one, or (partitioned) the open one closed and
    /// the part's made.
    fn writer(
        &mut self,
        reader: &Reader<'_>,
        part: Option<u64>,
    ) -> Result<&mut TableWriter, ParquetError> {
        if self.open.as_ref().is_some_and(|(p, _)| *p != part) {
            self.close()?;
        }
        if self.open.is_none() {
            let ext = self.opts.format.extension();
            let path = match part {
                Some(k) => {
                    let folder = self.parts.map_or_else(String::new, |p| p.folder(k));
                    part_path(&self.dir, self.table.name(), &folder, self.opts)?
                }
                None => self.dir.join(format!("{}.{ext}", self.table.name())),
            };
            let w = TableWriter::create_heap(reader, self.table, path, self.opts)?;
            self.open = Some((part, w));
        }
        match &mut self.open {
            Some((_, w)) => Ok(w),
            None => unreachable_writer(),
        }
    }

    /// Closes the open file into the staged folder.
    fn close(&mut self) -> Result<(), ParquetError> {
        if let Some((_, w)) = self.open.take() {
            let (_, out) = w.close()?;
            out.commit()?;
        }
        Ok(())
    }
}

/// Never: a writer was just put in place.
fn unreachable_writer<T>() -> Result<T, ParquetError> {
    Err(ParquetError::Write {
        path: PathBuf::new(),
        message: "no file open".into(),
    })
}

/// Writes `tables` into `dir` (the staged folder, put in place whole by the caller), reading
/// the events once — twice for a table whose sites are named only after rows that need the
/// names (tables at the end of the trace: an imported heaptrack trace), the second pass with
/// the names the first found, over the same files; adds the files to `report`.
pub(super) fn write_heap_in(
    reader: &Reader<'_>,
    to: Target<'_>,
    tables: &[HeapTable],
    opts: &ParquetOptions,
    progress: &mut dyn FnMut(Progress),
    events: &mut EventPasses<'_>,
    report: &mut ParquetReport,
) -> Result<(), ParquetError> {
    let first: Vec<(HeapTable, Arc<SiteNames>)> =
        tables.iter().map(|&t| (t, Arc::default())).collect();
    let mut done = write_pass(reader, to, &first, opts, progress, events)?;
    // Design: names that come late are rare (an import that routes its tables to the end);
    // a second pass costs one more reading for those traces only, where keeping the rows
    // until the end would cost memory in proportion to the trace.
    let again: Vec<(HeapTable, Arc<SiteNames>)> = done
        .iter()
        .filter(|d| !d.late.is_empty())
        .map(|d| (d.table, Arc::new(d.late.clone())))
        .collect();
    if !again.is_empty() {
        let redone = write_pass(reader, to, &again, opts, progress, events)?;
        for r in redone {
            if let Some(d) = done.iter_mut().find(|d| d.table == r.table) {
                *d = r;
            }
        }
    }
    for d in done {
        report.heap = Some(d.reading);
        report.tables.push(d.report);
    }
    Ok(())
}

/// A heap table written.
struct Done {
    table: HeapTable,
    report: TableReport,
    reading: super::heap::HeapReading,
    late: SiteNames,
}

/// One pass over the events writing `tables`, each with the site names known beforehand.
fn write_pass(
    reader: &Reader<'_>,
    to: Target<'_>,
    tables: &[(HeapTable, Arc<SiteNames>)],
    opts: &ParquetOptions,
    progress: &mut dyn FnMut(Progress),
    events: &mut EventPasses<'_>,
) -> Result<Vec<Done>, ParquetError> {
    let (dir, cut) = (to.dir, to.parts);
    let total = reader.bytes().len() as u64;
    let mut parts = Vec::new();
    for (t, names) in tables {
        let rows = HeapRows::new(
            reader.schema(),
            *t,
            HeapOptions {
                batch_rows: opts.batch_rows,
                records: 0..u64::MAX,
                refuse_problems: opts.refuse_problems,
                site_names: names.clone(),
            },
        )?;
        let files = Files {
            table: *t,
            dir: dir.to_path_buf(),
            opts,
            parts: cut,
            open: None,
            rows: 0,
        };
        parts.push((rows, files));
    }
    let mut failed: Option<ParquetError> = None;
    let mut n = 0u64;
    events(&mut |records| {
        while let Some(event) = records.next_event() {
            let r = match event {
                Event::Record(view) => {
                    n += 1;
                    if n.is_multiple_of(PROGRESS_EVERY) {
                        progress(Progress {
                            pass: 3,
                            position: view.offset(),
                            total,
                            records: n,
                        });
                    }
                    parts.iter_mut().try_for_each(|(rows, files)| {
                        rows.record(&view)?;
                        files.drain(reader, rows, u64::MAX)
                    })
                }
                Event::Problem(p) => {
                    for (rows, _) in &mut parts {
                        rows.problem(|| p.to_string());
                    }
                    Ok(())
                }
                Event::Damage(d) => {
                    for (rows, _) in &mut parts {
                        rows.problem(|| d.to_string());
                    }
                    Ok(())
                }
            };
            if let Err(e) = r {
                failed = Some(e);
                return;
            }
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let mut done = Vec::new();
    for (mut rows, mut files) in parts {
        rows.finish()?;
        let end = rows.reading().data_records;
        files.drain(reader, &mut rows, end)?;
        if files.open.is_none() && cut.is_none() {
            // An empty table is a file of no rows, not a missing file.
            files.writer(reader, None)?;
        }
        files.close()?;
        let ext = opts.format.extension();
        done.push(Done {
            table: files.table,
            report: TableReport {
                path: match cut {
                    Some(_) => dir.join(files.table.name()),
                    None => dir.join(format!("{}.{ext}", files.table.name())),
                },
                record: RecordId::MAX,
                heap: Some(files.table),
                rows: files.rows,
            },
            reading: rows.reading().clone(),
            late: rows.late_names(),
        });
    }
    progress(Progress {
        pass: 3,
        position: total,
        total,
        records: n,
    });
    Ok(done)
}
