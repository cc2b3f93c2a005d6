//! Where the importer writes: a small by-name trait, and its one implementation over the
//! library's writer ([`crate::encode::TraceWriter`]).
//!
//! All calls into the writer API are in this file, so that a change of that API touches only
//! [`WriterSink`].

use crate::container::{fits_signed, fits_unsigned};
use crate::dtd::{Interp, RecordId, RecordType, Schema, SlotKind};
use crate::encode::{EncodeError, FieldIn as F, Fields, In, TraceWriter};
use crate::MetaProperty;

/// A field value given to a sink.
// Design: not the writer's `encode::FieldIn`, which owns its bytes and nests lists and groups:
// the importer hands over slices of the unit it read, so that writing a record allocates
// nothing, and its records are flat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value<'a> {
    /// An integer.
    Int(u64),
    /// A byte string (its length field is filled in).
    Bytes(&'a [u8]),
    /// A `sectionOffset` byte offset.
    Offset(u64),
}

/// The kind of value a planned field takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldType {
    /// Integer.
    Int,
    /// Byte string.
    Bytes,
    /// Section offset.
    Offset,
}

/// Why a sink refused a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SinkError {
    /// The values do not fit the record (the caller keeps the line raw instead).
    Unrepresentable(String),
    /// Anything else: the import stops.
    Fatal(String),
}

impl std::fmt::Display for SinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SinkError::Unrepresentable(m) | SinkError::Fatal(m) => f.write_str(m),
        }
    }
}

/// A prepared record kind: index returned by [`Sink::plan`].
pub(crate) type PlanId = usize;

