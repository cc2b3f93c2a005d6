//! The cost model of the compact encoder: for one field (record type, slot) and the values it
//! takes over one look-ahead window, which interpretation and base width cost the fewest bytes,
//! counting the metadata records that switch to them and the width changes around outliers.
//!
//! Two measures of a stored byte are offered: its plain size (uncompressed output), and an
//! estimate of what a general-purpose compressor makes of it — the order-0 entropy of each byte
//! plane of the stored values (compressed output). Metadata records are counted at full size in
//! both.

use crate::container::{fits_signed, fits_unsigned};
use crate::dtd::Interp;

/// What a metadata record costs in bytes, for the trace being written.
#[derive(Debug, Clone, Copy)]
pub struct MetaCost {
    /// Bytes of a metadata record without value words (tag, record, field, property).
    pub fixed: u32,
    /// Bytes of one value word (4 or 8, from the class).
    pub word: u32,
}

impl MetaCost {
    /// The size of a metadata record with `words` value words.
    pub fn record(self, words: usize) -> f64 {
        (self.fixed + self.word * words as u32) as f64
    }
    /// A width change (one word).
    pub fn width(self) -> f64 {
        self.record(1)
    }
    /// An interpretation change.
    pub fn interp(self, i: Interp) -> f64 {
        self.record(crate::layout::MetaProperty::Interp(i).words().1)
    }
    /// Whether a value fits an unsigned value word.
    pub fn fits_word(self, v: u64) -> bool {
        fits_unsigned(v, self.word as u8)
    }
    /// Whether a value fits a signed value word.
    pub fn fits_signed_word(self, v: i64) -> bool {
        fits_signed(v, self.word as u8)
    }
}

/// The fewest bytes that hold `v` unsigned (0 for 0).
pub fn unsigned_width(v: u64) -> u8 {
    (64 - v.leading_zeros()).div_ceil(8) as u8
}

/// The fewest bytes that hold `v` as a signed (two's complement) number (0 for 0).
pub fn signed_width(v: i64) -> u8 {
    (0..=8u8).find(|&w| fits_signed(v, w)).unwrap_or(8)
}

/// The base width for positions in a live set (extension `live/1`): the width that minimises
/// the stored bytes plus two width changes per position that does not fit, plus one width
/// change to switch from `current`.
pub fn position_width(xs: &[u64], current: u8, m: MetaCost) -> u8 {
    let mut count = [0usize; 9];
    for &x in xs {
        count[unsigned_width(x) as usize] += 1;
    }
    let mut best = (f64::INFINITY, current);
    for w in 0..=8u8 {
        let over: usize = count[w as usize + 1..].iter().sum();
        let mut c = (xs.len() - over) as f64 * w as f64 + over as f64 * 2.0 * m.width();
        c += count[w as usize + 1..]
            .iter()
            .enumerate()
            .map(|(i, &n)| n as f64 * (w as usize + 1 + i) as f64)
            .sum::<f64>();
        if w != current {
            c += m.width();
        }
        if c < best.0 {
            best = (c, w);
        }
    }
    best.1
}

/// The state of a field the plan starts from.
#[derive(Debug, Clone, Copy)]
pub struct Current {
    /// Live interpretation.
    pub interp: Interp,
    /// Live width.
    pub width: u8,
    /// Last non-zero width (what a switch to a stored interpretation restores).
    pub lastwidth: u8,
    /// `prev` of the live state (delta and stride).
    pub prev: u64,
    /// The last value this field decoded to in this scope (0 if none yet).
    pub last: u64,
}

/// The chosen encoding of a field for a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WidthPlan {
    /// The interpretation to switch to (or keep).
    pub interp: Interp,
    /// The width between outliers (0 for `default` and `stride`).
    pub width: u8,
}

/// Whether the stored value of a field is signed under `none` (`display = signed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sign {
    /// Stored unsigned.
    Unsigned,
    /// Stored sign-extended.
    Signed,
}

/// How stored bytes are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measure {
    /// Plain bytes.
    Bytes,
    /// Estimated bytes after a general-purpose compressor.
    Compressed,
}

/// Stored values under one candidate interpretation, and their needed widths.
struct Stored {
    vals: Vec<u64>,
    need: Vec<u8>,
}

