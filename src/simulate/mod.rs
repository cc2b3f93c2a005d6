//! `mtf simulate`: an offline model of classic allocator policies over a trace's heap events —
//! first fit, next fit, best fit, simple segregated storage and a binary buddy system — with the
//! heap's extent over time, its peak and the utilisation CS:APP's `mdriver` scores (peak live
//! payload / peak heap).
//!
//! The model heap starts at address 0 and grows at its top, as `sbrk` does; it never shrinks,
//! so its peak is its final extent. A request of `size` bytes takes a block of
//! `size + header` bytes (at least 1 byte of payload) rounded up to the alignment, and to a power
//! of two under `segregated` and `buddy`. An event asking for an alignment above the heap's adds
//! the difference to the request (room to align the payload anywhere in the block).
//!
//! Every policy costs O(log n) per event (a treap with subtree maxima for first and next fit,
//! a set ordered by size for best fit, per-class stacks and per-order sets for the others).

mod heap;
pub mod live;
mod treap;

use crate::analysis::event::{HeapEvent, HeapOp, OpCounts};
use crate::frag::{Attributed, Tracker};
use heap::Heap;
pub use live::{BlockKey, LiveMap};

/// A placement policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The lowest-addressed free block that fits.
    FirstFit,
    /// The first free block that fits at or after the end of the last block placed, wrapping
    /// around to the bottom of the heap.
    NextFit,
    /// The smallest free block that fits (the lowest-addressed among equals).
    BestFit,
    /// Simple segregated storage: power-of-two size classes, each with its own free list;
    /// blocks are never split or joined.
    Segregated,
    /// A binary buddy system: power-of-two blocks split in halves and joined with their buddy.
    Buddy,
}

impl Policy {
    /// Every policy, in the order reports list them.
    pub const ALL: [Policy; 5] = [
        Policy::FirstFit,
        Policy::NextFit,
        Policy::BestFit,
        Policy::Segregated,
        Policy::Buddy,
    ];

    /// The policy's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Policy::FirstFit => "first-fit",
            Policy::NextFit => "next-fit",
            Policy::BestFit => "best-fit",
            Policy::Segregated => "segregated",
            Policy::Buddy => "buddy",
        }
    }

    /// The policy named `name` (as [`Policy::name`] spells it).
    pub fn from_name(name: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// What a simulation models.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// The placement policy.
    pub policy: Policy,
    /// Block alignment in bytes (a power of two): block sizes are rounded up to it.
    pub align: u64,
    /// Bytes of header each block carries before its payload.
    pub header: u64,
    /// Requests above this many bytes are refused (counted, not placed).
    pub max_block_size: u64,
    /// Attribute the waste by size class and site ([`Report::frag`]); it costs an ordered
    /// map of the live blocks by address beside the policy's own structures.
    pub attribute: bool,
}

impl Options {
    /// `policy` with `mdriver`'s 8-byte alignment, no header, blocks up to 1 TiB, and the
    /// waste attributed.
    pub fn new(policy: Policy) -> Self {
        Options {
            policy,
            align: 8,
            header: 0,
            max_block_size: 1 << 40,
            attribute: true,
        }
    }
}

/// One point of a curve over the trace: after `event` events, the heap's extent and the
/// payload of the live blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "replay", derive(serde::Serialize, serde::Deserialize))]
pub struct Sample {
    /// Events seen so far.
    pub event: u64,
    /// The heap's extent (bytes).
    pub heap: u64,
    /// Live payload (bytes requested by live blocks).
    pub live: u64,
}

/// At most `2 × cap` evenly spaced points of a curve whose length is not known in advance:
/// when full, the spacing doubles and the points between go.
#[derive(Debug, Clone)]
pub struct Samples {
    cap: usize,
    every: u64,
    points: Vec<Sample>,
}

impl Samples {
    /// About `cap` points (between `cap` and `2 × cap` once the curve is long).
    pub fn new(cap: usize) -> Self {
        Samples {
            cap: cap.max(1),
            every: 1,
            points: Vec::new(),
        }
    }

    /// Whether a point after `event` events is wanted.
    pub fn due(&self, event: u64) -> bool {
        event.is_multiple_of(self.every)
    }

    /// Records a point (call when [`Samples::due`]).
    pub fn push(&mut self, sample: Sample) {
        self.points.push(sample);
        if self.points.len() >= 2 * self.cap {
            self.every *= 2;
            let every = self.every;
            self.points.retain(|p| p.event % every == 0);
        }
    }

