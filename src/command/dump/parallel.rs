//! A dump on several threads: chunks formatted by the workers, written by the calling thread in
//! trace order, each problem after the records before it, as one thread gives them. A chunk the
//! plan keeps inline (a large region) is decoded and formatted by the calling thread.

use std::io::{self, Write};

use crate::decode::{Event, Reader, Records};
use crate::parallel::{self, Chunk, ChunkPlan};
use crate::Opened;

use super::{DumpOptions, DumpSink, Filter, Found, Printers};

/// What a worker makes of a chunk: the dump's text, and the problems found with where in the
/// text they were found.
struct Formatted {
    text: Vec<u8>,
    problems: Vec<(usize, Found)>,
    records: u64,
    end: u64,
}

/// A dump on several threads.
pub(super) struct Run<'a, 'o> {
    pub o: &'o Opened,
    pub reader: &'a Reader<'o>,
    pub options: &'a DumpOptions,
    pub filter: &'a Filter,
    pub plan: &'a ChunkPlan,
    pub threads: usize,
}

/// Decode `chunk` from `records` (standing at its start), each record that passes `filter`
/// written to `w`, each problem given to `problem` with `w`. The end of the last record.
fn chunk_pass<W: Write>(
    records: &mut Records<'_>,
    chunk: &Chunk,
    filter: &Filter,
    printers: &mut Printers,
    w: &mut W,
    mut problem: impl FnMut(&mut W, Found) -> io::Result<()>,
    mut progress: impl FnMut(u64, u64),
) -> io::Result<u64> {
    let mut end = 0;
    while !chunk.ended(records) {
        let Some(e) = records.next() else { break };
        let found = match e {
            Event::Record(view) => {
                end = view.offset() + view.len();
                progress(view.offset(), view.index() + 1);
                if filter.wants(&view) {
                    printers.record(w, &view)?;
                }
                continue;
            }
            Event::Problem(x) => Found::Problem(x),
            Event::Damage(x) => Found::Damage(x),
        };
        problem(w, found)?;
    }
    Ok(end)
}

/// Step `records` to the first record of `chunk`.
fn to_start(records: &mut Records<'_>, chunk: &Chunk) {
    while chunk.before(records) {
        if records.next().is_none() {
            break;
        }
    }
}

/// Where the outputs stand as they are written in order.
struct Position {
    /// The index of the next chunk's first record, as far as it is known.
    first: u64,
    /// Whether `first` is exact (no damage skipped records before).
    exact: bool,
    invalid: bool,
}

/// Give `found` to the sink, its record index shifted by `first` (dropped when not `exact`),
/// after flushing what was written before it. Whether it was damage.
fn report<W: Write>(
    w: &mut W,
    sink: &mut dyn DumpSink,
    mut found: Found,
    first: u64,
    exact: bool,
) -> io::Result<bool> {
    w.flush()?;
    let at = match &mut found {
        Found::Problem(p) => &mut p.at,
        Found::Damage(d) => &mut d.at,
    };
    at.record_index = at.record_index.filter(|_| exact).map(|i| i + first);
    sink.problem(found.diagnostic());
    Ok(matches!(found, Found::Damage(_)))
}

/// The worker's part: format `chunk` (not one kept inline).
fn work(
    filter: &Filter,
    r: &Reader<'_>,
    p: &mut Printers,
    chunk: &Chunk,
) -> io::Result<Option<Formatted>> {
    if chunk.inline {
        return Ok(None);
    }
    let mut out = Formatted {
        text: Vec::with_capacity(chunk.bytes as usize * 4),
        problems: Vec::new(),
        records: 0,
        end: 0,
    };
    let mut records = chunk.records(r);
    to_start(&mut records, chunk);
    let start = records.count();
    let mut problems = Vec::new();
    out.end = chunk_pass(
        &mut records,
        chunk,
        filter,
        p,
        &mut out.text,
        |text, found| {
            problems.push((text.len(), found));
            Ok(())
        },
        |_, _| {},
    )?;
    out.problems = problems;
    out.records = records.count() - start;
    Ok(Some(out))
}

