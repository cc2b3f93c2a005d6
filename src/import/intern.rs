//! The interner: distinct strings of one string-table section, each given the byte offset its
//! record will have in the section, so records can refer to it before the table is written.

use std::collections::HashMap;

/// One string table being built.
#[derive(Debug, Default)]
pub struct Interner {
    map: HashMap<Box<[u8]>, u64>,
    /// The strings in first-seen order (the order they are written).
    pub order: Vec<Box<[u8]>>,
    next: u64,
    /// Bytes held (for the memory report).
    pub held: u64,
}

impl Interner {
    /// An empty table.
    pub fn new() -> Interner {
        Interner::default()
    }

    /// The offset of `s`, adding it if new; `size` gives the record size for a string of that
    /// length (`None`: too long for the table's record).
    pub fn intern(&mut self, s: &[u8], size: impl Fn(usize) -> Option<u64>) -> Option<u64> {
        if let Some(&o) = self.map.get(s) {
            return Some(o);
        }
        let n = size(s.len())?;
        let o = self.next;
        self.next += n;
        let b: Box<[u8]> = s.into();
        self.held += s.len() as u64;
        self.order.push(b.clone());
        self.map.insert(b, o);
        Some(o)
    }

    /// Whether `s` is in the table.
    pub fn contains(&self, s: &[u8]) -> bool {
        self.map.contains_key(s)
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// No strings yet.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_record_sizes() {
        let mut i = Interner::new();
        let size = |n: usize| (n <= 5).then_some(3 + n as u64);
        assert_eq!(i.intern(b"ab", size), Some(0));
        assert_eq!(i.intern(b"c", size), Some(5));
        assert_eq!(i.intern(b"ab", size), Some(0));
        assert_eq!(i.intern(b"toolong", size), None);
        assert_eq!(i.len(), 2);
    }
}
