//! Fields given by name → the encoder's ordered values: the one place where left-out counts and
//! lengths are computed and where keys are matched to the layout (docs/text-format.md).
//!
//! The text reader, the JSON-lines reader and the by-name writer API all build [`Fields`] and
//! hand them here.

// Design: the assembler steps through the record's program with the same walker as the encoder,
// taking a repeat's count from the length of the list given for it, so keys, nesting and the
// order of values cannot disagree with what the encoder (and the decoder) will walk. A left-out
// length is solved from its byte string when the width expression is linear in it
// (`a·X + b`, any other terms already known); a left-out count from its list.

use crate::dtd::{Expr, RecordType, SlotId};
use crate::layout::{Op, Program, Step, Walk};

use super::encoder::In;
use super::error::{EncodeError, EncodeErrorKind as K};

/// A value given for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldIn {
    /// An integer (modulo 2⁶⁴).
    Int(u64),
    /// A negative integer (two's complement).
    Neg(i64),
    /// A byte string.
    Bytes(Vec<u8>),
    /// A `sectionOffset`: the byte offset.
    Offset(u64),
    /// A `sectionStride`: the element index.
    Index(i64),
    /// The occurrences of a repeat whose item is one field.
    List(Vec<FieldIn>),
    /// One occurrence of a repeat whose item has several fields, keyed relative to the item.
    Group(Fields),
}

/// Values keyed by display name (docs/text-format.md), in the order given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields(pub Vec<(String, FieldIn)>);

impl Fields {
    /// No fields.
    pub fn new() -> Fields {
        Fields::default()
    }

    /// Add a field.
    pub fn push(&mut self, key: impl Into<String>, value: FieldIn) {
        self.0.push((key.into(), value));
    }

    fn find(&self, key: &str, used: &mut [bool]) -> Result<Option<(usize, &FieldIn)>, usize> {
        let mut found = None;
        for (i, (k, v)) in self.0.iter().enumerate() {
            if k == key {
                if found.is_some() {
                    return Err(i);
                }
                found = Some((i, v));
            }
        }
        if let Some((i, _)) = found {
            used[i] = true;
        }
        Ok(found)
    }
}

/// An assembly error and the index of the top-level key it concerns (for a column).
pub(crate) type AssembleError = (Option<usize>, EncodeError);

struct Level<'f> {
    fields: &'f Fields,
    used: Vec<bool>,
    /// Index of the top-level key this level came from.
    top: Option<usize>,
}

/// Turn keyed values into the encoder's ordered list for record type `rt` with program `prog`.
pub(crate) fn assemble(
    rt: &RecordType,
    prog: &Program,
    fields: &Fields,
) -> Result<Vec<In>, AssembleError> {
    let mut a = Assembly {
        rt,
        prog,
        out: Vec::new(),
        known: vec![None; rt.slots.len()],
        levels: vec![Level {
            fields,
            used: vec![false; fields.0.len()],
            top: None,
        }],
        lists: Vec::new(),
    };
    let mut walk = Walk::default();
    loop {
        // The count of a repeat is the length of the list given for it.
        let mut found = RepeatKey::default();
        let lv = a.levels.last_mut().expect("a level");
        let step = walk.next(prog, |_, pc| found.count(lv, &prog.keys[pc]));
        let Some(step) = step else { break };
        match step {
            Step::Int { slot, pc } => a.field(slot, pc, true)?,
            Step::Bytes { slot, pc, .. } => a.field(slot, pc, false)?,
            Step::Enter {
                count, n, single, ..
            } => a.enter(count, n, single, found)?,
            Step::ItemStart { index } => a.item_start(index)?,
            Step::ItemEnd { .. } => a.item_end()?,
            Step::Leave { .. } => {
                a.lists.pop();
            }
            Step::Run { .. } => unreachable!("`next` yields fields one by one"),
        }
    }
    let lv = a.levels.pop().expect("top level");
    if let Some(i) = lv.used.iter().position(|u| !u) {
        return Err(fail(
            rt,
            Some(i),
            None,
            K::UnknownField {
                record: rt.name.clone(),
                key: lv.fields.0[i].0.clone(),
            },
        ));
    }
    Ok(a.out)
}

