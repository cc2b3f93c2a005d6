//! One pass over a trace: records and heap events fed to the accumulators, in trace order.

use crate::analysis::event::{HeapEvent, Places};
use crate::decode::RecordView;
use crate::dtd::{RecordId, SlotId};

use super::lines::SourceLines;
use super::source::Inlet;

pub mod merge;
pub mod resume;
use super::{
    Clock, Declared, HeapEventSource, HeapStats, Place, Position, RecordCounter, Stats, Window,
};

/// [`compute`] with the trace's own declarations.
pub fn compute_opened(opened: &crate::Opened, window: Window) -> Stats {
    let reader = opened.reader();
    let mut source = Declared::new(opened.schema());
    compute(&reader, &mut source, window)
}

/// Reads `reader`'s records once, feeding the record counter and the heap statistics with the
/// events `source` makes of them, and returns the figures of the slice `window`. Reading stops
/// at the end of the slice.
pub fn compute(
    reader: &crate::decode::Reader<'_>,
    source: &mut dyn HeapEventSource,
    window: Window,
) -> Stats {
    compute_from(reader, &mut reader.records(), source, window)
}

/// [`compute`] over the events of `records` (a reader's records, or the same decoded on
/// several threads: `metatf::parallel::events`).
pub fn compute_from(
    reader: &crate::decode::Reader<'_>,
    records: &mut dyn crate::decode::EventStream,
    source: &mut dyn HeapEventSource,
    window: Window,
) -> Stats {
    compute_scoped(reader, records, source, window, StatsScope::All)
}

/// Which figures a statistics run computes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StatsScope {
    /// Every figure of `mtf stats`.
    #[default]
    All,
    /// The heap figures by site and stack and the totals only: no records per type, no source
    /// lines, no curve, no lifetimes (their parts of [`Stats`] come out empty). What a stack
    /// profile needs, at less cost per record.
    Heap,
}

/// [`compute_from`] with only the figures `scope` asks for.
pub fn compute_scoped(
    reader: &crate::decode::Reader<'_>,
    records: &mut dyn crate::decode::EventStream,
    source: &mut dyn HeapEventSource,
    window: Window,
    scope: StatsScope,
) -> Stats {
    let mut pass = Pass::new(reader.schema(), source, window);
    if scope == StatsScope::Heap {
        pass.lean = true;
        pass.heap.heap_only();
    }
    pass.feed(records);
    if pass.end.is_some() && pass.source.names_later() {
        // Names of sites may come from tables after the slice.
        pass.read_names(records);
    }
    pass.problems += records.dropped_problems();
    pass.finish()
}

/// The state of one pass: the accumulators, the clock, where the slice opened and closed.
struct Pass<'a, 's> {
    schema: &'s crate::dtd::Schema,
    source: &'a mut dyn HeapEventSource,
    window: Window,
    counter: RecordCounter,
    heap: HeapStats,
    lines: SourceLines,
    /// The heap events of the current record, and the places of their blocks.
    events: Vec<HeapEvent>,
    places: Vec<Option<Places>>,
    /// Whether the statistics keep each block's figures at the interpreter's number for it
    /// (`Places`) rather than in their own map. A pass that saves or restores an analysis state
    /// (`resume.rs`) uses the map: the state holds blocks by id (docs/format.md §15.4).
    placed: bool,
    problems: u64,
    /// Records inside the slice that only encode the data.
    other: u64,
    /// The latest declared time.
    time: Option<u64>,
    /// The first declared time, and whether another one came (a clock that moves).
    first_time: Option<u64>,
    moved: bool,
    start: Option<Position>,
    end: Option<Position>,
    /// The next data record's position: positions count data records only (docs/stats.md).
    data: u64,
    /// Frees of ids not alive that the source counts itself (no event): attributed to the
    /// record that made them, counted when it is inside the slice.
    unknown_seen: Vec<u64>,
    /// The sum of `unknown_seen` (what the source's total is compared with).
    unknown_seen_total: u64,
    unknown_inside: Vec<u64>,
    /// [`StatsScope::Heap`]: no record counts, no source lines.
    lean: bool,
    /// Whether the source hands events over as they come and the slice's ends are record
    /// indices (or none): see [`Pass::record_direct`].
    direct: bool,
}

