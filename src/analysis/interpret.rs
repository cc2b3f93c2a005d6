//! The declarations of a DTD applied to its records, one record at a time: heap events for the
//! statistics and `replay`, findings for `mtf check`.
//!
//! [`Interpreter::record`] takes each decoded record in trace order and tells a [`Sink`] what
//! happened: [`HeapEvent`]s, and [`Finding`]s where the trace breaks a declaration (a free of
//! an id that is not alive, a method exit that does not match its entry, a time going
//! backwards). [`Interpreter::finish`] reports what is still alive at the end. [`HeapEvents`]
//! wraps both around a reader as an iterator of events.

// Design: memory is proportional to what is alive — live ids, open nesting levels, the last
// value of each monotonic series per key, and the names of table ids — never to the trace;
// every such entry counts towards one limit (`Interpreter::set_limit`, `DEFAULT_MAX_TRACKED`),
// beyond which the interpreter reports `FindingKind::Limit` once and stops interpreting (the
// caller still decodes). Entries keep the index, offset and type of the record that defined
// them, so that a finding can say where an id came from.

// Design (moves and frees): a record's actions run undefines first, so a realloc frees its old
// block before it defines the new one; the freed blocks are held until the first define of the
// record (or its end), where they pair with its defines of the same namespace and key in field
// order (docs/format.md §14.3): a pair becomes one `HeapOp::Move` (the block keeps its size
// unless the record declares one), a block left over a `Free`, emitted then, before the
// defines' events. The held blocks live in a vector the interpreter reuses from record to
// record, so a record allocates nothing. Recently undefined ids are remembered in a
// bounded FIFO (`DEAD_REMEMBERED`) so that a double free is told from a free of an id never
// seen (which may be normal for a format: a trace that starts late), without memory that grows
// with the trace.

// Design (hashing): ids are untrusted input, so the maps use foldhash with its per-process
// seed (as the live sets do), fast on integer keys.
use foldhash::HashMap;

use crate::decode::{Event, Reader, RecordView, Records, Resolved, Value};
use crate::dtd::analysis::{
    AExpr, ActionKind, Analysis, Namespace, RecordDecl, Severity, Site, SpaceId, SpaceKind,
    TimeUnit,
};
use crate::dtd::{RecordId, Schema, SlotId};

use super::event::{HeapEvent, HeapOp};

/// The default limit on tracked entries (live ids, open levels, monotonic keys, table names):
/// 2²⁴ (16,777,216).
pub const DEFAULT_MAX_TRACKED: usize = 1 << 24;

/// What an interpreter reports to.
pub trait Sink {
    /// A heap event, in trace order.
    fn event(&mut self, event: HeapEvent);
    /// A finding (a broken declaration, or information such as a leak). Ignored by default.
    fn finding(&mut self, finding: Finding) {
        let _ = finding;
    }
    /// Whether the sink looks at events at all; `false` (a sink of findings only, such as
    /// `mtf check`'s) spares the interpreter making them. `true` by default.
    fn wants_events(&self) -> bool {
        true
    }
}

impl Sink for Vec<HeapEvent> {
    fn event(&mut self, event: HeapEvent) {
        self.push(event);
    }
}

/// Where a record is in the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    /// Its index (as `mtf dump` numbers records).
    pub record: u64,
    /// Its byte offset.
    pub offset: u64,
    /// Its record type.
    pub record_type: RecordId,
}

/// What kind of declaration a finding concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FindingKind {
    /// A reference to an id that is not alive (`refers`).
    Undefined,
    /// A define of an id that is alive.
    Redefined,
    /// An undefine of an id that is not alive (dead, or never defined).
    NotAlive,
    /// A close with no level open.
    Unbalanced,
    /// A close that names another id than the innermost open level.
    Mismatched,
    /// A depth field that is not the nesting depth.
    Depth,
    /// A value smaller than the previous one of its series (or equal, for `increasing`).
    Backwards,
    /// A byte count whose expression overflows or goes negative.
    Bytes,
    /// An id alive at the end of the trace (a leak).
    AliveAtEnd,
    /// A nesting level open at the end of the trace.
    OpenAtEnd,
    /// More entries to track than the limit: interpretation stopped here.
    Limit,
}

impl FindingKind {
    /// A short name, for counts per kind.
    pub fn name(self) -> &'static str {
        match self {
            FindingKind::Undefined => "use of an id not alive",
            FindingKind::Redefined => "define of a live id",
            FindingKind::NotAlive => "undefine of an id not alive",
            FindingKind::Unbalanced => "close with nothing open",
            FindingKind::Mismatched => "close of another level",
            FindingKind::Depth => "wrong nesting depth",
            FindingKind::Backwards => "value going backwards",
            FindingKind::Bytes => "byte count not computable",
            FindingKind::AliveAtEnd => "alive at the end",
            FindingKind::OpenAtEnd => "open at the end",
            FindingKind::Limit => "too many ids",
        }
    }
}

/// One broken declaration, or one piece of information (a leak).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What kind.
    pub kind: FindingKind,
    /// How the DTD treats it (a kind the DTD declares normal is not reported at all).
    pub severity: Severity,
    /// The record concerned (for the findings at the end: the record that defined the id or
    /// opened the level).
    pub at: At,
    /// The namespace (for `Backwards`, none).
    pub space: Option<SpaceId>,
    /// The key of a keyed namespace or series (0 when not keyed).
    pub key: u64,
    /// The id, or for `Backwards` the value.
    pub id: u64,
    /// The record that defined the id (opened the level; for `Backwards`, the record with the
    /// previous value; for `NotAlive` and `Undefined` of an id undefined recently, the record
    /// that undefined it), where known.
    pub defined: Option<At>,
    /// For `Mismatched`, the id of the innermost open level; for `Backwards`, the previous
    /// value; for `Depth`, the depth of the level it nests in; for `Limit`, the limit.
    pub expected: Option<u64>,
    /// For `Backwards`, the series (field type name); for `Depth`, the field name; for
    /// `NotAlive` and `Undefined`, `"undefined"` when the id was undefined recently (a double
    /// free, a use after a free: always an error).
    pub what: Option<String>,
}

