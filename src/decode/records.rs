//! [`Records`]: walks the regions of a trace and yields one [`Event`] at a time — a borrowed
//! record view, a problem, or damage — so no caller drains a side channel.

// Design: the decoder owns every buffer it needs (decoded values, last value per slot, the walk
// stack) and reuses them from record to record, so decoding allocates nothing per record. It is
// a lending iterator: a `RecordView` borrows the decoder until the next call, which is why
// `Records` has its own `next` rather than implementing `std::iter::Iterator`. Problems found
// while decoding a record are queued and come out right after that record's view.
//
// Design: a record type whose fields are all integers (no repeat, no byte string) with an
// arithmetic interpretation, no live set and no fixed value has the same layout for every record
// until metadata changes one of its fields: its [`Plan`] lists each field's width and place in
// the record, so such a record is checked for length once and decoded in one straight loop,
// without the walker or a bounds check per field. The plan is made when the record type first
// occurs in a scope and made again only after a metadata record changes that type (or a new
// scope starts); any other record type, and any record too short for its plan, takes the general
// path, which reports exactly where it fails. Both paths share the interpretations' arithmetic
// (`layout/interp.rs`), so they cannot disagree on a value.

use std::collections::VecDeque;

use crate::container::ByteOrder;
use crate::dtd::{Display, Interp, RecordId, SlotId};
use crate::layout::arith::{self as interp, Decoded};
use crate::layout::{
    eval_width, MetaProperty, MetaRefused, Op, ScopeState, Step, TagTable, Walk, MAX_EMPTY_REPEAT,
    MAX_FIELDS_PER_RECORD,
};

use super::error::{Damage, DamageKind, Position, Problem, ProblemKind};
use super::reader::Reader;
use super::value::{ElementRef, FieldValue, Val};
use super::view::{MetaChange, RecordView};

mod scan;
pub use scan::ScanStop;

/// One thing found while reading a trace.
#[derive(Debug)]
pub enum Event<'r> {
    /// A decoded record.
    Record(RecordView<'r>),
    /// A problem in the record just yielded (or, at the end, in the trace as a whole): the trace
    /// is invalid, and reading goes on with the next record.
    Problem(Box<Problem>),
    /// The rest of the current region cannot be decoded; reading resumes at the next region.
    Damage(Box<Damage>),
}

/// A source of a trace's events in trace order: [`Records`], or the events of a trace decoded
/// on several threads (`metatf::parallel::Events`), for code that consumes either.
pub trait EventStream {
    /// The next event, or `None` at the end.
    fn next_event(&mut self) -> Option<Event<'_>>;
    /// Problems not reported because one record had more than [`MAX_PROBLEMS_PER_RECORD`].
    fn dropped_problems(&self) -> u64;
    /// The decoder itself, when the events come straight from one (for what needs its
    /// checkpoints: building or verifying a seek index).
    fn as_records(&self) -> Option<&Records<'_>> {
        None
    }
    /// Step over records that cannot be invalid but for their length, counting them per type
    /// ([`Records::scan`]); 0 where the events do not come straight from a decoder.
    fn scan(&mut self, _per_type: &mut [u64], _stop: ScanStop) -> u64 {
        0
    }
}

impl EventStream for Records<'_> {
    fn next_event(&mut self) -> Option<Event<'_>> {
        self.next()
    }
    fn dropped_problems(&self) -> u64 {
        Records::dropped_problems(self)
    }
    fn as_records(&self) -> Option<&Records<'_>> {
        Some(self)
    }
    fn scan(&mut self, per_type: &mut [u64], stop: ScanStop) -> u64 {
        Records::scan(self, per_type, stop)
    }
}

/// Whether a decoder checks references (the main pass) or only scans a table (the pre-pass that
/// builds a section's element index, which must not recurse into other tables).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Main,
    Prepass,
    /// The main pass over some regions only ([`Reader::region_records`]): no record count.
    Part,
}

/// Most problems kept for one record; more are counted in [`Records::dropped_problems`].
pub use crate::limits::MAX_PROBLEMS_PER_RECORD;

/// The 8 bytes at `at` as they lie in memory (the caller checked that they exist).
#[inline(always)]
fn load8(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..at + 8) {
        Some(b) => u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])),
        None => 0,
    }
}

