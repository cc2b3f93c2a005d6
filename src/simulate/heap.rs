//! The model heaps: a heap that grows at its top (as `sbrk` does, never giving memory back) and
//! places blocks by one classic policy.

use std::collections::{BTreeMap, BTreeSet};

use super::treap::Treap;
use super::Policy;

/// A model heap: blocks of a size the caller has already rounded, at addresses from 0 up.
pub(crate) trait Heap {
    /// Places a block of at least `size` bytes: its address and the size it really has (a
    /// policy may hand out more than asked), or `None` when the heap would pass 2⁶⁴.
    fn alloc(&mut self, size: u64) -> Option<(u64, u64)>;
    /// Gives back the block at `addr` of `size` bytes (the size `alloc` returned).
    fn free(&mut self, addr: u64, size: u64);
    /// The heap's extent: the top of the highest block it ever placed.
    fn extent(&self) -> u64;
    /// The size a block for a request of `size` bytes (header included, aligned) takes.
    fn round(&self, size: u64) -> Option<u64>;
}

/// The heap of a policy, with blocks rounded up to multiples of `align` (a power of two), and
/// split remainders kept only when at least `min_block` bytes.
pub(crate) fn new_heap(policy: Policy, align: u64, min_block: u64) -> Box<dyn Heap + Send> {
    match policy {
        Policy::FirstFit | Policy::NextFit | Policy::BestFit => Box::new(FitHeap {
            policy,
            align,
            min_block,
            by_addr: BTreeMap::new(),
            by_size: BTreeSet::new(),
            treap: Treap::default(),
            rover: 0,
            brk: 0,
        }),
        Policy::Segregated => Box::new(Segregated {
            align,
            classes: Vec::new(),
            brk: 0,
        }),
        Policy::Buddy => Box::new(Buddy {
            align,
            free: (0..65).map(|_| BTreeSet::new()).collect(),
            arena: 0,
        }),
    }
}

fn round_up(size: u64, align: u64) -> Option<u64> {
    Some(size.checked_add(align - 1)? & !(align - 1))
}

/// First, next and best fit over one address-ordered free list with immediate coalescing.
struct FitHeap {
    policy: Policy,
    align: u64,
    min_block: u64,
    /// Free blocks: address → size.
    by_addr: BTreeMap<u64, u64>,
    /// Free blocks by (size, address), for best fit.
    by_size: BTreeSet<(u64, u64)>,
    /// Free blocks by address with subtree maxima, for first and next fit.
    treap: Treap,
    /// Where next fit resumes its search.
    rover: u64,
    brk: u64,
}

impl FitHeap {
    fn add_free(&mut self, addr: u64, size: u64) {
        self.by_addr.insert(addr, size);
        match self.policy {
            Policy::BestFit => {
                self.by_size.insert((size, addr));
            }
            _ => self.treap.insert(addr, size),
        }
    }

    fn take_free(&mut self, addr: u64, size: u64) {
        self.by_addr.remove(&addr);
        match self.policy {
            Policy::BestFit => {
                self.by_size.remove(&(size, addr));
            }
            _ => self.treap.remove(addr),
        }
    }

    fn find(&self, size: u64) -> Option<(u64, u64)> {
        match self.policy {
            Policy::BestFit => self.by_size.range((size, 0)..).next().map(|&(s, a)| (a, s)),
            Policy::NextFit => self
                .treap
                .first_fit(self.rover, size)
                .or_else(|| self.treap.first_fit(0, size)),
            _ => self.treap.first_fit(0, size),
        }
    }
}

impl Heap for FitHeap {
    fn round(&self, size: u64) -> Option<u64> {
        round_up(size.max(1), self.align)
    }

