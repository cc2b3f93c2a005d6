//! Lifetimes in bounded memory: exact quantiles, then an HDR histogram.

use hdrhistogram::Histogram;

use super::classes::{classes, log2_class, CLASSES};
use super::LifetimeSummary;

mod runs;
use runs::Runs;

/// Distinct lifetimes kept exactly before the quantiles fall back to the HDR histogram.
pub const EXACT_DISTINCT: usize = 1 << 20;

/// Lifetimes in bounded memory: exact count, sum, min and max; exact quantiles while fewer than
/// [`EXACT_DISTINCT`] distinct values occurred, else from an HDR histogram with 3 significant
/// digits (exact below 2048, else within 0.1 %); a log2 histogram.
// Design: exact quantiles need every distinct lifetime with its count. Lifetimes repeat a lot
// on real traces (most blocks live a few records or a few clock ticks), yet on a busy heap they
// spread over hundreds of thousands of values (a clock in nanoseconds makes nearly every one
// distinct); a map from value to count then misses the cache on every free, and was the
// costliest step of `mtf stats`. So the values are kept in three parts, none hashed: those
// below `DENSE` (most of them on real traces) counted in an array indexed by the value, one
// increment; the others appended to a buffer, which, when full, is sorted and merged into a
// sorted list of distinct values with their counts (`runs`). The buffer holds sixteen values per
// entry of the list (at least 2¹⁴, at most 2¹⁸: 2 MiB), so a merge, which moves every entry of
// the list twice, moves one entry per eight values until the buffer reaches its most (and at
// most eight per value, the list at its bound); all of it sequential. (One value per entry, as
// before, spent 1–2 % more of `mtf stats`' instructions on the benchmark shapes.) The figures
// are those of a map: the distinct values only grow, so "fewer than `cap` distinct values
// occurred" is known at the end as well as at each value. The list is packed (`Runs`: each
// entry its value's difference from the one before and its count, in LEB128): lifetimes lie
// close together and most repeat little, so an entry takes two or three bytes where a pair of
// integers took sixteen, and the list at its bound of 2²⁰ entries a few MB rather than 16 MB
// (it was most of `stats`' memory on the benchmark shapes at 10 M records); the buffer is
// merged into a new list, both alive for the merge, which reads and writes each entry once, as
// the merge in place of a list of pairs did; past the
// bound of distinct values the quantiles come from an HDR histogram, and say so
// (`LifetimeSummary::exact`). That histogram is built only then, from the distinct values and
// their counts (an HDR histogram's counts depend neither on the order of the values nor on
// whether they come one at a time or as (value, count)), so the usual trace never pays a
// histogram per free. It must grow with the values (`record` on an auto-resizing histogram): a
// clamping record put every lifetime above 2047 at 2047.
#[derive(Debug, Clone)]
pub(super) struct Lifetimes {
    pub(super) count: u64,
    sum: u128,
    min: u64,
    max: u64,
    /// Distinct values and their counts while at most `cap` were seen; else the histogram.
    kept: Kept,
    cap: usize,
    log2: [u64; CLASSES],
}

/// Values below this are counted in [`Exact::dense`] (2¹², 32 KiB of counts).
const DENSE: u64 = 1 << 12;

/// The least and the most values the buffer takes before it is sorted into the list (sixteen
/// per entry of the list, within these bounds).
const BUFFER: usize = 1 << 14;
const BUFFER_MAX: usize = 1 << 18;

#[derive(Debug, Clone)]
enum Kept {
    Exact(Exact),
    Hdr(Histogram<u64>),
}

#[derive(Debug, Clone, Default)]
struct Exact {
    /// Count per value below [`DENSE`] (allocated at the first such value).
    dense: Vec<u64>,
    /// Distinct values in `dense`.
    dense_distinct: usize,
    /// Values from [`DENSE`] up not yet in `runs`, in trace order.
    buf: Vec<u64>,
    /// Distinct values from [`DENSE`] up and their counts, in increasing order.
    runs: Runs,
    /// Lists like `runs` of chunks absorbed (`Lifetimes::absorb`), not yet merged into it: they
    /// are merged all at once (k-way) when the figures are asked for.
    pending: Vec<Runs>,
    /// The radix sort's second buffer (as long as `buf` at its longest).
    scratch: Vec<u64>,
}

impl Exact {
    /// Distinct values, once the buffer is merged.
    fn distinct(&self) -> usize {
        self.dense_distinct + self.runs.len()
    }

    /// Whether the buffer is full.
    fn full(&self) -> bool {
        self.buf.len() >= (16 * self.runs.len()).clamp(BUFFER, BUFFER_MAX)
    }

