//! Log2 size classes: the histogram buckets of sizes and lifetimes.

use super::SizeClass;

/// Number of log2 size classes: class 0 holds 0, class k (1..=64) holds [2^(k-1), 2^k).
pub(super) const CLASSES: usize = 65;

pub(super) fn log2_class(v: u64) -> usize {
    (64 - v.leading_zeros()) as usize
}

/// The bounds `[lo, hi]` of log2 class `k`.
pub fn class_bounds(k: usize) -> (u64, u64) {
    match k {
        0 => (0, 0),
        64 => (1 << 63, u64::MAX),
        _ => (1 << (k - 1), (1u64 << k) - 1),
    }
}

pub(super) fn classes(counts: &[u64; CLASSES], bytes: Option<&[u128; CLASSES]>) -> Vec<SizeClass> {
    let mut out = Vec::new();
    for k in 0..CLASSES {
        if counts[k] == 0 {
            continue;
        }
        let (lo, hi) = class_bounds(k);
        out.push(SizeClass {
            lo,
            hi,
            count: counts[k],
            bytes: bytes.map_or(0, |b| b[k]),
        });
    }
    out
}
