//! [`Encoder`]: turns interpreted field values into record bytes under the live metadata state.
//!
//! It is the decoder's mirror and uses the same compiled programs and the same
//! [`ScopeState`](crate::decode::ScopeState), so a rule is written once.

use crate::decode::state::{fits_signed, fits_unsigned, truncate, MetaProperty, ScopeState};
use crate::decode::{Compiled, Loops, Op};
use crate::dtd::{Builtin, Display, Interp, RecordId, Schema, SlotId};

use super::error::{WriteError, WriteErrorKind};

/// A value to write into one field occurrence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum In {
    /// An interpreted integer value.
    Int(u64),
    /// The bytes of a byte-string field.
    Bytes(Vec<u8>),
    /// The stored offset of a `sectionOffset` field.
    Offset(u64),
    /// Let the writer derive the value: allowed where the state determines it (`default`,
    /// `stride`, `sectionStride`).
    Auto,
}

/// Encodes records for one trace.
pub struct Encoder<'s> {
    schema: &'s Schema,
    compiled: Compiled,
    big_endian: bool,
    word_size: u8,
    scope: ScopeState,
    last: Vec<u64>,
    loops: Loops,
}

impl<'s> Encoder<'s> {
    /// An encoder positioned in the global region.
    pub fn new(schema: &'s Schema, big_endian: bool, word_size: u8) -> Encoder<'s> {
        let compiled = Compiled::new(schema);
        let max = compiled
            .programs
            .iter()
            .map(|p| p.nslots)
            .max()
            .unwrap_or(0);
        Encoder {
            schema,
            compiled,
            big_endian,
            word_size,
            scope: ScopeState::new(schema, 0),
            last: vec![0; max],
            loops: Loops::default(),
        }
    }

    /// The schema.
    pub fn schema(&self) -> &'s Schema {
        self.schema
    }

    /// Section id of the current scope (0 = global region).
    pub fn section(&self) -> u8 {
        self.scope.section
    }

    /// The live state of the current scope.
    pub fn state(&self) -> &ScopeState {
        &self.scope
    }

    /// A record type by name in the current scope.
    pub fn lookup(&self, name: &str) -> Option<RecordId> {
        self.schema.record_by_name(self.scope.section, name)
    }

    fn push(&self, v: u64, width: usize, out: &mut Vec<u8>) {
        if self.big_endian {
            for i in (0..width).rev() {
                out.push((v >> (8 * i)) as u8);
            }
        } else {
            for i in 0..width {
                out.push((v >> (8 * i)) as u8);
            }
        }
    }

    /// Open a section: encode its `section` record into `out` and reset the state.
    pub fn begin_section(&mut self, id: u8, out: &mut Vec<u8>) -> Result<(), WriteError> {
        if id == 0 || self.schema.scope_for(id).is_none() {
            return Err(WriteError::new(WriteErrorKind::Section(format!(
                "section {id} is not declared in the DTD"
            ))));
        }
        self.scope = ScopeState::new(self.schema, id);
        out.clear();
        let tag = self
            .schema
            .record(self.schema.builtin(Builtin::Section))
            .tag;
        self.push(tag, self.schema.tag_width as usize, out);
        self.push(id as u64, 1, out);
        Ok(())
    }

    /// Encode a metadata record changing `slot` of `record`, and apply it.
    pub fn metadata(
        &mut self,
        record: RecordId,
        slot: SlotId,
        prop: MetaProperty,
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        let meta = self.schema.record(self.schema.builtin(Builtin::Metadata));
        let rt = self.schema.record(record);
        let err = |m: String| WriteError::at("metadata", None, WriteErrorKind::Metadata(m));
        if slot > 255 {
            return Err(err(format!(
                "field {slot} of `{}` cannot be named in one byte",
                rt.name
            )));
        }
        let (words, n) = prop.words();
        let word = self.word_size;
        for (i, &w) in words.iter().take(n).enumerate() {
            let is_stride = i == 1;
            let ok = if is_stride {
                fits_signed(w as i64, word)
            } else {
                fits_unsigned(w, word)
            };
            if !ok {
                return Err(err(format!(
                    "value {} does not fit the {word}-byte metadata word of this trace class",
                    if is_stride {
                        (w as i64).to_string()
                    } else {
                        w.to_string()
                    }
                )));
            }
        }
        self.scope
            .apply(self.schema, record, slot, prop)
            .map_err(|r| err(r.0))?;
        out.clear();
        let tw = self.schema.tag_width as usize;
        self.push(meta.tag, tw, out);
        self.push(rt.tag, tw, out);
        self.push(slot as u64, 1, out);
        self.push(prop.code() as u64, 1, out);
        for &w in words.iter().take(n) {
            self.push(truncate(w, word), word as usize, out);
        }
        Ok(())
    }

