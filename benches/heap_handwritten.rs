//! A heap analysis written by hand for the benchmark shapes (`gen_hatf --shape`, the DTDs
//! `benches/hatf-bench.dtd`, `bench-metadata.dtd`, `bench-heaptrack.dtd`, `bench-et.dtd`): it
//! decodes the shape's records directly and keeps the live blocks in an open-addressing table,
//! computing the figures `mtf stats` computes from the DTD's analysis declarations. It is the
//! yardstick of `stats` and of `check`'s semantic pass (docs/performance.md), as
//! benches/handwritten.rs is the yardstick of the decoder, and an independent computation of
//! their figures: `benches/compare.sh` checks that they are equal.
//!
//! `cargo bench --bench heap_handwritten -- TRACE` prints one `name value` line per figure
//! (the shape is known from the DTD name in the header). With `--decode` it is the hand-written
//! reader of the shapes instead (benches/handwritten.rs knows only the default one): it decodes
//! without the heap and prints the records per type and the checksum of every decoded value that
//! `cargo run --release --example checksum -- TRACE` prints from the library. Written from docs/format.md (§2, §5.4,
//! §6.3, §7) and docs/stats.md alone, without the library.

// Under `cargo test` (tests/integration/bench_shapes.rs includes this file) `main` is not called.
#![cfg_attr(test, allow(dead_code))]
// Mapping the trace file is the one unsafe call (the file is not changed while it is read).
#![allow(unsafe_code)]

use std::process::ExitCode;

#[derive(Clone, Copy)]
enum Interp {
    None,
    Default(u64),
    Base(u64),
    Delta,
    Stride(u64),
}

/// A field: an integer with its live metadata state (§6.3), or a byte string (a one-byte
/// length, then that many bytes).
#[derive(Clone, Copy)]
enum Field {
    Int {
        width: u8,
        last: u8,
        interp: Interp,
        prev: u64,
    },
    Bytes,
}

const fn int(width: u8, interp: Interp) -> Field {
    Field::Int {
        width,
        last: width,
        interp,
        prev: 0,
    }
}
const N: Field = int(0, Interp::Default(0));
const U4: Field = int(4, Interp::None);
const U8: Field = int(8, Interp::None);
const D2: Field = int(2, Interp::Delta);
const D4: Field = int(4, Interp::Delta);
const B: Field = Field::Bytes;

/// The shapes, by the DTD name in the header.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Default,
    MetadataHeavy,
    HeaptrackLike,
    EtLike,
}

/// A record type: its tag, name, and its fields after the tag as the DTD declares them.
struct Type {
    tag: u8,
    name: &'static str,
    fields: Vec<Field>,
    count: u64,
}

fn types(shape: Shape) -> (Vec<Type>, &'static str) {
    let t = |tag, name, fields: &[Field]| Type {
        tag,
        name,
        fields: fields.to_vec(),
        count: 0,
    };
    match shape {
        // alloc (size, address, time, thread, heap), realloc (size, old, address, …), free.
        Shape::Default => (
            vec![
                t(4, "alloc", &[U4, U8, N, N, N]),
                t(5, "realloc", &[U4, U8, U8, N, N, N]),
                t(6, "free", &[U8, N, N, N]),
            ],
            "block",
        ),
        // The same with addresses and times as deltas and a label on alloc and free.
        Shape::MetadataHeavy => (
            vec![
                t(4, "alloc", &[U4, D4, D2, N, N, B]),
                t(5, "realloc", &[U4, D4, D4, D2, N, N]),
                t(6, "free", &[D4, D2, N, N, B]),
            ],
            "block",
        ),
        // allocInfo (size, trace), alloc (info), free (info), timestamp (ms).
        Shape::HeaptrackLike => (
            vec![
                t(4, "allocInfo", &[U4, U4]),
                t(5, "alloc", &[U4]),
                t(6, "free", &[U4]),
                t(7, "timestamp", &[D2]),
            ],
            "block",
        ),
        // alloc (objid, size, typeid, site, thread), death (objid, thread, time),
        // entry (methodid, receiver, thread), exit (methodid, thread).
        Shape::EtLike => (
            vec![
                t(4, "alloc", &[U4, U4, D2, U4, N]),
                t(6, "death", &[U4, N, D2]),
                t(8, "entry", &[D2, U4, N]),
                t(9, "exit", &[D2, N]),
            ],
            "object",
        ),
    }
}

/// Live blocks: id → size (or, for heaptrack's shared ids, live blocks of the info), in one
/// power-of-two array probed linearly, deleted by shifting back (no tombstones).
struct Table {
    keys: Vec<u64>,
    values: Vec<u64>,
    len: usize,
}

const EMPTY: u64 = u64::MAX;