/// An error about `field` of `rt`, from top-level key `top`.
fn fail(rt: &RecordType, top: Option<usize>, field: Option<&str>, k: K) -> AssembleError {
    (top, EncodeError::at(&rt.name, field, k))
}

/// The assembly of one record: the values so far, and where the walk stands in the keys given.
struct Assembly<'f, 'r> {
    rt: &'r RecordType,
    prog: &'r Program,
    out: Vec<In>,
    /// The value of each field so far (a count, a length, an integer), for left-out ones.
    known: Vec<Option<u64>>,
    levels: Vec<Level<'f>>,
    /// For each open repeat: its list (when given), whether the item is one field, and the
    /// index of the item being assembled.
    lists: Vec<(Option<&'f [FieldIn]>, bool, usize)>,
}

/// What the key of a repeat's count held, found when the walker asked for the count.
#[derive(Default)]
struct RepeatKey<'f> {
    /// The list and the index of its key (`(None, None)`: not given).
    list: Option<(Option<&'f [FieldIn]>, Option<usize>)>,
    /// The key holds something else than a list, or appears twice: (key index, error).
    shape_err: Option<(usize, K)>,
}

impl<'f> RepeatKey<'f> {
    /// The count of the repeat whose key is `key` in `lv`: the length of its list.
    fn count(&mut self, lv: &mut Level<'f>, key: &str) -> u64 {
        match lv.fields.find(key, &mut lv.used) {
            Ok(Some((i, FieldIn::List(l)))) => {
                self.list = Some((Some(l.as_slice()), Some(i)));
                l.len() as u64
            }
            Ok(Some((i, _))) => {
                self.shape_err = Some((i, K::Shape("expected a list [ … ]")));
                0
            }
            Ok(None) => {
                self.list = Some((None, None));
                0
            }
            Err(i) => {
                let key = key.to_string();
                self.shape_err = Some((i, K::DuplicateField { key }));
                0
            }
        }
    }
}

impl<'f> Assembly<'f, '_> {
    /// The top-level key of the current level.
    fn top(&self) -> Option<usize> {
        self.levels.last().and_then(|l| l.top)
    }

    /// The value of integer (`is_int`) or byte-string field `slot` at `pc`.
    fn field(&mut self, slot: SlotId, pc: usize, is_int: bool) -> Result<(), AssembleError> {
        let rt = self.rt;
        let value = self.given(pc)?;
        let top = self.top();
        let name = &*rt.slots[slot as usize].name;
        let input = match value {
            Some(v) => to_in(v).map_err(|k| fail(rt, top, Some(name), k))?,
            None => {
                // A left-out count or length, when it can be computed.
                let fields = self.levels.last().expect("level").fields;
                match infer(self.prog, pc, slot, fields, &self.known) {
                    Some(Ok(v)) => In::Int(v),
                    Some(Err(k)) => return Err(fail(rt, top, Some(name), k)),
                    None => In::Auto,
                }
            }
        };
        // An integer written as a decimal string (`mtf dump --format jsonl --int-strings`, for
        // JSON tools that lose precision above 2^53).
        let input = match input {
            In::Bytes(b) if is_int => decimal(&b).unwrap_or(In::Bytes(b)),
            other => other,
        };
        self.known[slot as usize] = match &input {
            In::Int(v) => Some(*v),
            In::Neg(v) => Some(*v as u64),
            In::Bytes(b) => Some(b.len() as u64),
            In::Offset(o) => Some(*o),
            _ => None,
        };
        self.out.push(input);
        Ok(())
    }

