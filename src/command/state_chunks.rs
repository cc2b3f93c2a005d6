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
// thread does not take a second chunk when the other's is slow, so the cuts are put where the
// chunks' work is most even ([`balanced`]), not at the first checkpoint past each share.
pub(crate) const CHUNKS_PER_THREAD: usize = 1;

/// How a chunk's work is estimated ([`balanced`]): its records, and its state's restore, one
/// record's worth per this many bytes of the state.
// Design: measured by instructions per thread (callgrind) of `-j 2` on the four generated
// shapes at 1 M records: a record cost `stats` 1,340–2,100 instructions and a state's byte
// 67–103 to restore, about a twentieth of a record on every shape (per byte of trace, a
// record's share varied 2.7-fold across the shapes, so bytes are the worse measure); `check`,
// which restores the live blocks alone, about 20 instructions a byte against 875–1,100 a
// record: a forty-fifth.
pub(crate) const STATS_STATE_BYTES_PER_RECORD: u64 = 20;
pub(crate) const CHECK_STATE_BYTES_PER_RECORD: u64 = 45;

/// Most checkpoints with a state [`balanced`] weighs against each other; past this many the
/// cuts are those nearest equal shares of the records (its cost grows with their square).
const MOST_WEIGHED: usize = 1024;

/// A chunk, and the state it starts from (none for the first).
pub(crate) type Part0<'a> = (Chunk, Option<&'a [u8]>);

/// The chunks: from the start, then from each checkpoint with a state (or, with `most`, from
/// those that cut the trace into at most that many chunks, and two at least, of the most even
/// work: [`balanced`], a state's restore weighed at one record per `per_record` of its bytes);
/// with the state each starts from.
pub(crate) fn chunks<'a>(
    reader: &Reader<'_>,
    idx: &Index,
    state: &'a AnalysisState,
    most: Option<usize>,
    per_record: u64,
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
        // The records of the trace, estimated from the last checkpoint's and its bytes on at
        // the density before it (the index holds no count of the records after it).
        let total_records = entries.last().map_or(0, |e| {
            let after = total.saturating_sub(e.offset);
            let rate = u128::from(e.record) * u128::from(after) / u128::from(e.offset.max(1));
            e.record
                .saturating_add(u64::try_from(rate).unwrap_or(u64::MAX))
        });
        let weighed: Vec<(u64, u64)> = starts
            .iter()
            .map(|&(i, blob)| (entries[i].record, blob.len() as u64 / per_record.max(1)))
            .collect();
        starts = balanced(&weighed, total_records, m)
            .into_iter()
            .filter_map(|k| starts.get(k).copied())
            .collect();
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

/// Of `starts` (each a checkpoint's record index, increasing, and the cost of resuming there in
/// records), the indices of those that cut a trace of `total` records into at most `m` chunks
/// (two at least, where `m` and `starts` allow) whose largest work is least: a chunk's work is
/// its records, plus its start's cost for all but the first. Ties go to fewer chunks, then to
/// the earlier cuts. With more than `starts` chunks allowed, every start is a cut.
fn balanced(starts: &[(u64, u64)], total: u64, m: usize) -> Vec<usize> {
    let n = starts.len();
    if m < 2 || n == 0 {
        return Vec::new();
    }
    // A chunk per thread at every state (each then verified on its way).
    if n < m {
        return (0..n).collect();
    }
    if n > MOST_WEIGHED {
        return nearest_shares(starts, total, m);
    }
    let work = |from: Option<usize>, to: u64| match from {
        None => to,
        Some(j) => to.saturating_sub(starts[j].0).saturating_add(starts[j].1),
    };
    // `best[i]`: the least largest work of the chunks so far (`k` of them, ending where
    // `starts[i]` starts the next), and `from[k][i]` the cut before `starts[i]` that gives it.
    let mut best: Vec<u64> = (0..n).map(|i| work(None, starts[i].0)).collect();
    let mut from: Vec<Vec<Option<usize>>> = vec![vec![None; n]];
    let mut answer: Option<(u64, usize, usize)> = None;
    for k in 1..m.min(n + 1) {
        // `k` cuts, the last at `starts[i]`: the chunk from it runs to the end.
        for (i, &b) in best.iter().enumerate() {
            let whole = b.max(work(Some(i), total));
            if answer.is_none_or(|(a, _, _)| whole < a) {
                answer = Some((whole, k, i));
            }
        }
        if k + 1 >= m.min(n + 1) {
            break;
        }
        let mut next = vec![u64::MAX; n];
        let mut came = vec![None; n];
        for i in 0..n {
            for (j, &b) in best.iter().enumerate().take(i) {
                let w = b.max(work(Some(j), starts[i].0));
                if w < next[i] {
                    next[i] = w;
                    came[i] = Some(j);
                }
            }
        }
        best = next;
        from.push(came);
    }
    let Some((_, k, last)) = answer else {
        return Vec::new();
    };
    let mut cuts = vec![last];
    let mut at = last;
    for level in (1..k).rev() {
        match from[level][at] {
            Some(j) => {
                cuts.push(j);
                at = j;
            }
            None => break,
        }
    }
    cuts.reverse();
    cuts
}