/// What the import engine writes through.
pub(crate) trait Sink {
    /// Open the section named `name` (each at most once; the global region comes first).
    fn section(&mut self, name: &str) -> Result<(), SinkError>;
    /// Prepare record `record` (looked up in `section`, or globally for `None`) with fields
    /// given by name, in the order later given to [`Sink::write`].
    fn plan(
        &mut self,
        section: Option<&str>,
        record: &str,
        fields: &[(&str, FieldType)],
    ) -> Result<PlanId, SinkError>;
    /// As [`Sink::plan`], for a record whose repeat `repeat.0` the caller fills with items of
    /// the integer fields `repeat.1` (keys within an item). [`Sink::write`] then takes the
    /// planned fields' values followed by each item's values in turn; the repeat's count is
    /// the number of items.
    fn plan_repeat(
        &mut self,
        section: Option<&str>,
        record: &str,
        fields: &[(&str, FieldType)],
        repeat: Option<(&str, &[&str])>,
    ) -> Result<PlanId, SinkError>;
    /// Whether the DTD declares record `record` in its global scope.
    fn has_record(&self, record: &str) -> bool;
    /// Write one record of a plan.
    fn write(&mut self, plan: PlanId, values: &[Value<'_>]) -> Result<(), SinkError>;
    /// The size in bytes of a record of `plan` whose byte-string field holds `len` bytes,
    /// or `None` when that length cannot be stored (used to lay out string tables).
    fn record_size(&self, plan: PlanId, len: usize) -> Option<u64>;
    /// Check that `values` fit the record of `plan` without writing it (for records written
    /// later, routed to a section of their own): `Ok(Some(size))` with the record's exact size
    /// in bytes when it is known in advance (no `default` or `delta` field, so no metadata
    /// record), `Ok(None)` when it is not.
    fn check(&self, plan: PlanId, values: &[Value<'_>]) -> Result<Option<u64>, SinkError>;
    /// The byte offset in the current section where the next record goes.
    fn position(&self) -> u64;
    /// Whether every record of `plan` has a size known in advance from its values: no
    /// `default` or `delta` field (whose value may need a metadata record first).
    fn fixed_layout(&self, plan: PlanId) -> bool;
}

#[derive(Debug, Clone)]
enum Slot {
    Const(In),
    Field(usize),
    LenOf(usize),
    /// The count of the repeat the caller fills: the number of items given.
    Count,
    /// Field `.0` of the item being written.
    Item(usize),
}

/// The repeat a plan's caller fills ([`Sink::plan_repeat`]): where one item's values lie in the
/// template, how many values an item takes, and their limits and bytes.
#[derive(Debug, Clone)]
struct ItemPlan {
    /// Template index of the first of one item's slots, and how many there are.
    start: usize,
    len: usize,
    /// Values per item given to `write`.
    fields: usize,
    /// Per item value: the largest value its field holds.
    limits: Vec<u64>,
    /// The bytes one item takes at the declared widths.
    size: u64,
}

/// A prepared record kind ([`PlanId`]): how the given fields become the writer's ordered
/// values, and what widening and limits they need.
struct RecordPlan {
    rid: RecordId,
    template: Vec<Slot>,
    /// (field index, slot id) of integer fields declared `default` or `delta`: the writer
    /// switches their default, or restarts their delta chain, by metadata when a value needs it.
    auto: Vec<(usize, u16)>,
    /// Integer fields stored as they are (`none`) in fewer than 8 bytes: (field index, slot
    /// id, declared width, signed). A value wider than the live width is written after a
    /// metadata record that widens the field (docs/mappings.md).
    widen: Vec<(usize, u16, u8, bool)>,
    /// Per entry of `widen`: records written since a value last needed more than the declared
    /// width (the field is narrowed back after [`NARROW_AFTER`] of them).
    since_wide: Vec<u32>,
    fixed_size: u64,
    max_len: u64,
    /// Per given field: the largest value (integers, offsets) or length (byte strings) it
    /// holds.
    limits: Vec<u64>,
    /// How many values the caller gives before the repeat's items.
    given: usize,
    /// The repeat the caller fills, if any.
    item: Option<ItemPlan>,
}

/// [`Sink`] over [`TraceWriter`].
pub(crate) struct WriterSink<'s> {
    /// The writer.
    pub(crate) writer: TraceWriter<'s>,
    schema: &'s Schema,
    plans: Vec<RecordPlan>,
    inputs: Vec<In>,
    section: u8,
}

const MARK: u64 = 0xFEED_0000_0000_0000;
/// Markers of a repeat item's fields in a template.
const ITEM_MARK: u64 = 0xFEEE_0000_0000_0000;

/// How many records of a type whose widened field holds values that fit its declared width
/// again are written before the field is narrowed back to that width.
// Design: a field is widened by a metadata record only for the records that need it (CMU's
// `syn-giant` malloc-lab traces: a few sizes of 2^32 and more among small ones). Narrowing back
// at once would cost two metadata records per wide value where they come in runs; never
// narrowing would make every later record wider after one large value. A run of 64 narrow
// values costs at most 4 bytes × 64 before the field is narrowed, and the two metadata records
// are paid at most once per run of wide values.
const NARROW_AFTER: u32 = 64;

/// The fewest bytes (1..=8) that hold `v`, as unsigned or as two's complement.
fn width_for(v: u64, signed: bool) -> u8 {
    (1..8)
        .find(|&w| {
            if signed {
                fits_signed(v as i64, w)
            } else {
                fits_unsigned(v, w)
            }
        })
        .unwrap_or(8)
}
const LEN_MARK: usize = 100_003;

impl<'s> WriterSink<'s> {
    /// Wrap a writer.
    pub(crate) fn new(writer: TraceWriter<'s>, schema: &'s Schema) -> WriterSink<'s> {
        WriterSink {
            writer,
            schema,
            plans: Vec::new(),
            inputs: Vec::new(),
            section: 0,
        }
    }

    /// The section id for a name.
    pub(crate) fn section_id(schema: &Schema, name: &str) -> Option<u8> {
        schema
            .scopes
            .iter()
            .find(|s| s.id != 0 && s.name == name)
            .map(|s| s.id)
    }

    /// The DTD slot name a mapping field name refers to: the name itself, or `NAME.data` for a
    /// nested `(len, data)` string.
    pub(crate) fn slot_name(schema: &Schema, rid: RecordId, name: &str) -> Option<String> {
        let rt = schema.record(rid);
        if rt.slots.iter().any(|s| s.name == name) {
            return Some(name.to_string());
        }
        let d = format!("{name}.data");
        rt.slots.iter().any(|s| s.name == d).then_some(d)
    }

    /// The record named `record` in `section` (the global scope for `None`).
    fn record_id(
        schema: &Schema,
        section: Option<&str>,
        record: &str,
    ) -> Result<RecordId, SinkError> {
        let sid = match section {
            None => 0,
            Some(n) => Self::section_id(schema, n)
                .ok_or_else(|| SinkError::Fatal(format!("the DTD has no section `{n}`")))?,
        };
        schema.record_by_name(sid, record).ok_or_else(|| {
            SinkError::Fatal(format!(
                "the DTD has no record `{record}` in {}",
                section.map_or("the global scope".to_string(), |s| format!("section `{s}`"))
            ))
        })
    }

    /// Where each field of `fields` lands in the writer's ordered values of record `rid`.
    fn template(
        &self,
        rid: RecordId,
        record: &str,
        fields: &[(&str, FieldType)],
        repeat: Option<&RepeatKeys>,
    ) -> Result<Template, SinkError> {
        let Some(rep) = repeat else {
            return Ok((self.template_with(rid, record, fields, None)?, None));
        };
        // Design: the repeat's place is found by the writer's own assembler rather than by
        // walking the record's layout here (architecture.md: only `dtd/` and `layout/` walk it):
        // assembled with one item and with two, the values differ first at the count and grow by
        // one item's values, so the count, one item's slots and the rest are known, and `write`
        // repeats the item's slots as many times as the unit had items, allocating nothing.
        // Assembled with one item and with two: the count is where they first differ, one
        // item's slots follow it, and the rest is the same.
        let one = self.template_with(rid, record, fields, Some((rep, 1)))?;
        let two = self.template_with(rid, record, fields, Some((rep, 2)))?;
        let c = one
            .iter()
            .zip(&two)
            .position(|(a, b)| format!("{a:?}") != format!("{b:?}"));
        let k = two.len().saturating_sub(one.len());
        let bad = || {
            SinkError::Fatal(format!(
                "record `{record}`: repeat `{}` is not one the importer can fill (its count must come right before its items)",
                rep.key
            ))
        };
        let c = c.ok_or_else(bad)?;
        let counted =
            matches!(one[c], Slot::Const(In::Int(1))) && matches!(two[c], Slot::Const(In::Int(2)));
        if !counted || k == 0 || one.len() < c + 1 + k {
            return Err(bad());
        }
        let mut t = one;
        t[c] = Slot::Count;
        Ok((t, Some((c + 1, k))))
    }

    /// The template of record `rid`, with `items` items of the repeat `rep` given.
    fn template_with(
        &self,
        rid: RecordId,
        record: &str,
        fields: &[(&str, FieldType)],
        items: Option<(&RepeatKeys, usize)>,
    ) -> Result<Vec<Slot>, SinkError> {
        // The writer's assembler places each named field and derives lengths; markers show
        // where each mapping field and each length landed in the ordered values.
        let mut named = Fields::new();
        if let Some((rep, n)) = items {
            let mark = |m: &Option<usize>| m.map_or(0, |j| ITEM_MARK + j as u64);
            let item = |_| {
                if rep.single {
                    F::Int(rep.fields.first().map_or(0, mark))
                } else {
                    let mut g = Fields::new();
                    for (key, m) in rep.keys.iter().zip(&rep.fields) {
                        g.push(key.clone(), F::Int(mark(m)));
                    }
                    F::Group(g)
                }
            };
            named.push(rep.key.clone(), F::List((0..n).map(item).collect()));
        }
        for (i, (name, ty)) in fields.iter().enumerate() {
            let slot = Self::slot_name(self.schema, rid, name).ok_or_else(|| {
                SinkError::Fatal(format!("record `{record}` has no field `{name}`"))
            })?;
            let marker = match ty {
                FieldType::Int => F::Int(MARK + i as u64),
                FieldType::Offset => F::Offset(MARK + i as u64),
                FieldType::Bytes => F::Bytes(vec![0; LEN_MARK + i]),
            };
            named.push(slot, marker);
        }
        let ins = self
            .writer
            .assemble(rid, &named)
            .map_err(|e| SinkError::Fatal(format!("record `{record}`: {e}")))?;
        Ok(ins
            .into_iter()
            .map(|x| match x {
                In::Int(v) | In::Offset(v) if v >= MARK && v < MARK + fields.len() as u64 => {
                    Slot::Field((v - MARK) as usize)
                }
                In::Int(v) if (ITEM_MARK..ITEM_MARK + 0x1_0000).contains(&v) => {
                    Slot::Item((v - ITEM_MARK) as usize)
                }
                In::Int(v) if (LEN_MARK as u64..(LEN_MARK + fields.len()) as u64).contains(&v) => {
                    Slot::LenOf(v as usize - LEN_MARK)
                }
                In::Bytes(b) if b.len() >= LEN_MARK => Slot::Field(b.len() - LEN_MARK),
                other => Slot::Const(other),
            })
            .collect())
    }
}

/// A record's template, and where one item of its repeat lies in it (first index, length).
type Template = (Vec<Slot>, Option<(usize, usize)>);

/// The repeat a caller fills, as the record's shape keys it.
struct RepeatKeys {
    /// The list's key.
    key: String,
    /// Whether an item is one scalar field.
    single: bool,
    /// The keys of an item's fields (within the item), and their slots.
    keys: Vec<String>,
    slots: Vec<usize>,
    /// Per item field: the index of the caller's value for it (`None`: written as 0).
    fields: Vec<Option<usize>>,
}

impl RepeatKeys {
    /// The repeat `name` of record `rt` at its top level, filled with the integer fields
    /// `given` (keys within an item).
    fn new(
        rt: &RecordType,
        record: &str,
        name: &str,
        given: &[&str],
    ) -> Result<RepeatKeys, SinkError> {
        let fail = |m: String| SinkError::Fatal(format!("record `{record}`: {m}"));
        let shape = crate::Shape::of(rt);
        let Some((single, item)) = shape.iter().find_map(|s| match s {
            crate::Shape::List {
                key, item, single, ..
            } if key == name => Some((*single, item)),
            _ => None,
        }) else {
            return Err(fail(format!(
                "no repeat `{name}` at the top level of the record"
            )));
        };
        let mut keys = Vec::new();
        let mut slots = Vec::new();
        for m in item {
            match m {
                crate::Shape::Field { key, slot }
                    if matches!(rt.slots[*slot as usize].kind, SlotKind::Int { .. }) =>
                {
                    keys.push(if single {
                        name.to_string()
                    } else {
                        key.clone()
                    });
                    slots.push(*slot as usize);
                }
                _ => {
                    return Err(fail(format!(
                        "the items of repeat `{name}` must be integer fields"
                    )))
                }
            }
        }
        let fields = keys
            .iter()
            .map(|k| given.iter().position(|g| g == k))
            .collect::<Vec<_>>();
        if let Some(g) = given.iter().find(|g| !keys.iter().any(|k| k == *g)) {
            return Err(fail(format!(
                "the items of repeat `{name}` have no field `{g}`"
            )));
        }
        Ok(RepeatKeys {
            key: name.to_string(),
            single,
            keys,
            slots,
            fields,
        })
    }
}

/// Whether slot `k` of `rt` is the length of a byte string.
fn is_len(rt: &RecordType, k: usize) -> bool {
    rt.slots.iter().any(|b| {
        matches!(&b.kind, SlotKind::Bytes { width: crate::dtd::Expr::Value(v) } if *v as usize == k)
    })
}

/// `fields` and, after them, the integer fields of the record that the mapping does not fill
/// and that take bytes (a format's patterns need not name every field of a shared record
/// type): they are written as 0, which `write` supplies.
fn with_unnamed_ints<'f>(
    schema: &'f Schema,
    rid: RecordId,
    fields: &[(&'f str, FieldType)],
) -> Vec<(&'f str, FieldType)> {
    let rt = schema.record(rid);
    let mut all = fields.to_vec();
    // A repeat's count is its number of items, and its items' fields are given per item.
    let counts: Vec<usize> = crate::Shape::of(rt)
        .iter()
        .filter_map(|s| match s {
            crate::Shape::List { count, .. } => Some(*count as usize),
            _ => None,
        })
        .collect();
    for (k, s) in rt.slots.iter().enumerate().skip(1) {
        let SlotKind::Int { .. } = s.kind else {
            continue;
        };
        if s.in_repeat || counts.contains(&k) {
            continue;
        }
        let named = fields.iter().any(|(n, _)| {
            WriterSink::slot_name(schema, rid, n).as_deref() == Some(s.name.as_str())
        });
        if !is_len(rt, k) && !named && !s.interp.is_zero_width() {
            all.push((s.name.as_str(), FieldType::Int));
        }
    }
    all
}

/// The integer fields declared `default` or `delta`, as (field index, slot id): the writer
/// switches their default, or restarts their delta chain, by metadata when a value needs it.
fn auto_switched(
    rt: &RecordType,
    fields: &[(&str, FieldType)],
    slots: &[Option<usize>],
) -> Vec<(usize, u16)> {
    let mut auto = Vec::new();
    for (i, ((_, ty), k)) in fields.iter().zip(slots).enumerate() {
        if let (FieldType::Int, Some(s)) = (ty, *k) {
            if matches!(rt.slots[s].interp, Interp::Default(_) | Interp::Delta(_)) {
                auto.push((i, s as u16));
            }
        }
    }
    auto
}

/// The integer fields stored as they are in fewer than 8 bytes, as (field index, slot id,
/// declared width, signed): a wider value widens them by metadata.
fn widened(
    rt: &RecordType,
    fields: &[(&str, FieldType)],
    slots: &[Option<usize>],
) -> Vec<(usize, u16, u8, bool)> {
    let mut widen = Vec::new();
    for (i, ((_, ty), k)) in fields.iter().zip(slots).enumerate() {
        let (FieldType::Int, Some(k)) = (ty, *k) else {
            continue;
        };
        let s = &rt.slots[k];
        if let SlotKind::Int { width } = s.kind {
            if s.interp == Interp::None && s.fixed.is_none() && !is_len(rt, k) && width < 8 {
                let signed = s.display == crate::dtd::Display::Signed;
                widen.push((i, k as u16, width, signed));
            }
        }
    }
    widen
}

/// The size of a record of `rt` with one byte string but for the string (tag and integer
/// widths), and the longest string its length fields can count.
fn sizes(schema: &Schema, rt: &RecordType) -> (u64, u64) {
    let mut fixed_size = schema.tag_width as u64;
    let mut max_len = u64::MAX;
    for (k, s) in rt.slots.iter().enumerate().skip(1) {
        if let SlotKind::Int { width } = s.kind {
            if !s.interp.is_zero_width() {
                fixed_size += width as u64;
            }
            if is_len(rt, k) && width < 8 {
                max_len = max_len.min(max_of(width));
            }
        }
    }
    (fixed_size, max_len)
}

/// The largest unsigned value of `width` bytes.
fn max_of(width: u8) -> u64 {
    if width >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * width as u32)) - 1
    }
}

