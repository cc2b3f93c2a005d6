//! Compact encodings: re-encode a trace of any DTD, choosing while it writes the widths and
//! interpretations that make it small (docs/compression.md).
//!
//! [`compact`] reads [`Event`]s from a [`Reader`] and writes every record through a
//! [`TraceWriter`] (so the writer's checks hold), with the same values. Records are taken in
//! look-ahead windows of [`CompactOptions::window`] records; for each field (record type, slot) the
//! [`cost`] model picks, over the values that field takes in the window, the cheapest of `none`,
//! `default` (runs of equal values, the paper's "Same Size"), `stride` (regular sequences),
//! `delta` (growing or locally close values) and `baseOffset` (values near a base), with a base
//! width; a value that does not fit is written between two width changes (the paper's "Small
//! Size"). The choice is re-made for every window, counting the metadata records a switch costs,
//! so no rule is specific to a format.
//!
//! What is kept as it was: sections that a `sectionOffset` field points into (their byte
//! offsets are part of the values), fields read through `sectionOffset`/`sectionStride`, byte
//! strings, and fields that the input switches to a reference interpretation by metadata (the
//! input's metadata records for them are replayed where they stood). Memory is bounded by the
//! window, not by the trace.
//!
//! ```
//! use metatf::compact::{compact, verify, CompactOptions};
//! use metatf::encode::TraceWriter;
//!
//! let opened = metatf::open("traces/hatf-le32.mtf")?;
//! let reader = opened.reader();
//! let h = opened.trace().header();
//! let mut w = TraceWriter::in_memory(opened.schema(), h.class, h.byte_order, &h.dtd_name);
//! compact(&reader, &mut w, &CompactOptions::default())?;
//! let bytes = w.finish_to_vec()?;
//! let again = metatf::OpenOptions::new().dtd("dtds/hatf10.dtd").open_bytes(bytes)?;
//! assert_eq!(verify(&reader, &again.reader())?, 20); // every record but section and metadata
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod cost;
mod file;
mod live;
mod split;

pub use file::{compact_file, Codec, Compression, FileOptions, FileReport, LevelError, Streams};
pub use split::SplitPlan;

use std::collections::HashSet;

use crate::decode::{ElementRef, Event, MetaChange, Reader, RecordView, Value};
use crate::dtd::{Builtin, Display, Interp, RecordId, Schema, SlotId, SlotKind};
use crate::encode::{EncodeError, In, TraceWriter};
use crate::layout::{FastMap as HashMap, LiveSets, MetaProperty};

pub use cost::Measure;
use cost::{Current, MetaCost, Sign, WidthPlan};

/// How [`compact`] chooses.
#[derive(Debug, Clone, Copy)]
pub struct CompactOptions {
    /// Records per look-ahead window (all types together).
    pub window: usize,
    /// Plain bytes, or an estimate of the compressed size (when the output is compressed).
    pub measure: Measure,
    /// Whether fields may be read through live sets (extension `live/1`, docs/format.md §13;
    /// a 1.0 reader refuses the output when the encoder uses it).
    pub live: bool,
    /// Keep every live-set candidate, paying or not (for tests of the encoder's escapes).
    #[doc(hidden)]
    pub force_live: bool,
}

impl Default for CompactOptions {
    fn default() -> CompactOptions {
        CompactOptions {
            window: 4096,
            measure: Measure::Bytes,
            live: false,
            force_live: false,
        }
    }
}

/// What [`compact`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactStats {
    /// Records read, of every kind.
    pub records_in: u64,
    /// Data records of the input, as a user counts them ([`RecordView::is_data`]: not
    /// `section`, `metadata` or `comment`, not an element of a table such as a split stream),
    /// whatever the encoding writes; what bytes per record are counted against.
    ///
    /// [`RecordView::is_data`]: crate::decode::RecordView::is_data
    pub data_records: u64,
    /// Metadata records of the input dropped (replaced by the encoder's own).
    pub metadata_dropped: u64,
    /// Metadata records of the input replayed (fields the encoder does not manage).
    pub metadata_replayed: u64,
    /// Metadata records the encoder wrote to switch interpretations.
    pub interp_changes: u64,
    /// Metadata records the encoder wrote to change widths.
    pub width_changes: u64,
    /// Sections copied as they were (targets of `sectionOffset`).
    pub kept_sections: Vec<u8>,
    /// The live sets used (extension `live/1`), one line each:
    /// `set 1 (heap): free.address takes from alloc.address, realloc.address`.
    pub live_sets: Vec<String>,
    /// The streams written (`--split`), one line each.
    pub streams: Vec<String>,
}