fn cost_of(stored: &Stored, measure: Measure, m: MetaCost, after_switch: u8) -> (f64, u8) {
    // Histogram of needed widths; per-plane entropy for the compressed measure.
    let n = stored.vals.len();
    let mut count = [0usize; 9];
    for &w in &stored.need {
        count[w as usize] += 1;
    }
    let plane_cost: [f64; 8] = match measure {
        Measure::Bytes => [n as f64; 8],
        Measure::Compressed => {
            let mut out = [0.0; 8];
            let maxw = stored.need.iter().copied().max().unwrap_or(0) as usize;
            for (k, o) in out.iter_mut().enumerate().take(maxw) {
                let mut h = [0u32; 256];
                for &v in &stored.vals {
                    h[((v >> (8 * k)) & 0xff) as usize] += 1;
                }
                let mut bits = 0.0;
                for &c in h.iter().filter(|&&c| c > 0) {
                    let p = c as f64 / n as f64;
                    bits -= c as f64 * p.log2();
                }
                // A floor for what a compressor's model and matches cost.
                *o = bits / 8.0 + n as f64 * 0.02;
            }
            out
        }
    };
    // Under a compressor a value seen shortly before is a cheap match: the share of repeated
    // stored values scales the entropy estimate down.
    let repeated = match measure {
        Measure::Bytes => 0.0,
        Measure::Compressed => {
            let mut seen = std::collections::HashSet::with_capacity(n);
            let r = stored.vals.iter().filter(|v| !seen.insert(**v)).count();
            r as f64 / n.max(1) as f64
        }
    };
    let mut best = (f64::INFINITY, 0u8);
    for w in 0..=8u8 {
        // Under a compressor, records of a stable layout match better than narrow ones: keep
        // the width the field has (or none at all) and let the compressor take the bytes.
        if measure == Measure::Compressed && w != after_switch && w != 0 && after_switch != 0 {
            continue;
        }
        let data: f64 = plane_cost.iter().take(w as usize).sum::<f64>() * (1.0 - repeated)
            + repeated * n as f64 * 0.3;
        let outliers: usize = count[w as usize + 1..].iter().sum();
        let extra: f64 = (w as usize + 1..=8)
            .map(|x| count[x] as f64 * (x as f64 - w as f64))
            .sum::<f64>()
            * match measure {
                Measure::Bytes => 1.0,
                Measure::Compressed => 0.8,
            };
        let mut c = data + extra + outliers as f64 * 2.0 * m.width();
        if w != after_switch {
            c += m.width();
        }
        if c < best.0 {
            best = (c, w);
        }
    }
    best
}

/// Choose the cheapest encoding of `xs` (the field's values in this window, in order), starting
/// from `cur`.
pub fn choose(xs: &[u64], cur: Current, sign: Sign, m: MetaCost, measure: Measure) -> WidthPlan {
    if xs.is_empty() {
        return WidthPlan {
            interp: cur.interp,
            width: cur.width,
        };
    }
    let switch = |i: Interp| -> f64 {
        if i == cur.interp {
            0.0
        } else {
            m.interp(i)
        }
    };
    let mut best: (f64, WidthPlan) = (
        f64::INFINITY,
        WidthPlan {
            interp: Interp::None,
            width: 8,
        },
    );
    let mut consider = |cost: f64, plan: WidthPlan| {
        // Prefer the current interpretation on ties (no churn).
        if cost < best.0 - 1e-9 {
            best = (cost, plan);
        }
    };
    let zero_width = |interp| WidthPlan { interp, width: 0 };
    if let Some(i) = constant(xs, m) {
        consider(switch(i), zero_width(i));
    }
    if let Some((cost, i)) = stride(xs, cur, m) {
        consider(cost, zero_width(i));
    }
    for (interp, stored) in stored_candidates(xs, cur, sign, m) {
        let after_switch = if interp == cur.interp {
            cur.width
        } else {
            cur.lastwidth
        };
        let (c, width) = cost_of(&stored, measure, m, after_switch);
        consider(switch(interp) + c, WidthPlan { interp, width });
    }
    best.1
}

/// `default`, when every value of `xs` is the same.
fn constant(xs: &[u64], m: MetaCost) -> Option<Interp> {
    let x0 = xs[0];
    (xs.iter().all(|&x| x == x0) && m.fits_word(x0)).then_some(Interp::Default(x0))
}

/// `stride`, when the values of `xs` take a constant step, with its cost: none when it
/// continues the current stride.
fn stride(xs: &[u64], cur: Current, m: MetaCost) -> Option<(f64, Interp)> {
    if xs.len() < 2 && !matches!(cur.interp, Interp::Stride { .. }) {
        return None;
    }
    let x0 = xs[0];
    let s = if xs.len() >= 2 {
        xs[1].wrapping_sub(x0) as i64
    } else {
        x0.wrapping_sub(cur.prev) as i64
    };
    if !xs.windows(2).all(|p| p[1].wrapping_sub(p[0]) as i64 == s) {
        return None;
    }
    let continuing = matches!(cur.interp, Interp::Stride { stride, .. } if stride == s)
        && cur.prev.wrapping_add(s as u64) == x0;
    let initial = x0.wrapping_sub(s as u64);
    if continuing {
        Some((0.0, cur.interp))
    } else if m.fits_word(initial) && m.fits_signed_word(s) {
        let i = Interp::Stride { initial, stride: s };
        Some((m.interp(i), i))
    } else {
        None
    }
}

