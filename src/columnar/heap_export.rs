//! The heap tables of an export: one pass over the trace's events feeding a [`HeapRows`] per
//! table asked for, each batch handed to its file as it is made.

use std::path::Path;

use crate::decode::{Event, EventPasses, Reader};
use crate::dtd::RecordId;

use super::heap::{HeapOptions, HeapRows, HeapTable};
use super::writer::TableWriter;
use super::{ParquetError, ParquetOptions, ParquetReport, Progress, TableReport, PROGRESS_EVERY};

/// Writes `tables` into `dir` (the staged folder), reading the events once; adds the files to
/// `report`. Every file is written out before the first is committed.
pub(super) fn write_heap_in(
    reader: &Reader<'_>,
    dir: &Path,
    tables: &[HeapTable],
    opts: &ParquetOptions,
    progress: &mut dyn FnMut(Progress),
    events: &mut EventPasses<'_>,
    report: &mut ParquetReport,
) -> Result<(), ParquetError> {
    let total = reader.bytes().len() as u64;
    let mut parts = Vec::new();
    for &t in tables {
        let rows = HeapRows::new(
            reader.schema(),
            t,
            HeapOptions {
                batch_rows: opts.batch_rows,
                records: 0..u64::MAX,
                refuse_problems: opts.refuse_problems,
            },
        )?;
        let path = dir.join(format!("{}.{}", t.name(), opts.format.extension()));
        let w = TableWriter::create_heap(reader, t, path, opts)?;
        parts.push((rows, w, 0u64));
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
                    parts.iter_mut().try_for_each(|(rows, w, written)| {
                        rows.record(&view)?;
                        drain(rows, w, written)
                    })
                }
                Event::Problem(p) => {
                    for (rows, _, _) in &mut parts {
                        rows.problem(|| p.to_string());
                    }
                    Ok(())
                }
                Event::Damage(d) => {
                    for (rows, _, _) in &mut parts {
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
    for (mut rows, mut w, mut written) in parts {
        rows.finish()?;
        drain(&mut rows, &mut w, &mut written)?;
        report.heap = Some(rows.reading().clone());
        done.push((rows.table(), w.close()?, written));
    }
    for (table, (path, out), rows) in done {
        out.commit()?;
        report.tables.push(TableReport {
            path,
            record: RecordId::MAX,
            heap: Some(table),
            rows,
        });
    }
    progress(Progress {
        pass: 3,
        position: total,
        total,
        records: n,
    });
    Ok(())
}

/// Hands the batches made to the file.
fn drain(
    rows: &mut HeapRows<'_>,
    w: &mut TableWriter,
    written: &mut u64,
) -> Result<(), ParquetError> {
    while let Some(b) = rows.next_batch() {
        *written += b.num_rows() as u64;
        w.write_batch(&b)?;
    }
    Ok(())
}
