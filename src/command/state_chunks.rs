//! A trace cut for several threads at the seek index's checkpoints that carry an analysis state
//! (docs/format.md §15.4): the chunks of `mtf check -j N`'s semantic pass and of
//! `mtf stats -j N`, each resumed from the state where it starts.

use crate::decode::Reader;
use crate::index::analysis::AnalysisState;
use crate::index::Index;
use crate::parallel::{Chunk, From};

/// Chunks per thread at most: enough for the threads to stay busy whatever a chunk's cost, few
/// enough that restoring states and joining figures stay small beside the pass.
// Design: measured by instructions (callgrind) on the generator's default 1 M trace, `stats -j 2`
// costs 1.067× `-j 1` with 2 chunks per thread and 1.127× with 4 (each chunk resumed is a
// restore of the live set and a join); 2 keep both threads busy on equal shares of the bytes.
pub(crate) const CHUNKS_PER_THREAD: usize = 2;

/// A chunk, and the state it starts from (none for the first).
pub(crate) type Part0<'a> = (Chunk, Option<&'a [u8]>);

/// The chunks: from the start, then from each checkpoint with a state (or, with `most`, from
/// as few of them as cut the trace into at most that many chunks of about the same bytes); with
/// the state each starts from.
pub(crate) fn chunks<'a>(
    reader: &Reader<'_>,
    idx: &Index,
    state: &'a AnalysisState,
    most: Option<usize>,
) -> Option<Vec<Part0<'a>>> {
    let entries = idx.entries();
    let total = reader.bytes().len() as u64;
    let mut cuts: Vec<(From, u64, u64, Option<&[u8]>)> = vec![(From::Start, 0, 0, None)];
    for (i, e) in entries.iter().enumerate() {
        let Some(blob) = state.entry(i) else { continue };
        // The first chunk holds a data record at least: the whole trace's slice opens there.
        if crate::analysis::stats::state_head(blob).map_or(true, |h| h.data == 0) {
            continue;
        }
        if cuts.last().is_some_and(|c| c.1 >= e.record) {
            continue;
        }
        // Design: each chunk resumed costs its state's restore (the live set) and a join, so
        // where the checkpoints are many, a chunk starts only once the one before holds its
        // share of the bytes.
        if let Some(m) = most {
            let share = u128::from(total) * cuts.len() as u128 / m.max(1) as u128;
            if cuts.len() >= m || u128::from(e.offset) < share {
                continue;
            }
        }
        idx.resume_at(reader, i).ok()?;
        let cp = idx.checkpoint(i, reader.schema()).ok()?;
        cuts.push((
            From::Checkpoint(Box::new(cp)),
            e.record,
            e.offset,
            Some(blob),
        ));
    }
    if cuts.len() < 2 {
        return None;
    }
    let mut out = Vec::with_capacity(cuts.len());
    let n = cuts.len();
    let next: Vec<(u64, u64)> = cuts.iter().skip(1).map(|c| (c.1, c.2)).collect();
    for (k, (from, first, offset, blob)) in cuts.into_iter().enumerate() {
        let (until, end) = if k + 1 < n {
            (Some(next[k].0), next[k].1)
        } else {
            (None, total)
        };
        out.push((
            Chunk {
                from,
                until,
                bytes: end.saturating_sub(offset),
                first_index: Some(first),
                inline: false,
            },
            blob,
        ));
    }
    Some(out)
}
