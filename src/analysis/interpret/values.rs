//! What the actions of one record read: its slots' values, byte counts, sites, names.

use crate::analysis::event::{HeapEvent, HeapOp, Places};
use crate::decode::{RecordView, Resolved, Value};
use crate::dtd::analysis::{AExpr, ActionKind, Bytes, RecordDecl, Site, SpaceId};
use crate::dtd::SlotId;

use super::finding::{At, Finding, FindingKind};
use super::sink::SinkDyn;
use super::state::Live;
use super::Interpreter;

/// Why a byte count is not known.
pub(super) enum Unknown {
    /// A lookup (`NS.G.value`) of an id of this namespace that is not alive.
    Dead(SpaceId),
    /// An overflow or a negative result.
    Arithmetic,
}

/// What the actions of one record share.
pub(super) struct Cx {
    pub(super) at: At,
    pub(super) thread: Option<u64>,
    pub(super) time: Option<u64>,
    pub(super) looked: Option<Looked>,
    /// The blocks this record's undefines freed, in field order, until they pair with its
    /// defines (`Interpreter::pair`).
    pub(super) freed: Vec<Freed>,
    /// Whether the freed blocks were paired (at the record's first define, open, or its end).
    pub(super) paired: bool,
    /// Whether the sink wants events ([`Sink::wants_events`]).
    pub(super) events: bool,
    /// The calling context of the ids the record defines (extension stacks/1).
    pub(super) stack: Option<u64>,
    /// The place of the block that the define being run put out of the live state (an
    /// allocation of an id that was alive), for its event.
    pub(super) replaced: u32,
}

impl Cx {
    /// The context of a record that frees nothing before its defines (`Plan`).
    pub(super) fn plain(at: At, thread: Option<u64>, time: Option<u64>, events: bool) -> Cx {
        Cx {
            at,
            thread,
            time,
            looked: None,
            freed: Vec::new(),
            paired: false,
            events,
            stack: None,
            replaced: super::state::NO_STORE,
        }
    }

    /// Reports an event, to a sink that wants events.
    pub(super) fn emit(
        &self,
        sink: &mut dyn SinkDyn,
        space: SpaceId,
        key: u64,
        site: Option<u64>,
        op: HeapOp,
        places: Places,
    ) {
        if self.events {
            sink.event_placed(
                HeapEvent {
                    record: self.at.record,
                    space,
                    key,
                    thread: self.thread,
                    time: self.time,
                    site,
                    stack: self.stack,
                    op,
                },
                places,
            );
        }
    }
}

/// A block an undefine freed, held until the record's defines pair with it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Freed {
    pub(super) space: SpaceId,
    pub(super) key: u64,
    pub(super) id: u64,
    pub(super) live: Live,
    /// The index (in the record's actions) of the define it pairs with: the block moves there.
    pub(super) to: Option<usize>,
}

#[derive(Debug, Clone)]
pub(super) enum Name {
    Text(Box<str>),
    Ref(SpaceId, u64),
}

/// The value a slot had in the current record.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct SlotVal {
    /// Generation of the record it belongs to (0: none).
    pub(super) gen: u64,
    pub(super) int: u64,
    /// Index of the field occurrence in the view, for text.
    pub(super) field: u32,
}

/// What a record looked up while its actions ran (for `Lookup` and inherited sites).
pub(super) struct Looked {
    pub(super) space: SpaceId,
    pub(super) stored: Vec<u64>,
    pub(super) site: Option<u64>,
}

impl<'s> Interpreter<'s> {
    /// The first occurrence of every slot of the record, as integers: a reference's value is the
    /// integer its element holds (a split address stream), else the number it carries.
    pub(super) fn load(&mut self, view: &RecordView<'_>) {
        self.gen += 1;
        let n = view.record().slots.len();
        if self.vals.len() < n {
            self.vals.resize(n, SlotVal::default());
        }
        let needed: &[bool] = self
            .needed
            .get(view.record_id() as usize)
            .map_or(&[], |b| b);
        // The integers straight from the decoded values (`RecordView::ints`); a `Field` is made
        // only of a reference (its element's integer) or a byte string.
        for (i, (slot, int)) in view.ints().enumerate() {
            let slot = slot as usize;
            if !needed.get(slot).copied().unwrap_or(false) {
                continue;
            }
            let Some(v) = self.vals.get_mut(slot) else {
                continue;
            };
            if v.gen == self.gen {
                continue;
            }
            let int = match int {
                Some(x) => x,
                None => match view.field_at(i).map(|f| (f.value(), f)) {
                    Some((Value::Int(x), _)) => x,
                    Some((Value::Ref(r), f)) => match f.resolve() {
                        Some(Ok(Resolved {
                            value: Value::Int(x),
                            ..
                        })) => x,
                        _ => r.number(),
                    },
                    Some((Value::Bytes(_), _)) | None => 0,
                },
            };
            *v = SlotVal {
                gen: self.gen,
                int,
                field: i as u32,
            };
        }
    }

