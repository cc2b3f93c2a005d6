//! The trace shapes of `gen_hatf --shape NAME` other than the default one (docs/performance.md):
//! each writes the body of a trace for its own DTD in `benches/`, byte by byte from
//! docs/format.md, as the default generator does.

use super::{Rng, Totals, P_DEFAULT, P_DELTA, P_WIDTH, TAG_META, TAG_SECTION};
use std::io::{self, Write};

/// Writes records and counts them.
struct Sink<'w, W: Write> {
    out: &'w mut W,
    totals: Totals,
}

impl<W: Write> Sink<'_, W> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.totals.bytes += bytes.len() as u64;
        self.out.write_all(bytes)
    }
    /// A metadata record (§5.4) with one 8-byte word.
    fn meta(&mut self, tag: u8, slot: u8, property: u8, word: u64) -> io::Result<()> {
        self.totals.records += 1;
        self.put(&[TAG_META, tag, slot, property])?;
        self.put(&word.to_le_bytes())
    }
    /// Starts a data record with its tag.
    fn data(&mut self, tag: u8) -> io::Result<()> {
        self.totals.records += 1;
        self.totals.data += 1;
        self.put(&[tag])
    }
    fn section(&mut self) -> io::Result<()> {
        self.totals.records += 1;
        self.put(&[TAG_SECTION, 1])
    }
}

/// A size as real allocators see them: half under 64 bytes, a tail up to 1 MiB.
fn skewed_size(rng: &mut Rng) -> u64 {
    let (lo, hi) = match rng.below(1000) {
        0..=499 => (8, 64),
        500..=799 => (64, 512),
        800..=949 => (512, 4096),
        950..=998 => (4096, 65536),
        _ => (65536, 1 << 20),
    };
    (lo + rng.below(hi - lo)) & !7
}

/// The number of live blocks the generator aims at: phases of 2^20 records that swell and
/// shrink, `base` blocks per step.
fn target(i: u64, base: u64) -> u64 {
    base * (1 + ((i >> 20) & 3))
}

// ---------------------------------------------------------------------------------------------
// metadata-heavy (benches/bench-metadata.dtd)

const MH_ALLOC: u8 = 4;
const MH_REALLOC: u8 = 5;
const MH_FREE: u8 = 6;
/// Slots of (alloc, realloc, free): size, time, thread, heap (0: none).
const MH_SIZE: [u8; 3] = [1, 1, 0];
const MH_TIME: [u8; 3] = [3, 4, 2];
const MH_THREAD: [u8; 3] = [4, 5, 3];
const MH_HEAP: [u8; 3] = [5, 6, 4];
const MH_TAGS: [u8; 3] = [MH_ALLOC, MH_REALLOC, MH_FREE];
/// The address chains: alloc.address (2), realloc.old (2), realloc.address (3), free.address (1).
const MH_CHAINS: [(u8, u8); 4] = [
    (MH_ALLOC, 2),
    (MH_REALLOC, 2),
    (MH_REALLOC, 3),
    (MH_FREE, 1),
];

struct MetadataHeavy<'w, W: Write> {
    s: Sink<'w, W>,
    rng: Rng,
    live: Vec<(u64, u64)>,
    reuse: Vec<u64>,
    next: u64,
    unknown: u64,
    time: u64,
    prev_time: [u64; 3],
    prev_addr: [u64; 4],
    size_width: [u8; 2],
    meta: u64,
}