impl Table {
    fn new() -> Table {
        Table {
            keys: vec![EMPTY; 1 << 16],
            values: vec![0; 1 << 16],
            len: 0,
        }
    }
    fn slot(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize & (self.keys.len() - 1)
    }
    /// The slot holding `key`, or the empty slot where it would go.
    fn find(&self, key: u64) -> usize {
        let mask = self.keys.len() - 1;
        let mut i = self.slot(key);
        while self.keys[i] != key && self.keys[i] != EMPTY {
            i = (i + 1) & mask;
        }
        i
    }
    fn get_mut(&mut self, key: u64) -> Option<&mut u64> {
        let i = self.find(key);
        (self.keys[i] == key).then(|| &mut self.values[i])
    }
    /// Sets `key` to `value`; returns the value it had.
    fn insert(&mut self, key: u64, value: u64) -> Option<u64> {
        if 2 * (self.len + 1) > self.keys.len() {
            self.grow();
        }
        let i = self.find(key);
        if self.keys[i] == key {
            return Some(std::mem::replace(&mut self.values[i], value));
        }
        self.keys[i] = key;
        self.values[i] = value;
        self.len += 1;
        None
    }
    fn remove(&mut self, key: u64) -> Option<u64> {
        let mask = self.keys.len() - 1;
        let mut i = self.find(key);
        if self.keys[i] != key {
            return None;
        }
        let value = self.values[i];
        self.len -= 1;
        // Shift back the entries after the hole that may not stay past it.
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            if self.keys[j] == EMPTY {
                break;
            }
            let home = self.slot(self.keys[j]);
            // Entry j may fill the hole at i unless its home lies cyclically in (i, j].
            let stays = if i <= j {
                i < home && home <= j
            } else {
                i < home || home <= j
            };
            if !stays {
                self.keys[i] = self.keys[j];
                self.values[i] = self.values[j];
                i = j;
            }
        }
        self.keys[i] = EMPTY;
        Some(value)
    }
    fn grow(&mut self) {
        let n = 2 * self.keys.len();
        let keys = std::mem::replace(&mut self.keys, vec![EMPTY; n]);
        let values = std::mem::replace(&mut self.values, vec![0; n]);
        self.len = 0;
        for (k, v) in keys.into_iter().zip(values) {
            if k != EMPTY {
                self.insert(k, v);
            }
        }
    }
}

/// The figures of docs/stats.md for one namespace.
#[derive(Default)]
struct Figures {
    allocations: u64,
    bytes_allocated: u128,
    frees: u64,
    bytes_freed: u128,
    live_bytes: u128,
    live_blocks: u64,
    peak_bytes: u128,
    peak_blocks: u64,
    unknown_frees: u64,
}

impl Figures {
    fn alloc(&mut self, size: u64) {
        self.allocations += 1;
        self.bytes_allocated += u128::from(size);
        self.live_bytes += u128::from(size);
        self.live_blocks += 1;
        // The peak is the first event that reaches the highest live bytes.
        if self.live_bytes > self.peak_bytes {
            self.peak_bytes = self.live_bytes;
            self.peak_blocks = self.live_blocks;
        }
    }
    fn free(&mut self, size: u64) {
        self.frees += 1;
        self.bytes_freed += u128::from(size);
        self.live_bytes -= u128::from(size);
        self.live_blocks -= 1;
    }
    /// A define of a live id (not shared): the old block leaves the live state, neither a free
    /// nor a lifetime (docs/stats.md).
    fn drop_block(&mut self, size: u64) {
        self.live_bytes -= u128::from(size);
        self.live_blocks -= 1;
    }
}

struct Heap {
    shape: Shape,
    live: Table,
    /// heaptrack-like: the size of each allocation info, by its index.
    infos: Vec<u64>,
    f: Figures,
}

impl Heap {
    /// Undefines `id` (not shared): a free, or a free of an id not alive.
    fn undefine(&mut self, id: u64) {
        match self.live.remove(id) {
            Some(size) => self.f.free(size),
            None => self.f.unknown_frees += 1,
        }
    }
    fn define(&mut self, id: u64, size: u64) {
        if let Some(old) = self.live.insert(id, size) {
            self.f.drop_block(old);
        }
        self.f.alloc(size);
    }

