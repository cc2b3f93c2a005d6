//! A reader written by hand for one DTD (benches/hatf-bench.dtd): the generated code the paper
//! proposed, and that `mtf` replaces with one generic interpreter. It is the yardstick of
//! docs/performance.md: `mtf check` is measured against it on the same files.
//!
//! `cargo bench --bench handwritten -- TRACE` prints the records per type and a checksum of every
//! decoded value; `cargo run --release --example checksum -- TRACE` prints the same two lines from
//! the library, so that the two are known to decode the same values.
//!
//! It does what a careful generated reader does: validates the header and the section table,
//! keeps the live metadata state of every slot (width, last width, interpretation, previous
//! value; docs/format.md §6.3) and applies the interpretations this DTD can use. It refuses what
//! the DTD cannot hold (a table interpretation: the DTD has no tables).

use std::process::ExitCode;

/// FNV-1a's prime: the checksum folds each value in as `h = (h ^ v) * P`.
const P: u64 = 0x0000_0100_0000_01B3;
const SEED: u64 = 0xCBF2_9CE4_8422_2325;

#[derive(Clone, Copy)]
enum Interp {
    None,
    Default(u64),
    Base(u64),
    Delta,
    Stride(u64),
}

#[derive(Clone, Copy)]
struct Slot {
    width: u8,
    last: u8,
    interp: Interp,
    prev: u64,
}

impl Slot {
    const fn new(width: u8, interp: Interp) -> Slot {
        Slot {
            width,
            last: width,
            interp,
            prev: 0,
        }
    }
}

/// The record types of the DTD: (tag, name, slots after the tag, DTD defaults).
const TYPES: [(u8, &str, usize); 3] = [(4, "alloc", 5), (5, "realloc", 6), (6, "free", 4)];

fn defaults() -> [[Slot; 6]; 3] {
    let size = Slot::new(4, Interp::None);
    let address = Slot::new(8, Interp::None);
    let zero = Slot::new(0, Interp::Default(0));
    [
        [size, address, zero, zero, zero, zero],
        [size, address, address, zero, zero, zero],
        [address, zero, zero, zero, zero, zero],
    ]
}

struct Out {
    counts: [u64; 3],
    checksum: u64,
}

