//! Heap statistics in one streaming pass: what `mtf stats` prints, `mtf diff` compares and
//! `mtf plot`/`mtf report` draw.
//!
//! Two accumulators, both fed in trace order:
//!
//! * [`RecordCounter`] sees every decoded record ([`RecordView`]) and counts records per type
//!   and, per integer field, its count, minimum, maximum and sum. It needs no declarations.
//! * [`HeapStats`] sees the [`HeapEvent`]s that a trace's allocation declarations produce and
//!   keeps, per namespace, the live blocks (the only state that grows: memory is bounded by the
//!   live ids, never by the trace), the live bytes and their peak, totals, temporary
//!   allocations, lifetimes, the allocation size histogram and per-site figures.
//!
//! A [`Window`] (`--from`/`--to`) restricts the figures to a slice of the trace: the live state
//! is followed from the start of the trace (a free inside the slice must find its allocation),
//! but flows (allocations, frees, bytes allocated, temporary allocations, lifetimes ended, size
//! histogram) count only events inside the slice, and the peak is the highest live state
//! inside it (the state when it opens included). See docs/stats.md for every figure.

use std::collections::HashMap;

use foldhash::fast::RandomState;
use hdrhistogram::Histogram;

use crate::analysis::event::{HeapEvent, HeapOp};
use crate::decode::{RecordView, Value};
use crate::dtd::{Display, Schema, SlotKind};

/// What the statistics need to know about one namespace of ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceInfo {
    /// Its name in the DTD.
    pub name: String,
    /// Whether its allocations carry a byte count (else only blocks are counted).
    pub sized: bool,
    /// Whether many live blocks may hold the same id at once (heaptrack's allocation-info
    /// index); else a second allocation of a live id replaces the first (counted as
    /// `redefined`).
    pub shared: bool,
    /// The unit of the declared time, where the DTD declares a time (`ns`, `ms`, `ticks`).
    pub time_unit: Option<String>,
}

/// One end of a [`Window`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// A record index (0-based, as `mtf dump` numbers records).
    Record(u64),
    /// A declared time, in the trace's declared unit.
    Time(u64),
}

impl std::str::FromStr for Bound {
    type Err = String;
    /// `1234` or `r1234` is a record index; `t5000` or `@5000` a declared time.
    fn from_str(s: &str) -> Result<Bound, String> {
        let s = s.trim();
        let (time, digits) = if let Some(d) = s.strip_prefix('t').or_else(|| s.strip_prefix('@')) {
            (true, d)
        } else {
            (false, s.strip_prefix('r').unwrap_or(s))
        };
        let digits = digits.replace('_', "");
        let n: u64 = digits.parse().map_err(|e: std::num::ParseIntError| {
            if *e.kind() == std::num::IntErrorKind::PosOverflow {
                format!(
                    "`{s}` is larger than {} (the largest record index or time)",
                    u64::MAX
                )
            } else {
                format!("`{s}` is neither a record index (1234, r1234) nor a time (t1234, @1234)")
            }
        })?;
        Ok(if time {
            Bound::Time(n)
        } else {
            Bound::Record(n)
        })
    }
}

/// A slice of a trace: records with index (or declared time) ≥ `from` and < `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    /// Where the slice starts (inclusive); `None` for the start of the trace.
    pub from: Option<Bound>,
    /// Where it ends (exclusive); `None` for the end of the trace.
    pub to: Option<Bound>,
}

/// Where a record stands relative to a [`Window`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Before the slice.
    Before,
    /// Inside it.
    Inside,
    /// After it (reading can stop).
    After,
}

impl Window {
    /// The whole trace.
    pub fn all() -> Window {
        Window::default()
    }

    /// Whether this is the whole trace.
    pub fn is_all(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }

    /// Where a record with this index and declared time (or, for a record without one, the
    /// last declared time before it) stands. A record without any time yet is before a
    /// time-bounded start.
    pub fn place(&self, record: u64, time: Option<u64>) -> Place {
        let reached = |b: Bound| match b {
            Bound::Record(r) => record >= r,
            Bound::Time(t) => time.is_some_and(|x| x >= t),
        };
        if let Some(to) = self.to {
            if reached(to) {
                return Place::After;
            }
        }
        match self.from {
            Some(from) if !reached(from) => Place::Before,
            _ => Place::Inside,
        }
    }
}

// ------------------------------------------------------------------------------------------
// Records per type and integer fields.

// Design: the figures of a field are kept in 64-bit words and one 128-bit sum, whatever its
// signedness: a signed value is ordered as its bits with the top bit flipped (`bias`), and
// summed as its unsigned bits, the negative ones counted (`neg`) to take 2⁶⁴ off each at the
// end. The per-value work is then plain integer instructions.
#[derive(Debug, Clone, Copy)]
struct FieldAcc {
    count: u64,
    /// Smallest and largest value, as `value ^ bias`.
    lo: u64,
    hi: u64,
    /// The sum of the values' bits, and how many of them are negative (signed fields).
    sum: u128,
    neg: u64,
    /// 2⁶³ for a signed field, else 0.
    bias: u64,
}

impl FieldAcc {
    fn new(signed: bool) -> FieldAcc {
        FieldAcc {
            count: 0,
            lo: u64::MAX,
            hi: 0,
            sum: 0,
            neg: 0,
            bias: if signed { 1 << 63 } else { 0 },
        }
    }

    #[inline]
    fn add(&mut self, v: u64) {
        self.count += 1;
        let b = v ^ self.bias;
        self.lo = self.lo.min(b);
        self.hi = self.hi.max(b);
        self.sum += v as u128;
        self.neg += (v & self.bias) >> 63;
    }

    /// A value back as displayed: signed for a signed field.
    fn value(&self, b: u64) -> i128 {
        let v = b ^ self.bias;
        if self.bias != 0 {
            v as i64 as i128
        } else {
            v as i128
        }
    }

    fn min(&self) -> i128 {
        self.value(self.lo)
    }

    fn max(&self) -> i128 {
        self.value(self.hi)
    }

    fn sum(&self) -> i128 {
        // Exact while fewer than 2⁶⁴ values were added (a count of u64).
        (self.sum as i128).wrapping_sub((self.neg as i128) << 64)
    }
}

/// Records per type and, per integer field, count, min, max and sum: a figure for every DTD.
pub struct RecordCounter {
    counts: Vec<u64>,
    /// Per record type, the index of its slot 0 in `fields` (`usize::MAX` for the built-ins,
    /// whose fields are not summarised).
    base: Vec<usize>,
    fields: Vec<FieldAcc>,
}

impl RecordCounter {
    /// A counter for the record types of `schema`.
    pub fn new(schema: &Schema) -> RecordCounter {
        let mut base = Vec::with_capacity(schema.records.len());
        let mut fields = Vec::new();
        for rt in &schema.records {
            if rt.builtin.is_some() {
                base.push(usize::MAX);
                continue;
            }
            base.push(fields.len());
            fields.extend(
                rt.slots
                    .iter()
                    .map(|s| FieldAcc::new(s.display == Display::Signed)),
            );
        }
        RecordCounter {
            counts: vec![0; schema.records.len()],
            base,
            fields,
        }
    }

    /// Count one record.
    pub fn record(&mut self, view: &RecordView<'_>) {
        let rid = view.record_id() as usize;
        self.counts[rid] += 1;
        let base = self.base[rid];
        if base == usize::MAX {
            return;
        }
        let Some(accs) = self.fields.get_mut(base..) else {
            return;
        };
        for f in view.fields() {
            let slot = f.slot() as usize;
            if slot == 0 {
                continue; // the tag
            }
            if let (Value::Int(v), Some(a)) = (f.value(), accs.get_mut(slot)) {
                a.add(v);
            }
        }
    }

    /// Records counted so far.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The figures, per record type that occurred (in schema order).
    pub fn finish(&self, schema: &Schema) -> Vec<TypeSummary> {
        let mut out = Vec::new();
        for (rid, rt) in schema.records.iter().enumerate() {
            if self.counts[rid] == 0 {
                continue;
            }
            let section = schema
                .scope_of_section
                .get(rt.scope as usize)
                .copied()
                .flatten()
                .and_then(|i| schema.scopes.get(i as usize))
                .map(|s| s.name.clone())
                .unwrap_or_default();
            let mut fields = Vec::new();
            if self.base[rid] != usize::MAX {
                for (slot, def) in rt.slots.iter().enumerate().skip(1) {
                    let a = self.fields[self.base[rid] + slot];
                    if a.count == 0 || !matches!(def.kind, SlotKind::Int { .. }) {
                        continue;
                    }
                    fields.push(FieldSummary {
                        name: def.name.clone(),
                        count: a.count,
                        min: a.min(),
                        max: a.max(),
                        sum: a.sum(),
                    });
                }
            }
            out.push(TypeSummary {
                name: rt.name.clone(),
                section,
                count: self.counts[rid],
                fields,
            });
        }
        out
    }
}

