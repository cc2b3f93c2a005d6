//! The live blocks of a trace, by id: what `replay` and `simulate` look a free up in.

use std::collections::HashMap;
use std::hash::Hash;

use crate::analysis::event::HeapEvent;

/// The name of a block: its namespace, the namespace's key (a heap, a thread) and its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockKey {
    /// The namespace ([`HeapEvent::space`]).
    pub space: u32,
    /// The namespace's key ([`HeapEvent::key`]).
    pub key: u64,
    /// The block's id.
    pub id: u64,
}

impl BlockKey {
    /// The key of `id` in the namespace of `event`.
    pub fn of(event: &HeapEvent, id: u64) -> Self {
        BlockKey {
            space: event.space,
            key: event.key,
            id,
        }
    }
}

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Live blocks by key, holding a value of type `V` for each (a pointer, an address in a model
/// heap). Its memory is bounded by the number of live blocks, not by the trace.
///
/// Several blocks may hold one key at once (a namespace of shared ids, or a trace that lost a
/// free): the newest is found first, and the older ones come back as the newer ones die.
#[derive(Debug)]
pub struct LiveMap<K, V> {
    top: FastMap<K, V>,
    shadowed: FastMap<K, Vec<V>>,
    len: usize,
}

impl<K: Hash + Eq + Copy, V> Default for LiveMap<K, V> {
    fn default() -> Self {
        LiveMap {
            top: FastMap::default(),
            shadowed: FastMap::default(),
            len: 0,
        }
    }
}

impl<K: Hash + Eq + Copy, V> LiveMap<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Block `key` comes alive with `value`.
    pub fn insert(&mut self, key: K, value: V) {
        self.len += 1;
        if let Some(old) = self.top.insert(key, value) {
            self.shadowed.entry(key).or_default().push(old);
        }
    }

    /// Block `key` dies: its value, or `None` when no block of that key is live.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let value = self.top.remove(key)?;
        self.len -= 1;
        if let Some(stack) = self.shadowed.get_mut(key) {
            if let Some(previous) = stack.pop() {
                self.top.insert(*key, previous);
            }
            if stack.is_empty() {
                self.shadowed.remove(key);
            }
        }
        Some(value)
    }

    /// The value of the newest live block of `key`.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.top.get(key)
    }

    /// The number of live blocks.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no block is live.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every live block's value, in no order.
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.top
            .values()
            .chain(self.shadowed.values().flat_map(|v| v.iter()))
    }

    /// Every live block's value, the map left empty.
    pub fn drain(&mut self) -> impl Iterator<Item = V> + '_ {
        self.len = 0;
        self.top
            .drain()
            .map(|(_, v)| v)
            .chain(self.shadowed.drain().flat_map(|(_, v)| v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_ids_come_back_newest_first() {
        let mut m = LiveMap::new();
        m.insert(1u64, "a");
        m.insert(1, "b");
        m.insert(2, "c");
        assert_eq!(m.len(), 3);
        assert_eq!(m.remove(&1), Some("b"));
        assert_eq!(m.remove(&1), Some("a"));
        assert_eq!(m.remove(&1), None);
        assert_eq!(m.len(), 1);
        m.insert(3, "d");
        m.insert(3, "e");
        let mut all: Vec<_> = m.drain().collect();
        all.sort();
        assert_eq!(all, ["c", "d", "e"]);
        assert!(m.is_empty());
    }
}