// Design (tables): the state is what `mtf check` and `mtf stats` hold for every live id, so
// its entries are packed: one map per namespace keyed by (key, id) (16 bytes, hashed as two
// words), whose values hold the defining record's index, offset and type, the byte count and
// the site in 40 bytes (`Live`); the values a namespace stores with its ids (`stored`) live
// in one slab per namespace, reused as ids die, so that a define allocates nothing. The
// record type shares its word with the flag "has a site": a schema has fewer than 2³¹ record
// types (each takes far more than one byte of DTD).
/// A live id.
#[derive(Debug, Clone, Copy)]
struct Live {
    record: u64,
    offset: u64,
    bytes: u64,
    /// The site, where `rtype`'s top bit says there is one.
    site: u64,
    /// The defining record's type, and [`HAS_SITE`].
    rtype: u32,
    /// Where its stored values are in the namespace's slab ([`NO_STORE`]: none).
    stored: u32,
}

const HAS_SITE: u32 = 1 << 31;
const NO_STORE: u32 = u32::MAX;

impl Live {
    fn new(at: At, bytes: u64, site: Option<u64>, stored: u32) -> Live {
        Live {
            record: at.record,
            offset: at.offset,
            bytes,
            site: site.unwrap_or(0),
            rtype: (at.record_type & !HAS_SITE) | if site.is_some() { HAS_SITE } else { 0 },
            stored,
        }
    }

    fn at(&self) -> At {
        At {
            record: self.record,
            offset: self.offset,
            record_type: self.rtype & !HAS_SITE,
        }
    }

    fn site(&self) -> Option<u64> {
        (self.rtype & HAS_SITE != 0).then_some(self.site)
    }
}

/// The values a namespace stores with its live ids (`size.stored = block;`), `width` per id,
/// in one vector; the places of dead ids are reused.
#[derive(Debug, Default)]
struct Slab {
    width: usize,
    data: Vec<u64>,
    free: Vec<u32>,
}

