//! Fragmentation attributed: which size classes and which allocation sites hold the bytes a
//! heap has beyond its live payload, at two moments of a trace (docs/replay.md,
//! *Fragmentation by size class and site*).
//!
//! * [`Tracker`] is exact, for `simulate`'s model heaps, which know every block's place: each
//!   live block's own overhead (header, alignment, rounding: its block size minus its payload)
//!   and its share of the free gaps between live blocks. A gap between two live blocks is split
//!   in halves between them (the odd byte to the upper one): either block alone keeps it from
//!   joining the free space on its other side. The gap below the lowest live block goes to that
//!   block; the free space above the highest live block is held by no block (`unattributed`).
//!   It keeps its figures per class and per site as the trace goes, so that the state at the
//!   heap's peak costs nothing until it is read.
//! * [`pages`] is for `replay`, where the allocator is a black box: which resident pages the
//!   live blocks' bytes lie on, and the unused bytes of those pages split among the blocks on
//!   each.
//!
//! Size classes ([`class_of`]) are a documented scheme, the same for every allocator: 8 and
//! 16 bytes, then four classes per power of two (20, 24, 28, 32, 40, 48, 56, 64, 80, …), as
//! jemalloc spaces its small classes. A block belongs to the class of the size the trace asked
//! for.

pub mod pages;
pub mod text;

use std::collections::{BTreeMap, HashMap};

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The number of size classes [`class_of`] gives.
pub const CLASSES: usize = 242;

/// The size class of a request of `size` bytes: 0 for 0–8 bytes, 1 for 9–16, then four per
/// power of two: for `size` in (2^k, 2^(k+1)], k ≥ 4, the class whose upper bound is
/// 2^k + i·2^(k−2) for the least i in 1..=4 that holds `size`.
pub fn class_of(size: u64) -> u16 {
    match size {
        0..=8 => 0,
        9..=16 => 1,
        _ => {
            let k = 63 - (size - 1).leading_zeros(); // size in (2^k, 2^(k+1)]
            let step = 1u64 << (k - 2);
            let i = (size - (1u64 << k)).div_ceil(step); // 1..=4
            (2 + 4 * (k - 4) + (i as u32 - 1)) as u16
        }
    }
}

/// The sizes of class `class`: `(lo, hi)`, both included.
pub fn class_bounds(class: u16) -> (u64, u64) {
    let hi = |c: u16| -> u64 {
        match c {
            0 => 8,
            1 => 16,
            _ => {
                let c = u32::from(c) - 2;
                let (k, i) = (4 + c / 4, u64::from(c % 4) + 1);
                (1u64 << k).saturating_add(i << (k - 2))
            }
        }
    };
    let lo = if class == 0 { 0 } else { hi(class - 1) + 1 };
    (lo, hi(class))
}

/// The figures of a size class or a site at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "replay", derive(serde::Serialize, serde::Deserialize))]
pub struct Figures {
    /// Live blocks.
    pub blocks: u64,
    /// Their live payload (the bytes the trace asked for).
    pub live: u64,
    /// Bytes of the blocks beyond their payload: header, alignment, rounding (`simulate`; 0 in
    /// `replay`, which cannot tell them from the rest).
    #[cfg_attr(feature = "replay", serde(default))]
    pub overhead: u64,
    /// Free bytes held by the blocks: their share of the free gaps between live blocks
    /// (`simulate`), or of the unused bytes of the resident pages they lie on (`replay`).
    #[cfg_attr(feature = "replay", serde(default))]
    pub stranded: u64,
}

impl Figures {
    /// The bytes wasted: overhead and stranded free bytes.
    pub fn waste(&self) -> u64 {
        self.overhead + self.stranded
    }

    fn add(&mut self, o: &Figures) {
        self.blocks += o.blocks;
        self.live += o.live;
        self.overhead += o.overhead;
        self.stranded += o.stranded;
    }
}

