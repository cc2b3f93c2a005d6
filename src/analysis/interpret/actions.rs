//! The role handlers: what each declared action (define, undefine, refer, close, open, monotonic) does to the state.

use crate::analysis::event::{HeapOp, Places};
use crate::decode::RecordView;
use crate::dtd::analysis::{ActionKind, Monotonic, RecordDecl, Severity, SpaceId, SpaceKind};

use super::finding::{At, Finding, FindingKind};
use super::sink::SinkDyn;
use super::state::{Frame, Live, MAX_NULLED, NO_STORE};
use super::values::{Cx, Freed, Looked};
use super::Interpreter;

impl<'s> Interpreter<'s> {
    /// Pair the blocks the record's undefines freed with its defines from action `from` on
    /// (docs/format.md §14.3): in field order, each define of a namespace of ids takes the
    /// first block freed in its namespace and key that no earlier define took; a define of the
    /// null id takes none. The blocks left over are freed now, in field order, before the
    /// defines' events.
    pub(super) fn pair(
        &mut self,
        decl: &RecordDecl,
        from: usize,
        cx: &mut Cx,
        sink: &mut dyn SinkDyn,
    ) {
        cx.paired = true;
        if cx.freed.is_empty() {
            return;
        }
        for (i, a) in decl.actions.iter().enumerate().skip(from) {
            if !matches!(a.kind, ActionKind::Define | ActionKind::DefineNext) {
                continue;
            }
            let Some(value) = self.int(a.slot) else {
                continue;
            };
            let ns = &self.decl.namespaces[a.space as usize];
            let id = if a.kind == ActionKind::DefineNext {
                let before = decl.actions[from..i]
                    .iter()
                    .filter(|b| b.kind == ActionKind::DefineNext && b.space == a.space)
                    .count() as u64;
                self.next_id[a.space as usize].wrapping_add(before)
            } else {
                value
            };
            if ns.kind != SpaceKind::Ids || ns.null == Some(id) {
                continue;
            }
            let key = a.key.and_then(|s| self.int(s)).unwrap_or(0);
            if let Some(f) = cx
                .freed
                .iter_mut()
                .find(|f| f.to.is_none() && f.space == a.space && f.key == key)
            {
                f.to = Some(i);
            }
        }
        for f in &cx.freed {
            if f.to.is_none() {
                cx.emit(
                    sink,
                    f.space,
                    f.key,
                    f.live.site(),
                    HeapOp::Free { id: f.id },
                    Places {
                        gone: f.live.stored,
                        ..Places::EMPTY
                    },
                );
            }
        }
    }

    /// Check the record's monotonic series; `false` when the limit stopped interpretation.
    pub(super) fn monotonic(
        &mut self,
        decl: &RecordDecl,
        time: Option<u64>,
        at: At,
        sink: &mut dyn SinkDyn,
    ) -> bool {
        for m in &decl.monotonic {
            let value = match m.slot {
                Some(s) => self.int(s),
                None => time,
            };
            let Some(value) = value else { continue };
            let key = m.key.and_then(|s| self.int(s)).unwrap_or(0);
            if !self.mono_step(m, value, key, at, sink) {
                return false;
            }
        }
        true
    }

