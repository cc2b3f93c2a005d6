//! The declarations of a DTD applied to its records, one record at a time: heap events for the
//! statistics and `replay`, findings for `mtf check`.
//!
//! [`Interpreter::record`] takes each decoded record in trace order and tells a [`Sink`] what
//! happened: [`HeapEvent`]s, and [`Finding`]s where the trace breaks a declaration (a free of
//! an id that is not alive, a method exit that does not match its entry, a time going
//! backwards). [`Interpreter::finish`] reports what is still alive at the end. [`HeapEvents`]
//! wraps both around a reader as an iterator of events.
//!
//! The files: this one holds the [`Interpreter`] and its record loop; `actions.rs` the role
//! handlers (define, undefine, refer, close, open, monotonic), `direct.rs` the common record
//! types run straight from a scan's values, `values.rs` what a record's
//! actions read (slot values, byte counts, sites, names), `state.rs` the state of ids (live
//! blocks, stored values, open levels, recently undefined ids), `finding.rs` the findings,
//! `sink.rs` where events and findings go, `events.rs` the [`HeapEvents`] iterator.

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

use crate::decode::RecordView;
use crate::dtd::analysis::{
    ActionKind, Analysis, Namespace, RecordDecl, Severity, Site, SpaceId, SpaceKind, TimeUnit,
};
use crate::dtd::{RecordId, Schema};

/// The default limit on tracked entries (live ids, open levels, monotonic keys, table names):
/// 2²⁴ (16,777,216).
pub const DEFAULT_MAX_TRACKED: usize = 1 << 24;

/// The highest limit on tracked entries: 2³¹ − 1. The older blocks of a shared id are linked
/// by 31-bit numbers (`state.rs`, `Holders`), and so many entries take tens of GB.
pub const MAX_TRACKED: usize = (1 << 31) - 1;

mod actions;
mod direct;
mod events;
mod finding;
mod places;
mod resume;
mod sink;
mod stacks;
mod state;
mod values;

pub use events::HeapEvents;
pub use finding::{At, Finding, FindingKind};
pub use sink::Sink;
pub use state::DEAD_REMEMBERED;
#[cfg_attr(not(feature = "parallel"), allow(unused_imports))]
pub(crate) use state::{DeadJournal, DeadKey, DeadRing, DEAD_OWN};

use direct::Direct;
use finding::{end_finding, AtEnd};
pub(crate) use sink::SinkDyn;
use state::{Dead, Frame, Holders, Live, Slab, NO_STORE};
use values::{needed_slots, Cx, Freed, Name, SlotVal};

// Design (plans): most data records of a heap trace do one thing: a `malloc` defines one id,
// a `free` undefines one, a time stamp only moves the clock. For such a record type the
// general loop over the actions (the pairing of frees with defines, guards, references,
// nestings, stack roles) is found once, when the interpreter is made, to have nothing to do but
// that one action, and the record runs it directly: the same calls (`Interpreter::end_id`,
// `Interpreter::define`) in the same order, so the same events and findings, without the
// loop's set-up per record. The declarations do not change while a trace is read (a metadata
// record changes how fields are decoded, not what the records do), so a plan is never redone.
/// How the actions of a record type run (`Interpreter::record_dyn`).
#[derive(Debug, Clone, Copy)]
enum Plan {
    /// The general loop over the actions.
    General,
    /// No action and no stack role: the record's time, thread, monotonic series and resident
    /// bytes are all it gives.
    Quiet,
    /// One unguarded undefine in a namespace of ids (its key's field, `F.dead`, `F.leaves`).
    Free {
        space: SpaceId,
        slot: crate::dtd::SlotId,
        key: Option<crate::dtd::SlotId>,
        nulls: (bool, bool),
    },
    /// One unguarded define in a namespace of ids (its key's field).
    Alloc {
        space: SpaceId,
        slot: crate::dtd::SlotId,
        key: Option<crate::dtd::SlotId>,
    },
}

impl Plan {
    fn of(decl: &RecordDecl, namespaces: &[Namespace]) -> Plan {
        if !decl.stack.is_empty() {
            return Plan::General;
        }
        let a = match decl.actions.as_slice() {
            [] => return Plan::Quiet,
            [a] => a,
            _ => return Plan::General,
        };
        // A guard of another field (a time that only some records carry) leaves the action
        // as it is; one of the action's field or key may make it not apply.
        if decl
            .guards
            .iter()
            .any(|&(s, _)| s == a.slot || Some(s) == a.key)
        {
            return Plan::General;
        }
        let ids = namespaces
            .get(a.space as usize)
            .is_some_and(|n| n.kind == SpaceKind::Ids);
        if !ids {
            return Plan::General;
        }
        match a.kind {
            ActionKind::Undefine => Plan::Free {
                space: a.space,
                slot: a.slot,
                key: a.key,
                nulls: (a.dead_null, a.leaves_null),
            },
            ActionKind::Define => Plan::Alloc {
                space: a.space,
                slot: a.slot,
                key: a.key,
            },
            _ => Plan::General,
        }
    }
}

/// Whether the declarations of a record type read more of its records than the integers of
/// the slots they name (`needed_slots`): a text (a name, a site named by a string), a stack's
/// frames or rules. Such a record is run from its view; any other can be run from its values
/// alone (`Interpreter::record_values`), with the same events and findings.
fn reads_view(decl: &RecordDecl, namespaces: &[Namespace]) -> bool {
    reads_more_than_site_text(decl, namespaces) || text_site(decl).is_some()
}