impl<'a, 's> Pass<'a, 's> {
    fn new(
        schema: &'s crate::dtd::Schema,
        source: &'a mut dyn HeapEventSource,
        window: Window,
    ) -> Self {
        let spaces = source.spaces();
        let n_spaces = spaces.len();
        let by_time = |b: Option<super::Bound>| matches!(b, Some(super::Bound::Time(_)));
        let direct = source.direct() && !by_time(window.from) && !by_time(window.to);
        Pass {
            schema,
            counter: RecordCounter::new(schema),
            heap: HeapStats::new(spaces),
            lines: SourceLines::new(schema),
            source,
            window,
            events: Vec::new(),
            places: Vec::new(),
            placed: true,
            problems: 0,
            other: 0,
            time: None,
            first_time: None,
            moved: false,
            start: None,
            end: None,
            data: 0,
            unknown_seen: vec![0; n_spaces],
            unknown_seen_total: 0,
            unknown_inside: vec![0; n_spaces],
            lean: false,
            direct,
        }
    }

    /// Takes one record; false once the slice has ended (the record is the first after it).
    fn record(&mut self, v: &RecordView<'_>) -> bool {
        if self.direct && self.placed {
            return self.record_direct(v);
        }
        self.events.clear();
        self.places.clear();
        let time = if self.placed {
            self.source
                .record_placed(v, &mut self.events, &mut self.places)
        } else {
            let t = self.source.record(v, &mut self.events);
            self.places.resize(self.events.len(), None);
            t
        };
        self.note_time(time);
        let line = if self.lean {
            None
        } else {
            self.lines.record(v)
        };
        let is_data = v.is_data();
        let at = Position {
            record: self.data,
            time: self.time,
            source: line,
        };
        // Records that only encode (metadata, section starts, table elements, split streams)
        // have no position of their own: they are counted apart, inside a slice once it opened.
        let place = if is_data {
            self.data += 1;
            self.window.place(at.record, at.time)
        } else if self.start.is_some() {
            Place::Inside
        } else {
            Place::Before
        };
        if !self.enter(place, is_data, at, |c| c.record(v)) {
            return false;
        }
        for (ev, places) in self.events.iter().zip(&self.places) {
            let at = Position {
                time: ev.time,
                ..at
            };
            match places {
                Some(p) => self.heap.event_placed(ev, at, *p),
                None => self.heap.event_at(ev, at),
            }
        }
        true
    }

    // Design: the events of a record used to be gathered in a vector (128 bytes each, with
    // their places) and applied after the record, because where the record stands in the slice
    // depends on its time, known once it is interpreted. When the slice's ends are record
    // indices (or there are none: every whole pass) its place is known before, so each event is
    // applied as the interpreter makes it. The order of everything `HeapStats` sees is the same:
    // the slice opens (at the record's time, which is every one of its events' time,
    // `Cx::emit`) before its first event, or after the record when it has none.
    /// [`Pass::record`] for a source that hands events over as they come (`direct`).
    fn record_direct(&mut self, v: &RecordView<'_>) -> bool {
        let line = if self.lean {
            None
        } else {
            self.lines.record(v)
        };
        let is_data = v.is_data();
        let record = self.data;
        // The slice's ends are record indices: the record's time plays no part.
        let place = if is_data {
            self.window.place(record, None)
        } else if self.start.is_some() {
            Place::Inside
        } else {
            Place::Before
        };
        let opens = place == Place::Inside && is_data && self.start.is_none();
        let time = if place == Place::After {
            // Interpreted as every record is (the source's state goes on), its events not taken.
            self.events.clear();
            self.source.record(v, &mut self.events)
        } else if let Some(time) = self.source.record_into(
            v,
            &mut Inlet {
                heap: &mut self.heap,
                start: &mut self.start,
                at: Position {
                    record,
                    time: None,
                    source: line,
                },
                opened: !opens,
            },
        ) {
            time
        } else {
            let (heap, start) = (&mut self.heap, &mut self.start);
            let mut opened = !opens;
            self.source.record_each(v, &mut |ev, places| {
                let at = Position {
                    record,
                    time: ev.time,
                    source: line,
                };
                if !opened {
                    opened = true;
                    *start = Some(at);
                    heap.open_window(at);
                }
                match places {
                    Some(p) => heap.event_placed(ev, at, p),
                    None => heap.event_at(ev, at),
                }
            })
        };
        self.note_time(time);
        let at = Position {
            record,
            time: self.time,
            source: line,
        };
        if is_data {
            self.data += 1;
        }
        if !self.enter(place, is_data, at, |c| c.record(v)) {
            return false;
        }
        if opens && is_data && place == Place::Inside {
            // Opened at the first event's time, the record's.
            debug_assert_eq!(self.start.map(|s| s.time), Some(at.time));
        }
        true
    }