impl Run<'_, '_> {
    /// Write a worker's output: its text, each problem where it was found.
    fn write<W: Write>(
        &self,
        at: &mut Position,
        chunk: &Chunk,
        out: Formatted,
        w: &mut W,
        sink: &mut dyn DumpSink,
    ) -> io::Result<()> {
        // A chunk from a checkpoint counts records as the whole trace does.
        if let Some(f) = chunk.first_index {
            at.first = f;
        }
        let (shift, keep) = match chunk.first_index {
            Some(_) => (0, true),
            None => (at.first, at.exact),
        };
        let mut written = 0;
        let mut damaged = false;
        for (pos, found) in out.problems {
            w.write_all(&out.text[written..pos])?;
            written = pos;
            at.invalid = true;
            damaged |= report(w, sink, found, shift, keep)?;
        }
        w.write_all(&out.text[written..])?;
        at.first += out.records;
        at.exact &= !damaged;
        sink.progress(out.end, at.first);
        Ok(())
    }

    /// Decode and write a chunk kept inline, here.
    fn inline<W: Write>(
        &self,
        at: &mut Position,
        chunk: &Chunk,
        mine: &mut Printers,
        w: &mut W,
        sink: &mut dyn DumpSink,
    ) -> io::Result<()> {
        let mut records = chunk.records(self.reader);
        to_start(&mut records, chunk);
        if chunk.first_index.is_none() {
            records.count_from(at.first, at.exact);
        }
        // Every chunk before it is written, the workers are after it.
        records.release_pages(true);
        let mut invalid = false;
        let sink_cell = std::cell::RefCell::new(&mut *sink);
        chunk_pass(
            &mut records,
            chunk,
            self.filter,
            mine,
            w,
            |w, found| {
                invalid = true;
                report(w, *sink_cell.borrow_mut(), found, 0, true).map(|_| ())
            },
            |offset, n| sink_cell.borrow_mut().progress(offset, n),
        )?;
        at.invalid |= invalid;
        at.first = records.count();
        at.exact = records.is_exact();
        Ok(())
    }

    /// Dump on the threads. Whether a problem was found.
    pub(super) fn dump<W: Write>(&self, w: &mut W, sink: &mut dyn DumpSink) -> io::Result<bool> {
        let (o, options, filter) = (self.o, self.options, self.filter);
        let init = || {
            let r = o.reader();
            // The options were checked when the calling thread's printers were made.
            let p = Printers::new(&r, options, filter, false).ok();
            (r, p)
        };
        let work = |(r, p): &mut (Reader<'_>, Option<Printers>), chunk: &Chunk| match p {
            Some(p) => work(filter, r, p, chunk),
            None => Ok(None),
        };
        let mut mine = Printers::new(self.reader, self.options, self.filter, false)
            .map_err(io::Error::other)?;
        parallel::ordered(self.threads, &self.plan.chunks, init, work, |outputs| {
            let mut at = Position {
                first: 0,
                exact: true,
                invalid: false,
            };
            for chunk in &self.plan.chunks {
                parallel::release_behind(self.o, self.reader, chunk);
                match outputs.next() {
                    Some(Ok(Some(out))) => self.write(&mut at, chunk, out, w, sink)?,
                    Some(Ok(None)) => self.inline(&mut at, chunk, &mut mine, w, sink)?,
                    Some(Err(e)) => return Err(e),
                    None => break,
                }
            }
            let count = self.reader.record_count_problem(at.first, at.exact);
            if let Some(p) = count.filter(|_| !self.plan.counted) {
                at.invalid = true;
                report(w, sink, Found::Problem(Box::new(p)), 0, true)?;
            }
            Ok(at.invalid)
        })
    }
}