/// Of `starts` (as [`balanced`] takes them), the indices of those nearest the `m - 1` cuts that
/// make `m` chunks of equal records of a trace of `total` records: each once, in order.
fn nearest_shares(starts: &[(u64, u64)], total: u64, m: usize) -> Vec<usize> {
    let mut out = Vec::new();
    // The first start not yet taken.
    let mut next = 0;
    for j in 1..m.max(1) {
        let target = (u128::from(total) * j as u128 / m as u128) as u64;
        let Some(k) = (next..starts.len()).min_by_key(|&k| starts[k].0.abs_diff(target)) else {
            break;
        };
        out.push(k);
        next = k + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{balanced, nearest_shares};

    /// The largest work of the chunks cut at `cuts` (indices into `starts`), as [`balanced`]
    /// counts it.
    fn largest(starts: &[(u64, u64)], total: u64, cuts: &[usize]) -> u64 {
        let mut from: Option<usize> = None;
        let mut most = 0;
        for &end in cuts
            .iter()
            .map(|&k| &starts[k].0)
            .chain(std::iter::once(&total))
        {
            let w = match from {
                None => end,
                Some(j) => end - starts[j].0 + starts[j].1,
            };
            most = most.max(w);
            from = cuts.iter().copied().find(|&k| starts[k].0 == end);
        }
        most
    }

    /// Every choice of 1 to `m - 1` cuts among `starts`: the least largest work.
    fn brute(starts: &[(u64, u64)], total: u64, m: usize) -> u64 {
        let n = starts.len();
        (1u32..1 << n)
            .map(|mask| (0..n).filter(|&k| mask & 1 << k != 0).collect::<Vec<_>>())
            .filter(|cuts| cuts.len() < m)
            .map(|cuts| largest(starts, total, &cuts))
            .min()
            .unwrap_or(total)
    }

    #[test]
    fn the_cuts_give_the_least_largest_work() {
        // Two chunks of 100 records, states free: the start nearest 50.
        let free = [(10, 0), (40, 0), (55, 0), (90, 0)];
        assert_eq!(balanced(&free, 100, 2), vec![2]);
        // A state that costs 12 records to restore: the later cut (55 + 0 against 45 + 12 at
        // 55 is worse than 60 against 40 + 12 at 60).
        let costly = [(10, 12), (45, 12), (60, 12), (90, 12)];
        assert_eq!(balanced(&costly, 100, 2), vec![2]);
        assert_eq!(largest(&costly, 100, &[2]), 60);
        // Fewer chunks than threads where more cannot help, and never fewer than two; every
        // start where the threads outnumber them.
        assert_eq!(balanced(&[(50, 1000)], 100, 2), vec![0]);
        let dear = [(30, 1000), (50, 0), (60, 1000)];
        assert_eq!(balanced(&dear, 100, 3), vec![1]);
        assert_eq!(balanced(&dear, 100, 4), vec![0, 1, 2]);
        assert_eq!(balanced(&free, 100, 1), Vec::<usize>::new());
        assert_eq!(balanced(&[], 100, 2), Vec::<usize>::new());
        // Against every choice of cuts, on uneven starts and costs.
        let mut x = 7u64;
        for round in 0..300 {
            let n = 1 + round % 9;
            let mut at = 0;
            let starts: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    at += 1 + (x >> 33) % 40;
                    (at, (x >> 50) % 30)
                })
                .collect();
            let total = at + 1 + (x >> 20) % 40;
            for m in 2..=n {
                let cuts = balanced(&starts, total, m);
                assert!(!cuts.is_empty() && cuts.len() < m, "{starts:?} {m}");
                assert!(cuts.windows(2).all(|w| w[0] < w[1]));
                assert_eq!(
                    largest(&starts, total, &cuts),
                    brute(&starts, total, m),
                    "{starts:?} {total} {m}"
                );
            }
        }
    }

    #[test]
    fn the_cuts_past_what_is_weighed_are_the_starts_nearest_equal_shares() {
        let starts = [(10, 0), (40, 0), (55, 0), (90, 0)];
        // Two chunks of 100 records: the start nearest 50.
        assert_eq!(nearest_shares(&starts, 100, 2), vec![2]);
        // Four: nearest 25 (10 and 40 are as near: the first), 50, 75.
        assert_eq!(nearest_shares(&starts, 100, 4), vec![0, 2, 3]);
        // More chunks than starts: each start once, in order.
        assert_eq!(nearest_shares(&starts, 100, 10), vec![0, 1, 2, 3]);
        assert_eq!(nearest_shares(&starts, 100, 1), Vec::<usize>::new());
        assert_eq!(nearest_shares(&[], 100, 2), Vec::<usize>::new());
    }
}