/// [`reads_view`], but for a site named by a string.
fn reads_more_than_site_text(decl: &RecordDecl, namespaces: &[Namespace]) -> bool {
    // A define in a stack tree's namespace makes a node of the record's fields.
    let tree = decl
        .actions
        .iter()
        .any(|a| namespaces.get(a.space as usize).is_some_and(|n| n.tree));
    !decl.stack.is_empty() || !decl.names.is_empty() || tree
}

/// The field whose string names the site of the ids a record type defines (`F.site = text`).
fn text_site(decl: &RecordDecl) -> Option<crate::dtd::SlotId> {
    match decl.site {
        Some(crate::dtd::analysis::Site::Field { slot, space: None }) => Some(slot),
        _ => None,
    }
}

/// The declarations of a DTD applied to records one at a time. See the module docs.
#[derive(Debug)]
pub struct Interpreter<'s> {
    schema: &'s Schema,
    decl: &'s Analysis,
    /// Per namespace: its live ids (a shared namespace's in `shared`), by (key, id).
    live: Vec<HashMap<(u64, u64), Live>>,
    /// Per shared namespace: the blocks holding each id, the newest last.
    shared: Vec<Holders>,
    /// Per namespace: the places of its live ids (the values they store, their numbers).
    slabs: Vec<Slab>,
    /// Places of ids that died in the record being run, given back when it is over (see
    /// `Interpreter::release`).
    released: Vec<(SpaceId, u32)>,
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
    /// Per record type: how its actions run (`Plan`).
    plans: Vec<Plan>,
    /// Per record type: the slots its declarations read (the others are not loaded).
    needed: Vec<Box<[bool]>>,
    /// Per record type whose declarations read no more of its records than its integers and
    /// the string that names its site: the slots [`Interpreter::record_values`] takes with the
    /// site's text told (`Interpreter::scan_fields`), the site's field among them.
    text_slots: Vec<Option<Box<[crate::dtd::SlotId]>>>,
    /// The text of the site of the record being run from its values, if it was not known yet
    /// (`Interpreter::record_values`): its field's value and its string.
    scan_text: Option<(u64, Box<str>)>,
    /// Per record type: the slots [`Interpreter::record_values`] takes, or `None` for a type
    /// whose declarations read more than integers (`reads_view`).
    scan_slots: Vec<Option<Box<[crate::dtd::SlotId]>>>,
    /// Per record type: how its records run from those values without loading them, if they
    /// can (`Direct`).
    direct: Vec<Option<Direct>>,
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
    /// Extension stacks/1: nodes, frames, contexts, rules.
    st: stacks::StackState,
    /// Whether findings of ids not alive say which record undefined them (`Dead`); a sink
    /// that reads no such detail (the statistics') spares the interpreter remembering the
    /// undefines (`Interpreter::without_dead_details`).
    dead_details: bool,
}