/// The records of a trace in file order. See [`Reader::records`].
pub struct Records<'r> {
    reader: &'r Reader<'r>,
    mode: Mode,
    regions: Vec<usize>,
    next_region: usize,
    region_start: u64,
    pos: u64,
    end: u64,
    scope: Option<ScopeState>,
    tags: Option<&'r crate::layout::TagTable>,
    pub(crate) values: Vec<FieldValue>,
    last: Vec<u64>,
    walk: Walk,
    count: u64,
    index_exact: bool,
    queued: VecDeque<Problem>,
    queued_this_record: usize,
    dropped: u64,
    /// What is left of the trace's reserve of field occurrences (docs/format.md §6.4).
    reserve: u64,
    meta: Option<MetaChange>,
    finished: bool,
    cur: Cur,
    /// Per record type, what is known of its layout under the current metadata.
    plans: Vec<Plan>,
    /// Whether records on the fast path keep their values (see [`Records::skip_values`]).
    keep_values: bool,
    /// The offset up to which a mapped trace's pages were last released.
    released: u64,
    /// Whether pages are released behind the cursor (see [`Records::release_pages`]).
    release: bool,
    /// The end of the bytes that can be read in the current region: its end, or the end of the
    /// window of a stream when that comes first.
    lim: u64,
    /// Why a decode of a window of a stream stopped (`decode::stream`).
    stopped: Option<Stop>,
}

/// Why the decode of a window of a stream ([`super::reader::Input::more`]) stopped before the
/// end of the trace: not a problem of the trace, but a request to its driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// At a record boundary, with few bytes left in the window (or at the end of the last
    /// region, before the trace-wide checks): the state is clean, a checkpoint resumes here.
    Boundary,
    /// In the middle of a record that runs past the window: the state is not clean; the driver
    /// resumes from its previous checkpoint with a larger window.
    MidRecord,
    /// A metadata record makes a field a reference into a table (docs/format.md §8), which a
    /// stream cannot read.
    RandomAccess,
}

/// How far behind the cursor a mapped trace's pages are released, and how often.
const RELEASE_EVERY: u64 = 4 << 20;

/// One field of a record type whose layout is fixed under the current metadata.
#[derive(Debug, Clone, Copy)]
struct FixedField {
    slot: SlotId,
    width: u8,
    /// Offset of its bytes from the end of the tag.
    at: u32,
    /// Index of its state in the scope's slots (`delta` and `stride` advance it).
    state: u32,
    kind: FixedKind,
}

/// The interpretation of a fixed field, resolved when the plan is made.
#[derive(Debug, Clone, Copy)]
enum FixedKind {
    /// `none`, shown unsigned: the stored value.
    Plain,
    /// `default v`: nothing stored, always `v`.
    Const(u64),
    /// Anything else: through `layout::interp::decode` with the slot's state.
    Interp { signed: bool },
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum PlanState {
    /// Not known under the current metadata: to be made when the record type next occurs.
    #[default]
    Stale,
    /// Decoded by the walker.
    Walk,
    /// Decoded from `fields`.
    Fixed,
}

/// How a record type is decoded under the current metadata (see the design note above).
#[derive(Debug, Default)]
struct Plan {
    state: PlanState,
    /// Bytes after the tag.
    len: u64,
    fields: Vec<FixedField>,
    /// The fields whose state advances (`delta`, `stride`): what [`Records::scan`] reads.
    advance: Vec<FixedField>,
}

#[derive(Default, Clone, Copy)]
struct Cur {
    rid: RecordId,
    start: u64,
}

impl<'r> Records<'r> {
    pub(crate) fn new(reader: &'r Reader<'r>, regions: Vec<usize>, mode: Mode) -> Records<'r> {
        Records {
            reader,
            mode,
            regions,
            next_region: 0,
            region_start: 0,
            pos: 0,
            end: 0,
            scope: None,
            tags: None,
            values: Vec::with_capacity(64),
            last: vec![0; reader.compiled.max_slots],
            walk: Walk::default(),
            count: 0,
            index_exact: true,
            queued: VecDeque::new(),
            queued_this_record: 0,
            dropped: 0,
            reserve: crate::limits::SPARSE_RESERVE,
            meta: None,
            finished: false,
            cur: Cur::default(),
            plans: std::iter::repeat_with(Plan::default)
                .take(reader.schema.records.len())
                .collect(),
            keep_values: true,
            released: 0,
            release: mode != Mode::Part,
            lim: 0,
            stopped: None,
        }
    }

    /// The offset of the record decoded last (or being decoded).
    pub(crate) fn record_start(&self) -> u64 {
        self.cur.start
    }

    /// Why the decode of a window of a stream stopped, if it did.
    pub(crate) fn stopped(&self) -> Option<Stop> {
        self.stopped
    }

