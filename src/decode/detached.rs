//! [`Detached`]: events copied out of a decoder, to be replayed later — on another thread, after
//! the decoder has moved on — as the same record views, problems and damage.
//!
//! Parallel decoding (`metatf::parallel`) decodes chunks of a trace on worker threads into
//! `Detached` batches and replays them in trace order on one thread, through the same code that
//! consumes a [`Records`](super::Records).

// Design: a batch holds the decoded values of all its records in one vector and, per record,
// the view's scalars, so filling it allocates only when the vectors grow (they are sized by the
// chunk, not per record) and replaying it allocates nothing. A record's index and a problem's
// record index are the chunk's own; the replay adds the number of records of the chunks before
// it, and drops a problem's index when an earlier chunk was damaged (the sequential reader's
// count is no longer exact then either).

use std::collections::VecDeque;
use std::ops::Range;

use crate::dtd::RecordId;

use super::error::{Damage, Problem};
use super::reader::Reader;
use super::records::Event;
use super::value::FieldValue;
use super::view::{MetaChange, RecordView};

/// One record of a batch: a [`RecordView`] without its borrows.
#[derive(Debug, Clone)]
struct Rec {
    record_id: RecordId,
    section: u8,
    offset: u64,
    len: u64,
    index: u64,
    values: Range<usize>,
    meta: Option<MetaChange>,
}

#[derive(Debug)]
enum Item {
    Record(Rec),
    Problem(Box<Problem>),
    Damage(Box<Damage>),
}

/// Events of one decoder, detached from it. See the module docs.
#[derive(Debug, Default)]
pub struct Detached {
    items: Vec<Item>,
    values: Vec<FieldValue>,
    records: u64,
    damaged: bool,
    dropped: u64,
}

impl Detached {
    /// An empty batch.
    pub fn new() -> Detached {
        Detached::default()
    }

    /// Keep one event.
    pub fn push(&mut self, event: Event<'_>) {
        let item = match event {
            Event::Record(v) => {
                self.records += 1;
                let start = self.values.len();
                self.values.extend_from_slice(v.values);
                Item::Record(Rec {
                    record_id: v.record_id,
                    section: v.section,
                    offset: v.offset,
                    len: v.len,
                    index: v.index,
                    values: start..self.values.len(),
                    meta: v.meta,
                })
            }
            Event::Problem(p) => Item::Problem(p),
            Event::Damage(d) => {
                self.damaged = true;
                Item::Damage(d)
            }
        };
        self.items.push(item);
    }

    /// Note the problems a decoder dropped ([`Records::dropped_problems`](super::Records::dropped_problems)).
    pub fn add_dropped(&mut self, n: u64) {
        self.dropped += n;
    }

    /// Records kept.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Whether a region was damaged (record indices after it are approximate).
    pub fn damaged(&self) -> bool {
        self.damaged
    }

    /// Problems dropped by the decoder (see [`Detached::add_dropped`]).
    pub fn dropped_problems(&self) -> u64 {
        self.dropped
    }

    /// Events kept (records, problems and damage).
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether no event was kept.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Replay the events through `reader` (a reader of the same trace and schema as the one
    /// that decoded them): record indices, and problems' record indices, are shifted by
    /// `first_index`; problems lose their record index when `exact` is false (an earlier part
    /// of the trace was damaged).
    pub fn replay<'b>(self, reader: &'b Reader<'b>, first_index: u64, exact: bool) -> Replay<'b> {
        Replay {
            reader,
            values: self.values,
            items: VecDeque::from(self.items),
            shift: first_index,
            given: 0,
            exact,
        }
    }
}

/// The events of a [`Detached`] batch, in the order they were kept: a lending iterator like
/// [`Records`](super::Records).
pub struct Replay<'b> {
    reader: &'b Reader<'b>,
    values: Vec<FieldValue>,
    items: VecDeque<Item>,
    shift: u64,
    /// Records given out.
    given: u64,
    exact: bool,
}

impl Replay<'_> {
    /// Events not given out yet.
    pub fn remaining(&self) -> usize {
        self.items.len()
    }

    /// The batch's memory, emptied, for another batch (filling a batch allocates only while
    /// its vectors grow).
    pub fn recycle(self) -> Detached {
        let mut values = self.values;
        values.clear();
        let mut items = Vec::from(self.items);
        items.clear();
        Detached {
            items,
            values,
            ..Detached::default()
        }
    }

    /// The index the next record has: the records before the batch and those given out.
    pub fn count(&self) -> u64 {
        self.shift + self.given
    }

    /// The next event, or `None` at the end of the batch.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Event<'_>> {
        let fix = |i: &mut Option<u64>, shift: u64, exact: bool| {
            *i = if exact { i.map(|i| i + shift) } else { None };
        };
        Some(match self.items.pop_front()? {
            Item::Record(r) => Event::Record({
                self.given += 1;
                RecordView {
                    reader: self.reader,
                    record_id: r.record_id,
                    section: r.section,
                    offset: r.offset,
                    len: r.len,
                    index: r.index + self.shift,
                    values: self.values.get(r.values).unwrap_or(&[]),
                    meta: r.meta,
                }
            }),
            Item::Problem(mut p) => {
                fix(&mut p.at.record_index, self.shift, self.exact);
                Event::Problem(p)
            }
            Item::Damage(mut d) => {
                fix(&mut d.at.record_index, self.shift, self.exact);
                Event::Damage(d)
            }
        })
    }
}
