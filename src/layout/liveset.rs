//! Live sets (docs/format.md §13, extension `live/1`): per scope, up to [`MAX_SETS`] sequences
//! of values. A field with the `liveset = N` property appends its value to set N; a field read
//! with `interpretation = live N` stores the position of its value in set N, counted from the
//! newest, and takes the value out.
//!
//! The decoder and the encoder share this module, so both see the same positions.

// Design: a set is a sequence of slots in insertion order, each holding a value and an "alive"
// bit; a Fenwick tree over the alive bits gives the position of a slot and the slot at a
// position in O(log n). Only a writer needs to find a value (`indexed`): it keeps a map from
// each value to its live slots, oldest first, so a reader allocates nothing per value beyond
// the slot. Dead
// slots are squeezed out when they outnumber the live ones, but only between records
// (`compact`), so that a writer can undo a refused record by flipping slots back (the `Undo`
// log). The map's hash is seeded per process: values come from the trace.

use std::collections::{HashMap, VecDeque};

/// A hash map with a fast hash seeded per process.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

pub use crate::limits::{LIVE_SET_CAPACITY as SET_CAPACITY, MAX_LIVE_SETS as MAX_SETS};

/// One live set.
#[derive(Debug, Clone, Default)]
pub struct LiveSet {
    /// Value of each slot, oldest first.
    vals: Vec<u64>,
    /// Whether each slot is alive.
    alive: Vec<bool>,
    /// Fenwick tree over `alive` (1-based, length `room + 1`).
    tree: Vec<u32>,
    /// For a writer: the live slots holding each value, oldest first.
    index: Option<Index>,
    /// Live values.
    len: usize,
}

/// A writer's index of a set: the newest live slot of each value, and the older live slots of
/// the values that occur more than once (oldest first). One map entry per value in the common
/// case, with no allocation.
#[derive(Debug, Clone, Default)]
struct Index {
    newest: FastMap<u64, u32>,
    older: FastMap<u64, VecDeque<u32>>,
}

impl Index {
    fn add(&mut self, value: u64, slot: u32) {
        if let Some(old) = self.newest.insert(value, slot) {
            self.older.entry(value).or_default().push_back(old);
        }
    }

    /// `slot`, holding `value`, is no longer live.
    fn remove(&mut self, value: u64, slot: u32) {
        match self.newest.get(&value) {
            Some(&n) if n == slot => match self.older.get_mut(&value) {
                Some(d) => {
                    let p = d.pop_back().expect("non-empty");
                    if d.is_empty() {
                        self.older.remove(&value);
                    }
                    self.newest.insert(value, p);
                }
                None => {
                    self.newest.remove(&value);
                }
            },
            Some(_) => {
                if let Some(d) = self.older.get_mut(&value) {
                    // In order: the oldest (a full set) and the newest go in O(1).
                    if let Ok(i) = d.binary_search(&slot) {
                        d.remove(i);
                    }
                    if d.is_empty() {
                        self.older.remove(&value);
                    }
                }
            }
            None => {}
        }
    }

    /// `slot`, holding `value`, is live again (undoing its removal).
    fn restore(&mut self, value: u64, slot: u32) {
        let older = |this: &mut Index, s: u32| {
            let d = this.older.entry(value).or_default();
            let at = d.partition_point(|&x| x < s);
            d.insert(at, s);
        };
        match self.newest.get(&value).copied() {
            None => {
                self.newest.insert(value, slot);
            }
            Some(n) if slot > n => {
                self.newest.insert(value, slot);
                older(self, n);
            }
            Some(_) => older(self, slot),
        }
    }

    fn clear(&mut self) {
        self.newest.clear();
        self.older.clear();
    }
}

/// One change to a set, kept so that a refused record can be undone.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Undo {
    /// Slot `slot` of set `set` was killed.
    Killed { set: u8, slot: u32 },
    /// Slot `slot` of set `set` was appended.
    Added { set: u8, slot: u32 },
}

