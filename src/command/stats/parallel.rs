//! `mtf stats -j N` on the whole trace, where the seek index's checkpoints carry analysis states
//! (docs/format.md §15.4): each chunk between two checkpoints with a state is decoded and
//! analysed on its own thread, resumed from the state where it starts, and the chunks' figures
//! are joined in trace order into those of one pass (`ChunkStats::absorb`).

// Design: the join is exact (docs/stats.md, "On several threads"), and checked where it is
// cheap: each chunk's start (data records, clock, live bytes and blocks, sites and leaves met)
// must be where the chunks before it end, so a state that differs there refuses the join; the
// whole trace is then read on one thread, after a warning naming the checkpoint. (The full
// comparison of every state with a pass is `mtf index --check`, and `check -j N` compares the
// interpreters.) Memory is that of the file of states (read whole) and of the chunks in
// flight (one per thread at most): their live sets, as `check -j N`. A trace with problems has
// no states (`mtf index` makes none); should a chunk meet one (the trace changed since), the run
// falls back as well, so that faults are reported as one pass reports them.

use std::path::Path;

use crate::analysis::stats::{compute_chunk, ChunkStats, Stats, StatsScope};
use crate::decode::{
    Event, EventStream, Reader, Records, ScanStop, ScanTimes, ScanValues, Scanned,
};
use crate::index::{Index, IndexError};
use crate::parallel::{self, Chunk};
use crate::Opened;

use super::super::resume;
use super::super::seek::SeekOptions;
use super::super::state_chunks::{chunks, Part0, CHUNKS_PER_THREAD, STATS_STATE_BYTES_PER_RECORD};
use super::super::Warning;

/// A chunk's decode, stopped where the next chunk starts.
struct Bounded<'c, 'r> {
    records: Records<'r>,
    chunk: &'c Chunk,
}

impl EventStream for Bounded<'_, '_> {
    fn next_event(&mut self) -> Option<Event<'_>> {
        if self.chunk.ended(&self.records) {
            return None;
        }
        self.records.next_event()
    }

    fn dropped_problems(&self) -> u64 {
        self.records.dropped_problems()
    }

    fn scan_values(
        &mut self,
        per_type: &mut [u64],
        stop: ScanStop,
        values: &mut ScanValues,
        times: Option<&mut ScanTimes>,
        each: &mut dyn FnMut(Scanned<'_>) -> bool,
    ) -> u64 {
        if self.chunk.ended(&self.records) {
            return 0;
        }
        // Not past the record where the next chunk starts.
        let stop = ScanStop {
            records: stop.records.min(self.chunk.until.unwrap_or(u64::MAX)),
            ..stop
        };
        EventStream::scan_values(&mut self.records, per_type, stop, values, times, each)
    }
}

fn work<'o>(
    r: &Reader<'o>,
    o: &'o Opened,
    chunks: &[Part0<'_>],
    k: usize,
    scope: StatsScope,
) -> Option<ChunkStats<'o>> {
    let (chunk, blob) = &chunks[k];
    let mut records = chunk.records(r);
    while chunk.before(&records) {
        records.next()?;
    }
    let mut bounded = Bounded { records, chunk };
    let part = compute_chunk(
        o.schema(),
        &mut bounded,
        *blob,
        scope,
        k + 1 == chunks.len(),
    );
    part.ok().filter(|p| p.problems() == 0)
}

/// The statistics of the whole trace `o` (opened from `trace`, indexed by `idx`) on `threads`
/// threads from the analysis states beside the index; `None` when they cannot be used (no state
/// file, one of another index or trace: a warning; a state that differs from where the chunks
/// before end: a warning naming its checkpoint).
pub(super) fn run(
    o: &Opened,
    trace: &Path,
    seek: &SeekOptions,
    idx: &Index,
    threads: usize,
    scope: StatsScope,
    warn: &mut dyn FnMut(Warning),
) -> Option<Stats> {
    let reader = o.reader();
    let idx_path = seek.index_path(trace)?;
    // The file's checksum is computed below, while the workers read their first chunks.
    let state = resume::load(&idx_path, idx, &reader, false, warn)?;
    let Some(chunks) = chunks(
        &reader,
        idx,
        &state,
        Some(threads * CHUNKS_PER_THREAD),
        STATS_STATE_BYTES_PER_RECORD,
    ) else {
        if let Err(e) = state.verify_sum() {
            warn(Warning::IndexSkipped(e));
        }
        return None;
    };
    let ids: Vec<usize> = (0..chunks.len()).collect();
    let chunks = &chunks;
    // Design: the sections that are tables are found once (a pre-pass over the metadata of the
    // whole trace where the DTD alone does not tell) and given to each thread's reader; each
    // reader finding them itself read the trace's metadata once more per thread.
    let tables = reader.tables_found();
    let mut damaged = None;
    let joined = parallel::ordered(
        threads,
        &ids,
        || o.reader().knowing_tables(tables),
        |r, &k| work(r, o, chunks, k, scope),
        |outputs| -> Result<Option<ChunkStats<'_>>, (usize, &'static str)> {
            if let Err(e) = state.verify_sum() {
                damaged = Some(e);
                return Ok(None);
            }
            let mut acc: Option<ChunkStats<'_>> = None;
            for (k, (chunk, _)) in chunks.iter().enumerate() {
                parallel::release_behind(o, &reader, chunk);
                let Some(part) = outputs.next() else { break };
                let Some(part) = part else { return Ok(None) };
                match &mut acc {
                    None => acc = Some(part),
                    Some(a) => a.absorb(part).map_err(|what| (k, what))?,
                }
            }
            Ok(acc)
        },
    );
    if let Some(e) = damaged {
        warn(Warning::IndexSkipped(e));
        return None;
    }
    match joined {
        Ok(acc) => acc?.finish(o.schema()),
        Err((k, what)) => {
            let record = chunks[k].0.first_index.unwrap_or(0);
            let checkpoint = idx
                .entries()
                .iter()
                .position(|e| e.record == record)
                .unwrap_or(0);
            warn(Warning::IndexSkipped(IndexError::Mismatch {
                name: state.name().to_string(),
                checkpoint,
                record,
                what: what.into(),
            }));
            None
        }
    }
}