    /// One monotonic series' step to `value` (its key's value `key`); `false` when the limit
    /// stopped interpretation.
    #[inline]
    pub(super) fn mono_step(
        &mut self,
        m: &Monotonic,
        value: u64,
        key: u64,
        at: At,
        sink: &mut dyn SinkDyn,
    ) -> bool {
        // A series over the whole trace is apart from every keyed one (key 0 included).
        let whole = m.key.is_none();
        let entry = if whole {
            self.mono0
                .get_mut(m.series as usize)
                .and_then(Option::as_mut)
        } else {
            self.mono.get_mut(&(m.series, key))
        };
        match entry {
            Some((last, last_at)) => {
                if value < *last || (m.strict && value == *last) {
                    sink.finding(Finding {
                        key,
                        id: value,
                        defined: Some(*last_at),
                        expected: Some(*last),
                        what: Some(m.series_name.clone()),
                        ..Finding::error(FindingKind::Backwards, at)
                    });
                }
                *last = value;
                *last_at = at;
            }
            None => {
                if !self.track(sink, at) {
                    return false;
                }
                if whole {
                    let i = m.series as usize;
                    if self.mono0.len() <= i {
                        self.mono0.resize(i + 1, None);
                    }
                    self.mono0[i] = Some((value, at));
                } else {
                    self.mono.insert((m.series, key), (value, at));
                }
            }
        }
        true
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn not_alive(
        &mut self,
        kind: FindingKind,
        severity: Severity,
        space: SpaceId,
        key: u64,
        id: u64,
        at: At,
        sink: &mut dyn SinkDyn,
    ) {
        // An id undefined a short while ago: a double free, or a use after it.
        self.dead.asked(severity);
        let dead = if self.dead_details {
            self.dead.get((space, key, id))
        } else {
            None
        };
        sink.finding(Finding {
            severity: if dead.is_some() {
                Severity::Error
            } else {
                severity
            },
            space: Some(space),
            key,
            id,
            defined: dead,
            what: dead.map(|_| "undefined".to_string()),
            ..Finding::error(kind, at)
        });
    }

    pub(super) fn undefine(
        &mut self,
        space: SpaceId,
        key: u64,
        id: u64,
        (dead_null, leaves_null): (bool, bool),
        cx: &mut Cx,
        sink: &mut dyn SinkDyn,
    ) {
        let Some(l) = self.end_id(space, key, id, (dead_null, leaves_null), cx.at, sink) else {
            return;
        };
        if self.decl.namespaces[space as usize].kind != SpaceKind::Ids {
            return;
        }
        cx.freed.push(Freed {
            space,
            key,
            id,
            live: l,
            to: None,
        });
    }

    /// The id's end (an undefine's work but the pairing): its block taken out of the live
    /// state and returned, or the finding of an id not alive (`None` then, as for an id taken
    /// as the null id).
    #[inline]
    pub(super) fn end_id(
        &mut self,
        space: SpaceId,
        key: u64,
        id: u64,
        (dead_null, leaves_null): (bool, bool),
        at: At,
        sink: &mut dyn SinkDyn,
    ) -> Option<Live> {
        let ns = &self.decl.namespaces[space as usize];
        let sp = space as usize;
        let gone = if ns.shared {
            self.shared[sp].pop((key, id))
        } else {
            self.live[sp].remove(&(key, id))
        };
        let Some(l) = gone else {
            if dead_null || self.is_nulled(space, key, id) {
                // Taken as the null id: nothing to end (`F.dead = null;`, or an id that a
                // `F.leaves = null;` record left naming null).
                return None;
            }
            self.not_alive(FindingKind::NotAlive, ns.unknown, space, key, id, at, sink);
            return None;
        };
        self.tracked -= 1;
        self.alive[sp] -= 1;
        self.release(space, l.stored);
        if leaves_null {
            if self.nulled.len() < MAX_NULLED {
                self.nulled.insert((space, key, id));
            }
        } else if !ns.shared {
            self.bury(space, key, id, at);
        }
        Some(l)
    }

    /// Whether a `F.leaves = null;` record left the id naming null (and nothing defined it
    /// since).
    pub(super) fn is_nulled(&self, space: SpaceId, key: u64, id: u64) -> bool {
        !self.nulled.is_empty() && self.nulled.contains(&(space, key, id))
    }

    /// Remember an undefined id for a while (a bounded cache, oldest forgotten first).
    pub(super) fn bury(&mut self, space: SpaceId, key: u64, id: u64, at: At) {
        if self.dead_details {
            self.dead.bury((space, key, id), at);
        }
    }

    pub(super) fn close(
        &mut self,
        space: SpaceId,
        key: u64,
        id: u64,
        cx: &Cx,
        sink: &mut dyn SinkDyn,
    ) {
        let ns = &self.decl.namespaces[space as usize];
        let popped = self.stacks.get_mut(&(space, key)).and_then(|s| s.pop());
        if self.stacks.get(&(space, key)).is_some_and(Vec::is_empty) {
            self.stacks.remove(&(space, key));
        }
        let Some(f) = popped else {
            sink.finding(Finding {
                space: Some(space),
                key,
                id,
                ..Finding::error(FindingKind::Unbalanced, cx.at)
            });
            return;
        };
        self.tracked -= 1;
        self.alive[space as usize] -= 1;
        if ns.close_same && f.id != id {
            sink.finding(Finding {
                space: Some(space),
                key,
                id,
                defined: Some(f.at),
                expected: Some(f.id),
                ..Finding::error(FindingKind::Mismatched, cx.at)
            });
        }
    }

    pub(super) fn refer(
        &mut self,
        space: SpaceId,
        key: u64,
        id: u64,
        cx: &mut Cx,
        sink: &mut dyn SinkDyn,
    ) {
        let ns = &self.decl.namespaces[space as usize];
        let sp = space as usize;
        let found = if ns.shared {
            self.shared[sp].last((key, id))
        } else {
            self.live[sp].get(&(key, id))
        };
        match found {
            Some(l) => {
                if cx.looked.is_none() {
                    let slab = &self.slabs[sp];
                    let mut stored = std::mem::take(&mut self.scratch);
                    stored.clear();
                    stored.extend((0..slab.width).map(|k| slab.get(l.stored, k).unwrap_or(0)));
                    cx.looked = Some(Looked {
                        space,
                        stored,
                        site: l.site(),
                    });
                }
            }
            // A table may be defined after its first use (a name map at the end).
            None if ns.kind == SpaceKind::Table => {}
            None if self.is_nulled(space, key, id) => {}
            None => self.not_alive(
                FindingKind::Undefined,
                ns.unknown_refers,
                space,
                key,
                id,
                cx.at,
                sink,
            ),
        }
    }

    /// `false` when the limit stopped interpretation.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn define(
        &mut self,
        decl: &RecordDecl,
        action: usize,
        kind: ActionKind,
        space: SpaceId,
        key: u64,
        id: u64,
        is_null: bool,
        cx: &mut Cx,
        view: Option<&RecordView<'_>>,
        sink: &mut dyn SinkDyn,
    ) -> bool {
        let ns = &self.decl.namespaces[space as usize];
        let id = if kind == ActionKind::DefineNext {
            let next = self.next_id[space as usize];
            self.next_id[space as usize] = next.wrapping_add(1);
            next
        } else {
            id
        };
        if !self.nulled.is_empty() {
            self.nulled.remove(&(space, key, id));
        }
        // Defining the null id does nothing (§14.1), also when `definesNext` reaches it: a
        // failed allocation (malloc returning NULL). A realloc that returned NULL after freeing
        // is a free: its freed block paired with no define (`Interpreter::pair`).
        if is_null || ns.null == Some(id) {
            return true;
        }
        let bytes = self.bytes(decl, cx.looked.as_ref(), cx.at, sink);
        let site = self.site(decl, cx.looked.as_ref(), view, space);
        let stored = self.store(decl, space, cx.events);
        if !self.keep_names(decl, space, id, view, cx.at, sink) || !self.track(sink, cx.at) {
            return false;
        }
        if let (false, Some(view)) = (decl.stack.is_empty(), view) {
            self.stack_define(decl, space, id, view);
        }
        let sp = space as usize;
        // A table's ids are its entries: kept for names and lookups, never alive or dead.
        if ns.kind == SpaceKind::Table {
            if let Some(old) = self.live[sp].insert((key, id), Live::new(cx.at, 0, site, stored)) {
                self.tracked -= 1;
                self.release(space, old.stored);
            }
            return true;
        }
        // Design: the id is not taken out of the recently undefined ones here. While it is
        // alive nothing asks whether it was undefined recently (only an id that is not alive
        // is looked up there), and when it is undefined again its entry is replaced; so the
        // findings are the same without one more hash look-up per allocation.
        // The block this define moves (paired with an undefine of the record, §14.3).
        let moved = cx
            .freed
            .iter()
            .find(|f| f.to == Some(action))
            .map(|f| (f.id, f.live));
        // A move without a byte count: the block keeps its size.
        let kept = match moved {
            Some((_, l)) => bytes.or(Some(l.bytes)),
            None => bytes,
        };
        let live = Live::new(cx.at, kept.unwrap_or(0), site, stored);
        // A realloc onto an id that is alive: the record's undefines come before the define
        // (§14.1), so its old block is freed before the live id's block is forgotten, and the
        // new block is an allocation (a move with a byte count counts as a free and an
        // allocation anyway). A move without one keeps its block: a move, after that free.
        let split = moved.is_some()
            && bytes.is_some()
            && !ns.shared
            && self.live[sp].contains_key(&(key, id));
        if let (true, Some((old, l))) = (split, moved) {
            let places = Places {
                gone: l.stored,
                ..Places::EMPTY
            };
            cx.emit(sink, space, key, l.site(), HeapOp::Free { id: old }, places);
        }
        cx.replaced = NO_STORE;
        self.make_alive(space, key, id, live, cx, sink);
        if ns.kind != SpaceKind::Ids {
            return true;
        }
        let align = decl.align.and_then(|s| self.int(s));
        let (op, site) = match moved {
            // As a realloc's new block: the old block's site unless the record names one.
            Some((_, l)) if split => (alloc(id, bytes, align), site.or(l.site())),
            Some((old, _)) => (
                HeapOp::Move {
                    old,
                    new: id,
                    size: bytes,
                },
                site,
            ),
            None => (alloc(id, bytes, align), site),
        };
        let places = Places {
            // A split realloc's old block was freed by its own event above.
            gone: match moved {
                Some((_, l)) if !split => l.stored,
                _ => Places::NONE,
            },
            new: stored,
            replaced: cx.replaced,
        };
        cx.emit(sink, space, key, site, op, places);
        true
    }