/// A size class's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "replay", derive(serde::Serialize, serde::Deserialize))]
pub struct ClassRow {
    /// The smallest size of the class (bytes).
    pub lo: u64,
    /// The largest size of the class (bytes).
    pub hi: u64,
    /// Its figures.
    #[cfg_attr(feature = "replay", serde(flatten))]
    pub figures: Figures,
}

/// An allocation site's figures.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "replay", derive(serde::Serialize, serde::Deserialize))]
pub struct SiteRow {
    /// The namespace of the blocks.
    pub space: u32,
    /// The site the trace declares (`None`: the blocks without one).
    pub site: Option<u64>,
    /// Its name, where the trace gives one (filled in by the caller, which reads the trace).
    #[cfg_attr(feature = "replay", serde(default))]
    pub name: Option<String>,
    /// Its figures.
    #[cfg_attr(feature = "replay", serde(flatten))]
    pub figures: Figures,
}

impl SiteRow {
    /// The site as `mtf stats` labels it: its name, else `site ID`, else `(no site)`.
    pub fn label(&self) -> String {
        match (&self.name, self.site) {
            (Some(n), _) => n.clone(),
            (None, Some(id)) => format!("site {id}"),
            (None, None) => "(no site)".to_string(),
        }
    }
}

/// The waste of a heap at one moment, by size class and by site.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "replay", derive(serde::Serialize, serde::Deserialize))]
pub struct Snapshot {
    /// Events (operations) done at that moment.
    pub event: u64,
    /// The bytes the heap had: `simulate`'s extent; `replay`'s RSS above its baseline.
    pub total: u64,
    /// Live payload (bytes).
    pub live: u64,
    /// Bytes held by no live block: `simulate`'s free space above the highest live block;
    /// `replay`'s RSS above the baseline outside the resident pages holding live bytes (the
    /// allocator's own: freed memory not returned, metadata, and the replay's own growth).
    pub unattributed: u64,
    /// `replay`: resident pages holding live bytes, and the page size (0 for `simulate`).
    #[cfg_attr(feature = "replay", serde(default))]
    pub pages: u64,
    /// `replay`: the page size (0 for `simulate`).
    #[cfg_attr(feature = "replay", serde(default))]
    pub page_size: u64,
    /// By size class, smallest first; classes without live blocks left out.
    pub classes: Vec<ClassRow>,
    /// By site, most waste first; sites without live blocks left out.
    #[cfg_attr(feature = "replay", serde(default))]
    pub sites: Vec<SiteRow>,
}

impl Snapshot {
    /// The waste: the bytes beyond the live payload (0 when the heap is smaller).
    pub fn waste(&self) -> u64 {
        self.total.saturating_sub(self.live)
    }

    /// The figures of every class summed.
    pub fn attributed(&self) -> Figures {
        let mut f = Figures::default();
        for c in &self.classes {
            f.add(&c.figures);
        }
        f
    }
}

/// The two moments a command attributes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "replay", derive(serde::Serialize, serde::Deserialize))]
pub struct Attributed {
    /// At the peak (`simulate`: when the heap's extent last grew; `replay`: after the event at
    /// which the trace's live bytes peak). `None` where there was none.
    pub at_peak: Option<Snapshot>,
    /// After the last event.
    pub at_end: Option<Snapshot>,
}

// Design: a free gap between two live blocks is split in halves between them rather than
// charged to one side (the block that ends it, say): both blocks hold it in place — with either
// one freed the gap becomes part of a larger free block — so neither side carries it all; and
// the rule is the same for every policy, from the addresses alone.
/// Sorts sites by waste (then live bytes, then site), most first.
pub fn sort_sites(sites: &mut [SiteRow]) {
    sites.sort_by(|a, b| {
        b.figures
            .waste()
            .cmp(&a.figures.waste())
            .then(b.figures.live.cmp(&a.figures.live))
            .then(a.space.cmp(&b.space))
            .then(a.site.cmp(&b.site))
    });
}

/// Figures now, and as they were at the peak (valid when `gen` is the tracker's).
#[derive(Debug, Clone, Copy, Default)]
struct Entry {
    now: Figures,
    at_peak: Figures,
    gen: u32,
}

