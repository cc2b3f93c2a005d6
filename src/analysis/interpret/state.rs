//! The interpreter's state of ids: live blocks, stored values, open levels, recently undefined ids.

use foldhash::HashMap;

use crate::dtd::analysis::{Severity, SpaceId};
use crate::dtd::RecordId;

use super::finding::At;

// Design (tables): the state is what `mtf check` and `mtf stats` hold for every live id, so
// its entries are packed: one map per namespace keyed by (key, id) (16 bytes, hashed as two
// words), whose values hold the defining record's index, offset and type, the byte count and
// the site in 40 bytes (`Live`); the values a namespace stores with its ids (`stored`) live
// in one slab per namespace, reused as ids die, so that a define allocates nothing. The
// record type shares its word with the flag "has a site": a schema has fewer than 2³¹ record
// types (each takes far more than one byte of DTD).
/// A live id.
#[derive(Debug, Clone, Copy)]
pub(super) struct Live {
    pub(super) record: u64,
    pub(super) offset: u64,
    pub(super) bytes: u64,
    /// The site, where `rtype`'s top bit says there is one.
    pub(super) site: u64,
    /// The defining record's type, and [`HAS_SITE`].
    pub(super) rtype: u32,
    /// Its place in the namespace's slab ([`NO_STORE`]: none): where its stored values are,
    /// and, in a namespace of ids, the block's number among the live ones (`Places`).
    pub(super) stored: u32,
}

pub(super) const HAS_SITE: u32 = 1 << 31;
pub(super) const NO_STORE: u32 = u32::MAX;

impl Live {
    pub(super) fn new(at: At, bytes: u64, site: Option<u64>, stored: u32) -> Live {
        Live {
            record: at.record,
            offset: at.offset,
            bytes,
            site: site.unwrap_or(0),
            rtype: (at.record_type & !HAS_SITE) | if site.is_some() { HAS_SITE } else { 0 },
            stored,
        }
    }

    pub(super) fn at(&self) -> At {
        At {
            record: self.record,
            offset: self.offset,
            record_type: self.rtype & !HAS_SITE,
        }
    }

    pub(super) fn site(&self) -> Option<u64> {
        (self.rtype & HAS_SITE != 0).then_some(self.site)
    }
}

/// The places of a namespace's live ids: the values each stores (`size.stored = block;`),
/// `width` per id, in one vector, and for a namespace of ids a number for each live block, which
/// `stats` uses to find the block's figures without a look-up of its own (see `Places`); the
/// places of dead ids are reused.
#[derive(Debug, Default)]
pub(super) struct Slab {
    pub(super) width: usize,
    pub(super) data: Vec<u64>,
    pub(super) free: Vec<u32>,
    /// Places handed out so far (used or free).
    pub(super) len: u32,
}

impl Slab {
    /// A place for one id's values ([`NO_STORE`] in the impossible case of more than 2³²
    /// places).
    pub(super) fn put(&mut self) -> u32 {
        if self.width == 0 {
            // Numbers only (most namespaces store no values): nothing to make or to zero.
            return match self.free.pop() {
                Some(i) => i,
                None if self.len == NO_STORE => NO_STORE,
                None => {
                    self.len += 1;
                    self.len - 1
                }
            };
        }
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                if self.len == NO_STORE {
                    return NO_STORE;
                }
                let i = self.len;
                self.len += 1;
                self.data.resize(self.data.len() + self.width, 0);
                i
            }
        };
        let start = i as usize * self.width;
        if let Some(place) = self.data.get_mut(start..start + self.width) {
            place.fill(0);
        }
        i
    }

    pub(super) fn set(&mut self, i: u32, k: usize, v: u64) {
        if i != NO_STORE && k < self.width {
            if let Some(d) = self.data.get_mut(i as usize * self.width + k) {
                *d = v;
            }
        }
    }

    pub(super) fn get(&self, i: u32, k: usize) -> Option<u64> {
        if i == NO_STORE || k >= self.width {
            return None;
        }
        self.data.get(i as usize * self.width + k).copied()
    }

    pub(super) fn release(&mut self, i: u32) {
        if i != NO_STORE {
            self.free.push(i);
        }
    }
}

/// The blocks holding each id of a shared namespace (heaptrack's allocation-info index: many
/// live blocks hold one id at once), by (key, id): the newest in the map, each older one in a
/// pool, linked from the one above it.
// Design: the newest holder is the one a free or a reference takes, so it lives in the map's
// entry itself: a free reads one entry, as in a namespace that is not shared, rather than the
// entry and then a vector of holders allocated per id (a second cache miss, and an allocation
// per id). The older holders wait in pools, reused as they come back up. The holders are
// most of the memory on a recording with many blocks alive (heaptrack's: 1.9 M blocks under
// some 10⁴ infos), and the blocks of one id nearly always have the byte count, site and
// record type of the block above them (those of the info they refer to): such a block waits
// in a thin pool as its record, offset and number alone, and takes the rest back from the
// block above it when it comes up: 16 bytes, not 48, where the record index and the offset
// each fit in 32 bits (a trace of up to 4 GiB: heaptrack's recordings), else 20 where they fit
// in 40 and 56 bits; past those a block waits whole. Any other waits whole in the full pool.
#[derive(Debug, Default)]
pub(super) struct Holders {
    /// The newest block holding each id, and the link to the one below it ([`Link`]).
    map: HashMap<(u64, u64), (Live, u32)>,
    /// Older blocks that differ from the one above them, each with its link below.
    pool: Vec<(Live, u32)>,
    /// Older blocks with the byte count, site and record type of the one above them: those
    /// whose record index and offset fit in 32 bits each, and the others.
    narrow: Vec<Thin<Narrow>>,
    thin: Vec<Thin<Wide>>,
    /// The places of each pool given back: 1 + the index of the latest (0: none), each
    /// linking to the one given back before it through its link below ([`Free`]).
    free: Free,
    free_narrow: Free,
    free_thin: Free,
}

/// A pool's places given back, listed through the places themselves: no memory of its own.
#[derive(Debug, Default, Clone, Copy)]
struct Free {
    /// 1 + the index of the latest place given back (0: none).
    head: u32,
    /// How many.
    len: usize,
}

/// An entry of a pool, with the link that lists it among the places given back.
trait Linked {
    fn link(&mut self) -> &mut u32;
}

impl Linked for (Live, u32) {
    fn link(&mut self) -> &mut u32 {
        &mut self.1
    }
}

impl<A> Linked for Thin<A> {
    fn link(&mut self) -> &mut u32 {
        &mut self.below
    }
}

/// A block below another of the same byte count, site and record type: what it has of its own,
/// its record's index and byte offset packed in `A` ([`Narrow`], 16 bytes in all, or [`Wide`],
/// 20).
#[derive(Debug, Clone, Copy)]
struct Thin<A> {
    at: A,
    stored: u32,
    /// The link to the block below it ([`Link`]).
    below: u32,
}