impl<W: Write> MetadataHeavy<'_, W> {
    fn meta(&mut self, tag: u8, slot: u8, property: u8, word: u64) -> io::Result<()> {
        self.meta += 1;
        self.s.meta(tag, slot, property, word)
    }

    fn address(&mut self, size: u64) -> u64 {
        if self.rng.chance(600) {
            if let Some(a) = self.reuse.pop() {
                return a;
            }
        }
        let a = self.next;
        self.next += (size + 15) & !15;
        a
    }

    fn release(&mut self, addr: u64) {
        if self.reuse.len() < 4096 {
            self.reuse.push(addr);
        }
    }

    /// The 4-byte step that writes `addr` on chain `c`, restarting the chain with a metadata
    /// record when it does not fit (so before the record).
    fn addr_step(&mut self, c: usize, addr: u64) -> io::Result<[u8; 4]> {
        let step = addr.wrapping_sub(self.prev_addr[c]) as i64;
        let step = match i32::try_from(step) {
            Ok(s) => s,
            Err(_) => {
                let (tag, slot) = MH_CHAINS[c];
                self.meta(tag, slot, P_DELTA, addr)?;
                0
            }
        };
        self.prev_addr[c] = addr;
        Ok(step.to_le_bytes())
    }

    fn fit(&mut self, t: usize, size: Option<u64>) -> io::Result<()> {
        if let Some(size) = size {
            if size > 0xFFFF && self.size_width[t] == 2 {
                self.meta(MH_TAGS[t], MH_SIZE[t], P_WIDTH, 4)?;
                self.size_width[t] = 4;
            }
        }
        if self.time - self.prev_time[t] > i16::MAX as u64 {
            self.meta(MH_TAGS[t], MH_TIME[t], P_DELTA, self.time)?;
            self.prev_time[t] = self.time;
        }
        Ok(())
    }

    fn put_size(&mut self, t: usize, size: u64) -> io::Result<()> {
        if self.size_width[t] == 2 {
            self.s.put(&(size as u16).to_le_bytes())
        } else {
            self.s.put(&(size as u32).to_le_bytes())
        }
    }

    fn put_time(&mut self, t: usize) -> io::Result<()> {
        let step = (self.time - self.prev_time[t]) as i16;
        self.prev_time[t] = self.time;
        self.s.put(&step.to_le_bytes())
    }

    fn put_label(&mut self, max: u64) -> io::Result<()> {
        let len = self.rng.below(max + 1) as usize;
        let mut b = [0u8; 33];
        b[0] = len as u8;
        for c in &mut b[1..=len] {
            *c = b'a' + self.rng.below(26) as u8;
        }
        self.s.put(&b[..=len])
    }

    /// One metadata record that changes a default, restarts a delta chain or changes a width.
    fn filler(&mut self) -> io::Result<()> {
        let t = self.rng.below(3) as usize;
        let tag = MH_TAGS[t];
        match self.rng.below(5) {
            0 => {
                let v = self.rng.below(8);
                self.meta(tag, MH_THREAD[t], P_DEFAULT, v)
            }
            1 => {
                let v = self.rng.below(4);
                self.meta(tag, MH_HEAP[t], P_DEFAULT, v)
            }
            2 => {
                self.prev_time[t] = self.time;
                self.meta(tag, MH_TIME[t], P_DELTA, self.time)
            }
            3 if t < 2 => {
                // Narrow or widen the size; a size that does not fit widens it again (`fit`).
                let w = 6 - self.size_width[t];
                self.size_width[t] = w;
                self.meta(tag, MH_SIZE[t], P_WIDTH, u64::from(w))
            }
            _ => {
                let c = self.rng.below(4) as usize;
                let (tag, slot) = MH_CHAINS[c];
                let base = self.prev_addr[c] ^ (self.rng.below(1 << 16) << 4);
                self.prev_addr[c] = base;
                self.meta(tag, slot, P_DELTA, base)
            }
        }
    }

    fn run(&mut self, data: u64) -> io::Result<Totals> {
        self.s.section()?;
        for i in 0..data {
            // One record in six a metadata record: 5 data records per metadata record.
            if self.meta * 5 < i {
                self.filler()?;
            }
            self.time += 1 + self.rng.below(64);
            let live = self.live.len() as u64;
            let odds = if live < target(i, 20_000) { 620 } else { 380 };
            let r = self.rng.below(1000);
            if live == 0 || r < odds {
                let size = skewed_size(&mut self.rng);
                let addr = self.address(size);
                self.fit(0, Some(size))?;
                let a = self.addr_step(0, addr)?;
                self.s.data(MH_ALLOC)?;
                self.put_size(0, size)?;
                self.s.put(&a)?;
                self.put_time(0)?;
                self.put_label(24)?;
                self.live.push((addr, size));
            } else if r < odds + 50 {
                let k = self.rng.below(live) as usize;
                let (old, old_size) = self.live[k];
                let size = skewed_size(&mut self.rng);
                let addr = if size <= old_size || self.rng.chance(300) {
                    old
                } else {
                    self.release(old);
                    self.address(size)
                };
                self.fit(1, Some(size))?;
                let o = self.addr_step(1, old)?;
                let a = self.addr_step(2, addr)?;
                self.s.data(MH_REALLOC)?;
                self.put_size(1, size)?;
                self.s.put(&o)?;
                self.s.put(&a)?;
                self.put_time(1)?;
                self.live[k] = (addr, size);
            } else {
                // One free in a thousand of a block allocated before tracing began.
                let addr = if self.rng.chance(1) {
                    self.unknown += 16;
                    0x1000_0000_0000 + self.unknown
                } else {
                    let k = self.rng.below(live) as usize;
                    let (addr, _) = self.live.swap_remove(k);
                    self.release(addr);
                    addr
                };
                self.fit(2, None)?;
                let a = self.addr_step(3, addr)?;
                self.s.data(MH_FREE)?;
                self.s.put(&a)?;
                self.put_time(2)?;
                self.put_label(8)?;
            }
        }
        Ok(self.s.totals)
    }
}

