//! The heap model: live blocks per namespace, sites, and the figures kept from heap events.

use foldhash::fast::RandomState;
use std::collections::HashMap;

use crate::analysis::event::{HeapEvent, HeapOp, Places};

use super::classes::{classes, log2_class, CLASSES};
use super::curve::{Curve, CURVE_POINTS};
use super::lifetimes::Lifetimes;
use super::{LeafSummary, Position, SiteSummary, SpaceInfo, SpaceSummary};

mod merge;
pub(crate) use merge::Glance;
mod resume;
mod slab;
use slab::Slab;

/// A live block, packed (32 bytes, 16 in a narrow [`Slab`]; see the Design note of
/// [`HeapStats`]).
#[derive(Debug, Clone, Copy, Default)]
struct Block {
    size: u64,
    born_record: u64,
    /// The declared time at birth, where `site` has [`Block::TIME`].
    born_time: u64,
    /// Its site: an index into its namespace's sites (0: no site declared), and
    /// [`Block::TIME`].
    site: u32,
    /// Its site and stack: an index into its namespace's leaves ([`NO_LEAF`]: the allocation
    /// has no calling context, its site is its leaf).
    leaf: u32,
}

/// No leaf of its own: see [`Block::leaf`].
const NO_LEAF: u32 = u32::MAX;

impl Block {
    /// The top bit of `site`: the block's time of birth is declared. A namespace has fewer
    /// than 2³¹ sites (each is some bytes of memory, and one allocation of the trace at least).
    const TIME: u32 = 1 << 31;

    fn new(size: u64, born: Position, (site, leaf): (u32, u32)) -> Block {
        Block {
            size,
            born_record: born.record,
            born_time: born.time.unwrap_or(0),
            site: (site & !Block::TIME) | if born.time.is_some() { Block::TIME } else { 0 },
            leaf,
        }
    }

    fn born_time(&self) -> Option<u64> {
        (self.site & Block::TIME != 0).then_some(self.born_time)
    }

    /// Its site (an index into its namespace's sites).
    fn site(&self) -> u32 {
        self.site & !Block::TIME
    }

    fn place(&self) -> (u32, u32) {
        (self.site(), self.leaf)
    }
}

/// A block kept by id, and the link to the one it hides (a shared namespace's: an index + 1
/// into the shadow list; 0 for none).
type Held = (Block, u32);

#[derive(Debug, Clone, Default)]
struct Site {
    allocations: u64,
    bytes_allocated: u128,
    live_bytes: u128,
    live_blocks: u64,
    max_live_bytes: u128,
    temporary: u64,
    /// The site's live bytes and blocks at the namespace's latest peak, valid when `gen` equals
    /// the namespace's peak generation; else they are `live_*` (nothing changed since).
    at_peak: (u128, u64),
    gen: u64,
}

struct Space {
    info: SpaceInfo,
    live_bytes: u128,
    live_blocks: u64,
    peak: Option<(u128, u64, Position)>,
    peak_gen: u64,
    max_blocks: Option<(u64, Position)>,
    allocations: u64,
    frees: u64,
    moves: u64,
    bytes_allocated: u128,
    bytes_freed: u128,
    temporary: u64,
    unknown_frees: u64,
    redefined: u64,
    last_alloc: Option<(u64, u64)>,
    sizes: [u64; CLASSES],
    size_bytes: [u128; CLASSES],
    life_records: Lifetimes,
    life_time: Lifetimes,
    /// The sites, in the order first allocated from: index 0 for allocations without a declared
    /// site (most traces'), which needs no look-up.
    sites: Vec<(Option<u64>, Site)>,
    /// Declared site → index into `sites`.
    site_ix: HashMap<u64, u32, RandomState>,
    /// Sites under a calling context (extension stacks/1), in the order first allocated from:
    /// (index into `sites`, context node, figures).
    leaves: Vec<(u32, u64, Site)>,
    leaf_ix: HashMap<(u32, u64), u32, RandomState>,
    /// Live bytes and blocks at sampled points, for plots (bounded: see [`Curve`]).
    curve: Curve,
    /// Only the figures by site (no curve, no lifetimes): [`HeapStats::heap_only`].
    lean: bool,
    /// A chunk's pass resumed from a state (`merge.rs`): what it saw of the candidate for a
    /// temporary allocation it started with, which only the chunk before knows.
    carry: Option<Box<merge::Carry>>,
}