impl Slab {
    /// A place for one id's values ([`NO_STORE`] when the namespace stores nothing, or in the
    /// impossible case of more than 2³² places).
    fn put(&mut self) -> u32 {
        if self.width == 0 {
            return NO_STORE;
        }
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                let Ok(i) = u32::try_from(self.data.len() / self.width) else {
                    return NO_STORE;
                };
                if i == NO_STORE {
                    return NO_STORE;
                }
                self.data.resize(self.data.len() + self.width, 0);
                i
            }
        };
        let start = i as usize * self.width;
        if let Some(place) = self.data.get_mut(start..start + self.width) {
            place.fill(0);
        }
        i
    }

    fn set(&mut self, i: u32, k: usize, v: u64) {
        if i != NO_STORE && k < self.width {
            if let Some(d) = self.data.get_mut(i as usize * self.width + k) {
                *d = v;
            }
        }
    }

    fn get(&self, i: u32, k: usize) -> Option<u64> {
        if i == NO_STORE || k >= self.width {
            return None;
        }
        self.data.get(i as usize * self.width + k).copied()
    }

    fn release(&mut self, i: u32) {
        if i != NO_STORE {
            self.free.push(i);
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    id: u64,
    at: At,
    /// The value of its depth field, where declared.
    depth: Option<u64>,
}

/// How many undefined ids are remembered, to tell a double free or a use after a free from an
/// id that was never defined: 2¹⁶ (65,536), the most recent.
pub const DEAD_REMEMBERED: usize = 1 << 16;

type DeadKey = (SpaceId, u64, u64);

/// The most ids remembered as naming null (`F.leaves = null;`); beyond, an id is forgotten
/// as any undefined one is, so memory stays bounded.
const MAX_NULLED: usize = 1 << 20;

/// The ids undefined recently: for an id that is not alive, the record that undefined it, if
/// that was one of the last [`DEAD_REMEMBERED`] undefines (and the id was not undefined before
/// that within the window: see `Dead::bury_eager`).
// Design: a valid trace never asks (only an id that is not alive is looked up), yet keeping a
// map of the recently undefined ids costs two random memory accesses per free (the insert and
// the eviction of the oldest), which were most of `mtf check`'s semantic pass. So the undefines
// are first only appended to a ring of the last 2·DEAD_REMEMBERED, in order; the map is built
// on the first look-up by replaying the ring through the same insert-and-evict rule, and kept
// from then on as before. The replay gives the map the eager rule would have: an entry of the
// map is inserted by one of the last DEAD_REMEMBERED undefines, and what evicts it is one of the
// DEAD_REMEMBERED before those, all in the ring (an entry evicted longer ago was removed, since
// record indices only grow; should one ever go back, the map is built at that point, while the
// replay is still exact). Memory stays bounded as before.
/// One undefine in `Dead`'s ring, packed (40 bytes).
#[derive(Debug, Clone, Copy)]
struct Buried {
    key: u64,
    id: u64,
    record: u64,
    offset: u64,
    space: SpaceId,
    record_type: RecordId,
}

impl Buried {
    fn new((space, key, id): DeadKey, at: At) -> Buried {
        Buried {
            key,
            id,
            record: at.record,
            offset: at.offset,
            space,
            record_type: at.record_type,
        }
    }

    fn unpack(self) -> (DeadKey, At) {
        (
            (self.space, self.key, self.id),
            At {
                record: self.record,
                offset: self.offset,
                record_type: self.record_type,
            },
        )
    }
}

#[derive(Debug, Default)]
struct Dead {
    /// The last 2·DEAD_REMEMBERED undefines, oldest first, while `map` is not built.
    ring: std::collections::VecDeque<Buried>,
    /// The record index of the last undefine.
    last: u64,
    /// Once built: the remembered ids and, oldest first, the last DEAD_REMEMBERED undefines.
    map: Option<(HashMap<DeadKey, At>, std::collections::VecDeque<DeadKey>)>,
}

impl Dead {
    fn bury(&mut self, k: DeadKey, at: At) {
        if self.map.is_none() && at.record < self.last {
            self.build();
        }
        self.last = at.record;
        match &mut self.map {
            Some((map, order)) => Dead::bury_eager(map, order, k, at),
            None => {
                if self.ring.len() >= 2 * DEAD_REMEMBERED {
                    self.ring.pop_front();
                }
                self.ring.push_back(Buried::new(k, at));
            }
        }
    }

    /// The rule: the oldest of the last DEAD_REMEMBERED undefines is forgotten (its id's
    /// entry removed, unless that entry is newer than the undefine being added), then the id is
    /// remembered with the record that undefined it.
    fn bury_eager(
        map: &mut HashMap<DeadKey, At>,
        order: &mut std::collections::VecDeque<DeadKey>,
        k: DeadKey,
        at: At,
    ) {
        if order.len() >= DEAD_REMEMBERED {
            if let Some(old) = order.pop_front() {
                // One look-up for the test and the removal.
                if let std::collections::hash_map::Entry::Occupied(e) = map.entry(old) {
                    if e.get().record <= at.record {
                        e.remove();
                    }
                }
            }
        }
        map.insert(k, at);
        order.push_back(k);
    }

    fn build(&mut self) {
        let mut map = HashMap::default();
        let mut order = std::collections::VecDeque::new();
        for (k, at) in std::mem::take(&mut self.ring)
            .into_iter()
            .map(Buried::unpack)
        {
            Dead::bury_eager(&mut map, &mut order, k, at);
        }
        self.map = Some((map, order));
    }

    fn get(&mut self, k: DeadKey) -> Option<At> {
        if self.map.is_none() {
            self.build();
        }
        self.map.as_ref().and_then(|(map, _)| map.get(&k).copied())
    }
}

/// Why a byte count is not known.
enum Unknown {
    /// A lookup (`NS.G.value`) of an id of this namespace that is not alive.
    Dead(SpaceId),
    /// An overflow or a negative result.
    Arithmetic,
}

/// What the actions of one record share.
struct Cx {
    at: At,
    thread: Option<u64>,
    time: Option<u64>,
    looked: Option<Looked>,
    /// The blocks this record's undefines freed, in field order, until they pair with its
    /// defines (`Interpreter::pair`).
    freed: Vec<Freed>,
    /// Whether the freed blocks were paired (at the record's first define, open, or its end).
    paired: bool,
    /// Whether the sink wants events ([`Sink::wants_events`]).
    events: bool,
}

impl Cx {
    /// Reports an event, to a sink that wants events.
    fn emit(
        &self,
        sink: &mut dyn SinkDyn,
        space: SpaceId,
        key: u64,
        site: Option<u64>,
        op: HeapOp,
    ) {
        if self.events {
            sink.event(HeapEvent {
                record: self.at.record,
                space,
                key,
                thread: self.thread,
                time: self.time,
                site,
                op,
            });
        }
    }
}

/// A block an undefine freed, held until the record's defines pair with it.
#[derive(Debug, Clone, Copy)]
struct Freed {
    space: SpaceId,
    key: u64,
    id: u64,
    live: Live,
    /// The index (in the record's actions) of the define it pairs with: the block moves there.
    to: Option<usize>,
}

#[derive(Debug, Clone)]
enum Name {
    Text(Box<str>),
    Ref(SpaceId, u64),
}

/// The value a slot had in the current record.
#[derive(Debug, Clone, Copy, Default)]
struct SlotVal {
    /// Generation of the record it belongs to (0: none).
    gen: u64,
    int: u64,
    /// Index of the field occurrence in the view, for text.
    field: u32,
}

/// The declarations of a DTD applied to records one at a time. See the module docs.
#[derive(Debug)]
pub struct Interpreter<'s> {
    schema: &'s Schema,
    decl: &'s Analysis,
    /// Per namespace: its live ids (a shared namespace's in `shared`), by (key, id).
    live: Vec<HashMap<(u64, u64), Live>>,
    /// Per shared namespace: the blocks holding each id, the newest last.
    shared: Vec<HashMap<(u64, u64), Vec<Live>>>,
    /// Per namespace: the values its live ids store.
    slabs: Vec<Slab>,
    stacks: HashMap<(SpaceId, u64), Vec<Frame>>,
    next_id: Vec<u64>,
    names: HashMap<(SpaceId, u64), Name>,
    text_sites: HashMap<(SpaceId, u64), Box<str>>,
    /// The last value of each keyed monotonic series, per key; a series over the whole trace
    /// (no key) in `mono0`, by series.
    mono: HashMap<(u32, u64), (u64, At)>,
    mono0: Vec<Option<(u64, At)>>,
    /// Per record type: whether it declares anything.
    active: Vec<bool>,
    /// Per record type: the slots its declarations read (the others are not loaded).
    needed: Vec<Box<[bool]>>,
    /// The stored values of the id a record looked up, reused from record to record.
    scratch: Vec<u64>,
    /// The blocks a record freed (`Cx::freed`), reused from record to record.
    freed: Vec<Freed>,
    dead: Dead,
    /// Ids left naming null by a `F.leaves = null;` record, until defined again (at most
    /// [`MAX_NULLED`]).
    nulled: std::collections::HashSet<DeadKey>,
    clock: Option<u64>,
    tracked: usize,
    limit: usize,
    stopped: bool,
    vals: Vec<SlotVal>,
    gen: u64,
    /// Per namespace: ids alive (blocks, counting every holder of a shared id) and levels open.
    alive: Vec<u64>,
}

