//! `mtf diff A B`: two traces' heap figures side by side, per namespace, per site and per size
//! class, sorted by change (what `heaptrack_print --diff` and `jeprof --base` give).
//!
//! The traces may have different DTDs: the namespaces with content (`Stats::shown_spaces`) are
//! paired by name (or, when each trace shows exactly one, with each other), sites by their resolved name (ids mean nothing across
//! traces; an unnamed site is paired by id), size classes by their bounds.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::stats::{SiteSummary, SpaceSummary, Stats};

/// One figure in both traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    /// In the first trace (the base). 128 bits: byte figures may pass 2⁶⁴ − 1.
    pub a: u128,
    /// In the second.
    pub b: u128,
}

impl Pair {
    /// `b - a` (saturating at the ends of `i128`, which no figure of a trace reaches).
    pub fn delta(&self) -> i128 {
        let (a, b) = (
            i128::try_from(self.a).unwrap_or(i128::MAX),
            i128::try_from(self.b).unwrap_or(i128::MAX),
        );
        b.saturating_sub(a)
    }
}

/// A site in both traces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteDiff {
    /// How the site is named in both (its name, `site ID`, or `(no site)`).
    pub label: String,
    /// Bytes allocated.
    pub allocated: Pair,
    /// Allocations.
    pub allocations: Pair,
    /// Live bytes at the namespace's peak.
    pub peak: Pair,
    /// Bytes alive at the end.
    pub leaked: Pair,
    /// Blocks alive at the end.
    pub leaked_blocks: Pair,
}

impl SiteDiff {
    /// The largest change of its byte figures, for sorting.
    pub fn change(&self) -> u128 {
        [self.peak, self.leaked, self.allocated]
            .iter()
            .map(|p| p.delta().unsigned_abs())
            .max()
            .unwrap_or(0)
    }
}

/// A size class in both traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassDiff {
    /// Smallest size of the class.
    pub lo: u64,
    /// Largest size.
    pub hi: u64,
    /// Allocations.
    pub count: Pair,
    /// Bytes.
    pub bytes: Pair,
}

