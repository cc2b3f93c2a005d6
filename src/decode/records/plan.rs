//! The decoder's fast path: records of a fixed layout decoded from a [`DecodePlan`].

// Design: a record type whose fields are all integers (no repeat, no byte string) with an
// arithmetic interpretation, no live set and no fixed value has the same layout for every record
// until metadata changes one of its fields: its [`DecodePlan`] lists each field's width and place in
// the record, so such a record is checked for length once and decoded in one straight loop,
// without the walker or a bounds check per field. The plan is made when the record type first
// occurs in a scope and made again only after a metadata record changes that type (or a new
// scope starts); any other record type, and any record too short for its plan, takes the general
// path, which reports exactly where it fails. Both paths share the interpretations' arithmetic
// (`layout/arith.rs`), so they cannot disagree on a value.
//
// Design: a record type whose only other fields are byte strings of a constant length or of
// the length an earlier plain field of the same record holds (`label : (len, data)` with
// `data.width = len.value`, the shape of the paper's labels and names) is laid out by its
// plan too (`PlanState::Var`): its fields fall in segments, each a run of integers at known
// places ended by a byte string, and the place of each segment is found by one pass over the
// strings that reads only their length fields (`var_layout`); a record that does not fit where
// it stands goes to the general path, which reports where it fails. At most `MAX_STRINGS`
// strings (more stay with the walker), so the places live on the stack. Nothing in a byte string can be invalid but its length, so
// `Records::scan` steps over these records too. A length field must be read as it lies
// (`none`, unsigned, or a `default`): one with a state (`delta`) would be advanced by the pass
// that only measures the record, so such a type stays with the walker.
//
// Design: a `sectionOffset` field (a reference into a table, docs/format.md §8: mtrace's and
// heaptrack's callers, the names of ET3, JVM and TPTP traces) is stored as it lies, so a type
// with such fields has a plan too (`PlanState::Refs`, laid out as a `Var` plan, with or without
// byte strings). A reference can be invalid (no element starts at its offset), so its records
// are the only planned ones with a problem other than their length: the plan's decode checks
// each reference as the walker does (`check_plan_refs`, the same `check_ref`), and
// `Records::scan` checks them before it steps over a record and stops before one that fails
// (the general path then reports it). Kept apart from `Var`, so that the records without
// references carry no test for them. `sectionStride` (a cursor, and an index checked against
// the count) stays with the walker.

use crate::container::ByteOrder;
use crate::dtd::{Display, Expr, Interp, RecordId, SlotId};
use crate::layout::arith as interp;
use crate::layout::{Op, SlotState};

use super::super::reader::Reader;
use super::super::value::{ElementRef, FieldValue, Val};
use super::Decoder;

/// The 8 bytes at `at` as they lie in memory (the caller checked that they exist).
#[inline(always)]
fn load8(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..at + 8) {
        Some(b) => u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])),
        None => 0,
    }
}

/// One field of a record type whose layout is fixed under the current metadata.
#[derive(Debug, Clone, Copy)]
pub(super) struct FixedField {
    pub(super) slot: SlotId,
    pub(super) width: u8,
    /// Offset of its bytes from the start of its segment (in a `Fixed` plan, from the end of
    /// the tag).
    pub(super) at: u32,
    /// Its segment (0 in a `Fixed` plan): the byte strings before it.
    pub(super) seg: u8,
    /// Index of its state in the scope's slots (`delta` and `stride` advance it).
    pub(super) state: u32,
    pub(super) kind: FixedKind,
}

/// The interpretation of a fixed field, resolved when the plan is made.
#[derive(Debug, Clone, Copy)]
pub(super) enum FixedKind {
    /// `none`, shown unsigned: the stored value.
    Plain,
    /// `default v`: nothing stored, always `v`.
    Const(u64),
    /// Anything else: through `layout::arith::decode` with the slot's state.
    Interp { signed: bool },
    /// A byte string (only in a [`PlanState::Var`] plan; its length is that of its part).
    Bytes,
    /// `sectionOffset section`: the stored value, a byte offset into the section's content,
    /// which must be the start of one of its elements (checked, docs/format.md §8).
    Ref { section: u8 },
}