impl Space {
    /// A live block lost without a free (its id defined again): it leaves the live figures,
    /// with no lifetime; counted as a redefinition inside the slice (`w`).
    fn lose(&mut self, b: &Block, w: bool) {
        if w {
            self.redefined += 1;
        }
        self.live_bytes -= u128::from(b.size);
        self.live_blocks -= 1;
        self.at(b.place(), |st| {
            st.live_bytes -= u128::from(b.size);
            st.live_blocks -= 1;
        });
    }

    fn new(info: SpaceInfo) -> Space {
        Space {
            info,
            live_bytes: 0,
            live_blocks: 0,
            peak: None,
            peak_gen: 0,
            max_blocks: None,
            allocations: 0,
            frees: 0,
            moves: 0,
            bytes_allocated: 0,
            bytes_freed: 0,
            temporary: 0,
            unknown_frees: 0,
            redefined: 0,
            last_alloc: None,
            sizes: [0; CLASSES],
            size_bytes: [0; CLASSES],
            life_records: Lifetimes::new(),
            life_time: Lifetimes::new(),
            sites: vec![(None, Site::default())],
            site_ix: HashMap::default(),
            leaves: Vec::new(),
            leaf_ix: HashMap::default(),
            curve: Curve::new(CURVE_POINTS),
            lean: false,
            carry: None,
        }
    }

    /// The indices of an allocation's site and leaf (made at the first allocation from them).
    fn place(&mut self, site: Option<u64>, stack: Option<u64>) -> (u32, u32) {
        let gen = self.peak_gen;
        // A new entry starts as nothing live, `at_peak` zero, at the current peak.
        let fresh = || Site {
            gen,
            ..Site::default()
        };
        let si = match site {
            None => 0,
            Some(id) => match self.site_ix.get(&id) {
                Some(i) => *i,
                None => {
                    self.sites.push((Some(id), fresh()));
                    let i = (self.sites.len() - 1) as u32;
                    self.site_ix.insert(id, i);
                    i
                }
            },
        };
        let leaf = match stack {
            None => NO_LEAF,
            Some(node) => match self.leaf_ix.get(&(si, node)) {
                Some(i) => *i,
                None => {
                    self.leaves.push((si, node, fresh()));
                    let i = (self.leaves.len() - 1) as u32;
                    self.leaf_ix.insert((si, node), i);
                    i
                }
            },
        };
        (si, leaf)
    }

    /// Applies `f` to the figures of a site and of its leaf, settled at the current peak.
    fn at(&mut self, (site, leaf): (u32, u32), mut f: impl FnMut(&mut Site)) {
        let gen = self.peak_gen;
        let settle = |s: &mut Site| {
            if s.gen != gen {
                s.at_peak = (s.live_bytes, s.live_blocks);
                s.gen = gen;
            }
        };
        if let Some((_, s)) = self.sites.get_mut(site as usize) {
            settle(s);
            f(s);
        }
        if let Some((_, _, s)) = self.leaves.get_mut(leaf as usize) {
            settle(s);
            f(s);
        }
    }

    /// After a change of the live state: the peaks and the curve.
    fn settle(&mut self, at: Position, window: bool) {
        if !window {
            return;
        }
        if !matches!(self.peak, Some((b, _, _)) if b >= self.live_bytes) {
            self.peak = Some((self.live_bytes, self.live_blocks, at));
            self.peak_gen += 1;
        }
        if !matches!(self.max_blocks, Some((b, _)) if b >= self.live_blocks) {
            self.max_blocks = Some((self.live_blocks, at));
        }
        if self.lean {
            return;
        }
        self.curve.add(at, self.live_bytes, self.live_blocks);
        match &mut self.curve.events {
            Some((_, last)) => *last = at,
            None => self.curve.events = Some((at, at)),
        }
    }
}