impl Entry {
    fn fresh(gen: u32) -> Entry {
        Entry {
            gen,
            ..Entry::default()
        }
    }

    /// Before a change: keeps the figures of the peak when they are still the current ones.
    fn settle(&mut self, gen: u32) -> &mut Figures {
        if self.gen != gen {
            self.at_peak = self.now;
            self.gen = gen;
        }
        &mut self.now
    }

    fn peak(&self, gen: u32) -> Figures {
        if self.gen == gen {
            self.at_peak
        } else {
            self.now
        }
    }
}

/// A live block of a model heap.
#[derive(Debug, Clone, Copy)]
struct Span {
    end: u64,
    payload: u64,
    class: u16,
    site: u32,
    /// Its share of the gap below it and of the gap above it.
    below: u64,
    above: u64,
}

/// The totals at the peak.
#[derive(Debug, Clone, Copy)]
struct Moment {
    event: u64,
    extent: u64,
    live: u64,
    top: u64,
}

// Design: the state at the peak is kept the way `stats` keeps its sites' (a generation number
// per entry, settled before a change): a new peak costs O(1), not a copy of every class and
// site, so that a heap growing at most events stays O(log n) per event.
/// Exact attribution over a model heap: fed each placed and freed block, in address order.
#[derive(Debug, Default)]
pub struct Tracker {
    blocks: BTreeMap<u64, Span>,
    classes: Vec<Entry>,
    sites: Vec<Entry>,
    site_keys: Vec<(u32, Option<u64>)>,
    site_ix: FastMap<(u32, Option<u64>), u32>,
    gen: u32,
    peak: Option<Moment>,
    live: u64,
}

impl Tracker {
    /// A tracker of an empty heap.
    pub fn new() -> Self {
        Tracker {
            classes: vec![Entry::default(); CLASSES],
            ..Tracker::default()
        }
    }

    /// The site index of `site` in namespace `space`.
    pub fn site(&mut self, space: u32, site: Option<u64>) -> u32 {
        if let Some(&i) = self.site_ix.get(&(space, site)) {
            return i;
        }
        let i = self.sites.len() as u32;
        self.sites.push(Entry::fresh(self.gen));
        self.site_keys.push((space, site));
        self.site_ix.insert((space, site), i);
        i
    }

    fn change(&mut self, class: u16, site: u32, f: impl Fn(&mut Figures)) {
        let gen = self.gen;
        if let Some(e) = self.classes.get_mut(class as usize) {
            f(e.settle(gen));
        }
        if let Some(e) = self.sites.get_mut(site as usize) {
            f(e.settle(gen));
        }
    }

    /// A block's share of a gap changed from `old` to `share`: its class's and site's
    /// stranded bytes follow.
    fn share(&mut self, (class, site, old): (u16, u32, u64), share: u64) {
        if old != share {
            self.change(class, site, |f| f.stranded = f.stranded - old + share);
        }
    }

    /// A block of `block` bytes placed at `addr` for a request of `payload` bytes from site
    /// index `site` ([`Tracker::site`]).
    pub fn insert(&mut self, addr: u64, block: u64, payload: u64, site: u32) {
        let class = class_of(payload);
        let end = addr.saturating_add(block);
        // The gap below: half to the block under it (if any), the rest to this one.
        let (below, lower) = match self.blocks.range_mut(..addr).next_back() {
            Some((_, l)) => {
                let g = addr.saturating_sub(l.end);
                let old = std::mem::replace(&mut l.above, g / 2);
                (g - g / 2, Some(((l.class, l.site, old), g / 2)))
            }
            None => (addr, None),
        };
        if let Some((who, share)) = lower {
            self.share(who, share);
        }
        // The gap above: half to this block, the rest to the block over it (if any).
        let (above, upper) = match self.blocks.range_mut(addr.saturating_add(1)..).next() {
            Some((&ua, u)) => {
                let g = ua.saturating_sub(end);
                let old = std::mem::replace(&mut u.below, g - g / 2);
                (g / 2, Some(((u.class, u.site, old), g - g / 2)))
            }
            None => (0, None),
        };
        if let Some((who, share)) = upper {
            self.share(who, share);
        }
        self.blocks.insert(
            addr,
            Span {
                end,
                payload,
                class,
                site,
                below,
                above,
            },
        );
        let overhead = block.saturating_sub(payload);
        self.change(class, site, |f| {
            f.blocks += 1;
            f.live += payload;
            f.overhead += overhead;
            f.stranded += below + above;
        });
        self.live += payload;
    }