    /// The end of what can be read of a region ending at `end`.
    #[inline]
    fn limit(&self, end: u64) -> u64 {
        end.min(self.reader.input.window_end())
    }

    /// Validate only: a record whose layout is fixed under the current metadata (integers with
    /// an arithmetic interpretation, no repeat, byte string, reference, live set or fixed value)
    /// is then checked for length and its state advanced, but its values are not kept: its
    /// [`RecordView`] holds the tag alone. Nothing in such a record can be invalid but its
    /// length, so the problems and damage reported are the same. For callers that count records
    /// and report problems without reading values (`mtf check` of a DTD without analysis
    /// declarations).
    pub fn skip_values(&mut self, skip: bool) {
        self.keep_values = !skip;
    }

    /// Records decoded so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Count records from `first` on: the next record's index is `first`, and so are the
    /// record indices of problems (when `exact`; else they are left out, as after damage). For
    /// a decoder of part of a trace ([`Reader::region_records`]) whose place in the whole is
    /// known.
    pub fn count_from(&mut self, first: u64, exact: bool) {
        self.count = first;
        self.index_exact = exact;
    }

    /// Whether a mapped trace's pages are released behind the cursor as it moves on (by
    /// default, except for a decoder of part of a trace, [`Reader::region_records`], whose
    /// neighbours may still be reading behind it).
    pub fn release_pages(&mut self, on: bool) {
        self.release = on;
        self.released = self.pos;
    }

    /// Whether [`Records::next`] would return `None`: every region is read and every problem
    /// given out.
    pub fn is_done(&mut self) -> bool {
        if !self.queued.is_empty() {
            return false;
        }
        if self.pos < self.end || self.next_region < self.regions.len() {
            return false;
        }
        if !self.finished {
            self.finished = true;
            self.finish();
        }
        self.queued.is_empty()
    }

    /// Whether the record count is exact so far: no region was damaged (after damage, record
    /// indices are approximate).
    pub fn is_exact(&self) -> bool {
        self.index_exact
    }

    /// Where the decode stands before the next record, with the complete metadata state:
    /// [`Reader::records_from`] resumes there and yields exactly the events this decode yields
    /// from here on, from the next record (problems still to come for the record just yielded
    /// are not part of it: see [`Records::at_record_boundary`]). Costs a copy of the scope's
    /// field states and live sets.
    pub fn checkpoint(&self) -> super::Checkpoint {
        let alone = self.regions.len() != self.reader.input.regions.len();
        let mut cp = super::Checkpoint::start();
        cp.alone = alone;
        cp.dropped = self.dropped;
        cp.finished = self.finished;
        if self.next_region == 0 {
            // Before the first region (a section decode of a trace without the section: none).
            cp.region = match self.regions.first() {
                Some(&ri) => ri as u32,
                None => self.reader.input.regions.len() as u32,
            };
            return cp;
        }
        super::Checkpoint {
            record: self.count,
            offset: self.pos,
            region: self.regions[self.next_region - 1] as u32,
            entered: true,
            state: self.scope.as_ref().map(super::checkpoint::MetaState::of),
            exact: self.index_exact,
            ..cp
        }
    }

    /// Whether every problem of the record just yielded has come out of [`Records::next`]:
    /// the next event is about the next record (or the end).
    pub fn at_record_boundary(&self) -> bool {
        self.queued.is_empty()
    }