/// Why [`compact`] or [`verify`] failed.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum CompactError {
    /// The input trace is invalid (only valid traces are re-encoded).
    #[error("the input trace is invalid: {0}")]
    #[diagnostic(code(mtf::compact::invalid_input))]
    Invalid(String),
    /// The writer refused a record (a bug of the encoder: it is reported, never hidden).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Encode(#[from] EncodeError),
    /// Two traces decode to different values.
    #[error("decoded values differ at data record {index}: {what}")]
    #[diagnostic(code(mtf::compact::differs))]
    Differs {
        /// Index of the data record (counting data records and comments from 0).
        index: u64,
        /// What differs.
        what: String,
    },
    /// An input or output file could not be read or written.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Io(#[from] crate::io::IoError),
    /// Split streams were asked for with standard output as the output.
    #[error(
        "split streams write a derived DTD beside the output, so the output must be a file, not -"
    )]
    #[diagnostic(code(mtf::compact::split_needs_file))]
    SplitNeedsFile,
    /// The derived DTD's file exists with other text.
    #[error(
        "{} exists with other contents; remove it or write the output elsewhere",
        crate::io::escape_path(path)
    )]
    #[diagnostic(code(mtf::compact::derived_dtd_exists))]
    DerivedDtdExists {
        /// The derived DTD's path.
        path: std::path::PathBuf,
    },
    /// The derived DTD does not parse (a bug of the splitter: it is reported, never hidden).
    #[error("the derived DTD of the split streams is invalid: {0}")]
    #[diagnostic(code(mtf::compact::derived_dtd))]
    DerivedDtd(String),
}

/// One record of the window, owned.
enum Item {
    Record {
        rid: RecordId,
        slots: Vec<SlotId>,
        vals: Vec<In>,
    },
    Meta(MetaChange),
}

/// Facts from a first pass over the input.
struct Prescan {
    /// Sections whose byte layout must be kept (targets of `sectionOffset`).
    keep: [bool; 256],
    /// (section, record, slot) switched to a reference interpretation by metadata.
    ref_touched: HashSet<(u8, RecordId, SlotId)>,
    /// Which fields take part in live sets (extension `live/1`).
    roles: live::Roles,
    /// Fields whose values are not all equal (gathered only when streams are planned).
    varies: HashSet<live::Key>,
    /// Fields moved into streams (`--split`): not managed in their own section.
    streams: HashSet<live::Key>,
}

impl Prescan {
    fn managed(&self, schema: &Schema, section: u8, rid: RecordId, slot: SlotId) -> bool {
        if self.keep[section as usize] || slot == 0 || slot > 255 {
            return false;
        }
        let def = &schema.record(rid).slots[slot as usize];
        matches!(def.kind, SlotKind::Int { .. })
            && !matches!(
                def.interp,
                Interp::SectionOffset(_) | Interp::SectionStride { .. }
            )
            && !self.ref_touched.contains(&(section, rid, slot))
            && !self.streams.contains(&(section, rid, slot))
    }
}

fn invalid(e: &dyn std::fmt::Display) -> CompactError {
    CompactError::Invalid(e.to_string())
}

