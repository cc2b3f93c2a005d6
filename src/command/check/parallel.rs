//! A check that validates only (no semantic pass, the whole trace) on several threads: each
//! worker counts its chunk's records per type and keeps its first problems; they are given to
//! the sink here in trace order with the trace's record numbers, as one thread gives them.

use crate::decode::{Damage, Event, Problem, Reader, ScanStop};
use crate::parallel::{self, Chunk, ChunkPlan, From};
use crate::Opened;

use super::{CommandError, Tally};

/// What a worker finds in a chunk.
struct Validated {
    per_type: Vec<u64>,
    /// The first problems, in order (at most `max_errors`: no more can be shown).
    problems: Vec<Found>,
    /// Problems beyond those.
    more: u64,
    records: u64,
    damaged: bool,
    dropped: u64,
    end: u64,
    /// Whether the decoder's state where the chunk ends differs from the stored checkpoint the
    /// next chunk starts at.
    differs: bool,
}

enum Found {
    Problem(Box<Problem>),
    Damage(Box<Damage>),
}

/// Validate chunk `i` of `plan` with the worker's reader `r`.
fn work(
    r: &mut Reader<'_>,
    plan: &ChunkPlan,
    i: usize,
    types: usize,
    max: u64,
    scan: bool,
) -> Validated {
    let chunk = &plan.chunks[i];
    let mut v = Validated {
        per_type: vec![0; types],
        problems: Vec::new(),
        more: 0,
        records: 0,
        damaged: false,
        dropped: 0,
        end: chunk.bytes,
        differs: false,
    };
    let mut records = chunk.records(r);
    records.skip_values(true);
    while chunk.before(&records) {
        if records.next().is_none() {
            break;
        }
    }
    let (start, dropped) = (records.count(), records.dropped_problems());
    let stop = ScanStop {
        records: chunk.until.unwrap_or(u64::MAX),
        offset: u64::MAX,
    };
    while !chunk.ended(&records) {
        // Records that cannot be invalid but for their length, without events.
        if scan && records.scan(&mut v.per_type, stop) > 0 {
            v.end = records.offset();
            if chunk.ended(&records) {
                break;
            }
        }
        let Some(e) = records.next() else { break };
        let found = match e {
            Event::Record(view) => {
                v.per_type[view.record_id() as usize] += 1;
                v.end = view.offset() + view.len();
                continue;
            }
            Event::Problem(p) => Found::Problem(p),
            Event::Damage(d) => {
                v.damaged = true;
                Found::Damage(d)
            }
        };
        if (v.problems.len() as u64) < max {
            v.problems.push(found);
        } else {
            v.more += 1;
        }
    }
    v.records = records.count() - start;
    v.dropped = records.dropped_problems() - dropped;
    // Where the next chunk resumes, the decoder must stand as the stored checkpoint says.
    if let Some(From::Checkpoint(cp)) = plan.chunks.get(i + 1).map(|c| &c.from) {
        let (mut here, mut stored) = (Vec::new(), Vec::new());
        records.checkpoint().to_bytes(r.schema(), &mut here);
        cp.to_bytes(r.schema(), &mut stored);
        v.differs = here != stored;
    }
    v
}

/// Where the outputs stand as they are taken in order.
struct Position {
    /// The index of the next chunk's first record, as far as it is known.
    first: u64,
    /// Whether `first` is exact (no damage skipped records before).
    exact: bool,
    dropped: u64,
    checkpoints: usize,
    differs: Option<usize>,
}

impl Position {
    /// Take the output `v` of `chunk`: its problems to the sink with the trace's record
    /// numbers, its counts added.
    fn take(&mut self, chunk: &Chunk, v: Validated, t: &mut Tally<'_>) -> std::io::Result<()> {
        if matches!(chunk.from, From::Checkpoint(_)) {
            self.checkpoints += 1;
        }
        // A chunk from a checkpoint counts records as the whole trace does.
        let (shift, keep) = match chunk.first_index {
            Some(f) => {
                self.first = f;
                (0, true)
            }
            None => (self.first, self.exact),
        };
        for found in v.problems {
            match found {
                Found::Problem(mut p) => {
                    parallel::shift_position(&mut p.at, shift, keep);
                    t.problem(&p)?;
                }
                Found::Damage(mut d) => {
                    parallel::shift_position(&mut d.at, shift, keep);
                    t.problem(&d)?;
                }
            }
        }
        for _ in 0..v.more {
            t.problem(&"")?;
        }
        for (a, n) in t.per_type.iter_mut().zip(&v.per_type) {
            *a += n;
        }
        self.first += v.records;
        self.exact &= !v.damaged;
        self.dropped += v.dropped;
        if v.differs && self.differs.is_none() {
            // The checkpoint the next chunk starts at.
            self.differs = Some(self.checkpoints);
        }
        t.n = self.first;
        t.sink.progress(v.end, self.first);
        Ok(())
    }
}

/// Validate on `threads` threads. The problems dropped by the decoders, and the first
/// checkpoint of the plan's index at which the decoder's state differs from the stored one.
pub(super) fn validate(
    o: &Opened,
    reader: &Reader<'_>,
    plan: &ChunkPlan,
    threads: usize,
    t: &mut Tally<'_>,
) -> Result<(u64, Option<usize>), CommandError> {
    let types = t.per_type.len();
    let (max, scan) = (t.options.max_errors, t.options.scan);
    let ids: Vec<usize> = (0..plan.chunks.len()).collect();
    parallel::ordered(
        threads,
        &ids,
        || o.reader(),
        |r, &i| work(r, plan, i, types, max, scan),
        |outputs| -> Result<(u64, Option<usize>), CommandError> {
            let mut at = Position {
                first: 0,
                exact: true,
                dropped: 0,
                checkpoints: 0,
                differs: None,
            };
            for chunk in &plan.chunks {
                parallel::release_behind(o, reader, chunk);
                let Some(v) = outputs.next() else { break };
                at.take(chunk, v, t)?;
            }
            if !plan.counted {
                if let Some(p) = reader.record_count_problem(at.first, at.exact) {
                    t.problem(&p)?;
                }
            }
            Ok((at.dropped, at.differs))
        },
    )
}