/// Records of one type.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeSummary {
    /// The record type's name.
    pub name: String,
    /// The section that defines it (`""` for the global scope).
    pub section: String,
    /// How many records of this type.
    pub count: u64,
    /// Its integer fields that occurred, in field order (the tag left out).
    pub fields: Vec<FieldSummary>,
}

/// One integer field of a record type: values as displayed (signed for `display = signed`).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldSummary {
    /// Field name (its display path, `vfield.len`).
    pub name: String,
    /// Occurrences (repeats count each item).
    pub count: u64,
    /// Smallest value.
    pub min: i128,
    /// Largest value.
    pub max: i128,
    /// Sum of the values.
    pub sum: i128,
}

// ------------------------------------------------------------------------------------------
// Heap figures from heap events.

/// Where something happened: a record index and, where declared, the time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct At {
    /// The record index.
    pub record: u64,
    /// The declared time of the record (or the last one before it), where there is one.
    pub time: Option<u64>,
}

/// Number of log2 size classes: class 0 holds 0, class k (1..=64) holds [2^(k-1), 2^k).
const CLASSES: usize = 65;

fn log2_class(v: u64) -> usize {
    (64 - v.leading_zeros()) as usize
}

/// The bounds `[lo, hi]` of log2 class `k`.
pub fn class_bounds(k: usize) -> (u64, u64) {
    match k {
        0 => (0, 0),
        64 => (1 << 63, u64::MAX),
        _ => (1 << (k - 1), (1u64 << k) - 1),
    }
}

/// Lifetimes in bounded memory: exact count, sum, min and max; quantiles from an HDR histogram
/// with 3 significant digits (exact below 2048, else within 0.1 %); a log2 histogram.
// Design: exact quantiles need every lifetime (memory proportional to the frees, not the live
// blocks); an HDR histogram keeps the memory bounded (tens of KB whatever the trace) and is
// exact for the small values of the test fixtures, so the tests check the figures exactly.
#[derive(Debug, Clone)]
struct Lifetimes {
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
    hdr: Histogram<u64>,
    log2: [u64; CLASSES],
}

impl Lifetimes {
    fn new() -> Lifetimes {
        // 3 significant digits; auto-resizing from a small range. Construction only fails on
        // invalid parameters, which these are not.
        let mut hdr = Histogram::new(3).unwrap_or_else(|_| unreachable!("valid HDR parameters"));
        hdr.auto(true);
        Lifetimes {
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
            hdr,
            log2: [0; CLASSES],
        }
    }

    fn add(&mut self, v: u64) {
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        // `record` grows the auto-resizing histogram; `saturating_record` alone clamps every
        // value above its initial range (nanosecond lifetimes had a median of the minimum).
        if self.hdr.record(v).is_err() {
            self.hdr.saturating_record(v);
        }
        self.log2[log2_class(v)] += 1;
    }

    fn summary(&self) -> LifetimeSummary {
        let q = |p: f64| {
            if self.count == 0 {
                0
            } else {
                self.hdr.value_at_quantile(p).clamp(self.min, self.max)
            }
        };
        LifetimeSummary {
            count: self.count,
            min: if self.count == 0 { 0 } else { self.min },
            mean: if self.count == 0 {
                0.0
            } else {
                self.sum as f64 / self.count as f64
            },
            median: q(0.5),
            p99: q(0.99),
            max: self.max,
            histogram: classes(&self.log2, None),
        }
    }
}

fn classes(counts: &[u64; CLASSES], bytes: Option<&[u64; CLASSES]>) -> Vec<SizeClass> {
    let mut out = Vec::new();
    for k in 0..CLASSES {
        if counts[k] == 0 {
            continue;
        }
        let (lo, hi) = class_bounds(k);
        out.push(SizeClass {
            lo,
            hi,
            count: counts[k],
            bytes: bytes.map_or(0, |b| b[k]),
        });
    }
    out
}

/// A live block, packed (40 bytes; see the Design note of [`HeapStats`]).
#[derive(Debug, Clone, Copy)]
struct Block {
    size: u64,
    born_record: u64,
    /// The declared time at birth, where `flags` has [`Block::TIME`].
    born_time: u64,
    /// The site, where `flags` has [`Block::SITE`].
    site: u64,
    /// In a shared namespace, the block that held the same id before (an index + 1 into the
    /// shadow list; 0 for none).
    below: u32,
    flags: u32,
}

impl Block {
    const TIME: u32 = 1;
    const SITE: u32 = 2;

    fn new(size: u64, born: At, site: Option<u64>) -> Block {
        Block {
            size,
            born_record: born.record,
            born_time: born.time.unwrap_or(0),
            site: site.unwrap_or(0),
            below: 0,
            flags: if born.time.is_some() { Block::TIME } else { 0 }
                | if site.is_some() { Block::SITE } else { 0 },
        }
    }

    fn born_time(&self) -> Option<u64> {
        (self.flags & Block::TIME != 0).then_some(self.born_time)
    }

    fn site(&self) -> Option<u64> {
        (self.flags & Block::SITE != 0).then_some(self.site)
    }
}

#[derive(Debug, Clone, Default)]
struct Site {
    allocations: u64,
    bytes_allocated: u64,
    live_bytes: u64,
    live_blocks: u64,
    max_live_bytes: u64,
    temporary: u64,
    /// The site's live bytes and blocks at the namespace's latest peak, valid when `gen` equals
    /// the namespace's peak generation; else they are `live_*` (nothing changed since).
    at_peak: (u64, u64),
    gen: u64,
}

struct Space {
    info: SpaceInfo,
    live_bytes: u64,
    live_blocks: u64,
    peak: Option<(u64, u64, At)>,
    peak_gen: u64,
    max_blocks: Option<(u64, At)>,
    allocations: u64,
    frees: u64,
    moves: u64,
    bytes_allocated: u64,
    bytes_freed: u64,
    temporary: u64,
    unknown_frees: u64,
    redefined: u64,
    last_alloc: Option<(u64, u64)>,
    sizes: [u64; CLASSES],
    size_bytes: [u64; CLASSES],
    life_records: Lifetimes,
    life_time: Lifetimes,
    /// The sites of allocations that declare one.
    sites: HashMap<u64, Site, RandomState>,
    /// Allocations without a declared site (most traces'), kept out of the map.
    no_site: Site,
    /// Live bytes and blocks at sampled points, for plots (bounded: see [`Curve`]).
    curve: Curve,
}

/// A sampled curve of live bytes and blocks, in bounded memory: a fixed number of buckets over
/// record indices, each keeping the first, minimum, maximum and last value, so that the peak is
/// never lost. When the trace outgrows the buckets, pairs merge and each bucket spans twice as
/// many records.
#[derive(Debug, Clone)]
pub struct Curve {
    /// Records per bucket.
    pub span: u64,
    /// The buckets, in record order (the first starts at `origin`).
    pub buckets: Vec<CurveBucket>,
    /// The record index where bucket 0 starts.
    pub origin: u64,
    limit: usize,
    /// The records of the last bucket, `[lo, hi)`, while it is the bucket of the latest
    /// point (`hi == 0`: not known): the usual point lands there without a division.
    last: (u64, u64),
}

/// One bucket of a [`Curve`]: the live bytes and blocks over a range of records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CurveBucket {
    /// The first record of the range.
    pub start: At,
    /// Live bytes: lowest and highest within the range, and at its end.
    pub bytes_min: u64,
    /// Highest live bytes within the range.
    pub bytes_max: u64,
    /// Live bytes after the last event of the range.
    pub bytes_last: u64,
    /// Highest live block count within the range.
    pub blocks_max: u64,
    /// Live blocks after the last event of the range.
    pub blocks_last: u64,
}

impl Curve {
    fn new(limit: usize) -> Curve {
        Curve {
            span: 1,
            buckets: Vec::new(),
            origin: 0,
            limit: limit.max(2),
            last: (0, 0),
        }
    }