/// What a record looked up while its actions ran (for `Lookup` and inherited sites).
struct Looked {
    space: SpaceId,
    stored: Vec<u64>,
    site: Option<u64>,
}

impl<'s> Interpreter<'s> {
    /// An interpreter for a schema's declarations (none: it reports nothing).
    pub fn new(schema: &'s Schema) -> Interpreter<'s> {
        let decl = &schema.analysis;
        Interpreter {
            schema,
            decl,
            live: decl.namespaces.iter().map(|_| HashMap::default()).collect(),
            shared: decl.namespaces.iter().map(|_| HashMap::default()).collect(),
            slabs: decl
                .namespaces
                .iter()
                .map(|n| Slab {
                    width: n.stored.len(),
                    ..Slab::default()
                })
                .collect(),
            stacks: HashMap::default(),
            next_id: decl.namespaces.iter().map(|n| n.first).collect(),
            names: HashMap::default(),
            text_sites: HashMap::default(),
            mono: HashMap::default(),
            mono0: Vec::new(),
            active: (0..schema.records.len())
                .map(|r| !decl.record(r as RecordId).is_empty())
                .collect(),
            needed: schema
                .records
                .iter()
                .enumerate()
                .map(|(r, rt)| needed_slots(decl.record(r as RecordId), rt.slots.len()))
                .collect(),
            scratch: Vec::new(),
            freed: Vec::new(),
            dead: Dead::default(),
            nulled: std::collections::HashSet::new(),
            clock: None,
            tracked: 0,
            limit: DEFAULT_MAX_TRACKED,
            stopped: false,
            vals: Vec::new(),
            gen: 0,
            alive: vec![0; decl.namespaces.len()],
        }
    }

    /// Track at most `limit` entries (live ids, open levels, monotonic keys, table names).
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// The declarations.
    pub fn declarations(&self) -> &'s Analysis {
        self.decl
    }

