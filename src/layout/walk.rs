//! [`Walk`]: the one layout walker. It steps through a compiled [`Program`], expanding repeats
//! with counts its caller supplies, and says where each field, repeat and item begins and ends.
//!
//! The decoder supplies counts from the values it has just read, the encoder from the values it
//! has just written, the printers from the decoded values, the text reader from the lists in its
//! input, and `mtf dtd show` walks each repeat once. So the structure of a record — which slot
//! comes next, how repeats nest, what each key is — is computed in exactly one place.

// Design: a cursor with a small stack, not a recursive function over the layout tree, so the
// decoder's hot loop pays one match per field and allocates nothing (the stack's capacity is
// reused from record to record). Item boundaries come as separate steps so that a caller that
// does not care about them (the decoder) skips them with one comparison.

use crate::dtd::{Expr, SlotId};

use super::program::{Op, Program};

/// One step of a walk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Step<'p> {
    /// An integer field; `pc` indexes the program's keys.
    Int { slot: SlotId, pc: usize },
    /// A byte-string field whose length is `width`.
    Bytes {
        slot: SlotId,
        width: &'p Expr,
        pc: usize,
    },
    /// A repeat with `n` occurrences begins (its count field was the last step of `count`).
    Enter {
        count: SlotId,
        n: u64,
        single: bool,
        pc: usize,
    },
    /// Occurrence `index` of the innermost repeat begins.
    ItemStart { index: u64 },
    /// Occurrence `index` of the innermost repeat ends.
    ItemEnd { index: u64 },
    /// The repeat that began at `pc` ends.
    Leave { pc: usize },
    /// Only from [`Walk::next_run`]: consecutive `Int`/`Bytes` operations, the first at `pc`.
    Run { ops: &'p [Op], pc: usize },
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    left: u64,
    index: u64,
}

/// A cursor over one record program.
#[derive(Debug, Clone, Default)]
pub(crate) struct Walk {
    pc: usize,
    stack: Vec<Frame>,
    pending: Option<Pending>,
}

#[derive(Debug, Clone, Copy)]
enum Pending {
    ItemStart(u64),
    Leave(usize),
}

impl Walk {
    /// Start over at the beginning of a program (keeps the stack's allocation).
    #[inline]
    pub(crate) fn reset(&mut self) {
        self.pc = 0;
        self.stack.clear();
        self.pending = None;
    }

