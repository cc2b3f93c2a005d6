//! [`Events`]: the events of a whole trace, decoded chunk by chunk on worker threads and given
//! out in trace order on the calling thread, as [`Reader::records`] gives them.

use std::sync::Mutex;

use crate::decode::{Detached, Event, EventStream, Reader, Records, Replay};
use crate::Opened;

use super::plan::{Chunk, ChunkPlan};
use super::{ordered, Outputs};

/// How far behind the chunk being read a mapped trace's pages are released.
const RELEASE_BEHIND: u64 = 8 << 20;

/// Let the pages of a mapped trace well before `chunk` go, when every chunk before it has been
/// consumed: the workers decode after it, and a decoder of part of a trace releases nothing
/// itself (its neighbours may still be reading there).
pub fn release_behind(opened: &Opened, reader: &Reader<'_>, chunk: &Chunk) {
    opened
        .trace()
        .release_before(chunk.start(reader).saturating_sub(RELEASE_BEHIND));
}

/// Decode the trace of `opened` as `plan` cuts it on `jobs` threads, and let `consume` read
/// every event in trace order through `reader` (a reader of `opened`): the same records,
/// problems and damage, with the same record indices, as `reader.records()` yields, the header's
/// record count checked at the end. With `skip_values`, as [`Records::skip_values`].
///
/// ```
/// use metatf::decode::Event;
/// let opened = metatf::open("traces/hatf-split-le64.mtf")?;
/// let reader = opened.reader();
/// let plan = metatf::parallel::plan(&reader);
/// let n = metatf::parallel::events(&opened, &reader, &plan, 2, false, |events| {
///     let mut n = 0;
///     while let Some(e) = events.next() {
///         if let Event::Record(r) = e {
///             assert_eq!(r.index(), n);
///             n += 1;
///         }
///     }
///     n
/// });
/// let mut records = reader.records();
/// while records.next().is_some() {}
/// assert_eq!(n, records.count());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn events<'r, T>(
    opened: &Opened,
    reader: &'r Reader<'r>,
    plan: &ChunkPlan,
    jobs: usize,
    skip_values: bool,
    consume: impl FnOnce(&mut Events<'_, '_, 'r>) -> T,
) -> T {
    let chunks = &plan.chunks;
    // Batches replayed go back to the workers: their memory is allocated once per window.
    let spare = Mutex::new(Vec::new());
    ordered(
        jobs,
        chunks,
        || opened.reader(),
        |reader, chunk| {
            let out = spare
                .lock()
                .ok()
                .and_then(|mut s| s.pop())
                .unwrap_or_default();
            decode_chunk(reader, chunk, skip_values, out)
        },
        |outputs| {
            let mut events = Events {
                outputs,
                opened,
                reader,
                chunks,
                next: 0,
                cur: Cur::None,
                first: 0,
                exact: true,
                dropped: 0,
                live_dropped: 0,
                done: false,
                counted: plan.counted,
                skip_values,
                spare: &spare,
            };
            consume(&mut events)
        },
    )
}

/// Decode a chunk into memory, or nothing for an inline chunk.
fn decode_chunk<'r>(
    reader: &'r Reader<'r>,
    chunk: &Chunk,
    skip_values: bool,
    mut out: Detached,
) -> Option<Detached> {
    if chunk.inline {
        return None;
    }
    let mut records = chunk.records(reader);
    records.skip_values(skip_values);
    while chunk.before(&records) {
        if records.next().is_none() {
            break;
        }
    }
    let dropped = records.dropped_problems();
    while !chunk.ended(&records) {
        match records.next() {
            Some(e) => out.push(e),
            None => break,
        }
    }
    out.add_dropped(records.dropped_problems() - dropped);
    Some(out)
}

