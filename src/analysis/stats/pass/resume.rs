//! A statistics pass resumed at a seek index's checkpoint from the analysis state stored there
//! (docs/format.md §15.4), and the pass that makes those states (`mtf index`).
//!
//! A state holds what a pass from the start holds when it reaches the checkpoint before its
//! slice opens: the data records before it and the clock, the input lines followed, the
//! interpreter's state, and the live part of the heap figures. Everything a slice counts
//! (flows, peaks, lifetimes, the curve, records per type) starts inside the slice, so a slice
//! that starts at or after the checkpoint has the same figures, byte for byte, whether its pass
//! started at the beginning of the trace or at the checkpoint.

use crate::decode::{Event, EventStream, Reader};
use crate::dtd::Schema;
use crate::index::analysis::{Dec, Enc, StateError};

use super::super::{Declared, Stats, StatsScope, Window};
use super::Pass;

/// The states made by [`build_states`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltStates {
    /// Per checkpoint: its state, or none where it would have been too large.
    pub entries: Vec<Option<Vec<u8>>>,
    /// The state at the end of the trace, with the whole trace's peaks and clock.
    pub end: Vec<u8>,
    /// How many checkpoints' states were written out to be weighed against the budget (the
    /// others were estimated not to fit).
    pub written: usize,
}

/// What a state says before its bulk: where it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateHead {
    /// Data records before the checkpoint (positions of `--from`/`--to` count data records).
    pub data: u64,
    /// The largest declared time of a data record before it (the clock of records without one
    /// is the latest time before them).
    pub max_time: Option<u64>,
}

/// What the end state says of the whole trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndHead {
    /// Per namespace of ids: its peak of live bytes (bytes, data record), if it has one.
    pub peaks: Vec<Option<(u128, u64)>>,
    /// Data records in the trace.
    pub data: u64,
}

impl Pass<'_, '_> {
    fn save(&self, max_time: Option<u64>, e: &mut Enc) -> bool {
        e.u64(self.data);
        e.opt(max_time);
        e.opt(self.time);
        e.opt(self.first_time);
        e.u8(self.moved as u8);
        self.lines.save_state(e);
        if !self.source.save_state(e) {
            return false;
        }
        self.heap.save_live(e);
        true
    }

    pub(super) fn restore(&mut self, d: &mut Dec<'_>) -> Result<(), StateError> {
        self.restore_placing(d, false).map(|_| ())
    }

    /// [`Pass::restore`]; with `place`, the live blocks put at the interpreter's numbers for
    /// them where it can (`HeapStats::restore_live_placing`): true when they were.
    pub(super) fn restore_placing(
        &mut self,
        d: &mut Dec<'_>,
        place: bool,
    ) -> Result<bool, StateError> {
        self.data = d.u64()?;
        let _max_time = d.opt()?;
        self.time = d.opt()?;
        self.first_time = d.opt()?;
        self.moved = d.flag()?;
        self.lines.restore_state(d)?;
        self.source.restore_state(d)?;
        for (i, seen) in self.unknown_seen.iter_mut().enumerate() {
            *seen = self.source.unknown_frees(i as u32);
        }
        self.unknown_seen_total = self.source.unknown_frees_total().unwrap_or(0);
        let source = &*self.source;
        let places_of =
            |sp: u32, key: u64, id: u64, out: &mut Vec<u32>| source.places_of(sp, key, id, out);
        let placed = self.heap.restore_live_placing(
            d,
            place.then_some(&places_of as &dyn Fn(_, _, _, &mut Vec<u32>) -> bool),
        )?;
        if !d.done() {
            return Err(d.error("bytes after the state"));
        }
        Ok(placed)
    }
}

/// One pass over `reader`'s trace from its start that takes the analysis state before each
/// record index of `at` (in increasing order; those of a seek index's checkpoints, with their
/// byte offsets) and at the end. A state is kept only where the states kept so far take no more
/// than `budget` percent of the trace bytes before the checkpoint (at 100, the file of states
/// stays smaller than the trace). `None` when the trace has problems (a damaged trace is read
/// from its start).
pub fn build_states(reader: &Reader<'_>, at: &[(u64, u64)], budget: u64) -> Option<BuiltStates> {
    build_states_within(reader, at, budget, KEPT_MAX)
}