    // Design: after a slice that ends before the trace does, the names of its sites may still
    // be defined (heaptrack's traces and instruction pointers come in sections after the
    // heap's). Only the records that can change a name matter then; the others (allocations
    // and frees: nearly all of a recording) are stepped over by a scan, or skipped when it
    // cannot, rather than interpreted: `--to 100` of a 16.9 M-record recording read the rest
    // through the interpreter, 2 s for 100 records.
    /// Reads the rest of `records` for the names of the slice's sites: the records of the types
    /// that can change one ([`HeapEventSource::naming_types`]) to the source, the others
    /// stepped over.
    fn read_names(&mut self, records: &mut dyn crate::decode::EventStream) {
        let naming = self.source.naming_types();
        let mut scan = naming.as_ref().map(|n| {
            crate::decode::ScanValues::new(
                n.iter().map(|&names| (!names).then(Box::default)).collect(),
            )
        });
        let mut per_type = vec![0u64; self.schema.records.len()];
        loop {
            if let Some(values) = scan.as_mut() {
                let stop = crate::decode::ScanStop::NONE;
                records.scan_values(&mut per_type, stop, values, None, &mut |_| true);
            }
            let Some(e) = records.next_event() else {
                break;
            };
            if let crate::decode::Event::Record(v) = e {
                let names = naming
                    .as_ref()
                    .is_none_or(|n| n.get(v.record_id() as usize).copied().unwrap_or(true));
                if names {
                    self.events.clear();
                    self.source.record(&v, &mut self.events);
                }
            }
        }
    }

    /// Takes the records of `records` until the slice ends or they do: those a scan can step
    /// over as the values it reads of them (`Pass::record_values`), the others as views.
    fn feed(&mut self, records: &mut dyn crate::decode::EventStream) {
        let mut scan = self.scan_values();
        let mut per_type = vec![0u64; self.schema.records.len()];
        let schema = self.schema;
        loop {
            if let Some((values, lists)) = scan.as_mut() {
                let stop = crate::decode::ScanStop::NONE;
                records.scan_values(&mut per_type, stop, values, None, &mut |r| {
                    let rt = r.record_id;
                    let is_data = schema.record(rt).builtin.is_none() && !r.element;
                    let places = lists.get(rt as usize).map_or(&[][..], |l| &l[..]);
                    self.record_values(r, places, is_data);
                    true
                });
            }
            let Some(e) = records.next_event() else {
                break;
            };
            let v = match e {
                crate::decode::Event::Record(v) => v,
                crate::decode::Event::Problem(_) | crate::decode::Event::Damage(_) => {
                    self.problems += 1;
                    continue;
                }
            };
            if !self.record(&v) {
                break;
            }
        }
    }

    // Design (records given as values): where the source takes values (`scan_fields`) and the
    // slice is the whole trace, the records a scan steps over come as the values it read of
    // them (`Records::scan_values`): each type's fields the source needs and, unless the pass
    // is lean, every integer the record counter sums. What `record_direct` does with a view is
    // done with them, in the same order: the record's source line (of an imported trace: its
    // type, section and kind say it, `SourceLines::unit`; the few import records whose fields
    // say more come as views), the events handed over as the interpreter makes them, the time,
    // the record counted. The slice being the whole trace, no record is past its end.
    /// What a scan reads of each record type for [`Pass::record_values`], and per type where
    /// the record counter adds each value read ([`RecordCounter::places`]); `None` where
    /// records are taken as views only.
    fn scan_values(&self) -> Option<(crate::decode::ScanValues, Vec<Box<[usize]>>)> {
        if !(self.direct && self.placed && self.window == Window::all()) {
            return None;
        }
        let source = self.source.scan_fields()?;
        let mut per = Vec::with_capacity(source.len());
        let mut lists = Vec::with_capacity(source.len());
        for (rid, needed) in source.into_iter().enumerate() {
            // The lines of an imported trace read a few import records' fields: those come as
            // views (`SourceLines::record`); the others' lines follow from their types.
            let lines = !self.lean && self.lines.reads_fields(rid as RecordId);
            let (Some(needed), false) = (needed, lines) else {
                per.push(None);
                lists.push(Box::default());
                continue;
            };
            // The source's fields first, in its order; then the counter's others.
            let mut list: Vec<SlotId> = needed.to_vec();
            if !self.lean {
                let counted = RecordCounter::counted_slots(self.schema, rid as RecordId);
                list.extend(counted.into_iter().filter(|s| !needed.contains(s)));
            }
            lists.push(self.counter.places(rid as RecordId, &list).into());
            per.push(Some(list.into()));
        }
        Some((
            crate::decode::ScanValues::new(per)
                .telling_elements()
                .with_references(),
            lists,
        ))
    }