enum Cur<'r> {
    None,
    Replay(Replay<'r>),
    /// A chunk decoded here (its index in the plan).
    Live(Box<Records<'r>>, usize),
}

/// The events of a trace decoded on several threads (see [`events`]).
pub struct Events<'a, 'o, 'r> {
    outputs: &'a mut Outputs<'o, Option<Detached>>,
    opened: &'a Opened,
    reader: &'r Reader<'r>,
    chunks: &'a [Chunk],
    next: usize,
    cur: Cur<'r>,
    /// Records in the chunks before the current one.
    first: u64,
    /// No damage in them.
    exact: bool,
    dropped: u64,
    /// Problems the live decode had dropped when it started (a resumed decode counts those
    /// before its checkpoint).
    live_dropped: u64,
    done: bool,
    /// Whether the last chunk checks the record count itself.
    counted: bool,
    skip_values: bool,
    spare: &'a Mutex<Vec<Detached>>,
}

impl<'r> Events<'_, '_, 'r> {
    /// The next event, or `None` at the end of the trace.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Event<'_>> {
        loop {
            let ready = match &mut self.cur {
                Cur::None => false,
                Cur::Replay(r) => r.remaining() > 0,
                Cur::Live(r, i) => !self.chunks.get(*i).is_some_and(|c| c.ended(r)) && !r.is_done(),
            };
            if ready {
                return match &mut self.cur {
                    Cur::None => None,
                    Cur::Replay(r) => r.next(),
                    Cur::Live(r, _) => r.next(),
                };
            }
            if let Cur::Live(r, _) = &self.cur {
                self.first = r.count();
                self.exact = r.is_exact();
                self.dropped += r.dropped_problems() - self.live_dropped;
            }
            if let Cur::Replay(r) = std::mem::replace(&mut self.cur, Cur::None) {
                if let Ok(mut s) = self.spare.lock() {
                    s.push(r.recycle());
                }
            }
            if self.done {
                return None;
            }
            let Some(chunk) = self.chunks.get(self.next) else {
                self.done = true;
                if self.counted {
                    return None;
                }
                return self
                    .reader
                    .record_count_problem(self.first, self.exact)
                    .map(|p| Event::Problem(Box::new(p)));
            };
            self.next += 1;
            release_behind(self.opened, self.reader, chunk);
            // An output for every chunk, in order (none for an inline one).
            let out = self.outputs.next();
            match out {
                Some(Some(d)) => {
                    let (n, damaged) = (d.records(), d.damaged());
                    self.dropped += d.dropped_problems();
                    self.cur = Cur::Replay(match chunk.first_index {
                        // Indices from a checkpoint are the trace's own.
                        Some(f) => {
                            self.first = f;
                            d.replay(self.reader, 0, true)
                        }
                        None => d.replay(self.reader, self.first, self.exact),
                    });
                    self.first += n;
                    self.exact &= !damaged;
                }
                _ => {
                    let mut r = chunk.records(self.reader);
                    r.skip_values(self.skip_values);
                    while chunk.before(&r) {
                        if r.next().is_none() {
                            break;
                        }
                    }
                    if chunk.first_index.is_none() {
                        r.count_from(self.first, self.exact);
                    }
                    // Every chunk before it is consumed, the workers are after it.
                    r.release_pages(true);
                    self.live_dropped = r.dropped_problems();
                    self.cur = Cur::Live(Box::new(r), self.next - 1);
                }
            }
        }
    }

    /// Records given out so far.
    pub fn count(&self) -> u64 {
        match &self.cur {
            Cur::Live(r, _) => r.count(),
            Cur::Replay(r) => r.count(),
            Cur::None => self.first,
        }
    }

    /// Problems not reported because one record had more than
    /// [`MAX_PROBLEMS_PER_RECORD`](crate::decode::MAX_PROBLEMS_PER_RECORD), as
    /// [`Records::dropped_problems`].
    pub fn dropped_problems(&self) -> u64 {
        self.dropped
            + match &self.cur {
                Cur::Live(r, _) => r.dropped_problems() - self.live_dropped,
                _ => 0,
            }
    }
}

impl EventStream for Events<'_, '_, '_> {
    fn next_event(&mut self) -> Option<Event<'_>> {
        self.next()
    }
    fn dropped_problems(&self) -> u64 {
        Events::dropped_problems(self)
    }
}
