//! Records run from a scan's values without loading them: the common heap record types.

use crate::analysis::event::{HeapOp, Places};
use crate::dtd::analysis::{
    AExpr, ActionKind, Analysis, Guard, RecordDecl, Site, SpaceId, SpaceKind,
};
use crate::dtd::SlotId;

use super::actions::alloc;
use super::finding::At;
use super::sink::SinkDyn;
use super::state::{Live, NO_STORE};
use super::values::Cx;
use super::{Interpreter, Plan};

// Design (direct records): a record a scan stepped over comes as the values of the fields its
// type's declarations read (`Interpreter::record_values`). Loading them into the per-slot
// table, for the time, the thread, the monotonic series and the action to read back one at a
// time, was about a third of what `mtf check` spent per record. For the record types most of a
// heap trace is made of — one define or one undefine of a namespace of ids, or nothing but a
// time (`Plan`), or a reference followed by a define whose byte count and site may be the id
// referred to's (heaptrack's `+ i`) — whose time is one field (under a guard of its own, if
// any), whose monotonic series is at most one over the whole trace, and whose define reads no
// more than a byte count and a site, where each of those is found in the values is worked out
// once, and the record is run from there: the same steps (`Interpreter::mono_step`,
// `Interpreter::end_id`, `Interpreter::refer`, and `Interpreter::define`'s for such a define)
// in the same order as `Interpreter::run`, so the same events and findings. Any other type is
// loaded and run as before. Android's records are of this kind too: a free that says how many
// bytes of its block were resident (under a guard of its own), and an allocation whose byte
// count has a guarded alternative (calloc's `nmemb × size`, `func` 1) and which gives an
// alignment; a record whose guarded count applies is loaded and run as before (`Direct::runs`),
// the others directly.
/// Where a direct record type's values are (positions in the values a scan gives) and what it
/// does (see the design note above).
#[derive(Debug, Clone, Copy)]
pub(super) struct Direct {
    /// The record's time: its one field's position and scale to the trace's unit; `None` when
    /// it has none (the clock stays).
    time: Option<(u8, u64)>,
    /// The guard of that field, if any (`start.when = start; start.isNot = 0;`).
    time_guard: Option<Guarded>,
    thread: Option<u8>,
    /// The field of the resident bytes of the block it ends (`present.resident = yes;`): its
    /// position, and its guard as `time_guard`'s.
    resident: Option<(u8, Option<Guarded>)>,
    /// Its one monotonic series over the whole trace (an index into the declaration's list,
    /// always 0) and the position of its value (`None`: the record's time).
    mono: Option<Option<u8>>,
    op: Op,
}

/// A guard of a field of a direct record: the position of the field it tests (`None`: a field
/// not read, which holds no value) and the guard.
type Guarded = (Option<u8>, Guard);

/// A direct define's byte count: the position of its field, if any, and of the field whose
/// value makes a guarded count apply, with that value ([`guarded_count`]).
type GuardedCount = (Option<u8>, Option<(u8, u64)>);

#[derive(Debug, Clone, Copy)]
enum Op {
    Quiet,
    Free {
        space: SpaceId,
        id: u8,
        key: Option<u8>,
        nulls: (bool, bool),
    },
    /// A define whose byte count, if any, is the value at `bytes`, with the alignment at
    /// `align`, if any; a record whose value at `general.0` is `general.1` is not run directly
    /// (a guarded byte count applies: `Direct::runs`).
    Alloc {
        space: SpaceId,
        id: u8,
        key: Option<u8>,
        bytes: Option<u8>,
        align: Option<u8>,
        general: Option<(u8, u64)>,
    },
    /// A reference to an id of namespace `to` (at `to_id`, its key at `to_key`), then a define
    /// as `Alloc`'s whose byte count may be a value kept with the id referred to and whose
    /// site may be that id's (heaptrack's `+ i`: `info.refers = allocinfo; info.defines =
    /// block; info.bytes = allocinfo.size.value; info.site = allocinfo;`).
    ReferAlloc {
        to: SpaceId,
        to_id: u8,
        to_key: Option<u8>,
        space: SpaceId,
        id: u8,
        key: Option<u8>,
        count: Count,
        inherit_site: bool,
    },
}

/// Where a direct define's byte count comes from.
#[derive(Debug, Clone, Copy)]
enum Count {
    None,
    /// The value at this position.
    Field(u8),
    /// Value `stored` kept with the id the record refers to.
    Stored(u16),
}

/// What a direct define's byte count is when it is run (`Interpreter::define_plain`).
#[derive(Debug, Clone, Copy)]
enum Bytes {
    None,
    Known(u64),
    /// Value `stored` kept with id `id` (key `key`) of namespace `space`, which the record
    /// referred to: read from `Cx::looked`, which holds it if that id is alive.
    Stored {
        space: SpaceId,
        stored: u16,
        key: u64,
        id: u64,
    },
}