    /// The declared namespaces (a [`HeapEvent::space`] indexes this).
    pub fn namespaces(&self) -> &'s [Namespace] {
        &self.decl.namespaces
    }

    /// The unit of [`HeapEvent::time`], where the DTD declares times.
    pub fn time_unit(&self) -> Option<TimeUnit> {
        self.decl.time_unit
    }

    /// The time of the record last interpreted: its own declared time, or the time of the
    /// latest record that had one (docs/format.md §14.4), in [`Interpreter::time_unit`]. For
    /// slicing a trace by time (`--from`/`--to`).
    pub fn clock(&self) -> Option<u64> {
        self.clock
    }

    /// Whether interpretation stopped at the limit (a [`FindingKind::Limit`] was reported; no
    /// event follows).
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Entries tracked now.
    pub fn tracked(&self) -> usize {
        self.tracked
    }

    /// Ids alive now in a namespace (levels open, for a nesting namespace).
    pub fn alive(&self, space: SpaceId) -> u64 {
        self.alive.get(space as usize).copied().unwrap_or(0)
    }

    /// The name of an allocation site of a namespace's ids, as far as the trace has been read
    /// (names from tables at the end of a trace are known once they were read): the text of a
    /// string reference, or the name a table gives the site's id, following references between
    /// tables (at most 16 steps).
    pub fn site_name(&self, space: SpaceId, site: u64) -> Option<String> {
        let ns = self.decl.namespaces.get(space as usize)?;
        if ns.site_text {
            return self.text_sites.get(&(space, site)).map(|s| s.to_string());
        }
        self.name(ns.site_space?, site)
    }

    /// The name a table (or any namespace with `names`) gives an id, following references
    /// between tables (at most 16 steps).
    pub fn name(&self, space: SpaceId, id: u64) -> Option<String> {
        let (mut space, mut id) = (space, id);
        for _ in 0..16 {
            match self.names.get(&(space, id))? {
                Name::Text(t) => return Some(t.to_string()),
                Name::Ref(s, i) => {
                    space = *s;
                    id = *i;
                }
            }
        }
        None
    }

    fn track(&mut self, sink: &mut dyn SinkDyn, at: At) -> bool {
        if self.tracked >= self.limit {
            if !self.stopped {
                self.stopped = true;
                sink.finding(Finding {
                    kind: FindingKind::Limit,
                    severity: Severity::Error,
                    at,
                    space: None,
                    key: 0,
                    id: 0,
                    defined: None,
                    expected: Some(self.limit as u64),
                    what: None,
                });
            }
            return false;
        }
        self.tracked += 1;
        true
    }

    /// Apply the declarations to one record, in trace order.
    pub fn record(&mut self, view: &RecordView<'_>, sink: &mut impl Sink) {
        self.record_dyn(view, sink);
    }

    fn record_dyn(&mut self, view: &RecordView<'_>, sink: &mut dyn SinkDyn) {
        if self.stopped {
            return;
        }
        if !self
            .active
            .get(view.record_id() as usize)
            .copied()
            .unwrap_or(false)
        {
            return;
        }
        let decl: &'s RecordDecl = self.decl.record(view.record_id());
        let at = At {
            record: view.index(),
            offset: view.offset(),
            record_type: view.record_id(),
        };
        self.load(view);
        // The record's time, or the time of the latest record that had one.
        let time = match self.time(decl) {
            Some(t) => {
                self.clock = Some(t);
                Some(t)
            }
            None => self.clock,
        };
        let thread = decl.thread.and_then(|s| self.int(s));
        if !self.monotonic(decl, time, at, sink) {
            return;
        }
        let mut freed = std::mem::take(&mut self.freed);
        freed.clear();
        let mut cx = Cx {
            at,
            thread,
            time,
            looked: None,
            freed,
            paired: false,
            events: sink.wants_events(),
        };
        for (i, a) in decl.actions.iter().enumerate() {
            if !cx.paired
                && matches!(
                    a.kind,
                    ActionKind::Define | ActionKind::DefineNext | ActionKind::Open
                )
            {
                self.pair(decl, i, &mut cx, sink);
            }
            let Some(id) = self.int(a.slot) else { continue };
            if !decl.applies(a.slot, |s| self.int(s)) {
                continue; // a guarded role (a failed realloc keeps its block)
            }
            let key = a.key.and_then(|s| self.int(s)).unwrap_or(0);
            let ns = &self.decl.namespaces[a.space as usize];
            // `definesNext`'s field is not the id: `define` tells whether the next id is null.
            let is_null = ns.null == Some(id) && a.kind != ActionKind::DefineNext;
            if is_null && !matches!(a.kind, ActionKind::Define) {
                continue;
            }
            let ok = match a.kind {
                ActionKind::Undefine => {
                    self.undefine(
                        a.space,
                        key,
                        id,
                        (a.dead_null, a.leaves_null),
                        &mut cx,
                        sink,
                    );
                    true
                }
                ActionKind::Close => {
                    self.close(a.space, key, id, &cx, sink);
                    true
                }
                ActionKind::Refer => {
                    self.refer(a.space, key, id, &mut cx, sink);
                    true
                }
                ActionKind::Define | ActionKind::DefineNext => self.define(
                    decl, i, a.kind, a.space, key, id, is_null, &mut cx, view, sink,
                ),
                ActionKind::Open => self.open(decl, a.space, key, id, at, sink),
            };
            if !ok {
                return;
            }
        }
        if !cx.paired {
            self.pair(decl, decl.actions.len(), &mut cx, sink);
        }
        self.freed = std::mem::take(&mut cx.freed);
        if let Some(l) = cx.looked {
            self.scratch = l.stored;
        }
    }

    /// Pair the blocks the record's undefines freed with its defines from action `from` on
    /// (docs/format.md §14.3): in field order, each define of a namespace of ids takes the
    /// first block freed in its namespace and key that no earlier define took; a define of the
    /// null id takes none. The blocks left over are freed now, in field order, before the
    /// defines' events.
    fn pair(&mut self, decl: &RecordDecl, from: usize, cx: &mut Cx, sink: &mut dyn SinkDyn) {
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
                );
            }
        }
    }

    /// The first occurrence of every slot of the record, as integers: a reference's value is the
    /// integer its element holds (a split address stream), else the number it carries.
    fn load(&mut self, view: &RecordView<'_>) {
        self.gen += 1;
        let n = view.record().slots.len();
        if self.vals.len() < n {
            self.vals.resize(n, SlotVal::default());
        }
        let needed: &[bool] = self
            .needed
            .get(view.record_id() as usize)
            .map_or(&[], |b| b);
        for (i, f) in view.fields().enumerate() {
            let slot = f.slot() as usize;
            if !needed.get(slot).copied().unwrap_or(false) {
                continue;
            }
            let Some(v) = self.vals.get_mut(slot) else {
                continue;
            };
            if v.gen == self.gen {
                continue;
            }
            let int = match f.value() {
                Value::Int(x) => x,
                Value::Ref(r) => match f.resolve() {
                    Some(Ok(Resolved {
                        value: Value::Int(x),
                        ..
                    })) => x,
                    _ => r.number(),
                },
                Value::Bytes(_) => 0,
            };
            *v = SlotVal {
                gen: self.gen,
                int,
                field: i as u32,
            };
        }
    }

    /// Check the record's monotonic series; `false` when the limit stopped interpretation.
    fn monotonic(
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
                            kind: FindingKind::Backwards,
                            severity: Severity::Error,
                            at,
                            space: None,
                            key,
                            id: value,
                            defined: Some(*last_at),
                            expected: Some(*last),
                            what: Some(m.series_name.clone()),
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
        }
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn not_alive(
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
        let dead = self.dead.get((space, key, id));
        sink.finding(Finding {
            kind,
            severity: if dead.is_some() {
                Severity::Error
            } else {
                severity
            },
            at,
            space: Some(space),
            key,
            id,
            defined: dead,
            expected: None,
            what: dead.map(|_| "undefined".to_string()),
        });
    }

    fn undefine(
        &mut self,
        space: SpaceId,
        key: u64,
        id: u64,
        (dead_null, leaves_null): (bool, bool),
        cx: &mut Cx,
        sink: &mut dyn SinkDyn,
    ) {
        let ns = &self.decl.namespaces[space as usize];
        let sp = space as usize;
        let gone = if ns.shared {
            let e = self.shared[sp].get_mut(&(key, id));
            let g = e.as_ref().and_then(|v| v.last().copied());
            if let Some(v) = e {
                v.pop();
                if v.is_empty() {
                    self.shared[sp].remove(&(key, id));
                }
            }
            g
        } else {
            self.live[sp].remove(&(key, id))
        };
        let Some(l) = gone else {
            if dead_null || self.is_nulled(space, key, id) {
                // Taken as the null id: nothing to end (`F.dead = null;`, or an id that a
                // `F.leaves = null;` record left naming null).
                return;
            }
            self.not_alive(
                FindingKind::NotAlive,
                ns.unknown,
                space,
                key,
                id,
                cx.at,
                sink,
            );
            return;
        };
        self.tracked -= 1;
        self.alive[sp] -= 1;
        self.slabs[sp].release(l.stored);
        if leaves_null {
            if self.nulled.len() < MAX_NULLED {
                self.nulled.insert((space, key, id));
            }
        } else if !ns.shared {
            self.bury(space, key, id, cx.at);
        }
        if ns.kind != SpaceKind::Ids {
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

    /// Whether a `F.leaves = null;` record left the id naming null (and nothing defined it
    /// since).
    fn is_nulled(&self, space: SpaceId, key: u64, id: u64) -> bool {
        !self.nulled.is_empty() && self.nulled.contains(&(space, key, id))
    }

    /// Remember an undefined id for a while (a bounded cache, oldest forgotten first).
    fn bury(&mut self, space: SpaceId, key: u64, id: u64, at: At) {
        self.dead.bury((space, key, id), at);
    }

    fn close(&mut self, space: SpaceId, key: u64, id: u64, cx: &Cx, sink: &mut dyn SinkDyn) {
        let ns = &self.decl.namespaces[space as usize];
        let popped = self.stacks.get_mut(&(space, key)).and_then(|s| s.pop());
        if self.stacks.get(&(space, key)).is_some_and(Vec::is_empty) {
            self.stacks.remove(&(space, key));
        }
        let Some(f) = popped else {
            sink.finding(Finding {
                kind: FindingKind::Unbalanced,
                severity: Severity::Error,
                at: cx.at,
                space: Some(space),
                key,
                id,
                defined: None,
                expected: None,
                what: None,
            });
            return;
        };
        self.tracked -= 1;
        self.alive[space as usize] -= 1;
        if ns.close_same && f.id != id {
            sink.finding(Finding {
                kind: FindingKind::Mismatched,
                severity: Severity::Error,
                at: cx.at,
                space: Some(space),
                key,
                id,
                defined: Some(f.at),
                expected: Some(f.id),
                what: None,
            });
        }
    }

    fn refer(&mut self, space: SpaceId, key: u64, id: u64, cx: &mut Cx, sink: &mut dyn SinkDyn) {
        let ns = &self.decl.namespaces[space as usize];
        let sp = space as usize;
        let found = if ns.shared {
            self.shared[sp].get(&(key, id)).and_then(|v| v.last())
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
    fn define(
        &mut self,
        decl: &RecordDecl,
        action: usize,
        kind: ActionKind,
        space: SpaceId,
        key: u64,
        id: u64,
        is_null: bool,
        cx: &mut Cx,
        view: &RecordView<'_>,
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
        let sp = space as usize;
        let stored = if ns.stored.is_empty() {
            NO_STORE
        } else {
            let i = self.slabs[sp].put();
            for &(s, k, slot) in &decl.stores {
                if s == space {
                    let v = self.int(slot).unwrap_or(0);
                    self.slabs[sp].set(i, k as usize, v);
                }
            }
            i
        };
        for &(slot, sp) in &decl.names {
            if sp != space {
                continue;
            }
            if let Some(name) = self.name_of(slot, view) {
                if !self.names.contains_key(&(sp, id)) && !self.track(sink, cx.at) {
                    return false;
                }
                self.names.insert((sp, id), name);
            }
        }
        if !self.track(sink, cx.at) {
            return false;
        }
        // A table's ids are its entries: kept for names and lookups, never alive or dead.
        if ns.kind == SpaceKind::Table {
            if let Some(old) = self.live[sp].insert((key, id), Live::new(cx.at, 0, site, stored)) {
                self.tracked -= 1;
                self.slabs[sp].release(old.stored);
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
            cx.emit(sink, space, key, l.site(), HeapOp::Free { id: old });
        }
        self.alive[sp] += 1;
        if ns.shared {
            self.shared[sp].entry((key, id)).or_default().push(live);
        } else if let Some(old) = self.live[sp].insert((key, id), live) {
            // The id was alive: the old block is forgotten (reported), the new one counts.
            self.tracked -= 1;
            self.alive[sp] -= 1;
            self.slabs[sp].release(old.stored);
            sink.finding(Finding {
                kind: FindingKind::Redefined,
                severity: Severity::Error,
                at: cx.at,
                space: Some(space),
                key,
                id,
                defined: Some(old.at()),
                expected: None,
                what: None,
            });
            if ns.kind == SpaceKind::Ids {
                cx.emit(sink, space, key, old.site(), HeapOp::Free { id });
            }
        }
        if ns.kind != SpaceKind::Ids {
            return true;
        }
        let align = decl.align.and_then(|s| self.int(s));
        let (op, site) = match moved {
            Some((_, l)) if split => (
                HeapOp::Alloc {
                    id,
                    size: bytes.unwrap_or(0),
                    align,
                },
                // As a realloc's new block: the old block's site unless the record names one.
                site.or(l.site()),
            ),
            Some((old, _)) => (
                HeapOp::Move {
                    old,
                    new: id,
                    size: bytes,
                },
                site,
            ),
            None => (
                HeapOp::Alloc {
                    id,
                    size: bytes.unwrap_or(0),
                    align,
                },
                site,
            ),
        };
        cx.emit(sink, space, key, site, op);
        true
    }

    /// `false` when the limit stopped interpretation.
    fn open(
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
        let stack = self.stacks.entry((space, key)).or_default();
        let outer = stack.last().and_then(|f| f.depth);
        stack.push(Frame {
            id,
            at,
            depth: depth.map(|(_, v)| v),
        });
        self.alive[space as usize] += 1;
        if let (Some((slot, v)), Some(o)) = (depth, outer) {
            if v <= o {
                sink.finding(Finding {
                    kind: FindingKind::Depth,
                    severity: Severity::Error,
                    at,
                    space: Some(space),
                    key,
                    id: v,
                    defined: None,
                    expected: Some(o),
                    what: Some(
                        self.schema.record(at.record_type).slots[slot as usize]
                            .name
                            .clone(),
                    ),
                });
            }
        }
        true
    }

    fn int(&self, slot: SlotId) -> Option<u64> {
        let v = self.vals.get(slot as usize)?;
        (v.gen == self.gen).then_some(v.int)
    }

    fn time(&self, decl: &RecordDecl) -> Option<u64> {
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

    fn bytes(
        &self,
        decl: &RecordDecl,
        looked: Option<&Looked>,
        at: At,
        sink: &mut dyn SinkDyn,
    ) -> Option<u64> {
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
                let ns = &self.decl.namespaces[space as usize];
                let refer = decl
                    .actions
                    .iter()
                    .find(|a| a.kind == ActionKind::Refer && a.space == space);
                let id = refer.and_then(|a| self.int(a.slot)).unwrap_or(0);
                let key = refer
                    .and_then(|a| a.key)
                    .and_then(|s| self.int(s))
                    .unwrap_or(0);
                sink.finding(Finding {
                    kind: FindingKind::Bytes,
                    severity: ns.unknown_refers,
                    at,
                    space: Some(space),
                    key,
                    id,
                    defined: None,
                    expected: None,
                    what: Some("not alive".to_string()),
                });
                None
            }
            Err(Unknown::Arithmetic) => {
                sink.finding(Finding {
                    kind: FindingKind::Bytes,
                    severity: Severity::Error,
                    at,
                    space: None,
                    key: 0,
                    id: 0,
                    defined: None,
                    expected: None,
                    what: None,
                });
                None
            }
        }
    }

    fn eval(&self, e: &AExpr, looked: Option<&Looked>) -> Result<u64, Unknown> {
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

    fn site(
        &mut self,
        decl: &RecordDecl,
        looked: Option<&Looked>,
        view: &RecordView<'_>,
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
                    if let Some(Name::Text(t)) = self.name_of(slot, view) {
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
    fn name_of(&self, slot: SlotId, view: &RecordView<'_>) -> Option<Name> {
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

    /// Report what is alive at the end of the trace: ids as [`FindingKind::AliveAtEnd`], open
    /// levels as [`FindingKind::OpenAtEnd`], in the order they were defined, each with the
    /// severity its namespace declares (none for `atEnd = normal`).
    pub fn finish(&mut self, sink: &mut impl Sink) {
        for f in self.at_end() {
            sink.finding(f);
        }
    }

    /// What [`Interpreter::finish`] reports, one finding at a time: the entries are gathered
    /// packed (48 bytes each) and sorted, and each finding is made when it is asked for, so that
    /// the findings of a trace that ends with many ids alive are never all held at once.
    pub(crate) fn at_end(&self) -> impl Iterator<Item = Finding> + 's {
        let ns = &self.decl.namespaces;
        let mut out: Vec<AtEnd> = Vec::new();
        for (sp, n) in ns.iter().enumerate() {
            if n.at_end == Severity::Normal || n.kind != SpaceKind::Ids {
                continue;
            }
            let space = sp as SpaceId;
            let reserve = self.live[sp].len() + self.shared[sp].len();
            out.reserve(reserve);
            for (&(key, id), l) in &self.live[sp] {
                out.push(AtEnd::new(space, key, id, l.at(), false));
            }
            for (&(key, id), v) in &self.shared[sp] {
                out.extend(v.iter().map(|l| AtEnd::new(space, key, id, l.at(), false)));
            }
        }
        for ((space, key), v) in &self.stacks {
            if ns[*space as usize].at_end != Severity::Normal {
                out.extend(v.iter().map(|f| AtEnd::new(*space, *key, f.id, f.at, true)));
            }
        }
        // Entries equal in this key make equal findings (a block held twice by one id in the
        // same record), so an unstable sort, which needs no buffer the size of the list, gives
        // what the stable one gave; levels open come after ids alive, as they were gathered.
        out.sort_unstable_by_key(|e| (e.record, e.space, e.key, e.id, e.open));
        out.into_iter().map(move |e| {
            let at = At {
                record: e.record,
                offset: e.offset,
                record_type: e.record_type,
            };
            let kind = if e.open {
                FindingKind::OpenAtEnd
            } else {
                FindingKind::AliveAtEnd
            };
            end_finding(kind, ns[e.space as usize].at_end, e.space, e.key, e.id, at)
        })
    }
}

/// An id alive or a level open at the end, packed until its finding is made.
struct AtEnd {
    record: u64,
    offset: u64,
    key: u64,
    id: u64,
    space: SpaceId,
    record_type: RecordId,
    open: bool,
}

impl AtEnd {
    fn new(space: SpaceId, key: u64, id: u64, at: At, open: bool) -> AtEnd {
        AtEnd {
            record: at.record,
            offset: at.offset,
            key,
            id,
            space,
            record_type: at.record_type,
            open,
        }
    }
}

/// The slots a record type's declarations read (`Interpreter::int`, `Interpreter::name_of`),
/// as a mask over its `n` slots.
fn needed_slots(decl: &RecordDecl, n: usize) -> Box<[bool]> {
    fn expr(e: &AExpr, out: &mut Vec<SlotId>) {
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
    let mut mask = vec![false; n];
    for s in slots {
        if let Some(m) = mask.get_mut(s as usize) {
            *m = true;
        }
    }
    mask.into_boxed_slice()
}

fn end_finding(
    kind: FindingKind,
    severity: Severity,
    space: SpaceId,
    key: u64,
    id: u64,
    at: At,
) -> Finding {
    Finding {
        kind,
        severity,
        at,
        space: Some(space),
        key,
        id,
        defined: Some(at),
        expected: None,
        what: None,
    }
}

/// [`Sink`] as a trait object (the interpreter's internals take `&mut dyn`).
trait SinkDyn {
    fn event(&mut self, event: HeapEvent);
    fn finding(&mut self, finding: Finding);
    fn wants_events(&self) -> bool;
}

impl<T: Sink + ?Sized> SinkDyn for T {
    fn event(&mut self, event: HeapEvent) {
        Sink::event(self, event);
    }
    fn finding(&mut self, finding: Finding) {
        Sink::finding(self, finding);
    }
    fn wants_events(&self) -> bool {
        Sink::wants_events(self)
    }
}

/// The heap events of a trace, in trace order: its records decoded and interpreted by the
/// declarations of its DTD, one streaming pass. Records that do not decode (an invalid trace)
/// are skipped and counted ([`HeapEvents::problems`]); `mtf check` reports them. Beyond the
/// limit of tracked ids the events stop: check [`Interpreter::stopped`] at the end.
///
/// ```
/// let opened = metatf::open("traces/android.mtf")?;
/// let reader = opened.reader();
/// let mut events = metatf::analysis::HeapEvents::new(&reader);
/// let block = events.interpreter().declarations().space_by_name("block").unwrap();
/// let mut allocs = 0;
/// while let Some(e) = events.next() {
///     if e.space == block && matches!(e.op, metatf::analysis::HeapOp::Alloc { .. }) {
///         allocs += 1;
///     }
/// }
/// assert!(allocs > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct HeapEvents<'r> {
    records: Records<'r>,
    interp: Interpreter<'r>,
    queue: std::collections::VecDeque<HeapEvent>,
    problems: u64,
    done: bool,
}

struct Queue<'q>(&'q mut std::collections::VecDeque<HeapEvent>);

impl Sink for Queue<'_> {
    fn event(&mut self, event: HeapEvent) {
        self.0.push_back(event);
    }
}

impl<'r> HeapEvents<'r> {
    /// The events of the trace a reader reads.
    pub fn new(reader: &'r Reader<'r>) -> HeapEvents<'r> {
        HeapEvents {
            records: reader.records(),
            interp: Interpreter::new(reader.schema()),
            queue: std::collections::VecDeque::new(),
            problems: 0,
            done: false,
        }
    }

    /// The interpreter: namespaces, time unit, site names, what is alive now.
    pub fn interpreter(&self) -> &Interpreter<'r> {
        &self.interp
    }

    /// The interpreter, to change its limit before the first event.
    pub fn interpreter_mut(&mut self) -> &mut Interpreter<'r> {
        &mut self.interp
    }

    /// Decoding problems and damaged regions met so far (their records yield no events).
    pub fn problems(&self) -> u64 {
        self.problems
    }

    /// Shorthand for [`Interpreter::site_name`].
    pub fn site_name(&self, space: SpaceId, site: u64) -> Option<String> {
        self.interp.site_name(space, site)
    }
}

impl Iterator for HeapEvents<'_> {
    type Item = HeapEvent;

    fn next(&mut self) -> Option<HeapEvent> {
        loop {
            if let Some(e) = self.queue.pop_front() {
                return Some(e);
            }
            if self.done {
                return None;
            }
            match self.records.next() {
                Some(Event::Record(v)) => self.interp.record(&v, &mut Queue(&mut self.queue)),
                Some(Event::Problem(_)) | Some(Event::Damage(_)) => self.problems += 1,
                None => self.done = true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ring replayed on first use remembers exactly what the map kept eagerly remembers:
    /// with ids freed again and again, past 2·DEAD_REMEMBERED undefines, with a look-up in the
    /// middle (then the map is kept), and with a record index that goes back.
    #[test]
    fn dead_ids_are_remembered_as_the_eager_rule_remembers_them() {
        let n = 5 * DEAD_REMEMBERED as u64 / 2;
        for case in 0..4u64 {
            let mut lazy = Dead::default();
            let mut map = HashMap::default();
            let mut order = std::collections::VecDeque::new();
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ case;
            let mut record = 0u64;
            let ids = if case == 3 { 200 } else { 90_000 };
            for i in 0..n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let id = (x >> 33) % ids;
                record += (x >> 20) % 3;
                if case == 2 && i == n - 1000 {
                    record -= 7;
                }
                let at = At {
                    record,
                    offset: i,
                    record_type: 0,
                };
                lazy.bury((0, 0, id), at);
                Dead::bury_eager(&mut map, &mut order, (0, 0, id), at);
                if case == 1 && i == n / 2 {
                    assert_eq!(lazy.get((0, 0, id)), map.get(&(0, 0, id)).copied());
                }
            }
            let mut remembered = 0;
            for id in 0..ids {
                let want = map.get(&(0, 0, id)).copied();
                remembered += usize::from(want.is_some());
                assert_eq!(lazy.get((0, 0, id)), want, "case {case}, id {id}");
            }
            assert!(remembered > 0);
        }
    }
}