/// The length of a byte string of a [`PlanState::Var`] plan.
#[derive(Debug, Clone, Copy)]
pub(super) enum BytesLen {
    /// Always this many bytes.
    Const(u64),
    /// The value of the plan's field of this index, an earlier `Plain` or `Const` field.
    Field(u32),
}

/// Most byte strings of a record type laid out by a [`PlanState::Var`] plan.
pub(super) const MAX_STRINGS: usize = 4;

/// One byte string of a [`PlanState::Var`] plan: it ends a segment.
#[derive(Debug, Clone, Copy)]
pub(super) struct VarPart {
    /// Bytes of the segment's integers, before the string.
    pub(super) fixed: u64,
    /// The string's length.
    pub(super) len: BytesLen,
}

/// Where the segments of a record of a [`PlanState::Var`] plan start after its tag, and its
/// length after its tag.
#[derive(Debug, Clone, Copy)]
pub(super) struct Places {
    pub(super) starts: [u64; MAX_STRINGS + 1],
    pub(super) len: u64,
}

impl Places {
    /// Where `f` starts after the tag.
    #[inline(always)]
    pub(super) fn of(&self, f: &FixedField) -> u64 {
        self.starts[f.seg as usize] + f.at as u64
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum PlanState {
    /// Not known under the current metadata: to be made when the record type next occurs.
    #[default]
    Stale,
    /// Decoded by the walker.
    Walk,
    /// Decoded from `fields`.
    Fixed,
    /// Decoded from `fields`, which hold byte strings: each field's place is found by
    /// [`var_layout`] first.
    Var,
    /// As `Var` (there may be no byte string), and `refs` holds references, which are checked.
    Refs,
}

impl PlanState {
    /// Whether records are decoded from the plan's fields.
    #[inline(always)]
    pub(super) fn planned(self) -> bool {
        matches!(self, PlanState::Fixed | PlanState::Var | PlanState::Refs)
    }
}

/// How a record type is decoded under the current metadata (see the design note above).
#[derive(Debug, Default)]
pub(super) struct DecodePlan {
    pub(super) state: PlanState,
    /// Bytes after the tag (for a `Var` plan, those of its last segment).
    pub(super) len: u64,
    pub(super) fields: Vec<FixedField>,
    /// The fields whose state advances (`delta`, `stride`): what [`Records::scan`] reads.
    pub(super) advance: Vec<FixedField>,
    /// The `sectionOffset` fields, whose references are checked: what [`Records::scan`]
    /// checks before it steps over a record.
    pub(super) refs: Vec<FixedField>,
    /// The byte strings of a `Var` plan, in order.
    pub(super) parts: Vec<VarPart>,
    /// Which making of a plan this is, unique within a process (0: never made): what a
    /// [`super::ScanTimes`] resolved against this plan stays true for.
    pub(super) made: u64,
    /// How a timed scan reads the time of this plan's records (`Records::scan_timed`): found
    /// by the scan the first time it steps over one, forgotten whenever the plan is made or
    /// patched.
    pub(super) clock: PlanClock,
}

/// What a timed scan found of the time of a plan's records (see `scan.rs`, `ScanTimes`).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct PlanClock {
    pub(super) kind: ClockKind,
    /// With [`ClockKind::Simple`]: the state whose value is the record's time after the
    /// record (`u32::MAX`: none), and its scale (0: the record has no time).
    pub(super) state: u32,
    pub(super) scale: u64,
    /// A `Simple` clock made of a `default` field's value, noted once when it was made (see
    /// `plan_clock`): a metadata record that changes a default makes it again (`patch_plan`).
    pub(super) constant: bool,
}

/// How a timed scan reads a plan's records' time.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum ClockKind {
    /// Not found yet under this plan.
    #[default]
    Unknown,
    /// No time, or one `delta`/`stride` field whose state the scan advances: a state's value
    /// times a scale ([`PlanClock`]), read without a branch.
    Simple,
    /// Any other: read field by field (`ScanTimes`).
    Fields,
}

