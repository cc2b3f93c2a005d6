//! A record's fields with their display keys and values, in the order of its layout: the walk
//! the printers (text, JSON lines, CSV) and the Parquet export share.

// Design: the keys and the nesting come from the compiled program through the one layout
// walker (`layout::Walk`), with the repeat counts taken from the decoded values, so every
// output names a field as the text reader expects it. The walker's state is kept from record
// to record: nothing is allocated per record once the deepest repeat was seen.

use std::sync::Arc;

use crate::dtd::RecordId;
use crate::layout::{Compiled, Op, Program, Step, Walk};

use super::{Field, Reader, RecordView};

/// One step of a record's walk.
pub(crate) enum Visit<'v> {
    /// A field, with its key (empty for a repeat's single unnamed item).
    Field(&'v str, Field<'v>),
    /// A repeat begins, with its key.
    ListStart(&'v str),
    /// An item of the innermost repeat begins: whether the item is a single field, its index.
    ItemStart(bool, u64),
    /// An item ends: whether it was a single field.
    ItemEnd(bool),
    /// The innermost repeat ends.
    ListEnd,
}

/// Walks the fields of a reader's records (sharing its compiled programs).
pub(crate) struct FieldWalk {
    compiled: Arc<Compiled>,
    walk: Walk,
    /// The latest value of each slot (the repeat counts).
    last: Vec<u64>,
    /// Per open repeat, whether its items are single fields.
    singles: Vec<bool>,
}

impl FieldWalk {
    /// A walker for the records of `reader`.
    pub(crate) fn new(reader: &Reader<'_>) -> FieldWalk {
        let compiled = reader.compiled.clone();
        FieldWalk {
            last: vec![0; compiled.max_slots],
            compiled,
            walk: Walk::default(),
            singles: Vec::new(),
        }
    }

    /// The program of record type `rid`.
    pub(crate) fn program(&self, rid: RecordId) -> &Program {
        self.compiled.program(rid)
    }

    /// The number of record types.
    pub(crate) fn record_types(&self) -> usize {
        self.compiled.programs.len()
    }

    /// Whether the records of type `rid` are *flat*: no repeat, and a key for every field, so
    /// that the walk gives one field per operation of the program, in order.
    pub(crate) fn is_flat(&self, rid: RecordId) -> bool {
        let prog = self.program(rid);
        prog.ops
            .iter()
            .all(|op| matches!(op, Op::Int(_) | Op::Bytes(..)))
            && prog.keys.iter().all(|k| !k.is_empty())
    }

    /// Step through a record's fields (the tag left out), calling `visit` for each step; a
    /// record cut short ends at its last field.
    pub(crate) fn visit<'v, E>(
        &mut self,
        view: &RecordView<'v>,
        mut visit: impl FnMut(Visit<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let prog: &Program = self.compiled.program(view.record_id());
        let mut idx = 1; // the tag
        let singles = &mut self.singles;
        singles.clear();
        self.walk.reset();
        let last = &mut self.last;
        loop {
            let step = self.walk.next_run(prog, |s, _| last[s as usize]);
            let Some(step) = step else { return Ok(()) };
            match step {
                Step::Run { ops, pc } => {
                    for (k, op) in ops.iter().enumerate() {
                        let (Op::Int(slot) | Op::Bytes(slot, _)) = op else {
                            unreachable!("a run holds fields only")
                        };
                        let Some(f) = view.field_at(idx) else {
                            return Ok(());
                        };
                        idx += 1;
                        last[*slot as usize] = f.fv.value.number();
                        visit(Visit::Field(&prog.keys[pc + k], f))?;
                    }
                }
                Step::Int { slot, pc } | Step::Bytes { slot, pc, .. } => {
                    let Some(f) = view.field_at(idx) else {
                        return Ok(());
                    };
                    idx += 1;
                    last[slot as usize] = f.fv.value.number();
                    visit(Visit::Field(&prog.keys[pc], f))?;
                }
                Step::Enter { single, pc, .. } => {
                    singles.push(single);
                    visit(Visit::ListStart(&prog.keys[pc]))?;
                }
                Step::ItemStart { index } => {
                    visit(Visit::ItemStart(*singles.last().unwrap_or(&true), index))?
                }
                Step::ItemEnd { .. } => visit(Visit::ItemEnd(*singles.last().unwrap_or(&true)))?,
                Step::Leave { .. } => {
                    singles.pop();
                    visit(Visit::ListEnd)?;
                }
            }
        }
    }
}
