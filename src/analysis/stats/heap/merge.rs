//! The heap figures of consecutive chunks of a trace joined into those of one pass over them
//! (`mtf stats -j N`, `pass/merge.rs`): each chunk after the first resumed from the analysis
//! state at its start (live blocks, live bytes, sites and leaves in the order first allocated
//! from), its flows counted from zero.

// Design: the rules, figure by figure (docs/stats.md, "On several threads"):
// * flows (allocations, frees, moves, bytes, size classes, unknown frees, redefinitions, per
//   site and leaf too) add;
// * the live state (live bytes and blocks, the live blocks, each site's live figures and its
//   highest live bytes, which the state carries from the start) is the later chunk's;
// * the peak, and the most blocks, are the first highest in trace order: a chunk starts from
//   the exact live state, but does not take it as a point of its own (the chunk before ended
//   there), so a later chunk's peak replaces the earlier only when strictly higher; the live
//   figures of each site at the peak are those of the chunk that holds it (a site first
//   allocated from later had none);
// * sites and leaves are in the order first allocated from: a chunk's start lists those of
//   the chunks before in their order (its state), so the later chunk's list, with the earlier
//   figures added by index, is the order of one pass;
// * lifetimes are a set of values (`Lifetimes::absorb`); the curve joins exactly when both are
//   on the trace's slots (`Curve::join`);
// * a temporary allocation is a free of the block allocated last: the candidate a chunk starts
//   with is known only from the chunk before, so a resumed chunk notes (`Carry`) what it did to
//   an unknown candidate — the moves it saw before its first allocation or free, and that first
//   free — and the join decides.
// Where the chunk's start does not match where the chunks before end (a state of another
// pass), or a chunk moved too many blocks before its first allocation to note them all, the
// join is refused and the caller reads on one thread.

use super::super::curve::Curve;
use super::{HeapStats, Site, Space, NO_LEAF};

/// Moves noted before a chunk's first allocation or free, at most.
const MOVES_NOTED: usize = 1 << 16;

/// What a resumed chunk did to the candidate for a temporary allocation it started with.
#[derive(Debug, Clone, Default)]
pub(crate) struct Carry {
    /// No allocation or free yet: the candidate is still the one the chunk started with.
    pub(super) open: bool,
    /// The moves (key, old id, new id) seen while open.
    moves: Vec<(u64, u64, u64)>,
    /// The free that closed it: (key, id) and the block's site and leaf.
    free: Option<((u64, u64), (u32, u32))>,
    /// More moves than [`MOVES_NOTED`].
    overflow: bool,
}

impl Carry {
    pub(super) fn freed(&mut self, key: u64, id: u64, place: (u32, u32)) {
        if self.open {
            self.open = false;
            self.free = Some(((key, id), place));
        }
    }

    pub(super) fn renamed(&mut self, key: u64, old: u64, new: u64) {
        if !self.open {
            return;
        }
        if self.moves.len() >= MOVES_NOTED {
            self.overflow = true;
        } else {
            self.moves.push((key, old, new));
        }
    }

    /// The candidate `c` after the moves noted, as `HeapStats::rename` moves it.
    fn moved(&self, mut c: Option<(u64, u64)>, shared: bool) -> Option<(u64, u64)> {
        for &(key, old, new) in &self.moves {
            if c == Some((key, old)) {
                c = Some((key, new));
            } else if c == Some((key, new)) && !shared {
                c = None;
            }
        }
        c
    }
}

/// Where a chunk stands, per namespace: live bytes and blocks, sites and leaves met.
pub(crate) type Glance = Vec<(u128, u64, usize, usize)>;

/// A site's live figures at its namespace's peak (see `Site::at_peak`).
fn at_peak(st: &Site, gen: u64) -> (u128, u64) {
    if st.gen == gen {
        st.at_peak
    } else {
        (st.live_bytes, st.live_blocks)
    }
}

impl HeapStats {
    /// A chunk resumed from a state inside the whole trace's slice: flows count from its first
    /// event, its live state is not a point of its own (no peak, no point of the curve), and
    /// the candidate for a temporary allocation is noted ([`Carry`]).
    pub(crate) fn resume_chunk(&mut self, at: super::Position, origin: u64) {
        self.in_window = true;
        self.opened = Some(at);
        for s in &mut self.spaces {
            s.curve.anchor(origin);
            s.carry = Some(Box::new(Carry {
                open: true,
                ..Carry::default()
            }));
        }
    }

    /// Where the live state stands ([`Glance`]).
    pub(crate) fn glance(&self) -> Glance {
        self.spaces
            .iter()
            .map(|s| (s.live_bytes, s.live_blocks, s.sites.len(), s.leaves.len()))
            .collect()
    }