fn read(b: &[u8]) -> Result<Out, String> {
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
    let int = |o: usize| -> Result<u64, String> {
        let s = b.get(o..o + w).ok_or("header cut short")?;
        let mut v = [0u8; 8];
        v[..w].copy_from_slice(s);
        Ok(u64::from_le_bytes(v))
    };
    let name_len = b[6] as usize;
    let nsections = int(16)?;
    let start = int(16 + w)? as usize;
    let nrecords = int(16 + 2 * w)?;
    let table = 16 + 3 * w + name_len;
    if nsections != 1 || start != table + 3 * w || start > b.len() {
        return Err("section table is not this DTD's".into());
    }
    if int(table)? != 1
        || int(table + w)? as usize != start
        || int(table + 2 * w)? as usize != b.len() - start
    {
        return Err("section 1 does not cover the file".into());
    }
    if b.get(start..start + 2) != Some(&[2, 1][..]) {
        return Err("the section does not start with its section record".into());
    }
    let mut state = defaults();
    let mut out = Out {
        counts: [0; 3],
        checksum: SEED,
    };
    let mut records = 1u64;
    let mut p = start + 2;
    let end = b.len();
    let uint = |p: usize, width: u8| -> Result<u64, String> {
        let width = width as usize;
        let s = b
            .get(p..p + width)
            .ok_or_else(|| format!("record at {p} cut short"))?;
        let mut v = [0u8; 8];
        v[..width].copy_from_slice(s);
        Ok(u64::from_le_bytes(v))
    };
    while p < end {
        let tag = b[p];
        records += 1;
        match tag {
            4..=6 => {
                let t = (tag - 4) as usize;
                let mut q = p + 1;
                for s in state[t].iter_mut().take(TYPES[t].2) {
                    let u = uint(q, s.width)?;
                    let i = if s.width == 0 || s.width == 8 {
                        u
                    } else {
                        let shift = 64 - 8 * s.width as u32;
                        (((u << shift) as i64) >> shift) as u64
                    };
                    q += s.width as usize;
                    let v = match s.interp {
                        Interp::None => u,
                        Interp::Default(v) => v,
                        Interp::Base(base) => base.wrapping_add(i),
                        Interp::Delta => {
                            s.prev = s.prev.wrapping_add(i);
                            s.prev
                        }
                        Interp::Stride(step) => {
                            s.prev = s.prev.wrapping_add(step);
                            s.prev
                        }
                    };
                    out.checksum = (out.checksum ^ v).wrapping_mul(P);
                }
                out.counts[t] += 1;
                p = q;
            }
            3 => {
                let (rec, slot, prop) = match b.get(p + 1..p + 4) {
                    Some(&[r, s, pr]) => (r, s as usize, pr),
                    _ => return Err(format!("metadata record at {p} cut short")),
                };
                if !(4..=6).contains(&rec) || slot == 0 || slot > TYPES[(rec - 4) as usize].2 {
                    return Err(format!("metadata record at {p}: no such slot"));
                }
                let s = &mut state[(rec - 4) as usize][slot - 1];
                let words = match prop {
                    1 => 0,
                    0 | 2..=5 => 1,
                    6 | 7 => 2,
                    _ => return Err(format!("metadata record at {p}: bad property")),
                };
                let word = |k: usize| uint(p + 4 + 8 * k, 8);
                match prop {
                    0 => {
                        let v = word(0)?;
                        let fixed = matches!(s.interp, Interp::Default(_) | Interp::Stride(_));
                        if v > 8 || (v != 0 && fixed) {
                            return Err(format!("metadata record at {p}: width refused"));
                        }
                        s.width = v as u8;
                        if v != 0 {
                            s.last = v as u8;
                        }
                    }
                    1..=3 => {
                        s.interp = match prop {
                            1 => Interp::None,
                            2 => Interp::Base(word(0)?),
                            _ => {
                                s.prev = word(0)?;
                                Interp::Delta
                            }
                        };
                        s.width = s.last;
                    }
                    4 => {
                        s.interp = Interp::Default(word(0)?);
                        s.width = 0;
                    }
                    6 => {
                        s.prev = word(0)?;
                        s.interp = Interp::Stride(word(1)?);
                        s.width = 0;
                    }
                    _ => return Err(format!("metadata record at {p}: this DTD has no tables")),
                }
                p += 4 + 8 * words;
                if p > end {
                    return Err("metadata record cut short".into());
                }
            }
            1 => {
                let len = *b.get(p + 1).ok_or("comment cut short")? as usize;
                p += 2 + len;
            }
            _ => return Err(format!("unknown tag {tag} at byte {p}")),
        }
    }
    if p != end {
        return Err("the last record runs past the end of the file".into());
    }
    if records != nrecords {
        return Err(format!(
            "header says {nrecords} records, the file holds {records}"
        ));
    }
    Ok(out)
}

#[allow(unsafe_code)] // the trace mapped as the library maps it (docs/architecture.md)
fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; the first other argument is the trace.
    let Some(path) = std::env::args().skip(1).find(|a| a != "--bench") else {
        eprintln!("usage: cargo bench --bench handwritten -- TRACE");
        return ExitCode::from(2);
    };
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    // SAFETY: the file is only read; a benchmark input is not changed while it is read.
    let map = match unsafe { memmap2::Mmap::map(&file) } {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    match read(&map) {
        Ok(out) => {
            let counts: Vec<String> = TYPES
                .iter()
                .zip(out.counts)
                .filter(|(_, n)| *n > 0)
                .map(|((_, name, _), n)| format!("{name}={n}"))
                .collect();
            println!("records {}", counts.join(" "));
            println!("checksum {:016x}", out.checksum);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{path}: {e}");
            ExitCode::from(1)
        }
    }
}
