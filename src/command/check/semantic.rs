//! The semantic pass on several threads (`mtf check -j N` with a seek index whose checkpoints
//! carry analysis states, docs/format.md §15.4): each chunk between two checkpoints with a state
//! is decoded and interpreted on its own thread from the interpreter stored there, and what it
//! finds is given to the sink here in trace order, as one thread gives it.

// Design: a chunk's pass starts from the exact interpreter a pass from the start has at its
// checkpoint (live ids, open levels, monotonic series, names, stacks), so its findings are those
// of one thread — but for one thing the state does not carry: the ring of recently undefined
// ids, which turns "undefines an id that is not alive" into "a double free" (an error, with the
// record that freed it). Each chunk keeps a journal of its undefines and of its look-ups that
// found nothing; the chunks are taken in order here and those look-ups answered from the
// undefines before the chunk (`DeadRing`), so the findings, their wording and severity are
// those of `-j 1`. Each worker also compares where its chunk ends with the next checkpoint: the
// decoder's state (as validating on several threads does) and the interpreter's (the state
// stored there must be the one this pass reaches: by induction from the start, every state used
// is verified). A difference is a problem of the index. The findings at the end (ids alive,
// levels open) come from the last chunk's interpreter. The trace is cut as `stats -j N` cuts
// it (at most `CHUNKS_PER_THREAD` chunks per thread, at the checkpoints that make the chunks'
// work most even, `state_chunks::balanced`), not at every state: each chunk costs a restore and
// two digests of the live set, which at every state cost a third more CPU than one thread; so
// the states verified are those the chunks start from (the index line says how many), and
// `mtf index --check` verifies all.
// A worker keeps at most `max_errors` problems and errors and `max_info` pieces of information
// (no more can be shown), and every look-up it could not answer (a finding whose severity is
// decided here); memory is that of `jobs` chunks: their live sets and at most about 10 MB of
// undefines each (`DeadJournal`: the first and the last of the chunk's).

use std::collections::BTreeMap;
use std::path::Path;

use crate::analysis::check::Check;
use crate::analysis::interpret::{DeadKey, DeadRing, DEAD_OWN};
use crate::analysis::{Finding, FindingKind, Severity};
use crate::decode::{Damage, Event, Problem, Reader, ScanStop};
use crate::index::analysis::{state_path, AnalysisState};
use crate::index::{Index, IndexError};
use crate::parallel::{self, From};

use super::super::state_chunks::{chunks, Part0, CHECK_STATE_BYTES_PER_RECORD, CHUNKS_PER_THREAD};
use crate::Opened;

use super::{CommandError, Tally, Warning};

enum Item {
    Problem(Box<Problem>),
    Damage(Box<Damage>),
    /// A finding; with the undefines of its chunk before it and the severity the DTD declares,
    /// one whose look-up of a recently undefined id is answered here.
    Finding(Finding, Option<(u64, Severity)>),
}

/// What a worker finds in a chunk.
struct Part<'s> {
    per_type: Vec<u64>,
    items: Vec<Item>,
    /// Problems beyond those kept.
    more: u64,
    counts: BTreeMap<(FindingKind, Severity), u64>,
    journal: crate::analysis::interpret::DeadJournal,
    records: u64,
    dropped: u64,
    end: u64,
    /// The decoder's state where the chunk ends differs from the next checkpoint.
    differs: bool,
    /// The interpreter's state where the chunk starts (restored) and ends, digested.
    start_state: Option<u64>,
    end_state: Option<u64>,
    /// The last chunk's checker (the findings at the end).
    last: Option<Check<'s>>,
}

