//! [`Records::scan`]: validating only, records counted without events.

// Design: a record whose type has a fixed plan under the current metadata (integers with an
// arithmetic interpretation, no repeat, live set or fixed value; byte strings only of a
// constant length or one an earlier plain field holds; `sectionOffset` references, `plan.rs`)
// can be invalid in two ways only: it can be cut short by the end of its region, and a
// reference can name no element (checked against the table's element starts, `refs_ok`).
// Everything else about it — its tag, its type, its length — is known once its tag is read.
// So a caller that only counts records and reports problems (`mtf check` without the semantic
// pass, the index builder, `ScanTimes` below for its times) can step over such records in a
// tight loop: read the tag, look the type up, check that the plan's length fits in the region
// and that its references name elements, advance the state that later records or a checkpoint can see (`delta` and `stride` previous values: the same
// `layout::arith::decode` as every other path), count. Anything else stops the scan *before*
// the record, and `Records::next` decodes it on the general path with its exact problems,
// damage and positions: a section record, a metadata record but one that changes a width or
// an arithmetic interpretation and is applied without a problem (applied here by the same
// `ScopeState::apply`, its target's plan patched as `next` patches it; also in the tables
// pre-pass, which looks only for the metadata records that make a field read a section, and
// those the scan stops before), a type without a fixed plan or whose
// plan is stale (`next` makes it), a record too long for what is left of its region, the first
// record of a region (§2.3: a section's region must open with its section record), the end of
// the region. Nothing observable differs from decoding with `next`: the record count, the
// position, the scope's state (so `Records::checkpoint`) and the pages released behind the
// cursor are what `next` leaves after the same records; what is not carried from one record to
// the next (the record's values, the most recent values of its slots, the metadata change it
// made) is not state (see `decode/checkpoint.rs`). The live sets are not touched by a fixed
// record; they are compacted by the next record that uses them, as before.

// Design (the tables pre-pass, `Reader::is_table`): that pass reads the whole trace only to
// find the metadata records that make a field read a section, so it needs the records'
// lengths and nothing else; its scan (`Decoder::lengths_only`) advances no `delta`/`stride`
// state. That is exact: a stepped record's length is its plan's (a constant, or a byte
// string's length held by an earlier *plain* field, which has no state); a record type
// leaves the fast path only by a metadata record, and one that changes a field's
// interpretation sets that field's state (`delta v`, `stride v s`: `prev := v`) or the field
// has none, so the length of a record decoded on the general path never reads a state the
// scan skipped; the values such a record shows are not read (the pre-pass takes only
// metadata records, whose fields have no interpretation, and checks no reference). The
// element index of a table (`tables.rs`), which keeps values, never scans.
use super::plan::{
    patch_plan, var_layout, ClockKind, DecodePlan, FixedKind, Places, PlanClock, MAX_STRINGS,
};
use super::{Decoder, Mode, PlanState, Records, RELEASE_EVERY};
use crate::decode::Reader;
use crate::dtd::{Interp, RecordId, SlotId};
use crate::layout::arith as interp;
use crate::layout::{MetaProperty, ScopeState, TagTable};

/// Where [`Records::scan`] stops at the latest: before the record of index `records`, or
/// before a record that starts at or after byte `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanStop {
    /// Stop before the record of this index ([`Records::count`] reaching it).
    pub records: u64,
    /// Stop before a record that starts at or after this byte offset.
    pub offset: u64,
}

impl ScanStop {
    /// No limit: scan as far as the records allow.
    pub const NONE: ScanStop = ScanStop {
        records: u64::MAX,
        offset: u64::MAX,
    };
}

impl Default for ScanStop {
    fn default() -> ScanStop {
        ScanStop::NONE
    }
}

/// The declared times (docs/format.md §14.4) of the records a [`Records::scan_timed`] steps
/// over, for the seek index, whose checkpoints note the latest time before them (§15): per
/// record type the time fields a scan reads, and the largest time seen.
// Design: a seek index of a DTD with times needs each record's time, which a scan that only
// advanced states did not read, so verifying or building such an index decoded every record
// through events (5x the time of `check` on the shapes of issue 28). The scan now reads the
// time fields of the records it steps over itself, from the same plan and states as the
// general path (a `delta` or `stride` time is the state it leaves); what it cannot read the
// same way (a time field that is the tag or a byte string, or a guard testing one, §14.1) is a
// type it stops before. A guarded time (Android's: a line without times has none) is read with
// the field its guard tests, out of line (`fields_time`).
// Design: what the scan found of a type's time is kept in its plan (`PlanClock`), forgotten
// when the plan is made again: for a type without a time or with one `delta`/`stride` time (a
// state the scan advances), a state and a scale that give the time without a branch or a
// look-up per record (the look-up in this struct per record was two thirds of what verifying
// an index added to `check` on the default shape); any other type reads its fields from here.
#[derive(Debug, Clone, Default)]
pub struct ScanTimes {
    per_type: Vec<TypeTimes>,
    latest: Option<u64>,
    /// Which `ScanTimes::new` this is (0: a default, which reads no type's time): what the
    /// plans' clocks found from it stay true for.
    id: u64,
}

/// The `ScanTimes` made so far in this process (each one's `id`).
static TIMES_MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The time fields of a record type and the scale of each to the DTD's unit.
pub type TimeFields = Box<[(SlotId, u64)]>;

/// Most time fields of a record type a scan reads.
const MAX_TIME_FIELDS: usize = 4;

