//! The one pass of the viewer exports: the heap events of one namespace, followed block by
//! block (a map by (key, id) to a slot of a slab, a shared id's blocks chained), into the
//! figures of each program point and the curves.

use std::collections::HashMap;

use foldhash::fast::RandomState;

use crate::analysis::{
    Finding, FindingKind, HeapEvent, HeapOp, Interpreter, Sink, SpaceId, SpaceKind,
};
use crate::decode::Event;
use crate::events::{read as read_events, EventOptions};
use crate::stacks::{Costs, Leaf, StackProfile};
use crate::Opened;

use super::{Curve, HeapView, PointFigures, Sample, ViewOptions, ViewerError};

const NONE: u32 = u32::MAX;

/// The heap of one namespace of `o` for the viewers (see the module docs): every event of the
/// trace, from a file, a pipe or a compressed stream. A damaged trace, or one with more live
/// ids than the interpreter follows, is refused.
pub fn read(o: &Opened, options: &ViewOptions) -> Result<HeapView, ViewerError> {
    let schema = o.schema();
    let spaces = &schema.analysis.namespaces;
    let ids: Vec<usize> = (0..spaces.len())
        .filter(|&i| spaces[i].kind == SpaceKind::Ids)
        .collect();
    if ids.is_empty() {
        return Err(ViewerError::NoAllocations);
    }
    let reader = o.reader();
    let mut interp = Interpreter::new(schema);
    // One pass: the choice is made before a record is read.
    let chosen = super::error::choose_space_of(&interp, None, options.space.as_deref())? as SpaceId;
    let ns = &spaces[chosen as usize];
    let mut t = Tracker::new(chosen, ns.sized, ns.shared, options.points);
    t.timed = interp.time_unit().is_some();
    let (out, ended) = read_events(
        o,
        &reader,
        &EventOptions::new(),
        |_| {},
        |events| {
            let mut sink = Collect {
                events: Vec::new(),
                limit: None,
            };
            while let Some(e) = events.next_event() {
                match e {
                    Event::Record(v) => {
                        sink.events.clear();
                        interp.record(&v, &mut sink);
                        if let Some(limit) = sink.limit {
                            return Err(ViewerError::Limit {
                                limit,
                                record: Some(t.records),
                            });
                        }
                        let clock = interp.clock();
                        let time = if t.timed {
                            clock.unwrap_or(0)
                        } else {
                            t.records
                        };
                        // The start: the first declared time of a data record.
                        if v.is_data() && !t.started && (clock.is_some() || !t.timed) {
                            t.started = true;
                            t.start = time;
                        }
                        t.time = time;
                        t.any_time |= t.timed && time != 0;
                        for ev in &sink.events {
                            t.event(ev);
                        }
                        if v.is_data() {
                            t.records += 1;
                        }
                    }
                    Event::Problem(p) => {
                        return Err(ViewerError::Damaged {
                            message: p.to_string(),
                        })
                    }
                    Event::Damage(d) => {
                        return Err(ViewerError::Damaged {
                            message: d.to_string(),
                        })
                    }
                }
            }
            sink.events.clear();
            interp.finish(&mut sink);
            Ok(())
        },
    );
    out?;
    if let Some(f) = ended.fault {
        return Err(ViewerError::Damaged {
            message: f.to_string(),
        });
    }
    if let Some(f) = ended.input_fault {
        return Err(ViewerError::Damaged {
            message: f.to_string(),
        });
    }
    Ok(t.finish(&interp))
}

/// The interpreter's events of one record, and whether it stopped at its limit.
struct Collect {
    events: Vec<HeapEvent>,
    limit: Option<u64>,
}

impl Sink for Collect {
    fn event(&mut self, e: HeapEvent) {
        self.events.push(e);
    }
    fn finding(&mut self, f: Finding) {
        if f.kind == FindingKind::Limit {
            self.limit = Some(f.expected.unwrap_or(0));
        }
    }
}