/// Heap figures per namespace from a stream of [`HeapEvent`]s.
// Design: the live blocks are the state that grows with a trace's heap, so they are kept
// packed, 32 bytes each (`Block`: size, birth record and time, site and leaf; whether the
// time is declared is the site's top bit), 16 where every figure fits in 32 bits (`Slab`), and in
// one live table only. Fed by a trace's declarations (`Pass`, `HeapStats::event_placed`), the
// table is the interpreter's: its map of live ids gives each live block a number (its place in
// the namespace's slab, reused once the block died), every event carries the numbers of the
// blocks it ends, makes or replaces (`Places`), and the blocks' figures are kept in a vector
// indexed by that number (`placed`): no hashing and no probe here, one direct access, in a
// vector as long as the most blocks alive at once. Fed events alone (`HeapStats::event`: the
// tests, a library user), it keeps its own map per namespace keyed by (key, id), 16 bytes
// hashed as two words, with the same 32-byte values and a link to the block a shared id's
// newer block hides. The blocks of allocations without a site
// count in a `Site` of their own rather than in the sites' map, so that most events touch no
// map at all.
pub struct HeapStats {
    spaces: Vec<Space>,
    /// Per namespace: its live blocks by (key, id), for events without places.
    live: Vec<HashMap<(u64, u64), Held, RandomState>>,
    /// Per namespace: its live blocks by place, for events with places.
    placed: Vec<Slab>,
    /// Blocks alive in `placed`.
    placed_live: usize,
    /// Blocks hidden under a newer block of the same id (shared namespaces).
    shadow: Vec<Held>,
    free_shadow: Vec<u32>,
    in_window: bool,
    opened: Option<Position>,
}

impl HeapStats {
    /// Statistics for these namespaces (indexed by [`HeapEvent::space`]).
    pub fn new(spaces: Vec<SpaceInfo>) -> HeapStats {
        HeapStats {
            live: spaces.iter().map(|_| HashMap::default()).collect(),
            placed: spaces.iter().map(|_| Slab::default()).collect(),
            placed_live: 0,
            spaces: spaces.into_iter().map(Space::new).collect(),
            shadow: Vec::new(),
            free_shadow: Vec::new(),
            in_window: false,
            opened: None,
        }
    }

    /// The slice starts at `at` (call once, before the first event inside it; for the whole
    /// trace, before the first event): the peak starts from the live state here.
    pub fn open_window(&mut self, at: Position) {
        if self.opened.is_some() {
            return;
        }
        self.in_window = true;
        self.opened = Some(at);
        for s in &mut self.spaces {
            s.settle(at, true);
            // The state when the slice opens is a point of the curve, not an event.
            s.curve.events = None;
        }
    }

    /// Blocks hidden under a newer block of the same id (kept by id, not placed).
    #[cfg(test)]
    pub(crate) fn hidden(&self) -> usize {
        self.shadow.len() - self.free_shadow.len()
    }

    /// Keep only the figures by site and the totals: no curve of live bytes over the trace and
    /// no lifetimes (their summaries come out empty). For a stack profile, which needs nothing
    /// else, at less cost per event.
    pub fn heap_only(&mut self) {
        for s in &mut self.spaces {
            s.lean = true;
        }
    }

    /// Blocks alive now, over all namespaces.
    pub fn live_blocks(&self) -> usize {
        self.live.iter().map(HashMap::len).sum::<usize>() + self.shadow.len()
            - self.free_shadow.len()
            + self.placed_live
    }

    /// Apply one event (in trace order). An event for a namespace that was not declared is
    /// ignored.
    pub fn event(&mut self, ev: &HeapEvent) {
        self.event_at(
            ev,
            Position {
                record: ev.record,
                time: ev.time,
                source: None,
            },
        );
    }

    /// [`HeapStats::event`], the event's position given apart (its data record and source line:
    /// [`compute_from`] counts positions in data records, whatever [`HeapEvent::record`] holds).
    pub fn event_at(&mut self, ev: &HeapEvent, at: Position) {
        self.apply(ev, at, None);
    }

    /// [`HeapStats::event_at`] for an event whose blocks the interpreter numbered (`Places`):
    /// the blocks' figures are found by number, not looked up by id. Every event of a
    /// namespace comes either with places or without.
    #[doc(hidden)]
    pub fn event_placed(&mut self, ev: &HeapEvent, at: Position, places: Places) {
        self.apply(ev, at, Some(places));
    }

