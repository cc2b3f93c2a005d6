//! The live part of [`HeapStats`] in an analysis-state blob (docs/format.md §15.4): what a
//! pass whose slice has not opened yet holds — live blocks, live bytes, and the sites and
//! leaves in the order first allocated from with their live figures. Flows (allocations,
//! frees, lifetimes, the curve, peaks) count only inside a slice, so a resumed pass starts
//! them from zero as a pass from the start would.

use crate::index::analysis::{Dec, Enc, StateError};

use super::{Block, HeapStats, Held, Places, Site, NO_LEAF};

fn put_site(e: &mut Enc, s: &Site) {
    e.u128(s.live_bytes);
    e.u64(s.live_blocks);
    e.u128(s.max_live_bytes);
}

fn get_site(d: &mut Dec<'_>) -> Result<Site, StateError> {
    Ok(Site {
        live_bytes: d.u128()?,
        live_blocks: d.u64()?,
        max_live_bytes: d.u128()?,
        ..Site::default()
    })
}

fn put_block(e: &mut Enc, b: &Block) {
    e.u64(b.size);
    e.u64(b.born_record);
    e.u64(b.born_time);
    e.u32(b.site());
    e.u32(b.leaf);
    e.u32(u32::from(b.born_time().is_some()));
}

/// Integers of one written block (a byte each at least).
const BLOCK: usize = 6;

/// The numbers of the blocks holding an id, the oldest first (see
/// [`HeapStats::restore_live_placing`]): (namespace, key, id, into) → whether it has them.
pub(crate) type PlacesOf<'a> = &'a dyn Fn(u32, u64, u64, &mut Vec<u32>) -> bool;

impl HeapStats {
    /// Where each namespace's live bytes peaked (the first time they were highest), as its
    /// bytes and the data record: after a pass over the whole trace, its peaks.
    pub fn peaks(&self) -> Vec<Option<(u128, u64)>> {
        self.spaces
            .iter()
            .map(|s| s.peak.map(|(b, _, at)| (b, at.record)))
            .collect()
    }

    /// The live blocks [`HeapStats::save_live`] writes (those of events without places, the
    /// blocks shared ids hide included).
    pub fn saved_blocks(&self) -> usize {
        let top: usize = self.live.iter().map(|m| m.len()).sum();
        top + self.shadow.len().saturating_sub(self.free_shadow.len())
    }

    /// Write the live part (see the module docs).
    pub fn save_live(&self, e: &mut Enc) {
        e.len(self.spaces.len());
        for (sp, s) in self.spaces.iter().enumerate() {
            e.u128(s.live_bytes);
            e.u64(s.live_blocks);
            e.len(s.sites.len());
            for (id, st) in &s.sites {
                e.opt(*id);
                put_site(e, st);
            }
            e.len(s.leaves.len());
            for (si, node, st) in &s.leaves {
                e.u32(*si);
                e.u64(*node);
                put_site(e, st);
            }
            let start = e.out.len();
            let mut live: Vec<(&(u64, u64), &Held)> = self.live[sp].iter().collect();
            live.sort_unstable_by_key(|x| *x.0);
            e.len(live.len());
            let mut prev = (0, 0);
            for (k, (b, below)) in live {
                e.pair(&mut prev, *k);
                // The block, then those it hides (shared namespaces), newest first.
                let mut chain = vec![b];
                let mut below = *below;
                while below != 0 {
                    match self.shadow.get(below as usize - 1) {
                        Some((x, next)) => {
                            chain.push(x);
                            below = *next;
                        }
                        None => break,
                    }
                }
                e.len(chain.len());
                for x in chain {
                    put_block(e, x);
                }
            }
            e.blocks += (e.out.len() - start) as u64;
        }
    }

    /// Read back what [`HeapStats::save_live`] wrote into statistics made for the same
    /// namespaces that have seen no event.
    pub fn restore_live(&mut self, d: &mut Dec<'_>) -> Result<(), StateError> {
        self.restore_live_placing(d, None).map(|_| ())
    }