    /// [`Pass::record_direct`] for a record a scan stepped over, given as the values of its
    /// fields (`Pass::scan_values`), counted at `places`; `is_data`: whether it is a data
    /// record.
    fn record_values(&mut self, r: crate::decode::Scanned<'_>, places: &[usize], is_data: bool) {
        let record = self.data;
        // The slice is the whole trace.
        let place = if is_data || self.start.is_some() {
            Place::Inside
        } else {
            Place::Before
        };
        let opens = place == Place::Inside && is_data && self.start.is_none();
        let line = if self.lean {
            None
        } else {
            self.lines.unit(r.record_id, r.section, is_data)
        };
        let at = crate::analysis::At {
            record: r.index,
            offset: r.offset,
            record_type: r.record_id,
        };
        let text = |k: usize| r.bytes(k).map(|b| String::from_utf8_lossy(b).into_owned());
        let time = self.source.record_values_into(
            at,
            r.values,
            &text,
            &mut Inlet {
                heap: &mut self.heap,
                start: &mut self.start,
                at: Position {
                    record,
                    time: None,
                    source: line,
                },
                opened: !opens,
            },
        );
        self.note_time(time);
        let at = Position {
            record,
            time: self.time,
            source: line,
        };
        if is_data {
            self.data += 1;
        }
        self.enter(place, is_data, at, |c| match r.has_references() {
            true => c.record_values(r.record_id, places, r.values, |k| r.is_reference(k)),
            false => c.record_values(r.record_id, places, r.values, |_| false),
        });
    }

    /// The record's time, or the latest before it, as the source gave it: the clock, and
    /// whether it ever moved.
    fn note_time(&mut self, time: Option<u64>) {
        if let Some(t) = time {
            self.time = Some(t);
            match self.first_time {
                None => self.first_time = Some(t),
                Some(f) => self.moved |= f != t,
            }
        }
    }

    /// A record at `place` in the slice: the frees of ids not alive it made counted, the slice
    /// opened at its first data record inside, the record counted (by `count`, unless the pass
    /// is lean); `false` past the slice's end (which it notes). The one rule of every way of
    /// handing events over.
    #[inline]
    fn enter(
        &mut self,
        place: Place,
        is_data: bool,
        at: Position,
        count: impl FnOnce(&mut RecordCounter),
    ) -> bool {
        self.count_unknown_frees(place);
        match place {
            Place::Before => {}
            Place::Inside if is_data => {
                if self.start.is_none() {
                    self.start = Some(at);
                    self.heap.open_window(at);
                }
                if !self.lean {
                    count(&mut self.counter);
                }
            }
            Place::Inside => self.other += 1,
            Place::After => {
                self.end = Some(at);
                return false;
            }
        }
        true
    }

    /// The source's own count of frees of ids not alive, taken into the slice's figures when
    /// the record that made them is inside it.
    fn count_unknown_frees(&mut self, place: Place) {
        // Each count only grows from what `unknown_seen` holds: equal sums, nothing new.
        let total = self.source.unknown_frees_total();
        if total.is_some() && total == Some(self.unknown_seen_total) {
            return;
        }
        self.unknown_seen_total = total.unwrap_or(0);
        for (i, seen) in self.unknown_seen.iter_mut().enumerate() {
            let now = self.source.unknown_frees(i as u32);
            if place == Place::Inside {
                self.unknown_inside[i] += now - *seen;
            }
            *seen = now;
        }
    }

    fn finish(self) -> Stats {
        let clock = match self.first_time {
            None => Clock::None,
            Some(_) if self.moved => Clock::Moving,
            Some(t) => Clock::Constant(t),
        };
        let end = self.end.unwrap_or(Position {
            record: self.data,
            time: self.time,
            source: None,
        });
        let start = self.start.unwrap_or(end);
        let source = self.source;
        let mut spaces = self.heap.finish(end, |sp, site| source.site_name(sp, site));
        for (i, s) in spaces.iter_mut().enumerate() {
            // Every namespace with stacks gets a profile, empty when nothing was allocated.
            s.stacks = source.stack_profile(i as u32, &s.leaves);
        }
        for (s, n) in spaces.iter_mut().zip(&self.unknown_inside) {
            s.unknown_frees += n;
            s.files.clone_from(&self.lines.files);
            s.clock = clock == Clock::Moving;
            if !s.clock {
                // Times that never move (no clock) make no lifetimes.
                s.lifetime_time = None;
            }
        }
        Stats {
            window: self.window,
            start,
            end,
            records: self.counter.total(),
            other_records: self.other,
            data_records: self.data,
            clock,
            problems: self.problems,
            types: self.counter.finish(self.schema),
            files: self.lines.files,
            spaces,
        }
    }
}
