//! Generate a realistic HATF benchmark trace of any size, deterministically from a seed:
//! `cargo run --release --example gen_hatf -- RECORDS OUT.mtf [--seed N] [--shape SHAPE]`.
//!
//! RECORDS is the number of data records (`1M`, `10M`, `100M`, `400M` or a plain number); the
//! trace also holds the metadata records that switch threads and widths. The DTD is
//! `benches/hatf-bench.dtd`, written beside the output as `hatf-bench.dtd` (`-` writes the trace
//! to standard output and no DTD: read it with `--dtd benches/hatf-bench.dtd`).
//!
//! `--shape` chooses what the trace looks like (docs/performance.md, "Trace shapes"); each shape
//! has its DTD in `benches/`, written beside the output under its own name:
//! * `default` (`hatf-bench.dtd`): the shape below;
//! * `metadata-heavy` (`bench-metadata.dtd`): what the paper designed Meta-TF for, one record in
//!   six a metadata record changing a default, a delta base or a width, and byte strings;
//! * `heaptrack-like` (`bench-heaptrack.dtd`): heaptrack's `a`/`+`/`-`/`c` lines, many live
//!   blocks sharing each allocation info;
//! * `et-like` (`bench-et.dtd`): Elephant Tracks' allocations, deaths and method entries and
//!   exits nesting deeply on eight threads, many object ids.
//!
//! What the default trace looks like (docs/performance.md):
//! * sizes skewed as real allocators see them: half under 64 bytes, a tail up to 1 MiB;
//! * addresses from four arenas, freed blocks reused last-in first-out;
//! * frees of live blocks only, reallocs (5 %) that stay in place or move;
//! * times as 2-byte deltas per record type; eight threads switched by `default` metadata
//!   records every few hundred to few thousand records;
//! * the size field's width changing between 2 and 4 bytes by metadata records.
//!
//! The bytes are written by hand here, from docs/format.md, without the library: the same
//! generator serves the hand-written reader (benches/handwritten.rs) and `mtf`, and a trace over
//! 4 GiB streams out in one pass (a first pass without output measures it, so the header is
//! exact and written first).

// Under `cargo test` the example is built as a test: its `main` is not called.
#![cfg_attr(test, allow(dead_code))]

use std::io::{self, BufWriter, Write};

#[path = "gen_hatf/shapes.rs"]
mod shapes;

/// What the trace looks like (`--shape`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Default,
    MetadataHeavy,
    HeaptrackLike,
    EtLike,
}

impl Shape {
    pub const ALL: [(&'static str, Shape); 4] = [
        ("default", Shape::Default),
        ("metadata-heavy", Shape::MetadataHeavy),
        ("heaptrack-like", Shape::HeaptrackLike),
        ("et-like", Shape::EtLike),
    ];

    /// The DTD the traces of this shape are written for: its name and its text.
    pub fn dtd(self) -> (&'static str, &'static str) {
        match self {
            Shape::Default => ("hatf-bench.dtd", include_str!("../benches/hatf-bench.dtd")),
            Shape::MetadataHeavy => (
                "bench-metadata.dtd",
                include_str!("../benches/bench-metadata.dtd"),
            ),
            Shape::HeaptrackLike => (
                "bench-heaptrack.dtd",
                include_str!("../benches/bench-heaptrack.dtd"),
            ),
            Shape::EtLike => ("bench-et.dtd", include_str!("../benches/bench-et.dtd")),
        }
    }
}

const TAG_SECTION: u8 = 2;
const TAG_META: u8 = 3;
const TAG_ALLOC: u8 = 4;
const TAG_REALLOC: u8 = 5;
const TAG_FREE: u8 = 6;

/// Metadata property codes (docs/format.md §5.4).
const P_WIDTH: u8 = 0;
const P_DELTA: u8 = 3;
const P_DEFAULT: u8 = 4;

/// Slots (§4.4) of `size`, `time` and `thread` in alloc, realloc and free.
const TYPES: [(u8, Option<u8>, u8, u8); 3] = [
    // (tag, size slot, time slot, thread slot)
    (TAG_ALLOC, Some(1), 3, 4),
    (TAG_REALLOC, Some(1), 4, 5),
    (TAG_FREE, None, 2, 3),
];

/// splitmix64: small, fast and the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        ((self.next() >> 32) * n) >> 32
    }
    fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }
}