fn prescan(
    reader: &Reader<'_>,
    opts: &CompactOptions,
    m: MetaCost,
    track_varies: bool,
) -> Result<Prescan, CompactError> {
    let schema = reader.schema();
    let mut keep = [false; 256];
    for r in &schema.records {
        for s in &r.slots {
            if let Interp::SectionOffset(n) = s.interp {
                keep[n as usize] = true;
            }
        }
    }
    let mut ref_touched = HashSet::new();
    let mut disc = live::Discovery::new(schema);
    let mut first: HashMap<live::Key, u64> = HashMap::default();
    let mut varies = HashSet::new();
    let mut records = reader.records();
    while let Some(ev) = records.next() {
        match ev {
            Event::Record(r) => {
                if r.record().builtin.is_none() && opts.live {
                    disc.record(&r);
                }
                if r.record().builtin.is_none() && track_varies {
                    let (section, rid) = (r.section(), r.record_id());
                    for f in r.fields().skip(1) {
                        if let Value::Int(v) = f.value() {
                            let key = (section, rid, f.slot());
                            if *first.entry(key).or_insert(v) != v {
                                varies.insert(key);
                            }
                        }
                    }
                }
                if let Some(mc) = r.metadata() {
                    disc.metadata(mc.property);
                    if let MetaProperty::Interp(i) = mc.property {
                        match i {
                            Interp::SectionOffset(n) => {
                                keep[n as usize] = true;
                                ref_touched.insert((r.section(), mc.record, mc.slot));
                            }
                            Interp::SectionStride { .. } => {
                                ref_touched.insert((r.section(), mc.record, mc.slot));
                            }
                            _ => {}
                        }
                    }
                }
            }
            Event::Problem(p) => return Err(invalid(&p)),
            Event::Damage(d) => return Err(invalid(&d)),
        }
    }
    let mut pre = Prescan {
        keep,
        ref_touched,
        roles: live::Roles::default(),
        varies,
        streams: HashSet::new(),
    };
    if opts.live {
        let mut cand = disc.candidates();
        let managed = |k: &live::Key| pre.managed(schema, k.0, k.1, k.2);
        cand.consumers.retain(|k, _| managed(k));
        cand.producers.retain(|k, _| managed(k));
        pre.roles = live::evaluate(reader, cand, m, opts.force_live);
    }
    Ok(pre)
}

/// A managed field's values in a window.
type Values = HashMap<(RecordId, SlotId), Vec<u64>>;

/// The values each managed field stores in `window`, in order (for a field read through a
/// live set, the positions its values will have), and the fields in the order to plan them:
/// as they first come, then those whose every value was a miss (an escape).
fn window_values(
    schema: &Schema,
    scope: &mut Scope<'_>,
    window: &[Item],
) -> (Values, Vec<(RecordId, SlotId)>) {
    let mut per: Values = HashMap::default();
    let mut misses: HashMap<(RecordId, SlotId), usize> = HashMap::default();
    let mut order: Vec<(RecordId, SlotId)> = Vec::new();
    for it in window {
        let Item::Record { rid, slots, vals } = it else {
            continue;
        };
        for (s, v) in slots.iter().zip(vals) {
            let In::Int(value) = *v else {
                continue;
            };
            let Some(x) = scope.stored(*rid, *s, value) else {
                *misses.entry((*rid, *s)).or_insert(0) += 1;
                continue;
            };
            if scope.managed(schema, *rid, *s) {
                per.entry((*rid, *s))
                    .or_insert_with(|| {
                        order.push((*rid, *s));
                        Vec::new()
                    })
                    .push(x);
            }
        }
        scope.sim.compact();
    }
    // In a fixed order: the output must not depend on the hash seed.
    let mut only_missed: Vec<_> = misses.keys().filter(|k| !per.contains_key(k)).collect();
    only_missed.sort();
    order.extend(only_missed);
    (per, order)
}

/// The encoder's view of the current scope.
struct Scope<'p> {
    section: u8,
    pre: &'p Prescan,
    /// Last decoded value of each managed field.
    last: HashMap<(RecordId, SlotId), u64>,
    /// The plan of each managed field, from its latest window.
    plans: HashMap<(RecordId, SlotId), WidthPlan>,
    /// The live sets as the writer will have them at the end of the planned windows.
    sim: LiveSets,
    /// Whether the producers' `liveset` metadata records have been written in this scope.
    started: bool,
}