    /// What the record with tag `tag` and field values `v` does to the heap.
    fn record(&mut self, tag: u8, v: &[u64; 8]) {
        match (self.shape, tag) {
            (Shape::Default | Shape::MetadataHeavy, 4) => self.define(v[1], v[0]),
            // realloc: the old block's free, then the new one's allocation (docs/format.md §14.3).
            (Shape::Default | Shape::MetadataHeavy, 5) => {
                self.undefine(v[1]);
                self.define(v[2], v[0]);
            }
            (Shape::Default | Shape::MetadataHeavy, 6) => self.undefine(v[0]),
            (Shape::HeaptrackLike, 4) => self.infos.push(v[0]),
            (Shape::HeaptrackLike, 5) => {
                let size = self.infos.get(v[0] as usize).copied().unwrap_or(0);
                match self.live.get_mut(v[0]) {
                    Some(n) => *n += 1,
                    None => {
                        self.live.insert(v[0], 1);
                    }
                }
                self.f.alloc(size);
            }
            (Shape::HeaptrackLike, 6) => match self.live.get_mut(v[0]) {
                Some(n) => {
                    *n -= 1;
                    if *n == 0 {
                        self.live.remove(v[0]);
                    }
                    let size = self.infos.get(v[0] as usize).copied().unwrap_or(0);
                    self.f.free(size);
                }
                None => self.f.unknown_frees += 1,
            },
            // Object 0 is null: its define and undefine do nothing.
            (Shape::EtLike, 4) if v[0] != 0 => self.define(v[0], v[1]),
            (Shape::EtLike, 6) if v[0] != 0 => self.undefine(v[0]),
            _ => {}
        }
    }
}

fn le(b: &[u8], p: usize, width: usize) -> Result<u64, String> {
    let s = b
        .get(p..p + width)
        .ok_or_else(|| format!("record at byte {p} cut short"))?;
    let mut v = [0u8; 8];
    v[..width].copy_from_slice(s);
    Ok(u64::from_le_bytes(v))
}

/// FNV-1a's prime and seed: the checksum of `--decode` folds each value in as `h = (h ^ v) * P`.
const P: u64 = 0x0000_0100_0000_01B3;
const SEED: u64 = 0xCBF2_9CE4_8422_2325;