    fn apply(&mut self, ev: &HeapEvent, at: Position, p: Option<Places>) {
        let Some(space) = self.spaces.get(ev.space as usize) else {
            return;
        };
        let sized = space.info.sized;
        match ev.op {
            HeapOp::Alloc { id, size, .. } => {
                let size = if sized { size } else { 0 };
                self.alloc_at(ev, id, size, at, None, p);
            }
            HeapOp::Free { id } => {
                self.free(ev.space, ev.key, id, at, true, p);
            }
            HeapOp::Move {
                old,
                new,
                size: Some(size),
            } => {
                // A realloc: the old block ends and a new one starts (heaptrack's reading), so
                // it counts as a free and an allocation of the new size.
                let size = if sized { size } else { 0 };
                let place = self.free(ev.space, ev.key, old, at, true, p);
                let place = match (ev.site, place) {
                    (None, Some(p)) if ev.stack.is_none() => Some(p),
                    _ => None,
                };
                self.alloc_at(ev, new, size, at, place, p);
            }
            HeapOp::Move {
                old,
                new,
                size: None,
            } => self.rename(ev.space, ev.key, old, new, at, p),
        }
    }

    /// Puts `block` at place `i` of namespace `sp`.
    fn put_placed(&mut self, sp: u32, i: u32, block: Block) {
        let Some(v) = self.placed.get_mut(sp as usize) else {
            return;
        };
        if i == Places::NONE {
            // Beyond 2³² − 1 blocks alive at once: the interpreter has no number to give.
            return;
        }
        v.put(i as usize, block);
        self.placed_live += 1;
    }

    /// The block at place `i` of namespace `sp`, taken out of the live state.
    fn take_placed(&mut self, sp: u32, i: u32) -> Option<Block> {
        if i == Places::NONE {
            return None;
        }
        let b = self.placed.get(sp as usize)?.get(i as usize)?;
        self.placed_live -= 1;
        Some(b)
    }

    /// An allocation of `id` by event `ev`, at the site and leaf `place` (a realloc's new block
    /// keeps its old block's unless the event names one) or else the event's own.
    fn alloc_at(
        &mut self,
        ev: &HeapEvent,
        id: u64,
        size: u64,
        at: Position,
        place: Option<(u32, u32)>,
        p: Option<Places>,
    ) {
        let (sp, key) = (ev.space, ev.key);
        let w = self.in_window;
        let k = (key, id);
        let s = &mut self.spaces[sp as usize];
        let place = place.unwrap_or_else(|| s.place(ev.site, ev.stack));
        let shared = s.info.shared;
        let block = Block::new(size, at, place);
        let old = match p {
            // The interpreter holds the blocks of a shared id itself: only an allocation of an
            // id alive in a namespace that is not shared replaces a block.
            Some(p) => {
                let old = self.take_placed(sp, p.replaced);
                self.put_placed(sp, p.new, block);
                old
            }
            None => {
                let live = &mut self.live[sp as usize];
                // One probe: the entry is taken, and the new block put in its place.
                let entry = live.entry(k);
                let old = match &entry {
                    std::collections::hash_map::Entry::Occupied(e) => Some(*e.get()),
                    std::collections::hash_map::Entry::Vacant(_) => None,
                };
                let mut below = 0;
                if let (Some(old), true) = (old, shared) {
                    let i = match self.free_shadow.pop() {
                        Some(i) => {
                            self.shadow[i as usize] = old;
                            i
                        }
                        None => {
                            self.shadow.push(old);
                            (self.shadow.len() - 1) as u32
                        }
                    };
                    below = i + 1;
                }
                match entry {
                    std::collections::hash_map::Entry::Occupied(mut e) => {
                        e.insert((block, below));
                    }
                    std::collections::hash_map::Entry::Vacant(e) => {
                        e.insert((block, below));
                    }
                }
                old.filter(|_| !shared).map(|(b, _)| b)
            }
        };
        let s = &mut self.spaces[sp as usize];
        if let Some(old) = old {
            // A second allocation of a live id: the first block is lost (a free the trace
            // does not show); it leaves the live state without a lifetime.
            s.lose(&old, w);
        }
        // Design: byte totals are 128-bit: 2⁶⁴ blocks of 2⁶⁴ − 1 bytes cannot be recorded, so
        // they never overflow, and a sum beyond 64 bits is exact (docs/stats.md).
        let bytes = u128::from(size);
        s.live_bytes += bytes;
        s.live_blocks += 1;
        if w {
            s.allocations += 1;
            s.bytes_allocated += bytes;
            let c = log2_class(size);
            s.sizes[c] += 1;
            s.size_bytes[c] += bytes;
            s.last_alloc = Some((key, id));
            if let Some(c) = s.carry.as_deref_mut() {
                c.open = false;
            }
        }
        s.at(place, |st| {
            st.live_bytes += bytes;
            st.live_blocks += 1;
            st.max_live_bytes = st.max_live_bytes.max(st.live_bytes);
            if w {
                st.allocations += 1;
                st.bytes_allocated += bytes;
            }
        });
        s.settle(at, w);
    }