/// The plans made so far in this process (each plan's [`DecodePlan::made`]).
static PLANS_MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A number for a plan made or changed (never 0).
fn next_made() -> u64 {
    PLANS_MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
}

/// The places of a record of the [`PlanState::Var`] plan `plan` from `bytes` (its bytes after
/// its tag); `None` if its fields do not fit in `avail` bytes (the general path then says where
/// it fails). Only the length fields are read.
#[inline(always)]
pub(super) fn var_layout(
    plan: &DecodePlan,
    bytes: &[u8],
    order: ByteOrder,
    avail: u64,
) -> Option<Places> {
    let mut starts = [0u64; MAX_STRINGS + 1];
    let mut off = 0u64;
    for (k, p) in plan.parts.iter().enumerate() {
        off = off.checked_add(p.fixed)?;
        if off > avail {
            return None;
        }
        let n = match p.len {
            BytesLen::Const(c) => c,
            BytesLen::Field(j) => {
                let src = plan.fields.get(j as usize)?;
                match src.kind {
                    FixedKind::Const(v) => v,
                    _ => {
                        // An earlier field, found to fit: its bytes are there.
                        let from = starts[src.seg as usize] + src.at as u64;
                        order.read_uint(bytes.get(from as usize..)?, src.width as usize)
                    }
                }
            }
        };
        off = off.checked_add(n)?;
        if off > avail {
            return None;
        }
        *starts.get_mut(k + 1)? = off;
    }
    off = off.checked_add(plan.len)?;
    (off <= avail).then_some(Places { starts, len: off })
}

/// How a field of `def` in state `st` is decoded by a plan, and whether its state advances
/// (`delta`, `stride`); `None` if it cannot be (it takes the general path).
#[inline]
fn fixed_kind(def: &crate::dtd::Slot, st: &SlotState) -> Option<(FixedKind, bool)> {
    let planned = matches!(
        st.interp,
        Interp::None
            | Interp::Default(_)
            | Interp::BaseOffset(_)
            | Interp::Delta(_)
            | Interp::Stride { .. }
            | Interp::SectionOffset(_)
    );
    if !planned || st.liveset != 0 || def.fixed.is_some() {
        return None;
    }
    let signed = def.display == Display::Signed;
    let kind = match st.interp {
        Interp::None if !signed => FixedKind::Plain,
        Interp::Default(v) => FixedKind::Const(v),
        Interp::SectionOffset(section) => FixedKind::Ref { section },
        _ => FixedKind::Interp { signed },
    };
    let advances = matches!(st.interp, Interp::Delta(_) | Interp::Stride { .. });
    Some((kind, advances))
}

/// After a metadata record changed field `slot` (declared as `def`) of the record type whose
/// plan is `plan`, with `slots` the scope's states: a plan in which only the value of a
/// `default` changed, or only a state (a `delta`'s or `stride`'s start), is patched in place;
/// any other change makes it stale (made again when the type next occurs).
pub(super) fn patch_plan(
    plan: &mut DecodePlan,
    slots: &[SlotState],
    def: &crate::dtd::Slot,
    slot: SlotId,
) {
    if !plan.state.planned() {
        plan.state = PlanState::Stale;
        return;
    }
    let Some(f) = plan.fields.iter_mut().find(|f| f.slot == slot) else {
        plan.state = PlanState::Stale;
        return;
    };
    let st = &slots[f.state as usize];
    let same = match (fixed_kind(def, st), f.kind) {
        (Some((FixedKind::Const(v), false)), FixedKind::Const(_)) if st.width == f.width => {
            f.kind = FixedKind::Const(v);
            // What was read of the plan (a scan's times) is read again.
            plan.made = next_made();
            // A `Simple` clock reads a state, which this change leaves, and a `Fields` one
            // checks `made`: both stay. A constant one holds the defaults' time: made again.
            if plan.clock.constant {
                plan.clock = PlanClock::default();
            }
            true
        }
        (Some((FixedKind::Plain, false)), FixedKind::Plain) => st.width == f.width,
        (Some((FixedKind::Ref { section }, false)), FixedKind::Ref { section: was }) => {
            section == was && st.width == f.width
        }
        (Some((FixedKind::Interp { signed }, advances)), FixedKind::Interp { signed: was }) => {
            let advanced = plan.advance.iter().any(|a| a.state == f.state);
            signed == was && advances == advanced && st.width == f.width
        }
        _ => false,
    };
    if !same {
        plan.state = PlanState::Stale;
    }
}