/// What a read gives: the heap's figures (`HEAP`), or the records per type and the checksum.
struct Read {
    figures: Figures,
    namespace: &'static str,
    counts: Vec<(&'static str, u64)>,
    checksum: u64,
}

fn read<const HEAP: bool>(b: &[u8]) -> Result<Read, String> {
    if b.len() < 16 || b[0..4] != [0x7F, b'M', b'T', b'F'] {
        return Err("not a Meta-TF trace".into());
    }
    if b[4] != 2 || b[5] != 1 || b[8] != 0 {
        return Err("not a little-endian 64-bit Meta-TF 1.0 trace".into());
    }
    let w = match b[7] {
        0 => 4,
        8 => 8,
        _ => return Err("bad intwidth".into()),
    };
    let name_len = b[6] as usize;
    let start = le(b, 16 + w, w)? as usize;
    let nrecords = le(b, 16 + 2 * w, w)?;
    let name = b
        .get(16 + 3 * w..16 + 3 * w + name_len)
        .ok_or("header cut short")?;
    let shape = match name {
        b"hatf-bench.dtd" => Shape::Default,
        b"bench-metadata.dtd" => Shape::MetadataHeavy,
        b"bench-heaptrack.dtd" => Shape::HeaptrackLike,
        b"bench-et.dtd" => Shape::EtLike,
        _ => {
            return Err(format!(
                "not a benchmark shape's DTD: {}",
                String::from_utf8_lossy(name)
            ))
        }
    };
    if le(b, 16, w)? != 1 || le(b, 16 + 3 * w + name_len + 2 * w, w)? as usize != b.len() - start {
        return Err("one section covering the file expected".into());
    }
    if b.get(start..start + 2) != Some(&[2, 1][..]) {
        return Err("the section does not start with its section record".into());
    }
    let (mut types, namespace) = types(shape);
    let mut by_tag = [usize::MAX; 256];
    for (k, t) in types.iter().enumerate() {
        by_tag[t.tag as usize] = k;
    }
    let mut heap = Heap {
        shape,
        live: Table::new(),
        infos: Vec::new(),
        f: Figures::default(),
    };
    let mut records = 1u64;
    let mut p = start + 2;
    let mut v = [0u64; 8];
    let mut h = SEED;
    while p < b.len() {
        let tag = b[p];
        records += 1;
        if tag == 3 {
            p = metadata(b, p, &mut types, &by_tag)?;
            continue;
        }
        let k = by_tag[tag as usize];
        let Some(t) = types.get_mut(k) else {
            return Err(format!("unknown tag {tag} at byte {p}"));
        };
        let mut q = p + 1;
        for (f, out) in t.fields.iter_mut().zip(v.iter_mut()) {
            match f {
                Field::Bytes => {
                    let len = *b.get(q).ok_or("byte string cut short")?;
                    if !HEAP {
                        h = (h ^ u64::from(len)).wrapping_mul(P);
                    }
                    q += 1 + len as usize;
                }
                Field::Int {
                    width,
                    interp,
                    prev,
                    ..
                } => {
                    let u = le(b, q, *width as usize)?;
                    q += *width as usize;
                    let i = if *width == 0 || *width == 8 {
                        u
                    } else {
                        let shift = 64 - 8 * u32::from(*width);
                        (((u << shift) as i64) >> shift) as u64
                    };
                    *out = match *interp {
                        Interp::None => u,
                        Interp::Default(d) => d,
                        Interp::Base(base) => base.wrapping_add(i),
                        Interp::Delta => {
                            *prev = prev.wrapping_add(i);
                            *prev
                        }
                        Interp::Stride(s) => {
                            *prev = prev.wrapping_add(s);
                            *prev
                        }
                    };
                    if !HEAP {
                        h = (h ^ *out).wrapping_mul(P);
                    }
                }
            }
        }
        if q > b.len() {
            return Err(format!("record at byte {p} cut short"));
        }
        if HEAP {
            heap.record(tag, &v);
        } else {
            t.count += 1;
        }
        p = q;
    }
    if records != nrecords {
        return Err(format!(
            "header says {nrecords} records, the file holds {records}"
        ));
    }
    Ok(Read {
        figures: heap.f,
        namespace,
        counts: types.iter().map(|t| (t.name, t.count)).collect(),
        checksum: h,
    })
}

/// Applies the metadata record at `p` (§5.4, §6.3); returns the offset after it.
fn metadata(
    b: &[u8],
    p: usize,
    types: &mut [Type],
    by_tag: &[usize; 256],
) -> Result<usize, String> {
    let (rec, slot, prop) = match b.get(p + 1..p + 4) {
        Some(&[r, s, pr]) => (r, s as usize, pr),
        _ => return Err(format!("metadata record at {p} cut short")),
    };
    let field = types
        .get_mut(by_tag[rec as usize])
        .and_then(|t| slot.checked_sub(1).and_then(|s| t.fields.get_mut(s)));
    let Some(Field::Int {
        width,
        last,
        interp,
        prev,
    }) = field
    else {
        return Err(format!("metadata record at {p}: no such integer slot"));
    };
    let word = |k: usize| le(b, p + 4 + 8 * k, 8);
    let words = match prop {
        0 => {
            let v = word(0)?;
            if v > 8 || (v != 0 && matches!(interp, Interp::Default(_) | Interp::Stride(_))) {
                return Err(format!("metadata record at {p}: width refused"));
            }
            *width = v as u8;
            if v != 0 {
                *last = v as u8;
            }
            1
        }
        1 => {
            *interp = Interp::None;
            *width = *last;
            0
        }
        2 => {
            *interp = Interp::Base(word(0)?);
            *width = *last;
            1
        }
        3 => {
            *prev = word(0)?;
            *interp = Interp::Delta;
            *width = *last;
            1
        }
        4 => {
            *interp = Interp::Default(word(0)?);
            *width = 0;
            1
        }
        6 => {
            *prev = word(0)?;
            *interp = Interp::Stride(word(1)?);
            *width = 0;
            2
        }
        _ => {
            return Err(format!(
                "metadata record at {p}: property {prop} not in these DTDs"
            ))
        }
    };
    Ok(p + 4 + 8 * words)
}

/// The figures of the trace `b`, one `name value` line each, after `namespace NAME`.
pub fn report(b: &[u8]) -> Result<String, String> {
    let r = read::<true>(b)?;
    let (f, namespace) = (r.figures, r.namespace);
    Ok(format!(
        "namespace {namespace}\nallocations {}\nbytes_allocated {}\nfrees {}\nbytes_freed {}\n\
         peak_bytes {}\npeak_blocks {}\nleaked_bytes {}\nleaked_blocks {}\nunknown_frees {}\n",
        f.allocations,
        f.bytes_allocated,
        f.frees,
        f.bytes_freed,
        f.peak_bytes,
        f.peak_blocks,
        f.live_bytes,
        f.live_blocks,
        f.unknown_frees
    ))
}

/// The records per type and the checksum of every decoded value, as examples/checksum.rs
/// prints them.
pub fn decode(b: &[u8]) -> Result<String, String> {
    let r = read::<false>(b)?;
    let counts: Vec<String> = r
        .counts
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{name}={n}"))
        .collect();
    Ok(format!(
        "records {}\nchecksum {:016x}\n",
        counts.join(" "),
        r.checksum
    ))
}

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; the other arguments are `--decode` and the trace.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let decode_only = args.iter().any(|a| a == "--decode");
    let Some(path) = args.iter().find(|a| *a != "--decode") else {
        eprintln!("usage: cargo bench --bench heap_handwritten -- [--decode] TRACE");
        return ExitCode::from(2);
    };
    let map = match std::fs::File::open(path).and_then(|f| {
        // SAFETY: the file is only read; a benchmark input is not changed while it is read.
        unsafe { memmap2::Mmap::map(&f) }
    }) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    match if decode_only {
        decode(&map)
    } else {
        report(&map)
    } {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{path}: {e}");
            ExitCode::from(1)
        }
    }
}