    /// The value given for the field at `pc`: the item of a one-field repeat's list, or the
    /// value of its key.
    fn given(&mut self, pc: usize) -> Result<Option<FieldIn>, AssembleError> {
        if let Some((list, true, index)) = self.lists.last() {
            return Ok(list.and_then(|l| l.get(*index)).cloned());
        }
        let lv = self.levels.last_mut().expect("a level");
        let key = &*self.prog.keys[pc];
        match lv.fields.find(key, &mut lv.used) {
            Ok(found) => Ok(found.map(|(_, v)| v.clone())),
            Err(i) => {
                let top = lv.top.or(Some(i));
                let key = key.to_string();
                Err(fail(
                    self.rt,
                    top,
                    Some(&key),
                    K::DuplicateField { key: key.clone() },
                ))
            }
        }
    }

    /// A repeat of `n` items whose count is field `count` begins.
    fn enter(
        &mut self,
        count: SlotId,
        n: u64,
        single: bool,
        found: RepeatKey<'f>,
    ) -> Result<(), AssembleError> {
        let rt = self.rt;
        let top_of = |a: &Self, i: Option<usize>| a.levels.last().expect("level").top.or(i);
        let name = Some(&*rt.slots[count as usize].name);
        if let Some((i, k)) = found.shape_err {
            return Err(fail(rt, top_of(self, Some(i)), name, k));
        }
        let (list, key_index) = found.list.unwrap_or((None, None));
        // A count given explicitly must agree with its list (an absent list has no items).
        if let Some(c) = self.known[count as usize] {
            if c != n {
                let k = K::CountMismatch { count: c, items: n };
                return Err(fail(rt, top_of(self, key_index), name, k));
            }
        }
        self.lists.push((list, single, 0));
        Ok(())
    }

    /// Item `index` of the innermost repeat begins: a group's keys become the current level.
    fn item_start(&mut self, index: u64) -> Result<(), AssembleError> {
        let top = self.top();
        let (list, single, i) = self.lists.last_mut().expect("open repeat");
        *i = index as usize;
        if *single {
            return Ok(());
        }
        let item = list.and_then(|l| l.get(index as usize));
        let Some(FieldIn::Group(g)) = item else {
            let k = K::Shape("each item of this list must be a { … } group");
            return Err(fail(self.rt, top, None, k));
        };
        self.levels.push(Level {
            fields: g,
            used: vec![false; g.0.len()],
            top,
        });
        Ok(())
    }

    /// An item ends: every key of its group must have been used.
    fn item_end(&mut self) -> Result<(), AssembleError> {
        let (_, single, _) = self.lists.last().expect("open repeat");
        if !*single {
            let lv = self.levels.pop().expect("item level");
            check_used(self.rt, &lv).map_err(|k| fail(self.rt, lv.top, None, k))?;
        }
        Ok(())
    }
}

fn check_used(rt: &RecordType, lv: &Level) -> Result<(), K> {
    match lv.used.iter().position(|u| !u) {
        Some(i) => Err(K::UnknownField {
            record: rt.name.clone(),
            key: lv.fields.0[i].0.clone(),
        }),
        None => Ok(()),
    }
}

/// `123` or `-5` as an integer input; `None` for anything else.
fn decimal(b: &[u8]) -> Option<In> {
    let s = std::str::from_utf8(b).ok()?;
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if s.starts_with('-') {
        s.parse::<i64>().ok().map(In::Neg)
    } else {
        s.parse::<u64>().ok().map(In::Int)
    }
}

fn to_in(v: FieldIn) -> Result<In, K> {
    Ok(match v {
        FieldIn::Int(i) => In::Int(i),
        FieldIn::Neg(i) => In::Neg(i),
        FieldIn::Bytes(b) => In::Bytes(b),
        FieldIn::Offset(o) => In::Offset(o),
        FieldIn::Index(i) => In::Index(i),
        FieldIn::List(_) => return Err(K::Shape("a list where one value was expected")),
        FieldIn::Group(_) => return Err(K::Shape("a group where one value was expected")),
    })
}

