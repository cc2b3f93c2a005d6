//! Lifetimes in bounded memory: exact quantiles, then an HDR histogram.

use foldhash::fast::RandomState;
use hdrhistogram::Histogram;
use std::collections::HashMap;

use super::classes::{classes, log2_class, CLASSES};
use super::LifetimeSummary;

/// Distinct lifetimes kept exactly before the quantiles fall back to the HDR histogram.
pub const EXACT_DISTINCT: usize = 1 << 20;

/// Lifetimes in bounded memory: exact count, sum, min and max; exact quantiles while fewer than
/// [`EXACT_DISTINCT`] distinct values occurred, else from an HDR histogram with 3 significant
/// digits (exact below 2048, else within 0.1 %); a log2 histogram.
// Design: exact quantiles need every distinct lifetime with its count. Lifetimes repeat a lot
// (most blocks of a trace live a few records or a few clock ticks), so a map of distinct values
// stays small on real traces while giving the figures an independent computation gives; it is
// bounded (about 40 MB at worst), and past the bound the quantiles come from the HDR histogram
// that was kept alongside (tens to hundreds of KB whatever the values), and say so
// (`LifetimeSummary::exact`). The histogram must grow with the values (`record` on an
// auto-resizing histogram): a clamping record put every lifetime above 2047 at 2047.
#[derive(Debug, Clone)]
pub(super) struct Lifetimes {
    pub(super) count: u64,
    sum: u128,
    min: u64,
    max: u64,
    hdr: Histogram<u64>,
    /// Distinct values and their counts, until there are more than `cap` (`None` then).
    exact: Option<HashMap<u64, u64, RandomState>>,
    cap: usize,
    log2: [u64; CLASSES],
}

impl Lifetimes {
    pub(super) fn new() -> Lifetimes {
        Lifetimes::with_cap(EXACT_DISTINCT)
    }

    pub(super) fn with_cap(cap: usize) -> Lifetimes {
        // 3 significant digits; auto-resizing from a small range. Construction only fails on
        // invalid parameters, which these are not.
        let mut hdr = Histogram::new(3).unwrap_or_else(|_| unreachable!("valid HDR parameters"));
        hdr.auto(true);
        Lifetimes {
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
            hdr,
            exact: Some(HashMap::default()),
            cap,
            log2: [0; CLASSES],
        }
    }

    pub(super) fn add(&mut self, v: u64) {
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        if self.hdr.record(v).is_err() {
            // Only a value the histogram cannot grow to (beyond 2⁶³): the top of its range.
            self.hdr.saturating_record(v);
        }
        if let Some(m) = &mut self.exact {
            *m.entry(v).or_insert(0) += 1;
            if m.len() > self.cap {
                self.exact = None;
            }
        }
        self.log2[log2_class(v)] += 1;
    }

    /// The quantiles `qs` (each the ⌈q·n⌉-th smallest value, nearest rank), exactly while the
    /// distinct values are kept.
    pub(super) fn quantiles<const N: usize>(&self, qs: [f64; N]) -> [u64; N] {
        let mut out = [0u64; N];
        if self.count == 0 {
            return out;
        }
        let rank = |q: f64| ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        match &self.exact {
            Some(m) => {
                let mut values: Vec<(u64, u64)> = m.iter().map(|(&v, &c)| (v, c)).collect();
                values.sort_unstable();
                for (o, q) in out.iter_mut().zip(qs) {
                    let want = rank(q);
                    let mut seen = 0u64;
                    for &(v, c) in &values {
                        seen += c;
                        if seen >= want {
                            *o = v;
                            break;
                        }
                    }
                }
            }
            None => {
                for (o, q) in out.iter_mut().zip(qs) {
                    *o = self.hdr.value_at_quantile(q).clamp(self.min, self.max);
                }
            }
        }
        out
    }

    pub(super) fn summary(&self) -> LifetimeSummary {
        let [median, p99] = self.quantiles([0.5, 0.99]);
        LifetimeSummary {
            count: self.count,
            min: if self.count == 0 { 0 } else { self.min },
            mean: if self.count == 0 {
                0.0
            } else {
                self.sum as f64 / self.count as f64
            },
            median,
            p99,
            max: self.max,
            exact: self.exact.is_some(),
            histogram: classes(&self.log2, None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::stats::EXACT_DISTINCT;

    /// Quantiles are the nearest-rank ones of a sorted list, beyond 2047 too; past the cap of
    /// distinct values they come from the HDR histogram, within 0.1 %, and say so.
    #[test]
    fn lifetime_quantiles_exact_then_bounded() {
        let mut values: Vec<u64> = (0..5000u64).map(|i| (i * 7919) % 10007 + i / 3).collect();
        values.extend([1, 1, 1, 2, 3, 1 << 40]);
        for cap in [EXACT_DISTINCT, 100] {
            let mut l = Lifetimes::with_cap(cap);
            for &v in &values {
                l.add(v);
            }
            let s = l.summary();
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let q = |p: f64| sorted[((p * sorted.len() as f64).ceil() as usize).max(1) - 1];
            assert_eq!((s.min, s.max), (sorted[0], 1 << 40));
            if cap == EXACT_DISTINCT {
                assert!(s.exact);
                assert_eq!((s.median, s.p99), (q(0.5), q(0.99)));
                assert!(q(0.5) > 2048);
            } else {
                assert!(!s.exact);
                for (got, want) in [(s.median, q(0.5)), (s.p99, q(0.99))] {
                    let err = (got as f64 - want as f64).abs() / want as f64;
                    assert!(err <= 0.001, "{got} vs {want}");
                }
            }
        }
    }
}