/// What a scan reads of the time of one record type.
#[derive(Debug, Clone)]
enum TypeTimes {
    /// Its records have no time.
    None,
    /// The scan stops before its records.
    Stop,
    /// Its time fields and their scales, then the fields their guards test (scale 0), and how
    /// they are read in the plan they were last found in (`made`, 0 for none).
    Fields {
        list: TimeFields,
        made: u64,
        n: u8,
        fields: [TimeField; MAX_TIME_FIELDS],
        /// How many of `list` are time fields (the first ones).
        times: u8,
        /// Per time field, its guard: the index in `list` of the field it tests, the value,
        /// and whether it holds when the field does not hold the value (`isNot`); none for a
        /// type without guards (kept apart: most types have none).
        guards: Option<Box<Guards>>,
    },
}

/// The guards of a type's time fields (see `TypeTimes::Fields`).
type Guards = [Option<(u8, u64, bool)>; MAX_TIME_FIELDS];

/// One time field of a record type, as its plan has it.
#[derive(Debug, Clone, Copy, Default)]
struct TimeField {
    how: How,
    width: u8,
    seg: u8,
    at: u32,
    state: u32,
    scale: u64,
}

/// How a [`TimeField`]'s value is read.
#[derive(Debug, Clone, Copy, Default)]
enum How {
    /// A `default`: always this.
    #[default]
    Zero,
    Const(u64),
    /// As it lies.
    Plain,
    /// The state the scan advanced (`delta`, `stride`).
    State,
    /// Decoded from its state, changing nothing (`baseOffset`, signed `none`).
    Decode {
        signed: bool,
    },
    /// A `sectionOffset` into this table, as it lies (only for [`ScanValues`] made
    /// [`ScanValues::with_references`]).
    Ref {
        table: u8,
    },
}

impl ScanTimes {
    /// Per record type (by id), the time fields whose values, each times its scale, add up to
    /// the record's time (none: the record has no time), or `None` for a type whose records a
    /// scan must stop before.
    pub fn new(per_type: Vec<Option<TimeFields>>) -> ScanTimes {
        let per_type = per_type
            .into_iter()
            .map(|t| match t {
                Some(list) if list.is_empty() => TypeTimes::None,
                Some(list) if list.len() <= MAX_TIME_FIELDS => TypeTimes::Fields {
                    times: list.len() as u8,
                    list,
                    made: 0,
                    n: 0,
                    fields: [TimeField::default(); MAX_TIME_FIELDS],
                    guards: None,
                },
                _ => TypeTimes::Stop,
            })
            .collect();
        ScanTimes {
            per_type,
            latest: None,
            id: TIMES_MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
        }
    }

    /// The time field `slot` of type `rid` counts only where field `tested` holds `value`, or
    /// with `negated` where it does not (a guard, `F.when = G; F.is = V;` or `F.isNot = V;`,
    /// docs/format.md §14.1): a record whose guards all fail has no time. A type whose time and
    /// tested fields are more than a scan reads is one it stops before.
    pub fn guard(&mut self, rid: usize, slot: SlotId, tested: SlotId, value: u64, negated: bool) {
        let Some(t) = self.per_type.get_mut(rid) else {
            return;
        };
        let TypeTimes::Fields {
            list,
            times,
            guards,
            ..
        } = t
        else {
            return;
        };
        let Some(k) = list[..*times as usize].iter().position(|&(s, _)| s == slot) else {
            return;
        };
        let g = match list.iter().position(|&(s, _)| s == tested) {
            Some(g) => g,
            None if list.len() < MAX_TIME_FIELDS => {
                let mut v = list.to_vec();
                v.push((tested, 0));
                *list = v.into();
                list.len() - 1
            }
            None => {
                *t = TypeTimes::Stop;
                return;
            }
        };
        guards.get_or_insert_with(Box::default)[k] = Some((g as u8, value, negated));
    }

    /// A record's time, seen by the caller: the latest time is the largest.
    #[inline]
    pub fn note(&mut self, t: u64) {
        self.latest = Some(self.latest.map_or(t, |m| m.max(t)));
    }

    /// The largest time seen, if any.
    pub fn latest(&self) -> Option<u64> {
        self.latest
    }
}

/// How the time fields `list` are read in `plan` (into `fields`): `false` if one is not an
/// integer of the plan (the scan then stops before the record, whose time the general path
/// takes), or with `refs`, a reference.
#[cold]
fn find_time_fields(
    list: &[(SlotId, u64)],
    plan: &DecodePlan,
    fields: &mut [TimeField],
    refs: bool,
) -> bool {
    for (k, &(slot, scale)) in list.iter().enumerate() {
        let Some(f) = plan.fields.iter().find(|f| f.slot == slot) else {
            return false;
        };
        let how = match f.kind {
            FixedKind::Ref { section } if refs => How::Ref { table: section },
            // What the general path's view gives for them is not an integer.
            FixedKind::Bytes | FixedKind::Ref { .. } => return false,
            FixedKind::Const(v) => How::Const(v),
            FixedKind::Plain => How::Plain,
            FixedKind::Interp { .. } if plan.advance.iter().any(|a| a.state == f.state) => {
                How::State
            }
            FixedKind::Interp { signed } => How::Decode { signed },
        };
        fields[k] = TimeField {
            how,
            width: f.width,
            seg: f.seg,
            at: f.at,
            state: f.state,
            scale,
        };
    }
    true
}

/// Most fields per record type a [`Records::scan_values`] reads.
pub const MAX_SCAN_VALUES: usize = 16;