    fn add(&mut self, at: At, bytes: u64, blocks: u64) {
        if at.record >= self.last.0 && at.record < self.last.1 {
            if let Some(b) = self.buckets.last_mut() {
                b.bytes_min = b.bytes_min.min(bytes);
                b.bytes_max = b.bytes_max.max(bytes);
                b.bytes_last = bytes;
                b.blocks_max = b.blocks_max.max(blocks);
                b.blocks_last = blocks;
                return;
            }
        }
        self.last = (0, 0);
        if self.buckets.is_empty() {
            self.origin = at.record;
        }
        let mut idx = (at.record.saturating_sub(self.origin) / self.span) as usize;
        while idx >= self.limit {
            self.halve();
            idx = (at.record.saturating_sub(self.origin) / self.span) as usize;
        }
        let n = self.buckets.len();
        match self.buckets.last_mut() {
            Some(b) if n == idx + 1 => {
                b.bytes_min = b.bytes_min.min(bytes);
                b.bytes_max = b.bytes_max.max(bytes);
                b.bytes_last = bytes;
                b.blocks_max = b.blocks_max.max(blocks);
                b.blocks_last = blocks;
            }
            _ => self.buckets.push(CurveBucket {
                start: at,
                bytes_min: bytes,
                bytes_max: bytes,
                bytes_last: bytes,
                blocks_max: blocks,
                blocks_last: blocks,
            }),
        }
        // The last bucket is the point's: it holds the records of its slot (`idx`).
        if self.buckets.len() == idx + 1 {
            let lo = self.origin + idx as u64 * self.span;
            self.last = (lo, lo.saturating_add(self.span));
        }
    }

    /// Merge pairs of buckets: each now spans twice as many records.
    fn halve(&mut self) {
        self.last = (0, 0);
        self.span *= 2;
        let origin = self.origin;
        let span = self.span;
        let mut merged: Vec<CurveBucket> = Vec::with_capacity(self.limit);
        for b in self.buckets.drain(..) {
            let slot = (b.start.record - origin) / span;
            match merged.last_mut() {
                Some(m) if (m.start.record - origin) / span == slot => {
                    m.bytes_min = m.bytes_min.min(b.bytes_min);
                    m.bytes_max = m.bytes_max.max(b.bytes_max);
                    m.bytes_last = b.bytes_last;
                    m.blocks_max = m.blocks_max.max(b.blocks_max);
                    m.blocks_last = b.blocks_last;
                }
                _ => merged.push(b),
            }
        }
        self.buckets = merged;
    }
}

/// Points kept by the live-bytes curve of each namespace (see [`Curve`]).
pub const CURVE_POINTS: usize = 2048;

impl Space {
    fn new(info: SpaceInfo) -> Space {
        Space {
            info,
            live_bytes: 0,
            live_blocks: 0,
            peak: None,
            peak_gen: 0,
            max_blocks: None,
            allocations: 0,
            frees: 0,
            moves: 0,
            bytes_allocated: 0,
            bytes_freed: 0,
            temporary: 0,
            unknown_frees: 0,
            redefined: 0,
            last_alloc: None,
            sizes: [0; CLASSES],
            size_bytes: [0; CLASSES],
            life_records: Lifetimes::new(),
            life_time: Lifetimes::new(),
            sites: HashMap::default(),
            no_site: Site::default(),
            curve: Curve::new(CURVE_POINTS),
        }
    }

    fn site(&mut self, site: Option<u64>) -> &mut Site {
        let gen = self.peak_gen;
        // The site without a name starts as a new entry would (nothing live, `at_peak` zero),
        // so keeping it out of the map changes no figure.
        let s = match site {
            None => &mut self.no_site,
            Some(site) => self.sites.entry(site).or_insert_with(|| Site {
                gen,
                ..Site::default()
            }),
        };
        if s.gen != gen {
            s.at_peak = (s.live_bytes, s.live_blocks);
            s.gen = gen;
        }
        s
    }

    /// After a change of the live state: the peaks and the curve.
    fn settle(&mut self, at: At, window: bool) {
        if !window {
            return;
        }
        if !matches!(self.peak, Some((b, _, _)) if b >= self.live_bytes) {
            self.peak = Some((self.live_bytes, self.live_blocks, at));
            self.peak_gen += 1;
        }
        if !matches!(self.max_blocks, Some((b, _)) if b >= self.live_blocks) {
            self.max_blocks = Some((self.live_blocks, at));
        }
        self.curve.add(at, self.live_bytes, self.live_blocks);
    }
}

/// Heap figures per namespace from a stream of [`HeapEvent`]s.
// Design: the live blocks are the state that grows with a trace's heap, so they are kept
// packed: one map per namespace keyed by (key, id), 16 bytes hashed as two words, with 40-byte
// values (`Block`); the blocks of allocations without a site count in a `Site` of their own
// rather than in the sites' map, so that most events touch one map only.
pub struct HeapStats {
    spaces: Vec<Space>,
    /// Per namespace: its live blocks by (key, id).
    live: Vec<HashMap<(u64, u64), Block, RandomState>>,
    /// Blocks hidden under a newer block of the same id (shared namespaces).
    shadow: Vec<Block>,
    free_shadow: Vec<u32>,
    in_window: bool,
    opened: Option<At>,
}

impl HeapStats {
    /// Statistics for these namespaces (indexed by [`HeapEvent::space`]).
    pub fn new(spaces: Vec<SpaceInfo>) -> HeapStats {
        HeapStats {
            live: spaces.iter().map(|_| HashMap::default()).collect(),
            spaces: spaces.into_iter().map(Space::new).collect(),
            shadow: Vec::new(),
            free_shadow: Vec::new(),
            in_window: false,
            opened: None,
        }
    }

    /// The slice starts at `at` (call once, before the first event inside it; for the whole
    /// trace, before the first event): the peak starts from the live state here.
    pub fn open_window(&mut self, at: At) {
        if self.opened.is_some() {
            return;
        }
        self.in_window = true;
        self.opened = Some(at);
        for s in &mut self.spaces {
            s.settle(at, true);
        }
    }

    /// Blocks alive now, over all namespaces.
    pub fn live_blocks(&self) -> usize {
        self.live.iter().map(HashMap::len).sum::<usize>() + self.shadow.len()
            - self.free_shadow.len()
    }

    /// Apply one event (in trace order). An event for a namespace that was not declared is
    /// ignored.
    pub fn event(&mut self, ev: &HeapEvent) {
        let Some(space) = self.spaces.get(ev.space as usize) else {
            return;
        };
        let sized = space.info.sized;
        let at = At {
            record: ev.record,
            time: ev.time,
        };
        match ev.op {
            HeapOp::Alloc { id, size, .. } => {
                let size = if sized { size } else { 0 };
                self.alloc(ev.space, ev.key, id, size, at, ev.site);
            }
            HeapOp::Free { id } => {
                self.free(ev.space, ev.key, id, at, true);
            }
            HeapOp::Move {
                old,
                new,
                size: Some(size),
            } => {
                // A realloc: the old block ends and a new one starts (heaptrack's reading), so
                // it counts as a free and an allocation of the new size.
                let size = if sized { size } else { 0 };
                let site = self.free(ev.space, ev.key, old, at, true);
                self.alloc(ev.space, ev.key, new, size, at, ev.site.or(site));
            }
            HeapOp::Move {
                old,
                new,
                size: None,
            } => self.rename(ev.space, ev.key, old, new, at),
        }
    }