/// A record index and an offset packed, where they fit.
trait Packed: Sized + Copy {
    fn pack(record: u64, offset: u64) -> Option<Self>;
    fn record(&self) -> u64;
    fn offset(&self) -> u64;
}

/// A record index and an offset of 32 bits each, in one word (the record the low half).
#[derive(Debug, Clone, Copy)]
struct Narrow(u64);

impl Packed for Narrow {
    fn pack(record: u64, offset: u64) -> Option<Narrow> {
        let r = u32::try_from(record).ok()?;
        let o = u32::try_from(offset).ok()?;
        Some(Narrow(u64::from(r) | u64::from(o) << 32))
    }

    fn record(&self) -> u64 {
        self.0 & u64::from(u32::MAX)
    }

    fn offset(&self) -> u64 {
        self.0 >> 32
    }
}

/// A record index of [`Wide::RECORD_BITS`] bits (the low ones) and an offset of the other 56,
/// as three 32-bit words, the low first.
#[derive(Debug, Clone, Copy)]
struct Wide([u32; 3]);

impl Wide {
    /// The bits of a record index it holds: a trillion records; its offset has the other 56
    /// (64 PiB). A block past either waits in the full pool.
    const RECORD_BITS: u32 = 40;

    fn packed(&self) -> u128 {
        let [a, b, c] = self.0.map(u128::from);
        a | b << 32 | c << 64
    }
}

impl Packed for Wide {
    fn pack(record: u64, offset: u64) -> Option<Wide> {
        if record >> Wide::RECORD_BITS != 0 || offset >> (96 - Wide::RECORD_BITS) != 0 {
            return None;
        }
        let x = u128::from(record) | u128::from(offset) << Wide::RECORD_BITS;
        Some(Wide([x as u32, (x >> 32) as u32, (x >> 64) as u32]))
    }

    fn record(&self) -> u64 {
        (self.packed() & ((1 << Wide::RECORD_BITS) - 1)) as u64
    }

    fn offset(&self) -> u64 {
        (self.packed() >> Wide::RECORD_BITS) as u64
    }
}

impl<A: Packed> Thin<A> {
    fn new(record: u64, offset: u64, stored: u32, below: u32) -> Option<Thin<A>> {
        Some(Thin {
            at: A::pack(record, offset)?,
            stored,
            below,
        })
    }

    /// The block it is, under `above`.
    fn under(&self, above: &Live) -> Live {
        Live {
            record: self.at.record(),
            offset: self.at.offset(),
            stored: self.stored,
            ..*above
        }
    }
}

/// A link to the block below one: 0 for none, else 1 + an index into `Holders::pool`, or
/// [`Link::THIN`] + 1 + an index into `Holders::thin`, or [`Link::NARROW`] + 1 + an index into
/// `Holders::narrow`.
pub(super) struct Link;

impl Link {
    const THIN: u32 = 1 << 31;
    const NARROW: u32 = Link::THIN | 1 << 30;
    /// The most blocks a pool holds: an index + 1 stays under [`Link::THIN`]. The full pool
    /// never reaches it: the interpreter tracks at most `MAX_TRACKED` (2³¹ − 1) entries.
    #[cfg(test)]
    pub(super) const MAX: usize = (Link::THIN - 1) as usize;
    /// The most blocks a thin pool holds (an index + 1 stays under 2³⁰); past it, a block
    /// waits in the next wider pool.
    const THIN_MAX: usize = (1 << 30) - 1;

    /// Which pool link `below` points into, and the index there (`None`: no block).
    fn target(below: u32) -> Option<(Pool, u32)> {
        let (pool, base) = if below & Link::NARROW == Link::NARROW {
            (Pool::Narrow, Link::NARROW)
        } else if below & Link::THIN != 0 {
            (Pool::Thin, Link::THIN)
        } else {
            (Pool::Full, 0)
        };
        Some((pool, (below - base).checked_sub(1)?))
    }
}

/// The pools a [`Link`] points into.
enum Pool {
    Full,
    Thin,
    Narrow,
}

impl Holders {
    /// `live` holds the id too, the newest.
    pub(super) fn push(&mut self, k: (u64, u64), live: Live) {
        use std::collections::hash_map::Entry;
        match self.map.entry(k) {
            Entry::Occupied(mut e) => {
                let (old, below) = *e.get();
                let same =
                    old.bytes == live.bytes && old.site == live.site && old.rtype == live.rtype;
                let room = |pool: usize, free: &Free| pool < Link::THIN_MAX || free.len > 0;
                let (r, o, n) = (old.record, old.offset, old.stored);
                let narrow = (same && room(self.narrow.len(), &self.free_narrow))
                    .then(|| Thin::new(r, o, n, below))
                    .flatten();
                let thin = (same && narrow.is_none() && room(self.thin.len(), &self.free_thin))
                    .then(|| Thin::new(r, o, n, below))
                    .flatten();
                let link = match (narrow, thin) {
                    (Some(t), _) => {
                        Link::NARROW + 1 + put(&mut self.narrow, &mut self.free_narrow, t)
                    }
                    (_, Some(t)) => Link::THIN + 1 + put(&mut self.thin, &mut self.free_thin, t),
                    _ => 1 + put(&mut self.pool, &mut self.free, (old, below)),
                };
                *e.get_mut() = (live, link);
            }
            Entry::Vacant(e) => {
                e.insert((live, 0));
            }
        }
    }

    /// Takes the newest block holding the id.
    pub(super) fn pop(&mut self, k: (u64, u64)) -> Option<Live> {
        use std::collections::hash_map::Entry;
        let Entry::Occupied(mut e) = self.map.entry(k) else {
            return None;
        };
        let (top, below) = *e.get();
        match read(&self.pool, &self.thin, &self.narrow, &top, below) {
            Some(next) => {
                *e.get_mut() = next;
                // The place below is given back.
                match Link::target(below) {
                    Some((Pool::Narrow, i)) => release(&mut self.narrow, &mut self.free_narrow, i),
                    Some((Pool::Thin, i)) => release(&mut self.thin, &mut self.free_thin, i),
                    Some((Pool::Full, i)) => release(&mut self.pool, &mut self.free, i),
                    None => {}
                }
            }
            None => {
                e.remove();
            }
        }
        Some(top)
    }

    /// The block at link `below` under `above`, whole, and the link below it (`None`: no
    /// block).
    fn read(&self, above: &Live, below: u32) -> Option<(Live, u32)> {
        read(&self.pool, &self.thin, &self.narrow, above, below)
    }

