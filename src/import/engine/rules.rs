//! A part's rules tried on the units at the front of the window: the candidates by the first
//! byte, the unit each rule reads, its values assembled, interned and resolved, and the record
//! written (or routed).

use std::collections::VecDeque;

use super::super::mapping::{Rule, Units};
use super::super::pattern::{FieldKind, Val};
use super::super::sink::{Sink, SinkError, Value};
use super::super::units::Eol;
use super::plans::first_line_lead;
use super::route::{flush_run, route};
use super::stream::Ahead;
use super::Importer;
use crate::limits::MAX_REPEAT_ITEMS;

/// A value of a record being assembled from a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// An integer.
    Int(u64),
    /// A byte offset (an interned string's, or a `ref`'s record's).
    Offset(u64),
    /// Bytes `start..end` of the unit, stored inline.
    Inline(usize, usize),
    /// Bytes `start..end` of the unit, to intern.
    Intern(usize, usize),
    /// The empty string, to intern.
    InternEmpty,
}

/// A line without its line end, and which line end it had.
fn split_eol(b: &[u8]) -> (usize, Eol) {
    if b.ends_with(b"\r\n") {
        (b.len() - 2, Eol::CrLf)
    } else if b.ends_with(b"\n") {
        (b.len() - 1, Eol::Lf)
    } else {
        (b.len(), Eol::None)
    }
}

/// The first line of a unit without its line end (`len`), its line end, and whether that is
/// the part's (or none, at the end of the input).
struct First {
    len: usize,
    eol: Eol,
    ok: bool,
}

/// The unit `rule` would read from `ahead` (one line, or `lines` lines joined by `\n` into
/// `joined`, all but the last with the part's line end) and its last line's end; `None` when
/// the lines cannot be its.
fn unit_of<'a>(
    rule: &Rule,
    lines: usize,
    ahead: &'a VecDeque<Ahead>,
    first: &First,
    part_eol: Eol,
    joined: &'a mut Vec<u8>,
) -> Option<(&'a [u8], Eol)> {
    let line = &ahead[0].buf[..first.len];
    if !line.starts_with(first_line_lead(rule, lines)) {
        return None;
    }
    if lines == 1 {
        return first.ok.then_some((line, first.eol));
    }
    if ahead.len() < lines {
        return None;
    }
    joined.clear();
    let mut last = Eol::None;
    let mut ok = true;
    for (k, a) in ahead.iter().take(lines).enumerate() {
        let (n, e) = split_eol(&a.buf);
        if k > 0 {
            joined.push(b'\n');
        }
        joined.extend_from_slice(&a.buf[..n]);
        ok &= e == part_eol || (k + 1 == lines && e == Eol::None);
        last = e;
    }
    ok.then_some((&joined[..], last))
}

impl Importer<'_, '_> {
    /// Try the part's rules on the units at the front of `ahead`; when a record was written,
    /// the number of units it took, whether its last line had no line end, and whether a
    /// `head` rule took them.
    pub(super) fn try_rules(
        &mut self,
        pi: usize,
        index: usize,
        ahead: &VecDeque<Ahead>,
        part_eol: Eol,
        shown: &str,
    ) -> Result<Option<(usize, bool, bool)>, SinkError> {
        let mut joined = std::mem::take(&mut self.joined);
        let taken = self.try_rules_in(pi, index, ahead, part_eol, shown, &mut joined);
        self.joined = joined;
        taken
    }