    /// The place of an id a define of `space` makes, with the values it stores (`NO_STORE`
    /// when it stores none and is not a block of which the sink wants events: the ids of
    /// tables and nestings, every id for `mtf check`).
    fn store(&mut self, decl: &RecordDecl, space: SpaceId, events: bool) -> u32 {
        let sp = space as usize;
        let ns = &self.decl.namespaces[sp];
        if ns.stored.is_empty() && !(events && ns.kind == SpaceKind::Ids) {
            return NO_STORE;
        }
        let i = self.slabs[sp].put();
        for &(s, k, slot) in &decl.stores {
            if s == space {
                let v = self.int(slot).unwrap_or(0);
                self.slabs[sp].set(i, k as usize, v);
            }
        }
        i
    }

    /// Keeps the names the record gives ids of `space`; `false` when the limit stopped
    /// interpretation.
    fn keep_names(
        &mut self,
        decl: &RecordDecl,
        space: SpaceId,
        id: u64,
        view: Option<&RecordView<'_>>,
        at: At,
        sink: &mut dyn SinkDyn,
    ) -> bool {
        for &(slot, sp) in &decl.names {
            if sp != space {
                continue;
            }
            if let Some(name) = view.and_then(|v| self.name_of(slot, v)) {
                if !self.names.contains_key(&(sp, id)) && !self.track(sink, at) {
                    return false;
                }
                self.names.insert((sp, id), name);
            }
        }
        true
    }