/// What [`build_states_into`] gives a state it keeps to: the checkpoint's number and the state
/// (in increasing order of checkpoints); false stops the pass (the states could not be kept).
pub type KeepState<'k> = dyn FnMut(usize, Vec<u8>) -> bool + 'k;

/// [`build_states`], each state kept given to `keep` as soon as it is made rather than held
/// (`BuiltStates::entries` then empty): `mtf index` writes them to a scratch file. `None`
/// also where `keep` stopped the pass.
pub fn build_states_into(
    reader: &Reader<'_>,
    at: &[(u64, u64)],
    budget: u64,
    keep: &mut KeepState<'_>,
) -> Option<BuiltStates> {
    build_states_kept(reader, at, budget, KEPT_MAX, keep)
}

/// The most bytes of states kept at checkpoints: half the largest state file a reader takes
/// (`MAX_INDEX_BYTES`), the other half left for the state at the end, whatever the budget.
pub const KEPT_MAX: u64 = crate::limits::MAX_INDEX_BYTES / 2;

/// [`build_states`] keeping at most `most` bytes of states at the checkpoints.
fn build_states_within(
    reader: &Reader<'_>,
    at: &[(u64, u64)],
    budget: u64,
    most: u64,
) -> Option<BuiltStates> {
    let mut entries: Vec<Option<Vec<u8>>> = vec![None; at.len()];
    let mut keep = |i: usize, state: Vec<u8>| {
        if let Some(e) = entries.get_mut(i) {
            *e = Some(state);
        }
        true
    };
    let built = build_states_kept(reader, at, budget, most, &mut keep)?;
    Some(BuiltStates { entries, ..built })
}

/// [`build_states_within`], the states kept given to `keep`.
fn build_states_kept(
    reader: &Reader<'_>,
    at: &[(u64, u64)],
    budget: u64,
    most: u64,
    keep: &mut KeepState<'_>,
) -> Option<BuiltStates> {
    let mut kept = 0u64;
    // Of the states written out so far: the fewest bytes besides the live blocks', and the
    // fewest bytes per live block, in 1/16ths, of those with 64 blocks or more (see below).
    let (mut rest, mut per_block): (Option<u64>, Option<u64>) = (None, None);
    let mut written = 0;
    let total = (reader.bytes().len() as u64).max(at.last().map_or(0, |a| a.1));
    let guards = guards(at, total);
    // The budget's rule: states of `end` bytes in all fit before byte `off` (and within the
    // most a reader takes).
    let fits =
        |end: u64, off: u64| end.saturating_mul(100) <= off.saturating_mul(budget) && end <= most;
    // A state of `size` bytes is kept at checkpoint `i`: it fits there, and one as large again
    // would still fit at its guard.
    let keeps = |kept: u64, size: u64, i: usize| {
        fits(kept.saturating_add(size), at[i].1)
            && guards[i].is_none_or(|g| fits(kept.saturating_add(size.saturating_mul(2)), g))
    };
    // About the largest state `keeps` takes at checkpoint `i` (for the estimate only).
    let cap = |off: u64| (u128::from(off) * u128::from(budget) / 100).min(u128::from(most));
    let room = |kept: u64, i: usize| {
        let here = cap(at[i].1).saturating_sub(u128::from(kept));
        let guard = guards[i].map_or(u128::MAX, |g| cap(g).saturating_sub(u128::from(kept)) / 2);
        here.min(guard)
    };
    // The last state written out and not kept since one was kept: its bytes, its live blocks
    // and how many bytes it lacked.
    let mut miss: Option<(u128, u128, u128)> = None;
    let mut each = |next: usize, pass: Option<&Pass<'_, '_>>, max_time: Option<u64>| {
        // Design: a state holds every live block, tens of bytes each; a heap of a million
        // blocks makes states of tens of megabytes, of which the budget keeps a few. Written
        // out at every checkpoint only to be dropped, they took 15 times the pass itself
        // (a recording of heaptrack's, 258 checkpoints, 3 states kept). So a state is not
        // written out where an estimate of its size passes the room the budget leaves by
        // more than an eighth. The estimate takes the fewest bytes per live block and the
        // fewest other bytes of the states written out so far, so that it errs low (on that
        // recording the blocks' bytes per block varied by a few percent from state to
        // state): a state left out by it is one the budget would almost surely have left
        // out too, and the budget's rule decides for every state written out. There it
        // took the index from 51 s to 10 s, with the same states kept.
        let blocks = pass.map_or(0, |p| p.heap.saved_blocks() as u64);
        let guess = match (rest, per_block) {
            (Some(r), Some(p)) => r.saturating_add(blocks.saturating_mul(p) / 16),
            _ => 0,
        };
        let mut e = Enc::default();
        // Design: with checkpoints every few records, the room the budget leaves grows by a
        // few bytes a checkpoint, and a state of a large live set fits again only thousands
        // of checkpoints after the last one kept. The eighth the estimate above allows then
        // spans hundreds of checkpoints, each writing a state out to drop it: an index with
        // a checkpoint every 7 records of a 2 M-record trace ran for many minutes. After a
        // state written out was not kept, the next is written out only where the bytes it
        // would lack, as estimated from that one's size per live block, are at most half
        // those it lacked: a few more states written out between two kept, not a share.
        let far = miss.is_some_and(|(len, had, short)| {
            let now = u128::from(blocks);
            // Only near that state's live blocks (within an eighth) is its size per block
            // a fair guess of this one's: the bytes besides the blocks' weigh too much in
            // a small state (a recording's first checkpoint, 285 blocks, guessed a state
            // of 1.4 M blocks 12 % too large, and it was left out).
            let near = now * 8 >= had * 7 && now * 7 <= had * 8;
            near && (len * now / had.max(1)).saturating_sub(room(kept, next)) > short / 2
        });
        let unlikely = far || !keeps(kept, guess.saturating_mul(8) / 9, next);
        if !unlikely && pass.is_some_and(|p| p.save(max_time, &mut e)) {
            written += 1;
            let len = e.out.len() as u64;
            let r = len.saturating_sub(e.blocks);
            rest = Some(rest.map_or(r, |x| x.min(r)));
            if blocks >= 64 {
                let p = e.blocks.saturating_mul(16) / blocks;
                per_block = Some(per_block.map_or(p, |x| x.min(p)));
            }
            if keeps(kept, len, next) {
                kept += len;
                miss = None;
                // A state that cannot be kept stops the pass (`drive` says so).
                if !keep(next, e.out) {
                    return false;
                }
            } else {
                let short = u128::from(len).saturating_sub(room(kept, next)).max(1);
                miss = Some((u128::from(len), u128::from(blocks), short));
            }
        }
        true
    };
    let end = drive(reader, at, &mut each).ok()?;
    Some(BuiltStates {
        entries: Vec::new(),
        end,
        written,
    })
}