impl LiveSet {
    /// Number of values in the set.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn tree_add(&mut self, slot: u32, delta: i32) {
        let mut i = slot as usize + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add(delta as u32);
            i += i & i.wrapping_neg();
        }
    }

    /// Live slots before `slot` (exclusive).
    fn rank(&self, slot: u32) -> usize {
        let mut i = slot as usize;
        let mut s = 0usize;
        while i > 0 {
            s += self.tree[i] as usize;
            i &= i - 1;
        }
        s
    }

    /// The slot holding the `k`-th live value, oldest first (`k < len`).
    fn select(&self, mut k: usize) -> u32 {
        let n = self.tree.len() - 1;
        let mut pos = 0usize;
        let mut step = n.next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next <= n && (self.tree[next] as usize) <= k {
                pos = next;
                k -= self.tree[next] as usize;
            }
            step >>= 1;
        }
        pos as u32
    }

    /// The slot at `position` counted from the newest (`position < len`). Most positions are
    /// small: a short walk back over the newest slots, which are in cache, beats the tree.
    fn slot_at_position(&self, position: usize) -> u32 {
        if position < 16 {
            let mut left = position;
            for slot in (0..self.vals.len()).rev().take(64) {
                if self.alive[slot] {
                    if left == 0 {
                        return slot as u32;
                    }
                    left -= 1;
                }
            }
        }
        self.select(self.len - 1 - position)
    }

    /// Rebuild the tree for the current slots with room for `room` slots.
    fn rebuild(&mut self, room: usize) {
        let mut tree = vec![0u32; room + 1];
        for (i, &a) in self.alive.iter().enumerate() {
            if a {
                tree[i + 1] += 1;
            }
        }
        for i in 1..=room {
            let j = i + (i & i.wrapping_neg());
            if j <= room {
                tree[j] += tree[i];
            }
        }
        self.tree = tree;
    }

    fn kill(&mut self, slot: u32, set: u8, undo: &mut Option<&mut Vec<Undo>>) {
        self.alive[slot as usize] = false;
        self.tree_add(slot, -1);
        self.len -= 1;
        if let Some(index) = &mut self.index {
            index.remove(self.vals[slot as usize], slot);
        }
        if let Some(u) = undo {
            u.push(Undo::Killed { set, slot });
        }
    }

    /// Append `value` as the newest value.
    pub(crate) fn insert(&mut self, value: u64, set: u8, mut undo: Option<&mut Vec<Undo>>) {
        if self.len >= SET_CAPACITY {
            let oldest = self.select(0);
            self.kill(oldest, set, &mut undo);
        }
        let slot = self.vals.len() as u32;
        if self.vals.len() + 1 >= self.tree.len() {
            // Grow without renumbering: slots stay where they are (undo relies on it).
            let room = (self.tree.len() * 2).max(1024);
            self.vals.reserve(room - self.vals.len());
            self.rebuild(room);
        }
        self.vals.push(value);
        self.alive.push(true);
        self.tree_add(slot, 1);
        self.len += 1;
        if let Some(m) = &mut self.index {
            m.add(value, slot);
        }
        if let Some(u) = undo {
            u.push(Undo::Added { set, slot });
        }
    }

    /// Position (counted from the newest) of the newest copy of `value`, for a writer.
    pub fn position(&self, value: u64) -> Option<u64> {
        let &slot = self.index.as_ref()?.newest.get(&value)?;
        Some((self.len - 1 - self.rank(slot)) as u64)
    }

    /// The value at `position` counted from the newest, if there is one.
    pub fn get(&self, position: u64) -> Option<u64> {
        if position >= self.len as u64 {
            return None;
        }
        Some(self.vals[self.slot_at_position(position as usize) as usize])
    }

    /// Take out the value at `position` counted from the newest.
    pub(crate) fn take(
        &mut self,
        position: u64,
        set: u8,
        mut undo: Option<&mut Vec<Undo>>,
    ) -> Option<u64> {
        if position >= self.len as u64 {
            return None;
        }
        let slot = self.slot_at_position(position as usize);
        let value = self.vals[slot as usize];
        self.kill(slot, set, &mut undo);
        Some(value)
    }

    /// Undo one change (in reverse order of the changes).
    fn undo(&mut self, u: Undo) {
        match u {
            Undo::Killed { slot, .. } => {
                self.alive[slot as usize] = true;
                self.tree_add(slot, 1);
                self.len += 1;
                if let Some(m) = &mut self.index {
                    m.restore(self.vals[slot as usize], slot);
                }
            }
            Undo::Added { slot, .. } => {
                // The last slot appended is the first undone.
                let value = self.vals[slot as usize];
                self.tree_add(slot, -1);
                self.len -= 1;
                if let Some(m) = &mut self.index {
                    m.remove(value, slot);
                }
                self.vals.truncate(slot as usize);
                self.alive.truncate(slot as usize);
            }
        }
    }

    /// Squeeze out dead slots when they outnumber the live ones (between records only).
    fn compact(&mut self) {
        if self.vals.len() < 4096 || self.vals.len() < 2 * self.len {
            return;
        }
        let mut vals = Vec::with_capacity(self.len * 2);
        for (i, &v) in self.vals.iter().enumerate() {
            if self.alive[i] {
                vals.push(v);
            }
        }
        if let Some(m) = &mut self.index {
            m.clear();
            for (i, &v) in vals.iter().enumerate() {
                m.add(v, i as u32);
            }
        }
        self.alive = vec![true; vals.len()];
        self.vals = vals;
        let room = (self.vals.len() * 2).max(1024);
        self.rebuild(room);
    }
}