/// A byte sink that counts what it is given: the first pass measures the trace.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What a pass wrote.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    /// Records after `start`: the section record, metadata and data.
    records: u64,
    /// Bytes after `start`.
    bytes: u64,
    data: u64,
}

struct Gen<'w, W: Write> {
    out: &'w mut W,
    rng: Rng,
    totals: Totals,
    live: Vec<(u64, u64)>,
    arenas: [u64; 4],
    reuse: [Vec<u64>; 4],
    time: u64,
    /// The previous time of each record type (a delta is per record type and slot).
    prev_time: [u64; 3],
    size_width: [u8; 2],
    until_switch: u64,
    thread: u64,
}

impl<'w, W: Write> Gen<'w, W> {
    fn new(out: &'w mut W, seed: u64) -> Self {
        Gen {
            out,
            rng: Rng(seed),
            totals: Totals::default(),
            live: Vec::new(),
            arenas: [0; 4],
            reuse: Default::default(),
            time: 0,
            prev_time: [0; 3],
            size_width: [4, 4],
            until_switch: 0,
            thread: 0,
        }
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.totals.bytes += bytes.len() as u64;
        self.out.write_all(bytes)
    }

    fn meta(&mut self, tag: u8, slot: u8, property: u8, word: Option<u64>) -> io::Result<()> {
        self.totals.records += 1;
        self.put(&[TAG_META, tag, slot, property])?;
        if let Some(w) = word {
            self.put(&w.to_le_bytes())?;
        }
        Ok(())
    }

    fn size(&mut self) -> u64 {
        let r = self.rng.below(1000);
        let (lo, hi) = match r {
            0..=499 => (8, 64),
            500..=799 => (64, 512),
            800..=949 => (512, 4096),
            950..=998 => (4096, 65536),
            _ => (65536, 1 << 20),
        };
        (lo + self.rng.below(hi - lo)) & !7
    }

    fn address(&mut self, size: u64) -> u64 {
        let arena = self.rng.below(4) as usize;
        if self.rng.chance(600) {
            if let Some(a) = self.reuse[arena].pop() {
                return a;
            }
        }
        let base = 0x7f00_0000_0000 + ((arena as u64) << 36);
        let a = base + self.arenas[arena];
        self.arenas[arena] += (size + 15) & !15;
        a
    }

    fn release(&mut self, addr: u64) {
        let arena = ((addr - 0x7f00_0000_0000) >> 36) as usize & 3;
        if self.reuse[arena].len() < 4096 {
            self.reuse[arena].push(addr);
        }
    }

    /// Widens the record type's size field, by a metadata record before the record, when
    /// `size` does not fit its current width.
    fn fit_size(&mut self, which: usize, size: u64) -> io::Result<()> {
        if size > 0xFFFF && self.size_width[which] == 2 {
            self.meta(TYPES[which].0, 1, P_WIDTH, Some(4))?;
            self.size_width[which] = 4;
        }
        Ok(())
    }

    /// Writes `size` in the record type's current width.
    fn put_size(&mut self, which: usize, size: u64) -> io::Result<()> {
        if self.size_width[which] == 2 {
            self.put(&(size as u16).to_le_bytes())
        } else {
            self.put(&(size as u32).to_le_bytes())
        }
    }

    /// Writes the time as a 2-byte step from the record type's previous time; a step that
    /// does not fit restarts the delta chain with a metadata record first.
    fn fit_time(&mut self, which: usize) -> io::Result<()> {
        if self.time - self.prev_time[which] > i16::MAX as u64 {
            let (tag, _, time_slot, _) = TYPES[which];
            // `delta` takes the slot's last width again (§6.3): 2 bytes.
            self.meta(tag, time_slot, P_DELTA, Some(self.time))?;
            self.prev_time[which] = self.time;
        }
        Ok(())
    }

    fn put_time(&mut self, which: usize) -> io::Result<()> {
        let step = (self.time - self.prev_time[which]) as i16;
        self.prev_time[which] = self.time;
        self.put(&step.to_le_bytes())
    }

