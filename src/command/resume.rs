//! Statistics at a moment without a pass from the start: a slice (`--from`), a moment
//! (`--at`) or the peak (`--at-peak`) read from the seek index's checkpoint nearest before it,
//! starting from the analysis state stored there (docs/format.md §15.4, `INDEX.state`).
//! Whatever cannot be used (no state, one of another index, a slice it does not help) leaves
//! the caller's pass from the start; a state that cannot be read is a warning.

// Design (the peak without a pass): each namespace's peak is the first record where its live
// bytes reached their highest, stored with the end state. A slice from a checkpoint at or before
// the earliest of those records to the record after the latest holds every peak, and no earlier
// record of the slice reaches it (it is the first), so the slice's peaks, and the live figures by
// site and leaf there, are the whole trace's. What differs — flows, which count only inside the
// slice — is not what `--at-peak` shows; the clock, the sites and leaves met after the slice and
// the names are taken from the end state, as a pass to the end would leave them. Namespaces
// without sizes or whose peak is 0 bytes keep the pass from the start (what is shown of them
// depends on their flows).

use std::path::Path;

use crate::analysis::stats::{
    build_states, build_states_into, compare_states, compute_resumed, end_clock, end_head,
    state_head, Bound, Clock, Declared, HeapEventSource, StatesCompared, Stats, StatsScope, Window,
};
use crate::decode::Reader;
use crate::index::analysis::{state_path, AnalysisState};
use crate::index::{Index, IndexError};
use crate::Opened;

use super::seek::SeekOptions;
use super::Warning;

/// The share of the trace's bytes the analysis states may take by default, in percent
/// (docs/format.md §15.4): the file of states stays smaller than the trace.
pub const DEFAULT_STATE_BUDGET: u64 = 100;

/// The analysis state of `index` (built for `reader`'s trace): one statistics pass from the
/// start, the states taking at most `budget` percent of the trace bytes before each
/// checkpoint. `None` when the DTD declares no namespace of ids, or the trace has problems.
pub fn build_state(reader: &Reader<'_>, index: &Index, budget: u64) -> Option<AnalysisState> {
    let schema = reader.schema();
    if Declared::new(schema).spaces().is_empty() {
        return None;
    }
    let at = checkpoints(index);
    let mut s = match spilled(reader, index, &at, budget) {
        Some(state) => state?,
        None => {
            let built = build_states(reader, &at, budget)?;
            AnalysisState::new(index, schema, built.entries, built.end)
        }
    };
    s.set_name(format!("{}.state", index.name()));
    // A file a reader would refuse is not written.
    (s.file_len() <= crate::limits::MAX_INDEX_BYTES).then_some(s)
}

/// The index's checkpoints: (record, byte offset) of each.
fn checkpoints(index: &Index) -> Vec<(u64, u64)> {
    index
        .entries()
        .iter()
        .map(|e| (e.record, e.offset))
        .collect()
}

/// [`build_state`]'s pass with each state kept written to an unlinked scratch file as it is
/// made, and the state read from the file's map; `None` where the scratch file could not be
/// made, written or mapped (the caller then keeps the states in memory).
// Design: the states kept take up to the trace's bytes (the default budget), or 2 GiB; held in
// memory until the file was written, they were most of `mtf index`'s memory on a large heap
// (the Python recording: 64 MB of states beside the pass's 98 MB). Written out as they are
// made, they are read back from the map once, when the state file is written, each state's
// pages given back as it is.
#[cfg(unix)]
fn spilled(
    reader: &Reader<'_>,
    index: &Index,
    at: &[(u64, u64)],
    budget: u64,
) -> Option<Option<AnalysisState>> {
    use std::io::Write;
    let file = crate::io::unlinked_in(&std::env::temp_dir()).ok()?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, &file);
    let mut ranges = vec![None; at.len()];
    let (mut pos, mut failed) = (0usize, false);
    let mut keep = |i: usize, state: Vec<u8>| {
        if w.write_all(&state).is_err() {
            failed = true;
            return false;
        }
        if let Some(r) = ranges.get_mut(i) {
            *r = Some(pos..pos + state.len());
        }
        pos += state.len();
        true
    };
    let built = build_states_into(reader, at, budget, &mut keep);
    let Some(built) = built else {
        // Stopped by the scratch file, or a trace with problems (no state).
        return if failed { None } else { Some(None) };
    };
    w.write_all(&built.end).ok()?;
    w.flush().ok()?;
    drop(w);
    let end = pos..pos + built.end.len();
    let map = crate::io::map_file(&file)?;
    if map.len() != end.end {
        return None;
    }
    Some(Some(AnalysisState::from_map(
        index,
        reader.schema(),
        map,
        ranges,
        end,
    )))
}

#[cfg(not(unix))]
fn spilled(_: &Reader<'_>, _: &Index, _: &[(u64, u64)], _: u64) -> Option<Option<AnalysisState>> {
    None
}