/// A namespace in both traces.
#[derive(Debug, Clone, PartialEq)]
pub struct SpaceDiff {
    /// Its name in the first trace.
    pub name_a: String,
    /// Its name in the second.
    pub name_b: String,
    /// The overall figures, by name (`peak_bytes`, `allocations`, …), in a fixed order.
    pub figures: Vec<(&'static str, Pair)>,
    /// Sites, by largest change first.
    pub sites: Vec<SiteDiff>,
    /// Size classes, by largest change in count first.
    pub sizes: Vec<ClassDiff>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    /// Data records in each slice.
    pub records: Pair,
    /// Namespaces found in both.
    pub spaces: Vec<SpaceDiff>,
    /// Namespaces of the first trace only.
    pub only_a: Vec<String>,
    /// Namespaces of the second trace only.
    pub only_b: Vec<String>,
}

fn site_label(s: &SiteSummary) -> String {
    match (&s.name, s.site) {
        (Some(n), _) => n.clone(),
        (None, Some(id)) => format!("site {id}"),
        (None, None) => "(no site)".to_string(),
    }
}

fn pair(a: impl Into<u128>, b: impl Into<u128>) -> Pair {
    Pair {
        a: a.into(),
        b: b.into(),
    }
}

/// Compares two namespaces.
pub fn diff_space(a: &SpaceSummary, b: &SpaceSummary) -> SpaceDiff {
    let f = |x: &SpaceSummary| {
        let w = u128::from;
        [
            ("peak_bytes", x.peak_bytes),
            ("peak_blocks", w(x.peak_blocks)),
            ("max_blocks", w(x.max_blocks)),
            ("allocations", w(x.allocations)),
            ("bytes_allocated", x.bytes_allocated),
            ("frees", w(x.frees)),
            ("bytes_freed", x.bytes_freed),
            ("leaked_bytes", x.live_bytes),
            ("leaked_blocks", w(x.live_blocks)),
            ("temporary", w(x.temporary)),
            ("unknown_frees", w(x.unknown_frees)),
            ("redefined", w(x.redefined)),
            ("lifetime_median_data_records", w(x.lifetime_records.median)),
            ("lifetime_p99_data_records", w(x.lifetime_records.p99)),
            ("lifetime_max_data_records", w(x.lifetime_records.max)),
        ]
    };
    let figures = f(a)
        .iter()
        .zip(f(b).iter())
        .map(|((n, x), (_, y))| (*n, pair(*x, *y)))
        .collect();
    // Sites by label; several sites of one trace with the same name are added up.
    let mut sites: BTreeMap<String, SiteDiff> = BTreeMap::new();
    for (side, list) in [(0, &a.sites), (1, &b.sites)] {
        for s in list {
            let label = site_label(s);
            let e = sites.entry(label.clone()).or_insert_with(|| SiteDiff {
                label,
                allocated: pair(0u8, 0u8),
                allocations: pair(0u8, 0u8),
                peak: pair(0u8, 0u8),
                leaked: pair(0u8, 0u8),
                leaked_blocks: pair(0u8, 0u8),
            });
            let add = |p: &mut Pair, v: u128| {
                if side == 0 {
                    p.a = p.a.saturating_add(v);
                } else {
                    p.b = p.b.saturating_add(v);
                }
            };
            add(&mut e.allocated, s.bytes_allocated);
            add(&mut e.allocations, s.allocations.into());
            add(&mut e.peak, s.peak_bytes);
            add(&mut e.leaked, s.leaked_bytes);
            add(&mut e.leaked_blocks, s.leaked_blocks.into());
        }
    }
    let mut sites: Vec<SiteDiff> = sites.into_values().collect();
    sites.sort_by(|x, y| y.change().cmp(&x.change()).then(x.label.cmp(&y.label)));
    let mut classes: BTreeMap<(u64, u64), ClassDiff> = BTreeMap::new();
    for (side, list) in [(0, &a.sizes), (1, &b.sizes)] {
        for c in list {
            let e = classes.entry((c.lo, c.hi)).or_insert(ClassDiff {
                lo: c.lo,
                hi: c.hi,
                count: pair(0u8, 0u8),
                bytes: pair(0u8, 0u8),
            });
            if side == 0 {
                e.count.a = c.count.into();
                e.bytes.a = c.bytes;
            } else {
                e.count.b = c.count.into();
                e.bytes.b = c.bytes;
            }
        }
    }
    let mut sizes: Vec<ClassDiff> = classes.into_values().collect();
    sizes.sort_by(|x, y| {
        y.count
            .delta()
            .unsigned_abs()
            .cmp(&x.count.delta().unsigned_abs())
            .then(x.lo.cmp(&y.lo))
    });
    SpaceDiff {
        name_a: a.name.clone(),
        name_b: b.name.clone(),
        figures,
        sites,
        sizes,
    }
}

/// Compares two traces' statistics (`a` is the base).
pub fn diff(a: &Stats, b: &Stats) -> Diff {
    let mut spaces = Vec::new();
    let mut only_a = Vec::new();
    let mut only_b: Vec<String> = Vec::new();
    // Only the namespaces with content take part (Stats::shown_spaces): a bookkeeping
    // namespace that neither trace fills would add rows of zeros. One shown in one trace is
    // compared with its namesake in the other, even if that one is empty there.
    let (sa, sb) = (a.shown_spaces(), b.shown_spaces());
    if sa.len() == 1 && sb.len() == 1 {
        spaces.push(diff_space(sa[0], sb[0]));
    } else {
        for x in &sa {
            match b.spaces.iter().find(|y| y.name == x.name) {
                Some(y) => spaces.push(diff_space(x, y)),
                None => only_a.push(x.name.clone()),
            }
        }
        for y in &sb {
            if sa.iter().any(|x| x.name == y.name) {
                continue;
            }
            match a.spaces.iter().find(|x| x.name == y.name) {
                Some(x) => spaces.push(diff_space(x, y)),
                None => only_b.push(y.name.clone()),
            }
        }
    }
    Diff {
        records: pair(a.records, b.records),
        spaces,
        only_a,
        only_b,
    }
}

/// The `schema` value of `mtf diff --format json`.
pub const JSON_SCHEMA: &str = "mtf-diff/2";

#[cfg(feature = "json")]
impl Diff {
    /// The comparison as JSON (docs/stats.md), with the `top` sites and size classes.
    pub fn to_json(&self, top: usize) -> serde_json::Value {
        use serde_json::{json, Map, Value};
        let p = |x: &Pair| {
            let d = x.delta();
            let int = crate::analysis::stats::json_int;
            json!({ "a": int(x.a as i128), "b": int(x.b as i128), "delta": int(d) })
        };
        let spaces: Vec<Value> = self
            .spaces
            .iter()
            .map(|s| {
                let mut figures = Map::new();
                for (n, v) in &s.figures {
                    figures.insert((*n).to_string(), p(v));
                }
                json!({
                    "name": { "a": s.name_a, "b": s.name_b },
                    "figures": figures,
                    "sites": {
                        "count": s.sites.len(),
                        "by_change": s.sites.iter().take(top).map(|x| json!({
                            "site": x.label, "peak_bytes": p(&x.peak),
                            "leaked_bytes": p(&x.leaked), "leaked_blocks": p(&x.leaked_blocks),
                            "bytes_allocated": p(&x.allocated), "allocations": p(&x.allocations),
                        })).collect::<Vec<_>>(),
                    },
                    "sizes": s.sizes.iter().take(top).map(|c| json!({
                        "lo": c.lo, "hi": c.hi, "count": p(&c.count), "bytes": p(&c.bytes),
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "schema": JSON_SCHEMA,
            "data_records": p(&self.records),
            "namespaces": spaces,
            "only_a": self.only_a,
            "only_b": self.only_b,
        })
    }
}

/// A change as `+12 (+3.4 %)`.
fn delta(p: &Pair) -> String {
    let d = p.delta();
    let rel = if p.a == 0 {
        String::new()
    } else {
        format!(" ({:+.1} %)", d as f64 * 100.0 / p.a as f64)
    };
    format!("{d:+}{rel}")
}

impl Diff {
    /// The text form (`mtf diff`): figures side by side, then the `top` sites and size classes
    /// by change.
    pub fn to_text(&self, top: usize) -> String {
        render(self, top)
    }
}

fn render(d: &Diff, top: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{:<32} {:>16} {:>16}  change", "", "A (base)", "B");
    let _ = writeln!(
        o,
        "{:<32} {:>16} {:>16}  {}",
        "data records",
        d.records.a,
        d.records.b,
        delta(&d.records)
    );
    if d.spaces.is_empty() && d.only_a.is_empty() && d.only_b.is_empty() {
        let _ = writeln!(
            o,
            "\nno allocations in either trace: no namespace to compare"
        );
    }
    for n in &d.only_a {
        let _ = writeln!(o, "namespace {n}: only in A");
    }
    for n in &d.only_b {
        let _ = writeln!(o, "namespace {n}: only in B");
    }
    for s in &d.spaces {
        if s.name_a == s.name_b {
            let _ = writeln!(o, "\nnamespace {}", s.name_a);
        } else {
            let _ = writeln!(o, "\nnamespace {} (A) / {} (B)", s.name_a, s.name_b);
        }
        for (n, p) in &s.figures {
            let _ = writeln!(
                o,
                "  {:<30} {:>16} {:>16}  {}",
                n.replace('_', " "),
                p.a,
                p.b,
                delta(p)
            );
        }
        if s.sites.iter().any(|x| x.change() > 0) {
            let _ = writeln!(o, "\n  sites by change (bytes: A → B)");
            let _ = writeln!(
                o,
                "    {:>24} {:>24} {:>24}  site",
                "at the peak", "leaked", "allocated"
            );
            for x in s.sites.iter().filter(|x| x.change() > 0).take(top) {
                let ab = |p: &Pair| format!("{} → {}", p.a, p.b);
                let _ = writeln!(
                    o,
                    "    {:>24} {:>24} {:>24}  {}",
                    ab(&x.peak),
                    ab(&x.leaked),
                    ab(&x.allocated),
                    crate::escape::escape_for_terminal(&x.label)
                );
            }
        }
        if s.sizes.iter().any(|c| c.count.delta() != 0) {
            let _ = writeln!(o, "\n  size classes by change (allocations)");
            for c in s.sizes.iter().filter(|c| c.count.delta() != 0).take(top) {
                let class = if c.lo == c.hi {
                    c.lo.to_string()
                } else {
                    format!("{}–{}", c.lo, c.hi)
                };
                let _ = writeln!(
                    o,
                    "    {:<22} {:>16} {:>16}  {}",
                    class,
                    c.count.a,
                    c.count.b,
                    delta(&c.count)
                );
            }
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::event::{HeapEvent, HeapOp};
    use crate::analysis::stats::{HeapStats, Position, SpaceInfo, Stats, Window};

    fn stats(name: &str, allocs: &[(u64, u64, u64)], frees: &[u64]) -> Stats {
        let mut h = HeapStats::new(vec![SpaceInfo {
            name: name.into(),
            sized: true,
            shared: false,
            time_unit: None,
            temporary_reset: None,
            stacks: false,
        }]);
        h.open_window(Position::default());
        let mut r = 0;
        let mut ev = |h: &mut HeapStats, site, op| {
            h.event(&HeapEvent {
                record: r,
                space: 0,
                key: 0,
                thread: None,
                time: None,
                site,
                stack: None,
                op,
            });
            r += 1;
        };
        for &(id, size, site) in allocs {
            ev(
                &mut h,
                Some(site),
                HeapOp::Alloc {
                    id,
                    size,
                    align: None,
                },
            );
        }
        for &id in frees {
            ev(&mut h, None, HeapOp::Free { id });
        }
        let spaces = h.finish(Position::default(), |_, s| (s < 3).then(|| format!("f{s}")));
        Stats {
            window: Window::all(),
            start: Position::default(),
            end: Position::default(),
            records: (allocs.len() + frees.len()) as u64,
            other_records: 0,
            data_records: (allocs.len() + frees.len()) as u64,
            clock: crate::analysis::stats::Clock::None,
            problems: 0,
            types: vec![],
            spaces,
            files: vec![],
        }
    }

    #[test]
    fn sites_pair_by_name_and_sort_by_change() {
        // A: f1 allocates 100, f2 40 (freed); B: f1 allocates 100 + 500 (leaked), site 7 (no
        // name) 8 bytes.
        let a = stats("heap", &[(1, 100, 1), (2, 40, 2)], &[2]);
        let b = stats("blocks", &[(1, 100, 1), (2, 500, 1), (3, 8, 7)], &[]);
        let d = diff(&a, &b);
        assert_eq!(
            d.spaces.len(),
            1,
            "single namespaces pair whatever their names"
        );
        let s = &d.spaces[0];
        let fig = |n: &str| s.figures.iter().find(|f| f.0 == n).unwrap().1;
        assert_eq!(fig("peak_bytes"), Pair { a: 140, b: 608 });
        assert_eq!(fig("leaked_bytes"), Pair { a: 100, b: 608 });
        assert_eq!(fig("allocations"), Pair { a: 2, b: 3 });
        let labels: Vec<_> = s.sites.iter().map(|x| x.label.as_str()).collect();
        assert_eq!(labels, vec!["f1", "f2", "site 7"]);
        assert_eq!(s.sites[0].leaked, Pair { a: 100, b: 600 });
        assert_eq!(s.sites[0].change(), 500);
        assert_eq!(s.sites[1].allocated, Pair { a: 40, b: 0 });
        // Sizes: 100 in [64,127] in both; 40 [32,63] only in A; 500 [256,511] and 8 [8,15]
        // only in B: changes of 1 each, ties by size.
        let classes: Vec<_> = s
            .sizes
            .iter()
            .map(|c| (c.lo, c.count.a, c.count.b))
            .collect();
        assert_eq!(
            classes,
            vec![(8, 0, 1), (32, 1, 0), (256, 0, 1), (64, 1, 1)]
        );
        assert_eq!(d.records, Pair { a: 3, b: 3 });
        // Several namespaces pair by name.
        let mut c = stats("heap", &[(1, 16, 1)], &[]);
        c.spaces.push(b.spaces[0].clone());
        let d = diff(&c, &b);
        assert_eq!(d.spaces.len(), 1);
        assert_eq!(d.only_a, vec!["heap".to_string()]);
        assert!(d.only_b.is_empty());
        // A namespace where nothing happened (Android's heaps) takes no part.
        let mut e = stats("heaps", &[], &[]);
        e.spaces.push(b.spaces[0].clone());
        let d = diff(&e, &b);
        assert_eq!(d.spaces.len(), 1);
        assert_eq!(
            (d.spaces[0].name_a.as_str(), d.spaces[0].name_b.as_str()),
            ("blocks", "blocks")
        );
        assert!(d.only_a.is_empty() && d.only_b.is_empty());
    }
}
