//! Records per type and the figures of their integer fields.

use crate::decode::RecordView;
use crate::dtd::{Display, RecordId, Schema, SlotId, SlotKind};

// Design: the figures of a field are kept in 64-bit words and one 128-bit sum, whatever its
// signedness: a signed value is ordered and summed as its bits with the top bit flipped
// (`bias`), which is the value plus 2⁶³, so 2⁶³ is taken off the sum once per value at the
// end. The per-value work is then a few plain integer instructions.
#[derive(Debug, Clone, Copy)]
struct FieldAcc {
    count: u64,
    /// Smallest and largest value, as `value ^ bias`.
    lo: u64,
    hi: u64,
    /// The sum of the values as `value ^ bias`.
    sum: u128,
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
            bias: if signed { 1 << 63 } else { 0 },
        }
    }

    #[inline]
    fn add(&mut self, v: u64) {
        self.count += 1;
        let b = v ^ self.bias;
        self.lo = self.lo.min(b);
        self.hi = self.hi.max(b);
        self.sum += b as u128;
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
        // Exact while fewer than 2⁶³ values were added.
        (self.sum as i128).wrapping_sub(i128::from(self.count) * i128::from(self.bias))
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
        for (slot, v) in view.ints() {
            let slot = slot as usize;
            if slot == 0 {
                continue; // the tag
            }
            if let (Some(v), Some(a)) = (v, accs.get_mut(slot)) {
                a.add(v);
            }
        }
    }

    /// Count one record of type `rid` given as the values of its fields, each added to the
    /// accumulator `places` gives for it ([`RecordCounter::places`]; `usize::MAX`: none): what
    /// [`RecordCounter::record`] counts of its view (a record a scan stepped over).
    #[inline]
    /// A value that is a reference (`is_ref(k)`) is not counted, as the view's is not.
    pub(crate) fn record_values(
        &mut self,
        rid: RecordId,
        places: &[usize],
        values: &[u64],
        is_ref: impl Fn(usize) -> bool,
    ) {
        if let Some(c) = self.counts.get_mut(rid as usize) {
            *c += 1;
        }
        for (k, (&i, &v)) in places.iter().zip(values).enumerate() {
            if let Some(a) = self.fields.get_mut(i) {
                if !is_ref(k) {
                    a.add(v);
                }
            }
        }
    }

    /// Where [`RecordCounter::record_values`] adds the values of the fields `slots` of record
    /// type `rid`: each slot's accumulator, or `usize::MAX` for the tag and for a built-in
    /// record's fields (not summarised).
    pub(crate) fn places(&self, rid: RecordId, slots: &[SlotId]) -> Vec<usize> {
        let base = self.base.get(rid as usize).copied().unwrap_or(usize::MAX);
        slots
            .iter()
            .map(|&s| match (base, s) {
                (usize::MAX, _) | (_, 0) => usize::MAX,
                (b, s) => b + s as usize,
            })
            .collect()
    }

    /// The fields of record type `rid` whose values [`RecordCounter::record_values`] counts:
    /// its integers, the tag aside.
    pub(crate) fn counted_slots(schema: &Schema, rid: RecordId) -> Vec<SlotId> {
        let rt = schema.record(rid);
        if rt.builtin.is_some() {
            return Vec::new();
        }
        let ints = rt.slots.iter().enumerate().skip(1);
        ints.filter(|(_, s)| matches!(s.kind, SlotKind::Int { .. }))
            .map(|(i, _)| i as SlotId)
            .collect()
    }

    /// Add the counts of `other` (a counter of the same schema over later records).
    pub(crate) fn absorb(&mut self, other: &RecordCounter) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        for (a, b) in self.fields.iter_mut().zip(&other.fields) {
            a.count += b.count;
            a.lo = a.lo.min(b.lo);
            a.hi = a.hi.max(b.hi);
            a.sum += b.sum;
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
            let decl = schema.analysis.record(rid as RecordId);
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
                        summable: !is_label(decl, slot as SlotId),
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

/// Whether the analysis declarations make `slot` a label rather than a quantity: an id (an
/// address, an object id: defined, ended, referred to, opened or closed, or a namespace's key),
/// a time, a thread or a site. Adding such values up means nothing.
fn is_label(decl: &crate::dtd::analysis::RecordDecl, slot: SlotId) -> bool {
    use crate::dtd::analysis::{ActionKind, Site};
    decl.actions
        .iter()
        .any(|a| (a.slot == slot && a.kind != ActionKind::DefineNext) || a.key == Some(slot))
        || decl.time.iter().any(|(s, _)| *s == slot)
        || decl.thread == Some(slot)
        || matches!(decl.site, Some(Site::Field { slot: s, .. }) if s == slot)
        || decl.depth.iter().any(|d| d.slot == slot)
        || decl.names.iter().any(|(s, _)| *s == slot)
        || decl.stack.iter().any(|r| r.slot == slot)
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
    /// Whether the sum means something: false for a field the DTD's analysis declarations make
    /// an id, a time, a thread or a site (a sum of addresses). Text and report leave such sums
    /// out; the JSON keeps every sum and says this.
    pub summable: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// A field's figures in 64-bit words (bits ordered and summed with the sign flipped, 2⁶³
        /// taken off the sum per value) are those of plain 128-bit arithmetic.
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
}