/// Compare a stored state with the states one pass from the start takes (`mtf index --check`),
/// made only at the checkpoints where one is stored: the first checkpoint whose stored state
/// differs is an error naming it. `Ok(false)`: a full pass makes no state of this trace (its
/// DTD declares no namespace of ids, or it has problems).
pub fn verify_state(
    reader: &Reader<'_>,
    stored: &AnalysisState,
    index: &Index,
) -> Result<bool, IndexError> {
    if Declared::new(reader.schema()).spaces().is_empty() {
        return Ok(false);
    }
    let mismatch = |checkpoint: usize, record: u64, what: &str| IndexError::Mismatch {
        name: stored.name().to_string(),
        checkpoint,
        record,
        what: what.into(),
    };
    let at = checkpoints(index);
    let n = at.len();
    match compare_states(reader, &at, &|i| stored.entry(i), stored.end().0) {
        StatesCompared::Same => Ok(true),
        StatesCompared::NoState => Ok(false),
        StatesCompared::Differs(i) if i >= n => Err(mismatch(
            n,
            index.entries().last().map_or(0, |e| e.record),
            "the analysis state at the end of the trace differs from a full pass",
        )),
        StatesCompared::Differs(i) => Err(mismatch(
            i,
            at[i].0,
            "its analysis state differs from the one a full pass takes there",
        )),
    }
}

/// Compare a births file (docs/format.md §15.5) with `fresh`, the one a full pass builds at the
/// same checkpoints (`columnar::births_file`): the first checkpoint whose births differ (or that
/// has births in one and not the other) is an error naming the file and the checkpoint.
pub fn verify_births(
    stored: &AnalysisState,
    fresh: &AnalysisState,
    index: &Index,
) -> Result<(), IndexError> {
    for (i, e) in index.entries().iter().enumerate() {
        if stored.entry(i) != fresh.entry(i) {
            let what = match (stored.entry(i), fresh.entry(i)) {
                (Some(_), None) => "it has births where a full pass keeps none",
                (None, Some(_)) => "it has no births where a full pass keeps them",
                _ => "the births of its live blocks differ from those of a full pass",
            };
            return Err(IndexError::Mismatch {
                name: stored.name().to_string(),
                checkpoint: i,
                record: e.record,
                what: what.into(),
            });
        }
    }
    if stored.end().0 != fresh.end().0 {
        return Err(IndexError::Mismatch {
            name: stored.name().to_string(),
            checkpoint: index.entries().len(),
            record: index.entries().last().map_or(0, |e| e.record),
            what: "its end is not empty".into(),
        });
    }
    Ok(())
}

/// Whether a checkpoint with this many data records before it, and this largest time, is
/// before the slice.
type Fits = dyn Fn(u64, Option<u64>) -> bool;

/// What a resumed run is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Goal {
    /// A slice that starts somewhere (`--from`, `--at`).
    Slice(Window),
    /// The whole trace's peak, for figures that read only the state at the peak.
    AtPeak,
}

/// The state beside `idx_path`, checked against `index` and the trace; `None` when there is
/// none (a warning when it cannot be used). Unless `verify`, the file's checksum is left to
/// the caller ([`AnalysisState::load_unverified`]).
pub(super) fn load(
    idx_path: &Path,
    index: &Index,
    reader: &Reader<'_>,
    verify: bool,
    warn: &mut dyn FnMut(Warning),
) -> Option<AnalysisState> {
    let path = state_path(idx_path)?;
    if !path.is_file() {
        return None;
    }
    let loaded = if verify {
        AnalysisState::load(&path)
    } else {
        AnalysisState::load_unverified(&path)
    };
    let checked = loaded.and_then(|s| {
        let fits = s
            .fits(index, reader.schema())
            .and_then(|()| index.fits(reader));
        match fits {
            Ok(()) => Ok(s),
            // As `AnalysisState::load` refuses a damaged file: for its checksum first.
            Err(e) => Err(s.verify_sum().err().filter(|_| !verify).unwrap_or(e)),
        }
    });
    match checked {
        Ok(s) => Some(s),
        Err(e) => {
            warn(Warning::IndexSkipped(e));
            None
        }
    }
}

fn corrupt(state: &AnalysisState, at: u64, e: crate::index::analysis::StateError) -> IndexError {
    IndexError::Corrupt {
        name: state.name().to_string(),
        at: at + e.at as u64,
        what: e.what,
    }
}