/// A left-out value that the rest of the line determines: the count of the repeat that follows
/// it (the length of its list), or the length of a later byte string of the same level whose
/// width expression is linear in it. `None` when nothing determines it.
fn infer(
    prog: &Program,
    pc: usize,
    slot: SlotId,
    fields: &Fields,
    known: &[Option<u64>],
) -> Option<Result<u64, K>> {
    // A count field is emitted right before its repeat.
    if let Some(Op::Repeat { count, .. }) = prog.ops.get(pc + 1) {
        if *count == slot {
            let key = &*prog.keys[pc + 1];
            return match fields.0.iter().find(|(k, _)| k == key) {
                Some((_, FieldIn::List(l))) => Some(Ok(l.len() as u64)),
                _ => Some(Ok(0)),
            };
        }
    }
    // A length: the first later byte string at this level whose width uses this slot.
    let mut depth = 0i32;
    for (i, op) in prog.ops.iter().enumerate().skip(pc + 1) {
        match op {
            Op::Repeat { .. } => depth += 1,
            Op::EndRepeat { .. } => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            Op::Bytes(_, width) if depth == 0 && uses(width, slot) => {
                let key = &*prog.keys[i];
                let Some((_, FieldIn::Bytes(b))) = fields.0.iter().find(|(k, _)| k == key) else {
                    return None;
                };
                return Some(solve(width, slot, b.len() as u64, known).ok_or(K::CannotInfer));
            }
            _ => {}
        }
    }
    None
}

fn uses(e: &Expr, slot: SlotId) -> bool {
    match e {
        Expr::Const(_) => false,
        Expr::Value(s) => *s == slot,
        Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Mul(a, b) => uses(a, slot) || uses(b, slot),
    }
}

/// Solve `width(X) = len` for the value X of `slot`, when `width` is `a·X + b` over known
/// values, with an exact, non-negative solution.
fn solve(width: &Expr, slot: SlotId, len: u64, known: &[Option<u64>]) -> Option<u64> {
    // (a, b) with the expression equal to a·X + b; signed 128-bit to keep differences exact.
    fn lin(e: &Expr, slot: SlotId, known: &[Option<u64>]) -> Option<(i128, i128)> {
        Some(match e {
            Expr::Const(c) => (0, *c as i128),
            Expr::Value(s) if *s == slot => (1, 0),
            Expr::Value(s) => (0, known.get(*s as usize).copied().flatten()? as i128),
            Expr::Add(a, b) => {
                let (a1, b1) = lin(a, slot, known)?;
                let (a2, b2) = lin(b, slot, known)?;
                (a1.checked_add(a2)?, b1.checked_add(b2)?)
            }
            Expr::Sub(a, b) => {
                let (a1, b1) = lin(a, slot, known)?;
                let (a2, b2) = lin(b, slot, known)?;
                (a1.checked_sub(a2)?, b1.checked_sub(b2)?)
            }
            Expr::Mul(a, b) => {
                let (a1, b1) = lin(a, slot, known)?;
                let (a2, b2) = lin(b, slot, known)?;
                if a1 != 0 && a2 != 0 {
                    return None;
                }
                (
                    a1.checked_mul(b2)?.checked_add(a2.checked_mul(b1)?)?,
                    b1.checked_mul(b2)?,
                )
            }
        })
    }
    let (a, b) = lin(width, slot, known)?;
    if a == 0 {
        return None;
    }
    let num = len as i128 - b;
    if num % a != 0 {
        return None;
    }
    let x = num / a;
    u64::try_from(x).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_lengths_are_solved() {
        let x = Box::new(Expr::Value(1));
        let two = Box::new(Expr::Const(2));
        let e = Expr::Add(
            Box::new(Expr::Mul(x.clone(), two.clone())),
            Box::new(Expr::Const(4)),
        );
        assert_eq!(solve(&e, 1, 10, &[None, None]), Some(3));
        assert_eq!(solve(&e, 1, 9, &[None, None]), None);
        assert_eq!(solve(&e, 1, 2, &[None, None]), None);
        let sq = Expr::Mul(x.clone(), x);
        assert_eq!(solve(&sq, 1, 4, &[None, None]), None);
        assert_eq!(solve(&Expr::Value(1), 1, 7, &[None, None]), Some(7));
    }
}