/// The fields whose values a [`Records::scan_values`] reads of the records it steps over, per
/// record type, and what it found of them in the plans (see [`Records::scan_values`]).
// Design: a pass that wants a few integers of each record (the semantic pass of `mtf check`,
// the statistics) spent most of its time on the general path making every record's view: every
// field decoded and pushed, an event handed over and dropped. The scan already steps over a
// record whose layout is fixed under the current metadata, advancing the states later records
// see; reading the few fields a pass wants from the same plan, as `ScanTimes` reads times, is
// the same decode without the view. What is found of a type's fields is kept per type and
// checked against the plan it was found in (`made`), which a metadata change that alters how a
// field is read makes again.
#[derive(Debug, Clone, Default)]
pub struct ScanValues {
    per_type: Vec<TypeValues>,
    out: [u64; MAX_SCAN_VALUES],
    /// Whether [`Scanned::element`] is wanted.
    elements: bool,
    /// Whether `sectionOffset` fields into tables of byte strings are given, as their offsets
    /// ([`ScanValues::with_references`]).
    refs: bool,
}

/// What a scan reads of one record type's fields.
#[derive(Debug, Clone)]
enum TypeValues {
    /// The scan stops before its records.
    Stop,
    /// Its fields, and how they are read in the plan they were last found in (`made`, 0 for
    /// none).
    Fields {
        list: TimeFields,
        made: u64,
        fields: Box<[TimeField; MAX_SCAN_VALUES]>,
        /// Per field, the table a reference refers to (none: an integer), and whether any
        /// field is a reference.
        tables: [Option<u8>; MAX_SCAN_VALUES],
        any_ref: bool,
    },
}

impl ScanValues {
    /// Per record type (by id), the fields (slots) whose values a scan gives, in this order
    /// (empty: none, the record is only counted), or `None` for a type whose records a scan
    /// must stop before. A type with more than [`MAX_SCAN_VALUES`] fields is one it stops
    /// before, and so is one whose fields are not all integers of its plan when it meets it
    /// (a byte string, a reference, a repeat: the general path decodes such a record).
    pub fn new(per_type: Vec<Option<Box<[SlotId]>>>) -> ScanValues {
        let per_type = per_type
            .into_iter()
            .map(|t| match t {
                Some(list) if list.len() <= MAX_SCAN_VALUES => TypeValues::Fields {
                    list: list.iter().map(|&s| (s, 1)).collect(),
                    made: 0,
                    fields: Box::new([TimeField::default(); MAX_SCAN_VALUES]),
                    tables: [None; MAX_SCAN_VALUES],
                    any_ref: false,
                },
                _ => TypeValues::Stop,
            })
            .collect();
        ScanValues {
            per_type,
            out: [0; MAX_SCAN_VALUES],
            elements: false,
            refs: false,
        }
    }

    /// These values, with a `sectionOffset` field into a table whose elements are all byte
    /// strings (a string table: mtrace's callers, heaptrack's names) given as the offset it
    /// stores, which is the number [`RecordView`](crate::decode::RecordView)'s reference
    /// carries ([`ElementRef::number`](crate::decode::ElementRef::number)), and its string
    /// told by [`Scanned::bytes`]; otherwise a type with such a field is one the scan stops
    /// before. A reference into any other table always stops it.
    pub fn with_references(mut self) -> ScanValues {
        self.refs = true;
        self
    }

    /// These values, with [`Scanned::element`] told (which may read the trace's metadata
    /// records once: [`Reader::is_table`]); otherwise it is `false`.
    pub fn telling_elements(mut self) -> ScanValues {
        self.elements = true;
        self
    }
}

/// A record a [`Records::scan_values`] stepped over.
#[derive(Clone, Copy)]
pub struct Scanned<'v> {
    /// Its type.
    pub record_id: RecordId,
    /// Its index in the trace ([`RecordView::index`](crate::decode::RecordView::index)).
    pub index: u64,
    /// The byte offset of its tag ([`RecordView::offset`](crate::decode::RecordView::offset)).
    pub offset: u64,
    /// The section of the region it was read in
    /// ([`RecordView::section`](crate::decode::RecordView::section)).
    pub section: u8,
    /// Whether it is an element of a table
    /// ([`RecordView::is_element`](crate::decode::RecordView::is_element)), where the values
    /// were made [`ScanValues::telling_elements`] (else `false`).
    pub element: bool,
    /// The values of the fields its type asked for ([`ScanValues::new`]), in that order: what
    /// [`RecordView::ints`](crate::decode::RecordView::ints) gives for them; for a reference
    /// ([`ScanValues::with_references`]), the offset it stores.
    pub values: &'v [u64],
    /// Where a value is a reference: per value the table it refers to, and the reader.
    refs: Option<&'v ScanRefs<'v>>,
}

/// The references among a [`Scanned`]'s values: per value, the table a reference refers to
/// (none for an integer), and the reader that follows them.
// Design: one pointer in `Scanned`, null for the records without references (nearly all), so
// that handing a record over costs what it did before references were given.
#[derive(Clone, Copy)]
struct ScanRefs<'v> {
    reader: &'v Reader<'v>,
    tables: [Option<u8>; MAX_SCAN_VALUES],
}

impl std::fmt::Debug for Scanned<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanned")
            .field("record_id", &self.record_id)
            .field("index", &self.index)
            .field("offset", &self.offset)
            .field("section", &self.section)
            .field("element", &self.element)
            .field("values", &self.values)
            .field("tables", &self.refs.map(|r| r.tables))
            .finish()
    }
}

impl<'v> Scanned<'v> {
    /// Whether value `k` is a reference ([`ScanValues::with_references`]): the offset it
    /// stores, where the view's [`ints`](crate::decode::RecordView::ints) gives none.
    #[inline]
    pub fn is_reference(&self, k: usize) -> bool {
        self.refs
            .is_some_and(|r| r.tables.get(k).is_some_and(|t| t.is_some()))
    }

    /// Whether any value is a reference.
    #[inline]
    pub fn has_references(&self) -> bool {
        self.refs.is_some()
    }