impl<'p> Scope<'p> {
    fn new(section: u8, pre: &'p Prescan) -> Scope<'p> {
        Scope {
            section,
            pre,
            last: HashMap::default(),
            plans: HashMap::default(),
            sim: LiveSets::indexed(),
            started: false,
        }
    }

    fn managed(&self, schema: &Schema, rid: RecordId, slot: SlotId) -> bool {
        self.pre.managed(schema, self.section, rid, slot)
    }

    /// What field `slot` of `rid` stores for `value`: the value, or for a consumer of a live
    /// set its position (`None`: a miss that cannot be stored); the simulated sets follow.
    fn stored(&mut self, rid: RecordId, slot: SlotId, value: u64) -> Option<u64> {
        let mut x = Some(value);
        if let Some(n) = self.consumer(rid, slot) {
            let len = self.sim.len(n) as u64;
            x = match self.sim.position(n, value) {
                Some(p) => {
                    self.sim.take(n, p, None);
                    Some(p)
                }
                None => len.checked_add(value),
            };
        }
        if let Some(n) = self.producer(rid, slot) {
            self.sim.insert(n, value, None);
        }
        x
    }

    fn consumer(&self, rid: RecordId, slot: SlotId) -> Option<u8> {
        self.pre
            .roles
            .consumers
            .get(&(self.section, rid, slot))
            .copied()
    }

    fn producer(&self, rid: RecordId, slot: SlotId) -> Option<u8> {
        self.pre
            .roles
            .producers
            .get(&(self.section, rid, slot))
            .copied()
    }
}

fn sign_of(schema: &Schema, rid: RecordId, slot: SlotId) -> Sign {
    if schema.record(rid).slots[slot as usize].display == Display::Signed {
        Sign::Signed
    } else {
        Sign::Unsigned
    }
}

fn owned(r: &RecordView<'_>) -> Item {
    let mut slots = Vec::with_capacity(r.field_count());
    let mut vals = Vec::with_capacity(r.field_count());
    for f in r.fields().skip(1) {
        slots.push(f.slot());
        vals.push(match f.value() {
            Value::Int(v) => In::Int(v),
            Value::Bytes(b) => In::Bytes(b.to_vec()),
            Value::Ref(ElementRef::Offset { offset, .. }) => In::Offset(offset),
            Value::Ref(ElementRef::Index { index, .. }) => In::Index(index),
        });
    }
    Item::Record {
        rid: r.record_id(),
        slots,
        vals,
    }
}

struct Ctx<'w, 's> {
    w: &'w mut TraceWriter<'s>,
    schema: &'s Schema,
    m: MetaCost,
    opts: CompactOptions,
    stats: CompactStats,
    /// The streams (`--split`): the field each holds and its section.
    stream_ids: Vec<(live::Key, u8)>,
}

impl Ctx<'_, '_> {
    fn meta(&mut self, rid: RecordId, slot: SlotId, p: MetaProperty) -> Result<(), CompactError> {
        match p {
            MetaProperty::Width(_) => self.stats.width_changes += 1,
            MetaProperty::Interp(_) | MetaProperty::LiveSet(_) => self.stats.interp_changes += 1,
        }
        Ok(self.w.metadata(rid, slot, p)?)
    }