    pub(super) fn int(&self, slot: SlotId) -> Option<u64> {
        let v = self.vals.get(slot as usize)?;
        (v.gen == self.gen).then_some(v.int)
    }

    pub(super) fn time(&self, decl: &RecordDecl) -> Option<u64> {
        let unit = self.decl.time_unit?;
        let mut total: Option<u64> = None;
        for &(slot, u) in &decl.time {
            if !decl.applies(slot, |s| self.int(s)) {
                continue; // a time the record does not carry (a guard's flag)
            }
            let v = self.int(slot)?;
            // Most times are in the trace's unit: no division then.
            let scale = if u == unit {
                1
            } else {
                (u.nanos() / unit.nanos()).max(1)
            };
            total = Some(total.unwrap_or(0).wrapping_add(v.wrapping_mul(scale)));
        }
        total
    }

    pub(super) fn bytes(
        &self,
        decl: &RecordDecl,
        looked: Option<&Looked>,
        at: At,
        sink: &mut dyn SinkDyn,
    ) -> Option<u64> {
        // The common count, one field's value without a guard: read, not evaluated.
        if let [Bytes {
            expr: AExpr::Field(s),
            when: None,
        }] = decl.bytes.as_slice()
        {
            return Some(self.int(*s).unwrap_or(0));
        }
        let b = decl
            .bytes
            .iter()
            .find(|b| b.when.is_some_and(|(s, v)| self.int(s) == Some(v)))
            .or_else(|| decl.bytes.iter().find(|b| b.when.is_none()))?;
        match self.eval(&b.expr, looked) {
            Ok(v) => Some(v),
            // The id the count reads a field of is not alive (docs/format.md §14.3): the count
            // cannot be computed, said with the severity the DTD gives the reference (which is
            // reported too, unless that is `normal`).
            Err(Unknown::Dead(space)) => {
                let refer = decl
                    .actions
                    .iter()
                    .find(|a| a.kind == ActionKind::Refer && a.space == space);
                let id = refer.and_then(|a| self.int(a.slot)).unwrap_or(0);
                let key = refer
                    .and_then(|a| a.key)
                    .and_then(|s| self.int(s))
                    .unwrap_or(0);
                self.bytes_unknown(space, key, id, at, sink);
                None
            }
            Err(Unknown::Arithmetic) => {
                sink.finding(Finding::error(FindingKind::Bytes, at));
                None
            }
        }
    }

    /// The finding of a byte count that reads a value kept with id `id` (key `key`) of
    /// `space`, which is not alive (docs/format.md §14.3): said with the severity the DTD
    /// gives the reference (which is reported too, unless that is `normal`).
    pub(super) fn bytes_unknown(
        &self,
        space: SpaceId,
        key: u64,
        id: u64,
        at: At,
        sink: &mut dyn SinkDyn,
    ) {
        sink.finding(Finding {
            severity: self.decl.namespaces[space as usize].unknown_refers,
            space: Some(space),
            key,
            id,
            what: Some("not alive".to_string()),
            ..Finding::error(FindingKind::Bytes, at)
        });
    }

    pub(super) fn eval(&self, e: &AExpr, looked: Option<&Looked>) -> Result<u64, Unknown> {
        let arith = |r: Option<u64>| r.ok_or(Unknown::Arithmetic);
        match e {
            AExpr::Const(v) => Ok(*v),
            // A field that did not occur (an empty repeat) reads 0, as in §3.4.
            AExpr::Field(s) => Ok(self.int(*s).unwrap_or(0)),
            AExpr::Lookup { space, stored } => looked
                .filter(|l| l.space == *space)
                .and_then(|l| l.stored.get(*stored as usize).copied())
                .ok_or(Unknown::Dead(*space)),
            AExpr::Add(a, b) => arith(self.eval(a, looked)?.checked_add(self.eval(b, looked)?)),
            AExpr::Sub(a, b) => arith(self.eval(a, looked)?.checked_sub(self.eval(b, looked)?)),
            AExpr::Mul(a, b) => arith(self.eval(a, looked)?.checked_mul(self.eval(b, looked)?)),
        }
    }

