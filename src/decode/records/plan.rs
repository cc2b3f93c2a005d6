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

use crate::container::ByteOrder;
use crate::dtd::{Display, Interp, RecordId, SlotId};
use crate::layout::arith as interp;
use crate::layout::Op;

use super::super::reader::Reader;
use super::super::value::{FieldValue, Val};
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
    /// Offset of its bytes from the end of the tag.
    pub(super) at: u32,
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
}

/// How a record type is decoded under the current metadata (see the design note above).
#[derive(Debug, Default)]
pub(super) struct DecodePlan {
    pub(super) state: PlanState,
    /// Bytes after the tag.
    pub(super) len: u64,
    pub(super) fields: Vec<FixedField>,
    /// The fields whose state advances (`delta`, `stride`): what [`Records::scan`] reads.
    pub(super) advance: Vec<FixedField>,
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
}
