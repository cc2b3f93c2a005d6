//! The interpreter's state written into and read back from an analysis-state blob
//! (docs/format.md §15.4), so that a pass can resume at a seek index's checkpoint exactly as if
//! it had read every record before it.

// Design: every entry is written in a canonical order (sorted by its key), so that the same
// trace gives the same bytes in every process (the maps' hash seeds differ) and `mtf index
// --check` can compare states byte for byte. The ring of recently undefined ids (`Dead`) is
// not part of the state: it only tells a double free from a free of an id never seen in a
// finding's wording and severity (`mtf check`), never a heap figure; a resumed interpreter
// starts with it empty.

use crate::dtd::analysis::SpaceId;
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
    /// -j N` compares the state a chunk's pass reaches with the one stored at the checkpoint).
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    pub(crate) fn semantic_state(&self) -> Vec<u8> {
        let mut e = Enc::default();
        self.save_state_as(&mut e, true);
        e.out
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
            let table = self.decl.namespaces[sp].kind == crate::dtd::analysis::SpaceKind::Table;
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