/// What [`drive`] calls at each checkpoint: its number, the pass there (if the decode stands at
/// its record) and the largest declared time so far; false stops the pass.
type AtCheckpoint<'f> = dyn FnMut(usize, Option<&Pass<'_, '_>>, Option<u64>) -> bool + 'f;

/// One statistics pass over `reader`'s trace from its start that calls `each` before each
/// record index of `at` (in increasing order) with the checkpoint's number, the pass (`None`
/// where the decode does not stand at that record) and the largest declared time so far, and
/// returns the state at the end, with the whole trace's peaks and clock. `Err(true)`: `each`
/// stopped it (returned false); `Err(false)`: the trace has problems (a damaged trace is read
/// from its start) or the state could not be written.
fn drive(
    reader: &Reader<'_>,
    at: &[(u64, u64)],
    each: &mut AtCheckpoint<'_>,
) -> Result<Vec<u8>, bool> {
    let schema = reader.schema();
    let mut source = Declared::new(schema);
    let mut pass = Pass::new(schema, &mut source, Window::all());
    pass.placed = false;
    let mut records = reader.records();
    let mut next = 0usize;
    let mut max_time: Option<u64> = None;
    loop {
        while next < at.len() && records.count() >= at[next].0 {
            let there = (records.count() == at[next].0).then_some(&pass);
            if !each(next, there, max_time) {
                return Err(true);
            }
            next += 1;
        }
        let Some(ev) = records.next_event() else {
            break;
        };
        match ev {
            Event::Record(v) => {
                let data = v.is_data();
                pass.record(&v);
                if data {
                    if let Some(t) = pass.time {
                        max_time = Some(max_time.map_or(t, |m| m.max(t)));
                    }
                }
            }
            Event::Problem(_) | Event::Damage(_) => return Err(false),
        }
    }
    if records.dropped_problems() > 0 {
        return Err(false);
    }
    let mut e = Enc::default();
    let peaks = pass.heap.peaks();
    e.len(peaks.len());
    for p in peaks {
        match p {
            None => e.u8(0),
            Some((b, r)) => {
                e.u8(1);
                e.u128(b);
                e.u64(r);
            }
        }
    }
    if !pass.save(max_time, &mut e) {
        return Err(false);
    }
    Ok(e.out)
}

