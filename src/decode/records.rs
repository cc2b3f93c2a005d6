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
use crate::layout::interp::{self, Decoded};
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

/// The records of a trace in file order, from a [`Reader`]. See [`Reader::records`].
pub struct Records<'r> {
    reader: &'r Reader<'r>,
    d: Decoder,
}

/// The state of a decode: where it stands, the live metadata and the buffers reused from record
/// to record, apart from the reader whose bytes it decodes (given to each call), so that a
/// driver that owns its bytes (a stream's window, `crate::stream`) can hold both.
pub(crate) struct Decoder {
    mode: Mode,
    regions: Vec<usize>,
    next_region: usize,
    region_start: u64,
    pos: u64,
    end: u64,
    scope: Option<ScopeState>,
    /// The section whose tag table applies (that of the open region, when it has one).
    tags: Option<u8>,
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
    /// For the decoder of a window of a stream whose file goes on after the window: at a
    /// record boundary, the decode stops when fewer bytes than this are left in the window
    /// (and the region goes on), so that the window is refilled between records; a record
    /// that runs past the window stops it rather than being damage.
    margin: Option<u64>,
}

/// Why the decode of a window of a stream ([`Decoder::stop_within`]) stopped before the
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

/// What [`Decoder::advance`] found: an [`Event`] without its borrows.
#[derive(Debug)]
pub(crate) enum Ready {
    /// A record, decoded into the decoder's values.
    Record,
    /// A problem.
    Problem(Box<Problem>),
    /// Damage.
    Damage(Box<Damage>),
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
            d: Decoder::new(reader, regions, mode),
        }
    }

    /// A decode of `reader` from checkpoint `cp`, with `scope` its checked state.
    pub(super) fn resume(
        reader: &'r Reader<'r>,
        cp: &super::Checkpoint,
        scope: Option<ScopeState>,
    ) -> Records<'r> {
        Records {
            reader,
            d: Decoder::resume(reader, cp, scope),
        }
    }

    /// The decoder's state, apart from the reader (for a driver that owns its bytes).
    pub(crate) fn into_decoder(self) -> Decoder {
        self.d
    }

    /// The next event, or `None` at the end of the trace.
    #[allow(clippy::should_implement_trait)]
    #[inline]
    pub fn next(&mut self) -> Option<Event<'_>> {
        let ready = self.d.advance(self.reader)?;
        Some(self.d.event(self.reader, ready))
    }

    /// Validate only: a record whose layout is fixed under the current metadata (integers with
    /// an arithmetic interpretation, no repeat, byte string, reference, live set or fixed value)
    /// is then checked for length and its state advanced, but its values are not kept: its
    /// [`RecordView`] holds the tag alone. Nothing in such a record can be invalid but its
    /// length, so the problems and damage reported are the same. For callers that count records
    /// and report problems without reading values (`mtf check` of a DTD without analysis
    /// declarations).
    pub fn skip_values(&mut self, skip: bool) {
        self.d.skip_values(skip)
    }

    /// Records decoded so far.
    pub fn count(&self) -> u64 {
        self.d.count()
    }

    /// Count records from `first` on: the next record's index is `first`, and so are the
    /// record indices of problems (when `exact`; else they are left out, as after damage). For
    /// a decoder of part of a trace ([`Reader::region_records`]) whose place in the whole is
    /// known.
    pub fn count_from(&mut self, first: u64, exact: bool) {
        self.d.count_from(first, exact)
    }

    /// Whether a mapped trace's pages are released behind the cursor as it moves on (by
    /// default, except for a decoder of part of a trace, [`Reader::region_records`], whose
    /// neighbours may still be reading behind it).
    pub fn release_pages(&mut self, on: bool) {
        self.d.release_pages(on)
    }

    /// Whether [`Records::next`] would return `None`: every region is read and every problem
    /// given out.
    pub fn is_done(&mut self) -> bool {
        self.d.is_done(self.reader)
    }

    /// Whether the record count is exact so far: no region was damaged (after damage, record
    /// indices are approximate).
    pub fn is_exact(&self) -> bool {
        self.d.is_exact()
    }

    /// Where the decode stands before the next record, with the complete metadata state:
    /// [`Reader::records_from`] resumes there and yields exactly the events this decode yields
    /// from here on, from the next record (problems still to come for the record just yielded
    /// are not part of it: see [`Records::at_record_boundary`]). Costs a copy of the scope's
    /// field states and live sets.
    pub fn checkpoint(&self) -> super::Checkpoint {
        self.d.checkpoint(self.reader)
    }

    /// Whether every problem of the record just yielded has come out of [`Records::next`]:
    /// the next event is about the next record (or the end).
    pub fn at_record_boundary(&self) -> bool {
        self.d.at_record_boundary()
    }

    /// Problems not reported because one record had more than [`MAX_PROBLEMS_PER_RECORD`].
    pub fn dropped_problems(&self) -> u64 {
        self.d.dropped_problems()
    }
}