impl Direct {
    /// How a record type whose values come in the order of `slots` runs directly, if it can.
    pub(super) fn of(
        decl: &RecordDecl,
        plan: Plan,
        analysis: &Analysis,
        slots: &[SlotId],
    ) -> Option<Direct> {
        let pos = |s: SlotId| slots.iter().position(|&x| x == s).map(|p| p as u8);
        // An optional field's position: `None` when a field it names is not among the values.
        let opt = |s: Option<SlotId>| match s {
            Some(s) => pos(s).map(Some),
            None => Some(None),
        };
        if !decl.stack.is_empty() {
            return None;
        }
        // Guards only of the time field and of the resident bytes, one each (the plan holds
        // none of its action's).
        let time_slot = match decl.time.as_slice() {
            [(s, _)] => Some(*s),
            _ => None,
        };
        if time_slot.is_some() && time_slot == decl.resident {
            return None;
        }
        let (mut time_guard, mut resident_guard) = (None, None);
        for &(s, g) in &decl.guards {
            let to = if Some(s) == time_slot {
                &mut time_guard
            } else if Some(s) == decl.resident {
                &mut resident_guard
            } else {
                return None;
            };
            if to.is_some() {
                return None;
            }
            *to = Some((pos(g.slot), g));
        }
        let resident = match decl.resident {
            Some(s) => Some((pos(s)?, resident_guard)),
            None => None,
        };
        let time = match decl.time.as_slice() {
            _ if analysis.time_unit.is_none() => None,
            [] => None,
            [(slot, u)] => {
                let unit = analysis.time_unit?;
                let scale = if *u == unit {
                    1
                } else {
                    (u.nanos() / unit.nanos()).max(1)
                };
                Some((pos(*slot)?, scale))
            }
            _ => return None,
        };
        let thread = opt(decl.thread)?;
        let mono = match decl.monotonic.as_slice() {
            [] => None,
            [m] if m.key.is_none() => Some(opt(m.slot)?),
            _ => return None,
        };
        let op = match plan {
            Plan::General => Self::refer_alloc(decl, analysis, &pos, &opt)?,
            Plan::Quiet => Op::Quiet,
            Plan::Free {
                space,
                slot,
                key,
                nulls,
            } => Op::Free {
                space,
                id: pos(slot)?,
                key: opt(key)?,
                nulls,
            },
            Plan::Alloc { space, slot, key } => {
                if !plain_define(decl, analysis, space) || decl.site.is_some() {
                    return None;
                }
                let (bytes, general) = guarded_count(decl, &pos)?;
                Op::Alloc {
                    space,
                    id: pos(slot)?,
                    key: opt(key)?,
                    bytes,
                    align: opt(decl.align)?,
                    general,
                }
            }
        };
        Some(Direct {
            time,
            time_guard,
            thread,
            resident,
            mono,
            op,
        })
    }

    /// Whether a record with these values runs directly: not one whose guarded byte count
    /// applies (it is loaded and run by `Interpreter::run`).
    #[inline(always)]
    pub(super) fn runs(&self, v: &[u64]) -> bool {
        match self.op {
            Op::Alloc {
                general: Some((p, value)),
                ..
            } => v.get(p as usize) != Some(&value),
            _ => true,
        }
    }

    /// `Op::ReferAlloc` for a record whose actions are one unguarded reference and one
    /// unguarded define in a namespace of ids (in the order they apply, §14.1).
    fn refer_alloc(
        decl: &RecordDecl,
        analysis: &Analysis,
        pos: &dyn Fn(SlotId) -> Option<u8>,
        opt: &dyn Fn(Option<SlotId>) -> Option<Option<u8>>,
    ) -> Option<Op> {
        let [r, d] = decl.actions.as_slice() else {
            return None;
        };
        if r.kind != ActionKind::Refer || d.kind != ActionKind::Define {
            return None;
        }
        // (The guards are only of the time and the resident bytes: `Direct::of` has seen to
        // that.)
        if !plain_define(decl, analysis, d.space) || decl.align.is_some() {
            return None;
        }
        let inherit_site = match decl.site {
            None => false,
            Some(Site::Inherited { space }) if space == r.space => true,
            Some(_) => return None,
        };
        Some(Op::ReferAlloc {
            to: r.space,
            to_id: pos(r.slot)?,
            to_key: opt(r.key)?,
            space: d.space,
            id: pos(d.slot)?,
            key: opt(d.key)?,
            count: count(decl, Some(r.space), pos)?,
            inherit_site,
        })
    }
}