    /// Makes `live` the block of `id`: stacked in a shared namespace, else replacing (and
    /// reporting) a block the id still held.
    pub(super) fn make_alive(
        &mut self,
        space: SpaceId,
        key: u64,
        id: u64,
        live: Live,
        cx: &mut Cx,
        sink: &mut dyn SinkDyn,
    ) {
        let sp = space as usize;
        let ns = &self.decl.namespaces[sp];
        self.alive[sp] += 1;
        if ns.shared {
            self.shared[sp].push((key, id), live);
            return;
        }
        let Some(old) = self.live[sp].insert((key, id), live) else {
            return;
        };
        // The id was alive: the old block is forgotten (reported), the new one counts.
        self.tracked -= 1;
        self.alive[sp] -= 1;
        self.release(space, old.stored);
        cx.replaced = old.stored;
        sink.finding(Finding {
            space: Some(space),
            key,
            id,
            defined: Some(old.at()),
            ..Finding::error(FindingKind::Redefined, cx.at)
        });
        if ns.kind == SpaceKind::Ids {
            let places = Places {
                gone: old.stored,
                ..Places::EMPTY
            };
            cx.emit(sink, space, key, old.site(), HeapOp::Free { id }, places);
        }
    }

    /// Gives back the place of an id that died, once the record is over: until then its
    /// number may still be in the record's events (a free emitted when the defines pair), and
    /// a define of the same record must not take it.
    pub(super) fn release(&mut self, space: SpaceId, place: u32) {
        if place != NO_STORE {
            self.released.push((space, place));
        }
    }

    /// `false` when the limit stopped interpretation.
    pub(super) fn open(
        &mut self,
        decl: &RecordDecl,
        space: SpaceId,
        key: u64,
        id: u64,
        at: At,
        sink: &mut dyn SinkDyn,
    ) -> bool {
        if !self.track(sink, at) {
            return false;
        }
        let depth = decl
            .depth
            .iter()
            .find(|d| d.space == space)
            .and_then(|d| Some((d.slot, self.int(d.slot)?)));
        let (outer, parent) = match self.stacks.get(&(space, key)).and_then(|s| s.last()) {
            Some(f) => (f.depth, f.ctx),
            None => (None, stacks_root()),
        };
        let ctx = if self.decl.stacks > 0 {
            self.open_context(decl, parent, space, id)
        } else {
            stacks_root()
        };
        self.stacks.entry((space, key)).or_default().push(Frame {
            id,
            at,
            depth: depth.map(|(_, v)| v),
            ctx,
        });
        self.alive[space as usize] += 1;
        if let (Some((slot, v)), Some(o)) = (depth, outer) {
            if v <= o {
                sink.finding(Finding {
                    space: Some(space),
                    key,
                    id: v,
                    expected: Some(o),
                    what: Some(
                        self.schema.record(at.record_type).slots[slot as usize]
                            .name
                            .clone(),
                    ),
                    ..Finding::error(FindingKind::Depth, at)
                });
            }
        }
        true
    }
}

/// The allocation of a block of `bytes` (0 when unknown).
pub(super) fn alloc(id: u64, bytes: Option<u64>, align: Option<u64>) -> HeapOp {
    HeapOp::Alloc {
        id,
        size: bytes.unwrap_or(0),
        align,
    }
}

/// The root of every calling context (no level open).
fn stacks_root() -> u32 {
    super::stacks::ROOT
}