    /// Sorts the buffer into `runs`, and merges the lists absorbed into it.
    fn merge(&mut self) {
        self.merge_buf();
        if !self.pending.is_empty() {
            let mut lists = std::mem::take(&mut self.pending);
            lists.push(std::mem::take(&mut self.runs));
            self.runs = merge_lists(lists);
        }
    }

    /// The entries of `pending`, at least as many as the distinct values in them.
    fn pending_len(&self) -> usize {
        self.pending.iter().map(Runs::len).sum()
    }

    /// Sorts the buffer into `runs`: one pass over both, into a new list.
    fn merge_buf(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        radix_sort(&mut self.buf, &mut self.scratch);
        self.runs = self.runs.merged_with(&self.buf);
        self.buf.clear();
    }

    /// The distinct values and their counts in increasing order (the buffer merged).
    fn sorted(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.dense
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(v, &c)| (v as u64, c))
            .chain(self.runs.iter())
    }
}

/// The digits of [`radix_sort`]: 11 bits, 2048 counts of 4 bytes (8 KiB, in the L1 cache).
const RADIX_BITS: u32 = 11;

// Design: the buffer's values are sorted by a least-significant-digit radix sort rather than a
// comparison sort (`sort_unstable` was most of the lifetimes' cost: about 16 comparisons and
// unpredictable branches per value at 2¹⁴ to 2¹⁸ values). One pass counts every digit the
// largest value has (the digits above it are zero in every value), then one stable pass per
// digit moves the values between the buffer and `tmp`, a digit every value shares skipped.
// Lifetimes in records of a trace of a million records are two digits, in nanoseconds three or
// four. The result is the same sorted vector; small buffers (the last one of a pass) take the
// comparison sort, where the counts would cost more than they save.
/// Sorts `v` in increasing order, `tmp` its scratch space.
fn radix_sort(v: &mut Vec<u64>, tmp: &mut Vec<u64>) {
    const B: usize = 1 << RADIX_BITS;
    const MASK: u64 = (B - 1) as u64;
    let n = v.len();
    if n < 2048 || u32::try_from(n).is_err() {
        v.sort_unstable();
        return;
    }
    let top = v.iter().fold(0u64, |a, &x| a | x);
    let digits = (u64::BITS - top.leading_zeros()).div_ceil(RADIX_BITS) as usize;
    let mut counts = vec![0u32; digits * B];
    for &x in v.iter() {
        let mut x = x;
        for c in counts.chunks_exact_mut(B) {
            c[(x & MASK) as usize] += 1;
            x >>= RADIX_BITS;
        }
    }
    tmp.clear();
    tmp.resize(n, 0);
    let mut in_tmp = false;
    for (d, c) in counts.chunks_exact_mut(B).enumerate() {
        let shift = d as u32 * RADIX_BITS;
        let (src, dst) = if in_tmp {
            (&tmp[..], &mut v[..])
        } else {
            (&v[..], &mut tmp[..])
        };
        // A digit every value shares moves nothing.
        if src
            .first()
            .is_some_and(|&x| c[((x >> shift) & MASK) as usize] as usize == n)
        {
            continue;
        }
        let mut sum = 0u32;
        for k in c.iter_mut() {
            let t = *k;
            *k = sum;
            sum += t;
        }
        for &x in src {
            let o = &mut c[((x >> shift) & MASK) as usize];
            dst[*o as usize] = x;
            *o += 1;
        }
        in_tmp = !in_tmp;
    }
    if in_tmp {
        std::mem::swap(v, tmp);
    }
}

/// An auto-resizing HDR histogram with 3 significant digits.
fn histogram() -> Histogram<u64> {
    // Construction only fails on invalid parameters, which these are not.
    let mut hdr = Histogram::new(3).unwrap_or_else(|_| unreachable!("valid HDR parameters"));
    hdr.auto(true);
    hdr
}

impl Lifetimes {
    pub(super) fn new() -> Lifetimes {
        Lifetimes::with_cap(EXACT_DISTINCT)
    }

    pub(super) fn with_cap(cap: usize) -> Lifetimes {
        Lifetimes {
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
            kept: Kept::Exact(Exact::default()),
            cap,
            log2: [0; CLASSES],
        }
    }