    pub(super) fn site(
        &mut self,
        decl: &RecordDecl,
        looked: Option<&Looked>,
        view: Option<&RecordView<'_>>,
        defined: SpaceId,
    ) -> Option<u64> {
        match decl.site? {
            Site::Field { slot, space } => {
                let v = self.int(slot)?;
                // A string reference: remember its text once per site.
                let key = (defined, v);
                if space.is_none()
                    && !self.text_sites.contains_key(&key)
                    && self.tracked < self.limit
                {
                    // From the view, or for a record run from its values, the text read for it
                    // (`Interpreter::record_values`).
                    let text = match view {
                        Some(view) => match self.name_of(slot, view) {
                            Some(Name::Text(t)) => Some(t),
                            _ => None,
                        },
                        None => self
                            .scan_text
                            .as_ref()
                            .filter(|(sv, _)| *sv == v)
                            .map(|(_, t)| t.clone()),
                    };
                    if let Some(t) = text {
                        self.tracked += 1;
                        self.text_sites.insert(key, t);
                    }
                }
                Some(v)
            }
            Site::Inherited { space } => looked.filter(|l| l.space == space)?.site,
        }
    }

    /// The name a field gives: its text (a byte string, or the element a reference leads to),
    /// or an id of the namespace it refers to.
    pub(super) fn name_of(&self, slot: SlotId, view: &RecordView<'_>) -> Option<Name> {
        let v = self.vals.get(slot as usize).filter(|v| v.gen == self.gen)?;
        let f = view.field_at(v.field as usize)?;
        let text = |b: &[u8]| Name::Text(String::from_utf8_lossy(b).into());
        match f.value() {
            Value::Bytes(b) => Some(text(b)),
            Value::Ref(_) => match f.resolve()? {
                Ok(r) => match r.value {
                    Value::Bytes(b) => Some(text(b)),
                    Value::Int(i) => Some(Name::Text(i.to_string().into())),
                    Value::Ref(r) => Some(Name::Text(r.to_string().into())),
                },
                Err(_) => None,
            },
            Value::Int(i) => {
                let rt = view.record_id();
                let decl = self.decl.record(rt);
                let target = decl
                    .actions
                    .iter()
                    .find(|a| a.slot == slot && a.kind == ActionKind::Refer)
                    .map(|a| a.space);
                match target {
                    Some(s) => Some(Name::Ref(s, i)),
                    None => Some(Name::Text(i.to_string().into())),
                }
            }
        }
    }
}

/// The slots a record type's declarations read (`Interpreter::int`, `Interpreter::name_of`),
/// as a mask over its `n` slots.
pub(super) fn needed_slots(decl: &RecordDecl, n: usize) -> Box<[bool]> {
    pub(super) fn expr(e: &AExpr, out: &mut Vec<SlotId>) {
        match e {
            AExpr::Const(_) | AExpr::Lookup { .. } => {}
            AExpr::Field(s) => out.push(*s),
            AExpr::Add(a, b) | AExpr::Sub(a, b) | AExpr::Mul(a, b) => {
                expr(a, out);
                expr(b, out);
            }
        }
    }
    let mut slots: Vec<SlotId> = Vec::new();
    for a in &decl.actions {
        slots.push(a.slot);
        slots.extend(a.key);
    }
    for b in &decl.bytes {
        expr(&b.expr, &mut slots);
        slots.extend(b.when.map(|(s, _)| s));
    }
    slots.extend(decl.guards.iter().map(|(_, g)| g.slot));
    slots.extend(decl.align);
    slots.extend(decl.resident);
    slots.extend(decl.time.iter().map(|&(s, _)| s));
    slots.extend(decl.thread);
    slots.extend(decl.sizes.iter().copied());
    if let Some(Site::Field { slot, .. }) = decl.site {
        slots.push(slot);
    }
    for m in &decl.monotonic {
        slots.extend(m.slot);
        slots.extend(m.key);
    }
    slots.extend(decl.depth.iter().map(|d| d.slot));
    slots.extend(decl.names.iter().map(|&(s, _)| s));
    slots.extend(decl.stores.iter().map(|&(_, _, s)| s));
    slots.extend(decl.stack.iter().map(|r| r.slot));
    let mut mask = vec![false; n];
    for s in slots {
        if let Some(m) = mask.get_mut(s as usize) {
            *m = true;
        }
    }
    mask.into_boxed_slice()
}