    /// For a value that is a reference ([`ScanValues::with_references`]), the byte string
    /// of the element it names: what the view's field resolves to.
    pub fn bytes(&self, k: usize) -> Option<&'v [u8]> {
        let refs = self.refs?;
        let section = (*refs.tables.get(k)?)?;
        let offset = *self.values.get(k)?;
        let r = crate::decode::ElementRef::Offset { section, offset };
        match refs.reader.resolve(r).ok()?.value {
            crate::decode::Value::Bytes(b) => Some(b),
            _ => None,
        }
    }
}

/// What the scan loop does with a record it steps over, besides counting it.
trait Visit {
    /// Whether `Visit::stepped` reads the records (their bytes, the segments' starts of a `Var`
    /// record); if not, it is not called for them.
    const STARTS: bool;
    /// Whether a record of type `rid` under `plan` may be stepped over (else the scan stops
    /// before it); asked before its states advance.
    fn admits(&mut self, rid: usize, plan: &DecodePlan) -> bool;
    /// A metadata record stepped over (applied); `false` ends the scan after it.
    fn meta(&mut self, rid: RecordId, index: u64, offset: u64) -> bool;
    /// A record stepped over, its states advanced, its fields at `here` (segments at
    /// `starts`); `false` ends the scan after it.
    #[allow(clippy::too_many_arguments)]
    fn stepped(
        &mut self,
        rid: RecordId,
        index: u64,
        offset: u64,
        here: &[u8],
        starts: &[u64; MAX_STRINGS + 1],
        order: crate::container::ByteOrder,
        slots: &mut [crate::layout::SlotState],
    ) -> bool;
}

/// Counting only ([`Records::scan`]).
struct Count;

impl Visit for Count {
    const STARTS: bool = false;
    #[inline(always)]
    fn admits(&mut self, _: usize, _: &DecodePlan) -> bool {
        true
    }
    #[inline(always)]
    fn meta(&mut self, _: RecordId, _: u64, _: u64) -> bool {
        true
    }
    #[inline(always)]
    fn stepped(
        &mut self,
        _: RecordId,
        _: u64,
        _: u64,
        _: &[u8],
        _: &[u64; MAX_STRINGS + 1],
        _: crate::container::ByteOrder,
        _: &mut [crate::layout::SlotState],
    ) -> bool {
        true
    }
}

/// Reading values for a caller ([`Records::scan_values`]).
struct Values<'v, F> {
    values: &'v mut ScanValues,
    /// The reader, and the tables of the last record with references handed over.
    refs: ScanRefs<'v>,
    each: F,
    /// The number of fields of the type last admitted.
    n: usize,
    /// The section of the region scanned, and whether it is a table.
    section: u8,
    element: bool,
}