/// A live block.
#[derive(Debug, Clone, Copy)]
struct Block {
    point: u32,
    size: u64,
    born: u64,
    born_record: u64,
    thread: u32,
    /// The slot of the block below it holding the same shared id, plus one (0: none).
    below: u32,
}

/// A program point's running figures.
#[derive(Debug, Clone, Default)]
struct Point {
    site: Option<u64>,
    stack: Option<u64>,
    allocations: u64,
    bytes: u128,
    lifetimes: u128,
    lifetimes_records: u128,
    live_bytes: u128,
    live_blocks: u64,
    max_bytes: u128,
    max_blocks: u64,
    /// The live figures at the peak of epoch `epoch` (see `Tracker::touch`).
    epoch: u64,
    at_peak: (u128, u64),
}

impl Point {
    /// Its live bytes and blocks at the latest peak, `epoch` (0: there was none).
    fn at_peak(&self, epoch: u64) -> (u128, u64) {
        if epoch == 0 {
            (0, 0)
        } else if self.epoch == epoch {
            self.at_peak
        } else {
            (self.live_bytes, self.live_blocks)
        }
    }
}

/// A bounded curve being made: buckets of `span` events, each keeping its lowest point, its
/// highest (the first of equals) and its last, so that a counter drawn from them rises to every
/// high and falls to every low of the stretch.
#[derive(Debug, Clone)]
pub(super) struct Thinned {
    span: u64,
    limit: usize,
    /// (first event, lowest, highest, last) of each bucket.
    buckets: Vec<Bucket>,
    thinned: bool,
    sized: bool,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    first: u64,
    low: Sample,
    high: Sample,
    last: Sample,
}

impl Thinned {
    pub(super) fn new(points: usize, sized: bool) -> Thinned {
        Thinned {
            span: 1,
            limit: (points / 3).max(1),
            buckets: Vec::new(),
            thinned: false,
            sized,
        }
    }

    fn value(&self, s: &Sample) -> u128 {
        if self.sized {
            s.bytes
        } else {
            s.blocks as u128
        }
    }

    /// `b` joined into `a` (`b` comes after it).
    fn join(&self, a: &mut Bucket, b: &Bucket) {
        if self.value(&b.high) > self.value(&a.high) {
            a.high = b.high;
        }
        if self.value(&b.low) < self.value(&a.low) {
            a.low = b.low;
        }
        a.last = b.last;
    }

    pub(super) fn add(&mut self, s: Sample) {
        let point = Bucket {
            first: s.event,
            low: s,
            high: s,
            last: s,
        };
        if let Some(mut last) = self.buckets.last().copied() {
            if last.first / self.span == s.event / self.span {
                self.join(&mut last, &point);
                if let Some(l) = self.buckets.last_mut() {
                    *l = last;
                }
                return;
            }
        }
        while self.buckets.len() >= self.limit {
            // Pairs of slots merge: each bucket spans twice as many events.
            self.thinned = true;
            self.span = self.span.saturating_mul(2);
            let span = self.span;
            let mut merged: Vec<Bucket> = Vec::with_capacity(self.limit);
            for b in std::mem::take(&mut self.buckets) {
                match merged.last_mut() {
                    Some(m) if m.first / span == b.first / span => self.join(m, &b),
                    _ => merged.push(b),
                }
            }
            self.buckets = merged;
            if let Some(mut last) = self.buckets.last().copied() {
                if last.first / span == s.event / span {
                    self.join(&mut last, &point);
                    if let Some(l) = self.buckets.last_mut() {
                        *l = last;
                    }
                    return;
                }
            }
        }
        self.buckets.push(point);
    }

    pub(super) fn curve(self) -> Curve {
        let mut points = Vec::with_capacity(self.buckets.len() * 3);
        for b in self.buckets {
            let mut three = [b.low, b.high, b.last];
            three.sort_by_key(|s| s.event);
            for s in three {
                if points.last().is_none_or(|p: &Sample| p.event != s.event) {
                    points.push(s);
                }
            }
        }
        Curve {
            points,
            thinned: self.thinned,
        }
    }
}