// ---------------------------------------------------------------------------------------------
// heaptrack-like (benches/bench-heaptrack.dtd)

const HT_INFO: u8 = 4;
const HT_ALLOC: u8 = 5;
const HT_FREE: u8 = 6;
const HT_STAMP: u8 = 7;

struct HeaptrackLike<'w, W: Write> {
    s: Sink<'w, W>,
    rng: Rng,
    /// The live blocks, by the info they hold.
    live: Vec<u32>,
    /// Per info: live blocks.
    count: Vec<u32>,
    unknown: u64,
    until_stamp: u64,
}

impl<W: Write> HeaptrackLike<'_, W> {
    fn run(&mut self, data: u64) -> io::Result<Totals> {
        self.s.section()?;
        let mut i = 0;
        while i < data {
            i += 1;
            if self.until_stamp == 0 {
                // `c <ms>`: a 2-byte step (under 2^15).
                let step = 1 + self.rng.below(100);
                self.s.data(HT_STAMP)?;
                self.s.put(&(step as i16).to_le_bytes())?;
                self.until_stamp = 200 + self.rng.below(2000);
                continue;
            }
            self.until_stamp -= 1;
            let live = self.live.len() as u64;
            let odds = if live < target(i, 50_000) { 620 } else { 380 };
            let r = self.rng.below(1000);
            if live == 0 || r < odds {
                // A new allocation info for one allocation in fifty (a new call stack or size).
                if self.count.is_empty() || self.rng.chance(20) {
                    if i >= data {
                        break;
                    }
                    i += 1;
                    let size = skewed_size(&mut self.rng);
                    let trace = 1 + self.rng.below(50_000);
                    self.s.data(HT_INFO)?;
                    self.s.put(&(size as u32).to_le_bytes())?;
                    self.s.put(&(trace as u32).to_le_bytes())?;
                    self.count.push(0);
                }
                let n = self.count.len() as u64;
                // Most allocations reuse one of the latest infos (a hot call stack).
                let info = if self.rng.chance(700) {
                    n - 1 - self.rng.below(n.min(64))
                } else {
                    self.rng.below(n)
                } as u32;
                self.s.data(HT_ALLOC)?;
                self.s.put(&info.to_le_bytes())?;
                self.count[info as usize] += 1;
                self.live.push(info);
            } else {
                let info = if self.rng.chance(1) {
                    // An info this trace never defined: a block allocated before tracing began.
                    self.unknown += 1;
                    0x4000_0000 + self.unknown as u32
                } else {
                    let k = self.rng.below(live) as usize;
                    let info = self.live.swap_remove(k);
                    self.count[info as usize] -= 1;
                    info
                };
                self.s.data(HT_FREE)?;
                self.s.put(&info.to_le_bytes())?;
            }
        }
        Ok(self.s.totals)
    }
}

// ---------------------------------------------------------------------------------------------
// et-like (benches/bench-et.dtd)

const ET_ALLOC: u8 = 4;
const ET_DEATH: u8 = 6;
const ET_ENTRY: u8 = 8;
const ET_EXIT: u8 = 9;
/// (tag, thread slot) of each record type.
const ET_THREAD: [(u8, u8); 4] = [(ET_ALLOC, 5), (ET_DEATH, 2), (ET_ENTRY, 3), (ET_EXIT, 2)];

struct EtLike<'w, W: Write> {
    s: Sink<'w, W>,
    rng: Rng,
    live: Vec<u32>,
    born: u64,
    unknown: u64,
    stacks: [Vec<u16>; 8],
    thread: usize,
    until_switch: u64,
    tick: u64,
    prev_tick: u64,
    /// Previous values of the delta chains: alloc.typeid, entry.methodid, exit.methodid.
    prev_type: u64,
    prev_entry: u64,
    prev_exit: u64,
}

/// Object ids: 31-bit identity hashes, distinct for the first 2^31 counts.
fn object_id(n: u64) -> u32 {
    (n.wrapping_mul(0x9E37_79B1) & 0x7FFF_FFFF) as u32
}

