//! Record layouts compiled into flat programs, and per-scope tag tables.
//!
//! Compiled once per schema; decoding a record then runs a straight list of operations with no
//! name lookups and no tree walks.

// Design: repeats become a pair of jump operations (`Repeat`/`EndRepeat`), so nested repeats
// need only a small loop stack in the decoder. Nested records and composites vanish: their
// fields are emitted in place.

use std::collections::HashMap;

use crate::dtd::{Expr, Node, RecordId, Schema, SlotId, SlotKind};

/// One operation of a record program.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Decode an integer slot with its live width and interpretation.
    Int(SlotId),
    /// Decode a byte-string slot whose length is the expression.
    Bytes(SlotId, Expr),
    /// Start of a repeat: the count is the most recent value of `count`; `end` is the index of
    /// the matching `EndRepeat`.
    Repeat {
        /// The count slot.
        count: SlotId,
        /// Index of the matching `EndRepeat`.
        end: u32,
    },
    /// End of one occurrence; `begin` is the index of the matching `Repeat`.
    EndRepeat {
        /// Index of the matching `Repeat`.
        begin: u32,
    },
}

/// The compiled program of one record type.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// Operations after the tag (the tag is read by the decoder before the record is known).
    pub ops: Vec<Op>,
    /// Number of slots of the record type.
    pub nslots: usize,
}

/// Tag value → record type for one scope.
#[derive(Debug, Clone, Default)]
pub struct TagTable {
    dense: Vec<u32>,
    sparse: HashMap<u64, RecordId>,
}

const NONE: u32 = u32::MAX;
const DENSE_LIMIT: u64 = 4096;

impl TagTable {
    /// Look a tag up.
    #[inline]
    pub fn get(&self, tag: u64) -> Option<RecordId> {
        if tag < self.dense.len() as u64 {
            match self.dense[tag as usize] {
                NONE => None,
                r => Some(r),
            }
        } else if self.sparse.is_empty() {
            None
        } else {
            self.sparse.get(&tag).copied()
        }
    }
}

/// Programs for every record type and tag tables for every scope of a schema.
#[derive(Debug, Clone)]
pub struct Compiled {
    /// Indexed by `RecordId`.
    pub programs: Vec<Program>,
    /// Indexed by section id (0 = global); `None` for undeclared sections.
    pub tags: Vec<Option<TagTable>>,
}

impl Compiled {
    /// Compile a schema.
    pub fn new(schema: &Schema) -> Compiled {
        let programs = schema
            .records
            .iter()
            .map(|r| {
                let mut ops = Vec::new();
                emit(&r.layout, &r.slots, &mut ops, true);
                Program {
                    ops,
                    nslots: r.slots.len(),
                }
            })
            .collect();
        let mut tags = vec![None; 256];
        for scope in &schema.scopes {
            let mut t = TagTable::default();
            for (&tag, &rid) in &scope.by_tag {
                if tag < DENSE_LIMIT {
                    if t.dense.len() <= tag as usize {
                        t.dense.resize(tag as usize + 1, NONE);
                    }
                    t.dense[tag as usize] = rid;
                } else {
                    t.sparse.insert(tag, rid);
                }
            }
            tags[scope.id as usize] = Some(t);
        }
        Compiled { programs, tags }
    }
}

fn emit(nodes: &[Node], slots: &[crate::dtd::Slot], ops: &mut Vec<Op>, top: bool) {
    for (i, node) in nodes.iter().enumerate() {
        match node {
            // The tag (first field of the top level) is read before the program runs.
            Node::Field(0) if top && i == 0 => {}
            Node::Field(s) => match &slots[*s as usize].kind {
                SlotKind::Int { .. } => ops.push(Op::Int(*s)),
                SlotKind::Bytes { width } => ops.push(Op::Bytes(*s, width.clone())),
            },
            Node::Group { children, .. } => emit(children, slots, ops, false),
            Node::Repeat { count, item, .. } => {
                let begin = ops.len();
                ops.push(Op::Repeat {
                    count: *count,
                    end: 0,
                });
                emit(item, slots, ops, false);
                let end = ops.len();
                ops.push(Op::EndRepeat {
                    begin: begin as u32,
                });
                ops[begin] = Op::Repeat {
                    count: *count,
                    end: end as u32,
                };
            }
        }
    }
}

/// The loop stack of a running program: the shared stepping rules of `Repeat` and `EndRepeat`,
/// used by the decoder and the encoder alike.
#[derive(Debug, Clone, Default)]
pub struct Loops(Vec<(u32, u64)>);

impl Loops {
    /// Forget every open loop (start of a record).
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// At `Repeat { end, .. }` (index `pc`) with `count` occurrences: the next `pc`.
    #[inline]
    pub fn enter(&mut self, pc: usize, end: u32, count: u64) -> usize {
        if count == 0 {
            end as usize + 1
        } else {
            self.0.push((pc as u32, count));
            pc + 1
        }
    }

    /// At `EndRepeat { begin }` (index `pc`): the next `pc`.
    #[inline]
    pub fn end(&mut self, pc: usize, begin: u32) -> usize {
        let top = self.0.last_mut().expect("balanced repeat");
        top.1 -= 1;
        if top.1 == 0 {
            self.0.pop();
            pc + 1
        } else {
            begin as usize + 1
        }
    }
}