    fn alloc(&mut self, sp: u32, key: u64, id: u64, size: u64, at: At, site: Option<u64>) {
        let w = self.in_window;
        let k = (key, id);
        let s = &mut self.spaces[sp as usize];
        let live = &mut self.live[sp as usize];
        let shared = s.info.shared;
        let mut block = Block::new(size, at, site);
        // One probe: the entry is taken, and the new block put in its place.
        let entry = live.entry(k);
        let old = match &entry {
            std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
            std::collections::hash_map::Entry::Vacant(_) => None,
        };
        if let Some(old) = old {
            if shared {
                let i = match self.free_shadow.pop() {
                    Some(i) => {
                        self.shadow[i as usize] = old;
                        i
                    }
                    None => {
                        self.shadow.push(old);
                        (self.shadow.len() - 1) as u32
                    }
                };
                block.below = i + 1;
            } else {
                // A second allocation of a live id: the first block is lost (a free the trace
                // does not show); it leaves the live state without a lifetime.
                if w {
                    s.redefined += 1;
                }
                s.live_bytes -= old.size;
                s.live_blocks -= 1;
                let st = s.site(old.site());
                st.live_bytes -= old.size;
                st.live_blocks -= 1;
            }
        }
        match entry {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                e.insert(block);
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(block);
            }
        }
        s.live_bytes += size;
        s.live_blocks += 1;
        if w {
            s.allocations += 1;
            s.bytes_allocated = s.bytes_allocated.saturating_add(size);
            let c = log2_class(size);
            s.sizes[c] += 1;
            s.size_bytes[c] = s.size_bytes[c].saturating_add(size);
            s.last_alloc = Some((key, id));
        }
        let st = s.site(site);
        st.live_bytes += size;
        st.live_blocks += 1;
        st.max_live_bytes = st.max_live_bytes.max(st.live_bytes);
        if w {
            st.allocations += 1;
            st.bytes_allocated = st.bytes_allocated.saturating_add(size);
        }
        s.settle(at, w);
    }

    /// Takes block `id` out of the live state; returns its site (`None` if it was not live).
    fn take(&mut self, sp: u32, key: u64, id: u64) -> Option<Block> {
        let live = self.live.get_mut(sp as usize)?;
        let k = (key, id);
        let b = live.remove(&k)?;
        if b.below != 0 {
            let i = b.below - 1;
            live.insert(k, self.shadow[i as usize]);
            self.free_shadow.push(i);
        }
        Some(b)
    }

    fn free(&mut self, sp: u32, key: u64, id: u64, at: At, count: bool) -> Option<u64> {
        let w = self.in_window;
        let taken = self.take(sp, key, id);
        let s = &mut self.spaces[sp as usize];
        let temporary = s.last_alloc == Some((key, id));
        if w {
            s.last_alloc = None;
        }
        let Some(b) = taken else {
            if w && count {
                s.unknown_frees += 1;
            }
            return None;
        };
        s.live_bytes -= b.size;
        s.live_blocks -= 1;
        if w {
            s.frees += 1;
            s.bytes_freed = s.bytes_freed.saturating_add(b.size);
            s.life_records.add(at.record.saturating_sub(b.born_record));
            if let (Some(t0), Some(t1)) = (b.born_time(), at.time) {
                s.life_time.add(t1.saturating_sub(t0));
            }
            if temporary {
                s.temporary += 1;
            }
        }
        let st = s.site(b.site());
        st.live_bytes -= b.size;
        st.live_blocks -= 1;
        if w && temporary {
            st.temporary += 1;
        }
        s.settle(at, w);
        b.site()
    }

    fn rename(&mut self, sp: u32, key: u64, old: u64, new: u64, at: At) {
        let w = self.in_window;
        let Some(b) = self.take(sp, key, old) else {
            if w {
                self.spaces[sp as usize].unknown_frees += 1;
            }
            return;
        };
        if w {
            self.spaces[sp as usize].moves += 1;
        }
        let k = (key, new);
        let mut b = Block { below: 0, ..b };
        if let Some(prev) = self.live[sp as usize].get(&k).copied() {
            let s = &mut self.spaces[sp as usize];
            if s.info.shared {
                self.shadow.push(prev);
                b.below = self.shadow.len() as u32;
            } else {
                if w {
                    s.redefined += 1;
                }
                s.live_bytes -= prev.size;
                s.live_blocks -= 1;
                let st = s.site(prev.site());
                st.live_bytes -= prev.size;
                st.live_blocks -= 1;
                s.settle(at, w);
            }
        }
        self.live[sp as usize].insert(k, b);
    }

    /// The figures at the end of the slice (`end`: the first record after it, or the record
    /// count); `site_name` names a site of a namespace where the trace can.
    pub fn finish(
        mut self,
        end: At,
        mut site_name: impl FnMut(u32, u64) -> Option<String>,
    ) -> Vec<SpaceSummary> {
        let start = self.opened.unwrap_or(end);
        if self.opened.is_none() {
            self.open_window(end);
        }
        let mut out = Vec::new();
        for (i, s) in self.spaces.iter_mut().enumerate() {
            // The state holds until the end of the slice: the curve's last point.
            if end.record > start.record {
                let last = At {
                    record: end.record - 1,
                    time: end.time,
                };
                s.curve.add(last, s.live_bytes, s.live_blocks);
            }
            let gen = s.peak_gen;
            let mut sites: Vec<SiteSummary> = std::iter::once((None, &s.no_site))
                .chain(s.sites.iter().map(|(id, st)| (Some(*id), st)))
                .map(|(id, st)| {
                    let at_peak = if st.gen == gen {
                        st.at_peak
                    } else {
                        (st.live_bytes, st.live_blocks)
                    };
                    SiteSummary {
                        site: id,
                        name: id.and_then(|x| site_name(i as u32, x)),
                        allocations: st.allocations,
                        bytes_allocated: st.bytes_allocated,
                        peak_bytes: at_peak.0,
                        peak_blocks: at_peak.1,
                        max_live_bytes: st.max_live_bytes,
                        leaked_bytes: st.live_bytes,
                        leaked_blocks: st.live_blocks,
                        temporary: st.temporary,
                    }
                })
                .filter(|s| s.allocations > 0 || s.leaked_blocks > 0 || s.peak_blocks > 0)
                .collect();
            sites.sort_by(|a, b| {
                b.peak_bytes
                    .cmp(&a.peak_bytes)
                    .then(b.bytes_allocated.cmp(&a.bytes_allocated))
                    .then(a.site.cmp(&b.site))
            });
            let (pb, pk, pat) = s.peak.unwrap_or((0, 0, start));
            let (mb, mat) = s.max_blocks.unwrap_or((0, start));
            out.push(SpaceSummary {
                name: s.info.name.clone(),
                sized: s.info.sized,
                time_unit: s.info.time_unit.clone(),
                start,
                end,
                allocations: s.allocations,
                frees: s.frees,
                moves: s.moves,
                bytes_allocated: s.bytes_allocated,
                bytes_freed: s.bytes_freed,
                peak_bytes: pb,
                peak_blocks: pk,
                peak_at: pat,
                max_blocks: mb,
                max_blocks_at: mat,
                live_bytes: s.live_bytes,
                live_blocks: s.live_blocks,
                temporary: s.temporary,
                unknown_frees: s.unknown_frees,
                redefined: s.redefined,
                sizes: classes(&s.sizes, Some(&s.size_bytes)),
                lifetime_records: s.life_records.summary(),
                lifetime_time: (s.life_time.count > 0).then(|| s.life_time.summary()),
                sites,
                curve: std::mem::replace(&mut s.curve, Curve::new(2)),
            });
        }
        out
    }
}

/// A log2 class of sizes or lifetimes: `[lo, hi]`, how many fell in it and (for sizes) their
/// bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeClass {
    /// Smallest value of the class.
    pub lo: u64,
    /// Largest value of the class.
    pub hi: u64,
    /// How many values.
    pub count: u64,
    /// Their sum (sizes only; 0 for lifetimes).
    pub bytes: u64,
}

/// Lifetimes between define and undefine, in records or in declared time.
#[derive(Debug, Clone, PartialEq)]
pub struct LifetimeSummary {
    /// Blocks freed in the slice.
    pub count: u64,
    /// Shortest lifetime.
    pub min: u64,
    /// Mean lifetime (exact).
    pub mean: f64,
    /// Median: the smallest lifetime at or below which half the lifetimes fall (exact below
    /// 2048, else within 0.1 %).
    pub median: u64,
    /// 99th percentile, as the median.
    pub p99: u64,
    /// Longest lifetime (exact).
    pub max: u64,
    /// Log2 classes.
    pub histogram: Vec<SizeClass>,
}

/// One allocation site of a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteSummary {
    /// The site id (`None`: allocations without a declared site).
    pub site: Option<u64>,
    /// Its name, where the trace can resolve it.
    pub name: Option<String>,
    /// Allocations in the slice.
    pub allocations: u64,
    /// Bytes allocated in the slice.
    pub bytes_allocated: u64,
    /// Live bytes of this site at the namespace's peak (heaptrack's "peak" per site).
    pub peak_bytes: u64,
    /// Live blocks of this site at the namespace's peak.
    pub peak_blocks: u64,
    /// The site's own highest live bytes (DHAT's "max live"), over the whole trace up to the end
    /// of the slice.
    pub max_live_bytes: u64,
    /// Live bytes of this site at the end of the slice.
    pub leaked_bytes: u64,
    /// Live blocks of this site at the end of the slice.
    pub leaked_blocks: u64,
    /// Temporary allocations of this site.
    pub temporary: u64,
}