    /// [`Importer::try_rules`], with the scratch buffer of a unit of several lines.
    fn try_rules_in(
        &mut self,
        pi: usize,
        index: usize,
        ahead: &VecDeque<Ahead>,
        part_eol: Eol,
        shown: &str,
        joined: &mut Vec<u8>,
    ) -> Result<Option<(usize, bool, bool)>, SinkError> {
        let m = self.m;
        let part = &m.parts[pi];
        let xml = m.units == Units::Xml;
        let line = &ahead[0].buf;
        let (len, eol) = if xml {
            (line.len(), Eol::Lf)
        } else {
            split_eol(line)
        };
        let ok = eol == part_eol || eol == Eol::None;
        let first = First { len, eol, ok };
        let key = line[..len].first().map_or(256, |&b| b as usize);
        // Within the header block, `head` rules are tried first, then the others: a header may
        // be shorter than the block (malloc-lab's 2-line header), and the header is over when
        // another rule takes a unit. After the block, only the others.
        let in_header = index < part.header && !self.body_seen;
        let mut unfit: Option<String> = None;
        let candidates = self.dispatch[pi][key].len();
        for k in 0..candidates * if in_header { 2 } else { 1 } {
            let head_pass = in_header && k < candidates;
            let ri = self.dispatch[pi][key][k % candidates] as usize;
            let rule = &part.rules[ri];
            let lines = self.rules[pi][ri].lines;
            let placed = if rule.head {
                head_pass && index + lines <= part.header
            } else {
                !head_pass
            };
            if !placed {
                continue;
            }
            let Some((unit, last_eol)) = unit_of(rule, lines, ahead, &first, part_eol, joined)
            else {
                continue;
            };
            if rule.pattern.matches(unit, &mut self.vals).is_none() {
                continue;
            }
            if let Some(why) = self.fill(pi, ri) {
                unfit.get_or_insert(why);
                continue;
            }
            // Export renders a record with the first rule of its type that applies: take the
            // unit only if no earlier rule of the same record type would be chosen instead.
            if !self.first_to_apply(pi, ri) {
                continue;
            }
            // Intern strings first (an over-long string makes the unit raw).
            if !self.intern(pi, ri, unit)? || !self.resolve_refs(pi, ri) {
                continue;
            }
            match self.write_unit(pi, ri, unit) {
                Ok(()) => {
                    self.took(pi, ri);
                    return Ok(Some((lines, !xml && last_eol == Eol::None, rule.head)));
                }
                Err(SinkError::Unrepresentable(why)) => {
                    unfit.get_or_insert(why);
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(why) = unfit {
            self.report.unfit += 1;
            if self.report.first_unfit.is_none() {
                self.report.first_unfit = Some((shown.to_string(), ahead[0].line, why));
            }
        }
        Ok(None)
    }

    /// The records of the part's `emit` lines (docs/mappings.md), at the start of an input of
    /// the part: each line through its `implied` rule, as a unit of input would be.
    pub(super) fn emit_implied(&mut self, pi: usize) -> Result<(), SinkError> {
        let part = &self.m.parts[pi];
        for e in &part.emits {
            let line = e.line.as_bytes();
            let fails = |why: &str| {
                SinkError::Fatal(format!(
                    "`emit` at line {} of mapping `{}`: {why}",
                    e.lineno, self.m.name
                ))
            };
            if part.rules[e.rule]
                .pattern
                .matches(line, &mut self.vals)
                .is_none()
            {
                return Err(fails("the line does not match its record's pattern"));
            }
            if let Some(why) = self.fill(pi, e.rule) {
                return Err(fails(&why));
            }
            if !self.intern(pi, e.rule, line)? {
                return Err(fails("a string of the line cannot be stored"));
            }
            self.write_unit(pi, e.rule, line)
                .map_err(|err| fails(&err.to_string()))?;
        }
        Ok(())
    }

    /// The record's values from the pattern's, the rule's `set` constants and the part's kept
    /// values, in `self.fin`, then the items of its repeated group; why not, when the group
    /// has more items than the limit.
    fn fill(&mut self, pi: usize, ri: usize) -> Option<String> {
        let rp = &self.rules[pi][ri];
        let pattern = &self.m.parts[pi].rules[ri].pattern;
        let items = pattern.items(self.vals.len());
        if items > MAX_REPEAT_ITEMS {
            let name = pattern.repeat.as_ref().map_or("", |r| r.name.as_str());
            return Some(format!(
                "{items} items of repeat `{name}`, more than the limit of {MAX_REPEAT_ITEMS}"
            ));
        }
        self.fin.clear();
        self.fin.extend(rp.types.iter().map(|t| match t {
            FieldKind::Int => Slot::Int(0),
            FieldKind::Interned(_) => Slot::InternEmpty,
            FieldKind::Inline => Slot::Inline(0, 0),
        }));
        for &(k, v) in &rp.set {
            self.fin[k] = Slot::Int(v);
        }
        for &(k, c) in &rp.keep_in {
            self.fin[k] = Slot::Int(self.kept[c]);
        }
        let (own, item_vals) = self.vals.split_at(rp.slot_of.len().min(self.vals.len()));
        for (k, v) in own.iter().enumerate() {
            let slot = rp.slot_of[k];
            self.fin[slot] = match (&rp.types[slot], *v) {
                (FieldKind::Interned(_), Val::Span(a, b)) => Slot::Intern(a, b),
                (FieldKind::Interned(_), Val::Int(_)) => Slot::InternEmpty,
                (FieldKind::Inline, Val::Span(a, b)) => Slot::Inline(a, b),
                (FieldKind::Inline, Val::Int(_)) => Slot::Inline(0, 0),
                (FieldKind::Int, Val::Int(x)) => Slot::Int(x),
                (FieldKind::Int, Val::Span(..)) => Slot::Int(0),
            };
        }
        // The repeated group's items follow the record's own values.
        self.fin.extend(item_vals.iter().map(|v| match *v {
            Val::Int(x) => Slot::Int(x),
            Val::Span(..) => Slot::Int(0),
        }));
        None
    }

    /// Whether rule `ri` applies to the values in `self.fin` and no earlier rule of the same
    /// record type does.
    fn first_to_apply(&self, pi: usize, ri: usize) -> bool {
        let (part, rp, fin) = (&self.m.parts[pi], &self.rules[pi][ri], &self.fin);
        let get = |n: &str| -> u64 {
            match rp.names.iter().position(|x| x == n).map(|i| fin[i]) {
                Some(Slot::Int(v)) => v,
                _ => 0,
            }
        };
        !rp.earlier.iter().any(|&j| part.rules[j].applies(&get)) && part.rules[ri].applies(&get)
    }

    /// Intern the record's strings (of `unit`) into their tables; `false` when one cannot be
    /// stored (the unit is kept raw), an error when a table holds more than the limit.
    fn intern(&mut self, pi: usize, ri: usize, unit: &[u8]) -> Result<bool, SinkError> {
        let rp = &self.rules[pi][ri];
        for k in 0..self.fin.len() {
            let text = match self.fin[k] {
                Slot::Intern(a, b) => &unit[a..b],
                Slot::InternEmpty => &[][..],
                _ => continue,
            };
            let FieldKind::Interned(t) = rp.types[k] else {
                continue;
            };
            let plan = self.table_plans[t];
            let sink = &self.sink;
            let table = &self.tables[t];
            if table.held + text.len() as u64 > self.string_limit && !table.contains(text) {
                return Err(SinkError::Fatal(format!(
                    "a string table holds more than {} bytes of distinct strings (the limit)",
                    self.string_limit
                )));
            }
            match self.tables[t].intern(text, |n| sink.record_size(plan, n)) {
                Some(o) => self.fin[k] = Slot::Offset(o),
                None => return Ok(false),
            }
        }
        Ok(true)
    }

    /// `ref` fields: a 1-based index of a record already routed to the section becomes that
    /// record's offset; `false` when one does not match (0, or an index not yet seen).
    fn resolve_refs(&mut self, pi: usize, ri: usize) -> bool {
        for &(k, t) in &self.rules[pi][ri].refs {
            let off = match (&self.routed[t].offsets, self.fin[k]) {
                (Some(o), Slot::Int(v)) if v >= 1 && v <= o.len() as u64 => o[v as usize - 1],
                _ => return false,
            };
            self.fin[k] = Slot::Offset(off);
        }
        true
    }

    /// Write the record of rule `ri` with the values in `self.fin` (of `unit`) to the part's
    /// section, or route it.
    fn write_unit(&mut self, pi: usize, ri: usize, unit: &[u8]) -> Result<(), SinkError> {
        let rp = &self.rules[pi][ri];
        let ins: Vec<Value> = self
            .fin
            .iter()
            .map(|&v| match v {
                Slot::Int(a) => Value::Int(a),
                Slot::Offset(a) => Value::Offset(a),
                Slot::Inline(a, b) | Slot::Intern(a, b) => Value::Bytes(&unit[a..b]),
                Slot::InternEmpty => Value::Bytes(b""),
            })
            .collect();
        match rp.route {
            Some(t) => route(
                &mut self.sink,
                &mut self.routed,
                &mut self.run,
                self.p.routed,
                (t, rp.plan),
                &ins,
            ),
            None => {
                flush_run(&mut self.sink, &mut self.run, self.p.routed)?;
                self.sink.write(rp.plan, &ins)
            }
        }
    }

    /// After rule `ri` wrote its record: the kept values, the header's `limit`, the end of
    /// the header.
    fn took(&mut self, pi: usize, ri: usize) {
        let (part, rp) = (&self.m.parts[pi], &self.rules[pi][ri]);
        for &(k, c) in &rp.keep_out {
            if let Slot::Int(v) = self.fin[k] {
                self.kept[c] = v;
            }
        }
        if let Some(k) = rp.limit {
            if let Slot::Int(v) = self.fin[k] {
                self.left = Some(v);
                if self.report.limit.is_none() {
                    let name = part.limit.clone().unwrap_or_default();
                    self.report.limit = Some((name, v));
                }
            }
        }
        self.body_seen |= !part.rules[ri].head;
    }
}
