//! The two passes of an export: pass 1 shapes every record type's columns and finds their
//! types, pass 2 writes the rows as they come, batch by batch; then every file is finished
//! before any is put in place.

use std::path::{Path, PathBuf};

use crate::decode::{Event, EventPasses, Reader};
use crate::dtd::RecordId;
use crate::io::IoError;

use super::model::Table;
use super::parts::{Parts, Target};
use super::writer::TableWriter;
use super::{
    exported, file_name_as, ParquetError, ParquetOptions, ParquetReport, Progress, TableReport,
    BATCH_BYTES, PROGRESS_EVERY,
};

/// Where the export stands, for [`Progress`].
struct Passes<'p> {
    progress: &'p mut dyn FnMut(Progress),
    total: u64,
}

impl Passes<'_> {
    /// Reports `records` records done of pass `pass` at `position`, every
    /// [`PROGRESS_EVERY`] records, or always when `now`.
    fn report(&mut self, pass: u8, position: u64, records: u64, now: bool) {
        if now || records.is_multiple_of(PROGRESS_EVERY) {
            (self.progress)(Progress {
                pass,
                position,
                total: self.total,
                records,
            });
        }
    }
}

/// Both passes into `dir` (the staged folder).
pub(super) fn write_parquet_in(
    reader: &Reader<'_>,
    dir: &Path,
    opts: &ParquetOptions,
    parts: Option<&Parts>,
    progress: &mut dyn FnMut(Progress),
    events: &mut EventPasses<'_>,
) -> Result<ParquetReport, ParquetError> {
    let total = reader.bytes().len() as u64;
    let mut passes = Passes { progress, total };
    let mut report = ParquetReport::default();
    let mut tables = observe(reader, &mut passes, events, &mut report);
    if opts.refuse_problems && report.problems > 0 {
        return Err(ParquetError::Damaged {
            problems: report.problems,
            first: report.messages.first().cloned().unwrap_or_default(),
        });
    }
    passes.report(1, total, report.records, true);
    let mut writers = create_writers(reader, dir, opts, parts.is_some(), &mut tables)?;
    let n = write_rows(
        reader,
        Target { dir, parts },
        &mut passes,
        events,
        opts,
        &mut tables,
        &mut writers,
    )?;
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
            path: match parts {
                // The table's folder of parts.
                Some(_) => dir.join(table_stem(reader, id as RecordId, opts)),
                None => path,
            },
            record: id as RecordId,
            heap: None,
            rows: tables[id].as_ref().map_or(0, |t| t.rows),
        });
    }
    passes.report(2, total, n, true);
    Ok(report)
}

/// Pass 1: the shape and value range of every column; the records and problems counted.
fn observe(
    reader: &Reader<'_>,
    passes: &mut Passes<'_>,
    events: &mut EventPasses<'_>,
    report: &mut ParquetReport,
) -> Vec<Option<Table>> {
    let mut tables: Vec<Option<Table>> = reader
        .schema()
        .records
        .iter()
        .map(|rt| exported(rt).then(|| Table::new(rt)))
        .collect();
    let mut n = 0u64;
    events(&mut |records| {
        while let Some(event) = records.next_event() {
            let message = match event {
                Event::Record(view) => {
                    n += 1;
                    passes.report(1, view.offset(), n, false);
                    // Elements of tables (split streams, string tables) are the values of the
                    // fields that refer to them, not rows of their own.
                    if let Some(t) = &mut tables[view.record_id() as usize] {
                        if !view.is_element() {
                            t.observe(&view);
                        }
                    }
                    continue;
                }
                Event::Problem(p) => p.to_string(),
                Event::Damage(d) => d.to_string(),
            };
            report.problems += 1;
            if report.messages.len() < 100 {
                report.messages.push(message);
            }
        }
    });
    report.records = n;
    tables
}

/// The files: only for record types that occur.
fn create_writers(
    reader: &Reader<'_>,
    dir: &Path,
    opts: &ParquetOptions,
    partitioned: bool,
    tables: &mut [Option<Table>],
) -> Result<Vec<Option<TableWriter>>, ParquetError> {
    std::fs::create_dir_all(dir).map_err(|source| IoError::Create {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut writers = Vec::with_capacity(tables.len());
    for (id, t) in tables.iter_mut().enumerate() {
        match t {
            // Partitioned: a part's file is made when its first row comes (`write_rows`).
            Some(t) if t.rows > 0 && !partitioned => {
                let id = id as RecordId;
                let path: PathBuf = dir.join(file_name_as(reader.schema(), id, opts.format));
                writers.push(Some(TableWriter::create(reader, t, id, path, opts)?));
            }
            _ => writers.push(None),
        }
    }
    Ok(writers)
}

/// A record type's file name without its extension: the folder of its parts.
fn table_stem(reader: &Reader<'_>, id: RecordId, opts: &ParquetOptions) -> String {
    let name = file_name_as(reader.schema(), id, opts.format);
    let ext = opts.format.extension();
    name.strip_suffix(&format!(".{ext}"))
        .unwrap_or(&name)
        .to_string()
}

/// The file of a table's part: `DIR/TABLE/part=K/data.EXT` (Hive's layout; `folder` is
/// `part=K`, or `time_bucket=S`), its folder made.
pub(super) fn part_path(
    dir: &Path,
    stem: &str,
    folder: &str,
    opts: &ParquetOptions,
) -> Result<PathBuf, ParquetError> {
    let folder = dir.join(stem).join(folder);
    std::fs::create_dir_all(&folder).map_err(|source| IoError::Create {
        path: folder.clone(),
        source,
    })?;
    Ok(folder.join(format!("data.{}", opts.format.extension())))
}

/// Pass 2: the values, handed to the writers a batch at a time; the records seen.
fn write_rows(
    reader: &Reader<'_>,
    to: Target<'_>,
    passes: &mut Passes<'_>,
    events: &mut EventPasses<'_>,
    opts: &ParquetOptions,
    tables: &mut [Option<Table>],
    writers: &mut [Option<TableWriter>],
) -> Result<u64, ParquetError> {
    let mut fields = crate::decode::FieldWalk::new(reader);
    let mut n = 0u64;
    let mut failed = None;
    // Partitioned: the data records before the current one, and each type's current part.
    let mut data = 0u64;
    let mut parts: Vec<Option<u64>> = vec![None; tables.len()];
    events(&mut |records| {
        while let Some(event) = records.next_event() {
            let Event::Record(view) = event else { continue };
            n += 1;
            passes.report(2, view.offset(), n, false);
            let id = view.record_id() as usize;
            let position = data;
            if view.is_data() {
                data += 1;
            }
            if view.is_element() {
                continue;
            }
            if let (Some(cut), Some(t)) = (to.parts, &mut tables[id]) {
                let part = cut.key(position);
                if parts[id] != Some(part) {
                    let next = (|| {
                        if let Some(w) = writers[id].take() {
                            let (_, out) = w.finish(t)?;
                            out.commit()?;
                        }
                        let stem = table_stem(reader, id as RecordId, opts);
                        let path = part_path(to.dir, &stem, &cut.folder(part), opts)?;
                        TableWriter::create(reader, t, id as RecordId, path, opts)
                    })();
                    match next {
                        Ok(w) => writers[id] = Some(w),
                        Err(e) => {
                            failed = Some(e);
                            return;
                        }
                    }
                    parts[id] = Some(part);
                }
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
    match failed {
        Some(e) => Err(e),
        None => Ok(n),
    }
}