    /// Encode one record of type `record` from its field values, in decoding order (repeats
    /// expanded), without the tag. Advances the live state.
    pub fn record(
        &mut self,
        record: RecordId,
        values: &[In],
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        let schema = self.schema;
        let rt = schema.record(record);
        match rt.builtin {
            Some(Builtin::Section) => {
                return Err(WriteError::at(
                    &rt.name,
                    None,
                    WriteErrorKind::Shape("open sections with begin_section".into()),
                ))
            }
            Some(Builtin::Metadata) => {
                return Err(WriteError::at(
                    &rt.name,
                    None,
                    WriteErrorKind::Shape("write metadata with the metadata method".into()),
                ))
            }
            _ => {}
        }
        let Some(base) = self.scope.base(record) else {
            return Err(WriteError::at(
                &rt.name,
                None,
                WriteErrorKind::UnknownRecord,
            ));
        };
        // Work on a copy of the state so a failed record leaves the writer unchanged.
        let saved: Vec<_> = self.scope.slots[base..base + rt.slots.len()].to_vec();
        let r = self.record_inner(record, base, values, out);
        if r.is_err() {
            self.scope.slots[base..base + rt.slots.len()].copy_from_slice(&saved);
        }
        r
    }

    fn record_inner(
        &mut self,
        record: RecordId,
        base: usize,
        values: &[In],
        out: &mut Vec<u8>,
    ) -> Result<(), WriteError> {
        let schema = self.schema;
        let rt = schema.record(record);
        out.clear();
        self.push(rt.tag, schema.tag_width as usize, out);
        self.last[0] = rt.tag;
        let ops = &self.compiled.programs[record as usize].ops;
        let mut inputs = values.iter();
        let mut pc = 0;
        self.loops.clear();
        let shape = |slot: SlotId, m: String| {
            WriteError::at(
                &rt.name,
                Some(&rt.slots[slot as usize].name),
                WriteErrorKind::Shape(m),
            )
        };
        let unrep = |slot: SlotId, m: String| {
            WriteError::at(
                &rt.name,
                Some(&rt.slots[slot as usize].name),
                WriteErrorKind::Unrepresentable(m),
            )
        };
        while pc < ops.len() {
            match &ops[pc] {
                Op::Int(slot) => {
                    let slot = *slot;
                    let def = &rt.slots[slot as usize];
                    let input = inputs
                        .next()
                        .ok_or_else(|| shape(slot, "missing value".into()))?;
                    let st = &mut self.scope.slots[base + slot as usize];
                    let w = st.width;
                    let (raw, number) = match (st.interp, input) {
                        (Interp::None, In::Int(v)) => {
                            let ok = if def.display == Display::Signed {
                                fits_signed(*v as i64, w)
                            } else {
                                fits_unsigned(*v, w)
                            };
                            if !ok {
                                let shown = if def.display == Display::Signed {
                                    (*v as i64).to_string()
                                } else {
                                    v.to_string()
                                };
                                return Err(unrep(slot, format!("value {shown} does not fit in {w} byte(s) (interpretation none)")));
                            }
                            (truncate(*v, w), *v)
                        }
                        (Interp::Default(d), In::Int(v)) if *v == d => (0, d),
                        (Interp::Default(d), In::Auto) => (0, d),
                        (Interp::Default(d), In::Int(v)) => {
                            return Err(unrep(
                                slot,
                                format!("value {v} differs from the current default {d}"),
                            ))
                        }
                        (Interp::BaseOffset(b), In::Int(v)) => {
                            let diff = v.wrapping_sub(b) as i64;
                            if !fits_signed(diff, w) {
                                return Err(unrep(slot, format!("value {v} is {diff} from base {b}, which does not fit in {w} signed byte(s)")));
                            }
                            (truncate(diff as u64, w), *v)
                        }
                        (Interp::Delta(_), In::Int(v)) => {
                            let diff = v.wrapping_sub(st.prev) as i64;
                            if !fits_signed(diff, w) {
                                return Err(unrep(slot, format!("value {v} is {diff} from the previous value {}, which does not fit in {w} signed byte(s)", st.prev)));
                            }
                            st.prev = *v;
                            (truncate(diff as u64, w), *v)
                        }
                        (Interp::Stride { stride, .. }, inp) => {
                            let expected = st.prev.wrapping_add(stride as u64);
                            match inp {
                                In::Auto => {}
                                In::Int(v) if *v == expected => {}
                                In::Int(v) => {
                                    return Err(unrep(
                                        slot,
                                        format!(
                                        "value {v} does not match the stride: expected {expected}"
                                    ),
                                    ))
                                }
                                _ => return Err(shape(slot, "expected an integer".into())),
                            }
                            st.prev = expected;
                            (0, expected)
                        }
                        (Interp::SectionOffset(_), In::Offset(o)) => {
                            if !fits_unsigned(*o, w) {
                                return Err(unrep(
                                    slot,
                                    format!("offset {o} does not fit in {w} byte(s)"),
                                ));
                            }
                            (*o, *o)
                        }
                        (
                            Interp::SectionStride { stride, .. },
                            In::Auto | In::Offset(_) | In::Int(_),
                        ) => {
                            let index = st.cursor;
                            if let In::Offset(i) = input {
                                if *i as i64 != index {
                                    return Err(unrep(slot, format!("element #{i} does not match the stride cursor: expected #{index}")));
                                }
                            }
                            st.cursor = st.cursor.wrapping_add(stride);
                            (0, index as u64)
                        }
                        (interp, other) => {
                            return Err(shape(
                                slot,
                                format!(
                                    "{} does not suit a field with interpretation {}",
                                    describe(other),
                                    interp.keyword()
                                ),
                            ))
                        }
                    };
                    if let Some(f) = def.fixed {
                        if number != f {
                            return Err(unrep(
                                slot,
                                format!("value {number} differs from the DTD's fixed value {f}"),
                            ));
                        }
                    }
                    self.push(raw, w as usize, out);
                    self.last[slot as usize] = number;
                    pc += 1;
                }
                Op::Bytes(slot, expr) => {
                    let slot = *slot;
                    let input = inputs
                        .next()
                        .ok_or_else(|| shape(slot, "missing value".into()))?;
                    let In::Bytes(b) = input else {
                        return Err(shape(
                            slot,
                            format!("{} given for a byte-string field", describe(input)),
                        ));
                    };
                    let len =
                        crate::decode::eval_width(expr, &self.last).map_err(|m| unrep(slot, m))?;
                    if len != b.len() as u64 {
                        return Err(unrep(
                            slot,
                            format!(
                                "{} byte(s) given, but the width expression says {len}",
                                b.len()
                            ),
                        ));
                    }
                    out.extend_from_slice(b);
                    self.last[slot as usize] = len;
                    pc += 1;
                }
                Op::Repeat { count, end } => {
                    let n = self.last[*count as usize];
                    pc = self.loops.enter(pc, *end, n);
                }
                Op::EndRepeat { begin } => pc = self.loops.end(pc, *begin),
            }
        }
        if inputs.next().is_some() {
            return Err(WriteError::at(
                &rt.name,
                None,
                WriteErrorKind::Shape(format!(
                    "{} value(s) given, more than the record holds",
                    values.len()
                )),
            ));
        }
        Ok(())
    }
}

fn describe(i: &In) -> &'static str {
    match i {
        In::Int(_) => "an integer",
        In::Bytes(_) => "a byte string",
        In::Offset(_) => "a section reference",
        In::Auto => "no value",
    }
}