/// How [`compare_states`] found the states stored for a seek index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatesCompared {
    /// Each equals the state a full pass takes at its checkpoint, and so does the end's.
    Same,
    /// The first that differs: a checkpoint's number, or the number of checkpoints for the
    /// state at the end.
    Differs(usize),
    /// A full pass takes no state of this trace (it has problems).
    NoState,
}

/// Compare the states stored at the checkpoints `at` (`stored(i)`: checkpoint `i`'s, if it has
/// one) and at the end (`end`) with those one pass from the start takes, each made only where
/// one is stored and dropped once compared.
// Design: `mtf index --check` made the state of every checkpoint and then compared those
// stored. On a heaptrack recording of 1.9 M live blocks (183 checkpoints, 2 stored) that took
// 2.2 GB and 10.8 s, and the states past the 2 GiB that a writer keeps were left out, so that
// a state stored there was reported as differing from a valid index.
pub fn compare_states<'s>(
    reader: &Reader<'_>,
    at: &[(u64, u64)],
    stored: &dyn Fn(usize) -> Option<&'s [u8]>,
    end: &[u8],
) -> StatesCompared {
    let mut differs = None;
    let mut each = |i: usize, pass: Option<&Pass<'_, '_>>, max_time: Option<u64>| {
        let Some(want) = stored(i) else {
            return true;
        };
        let mut e = Enc::default();
        let same = pass.is_some_and(|p| p.save(max_time, &mut e)) && e.out == want;
        if !same {
            differs = Some(i);
        }
        same
    };
    match drive(reader, at, &mut each) {
        Ok(fresh) if fresh == end => StatesCompared::Same,
        Ok(_) => StatesCompared::Differs(at.len()),
        Err(true) => StatesCompared::Differs(differs.unwrap_or(0)),
        Err(false) => StatesCompared::NoState,
    }
}

/// The halvings of a trace whose cut points are favoured by [`guards`]: halves, quarters, …,
/// sixty-fourths.
const HALVINGS: u32 = 6;

/// For each checkpoint (`at`, with its byte offsets, of a trace of `total` bytes), the offset of
/// the next checkpoint that matters more to the chunks of `-j N`, if any: a state is kept only
/// where the budget would still have room there for another as large.
// Design: the budget keeps the states in trace order while they fit; with large live sets it
// keeps a few, wherever the room happened to come (a third and two thirds of the trace of a
// generated shape with many live blocks), and `stats -j 2` then cut the trace 65/35 and ran
// at the pace of the larger part. The checkpoint nearest half the bytes matters most, then
// those nearest a quarter and three quarters, and so on to sixty-fourths (`HALVINGS`), others
// least; a state is not kept where keeping it would leave no room, by the budget's rule, for
// one as large at the next checkpoint that matters more. Where the states are small beside
// the budget every state is kept, as before.
fn guards(at: &[(u64, u64)], total: u64) -> Vec<Option<u64>> {
    let n = at.len();
    let mut level = vec![HALVINGS + 1; n];
    for d in 1..=HALVINGS {
        for k in (1..1u64 << d).step_by(2) {
            let target = ((u128::from(total) * u128::from(k)) >> d) as u64;
            // The offsets increase: the nearest is one of the two around the target (the
            // earlier where both are as near).
            let p = at.partition_point(|a| a.1 < target);
            let nearest = [p.checked_sub(1), (p < n).then_some(p)]
                .into_iter()
                .flatten()
                .min_by_key(|&i| at[i].1.abs_diff(target));
            if let Some(i) = nearest {
                level[i] = level[i].min(d);
            }
        }
    }
    // From the last checkpoint back, the next one of each level: a pass, not a search per
    // checkpoint (a long trace has a checkpoint per MiB).
    let mut next_of = [None::<usize>; HALVINGS as usize + 2];
    let mut out = vec![None; n];
    for i in (0..n).rev() {
        let l = level[i] as usize;
        out[i] = next_of[..l].iter().flatten().min().map(|&j| at[j].1);
        next_of[l] = Some(i);
    }
    out
}

/// Where a checkpoint's state stands ([`StateHead`]), read from its first bytes.
pub fn state_head(blob: &[u8]) -> Result<StateHead, StateError> {
    let mut d = Dec::new(blob);
    Ok(StateHead {
        data: d.u64()?,
        max_time: d.opt()?,
    })
}