/// The figures of one namespace.
#[derive(Debug, Clone)]
pub struct SpaceSummary {
    /// The namespace's name.
    pub name: String,
    /// Whether sizes are declared (else byte figures are 0).
    pub sized: bool,
    /// The declared time unit.
    pub time_unit: Option<String>,
    /// Where the slice starts.
    pub start: At,
    /// Where it ends (the first record after it, or the record count).
    pub end: At,
    /// Allocations (a realloc counts as a free and an allocation).
    pub allocations: u64,
    /// Frees of live blocks.
    pub frees: u64,
    /// Moves that keep the block (objMove).
    pub moves: u64,
    /// Bytes allocated.
    pub bytes_allocated: u64,
    /// Bytes freed.
    pub bytes_freed: u64,
    /// Peak live bytes (the first time the highest value was reached).
    pub peak_bytes: u64,
    /// Live blocks at that peak.
    pub peak_blocks: u64,
    /// When the peak was reached.
    pub peak_at: At,
    /// Most live blocks at once.
    pub max_blocks: u64,
    /// When.
    pub max_blocks_at: At,
    /// Live bytes at the end of the slice (leaked, at the end of the trace).
    pub live_bytes: u64,
    /// Live blocks at the end of the slice.
    pub live_blocks: u64,
    /// Temporary allocations: freed with no other allocation or free of the namespace in between
    /// (heaptrack's definition).
    pub temporary: u64,
    /// Frees (and moves) of an id that was not live.
    pub unknown_frees: u64,
    /// Allocations of an id that was already live (not in a shared namespace).
    pub redefined: u64,
    /// Allocation sizes in log2 classes.
    pub sizes: Vec<SizeClass>,
    /// Lifetimes in records.
    pub lifetime_records: LifetimeSummary,
    /// Lifetimes in declared time, where both ends have a time.
    pub lifetime_time: Option<LifetimeSummary>,
    /// Every site, by peak bytes (descending).
    pub sites: Vec<SiteSummary>,
    /// Live bytes and blocks over the slice, sampled.
    pub curve: Curve,
}

// ------------------------------------------------------------------------------------------
// One pass over a trace.

/// Where heap events come from: a trace's allocation declarations interpreted over its records.
pub trait EventSource {
    /// The namespaces, indexed by [`HeapEvent::space`].
    fn spaces(&self) -> Vec<SpaceInfo>;
    /// Appends the heap events of one record to `out`; returns the record's declared time, if
    /// it has one.
    fn record(&mut self, view: &RecordView<'_>, out: &mut Vec<HeapEvent>) -> Option<u64>;
    /// The name of a site of a namespace, where the trace can resolve it.
    fn site_name(&mut self, space: u32, site: u64) -> Option<String>;
    /// Frees of ids that were not alive, per namespace, that the source kept to itself (no
    /// event); added to the engine's own count.
    fn unknown_frees(&self, space: u32) -> u64 {
        let _ = space;
        0
    }
    /// Whether records after the slice may still name its sites (tables at the end of a
    /// trace): then reading goes on to the end, feeding only the source.
    fn names_later(&self) -> bool {
        false
    }
}

/// The [`EventSource`] of a trace's own declarations (extension analysis/1): an
/// [`Interpreter`](crate::analysis::Interpreter) fed each record. Only namespaces of ids
/// (`kind = ids`) make heap figures; they are numbered in declaration order.
pub struct Declared<'s> {
    interp: crate::analysis::Interpreter<'s>,
    /// Declared namespace → index among the namespaces of ids.
    map: Vec<Option<u32>>,
    /// Index among the namespaces of ids → declared namespace.
    back: Vec<crate::analysis::SpaceId>,
    unknown: Vec<u64>,
}

impl<'s> Declared<'s> {
    /// The declarations of `schema`.
    pub fn new(schema: &'s Schema) -> Declared<'s> {
        let interp = crate::analysis::Interpreter::new(schema);
        let mut map = Vec::new();
        let mut back = Vec::new();
        for (i, ns) in interp.namespaces().iter().enumerate() {
            if ns.kind == crate::analysis::SpaceKind::Ids {
                map.push(Some(back.len() as u32));
                back.push(i as crate::analysis::SpaceId);
            } else {
                map.push(None);
            }
        }
        let unknown = vec![0; back.len()];
        Declared {
            interp,
            map,
            back,
            unknown,
        }
    }
}

struct Collect<'a> {
    out: &'a mut Vec<HeapEvent>,
    map: &'a [Option<u32>],
    unknown: &'a mut [u64],
}

impl crate::analysis::Sink for Collect<'_> {
    fn event(&mut self, mut e: HeapEvent) {
        if let Some(Some(i)) = self.map.get(e.space as usize) {
            e.space = *i;
            self.out.push(e);
        }
    }

    fn finding(&mut self, f: crate::analysis::Finding) {
        if f.kind == crate::analysis::FindingKind::NotAlive {
            if let Some(Some(i)) = f.space.and_then(|s| self.map.get(s as usize)) {
                self.unknown[*i as usize] += 1;
            }
        }
    }
}

impl EventSource for Declared<'_> {
    fn spaces(&self) -> Vec<SpaceInfo> {
        let unit = self.interp.time_unit().map(|u| u.keyword().to_string());
        self.back
            .iter()
            .map(|&i| {
                let ns = &self.interp.namespaces()[i as usize];
                SpaceInfo {
                    name: ns.name.clone(),
                    sized: ns.sized,
                    shared: ns.shared,
                    time_unit: unit.clone(),
                }
            })
            .collect()
    }

    fn record(&mut self, view: &RecordView<'_>, out: &mut Vec<HeapEvent>) -> Option<u64> {
        self.interp.record(
            view,
            &mut Collect {
                out,
                map: &self.map,
                unknown: &mut self.unknown,
            },
        );
        // The record's declared time, or the latest one before it.
        self.interp.clock()
    }

    fn site_name(&mut self, space: u32, site: u64) -> Option<String> {
        let i = *self.back.get(space as usize)?;
        self.interp.site_name(i, site)
    }

    fn unknown_frees(&self, space: u32) -> u64 {
        self.unknown.get(space as usize).copied().unwrap_or(0)
    }

    fn names_later(&self) -> bool {
        self.back.iter().any(|&i| {
            let ns = &self.interp.namespaces()[i as usize];
            ns.site_space.is_some() || ns.site_text
        })
    }
}

/// [`compute`] with the trace's own declarations.
pub fn compute_opened(opened: &crate::Opened, window: Window) -> Stats {
    let reader = opened.reader();
    let mut source = Declared::new(opened.schema());
    compute(&reader, &mut source, window)
}

/// Everything `mtf stats` reports about a trace (or a slice of it).
#[derive(Debug, Clone)]
pub struct Stats {
    /// The slice asked for.
    pub window: Window,
    /// Where the slice starts (its first record).
    pub start: At,
    /// Where it ends (the first record after it, or the number of records read).
    pub end: At,
    /// Records in the slice.
    pub records: u64,
    /// Problems met while decoding (the figures cover what could be decoded).
    pub problems: u64,
    /// Records per type in the slice.
    pub types: Vec<TypeSummary>,
    /// Heap figures per namespace.
    pub spaces: Vec<SpaceSummary>,
}

/// Reads `reader`'s records once, feeding the record counter and the heap statistics with the
/// events `source` makes of them, and returns the figures of the slice `window`. Reading stops
/// at the end of the slice.
pub fn compute(
    reader: &crate::decode::Reader<'_>,
    source: &mut dyn EventSource,
    window: Window,
) -> Stats {
    compute_from(reader, &mut reader.records(), source, window)
}

/// [`compute`] over the events of `records` (a reader's records, or the same decoded on
/// several threads: `metatf::parallel::events`).
pub fn compute_from(
    reader: &crate::decode::Reader<'_>,
    records: &mut dyn crate::decode::EventStream,
    source: &mut dyn EventSource,
    window: Window,
) -> Stats {
    let schema = reader.schema();
    let mut counter = RecordCounter::new(schema);
    let mut heap = HeapStats::new(source.spaces());
    let mut events = Vec::new();
    let mut problems = 0u64;
    let mut time: Option<u64> = None;
    let mut start: Option<At> = None;
    let mut end: Option<At> = None;
    let mut last_index = 0u64;
    let n_spaces = source.spaces().len();
    let unknown = |s: &dyn EventSource| -> Vec<u64> {
        (0..n_spaces as u32).map(|i| s.unknown_frees(i)).collect()
    };
    let mut unknown_at_start = vec![0; n_spaces];
    while let Some(e) = records.next_event() {
        let v = match e {
            crate::decode::Event::Record(v) => v,
            crate::decode::Event::Problem(_) | crate::decode::Event::Damage(_) => {
                problems += 1;
                continue;
            }
        };
        events.clear();
        if let Some(t) = source.record(&v, &mut events) {
            time = Some(t);
        }
        let at = At {
            record: v.index(),
            time,
        };
        last_index = v.index() + 1;
        match window.place(at.record, at.time) {
            Place::Before => {}
            Place::Inside => {
                if start.is_none() {
                    start = Some(at);
                    heap.open_window(at);
                    unknown_at_start = unknown(&*source);
                }
                counter.record(&v);
            }
            Place::After => {
                end = Some(at);
                break;
            }
        }
        for ev in &events {
            heap.event(ev);
        }
    }
    let unknown_at_end = unknown(&*source);
    if end.is_some() && source.names_later() {
        // Names of sites may come from tables after the slice.
        while let Some(e) = records.next_event() {
            if let crate::decode::Event::Record(v) = e {
                events.clear();
                source.record(&v, &mut events);
            }
        }
    }
    problems += records.dropped_problems();
    let end = end.unwrap_or(At {
        record: last_index,
        time,
    });
    if start.is_none() {
        unknown_at_start = unknown_at_end.clone();
    }
    let start = start.unwrap_or(end);
    let mut spaces = heap.finish(end, |sp, site| source.site_name(sp, site));
    for (i, s) in spaces.iter_mut().enumerate() {
        s.unknown_frees += unknown_at_end[i] - unknown_at_start[i];
    }
    Stats {
        window,
        start,
        end,
        records: counter.total(),
        problems,
        types: counter.finish(schema),
        spaces,
    }
}