    /// A decode of `reader` from checkpoint `cp`, with `scope` its checked state.
    pub(super) fn resume(
        reader: &'r Reader<'r>,
        cp: &super::Checkpoint,
        scope: Option<ScopeState>,
    ) -> Records<'r> {
        let ri = cp.region as usize;
        let all = reader.input.regions.len();
        let regions = match cp.alone {
            true if ri < all => vec![ri],
            true => Vec::new(),
            false => (0..all).collect(),
        };
        let mut records = Records::new(reader, regions, Mode::Main);
        records.count = cp.record;
        records.index_exact = cp.exact;
        records.dropped = cp.dropped;
        records.finished = cp.finished;
        if cp.entered {
            let region = reader.input.regions[ri];
            records.next_region = if cp.alone { 1 } else { ri + 1 };
            records.region_start = region.start;
            records.pos = cp.offset;
            records.end = region.end;
            records.lim = records.limit(region.end);
            records.released = cp.offset;
            if scope.is_some() {
                records.tags = reader.compiled.tags[region.section as usize].as_ref();
            }
            records.scope = scope;
        }
        records
    }

    /// Problems not reported because one record had more than [`MAX_PROBLEMS_PER_RECORD`].
    pub fn dropped_problems(&self) -> u64 {
        self.dropped
    }

    /// The next event, or `None` at the end of the trace.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Event<'_>> {
        if let Some(p) = self.queued.pop_front() {
            return Some(Event::Problem(Box::new(p)));
        }
        self.queued_this_record = 0;
        loop {
            if self.pos >= self.end {
                if self.next_region >= self.regions.len() {
                    if !self.finished && self.reader.input.more && self.mode == Mode::Main {
                        // A stream: its length is checked before the trace-wide checks.
                        self.stopped = Some(Stop::Boundary);
                        return None;
                    }
                    if !self.finished {
                        self.finished = true;
                        self.finish();
                        if let Some(p) = self.queued.pop_front() {
                            return Some(Event::Problem(Box::new(p)));
                        }
                    }
                    return None;
                }
                if let Err(d) = self.enter_region() {
                    return Some(Event::Damage(d));
                }
                continue;
            }
            if self.lim < self.end
                && self.lim.saturating_sub(self.pos) < self.reader.input.margin
                && self.reader.input.more
            {
                self.stopped = Some(Stop::Boundary);
                return None;
            }
            return Some(match self.decode_record() {
                Ok(()) => {
                    self.count += 1;
                    // A mapped trace keeps only a window resident, whatever its size.
                    // Part of a trace decoded beside other parts: whoever runs the parts
                    // releases behind the earliest (`metatf::parallel`).
                    if self.pos >= self.released + RELEASE_EVERY && self.release {
                        self.released = self.pos;
                        if let Some(t) = self.reader.input.trace {
                            t.release_before(self.pos - RELEASE_EVERY);
                        }
                    }
                    let c = self.cur;
                    Event::Record(RecordView {
                        reader: self.reader,
                        record_id: c.rid,
                        section: self.section(),
                        offset: c.start,
                        len: self.pos - c.start,
                        index: self.count - 1,
                        values: &self.values,
                        meta: self.meta,
                    })
                }
                Err(_) if self.stopped.is_some() => return None,
                Err(d) => {
                    // Resynchronise at the next region.
                    self.pos = self.end;
                    self.index_exact = false;
                    Event::Damage(d)
                }
            });
        }
    }

    fn section(&self) -> u8 {
        self.scope.as_ref().map_or(0, |s| s.section)
    }

    fn enter_region(&mut self) -> Result<(), Box<Damage>> {
        let ri = self.regions[self.next_region];
        self.next_region += 1;
        let region = self.reader.input.regions[ri];
        self.region_start = region.start;
        self.pos = region.start;
        self.end = region.end;
        self.lim = self.limit(region.end);
        match &self.reader.compiled.tags[region.section as usize] {
            Some(t) => {
                self.tags = Some(t);
                let mut scope = ScopeState::new(self.reader.schema, region.section);
                scope.live |= self.reader.input.live;
                self.scope = Some(scope);
                for p in &mut self.plans {
                    p.state = PlanState::Stale;
                }
                Ok(())
            }
            None => {
                self.pos = self.end;
                self.index_exact = false;
                self.scope = None;
                self.tags = None;
                Err(Box::new(Damage {
                    at: Position {
                        offset: region.start,
                        record_index: None,
                        section: region.section,
                        section_name: String::new(),
                        record: None,
                        field: None,
                    },
                    kind: DamageKind::UndeclaredSection,
                }))
            }
        }
    }

    fn finish(&mut self) {
        if self.mode == Mode::Main && self.regions.len() == self.reader.input.regions.len() {
            if let Some(p) = self
                .reader
                .record_count_problem(self.count, self.index_exact)
            {
                self.queued.push_back(p);
            }
        }
    }

    fn problem(
        &mut self,
        offset: u64,
        rid: Option<RecordId>,
        slot: Option<SlotId>,
        kind: ProblemKind,
    ) {
        if self.queued_this_record >= MAX_PROBLEMS_PER_RECORD {
            self.dropped += 1;
            return;
        }
        self.queued_this_record += 1;
        let at = self.position(offset, rid, slot);
        self.queued.push_back(Problem { at, kind });
    }

    fn position(&self, offset: u64, rid: Option<RecordId>, slot: Option<SlotId>) -> Position {
        let schema = self.reader.schema;
        let section = self.section();
        Position {
            offset,
            record_index: self.index_exact.then_some(self.count),
            section,
            section_name: self.reader.section_name(section).to_string(),
            record: rid.map(|r| schema.record(r).name.clone()),
            field: match (rid, slot) {
                (Some(r), Some(s)) => schema
                    .record(r)
                    .slots
                    .get(s as usize)
                    .map(|s| s.name.clone()),
                _ => None,
            },
        }
    }

    fn damage(
        &self,
        offset: u64,
        rid: Option<RecordId>,
        slot: Option<SlotId>,
        kind: DamageKind,
    ) -> Box<Damage> {
        Box::new(Damage {
            at: self.position(offset, rid, slot),
            kind,
        })
    }

    #[inline]
    fn read(&self, at: u64, width: usize) -> u64 {
        self.reader
            .input
            .order
            .read_uint(self.reader.input.from(at), width)
    }

    #[inline]
    fn need(
        &mut self,
        n: u64,
        rid: Option<RecordId>,
        slot: Option<SlotId>,
    ) -> Result<(), Box<Damage>> {
        if n > self.lim - self.pos {
            Err(self.short(n, rid, slot))
        } else {
            Ok(())
        }
    }

    /// `n` bytes are needed and fewer are at hand: the region is truncated, or (a window of a
    /// stream) the window ends first and the decode stops.
    #[cold]
    #[inline(never)]
    fn short(&mut self, n: u64, rid: Option<RecordId>, slot: Option<SlotId>) -> Box<Damage> {
        let available = self.end - self.pos;
        if n <= available {
            self.stopped = Some(Stop::MidRecord);
        }
        self.damage(
            self.pos,
            rid,
            slot,
            DamageKind::Truncated {
                needed: n,
                available,
            },
        )
    }

    /// Read one integer of `w` bytes at the current position into the values.
    fn plain(&mut self, slot: SlotId, w: usize, rid: RecordId) -> Result<u64, Box<Damage>> {
        self.need(w as u64, Some(rid), Some(slot))?;
        let at = self.pos;
        let raw = self.read(at, w);
        self.pos += w as u64;
        self.values.push(FieldValue {
            slot,
            offset: at,
            width: w as u32,
            raw,
            value: Val::Int(raw),
        });
        Ok(raw)
    }

    fn decode_record(&mut self) -> Result<(), Box<Damage>> {
        if let Some(scope) = self.scope.as_mut() {
            scope.sets.compact();
        }
        let reader = self.reader;

        let wire = reader.wire;
        let start = self.pos;
        self.cur = Cur { rid: 0, start };
        self.values.clear();
        self.meta = None;
        let tw = wire.tag as u64;
        self.need(tw, None, None)?;
        let tag = self.read(start, tw as usize);
        let tags: &TagTable = self.tags.expect("a region is open");
        let Some(rid) = tags.get(tag) else {
            return Err(self.damage(start, None, None, DamageKind::UnknownTag { tag }));
        };
        self.cur.rid = rid;
        let at_region_start = start == self.region_start;
        let section_here = self.section();
        if section_here != 0 && at_region_start && rid != wire.section {
            return Err(self.damage(start, Some(rid), None, DamageKind::MissingSectionRecord));
        }
        self.pos += tw;
        self.values.push(FieldValue {
            slot: 0,
            offset: start,
            width: tw as u32,
            raw: tag,
            value: Val::Int(tag),
        });
        self.last[0] = tag;
        if rid == wire.metadata {
            return self.decode_metadata(rid);
        }
        if rid == wire.section {
            let number = self.plain(1, wire.section_number as usize, rid)?;
            let off = self.values[1].offset;
            if !at_region_start || section_here == 0 {
                self.problem(start, Some(rid), None, ProblemKind::MisplacedSection);
            } else if number != section_here as u64 {
                self.problem(
                    off,
                    Some(rid),
                    Some(1),
                    ProblemKind::SectionNumberMismatch {
                        index: section_here,
                        record: number,
                    },
                );
            }
            return Ok(());
        }
        self.run_program(rid)?;
        // What the record holds beyond its own allowance comes out of the trace's reserve.
        let bytes = self.pos - start;
        let nslots = reader.compiled.program(rid).nslots;
        let excess =
            (self.values.len() as u64).saturating_sub(crate::limits::sparse_limit(nslots, bytes));
        self.reserve = self.reserve.saturating_sub(excess);
        Ok(())
    }

    fn run_program(&mut self, rid: RecordId) -> Result<(), Box<Damage>> {
        let reader = self.reader;
        let rt = reader.schema.record(rid);
        let prog = reader.compiled.program(rid);
        let base = self
            .scope
            .as_ref()
            .and_then(|s| s.base(rid))
            .expect("tag tables only hold visible records");
        // A field that has not occurred in this record has the value 0 (docs/format.md §3.4).
        match self.plans[rid as usize].state {
            PlanState::Fixed if self.plans[rid as usize].len <= self.lim - self.pos => {
                self.fixed_record(rid);
                return Ok(());
            }
            PlanState::Stale => {
                self.make_plan(rid, base);
                if self.plans[rid as usize].state == PlanState::Fixed {
                    return self.run_program(rid);
                }
            }
            _ => {}
        }
        if prog.reset_values {
            self.last[1..prog.nslots].fill(0);
        }
        self.walk.reset();
        loop {
            let last = &self.last;
            let Some(step) = self.walk.next_run(prog, |s, _| last[s as usize]) else {
                return Ok(());
            };
            match step {
                Step::Run { ops, .. } => {
                    for op in ops {
                        match op {
                            Op::Int(slot) => self.int_field(rid, rt, base, *slot)?,
                            Op::Bytes(slot, width) => self.bytes_field(rid, *slot, width)?,
                            Op::Repeat { .. } | Op::EndRepeat { .. } => {
                                unreachable!("a run holds fields only")
                            }
                        }
                    }
                }
                Step::Int { slot, .. } => self.int_field(rid, rt, base, slot)?,
                Step::Bytes { slot, width, .. } => self.bytes_field(rid, slot, width)?,
                Step::Enter { count, n, pc, .. } => {
                    let available = self.end - self.pos;
                    if n > available || n > MAX_EMPTY_REPEAT {
                        // docs/format.md §6.4: an occurrence that needs `min` bytes cannot repeat
                        // more often than the bytes left allow; one that may be empty at most
                        // MAX_EMPTY_REPEAT times.
                        let scope = self.scope.as_ref().expect("open scope");
                        let min = prog.item_min_size(pc, |s| scope.slots[base + s as usize].width);
                        let impossible = match available.checked_div(min) {
                            None => n > MAX_EMPTY_REPEAT,
                            Some(most) => n > most,
                        };
                        if impossible {
                            // At the count field, whose value is impossible.
                            let at = self
                                .values
                                .iter()
                                .rev()
                                .find(|v| v.slot == count)
                                .map_or(self.pos, |v| v.offset);
                            return Err(self.damage(
                                at,
                                Some(rid),
                                Some(count),
                                DamageKind::RepeatTooLong {
                                    count: n,
                                    available,
                                },
                            ));
                        }
                    }
                }
                Step::ItemEnd { .. } => {
                    // Items that take no bytes: the occurrences are bounded by the record's
                    // bytes, so that decoding time stays proportional to the trace's size.
                    let bytes = self.pos - self.cur.start;
                    let limit = crate::limits::sparse_limit(prog.nslots, bytes)
                        .saturating_add(self.reserve);
                    if self.values.len() as u64 > limit {
                        return Err(self.damage(
                            self.pos,
                            Some(rid),
                            None,
                            DamageKind::SparseRecord {
                                fields: self.values.len() as u64,
                                bytes,
                                limit,
                            },
                        ));
                    }
                    // Nested repeats multiply; the field occurrences of one record are capped so
                    // that no trace can make the decoder's buffers grow without bound.
                    if self.values.len() > MAX_FIELDS_PER_RECORD {
                        return Err(self.damage(
                            self.pos,
                            Some(rid),
                            None,
                            DamageKind::RecordTooLarge {
                                fields: self.values.len() as u64,
                            },
                        ));
                    }
                }
                Step::ItemStart { .. } | Step::Leave { .. } => {}
            }
        }
    }

    /// Decide how record type `rid` is decoded under the current metadata.
    #[cold]
    fn make_plan(&mut self, rid: RecordId, base: usize) {
        let reader = self.reader;
        let rt = reader.schema.record(rid);
        let prog = reader.compiled.program(rid);
        let scope = self.scope.as_ref().expect("open scope");
        let plan = &mut self.plans[rid as usize];
        plan.fields.clear();
        plan.advance.clear();
        plan.len = 0;
        plan.state = PlanState::Walk;
        for op in &prog.ops {
            let Op::Int(slot) = *op else {
                return;
            };
            let def = &rt.slots[slot as usize];
            let st = &scope.slots[base + slot as usize];
            let arithmetic = matches!(
                st.interp,
                Interp::None
                    | Interp::Default(_)
                    | Interp::BaseOffset(_)
                    | Interp::Delta(_)
                    | Interp::Stride { .. }
            );
            if !arithmetic || st.liveset != 0 || def.fixed.is_some() {
                return;
            }
            let signed = def.display == Display::Signed;
            let field = FixedField {
                slot,
                width: st.width,
                at: plan.len as u32,
                state: (base + slot as usize) as u32,
                kind: match st.interp {
                    Interp::None if !signed => FixedKind::Plain,
                    Interp::Default(v) => FixedKind::Const(v),
                    _ => FixedKind::Interp { signed },
                },
            };
            plan.fields.push(field);
            if matches!(st.interp, Interp::Delta(_) | Interp::Stride { .. }) {
                plan.advance.push(field);
            }
            plan.len += st.width as u64;
        }
        plan.state = PlanState::Fixed;
    }

    /// Decode a record of type `rid` by its fixed plan; its length has been checked.
    #[inline]
    fn fixed_record(&mut self, rid: RecordId) {
        let input = &self.reader.input;
        let plan = &self.plans[rid as usize];
        let slots = &mut self.scope.as_mut().expect("open scope").slots;
        let start = self.pos;
        let bytes = input.from(start);
        // With 8 bytes to hand past the record (all but the last records of a file), each field
        // is one unaligned load and a shift, with no bounds check of its own.
        let wide = bytes.len() as u64 >= plan.len + 8;
        let order = input.order;
        if !self.keep_values {
            // Only the fields whose state advances (`delta`, `stride`) are read.
            for f in &plan.advance {
                if let FixedKind::Interp { signed } = f.kind {
                    let raw = order.read_uint(&bytes[f.at as usize..], f.width as usize);
                    interp::decode(&mut slots[f.state as usize], raw, signed);
                }
            }
            self.pos += plan.len;
            return;
        }
        self.values.reserve(plan.fields.len());
        for f in &plan.fields {
            if let FixedKind::Const(v) = f.kind {
                self.values.push(FieldValue {
                    slot: f.slot,
                    offset: start + f.at as u64,
                    width: 0,
                    raw: 0,
                    value: Val::Int(v),
                });
                continue;
            }
            let raw = if wide && f.width > 0 {
                let word = load8(bytes, f.at as usize);
                let unused = 64 - 8 * f.width as u32;
                match order {
                    ByteOrder::Little => (u64::from_le(word) << unused) >> unused,
                    ByteOrder::Big => u64::from_be(word) >> unused,
                }
            } else {
                order.read_uint(&bytes[f.at as usize..], f.width as usize)
            };
            let number = match f.kind {
                FixedKind::Plain | FixedKind::Const(_) => raw,
                FixedKind::Interp { signed } => {
                    interp::decode(&mut slots[f.state as usize], raw, signed).number(raw)
                }
            };
            self.values.push(FieldValue {
                slot: f.slot,
                offset: start + f.at as u64,
                width: f.width as u32,
                raw,
                value: Val::Int(number),
            });
        }
        self.pos += plan.len;
    }

    fn bytes_field(
        &mut self,
        rid: RecordId,
        slot: SlotId,
        width: &crate::dtd::Expr,
    ) -> Result<(), Box<Damage>> {
        let len = eval_width(width, &self.last)
            .map_err(|e| self.damage(self.pos, Some(rid), Some(slot), DamageKind::BadWidth(e)))?;
        self.need(len, Some(rid), Some(slot))?;
        let at = self.pos;
        self.pos += len;
        self.last[slot as usize] = len;
        self.values.push(FieldValue {
            slot,
            offset: at,
            width: len as u32,
            raw: 0,
            value: Val::Bytes { offset: at, len },
        });
        Ok(())
    }

    #[inline(always)]
    fn int_field(
        &mut self,
        rid: RecordId,
        rt: &crate::dtd::RecordType,
        base: usize,
        slot: SlotId,
    ) -> Result<(), Box<Damage>> {
        let def = &rt.slots[slot as usize];
        let st = &mut self.scope.as_mut().expect("open scope").slots[base + slot as usize];
        let liveset = st.liveset;
        let w = st.width as usize;
        if w as u64 > self.lim - self.pos {
            return Err(self.short(w as u64, Some(rid), Some(slot)));
        }
        let at = self.pos;
        let input = &self.reader.input;
        let raw = input.order.read_uint(input.from(at), w);
        self.pos += w as u64;
        let (value, number) = match interp::decode(st, raw, def.display == Display::Signed) {
            Decoded::Int(v) => (Val::Int(v), v),
            Decoded::Offset { section, offset } => {
                (Val::Ref(ElementRef::Offset { section, offset }), raw)
            }
            Decoded::Index { section, index } => {
                (Val::Ref(ElementRef::Index { section, index }), index as u64)
            }
            Decoded::Live(set) => {
                let v = self.live_value(set, raw);
                (Val::Int(v), v)
            }
        };
        if liveset != 0 {
            self.live_insert(liveset, number);
        }
        if let Val::Ref(r) = value {
            self.check_ref(r, at, rid, slot);
        }
        if let Some(fixed) = def.fixed {
            if number != fixed {
                self.problem(
                    at,
                    Some(rid),
                    Some(slot),
                    ProblemKind::FixedValue {
                        expected: fixed,
                        found: number,
                    },
                );
            }
        }
        self.last[slot as usize] = number;
        self.values.push(FieldValue {
            slot,
            offset: at,
            width: w as u32,
            raw,
            value,
        });
        Ok(())
    }

    /// The value a `live` field stores `raw` for (docs/format.md §13): a position in the set,
    /// whose value leaves it, or past the end the value `raw − len`.
    // Out of line: traces without live sets keep the field decoder small.
    #[cold]
    #[inline(never)]
    fn live_value(&mut self, set: u8, raw: u64) -> u64 {
        let sets = &mut self.scope.as_mut().expect("open scope").sets;
        let len = sets.len(set) as u64;
        if raw < len {
            sets.take(set, raw, None).expect("position within the set")
        } else {
            raw - len
        }
    }

    #[cold]
    #[inline(never)]
    fn live_insert(&mut self, set: u8, value: u64) {
        self.scope
            .as_mut()
            .expect("open scope")
            .sets
            .insert(set, value, None);
    }

    fn check_ref(&mut self, r: ElementRef, at: u64, rid: RecordId, slot: SlotId) {
        if self.mode == Mode::Prepass {
            return;
        }
        if let Err(e) = self.reader.element(r) {
            self.problem(at, Some(rid), Some(slot), ProblemKind::Reference(e));
        }
    }

    fn decode_metadata(&mut self, rid: RecordId) -> Result<(), Box<Damage>> {
        let reader = self.reader;
        let schema = reader.schema;
        let [rw, fw, pw] = reader.wire.meta_fields;
        let target_tag = self.plain(1, rw as usize, rid)?;
        let field = self.plain(2, fw as usize, rid)?;
        let code = self.plain(3, pw as usize, rid)?;
        let prop_at = self.values[3].offset;
        let Some(nwords) = u8::try_from(code)
            .ok()
            .and_then(|c| MetaProperty::words_for_code(c, self.reader.input.live))
        else {
            return Err(self.damage(
                prop_at,
                Some(rid),
                Some(3),
                DamageKind::UnknownMetaCode {
                    code: code.min(255) as u8,
                },
            ));
        };
        let word = reader.input.class.word_size();
        let mut words = [0u64; 2];
        for w in words.iter_mut().take(nwords) {
            *w = self.plain(4, word, rid)?;
        }
        let tags = self.tags.expect("open region");
        let Some(target) = tags.get(target_tag) else {
            let at = self.values[1].offset;
            self.problem(
                at,
                Some(rid),
                Some(1),
                ProblemKind::Metadata(MetaRefused::UnknownTag { tag: target_tag }),
            );
            return Ok(());
        };
        let prop = match MetaProperty::from_code(code as u8, words, 8 * word as u32) {
            Ok(MetaProperty::Interp(Interp::SectionOffset(_) | Interp::SectionStride { .. }))
                if reader.input.streamed =>
            {
                self.stopped = Some(Stop::RandomAccess);
                // Not reported: the driver sees `stopped`.
                return Err(self.damage(
                    self.cur.start,
                    Some(rid),
                    None,
                    DamageKind::MissingSectionRecord,
                ));
            }
            Ok(p) => p,
            Err(m) => {
                self.problem(prop_at, Some(rid), Some(3), ProblemKind::Metadata(m));
                return Ok(());
            }
        };
        let nslots = schema.record(target).slots.len();
        let applied = if field > u16::MAX as u64 {
            Err(MetaRefused::NoSuchField {
                record: schema.record(target).name.clone(),
                slot: field,
                count: nslots,
            })
        } else {
            let scope = self.scope.as_mut().expect("open scope");
            scope.apply(schema, target, field as SlotId, prop)
        };
        match applied {
            Ok(()) => {
                self.plans[target as usize].state = PlanState::Stale;
                self.meta = Some(MetaChange {
                    record: target,
                    slot: field as SlotId,
                    property: prop,
                });
            }
            Err(refused) => {
                // Point at the byte that chose the refused change: the field number when it names
                // no field, else the property.
                let at = if field as usize >= nslots {
                    self.values[2].offset
                } else {
                    prop_at
                };
                self.problem(at, Some(rid), None, ProblemKind::Metadata(refused));
            }
        }
        Ok(())
    }
}