    /// The block at `addr` freed: its site index, or `None` when no block is there.
    pub fn remove(&mut self, addr: u64) -> Option<u32> {
        let s = self.blocks.remove(&addr)?;
        let overhead = (s.end - addr).saturating_sub(s.payload);
        self.change(s.class, s.site, |f| {
            f.blocks -= 1;
            f.live -= s.payload;
            f.overhead -= overhead;
            f.stranded -= s.below + s.above;
        });
        self.live -= s.payload;
        // The gap it leaves joins the gaps beside it: split between the blocks around.
        let upper_addr = self.blocks.range(addr..).next().map(|(&a, _)| a);
        let lower = self.blocks.range_mut(..addr).next_back().map(|(_, l)| {
            let g = upper_addr.map_or(0, |u| u.saturating_sub(l.end));
            let old = std::mem::replace(&mut l.above, g / 2);
            ((l.class, l.site, old), g / 2, l.end)
        });
        if let Some((who, share, _)) = lower {
            self.share(who, share);
        }
        if let Some(ua) = upper_addr {
            let lower_end = lower.map(|x| x.2);
            if let Some(u) = self.blocks.get_mut(&ua) {
                let share = match lower_end {
                    Some(le) => {
                        let g = ua.saturating_sub(le);
                        g - g / 2
                    }
                    None => ua,
                };
                let old = std::mem::replace(&mut u.below, share);
                let who = (u.class, u.site, old);
                self.share(who, share);
            }
        }
        Some(s.site)
    }

    /// The heap's extent grew to `extent` after `event` events: a new peak, whose figures are
    /// the current ones.
    pub fn peak(&mut self, event: u64, extent: u64) {
        self.gen = self.gen.wrapping_add(1);
        self.peak = Some(Moment {
            event,
            extent,
            live: self.live,
            top: extent.saturating_sub(self.top_end()),
        });
    }

    fn top_end(&self) -> u64 {
        self.blocks.last_key_value().map_or(0, |(_, s)| s.end)
    }

    fn snapshot(&self, m: Moment, fig: impl Fn(&Entry) -> Figures) -> Snapshot {
        let classes = self
            .classes
            .iter()
            .enumerate()
            .filter_map(|(c, e)| {
                let figures = fig(e);
                let (lo, hi) = class_bounds(c as u16);
                (figures.blocks > 0).then_some(ClassRow { lo, hi, figures })
            })
            .collect();
        let mut sites: Vec<SiteRow> = self
            .sites
            .iter()
            .zip(&self.site_keys)
            .filter_map(|(e, &(space, site))| {
                let figures = fig(e);
                (figures.blocks > 0).then_some(SiteRow {
                    space,
                    site,
                    name: None,
                    figures,
                })
            })
            .collect();
        sort_sites(&mut sites);
        Snapshot {
            event: m.event,
            total: m.extent,
            live: m.live,
            unattributed: m.top,
            pages: 0,
            page_size: 0,
            classes,
            sites,
        }
    }

    /// The figures at the peak and, after `event` events with the heap's extent `extent`, at
    /// the end.
    pub fn finish(&self, event: u64, extent: u64) -> Attributed {
        let gen = self.gen;
        let end = Moment {
            event,
            extent,
            live: self.live,
            top: extent.saturating_sub(self.top_end()),
        };
        Attributed {
            at_peak: self.peak.map(|m| self.snapshot(m, |e| e.peak(gen))),
            at_end: Some(self.snapshot(end, |e| e.now)),
        }
    }
}

#[cfg(test)]
mod tests;