    /// As [`Walk::next`], but consecutive plain fields come as one [`Step::Run`], so that the
    /// decoder's and the encoder's inner loops pay for the walk once per run of fields rather
    /// than once per field.
    #[inline]
    pub(crate) fn next_run<'p>(
        &mut self,
        prog: &'p Program,
        count: impl FnMut(SlotId, usize) -> u64,
    ) -> Option<Step<'p>> {
        if self.pending.is_none() {
            let pc = self.pc;
            let end = *prog.run_end.get(pc)? as usize;
            if end > pc {
                self.pc = end;
                return Some(Step::Run {
                    ops: &prog.ops[pc..end],
                    pc,
                });
            }
        }
        self.next(prog, count)
    }

    /// The next step, or `None` at the end of the record. At a repeat, `count(count_slot, pc)`
    /// gives the number of occurrences.
    #[inline]
    pub(crate) fn next<'p>(
        &mut self,
        prog: &'p Program,
        mut count: impl FnMut(SlotId, usize) -> u64,
    ) -> Option<Step<'p>> {
        if let Some(p) = self.pending.take() {
            return Some(match p {
                Pending::ItemStart(index) => Step::ItemStart { index },
                Pending::Leave(pc) => Step::Leave { pc },
            });
        }
        let pc = self.pc;
        match prog.ops.get(pc)? {
            Op::Int(slot) => {
                self.pc += 1;
                Some(Step::Int { slot: *slot, pc })
            }
            Op::Bytes(slot, width) => {
                self.pc += 1;
                Some(Step::Bytes {
                    slot: *slot,
                    width,
                    pc,
                })
            }
            Op::Repeat {
                count: c,
                end,
                single,
            } => {
                let n = count(*c, pc);
                if n == 0 {
                    self.pc = *end as usize + 1;
                    self.pending = Some(Pending::Leave(pc));
                } else {
                    self.stack.push(Frame { left: n, index: 0 });
                    self.pc = pc + 1;
                    self.pending = Some(Pending::ItemStart(0));
                }
                Some(Step::Enter {
                    count: *c,
                    n,
                    single: *single,
                    pc,
                })
            }
            Op::EndRepeat { begin } => {
                let f = self.stack.last_mut().expect("balanced repeat");
                let index = f.index;
                f.left -= 1;
                f.index += 1;
                if f.left == 0 {
                    self.stack.pop();
                    self.pc = pc + 1;
                    self.pending = Some(Pending::Leave(*begin as usize));
                } else {
                    self.pc = *begin as usize + 1;
                    self.pending = Some(Pending::ItemStart(index + 1));
                }
                Some(Step::ItemEnd { index })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Compiled;

    fn steps(dtd: &str, record: &str, counts: &[u64]) -> Vec<String> {
        let schema = crate::dtd::parse_str("t.dtd", dtd).unwrap().schema;
        let rid = schema.record_by_name(0, record).unwrap();
        let c = Compiled::new(&schema);
        let prog = c.program(rid);
        let mut w = Walk::default();
        let mut out = Vec::new();
        let mut k = 0;
        while let Some(s) = w.next(prog, |_, _| {
            k += 1;
            counts[k - 1]
        }) {
            out.push(match s {
                Step::Int { pc, .. } | Step::Bytes { pc, .. } => {
                    format!("f:{}", prog.keys[pc])
                }
                Step::Enter { n, single, pc, .. } => {
                    format!(
                        "enter:{}:{n}:{}",
                        prog.keys[pc],
                        if single { "1" } else { "g" }
                    )
                }
                Step::ItemStart { index } => format!("item:{index}"),
                Step::ItemEnd { index } => format!("end:{index}"),
                Step::Leave { .. } => "leave".into(),
                Step::Run { .. } => unreachable!("next never groups fields"),
            });
        }
        out
    }

    #[test]
    fn runs_group_plain_fields_between_repeats() {
        let dtd = format!("{W} r : (tag, a, b, n*a, z) {{ tag.value = 9; }}");
        let schema = crate::dtd::parse_str("t.dtd", &dtd).unwrap().schema;
        let c = Compiled::new(&schema);
        let prog = c.program(schema.record_by_name(0, "r").unwrap());
        let mut w = Walk::default();
        let mut out = Vec::new();
        while let Some(s) = w.next_run(prog, |_, _| 2) {
            out.push(match s {
                Step::Run { ops, .. } => format!("run{}", ops.len()),
                Step::Enter { n, .. } => format!("enter{n}"),
                Step::ItemStart { .. } => "item".into(),
                Step::ItemEnd { .. } => "end".into(),
                Step::Leave { .. } => "leave".into(),
                Step::Int { .. } | Step::Bytes { .. } => "field".into(),
            });
        }
        assert_eq!(
            out.join(" "),
            "run3 enter2 item run1 end item run1 end leave run1"
        );
    }

    const W: &str = "a.width = 1; a.interpretation = none; b.width = 1; b.interpretation = none;
        n.width = 1; n.interpretation = none; z.width = 1; z.interpretation = none;";

    #[test]
    fn nested_repeats_with_the_same_name_keep_short_keys() {
        let dtd = format!("{W} r : (tag, n*(a, n*(a, b))) {{ tag.value = 9; }}");
        let s = steps(&dtd, "r", &[1, 2]);
        assert_eq!(
            s.join(" "),
            "f:n enter:n_items:1:g item:0 f:a f:n enter:n_items:2:g item:0 f:a f:b end:0 \
             item:1 f:a f:b end:1 leave end:0 leave"
        );
    }

    #[test]
    fn a_single_field_reached_through_nesting_is_one_list() {
        let dtd = format!("{W} p : (z); r : (tag, n*(p)) {{ tag.value = 9; }}");
        let s = steps(&dtd, "r", &[2]);
        assert_eq!(
            s.join(" "),
            "f:n enter:n_items.p.z:2:1 item:0 f: end:0 item:1 f: end:1 leave"
        );
        let dtd = format!("{W} p : (z); q : (p); r : (tag, n*q) {{ tag.value = 9; }}");
        let s = steps(&dtd, "r", &[0]);
        assert_eq!(s.join(" "), "f:n enter:q.p.z:0:1 leave");
    }

    #[test]
    fn scalar_repeat_is_keyed_by_its_field() {
        let dtd = format!("{W} r : (tag, n*a, b) {{ tag.value = 9; }}");
        assert_eq!(
            steps(&dtd, "r", &[1]).join(" "),
            "f:n enter:a:1:1 item:0 f: end:0 leave f:b"
        );
    }
}