// ------------------------------------------------------------------------------------------
// JSON (docs/stats.md has the schema).

/// The `schema` value of `mtf stats --format json`.
pub const JSON_SCHEMA: &str = "mtf-stats/1";

#[cfg(feature = "json")]
mod json {
    use serde_json::{json, Map, Value};

    use super::*;

    /// An integer as a JSON number where it fits 64 bits, else as a decimal string.
    pub(crate) fn int(v: i128) -> Value {
        if let Ok(x) = i64::try_from(v) {
            json!(x)
        } else if let Ok(x) = u64::try_from(v) {
            json!(x)
        } else {
            json!(v.to_string())
        }
    }

    pub(crate) fn at(a: At) -> Value {
        json!({ "record": a.record, "time": a.time })
    }

    fn classes(c: &[SizeClass], bytes: bool) -> Value {
        Value::Array(
            c.iter()
                .map(|c| {
                    let mut m = Map::new();
                    m.insert("lo".into(), json!(c.lo));
                    m.insert("hi".into(), json!(c.hi));
                    m.insert("count".into(), json!(c.count));
                    if bytes {
                        m.insert("bytes".into(), json!(c.bytes));
                    }
                    Value::Object(m)
                })
                .collect(),
        )
    }

    fn lifetime(l: &LifetimeSummary) -> Value {
        json!({
            "count": l.count, "min": l.min, "mean": l.mean, "median": l.median, "p99": l.p99,
            "max": l.max, "histogram": classes(&l.histogram, false),
        })
    }

    pub(crate) fn site(s: &SiteSummary) -> Value {
        json!({
            "site": s.site, "name": s.name, "allocations": s.allocations,
            "bytes_allocated": s.bytes_allocated, "peak_bytes": s.peak_bytes,
            "peak_blocks": s.peak_blocks, "max_live_bytes": s.max_live_bytes,
            "leaked_bytes": s.leaked_bytes, "leaked_blocks": s.leaked_blocks,
            "temporary": s.temporary,
        })
    }

    pub(crate) fn space(s: &SpaceSummary, top: usize) -> Value {
        json!({
            "name": s.name,
            "sized": s.sized,
            "time_unit": s.time_unit,
            "allocations": s.allocations,
            "frees": s.frees,
            "moves": s.moves,
            "bytes_allocated": s.bytes_allocated,
            "bytes_freed": s.bytes_freed,
            "peak": { "bytes": s.peak_bytes, "blocks": s.peak_blocks, "at": at(s.peak_at) },
            "max_blocks": { "blocks": s.max_blocks, "at": at(s.max_blocks_at) },
            "leaked": { "bytes": s.live_bytes, "blocks": s.live_blocks },
            "temporary": s.temporary,
            "unknown_frees": s.unknown_frees,
            "redefined": s.redefined,
            "sizes": classes(&s.sizes, true),
            "lifetime": {
                "records": lifetime(&s.lifetime_records),
                "time": s.lifetime_time.as_ref().map(lifetime),
            },
            "sites": {
                "count": s.sites.len(),
                "by_peak": s.top_sites(SiteOrder::Peak, top).map(site).collect::<Vec<_>>(),
                "by_leaked": s.top_sites(SiteOrder::Leaked, top).map(site).collect::<Vec<_>>(),
                "by_allocated": s.top_sites(SiteOrder::Allocated, top).map(site).collect::<Vec<_>>(),
            },
        })
    }

    impl Stats {
        /// The figures as JSON (docs/stats.md), with the `top` sites of each ordering.
        pub fn to_json(&self, top: usize) -> Value {
            let types: Vec<Value> = self
                .types
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name, "section": t.section, "count": t.count,
                        "fields": t.fields.iter().map(|f| json!({
                            "name": f.name, "count": f.count, "min": int(f.min),
                            "max": int(f.max), "sum": int(f.sum),
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({
                "schema": JSON_SCHEMA,
                "slice": { "start": at(self.start), "end": at(self.end), "records": self.records },
                "problems": self.problems,
                "records": types,
                "namespaces": self.spaces.iter().map(|s| space(s, top)).collect::<Vec<_>>(),
            })
        }
    }
}

/// How sites are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteOrder {
    /// By live bytes at the peak.
    Peak,
    /// By bytes alive at the end (leaked).
    Leaked,
    /// By bytes allocated.
    Allocated,
}

impl SpaceSummary {
    /// The `n` first sites in an order (ties by site id), leaving out sites with nothing to
    /// show in that order.
    pub fn top_sites(&self, order: SiteOrder, n: usize) -> impl Iterator<Item = &SiteSummary> {
        let key = move |s: &SiteSummary| match order {
            SiteOrder::Peak => (s.peak_bytes, s.peak_blocks),
            SiteOrder::Leaked => (s.leaked_bytes, s.leaked_blocks),
            SiteOrder::Allocated => (s.bytes_allocated, s.allocations),
        };
        let mut v: Vec<&SiteSummary> = self.sites.iter().filter(|s| key(s) != (0, 0)).collect();
        v.sort_by(|a, b| key(b).cmp(&key(a)).then(a.site.cmp(&b.site)));
        v.truncate(n);
        v.into_iter()
    }
}

/// `10.0 MiB`, `512 B`: a byte count in binary units, for people (text, plots, reports).
pub fn human_bytes(n: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = n;
    let mut u = 0;
    while v.abs() >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", units[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(shared: bool) -> SpaceInfo {
        SpaceInfo {
            name: "heap".into(),
            sized: true,
            shared,
            time_unit: Some("ms".into()),
        }
    }

    fn ev(record: u64, time: u64, site: Option<u64>, op: HeapOp) -> HeapEvent {
        HeapEvent {
            record,
            space: 0,
            key: 0,
            thread: None,
            time: Some(time),
            site,
            op,
        }
    }

    fn alloc(id: u64, size: u64) -> HeapOp {
        HeapOp::Alloc {
            id,
            size,
            align: None,
        }
    }

    /// The sequence of the first tests; its figures are worked out by hand in the comments.
    fn sequence() -> Vec<HeapEvent> {
        vec![
            ev(0, 10, Some(7), alloc(1, 100)),        // live 100
            ev(1, 20, Some(8), alloc(2, 50)),         // 150
            ev(2, 30, None, HeapOp::Free { id: 1 }),  // 50; lifetime 2 records, 20 ms
            ev(3, 35, Some(7), alloc(3, 200)),        // 250: the peak (blocks 2 and 3)
            ev(4, 40, None, HeapOp::Free { id: 3 }),  // 50; temporary; lifetime 1, 5 ms
            ev(5, 50, Some(8), alloc(4, 10)),         // 60
            ev(6, 60, None, HeapOp::Free { id: 99 }), // unknown
            ev(
                7,
                70,
                None,
                HeapOp::Move {
                    old: 2,
                    new: 5,
                    size: Some(80),
                },
            ), // free 2 (lifetime 6, 50 ms) → 10, then 80 at site 8 → 90
        ]
    }

    fn run(events: &[HeapEvent], shared: bool, end: u64) -> SpaceSummary {
        let mut h = HeapStats::new(vec![space(shared)]);
        h.open_window(At {
            record: 0,
            time: None,
        });
        for e in events {
            h.event(e);
        }
        let mut v = h.finish(
            At {
                record: end,
                time: None,
            },
            |_, s| Some(format!("site{s}")),
        );
        v.remove(0)
    }

