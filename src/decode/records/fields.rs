//! The decoder's general path: a record's fields through the layout walker, integers, byte
//! strings, references, live sets and metadata records.

use crate::dtd::{Display, Interp, RecordId, SlotId};
use crate::layout::arith::{self as interp, Decoded};
use crate::layout::{
    eval_width, MetaProperty, MetaRefused, Op, Step, MAX_EMPTY_REPEAT, MAX_FIELDS_PER_RECORD,
};

use super::super::error::{Damage, DamageKind, ProblemKind};
use super::super::reader::Reader;
use super::super::value::{ElementRef, FieldValue, Val};
use super::super::view::MetaChange;
use super::{plan, Decoder, Mode, PlanState, Stop};

impl Decoder {
    // Design: inlined into `advance` (see `decode_record`); a stale plan is made first and then
    // used as any plan is, rather than by a second call of this function (a recursive function
    // cannot be inlined).
    #[inline(always)]
    pub(super) fn run_program(&mut self, r: &Reader<'_>, rid: RecordId) -> Result<(), Box<Damage>> {
        let reader = r;
        let rt = reader.schema.record(rid);
        let prog = reader.compiled.program(rid);
        let base = self
            .scope
            .as_ref()
            .and_then(|s| s.base(rid))
            .expect("tag tables only hold visible records");
        if matches!(self.plans[rid as usize].state, PlanState::Stale) {
            self.make_plan(r, rid, base);
        }
        // A field that has not occurred in this record has the value 0 (docs/format.md §3.4).
        match self.plans[rid as usize].state {
            PlanState::Fixed if self.plans[rid as usize].len <= self.lim - self.pos => {
                self.fixed_record(r, rid);
                return Ok(());
            }
            PlanState::Var | PlanState::Refs => {
                let avail = self.lim - self.pos;
                let bytes = r.input.from(self.pos);
                let plan = &self.plans[rid as usize];
                if let Some(places) = plan::var_layout(plan, bytes, r.input.order, avail) {
                    self.var_record(r, rid, &places);
                    return Ok(());
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

    pub(super) fn bytes_field(
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
    pub(super) fn int_field(
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
    pub(super) fn live_value(&mut self, set: u8, raw: u64) -> u64 {
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
    pub(super) fn live_insert(&mut self, set: u8, value: u64) {
        self.scope
            .as_mut()
            .expect("open scope")
            .sets
            .insert(set, value, None);
    }

    pub(super) fn check_ref(
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

    pub(super) fn decode_metadata(
        &mut self,
        r: &Reader<'_>,
        rid: RecordId,
    ) -> Result<(), Box<Damage>> {
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
                self.patch_plan(target, field as SlotId, r);
                if let MetaProperty::Interp(i) = prop {
                    r.note_table(i);
                }
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