fn end_peaks(d: &mut Dec<'_>) -> Result<Vec<Option<(u128, u64)>>, StateError> {
    let n = d.count(1)?;
    let mut peaks = Vec::with_capacity(n);
    for _ in 0..n {
        peaks.push(if d.flag()? {
            Some((d.u128()?, d.u64()?))
        } else {
            None
        });
    }
    Ok(peaks)
}

/// Step over the pass's part of a state (docs/format.md §15.4, item 1: data records, the times,
/// whether the time moved, the input lines), as [`Pass::restore`] reads it, to the interpreter's.
fn skip_pass_part(schema: &Schema, d: &mut Dec<'_>) -> Result<(), StateError> {
    d.u64()?;
    d.opt()?;
    d.opt()?;
    d.opt()?;
    d.flag()?;
    SourceLinesSkip::skip(schema, d)
}

/// What the end state says of the whole trace ([`EndHead`]).
pub fn end_head(end: &[u8]) -> Result<EndHead, StateError> {
    let mut d = Dec::new(end);
    let peaks = end_peaks(&mut d)?;
    Ok(EndHead {
        peaks,
        data: d.u64()?,
    })
}

/// The clock of the whole trace, from its end state: (the first declared time, whether
/// another came).
pub fn end_clock(end: &[u8]) -> Result<(Option<u64>, bool), StateError> {
    let mut d = Dec::new(end);
    end_peaks(&mut d)?;
    d.u64()?;
    d.opt()?;
    d.opt()?;
    Ok((d.opt()?, d.flag()?))
}

/// [`compute_scoped`](super::compute_scoped) over `records`, a decode resumed at a checkpoint,
/// starting from the checkpoint's analysis state `blob` instead of the start of the trace; the
/// slice `window` must not start before the checkpoint ([`state_head`]). Where site names may
/// come after the slice, `end` (the state at the end of the trace) gives them without reading
/// on. The figures are those of a pass from the start. With `whole` (and `end`), the pass
/// stands for one over the whole trace whose figures are read only up to the slice's end (the
/// peak): the interpreter and the sites and leaves are then those of the end of the trace.
pub fn compute_resumed(
    reader: &Reader<'_>,
    records: &mut dyn EventStream,
    blob: &[u8],
    end: Option<&[u8]>,
    window: Window,
    scope: StatsScope,
    whole: bool,
) -> Result<Stats, StateError> {
    let schema: &Schema = reader.schema();
    let mut source = Declared::new(schema);
    let mut pass = Pass::new(schema, &mut source, window);
    pass.placed = false;
    if scope == StatsScope::Heap {
        pass.lean = true;
        pass.heap.heap_only();
    }
    pass.restore(&mut Dec::new(blob))?;
    pass.feed(records);
    if pass.end.is_some() && (whole || pass.source.names_later()) {
        match end {
            Some(end) => {
                // The interpreter at the end of the trace: what reading on would make of it.
                let mut d = Dec::new(end);
                end_peaks(&mut d)?;
                skip_pass_part(schema, &mut d)?;
                pass.source.restore_state(&mut d)?;
                if whole {
                    pass.heap.extend_places(&mut d)?;
                }
            }
            None if whole => {
                while let Some(e) = records.next_event() {
                    if let Event::Record(v) = e {
                        pass.events.clear();
                        pass.source.record(&v, &mut pass.events);
                    }
                }
            }
            None => pass.read_names(records),
        }
    }
    pass.problems += records.dropped_problems();
    Ok(pass.finish())
}

/// Put into `interp` (made for `schema`, with nothing read) the interpreter's part of a
/// checkpoint's analysis state `blob`: what the semantic pass of `mtf check -j N` resumes from.
#[cfg_attr(not(feature = "parallel"), allow(dead_code))]
pub(crate) fn restore_interpreter(
    schema: &Schema,
    blob: &[u8],
    interp: &mut crate::analysis::Interpreter<'_>,
) -> Result<(), StateError> {
    let mut d = Dec::new(blob);
    skip_pass_part(schema, &mut d)?;
    let n = d.count(1)?;
    for _ in 0..n {
        d.u64()?;
    }
    interp.restore_state(&mut d)
}

/// Reads past the input lines' part of a state.
struct SourceLinesSkip;