/// One thread's live figures and curve.
struct Thread {
    id: u64,
    bytes: u128,
    blocks: u64,
    curve: Thinned,
}

pub(super) struct Tracker {
    space: SpaceId,
    sized: bool,
    shared: bool,
    timed: bool,
    /// Whether a declared time other than 0 was met.
    any_time: bool,
    /// Whether `start` is known.
    started: bool,
    points_limit: usize,
    map: HashMap<(u64, u64), u32, RandomState>,
    slab: Vec<Option<Block>>,
    free_slots: Vec<u32>,
    point_of: HashMap<(Option<u64>, Option<u64>), u32, RandomState>,
    points: Vec<Point>,
    thread_of: HashMap<u64, u32, RandomState>,
    threads: Vec<Thread>,
    live_bytes: u128,
    live_blocks: u64,
    peak: Option<Sample>,
    epoch: u64,
    curve: Thinned,
    changes: u64,
    records: u64,
    time: u64,
    start: u64,
}

impl Tracker {
    pub(super) fn new(space: SpaceId, sized: bool, shared: bool, points: usize) -> Tracker {
        Tracker {
            space,
            sized,
            shared,
            timed: false,
            any_time: false,
            started: false,
            points_limit: points,
            map: HashMap::default(),
            slab: Vec::new(),
            free_slots: Vec::new(),
            point_of: HashMap::default(),
            points: Vec::new(),
            thread_of: HashMap::default(),
            threads: Vec::new(),
            live_bytes: 0,
            live_blocks: 0,
            peak: None,
            epoch: 0,
            curve: Thinned::new(points, sized),
            changes: 0,
            records: 0,
            time: 0,
            start: 0,
        }
    }

    fn sample(&self, bytes: u128, blocks: u64) -> Sample {
        Sample {
            event: self.changes,
            record: self.records,
            time: self.time,
            bytes,
            blocks,
        }
    }

    pub(super) fn event(&mut self, e: &HeapEvent) {
        if e.space != self.space {
            return;
        }
        let mut threads = [NONE; 2];
        match e.op {
            HeapOp::Alloc { id, size, .. } => {
                threads[0] = self.alloc(e, id, size, None);
            }
            HeapOp::Free { id } => {
                if let Some(b) = self.take(e.key, id) {
                    threads[0] = self.end(&b);
                }
            }
            HeapOp::Move {
                old,
                new,
                size: Some(size),
            } => {
                // A realloc ends the old block and starts a new one (as `mtf stats` counts
                // it), at the old block's program point unless the event names one.
                let mut point = None;
                if let Some(b) = self.take(e.key, old) {
                    threads[0] = self.end(&b);
                    if e.site.is_none() && e.stack.is_none() {
                        point = Some(b.point);
                    }
                }
                threads[1] = self.alloc(e, new, size, point);
            }
            HeapOp::Move {
                old,
                new,
                size: None,
            } => {
                // A block renamed keeps its size, birth and point.
                if let Some(mut b) = self.take(e.key, old) {
                    b.below = 0;
                    threads[0] = self.put(e.key, new, b);
                }
            }
        }
        self.changed(threads);
    }

    /// After an event: the peak, and the curves' points.
    fn changed(&mut self, threads: [u32; 2]) {
        let s = self.sample(self.live_bytes, self.live_blocks);
        let higher = match &self.peak {
            None => s.bytes > 0 || s.blocks > 0,
            Some(p) if self.sized => s.bytes > p.bytes,
            Some(p) => s.blocks > p.blocks,
        };
        if higher {
            self.peak = Some(s);
            self.epoch += 1;
        }
        self.curve.add(s);
        for (i, &t) in threads.iter().enumerate() {
            if t == NONE || threads[..i].contains(&t) {
                continue;
            }
            let th = &self.threads[t as usize];
            let s = self.sample(th.bytes, th.blocks);
            self.threads[t as usize].curve.add(s);
        }
        self.changes += 1;
    }