/// The largest value (integers, offsets) or length (byte strings) the field in slot `k` holds.
fn limit(rt: &RecordType, k: Option<usize>) -> u64 {
    let Some(s) = k.map(|k| &rt.slots[k]) else {
        return u64::MAX;
    };
    if matches!(s.interp, Interp::Default(_) | Interp::Delta(_)) {
        return u64::MAX;
    }
    match &s.kind {
        SlotKind::Int { width } => max_of(*width),
        SlotKind::Bytes {
            width: crate::dtd::Expr::Value(len),
        } => match rt.slots.get(*len as usize).map(|l| &l.kind) {
            Some(SlotKind::Int { width }) => max_of(*width),
            _ => u64::MAX,
        },
        _ => u64::MAX,
    }
}

fn unrep(e: EncodeError) -> SinkError {
    match e.kind().code() {
        "mtf::encode::unrepresentable" | "mtf::encode::fixed_value" | "mtf::encode::length" => {
            SinkError::Unrepresentable(e.to_string())
        }
        _ => SinkError::Fatal(e.to_string()),
    }
}

impl Sink for WriterSink<'_> {
    fn section(&mut self, name: &str) -> Result<(), SinkError> {
        let id = Self::section_id(self.schema, name)
            .ok_or_else(|| SinkError::Fatal(format!("the DTD has no section `{name}`")))?;
        self.writer
            .section(id)
            .map_err(|e| SinkError::Fatal(e.to_string()))?;
        self.section = id;
        Ok(())
    }

    fn plan(
        &mut self,
        section: Option<&str>,
        record: &str,
        fields: &[(&str, FieldType)],
    ) -> Result<PlanId, SinkError> {
        self.plan_repeat(section, record, fields, None)
    }

    fn plan_repeat(
        &mut self,
        section: Option<&str>,
        record: &str,
        fields: &[(&str, FieldType)],
        repeat: Option<(&str, &[&str])>,
    ) -> Result<PlanId, SinkError> {
        let schema = self.schema;
        let rid = Self::record_id(schema, section, record)?;
        let rt = schema.record(rid);
        let given = fields.len();
        let fields = with_unnamed_ints(schema, rid, fields);
        let rep = match repeat {
            Some((name, item)) => Some(RepeatKeys::new(rt, record, name, item)?),
            None => None,
        };
        // The slot each mapping field fills (`None` where the record has no such field).
        let slots: Vec<Option<usize>> = fields
            .iter()
            .map(|(name, _)| {
                let sn = Self::slot_name(schema, rid, name).unwrap_or_default();
                rt.slots.iter().position(|s| s.name == sn)
            })
            .collect();
        let (template, range) = self.template(rid, record, &fields, rep.as_ref())?;
        let (fixed_size, max_len) = sizes(schema, rt);
        let widen = widened(rt, &fields, &slots);
        let item = match (&rep, range) {
            (Some(r), Some((start, len))) => {
                let n = repeat.map_or(0, |(_, f)| f.len());
                let mut limits = vec![u64::MAX; n];
                for (m, &k) in r.fields.iter().zip(&r.slots) {
                    if let Some(j) = m {
                        limits[*j] = limit(rt, Some(k));
                    }
                }
                let size = r
                    .slots
                    .iter()
                    .map(|&k| match rt.slots[k].kind {
                        SlotKind::Int { width } if !rt.slots[k].interp.is_zero_width() => {
                            width as u64
                        }
                        _ => 0,
                    })
                    .sum();
                Some(ItemPlan {
                    start,
                    len,
                    fields: n.max(1),
                    limits,
                    size,
                })
            }
            _ => None,
        };
        self.plans.push(RecordPlan {
            rid,
            template,
            since_wide: vec![NARROW_AFTER; widen.len()],
            auto: auto_switched(rt, &fields, &slots),
            widen,
            fixed_size,
            max_len,
            limits: slots.iter().map(|k| limit(rt, *k)).collect(),
            given,
            item,
        });
        Ok(self.plans.len() - 1)
    }

    fn write(&mut self, plan: PlanId, values: &[Value<'_>]) -> Result<(), SinkError> {
        let p = &self.plans[plan];
        // A `default` field whose value differs from the live default, or a `delta` field whose
        // step does not fit its width: a metadata record first (format.md §5.4) sets the default
        // to the value, or restarts the delta chain at the value (the record then stores 0).
        // The values given for the planned fields (the unnamed ones are 0), then the items'.
        let given = p.given;
        let value = |i: usize| match i < given {
            true => values.get(i).copied().unwrap_or(Value::Int(0)),
            false => Value::Int(0),
        };
        for &(i, slot) in &p.auto {
            if let Value::Int(v) = value(i) {
                let Some(ss) = self.writer.live(p.rid, slot) else {
                    continue;
                };
                let interp = match ss.interp {
                    Interp::Default(d) if d != v => Interp::Default(v),
                    Interp::Delta(_) if !fits_signed(v.wrapping_sub(ss.prev) as i64, ss.width) => {
                        Interp::Delta(v)
                    }
                    _ => continue,
                };
                let prop = MetaProperty::Interp(interp);
                self.writer.metadata(p.rid, slot, prop).map_err(unrep)?;
            }
        }
        // A value wider than its field's live width: a metadata record widens the field first;
        // after a run of values that fit the declared width, another narrows it back.
        let p = &mut self.plans[plan];
        for (j, &(i, slot, declared, signed)) in p.widen.iter().enumerate() {
            let Value::Int(v) = value(i) else { continue };
            let fits = if signed {
                fits_signed(v as i64, declared)
            } else {
                fits_unsigned(v, declared)
            };
            if fits && p.since_wide[j] > NARROW_AFTER {
                // The common case: a narrow value, the field at its declared width.
                continue;
            }
            let Some(ss) = self.writer.live(p.rid, slot) else {
                continue;
            };
            let need = if fits { declared } else { width_for(v, signed) };
            let to = if need > declared {
                p.since_wide[j] = 0;
                (need > ss.width).then_some(need)
            } else {
                p.since_wide[j] = p.since_wide[j].saturating_add(1);
                (ss.width != declared && p.since_wide[j] >= NARROW_AFTER).then_some(declared)
            };
            if let Some(w) = to {
                self.writer
                    .metadata(p.rid, slot, MetaProperty::Width(w))
                    .map_err(unrep)?;
            }
        }
        let p = &self.plans[plan];
        let items = values.get(given..).unwrap_or_default();
        let per = p.item.as_ref().map_or(1, |it| it.fields);
        let input = |s: &Slot, item: usize| match s {
            Slot::Const(c) => c.clone(),
            Slot::Field(i) => match value(*i) {
                Value::Int(v) => In::Int(v),
                Value::Offset(v) => In::Offset(v),
                Value::Bytes(b) => In::Bytes(b.to_vec()),
            },
            Slot::LenOf(i) => match value(*i) {
                Value::Bytes(b) => In::Int(b.len() as u64),
                _ => In::Int(0),
            },
            Slot::Count => In::Int((items.len() / per) as u64),
            Slot::Item(j) => match items.get(item * per + j) {
                Some(Value::Int(v)) => In::Int(*v),
                _ => In::Int(0),
            },
        };
        self.inputs.clear();
        let (start, len) = p
            .item
            .as_ref()
            .map_or((usize::MAX, 0), |it| (it.start, it.len));
        let mut k = 0;
        while k < p.template.len() {
            if k == start {
                for item in 0..items.len() / per {
                    for s in &p.template[start..start + len] {
                        self.inputs.push(input(s, item));
                    }
                }
                k += len;
                continue;
            }
            self.inputs.push(input(&p.template[k], 0));
            k += 1;
        }
        self.writer.record(p.rid, &self.inputs).map_err(unrep)
    }

    fn has_record(&self, record: &str) -> bool {
        self.schema.record_by_name(0, record).is_some()
    }

    fn record_size(&self, plan: PlanId, len: usize) -> Option<u64> {
        let p = &self.plans[plan];
        (len as u64 <= p.max_len).then_some(p.fixed_size + len as u64)
    }

    fn check(&self, plan: PlanId, values: &[Value<'_>]) -> Result<Option<u64>, SinkError> {
        let p = &self.plans[plan];
        let mut size = p.fixed_size;
        if let Some(it) = &p.item {
            // The declared widths count one item; the record has as many as given.
            let n = values.len().saturating_sub(p.given) / it.fields;
            size = size - it.size + n as u64 * it.size;
        }
        let mut wide = false;
        for (i, v) in values.iter().enumerate() {
            let limit = match (&p.item, i.checked_sub(p.given)) {
                (Some(it), Some(j)) => it.limits.get(j % it.fields).copied().unwrap_or(u64::MAX),
                _ => p.limits.get(i).copied().unwrap_or(u64::MAX),
            };
            let n = match v {
                Value::Int(x) | Value::Offset(x) => *x,
                Value::Bytes(b) => {
                    size += b.len() as u64;
                    b.len() as u64
                }
            };
            if n > limit {
                if i < p.given && p.widen.iter().any(|w| w.0 == i) {
                    // Written after a metadata record that widens the field: size unknown.
                    wide = true;
                    continue;
                }
                return Err(SinkError::Unrepresentable(format!(
                    "value {n} does not fit field {i} of its record"
                )));
            }
        }
        Ok((p.auto.is_empty() && !wide).then_some(size))
    }

    fn fixed_layout(&self, plan: PlanId) -> bool {
        self.plans[plan].auto.is_empty()
    }

    fn position(&self) -> u64 {
        self.writer.section_len()
    }
}