    /// [`HeapStats::restore_live`], the live blocks put straight at the numbers `places_of`
    /// gives them (the interpreter's, which the events of a pass with places carry: the chunk
    /// then runs as a pass from the start, without a look-up per event, and no map by id is
    /// filled) where every one has one, the blocks of a shared id included; true when they were.
    // Design: the live part is read twice from the blob: once to check it (the figures the sums
    // of the blocks', the sites and leaves defined) and to ask whether every block has a
    // number, then to put each block where it goes, at its number or in the map by id. Reading
    // it once into lists and then moving them held every block two or three times at once: on
    // a recording of 1.9 M live blocks, 280 MB of `stats -j 2`'s 560 MB.
    pub(crate) fn restore_live_placing(
        &mut self,
        d: &mut Dec<'_>,
        places_of: Option<PlacesOf<'_>>,
    ) -> Result<bool, StateError> {
        let start = d.pos;
        let places_of = places_of.filter(|_| self.shadow.is_empty() && self.placed_live == 0);
        let mut placeable = places_of.is_some();
        let mut nums = Vec::new();
        // Per namespace, 1 + the highest number given.
        let mut tops = vec![0usize; self.placed.len()];
        read_live(&mut self.spaces, d, &mut |sp, (key, id), chain| {
            if let (true, Some(places_of)) = (placeable, places_of) {
                placeable = places_of(sp as u32, key, id, &mut nums)
                    && nums.len() == chain.len()
                    && !nums.contains(&Places::NONE);
                if let Some(t) = tops.get_mut(sp) {
                    *t = nums.iter().fold(*t, |t, &i| t.max(i as usize + 1));
                }
            }
        })?;
        let end = d.pos;
        d.pos = start;
        let HeapStats {
            spaces,
            live,
            placed,
            placed_live,
            shadow,
            ..
        } = self;
        match places_of.filter(|_| placeable) {
            Some(places_of) => {
                for (v, &top) in placed.iter_mut().zip(&tops) {
                    v.reset(top);
                }
                read_live(spaces, d, &mut |sp, (key, id), chain| {
                    let Some(v) = placed.get_mut(sp) else {
                        return;
                    };
                    places_of(sp as u32, key, id, &mut nums);
                    // The interpreter's numbers come the oldest first, the blocks the newest.
                    for (&i, b) in nums.iter().rev().zip(chain) {
                        v.put(i as usize, *b);
                        *placed_live += 1;
                    }
                })?;
            }
            None => {
                read_live(spaces, d, &mut |sp, k, chain| {
                    let Some(live) = live.get_mut(sp) else {
                        return;
                    };
                    // Oldest first: each block hides the one before it.
                    let mut below = 0u32;
                    for (j, b) in chain.iter().rev().enumerate() {
                        if j + 1 < chain.len() {
                            shadow.push((*b, below));
                            below = shadow.len() as u32;
                        } else {
                            live.insert(k, (*b, below));
                        }
                    }
                })?;
            }
        }
        debug_assert_eq!(d.pos, end);
        Ok(placeable)
    }
}

/// What [`read_live`] gives each live id: its namespace, (key, id) and blocks, newest first.
type PutBlocks<'a> = &'a mut dyn FnMut(usize, (u64, u64), &[Block]);