impl SourceLinesSkip {
    fn skip(schema: &Schema, d: &mut Dec<'_>) -> Result<(), StateError> {
        super::super::lines::SourceLines::new(schema).restore_state(d)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::analysis::stats::{compute_scoped, Bound};
    use crate::index::{build, BuildOptions, Index};

    /// `reader`'s trace indexed with a checkpoint every `every` records, the checkpoints'
    /// (record, offset) and a state at each (no budget).
    pub(in crate::analysis::stats::pass) fn indexed_states(
        reader: &Reader<'_>,
        every: u64,
    ) -> (Index, Vec<(u64, u64)>, BuiltStates) {
        let idx = build(
            reader,
            &BuildOptions {
                every_records: every,
                every_bytes: 1 << 20,
            },
        );
        let at: Vec<(u64, u64)> = idx.entries().iter().map(|e| (e.record, e.offset)).collect();
        let built = build_states(reader, &at, u64::MAX).expect("states");
        (idx, at, built)
    }

    fn shown(s: &Stats) -> String {
        format!("{}{}", s.to_text(5), s.at_peak_text(5))
    }

    /// From every state of a shipped trace, every slice that starts at or after it has the
    /// figures of a pass from the start; and no damage to a state (cut short, any byte
    /// changed) panics: it is an error, or figures of a state that is consistent.
    #[test]
    fn resumed_figures_equal_a_pass_and_damaged_states_never_panic() {
        for name in ["heaptrack.mtf", "android.mtf", "et3.mtf"] {
            let path = format!("{}/traces/{name}", env!("CARGO_MANIFEST_DIR"));
            let o = crate::open(&path).expect("a shipped trace");
            let reader = o.reader();
            let (idx, _, built) = indexed_states(&reader, 7);
            let mut used = 0;
            for (i, blob) in built.entries.iter().enumerate() {
                let Some(blob) = blob else { continue };
                let head = state_head(blob).expect("a head");
                for from in [head.data, head.data + 1, head.data + 9] {
                    let window = Window {
                        from: Some(Bound::Record(from)),
                        to: None,
                    };
                    let mut records = idx.records_at(&reader, i).expect("resumes");
                    let ours = compute_resumed(
                        &reader,
                        &mut records,
                        blob,
                        Some(&built.end),
                        window,
                        StatsScope::All,
                        false,
                    )
                    .expect("resumed");
                    let mut source = Declared::new(reader.schema());
                    let full = compute_scoped(
                        &reader,
                        &mut reader.records(),
                        &mut source,
                        window,
                        StatsScope::All,
                    );
                    assert_eq!(
                        shown(&ours),
                        shown(&full),
                        "{name}, checkpoint {i}, from {from}"
                    );
                    used += 1;
                }
                // Every damage of every third state (each damaged state is resumed to the
                // trace's end: the states between add time, not cases of another kind).
                if i % 3 != 0 {
                    continue;
                }
                let mut damaged = Vec::new();
                for cut in 0..blob.len() {
                    damaged.push(blob[..cut].to_vec());
                }
                for at in 0..blob.len() {
                    for x in [0x01u8, 0xFF] {
                        let mut b = blob.clone();
                        b[at] ^= x;
                        damaged.push(b);
                    }
                }
                for b in damaged {
                    let mut records = idx.records_at(&reader, i).expect("resumes");
                    let _ = compute_resumed(
                        &reader,
                        &mut records,
                        &b,
                        Some(&built.end),
                        Window::all(),
                        StatsScope::All,
                        true,
                    );
                }
            }
            assert!(used > 0, "{name}: no state");
        }
    }

    /// The checkpoint nearest half the bytes is guarded by none; one nearest a quarter by it
    /// (the next that matters more), one nearest an eighth by the quarter's; the last by none.
    #[test]
    fn each_checkpoint_is_guarded_by_the_next_that_matters_more() {
        // 16 checkpoints, one every 100 bytes of 1600.
        let at: Vec<(u64, u64)> = (0..16).map(|i| (i * 10, i * 100)).collect();
        let g = guards(&at, 1600);
        assert_eq!(g[8], None, "{g:?}");
        assert_eq!(g[4], Some(800));
        assert_eq!(g[2], Some(400));
        assert_eq!(g[3], Some(400));
        assert_eq!(g[12], None);
        assert_eq!(g[15], None);
        assert_eq!(g[9], Some(1000));
        assert!(guards(&[], 0).is_empty());
        // As a search from each checkpoint for the nearest of each target over all of them,
        // on uneven offsets.
        // Evenly spaced checkpoints put some targets midway between two: the earlier is taken.
        let mut x = 7u64;
        let cases = [1usize, 2, 3, 15, 64, 300].map(|n| (n, false));
        for (n, even) in cases.into_iter().chain([(3, true), (15, true), (63, true)]) {
            let at: Vec<(u64, u64)> = (0..n)
                .map(|i| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (
                        i as u64,
                        if even {
                            100 * i as u64
                        } else {
                            1 + (x >> 40) % 1000
                        },
                    )
                })
                .scan(0, |off, (i, step)| {
                    *off += step;
                    Some((i, if even { step } else { *off }))
                })
                .collect();
            let last = at.last().map_or(0, |a| a.1);
            let total = if even {
                100 * n as u64
            } else {
                last + (x >> 50) % 500
            };
            let mut level = vec![HALVINGS + 1; n];
            for d in 1..=HALVINGS {
                for k in (1..1u64 << d).step_by(2) {
                    let target = ((u128::from(total) * u128::from(k)) >> d) as u64;
                    let i = (0..n).min_by_key(|&i| at[i].1.abs_diff(target)).unwrap();
                    level[i] = level[i].min(d);
                }
            }
            let want: Vec<Option<u64>> = (0..n)
                .map(|i| (i + 1..n).find(|&j| level[j] < level[i]).map(|j| at[j].1))
                .collect();
            assert_eq!(guards(&at, total), want, "{n} checkpoints");
        }
    }