    /// Takes block `id` out of the live state (the block at place `p.gone` where the event
    /// has places); returns it (`None` if it was not live).
    fn take(&mut self, sp: u32, key: u64, id: u64, p: Option<Places>) -> Option<Block> {
        if let Some(p) = p {
            return self.take_placed(sp, p.gone);
        }
        let live = self.live.get_mut(sp as usize)?;
        let k = (key, id);
        let (b, below) = live.remove(&k)?;
        if below != 0 {
            let i = below - 1;
            live.insert(k, self.shadow[i as usize]);
            self.free_shadow.push(i);
        }
        Some(b)
    }

    /// Frees block `id`; returns its site and leaf (`None` if it was not live).
    fn free(
        &mut self,
        sp: u32,
        key: u64,
        id: u64,
        at: Position,
        count: bool,
        p: Option<Places>,
    ) -> Option<(u32, u32)> {
        let w = self.in_window;
        let taken = self.take(sp, key, id, p);
        let s = &mut self.spaces[sp as usize];
        let Some(b) = taken else {
            if w && count {
                s.unknown_frees += 1;
            }
            return None;
        };
        // A free of an id that is not alive is no event: it does not end a candidacy.
        let temporary = s.last_alloc == Some((key, id));
        if let (Some(c), true) = (s.carry.as_deref_mut(), w) {
            c.freed(key, id, b.place());
        }
        if w {
            // heaptrack's reader compares with an id (0) after a free, not with none
            // (`NS.temporaryReset`, docs/stats.md).
            s.last_alloc = s.info.temporary_reset.map(|r| (key, r));
        }
        s.live_bytes -= u128::from(b.size);
        s.live_blocks -= 1;
        if w {
            s.frees += 1;
            s.bytes_freed += u128::from(b.size);
            if !s.lean {
                s.life_records.add(at.record.saturating_sub(b.born_record));
                if let (Some(t0), Some(t1)) = (b.born_time(), at.time) {
                    s.life_time.add(t1.saturating_sub(t0));
                }
            }
            if temporary {
                s.temporary += 1;
            }
        }
        s.at(b.place(), |st| {
            st.live_bytes -= u128::from(b.size);
            st.live_blocks -= 1;
            if w && temporary {
                st.temporary += 1;
            }
        });
        s.settle(at, w);
        Some(b.place())
    }

    fn rename(&mut self, sp: u32, key: u64, old: u64, new: u64, at: Position, p: Option<Places>) {
        let w = self.in_window;
        let Some(b) = self.take(sp, key, old, p) else {
            if w {
                self.spaces[sp as usize].unknown_frees += 1;
            }
            return;
        };
        if w {
            self.spaces[sp as usize].moves += 1;
        }
        // Temporary allocations are followed by block: a move is neither an allocation nor a
        // free, and the block stays a candidate under its new id (docs/stats.md).
        let s = &mut self.spaces[sp as usize];
        if let Some(c) = s.carry.as_deref_mut() {
            c.renamed(key, old, new);
        }
        if s.last_alloc == Some((key, old)) {
            s.last_alloc = Some((key, new));
        } else if s.last_alloc == Some((key, new)) && !s.info.shared {
            // The candidate is the block this move puts out of the live state (a free the
            // trace does not show): it ends the candidacy as a free would.
            s.last_alloc = None;
        }
        let k = (key, new);
        let mut below = 0;
        let prev = match p {
            // The interpreter holds the blocks of a shared id itself: only a move onto an id
            // alive in a namespace that is not shared replaces a block.
            Some(p) => self.take_placed(sp, p.replaced),
            None => {
                let prev = self.live[sp as usize].get(&k).copied();
                match prev {
                    Some(prev) if self.spaces[sp as usize].info.shared => {
                        self.shadow.push(prev);
                        below = self.shadow.len() as u32;
                        None
                    }
                    _ => prev.map(|(b, _)| b),
                }
            }
        };
        if let Some(prev) = prev {
            let s = &mut self.spaces[sp as usize];
            s.lose(&prev, w);
            s.settle(at, w);
        }
        match p {
            Some(p) => self.put_placed(sp, p.new, b),
            None => {
                self.live[sp as usize].insert(k, (b, below));
            }
        }
    }