/// Whether a define of `space` by `decl` reads nothing of the record but the id, its key, a
/// byte count and a site (`Interpreter::define`'s other steps do nothing for it): a namespace
/// of ids that stores nothing and is no tree, and no stored value or name (an alignment only
/// goes into the event).
fn plain_define(decl: &RecordDecl, analysis: &Analysis, space: SpaceId) -> bool {
    analysis.namespaces.get(space as usize).is_some_and(|n| {
        n.kind == SpaceKind::Ids
            && n.stored.is_empty()
            && !n.tree
            && decl.stores.is_empty()
            && decl.names.is_empty()
    })
}

/// A define's byte count (`Op::Alloc`) if it is none or one field, unguarded, with at most one
/// guarded alternative (`nmemb.bytes = nmemb.value * size.value; nmemb.when = func; nmemb.is =
/// 1;`): the field's position, and where the alternative's guard is tested and with what value
/// (a record where it holds is not run directly).
fn guarded_count(decl: &RecordDecl, pos: &dyn Fn(SlotId) -> Option<u8>) -> Option<GuardedCount> {
    let plain = |e: &AExpr| match e {
        AExpr::Field(s) => pos(*s),
        _ => None,
    };
    match decl.bytes.as_slice() {
        [] => Some((None, None)),
        [b] if b.when.is_none() => Some((Some(plain(&b.expr)?), None)),
        // The first guarded count that holds applies, else the first unguarded one (§14.3).
        [a, b] => {
            let (guarded, open) = match (a.when, b.when) {
                (Some(_), None) => (a, b),
                (None, Some(_)) => (b, a),
                _ => return None,
            };
            let (slot, value) = guarded.when?;
            Some((Some(plain(&open.expr)?), Some((pos(slot)?, value))))
        }
        _ => None,
    }
}

/// A define's byte count if it is none, one unguarded field, or (of a record that refers to
/// namespace `looked`) one unguarded value kept with the id referred to.
fn count(
    decl: &RecordDecl,
    looked: Option<SpaceId>,
    pos: &dyn Fn(SlotId) -> Option<u8>,
) -> Option<Count> {
    match decl.bytes.as_slice() {
        [] => Some(Count::None),
        [b] if b.when.is_none() => match b.expr {
            AExpr::Field(s) => Some(Count::Field(pos(s)?)),
            AExpr::Lookup { space, stored } if Some(space) == looked => Some(Count::Stored(stored)),
            _ => None,
        },
        _ => None,
    }
}

impl<'s> Interpreter<'s> {
    /// A record of a direct type run from its values (`Interpreter::run`'s work for its plan).
    pub(super) fn run_direct(&mut self, d: Direct, at: At, v: &[u64], sink: &mut dyn SinkDyn) {
        let get = |p: u8| v.get(p as usize).copied();
        // A time whose guard fails is one the record does not carry (`Interpreter::time`).
        let carried = match d.time_guard {
            Some((p, g)) => g.holds(p.and_then(get)),
            None => true,
        };
        let time = d
            .time
            .filter(|_| carried)
            .and_then(|(p, scale)| Some(get(p)?.wrapping_mul(scale)));
        let time = match time {
            Some(t) => {
                self.clock = Some(t);
                Some(t)
            }
            None => self.clock,
        };
        let thread = d.thread.and_then(get);
        if let Some(at_value) = d.mono {
            let decl = self.decl.record(at.record_type);
            let value = match at_value {
                Some(p) => get(p),
                None => time,
            };
            if let (Some(value), Some(m)) = (value, decl.monotonic.first()) {
                // The common step here: a series seen before, not going back.
                let seen = self
                    .mono0
                    .get_mut(m.series as usize)
                    .and_then(Option::as_mut);
                match seen {
                    Some((last, last_at)) if value > *last || (!m.strict && value == *last) => {
                        *last = value;
                        *last_at = at;
                    }
                    _ => {
                        if !self.mono_step(m, value, 0, at, sink) {
                            return;
                        }
                    }
                }
            }
        }
        if let Some((p, guard)) = d.resident {
            let applies = match guard {
                Some((g, guard)) => guard.holds(g.and_then(get)),
                None => true,
            };
            if let (true, Some(v)) = (applies, get(p)) {
                sink.resident(v);
            }
        }
        match d.op {
            Op::Quiet => {}
            Op::Free {
                space,
                id,
                key,
                nulls,
            } => {
                let cx = Cx::plain(at, thread, time, sink.wants_events());
                let Some(id) = get(id) else { return };
                let key = key.and_then(get).unwrap_or(0);
                self.free_one(space, key, id, nulls, &cx, sink);
            }
            Op::Alloc {
                space,
                id,
                key,
                bytes,
                align,
                general: _,
            } => {
                let mut cx = Cx::plain(at, thread, time, sink.wants_events());
                cx.paired = true;
                let Some(id) = get(id) else { return };
                let key = key.and_then(get).unwrap_or(0);
                // `bytes()`'s answer for one unguarded field: its value, 0 if it has none.
                let bytes = match bytes {
                    Some(p) => Bytes::Known(get(p).unwrap_or(0)),
                    None => Bytes::None,
                };
                let align = align.and_then(get);
                self.define_plain(space, key, id, bytes, false, align, &mut cx, sink);
            }
            Op::ReferAlloc { .. } => self.run_refer_alloc(d.op, at, v, thread, time, sink),
        }
    }