    /// At a chunk's end, on its thread: the lifetimes buffered sorted into their lists, which
    /// the join (on the thread that joins the chunks in order) would do otherwise.
    pub(crate) fn settle_chunk(&mut self) {
        for s in &mut self.spaces {
            s.life_records.settle_buffer();
            s.life_time.settle_buffer();
        }
    }

    /// Join `next`, the figures of the chunk that follows (resumed where this one ends), into
    /// these; `Err` (with what differs; these figures then unusable) when they do not join.
    pub(crate) fn absorb(&mut self, mut next: HeapStats) -> Result<(), &'static str> {
        if next.spaces.len() != self.spaces.len() {
            return Err("namespaces of another DTD");
        }
        for (a, n) in self.spaces.iter_mut().zip(next.spaces.iter_mut()) {
            join_space(a, n)?;
        }
        next.opened = self.opened;
        next.in_window = self.in_window;
        *self = next;
        Ok(())
    }
}

/// Join space `a` (earlier) into `n` (the chunk after), which becomes the joined figures.
fn join_space(a: &mut Space, n: &mut Space) -> Result<(), &'static str> {
    if n.sites.len() < a.sites.len()
        || n.leaves.len() < a.leaves.len()
        || a.sites.iter().zip(&n.sites).any(|(x, y)| x.0 != y.0)
        || a.leaves
            .iter()
            .zip(&n.leaves)
            .any(|(x, y)| (x.0, x.1) != (y.0, y.1))
    {
        return Err("sites in another order");
    }
    // The candidate for a temporary allocation, carried in.
    let shared = n.info.shared;
    let mut extra = None;
    let last = match n.carry.take() {
        None => return Err("a chunk not resumed"),
        Some(c) if c.overflow => return Err("too many moves before an allocation"),
        Some(c) => {
            let moved = c.moved(a.last_alloc, shared);
            if let Some((freed, place)) = c.free {
                if moved == Some(freed) {
                    extra = Some(place);
                }
            }
            if c.open {
                moved
            } else {
                n.last_alloc
            }
        }
    };
    n.last_alloc = last;
    n.carry = a.carry.take();
    // The peak: the first highest.
    let later = match (a.peak, n.peak) {
        (_, None) => false,
        (None, Some(_)) => true,
        (Some((x, _, _)), Some((y, _, _))) => y > x,
    };
    let (a_gen, n_gen) = (a.peak_gen, n.peak_gen);
    let gen = a_gen.max(n_gen) + 1;
    if !later {
        n.peak = a.peak;
    }
    match (a.max_blocks, n.max_blocks) {
        (Some((x, _)), Some((y, _))) if y > x => {}
        (Some(m), _) => n.max_blocks = Some(m),
        (None, _) => {}
    }
    let join = |x: Option<&Site>, y: &mut Site, extra: bool| {
        let before = x.map_or((0, 0), |x| at_peak(x, a_gen));
        let peak = if later { at_peak(y, n_gen) } else { before };
        if let Some(x) = x {
            y.allocations += x.allocations;
            y.bytes_allocated += x.bytes_allocated;
            y.temporary += x.temporary;
        }
        y.temporary += u64::from(extra);
        y.at_peak = peak;
        y.gen = gen;
    };
    for (i, (_, y)) in n.sites.iter_mut().enumerate() {
        let hit = extra.is_some_and(|p| p.0 as usize == i);
        join(a.sites.get(i).map(|x| &x.1), y, hit);
    }
    for (i, (_, _, y)) in n.leaves.iter_mut().enumerate() {
        let hit = extra.is_some_and(|p| p.1 != NO_LEAF && p.1 as usize == i);
        join(a.leaves.get(i).map(|x| &x.2), y, hit);
    }
    n.peak_gen = gen;
    n.allocations += a.allocations;
    n.frees += a.frees;
    n.moves += a.moves;
    n.bytes_allocated += a.bytes_allocated;
    n.bytes_freed += a.bytes_freed;
    n.temporary += a.temporary + u64::from(extra.is_some());
    n.unknown_frees += a.unknown_frees;
    n.redefined += a.redefined;
    for (x, y) in n.sizes.iter_mut().zip(&a.sizes) {
        *x += y;
    }
    for (x, y) in n.size_bytes.iter_mut().zip(&a.size_bytes) {
        *x += y;
    }
    n.life_records.absorb(&mut a.life_records);
    n.life_time.absorb(&mut a.life_time);
    let mut curve = std::mem::replace(&mut a.curve, Curve::new(2));
    if !curve.join(std::mem::replace(&mut n.curve, Curve::new(2))) {
        return Err("curves on other slots");
    }
    n.curve = curve;
    Ok(())
}
