use std::collections::HashMap;

use super::pass::{Thinned, Tracker};
use super::Sample;
use crate::analysis::{HeapEvent, HeapOp};

fn s(event: u64, bytes: u128) -> Sample {
    Sample {
        event,
        record: event,
        time: event,
        bytes,
        blocks: 0,
    }
}

#[test]
fn a_thinned_curve_keeps_the_first_peak_and_the_last_point() {
    let mut t = Thinned::new(9, true);
    // A saw-tooth with one highest point (the first of two equal highs) in the middle.
    let values: Vec<u128> = (0..1000u64)
        .map(|i| {
            if i == 421 || i == 777 {
                5000
            } else {
                (i % 37) as u128
            }
        })
        .collect();
    for (i, &v) in values.iter().enumerate() {
        t.add(s(i as u64, v));
    }
    let c = t.curve();
    assert!(c.thinned);
    assert!(c.points.len() <= 9, "{} points", c.points.len());
    let high = c.points.iter().map(|p| p.bytes).max();
    let top = c.points.iter().find(|p| Some(p.bytes) == high);
    assert_eq!(top.map(|p| (p.event, p.bytes)), Some((421, 5000)));
    // The lows are kept too: the saw-tooth falls to 0 in every stretch.
    assert!(c.points.iter().any(|p| p.bytes == 0 && p.event > 0));
    assert_eq!(c.points.last().map(|p| p.event), Some(999));
    assert!(c.points.windows(2).all(|w| w[0].event < w[1].event));
}

#[test]
fn a_short_curve_is_kept_whole() {
    let mut t = Thinned::new(120, true);
    for i in 0..40 {
        t.add(s(i, i as u128));
    }
    let c = t.curve();
    assert!(!c.thinned);
    assert_eq!(c.points.len(), 40);
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn ev(record: u64, site: Option<u64>, op: HeapOp) -> HeapEvent {
    HeapEvent {
        record,
        space: 0,
        key: 0,
        thread: Some(record % 3),
        time: None,
        site,
        stack: None,
        op,
    }
}

#[test]
fn the_figures_at_the_peak_are_those_of_a_snapshot_taken_then() {
    // Random allocations, frees, reallocs (with and without a site of their own), moves and
    // allocations of live ids, against a model that copies every site's live figures whenever
    // the total reaches a new high.
    for seed in 1..40u64 {
        let mut rng = Rng(seed * 7919);
        let mut t = Tracker::new(0, true, false, 100);
        // The model: live blocks by id (site, size), per site live figures and totals.
        let mut live: HashMap<u64, (u64, u64)> = HashMap::new();
        let mut site_live: HashMap<u64, (u128, u64)> = HashMap::new();
        let mut totals: HashMap<u64, (u64, u128, u128)> = HashMap::new();
        let mut snapshot: HashMap<u64, (u128, u64)> = HashMap::new();
        let (mut bytes, mut high) = (0u128, 0u128);
        let end = |id: u64,
                   live: &mut HashMap<u64, (u64, u64)>,
                   site_live: &mut HashMap<u64, (u128, u64)>,
                   bytes: &mut u128|
         -> Option<(u64, u64)> {
            let (site, size) = live.remove(&id)?;
            let s = site_live.entry(site).or_default();
            s.0 -= size as u128;
            s.1 -= 1;
            *bytes -= size as u128;
            Some((site, size))
        };
        for r in 0..300u64 {
            let id = rng.below(12);
            let site = rng.below(4);
            let size = 1 + rng.below(100);
            let op = match rng.below(5) {
                0 | 1 => HeapOp::Alloc {
                    id,
                    size,
                    align: None,
                },
                2 => HeapOp::Free { id },
                3 => HeapOp::Move {
                    old: id,
                    new: rng.below(12),
                    size: Some(size),
                },
                _ => HeapOp::Move {
                    old: id,
                    new: rng.below(12),
                    size: None,
                },
            };
            let own_site = rng.below(2) == 0;
            let e = ev(r, own_site.then_some(site), op);
            t.event(&e);
            t.next_record();
            // The model.
            let mut alloc = |id: u64,
                             site: u64,
                             size: u64,
                             count: bool,
                             live: &mut HashMap<u64, (u64, u64)>,
                             site_live: &mut HashMap<u64, (u128, u64)>,
                             bytes: &mut u128| {
                end(id, live, site_live, bytes);
                live.insert(id, (site, size));
                let s = site_live.entry(site).or_default();
                s.0 += size as u128;
                s.1 += 1;
                *bytes += size as u128;
                let tot = totals.entry(site).or_default();
                if count {
                    tot.0 += 1;
                    tot.1 += size as u128;
                }
                tot.2 = tot.2.max(s.0);
            };
            let s = e.site.unwrap_or(u64::MAX);
            match op {
                HeapOp::Alloc { id, size, .. } => {
                    alloc(id, s, size, true, &mut live, &mut site_live, &mut bytes)
                }
                HeapOp::Free { id } => {
                    end(id, &mut live, &mut site_live, &mut bytes);
                }
                HeapOp::Move {
                    old,
                    new,
                    size: Some(size),
                } => {
                    let mut site = s;
                    if let Some((was, _)) = end(old, &mut live, &mut site_live, &mut bytes) {
                        if e.site.is_none() {
                            site = was;
                        }
                    }
                    alloc(new, site, size, true, &mut live, &mut site_live, &mut bytes);
                }
                HeapOp::Move {
                    old,
                    new,
                    size: None,
                } => {
                    if let Some((site, size)) = end(old, &mut live, &mut site_live, &mut bytes) {
                        alloc(
                            new,
                            site,
                            size,
                            false,
                            &mut live,
                            &mut site_live,
                            &mut bytes,
                        );
                    }
                }
            }
            if bytes > high {
                high = bytes;
                snapshot = site_live.clone();
            }
        }
        let (points, peak) = t.points_for_test();
        assert_eq!(peak.map_or(0, |p| p.bytes), high, "seed {seed}");
        for (site, allocations, total, at_peak, max, now) in points {
            let k = site.unwrap_or(u64::MAX);
            let tot = totals.get(&k).copied().unwrap_or_default();
            assert_eq!(
                (allocations, total, max),
                (tot.0, tot.1, tot.2),
                "seed {seed} site {k}"
            );
            assert_eq!(
                at_peak,
                snapshot.get(&k).copied().unwrap_or_default(),
                "seed {seed} site {k}"
            );
            assert_eq!(
                now,
                site_live.get(&k).copied().unwrap_or_default(),
                "seed {seed} site {k}"
            );
        }
    }
}