/// The stored interpretations of `xs` worth costing: none, delta (continuing the current
/// chain, or from the last value), baseOffset (the current base, and the middle of the range).
fn stored_candidates(xs: &[u64], cur: Current, sign: Sign, m: MetaCost) -> Vec<(Interp, Stored)> {
    let mut candidates = Vec::with_capacity(4);
    let need = xs
        .iter()
        .map(|&x| match sign {
            Sign::Unsigned => unsigned_width(x),
            Sign::Signed => signed_width(x as i64),
        })
        .collect();
    candidates.push((
        Interp::None,
        Stored {
            vals: xs.to_vec(),
            need,
        },
    ));
    let (interp, mut prev) = match cur.interp {
        Interp::Delta(v) => (Interp::Delta(v), cur.prev),
        _ if m.fits_word(cur.last) => (Interp::Delta(cur.last), cur.last),
        _ => (Interp::Delta(0), 0),
    };
    let mut vals = Vec::with_capacity(xs.len());
    let mut need = Vec::with_capacity(xs.len());
    for &x in xs {
        let d = x.wrapping_sub(prev);
        prev = x;
        vals.push(d);
        need.push(signed_width(d as i64));
    }
    candidates.push((interp, Stored { vals, need }));
    let mut bases = Vec::with_capacity(2);
    if let Interp::BaseOffset(b) = cur.interp {
        bases.push(b);
    }
    let (lo, hi) = xs
        .iter()
        .fold((u64::MAX, 0u64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    let mid = lo + (hi - lo) / 2;
    if m.fits_word(mid) {
        bases.push(mid);
    }
    for b in bases {
        let vals: Vec<u64> = xs.iter().map(|&x| x.wrapping_sub(b)).collect();
        let need = vals.iter().map(|&d| signed_width(d as i64)).collect();
        candidates.push((Interp::BaseOffset(b), Stored { vals, need }));
    }
    candidates
}

/// The width a value needs when stored under `interp` with the given `prev` (delta), or `None`
/// for zero-width interpretations.
pub fn needed(interp: Interp, prev: u64, x: u64, sign: Sign) -> Option<u8> {
    match interp {
        Interp::None => Some(match sign {
            Sign::Unsigned => unsigned_width(x),
            Sign::Signed => signed_width(x as i64),
        }),
        Interp::Delta(_) => Some(signed_width(x.wrapping_sub(prev) as i64)),
        Interp::BaseOffset(b) => Some(signed_width(x.wrapping_sub(b) as i64)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: MetaCost = MetaCost { fixed: 4, word: 8 };

    fn cur() -> Current {
        Current {
            interp: Interp::None,
            width: 4,
            lastwidth: 4,
            prev: 0,
            last: 0,
        }
    }

    #[test]
    fn widths() {
        assert_eq!(unsigned_width(0), 0);
        assert_eq!(unsigned_width(255), 1);
        assert_eq!(unsigned_width(256), 2);
        assert_eq!(signed_width(-1), 1);
        assert_eq!(signed_width(127), 1);
        assert_eq!(signed_width(128), 2);
        assert_eq!(signed_width(i64::MIN), 8);
    }

    #[test]
    fn equal_values_become_default() {
        let p = choose(&[7; 100], cur(), Sign::Unsigned, M, Measure::Bytes);
        assert_eq!(p.interp, Interp::Default(7));
    }

    #[test]
    fn regular_values_become_stride() {
        let xs: Vec<u64> = (0..100).map(|i| 1000 + 16 * i).collect();
        let p = choose(&xs, cur(), Sign::Unsigned, M, Measure::Bytes);
        assert_eq!(
            p.interp,
            Interp::Stride {
                initial: 984,
                stride: 16
            }
        );
    }

    #[test]
    fn growing_values_become_delta_and_small_values_narrow() {
        let xs: Vec<u64> = (0..1000).map(|i| 1_000_000 + i * i % 97 + 3 * i).collect();
        let p = choose(&xs, cur(), Sign::Unsigned, M, Measure::Bytes);
        assert!(matches!(p.interp, Interp::Delta(_)), "{p:?}");
        assert_eq!(p.width, 1);
        let xs: Vec<u64> = (0..1000).map(|i| (i * 7919) % 200).collect();
        let p = choose(&xs, cur(), Sign::Unsigned, M, Measure::Bytes);
        assert_eq!(
            p,
            WidthPlan {
                interp: Interp::None,
                width: 1
            }
        );
    }

    #[test]
    fn rare_outliers_keep_a_narrow_width() {
        let mut xs = vec![5u64; 1000];
        for i in (0..1000).step_by(7) {
            xs[i] = i as u64 % 100;
        }
        xs[500] = 1 << 40;
        let p = choose(&xs, cur(), Sign::Unsigned, M, Measure::Bytes);
        assert_eq!(p.width, 1, "{p:?}");
    }
}
