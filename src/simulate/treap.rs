//! Free blocks by address, each subtree knowing its largest block: first fit and next fit in
//! O(log n) expected, where a free list would be scanned from its head.
//!
// Design: a treap (a binary search tree by address, heap-ordered by a pseudo-random priority)
// in an arena of nodes, augmented with the largest size in each subtree. The standard library's
// BTreeMap cannot carry that augmentation, and the first block at or above an address that is
// large enough is exactly a descent guided by it.

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Node {
    addr: u64,
    size: u64,
    max: u64,
    prio: u64,
    left: u32,
    right: u32,
}

/// Free blocks (address → size) with "first block at or above an address of at least a size".
#[derive(Debug)]
pub(crate) struct Treap {
    nodes: Vec<Node>,
    vacant: Vec<u32>,
    root: u32,
    seed: u64,
}

impl Default for Treap {
    fn default() -> Self {
        Treap {
            nodes: Vec::new(),
            vacant: Vec::new(),
            root: NIL,
            seed: 0x9e37_79b9_7f4a_7c15,
        }
    }
}

impl Treap {
    fn max_of(&self, n: u32) -> u64 {
        if n == NIL {
            0
        } else {
            self.nodes[n as usize].max
        }
    }

    fn update(&mut self, n: u32) {
        let node = self.nodes[n as usize];
        let m = node
            .size
            .max(self.max_of(node.left))
            .max(self.max_of(node.right));
        self.nodes[n as usize].max = m;
    }

    /// Splits `n` into the nodes with address < `addr` and those with address ≥ `addr`.
    fn split(&mut self, n: u32, addr: u64) -> (u32, u32) {
        if n == NIL {
            return (NIL, NIL);
        }
        if self.nodes[n as usize].addr < addr {
            let (l, r) = self.split(self.nodes[n as usize].right, addr);
            self.nodes[n as usize].right = l;
            self.update(n);
            (n, r)
        } else {
            let (l, r) = self.split(self.nodes[n as usize].left, addr);
            self.nodes[n as usize].left = r;
            self.update(n);
            (l, n)
        }
    }

    /// Joins two treaps, every address of `a` below every address of `b`.
    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let r = self.merge(self.nodes[a as usize].right, b);
            self.nodes[a as usize].right = r;
            self.update(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b as usize].left);
            self.nodes[b as usize].left = l;
            self.update(b);
            b
        }
    }

    fn next_prio(&mut self) -> u64 {
        // splitmix64: deterministic, so that a simulation is reproducible.
        self.seed = self.seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Adds the free block `addr` of `size` bytes (no block at `addr` may be present).
    pub(crate) fn insert(&mut self, addr: u64, size: u64) {
        let node = Node {
            addr,
            size,
            max: size,
            prio: self.next_prio(),
            left: NIL,
            right: NIL,
        };
        let n = match self.vacant.pop() {
            Some(n) => {
                self.nodes[n as usize] = node;
                n
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        let (l, r) = self.split(self.root, addr);
        let l = self.merge(l, n);
        self.root = self.merge(l, r);
    }

    /// Removes the free block at `addr`, if present.
    pub(crate) fn remove(&mut self, addr: u64) {
        let (l, r) = self.split(self.root, addr);
        let (mid, r) = self.split(r, addr.saturating_add(1));
        if mid != NIL {
            self.vacant.push(mid);
        }
        self.root = self.merge(l, r);
    }

    /// The lowest-addressed block at or above `from` of at least `size` bytes: (address, size).
    pub(crate) fn first_fit(&self, from: u64, size: u64) -> Option<(u64, u64)> {
        self.first_in(self.root, from, size)
    }

    fn first_in(&self, n: u32, from: u64, size: u64) -> Option<(u64, u64)> {
        if n == NIL || self.nodes[n as usize].max < size {
            return None;
        }
        let node = self.nodes[n as usize];
        if node.addr < from {
            return self.first_in(node.right, from, size);
        }
        if let Some(found) = self.first_in(node.left, from, size) {
            return Some(found);
        }
        if node.size >= size {
            return Some((node.addr, node.size));
        }
        self.first_in(node.right, from, size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_matches_a_scan() {
        let mut t = Treap::default();
        let mut model = std::collections::BTreeMap::new();
        let mut x = 12345u64;
        for step in 0..2000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let addr = (x >> 33) % 500 * 16;
            if model.remove(&addr).is_some() {
                t.remove(addr);
            } else {
                let size = (x >> 20) % 64 + 1;
                t.insert(addr, size);
                model.insert(addr, size);
            }
            let from = (x >> 7) % 8000;
            let want = (x >> 40) % 70;
            let expect = model
                .range(from..)
                .find(|(_, &s)| s >= want)
                .map(|(&a, &s)| (a, s));
            assert_eq!(t.first_fit(from, want), expect, "step {step}");
        }
    }
}