    /// The figures at the end of the slice (`end`: the first record after it, or the record
    /// count); `site_name` names a site of a namespace where the trace can.
    pub fn finish(
        mut self,
        end: Position,
        mut site_name: impl FnMut(u32, u64) -> Option<String>,
    ) -> Vec<SpaceSummary> {
        let start = self.opened.unwrap_or(end);
        if self.opened.is_none() {
            self.open_window(end);
        }
        let mut out = Vec::new();
        for (i, s) in self.spaces.iter_mut().enumerate() {
            // The state holds until the end of the slice: the curve's last point.
            if end.record > start.record {
                let last = Position {
                    record: end.record - 1,
                    time: end.time,
                    source: None,
                };
                s.curve.add(last, s.live_bytes, s.live_blocks);
            }
            let gen = s.peak_gen;
            let summary = |id: Option<u64>, st: &Site, name: Option<String>| {
                let at_peak = if st.gen == gen {
                    st.at_peak
                } else {
                    (st.live_bytes, st.live_blocks)
                };
                SiteSummary {
                    site: id,
                    name,
                    allocations: st.allocations,
                    bytes_allocated: st.bytes_allocated,
                    peak_bytes: at_peak.0,
                    peak_blocks: at_peak.1,
                    max_live_bytes: st.max_live_bytes,
                    leaked_bytes: st.live_bytes,
                    leaked_blocks: st.live_blocks,
                    temporary: st.temporary,
                }
            };
            let all: Vec<SiteSummary> = s
                .sites
                .iter()
                .map(|(id, st)| summary(*id, st, id.and_then(|x| site_name(i as u32, x))))
                .collect();
            // Every site and every leaf, in the order first allocated from (for stacks).
            let leaves: Vec<LeafSummary> = if s.info.stacks {
                let by_site = all.iter().skip(1).map(|x| LeafSummary {
                    stack: None,
                    figures: x.clone(),
                });
                let by_leaf = s.leaves.iter().map(|(si, node, st)| {
                    let site = s.sites.get(*si as usize).and_then(|x| x.0);
                    let name = all.get(*si as usize).and_then(|x| x.name.clone());
                    LeafSummary {
                        stack: Some(*node),
                        figures: summary(site, st, name),
                    }
                });
                if s.leaves.is_empty() {
                    by_site.collect()
                } else {
                    by_leaf.collect()
                }
            } else {
                Vec::new()
            };
            let mut sites: Vec<SiteSummary> = all
                .into_iter()
                .filter(|s| s.allocations > 0 || s.leaked_blocks > 0 || s.peak_blocks > 0)
                .collect();
            sites.sort_by(|a, b| {
                b.peak_bytes
                    .cmp(&a.peak_bytes)
                    .then(b.bytes_allocated.cmp(&a.bytes_allocated))
                    .then(a.site.cmp(&b.site))
            });
            let (pb, pk, pat) = s.peak.unwrap_or((0, 0, start));
            let (mb, mat) = s.max_blocks.unwrap_or((0, start));
            out.push(SpaceSummary {
                name: s.info.name.clone(),
                sized: s.info.sized,
                time_unit: s.info.time_unit.clone(),
                start,
                end,
                allocations: s.allocations,
                frees: s.frees,
                moves: s.moves,
                bytes_allocated: s.bytes_allocated,
                bytes_freed: s.bytes_freed,
                peak_bytes: pb,
                peak_blocks: pk,
                peak_at: pat,
                max_blocks: mb,
                max_blocks_at: mat,
                live_bytes: s.live_bytes,
                live_blocks: s.live_blocks,
                temporary: s.temporary,
                unknown_frees: s.unknown_frees,
                redefined: s.redefined,
                sizes: classes(&s.sizes, Some(&s.size_bytes)),
                lifetime_records: s.life_records.summary(),
                lifetime_time: (s.life_time.count > 0).then(|| s.life_time.summary()),
                sites,
                leaves,
                stacks: None,
                curve: std::mem::replace(&mut s.curve, Curve::new(2)),
                files: Vec::new(),
                clock: true,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    /// The bytes per live block that docs/stats.md states ("Memory").
    #[test]
    fn a_live_block_takes_the_bytes_the_documentation_states() {
        assert_eq!(std::mem::size_of::<super::Block>(), 32);
    }
}