    #[inline]
    pub(super) fn add(&mut self, v: u64) {
        self.count += 1;
        self.sum += v as u128;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.log2[log2_class(v)] += 1;
        match &mut self.kept {
            Kept::Exact(e) => {
                if v < DENSE {
                    if e.dense.is_empty() {
                        e.dense = vec![0; DENSE as usize];
                    }
                    let c = &mut e.dense[v as usize];
                    e.dense_distinct += usize::from(*c == 0);
                    *c += 1;
                } else {
                    e.buf.push(v);
                    if e.full() {
                        self.settle();
                    }
                }
            }
            Kept::Hdr(h) => record(h, v, 1),
        }
    }

    /// Merges the buffered values; past the bound of distinct values, the histogram of every
    /// value so far takes their place.
    #[cold]
    fn settle(&mut self) {
        let Kept::Exact(e) = &mut self.kept else {
            return;
        };
        e.merge();
        if e.distinct() <= self.cap {
            return;
        }
        let mut h = histogram();
        for (v, c) in e.sorted() {
            record(&mut h, v, c);
        }
        self.kept = Kept::Hdr(h);
    }

    /// The quantiles `qs` (each the ⌈q·n⌉-th smallest value, nearest rank), exactly while the
    /// distinct values are kept.
    pub(super) fn quantiles<const N: usize>(&mut self, qs: [f64; N]) -> [u64; N] {
        let mut out = [0u64; N];
        if self.count == 0 {
            return out;
        }
        self.settle();
        let rank = |q: f64| ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        match &self.kept {
            Kept::Exact(e) => {
                for (o, q) in out.iter_mut().zip(qs) {
                    let want = rank(q);
                    let mut seen = 0u64;
                    for (v, c) in e.sorted() {
                        seen += c;
                        if seen >= want {
                            *o = v;
                            break;
                        }
                    }
                }
            }
            Kept::Hdr(h) => {
                for (o, q) in out.iter_mut().zip(qs) {
                    *o = h.value_at_quantile(q).clamp(self.min, self.max);
                }
            }
        }
        out
    }

    pub(super) fn summary(&mut self) -> LifetimeSummary {
        let [median, p99] = self.quantiles([0.5, 0.99]);
        self.settle();
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
            exact: matches!(self.kept, Kept::Exact(_)),
            histogram: classes(&self.log2, None),
        }
    }
}

impl Lifetimes {
    /// Sorts the values buffered into the list (what [`Lifetimes::absorb`] does first to the
    /// lifetimes it takes): a chunk's pass of `stats -j N` does it on its own thread.
    pub(super) fn settle_buffer(&mut self) {
        if let Kept::Exact(e) = &mut self.kept {
            e.merge_buf();
        }
    }

    /// Add the lifetimes of `other` (those of another chunk of the trace): the figures are
    /// those of one accumulator fed both, in any order (a set of values: the distinct values
    /// and their counts, or past the cap the histogram of every value).
    pub(super) fn absorb(&mut self, other: &mut Lifetimes) {
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        for (a, b) in self.log2.iter_mut().zip(&other.log2) {
            *a += b;
        }
        if let Kept::Exact(e) = &mut other.kept {
            e.merge_buf();
        }
        let mine = std::mem::replace(&mut self.kept, Kept::Exact(Exact::default()));
        self.kept = match (mine, &mut other.kept) {
            (Kept::Exact(mut a), Kept::Exact(b)) => {
                a.merge_buf();
                if !b.dense.is_empty() {
                    if a.dense.is_empty() {
                        a.dense = vec![0; DENSE as usize];
                    }
                    for (x, y) in a.dense.iter_mut().zip(&b.dense) {
                        a.dense_distinct += usize::from(*x == 0 && *y > 0);
                        *x += y;
                    }
                }
                // Design: the chunks' lists are kept and merged once, k-way, when the figures
                // are asked for (a merge per join copied the growing list at each chunk), or
                // sooner where they hold more than twice the cap of entries (memory stays
                // bounded); the figures depend only on the values and their counts.
                a.pending.append(&mut b.pending);
                if !b.runs.is_empty() {
                    a.pending.push(std::mem::take(&mut b.runs));
                }
                if a.runs.len() + a.pending_len() > 2 * self.cap {
                    a.merge();
                }
                Kept::Exact(a)
            }
            (Kept::Hdr(mut h), Kept::Exact(b)) => {
                b.merge();
                for (v, c) in b.sorted() {
                    record(&mut h, v, c);
                }
                Kept::Hdr(h)
            }
            (Kept::Exact(mut a), Kept::Hdr(g)) => {
                a.merge();
                let mut h = g.clone();
                for (v, c) in a.sorted() {
                    record(&mut h, v, c);
                }
                Kept::Hdr(h)
            }
            (Kept::Hdr(mut h), Kept::Hdr(g)) => {
                for v in g.iter_recorded() {
                    record(&mut h, v.value_iterated_to(), v.count_at_value());
                }
                Kept::Hdr(h)
            }
        };
        // Past the cap of distinct values, the histogram (as one accumulator would be); with
        // lists pending, that is known once they are merged (`settle`, when asked for).
        if !matches!(&self.kept, Kept::Exact(e) if !e.pending.is_empty()) {
            self.settle();
        }
    }
}