    /// Before a point's live figures change: keep them as they were at the latest peak, the
    /// first time they change after it (a point that does not change after a peak still has
    /// them at the end).
    fn touch(&mut self, p: u32) {
        let epoch = self.epoch;
        let pt = &mut self.points[p as usize];
        if pt.epoch < epoch {
            pt.epoch = epoch;
            pt.at_peak = (pt.live_bytes, pt.live_blocks);
        }
    }

    fn thread(&mut self, id: Option<u64>) -> u32 {
        let Some(id) = id else { return NONE };
        let n = self.threads.len() as u32;
        let limit = self.points_limit;
        let sized = self.sized;
        let threads = &mut self.threads;
        *self.thread_of.entry(id).or_insert_with(|| {
            threads.push(Thread {
                id,
                bytes: 0,
                blocks: 0,
                curve: Thinned::new(limit, sized),
            });
            n
        })
    }

    fn alloc(&mut self, e: &HeapEvent, id: u64, size: u64, point: Option<u32>) -> u32 {
        let size = if self.sized { size } else { 0 };
        let p = match point {
            Some(p) => p,
            None => {
                let n = self.points.len() as u32;
                let points = &mut self.points;
                *self.point_of.entry((e.site, e.stack)).or_insert_with(|| {
                    points.push(Point {
                        site: e.site,
                        stack: e.stack,
                        ..Point::default()
                    });
                    n
                })
            }
        };
        let thread = self.thread(e.thread);
        let pt = &mut self.points[p as usize];
        pt.allocations += 1;
        pt.bytes += size as u128;
        let b = Block {
            point: p,
            size,
            born: self.time,
            born_record: self.records,
            thread,
            below: 0,
        };
        self.put(e.key, id, b)
    }

    /// Puts `b` alive under `id`, its figures added; an id alive in a namespace that is not
    /// shared ends the block that held it. The block's thread.
    fn put(&mut self, key: u64, id: u64, mut b: Block) -> u32 {
        if let Some(&prev) = self.map.get(&(key, id)) {
            if self.shared {
                b.below = prev + 1;
            } else if let Some(old) = self.take(key, id) {
                self.end(&old);
            }
        }
        self.touch(b.point);
        let pt = &mut self.points[b.point as usize];
        pt.live_bytes += b.size as u128;
        pt.live_blocks += 1;
        let higher = if self.sized {
            pt.live_bytes > pt.max_bytes
        } else {
            pt.live_blocks > pt.max_blocks
        };
        if higher {
            pt.max_bytes = pt.live_bytes;
            pt.max_blocks = pt.live_blocks;
        }
        self.live_bytes += b.size as u128;
        self.live_blocks += 1;
        if let Some(t) = self.threads.get_mut(b.thread as usize) {
            t.bytes += b.size as u128;
            t.blocks += 1;
        }
        let slot = match self.free_slots.pop() {
            Some(s) => {
                self.slab[s as usize] = Some(b);
                s
            }
            None => {
                self.slab.push(Some(b));
                (self.slab.len() - 1) as u32
            }
        };
        self.map.insert((key, id), slot);
        b.thread
    }

    /// Takes the block holding `id` out of the live blocks (a shared id's most recent), its
    /// figures taken off.
    fn take(&mut self, key: u64, id: u64) -> Option<Block> {
        let slot = self.map.remove(&(key, id))?;
        let b = self.slab.get_mut(slot as usize)?.take()?;
        self.free_slots.push(slot);
        if b.below != 0 {
            self.map.insert((key, id), b.below - 1);
        }
        self.touch(b.point);
        let pt = &mut self.points[b.point as usize];
        pt.live_bytes -= b.size as u128;
        pt.live_blocks -= 1;
        self.live_bytes -= b.size as u128;
        self.live_blocks -= 1;
        if let Some(t) = self.threads.get_mut(b.thread as usize) {
            t.bytes -= b.size as u128;
            t.blocks -= 1;
        }
        Some(b)
    }

    /// A block's lifetime ended now. Its thread.
    fn end(&mut self, b: &Block) -> u32 {
        let p = &mut self.points[b.point as usize];
        p.lifetimes += self.time.saturating_sub(b.born) as u128;
        p.lifetimes_records += self.records.saturating_sub(b.born_record) as u128;
        b.thread
    }