/// The live sets of one scope.
#[derive(Debug, Clone, Default)]
pub struct LiveSets {
    sets: Vec<LiveSet>,
    /// Whether values can be looked up (a writer's sets).
    indexed: bool,
}

impl LiveSets {
    /// Sets whose values a writer can look up ([`LiveSets::position`]).
    pub(crate) fn indexed() -> LiveSets {
        LiveSets {
            sets: Vec::new(),
            indexed: true,
        }
    }

    /// Set `n` (1..=[`MAX_SETS`]), if it has ever held a value.
    pub fn set(&self, n: u8) -> Option<&LiveSet> {
        self.sets.get((n as usize).wrapping_sub(1))
    }

    fn set_mut(&mut self, n: u8) -> &mut LiveSet {
        let i = n as usize - 1;
        if self.sets.len() <= i {
            let indexed = self.indexed;
            self.sets.resize_with(i + 1, || LiveSet {
                index: indexed.then(Index::default),
                ..LiveSet::default()
            });
        }
        &mut self.sets[i]
    }

    /// Append `value` to set `n` as its newest value.
    pub(crate) fn insert(&mut self, n: u8, value: u64, undo: Option<&mut Vec<Undo>>) {
        self.set_mut(n).insert(value, n, undo);
    }

    /// Take the value at `position` (from the newest) out of set `n`.
    pub(crate) fn take(
        &mut self,
        n: u8,
        position: u64,
        undo: Option<&mut Vec<Undo>>,
    ) -> Option<u64> {
        self.set(n)?;
        self.set_mut(n).take(position, n, undo)
    }

    /// Number of values in set `n`.
    pub fn len(&self, n: u8) -> usize {
        self.set(n).map_or(0, LiveSet::len)
    }

    /// Position of the newest copy of `value` in set `n`, counted from the newest (for sets made
    /// by [`LiveSets::indexed`]; `None` otherwise).
    pub fn position(&self, n: u8, value: u64) -> Option<u64> {
        self.set(n)?.position(value)
    }

    /// Undo the changes of a refused record, newest first.
    pub(crate) fn undo(&mut self, log: &mut Vec<Undo>) {
        while let Some(u) = log.pop() {
            let n = match u {
                Undo::Killed { set, .. } | Undo::Added { set, .. } => set,
            };
            self.set_mut(n).undo(u);
        }
    }