/// A 2-byte step of a delta chain whose values stay under 2^15.
fn step(prev: &mut u64, v: u64) -> [u8; 2] {
    let s = v.wrapping_sub(*prev) as i16;
    *prev = v;
    s.to_le_bytes()
}

impl<W: Write> EtLike<'_, W> {
    fn run(&mut self, data: u64) -> io::Result<Totals> {
        self.s.section()?;
        for i in 0..data {
            if self.until_switch == 0 {
                self.thread = self.rng.below(8) as usize;
                for (tag, slot) in ET_THREAD {
                    self.s.meta(tag, slot, P_DEFAULT, self.thread as u64)?;
                }
                self.until_switch = 50 + self.rng.below(500);
            }
            self.until_switch -= 1;
            let live = self.live.len() as u64;
            let odds = if live < target(i, 50_000) { 300 } else { 200 };
            let r = self.rng.below(1000);
            let depth = self.stacks[self.thread].len();
            if r < 550 {
                // Methods nest deeply: a random walk of the depth, up to 2000 levels.
                if depth < 2000 && (depth == 0 || self.rng.chance(500)) {
                    let method = 1 + self.rng.below(4000);
                    let receiver = if live > 0 && self.rng.chance(600) {
                        self.live[self.rng.below(live) as usize]
                    } else {
                        0
                    };
                    let m = step(&mut self.prev_entry, method);
                    self.s.data(ET_ENTRY)?;
                    self.s.put(&m)?;
                    self.s.put(&receiver.to_le_bytes())?;
                    self.stacks[self.thread].push(method as u16);
                } else {
                    let method = self.stacks[self.thread].pop().map_or(0, u64::from);
                    let m = step(&mut self.prev_exit, method);
                    self.s.data(ET_EXIT)?;
                    self.s.put(&m)?;
                }
            } else if live == 0 || r < 550 + odds {
                self.born += 1;
                let id = object_id(self.born);
                let size = if self.rng.chance(900) {
                    16 + 8 * self.rng.below(16)
                } else {
                    skewed_size(&mut self.rng)
                };
                let t = step(&mut self.prev_type, 1 + self.rng.below(1500));
                let site = self.rng.below(100_000) as u32;
                self.s.data(ET_ALLOC)?;
                self.s.put(&id.to_le_bytes())?;
                self.s.put(&(size as u32).to_le_bytes())?;
                self.s.put(&t)?;
                self.s.put(&site.to_le_bytes())?;
                self.live.push(id);
            } else {
                let id = if self.rng.chance(1) {
                    // Born before tracing began: counts far from those of the objects born here.
                    self.unknown += 1;
                    object_id((1 << 30) + self.unknown)
                } else {
                    let k = self.rng.below(live) as usize;
                    self.live.swap_remove(k)
                };
                self.tick += self.rng.below(4);
                let t = step(&mut self.prev_tick, self.tick);
                self.s.data(ET_DEATH)?;
                self.s.put(&id.to_le_bytes())?;
                self.s.put(&t)?;
            }
        }
        Ok(self.s.totals)
    }
}

/// Writes the body (after the header) of a trace of `shape`.
pub fn body<W: Write>(
    shape: super::Shape,
    out: &mut W,
    data: u64,
    seed: u64,
) -> io::Result<Totals> {
    let s = Sink {
        out,
        totals: Totals::default(),
    };
    let rng = Rng(seed);
    match shape {
        super::Shape::Default => unreachable!("the default shape is the Gen of gen_hatf.rs"),
        super::Shape::MetadataHeavy => MetadataHeavy {
            s,
            rng,
            live: Vec::new(),
            reuse: Vec::new(),
            next: 0x7f00_0000_0000,
            unknown: 0,
            time: 0,
            prev_time: [0; 3],
            prev_addr: [0; 4],
            size_width: [4, 4],
            meta: 0,
        }
        .run(data),
        super::Shape::HeaptrackLike => HeaptrackLike {
            s,
            rng,
            live: Vec::new(),
            count: Vec::new(),
            unknown: 0,
            until_stamp: 0,
        }
        .run(data),
        super::Shape::EtLike => EtLike {
            s,
            rng,
            live: Vec::new(),
            born: 0,
            unknown: 0,
            stacks: Default::default(),
            thread: 0,
            until_switch: 0,
            tick: 0,
            prev_tick: 0,
            prev_type: 0,
            prev_entry: 0,
            prev_exit: 0,
        }
        .run(data),
    }
}