    /// A trace of a heap that grows (four allocations in five), shrinks (one in seven), grows and
    /// shrinks again, `per` records each time, packed and opened (with the folder of its DTD).
    fn waves(per: usize) -> (tempfile::TempDir, crate::Opened) {
        let dtd = "tag.width = 1;\nsize.width = 4; size.interpretation = none;\n\
                   address.width = 4; address.interpretation = none;\n\
                   analysis.version = 1;\nsize.size = bytes;\n\
                   section heap 1 {\n\
                   alloc : (tag, size, address) { tag.value = 4; address.defines = block; address.bytes = size.value; }\n\
                   free : (tag, address) { tag.value = 5; address.undefines = block; }\n}\n";
        let schema = crate::dtd::parse_str("t.dtd", dtd).expect("a DTD").schema;
        let mut text =
            String::from("%mtf 1 dtd=\"t.dtd\" class=32 order=little\nsection number=1\n");
        let (mut live, mut next, mut x) = (Vec::new(), 0u64, 5u64);
        for phase in 0..4 {
            for _ in 0..per {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let grow = if phase % 2 == 0 { 80 } else { 15 };
                if (x >> 33) % 100 < grow || live.is_empty() {
                    next += 16;
                    live.push(next);
                    text.push_str(&format!("alloc size={} address={next}\n", (x >> 40) % 500));
                } else {
                    let a = live.swap_remove((x >> 40) as usize % live.len());
                    text.push_str(&format!("free address={a}\n"));
                }
            }
        }
        let bytes =
            crate::pack::pack_to_vec(&schema, text.as_bytes(), crate::text::InputFormat::Text)
                .expect("packs");
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("t.dtd");
        std::fs::write(&path, dtd).expect("written");
        let o = crate::OpenOptions::default()
            .dtd(path)
            .open_bytes(bytes)
            .expect("opens");
        (dir, o)
    }

    /// The states the budget's rule alone keeps of `every` (a state at each checkpoint `at`).
    fn by_the_rule(
        every: &BuiltStates,
        at: &[(u64, u64)],
        total: u64,
        budget: u64,
    ) -> Vec<Option<Vec<u8>>> {
        let mut kept = 0u64;
        let mut want = Vec::new();
        let guards = guards(at, total);
        for ((blob, &(_, offset)), guard) in every.entries.iter().zip(at).zip(&guards) {
            let len = blob.as_ref().map_or(0, |b| b.len() as u64);
            let room = guard.is_none_or(|g| (kept + 2 * len) * 100 <= g * budget);
            let keep = blob.is_some() && (kept + len) * 100 <= offset * budget && room;
            if keep {
                kept += len;
            }
            want.push(blob.clone().filter(|_| keep));
        }
        want
    }