    /// The spacing of the points (a power of two): every point but the last is after a
    /// multiple of this many events.
    pub fn every(&self) -> u64 {
        self.every
    }

    /// The points, with `last` added when it is not the last one already.
    pub fn finish(mut self, last: Sample) -> Vec<Sample> {
        if self.points.last().map(|p| p.event) != Some(last.event) {
            self.points.push(last);
        }
        self.points
    }
}

/// What a simulation found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The options it ran with.
    pub options: Options,
    /// Heap events seen.
    pub events: u64,
    /// The operations the model carried out, by kind: allocations placed; frees,
    /// reallocations (a move with a new size) and moves without one (a copying collector's)
    /// of live blocks. Apart from them, counted in `unknown_frees` and `unknown_moves` only:
    /// frees naming no live block (a block allocated before tracing began, NULL), skipped, and
    /// moves whose old block was not live, whose new block is placed as a fresh allocation
    /// when the move gives its size.
    pub counts: OpCounts,
    /// Requests over the maximum block size (or past a 64-bit heap), not placed.
    pub refused: u64,
    /// The largest refused request: (record, bytes).
    pub largest_refused: Option<(u64, u64)>,
    /// The largest live payload at any point (bytes).
    pub peak_live: u64,
    /// The heap's extent at the end (its peak: the model heap never shrinks).
    pub peak_heap: u64,
    /// Live payload at the end.
    pub final_live: u64,
    /// Blocks live at the end.
    pub final_blocks: u64,
    /// The heap's extent and live payload over the trace.
    pub samples: Vec<Sample>,
    /// The waste by size class and site when the heap's extent last grew, and at the end
    /// ([`crate::frag::Tracker`]).
    pub frag: Attributed,
}