    /// `Op::ReferAlloc`'s part of [`Interpreter::run_direct`] (out of line: the other direct
    /// types' code stays as small as it was).
    #[inline(never)]
    fn run_refer_alloc(
        &mut self,
        op: Op,
        at: At,
        v: &[u64],
        thread: Option<u64>,
        time: Option<u64>,
        sink: &mut dyn SinkDyn,
    ) {
        let get = |p: u8| v.get(p as usize).copied();
        let Op::ReferAlloc {
            to,
            to_id,
            to_key,
            space,
            id,
            key,
            count,
            inherit_site,
        } = op
        else {
            return;
        };
        let mut cx = Cx::plain(at, thread, time, sink.wants_events());
        // `Interpreter::run`'s loop: the reference (none to the null id), then the define.
        let to_id = get(to_id);
        let to_key = to_key.and_then(get).unwrap_or(0);
        if let Some(r) = to_id {
            if self.decl.namespaces[to as usize].null != Some(r) {
                self.refer(to, to_key, r, &mut cx, sink);
            }
        }
        cx.paired = true;
        if let Some(id) = get(id) {
            let key = key.and_then(get).unwrap_or(0);
            let bytes = match count {
                Count::None => Bytes::None,
                Count::Field(p) => Bytes::Known(get(p).unwrap_or(0)),
                Count::Stored(stored) => Bytes::Stored {
                    space: to,
                    stored,
                    key: to_key,
                    id: to_id.unwrap_or(0),
                },
            };
            self.define_plain(space, key, id, bytes, inherit_site, None, &mut cx, sink);
        }
        if let Some(l) = cx.looked {
            self.scratch = l.stored;
        }
    }

    /// `Interpreter::define`'s work for a direct record's define of a namespace of ids that
    /// stores nothing, with no name or stack, whose byte count is `bytes`, whose alignment is
    /// `align` and whose site, if `inherit_site`, is the one of the id the record referred to
    /// (`Op::Alloc`, `Op::ReferAlloc`): the same steps in the same order, those that read
    /// nothing left out.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn define_plain(
        &mut self,
        space: SpaceId,
        key: u64,
        id: u64,
        bytes: Bytes,
        inherit_site: bool,
        align: Option<u64>,
        cx: &mut Cx,
        sink: &mut dyn SinkDyn,
    ) {
        if !self.nulled.is_empty() {
            self.nulled.remove(&(space, key, id));
        }
        let sp = space as usize;
        // Defining the null id does nothing (§14.1).
        if self.decl.namespaces[sp].null == Some(id) {
            return;
        }
        let bytes = match bytes {
            Bytes::None => None,
            Bytes::Known(v) => Some(v),
            Bytes::Stored {
                space: to,
                stored,
                key,
                id,
            } => {
                let value = cx
                    .looked
                    .as_ref()
                    .filter(|l| l.space == to)
                    .and_then(|l| l.stored.get(stored as usize).copied());
                if value.is_none() {
                    self.bytes_unknown(to, key, id, cx.at, sink);
                }
                value
            }
        };
        let site = match &cx.looked {
            Some(l) if inherit_site => l.site,
            _ => None,
        };
        // A namespace that stores nothing has a place for a block only for the events.
        let stored = match self.slabs.get_mut(sp) {
            Some(slab) if cx.events => slab.put(),
            _ => NO_STORE,
        };
        if !self.track(sink, cx.at) {
            return;
        }
        let live = Live::new(cx.at, bytes.unwrap_or(0), site, stored);
        cx.replaced = NO_STORE;
        self.make_alive(space, key, id, live, cx, sink);
        let places = Places {
            gone: Places::NONE,
            new: stored,
            replaced: cx.replaced,
        };
        cx.emit(sink, space, key, site, alloc(id, bytes, align), places);
    }

    /// The one undefine of a `Plan::Free` record: the id's end and its free.
    pub(super) fn free_one(
        &mut self,
        space: SpaceId,
        key: u64,
        id: u64,
        nulls: (bool, bool),
        cx: &Cx,
        sink: &mut dyn SinkDyn,
    ) {
        if self.decl.namespaces[space as usize].null == Some(id) {
            return; // the null id: nothing to end
        }
        if let Some(l) = self.end_id(space, key, id, nulls, cx.at, sink) {
            let places = Places {
                gone: l.stored,
                ..Places::EMPTY
            };
            cx.emit(sink, space, key, l.site(), HeapOp::Free { id }, places);
        }
    }
}