/// The statistics of `goal` from the nearest checkpoint's analysis state, or `None` when there
/// is no state to start from that helps.
pub(crate) fn resumed(
    o: &Opened,
    trace: &Path,
    seek: &SeekOptions,
    goal: Goal,
    scope: StatsScope,
    warn: &mut dyn FnMut(Warning),
) -> Option<Stats> {
    if seek.no_index {
        return None;
    }
    let idx_path = seek.index_path(trace)?;
    if seek.index.is_none() && !idx_path.is_file() {
        return None;
    }
    let reader = o.reader();
    let state_file = state_path(&idx_path)?;
    if !state_file.is_file() {
        return None;
    }
    let index = match Index::load(&idx_path) {
        Ok(i) => i,
        Err(e) => {
            warn(Warning::IndexSkipped(e));
            return None;
        }
    };
    if let Some(e) = index.tables_problem() {
        warn(Warning::TablesSkipped(e));
    }
    let state = load(&idx_path, &index, &reader, true, warn)?;
    let mut bad = |e: IndexError| {
        warn(Warning::IndexSkipped(e));
    };
    let (end, end_at) = state.end();
    let (window, fits): (Window, Box<Fits>) = match goal {
        Goal::Slice(w) => {
            w.from?;
            // Every data record before the checkpoint must be before the slice: neither
            // reaching its start nor its end (`--from t100 --to 50` ends at record 50).
            let before = |b: Option<Bound>, data: u64, m: Option<u64>| match b {
                None => true,
                Some(Bound::Record(r)) => data <= r,
                Some(Bound::Time(t)) => m.is_none_or(|m| m < t),
            };
            (
                w,
                Box::new(move |data, m| before(w.from, data, m) && before(w.to, data, m)),
            )
        }
        Goal::AtPeak => {
            let head = match end_head(end) {
                Ok(h) => h,
                Err(e) => {
                    bad(corrupt(&state, end_at, e));
                    return None;
                }
            };
            let sized = Declared::new(reader.schema())
                .spaces()
                .iter()
                .all(|s| s.sized);
            let peaks: Option<Vec<u64>> = head
                .peaks
                .iter()
                .map(|p| p.filter(|(b, _)| *b > 0).map(|(_, r)| r))
                .collect();
            let peaks = peaks.filter(|p| sized && !p.is_empty())?;
            let (lo, hi) = (*peaks.iter().min()?, *peaks.iter().max()?);
            (
                Window {
                    from: None,
                    to: Some(Bound::Record(hi.checked_add(1)?)),
                },
                Box::new(move |data, _| data <= lo),
            )
        }
    };
    // The last checkpoint with a state before the slice.
    let mut chosen = None;
    for i in (0..index.entries().len()).rev() {
        let Some(blob) = state.entry(i) else { continue };
        match state_head(blob) {
            Ok(h) if fits(h.data, h.max_time) => {
                chosen = Some((i, blob, h));
                break;
            }
            Ok(_) => {}
            Err(e) => {
                bad(corrupt(&state, state.entry_at(i), e));
                return None;
            }
        }
    }
    let (i, blob, head) = chosen?;
    let window = match goal {
        Goal::Slice(_) => window,
        Goal::AtPeak => Window {
            from: Some(Bound::Record(head.data)),
            ..window
        },
    };
    let mut records = match index.records_at(&reader, i) {
        Ok(r) => r,
        Err(e) => {
            bad(e);
            return None;
        }
    };
    let mut stats = match compute_resumed(
        &reader,
        &mut records,
        blob,
        Some(end),
        window,
        scope,
        goal == Goal::AtPeak,
    ) {
        Ok(s) => s,
        Err(e) => {
            bad(corrupt(&state, state.entry_at(i), e));
            return None;
        }
    };
    if goal == Goal::AtPeak {
        // The figures at the peak are the whole trace's; so is its clock (whether positions
        // show times).
        let (first, moved) = match end_clock(end) {
            Ok(c) => c,
            Err(e) => {
                bad(corrupt(&state, end_at, e));
                return None;
            }
        };
        stats.clock = match first {
            None => Clock::None,
            Some(_) if moved => Clock::Moving,
            Some(t) => Clock::Constant(t),
        };
        for s in &mut stats.spaces {
            s.clock = moved;
        }
        stats.window = Window::all();
    }
    Some(stats)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{build, BuildOptions};

    /// The state `mtf index` builds through its scratch file is the one kept in memory, byte
    /// for byte, whichever the budget (every state, some, none), and reads the same.
    #[test]
    fn a_state_built_through_the_scratch_file_is_the_one_kept_in_memory() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/mtrace.mtf");
        let o = crate::open(&path).expect("opens");
        let reader = o.reader();
        let index = build(
            &reader,
            &BuildOptions {
                every_records: 5,
                every_bytes: 1 << 20,
            },
        );
        let at: Vec<(u64, u64)> = index
            .entries()
            .iter()
            .map(|e| (e.record, e.offset))
            .collect();
        assert!(at.len() > 5, "{} checkpoints", at.len());
        let mut kinds = std::collections::BTreeSet::new();
        for budget in [u64::MAX, 400, 200, 100, 50, 20, 10, 5, 0] {
            let kept = build_states(&reader, &at, budget).expect("states");
            let memory = AnalysisState::new(&index, reader.schema(), kept.entries, kept.end);
            let spilled = spilled(&reader, &index, &at, budget)
                .expect("a scratch file")
                .expect("a state");
            assert_eq!(spilled.to_bytes(), memory.to_bytes(), "budget {budget}");
            assert_eq!(spilled.stored(), memory.stored());
            for i in 0..at.len() {
                assert_eq!(spilled.entry(i), memory.entry(i), "budget {budget}, {i}");
            }
            let n = memory.stored();
            kinds.insert(if n == 0 {
                "none"
            } else if n < at.len() {
                "some"
            } else {
                "every"
            });
        }
        // Every state, some and none were compared.
        assert!(kinds.len() >= 3, "{kinds:?}");
    }
}
