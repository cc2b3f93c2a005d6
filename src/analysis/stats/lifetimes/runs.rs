//! A sorted list of distinct values and their counts, packed: each entry is its value's
//! difference from the value before it and its count, both in LEB128.

/// Distinct values in increasing order, each with a count (see the module docs): one or two
/// bytes an entry where the values lie close together and repeat little, as lifetimes do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Runs {
    bytes: Vec<u8>,
    len: usize,
    /// The last value pushed (0 before the first).
    last: u64,
}

impl Runs {
    /// An empty list with room for `bytes` bytes of entries.
    pub(super) fn with_capacity(bytes: usize) -> Runs {
        Runs {
            bytes: Vec::with_capacity(bytes),
            ..Runs::default()
        }
    }

    /// The entries.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes the entries take.
    pub(super) fn bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Appends value `v` with count `c`; `v` is above every value in the list.
    #[inline(always)]
    pub(super) fn push(&mut self, v: u64, c: u64) {
        debug_assert!(self.len == 0 || v > self.last, "{v} after {}", self.last);
        let d = v.wrapping_sub(self.last);
        if (d | c) < 0x80 {
            // The common entry: two bytes, one check of the room.
            self.bytes.extend_from_slice(&[d as u8, c as u8]);
        } else {
            put(&mut self.bytes, d);
            put(&mut self.bytes, c);
        }
        self.last = v;
        self.len += 1;
    }

    /// This list with the values of `buf` (sorted, repeats counted) added: one pass over both,
    /// into a new list. (Copying the entries between two values of `buf` as they are, but the
    /// first, took more instructions: with sixteen values buffered per entry, those runs are short.)
    pub(super) fn merged_with(&self, buf: &[u64]) -> Runs {
        let mut out = Runs::with_capacity(self.bytes.len() + self.bytes.len() / 8 + 64);
        let mut old = self.iter().peekable();
        let mut i = 0;
        while let Some(&v) = buf.get(i) {
            let mut c = 1;
            i += 1;
            while buf.get(i) == Some(&v) {
                c += 1;
                i += 1;
            }
            while let Some((x, n)) = old.next_if(|e| e.0 < v) {
                out.push(x, n);
            }
            match old.next_if(|e| e.0 == v) {
                Some((_, had)) => out.push(v, had + c),
                None => out.push(v, c),
            }
        }
        for (x, n) in old {
            out.push(x, n);
        }
        out
    }

    /// The entries in increasing order of value.
    pub(super) fn iter(&self) -> Iter<'_> {
        Iter {
            bytes: &self.bytes,
            pos: 0,
            value: 0,
        }
    }
}

impl FromIterator<(u64, u64)> for Runs {
    /// The list of entries given in increasing order of value.
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(it: I) -> Runs {
        let mut r = Runs::default();
        for (v, c) in it {
            r.push(v, c);
        }
        r
    }
}

/// The entries of a [`Runs`].
#[derive(Debug, Clone)]
pub(super) struct Iter<'a> {
    bytes: &'a [u8],
    pos: usize,
    value: u64,
}

impl Iterator for Iter<'_> {
    type Item = (u64, u64);

    #[inline]
    fn next(&mut self) -> Option<(u64, u64)> {
        let d = get(self.bytes, &mut self.pos)?;
        let c = get(self.bytes, &mut self.pos)?;
        self.value = self.value.wrapping_add(d);
        Some((self.value, c))
    }
}

/// Appends `x` in LEB128.
fn put(out: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        out.push((x as u8) | 0x80);
        x >>= 7;
    }
    out.push(x as u8);
}

/// The LEB128 number at `*pos` (moved past it); `None` at the end of the bytes. The bytes are
/// `put`'s, so a number takes at most ten.
#[inline]
fn get(bytes: &[u8], pos: &mut usize) -> Option<u64> {
    let b = *bytes.get(*pos)?;
    *pos += 1;
    if b < 0x80 {
        return Some(u64::from(b));
    }
    let mut x = u64::from(b & 0x7f);
    let mut shift = 7;
    while let Some(&b) = bytes.get(*pos) {
        *pos += 1;
        x |= u64::from(b & 0x7f).wrapping_shl(shift);
        if b < 0x80 {
            break;
        }
        shift += 7;
    }
    Some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every entry comes back as pushed, from the smallest and largest values and counts to
    /// neighbours one apart; the common entry takes two bytes.
    #[test]
    fn entries_come_back_as_pushed() {
        let entries = [
            (0u64, 1u64),
            (1, u64::MAX),
            (127, 127),
            (128, 128),
            (4096, 1),
            (4097, 16_383),
            (4098, 16_384),
            (1 << 35, 2),
            (u64::MAX - 1, 0),
            (u64::MAX, 7),
        ];
        let r: Runs = entries.iter().copied().collect();
        assert_eq!(r.len(), entries.len());
        assert_eq!(r.iter().collect::<Vec<_>>(), entries);
        let mut small = Runs::default();
        small.push(4096, 3);
        small.push(4100, 1);
        // The first value in two bytes and its count in one; then one each.
        assert_eq!(small.bytes(), 3 + 2);
        assert_eq!(small.iter().collect::<Vec<_>>(), [(4096, 3), (4100, 1)]);
        assert!(Runs::default().iter().next().is_none());
    }

    /// A list merged with sorted values equals the list built from the counts of both, where
    /// the values fall before, among, on and after its entries, wide and narrow differences.
    #[test]
    fn merged_with_values_equals_the_counts_of_both() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..300 {
            let spread = [4, 300, 1 << 20, u64::MAX >> 2][round % 4];
            let mut counts = std::collections::BTreeMap::new();
            let mut list = Vec::new();
            let n = (next() % 60) as usize;
            for _ in 0..n {
                let v = 4096 + next() % spread;
                let c = 1 + next() % [3, 200, 1 << 40][round % 3];
                if let std::collections::btree_map::Entry::Vacant(e) = counts.entry(v) {
                    e.insert(c);
                    list.push(v);
                }
            }
            list.sort_unstable();
            let runs: Runs = list.iter().map(|v| (*v, counts[v])).collect();
            let mut buf: Vec<u64> = (0..next() % 80)
                .map(|_| match next() % 3 {
                    0 if !list.is_empty() => list[(next() % list.len() as u64) as usize],
                    _ => 4090 + next() % spread.saturating_add(20),
                })
                .collect();
            buf.sort_unstable();
            for v in &buf {
                *counts.entry(*v).or_insert(0) += 1;
            }
            let merged = runs.merged_with(&buf);
            let want: Runs = counts.iter().map(|(v, c)| (*v, *c)).collect();
            assert_eq!(merged, want, "round {round}: {list:?} + {buf:?}");
        }
        let r: Runs = [(5, 1), (9, 2)].into_iter().collect();
        assert_eq!(r.merged_with(&[]), r);
        assert_eq!(
            Runs::default().merged_with(&[3, 3]),
            [(3, 2)].into_iter().collect()
        );
    }
}
