//! A trace cut for several threads at the seek index's checkpoints that carry an analysis state
//! (docs/format.md §15.4): the chunks of `mtf check -j N`'s semantic pass and of
//! `mtf stats -j N`, each resumed from the state where it starts.

use crate::decode::Reader;
use crate::index::analysis::AnalysisState;
use crate::index::Index;
use crate::parallel::{Chunk, From};

/// Chunks per thread at most: each chunk resumed costs its state's restore (the live set) and a
/// join of figures, so one per thread, of about equal bytes.
// Design: measured by instructions (cachegrind) on the four generated shapes at 1 M records,
// `stats -j 2` cost 1.07–1.22× `-j 1` with 2 chunks per thread (three restores) and 1.02–1.05×
// with 1 (one restore); `check -j 2` 1.06–1.20× and 1.02–1.06×. With one chunk per thread a
// thread does not take a second chunk when the other's is slow, so the cuts are put at the
// checkpoints nearest equal shares of the bytes, not at the first one past each share.
pub(crate) const CHUNKS_PER_THREAD: usize = 1;

/// A chunk, and the state it starts from (none for the first).
pub(crate) type Part0<'a> = (Chunk, Option<&'a [u8]>);

/// The chunks: from the start, then from each checkpoint with a state (or, with `most`, from
/// as few of them as cut the trace into at most that many chunks of about the same bytes: the
/// checkpoint nearest each share); with the state each starts from.
pub(crate) fn chunks<'a>(
    reader: &Reader<'_>,
    idx: &Index,
    state: &'a AnalysisState,
    most: Option<usize>,
) -> Option<Vec<Part0<'a>>> {
    let entries = idx.entries();
    let total = reader.bytes().len() as u64;
    // The checkpoints a chunk may start from: with a state, after a data record (the whole
    // trace's slice opens in the first chunk), one per record.
    let mut starts: Vec<(usize, &[u8])> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let Some(blob) = state.entry(i) else { continue };
        if crate::analysis::stats::state_head(blob).map_or(true, |h| h.data == 0) {
            continue;
        }
        if starts
            .last()
            .is_some_and(|&(j, _)| entries[j].record >= e.record)
        {
            continue;
        }
        starts.push((i, blob));
    }
    if let Some(m) = most {
        starts = nearest_shares(&starts, |&(i, _)| entries[i].offset, total, m);
    }
    let mut cuts: Vec<(From, u64, u64, Option<&[u8]>)> = vec![(From::Start, 0, 0, None)];
    for (i, blob) in starts {
        let e = &entries[i];
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

/// Of `starts` (in increasing byte offset `at`), those nearest the `m - 1` cuts that make `m`
/// chunks of equal bytes of a trace of `total` bytes: each once, in order.
fn nearest_shares<T: Copy>(starts: &[T], at: impl Fn(&T) -> u64, total: u64, m: usize) -> Vec<T> {
    let mut out = Vec::new();
    // The first start not yet taken.
    let mut next = 0;
    for j in 1..m.max(1) {
        let target = (u128::from(total) * j as u128 / m as u128) as u64;
        let Some(rest) = starts.get(next..) else {
            break;
        };
        let Some(k) = (0..rest.len()).min_by_key(|&k| at(&rest[k]).abs_diff(target)) else {
            break;
        };
        out.push(rest[k]);
        next += k + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::nearest_shares;

    #[test]
    fn the_cuts_are_the_starts_nearest_equal_shares() {
        let at = |x: &u64| *x;
        let starts = [10, 40, 55, 90];
        // Two chunks of 100 bytes: the start nearest 50.
        assert_eq!(nearest_shares(&starts, at, 100, 2), vec![55]);
        // Four: nearest 25 (10 and 40 are as near: the first), 50, 75.
        assert_eq!(nearest_shares(&starts, at, 100, 4), vec![10, 55, 90]);
        // More chunks than starts: each start once, in order.
        assert_eq!(nearest_shares(&starts, at, 100, 10), vec![10, 40, 55, 90]);
        assert_eq!(nearest_shares(&starts, at, 100, 1), Vec::<u64>::new());
        assert_eq!(nearest_shares(&[], at, 100, 2), Vec::<u64>::new());
    }
}