    fn alloc(&mut self, size: u64) -> Option<(u64, u64)> {
        let placed = if let Some((addr, free)) = self.find(size) {
            self.take_free(addr, free);
            if free - size >= self.min_block {
                self.add_free(addr + size, free - size);
                (addr, size)
            } else {
                (addr, free)
            }
        } else {
            // No free block fits: grow the heap, starting inside a free block at its top.
            let top = match self.by_addr.last_key_value() {
                Some((&a, &s)) if a + s == self.brk => {
                    self.take_free(a, s);
                    a
                }
                _ => self.brk,
            };
            self.brk = top.checked_add(size)?;
            (top, size)
        };
        self.rover = placed.0 + placed.1;
        Some(placed)
    }

    fn free(&mut self, mut addr: u64, mut size: u64) {
        if let Some((&a, &s)) = self.by_addr.range(..addr).next_back() {
            if a + s == addr {
                self.take_free(a, s);
                addr = a;
                size += s;
            }
        }
        if let Some(&s) = self.by_addr.get(&(addr + size)) {
            self.take_free(addr + size, s);
            size += s;
        }
        self.add_free(addr, size);
    }

    fn extent(&self) -> u64 {
        self.brk
    }
}

/// Simple segregated storage: one free list per power-of-two size class, blocks never split
/// nor joined; a class with no free block takes a new one from the top of the heap.
struct Segregated {
    align: u64,
    /// Free block addresses per class (log₂ of the class size), reused last-freed first.
    classes: Vec<Vec<u64>>,
    brk: u64,
}

impl Heap for Segregated {
    fn round(&self, size: u64) -> Option<u64> {
        round_up(size.max(1), self.align)?.checked_next_power_of_two()
    }

    fn alloc(&mut self, size: u64) -> Option<(u64, u64)> {
        let class = size.trailing_zeros() as usize;
        if let Some(addr) = self.classes.get_mut(class).and_then(Vec::pop) {
            return Some((addr, size));
        }
        let addr = self.brk;
        self.brk = addr.checked_add(size)?;
        Some((addr, size))
    }

    fn free(&mut self, addr: u64, size: u64) {
        let class = size.trailing_zeros() as usize;
        if self.classes.len() <= class {
            self.classes.resize_with(class + 1, Vec::new);
        }
        self.classes[class].push(addr);
    }

    fn extent(&self) -> u64 {
        self.brk
    }
}

/// A binary buddy system over an arena of 2^k bytes that doubles when no block is free.
struct Buddy {
    align: u64,
    /// Free block addresses per order (log₂ of the size); the lowest address is used first.
    free: Vec<BTreeSet<u64>>,
    /// The arena's size (0 before the first block).
    arena: u64,
}

impl Buddy {
    /// Frees the block of `order` at `addr`, joining it with its buddy while that is free.
    fn release(&mut self, mut addr: u64, mut order: u32) {
        while (order as usize) < 64 {
            let size = 1u64 << order;
            let buddy = addr ^ size;
            if buddy.checked_add(size).is_none_or(|end| end > self.arena)
                || !self.free[order as usize].remove(&buddy)
            {
                break;
            }
            addr = addr.min(buddy);
            order += 1;
        }
        self.free[order as usize].insert(addr);
    }
}

impl Heap for Buddy {
    fn round(&self, size: u64) -> Option<u64> {
        round_up(size.max(1), self.align)?.checked_next_power_of_two()
    }

    fn alloc(&mut self, size: u64) -> Option<(u64, u64)> {
        let order = size.trailing_zeros();
        loop {
            let found = (order as usize..self.free.len()).find(|&o| !self.free[o].is_empty());
            if let Some(o) = found {
                let addr = self.free[o].pop_first()?;
                // Split down to the order asked for, keeping the lower halves.
                for lower in (order as usize..o).rev() {
                    self.free[lower].insert(addr + (1u64 << lower));
                }
                return Some((addr, size));
            }
            if self.arena == 0 {
                self.arena = size;
                return Some((0, size));
            }
            // Double the arena: its new upper half is one free block.
            let half = self.arena;
            self.arena = half.checked_mul(2)?;
            self.release(half, half.trailing_zeros());
        }
    }

    fn free(&mut self, addr: u64, size: u64) {
        self.release(addr, size.trailing_zeros());
    }

    fn extent(&self) -> u64 {
        self.arena
    }
}