    #[test]
    fn figures_of_a_hand_worked_sequence() {
        let s = run(&sequence(), false, 8);
        assert_eq!((s.allocations, s.bytes_allocated), (5, 440));
        assert_eq!((s.frees, s.bytes_freed), (3, 350));
        assert_eq!((s.peak_bytes, s.peak_blocks), (250, 2));
        assert_eq!(
            s.peak_at,
            At {
                record: 3,
                time: Some(35)
            }
        );
        assert_eq!((s.max_blocks, s.max_blocks_at.record), (2, 1));
        assert_eq!((s.live_bytes, s.live_blocks), (90, 2));
        assert_eq!((s.temporary, s.unknown_frees, s.redefined), (1, 1, 0));
        let l = &s.lifetime_records;
        assert_eq!((l.count, l.min, l.median, l.p99, l.max), (3, 1, 2, 6, 6));
        assert_eq!(l.mean, 3.0);
        let t = s.lifetime_time.as_ref().unwrap();
        assert_eq!((t.count, t.min, t.median, t.p99, t.max), (3, 5, 20, 50, 50));
        assert_eq!(t.mean, 25.0);
        let classes: Vec<_> = s
            .sizes
            .iter()
            .map(|c| (c.lo, c.hi, c.count, c.bytes))
            .collect();
        assert_eq!(
            classes,
            vec![
                (8, 15, 1, 10),
                (32, 63, 1, 50),
                (64, 127, 2, 180),
                (128, 255, 1, 200)
            ]
        );
        let h: Vec<_> = l.histogram.iter().map(|c| (c.lo, c.count)).collect();
        assert_eq!(h, vec![(1, 1), (2, 1), (4, 1)]);
        assert_eq!(s.sites.len(), 2);
        let (a, b) = (&s.sites[0], &s.sites[1]);
        assert_eq!(a.site, Some(7));
        assert_eq!(a.name.as_deref(), Some("site7"));
        assert_eq!((a.allocations, a.bytes_allocated), (2, 300));
        assert_eq!(
            (a.peak_bytes, a.peak_blocks, a.max_live_bytes),
            (200, 1, 200)
        );
        assert_eq!((a.leaked_bytes, a.leaked_blocks, a.temporary), (0, 0, 1));
        assert_eq!(b.site, Some(8));
        assert_eq!((b.allocations, b.bytes_allocated), (3, 140));
        assert_eq!((b.peak_bytes, b.peak_blocks, b.max_live_bytes), (50, 1, 90));
        assert_eq!((b.leaked_bytes, b.leaked_blocks, b.temporary), (90, 2, 0));
    }

    #[test]
    fn a_window_counts_flows_inside_it_and_the_state_from_the_start() {
        let events = sequence();
        let mut h = HeapStats::new(vec![space(false)]);
        let w = Window {
            from: Some(Bound::Record(2)),
            to: Some(Bound::Record(5)),
        };
        for e in &events {
            match w.place(e.record, e.time) {
                Place::Before => {}
                Place::Inside => h.open_window(At {
                    record: e.record,
                    time: e.time,
                }),
                Place::After => break,
            }
            h.event(e);
        }
        let s = h
            .finish(
                At {
                    record: 5,
                    time: Some(50),
                },
                |_, _| None,
            )
            .remove(0);
        assert_eq!(s.start.record, 2);
        assert_eq!((s.allocations, s.bytes_allocated, s.frees), (1, 200, 2));
        assert_eq!((s.peak_bytes, s.peak_at.record), (250, 3));
        assert_eq!((s.live_bytes, s.live_blocks, s.temporary), (50, 1, 1));
        assert_eq!(s.lifetime_records.max, 2);
        // A slice where nothing happens: the peak is the state when it opens.
        let mut h = HeapStats::new(vec![space(false)]);
        h.event(&events[0]);
        h.open_window(At {
            record: 1,
            time: None,
        });
        let s = h.finish(At::default(), |_, _| None).remove(0);
        assert_eq!((s.peak_bytes, s.peak_at.record, s.allocations), (100, 1, 0));
        assert_eq!(s.sites[0].peak_bytes, 100);
    }

    #[test]
    fn a_shared_namespace_frees_the_newest_block_of_an_id() {
        let events = vec![
            ev(0, 0, None, alloc(1, 10)),
            ev(1, 0, None, alloc(1, 20)),
            ev(2, 0, None, HeapOp::Free { id: 1 }), // the 20-byte block; temporary
            ev(3, 0, None, HeapOp::Free { id: 1 }), // the 10-byte block
            ev(4, 0, None, HeapOp::Free { id: 1 }), // none left
        ];
        let s = run(&events, true, 5);
        assert_eq!((s.peak_bytes, s.peak_blocks, s.live_blocks), (30, 2, 0));
        assert_eq!((s.frees, s.unknown_frees, s.temporary), (2, 1, 1));
        assert_eq!(s.bytes_freed, 30);
        assert_eq!(s.lifetime_records.max, 3);
        assert_eq!(s.lifetime_records.min, 1);
        // Not shared: the second allocation replaces the first.
        let s = run(&events[..2], false, 2);
        assert_eq!((s.redefined, s.live_bytes, s.live_blocks), (1, 20, 1));
    }

    #[test]
    fn a_move_without_size_keeps_the_block() {
        let events = vec![
            ev(0, 0, Some(1), alloc(1, 16)),
            ev(
                1,
                5,
                None,
                HeapOp::Move {
                    old: 1,
                    new: 2,
                    size: None,
                },
            ),
            ev(3, 9, None, HeapOp::Free { id: 2 }),
        ];
        let s = run(&events, false, 4);
        assert_eq!(
            (s.allocations, s.moves, s.frees, s.unknown_frees),
            (1, 1, 1, 0)
        );
        assert_eq!((s.lifetime_records.max, s.live_bytes), (3, 0));
        assert_eq!(s.lifetime_time.unwrap().max, 9);
    }

    #[test]
    fn the_curve_is_bounded_and_keeps_the_peak() {
        let mut h = HeapStats::new(vec![space(false)]);
        h.open_window(At::default());
        let mut r = 0;
        for i in 0..100_000u64 {
            h.event(&ev(r, r, None, alloc(i, 8)));
            r += 1;
            let spike = i == 76_543;
            if spike {
                h.event(&ev(r, r, None, alloc(u64::MAX, 1 << 20)));
                r += 1;
                h.event(&ev(r, r, None, HeapOp::Free { id: u64::MAX }));
                r += 1;
            }
            h.event(&ev(r, r, None, HeapOp::Free { id: i }));
            r += 1;
        }
        assert_eq!(h.live_blocks(), 0);
        let s = h.finish(At::default(), |_, _| None).remove(0);
        assert!(s.curve.buckets.len() <= CURVE_POINTS);
        assert!(s.curve.buckets.len() > CURVE_POINTS / 4);
        let top = s.curve.buckets.iter().map(|b| b.bytes_max).max();
        assert_eq!(top, Some(s.peak_bytes));
        assert_eq!(s.peak_bytes, 8 + (1 << 20));
        assert_eq!(s.temporary, 100_000);
    }

    #[test]
    fn bounds_and_windows() {
        assert_eq!("12".parse(), Ok(Bound::Record(12)));
        assert_eq!("r1_000".parse(), Ok(Bound::Record(1000)));
        assert_eq!("t5".parse(), Ok(Bound::Time(5)));
        assert_eq!("@5".parse(), Ok(Bound::Time(5)));
        assert!("x".parse::<Bound>().is_err());
        assert!("-1".parse::<Bound>().is_err());
        // A number too large says so (it said it was neither a record index nor a time).
        let e = "t99999999999999999999999".parse::<Bound>().unwrap_err();
        assert!(e.contains("is larger than 18446744073709551615"), "{e}");
        let e = "x".parse::<Bound>().unwrap_err();
        assert!(e.contains("neither"), "{e}");
        let w = Window {
            from: Some(Bound::Time(10)),
            to: Some(Bound::Record(100)),
        };
        assert_eq!(w.place(0, None), Place::Before);
        assert_eq!(w.place(1, Some(9)), Place::Before);
        assert_eq!(w.place(2, Some(10)), Place::Inside);
        assert_eq!(w.place(99, Some(10)), Place::Inside);
        assert_eq!(w.place(100, Some(10)), Place::After);
        assert_eq!(Window::all().place(5, None), Place::Inside);
    }

