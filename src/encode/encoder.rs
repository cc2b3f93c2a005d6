//! [`Encoder`]: turns interpreted field values into record bytes under the live metadata state.
//!
//! The decoder's mirror: the same compiled programs stepped by the same walker, the same
//! [`ScopeState`] rules, the same limits, so a rule is written once and the encoder never
//! produces a record the decoder refuses.

use crate::container::{fits_signed, fits_unsigned, truncate, ByteOrder, Class};
use crate::decode::ElementRef;
use crate::dtd::{Display, Interp, RecordId, RecordType, Schema, SlotId};
use crate::layout::arith::{self, Refused};
use crate::layout::{
    eval_width, Compiled, LiveSets, LiveUndo, MetaProperty, MetaRefused, Op, ScopeState, SlotState,
    Step, Walk, Wire, MAX_EMPTY_REPEAT, MAX_FIELDS_PER_RECORD,
};

use super::error::{EncodeError, EncodeErrorKind as K};

/// A value to write into one field occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum In {
    /// An interpreted integer value (modulo 2⁶⁴).
    Int(u64),
    /// An interpreted integer given as a negative number (two's complement in 64 bits); kept
    /// apart from `Int` only so that messages show it as written.
    Neg(i64),
    /// The bytes of a byte-string field.
    Bytes(Vec<u8>),
    /// The stored offset of a `sectionOffset` field.
    Offset(u64),
    /// The element index of a `sectionStride` field (checked against the cursor).
    Index(i64),
    /// Let the encoder derive the value: allowed where the state determines it (`default`,
    /// `stride`, `sectionStride`).
    Auto,
}

impl In {
    fn describe(&self) -> &'static str {
        match self {
            In::Int(_) | In::Neg(_) => "an integer",
            In::Bytes(_) => "a byte string",
            In::Offset(_) => "a section offset",
            In::Index(_) => "an element index",
            In::Auto => "no value",
        }
    }
}

/// [`ByteOrder::push_uint`] as a store of eight bytes cut back to `width` (0..=8), not a copy
/// of a variable length: the encoder's innermost step.
#[inline(always)]
fn push_uint(order: ByteOrder, value: u64, width: u8, out: &mut Vec<u8>) {
    let w = usize::from(width.min(8));
    if w == 0 {
        return;
    }
    let len = out.len();
    out.extend_from_slice(&match order {
        ByteOrder::Little => value.to_le_bytes(),
        ByteOrder::Big => (value << (8 * (8 - w))).to_be_bytes(),
    });
    out.truncate(len + w);
}

/// Encodes records for one trace.
pub(crate) struct Encoder<'s> {
    schema: &'s Schema,
    compiled: std::sync::Arc<Compiled>,
    pub(crate) wire: Wire,
    order: ByteOrder,
    class: Class,
    scope: ScopeState,
    last: Vec<u64>,
    walk: Walk,
    /// Live-set changes of the record being encoded, undone if it is refused.
    undo: Vec<LiveUndo>,
    /// Whether the trace uses extension `live/1` (its header must declare it).
    pub(crate) uses_live: bool,
    /// References written by the last record, for the writer to check.
    pub(crate) refs: Vec<(ElementRef, SlotId)>,
    /// What is left of the writer's reserve of field occurrences (half the reader's, docs/format.md
    /// §6.4, so that the order of the records never matters).
    reserve: u64,
    /// The state of the slots of the record being encoded, as it was before it.
    saved: Vec<SlotState>,
    /// Per record type whose program is integer fields only (no repeat, no byte string): its
    /// slots in order, encoded without the walker.
    flat: Vec<Option<Box<[SlotId]>>>,
    /// Per record type: its [`FastPlan`] under the current state (`Some(None)`: none can be
    /// made), made when first needed and dropped when a metadata record changes the type or a
    /// section starts.
    fast: Vec<Option<Option<FastPlan>>>,
}