    fn run(&mut self, data: u64) -> io::Result<Totals> {
        self.totals.records += 1;
        self.put(&[TAG_SECTION, 1])?;
        for (tag, _, time_slot, _) in TYPES {
            self.meta(tag, time_slot, P_DELTA, Some(0))?;
            self.meta(tag, time_slot, P_WIDTH, Some(2))?;
        }
        for i in 0..data {
            if self.until_switch == 0 {
                self.thread = self.rng.below(8);
                for (tag, _, _, thread_slot) in TYPES {
                    self.meta(tag, thread_slot, P_DEFAULT, Some(self.thread))?;
                }
                self.until_switch = 100 + self.rng.below(3000);
            }
            self.until_switch -= 1;
            if i % 20_000 == 0 && self.rng.chance(500) {
                for (which, (tag, ..)) in TYPES.iter().take(2).enumerate() {
                    if self.size_width[which] == 4 {
                        self.meta(*tag, 1, P_WIDTH, Some(2))?;
                        self.size_width[which] = 2;
                    }
                }
            }
            // A step below 2^15, so that the 2-byte signed delta holds it.
            self.time += 1 + self.rng.below(64);
            // The live heap swells and shrinks in phases of 2^20 records.
            let phase = (i >> 20) & 3;
            let target = 20_000 * (1 + phase);
            let live = self.live.len() as u64;
            let alloc_odds = if live < target { 620 } else { 380 };
            let r = self.rng.below(1000);
            if live == 0 || r < alloc_odds {
                let size = self.size();
                let addr = self.address(size);
                self.fit_size(0, size)?;
                self.fit_time(0)?;
                self.totals.records += 1;
                self.put(&[TAG_ALLOC])?;
                self.put_size(0, size)?;
                self.put(&addr.to_le_bytes())?;
                self.put_time(0)?;
                self.live.push((addr, size));
            } else if r < alloc_odds + 50 {
                let k = self.rng.below(live) as usize;
                let (old, old_size) = self.live[k];
                let size = self.size();
                let addr = if size <= old_size || self.rng.chance(300) {
                    old
                } else {
                    self.release(old);
                    self.address(size)
                };
                self.fit_size(1, size)?;
                self.fit_time(1)?;
                self.totals.records += 1;
                self.put(&[TAG_REALLOC])?;
                self.put_size(1, size)?;
                self.put(&old.to_le_bytes())?;
                self.put(&addr.to_le_bytes())?;
                self.put_time(1)?;
                self.live[k] = (addr, size);
            } else {
                let k = self.rng.below(live) as usize;
                let (addr, _) = self.live.swap_remove(k);
                self.release(addr);
                self.fit_time(2)?;
                self.totals.records += 1;
                self.put(&[TAG_FREE])?;
                self.put(&addr.to_le_bytes())?;
                self.put_time(2)?;
            }
            self.totals.data += 1;
        }
        Ok(self.totals)
    }
}

/// The header for a trace whose records after `start` are `body`, for the DTD `dtd_name`.
fn header(body: Totals, dtd_name: &str) -> Vec<u8> {
    let name = dtd_name.as_bytes();
    let start4 = 16 + 3 * 4 + name.len() as u64 + 3 * 4;
    // docs/format.md §2.1: 4-byte header integers unless one of them does not fit.
    let wide = start4 + body.bytes > u64::from(u32::MAX) || body.records > u64::from(u32::MAX);
    let w: u64 = if wide { 8 } else { 4 };
    let start = 16 + 3 * w + name.len() as u64 + 3 * w;
    let mut h = Vec::with_capacity(start as usize);
    h.extend_from_slice(&[0x7F, b'M', b'T', b'F', 2, 1, name.len() as u8]);
    h.push(if wide { 8 } else { 0 });
    h.extend_from_slice(&[0; 8]);
    let int = |h: &mut Vec<u8>, v: u64| {
        if wide {
            h.extend_from_slice(&v.to_le_bytes());
        } else {
            h.extend_from_slice(&(v as u32).to_le_bytes());
        }
    };
    int(&mut h, 1);
    int(&mut h, start);
    int(&mut h, body.records);
    h.extend_from_slice(name);
    int(&mut h, 1);
    int(&mut h, start);
    int(&mut h, body.bytes);
    h
}