impl<'s> Interpreter<'s> {
    /// An interpreter for a schema's declarations (none: it reports nothing).
    pub fn new(schema: &'s Schema) -> Interpreter<'s> {
        let decl = &schema.analysis;
        let needed: Vec<Box<[bool]>> = schema
            .records
            .iter()
            .enumerate()
            .map(|(r, rt)| needed_slots(decl.record(r as RecordId), rt.slots.len()))
            .collect();
        let scan_slots = needed
            .iter()
            .enumerate()
            .map(|(r, n)| {
                let d = decl.record(r as RecordId);
                // A type that declares nothing is only counted: no value is read.
                let read = !d.is_empty() && reads_view(d, &decl.namespaces);
                let slots = n.iter().enumerate().filter(|(_, &m)| m);
                (!read).then(|| slots.map(|(s, _)| s as crate::dtd::SlotId).collect())
            })
            .collect::<Vec<Option<Box<[crate::dtd::SlotId]>>>>();
        let text_slots = needed
            .iter()
            .enumerate()
            .map(|(r, n)| {
                let d = decl.record(r as RecordId);
                let only_text = !d.is_empty()
                    && text_site(d).is_some()
                    && !reads_more_than_site_text(d, &decl.namespaces);
                let slots = n.iter().enumerate().filter(|(_, &m)| m);
                only_text.then(|| slots.map(|(s, _)| s as crate::dtd::SlotId).collect())
            })
            .collect::<Vec<Option<Box<[crate::dtd::SlotId]>>>>();
        let plans: Vec<Plan> = (0..schema.records.len())
            .map(|r| Plan::of(decl.record(r as RecordId), &decl.namespaces))
            .collect();
        let direct = scan_slots
            .iter()
            .zip(&plans)
            .enumerate()
            .map(|(r, (slots, &plan))| {
                let slots = slots.as_deref()?;
                Direct::of(decl.record(r as RecordId), plan, decl, slots)
            })
            .collect();
        Interpreter {
            schema,
            decl,
            live: decl.namespaces.iter().map(|_| HashMap::default()).collect(),
            shared: decl.namespaces.iter().map(|_| Holders::default()).collect(),
            slabs: decl
                .namespaces
                .iter()
                .map(|n| Slab {
                    width: n.stored.len(),
                    ..Slab::default()
                })
                .collect(),
            released: Vec::new(),
            stacks: HashMap::default(),
            next_id: decl.namespaces.iter().map(|n| n.first).collect(),
            names: HashMap::default(),
            text_sites: HashMap::default(),
            mono: HashMap::default(),
            mono0: Vec::new(),
            active: (0..schema.records.len())
                .map(|r| !decl.record(r as RecordId).is_empty())
                .collect(),
            plans,
            needed,
            scan_slots,
            text_slots,
            scan_text: None,
            direct,
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
            st: stacks::StackState::new(schema),
            dead_details: true,
        }
    }

    // Design: the ring of recent undefines (`Dead`) is written at every free, 40 bytes each
    // over 5 MB, which pushes the live tables out of the cache; its only use is the detail of
    // a finding of an id not alive (a double free is an error, with the record that freed the
    // id). The statistics count such findings and read nothing else of them, so their source
    // turns the ring off: the events and the counts are the same.
    /// Stop remembering recently undefined ids: a finding of an id not alive then never says
    /// which record undefined it, nor becomes an error for that (its severity is the declared
    /// one). For a sink that only counts such findings.
    pub(crate) fn without_dead_details(&mut self) {
        self.dead_details = false;
    }

    /// Track at most `limit` entries (live ids, open levels, monotonic keys, table names), and
    /// never more than [`MAX_TRACKED`].
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit.min(MAX_TRACKED);
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

    /// Keep a journal of the undefines and of the look-ups of recently undefined ids that
    /// found nothing (a pass over one chunk of a trace, from a restored state, before its first
    /// record; see [`DeadRing`]): the memory of undefines starts empty here, as such a pass's
    /// does.
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    pub(crate) fn keep_dead_journal(&mut self) {
        self.dead = state::Dead::journaled();
    }

    /// The look-ups journaled so far: per finding of an id not alive, in order, the undefines
    /// before it and the severity the DTD declares for it.
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    pub(crate) fn dead_asks(&self) -> &[(u64, Severity)] {
        self.dead.journal.as_ref().map_or(&[], |j| &j.asks)
    }

    /// The journal kept since [`Interpreter::keep_dead_journal`], with the memory of the last
    /// undefines: the pass is over.
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    pub(crate) fn take_dead_journal(&mut self) -> DeadJournal {
        self.dead.take_journal()
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
        let sites = ns.site_space?;
        // A site in a stack tree is named by its node's function (a skipped `operator new`
        // node is its caller's), as heaptrack_print names it.
        if let Some(f) = self.tree_site_function(sites, site) {
            return Some(f);
        }
        self.name(sites, site)
    }

    /// Per record type (by id), whether its records can change what [`Interpreter::site_name`]
    /// and the stack profiles say: those that name ids (`names`), name a site by its text, or
    /// have roles of extension stacks/1 (nodes, frames, rules). Records of the other types
    /// only make blocks live or dead, refer, store values and keep the clock.
    pub(crate) fn naming_types(&self) -> Vec<bool> {
        (0..self.active.len())
            .map(|rid| {
                let d = self.decl.record(rid as RecordId);
                self.active[rid]
                    && (!d.names.is_empty()
                        || !d.stack.is_empty()
                        || matches!(d.site, Some(Site::Field { space: None, .. })))
            })
            .collect()
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
                    expected: Some(self.limit as u64),
                    ..Finding::error(FindingKind::Limit, at)
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

    /// [`Interpreter::record`] to a sink of the crate that takes the places of the events'
    /// blocks.
    pub(crate) fn record_dyn(&mut self, view: &RecordView<'_>, sink: &mut dyn SinkDyn) {
        if !self.begin(view.record_id()) {
            return;
        }
        self.load(view);
        let at = At {
            record: view.index(),
            offset: view.offset(),
            record_type: view.record_id(),
        };
        self.run(at, Some(view), sink);
    }

    /// Per record type (by id), the fields whose values [`Interpreter::record_values`] takes
    /// for its records, in that order, or `None` for a type whose records it must see whole
    /// ([`Interpreter::record`]): what a [`ScanValues`](crate::decode::ScanValues) is made of,
    /// [`with_references`](crate::decode::ScanValues::with_references) for the types whose
    /// site a string names.
    pub(crate) fn scan_fields(&self) -> Vec<Option<Box<[crate::dtd::SlotId]>>> {
        self.scan_slots
            .iter()
            .zip(&self.text_slots)
            .map(|(a, b)| a.clone().or_else(|| b.clone()))
            .collect()
    }

    /// [`Interpreter::record_dyn`] for a record of type `at.record_type` given as the values of
    /// the fields [`Interpreter::scan_fields`] names for its type, in that order (any values
    /// after those are not read): a record a scan stepped over, with the same events and
    /// findings as for its view.
    ///
    /// `text(k)`, for a type whose site a string names, is the string of value `k` (its
    /// site's field, a reference: [`Scanned::bytes`](crate::decode::Scanned::bytes)): read
    /// only for a site whose text is not known yet, as the view's would be.
    pub(crate) fn record_values(
        &mut self,
        at: At,
        values: &[u64],
        text: &dyn Fn(usize) -> Option<String>,
        sink: &mut dyn SinkDyn,
    ) {
        if !self.begin(at.record_type) {
            return;
        }
        let rt = at.record_type as usize;
        if let Some(&Some(d)) = self.direct.get(rt) {
            if d.runs(values) {
                self.run_direct(d, at, values, sink);
                return;
            }
        }
        self.gen += 1;
        let n = self.schema.records.get(rt).map_or(0, |r| r.slots.len());
        if self.vals.len() < n {
            self.vals.resize(n, SlotVal::default());
        }
        let own = self.scan_slots.get(rt).and_then(|s| s.as_deref());
        let texts = match own {
            None => self.text_slots.get(rt).and_then(|s| s.as_deref()),
            Some(_) => None,
        };
        let own = own.or(texts);
        for (&slot, &int) in own.unwrap_or(&[]).iter().zip(values) {
            if let Some(v) = self.vals.get_mut(slot as usize) {
                *v = SlotVal {
                    gen: self.gen,
                    int,
                    field: 0,
                };
            }
        }
        if let Some(own) = texts {
            self.scan_text = self.unknown_site_text(rt, own, values, text);
        }
        self.run(at, None, sink);
        self.scan_text = None;
    }

    /// For a record of type `rt` run from its values `values` (of the slots `own`): the text
    /// of its site, where a define of the record could remember it (`Interpreter::site`) and
    /// it is not known yet; `text(k)` reads the string of value `k`.
    #[cold]
    fn unknown_site_text(
        &self,
        rt: usize,
        own: &[crate::dtd::SlotId],
        values: &[u64],
        text: &dyn Fn(usize) -> Option<String>,
    ) -> Option<(u64, Box<str>)> {
        if self.tracked >= self.limit {
            return None;
        }
        let decl = self.decl.record(rt as RecordId);
        let slot = text_site(decl)?;
        let k = own.iter().position(|&s| s == slot)?;
        let v = *values.get(k)?;
        let defines = decl.actions.iter().filter(|a| {
            matches!(
                a.kind,
                crate::dtd::analysis::ActionKind::Define
                    | crate::dtd::analysis::ActionKind::DefineNext
            )
        });
        let mut unknown = defines.map(|a| (a.space, v));
        if !unknown.any(|key| !self.text_sites.contains_key(&key)) {
            return None;
        }
        Some((v, text(k)?.into_boxed_str()))
    }

    /// What comes before a record's values are loaded: the places of the ids the last record
    /// ended given back; whether the record is to be run (interpretation goes on and its type
    /// declares something).
    #[inline(always)]
    fn begin(&mut self, record_type: RecordId) -> bool {
        // The places of the ids the last record ended: their numbers were in its events, which
        // the sink has taken by now.
        for (sp, i) in self.released.drain(..) {
            if let Some(slab) = self.slabs.get_mut(sp as usize) {
                slab.release(i);
            }
        }
        !self.stopped
            && self
                .active
                .get(record_type as usize)
                .copied()
                .unwrap_or(false)
    }

    /// The declarations of a record applied, its values loaded; its view is `None` only for a
    /// type whose declarations read nothing but its integers (`Interpreter::scan_fields`).
    #[inline(always)]
    fn run(&mut self, at: At, view: Option<&RecordView<'_>>, sink: &mut dyn SinkDyn) {
        let decl: &'s RecordDecl = self.decl.record(at.record_type);
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
        if let Some(s) = decl.resident {
            if decl.applies(s, |g| self.int(g)) {
                if let Some(v) = self.int(s) {
                    sink.resident(v);
                }
            }
        }
        match self.plans.get(at.record_type as usize) {
            Some(Plan::General) | None => {}
            Some(Plan::Quiet) => return,
            Some(&Plan::Free {
                space,
                slot,
                key,
                nulls,
            }) => {
                let cx = Cx::plain(at, thread, time, sink.wants_events());
                let Some(id) = self.int(slot) else { return };
                let key = key.and_then(|s| self.int(s)).unwrap_or(0);
                self.free_one(space, key, id, nulls, &cx, sink);
                return;
            }
            Some(&Plan::Alloc { space, slot, key }) => {
                let mut cx = Cx::plain(at, thread, time, sink.wants_events());
                cx.paired = true;
                let Some(id) = self.int(slot) else { return };
                let key = key.and_then(|s| self.int(s)).unwrap_or(0);
                let is_null = self.decl.namespaces[space as usize].null == Some(id);
                let kind = ActionKind::Define;
                self.define(decl, 0, kind, space, key, id, is_null, &mut cx, view, sink);
                return;
            }
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
            stack: None,
            replaced: NO_STORE,
        };
        if !decl.stack.is_empty() {
            cx.stack = self.context(at.record_type as usize);
        }
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
        if let (false, Some(view)) = (decl.stack.is_empty(), view) {
            self.stack_rules(decl, view);
        }
        self.freed = std::mem::take(&mut cx.freed);
        if let Some(l) = cx.looked {
            self.scratch = l.stored;
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
            // A shared id's blocks in any order: the sort below orders them.
            for ((key, id), c) in self.shared[sp].chains() {
                out.extend(c.map(|l| AtEnd::new(space, key, id, l.at(), false)));
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
        // The entries are put in order by a list of their records and places (16 bytes each,
        // moved by the sort rather than the entries' 48), each run of one record (a record that
        // defines several ids: rare) ordered by the rest of the key.
        let key = |e: &AtEnd| (e.record, e.space, e.key, e.id, e.open);
        let mut order: Vec<(u64, u32)> = out
            .iter()
            .enumerate()
            .map(|(i, e)| (e.record, i as u32))
            .collect();
        order.sort_unstable();
        let mut from = 0;
        while from < order.len() {
            let mut to = from + 1;
            while order.get(to).is_some_and(|o| o.0 == order[from].0) {
                to += 1;
            }
            if to - from > 1 {
                order[from..to].sort_unstable_by_key(|&(_, i)| key(&out[i as usize]));
            }
            from = to;
        }
        order.into_iter().map(move |(_, i)| {
            let e = &out[i as usize];
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::event::{HeapEvent, Places};
    use crate::decode::Event;

    /// Everything an interpreter tells its sink, in order.
    struct Log(Vec<String>, bool);

    impl SinkDyn for Log {
        fn event_placed(&mut self, e: HeapEvent, p: Places) {
            self.0.push(format!("{e:?} {p:?}"));
        }
        fn finding(&mut self, f: Finding) {
            self.0.push(format!("{f:?}"));
        }
        fn wants_events(&self) -> bool {
            self.1
        }
        fn resident(&mut self, bytes: u64) {
            self.0.push(format!("resident {bytes}"));
        }
    }

    /// A limit on tracked entries is taken as asked up to 2³¹ − 1, and no higher (the older
    /// holders of a shared id are linked by 31-bit numbers).
    #[test]
    fn the_limit_on_tracked_entries_stops_at_two_to_the_31_less_one() {
        let o = crate::open(concat!(env!("CARGO_MANIFEST_DIR"), "/traces/heaptrack.mtf"))
            .expect("a shipped trace");
        let mut i = Interpreter::new(o.schema());
        assert_eq!(i.limit, DEFAULT_MAX_TRACKED);
        for (asked, kept) in [
            (5, 5),
            (MAX_TRACKED, MAX_TRACKED),
            (MAX_TRACKED + 1, MAX_TRACKED),
            (usize::MAX, MAX_TRACKED),
        ] {
            i.set_limit(asked);
            assert_eq!(i.limit, kept);
        }
        assert_eq!(MAX_TRACKED, state::Link::MAX);
    }

    /// What the interpreter says of a trace (with events, or findings only as `mtf check`),
    /// with its plans or with the general loop for every record type; and how many record
    /// types have a plan of their own.
    fn said(o: &crate::Opened, events: bool, plans: bool) -> (Vec<String>, usize) {
        let reader = o.reader();
        let mut i = Interpreter::new(reader.schema());
        if !plans {
            i.plans.iter_mut().for_each(|p| *p = Plan::General);
        }
        let planned = i
            .plans
            .iter()
            .filter(|p| !matches!(p, Plan::General))
            .count();
        let mut log = Log(Vec::new(), events);
        let mut records = reader.records();
        while let Some(e) = records.next() {
            if let Event::Record(r) = e {
                i.record_dyn(&r, &mut log);
            }
        }
        log.0.extend(i.at_end().map(|f| format!("{f:?}")));
        log.0.extend(texts(&i));
        (log.0, planned)
    }

    /// What the interpreter says of a trace when the records a scan can step over are given
    /// to it as their values (`Interpreter::record_values`), the others as views; and how many
    /// records went each way.
    fn said_scanned(o: &crate::Opened, events: bool) -> (Vec<String>, u64, u64) {
        let reader = o.reader();
        let mut i = Interpreter::new(reader.schema());
        let mut values = crate::decode::ScanValues::new(i.scan_fields()).with_references();
        let mut per_type = vec![0u64; reader.schema().records.len()];
        let mut log = Log(Vec::new(), events);
        let (mut scanned, mut viewed) = (0, 0);
        let mut records = reader.records();
        loop {
            scanned += records.scan_values(
                &mut per_type,
                crate::decode::ScanStop::NONE,
                &mut values,
                |r| {
                    let at = At {
                        record: r.index,
                        offset: r.offset,
                        record_type: r.record_id,
                    };
                    let text =
                        |k: usize| r.bytes(k).map(|b| String::from_utf8_lossy(b).into_owned());
                    i.record_values(at, r.values, &text, &mut log);
                    true
                },
            );
            match records.next() {
                None => break,
                Some(Event::Record(r)) => {
                    viewed += 1;
                    i.record_dyn(&r, &mut log);
                }
                Some(_) => {}
            }
        }
        log.0.extend(i.at_end().map(|f| format!("{f:?}")));
        log.0.extend(texts(&i));
        (log.0, scanned, viewed)
    }

    /// The trace the text `text` (`mtf dump` lines) packs into under `schema`, opened with
    /// its DTD `dtd` beside it.
    fn packed(schema: &crate::dtd::Schema, dtd: &str, text: &str) -> crate::Opened {
        let bytes =
            crate::pack::pack_to_vec(schema, text.as_bytes(), crate::text::InputFormat::Text)
                .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.dtd");
        std::fs::write(&path, dtd).unwrap();
        crate::OpenOptions::default()
            .dtd(path)
            .open_bytes(bytes)
            .unwrap()
    }

    /// A trace of `dtd` from generated records: allocations (of live ids, of the null id
    /// too), frees (double, of ids never seen, of the null id), reallocs, time stamps.
    fn generated(dtd: &str, realloc: &str, tail: &str, n: usize) -> crate::Opened {
        let schema = crate::dtd::parse_str("t.dtd", dtd).unwrap().schema;
        let mut text =
            String::from("%mtf 1 dtd=\"t.dtd\" class=32 order=little\nsection number=1\n");
        let (mut live, mut freed, mut next, mut x) = (Vec::new(), Vec::new(), 16u64, 7u64);
        for k in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 33) % 100;
            let line = match r {
                _ if r < 40 || live.is_empty() => {
                    next += 16;
                    live.push(next);
                    format!("alloc size={} address={next}", r + 1)
                }
                _ if r < 75 => {
                    let a = live.swap_remove((x >> 40) as usize % live.len());
                    freed.push(a);
                    format!("free address={a}")
                }
                _ if r < 82 && !freed.is_empty() => {
                    format!("free address={}", freed[(x >> 40) as usize % freed.len()])
                }
                _ if r < 85 => format!("free address={}", 1_000_000 + r),
                _ if r < 87 => "free address=0".to_string(),
                _ if r < 89 => "alloc size=3 address=0".to_string(),
                // An id freed before defined again (left naming null by a `leaves = null;`
                // free, it names a block again).
                _ if r < 90 && !freed.is_empty() => {
                    let a = freed[(x >> 40) as usize % freed.len()];
                    live.push(a);
                    format!("alloc size=9 address={a}")
                }
                _ if r < 92 => format!("alloc size=8 address={}", live[0]),
                _ if r < 96 => {
                    let old = live.swap_remove((x >> 40) as usize % live.len());
                    next += 16;
                    live.push(next);
                    format!("{realloc} size=5 old={old} address={next}")
                }
                // Time stamps, going back now and then.
                _ => format!("tick time={}", k + 10 - (r as usize % 3) * 4),
            };
            text.push_str(&line);
            text.push_str(tail);
            text.push('\n');
        }
        packed(&schema, dtd, &text)
    }

    /// A DTD of allocations, reallocations, frees and time stamps, with `key` (declarations)
    /// added to its analysis.
    /// The generated heap traces both equivalence tests read: ids alone, and ids keyed by heap.
    fn generated_heaps() -> Vec<crate::Opened> {
        vec![
            generated(&heap_dtd(""), "realloc", " heap=0", 20_000),
            generated(
                &heap_dtd("block.key = heap;\n"),
                "realloc",
                " heap=1",
                20_000,
            ),
        ]
    }
    fn heap_dtd(key: &str) -> String {
        format!(
            "tag.width = 1;\nsize.width = 4; size.interpretation = none;\n\
             address.width = 8; address.interpretation = none;\n\
             time.width = 4; time.interpretation = none;\n\
             heap.width = 1; heap.interpretation = none;\n\
             analysis.version = 1;\nsize.size = bytes;\ntime.time = us;\n\
             time.monotonic = trace;\nblock.null = 0;\nblock.unknown = info;\n{key}\
             section heap 1 {{\n\
             alloc : (tag, size, address, heap) {{ tag.value = 4; address.defines = block; address.bytes = size.value; }}\n\
             realloc : (tag, size, old : address, address, heap) {{ tag.value = 5; old.undefines = block; address.defines = block; address.bytes = size.value; }}\n\
             free : (tag, address, heap) {{ tag.value = 6; address.undefines = block; }}\n\
             tick : (tag, time, heap) {{ tag.value = 7; }}\n}}\n"
        )
    }

    /// A trace of heaptrack's shape: allocation infos numbered as they come, allocations of a
    /// block of an info (its size and site) that many live blocks share, frees; with
    /// allocations of infos not yet defined and of the null info, frees of infos with no live
    /// block, and times that go back now and then.
    fn generated_shared(n: usize) -> crate::Opened {
        let dtd = "tag.width = 1;\nsize.width = 4; size.interpretation = none;\n\
                   trace.width = 4; trace.interpretation = none;\n\
                   info.width = 4; info.interpretation = none;\n\
                   time.width = 4; time.interpretation = none;\n\
                   analysis.version = 1;\nsize.size = bytes;\ntime.time = us;\n\
                   time.monotonic = trace;\nblock.shared = yes;\nblock.unknown = info;\n\
                   allocinfo.atEnd = normal;\nallocinfo.null = 5;\n\
                   section heap 1 {\n\
                   allocInfo : (tag, size, trace) { tag.value = 4; size.definesNext = allocinfo; trace.site = trace; }\n\
                   alloc : (tag, info, time) { tag.value = 5; info.refers = allocinfo; info.defines = block; info.bytes = allocinfo.size.value; info.site = allocinfo; }\n\
                   free : (tag, info) { tag.value = 6; info.undefines = block; }\n}\n";
        let schema = crate::dtd::parse_str("t.dtd", dtd).unwrap().schema;
        let mut text =
            String::from("%mtf 1 dtd=\"t.dtd\" class=32 order=little\nsection number=1\n");
        let (mut infos, mut live, mut x) = (0u64, Vec::new(), 11u64);
        for k in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 33) % 100;
            let line = match r {
                _ if r < 5 || infos == 0 => {
                    infos += 1;
                    format!("allocInfo size={} trace={}", r * 8 + 1, r % 7)
                }
                // An info not defined yet, now and then the null one.
                _ if r < 8 => format!("alloc info={} time={k}", infos + r % 2),
                _ if r < 50 => {
                    let i = (x >> 40) % infos;
                    live.push(i);
                    format!("alloc info={i} time={}", k + 5 - (r as usize % 3) * 4)
                }
                _ if r < 90 && !live.is_empty() => {
                    let i = live.swap_remove((x >> 40) as usize % live.len());
                    format!("free info={i}")
                }
                _ => format!("free info={}", infos + 3),
            };
            text.push_str(&line);
            text.push('\n');
        }
        packed(&schema, dtd, &text)
    }

    /// A trace of Android's shape (`hatf-android.dtd`, as `mtf import --from android` writes
    /// it): malloc, calloc (now and then with a count that overflows), memalign, frees that say
    /// how many bytes were resident (under `haspresent`) or not, frees of the null id, of ids
    /// not alive and twice, reallocations, threads that end; times on some records only
    /// (`start` 0: none), going back now and then; several threads and heaps.
    /// The texts of the sites the interpreter remembered, sorted.
    fn texts(i: &Interpreter<'_>) -> Vec<String> {
        let mut t: Vec<String> = i
            .text_sites
            .iter()
            .map(|(k, v)| format!("site {k:?}: {v}"))
            .collect();
        t.sort();
        t
    }

    /// mtrace's shape: allocations whose site is named by a string of a table (a
    /// `sectionOffset`), frees, null allocations; the strings written first, some never used,
    /// and the same site met again and again.
    fn generated_text_sites(n: usize) -> crate::Opened {
        let dtd = "tag.width = 1;
            bytes16 : (len, data) {
                len.width = 2;  len.interpretation = none;
                data.width = len.value;  data.interpretation = none;  data.display = text;
            }
            size.width = 4;  size.interpretation = none;
            address.width = 4;  address.interpretation = delta 0;  address.display = hex;
            caller.width = 3;  caller.interpretation = sectionOffset strings;
            analysis.version = 1;
            size.size = bytes;
            block.null = 0;
            section heap 1 {
                alloc : (tag, size, address, caller) {
                    tag.value = 4; address.defines = block; address.bytes = size.value;
                    caller.site = text;
                }
                free : (tag, address) { tag.value = 6; address.undefines = block; }
            }
            section strings 2 {
                string : (tag, s : bytes16) { tag.value = 4; }
            }
        ";
        let schema = crate::dtd::parse_str("t.dtd", dtd).unwrap().schema;
        let mut text = String::from("%mtf 1 dtd=\"t.dtd\" class=32 order=little\n");
        text.push_str("section number=2\n");
        let (mut offsets, mut at) = (Vec::new(), 0u64);
        for k in 0..300u64 {
            let s = format!("./prog{}:[0x{:x}]", k % 7, 0x401000 + k * 13);
            offsets.push(at);
            at += 3 + s.len() as u64;
            text.push_str(&format!("string s.len={} s.data=\"{s}\"\n", s.len()));
        }
        text.push_str("section number=1\n");
        let (mut live, mut next, mut x) = (Vec::new(), 0x10000u64, 11u64);
        for _ in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 33) % 100;
            // Sites skewed towards the first strings, as callers are.
            let site = offsets[((x >> 40) % 300 * ((x >> 50) % 300) / 300) as usize];
            let line = match r {
                _ if r < 50 || live.is_empty() => {
                    next += 32;
                    live.push(next);
                    format!("alloc size={} address={next} caller=@{site}", r + 1)
                }
                _ if r < 53 => format!("alloc size=0 address=0 caller=@{site}"),
                _ => {
                    let a = live.swap_remove((x >> 40) as usize % live.len());
                    format!("free address={a}")
                }
            };
            text.push_str(&line);
            text.push('\n');
        }
        packed(&schema, dtd, &text)
    }

    fn generated_android(n: usize) -> crate::Opened {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/dtds/hatf-android.dtd");
        let dtd = std::fs::read_to_string(path).unwrap();
        let schema = crate::dtd::parse_str("hatf-android.dtd", &dtd)
            .unwrap()
            .schema;
        let mut text = String::from(
            "%mtf 1 dtd=\"hatf-android.dtd\" class=64 order=little\nsection number=1:heap\n",
        );
        // The current value of each (type, default field): a change is a metadata record.
        let mut defaults: HashMap<(&str, &str), u64> = HashMap::default();
        let mut line = |text: &mut String, ty: &'static str, fields: &[(&'static str, u64)]| {
            let mut rec = String::from(ty);
            for &(f, v) in fields {
                let default = !matches!(f, "size" | "address" | "old");
                if default && defaults.get(&(ty, f)).copied().unwrap_or(0) != v {
                    text.push_str(&format!("metadata {ty}.{f} default {v}\n"));
                    defaults.insert((ty, f), v);
                }
                rec.push_str(&format!(" {f}={v}"));
            }
            text.push_str(&rec);
            text.push('\n');
        };
        let (mut live, mut freed, mut next, mut x, mut t) =
            (Vec::new(), Vec::new(), 0x1000u64, 5u64, 1_000_000u64);
        for _ in 0..n {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = (x >> 33) % 100;
            let y = x >> 40;
            // Times on about half the records, mostly going forward.
            t = if y % 13 == 0 {
                t - y % 5000
            } else {
                t + y % 3000
            };
            let (start, end) = if y % 2 == 0 { (t, t + 40) } else { (0, 0) };
            let timed = u64::from(start != 0);
            let thread = 100 + y % 3;
            let heap = u64::from(y % 7 == 0);
            let common = [("time", 0), ("thread", thread), ("heap", heap)];
            match r {
                _ if r < 40 || live.is_empty() => {
                    next += 16;
                    live.push((next, heap));
                    // malloc, calloc (its count now and then overflowing), memalign.
                    let (func, nmemb, align) = match y % 10 {
                        0 | 1 => (1, if y % 50 == 0 { 1 << 40 } else { 1 + y % 4 }, 0),
                        2 => (2, 0, 16 << (y % 3)),
                        _ => (0, 0, 0),
                    };
                    let size = if func == 1 && nmemb > 4 {
                        1 << 30
                    } else {
                        1 + r
                    };
                    let mut f = vec![("size", size), ("address", next)];
                    f.extend(common);
                    f.extend([("func", func), ("nmemb", nmemb), ("align", align)]);
                    f.extend([("timed", timed), ("start", start), ("end", end)]);
                    line(&mut text, "alloc", &f);
                }
                _ if r < 85 => {
                    let (a, h) = match r {
                        _ if r < 75 => {
                            let (a, h) = live.swap_remove(y as usize % live.len());
                            freed.push((a, h));
                            (a, h)
                        }
                        _ if r < 79 && !freed.is_empty() => freed[y as usize % freed.len()],
                        _ if r < 82 => (0, heap),
                        _ => (0x90_0000 + r, heap),
                    };
                    let (has, present) = match y % 3 {
                        0 => (1, y % 4096),
                        1 => (0, 7),
                        _ => (0, 0),
                    };
                    let mut f = vec![("address", a), ("time", 0), ("thread", thread), ("heap", h)];
                    f.extend([("timed", timed), ("start", start), ("end", end)]);
                    f.extend([("haspresent", has), ("present", present)]);
                    line(&mut text, "free", &f);
                }
                _ if r < 95 => {
                    let (old, h) = live.swap_remove(y as usize % live.len());
                    next += 16;
                    live.push((next, h));
                    let ty = ["realloc", "reallocAllocFree", "reallocAlloc", "reallocFree"]
                        [y as usize % 4];
                    let mut f = vec![("size", 5 + r), ("old", old), ("address", next)];
                    f.extend([("time", 0), ("thread", thread), ("heap", h)]);
                    f.extend([("timed", timed), ("start", start), ("end", end)]);
                    f.extend([("haspresent", y % 2), ("present", y % 100)]);
                    line(&mut text, ty, &f);
                }
                _ => {
                    let f = [("thread", thread), ("timed", timed), ("end", end)];
                    line(&mut text, "destroyThread", &f);
                }
            }
        }
        let bytes =
            crate::pack::pack_to_vec(&schema, text.as_bytes(), crate::text::InputFormat::Text)
                .unwrap();
        crate::OpenOptions::default()
            .dtd(path)
            .open_bytes(bytes)
            .unwrap()
    }

    /// The shipped traces (`traces/*.mtf`), in name order.
    fn shipped() -> Vec<std::path::PathBuf> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/traces");
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "mtf"))
            .collect();
        names.sort();
        names
    }

    /// A record type with a plan says exactly what the general loop over its actions says:
    /// events with their places, findings, in the same order, to a sink of events (`stats`)
    /// and to one of findings only (`check`), on every shipped trace and on generated ones
    /// with double frees, frees of ids never seen, of the null id, and allocations of live ids.
    #[test]
    fn plans_say_what_the_general_loop_says() {
        // Guards: of a free's id (it never applies: no plan may run it), and of a time.
        let guarded = heap_dtd("")
            .replace(
                "address.undefines = block; }",
                "address.undefines = block; address.when = heap; address.isNot = 1; }",
            )
            .replace(
                "tick : (tag, time, heap) { tag.value = 7; }",
                "tick : (tag, time, heap) { tag.value = 7; time.when = heap; time.is = 1; }",
            );
        let mut traces = generated_heaps();
        traces.push(generated(&guarded, "realloc", " heap=1", 20_000));
        let names = shipped();
        assert!(names.len() >= 10, "{names:?}");
        traces.extend(names.iter().map(|p| crate::open(p).unwrap()));
        let mut planned = 0;
        for (k, o) in traces.iter().enumerate() {
            for events in [true, false] {
                let (general, _) = said(o, events, false);
                let (fast, n) = said(o, events, true);
                planned += n;
                assert!(
                    general == fast,
                    "trace {k} (events: {events}) says otherwise"
                );
                if k < 2 {
                    // The generated traces say every kind of thing.
                    let all = general.join("\n");
                    for what in [
                        "Redefined",
                        "NotAlive",
                        "Backwards",
                        "Free",
                        "Alloc",
                        "Move",
                    ] {
                        assert!(!events || all.contains(what), "{what} in trace {k}");
                    }
                }
            }
        }
        assert!(planned > 20, "{planned} record types with a plan");
    }

    /// Records given as the values a scan read of them say exactly what their views say:
    /// events with their places, findings, in the same order, on every shipped trace and on
    /// generated ones; and most records of the generated traces do go through the scan.
    #[test]
    fn scanned_values_say_what_the_views_say() {
        // Frees that leave the id naming null, and times of the records that allocate in
        // another unit than the trace's.
        let leaves = heap_dtd("")
            .replace(
                "analysis.version = 1;",
                "analysis.version = 2;\nwhen.time = ms;",
            )
            .replace(
                "heap.interpretation = none;",
                "heap.interpretation = none;\nwhen.width = 2; when.interpretation = none;",
            )
            .replace(", heap)", ", heap, when)")
            .replace(
                "address.undefines = block; }",
                "address.undefines = block; address.leaves = null; }",
            );
        let mut made = generated_heaps();
        made.insert(0, generated_text_sites(20_000));
        made.push(generated(&leaves, "realloc", " heap=0 when=3", 20_000));
        made.push(generated_shared(20_000));
        made.push(generated_android(20_000));
        for (k, o) in made.iter().enumerate() {
            for events in [true, false] {
                let (general, _) = said(o, events, true);
                let (scanned, through, viewed) = said_scanned(o, events);
                assert!(general == scanned, "trace {k}: the scan says otherwise");
                if k == 0 {
                    // Every string site's text, from records the scan stepped over.
                    let sites = general.iter().filter(|l| l.starts_with("site (")).count();
                    assert!(sites > 250, "{sites} texts of sites");
                }
                assert!(through > 19_000, "{through} scanned, {viewed} viewed");
                if k == made.len() - 1 && events {
                    // Android's: the resident bytes of frees, memalign's alignment, calloc's
                    // count that overflows, and the record types most of it is made of run
                    // directly.
                    let all = general.join("\n");
                    for what in ["resident", "align: Some(16)", "Bytes", "NotAlive", "Free"] {
                        assert!(all.contains(what), "{what} in the Android trace");
                    }
                    let i = Interpreter::new(o.schema());
                    for name in ["alloc", "free"] {
                        let rid = o.schema().records.iter().position(|r| r.name == name);
                        let d = rid.and_then(|r| i.direct.get(r).copied().flatten());
                        assert!(d.is_some(), "{name} runs directly");
                    }
                }
                if k == made.len() - 2 && events {
                    // The shared trace says every kind of thing a reference and its byte
                    // count may say, and its blocks carry their info's site.
                    let all = general.join("\n");
                    for what in ["Bytes", "Undefined", "NotAlive", "Backwards", "site: Some"] {
                        assert!(all.contains(what), "{what} in the shared trace");
                    }
                }
            }
        }
        let names = shipped();
        let mut through = 0;
        for p in &names {
            let o = crate::open(p).unwrap();
            for events in [true, false] {
                let (general, _) = said(&o, events, true);
                let (scanned, n, _) = said_scanned(&o, events);
                through += n;
                assert!(general == scanned, "{} (events: {events})", p.display());
            }
        }
        assert!(
            through > 100,
            "{through} records of the shipped traces scanned"
        );
    }
}
