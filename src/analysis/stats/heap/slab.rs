//! The statistics' live blocks by place (the interpreter's numbers, [`Places`](super::Places)):
//! 16 bytes a block while every block's figures fit in 32 bits each, else 32.

use super::{Block, NO_LEAF};

// Design: the blocks by place are the statistics' whole share of the memory per live block
// (docs/stats.md, "Memory"), and on most traces every figure of a block fits in 32 bits: its
// size (below 4 GiB), its birth record (a trace of fewer than 2³² data records), its birth time
// counted from the first time put (milliseconds for 49 days, nanoseconds for 4.29 s), its site
// or its leaf (fewer than 2³⁰ of each). So a namespace's blocks start narrow, 16 bytes each,
// and the first block that does not fit turns the whole vector wide (32 bytes, `Block` as it
// is), once: a branch per access that the predictor learns, rather than a side table for the
// few blocks that do not fit (a look-up on every access to tell them apart) or a wide vector
// from the start (twice the memory, and twice the cache lines touched per event, on the traces
// whose live set is largest). A narrow block of a leaf keeps the leaf only; its site is the
// leaf's, which the slab learns from the blocks put (4 bytes per leaf).
/// A block's figures in 16 bytes (see the design note above).
#[derive(Debug, Clone, Copy, Default)]
struct Narrow {
    size: u32,
    born_record: u32,
    /// The declared time at birth minus the slab's `base`, where `place` has [`Block::TIME`].
    born_time: u32,
    /// [`Block::TIME`], [`Narrow::LEAF`] and an index: of its leaf where `LEAF`, else of its
    /// site.
    place: u32,
}

impl Narrow {
    const LEAF: u32 = 1 << 30;
    const INDEX: u32 = Narrow::LEAF - 1;
}

#[derive(Debug)]
enum Blocks {
    Narrow(Vec<Narrow>),
    Wide(Vec<Block>),
}

/// One namespace's live blocks by place.
#[derive(Debug)]
pub(super) struct Slab {
    blocks: Blocks,
    /// What the narrow blocks' birth times count from: the first declared time put.
    base: Option<u64>,
    /// Each leaf's site, as the blocks put said it.
    leaf_site: Vec<u32>,
}

impl Default for Slab {
    fn default() -> Slab {
        Slab {
            blocks: Blocks::Narrow(Vec::new()),
            base: None,
            leaf_site: Vec::new(),
        }
    }
}

impl Slab {
    /// Empty, with `len` places (none holding a block yet).
    pub(super) fn reset(&mut self, len: usize) {
        *self = Slab::default();
        if let Blocks::Narrow(v) = &mut self.blocks {
            v.resize(len, Narrow::default());
        }
    }

    /// The block at place `i` (what was put there last; `None` past the places put).
    #[inline]
    pub(super) fn get(&self, i: usize) -> Option<Block> {
        match &self.blocks {
            Blocks::Narrow(v) => v.get(i).map(|n| self.widened(n)),
            Blocks::Wide(v) => v.get(i).copied(),
        }
    }

    /// Puts `b` at place `i`.
    #[inline(always)]
    pub(super) fn put(&mut self, i: usize, b: Block) {
        if let Blocks::Narrow(v) = &mut self.blocks {
            if let Some(n) = narrowed(&b, &mut self.base, &mut self.leaf_site) {
                set(v, i, n);
                return;
            }
            self.widen();
        }
        if let Blocks::Wide(v) = &mut self.blocks {
            set(v, i, b);
        }
    }

    /// Whether the blocks are kept in 32 bytes each.
    #[cfg(test)]
    fn is_wide(&self) -> bool {
        matches!(self.blocks, Blocks::Wide(_))
    }

    /// The block `n` stands for.
    #[inline]
    fn widened(&self, n: &Narrow) -> Block {
        let index = n.place & Narrow::INDEX;
        let (site, leaf) = match n.place & Narrow::LEAF {
            0 => (index, NO_LEAF),
            _ => (
                self.leaf_site.get(index as usize).copied().unwrap_or(0),
                index,
            ),
        };
        let time = n.place & Block::TIME;
        // 0 without a declared time, as `Block::new` leaves it; with one, `base` was set.
        let timed = u64::from(time >> 31).wrapping_neg();
        Block {
            size: u64::from(n.size),
            born_record: u64::from(n.born_record),
            born_time: (self.base.unwrap_or(0) + u64::from(n.born_time)) & timed,
            site: site | time,
            leaf,
        }
    }