/// Reads the live part [`HeapStats::save_live`] wrote into `spaces` (the sites and leaves, the
/// live figures), checked, giving `put` each live id's blocks, the newest first.
fn read_live(
    spaces: &mut [super::Space],
    d: &mut Dec<'_>,
    put: PutBlocks<'_>,
) -> Result<(), StateError> {
    let n = d.count(1)?;
    if n != spaces.len() {
        return Err(d.error(format!(
            "{n} namespaces of ids, the DTD declares {}",
            spaces.len()
        )));
    }
    let mut chain = Vec::new();
    for (sp, s) in spaces.iter_mut().enumerate() {
        s.live_bytes = d.u128()?;
        s.live_blocks = d.u64()?;
        let count = d.count(4)?;
        if count == 0 {
            return Err(d.error("no site for allocations without one"));
        }
        s.sites = Vec::with_capacity(count);
        s.site_ix.clear();
        for i in 0..count {
            let id = d.opt()?;
            let st = get_site(d)?;
            if let Some(id) = id {
                s.site_ix.insert(id, i as u32);
            }
            s.sites.push((id, st));
        }
        let count = d.count(5)?;
        s.leaves = Vec::with_capacity(count);
        s.leaf_ix.clear();
        for i in 0..count {
            let si = d.u32()?;
            let node = d.u64()?;
            if si as usize >= s.sites.len() {
                return Err(d.error(format!("leaf of site {si}, which is not defined")));
            }
            s.leaf_ix.insert((si, node), i as u32);
            s.leaves.push((si, node, get_site(d)?));
        }
        let (sites, leaves) = (s.sites.len(), s.leaves.len());
        // The live figures must be the sums of the blocks' (else an event would take from a
        // figure more than it holds).
        let mut sums = (0u128, 0u64);
        let mut site_sums = vec![(0u128, 0u64); sites];
        let mut leaf_sums = vec![(0u128, 0u64); leaves];
        let count = d.count(3 + BLOCK)?;
        let mut prev = (0, 0);
        for i in 0..count {
            let k = d.pair(&mut prev, i == 0)?;
            let m = d.count(BLOCK)?;
            if m == 0 {
                return Err(d.error("a live id without a block"));
            }
            chain.clear();
            for _ in 0..m {
                let (size, born_record, born_time) = (d.u64()?, d.u64()?, d.u64()?);
                let (site, leaf, flags) = (d.u32()?, d.u32()?, d.u32()?);
                if site as usize >= sites || (leaf != NO_LEAF && leaf as usize >= leaves) {
                    return Err(d.error("a block of a site or leaf not defined"));
                }
                if flags > 1 {
                    return Err(d.error("a block's flags other than bit 0"));
                }
                let b = Block {
                    size,
                    born_record,
                    born_time,
                    site: site | if flags == 1 { Block::TIME } else { 0 },
                    leaf,
                };
                sums.0 += u128::from(b.size);
                sums.1 += 1;
                let site = &mut site_sums[b.site() as usize];
                site.0 += u128::from(b.size);
                site.1 += 1;
                if b.leaf != NO_LEAF {
                    let leaf = &mut leaf_sums[b.leaf as usize];
                    leaf.0 += u128::from(b.size);
                    leaf.1 += 1;
                }
                chain.push(b);
            }
            put(sp, k, &chain);
        }
        let consistent = sums == (s.live_bytes, s.live_blocks)
            && s.sites
                .iter()
                .zip(&site_sums)
                .all(|((_, st), x)| (st.live_bytes, st.live_blocks) == *x)
            && s.leaves
                .iter()
                .zip(&leaf_sums)
                .all(|((_, _, st), x)| (st.live_bytes, st.live_blocks) == *x);
        if !consistent {
            return Err(d.error(format!(
                "namespace {sp}: the live figures are not the sums of its live blocks"
            )));
        }
    }
    Ok(())
}

impl HeapStats {
    /// After a pass that stopped early: the sites and leaves the live part `d` (a state
    /// further on, the end's) has beyond those met so far, appended in its order with nothing
    /// allocated from them yet (at the current peak): so a profile lists the same leaves as a
    /// pass that read on. The sites and leaves met so far must be the first of `d`'s.
    pub fn extend_places(&mut self, d: &mut Dec<'_>) -> Result<(), StateError> {
        let n = d.count(1)?;
        if n != self.spaces.len() {
            return Err(d.error("namespaces of another DTD"));
        }
        for s in &mut self.spaces {
            d.u128()?;
            d.u64()?;
            let gen = s.peak_gen;
            let count = d.count(4)?;
            for i in 0..count {
                let id = d.opt()?;
                get_site(d)?;
                match s.sites.get(i) {
                    Some((mine, _)) if *mine == id => {}
                    Some(_) => return Err(d.error("sites in another order")),
                    None => {
                        if let Some(id) = id {
                            s.site_ix.insert(id, i as u32);
                        }
                        s.sites.push((
                            id,
                            Site {
                                gen,
                                ..Site::default()
                            },
                        ));
                    }
                }
            }
            let count = d.count(5)?;
            for i in 0..count {
                let si = d.u32()?;
                let node = d.u64()?;
                get_site(d)?;
                match s.leaves.get(i) {
                    Some((a, b, _)) if (*a, *b) == (si, node) => {}
                    Some(_) => return Err(d.error("leaves in another order")),
                    None => {
                        if si as usize >= s.sites.len() {
                            return Err(d.error("a leaf of a site not defined"));
                        }
                        s.leaf_ix.insert((si, node), i as u32);
                        s.leaves.push((
                            si,
                            node,
                            Site {
                                gen,
                                ..Site::default()
                            },
                        ));
                    }
                }
            }
            let count = d.count(3 + BLOCK)?;
            let mut prev = (0, 0);
            for i in 0..count {
                d.pair(&mut prev, i == 0)?;
                let m = d.count(BLOCK)?;
                for _ in 0..m * BLOCK {
                    d.u64()?;
                }
            }
        }
        Ok(())
    }
}