impl Decoder {
    pub(crate) fn new(reader: &Reader<'_>, regions: Vec<usize>, mode: Mode) -> Decoder {
        Decoder {
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
            margin: None,
        }
    }

    /// Decode a window of a stream whose file goes on after it (see [`Decoder::margin`]).
    pub(crate) fn stop_within(&mut self, margin: u64) {
        self.margin = Some(margin);
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
    fn limit(&self, r: &Reader<'_>, end: u64) -> u64 {
        end.min(r.input.window_end())
    }

    /// As [`Records::skip_values`].
    pub fn skip_values(&mut self, skip: bool) {
        self.keep_values = !skip;
    }

    /// As [`Records::count`].
    pub fn count(&self) -> u64 {
        self.count
    }

    /// As [`Records::count_from`].
    pub fn count_from(&mut self, first: u64, exact: bool) {
        self.count = first;
        self.index_exact = exact;
    }

    /// As [`Records::release_pages`].
    pub fn release_pages(&mut self, on: bool) {
        self.release = on;
        self.released = self.pos;
    }

    /// As [`Records::is_done`].
    pub fn is_done(&mut self, r: &Reader<'_>) -> bool {
        if !self.queued.is_empty() {
            return false;
        }
        if self.pos < self.end || self.next_region < self.regions.len() {
            return false;
        }
        if !self.finished {
            self.finished = true;
            self.finish(r);
        }
        self.queued.is_empty()
    }

    /// As [`Records::is_exact`].
    pub fn is_exact(&self) -> bool {
        self.index_exact
    }

    /// As [`Records::checkpoint`].
    pub fn checkpoint(&self, r: &Reader<'_>) -> super::Checkpoint {
        let alone = self.regions.len() != r.input.regions.len();
        let mut cp = super::Checkpoint::start();
        cp.alone = alone;
        cp.dropped = self.dropped;
        cp.finished = self.finished;
        if self.next_region == 0 {
            // Before the first region (a section decode of a trace without the section: none).
            cp.region = match self.regions.first() {
                Some(&ri) => ri as u32,
                None => r.input.regions.len() as u32,
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

    /// As [`Records::at_record_boundary`].
    pub fn at_record_boundary(&self) -> bool {
        self.queued.is_empty()
    }

    /// A decode of `reader` from checkpoint `cp`, with `scope` its checked state.
    pub(crate) fn resume(
        reader: &Reader<'_>,
        cp: &super::Checkpoint,
        scope: Option<ScopeState>,
    ) -> Decoder {
        let ri = cp.region as usize;
        let all = reader.input.regions.len();
        let regions = match cp.alone {
            true if ri < all => vec![ri],
            true => Vec::new(),
            false => (0..all).collect(),
        };
        let mut records = Decoder::new(reader, regions, Mode::Main);
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
            records.lim = records.limit(reader, region.end);
            records.released = cp.offset;
            if scope.is_some() && reader.compiled.tags[region.section as usize].is_some() {
                records.tags = Some(region.section);
            }
            records.scope = scope;
        }
        records
    }

    /// As [`Records::dropped_problems`].
    pub fn dropped_problems(&self) -> u64 {
        self.dropped
    }

    /// The next event of `r`'s trace, or `None` at the end (or at a stop of a window's
    /// decode): what [`Decoder::event`] turns into an [`Event`]. Nothing in it borrows the
    /// decoder or the reader, so that a driver can decide what to do before borrowing them.
    pub(crate) fn advance(&mut self, r: &Reader<'_>) -> Option<Ready> {
        if let Some(p) = self.queued.pop_front() {
            return Some(Ready::Problem(Box::new(p)));
        }
        self.queued_this_record = 0;
        loop {
            if self.pos >= self.end {
                if self.next_region >= self.regions.len() {
                    if !self.finished && self.margin.is_some() && self.mode == Mode::Main {
                        // A stream: its length is checked before the trace-wide checks.
                        self.stopped = Some(Stop::Boundary);
                        return None;
                    }
                    if !self.finished {
                        self.finished = true;
                        self.finish(r);
                        if let Some(p) = self.queued.pop_front() {
                            return Some(Ready::Problem(Box::new(p)));
                        }
                    }
                    return None;
                }
                if let Err(d) = self.enter_region(r) {
                    return Some(Ready::Damage(d));
                }
                continue;
            }
            if self.lim < self.end
                && self
                    .margin
                    .is_some_and(|m| self.lim.saturating_sub(self.pos) < m)
            {
                self.stopped = Some(Stop::Boundary);
                return None;
            }
            return Some(match self.decode_record(r) {
                Ok(()) => {
                    self.count += 1;
                    // A mapped trace keeps only a window resident, whatever its size.
                    // Part of a trace decoded beside other parts: whoever runs the parts
                    // releases behind the earliest (`metatf::parallel`).
                    if self.pos >= self.released + RELEASE_EVERY && self.release {
                        self.released = self.pos;
                        if let Some(t) = r.input.trace() {
                            t.release_before(self.pos - RELEASE_EVERY);
                        }
                    }
                    Ready::Record
                }
                Err(_) if self.stopped.is_some() => return None,
                Err(d) => {
                    // Resynchronise at the next region.
                    self.pos = self.end;
                    self.index_exact = false;
                    Ready::Damage(d)
                }
            });
        }
    }

    /// The event `ready` (from [`Decoder::advance`] with the same reader): the record just
    /// decoded, as a view of `r` and of this decoder's values, or a problem or damage.
    #[inline]
    pub(crate) fn event<'s>(&'s self, r: &'s Reader<'s>, ready: Ready) -> Event<'s> {
        match ready {
            Ready::Record => {
                let c = self.cur;
                Event::Record(RecordView {
                    reader: r,
                    record_id: c.rid,
                    section: self.section(),
                    offset: c.start,
                    len: self.pos - c.start,
                    index: self.count - 1,
                    values: &self.values,
                    meta: self.meta,
                })
            }
            Ready::Problem(p) => Event::Problem(p),
            Ready::Damage(d) => Event::Damage(d),
        }
    }

    /// The tag table of section `tags` (that of an open region: see [`Decoder::tags`]).
    #[inline]
    fn tag_table<'s>(r: &'s Reader<'_>, tags: Option<u8>) -> &'s TagTable {
        tags.and_then(|s| r.compiled.tags[s as usize].as_ref())
            .expect("a region with a tag table is open")
    }

    fn section(&self) -> u8 {
        self.scope.as_ref().map_or(0, |s| s.section)
    }

    fn enter_region(&mut self, r: &Reader<'_>) -> Result<(), Box<Damage>> {
        let ri = self.regions[self.next_region];
        self.next_region += 1;
        let region = r.input.regions[ri];
        self.region_start = region.start;
        self.pos = region.start;
        self.end = region.end;
        self.lim = self.limit(r, region.end);
        match &r.compiled.tags[region.section as usize] {
            Some(_) => {
                self.tags = Some(region.section);
                let mut scope = ScopeState::new(r.schema, region.section);
                scope.live |= r.input.live;
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

    fn finish(&mut self, r: &Reader<'_>) {
        if self.mode == Mode::Main && self.regions.len() == r.input.regions.len() {
            if let Some(p) = r.record_count_problem(self.count, self.index_exact) {
                self.queued.push_back(p);
            }
        }
    }

    fn problem(
        &mut self,
        r: &Reader<'_>,
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
        let at = self.position(r, offset, rid, slot);
        self.queued.push_back(Problem { at, kind });
    }

    fn position(
        &self,
        r: &Reader<'_>,
        offset: u64,
        rid: Option<RecordId>,
        slot: Option<SlotId>,
    ) -> Position {
        let schema = r.schema;
        let section = self.section();
        Position {
            offset,
            record_index: self.index_exact.then_some(self.count),
            section,
            section_name: r.section_name(section).to_string(),
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
        r: &Reader<'_>,
        offset: u64,
        rid: Option<RecordId>,
        slot: Option<SlotId>,
        kind: DamageKind,
    ) -> Box<Damage> {
        Box::new(Damage {
            at: self.position(r, offset, rid, slot),
            kind,
        })
    }

    #[inline]
    fn read(&self, r: &Reader<'_>, at: u64, width: usize) -> u64 {
        r.input.order.read_uint(r.input.from(at), width)
    }

    #[inline]
    fn need(
        &mut self,
        r: &Reader<'_>,
        n: u64,
        rid: Option<RecordId>,
        slot: Option<SlotId>,
    ) -> Result<(), Box<Damage>> {
        if n > self.lim - self.pos {
            Err(self.short(r, n, rid, slot))
        } else {
            Ok(())
        }
    }

    /// `n` bytes are needed and fewer are at hand: the region is truncated, or (a window of a
    /// stream) the window ends first and the decode stops.
    #[cold]
    #[inline(never)]
    fn short(
        &mut self,
        r: &Reader<'_>,
        n: u64,
        rid: Option<RecordId>,
        slot: Option<SlotId>,
    ) -> Box<Damage> {
        let available = self.end - self.pos;
        if n <= available {
            self.stopped = Some(Stop::MidRecord);
        }
        self.damage(
            r,
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
    fn plain(
        &mut self,
        r: &Reader<'_>,
        slot: SlotId,
        w: usize,
        rid: RecordId,
    ) -> Result<u64, Box<Damage>> {
        self.need(r, w as u64, Some(rid), Some(slot))?;
        let at = self.pos;
        let raw = self.read(r, at, w);
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

    fn decode_record(&mut self, r: &Reader<'_>) -> Result<(), Box<Damage>> {
        if let Some(scope) = self.scope.as_mut() {
            scope.sets.compact();
        }
        let reader = r;

        let wire = reader.wire;
        let start = self.pos;
        self.cur = Cur { rid: 0, start };
        self.values.clear();
        self.meta = None;
        let tw = wire.tag as u64;
        self.need(r, tw, None, None)?;
        let tag = self.read(r, start, tw as usize);
        let tags: &TagTable = Decoder::tag_table(r, self.tags);
        let Some(rid) = tags.get(tag) else {
            return Err(self.damage(r, start, None, None, DamageKind::UnknownTag { tag }));
        };
        self.cur.rid = rid;
        let at_region_start = start == self.region_start;
        let section_here = self.section();
        if section_here != 0 && at_region_start && rid != wire.section {
            return Err(self.damage(r, start, Some(rid), None, DamageKind::MissingSectionRecord));
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
            return self.decode_metadata(r, rid);
        }
        if rid == wire.section {
            let number = self.plain(r, 1, wire.section_number as usize, rid)?;
            let off = self.values[1].offset;
            if !at_region_start || section_here == 0 {
                self.problem(r, start, Some(rid), None, ProblemKind::MisplacedSection);
            } else if number != section_here as u64 {
                self.problem(
                    r,
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
        self.run_program(r, rid)?;
        // What the record holds beyond its own allowance comes out of the trace's reserve.
        let bytes = self.pos - start;
        let nslots = reader.compiled.program(rid).nslots;
        let excess =
            (self.values.len() as u64).saturating_sub(crate::limits::sparse_limit(nslots, bytes));
        self.reserve = self.reserve.saturating_sub(excess);
        Ok(())
    }

    fn run_program(&mut self, r: &Reader<'_>, rid: RecordId) -> Result<(), Box<Damage>> {
        let reader = r;
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
                self.fixed_record(r, rid);
                return Ok(());
            }
            PlanState::Stale => {
                self.make_plan(r, rid, base);
                if self.plans[rid as usize].state == PlanState::Fixed {
                    return self.run_program(r, rid);
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
                            Op::Int(slot) => self.int_field(r, rid, rt, base, *slot)?,
                            Op::Bytes(slot, width) => self.bytes_field(r, rid, *slot, width)?,
                            Op::Repeat { .. } | Op::EndRepeat { .. } => {
                                unreachable!("a run holds fields only")
                            }
                        }
                    }
                }
                Step::Int { slot, .. } => self.int_field(r, rid, rt, base, slot)?,
                Step::Bytes { slot, width, .. } => self.bytes_field(r, rid, slot, width)?,
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
                                r,
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
                            r,
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
                            r,
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
    fn make_plan(&mut self, r: &Reader<'_>, rid: RecordId, base: usize) {
        let reader = r;
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
    fn fixed_record(&mut self, r: &Reader<'_>, rid: RecordId) {
        let input = &r.input;
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
        r: &Reader<'_>,
        rid: RecordId,
        slot: SlotId,
        width: &crate::dtd::Expr,
    ) -> Result<(), Box<Damage>> {
        let len = eval_width(width, &self.last).map_err(|e| {
            self.damage(r, self.pos, Some(rid), Some(slot), DamageKind::BadWidth(e))
        })?;
        self.need(r, len, Some(rid), Some(slot))?;
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
        r: &Reader<'_>,
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
            return Err(self.short(r, w as u64, Some(rid), Some(slot)));
        }
        let at = self.pos;
        let input = &r.input;
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
        if let Val::Ref(target) = value {
            self.check_ref(r, target, at, rid, slot);
        }
        if let Some(fixed) = def.fixed {
            if number != fixed {
                self.problem(
                    r,
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

    fn check_ref(
        &mut self,
        r: &Reader<'_>,
        target: ElementRef,
        at: u64,
        rid: RecordId,
        slot: SlotId,
    ) {
        if self.mode == Mode::Prepass {
            return;
        }
        if let Err(e) = r.element(target) {
            self.problem(r, at, Some(rid), Some(slot), ProblemKind::Reference(e));
        }
    }

    fn decode_metadata(&mut self, r: &Reader<'_>, rid: RecordId) -> Result<(), Box<Damage>> {
        let reader = r;
        let schema = reader.schema;
        let [rw, fw, pw] = reader.wire.meta_fields;
        let target_tag = self.plain(r, 1, rw as usize, rid)?;
        let field = self.plain(r, 2, fw as usize, rid)?;
        let code = self.plain(r, 3, pw as usize, rid)?;
        let prop_at = self.values[3].offset;
        let Some(nwords) = u8::try_from(code)
            .ok()
            .and_then(|c| MetaProperty::words_for_code(c, r.input.live))
        else {
            return Err(self.damage(
                r,
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
            *w = self.plain(r, 4, word, rid)?;
        }
        let tags = Decoder::tag_table(r, self.tags);
        let Some(target) = tags.get(target_tag) else {
            let at = self.values[1].offset;
            self.problem(
                r,
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
                    r,
                    self.cur.start,
                    Some(rid),
                    None,
                    DamageKind::MissingSectionRecord,
                ));
            }
            Ok(p) => p,
            Err(m) => {
                self.problem(r, prop_at, Some(rid), Some(3), ProblemKind::Metadata(m));
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
                self.problem(r, at, Some(rid), None, ProblemKind::Metadata(refused));
            }
        }
        Ok(())
    }
}