    fn flush(&mut self, scope: &mut Scope<'_>, window: &mut Vec<Item>) -> Result<(), CompactError> {
        if window.is_empty() {
            return Ok(());
        }
        if !scope.started {
            scope.started = true;
            self.start_scope(scope)?;
        }
        let (per, order) = window_values(self.schema, scope, window);
        for key in order {
            self.plan_field(scope, key, per.get(&key).map_or(&[][..], |v| &v[..]))?;
        }
        for it in window.drain(..) {
            match it {
                Item::Meta(mc) => {
                    self.stats.metadata_replayed += 1;
                    self.w.metadata(mc.record, mc.slot, mc.property)?;
                }
                Item::Record { rid, slots, vals } => {
                    self.widths(scope, rid, &slots, &vals)?;
                    self.w.record(rid, &vals)?;
                    for (s, v) in slots.iter().zip(&vals) {
                        if let In::Int(x) = v {
                            scope.last.insert((rid, *s), *x);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The first window of a scope: the producers' `liveset` metadata records, and the fields
    /// moved into streams.
    fn start_scope(&mut self, scope: &Scope<'_>) -> Result<(), CompactError> {
        let mut producers: Vec<(live::Key, u8)> = scope
            .pre
            .roles
            .producers
            .iter()
            .filter(|(k, _)| k.0 == scope.section)
            .map(|(&k, &n)| (k, n))
            .collect();
        producers.sort();
        for ((_, rid, slot), n) in producers {
            self.meta(rid, slot, MetaProperty::LiveSet(n))?;
        }
        let here: Vec<(live::Key, u8)> = self
            .stream_ids
            .iter()
            .filter(|(k, _)| k.0 == scope.section)
            .copied()
            .collect();
        for (key, id) in here {
            self.meta(key.1, key.2, MetaProperty::Interp(split::stream_interp(id)))?;
        }
        Ok(())
    }

    /// Plan managed field `key` for a window in which it stores `xs`.
    fn plan_field(
        &mut self,
        scope: &mut Scope<'_>,
        key: (RecordId, SlotId),
        xs: &[u64],
    ) -> Result<(), CompactError> {
        let live = self.w.live(key.0, key.1).expect("visible record");
        let plan = match scope.consumer(key.0, key.1) {
            Some(n) => WidthPlan {
                interp: Interp::Live(n),
                width: cost::position_width(xs, live.width, self.m),
            },
            None => {
                let cur = Current {
                    interp: live.interp,
                    width: live.width,
                    lastwidth: live.lastwidth,
                    prev: live.prev,
                    last: scope.last.get(&key).copied().unwrap_or(0),
                };
                let sign = sign_of(self.schema, key.0, key.1);
                cost::choose(xs, cur, sign, self.m, self.opts.measure)
            }
        };
        if plan.interp != live.interp {
            self.meta(key.0, key.1, MetaProperty::Interp(plan.interp))?;
        }
        scope.plans.insert(key, plan);
        Ok(())
    }

    /// Before a record: give each managed field the width its plan says, or a wider one if a
    /// value of this record needs it.
    fn widths(
        &mut self,
        scope: &Scope<'_>,
        rid: RecordId,
        slots: &[SlotId],
        vals: &[In],
    ) -> Result<(), CompactError> {
        // (slot, width needed, running prev)
        let mut need: Vec<(SlotId, u8, u64)> = Vec::new();
        for (s, v) in slots.iter().zip(vals) {
            let In::Int(x) = *v else { continue };
            let Some(plan) = scope.plans.get(&(rid, *s)) else {
                continue;
            };
            if let Interp::Live(n) = plan.interp {
                // The writer's own sets say what is stored (consumers come before producers of
                // their set in a record, so nothing earlier in it moves them).
                let live = self.w.live(rid, *s).expect("visible record");
                match self.w.live_stored(n, x) {
                    Some(p) => {
                        if live.interp != plan.interp {
                            self.meta(rid, *s, MetaProperty::Interp(plan.interp))?;
                        }
                        let w = plan.width.max(cost::unsigned_width(p));
                        if self.w.live(rid, *s).expect("visible record").width != w {
                            self.meta(rid, *s, MetaProperty::Width(w))?;
                        }
                    }
                    None => {
                        // An escape: the value as a number, until the next hit.
                        if live.interp != Interp::None {
                            self.meta(rid, *s, MetaProperty::Interp(Interp::None))?;
                        }
                        let w = cost::unsigned_width(x);
                        if self.w.live(rid, *s).expect("visible record").width != w {
                            self.meta(rid, *s, MetaProperty::Width(w))?;
                        }
                    }
                }
                continue;
            }
            let i = match need.iter().position(|n| n.0 == *s) {
                Some(i) => i,
                None => {
                    let live = self.w.live(rid, *s).expect("visible record");
                    need.push((*s, plan.width, live.prev));
                    need.len() - 1
                }
            };
            let sign = sign_of(self.schema, rid, *s);
            if let Some(w) = cost::needed(plan.interp, need[i].2, x, sign) {
                need[i].1 = need[i].1.max(w);
            }
            need[i].2 = x;
        }
        for (s, w, _) in need {
            let live = self.w.live(rid, s).expect("visible record");
            if !live.interp.is_zero_width() && live.width != w {
                self.meta(rid, s, MetaProperty::Width(w))?;
            }
        }
        Ok(())
    }
}

/// Re-encode every record of `reader` into `writer` (which must be in its initial state, for
/// the same schema), choosing widths and interpretations by cost. The caller finishes the
/// writer.
///
/// Errors: [`CompactError::Invalid`] if the input has any problem or damage (checked in a first
/// pass, before anything is written).
pub fn compact(
    reader: &Reader<'_>,
    writer: &mut TraceWriter<'_>,
    opts: &CompactOptions,
) -> Result<CompactStats, CompactError> {
    compact_with_progress(reader, writer, opts, &mut |_, _| {})
}

/// As [`compact`], calling `progress(byte offset, records read)` after every record of the
/// writing pass (for a progress bar; cheap to ignore).
pub fn compact_with_progress(
    reader: &Reader<'_>,
    writer: &mut TraceWriter<'_>,
    opts: &CompactOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CompactStats, CompactError> {
    run(reader, writer, opts, None, progress)
}

/// Choose the fields that move into streams (`mtf compact --split`) and derive the DTD that
/// declares a section for each; `dtd_text` is the text of the input's DTD. `None` when no field
/// is worth a stream. The writer given to [`compact_split`] must use the derived DTD.
pub fn plan_split(
    reader: &Reader<'_>,
    dtd_text: &str,
    opts: &CompactOptions,
) -> Result<Option<SplitPlan>, CompactError> {
    let schema = reader.schema();
    let m = MetaCost {
        fixed: 2 * schema.tag_width as u32 + 2,
        word: reader.class().word_size() as u32,
    };
    let pre = prescan(reader, opts, m, true)?;
    let mut keys: Vec<live::Key> = pre
        .varies
        .iter()
        .copied()
        .filter(|k| {
            live::eligible(schema, k.1, k.2)
                && pre.managed(schema, k.0, k.1, k.2)
                && !split::layout_slots(schema.record(k.1)).contains(&k.2)
                && {
                    // A live set of the DTD would see the element index instead.
                    let def = &schema.record(k.1).slots[k.2 as usize];
                    def.liveset == 0 && !matches!(def.interp, Interp::Live(_))
                }
                && !pre.roles.consumers.contains_key(k)
                && !pre.roles.producers.contains_key(k)
        })
        .collect();
    keys.sort();
    if keys.is_empty() {
        return Ok(None);
    }
    Ok(split::derive(dtd_text, schema, &keys))
}

/// As [`compact_with_progress`], moving the fields of `plan` into streams; `writer` must use the
/// plan's derived DTD ([`SplitPlan::dtd_text`]).
pub fn compact_split(
    reader: &Reader<'_>,
    writer: &mut TraceWriter<'_>,
    opts: &CompactOptions,
    plan: &SplitPlan,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CompactStats, CompactError> {
    run(reader, writer, opts, Some(plan), progress)
}

fn run(
    reader: &Reader<'_>,
    writer: &mut TraceWriter<'_>,
    opts: &CompactOptions,
    split: Option<&SplitPlan>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<CompactStats, CompactError> {
    let schema = reader.schema();
    let m = MetaCost {
        fixed: 2 * schema.tag_width as u32 + 2,
        // The output's word size: it may differ from the input's (`mtf compact --class`).
        word: writer.class().word_size() as u32,
    };
    let mut pre = prescan(reader, opts, m, false)?;
    let wschema = writer.schema();
    // The streams, bound to their record types in the writer's (derived) schema.
    let mut streams = match split {
        Some(plan) => bind_streams(schema, wschema, plan, &mut pre)?,
        None => Vec::new(),
    };
    let mut ctx = Ctx {
        w: writer,
        schema: wschema,
        m,
        opts: CompactOptions {
            window: opts.window.max(1),
            ..*opts
        },
        stats: CompactStats::default(),
        stream_ids: Vec::new(),
    };
    ctx.stats.kept_sections = (1..=255u8).filter(|&s| pre.keep[s as usize]).collect();
    ctx.stats.live_sets = pre.roles.describe(schema);
    if let Some(plan) = split {
        ctx.stats.streams = plan.describe(schema);
    }
    ctx.stream_ids = streams.iter().map(|st| (st.key, st.id)).collect();
    let pre = &pre;
    let new_scope = |section: u8| Scope::new(section, pre);
    let mut scope = new_scope(0);
    let mut window: Vec<Item> = Vec::with_capacity(ctx.opts.window);
    let mut records = reader.records();
    while let Some(ev) = records.next() {
        let r = match ev {
            Event::Record(r) => r,
            Event::Problem(p) => return Err(invalid(&p)),
            Event::Damage(d) => return Err(invalid(&d)),
        };
        ctx.stats.records_in += 1;
        ctx.stats.data_records += u64::from(r.is_data());
        progress(r.offset() + r.len(), ctx.stats.records_in);
        match r.record().builtin {
            Some(Builtin::Section) => {
                ctx.flush(&mut scope, &mut window)?;
                write_streams(&mut ctx, &mut streams, scope.section, pre)?;
                ctx.w.section(r.section())?;
                scope = new_scope(r.section());
            }
            Some(Builtin::Metadata) => {
                let Some(mc) = r.metadata() else {
                    return Err(CompactError::Invalid(format!(
                        "metadata record {} was refused",
                        r.index()
                    )));
                };
                if scope.managed(schema, mc.record, mc.slot)
                    || scope
                        .pre
                        .streams
                        .contains(&(scope.section, mc.record, mc.slot))
                {
                    ctx.stats.metadata_dropped += 1;
                } else {
                    window.push(Item::Meta(mc));
                }
            }
            _ => {
                let mut item = owned(&r);
                if let Item::Record { rid, slots, vals } = &mut item {
                    to_streams(&mut streams, (scope.section, *rid), slots, vals)?;
                }
                window.push(item);
                if window.len() >= ctx.opts.window {
                    ctx.flush(&mut scope, &mut window)?;
                }
            }
        }
    }
    ctx.flush(&mut scope, &mut window)?;
    write_streams(&mut ctx, &mut streams, scope.section, pre)?;
    Ok(ctx.stats)
}

/// The streams of `plan`, bound to their record types in `wschema` (the derived DTD's), and
/// marked in `pre` as fields no longer planned.
fn bind_streams(
    schema: &Schema,
    wschema: &Schema,
    plan: &SplitPlan,
    pre: &mut Prescan,
) -> Result<Vec<Stream>, CompactError> {
    if !split::compatible(schema, wschema) {
        return Err(CompactError::Invalid(
            "the derived DTD does not keep the input's record types".into(),
        ));
    }
    let mut streams = Vec::new();
    for (key, id, name) in &plan.streams {
        let Some(rid) = split::stream_record(wschema, *id, name) else {
            return Err(CompactError::Invalid(format!(
                "the derived DTD has no record type {name} in section {id}"
            )));
        };
        pre.streams.insert(*key);
        streams.push(Stream {
            key: *key,
            id: *id,
            rid,
            spool: None,
            buf: Vec::new(),
            count: 0,
        });
    }
    Ok(streams)
}

/// Move the values of a record of `rid` in `section` that go to a stream into it (the record
/// keeps `Auto` in their place).
fn to_streams(
    streams: &mut [Stream],
    (section, rid): (u8, RecordId),
    slots: &[SlotId],
    vals: &mut [In],
) -> Result<(), CompactError> {
    if streams.is_empty() {
        return Ok(());
    }
    for (s, v) in slots.iter().zip(vals.iter_mut()) {
        let key = (section, rid, *s);
        if let Some(st) = streams.iter_mut().find(|st| st.key == key) {
            if let In::Int(x) = *v {
                st.push(x)?;
                *v = In::Auto;
            }
        }
    }
    Ok(())
}

/// Write the streams of `section`, each as its own section, right after it.
fn write_streams(
    ctx: &mut Ctx<'_, '_>,
    streams: &mut [Stream],
    section: u8,
    pre: &Prescan,
) -> Result<(), CompactError> {
    for st in streams.iter_mut().filter(|st| st.key.0 == section) {
        ctx.w.section(st.id)?;
        let mut sc = Scope::new(st.id, pre);
        let mut win: Vec<Item> = Vec::with_capacity(ctx.opts.window);
        let rid = st.rid;
        for v in st.drain()? {
            win.push(Item::Record {
                rid,
                slots: vec![split::VALUE_SLOT],
                vals: vec![In::Int(v?)],
            });
            if win.len() >= ctx.opts.window {
                ctx.flush(&mut sc, &mut win)?;
            }
        }
        ctx.flush(&mut sc, &mut win)?;
    }
    Ok(())
}

/// One stream's values while its section is written: spooled to a scratch file, so memory
/// stays bounded by the buffer.
struct Stream {
    key: live::Key,
    id: u8,
    rid: RecordId,
    spool: Option<crate::io::TempFile>,
    buf: Vec<u8>,
    count: u64,
}

impl Stream {
    const BUF: usize = 1 << 16;

    fn spool_error(e: impl std::fmt::Display) -> CompactError {
        CompactError::Invalid(format!("cannot spool a stream: {e}"))
    }

    fn push(&mut self, v: u64) -> Result<(), CompactError> {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self.count += 1;
        if self.buf.len() >= Self::BUF {
            self.spill()?;
        }
        Ok(())
    }

    fn spill(&mut self) -> Result<(), CompactError> {
        use std::io::Write;
        if self.spool.is_none() {
            self.spool = Some(crate::io::TempFile::new().map_err(Self::spool_error)?);
        }
        let f = self.spool.as_mut().expect("spool").file_mut();
        f.write_all(&self.buf).map_err(Self::spool_error)?;
        self.buf.clear();
        Ok(())
    }

    /// Every value pushed, in order; the stream is empty afterwards.
    fn drain(&mut self) -> Result<impl Iterator<Item = Result<u64, CompactError>>, CompactError> {
        use std::io::Read;
        if self.spool.is_some() {
            self.spill()?;
        }
        let n = std::mem::take(&mut self.count);
        let tail = std::mem::take(&mut self.buf);
        let file = match self.spool.take() {
            Some(mut t) => {
                t.rewind().map_err(Self::spool_error)?;
                let f = t.file().try_clone().map_err(Self::spool_error)?;
                // The scratch file is removed when `t` is dropped, after the last read.
                Some((t, std::io::BufReader::with_capacity(Self::BUF, f)))
            }
            None => None,
        };
        let mut file = file;
        let mut i = 0u64;
        Ok(std::iter::from_fn(move || {
            if i == n {
                return None;
            }
            let at = i as usize;
            i += 1;
            let mut b = [0u8; 8];
            Some(match &mut file {
                Some((_, r)) => r
                    .read_exact(&mut b)
                    .map(|_| u64::from_le_bytes(b))
                    .map_err(Self::spool_error),
                None => {
                    b.copy_from_slice(&tail[at * 8..at * 8 + 8]);
                    Ok(u64::from_le_bytes(b))
                }
            })
        }))
    }
}

/// Check that two traces of the same DTD decode to the same values, record for record: every
/// record other than `section` and `metadata` records, with references followed to the values
/// they lead to. Returns the number of records compared.
pub fn verify(a: &Reader<'_>, b: &Reader<'_>) -> Result<u64, CompactError> {
    // Sections of the second trace that the first has not (the streams of `--split`) hold
    // values the first trace keeps in its records: they are read through references.
    let sections: Vec<u8> = a.input.regions.iter().map(|r| r.section).collect();
    let mut ra = a.records();
    let mut rb = b.records();
    let mut index = 0u64;
    loop {
        let x = next_data(&mut ra, &|_| true)?;
        let y = next_data(&mut rb, &|s| sections.contains(&s))?;
        let differs = |what: String| CompactError::Differs { index, what };
        match (x, y) {
            (None, None) => return Ok(index),
            (Some(_), None) => return Err(differs("the second trace ends first".into())),
            (None, Some(_)) => return Err(differs("the first trace ends first".into())),
            (Some(x), Some(y)) => {
                if x != y {
                    let name = &a.schema().record(x.0).name;
                    return Err(differs(format!("{name}: {:?} vs {:?}", x.2, y.2)));
                }
            }
        }
        index += 1;
    }
}

/// A decoded value, owned, with references followed.
#[derive(Debug, PartialEq, Eq)]
enum Owned {
    Int(u64),
    Bytes(Vec<u8>),
    Ref(ElementRef),
}

type OwnedRecord = (RecordId, u8, Vec<(SlotId, Owned)>);

fn next_data(
    r: &mut crate::decode::Records<'_>,
    compared: &dyn Fn(u8) -> bool,
) -> Result<Option<OwnedRecord>, CompactError> {
    loop {
        match r.next() {
            None => return Ok(None),
            Some(Event::Problem(p)) => return Err(invalid(&p)),
            Some(Event::Damage(d)) => return Err(invalid(&d)),
            Some(Event::Record(v)) => {
                if matches!(
                    v.record().builtin,
                    Some(Builtin::Section | Builtin::Metadata)
                ) || !compared(v.section())
                {
                    continue;
                }
                let mut fields = Vec::with_capacity(v.field_count());
                for f in v.fields() {
                    let value = match f.resolve() {
                        None => f.value(),
                        Some(Ok(r)) => r.value,
                        Some(Err(e)) => return Err(invalid(&e)),
                    };
                    fields.push((
                        f.slot(),
                        match value {
                            Value::Int(i) => Owned::Int(i),
                            Value::Bytes(b) => Owned::Bytes(b.to_vec()),
                            Value::Ref(e) => Owned::Ref(e),
                        },
                    ));
                }
                return Ok(Some((v.record_id(), v.section(), fields)));
            }
        }
    }
}