/// Writes the whole trace to `out`; returns what the body holds.
pub fn generate(out: &mut impl Write, data: u64, seed: u64, shape: Shape) -> io::Result<Totals> {
    let body = |mut out: &mut dyn Write| match shape {
        Shape::Default => Gen::new(&mut out, seed).run(data),
        _ => shapes::body(shape, &mut out, data, seed),
    };
    let measured = body(&mut Counter(0))?;
    out.write_all(&header(measured, shape.dtd().0))?;
    let written = body(out)?;
    debug_assert_eq!(measured, written);
    out.flush()?;
    Ok(written)
}

fn parse_count(s: &str) -> Option<u64> {
    let (digits, scale) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 1_000),
        b'm' | b'M' => (&s[..s.len() - 1], 1_000_000),
        b'g' | b'G' => (&s[..s.len() - 1], 1_000_000_000),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!(
            "usage: gen_hatf RECORDS OUT.mtf|- [--seed N] [--shape default|metadata-heavy|heaptrack-like|et-like]   (RECORDS: 1M, 10M, 100M, 400M, …)"
        );
        std::process::exit(2)
    };
    let (Some(count), Some(out)) = (args.first(), args.get(1)) else {
        usage()
    };
    let Some(data) = parse_count(count) else {
        usage()
    };
    let mut seed = 1;
    let mut shape = Shape::Default;
    let mut rest = args[2..].iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().map(String::as_str).unwrap_or_else(|| usage());
        match flag.as_str() {
            "--seed" => seed = value.parse().unwrap_or_else(|_| usage()),
            "--shape" => {
                shape = match Shape::ALL.iter().find(|(name, _)| *name == value) {
                    Some(&(_, s)) => s,
                    None => {
                        eprintln!("gen_hatf: no shape {value:?}");
                        usage()
                    }
                }
            }
            _ => usage(),
        }
    }
    let (dtd_name, dtd_text) = shape.dtd();
    let result = if out == "-" {
        let stdout = io::stdout();
        generate(
            &mut BufWriter::with_capacity(1 << 20, stdout.lock()),
            data,
            seed,
            shape,
        )
    } else {
        let path = std::path::Path::new(out);
        let dtd = path.with_file_name(dtd_name);
        std::fs::write(&dtd, dtd_text)
            .and_then(|()| std::fs::File::create(path))
            .and_then(|f| generate(&mut BufWriter::with_capacity(1 << 20, f), data, seed, shape))
    };
    match result {
        Ok(t) => eprintln!(
            "gen_hatf: {} data records, {} records in all, {} bytes after the header",
            t.data, t.records, t.bytes
        ),
        Err(e) => {
            eprintln!("gen_hatf: {out}: {e}");
            std::process::exit(2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_traces_of_every_shape_decode_and_are_deterministic() {
        for (name, shape) in Shape::ALL {
            let mut a = Vec::new();
            let t = generate(&mut a, 50_000, 7, shape).expect("in memory");
            let mut b = Vec::new();
            generate(&mut b, 50_000, 7, shape).expect("in memory");
            assert_eq!(a, b, "{name}: the same seed gives the same bytes");
            assert_eq!(t.data, 50_000, "{name}");
            let (dtd_name, dtd) = shape.dtd();
            let dir = tempfile::tempdir().expect("a temporary folder");
            let path = dir.path().join("bench.mtf");
            std::fs::write(&path, &a).expect("written");
            std::fs::write(dir.path().join(dtd_name), dtd).expect("written");
            let opened = metatf::open(&path).expect("a valid container with its DTD beside it");
            let reader = opened.reader();
            let mut records = reader.records();
            let (mut data, mut all) = (0u64, 0u64);
            while let Some(event) = records.next() {
                match event {
                    metatf::decode::Event::Record(r) => {
                        all += 1;
                        data += u64::from(r.is_data());
                    }
                    other => panic!("{name}: a generated trace is valid: {other:?}"),
                }
            }
            assert_eq!(data, 50_000, "{name}");
            assert_eq!(all, t.records, "{name}");
            if shape == Shape::MetadataHeavy {
                // About one record in six is a metadata record (the section record aside).
                let meta = all - data - 1;
                assert!(
                    meta * 6 >= all - 1 - 100 && meta * 6 <= all + 600,
                    "{meta} of {all}"
                );
            }
        }
    }
}