/// The sorted lists of distinct values and counts `lists` merged into one (counts of a value
/// in several lists added): two by two, in rounds, each a sequential pass (a heap of the k
/// heads cost several times more per entry).
fn merge_lists(mut lists: Vec<Runs>) -> Runs {
    lists.retain(|l| !l.is_empty());
    while lists.len() > 1 {
        let mut next = Vec::with_capacity(lists.len().div_ceil(2));
        let mut it = lists.into_iter();
        while let Some(a) = it.next() {
            match it.next() {
                Some(b) => next.push(merge_two(&a, &b)),
                None => next.push(a),
            }
        }
        lists = next;
    }
    lists.pop().unwrap_or_default()
}

/// Two sorted lists of distinct values and counts merged.
fn merge_two(a: &Runs, b: &Runs) -> Runs {
    let mut out = Runs::with_capacity(a.bytes() + b.bytes());
    let (mut a, mut b) = (a.iter().peekable(), b.iter().peekable());
    while let (Some(&x), Some(&y)) = (a.peek(), b.peek()) {
        if x.0 < y.0 {
            out.push(x.0, x.1);
            a.next();
        } else if y.0 < x.0 {
            out.push(y.0, y.1);
            b.next();
        } else {
            out.push(x.0, x.1 + y.1);
            a.next();
            b.next();
        }
    }
    for (v, c) in a.chain(b) {
        out.push(v, c);
    }
    out
}

