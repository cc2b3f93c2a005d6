//! The interpreter's state written into and read back from an analysis-state blob
//! (docs/format.md §15.4), so that a pass can resume at a seek index's checkpoint exactly as if
//! it had read every record before it.

// Design: every entry is written in a canonical order (sorted by its key), so that the same
// trace gives the same bytes in every process (the maps' hash seeds differ) and `mtf index
// --check` can compare states byte for byte. The ring of recently undefined ids (`Dead`) is
// not part of the state: it only tells a double free from a free of an id never seen in a
// finding's wording and severity (`mtf check`), never a heap figure; a resumed interpreter
// starts with it empty.

use crate::dtd::analysis::{SpaceId, SpaceKind};
use crate::index::analysis::{Dec, Enc, StateError};

use super::finding::At;
use super::state::{Frame, Live, Slab};
use super::values::Name;
use super::Interpreter;

pub(super) fn put_at(e: &mut Enc, a: At) {
    e.u64(a.record);
    e.u64(a.offset);
    e.u32(a.record_type);
}

pub(super) fn get_at(d: &mut Dec<'_>) -> Result<At, StateError> {
    Ok(At {
        record: d.u64()?,
        offset: d.u64()?,
        record_type: d.u32()?,
    })
}

pub(super) fn put_name(e: &mut Enc, n: &Name) {
    match n {
        Name::Text(t) => {
            e.u8(0);
            e.str(t);
        }
        Name::Ref(s, i) => {
            e.u8(1);
            e.u32(*s);
            e.u64(*i);
        }
    }
}

pub(super) fn get_name(d: &mut Dec<'_>) -> Result<Name, StateError> {
    match d.u8()? {
        0 => Ok(Name::Text(d.str()?.into())),
        1 => Ok(Name::Ref(d.u32()?, d.u64()?)),
        k => Err(d.error(format!("name kind {k}"))),
    }
}

fn put_live(e: &mut Enc, l: &Live) {
    e.u64(l.record);
    e.u64(l.offset);
    e.u64(l.bytes);
    e.u64(l.site);
    e.u32(l.rtype);
    e.u32(l.stored);
}

fn get_live(d: &mut Dec<'_>) -> Result<Live, StateError> {
    Ok(Live {
        record: d.u64()?,
        offset: d.u64()?,
        bytes: d.u64()?,
        site: d.u64()?,
        rtype: d.u32()?,
        stored: d.u32()?,
    })
}

/// Bytes of one written [`Live`].
const LIVE: usize = 6;

/// The entries of a map sorted by key.
pub(super) fn sorted<K: Ord + Copy, V>(m: impl IntoIterator<Item = (K, V)>) -> Vec<(K, V)> {
    let mut v: Vec<(K, V)> = m.into_iter().collect();
    v.sort_unstable_by_key(|x| x.0);
    v
}

/// An order-independent digest of the entries of maps: each entry written as the state writes
/// it (into a scratch buffer) and hashed alone, the hashes summed (`mtf check -j N` compares
/// the interpreter a chunk's pass reaches with the one restored at the next checkpoint).
// Design: the canonical form sorts every map by its key (a sort of the live set) and was
// written twice per chunk; a sum of the entries' hashes is the same whatever order a map holds
// its entries in (a restored map is filled in key order, a pass's in the trace's), costs one
// pass over the live set without a sort or a copy of it, and differs where one entry differs
// (but for a collision of 64-bit hashes; the maps hold each key once, so a sum cannot cancel
// two equal entries). Each map's sum is written with its number of entries and a tag into an
// outer buffer with the state's scalars, and that buffer hashed.
#[derive(Default)]
pub(crate) struct Digest {
    outer: Enc,
    scratch: Enc,
}

/// One 64 × 64 → 128-bit multiply, folded: the mixing step of [`hash_bytes`].
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let r = u128::from(a) * u128::from(b);
    (r as u64) ^ ((r >> 64) as u64)
}

/// A 64-bit hash of `bytes` under `tag` (not a format's checksum: only compared within one
/// process).
const K0: u64 = 0xa076_1d64_78bd_642f;
const K1: u64 = 0xe703_7ed1_a0b4_28db;