/// Where chunk k's end first differs from the next chunk's start (k, and what differs).
type Differs = Option<(usize, &'static str)>;

/// The interpreter's part of a state, as an order-independent digest (to compare).
fn interpreter_hash(check: &Check<'_>) -> u64 {
    check.interpreter().semantic_digest()
}

/// What a worker has kept of its chunk's findings so far, against what it may keep.
struct Kept {
    shown: u64,
    infos: u64,
    /// Look-ups of recently undefined ids so far (`Interpreter::dead_asks`).
    asked: usize,
    max_errors: u64,
    max_info: u64,
}

impl Kept {
    /// The findings of the record just checked (`Check::found`): those that can be shown, and
    /// every look-up of a recently undefined id the chunk could not answer, kept in `items`.
    fn take(&mut self, check: &Check<'_>, items: &mut Vec<Item>) {
        for f in check.found() {
            let mut open = None;
            if matches!(f.kind, FindingKind::NotAlive | FindingKind::Undefined) {
                let ask = check.interpreter().dead_asks().get(self.asked).copied();
                self.asked += 1;
                open = ask.filter(|a| a.0 < DEAD_OWN);
            }
            let keep = open.is_some()
                || match f.severity {
                    Severity::Error if self.shown < self.max_errors => {
                        self.shown += 1;
                        true
                    }
                    Severity::Info if self.infos < self.max_info => {
                        self.infos += 1;
                        true
                    }
                    _ => false,
                };
            if keep {
                items.push(Item::Finding(f.clone(), open));
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn work<'o>(
    r: &Reader<'o>,
    o: &'o Opened,
    chunks: &[Part0<'_>],
    k: usize,
    max_ids: usize,
    max_errors: u64,
    max_info: u64,
) -> Part<'o> {
    let (chunk, blob) = &chunks[k];
    let mut check = Check::new(o.schema());
    check.set_limit(max_ids);
    // A state that cannot be read (the state file's checksum held: a writer's fault) counts
    // as one that differs from where the chunk before ends: a problem of the index.
    let restored = blob.is_some_and(|blob| {
        crate::analysis::stats::restore_interpreter(o.schema(), blob, check.interpreter_mut())
            .is_ok()
    });
    let start_state = match blob {
        Some(_) if !restored => None,
        Some(_) => Some(interpreter_hash(&check)),
        None => None,
    };
    check.interpreter_mut().keep_dead_journal();
    let mut p = Part {
        per_type: vec![0; o.schema().records.len()],
        items: Vec::new(),
        more: 0,
        counts: BTreeMap::new(),
        journal: Default::default(),
        records: 0,
        dropped: 0,
        end: chunk.bytes,
        differs: false,
        start_state,
        end_state: None,
        last: None,
    };
    let mut kept = Kept {
        shown: 0,
        infos: 0,
        asked: 0,
        max_errors,
        max_info,
    };
    let mut records = chunk.records(r);
    while chunk.before(&records) {
        if records.next().is_none() {
            break;
        }
    }
    let (start, dropped) = (records.count(), records.dropped_problems());
    // The records a scan steps over are checked from the values it reads of them.
    let mut values = check.scan_values();
    let stop = ScanStop {
        records: chunk.until.unwrap_or(u64::MAX),
        offset: u64::MAX,
    };
    while !chunk.ended(&records) {
        let (per_type, items) = (&mut p.per_type, &mut p.items);
        let k = records.scan_values(per_type, stop, &mut values, |v| {
            if !check.record_values(v).is_empty() {
                kept.take(&check, items);
            }
            true
        });
        if k > 0 {
            p.end = records.offset();
            if chunk.ended(&records) {
                break;
            }
        }
        let Some(e) = records.next() else { break };
        let item = match e {
            Event::Record(v) => {
                p.per_type[v.record_id() as usize] += 1;
                p.end = v.offset() + v.len();
                if !check.record(&v).is_empty() {
                    kept.take(&check, &mut p.items);
                }
                continue;
            }
            Event::Problem(x) => Item::Problem(x),
            Event::Damage(x) => Item::Damage(x),
        };
        if kept.shown < max_errors {
            kept.shown += 1;
            p.items.push(item);
        } else {
            p.more += 1;
        }
    }
    p.records = records.count() - start;
    p.dropped = records.dropped_problems() - dropped;
    p.journal = check.interpreter_mut().take_dead_journal();
    p.counts = check.counts().map(|(k, s, n)| ((k, s), n)).collect();
    match chunks.get(k + 1) {
        Some((next, _)) => {
            if let From::Checkpoint(cp) = &next.from {
                let (mut here, mut stored) = (Vec::new(), Vec::new());
                records.checkpoint().to_bytes(r.schema(), &mut here);
                cp.to_bytes(r.schema(), &mut stored);
                p.differs = here != stored;
            }
            p.end_state = Some(interpreter_hash(&check));
        }
        None => p.last = Some(check),
    }
    p
}

/// The semantic pass of the whole trace on `threads` threads, from the analysis states beside
/// `idx` (found at `idx_path`); `None`, having given nothing to the sink, when they cannot be
/// used (no state file, one of another index, no checkpoint with a state).
#[allow(clippy::too_many_arguments)]
pub(super) fn run<'o>(
    o: &'o Opened,
    reader: &Reader<'o>,
    trace: &Path,
    idx: &Index,
    threads: usize,
    t: &mut Tally<'_>,
    check: &mut Check<'o>,
) -> Result<Option<()>, CommandError> {
    if t.options.max_ids != crate::analysis::DEFAULT_MAX_TRACKED {
        // The states were taken with the default limit of tracked entries.
        return Ok(None);
    }
    let Some(file) = t
        .options
        .seek
        .index_path(trace)
        .and_then(|p| state_path(&p))
    else {
        return Ok(None);
    };
    if !file.is_file() {
        if let Some(p) = t.options.seek.index_path(trace) {
            t.sink.warning(Warning::NoAnalysisState {
                index: crate::escape::escape_path(&p).into_owned(),
            });
        }
        return Ok(None);
    }
    let Ok(state) = AnalysisState::load_unverified(&file) else {
        return Ok(None);
    };
    if state.fits(idx, reader.schema()).is_err() || idx.fits(reader).is_err() {
        return Ok(None);
    }
    let Some(chunks) = chunks(
        reader,
        idx,
        &state,
        Some(threads * CHUNKS_PER_THREAD),
        CHECK_STATE_BYTES_PER_RECORD,
    ) else {
        return Ok(None);
    };
    let (max_ids, max_errors, max_info) =
        (t.options.max_ids, t.options.max_errors, t.options.max_info);
    let ids: Vec<usize> = (0..chunks.len()).collect();
    let (chunks, state) = (&chunks, &state);
    let done = parallel::ordered(
        threads,
        &ids,
        || o.reader(),
        |r, &k| work(r, o, chunks, k, max_ids, max_errors, max_info),
        |outputs| -> Result<Option<(u64, Differs)>, CommandError> {
            // The state file's checksum, while the workers read their first chunks; a file
            // that fails it is not used (nothing has been given to the sink yet).
            if state.verify_sum().is_err() {
                return Ok(None);
            }
            let mut ring = DeadRing::default();
            let mut counts: BTreeMap<(FindingKind, Severity), u64> = BTreeMap::new();
            let (mut dropped, mut differs) = (0u64, None);
            let mut ended: Option<u64> = None;
            for (k, (chunk, _)) in chunks.iter().enumerate() {
                parallel::release_behind(o, reader, chunk);
                let Some(mut p) = outputs.next() else { break };
                // The look-ups the chunk could not answer, answered from the undefines before.
                let asks: Vec<(u64, DeadKey)> = p
                    .items
                    .iter()
                    .filter_map(|i| match i {
                        Item::Finding(f, Some((m, _))) => {
                            Some((*m, (f.space.unwrap_or(0), f.key, f.id)))
                        }
                        _ => None,
                    })
                    .collect();
                let mut answers = ring.resolve(&p.journal, &asks).into_iter();
                // The last chunk's undefines answer no later chunk.
                if k + 1 < chunks.len() {
                    ring.extend(&mut p.journal);
                }
                for (key, n) in p.counts {
                    *counts.entry(key).or_default() += n;
                }
                for item in p.items {
                    match item {
                        Item::Problem(x) => t.problem(&x)?,
                        Item::Damage(x) => t.problem(&x)?,
                        Item::Finding(mut f, open) => {
                            if let Some((_, declared)) = open {
                                if let Some(n) = counts.get_mut(&(f.kind, f.severity)) {
                                    *n -= 1;
                                }
                                // As `Interpreter::not_alive` decides with one pass's memory.
                                let dead = answers.next().flatten();
                                f.severity = if dead.is_some() {
                                    Severity::Error
                                } else {
                                    declared
                                };
                                f.defined = dead;
                                f.what = dead.map(|_| "undefined".to_string());
                                *counts.entry((f.kind, f.severity)).or_default() += 1;
                            }
                            t.findings(check, std::slice::from_ref(&f))?;
                        }
                    }
                }
                for _ in 0..p.more {
                    t.problem(&"")?;
                }
                for (a, n) in t.per_type.iter_mut().zip(&p.per_type) {
                    *a += n;
                }
                t.n += p.records;
                dropped += p.dropped;
                t.sink.progress(chunk.start(reader) + p.end, t.n);
                // Where the previous chunk ended, this one started.
                if k > 0 && differs.is_none() && (p.start_state.is_none() || p.start_state != ended)
                {
                    differs = Some((
                        k - 1,
                        "its analysis state differs from the one the semantic pass reaches there",
                    ));
                }
                if differs.is_none() && p.differs {
                    differs = Some((k, "the metadata state differs"));
                }
                ended = p.end_state;
                if let Some(last) = p.last.take() {
                    *check = last;
                }
            }
            counts.retain(|_, n| *n > 0);
            *check.counts_mut() = counts;
            Ok(Some((dropped, differs)))
        },
    )?;
    let Some((dropped, differs)) = done else {
        return Ok(None);
    };
    // The findings at the end, from the last chunk's interpreter.
    check.finish_each(|check, f| t.findings(check, std::slice::from_ref(f)))?;
    t.sink.done();
    t.total += dropped;
    let verdict = match differs {
        None => Ok(()),
        Some((k, what)) => {
            // Chunk k ends at the checkpoint chunk k + 1 starts from.
            let record = chunks.get(k + 1).and_then(|c| c.0.first_index).unwrap_or(0);
            let checkpoint = idx
                .entries()
                .iter()
                .position(|e| e.record == record)
                .unwrap_or(0);
            Err(IndexError::Mismatch {
                name: idx.name().to_string(),
                checkpoint,
                record,
                what: what.into(),
            })
        }
    };
    t.index_verdict(
        idx,
        verdict,
        Some(threads.min(chunks.len())),
        Some(chunks.len() - 1),
    )?;
    Ok(Some(()))
}
