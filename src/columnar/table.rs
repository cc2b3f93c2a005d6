//! One record type's columns: the column tree shaped by the DTD (`Shape`), filled a record at
//! a time: pass 1 widens each field's profile (`observe`), pass 2 appends its values (`push`)
//! through the shared field walk (`decode::FieldWalk`).

use std::collections::HashMap;

use crate::decode::{ElementRef, FieldWalk, RecordView, Value, Visit};
use crate::dtd::{RecordType, SlotKind};
use crate::layout::Shape;

use super::model::{Col, Leaf, List, Table, ValueProfile};

// ---- the column tree ----------------------------------------------------------------------

impl Table {
    pub(super) fn new(rt: &RecordType) -> Table {
        let mut t = Table {
            cols: Vec::new(),
            leaves: Vec::new(),
            lists: Vec::new(),
            leaf_of_slot: vec![None; rt.slots.len()],
            list_of_count: HashMap::new(),
            rows: 0,
            batch_rows: 0,
            batch_bytes: 0,
            index: Vec::new(),
            offset: Vec::new(),
            section: Vec::new(),
        };
        t.cols = t.build(rt, &Shape::of(rt));
        t
    }

    /// The columns of a shape (the layout's, keyed as the compiled program keys the fields).
    pub(super) fn build(&mut self, rt: &RecordType, shape: &[Shape]) -> Vec<(String, Col)> {
        let mut cols = Vec::new();
        for node in shape {
            match node {
                Shape::Field { key, slot } => {
                    let slot = *slot as usize;
                    let def = &rt.slots[slot];
                    let i = self.leaves.len();
                    self.leaves.push(Leaf {
                        display: def.display,
                        bytes: matches!(def.kind, SlotKind::Bytes { .. }),
                        stats: ValueProfile::default(),
                        data: None,
                    });
                    self.leaf_of_slot[slot] = Some(i);
                    cols.push((key.clone(), Col::Leaf(i)));
                }
                Shape::Group { key, members } => {
                    let inside = self.build(rt, members);
                    cols.push((key.clone(), Col::Struct(inside)));
                }
                Shape::List {
                    key,
                    count,
                    item,
                    single,
                } => {
                    let l = self.lists.len();
                    self.lists.push(List {
                        offsets: vec![0],
                        items: 0,
                    });
                    self.list_of_count.insert(*count as usize, l);
                    let mut inside = self.build(rt, item);
                    // A list of one scalar field is a list of that field, named by the list.
                    let col = if *single && inside.len() == 1 {
                        inside.pop().expect("one").1
                    } else {
                        Col::Struct(inside)
                    };
                    cols.push((key.clone(), Col::List(l, Box::new(col))));
                }
            }
        }
        cols
    }

    /// Pass 1: widen the columns' ranges by one record.
    pub(super) fn observe(&mut self, view: &RecordView<'_>) {
        self.rows += 1;
        let reader = view.reader();
        for f in view.fields().skip(1) {
            let Some(Some(i)) = self.leaf_of_slot.get(f.slot() as usize) else {
                continue;
            };
            let s = &mut self.leaves[*i].stats;
            match f.value() {
                Value::Int(v) => {
                    s.int(v);
                    s.sample.add(v);
                }
                Value::Bytes(b) => {
                    s.non_utf8 |= std::str::from_utf8(b).is_err();
                    s.sample.add_bytes(b);
                }
                Value::Ref(r) => {
                    s.refs = true;
                    match r {
                        ElementRef::Offset { offset, .. } => s.ref_umax = s.ref_umax.max(offset),
                        ElementRef::Index { index, .. } => {
                            s.ref_index = true;
                            s.ref_smin = s.ref_smin.min(index);
                            s.ref_smax = s.ref_smax.max(index);
                        }
                    }
                    match reader.resolve(r).map(|res| res.value) {
                        Ok(Value::Bytes(b)) => {
                            s.res_bytes = true;
                            s.res_non_utf8 |= std::str::from_utf8(b).is_err();
                        }
                        Ok(Value::Int(v)) => {
                            s.res_ints = true;
                            s.res_umax = s.res_umax.max(v);
                            // As a stored integer counts (`ValueProfile::as_integer`).
                            s.smin = s.smin.min(v as i64);
                            s.smax = s.smax.max(v as i64);
                            s.sample.add(v);
                        }
                        Ok(Value::Ref(_)) => s.res_other = true,
                        Err(_) => s.res_failed = true,
                    }
                }
            }
        }
    }

    /// Pass 2: append one record.
    pub(super) fn push(&mut self, fields: &mut FieldWalk, view: &RecordView<'_>) {
        let reader = view.reader();
        self.index.push(view.index());
        self.offset.push(view.offset());
        self.section.push(view.section());
        let mut last_slot = usize::MAX;
        let mut open: Vec<usize> = Vec::new();
        let leaves = &mut self.leaves;
        let lists = &mut self.lists;
        let list_of_count = &self.list_of_count;
        let leaf_of_slot = &self.leaf_of_slot;
        let mut bytes = 0usize;
        let _ = fields.visit(view, |v| -> Result<(), ()> {
            match v {
                Visit::Field(_, f) => {
                    last_slot = f.slot() as usize;
                    if let Some(Some(i)) = leaf_of_slot.get(last_slot) {
                        bytes += leaves[*i].push(reader, f.value());
                    }
                }
                Visit::ListStart(_) => {
                    if let Some(&l) = list_of_count.get(&last_slot) {
                        open.push(l);
                    }
                }
                Visit::ItemStart(..) => {}
                Visit::ItemEnd(_) => {
                    if let Some(&l) = open.last() {
                        lists[l].items += 1;
                    }
                }
                Visit::ListEnd => {
                    if let Some(l) = open.pop() {
                        let n = lists[l].items;
                        lists[l].offsets.push(n);
                    }
                }
            }
            Ok(())
        });
        self.rows_pushed();
        self.batch_bytes += bytes;
    }

    pub(super) fn rows_pushed(&mut self) {
        self.batch_rows += 1;
    }
}