    /// The live values of every set, oldest first, set 1 first: all a reader's positions
    /// depend on (a checkpoint's state, `decode::Checkpoint`). Sets never used are empty.
    pub(crate) fn snapshot(&self) -> Vec<Vec<u64>> {
        let mut sets: Vec<Vec<u64>> = self
            .sets
            .iter()
            .map(|s| {
                s.vals
                    .iter()
                    .zip(&s.alive)
                    .filter(|(_, &a)| a)
                    .map(|(&v, _)| v)
                    .collect::<Vec<u64>>()
            })
            .collect();
        while sets.last().is_some_and(Vec::is_empty) {
            sets.pop();
        }
        sets
    }

    /// Sets holding `sets[i]` (oldest first) as set `i + 1`: the inverse of
    /// [`LiveSets::snapshot`] for a reader. The caller checks the number of sets and their
    /// sizes against [`MAX_SETS`] and [`SET_CAPACITY`].
    pub(crate) fn restore(sets: &[Vec<u64>]) -> LiveSets {
        let mut out = LiveSets::default();
        for (i, values) in sets.iter().enumerate() {
            let n = i as u8 + 1;
            // A set that exists but is empty behaves as one never used.
            for &v in values {
                out.insert(n, v, None);
            }
        }
        out
    }

    /// Housekeeping between records (nothing to do, and inlined, when no set was ever used).
    #[inline]
    pub(crate) fn compact(&mut self) {
        if !self.sets.is_empty() {
            self.compact_sets();
        }
    }

    fn compact_sets(&mut self) {
        for s in &mut self.sets {
            s.compact();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plain model: a vector, newest last.
    fn model_ops(ops: &[(bool, u64)]) {
        let mut model: Vec<u64> = Vec::new();
        let mut s = LiveSets::indexed();
        for (step, &(ins, v)) in ops.iter().enumerate() {
            if ins {
                model.push(v);
                s.insert(1, v, None);
            } else {
                let pos = v % (model.len() as u64 + 1);
                let want = if (pos as usize) < model.len() {
                    Some(model.remove(model.len() - 1 - pos as usize))
                } else {
                    None
                };
                assert_eq!(s.take(1, pos, None), want);
            }
            assert_eq!(s.len(1), model.len());
            if step % 37 != 0 {
                s.compact();
                continue;
            }
            for (i, &x) in model.iter().enumerate() {
                let set = s.set(1).unwrap();
                assert_eq!(set.get((model.len() - 1 - i) as u64), Some(x));
                // A writer finds the newest copy.
                let newest = model.iter().rposition(|&y| y == x).unwrap();
                assert_eq!(s.position(1, x), Some((model.len() - 1 - newest) as u64));
            }
            s.compact();
        }
    }

    #[test]
    fn positions_follow_a_plain_list() {
        let mut ops = Vec::new();
        let mut x = 12345u64;
        for i in 0..6000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ops.push((!x.is_multiple_of(3), (x >> 33) % 700 + i % 2));
        }
        model_ops(&ops);
    }

    #[test]
    fn undo_restores_positions() {
        let mut s = LiveSets::indexed();
        for v in 0..100 {
            s.insert(2, v, None);
        }
        let before: Vec<_> = (0..100).map(|v| s.position(2, v)).collect();
        let mut log = Vec::new();
        assert_eq!(s.take(2, 5, Some(&mut log)), Some(94));
        s.insert(2, 7, Some(&mut log));
        s.insert(2, 1000, Some(&mut log));
        assert_eq!(s.position(2, 7), Some(1));
        s.undo(&mut log);
        let after: Vec<_> = (0..100).map(|v| s.position(2, v)).collect();
        assert_eq!(before, after);
        assert_eq!(s.position(2, 1000), None);
        assert_eq!(s.len(2), 100);
    }

    #[test]
    fn a_full_set_drops_its_oldest_value() {
        let mut s = LiveSet {
            index: Some(Index::default()),
            ..LiveSet::default()
        };
        for v in 0..SET_CAPACITY as u64 + 3 {
            s.insert(v, 1, None);
        }
        assert_eq!(s.len(), SET_CAPACITY);
        assert_eq!(s.position(2), None);
        assert_eq!(s.position(3), Some(SET_CAPACITY as u64 - 1));
        assert_eq!(s.get(0), Some(SET_CAPACITY as u64 + 2));
    }
}