    /// Every block in 32 bytes from now on.
    #[cold]
    fn widen(&mut self) {
        if let Blocks::Narrow(v) = &self.blocks {
            let wide = v.iter().map(|n| self.widened(n)).collect();
            self.blocks = Blocks::Wide(wide);
        }
    }
}

/// `b` in 16 bytes, if its figures fit: its birth time counted from `base` (the first time put,
/// set here), its leaf's site noted in `leaf_site`.
#[inline(always)]
fn narrowed(b: &Block, base: &mut Option<u64>, leaf_site: &mut Vec<u32>) -> Option<Narrow> {
    let size = u32::try_from(b.size).ok()?;
    let born_record = u32::try_from(b.born_record).ok()?;
    let born_time = match b.born_time() {
        Some(t) => u32::try_from(t.checked_sub(*base.get_or_insert(t))?).ok()?,
        None => 0,
    };
    let (index, leaf) = match b.leaf {
        NO_LEAF => (b.site(), 0),
        l => (l, Narrow::LEAF),
    };
    if index > Narrow::INDEX {
        return None;
    }
    if leaf != 0 {
        set(leaf_site, index as usize, b.site());
    }
    Some(Narrow {
        size,
        born_record,
        born_time,
        place: (b.site & Block::TIME) | leaf | index,
    })
}

/// `v[i] = x`, `v` grown with defaults as needed.
#[inline]
fn set<T: Copy + Default>(v: &mut Vec<T>, i: usize, x: T) {
    if v.len() <= i {
        grow(v, i);
    }
    v[i] = x;
}

/// `v` grown with defaults to hold place `i`.
#[cold]
#[inline(never)]
fn grow<T: Copy + Default>(v: &mut Vec<T>, i: usize) {
    v.resize(i + 1, T::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(size: u64, record: u64, time: Option<u64>, site: u32, leaf: u32) -> Block {
        Block {
            size,
            born_record: record,
            born_time: time.unwrap_or(0),
            site: site | if time.is_some() { Block::TIME } else { 0 },
            leaf,
        }
    }

    fn same(a: &Block, b: &Block) -> bool {
        (a.size, a.born_record, a.born_time(), a.site(), a.leaf)
            == (b.size, b.born_record, b.born_time(), b.site(), b.leaf)
    }

    /// Every block comes back as it was put, narrow while each figure fits and after the slab
    /// turned wide; each kind of figure that does not fit turns it wide, and only such a one.
    #[test]
    fn blocks_come_back_as_put_narrow_and_wide() {
        let fits = [
            block(0, 0, None, 0, NO_LEAF),
            block(24, 7, Some(1_000), 3, NO_LEAF),
            block(u64::from(u32::MAX), u64::from(u32::MAX), Some(1_000), 9, 4),
            block(
                8,
                9,
                Some(1_000 + u64::from(u32::MAX)),
                Narrow::INDEX,
                NO_LEAF,
            ),
            block(8, 9, None, 2, Narrow::INDEX),
            block(16, 3, Some(5_000), 1, 0),
        ];
        let too_wide = [
            block(1 << 32, 0, None, 0, NO_LEAF),
            block(1, 1 << 32, None, 0, NO_LEAF),
            // Before the first time put, and 2³² past it.
            block(1, 1, Some(999), 0, NO_LEAF),
            block(1, 1, Some(1_000 + (1 << 32)), 0, NO_LEAF),
            block(1, 1, None, Narrow::INDEX + 1, NO_LEAF),
            block(1, 1, None, 0, Narrow::INDEX + 1),
        ];
        for wide in too_wide {
            let mut s = Slab::default();
            for (i, b) in fits.iter().enumerate() {
                s.put(i * 3, *b);
            }
            assert!(!s.is_wide());
            for (i, b) in fits.iter().enumerate() {
                assert!(same(&s.get(i * 3).unwrap(), b), "{b:?}");
            }
            s.put(100, wide);
            assert!(s.is_wide(), "{wide:?}");
            assert!(same(&s.get(100).unwrap(), &wide));
            for (i, b) in fits.iter().enumerate() {
                assert!(same(&s.get(i * 3).unwrap(), b), "{b:?} after {wide:?}");
            }
            s.put(3, wide);
            assert!(same(&s.get(3).unwrap(), &wide));
            assert!(s.get(101).is_none());
        }
    }
}
