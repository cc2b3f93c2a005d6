//! [`Records`]: walks the regions of a trace and yields one [`Event`] at a time — a borrowed
//! record view, a problem, or damage — so no caller drains a side channel.

// Design: the decoder owns every buffer it needs (decoded values, last value per slot, the walk
// stack) and reuses them from record to record, so decoding allocates nothing per record. It is
// a lending iterator: a `RecordView` borrows the decoder until the next call, which is why
// `Records` has its own `next` rather than implementing `std::iter::Iterator`. Problems found
// while decoding a record are queued and come out right after that record's view.
//
// Design: the state of a decode (`Decoder`) holds no borrow of the reader whose bytes it reads:
// every call is handed the reader (`Decoder::advance`, then `Decoder::event` for the borrowed
// view), and `Records` is a reader and a `Decoder` together. A driver that owns the bytes it
// decodes — a stream's window, refilled between records (`crate::stream`) — keeps its reader
// and its decoder as two plain fields, with no self-reference. The files: `event.rs` (`Event`,
// the `EventStream` trait every source of events implements), `plan.rs` (the fast path of
// records of a fixed layout), `fields.rs` (the general path: the walker and each kind of
// field), `scan.rs` (validating without events).

use std::collections::VecDeque;

use crate::dtd::{RecordId, SlotId};
use crate::layout::{ScopeState, TagTable, Walk};

use super::error::{Damage, DamageKind, Position, Problem, ProblemKind};
use super::reader::Reader;
use super::value::{FieldValue, Val};
use super::view::{MetaChange, RecordView};

mod event;
mod fields;
mod plan;
mod scan;
pub use event::{Event, EventPasses, EventStream};
use plan::{DecodePlan, PlanState};
pub use scan::{ScanStop, ScanTimes, ScanValues, Scanned, MAX_SCAN_VALUES};

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
    plans: Vec<DecodePlan>,
    /// Whether records on the fast path keep their values (see [`Records::skip_values`]).
    keep_values: bool,
    /// The tables pre-pass (`Reader::is_table`): only lengths and metadata records matter, so
    /// a scan steps over records without advancing their slots' states (see `scan.rs`).
    lengths_only: bool,
    /// The [`ScanTimes`] whose reading of the times the plans' clocks hold (its `id`; 0: none).
    clock_of: u64,

    /// The offset up to which a mapped trace's pages were last released.
    released: u64,
    /// Whether pages are released behind the cursor (see [`Records::release_pages`]).
    release: bool,
    /// The first byte whose pages may be released: 0, or for the decoder of a part of the
    /// trace where the part starts.
    floor: u64,
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
// Design: 256 KiB, not 4 MiB: on heaptrack's recording `check` held 3.5 MB and `stats` 7 MB
// less at 1 MiB, decoding the metadata-heavy shape 6 MB less (16.2 → 10.1 MB); at 256 KiB the
// recording's mapped pages resident at once went from 2.1 MB to 0.64 MB more. A release is one
// `madvise` per 256 KiB read: the task clock and page faults of `check --no-semantic` on the
// metadata-heavy shape measured the same (576 faults either way).
const RELEASE_EVERY: u64 = 1 << 18;

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
    /// an arithmetic interpretation, no repeat, live set or fixed value; byte strings only of a
    /// constant length or one an earlier plain field holds; `sectionOffset` references) is then
    /// checked for length and references and its state advanced, but its values are not kept:
    /// its [`RecordView`] holds the tag alone. Nothing else in such a record can be invalid, so
    /// the problems and damage reported are the same. For callers that count records
    /// and report problems without reading values (`mtf check` of a DTD without analysis
    /// declarations).
    pub fn skip_values(&mut self, skip: bool) {
        self.d.skip_values(skip)
    }

    /// The tables pre-pass (`Reader::is_table`): scans step over records without advancing
    /// their states (see `scan.rs`).
    pub(crate) fn lengths_only(&mut self) {
        self.d.lengths_only()
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

    /// Whether a mapped trace's pages are released behind the cursor as it moves on, from the
    /// start of the trace (by default; a decoder of part of a trace, [`Reader::region_records`],
    /// releases only behind its own start: see [`Records::release_own_pages`]).
    pub fn release_pages(&mut self, on: bool) {
        self.d.release_pages(on)
    }

    /// Release a mapped trace's pages behind the cursor from byte `from` on, never before it:
    /// for one of several decoders of the same trace, each reading its own part from `from` (a
    /// decoder of part of a trace, [`Reader::region_records`], does so from its first region by
    /// default). A page released and read again by another reader is read again from the file.
    pub fn release_own_pages(&mut self, from: u64) {
        self.d.release_own_pages(from)
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
        let floor = match mode {
            Mode::Part => regions
                .first()
                .and_then(|&i| reader.input.regions.get(i))
                .map_or(0, |r| r.start),
            _ => 0,
        };
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
            plans: std::iter::repeat_with(DecodePlan::default)
                .take(reader.schema.records.len())
                .collect(),
            keep_values: true,
            lengths_only: false,
            clock_of: 0,
            released: 0,
            // Design: the decoder of a part of the trace (one of `-j N`'s chunks) releases the
            // pages it has passed within its part, from where the part starts (`floor`), as a
            // whole decoder does from the start. Whoever runs the parts also releases behind
            // the earliest chunk not yet joined (`metatf::parallel::release_behind`), but that
            // waits for each chunk's end: `check -j 2` held 426 MB of a 538 MB trace.
            release: true,
            floor,
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

    /// The tables pre-pass only: see [`Decoder::lengths_only`].
    pub(crate) fn lengths_only(&mut self) {
        self.lengths_only = true;
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
        if on {
            self.floor = 0;
        }
    }

    /// As [`Records::release_own_pages`].
    pub fn release_own_pages(&mut self, from: u64) {
        self.release = true;
        self.floor = from;
    }

    /// Releases the pages of a mapped trace from the floor to `RELEASE_EVERY` bytes behind the
    /// cursor (called at most every `RELEASE_EVERY` bytes).
    #[cold]
    #[inline(never)]
    fn release_behind(&mut self, r: &Reader<'_>) {
        self.released = self.pos;
        if let Some(t) = r.input.trace() {
            t.release_range(self.floor, self.pos - RELEASE_EVERY);
        }
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
                    // A mapped trace keeps only a window resident, whatever its size: behind
                    // the cursor from the start, or for part of a trace decoded beside other
                    // parts, from where the part starts (see `Decoder::floor`).
                    if self.pos >= self.released + RELEASE_EVERY && self.release {
                        self.release_behind(r);
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

    // Design: the decoding of a record is one function without calls but on its rare paths:
    // `decode_record`, `run_program` and the plans' `fixed_record` and `var_record` are each
    // called from one place and inlined into `advance` (`inline(always)`). Left to the
    // compiler, which of them it inlined changed with unrelated edits of `advance`, by 30 to
    // 50 instructions per record of calls and register saves (the semantic `check` of the
    // benchmark traces, measured by valgrind: 1,432 to 1,484 per record on the default one).
    #[inline(always)]
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
}