fn hash_bytes(tag: u64, bytes: &[u8]) -> u64 {
    let mut h = fold(tag ^ K0, K1);
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut a = [0u8; 8];
        a.copy_from_slice(w);
        h = fold(h ^ u64::from_le_bytes(a), K1);
    }
    let rest = words.remainder();
    let mut a = [0u8; 8];
    a[..rest.len()].copy_from_slice(rest);
    h = fold(h ^ u64::from_le_bytes(a) ^ K0, K1);
    fold(h ^ bytes.len() as u64, K0 ^ K1)
}

impl Digest {
    /// The entries of a map (`put` writes one), in any order: their number and the sum of
    /// their hashes.
    pub(crate) fn bag<T>(
        &mut self,
        tag: u64,
        items: impl Iterator<Item = T>,
        put: impl Fn(&mut Enc, T),
    ) {
        let (mut sum, mut n) = (0u64, 0u64);
        for item in items {
            self.scratch.out.clear();
            put(&mut self.scratch, item);
            sum = sum.wrapping_add(hash_bytes(tag, &self.scratch.out));
            n += 1;
        }
        self.outer.u64(tag);
        self.outer.u64(n);
        self.outer.u64(sum);
    }

    /// As [`Digest::bag`] for entries of words, each hashed from its words themselves (not
    /// encoded first: a live set's digest is most of what `check -j N` adds per chunk).
    pub(crate) fn words_bag<W: IntoIterator<Item = u64>>(
        &mut self,
        tag: u64,
        items: impl Iterator<Item = W>,
    ) {
        let (mut sum, mut n) = (0u64, 0u64);
        for words in items {
            let (mut h, mut len) = (fold(tag ^ K0, K1), 0u64);
            for w in words {
                h = fold(h ^ w, K1);
                len += 1;
            }
            sum = sum.wrapping_add(fold(h ^ len, K0 ^ K1));
            n += 1;
        }
        self.outer.u64(tag);
        self.outer.u64(n);
        self.outer.u64(sum);
    }

    /// Where the state's scalars and sequences are written, in order.
    pub(crate) fn seq(&mut self) -> &mut Enc {
        &mut self.outer
    }

    /// The digest of everything given.
    pub(crate) fn finish(&self) -> u64 {
        hash_bytes(0, &self.outer.out)
    }
}

/// A block alive in an interpreter's state ([`Interpreter::live_blocks`]).
#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LiveBlock {
    pub(crate) key: u64,
    pub(crate) id: u64,
    pub(crate) bytes: u64,
    pub(crate) site: Option<u64>,
}