    #[test]
    fn records_and_fields_of_a_sample() {
        let opened = crate::open(concat!(env!("CARGO_MANIFEST_DIR"), "/traces/hatf-le32.mtf"))
            .expect("sample opens");
        let reader = opened.reader();
        let mut c = RecordCounter::new(opened.schema());
        let mut records = reader.records();
        // An independent count: sizes of the allocations by `RecordView::get`.
        let (mut n, mut sum, mut min, mut max) = (0u64, 0i128, i128::MAX, i128::MIN);
        while let Some(e) = records.next() {
            if let crate::decode::Event::Record(v) = e {
                c.record(&v);
                if v.name() == "alloc" {
                    let s = v.get("size").and_then(|x| x.as_u64()).unwrap() as i128;
                    n += 1;
                    sum += s;
                    min = min.min(s);
                    max = max.max(s);
                }
            }
        }
        let types = c.finish(opened.schema());
        let a = types.iter().find(|t| t.name == "alloc").unwrap();
        assert_eq!(a.count, n);
        assert_eq!(a.section, "heap");
        let f = a.fields.iter().find(|f| f.name == "size").unwrap();
        assert_eq!((f.count, f.sum, f.min, f.max), (n, sum, min, max));
        assert_eq!(c.total(), types.iter().map(|t| t.count).sum::<u64>());
    }

    proptest::proptest! {
        /// A field's figures in 64-bit words (bits ordered with the sign flipped, negative values
        /// counted apart from the sum) are those of plain 128-bit arithmetic.
        #[test]
        fn field_figures_agree_with_128_bit_arithmetic(
            signed: bool,
            values in proptest::collection::vec(proptest::prelude::any::<u64>(), 1..50),
        ) {
            let mut a = FieldAcc::new(signed);
            let as_shown = |v: u64| if signed { v as i64 as i128 } else { v as i128 };
            for &v in &values {
                a.add(v);
            }
            let shown: Vec<i128> = values.iter().map(|&v| as_shown(v)).collect();
            proptest::prop_assert_eq!(a.count, values.len() as u64);
            proptest::prop_assert_eq!(a.min(), *shown.iter().min().unwrap());
            proptest::prop_assert_eq!(a.max(), *shown.iter().max().unwrap());
            proptest::prop_assert_eq!(a.sum(), shown.iter().sum::<i128>());
        }
    }

    /// The packed live-block tables (one map per namespace, blocks shadowed in shared ones,
    /// the site-less blocks outside the sites' map) against a naive model: every holder of an
    /// id in a list, newest last. After every event the live blocks agree; at the end every
    /// count, byte total, lifetime and per-site figure does.
    mod model {
        use super::*;
        use proptest::prelude::*;
        use std::collections::BTreeMap;

        #[derive(Debug, Clone, Copy)]
        struct Held {
            size: u64,
            site: Option<u64>,
            born: u64,
        }

        #[derive(Debug, Default, Clone)]
        struct Figures {
            allocations: u64,
            frees: u64,
            moves: u64,
            bytes_allocated: u64,
            bytes_freed: u64,
            unknown_frees: u64,
            redefined: u64,
            temporary: u64,
            lifetimes: Vec<u64>,
            last_alloc: Option<(u64, u64)>,
        }

        #[derive(Default)]
        struct Model {
            live: BTreeMap<(u32, u64, u64), Vec<Held>>,
            figures: [Figures; 2],
        }

        impl Model {
            fn shared(sp: u32) -> bool {
                sp == 1
            }

            fn put(&mut self, sp: u32, key: u64, id: u64, h: Held) -> bool {
                let v = self.live.entry((sp, key, id)).or_default();
                let redefined = !v.is_empty() && !Model::shared(sp);
                if redefined {
                    v.clear();
                }
                v.push(h);
                redefined
            }

            fn take(&mut self, sp: u32, key: u64, id: u64) -> Option<Held> {
                let v = self.live.get_mut(&(sp, key, id))?;
                let h = v.pop();
                if v.is_empty() {
                    self.live.remove(&(sp, key, id));
                }
                h
            }

            fn alloc(&mut self, sp: u32, key: u64, id: u64, size: u64, r: u64, site: Option<u64>) {
                let held = Held {
                    size,
                    site,
                    born: r,
                };
                let redefined = self.put(sp, key, id, held);
                let f = &mut self.figures[sp as usize];
                f.redefined += u64::from(redefined);
                f.allocations += 1;
                f.bytes_allocated += size;
                f.last_alloc = Some((key, id));
            }

            fn free(&mut self, sp: u32, key: u64, id: u64, r: u64) -> Option<u64> {
                let taken = self.take(sp, key, id);
                let f = &mut self.figures[sp as usize];
                let temporary = f.last_alloc == Some((key, id));
                f.last_alloc = None;
                let Some(h) = taken else {
                    f.unknown_frees += 1;
                    return None;
                };
                f.frees += 1;
                f.bytes_freed += h.size;
                f.lifetimes.push(r - h.born);
                f.temporary += u64::from(temporary);
                h.site
            }

            fn event(&mut self, e: &HeapEvent) {
                let (sp, key, r) = (e.space, e.key, e.record);
                match e.op {
                    HeapOp::Alloc { id, size, .. } => self.alloc(sp, key, id, size, r, e.site),
                    HeapOp::Free { id } => {
                        self.free(sp, key, id, r);
                    }
                    HeapOp::Move {
                        old,
                        new,
                        size: Some(size),
                    } => {
                        let site = self.free(sp, key, old, r);
                        self.alloc(sp, key, new, size, r, e.site.or(site));
                    }
                    HeapOp::Move {
                        old,
                        new,
                        size: None,
                    } => {
                        let Some(h) = self.take(sp, key, old) else {
                            self.figures[sp as usize].unknown_frees += 1;
                            return;
                        };
                        self.figures[sp as usize].moves += 1;
                        let redefined = self.put(sp, key, new, h);
                        self.figures[sp as usize].redefined += u64::from(redefined);
                    }
                }
            }
        }

        fn op() -> impl Strategy<Value = (u8, u32, u64, u64, u64, u64, Option<u64>)> {
            (
                0u8..5,
                0u32..2,
                0u64..2,
                0u64..6,
                0u64..6,
                0u64..300,
                proptest::option::of(0u64..3),
            )
        }

        proptest! {
            #[test]
            fn the_live_blocks_agree_with_a_naive_model(
                ops in proptest::collection::vec(op(), 0..300),
            ) {
                let info = |shared| SpaceInfo {
                    name: "s".into(),
                    sized: true,
                    shared,
                    time_unit: None,
                };
                let mut h = HeapStats::new(vec![info(false), info(true)]);
                h.open_window(At { record: 0, time: None });
                let mut m = Model::default();
                for (r, &(kind, space, key, id, id2, size, site)) in ops.iter().enumerate() {
                    let op = match kind {
                        0 | 1 => HeapOp::Alloc { id, size, align: None },
                        2 => HeapOp::Free { id },
                        3 => HeapOp::Move { old: id, new: id2, size: Some(size) },
                        _ => HeapOp::Move { old: id, new: id2, size: None },
                    };
                    let e = HeapEvent {
                        record: r as u64,
                        space,
                        key,
                        thread: None,
                        time: None,
                        site,
                        op,
                    };
                    h.event(&e);
                    m.event(&e);
                    let held: usize = m.live.values().map(Vec::len).sum();
                    prop_assert_eq!(h.live_blocks(), held);
                }
                let end = At { record: ops.len() as u64, time: None };
                let out = h.finish(end, |_, _| None);
                for (sp, s) in out.iter().enumerate() {
                    let f = &m.figures[sp];
                    let held: Vec<Held> = m
                        .live
                        .iter()
                        .filter(|((x, _, _), _)| *x as usize == sp)
                        .flat_map(|(_, v)| v.iter().copied())
                        .collect();
                    prop_assert_eq!(s.live_blocks, held.len() as u64);
                    prop_assert_eq!(s.live_bytes, held.iter().map(|h| h.size).sum::<u64>());
                    prop_assert_eq!(
                        (s.allocations, s.frees, s.moves, s.bytes_allocated, s.bytes_freed),
                        (f.allocations, f.frees, f.moves, f.bytes_allocated, f.bytes_freed)
                    );
                    prop_assert_eq!(
                        (s.unknown_frees, s.redefined, s.temporary),
                        (f.unknown_frees, f.redefined, f.temporary)
                    );
                    prop_assert_eq!(s.lifetime_records.count, f.lifetimes.len() as u64);
                    prop_assert_eq!(
                        s.lifetime_records.max,
                        f.lifetimes.iter().copied().max().unwrap_or(0)
                    );
                    // Per site (None included): what is left alive.
                    let mut leaked: BTreeMap<Option<u64>, (u64, u64)> = BTreeMap::new();
                    for h in &held {
                        let e = leaked.entry(h.site).or_default();
                        e.0 += h.size;
                        e.1 += 1;
                    }
                    for site in &s.sites {
                        let want = leaked.remove(&site.site).unwrap_or((0, 0));
                        prop_assert_eq!((site.leaked_bytes, site.leaked_blocks), want);
                    }
                    prop_assert!(leaked.is_empty(), "sites missing: {:?}", leaked);
                }
            }
        }
    }
}