impl Decoder {
    /// Decide how record type `rid` is decoded under the current metadata.
    #[cold]
    pub(super) fn make_plan(&mut self, r: &Reader<'_>, rid: RecordId, base: usize) {
        let reader = r;
        let rt = reader.schema.record(rid);
        let prog = reader.compiled.program(rid);
        let scope = self.scope.as_ref().expect("open scope");
        let plan = &mut self.plans[rid as usize];
        plan.fields.clear();
        plan.advance.clear();
        plan.refs.clear();
        plan.parts.clear();
        plan.len = 0;
        plan.clock = PlanClock::default();
        plan.state = PlanState::Walk;
        // The segment being laid out, and its bytes so far.
        let mut seg = 0u8;
        for op in &prog.ops {
            let slot = match op {
                Op::Int(slot) => *slot,
                Op::Bytes(slot, width) => {
                    if plan.parts.len() == MAX_STRINGS {
                        return;
                    }
                    let len = match width {
                        Expr::Const(c) => BytesLen::Const(*c),
                        Expr::Value(s) => {
                            // The most recent value of an earlier field of this record, read as
                            // it lies.
                            let Some(j) = plan.fields.iter().rposition(|f| f.slot == *s) else {
                                return;
                            };
                            if !matches!(
                                plan.fields[j].kind,
                                FixedKind::Plain | FixedKind::Const(_)
                            ) {
                                return;
                            }
                            BytesLen::Field(j as u32)
                        }
                        _ => return,
                    };
                    plan.parts.push(VarPart {
                        fixed: plan.len,
                        len,
                    });
                    plan.fields.push(FixedField {
                        slot: *slot,
                        width: 0,
                        at: plan.len as u32,
                        seg,
                        state: 0,
                        kind: FixedKind::Bytes,
                    });
                    seg += 1;
                    plan.len = 0;
                    continue;
                }
                _ => return,
            };
            let def = &rt.slots[slot as usize];
            let st = &scope.slots[base + slot as usize];
            let Some((kind, advances)) = fixed_kind(def, st) else {
                return;
            };
            let field = FixedField {
                slot,
                width: st.width,
                at: plan.len as u32,
                seg,
                state: (base + slot as usize) as u32,
                kind,
            };
            plan.fields.push(field);
            if advances {
                plan.advance.push(field);
            }
            if let FixedKind::Ref { .. } = kind {
                plan.refs.push(field);
            }
            plan.len += st.width as u64;
        }
        plan.made = next_made();
        plan.state = if !plan.refs.is_empty() {
            PlanState::Refs
        } else if seg > 0 {
            PlanState::Var
        } else {
            PlanState::Fixed
        };
    }

    /// After a metadata record changed field `slot` of record type `rid`: see [`patch_plan`].
    pub(super) fn patch_plan(&mut self, rid: RecordId, slot: SlotId, r: &Reader<'_>) {
        let plan = &mut self.plans[rid as usize];
        let def = r.schema.record(rid).slots.get(slot as usize);
        match (self.scope.as_ref(), def) {
            (Some(scope), Some(def)) => patch_plan(plan, &scope.slots, def, slot),
            _ => plan.state = PlanState::Stale,
        }
    }