impl Report {
    /// `mdriver`'s utilisation: peak live payload / peak heap (0 for an empty heap).
    pub fn utilisation(&self) -> f64 {
        if self.peak_heap == 0 {
            0.0
        } else {
            self.peak_live as f64 / self.peak_heap as f64
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Placed {
    addr: u64,
    block: u64,
    payload: u64,
    /// Its site's index in the fragmentation tracker.
    site: u32,
}

/// A simulation fed one event at a time.
pub struct Simulator {
    options: Options,
    heap: Box<dyn Heap + Send>,
    live: LiveMap<BlockKey, Placed>,
    live_payload: u64,
    samples: Samples,
    frag: Tracker,
    report: Report,
}

impl Simulator {
    /// A simulation with an empty heap; `options.align` must be a power of two.
    pub fn new(options: Options) -> Self {
        let align = options.align.max(1).next_power_of_two();
        let options = Options { align, ..options };
        let min_block = options.header.saturating_add(1).saturating_add(align - 1) & !(align - 1);
        Simulator {
            options,
            heap: heap::new_heap(options.policy, align, min_block),
            live: LiveMap::new(),
            live_payload: 0,
            samples: Samples::new(256),
            frag: Tracker::new(),
            report: Report {
                options,
                events: 0,
                counts: OpCounts::default(),
                refused: 0,
                largest_refused: None,
                peak_live: 0,
                peak_heap: 0,
                final_live: 0,
                final_blocks: 0,
                samples: Vec::new(),
                frag: Attributed::default(),
            },
        }
    }

    /// The block size a request takes, or `None` (counted as refused) when it is too large.
    fn block_size(&mut self, record: u64, size: u64, align: Option<u64>) -> Option<u64> {
        let pad = align.map_or(0, |a| a.saturating_sub(self.options.align));
        let rounded = if size > self.options.max_block_size {
            None
        } else {
            size.checked_add(self.options.header)
                .and_then(|s| s.checked_add(pad))
                .and_then(|s| self.heap.round(s))
        };
        if rounded.is_none() {
            self.report.refused += 1;
            if self.report.largest_refused.is_none_or(|(_, s)| s < size) {
                self.report.largest_refused = Some((record, size));
            }
        }
        rounded
    }

    fn place(
        &mut self,
        record: u64,
        key: BlockKey,
        size: u64,
        align: Option<u64>,
        site: u32,
    ) -> bool {
        let Some(block) = self.block_size(record, size, align) else {
            return false;
        };
        let Some((addr, block)) = self.heap.alloc(block) else {
            self.report.refused += 1;
            return false;
        };
        self.hold(
            key,
            Placed {
                addr,
                block,
                payload: size,
                site,
            },
        );
        true
    }

    /// The tracker's index of the site of `event` (0 when the waste is not attributed).
    fn site(&mut self, event: &HeapEvent) -> u32 {
        if self.options.attribute {
            self.frag.site(event.space, event.site)
        } else {
            0
        }
    }

    /// A placed block becomes live.
    fn hold(&mut self, key: BlockKey, p: Placed) {
        if self.options.attribute {
            self.frag.insert(p.addr, p.block, p.payload, p.site);
        }
        self.live.insert(key, p);
        self.live_payload += p.payload;
    }

    /// A live block is given back to the heap.
    fn release(&mut self, p: &Placed) {
        if self.options.attribute {
            self.frag.remove(p.addr);
        }
        self.heap.free(p.addr, p.block);
        self.live_payload -= p.payload;
    }

    /// Plays one event.
    pub fn feed(&mut self, event: &HeapEvent) {
        self.report.events += 1;
        let extent = self.heap.extent();
        match event.op {
            HeapOp::Alloc { id, size, align } => {
                let site = self.site(event);
                if self.place(event.record, BlockKey::of(event, id), size, align, site) {
                    self.report.counts.count_kind(event.op.kind());
                }
            }
            HeapOp::Free { id } => match self.live.remove(&BlockKey::of(event, id)) {
                Some(p) => {
                    self.release(&p);
                    self.report.counts.count_kind(event.op.kind());
                }
                None => self.report.counts.count_unknown(event.op.kind()),
            },
            HeapOp::Move { old, new, size } => {
                let new_key = BlockKey::of(event, new);
                match self.live.remove(&BlockKey::of(event, old)) {
                    Some(p) => {
                        let payload = size.unwrap_or(p.payload);
                        // A reallocation with a site of its own is that site's; else the
                        // block stays its allocation's.
                        let site = match event.site {
                            Some(_) => self.site(event),
                            None => p.site,
                        };
                        self.report.counts.count_kind(event.op.kind());
                        match self.block_size(event.record, payload, None) {
                            // Stays in place when its block still holds it.
                            Some(b) if b <= p.block => {
                                if self.options.attribute {
                                    self.frag.remove(p.addr);
                                }
                                self.live_payload -= p.payload;
                                self.hold(new_key, Placed { payload, site, ..p });
                            }
                            // Moves: the new block is placed while the old one is still held
                            // (its contents are copied), then the old one is freed.
                            Some(b) => {
                                let placed = self.heap.alloc(b);
                                self.release(&p);
                                match placed {
                                    Some((addr, block)) => self.hold(
                                        new_key,
                                        Placed {
                                            addr,
                                            block,
                                            payload,
                                            site,
                                        },
                                    ),
                                    None => self.report.refused += 1,
                                }
                            }
                            // Too large: the old block is freed, as a failed realloc's caller
                            // would have to.
                            None => self.release(&p),
                        }
                    }
                    None => {
                        self.report.counts.count_unknown(event.op.kind());
                        if let Some(size) = size {
                            let site = self.site(event);
                            self.place(event.record, new_key, size, None, site);
                        }
                    }
                }
            }
        }
        self.report.peak_live = self.report.peak_live.max(self.live_payload);
        if self.heap.extent() > extent {
            self.frag.peak(self.report.events, self.heap.extent());
        }
        if self.samples.due(self.report.events) {
            let s = self.sample();
            self.samples.push(s);
        }
    }

    fn sample(&self) -> Sample {
        Sample {
            event: self.report.events,
            heap: self.heap.extent(),
            live: self.live_payload,
        }
    }

    /// The report after the last event.
    pub fn finish(self) -> Report {
        let last = self.sample();
        let mut report = self.report;
        report.peak_heap = self.heap.extent();
        report.final_live = self.live_payload;
        report.final_blocks = self.live.len() as u64;
        report.samples = self.samples.finish(last);
        if self.options.attribute {
            report.frag = self.frag.finish(report.events, report.peak_heap);
        }
        report
    }
}

/// Simulates `policy` (with the other options of `options`) over `events`.
pub fn simulate<I: IntoIterator<Item = HeapEvent>>(options: Options, events: I) -> Report {
    let mut sim = Simulator::new(options);
    for e in events {
        sim.feed(&e);
    }
    sim.finish()
}

#[cfg(test)]
mod tests;