    /// The blocks holding the id, the newest first.
    pub(super) fn chain(&self, k: (u64, u64)) -> impl Iterator<Item = Live> + '_ {
        self.map
            .get(&k)
            .into_iter()
            .flat_map(move |&(top, below)| self.down(top, below))
    }

    /// `top`, then the blocks from link `below` down.
    fn down(&self, top: Live, below: u32) -> impl Iterator<Item = Live> + '_ {
        let mut next = Some((top, below));
        std::iter::from_fn(move || {
            let (l, b) = next?;
            next = self.read(&l, b);
            Some(l)
        })
    }

    /// Each id with its blocks, the newest first (nothing allocated).
    pub(super) fn chains(
        &self,
    ) -> impl Iterator<Item = ((u64, u64), impl Iterator<Item = Live> + '_)> + '_ {
        self.map
            .iter()
            .map(move |(k, &(top, below))| (*k, self.down(top, below)))
    }

    /// Changes the block `depth` below the newest of some id with `f` (for the digest's tests);
    /// false where there is none so deep.
    #[cfg(test)]
    pub(super) fn change_some(&mut self, depth: usize, f: impl FnOnce(&mut Live)) -> bool {
        // The least id with a block so deep (not the map's first, whose place varies with the
        // hasher's seed from run to run: the test of the digest failed in one run of two).
        let Some(k) = self
            .map
            .keys()
            .copied()
            .filter(|&k| self.chain(k).nth(depth).is_some())
            .min()
        else {
            return false;
        };
        let mut v: Vec<Live> = self.chain(k).collect();
        let Some(l) = v.get_mut(depth) else {
            return false;
        };
        f(l);
        v.reverse();
        self.set(k, v);
        true
    }

    /// The newest block holding the id.
    pub(super) fn last(&self, k: (u64, u64)) -> Option<&Live> {
        self.map.get(&k).map(|(l, _)| l)
    }

    /// Ids held.
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    /// Blocks holding an id.
    pub(super) fn blocks(&self) -> usize {
        self.map.len() + self.pool.len() - self.free.len + self.thin.len() - self.free_thin.len
            + self.narrow.len()
            - self.free_narrow.len
    }

    /// Each id with its blocks, the oldest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = ((u64, u64), Vec<Live>)> + '_ {
        self.chains().map(|(k, c)| {
            let mut v: Vec<Live> = c.collect();
            v.reverse();
            (k, v)
        })
    }

    /// Every block holding an id, in no order.
    pub(super) fn all(&self) -> impl Iterator<Item = Live> + '_ {
        self.chains().flat_map(|(_, c)| c)
    }

    /// Makes `v` (the oldest first) the blocks holding the id, in place of any it had.
    pub(super) fn set(&mut self, k: (u64, u64), v: Vec<Live>) {
        while self.pop(k).is_some() {}
        for l in v {
            self.push(k, l);
        }
    }
}

/// The block at link `below` under `above` in these pools, whole, and the link below it
/// (`None`: no block).
fn read(
    pool: &[(Live, u32)],
    thin: &[Thin<Wide>],
    narrow: &[Thin<Narrow>],
    above: &Live,
    below: u32,
) -> Option<(Live, u32)> {
    match Link::target(below)? {
        (Pool::Narrow, i) => narrow.get(i as usize).map(|t| (t.under(above), t.below)),
        (Pool::Thin, i) => thin.get(i as usize).map(|t| (t.under(above), t.below)),
        (Pool::Full, i) => pool.get(i as usize).copied(),
    }
}

/// Puts `x` in a place of `pool` given back, or at its end; returns its index.
fn put<T: Linked>(pool: &mut Vec<T>, free: &mut Free, x: T) -> u32 {
    if let Some(p) = free
        .head
        .checked_sub(1)
        .and_then(|i| pool.get_mut(i as usize))
    {
        let i = free.head - 1;
        free.head = *p.link();
        free.len -= 1;
        *p = x;
        return i;
    }
    pool.push(x);
    (pool.len() - 1) as u32
}