impl<F: FnMut(Scanned<'_>) -> bool> Visit for Values<'_, F> {
    const STARTS: bool = true;
    #[inline(always)]
    fn admits(&mut self, rid: usize, plan: &DecodePlan) -> bool {
        if !plan.state.planned() {
            return false;
        }
        match self.values.per_type.get_mut(rid) {
            Some(TypeValues::Fields {
                list,
                made,
                fields,
                tables,
                any_ref,
            }) => {
                if *made != plan.made {
                    if !find_time_fields(list, plan, &mut fields[..], self.values.refs) {
                        return false;
                    }
                    for (t, f) in tables.iter_mut().zip(fields.iter()) {
                        *t = match f.how {
                            How::Ref { table } => Some(table),
                            _ => None,
                        };
                    }
                    // A reference's number is its offset only into a table of strings.
                    let n = list.len().min(MAX_SCAN_VALUES);
                    if !tables[..n]
                        .iter()
                        .flatten()
                        .all(|&t| self.refs.reader.is_string_table(t))
                    {
                        return false;
                    }
                    *any_ref = tables[..n].iter().any(Option::is_some);
                    *made = plan.made;
                }
                self.n = list.len();
                true
            }
            _ => false,
        }
    }
    #[inline(never)]
    fn meta(&mut self, rid: RecordId, index: u64, offset: u64) -> bool {
        (self.each)(Scanned {
            record_id: rid,
            index,
            offset,
            section: self.section,
            element: self.element,
            values: &[],
            refs: None,
        })
    }
    #[inline(always)]
    fn stepped(
        &mut self,
        rid: RecordId,
        index: u64,
        offset: u64,
        here: &[u8],
        starts: &[u64; MAX_STRINGS + 1],
        order: crate::container::ByteOrder,
        slots: &mut [crate::layout::SlotState],
    ) -> bool {
        let n = self.n.min(MAX_SCAN_VALUES);
        let Some(TypeValues::Fields {
            fields,
            tables,
            any_ref,
            ..
        }) = self.values.per_type.get(rid as usize)
        else {
            return false;
        };
        for (out, f) in self.values.out[..n].iter_mut().zip(&fields[..n]) {
            *out = field_value(f, here, starts, order, slots);
        }
        let refs = match any_ref {
            true => {
                self.refs.tables = *tables;
                Some(&self.refs)
            }
            false => None,
        };
        (self.each)(Scanned {
            record_id: rid,
            index,
            offset,
            section: self.section,
            element: self.element,
            values: &self.values.out[..n],
            refs,
        })
    }
}

/// For a record of type `rid` whose plan's clock is not [`ClockKind::Simple`], with `room`
/// bytes after its tag: the clock found (`Unknown`), or the time fields of a `Fields` one found
/// again if the plan changed; `None` where the scan stops before the record (its plan is not
/// one a scan steps over, or its time cannot be read from it), else the record's time if the
/// clock found is a constant one.
// Design: a time read only from `default` fields (valgrind's and mtrace's `time`, 0 on every
// record; Android's `start`, guarded by itself: `start.when = start; start.isNot = 0;`) is the
// same for every record of the plan, or none: it is noted here, for the first record, and the
// plan's clock made `Simple` reading no state, so the records after it cost what a record
// without a time costs. The latest time is the largest so far (§15), which the same time again
// leaves as it is; only a record that is complete is noted (a plan without byte strings, that
// fits), so no time is noted of a record the scan cannot step over for its length. One it then
// stops before for a reference (`refs_ok`) is a whole record, whose same time the general path
// notes.
#[inline(never)]
fn plan_clock(
    clock: &mut [TypeTimes],
    rid: usize,
    plan: &mut DecodePlan,
    room: u64,
) -> Option<Option<u64>> {
    if !plan.state.planned() {
        return None;
    }
    let times = clock.get_mut(rid)?;
    match times {
        TypeTimes::None => {
            plan.clock = PlanClock {
                kind: ClockKind::Simple,
                state: u32::MAX,
                scale: 0,
                constant: false,
            };
            Some(None)
        }
        TypeTimes::Stop => None,
        TypeTimes::Fields {
            list,
            made,
            n,
            times,
            fields,
            guards,
        } => {
            if *made != plan.made {
                if !find_time_fields(list, plan, fields, false) {
                    return None;
                }
                *made = plan.made;
                *n = list.len() as u8;
            }
            match (*n, fields[0].how, guards.is_some()) {
                (1, How::State, false) => {
                    plan.clock = PlanClock {
                        kind: ClockKind::Simple,
                        state: fields[0].state,
                        scale: fields[0].scale,
                        constant: false,
                    };
                    Some(None)
                }
                _ if plan.parts.is_empty()
                    && plan.len <= room
                    && fields[..*n as usize]
                        .iter()
                        .all(|f| matches!(f.how, How::Const(_) | How::Zero)) =>
                {
                    // Every field it reads (its time fields and those their guards test) a
                    // `default`: the same time, or none, for every record of the plan.
                    plan.clock = PlanClock {
                        kind: ClockKind::Simple,
                        state: u32::MAX,
                        scale: 0,
                        constant: true,
                    };
                    let mut values = [0u64; MAX_TIME_FIELDS];
                    for (v, f) in values.iter_mut().zip(&fields[..*n as usize]) {
                        if let How::Const(c) = f.how {
                            *v = c;
                        }
                    }
                    Some(guarded_sum(
                        &fields[..*times as usize],
                        guards.as_deref(),
                        &values,
                    ))
                }
                _ => {
                    plan.clock.kind = ClockKind::Fields;
                    Some(None)
                }
            }
        }
    }
}

/// The time of a record of type `rid` stepped over (its states advanced) under `plan`, whose
/// clock is `ClockKind::Fields`, its fields at `here`: its fields' values times their scales,
/// as `mtf check` counts it, those whose guard fails left out; `None` if all are.
#[inline(never)]
#[cold]
fn fields_time(
    clock: &[TypeTimes],
    rid: usize,
    plan: &DecodePlan,
    here: &[u8],
    order: crate::container::ByteOrder,
    slots: &mut [crate::layout::SlotState],
) -> Option<u64> {
    let Some(TypeTimes::Fields {
        fields,
        n,
        times,
        guards,
        ..
    }) = clock.get(rid)
    else {
        return None;
    };
    // The segments' starts found again (the loop does not keep them for a clock).
    let places = match plan.state {
        PlanState::Var | PlanState::Refs => {
            var_layout(plan, here, order, here.len() as u64)?.starts
        }
        _ => FIXED_STARTS,
    };
    // Each field read once (a guard may test a time field), in `list`'s order.
    let mut values = [0u64; MAX_TIME_FIELDS];
    for (v, f) in values.iter_mut().zip(&fields[..*n as usize]) {
        *v = field_value(f, here, &places, order, slots);
    }
    guarded_sum(&fields[..*times as usize], guards.as_deref(), &values)
}

/// The time of a record whose time fields are `fields` (and after them the fields their
/// guards test), with values `values` in that order: the values times their scales, those whose
/// guard fails left out; `None` if all are.
#[inline(always)]
fn guarded_sum(
    fields: &[TimeField],
    guards: Option<&Guards>,
    values: &[u64; MAX_TIME_FIELDS],
) -> Option<u64> {
    let mut total = None;
    for (k, f) in fields.iter().enumerate() {
        if let Some((g, value, negated)) = guards.and_then(|gs| gs[k]) {
            if (values[g as usize] == value) == negated {
                continue;
            }
        }
        let t: u64 = total.unwrap_or(0);
        total = Some(t.wrapping_add(values[k].wrapping_mul(f.scale)));
    }
    total
}

/// The segments' starts of a fixed record: one segment, at 0.
const FIXED_STARTS: [u64; MAX_STRINGS + 1] = [0; MAX_STRINGS + 1];

/// The states of a record of a `Var` or `Refs` plan, its fields at `here` laid out at
/// `places`, advanced (`delta`, `stride`).
#[inline(always)]
fn advance_var(
    plan: &DecodePlan,
    here: &[u8],
    places: &Places,
    order: crate::container::ByteOrder,
    slots: &mut [crate::layout::SlotState],
) {
    for f in &plan.advance {
        if let FixedKind::Interp { signed } = f.kind {
            let at = places.of(f) as usize;
            let raw = order.read_uint(&here[at..], f.width as usize);
            interp::decode(&mut slots[f.state as usize], raw, signed);
        }
    }
}

/// Whether every reference of a record under `plan` whose fields start at `here` (segments at
/// `starts`) names an element of its table, as `Reader::element` finds it; a record with one
/// that does not is one the scan stops before, so that the general path reports it.
#[inline(never)]
fn refs_ok(
    r: &Reader<'_>,
    plan: &DecodePlan,
    here: &[u8],
    starts: &[u64; MAX_STRINGS + 1],
    order: crate::container::ByteOrder,
) -> bool {
    plan.refs.iter().all(|f| {
        let FixedKind::Ref { section } = f.kind else {
            return false;
        };
        let from = (starts[(f.seg as usize).min(MAX_STRINGS)] + f.at as u64) as usize;
        let offset = order.read_uint(&here[from..], f.width as usize);
        r.is_element(section, offset)
    })
}

/// The value of one field of a record stepped over (its states advanced) whose fields start at
/// `here` (segments at `starts`): what the general path's view gives for it.
#[inline(always)]
fn field_value(
    f: &TimeField,
    here: &[u8],
    starts: &[u64; MAX_STRINGS + 1],
    order: crate::container::ByteOrder,
    slots: &mut [crate::layout::SlotState],
) -> u64 {
    match f.how {
        How::Zero => 0,
        How::Const(v) => v,
        How::State => slots[f.state as usize].prev,
        How::Plain | How::Decode { .. } | How::Ref { .. } => {
            let from = (starts[(f.seg as usize).min(MAX_STRINGS)] + f.at as u64) as usize;
            let raw = order.read_uint(&here[from..], f.width as usize);
            match f.how {
                How::Decode { signed } => {
                    interp::decode(&mut slots[f.state as usize], raw, signed).number(raw)
                }
                _ => raw,
            }
        }
    }
}

impl Decoder {
    /// As [`Records::scan`], and with `times`, [`Records::scan_timed`].
    pub fn scan(
        &mut self,
        r: &Reader<'_>,
        per_type: &mut [u64],
        stop: ScanStop,
        times: Option<&mut ScanTimes>,
    ) -> u64 {
        // Two loops: the one without times carries nothing of theirs.
        match times {
            None => self.scan_loop::<false, _>(r, per_type, stop, None, &mut Count),
            Some(t) => self.scan_loop::<true, _>(r, per_type, stop, Some(t), &mut Count),
        }
    }

    /// As [`Records::scan_values`].
    pub fn scan_values(
        &mut self,
        r: &Reader<'_>,
        per_type: &mut [u64],
        stop: ScanStop,
        values: &mut ScanValues,
        times: Option<&mut ScanTimes>,
        each: impl FnMut(Scanned<'_>) -> bool,
    ) -> u64 {
        // A scan that advances no state cannot give the values of `delta` fields.
        if self.lengths_only {
            return 0;
        }
        let section = self.scope.as_ref().map_or(0, |s| s.section);
        let element = values.elements && r.is_table(section);
        let mut visit = Values {
            values,
            refs: ScanRefs {
                reader: r,
                tables: [None; MAX_SCAN_VALUES],
            },
            each,
            n: 0,
            section,
            element,
        };
        match times {
            None => self.scan_loop::<false, _>(r, per_type, stop, None, &mut visit),
            Some(t) => self.scan_loop::<true, _>(r, per_type, stop, Some(t), &mut visit),
        }
    }

    #[inline(always)]
    fn scan_loop<const TIMED: bool, V: Visit>(
        &mut self,
        r: &Reader<'_>,
        per_type: &mut [u64],
        stop: ScanStop,
        mut times: Option<&mut ScanTimes>,
        visit: &mut V,
    ) -> u64 {
        // A count per record type is needed; without room for one, nothing is stepped over.
        if per_type.len() < self.plans.len() {
            return 0;
        }
        // Between records only, inside an open region, not at its first record.
        if !self.queued.is_empty() || self.pos >= self.end || self.pos == self.region_start {
            return 0;
        }
        let (Some(tags), Some(scope)) = (self.tags, self.scope.as_mut()) else {
            return 0;
        };
        let tags = Decoder::tag_table(r, Some(tags));
        // The plans' clocks hold what was found from one `ScanTimes`: from another, found again.
        if let (true, Some(t)) = (TIMED, times.as_deref()) {
            if t.id != self.clock_of {
                for p in &mut self.plans {
                    p.clock = PlanClock::default();
                }
                self.clock_of = t.id;
            }
        }
        let input = &r.input;
        // The bytes are the file's from `base` on (a window of a stream).
        let (bytes, base) = input.bytes.parts();
        let order = input.order;
        let tw = r.wire.tag as u64;
        let plans = &mut self.plans;
        // Metadata records are applied here too, those that change a width or an arithmetic
        // interpretation (`metadata` below): also in the tables pre-pass, which looks for the
        // others (an interpretation that reads a section) and finds them where the scan stops.
        let meta = Some(r.wire.metadata);
        // The tables pre-pass reads lengths and metadata records only: it advances no state
        // (`Decoder::lengths_only`).
        let advance = !self.lengths_only;
        // References are checked as the general path checks them: not in a pre-pass.
        let check_refs = advance && self.mode != Mode::Prepass;
        // The scan ends before `limit` (the region's end, or `stop.offset` before it) and
        // before record `most`.
        // A window of a stream ends the scan at its end as well: `next` then stops or refills.
        let end = self.end.min(input.window_end());
        let limit = end.min(stop.offset);
        let most = stop.records;
        // Where the pages behind the cursor are next released (as `next` does).
        let mut release_at = match self.release {
            true => self.released.saturating_add(RELEASE_EVERY),
            false => u64::MAX,
        };
        let start_count = self.count;
        let (mut pos, mut count) = (self.pos, self.count);
        // The times: what is read of each type's, and the largest so far.
        let latest = times.as_deref().and_then(|t| t.latest);
        let mut max = latest.unwrap_or(0);
        // The scales of the `Simple` clocks read, or'ed, and 1 for a `Fields` one: not 0 if a
        // record had a time (an `or` per record rather than a compare).
        let mut scales = 0u64;
        // The segments' starts of the last `Var` record, for a visitor that reads the records
        // (not cleared for every record: a cost per record of every type).
        let mut starts = [0u64; MAX_STRINGS + 1];
        let clock: &mut [TypeTimes] = match times.as_deref_mut() {
            Some(t) if TIMED => &mut t.per_type,
            _ => &mut [],
        };
        while pos < limit && count < most {
            // The tag must fit, and name a type with a fixed plan that fits in the region.
            let tag = match tw {
                1 => bytes[(pos - base) as usize] as u64,
                _ if tw > end - pos => break,
                _ => order.read_uint(&bytes[(pos - base) as usize..], tw as usize),
            };
            let Some(rid) = tags.get(tag) else { break };
            let fields = pos + tw;
            let slots = &mut scope.slots;
            if Some(rid) == meta {
                let here = &bytes[(fields - base) as usize..];
                let Some(len) = metadata(r, scope, plans, tags, here, end - fields) else {
                    break;
                };
                let go = visit.meta(rid, count, pos);
                pos = fields + len;
                count += 1;
                per_type[rid as usize] += 1;
                if !go {
                    break;
                }
                continue;
            }
            let plan = &mut plans[rid as usize];
            // The time of the record: for most types (no time, or one `delta` time whose state
            // the scan advances) a state's value times a scale kept in the plan, read without a
            // branch (`ClockKind::Simple`); else the fields found by `plan_clock`, read after
            // the record's states advance (`fields_time`).
            // Design: nothing of a `Fields` clock is carried through the record (its fields,
            // the segments' starts): the loop keeps fewer values alive, which on the common
            // `Simple` clocks spared spills to the stack on every record.
            if TIMED && plan.clock.kind != ClockKind::Simple {
                match plan_clock(clock, rid as usize, plan, end - fields) {
                    None => break,
                    Some(Some(t)) => {
                        // A constant time, noted once (see `plan_clock`).
                        max = max.max(t);
                        scales |= 1;
                    }
                    Some(None) => {}
                }
            }
            if !visit.admits(rid as usize, plan) {
                break;
            }
            let plan = &*plan;
            // Whether the record has byte strings (`Var`: its segments' starts in `starts`); a
            // fixed record has one segment, at 0.
            let mut var = false;
            let len = match plan.state {
                PlanState::Fixed if plan.len <= end - fields => {
                    if advance {
                        for f in &plan.advance {
                            if let FixedKind::Interp { signed } = f.kind {
                                let at = (fields + f.at as u64 - base) as usize;
                                let raw = order.read_uint(&bytes[at..], f.width as usize);
                                interp::decode(&mut slots[f.state as usize], raw, signed);
                            }
                        }
                    }
                    plan.len
                }
                PlanState::Var => {
                    let here = &bytes[(fields - base) as usize..];
                    let Some(places) = var_layout(plan, here, order, end - fields) else {
                        break;
                    };
                    if advance {
                        advance_var(plan, here, &places, order, slots);
                    }
                    if V::STARTS {
                        starts = places.starts;
                        var = true;
                    }
                    places.len
                }
                // Apart from `Var`, whose records then carry no test for references.
                PlanState::Refs => {
                    let here = &bytes[(fields - base) as usize..];
                    let Some(places) = var_layout(plan, here, order, end - fields) else {
                        break;
                    };
                    if check_refs && !refs_ok(r, plan, here, &places.starts, order) {
                        break;
                    }
                    if advance {
                        advance_var(plan, here, &places, order, slots);
                    }
                    if V::STARTS {
                        starts = places.starts;
                        var = true;
                    }
                    places.len
                }
                _ => break,
            };
            if TIMED {
                let PlanClock {
                    kind, state, scale, ..
                } = plan.clock;
                if kind == ClockKind::Simple {
                    // A type without a time has no state (`u32::MAX`): nothing to do.
                    if let Some(s) = slots.get(state as usize) {
                        max = max.max(s.prev.wrapping_mul(scale));
                        scales |= scale;
                    }
                } else {
                    let here = &bytes[(fields - base) as usize..];
                    if let Some(t) = fields_time(clock, rid as usize, plan, here, order, slots) {
                        max = max.max(t);
                        // A time was read (as a `Simple` clock's scale tells).
                        scales |= 1;
                    }
                }
            }
            // A visitor that reads no field (counting only) is not handed the record's bytes,
            // whose slice would cost a bounds check per record.
            let go = !V::STARTS || {
                let here = &bytes[(fields - base) as usize..];
                let starts = if var { &starts } else { &FIXED_STARTS };
                visit.stepped(rid, count, pos, here, starts, order, slots)
            };
            pos = fields + len;
            count += 1;
            per_type[rid as usize] += 1;
            if pos >= release_at {
                self.released = pos;
                release_at = pos + RELEASE_EVERY;
                if let Some(t) = input.trace() {
                    t.release_range(self.floor, pos - RELEASE_EVERY);
                }
            }
            if !go {
                break;
            }
        }
        let seen = latest.is_some() || scales != 0;
        if let (true, true, Some(t)) = (TIMED, seen, times) {
            t.latest = Some(max);
        }
        self.pos = pos;
        self.count = count;
        count - start_count
    }

    /// The byte offset of the next record (or of the end of the region the decode is in).
    pub fn offset(&self) -> u64 {
        self.pos
    }
}

/// A metadata record whose fields (after its tag) are `bytes`, with `avail` bytes left in its
/// region: applied to `scope` and its target's plan patched (as `Decoder::decode_metadata` and
/// `Decoder::patch_plan` do), its length after its tag returned, if the general path would
/// apply it without a problem or damage and it changes a width or an arithmetic
/// interpretation. Anything else is `None`, with nothing changed: the scan stops before it.
#[inline(never)]
fn metadata(
    r: &Reader<'_>,
    scope: &mut ScopeState,
    plans: &mut [DecodePlan],
    tags: &TagTable,
    bytes: &[u8],
    avail: u64,
) -> Option<u64> {
    let [rw, fw, pw] = r.wire.meta_fields.map(|w| w as u64);
    let order = r.input.order;
    let head = rw + fw + pw;
    if head > avail {
        return None;
    }
    let target_tag = order.read_uint(bytes, rw as usize);
    let field = order.read_uint(bytes.get(rw as usize..)?, fw as usize);
    let code = order.read_uint(bytes.get((rw + fw) as usize..)?, pw as usize);
    let code = u8::try_from(code).ok()?;
    let nwords = MetaProperty::words_for_code(code, r.input.live)?;
    let word = r.input.class.word_size();
    let len = head + (nwords * word) as u64;
    if len > avail {
        return None;
    }
    let mut words = [0u64; 2];
    for (k, w) in words.iter_mut().take(nwords).enumerate() {
        *w = order.read_uint(bytes.get((head as usize + k * word)..)?, word);
    }
    let target = tags.get(target_tag)?;
    let prop = MetaProperty::from_code(code, words, 8 * word as u32).ok()?;
    let arithmetic = match prop {
        MetaProperty::Width(_) => true,
        MetaProperty::Interp(i) => matches!(
            i,
            Interp::None
                | Interp::Default(_)
                | Interp::BaseOffset(_)
                | Interp::Delta(_)
                | Interp::Stride { .. }
        ),
        MetaProperty::LiveSet(_) => false,
    };
    let slot = SlotId::try_from(field).ok()?;
    if !arithmetic {
        return None;
    }
    // Everything looked up before the change: after it, the record is taken.
    let def = r.schema.record(target).slots.get(slot as usize)?;
    let plan = plans.get_mut(target as usize)?;
    // Refused (a problem of the general path) without a change.
    scope.apply(r.schema, target, slot, prop).ok()?;
    patch_plan(plan, &scope.slots, def, slot);
    Some(len)
}

impl Records<'_> {
    /// Validate only, without events: step over the records from here that cannot be invalid
    /// but for their length and references — those whose layout is fixed under the current
    /// metadata, and metadata records that change a width or an arithmetic interpretation
    /// without a problem — each checked to fit in its region, its `sectionOffset` references
    /// checked to name elements, and counted in `per_type` (indexed by record id), until a
    /// record that needs the general decoder (one with a reference that names no element is
    /// one), the end of the region, or `stop`. Returns how
    /// many records were stepped over; [`Records::next`] then goes on with the record the scan
    /// stopped before, exactly as if it had yielded every scanned record itself: record
    /// indices, byte offsets, problems, damage, [`Records::checkpoint`] and the pages released
    /// behind the cursor are the same. Call it between records (it does nothing while problems
    /// of the record just yielded are still to come) and loop: `scan`, then `next`.
    ///
    /// ```
    /// # fn demo(reader: &metatf::decode::Reader) {
    /// use metatf::decode::{Event, ScanStop};
    /// let mut per_type = vec![0u64; reader.schema().records.len()];
    /// let mut records = reader.records();
    /// records.skip_values(true);
    /// loop {
    ///     records.scan(&mut per_type, ScanStop::NONE);
    ///     match records.next() {
    ///         None => break,
    ///         Some(Event::Record(r)) => per_type[r.record_id() as usize] += 1,
    ///         Some(Event::Problem(p)) => eprintln!("{p}"),
    ///         Some(Event::Damage(d)) => eprintln!("{d}"),
    ///     }
    /// }
    /// # }
    /// ```
    ///
    /// If `per_type` is shorter than the schema's record types, nothing is stepped over (0).
    pub fn scan(&mut self, per_type: &mut [u64], stop: ScanStop) -> u64 {
        self.d.scan(self.reader, per_type, stop, None)
    }

    /// As [`Records::scan`], noting in `times` the time of each record stepped over; a record
    /// type whose time it cannot read is one it stops before (see [`ScanTimes`]).
    pub fn scan_timed(
        &mut self,
        per_type: &mut [u64],
        stop: ScanStop,
        times: &mut ScanTimes,
    ) -> u64 {
        self.d.scan(self.reader, per_type, stop, Some(times))
    }

    /// As [`Records::scan`], giving `each` the values of the fields `values` names for the
    /// type of each record stepped over ([`Scanned`]); a record type whose fields it cannot
    /// read from its plan (not all integers: see [`ScanValues::new`]) is one it stops before,
    /// and `each` returning `false` stops it after that record. Each metadata record the scan
    /// applies is given to `each` too, with no values. The values are those
    /// [`RecordView::ints`](crate::decode::RecordView::ints) gives for the same record on the
    /// general path; the states, positions and counts left are those of [`Records::scan`].
    pub fn scan_values(
        &mut self,
        per_type: &mut [u64],
        stop: ScanStop,
        values: &mut ScanValues,
        each: impl FnMut(Scanned<'_>) -> bool,
    ) -> u64 {
        self.d
            .scan_values(self.reader, per_type, stop, values, None, each)
    }

    /// As [`Records::scan_values`], noting in `times` the time of each record stepped over, as
    /// [`Records::scan_timed`] does.
    pub fn scan_values_timed(
        &mut self,
        per_type: &mut [u64],
        stop: ScanStop,
        values: &mut ScanValues,
        times: &mut ScanTimes,
        each: impl FnMut(Scanned<'_>) -> bool,
    ) -> u64 {
        self.d
            .scan_values(self.reader, per_type, stop, values, Some(times), each)
    }

    /// The byte offset of the next record (or of the end of the region the decode is in).
    pub fn offset(&self) -> u64 {
        self.d.offset()
    }
}