    /// Decode a record of type `rid` by its fixed plan; its length has been checked.
    #[inline(always)]
    pub(super) fn fixed_record(&mut self, r: &Reader<'_>, rid: RecordId) {
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
                // No byte string or reference in a `Fixed` plan.
                FixedKind::Plain
                | FixedKind::Const(_)
                | FixedKind::Bytes
                | FixedKind::Ref { .. } => raw,
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

    /// The references of a record of type `rid` decoded by its plan, its fields from `start`
    /// (segments at `starts`), checked as the general path checks them (`check_ref`), in the
    /// order of its fields.
    #[cold]
    #[inline(never)]
    fn check_plan_refs(
        &mut self,
        r: &Reader<'_>,
        rid: RecordId,
        start: u64,
        starts: &[u64; MAX_STRINGS + 1],
    ) {
        let order = r.input.order;
        for k in 0..self.plans[rid as usize].refs.len() {
            let f = self.plans[rid as usize].refs[k];
            let FixedKind::Ref { section } = f.kind else {
                continue;
            };
            let at = start + starts[f.seg as usize] + f.at as u64;
            let offset = order.read_uint(r.input.from(at), f.width as usize);
            self.check_ref(r, ElementRef::Offset { section, offset }, at, rid, f.slot);
        }
    }

    /// Decode a record of type `rid` by its `Var` plan, at `places`.
    #[inline(always)]
    pub(super) fn var_record(&mut self, r: &Reader<'_>, rid: RecordId, places: &Places) {
        let input = &r.input;
        let plan = &self.plans[rid as usize];
        let slots = &mut self.scope.as_mut().expect("open scope").slots;
        let start = self.pos;
        let bytes = input.from(start);
        let order = input.order;
        if !self.keep_values {
            // Only the fields whose state advances (`delta`, `stride`) are read.
            for f in &plan.advance {
                if let FixedKind::Interp { signed } = f.kind {
                    let from = places.of(f) as usize;
                    let raw = order.read_uint(&bytes[from..], f.width as usize);
                    interp::decode(&mut slots[f.state as usize], raw, signed);
                }
            }
            let refs = !plan.refs.is_empty();
            self.pos += places.len;
            if refs {
                self.check_plan_refs(r, rid, start, &places.starts);
            }
            return;
        }
        let refs = !plan.refs.is_empty();
        self.values.reserve(plan.fields.len());
        for f in &plan.fields {
            let from = places.of(f);
            let offset = start + from;
            let (width, raw, value) = match f.kind {
                FixedKind::Const(v) => (0, 0, Val::Int(v)),
                FixedKind::Bytes => {
                    let len = places.starts[f.seg as usize + 1] - from;
                    (len as u32, 0, Val::Bytes { offset, len })
                }
                FixedKind::Plain => {
                    let raw = order.read_uint(&bytes[from as usize..], f.width as usize);
                    (f.width as u32, raw, Val::Int(raw))
                }
                FixedKind::Interp { signed } => {
                    let raw = order.read_uint(&bytes[from as usize..], f.width as usize);
                    let number =
                        interp::decode(&mut slots[f.state as usize], raw, signed).number(raw);
                    (f.width as u32, raw, Val::Int(number))
                }
                FixedKind::Ref { section } => {
                    let raw = order.read_uint(&bytes[from as usize..], f.width as usize);
                    let target = ElementRef::Offset {
                        section,
                        offset: raw,
                    };
                    (f.width as u32, raw, Val::Ref(target))
                }
            };
            self.values.push(FieldValue {
                slot: f.slot,
                offset,
                width,
                raw,
                value,
            });
        }
        self.pos += places.len;
        if refs {
            self.check_plan_refs(r, rid, start, &places.starts);
        }
    }
}