    fn finish(mut self, interp: &Interpreter<'_>) -> HeapView {
        // Blocks alive at the end live until the end (DHAT's t-end).
        // Where every declared time is 0 (a format whose times are optional, written without
        // them), times are data records, as `mtf stats` says (`clock none`).
        let timed = self.timed && self.any_time;
        let (end_time, end_record) = (self.time, self.records);
        for b in self.slab.iter().flatten() {
            let p = &mut self.points[b.point as usize];
            p.lifetimes += end_time.saturating_sub(b.born) as u128;
            p.lifetimes_records += end_record.saturating_sub(b.born_record) as u128;
        }
        let epoch = self.epoch;
        let ns = &interp.namespaces()[self.space as usize];
        let mut figures = Vec::with_capacity(self.points.len());
        let leaves = self.points.iter().map(|p| {
            let (peak, peak_blocks) = p.at_peak(epoch);
            figures.push(PointFigures {
                lifetimes: if timed {
                    p.lifetimes
                } else {
                    p.lifetimes_records
                },
                max_bytes: if self.sized {
                    p.max_bytes
                } else {
                    p.max_blocks as u128
                },
                max_blocks: p.max_blocks,
            });
            let costs = Costs {
                allocations: p.allocations,
                bytes: p.bytes,
                temporary: 0,
                peak,
                peak_blocks,
                leaked: p.live_bytes,
                leaked_blocks: p.live_blocks,
            };
            let name = p.site.and_then(|s| interp.site_name(self.space, s));
            (p.site, p.stack, name, costs)
        });
        let profile = if interp.has_stacks(self.space) {
            interp.stack_profile(self.space, leaves)
        } else {
            let mut p = StackProfile {
                space: ns.name.clone(),
                sized: ns.sized,
                contexts: true,
                ..StackProfile::default()
            };
            p.leaves = leaves
                .map(|(site, _, name, costs)| Leaf {
                    node: None,
                    // A site the trace names with nothing (mtrace's line without a caller)
                    // is unknown; one it does not name is shown by its id.
                    site: match name {
                        Some(n) if n.is_empty() => None,
                        Some(n) => Some(n),
                        None => site.map(|s| format!("site {s}")),
                    },
                    suppressed: false,
                    costs,
                })
                .collect();
            p
        };
        let end = self.sample(self.live_bytes, self.live_blocks);
        let by_records = |mut s: Sample| {
            if !timed {
                s.time = s.record;
            }
            s
        };
        let curve = |t: Thinned| {
            let mut c = t.curve();
            for s in &mut c.points {
                *s = by_records(*s);
            }
            c
        };
        HeapView {
            space: ns.name.clone(),
            sized: self.sized,
            time_unit: interp.time_unit().filter(|_| timed),
            profile,
            points: figures,
            peak: self.peak.map(by_records),
            end: by_records(end),
            start: if timed { self.start } else { 0 },
            curve: curve(self.curve),
            threads: self
                .threads
                .into_iter()
                .map(|t| (t.id, curve(t.curve)))
                .collect(),
            records: self.records,
        }
    }
}

#[cfg(test)]
impl Tracker {
    /// For the tests: each point's (site, allocations, bytes, at the peak, max bytes, live at
    /// the end), and the peak.
    #[allow(clippy::type_complexity)]
    pub(super) fn points_for_test(
        &self,
    ) -> (
        Vec<(Option<u64>, u64, u128, (u128, u64), u128, (u128, u64))>,
        Option<Sample>,
    ) {
        let points = self
            .points
            .iter()
            .map(|p| {
                (
                    p.site,
                    p.allocations,
                    p.bytes,
                    p.at_peak(self.epoch),
                    p.max_bytes,
                    (p.live_bytes, p.live_blocks),
                )
            })
            .collect();
        (points, self.peak)
    }

    pub(super) fn next_record(&mut self) {
        self.records += 1;
        self.time = self.records;
    }
}