/// Gives place `i` of `pool` back.
fn release<T: Linked>(pool: &mut [T], free: &mut Free, i: u32) {
    if let Some(p) = pool.get_mut(i as usize) {
        *p.link() = free.head;
        free.head = i + 1;
        free.len += 1;
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Frame {
    pub(super) id: u64,
    pub(super) at: At,
    /// The value of its depth field, where declared.
    pub(super) depth: Option<u64>,
    /// Its calling-context node (extension stacks/1; `stacks::ROOT` when none is kept).
    pub(super) ctx: u32,
}

/// How many undefined ids are remembered, to tell a double free or a use after a free from an
/// id that was never defined: 2¹⁶ (65,536), the most recent.
pub const DEAD_REMEMBERED: usize = 1 << 16;

pub(crate) type DeadKey = (SpaceId, u64, u64);

/// The most ids remembered as naming null (`F.leaves = null;`); beyond, an id is forgotten
/// as any undefined one is, so memory stays bounded.
pub(super) const MAX_NULLED: usize = 1 << 20;

/// The ids undefined recently: for an id that is not alive, the record that undefined it, if
/// that was one of the last [`DEAD_REMEMBERED`] undefines (and the id was not undefined before
/// that within the window: see `Dead::bury_eager`).
// Design: a valid trace never asks (only an id that is not alive is looked up), yet keeping a
// map of the recently undefined ids costs two random memory accesses per free (the insert and
// the eviction of the oldest), which were most of `mtf check`'s semantic pass. So the undefines
// are first only appended to a ring of the last 2·DEAD_REMEMBERED, in order; the map is built
// on the first look-up by replaying the ring through the same insert-and-evict rule, and kept
// from then on as before. The replay gives the map the eager rule would have: an entry of the
// map is inserted by one of the last DEAD_REMEMBERED undefines, and what evicts it is one of the
// DEAD_REMEMBERED before those, all in the ring (an entry evicted longer ago was removed, since
// record indices only grow; should one ever go back, the map is built at that point, while the
// replay is still exact). Memory stays bounded as before.
/// One undefine in `Dead`'s ring, packed (40 bytes).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Buried {
    pub(super) key: u64,
    pub(super) id: u64,
    pub(super) record: u64,
    pub(super) offset: u64,
    pub(super) space: SpaceId,
    pub(super) record_type: RecordId,
}

impl Buried {
    pub(super) fn new((space, key, id): DeadKey, at: At) -> Buried {
        Buried {
            key,
            id,
            record: at.record,
            offset: at.offset,
            space,
            record_type: at.record_type,
        }
    }

    pub(super) fn unpack(self) -> (DeadKey, At) {
        (
            (self.space, self.key, self.id),
            At {
                record: self.record,
                offset: self.offset,
                record_type: self.record_type,
            },
        )
    }
}

#[derive(Debug, Default)]
pub(super) struct Dead {
    /// The last 2·DEAD_REMEMBERED undefines, oldest first, while `map` is not built.
    pub(super) ring: std::collections::VecDeque<Buried>,
    /// The record index of the last undefine.
    pub(super) last: u64,
    /// Once built: the remembered ids and, oldest first, the last DEAD_REMEMBERED undefines.
    pub(super) map: Option<(HashMap<DeadKey, At>, std::collections::VecDeque<DeadKey>)>,
    /// A pass over one chunk of a trace (`mtf check -j N`): its undefines (the first and the
    /// last of them, read from the ring while there is one: [`DeadJournal`]), and for each
    /// look-up (a finding of an id not
    /// alive), how many undefines came before it and the severity the DTD declares for the
    /// finding (see [`DeadRing`]).
    pub(super) journal: Option<DeadJournal>,
    /// While `map` is not built, from the first look-up on: how many of the last
    /// DEAD_REMEMBERED undefines fall in each bucket (see [`DeadFilter`]).
    filter: Option<DeadFilter>,
    /// Look-ups answered by reading the ring (the filter could not rule the id out).
    scans: u32,
}

/// Look-ups answered from `Dead`'s ring before its map is built: past this many, the map is
/// built (many frees of recently freed ids: double frees).
const MAX_RING_SCANS: u32 = 128;

// Design (look-ups without the map): a trace that starts late frees ids it never saw, one per
// thousand records or so on some shapes; each such look-up used to build `Dead`'s map, after
// which every free cost an insert and an eviction in it (about a tenth of `mtf check`). An id
// is remembered only if one of the last DEAD_REMEMBERED undefines was of it, so a counting
// filter over those (2²⁰ one-byte counters, 1 MiB, one bucket per id by a seeded hash; a
// counter that reaches 255 stays there and is never decremented, which only makes it answer
// "maybe") answers most look-ups of ids never freed with one read. Where it cannot rule the id
// out, the ring itself is read (`Dead::in_ring`: the eager rule as a formula, as in
// `DeadRing::resolve`), and after MAX_RING_SCANS of those the map is built as before. The
// filter exists only once a look-up came, so a valid trace pays nothing for it; the answers
// are the eager rule's (tests below).
/// The counting filter of `Dead` (see the design note above).
#[derive(Debug)]
pub(super) struct DeadFilter {
    counts: Box<[u8]>,
    hasher: foldhash::fast::RandomState,
}

const FILTER_BITS: u32 = 20;

impl DeadFilter {
    fn new() -> DeadFilter {
        DeadFilter {
            counts: vec![0u8; 1 << FILTER_BITS].into_boxed_slice(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    #[inline]
    fn bucket(&self, k: DeadKey) -> usize {
        use std::hash::BuildHasher;
        (self.hasher.hash_one(k) >> (64 - FILTER_BITS)) as usize
    }

    #[inline]
    fn add(&mut self, k: DeadKey) {
        let b = self.bucket(k);
        let c = &mut self.counts[b];
        *c = c.saturating_add(1);
    }

    #[inline]
    fn remove(&mut self, k: DeadKey) {
        let b = self.bucket(k);
        let c = &mut self.counts[b];
        // A saturated counter lost its count: it stays (an answer of "maybe").
        if *c != u8::MAX {
            *c = c.saturating_sub(1);
        }
    }

    #[inline]
    fn may_hold(&self, k: DeadKey) -> bool {
        self.counts[self.bucket(k)] != 0
    }
}

impl Dead {
    /// An empty memory of undefines that keeps a journal ([`Dead::journal`]).
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    pub(super) fn journaled() -> Dead {
        Dead {
            journal: Some(DeadJournal::default()),
            ..Dead::default()
        }
    }

    /// Remember an undefine (the common case, the ring alone, inline; the rest apart).
    #[inline]
    pub(super) fn bury(&mut self, k: DeadKey, at: At) {
        // The ring full (one out, one in), or with room for one more.
        let n = self.ring.len();
        let room = n >= 2 * DEAD_REMEMBERED || n < self.ring.capacity();
        let plain = room
            && self.map.is_none()
            && at.record >= self.last
            && self.filter.is_none()
            && self.journal.is_none();
        if !plain {
            return self.bury_slow(k, at);
        }
        self.last = at.record;
        if n >= 2 * DEAD_REMEMBERED {
            self.ring.pop_front();
        }
        self.ring.push_back(Buried::new(k, at));
    }

    #[inline(never)]
    fn bury_slow(&mut self, k: DeadKey, at: At) {
        if self.map.is_none() && at.record < self.last {
            self.build();
        }
        self.last = at.record;
        match &mut self.map {
            Some((map, order)) => {
                if let Some(j) = &mut self.journal {
                    j.push(Buried::new(k, at));
                }
                Dead::bury_eager(map, order, k, at);
            }
            None => {
                // It grows with the trace's undefines (a small trace's memory stays small).
                if self.ring.len() >= 2 * DEAD_REMEMBERED {
                    self.ring.pop_front();
                }
                self.ring.push_back(Buried::new(k, at));
                if let Some(f) = &mut self.filter {
                    f.add(k);
                    // The undefine that just left the last DEAD_REMEMBERED.
                    let n = self.ring.len();
                    if n > DEAD_REMEMBERED {
                        if let Some(old) = self.ring.get(n - 1 - DEAD_REMEMBERED) {
                            f.remove((old.space, old.key, old.id));
                        }
                    }
                }
                if let Some(j) = &mut self.journal {
                    j.count += 1;
                    // The ring holds every undefine of the chunk so far.
                    if j.count == DEAD_OWN && !j.asks.is_empty() {
                        j.head = self.ring.iter().take(j.asked_within()).copied().collect();
                    }
                }
            }
        }
    }

    /// The journal kept since it was started on this `Dead` (before its first undefine), with
    /// the ring of the last undefines in it: the pass is over.
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    pub(super) fn take_journal(&mut self) -> DeadJournal {
        let Some(mut j) = self.journal.take() else {
            return DeadJournal::default();
        };
        if self.map.is_none() {
            j.tail = std::mem::take(&mut self.ring);
        }
        // Every undefine of the chunk is in the tail: its first are read from there.
        j.head_in_tail = j.count <= DEAD_OWN;
        j
    }

    /// The rule: the oldest of the last DEAD_REMEMBERED undefines is forgotten (its id's
    /// entry removed, unless that entry is newer than the undefine being added), then the id is
    /// remembered with the record that undefined it.
    pub(super) fn bury_eager(
        map: &mut HashMap<DeadKey, At>,
        order: &mut std::collections::VecDeque<DeadKey>,
        k: DeadKey,
        at: At,
    ) {
        if order.len() >= DEAD_REMEMBERED {
            if let Some(old) = order.pop_front() {
                // One look-up for the test and the removal.
                if let std::collections::hash_map::Entry::Occupied(e) = map.entry(old) {
                    if e.get().record <= at.record {
                        e.remove();
                    }
                }
            }
        }
        map.insert(k, at);
        order.push_back(k);
    }

    pub(super) fn build(&mut self) {
        let mut map = HashMap::default();
        let mut order = std::collections::VecDeque::new();
        // A journal's undefines were the ring's: from now on it keeps its own.
        if let Some(j) = &mut self.journal {
            j.tail = self.ring.clone();
        }
        for (k, at) in std::mem::take(&mut self.ring)
            .into_iter()
            .map(Buried::unpack)
        {
            Dead::bury_eager(&mut map, &mut order, k, at);
        }
        self.map = Some((map, order));
        self.filter = None;
    }

    pub(super) fn get(&mut self, k: DeadKey) -> Option<At> {
        if self.map.is_none() {
            if self.scans < MAX_RING_SCANS {
                let ring = &self.ring;
                let f = self.filter.get_or_insert_with(|| {
                    let mut f = DeadFilter::new();
                    let from = ring.len().saturating_sub(DEAD_REMEMBERED);
                    for b in ring.range(from..) {
                        f.add((b.space, b.key, b.id));
                    }
                    f
                });
                if !f.may_hold(k) {
                    return None;
                }
                self.scans += 1;
                return self.in_ring(k);
            }
            self.build();
        }
        self.map.as_ref().and_then(|(map, _)| map.get(&k).copied())
    }

    /// What the map would answer for `k`, read from the ring (see `DeadRing::resolve`): with
    /// the ring's undefines numbered 0..t, `k` is remembered iff its latest undefine `l` among
    /// the last DEAD_REMEMBERED (`l + DEAD_REMEMBERED >= t`) follows no earlier undefine `q` of
    /// `k` forgotten after it (`l < q + DEAD_REMEMBERED < t`). The ring holds every undefine
    /// that matters: any such `q` is after `t - 2·DEAD_REMEMBERED`, and while the ring is not
    /// full it holds all of them (the record indices only grew: otherwise the map was built).
    fn in_ring(&self, k: DeadKey) -> Option<At> {
        let dr = DEAD_REMEMBERED;
        let t = self.ring.len();
        let is = |b: &Buried| (b.space, b.key, b.id) == k;
        let window = t.saturating_sub(dr);
        let l = window + self.ring.range(window..).rposition(is)?;
        let lo = (l + 1).saturating_sub(dr);
        let forgotten_after = self.ring.range(lo..window.min(l)).any(is);
        if forgotten_after {
            return None;
        }
        self.ring.get(l).map(|b| b.unpack().1)
    }

    /// Journal a look-up (see [`Dead::journal`]).
    pub(super) fn asked(&mut self, declared: Severity) {
        if let Some(j) = &mut self.journal {
            j.asks.push((j.count, declared));
        }
    }
}

/// Undefines of a chunk after which it answers a look-up alone (see [`DeadRing`]).
#[cfg_attr(not(feature = "parallel"), allow(dead_code))]
pub const DEAD_OWN: u64 = 2 * DEAD_REMEMBERED as u64;

/// The undefines of a chunk's pass and its look-ups ([`Dead::journal`]): of the undefines,
/// only the first [`DEAD_OWN`] and the last 2·DEAD_REMEMBERED, which are all that
/// [`DeadRing::resolve`] and [`DeadRing::extend`] read, so that memory stays bounded (about
/// 10 MB) whatever the chunk's length; every look-up the chunk could not answer, with the
/// number of undefines before it and the severity the DTD declares.
// Design: the journal copies nothing while `Dead`'s ring holds what it needs. The chunk's pass
// starts with an empty ring, which keeps the last 2·DEAD_REMEMBERED = DEAD_OWN undefines: at the
// end it is the journal's tail, and when the chunk's DEAD_OWN-th undefine is added it is the
// chunk's first DEAD_OWN, which `DeadRing::resolve` reads only for a look-up among them, so
// only as many of them as the look-ups so far read are copied then (none if none came); a chunk
// with no more than DEAD_OWN undefines reads them from its tail, with no copy. Only once `Dead`
// builds its map (the ring is gone: many double frees) does the journal push each undefine
// itself. A pass with a journal had touched
// three such rings of 5 MB (a fifth of `check -j 2`'s time, in page faults, at 1 M records).
#[derive(Debug, Default)]
pub(crate) struct DeadJournal {
    /// The chunk's first undefines, as many as its look-ups among the first DEAD_OWN need
    /// (none when `head_in_tail`).
    head: Vec<Buried>,
    tail: std::collections::VecDeque<Buried>,
    /// The tail holds every undefine of the chunk (no more than DEAD_OWN): the first are read
    /// from there, not copied.
    head_in_tail: bool,
    /// Undefines journaled.
    count: u64,
    pub(crate) asks: Vec<(u64, Severity)>,
}

impl DeadJournal {
    /// An undefine after `Dead` built its map.
    fn push(&mut self, b: Buried) {
        self.count += 1;
        if self.tail.len() >= 2 * DEAD_REMEMBERED {
            self.tail.pop_front();
        }
        self.tail.push_back(b);
        if self.count == DEAD_OWN && !self.asks.is_empty() {
            self.head = self
                .tail
                .iter()
                .take(self.asked_within())
                .copied()
                .collect();
        }
    }

    /// How many of the chunk's first undefines its look-ups so far read: the most that came
    /// before one of them, among the first DEAD_OWN.
    fn asked_within(&self) -> usize {
        let m = self
            .asks
            .iter()
            .map(|a| a.0)
            .filter(|&m| m < DEAD_OWN)
            .max();
        m.map_or(0, |m| usize::try_from(m).unwrap_or(usize::MAX))
    }

    /// The chunk's first undefines, up to `n`.
    fn first(&self, n: usize) -> impl Iterator<Item = &Buried> {
        let (head, tail) = if self.head_in_tail {
            (&[][..], self.tail.range(..n.min(self.tail.len())))
        } else {
            (&self.head[..n.min(self.head.len())], self.tail.range(..0))
        };
        head.iter().chain(tail)
    }
}

/// The ids undefined recently before a chunk of a trace, for the look-ups a pass over the chunk
/// alone could not answer (`mtf check -j N`).
// Design: the analysis state does not carry the recently undefined ids (interpret/resume.rs),
// so a pass resumed at a checkpoint tells a double free only from the undefines after it. Each
// chunk's pass keeps a journal of its undefines and of the look-ups that found nothing; the
// chunks are then taken in trace order here, where the last 2·DEAD_REMEMBERED undefines before
// the chunk and the chunk's own up to the look-up are replayed through `Dead`'s rule. Only a
// look-up after 2·DEAD_REMEMBERED undefines of the chunk ([`DEAD_OWN`]) is answered by the
// chunk alone: the rule removes an id's entry when any undefine of that id is forgotten, even an
// older one, so an undefine from before the chunk, forgotten within its first DEAD_REMEMBERED
// undefines, removes what the chunk alone still remembers of an undefine among those, until
// that one is forgotten too. The answers are those of one pass from the start. Memory: of a
// chunk's undefines only the first DEAD_OWN (for its look-ups) and the last 2·DEAD_REMEMBERED
// (for the next chunk's) are kept (`DeadJournal`), 40 bytes each: about 10 MB a chunk at most,
// where keeping every undefine was 40 bytes per free of the trace (450 MB of `check -j 2` on a
// 40 M-record trace).
#[derive(Debug, Default)]
#[cfg_attr(not(feature = "parallel"), allow(dead_code))]
pub(crate) struct DeadRing {
    ring: std::collections::VecDeque<Buried>,
    /// The chunks' undefines taken but not yet put in the ring (their journals' tails, moved),
    /// oldest first: only those that could still be in it.
    pending: Vec<std::collections::VecDeque<Buried>>,
}

#[cfg_attr(not(feature = "parallel"), allow(dead_code))]
impl DeadRing {
    /// Answer look-ups of a chunk: for each `(undefines of the chunk before it, (namespace,
    /// key, id))`, in order, the record that undefined the id, if one pass from the start
    /// remembers it; a look-up after [`DEAD_OWN`] undefines of the chunk is the chunk's own to
    /// answer (`None` here).
    pub fn resolve(&mut self, journal: &DeadJournal, asks: &[(u64, DeadKey)]) -> Vec<Option<At>> {
        let count = usize::try_from(journal.count).unwrap_or(usize::MAX);
        // Design: `Dead`'s rule read as a formula, to spare building its map of DEAD_REMEMBERED
        // ids for each chunk with a look-up. With undefines numbered 0.. in trace order and `t`
        // of them before the look-up, id `k` is remembered iff its latest undefine `l < t` is
        // not forgotten (`l + DEAD_REMEMBERED >= t`) and no earlier undefine `q` of `k` was
        // forgotten after `l` (forgetting `q` at undefine `q + DEAD_REMEMBERED` removes the
        // id's entry): none with `l < q + DEAD_REMEMBERED < t`. Every undefine that matters is
        // among the ring's 2·DEAD_REMEMBERED and the chunk's own; only the undefines of the ids
        // asked about are gathered.
        let dr = DEAD_REMEMBERED;
        if asks.iter().any(|a| a.0 < DEAD_OWN) {
            self.flush();
        }
        let g = self.ring.len();
        let upto = asks
            .iter()
            .filter(|a| a.0 < DEAD_OWN)
            .map(|a| a.0 as usize)
            .max()
            .unwrap_or(0);
        let mut seen: HashMap<DeadKey, Vec<(usize, At)>> = asks
            .iter()
            .filter(|a| a.0 < DEAD_OWN)
            .map(|a| (a.1, Vec::new()))
            .collect();
        if !seen.is_empty() {
            for (i, b) in self.ring.iter().chain(journal.first(upto)).enumerate() {
                let (k, at) = b.unpack();
                if let Some(v) = seen.get_mut(&k) {
                    v.push((i, at));
                }
            }
        }
        asks.iter()
            .map(|&(m, k)| {
                if m >= DEAD_OWN {
                    return None;
                }
                let t = g + (m as usize).min(count);
                let v = seen.get(&k)?;
                let before = v.partition_point(|x| x.0 < t);
                let &(l, at) = v[..before].last()?;
                if l + dr < t {
                    return None;
                }
                let forgotten_since = v[..before].iter().any(|&(q, _)| q + dr > l && q + dr < t);
                (!forgotten_since).then_some(at)
            })
            .collect()
    }

    /// The chunk's undefines taken (its journal's tail, moved out): the ring now stands after
    /// it.
    // Design: the ring is read only to answer a later chunk's look-ups, which a valid trace
    // does not make, and copying each chunk's last 2·DEAD_REMEMBERED undefines into it (5 MB)
    // was a tenth of the page faults of `check -j 2` at 1 M records. The tails are moved, and
    // copied into the ring only when a look-up comes; of those, only the newest that hold
    // 2·DEAD_REMEMBERED undefines are kept.
    pub fn extend(&mut self, journal: &mut DeadJournal) {
        let keep = 2 * DEAD_REMEMBERED;
        self.pending.push(std::mem::take(&mut journal.tail));
        let mut held = 0;
        let mut from = self.pending.len();
        while from > 0 && held < keep {
            from -= 1;
            held += self.pending[from].len();
        }
        if held >= keep {
            // The ring would lose everything it holds now, and the tails before `from` too.
            self.ring.clear();
            self.pending.drain(..from);
        }
    }

    /// The pending tails put in the ring.
    fn flush(&mut self) {
        let keep = 2 * DEAD_REMEMBERED;
        for tail in self.pending.drain(..) {
            self.ring.extend(tail);
            while self.ring.len() > keep {
                self.ring.pop_front();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes per live id that docs/stats.md states ("Memory"): a 16-byte key and a
    /// 40-byte `Live` in the map of each namespace.
    #[test]
    fn a_live_id_takes_the_bytes_the_documentation_states() {
        assert_eq!(std::mem::size_of::<((u64, u64), Live)>(), 56);
        // A shared id: its newest holder in the entry, each older one in a pool, thin where it
        // has the byte count, site and record type of the one above it.
        assert_eq!(std::mem::size_of::<((u64, u64), (Live, u32))>(), 64);
        assert_eq!(std::mem::size_of::<(Live, u32)>(), 48);
        assert_eq!(std::mem::size_of::<Thin<Narrow>>(), 16);
        assert_eq!(std::mem::size_of::<Thin<Wide>>(), 20);
    }

    /// A trace's undefines and look-ups cut into chunks, each looked up in its own `Dead` with
    /// a journal and what it could not answer answered by `DeadRing` in order: the answers of
    /// one `Dead` over the whole, also where the chunk's undefines before a look-up are about
    /// DEAD_REMEMBERED (the boundary of what is remembered from before the chunk).
    #[test]
    fn chunks_with_a_ring_answer_as_one_pass() {
        let n = 6 * DEAD_REMEMBERED as u64;
        // Look-ups every fifth operation (`Dead` soon builds its map), and rare ones (it
        // answers from its ring throughout, and the journal reads its undefines from there).
        let cases = [
            (0u64, 70_000u64, 5),
            (1, 300, 5),
            (2, 1 << 20, 5),
            (3, 70_000, 4001),
        ];
        for (case, ids, every) in cases {
            let mut whole = Dead::default();
            let mut want = Vec::new();
            let mut ops = Vec::new();
            let mut x = 0x2545_f491_4f6c_dd1du64 ^ case;
            for i in 0..n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let id = (x >> 33) % ids;
                let at = At {
                    record: i,
                    offset: i * 3,
                    record_type: 1,
                };
                let ask = (x >> 13).is_multiple_of(every);
                if ask {
                    want.push(whole.get((0, 0, id)));
                } else {
                    whole.bury((0, 0, id), at);
                }
                ops.push((ask, id, at));
            }
            // Chunks of uneven sizes, one longer than DEAD_OWN undefines; then one with more
            // undefines than the journal keeps (the first DEAD_OWN and the last
            // 2·DEAD_REMEMBERED).
            let long: &[usize] = &[0, 1000, 60_000, n as usize];
            let uneven: &[usize] = &[
                0, 1000, 50_000, 50_001, 140_000, 150_000, 330_000, n as usize,
            ];
            for cuts in [uneven, long] {
                let mut ring = DeadRing::default();
                let mut got = Vec::new();
                for w in cuts.windows(2) {
                    let mut dead = Dead::journaled();
                    let mut local = Vec::new();
                    for &(ask, id, at) in &ops[w[0]..w[1]] {
                        if ask {
                            dead.asked(Severity::Info);
                            local.push((id, dead.get((0, 0, id))));
                        } else {
                            dead.bury((0, 0, id), at);
                        }
                    }
                    let mut journal = dead.take_journal();
                    let asked = journal.asks.clone();
                    let asked = &asked;
                    assert_eq!(asked.len(), local.len());
                    // Bounded whatever the chunk's length.
                    assert!(journal.head.len() as u64 <= DEAD_OWN);
                    assert!(journal.tail.len() <= 2 * DEAD_REMEMBERED);
                    let open = |m: u64| m < DEAD_OWN;
                    let asks: Vec<(u64, DeadKey)> = local
                        .iter()
                        .zip(asked)
                        .filter(|(_, a)| open(a.0))
                        .map(|((id, _), a)| (a.0, (0, 0, *id)))
                        .collect();
                    let mut answers = ring.resolve(&journal, &asks).into_iter();
                    ring.extend(&mut journal);
                    for ((_, l), a) in local.into_iter().zip(asked) {
                        got.push(if open(a.0) {
                            answers.next().flatten()
                        } else {
                            l
                        });
                    }
                }
                assert_eq!(got.len(), want.len());
                let differ = got.iter().zip(&want).position(|(a, b)| a != b);
                assert_eq!(differ, None, "case {case}");
                assert!(want.iter().any(Option::is_some) && want.iter().any(Option::is_none));
            }
        }
    }

    /// A look-up right after the undefine of its id, the last look-up among a chunk's first
    /// DEAD_OWN undefines, in a chunk with more: the journal keeps that undefine for it (as
    /// many of the chunk's first undefines as its look-ups read), and in a chunk with fewer it
    /// is read from the tail.
    #[test]
    fn a_chunk_s_first_undefines_are_kept_up_to_its_last_look_up() {
        let at = |i: u64| At {
            record: i,
            offset: i * 3,
            record_type: 1,
        };
        for (before, after) in [(0, DEAD_OWN + 5), (7, DEAD_OWN + 5), (7, 100)] {
            let mut dead = Dead::journaled();
            let mut whole = Dead::default();
            let mut i = 0;
            let bury = |dead: &mut Dead, whole: &mut Dead, id: u64, i: &mut u64| {
                dead.bury((0, 0, id), at(*i));
                whole.bury((0, 0, id), at(*i));
                *i += 1;
            };
            for id in 0..before {
                bury(&mut dead, &mut whole, 1000 + id, &mut i);
            }
            bury(&mut dead, &mut whole, 7, &mut i);
            dead.asked(Severity::Info);
            let want = whole.get((0, 0, 7));
            assert_eq!(want, Some(at(before)));
            for id in 0..after {
                bury(&mut dead, &mut whole, 1_000_000 + id, &mut i);
            }
            let journal = dead.take_journal();
            assert_eq!(journal.asks.len(), 1);
            let m = journal.asks[0].0;
            assert_eq!(m, before + 1);
            let got = DeadRing::default().resolve(&journal, &[(m, (0, 0, 7))]);
            assert_eq!(got, vec![want], "{before} {after}");
            // Copied: no more than the look-up reads.
            assert!(journal.head.len() as u64 <= m, "{}", journal.head.len());
        }
    }

    /// The ring replayed on first use remembers exactly what the map kept eagerly remembers:
    /// with ids freed again and again, past 2·DEAD_REMEMBERED undefines, with a look-up in the
    /// middle (then the map is kept), and with a record index that goes back.
    #[test]
    fn dead_ids_are_remembered_as_the_eager_rule_remembers_them() {
        let n = 5 * DEAD_REMEMBERED as u64 / 2;
        for case in 0..4u64 {
            let mut lazy = Dead::default();
            let mut map = HashMap::default();
            let mut order = std::collections::VecDeque::new();
            let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ case;
            let mut record = 0u64;
            let ids = if case == 3 { 200 } else { 90_000 };
            for i in 0..n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let id = (x >> 33) % ids;
                record += (x >> 20) % 3;
                if case == 2 && i == n - 1000 {
                    record -= 7;
                }
                let at = At {
                    record,
                    offset: i,
                    record_type: 0,
                };
                lazy.bury((0, 0, id), at);
                Dead::bury_eager(&mut map, &mut order, (0, 0, id), at);
                if case == 1 && i == n / 2 {
                    assert_eq!(lazy.get((0, 0, id)), map.get(&(0, 0, id)).copied());
                }
            }
            let mut remembered = 0;
            for id in 0..ids {
                let want = map.get(&(0, 0, id)).copied();
                remembered += usize::from(want.is_some());
                assert_eq!(lazy.get((0, 0, id)), want, "case {case}, id {id}");
            }
            assert!(remembered > 0);
        }
    }

    /// Look-ups while the map is not built (the filter, then the ring) answer as the eager
    /// rule: look-ups of ids never freed, of ids freed lately, of ids whose older undefine was
    /// forgotten after a newer one, a few (the map never built) and many (built on the way).
    #[test]
    fn look_ups_from_the_filter_and_the_ring_answer_as_the_eager_rule() {
        let n = 3 * DEAD_REMEMBERED as u64;
        for (case, every) in [(0u64, 997u64), (1, 61), (2, 7)] {
            let mut lazy = Dead::default();
            let mut map = HashMap::default();
            let mut order = std::collections::VecDeque::new();
            let mut x = 0x51_7cc1_b727_220au64 ^ case;
            let (mut found, mut asked) = (0, 0);
            for i in 0..n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let at = At {
                    record: i,
                    offset: i,
                    record_type: 0,
                };
                if i % every == 0 {
                    // Half of the look-ups are of ids that may have been freed lately.
                    let id = match (x >> 40) % 2 {
                        0 => (x >> 33) % 100_000,
                        _ => 1_000_000 + (x >> 20) % 1_000_000,
                    };
                    let want = map.get(&(0, 0, id)).copied();
                    found += usize::from(want.is_some());
                    asked += 1;
                    assert_eq!(lazy.get((0, 0, id)), want, "case {case}, record {i}");
                } else {
                    let id = (x >> 33) % 100_000;
                    lazy.bury((0, 0, id), at);
                    Dead::bury_eager(&mut map, &mut order, (0, 0, id), at);
                }
            }
            assert!(found > 0 && found < asked, "case {case}");
            // Few look-ups of freed ids keep the map unbuilt; many build it.
            match case {
                0 => assert!(lazy.map.is_none() && lazy.filter.is_some()),
                2 => assert!(lazy.map.is_some() && lazy.filter.is_none()),
                _ => {}
            }
        }
    }

    /// A shared id's holders come off newest first, the pool's places are reused, and the
    /// listing gives each id's blocks oldest first, as the vector per id they replace did.
    #[test]
    fn holders_stack_per_id_and_reuse_the_pool() {
        let at = |r: u64| At {
            record: r,
            offset: 10 * r,
            record_type: 1,
        };
        let live = |r: u64| Live::new(at(r), r, Some(r + 100), r as u32);
        let mut h = Holders::default();
        let (a, b) = ((0, 7), (1, 7));
        for r in 1..=3 {
            h.push(a, live(r));
        }
        h.push(b, live(9));
        assert_eq!((h.len(), h.blocks()), (2, 4));
        assert_eq!(h.last(a).map(|l| l.record), Some(3));
        let mut listed: Vec<_> = h
            .iter()
            .map(|(k, v)| (k, v.iter().map(|l| l.record).collect::<Vec<_>>()))
            .collect();
        listed.sort();
        assert_eq!(listed, vec![(a, vec![1, 2, 3]), (b, vec![9])]);
        assert_eq!(h.pop(a).map(|l| l.record), Some(3));
        assert_eq!(h.pop(a).map(|l| l.record), Some(2));
        // A place given back is taken again before the pool grows.
        let pool = h.pool.len();
        h.push(a, live(4));
        h.push(a, live(5));
        assert_eq!(h.pool.len(), pool);
        let mut all: Vec<u64> = h.all().map(|l| l.record).collect();
        all.sort_unstable();
        assert_eq!(all, vec![1, 4, 5, 9]);
        for want in [5, 4, 1] {
            assert_eq!(
                h.pop(a).map(|l| (l.record, l.site())),
                Some((want, Some(want + 100)))
            );
        }
        assert!(h.pop(a).is_none() && h.last(a).is_none());
        h.set(b, vec![live(20), live(21)]);
        assert_eq!(h.iter().next().map(|(_, v)| v.len()), Some(2));
        assert_eq!((h.len(), h.blocks()), (1, 2));
    }

    /// Holders against a vector of blocks per id, over random pushes and pops of a few ids
    /// (entries taken and filled again, pools reused): the same block off each pop, the same
    /// newest, counts and listings after every step. Most blocks have the byte count, site
    /// and record type of the block pushed before them (they wait thin), some not, or with a
    /// record index or offset past what the narrow thin holder keeps (then the wide one) or
    /// past what that keeps (whole).
    #[test]
    fn holders_are_a_stack_per_id() {
        let words = |l: &Live| (l.record, l.offset, l.bytes, l.site(), l.rtype, l.stored);
        let live = |r: u64, x: u64| {
            let odd = (x >> 50).is_multiple_of(4);
            // Record indices and offsets up to the most each thin holder keeps, and past it
            // (then the block waits in the wider one, or whole).
            let record = match (x >> 57) % 6 {
                0 => r | 1 << 40,
                1 => r | ((1 << 40) - (1 << 20)),
                2 => r | 1 << 32,
                3 => r | ((1 << 32) - (1 << 20)),
                _ => r,
            };
            let offset = match (x >> 59) % 6 {
                0 => (3 * r) | (1 << 56),
                1 => (3 * r) | ((1 << 56) - (1 << 20)),
                2 => (3 * r) | (1 << 32),
                3 => (3 * r) | ((1 << 32) - (1 << 20)),
                _ => 3 * r,
            };
            let at = At {
                record,
                offset,
                record_type: 1 + u32::from((x >> 52).is_multiple_of(8)),
            };
            let site = match (x >> 54) % 8 {
                0 => None,
                1 => Some(r),
                _ => Some(9),
            };
            Live::new(at, if odd { r } else { 16 }, site, r as u32)
        };
        let mut h = Holders::default();
        let mut model: HashMap<(u64, u64), Vec<Live>> = HashMap::default();
        let mut x = 5u64;
        for r in 1..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = (0, (x >> 40) % 7);
            if (x >> 20) % 100 < 48 {
                h.push(k, live(r, x));
                model.entry(k).or_default().push(live(r, x));
            } else {
                let want = model.get_mut(&k).and_then(Vec::pop);
                if model.get(&k).is_some_and(Vec::is_empty) {
                    model.remove(&k);
                }
                assert_eq!(
                    h.pop(k).map(|l| words(&l)),
                    want.map(|l| words(&l)),
                    "step {r}"
                );
            }
            assert_eq!(
                h.last(k).map(words),
                model.get(&k).and_then(|v| v.last()).map(words)
            );
            assert_eq!(h.len(), model.len());
            assert_eq!(h.blocks(), model.values().map(Vec::len).sum::<usize>());
            if r % 97 == 0 {
                let mut listed: Vec<_> = h
                    .iter()
                    .map(|(k, v)| (k, v.iter().map(words).collect::<Vec<_>>()))
                    .collect();
                listed.sort();
                let mut want: Vec<_> = model
                    .iter()
                    .map(|(k, v)| (*k, v.iter().map(words).collect::<Vec<_>>()))
                    .collect();
                want.sort();
                assert_eq!(listed, want, "step {r}");
                let mut all: Vec<_> = h.all().map(|l| words(&l)).collect();
                all.sort_unstable();
                let mut every: Vec<_> = model.values().flatten().map(words).collect();
                every.sort_unstable();
                assert_eq!(all, every);
            }
        }
        // Every pool was used.
        assert!(!h.narrow.is_empty() && !h.thin.is_empty() && !h.pool.is_empty());
    }

    /// A namespace that stores no values hands out numbers only, reusing those given back.
    #[test]
    fn a_slab_without_values_numbers_its_places() {
        let mut s = Slab::default();
        assert_eq!((s.put(), s.put(), s.put()), (0, 1, 2));
        s.release(1);
        assert_eq!((s.put(), s.put()), (1, 3));
        assert!(s.data.is_empty());
        assert_eq!(s.get(1, 0), None);
    }
}