/// How [`Encoder::fast_record`] encodes one field: what the slot's state allows and nothing
/// else to test.
#[derive(Debug, Clone, Copy, PartialEq)]
enum FastKind {
    /// `none`, displayed unsigned: the value, if it fits the width.
    Unsigned,
    /// `none`, displayed signed: the value, if it fits the width as a signed number.
    Signed,
    /// `default`: only the default, nothing stored but `width` zero bytes.
    Default(u64),
    /// `baseOffset`: the difference from the base, if it fits signed.
    Base(u64),
    /// `delta`: the difference from the previous value (the state at `at`), if it fits signed.
    Delta,
    /// `stride`: only the next value (the state at `at` plus `stride`).
    Stride(i64),
    /// A byte string of this many bytes.
    BytesConst(u64),
    /// A byte string as long as the value of the plan's field at this index.
    BytesOf(usize),
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct FastField {
    kind: FastKind,
    width: u8,
    /// The slot's state in the scope (for `delta` and `stride`).
    at: usize,
}

/// A record type of plain fields (integers and byte strings, no repeat) as the current state
/// encodes it: per field, its stored width and its interpretation's kind, resolved once.
// Design: `mtf pack` writes nearly every record of a dump through this plan: a loop of checks
// and stores over the values as u64s, with no `In` per value, no copy of the record's state
// (the few `delta`/`stride` states it advances are put back if a later field declines) and no
// interpretation `match` on the general rules. Where a value does not fit or anything else
// would need the general rules (a live set, a fixed value, a reference, a length expression),
// the plan declines, nothing is changed, and the caller encodes the record the general way,
// which reports exactly as before.
#[derive(Debug, Clone, PartialEq)]
struct FastPlan {
    fields: Box<[FastField]>,
    /// Fields whose state the plan advances (`delta`, `stride`).
    advancing: usize,
    /// `rt.slots.len()`, for the reserve of field occurrences.
    nslots: usize,
    /// The record's tag.
    tag: u64,
    /// What each record charges the reserve of field occurrences, where its size is the same
    /// for every record (no byte string).
    excess: Option<u64>,
}

/// At most this many fields of a plan advance a state (they are put back on a decline from a
/// buffer on the stack).
const FAST_ADVANCING: usize = 4;

impl<'s> Encoder<'s> {
    /// An encoder positioned in the global region.
    /// An encoder positioned in the global region, with the schema's programs compiled already
    /// (shared with the readers of the same schema).
    pub(crate) fn new(
        schema: &'s Schema,
        compiled: std::sync::Arc<Compiled>,
        order: ByteOrder,
        class: Class,
    ) -> Encoder<'s> {
        debug_assert_eq!(compiled.programs.len(), schema.records.len());
        let flat: Vec<Option<Box<[SlotId]>>> = compiled
            .programs
            .iter()
            .map(|p| {
                p.ops
                    .iter()
                    .map(|op| match op {
                        Op::Int(slot) => Some(*slot),
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        Encoder {
            schema,
            last: vec![0; compiled.max_slots],
            compiled,
            wire: Wire::new(schema),
            order,
            class,
            scope: ScopeState::new(schema, 0).for_writer(),
            walk: Walk::default(),
            undo: Vec::new(),
            uses_live: schema.uses_live(),
            refs: Vec::new(),
            reserve: crate::limits::SPARSE_RESERVE / 2,
            saved: Vec::new(),
            fast: vec![None; flat.len()],
            flat,
        }
    }

    pub(crate) fn schema(&self) -> &'s Schema {
        self.schema
    }

    pub(crate) fn compiled(&self) -> &std::sync::Arc<Compiled> {
        &self.compiled
    }

    /// Section id of the current scope (0 = global region).
    pub(crate) fn section(&self) -> u8 {
        self.scope.section
    }

    /// The live state of one slot of a record type in the current scope.
    pub(crate) fn live(&self, record: RecordId, slot: SlotId) -> Option<crate::layout::SlotState> {
        let base = self.scope.base(record)?;
        self.scope.slots.get(base + slot as usize).copied()
    }

    /// What a `live` field of set `set` stores for `value` in the current scope: its position,
    /// or the set's length plus the value (`None` if that passes 2⁶⁴).
    pub(crate) fn live_stored(&self, set: u8, value: u64) -> Option<u64> {
        let sets = &self.scope.sets;
        sets.position(set, value)
            .or_else(|| (sets.len(set) as u64).checked_add(value))
    }

    /// A record type by name in the current scope.
    pub(crate) fn lookup(&self, name: &str) -> Option<RecordId> {
        self.schema.record_by_name(self.scope.section, name)
    }

    fn push(&self, v: u64, width: u8, out: &mut Vec<u8>) {
        push_uint(self.order, v, width, out);
    }

    /// Open a section: encode its `section` record into `out` and reset the state.
    pub(crate) fn begin_section(&mut self, id: u8, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        if id == 0 || self.schema.scope_for(id).is_none() {
            return Err(EncodeError::new(K::UndeclaredSection {
                section: id.to_string(),
            }));
        }
        self.scope = ScopeState::new(self.schema, id).for_writer();
        self.fast.iter_mut().for_each(|p| *p = None);
        out.clear();
        let tag = self.schema.record(self.wire.section).tag;
        self.push(tag, self.wire.tag, out);
        self.push(id as u64, self.wire.section_number, out);
        Ok(())
    }

    /// Encode a metadata record changing `slot` of `record`, and apply it.
    pub(crate) fn metadata(
        &mut self,
        record: RecordId,
        slot: SlotId,
        prop: MetaProperty,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let rt = self.schema.record(record);
        let err = |m: MetaRefused| {
            EncodeError::at(
                &rt.name,
                rt.slots.get(slot as usize).map(|s| s.name.as_str()),
                K::Metadata(m),
            )
        };
        let [rw, fw, pw] = self.wire.meta_fields;
        if !fits_unsigned(slot as u64, fw) {
            return Err(err(MetaRefused::SlotTooLarge {
                record: rt.name.clone(),
                slot,
            }));
        }
        let (words, n) = prop.words();
        let word = self.class.word_size() as u8;
        for (i, &w) in words.iter().take(n).enumerate() {
            let signed = prop.word_is_signed(i);
            let ok = if signed {
                fits_signed(w as i64, word)
            } else {
                fits_unsigned(w, word)
            };
            if !ok {
                return Err(err(MetaRefused::WordTooWide {
                    value: if signed {
                        (w as i64).to_string()
                    } else {
                        w.to_string()
                    },
                    bytes: word,
                }));
            }
        }
        self.scope
            .apply(self.schema, record, slot, prop)
            .map_err(err)?;
        self.patch_fast_plan(record, slot);
        self.uses_live |= prop.needs_live();
        out.clear();
        let meta_tag = self.schema.record(self.wire.metadata).tag;
        self.push(meta_tag, self.wire.tag, out);
        self.push(rt.tag, rw, out);
        self.push(slot as u64, fw, out);
        self.push(prop.code() as u64, pw, out);
        for &w in words.iter().take(n) {
            self.push(truncate(w, word), word, out);
        }
        Ok(())
    }

    /// Encode one record of type `record` from its field values in decoding order (repeats
    /// expanded), without the tag. Advances the live state; a refused record leaves it as it
    /// was.
    pub(crate) fn record(
        &mut self,
        record: RecordId,
        values: &[In],
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let rt = self.schema.record(record);
        // The two built-ins with their own methods: a section opens a scope, a metadata record
        // changes the state.
        let builtin = if record == self.wire.section {
            Some("section")
        } else if record == self.wire.metadata {
            Some("metadata")
        } else {
            None
        };
        if let Some(name) = builtin {
            return Err(EncodeError::at(
                &rt.name,
                None,
                K::Builtin { name, method: name },
            ));
        }
        let Some(base) = self.scope.base(record) else {
            return Err(EncodeError::new(K::UnknownRecord {
                name: rt.name.clone(),
            }));
        };
        // Work on a copy of the state so a refused record leaves the encoder unchanged.
        let n = rt.slots.len();
        self.saved.clear();
        self.saved
            .extend_from_slice(&self.scope.slots[base..base + n]);
        self.scope.sets.compact();
        self.undo.clear();
        self.begin(rt.tag, out);
        let r = if self.flat[record as usize].is_some() {
            self.flat_record(rt, record, base, values, out)
        } else {
            self.record_inner(rt, record, base, values, out)
        };
        if r.is_err() {
            self.scope.slots[base..base + n].copy_from_slice(&self.saved);
            self.scope.sets.undo(&mut self.undo);
        }
        r
    }

    /// [`Encoder::record_inner`] for a record of integer fields only: the walker would step
    /// through its fields in order, once each, with no item to bound.
    fn flat_record(
        &mut self,
        rt: &RecordType,
        record: RecordId,
        base: usize,
        values: &[In],
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let slots = std::mem::take(&mut self.flat[record as usize]).unwrap_or_default();
        let mut inputs = values.iter();
        let mut r = Ok(());
        for &slot in &slots {
            let input = inputs.next().unwrap_or(&In::Auto);
            r = self.int_field(rt, base, slot, input, out);
            if r.is_err() {
                break;
            }
        }
        let nfields = slots.len();
        self.flat[record as usize] = Some(slots);
        r?;
        self.end(rt, inputs.next().is_some(), values.len(), nfields + 1, out)
    }

    /// The plan's field for integer slot `slot` of `rt` (its state at `at`) under the current
    /// state, if the plan can take it.
    #[inline]
    fn fast_int_field(&self, rt: &RecordType, slot: SlotId, at: usize) -> Option<FastField> {
        let def = rt.slots.get(slot as usize)?;
        let st = self.scope.slots.get(at)?;
        if def.fixed.is_some() || st.liveset != 0 {
            return None;
        }
        let kind = match st.interp {
            Interp::None if def.display == Display::Signed => FastKind::Signed,
            Interp::None => FastKind::Unsigned,
            Interp::Default(d) => FastKind::Default(d),
            Interp::BaseOffset(b) => FastKind::Base(b),
            Interp::Delta(_) => FastKind::Delta,
            Interp::Stride { stride, .. } => FastKind::Stride(stride),
            _ => return None,
        };
        Some(FastField {
            kind,
            width: st.width,
            at,
        })
    }

    /// The plan made of `fields` (in a record of `nslots` slots and tag `tag`), or `None`
    /// where more of them advance a state than a plan puts back.
    fn fast_plan_of(&self, fields: Box<[FastField]>, nslots: usize, tag: u64) -> Option<FastPlan> {
        let advancing = fields
            .iter()
            .filter(|f| matches!(f.kind, FastKind::Delta | FastKind::Stride(_)))
            .count();
        let strings = fields
            .iter()
            .any(|f| matches!(f.kind, FastKind::BytesConst(_) | FastKind::BytesOf(_)));
        let bytes =
            fields.iter().map(|f| u64::from(f.width)).sum::<u64>() + u64::from(self.wire.tag);
        let excess =
            (fields.len() as u64 + 1).saturating_sub(crate::limits::sparse_limit(nslots, bytes));
        (advancing <= FAST_ADVANCING).then_some(FastPlan {
            fields,
            advancing,
            nslots,
            tag,
            excess: (!strings).then_some(excess),
        })
    }

    /// After a metadata record changed `slot` of `record`: its plan with that slot's field
    /// made again under the new state, rather than the plan dropped and made again whole.
    // Design: a metadata-heavy trace changes a field every few records; a plan made again from
    // the program each time (an allocation and a loop over every field) was a good part of
    // what such a line cost. Only the changed slot's state differs (`ScopeState::apply`
    // changes that slot alone), so only its field is made again, with the same function that
    // makes every field; the debug builds check the result against the plan made whole.
    fn patch_fast_plan(&mut self, record: RecordId, slot: SlotId) {
        let r = record as usize;
        let (Some(Some(Some(plan))), Some(base)) = (self.fast.get(r), self.scope.base(record))
        else {
            if let Some(p) = self.fast.get_mut(r) {
                *p = None;
            }
            return;
        };
        let rt = self.schema.record(record);
        let at = base + slot as usize;
        let mut fields = plan.fields.clone();
        let (nslots, tag) = (plan.nslots, plan.tag);
        let mut ok = true;
        for f in fields.iter_mut() {
            if f.at == at && !matches!(f.kind, FastKind::BytesConst(_) | FastKind::BytesOf(_)) {
                match self.fast_int_field(rt, slot, at) {
                    Some(g) => *f = g,
                    None => ok = false,
                }
            }
        }
        let plan = if ok {
            self.fast_plan_of(fields, nslots, tag)
        } else {
            None
        };
        debug_assert_eq!(plan, self.make_fast_plan(record), "{}", rt.name);
        self.fast[r] = Some(plan);
    }

    /// The plan of `record` under the current state, if one can be made.
    fn make_fast_plan(&self, record: RecordId) -> Option<FastPlan> {
        if record == self.wire.section || record == self.wire.metadata {
            return None;
        }
        let base = self.scope.base(record)?;
        let rt = self.schema.record(record);
        let prog = self.compiled.program(record);
        let mut fields = Vec::with_capacity(prog.ops.len());
        for op in &prog.ops {
            let field = match op {
                Op::Int(slot) => self.fast_int_field(rt, *slot, base + *slot as usize)?,
                Op::Bytes(_, expr) => {
                    let kind = match expr {
                        crate::dtd::Expr::Const(c) => FastKind::BytesConst(*c),
                        // The length is an earlier field of this record (an integer the plan
                        // takes): its value, which every kind above stores as given.
                        crate::dtd::Expr::Value(s) => {
                            let i = prog.ops[..fields.len()]
                                .iter()
                                .position(|op| matches!(op, Op::Int(t) if t == s))?;
                            FastKind::BytesOf(i)
                        }
                        _ => return None,
                    };
                    FastField {
                        kind,
                        width: 0,
                        at: 0,
                    }
                }
                _ => return None,
            };
            fields.push(field);
        }
        self.fast_plan_of(fields.into(), rt.slots.len(), rt.tag)
    }

    /// Encode a record of type `record` through its [`FastPlan`]: `values` in layout order,
    /// one per field, an integer as its value modulo 2⁶⁴ and a byte string as
    /// `start << 32 | len`, its bytes `line[start..start + len]`. `false` where there is no
    /// plan or a value needs the general rules: then nothing changed and `out` is to be
    /// ignored; encode the record with [`Encoder::record`].
    #[inline]
    pub(crate) fn fast_record(
        &mut self,
        record: RecordId,
        values: &[u64],
        line: &[u8],
        out: &mut Vec<u8>,
    ) -> bool {
        let r = record as usize;
        if self.fast.get(r).is_some_and(Option::is_none) {
            let plan = self.make_fast_plan(record);
            self.fast[r] = Some(plan);
        }
        let Some(Some(Some(plan))) = self.fast.get(r) else {
            return false;
        };
        if values.len() != plan.fields.len() {
            return false;
        }
        out.clear();
        push_uint(self.order, plan.tag, self.wire.tag, out);
        let mut put_back = [(0usize, 0u64); FAST_ADVANCING];
        let mut advanced = 0;
        let slots = &mut self.scope.slots;
        let mut ok = true;
        for (f, &v) in plan.fields.iter().zip(values) {
            let raw = match f.kind {
                FastKind::Unsigned if fits_unsigned(v, f.width) => v,
                FastKind::Signed if fits_signed(v as i64, f.width) => truncate(v, f.width),
                FastKind::Default(d) if v == d => 0,
                FastKind::Base(b) => match diff(v, b, f.width) {
                    Some(raw) => raw,
                    None => {
                        ok = false;
                        break;
                    }
                },
                FastKind::Delta | FastKind::Stride(_) => {
                    let st = &mut slots[f.at];
                    let raw = match f.kind {
                        FastKind::Delta => diff(v, st.prev, f.width),
                        _ => (v == st.prev.wrapping_add(st_stride(f.kind))).then_some(0),
                    };
                    let Some(raw) = raw else {
                        ok = false;
                        break;
                    };
                    put_back[advanced] = (f.at, st.prev);
                    advanced += 1;
                    st.prev = v;
                    raw
                }
                FastKind::BytesConst(_) | FastKind::BytesOf(_) => {
                    let (start, len) = ((v >> 32) as usize, v & 0xffff_ffff);
                    let want = match f.kind {
                        FastKind::BytesConst(c) => c,
                        FastKind::BytesOf(i) => values[i],
                        _ => u64::MAX,
                    };
                    match line.get(start..start + len as usize) {
                        Some(b) if len == want => out.extend_from_slice(b),
                        _ => {
                            ok = false;
                            break;
                        }
                    }
                    continue;
                }
                _ => {
                    ok = false;
                    break;
                }
            };
            push_uint(self.order, raw, f.width, out);
        }
        if !ok {
            for &(at, prev) in &put_back[..advanced] {
                slots[at].prev = prev;
            }
            return false;
        }
        debug_assert!(advanced <= plan.advancing);
        // As `end`: the reserve of field occurrences (docs/format.md §6.4).
        let excess = plan.excess.unwrap_or_else(|| {
            let occurrences = plan.fields.len() as u64 + 1;
            occurrences.saturating_sub(crate::limits::sparse_limit(plan.nslots, out.len() as u64))
        });
        self.reserve = self.reserve.saturating_sub(excess);
        self.refs.clear();
        self.scope.sets.compact();
        true
    }

    /// The start of every record: its tag, the previous values' tag slot, no references yet.
    fn begin(&mut self, tag: u64, out: &mut Vec<u8>) {
        out.clear();
        self.refs.clear();
        self.push(tag, self.wire.tag, out);
        self.last[0] = tag;
    }

    /// The end of every record: no value left over, and the trace's reserve of field
    /// occurrences (docs/format.md §6.4) charged with what `occurrences` exceeds of the record's
    /// own allowance.
    fn end(
        &mut self,
        rt: &crate::dtd::RecordType,
        left_over: bool,
        given: usize,
        occurrences: usize,
        out: &[u8],
    ) -> Result<(), EncodeError> {
        if left_over {
            return Err(EncodeError::at(&rt.name, None, K::TooManyValues { given }));
        }
        let excess = (occurrences as u64).saturating_sub(crate::limits::sparse_limit(
            rt.slots.len(),
            out.len() as u64,
        ));
        self.reserve = self.reserve.saturating_sub(excess);
        Ok(())
    }

    fn record_inner(
        &mut self,
        rt: &RecordType,
        record: RecordId,
        base: usize,
        values: &[In],
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let compiled = std::sync::Arc::clone(&self.compiled);
        let prog = compiled.program(record);
        // As the decoder: a field that has not occurred in this record has the value 0.
        if prog.reset_values {
            self.last[1..prog.nslots].fill(0);
        }
        let mut inputs = values.iter();
        let mut occurrences = 1usize;
        let fail =
            |slot: SlotId, k: K| EncodeError::at(&rt.name, Some(&rt.slots[slot as usize].name), k);
        self.walk.reset();
        loop {
            let last = &self.last;
            let Some(step) = self.walk.next(prog, |s, _| last[s as usize]) else {
                break;
            };
            match step {
                Step::Int { slot, .. } => {
                    occurrences += 1;
                    let input = inputs.next().unwrap_or(&In::Auto);
                    self.int_field(rt, base, slot, input, out)?;
                }
                Step::Bytes { slot, width, .. } => {
                    occurrences += 1;
                    let input = inputs.next().unwrap_or(&In::Auto);
                    let In::Bytes(b) = input else {
                        return Err(fail(
                            slot,
                            K::WrongKind {
                                given: input.describe(),
                                interp: "byte string",
                            },
                        ));
                    };
                    let len =
                        eval_width(width, &self.last).map_err(|e| fail(slot, K::BadWidth(e)))?;
                    if len != b.len() as u64 {
                        return Err(fail(
                            slot,
                            K::LengthMismatch {
                                given: b.len() as u64,
                                expected: len,
                            },
                        ));
                    }
                    out.extend_from_slice(b);
                    self.last[slot as usize] = len;
                }
                Step::Enter { count, n, pc, .. } => {
                    // The reader's limit (docs/format.md §6.4): an item that may occupy no bytes
                    // repeats at most MAX_EMPTY_REPEAT times. (An item of at least one byte
                    // cannot break the other half of the rule: its bytes are written.)
                    if n > MAX_EMPTY_REPEAT {
                        let scope = &self.scope;
                        let min = prog.item_min_size(pc, |s| scope.slots[base + s as usize].width);
                        if min == 0 {
                            return Err(fail(
                                count,
                                K::RepeatTooLong {
                                    count: n,
                                    limit: MAX_EMPTY_REPEAT,
                                },
                            ));
                        }
                    }
                }
                Step::ItemEnd { .. } => {
                    // The reader's bound on items that take no bytes (docs/format.md §6.4).
                    let bytes = out.len() as u64;
                    let limit = crate::limits::sparse_limit(prog.nslots, bytes)
                        .saturating_add(self.reserve);
                    if occurrences as u64 > limit {
                        return Err(EncodeError::at(
                            &rt.name,
                            None,
                            K::SparseRecord {
                                fields: occurrences as u64,
                                bytes,
                                limit,
                            },
                        ));
                    }
                    if occurrences > MAX_FIELDS_PER_RECORD {
                        return Err(EncodeError::at(
                            &rt.name,
                            None,
                            K::RecordTooLarge {
                                limit: MAX_FIELDS_PER_RECORD,
                            },
                        ));
                    }
                }
                Step::ItemStart { .. } | Step::Leave { .. } => {}
                Step::Run { .. } => unreachable!("`next` yields fields one by one"),
            }
        }
        self.end(rt, inputs.next().is_some(), values.len(), occurrences, out)
    }
    /// Encode one occurrence of integer field `slot` (at `base` in the scope) from `input`.
    #[inline]
    fn int_field(
        &mut self,
        rt: &RecordType,
        base: usize,
        slot: SlotId,
        input: &In,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let def = &rt.slots[slot as usize];
        let fail = |k: K| EncodeError::at(&rt.name, Some(&def.name), k);
        let (raw, number) = self
            .stored(def, base + slot as usize, slot, input)
            .map_err(fail)?;
        if let Some(f) = def.fixed {
            if number != f {
                return Err(fail(K::FixedValue {
                    value: number,
                    fixed: f,
                }));
            }
        }
        let st = &self.scope.slots[base + slot as usize];
        let w = st.width;
        if st.liveset != 0 {
            let set = st.liveset;
            self.scope.sets.insert(set, number, Some(&mut self.undo));
        }
        push_uint(self.order, raw, w, out);
        self.last[slot as usize] = number;
        Ok(())
    }

    /// What field `def` (state `at` in the scope) stores for `input`, and the number it
    /// stands for: (stored, value).
    #[inline]
    fn stored(
        &mut self,
        def: &crate::dtd::Slot,
        at: usize,
        slot: SlotId,
        input: &In,
    ) -> Result<(u64, u64), K> {
        let st = &mut self.scope.slots[at];
        let int = match input {
            In::Int(v) => Some(*v),
            In::Neg(v) => Some(*v as u64),
            _ => None,
        };
        match (st.interp, int, input) {
            (
                Interp::None
                | Interp::Default(_)
                | Interp::BaseOffset(_)
                | Interp::Delta(_)
                | Interp::Stride { .. },
                _,
                In::Auto | In::Int(_) | In::Neg(_),
            ) if int.is_some() || st.interp.is_zero_width() => arithmetic(st, def, int, input),
            (Interp::SectionOffset(section), _, In::Offset(o)) => {
                if !fits_unsigned(*o, st.width) {
                    return Err(K::OffsetDoesNotFit {
                        offset: *o,
                        width: st.width,
                    });
                }
                let offset = *o;
                self.refs
                    .push((ElementRef::Offset { section, offset }, slot));
                Ok((offset, offset))
            }
            // An integer is the index the field carries (a count computed from its list,
            // docs/text-format.md): it must be the cursor, as an index must.
            (
                Interp::SectionStride { section, stride },
                _,
                In::Auto | In::Index(_) | In::Int(_) | In::Neg(_),
            ) => {
                let index = st.cursor;
                let given = match input {
                    In::Index(i) => Some(*i),
                    _ => int.map(|v| v as i64),
                };
                if let Some(i) = given.filter(|&i| i != index) {
                    return Err(K::NotCursor {
                        index: i,
                        expected: index,
                    });
                }
                st.cursor = st.cursor.wrapping_add(stride);
                self.refs.push((ElementRef::Index { section, index }, slot));
                Ok((0, index as u64))
            }
            (Interp::Live(set), Some(v), _) => {
                let w = st.width;
                live(&mut self.scope.sets, &mut self.undo, set, v, w)
            }
            (interp, _, In::Auto) => Err(K::Missing {
                interp: interp.keyword(),
            }),
            (interp, _, other) => Err(K::WrongKind {
                given: other.describe(),
                interp: interp.keyword(),
            }),
        }
    }
}

/// The low `width` bytes of `value - reference`, if the difference fits signed (as
/// `arith::encode` stores a `delta` or `baseOffset` field).
#[inline(always)]
fn diff(value: u64, reference: u64, width: u8) -> Option<u64> {
    let d = value.wrapping_sub(reference);
    fits_signed(d as i64, width).then(|| truncate(d, width))
}

/// The stride of a [`FastKind::Stride`].
#[inline(always)]
fn st_stride(kind: FastKind) -> u64 {
    match kind {
        FastKind::Stride(s) => s as u64,
        _ => 0,
    }
}

/// The integer interpretations: their arithmetic is shared with the decoder
/// (layout/arith.rs); only the messages are worded here.
fn arithmetic(
    st: &mut SlotState,
    def: &crate::dtd::Slot,
    int: Option<u64>,
    input: &In,
) -> Result<(u64, u64), K> {
    let signed = def.display == Display::Signed;
    let v = int.unwrap_or(0);
    let w = st.width;
    let shown = || match input {
        In::Neg(n) => n.to_string(),
        _ if signed => (v as i64).to_string(),
        _ => v.to_string(),
    };
    arith::encode(st, int, signed).map_err(|refused| match refused {
        Refused::DoesNotFit => K::DoesNotFit {
            value: shown(),
            width: w,
        },
        Refused::NotDefault { default } => K::NotDefault { value: v, default },
        Refused::DiffDoesNotFit {
            diff,
            reference,
            from,
        } => K::DiffDoesNotFit {
            value: v,
            diff,
            from,
            reference,
            width: w,
        },
        Refused::NotStride { expected } => K::NotStride { value: v, expected },
        Refused::NotAnInteger => K::Missing {
            interp: st.interp.keyword(),
        },
    })
}

/// A value of a field read through live set `set`: its position in the set, or else the set's
/// length plus the value, in `width` bytes; a value found is taken out of the set (`undo`
/// records it).
fn live(
    sets: &mut LiveSets,
    undo: &mut Vec<LiveUndo>,
    set: u8,
    v: u64,
    width: u8,
) -> Result<(u64, u64), K> {
    let len = sets.len(set) as u64;
    let pos = sets.position(set, v);
    let Some(u) = pos.or_else(|| len.checked_add(v)) else {
        return Err(K::NotLive {
            value: v,
            set,
            len: len as usize,
        });
    };
    if !fits_unsigned(u, width) {
        return Err(K::DoesNotFit {
            value: match pos {
                Some(p) => format!("{v} (position {p} in live set {set})"),
                None => format!("{v} (not in live set {set}: stored as {len} + {v})"),
            },
            width,
        });
    }
    if let Some(p) = pos {
        sets.take(set, p, Some(undo));
    }
    Ok((u, v))
}