/// Records `c` occurrences of `v`.
fn record(h: &mut Histogram<u64>, v: u64, c: u64) {
    if h.record_n(v, c).is_err() {
        // Only a value the histogram cannot grow to (beyond 2⁶³): the top of its range.
        h.saturating_record_n(v, c);
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

    /// The histogram built from the distinct values when they outgrow the cap is the one that
    /// recording every value as it came would have built: same quantiles everywhere.
    #[test]
    fn histogram_built_late_equals_one_built_value_by_value() {
        let mut eager = histogram();
        let mut late = Lifetimes::with_cap(300);
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for i in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Small values (the dense counts), large ones, and a few beyond 2⁶³.
            let v = match i % 7 {
                0 => x % 50,
                1 if i % 1001 == 0 => u64::MAX - (x % 3),
                _ => x % 1_000_000,
            };
            record(&mut eager, v, 1);
            late.add(v);
        }
        late.settle();
        let Kept::Hdr(h) = &late.kept else {
            panic!("the cap was passed")
        };
        assert_eq!(h.len(), eager.len());
        for q in [0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0] {
            assert_eq!(h.value_at_quantile(q), eager.value_at_quantile(q), "q {q}");
        }
        assert!(!late.summary().exact);
    }

    /// Lifetimes cut in pieces and absorbed in any order give the figures of one accumulator
    /// fed them all: below the cap (exact) and past it (the histogram), pieces on either side.
    #[test]
    fn absorbed_pieces_equal_one_accumulator() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let values: Vec<u64> = (0..30_000u64)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if i % 3 == 0 {
                    x % 100
                } else if i < 20_000 {
                    4096 + x % 200
                } else {
                    x % 5_000_000
                }
            })
            .collect();
        for cap in [EXACT_DISTINCT, 1000, 150] {
            let mut one = Lifetimes::with_cap(cap);
            values.iter().for_each(|&v| one.add(v));
            let want = one.summary();
            for cuts in [[0, 15_000], [10, 25_000], [20_000, 29_999], [0, 0]] {
                let mut parts = [0..cuts[0], cuts[0]..cuts[1], cuts[1]..values.len()].map(|r| {
                    let mut l = Lifetimes::with_cap(cap);
                    values[r].iter().for_each(|&v| l.add(v));
                    l
                });
                let [a, b, c] = &mut parts;
                b.absorb(c);
                a.absorb(b);
                let got = a.summary();
                assert_eq!(
                    format!("{got:?}"),
                    format!("{want:?}"),
                    "cap {cap} {cuts:?}"
                );
            }
        }
    }

    /// Many chunks joined as `mtf stats -j N` joins them (each later chunk absorbs the figures
    /// of those before, whose lists then wait to be merged k-way), cut anywhere: every quantile
    /// and the summary are those of one accumulator, below the cap, past it, and where the
    /// pending lists pass twice the cap before the end.
    #[test]
    fn many_chunks_joined_in_order_equal_one_accumulator() {
        let mut x = 0x1234_5678_9abc_def1u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let values: Vec<u64> = (0..40_000u64)
            .map(|i| match i % 4 {
                0 => next() % 3000,
                1 => 4096 + next() % 300,
                _ => next() % 2_000_000,
            })
            .collect();
        for cap in [EXACT_DISTINCT, 40_000, 5000, 150] {
            let mut one = Lifetimes::with_cap(cap);
            values.iter().for_each(|&v| one.add(v));
            let qs = [0.001, 0.1, 0.5, 0.77, 0.99, 1.0];
            let want = (one.quantiles(qs), format!("{:?}", one.summary()));
            for pieces in [2usize, 5, 9, 17] {
                let mut cuts: Vec<usize> = (0..pieces - 1)
                    .map(|_| (next() % values.len() as u64) as usize)
                    .collect();
                cuts.push(0);
                cuts.push(values.len());
                cuts.sort_unstable();
                let mut acc: Option<Lifetimes> = None;
                for w in cuts.windows(2) {
                    let mut l = Lifetimes::with_cap(cap);
                    values[w[0]..w[1]].iter().for_each(|&v| l.add(v));
                    if let Some(mut a) = acc.take() {
                        l.absorb(&mut a);
                    }
                    acc = Some(l);
                }
                let mut got = acc.expect("pieces");
                let got = (got.quantiles(qs), format!("{:?}", got.summary()));
                assert_eq!(got, want, "cap {cap}, cuts {cuts:?}");
            }
        }
    }

    /// The radix sort sorts as the comparison sort does: values of one to six digits, digits
    /// shared by every value, repeats, extremes, and buffers on either side of its threshold.
    #[test]
    fn radix_sort_sorts() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut tmp = Vec::new();
        for (n, bits) in [
            (10usize, 64u32),
            (2047, 20),
            (2048, 20),
            (5000, 12),
            (70_000, 40),
        ]
        .into_iter()
        .chain([(30_000, 64), (30_000, 33), (4096, 1), (20_000, 22)])
        {
            let mut v: Vec<u64> = (0..n)
                .map(|i| match i % 5 {
                    0 => (next() >> (64 - bits)) | (1 << 12),
                    1 => 5000,
                    _ => next() >> (64 - bits),
                })
                .collect();
            if bits == 64 {
                v.extend([u64::MAX, 0, u64::MAX]);
            }
            let mut want = v.clone();
            want.sort_unstable();
            radix_sort(&mut v, &mut tmp);
            assert_eq!(v, want, "{n} values of {bits} bits");
        }
    }

    /// The k-way merge of sorted lists adds the counts of a value met in several.
    #[test]
    fn lists_merged_k_way() {
        let runs = |l: &[(u64, u64)]| l.iter().copied().collect::<Runs>();
        let lists = vec![
            runs(&[(1, 1), (5, 2), (9, 1)]),
            runs(&[]),
            runs(&[(5, 3), (6, 1)]),
            runs(&[(0, 4), (9, 9), (10, 1)]),
        ];
        assert_eq!(
            merge_lists(lists),
            runs(&[(0, 4), (1, 1), (5, 5), (6, 1), (9, 10), (10, 1)])
        );
        assert_eq!(
            merge_lists(vec![runs(&[]), runs(&[(3, 1)])]),
            runs(&[(3, 1)])
        );
        assert!(merge_lists(Vec::new()).is_empty());
    }

    /// Many values, repeated across many merges of the buffer, below and above the dense
    /// counts: every quantile is the nearest-rank one of the sorted list.
    #[test]
    fn quantiles_stay_exact_across_merges() {
        let mut l = Lifetimes::new();
        let mut values = Vec::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..200_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = match i % 5 {
                0 => (x >> 40) % 3000,
                1 => 4096 + (x >> 40) % 50,
                _ => (x >> 30) % 3_000_000,
            };
            values.push(v);
            l.add(v);
        }
        values.sort_unstable();
        let q = |p: f64| values[((p * values.len() as f64).ceil() as usize).max(1) - 1];
        for p in [0.0001, 0.1, 0.2, 0.25, 0.5, 0.77, 0.99, 1.0] {
            assert_eq!(l.quantiles([p]), [q(p)], "q {p}");
        }
        let s = l.summary();
        assert!(s.exact);
        assert_eq!((s.median, s.p99, s.count), (q(0.5), q(0.99), 200_000));
    }
}