    /// A heap that grows to thousands of blocks, shrinks, grows and shrinks again: the states a
    /// budget keeps, with the writer leaving out those it estimates would not fit, are the ones
    /// the budget's rule alone keeps of every state (each written out), byte for byte; and the
    /// estimate did leave some out.
    #[test]
    fn states_left_out_by_the_estimate_are_those_the_budget_leaves_out() {
        let (_dir, o) = waves(6000);
        let reader = o.reader();
        let (_, at, every) = indexed_states(&reader, 250);
        let mut left_out = 0;
        for budget in [50, 100, 200] {
            let built = build_states(&reader, &at, budget).expect("states");
            let want = by_the_rule(&every, &at, reader.bytes().len() as u64, budget);
            let n = want.iter().flatten().count();
            assert!(
                n >= 2 && n < want.len() - 3,
                "budget {budget}: {n} states kept"
            );
            assert!(built.entries == want, "budget {budget}");
            assert_eq!(built.end, every.end);
            left_out += want.len() - built.written;
        }
        assert!(left_out > 5, "{left_out} states left out by the estimate");
        // Whatever the budget, the states kept take no more than the most a reader takes
        // (here a small bound, for the test), where without the bound they would take more.
        let size = |b: &BuiltStates| b.entries.iter().flatten().map(|x| x.len() as u64).sum();
        let most = size(&every) / 3;
        let all = build_states_within(&reader, &at, 1_000_000, u64::MAX).expect("states");
        assert!(size(&all) > most, "{} of {most}", size(&all));
        let bounded = build_states_within(&reader, &at, 1_000_000, most).expect("states");
        let kept: u64 = size(&bounded);
        assert!(kept <= most && kept > 0, "{kept} of at most {most}");
        assert_eq!(bounded.end, every.end);
    }

    /// A checkpoint every two records: the room the budget leaves grows by a few bytes a
    /// checkpoint, and the states kept are still those of the budget's rule, while only a few
    /// of the states left out were written out to be weighed (a share of every checkpoint
    /// between two states kept, before).
    #[test]
    fn dense_checkpoints_write_out_few_states_they_drop() {
        let (_dir, o) = waves(1500);
        let reader = o.reader();
        let (_, at, every) = indexed_states(&reader, 2);
        assert!(at.len() > 2900, "{} checkpoints", at.len());
        for budget in [30, 100] {
            let built = build_states(&reader, &at, budget).expect("states");
            let want = by_the_rule(&every, &at, reader.bytes().len() as u64, budget);
            let kept = want.iter().flatten().count();
            assert!(kept >= 2, "budget {budget}: {kept} states kept");
            assert!(built.entries == want, "budget {budget}");
            let dropped = built.written - kept;
            assert!(
                dropped <= 40 * kept,
                "budget {budget}: {dropped} states written out and dropped, {kept} kept, of {}",
                at.len()
            );
        }
    }

    /// The stored states are compared with a pass's where they are stored, and the first that
    /// differs is named, whichever it is (a checkpoint's or the end's); a checkpoint without
    /// one is not compared.
    #[test]
    fn compare_states_names_the_first_stored_state_that_differs() {
        let (_dir, o) = waves(2000);
        let reader = o.reader();
        let (_, at, every) = indexed_states(&reader, 400);
        let n = at.len();
        assert!(n > 10, "{n} checkpoints");
        let stored: Vec<Option<Vec<u8>>> = every
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| e.clone().filter(|_| i % 3 == 1))
            .collect();
        let compare = |stored: &[Option<Vec<u8>>], end: &[u8]| {
            compare_states(&reader, &at, &|i| stored[i].as_deref(), end)
        };
        assert_eq!(compare(&stored, &every.end), StatesCompared::Same);
        for i in [1, 4, n - 1 - (n - 2) % 3] {
            let mut bad = stored.clone();
            if let Some(b) = bad[i].as_mut() {
                let k = b.len() / 2;
                b[k] ^= 1;
            }
            assert_eq!(compare(&bad, &every.end), StatesCompared::Differs(i), "{i}");
        }
        // Bytes stored where the index had no state are compared too; none there, nothing is.
        let mut more = stored.clone();
        more[2] = Some(vec![1, 2, 3]);
        assert_eq!(compare(&more, &every.end), StatesCompared::Differs(2));
        more[2] = None;
        assert_eq!(compare(&more, &every.end), StatesCompared::Same);
        let mut end = every.end.clone();
        end.push(0);
        assert_eq!(compare(&stored, &end), StatesCompared::Differs(n));
    }
}