impl<'s> Interpreter<'s> {
    /// An interpreter for the same schema with the same limit that has read nothing.
    pub(crate) fn fresh(&self) -> Interpreter<'s> {
        let mut i = Interpreter::new(self.schema);
        i.limit = self.limit;
        i.dead_details = self.dead_details;
        i
    }

    /// The blocks alive now in namespace `space`, each id's oldest first (a shared id's blocks
    /// in the order they were defined): its key, id, byte count and site. What a reader of heap
    /// rows resumed at a checkpoint (`columnar::HeapRows::resumed`) takes as its live blocks.
    #[cfg_attr(not(feature = "parquet"), allow(dead_code))]
    pub(crate) fn live_blocks(&self, space: SpaceId) -> Vec<LiveBlock> {
        let sp = space as usize;
        let (Some(live), Some(shared)) = (self.live.get(sp), self.shared.get(sp)) else {
            return Vec::new();
        };
        let one = |(key, id): (u64, u64), l: &Live| LiveBlock {
            key,
            id,
            bytes: l.bytes,
            site: l.site(),
        };
        let mut out: Vec<LiveBlock> = live.iter().map(|(k, l)| one(*k, l)).collect();
        for (k, v) in shared.iter() {
            out.extend(v.iter().map(|l| one(k, l)));
        }
        out
    }

    /// Write the state that decides what the next records do (docs/format.md §15.4).
    pub(crate) fn save_state(&self, e: &mut Enc) {
        self.save_state_as(e, false);
    }

    /// What [`Interpreter::save_state`] writes, but with each live id's stored values in place
    /// of the number of its place, and no slab: the same for two interpreters that decide the
    /// same for the next records whether or not they numbered their blocks' places (`mtf check
    /// -j N` compared the state a chunk's pass reaches with the one stored at the checkpoint
    /// this way; it now compares [`Interpreter::semantic_digest`]s, which the tests hold to
    /// this form).
    #[cfg(test)]
    pub(crate) fn semantic_state(&self) -> Vec<u8> {
        let mut e = Enc::default();
        self.save_state_as(&mut e, true);
        e.out
    }

    /// A digest of what [`Interpreter::semantic_state`] writes, equal for two interpreters
    /// whose semantic states are equal whatever order their maps hold their entries in (see
    /// [`Digest`]): one pass over the live set, no sort.
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    pub(crate) fn semantic_digest(&self) -> u64 {
        let mut g = Digest::default();
        let n = self.decl.namespaces.len();
        g.seq().len(n);
        for sp in 0..n {
            let slab = &self.slabs[sp];
            // As the canonical form writes a live entry: its stored values in place of the
            // number of their place.
            let canon = |e: &mut Enc, l: &Live| {
                let mut c = *l;
                c.stored = 0;
                put_live(e, &c);
                for k in 0..slab.width {
                    e.opt(slab.get(l.stored, k));
                }
            };
            if slab.width == 0 {
                // Nothing stored: an entry's words are its canonical form (`put_live`); a
                // shared id's, its key and its blocks', the newest first.
                let words = |l: &Live| [l.record, l.offset, l.bytes, l.site, u64::from(l.rtype)];
                g.words_bag(
                    7,
                    self.live[sp]
                        .iter()
                        .map(|(k, l)| [k.0, k.1].into_iter().chain(words(l))),
                );
                g.words_bag(
                    8,
                    self.shared[sp]
                        .chains()
                        .map(|(k, c)| [k.0, k.1].into_iter().chain(c.flat_map(|l| words(&l)))),
                );
            } else {
                g.bag(1, self.live[sp].iter(), |e, (k, l)| {
                    e.u64(k.0);
                    e.u64(k.1);
                    canon(e, l);
                });
                g.bag(2, self.shared[sp].iter(), |e, (k, v)| {
                    e.u64(k.0);
                    e.u64(k.1);
                    e.len(v.len());
                    for l in &v {
                        canon(e, l);
                    }
                });
            }
            g.seq().u64(self.next_id[sp]);
            g.seq().u64(self.alive[sp]);
        }
        g.bag(3, self.stacks.iter(), |e, ((space, key), frames)| {
            e.u32(*space);
            e.u64(*key);
            e.len(frames.len());
            for f in frames {
                e.u64(f.id);
                put_at(e, f.at);
                e.opt(f.depth);
                e.u32(f.ctx);
            }
        });
        g.bag(4, self.names.iter(), |e, ((space, id), name)| {
            e.u32(*space);
            e.u64(*id);
            put_name(e, name);
        });
        g.bag(5, self.text_sites.iter(), |e, ((space, id), t)| {
            e.u32(*space);
            e.u64(*id);
            e.str(t);
        });
        g.bag(6, self.mono.iter(), |e, ((series, key), (v, at))| {
            e.u32(*series);
            e.u64(*key);
            e.u64(*v);
            put_at(e, *at);
        });
        let seq = g.seq();
        seq.len(self.mono0.len());
        for m in &self.mono0 {
            match m {
                None => seq.u8(0),
                Some((v, at)) => {
                    seq.u8(1);
                    seq.u64(*v);
                    put_at(seq, *at);
                }
            }
        }
        g.bag(7, self.nulled.iter(), |e, (space, key, id)| {
            e.u32(*space);
            e.u64(*key);
            e.u64(*id);
        });
        let seq = g.seq();
        seq.opt(self.clock);
        seq.u64(self.tracked as u64);
        seq.u8(self.stopped as u8);
        self.digest_stacks(&mut g);
        g.finish()
    }

    fn save_state_as(&self, e: &mut Enc, canonical: bool) {
        let n = self.decl.namespaces.len();
        e.len(n);
        for sp in 0..n {
            let slab = &self.slabs[sp];
            let put_live = |e: &mut Enc, l: &Live| {
                if canonical {
                    let mut c = *l;
                    c.stored = 0;
                    put_live(e, &c);
                    for k in 0..slab.width {
                        e.opt(slab.get(l.stored, k));
                    }
                } else {
                    put_live(e, l);
                }
            };
            let start = e.out.len();
            let live = sorted(self.live[sp].iter().map(|(k, v)| (*k, v)));
            e.len(live.len());
            let mut prev = (0, 0);
            for (k, l) in live {
                e.pair(&mut prev, k);
                put_live(e, l);
            }
            let shared = sorted(self.shared[sp].iter());
            e.len(shared.len());
            let mut prev = (0, 0);
            for (k, v) in shared {
                e.pair(&mut prev, k);
                e.len(v.len());
                for l in &v {
                    put_live(e, l);
                }
            }
            if self.decl.namespaces[sp].kind == SpaceKind::Ids {
                e.blocks += (e.out.len() - start) as u64;
            }
            if !canonical {
                e.len(slab.data.len());
                for x in &slab.data {
                    e.u64(*x);
                }
                e.len(slab.free.len());
                for x in &slab.free {
                    e.u32(*x);
                }
            }
            e.u64(self.next_id[sp]);
            e.u64(self.alive[sp]);
        }
        let stacks = sorted(self.stacks.iter().map(|(k, v)| (*k, v)));
        e.len(stacks.len());
        for ((space, key), frames) in stacks {
            e.u32(space);
            e.u64(key);
            e.len(frames.len());
            for f in frames {
                e.u64(f.id);
                put_at(e, f.at);
                e.opt(f.depth);
                e.u32(f.ctx);
            }
        }
        let names = sorted(self.names.iter().map(|(k, v)| (*k, v)));
        e.len(names.len());
        for ((space, id), name) in names {
            e.u32(space);
            e.u64(id);
            put_name(e, name);
        }
        let texts = sorted(self.text_sites.iter().map(|(k, v)| (*k, v)));
        e.len(texts.len());
        for ((space, id), t) in texts {
            e.u32(space);
            e.u64(id);
            e.str(t);
        }
        let mono = sorted(self.mono.iter().map(|(k, v)| (*k, v)));
        e.len(mono.len());
        for ((series, key), (v, at)) in mono {
            e.u32(series);
            e.u64(key);
            e.u64(*v);
            put_at(e, *at);
        }
        e.len(self.mono0.len());
        for m in &self.mono0 {
            match m {
                None => e.u8(0),
                Some((v, at)) => {
                    e.u8(1);
                    e.u64(*v);
                    put_at(e, *at);
                }
            }
        }
        let nulled = sorted(self.nulled.iter().map(|k| (*k, ())));
        e.len(nulled.len());
        for ((space, key, id), ()) in nulled {
            e.u32(space);
            e.u64(key);
            e.u64(id);
        }
        e.opt(self.clock);
        e.u64(self.tracked as u64);
        e.u8(self.stopped as u8);
        self.save_stacks(e);
    }

    /// Read back what [`Interpreter::save_state`] wrote, into an interpreter made for the same
    /// schema that has read nothing yet.
    pub(crate) fn restore_state(&mut self, d: &mut Dec<'_>) -> Result<(), StateError> {
        let n = d.count(1)?;
        if n != self.decl.namespaces.len() {
            return Err(d.error(format!(
                "{n} namespaces, the DTD declares {}",
                self.decl.namespaces.len()
            )));
        }
        let space_ok = |d: &Dec<'_>, s: SpaceId| {
            if (s as usize) < n {
                Ok(s)
            } else {
                Err(d.error(format!("namespace {s} is not declared")))
            }
        };
        for sp in 0..n {
            let count = d.count(2 + LIVE)?;
            let live = &mut self.live[sp];
            live.reserve(count);
            let mut prev = (0, 0);
            for i in 0..count {
                let k = d.pair(&mut prev, i == 0)?;
                live.insert(k, get_live(d)?);
            }
            let count = d.count(3)?;
            let mut prev = (0, 0);
            for i in 0..count {
                let k = d.pair(&mut prev, i == 0)?;
                let m = d.count(LIVE)?;
                let mut v = Vec::with_capacity(m);
                for _ in 0..m {
                    v.push(get_live(d)?);
                }
                self.shared[sp].set(k, v);
            }
            let width = self.slabs[sp].width;
            let count = d.count(1)?;
            let mut data = Vec::with_capacity(count);
            for _ in 0..count {
                data.push(d.u64()?);
            }
            if width == 0 && count != 0 || width != 0 && count % width != 0 {
                return Err(d.error("stored values that do not fill whole places"));
            }
            let count = d.count(1)?;
            let mut free = Vec::with_capacity(count);
            for _ in 0..count {
                free.push(d.u32()?);
            }
            // Places handed out so far: every stored place (whole places of values, or — where
            // the namespace stores none — the numbers its live ids and free places hold, which
            // `stats` keeps its figures at), so that the next place given out is a new one.
            let held = self.live[sp]
                .values()
                .copied()
                .chain(self.shared[sp].all())
                .map(|l| l.stored)
                .chain(free.iter().copied())
                .filter(|&p| p != super::state::NO_STORE)
                .map(|p| u64::from(p) + 1)
                .max()
                .unwrap_or(0);
            let len = match data.len().checked_div(width) {
                Some(n) => n as u64,
                None => held,
            };
            if held > len {
                return Err(d.error("a place beyond the stored values"));
            }
            let len = u32::try_from(len).map_err(|_| d.error("more than 2³² places"))?;
            self.slabs[sp] = Slab {
                width,
                data,
                free,
                len,
            };
            self.next_id[sp] = d.u64()?;
            self.alive[sp] = d.u64()?;
        }
        let count = d.count(3)?;
        for _ in 0..count {
            let space = d.u32()?;
            let space = space_ok(d, space)?;
            let key = d.u64()?;
            let m = d.count(6)?;
            let mut frames = Vec::with_capacity(m);
            for _ in 0..m {
                frames.push(Frame {
                    id: d.u64()?,
                    at: get_at(d)?,
                    depth: d.opt()?,
                    ctx: d.u32()?,
                });
            }
            self.stacks.insert((space, key), frames);
        }
        let count = d.count(3)?;
        for _ in 0..count {
            let space = d.u32()?;
            let k = (space_ok(d, space)?, d.u64()?);
            self.names.insert(k, get_name(d)?);
        }
        let count = d.count(3)?;
        for _ in 0..count {
            let space = d.u32()?;
            let k = (space_ok(d, space)?, d.u64()?);
            self.text_sites.insert(k, d.str()?.into());
        }
        let count = d.count(6)?;
        for _ in 0..count {
            let k = (d.u32()?, d.u64()?);
            self.mono.insert(k, (d.u64()?, get_at(d)?));
        }
        let count = d.count(1)?;
        self.mono0 = Vec::with_capacity(count);
        for _ in 0..count {
            let m = if d.flag()? {
                Some((d.u64()?, get_at(d)?))
            } else {
                None
            };
            self.mono0.push(m);
        }
        let count = d.count(3)?;
        for _ in 0..count {
            let space = d.u32()?;
            let k = (space_ok(d, space)?, d.u64()?, d.u64()?);
            self.nulled.insert(k);
        }
        self.clock = d.opt()?;
        self.tracked = usize::try_from(d.u64()?).map_err(|_| d.error("too many entries"))?;
        self.stopped = d.flag()?;
        // Every entry that can end counts in `tracked` and (but a table's) in its namespace's
        // ids alive: fewer would make an end take more than there is.
        let mut total = 0u64;
        for sp in 0..n {
            let frames: usize = self
                .stacks
                .iter()
                .filter(|((s, _), _)| *s as usize == sp)
                .map(|(_, v)| v.len())
                .sum();
            let shared: usize = self.shared[sp].blocks();
            let live = self.live[sp].len();
            let table = self.decl.namespaces[sp].kind == SpaceKind::Table;
            let alive = if table { 0 } else { live } + shared + frames;
            if self.alive[sp] < alive as u64 {
                return Err(d.error(format!(
                    "namespace {sp}: {} ids alive, {alive} entries",
                    self.alive[sp]
                )));
            }
            total += (live + shared + frames) as u64;
        }
        if (self.tracked as u64) < total {
            return Err(d.error(format!("{} entries tracked, {total} held", self.tracked)));
        }
        self.restore_stacks(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::check::Check;
    use crate::decode::Event;
    use crate::index::analysis::Dec;

    fn bag_of(v: &[(u64, u64)]) -> u64 {
        let mut g = Digest::default();
        g.bag(1, v.iter(), |e, (a, b)| {
            e.u64(*a);
            e.u64(*b);
        });
        g.finish()
    }

    /// A map's entries digested in any order give one digest; one entry changed, removed or
    /// added, or two entries' values swapped, another.
    #[test]
    fn a_bag_is_the_same_in_any_order_and_differs_with_one_entry() {
        let items: Vec<(u64, u64)> = (0..1000u64).map(|i| (i * 7919 % 1009, i * i)).collect();
        let d = bag_of(&items);
        let mut rev = items.clone();
        rev.reverse();
        assert_eq!(bag_of(&rev), d);
        let mut rot = items.clone();
        rot.rotate_left(333);
        assert_eq!(bag_of(&rot), d);
        for i in [0, 1, 500, 999] {
            let mut x = items.clone();
            x[i].1 += 1;
            assert_ne!(bag_of(&x), d, "entry {i} changed");
        }
        assert_ne!(bag_of(&items[1..]), d);
        let mut more = items.clone();
        more.push((5000, 1));
        assert_ne!(bag_of(&more), d);
        let mut swapped = items.clone();
        let (a, b) = (swapped[1].1, swapped[2].1);
        swapped[1].1 = b;
        swapped[2].1 = a;
        assert_ne!(bag_of(&swapped), d);
        // The same entries under another tag (another map) are another digest.
        let mut g = Digest::default();
        g.bag(2, items.iter(), |e, (a, b)| {
            e.u64(*a);
            e.u64(*b);
        });
        assert_ne!(g.finish(), d);
        // Entries of words hashed as they are: the same in any order, another with one word
        // changed or under another tag.
        let words = |v: &[(u64, u64)], tag| {
            let mut g = Digest::default();
            g.words_bag(tag, v.iter().map(|&(a, b)| [a, b]));
            g.finish()
        };
        let w = words(&items, 7);
        assert_eq!(words(&rev, 7), w);
        assert_eq!(words(&rot, 7), w);
        assert_ne!(words(&swapped, 7), w);
        assert_ne!(words(&items[1..], 7), w);
        assert_ne!(words(&items, 8), w);
        for i in [0, 1, 500, 999] {
            let mut x = items.clone();
            x[i].0 += 1;
            assert_ne!(words(&x, 7), w, "entry {i} changed");
        }
    }

    /// A live block's every word is in the digest (the words of a namespace that stores
    /// nothing are hashed as they are, `Digest::words_bag`): a restored interpreter with one
    /// word of one live block changed has another digest, in a namespace of ids and in a
    /// shared one (its newest holder of an id, and the one below).
    #[test]
    fn every_word_of_a_live_block_is_digested() {
        let changes: [fn(&mut Live); 5] = [
            |l| l.record += 1,
            |l| l.offset += 1,
            |l| l.bytes += 1,
            |l| l.site ^= 1,
            |l| l.rtype ^= 1,
        ];
        let (mut plain, mut shared, mut below) = (0, 0, 0);
        // Blocks sharing an allocation info's id (heaptrack's form), two of them on one id.
        let dir = format!("{}/benches", env!("CARGO_MANIFEST_DIR"));
        let dtd = std::path::Path::new(&dir).join("bench-heaptrack.dtd");
        let text = "%mtf 1 dtd=\"bench-heaptrack.dtd\" class=64 order=little\n\
                    section number=1\nallocInfo size=16 trace=1\nallocInfo size=32 trace=2\n\
                    alloc info=0\nalloc info=1\nalloc info=0\ntimestamp ms=5\n";
        let dtd_text = std::fs::read_to_string(&dtd).expect("the DTD");
        let schema = crate::dtd::parse_str("bench-heaptrack.dtd", &dtd_text)
            .expect("parses")
            .schema;
        let bytes =
            crate::pack::pack_to_vec(&schema, text.as_bytes(), crate::text::InputFormat::Text)
                .expect("packs");
        let shared_trace = crate::OpenOptions::default()
            .dtd(dtd)
            .open_bytes(bytes)
            .expect("opens");
        let android = format!("{}/traces/android.mtf", env!("CARGO_MANIFEST_DIR"));
        let android = crate::open(&android).expect("a shipped trace");
        for (name, o) in [("android", &android), ("shared", &shared_trace)] {
            let reader = o.reader();
            let mut check = Check::new(o.schema());
            let mut records = reader.records();
            while let Some(e) = records.next() {
                if let Event::Record(v) = e {
                    check.record(&v);
                }
            }
            let i = check.interpreter();
            let digest = i.semantic_digest();
            let mut e = Enc::default();
            i.save_state(&mut e);
            for sp in (0..i.live.len()).filter(|&sp| i.slabs[sp].width == 0) {
                for (k, change) in changes.iter().enumerate() {
                    for depth in 0..3 {
                        let mut fresh = i.fresh();
                        fresh
                            .restore_state(&mut Dec::new(&e.out))
                            .expect("restores");
                        assert_eq!(fresh.semantic_digest(), digest);
                        let changed = match depth {
                            0 => fresh.live[sp].values_mut().next().map(change).is_some(),
                            _ => fresh.shared[sp].change_some(depth - 1, change),
                        };
                        if !changed {
                            continue;
                        }
                        *[&mut plain, &mut shared, &mut below][depth] += 1;
                        assert_ne!(fresh.semantic_digest(), digest, "{name}: word {k}");
                    }
                }
            }
        }
        assert!(
            plain > 0 && shared > 0 && below > 0,
            "{plain} {shared} {below}"
        );
    }

    /// Along shipped traces, at each of their first 2000 records: the interpreter saved and restored into a
    /// fresh one (its maps filled in key order, not the trace's) has the same digest, and two
    /// interpreters' digests are equal exactly where their canonical states are.
    #[test]
    fn digests_equal_exactly_where_semantic_states_are() {
        for name in ["heaptrack.mtf", "android.mtf", "et3.mtf"] {
            let path = format!("{}/traces/{name}", env!("CARGO_MANIFEST_DIR"));
            let o = crate::open(&path).expect("a shipped trace");
            let reader = o.reader();
            let mut check = Check::new(o.schema());
            let mut records = reader.records();
            let (mut n, mut differ, mut same) = (0u64, 0, 0);
            let mut prev: Option<(Vec<u8>, u64)> = None;
            while let Some(e) = records.next() {
                let Event::Record(v) = e else { continue };
                check.record(&v);
                n += 1;
                if n > 2000 {
                    break;
                }
                let i = check.interpreter();
                let (state, digest) = (i.semantic_state(), i.semantic_digest());
                let mut e = Enc::default();
                i.save_state(&mut e);
                let mut fresh = i.fresh();
                fresh
                    .restore_state(&mut Dec::new(&e.out))
                    .expect("restores");
                assert_eq!(fresh.semantic_state(), state, "{name} at {n}");
                assert_eq!(fresh.semantic_digest(), digest, "{name} at {n}");
                if let Some((s, d)) = &prev {
                    assert_eq!(*s == state, *d == digest, "{name} at {n}");
                    if *s == state {
                        same += 1;
                    } else {
                        differ += 1;
                    }
                }
                prev = Some((state, digest));
            }
            assert!(differ >= 10, "{name}: {differ} states differ, {same} equal");
        }
    }
}
