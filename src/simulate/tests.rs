//! Utilisation of small hand-made traces, worked out by hand for each policy (the derivations
//! are in the comments; alignment 8, no header unless said).

use super::*;

/// Heap events from malloc-lab-style lines: `a id size`, `f id`, `r id size`.
fn events(text: &str) -> Vec<HeapEvent> {
    text.split(';')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(i, line)| {
            let w: Vec<&str> = line.split_whitespace().collect();
            let n = |k: usize| w[k].parse::<u64>().unwrap();
            let op = match w[0] {
                "a" => HeapOp::Alloc {
                    id: n(1),
                    size: n(2),
                    align: None,
                },
                "f" => HeapOp::Free { id: n(1) },
                "r" => HeapOp::Move {
                    old: n(1),
                    new: n(1),
                    size: Some(n(2)),
                },
                other => panic!("bad line {other}"),
            };
            HeapEvent {
                record: i as u64,
                space: 0,
                key: 0,
                thread: None,
                time: None,
                site: None,
                stack: None,
                op,
            }
        })
        .collect()
}

fn run(policy: Policy, header: u64, trace: &str) -> Report {
    let mut o = Options::new(policy);
    o.header = header;
    simulate(o, events(trace))
}

/// Four 8-byte blocks at 0, 8, 16, 24 (heap 32); 0 and 16 freed; one 8-byte block placed and
/// freed again, another placed; 24 freed; a 16-byte block placed. Peak live payload 32.
const T3: &str = "a 0 8; a 1 8; a 2 8; a 3 8; f 0; f 2; a 4 8; f 4; a 5 8; f 3; a 6 16";

/// A 16-byte block and four 8-byte ones (heap 48, live 48); the 16 at 0 and the 8 at 24 freed;
/// an 8 and a 16 placed. Peak live payload 48.
const T2: &str = "a 0 16; a 1 8; a 2 8; a 3 8; a 4 8; f 0; f 2; a 5 8; a 6 16";

fn check(policy: Policy, trace: &str, peak_heap: u64, peak_live: u64) {
    let r = run(policy, 0, trace);
    assert_eq!(
        (r.peak_heap, r.peak_live),
        (peak_heap, peak_live),
        "{}",
        policy.name()
    );
    let expect = peak_live as f64 / peak_heap as f64;
    assert!((r.utilisation() - expect).abs() < 1e-12);
}

#[test]
fn first_fit_by_hand() {
    // T3: a4 takes 0 (the lowest free), a5 takes 0 again; freeing 24 joins it with 16 into
    // [16,32), where the 16-byte block fits: heap 32, utilisation 1.
    check(Policy::FirstFit, T3, 32, 32);
    // T2: a5 splits [0,16) and takes [0,8); a6 (16) fits nowhere ([8,16) and [24,32) are
    // 8 bytes) and goes on top at 48: heap 64, utilisation 48/64.
    check(Policy::FirstFit, T2, 64, 48);
}

#[test]
fn next_fit_by_hand() {
    // T3: the search resumes at 32 (after a3) and wraps to 0 for a4, then resumes at 8 for a5,
    // which takes 16; freeing 24 leaves [0,8) and [24,32) apart; a6 (16) extends the top
    // block [24,32) to [24,40): heap 40, utilisation 32/40.
    check(Policy::NextFit, T3, 40, 32);
    // T2: as first fit (the wrap finds [0,16) first): heap 64.
    check(Policy::NextFit, T2, 64, 48);
}

#[test]
fn best_fit_by_hand() {
    // T3: every free block is 8 bytes: the lowest wins, as in first fit: heap 32.
    check(Policy::BestFit, T3, 32, 32);
    // T2: a5 takes [24,32) (an exact fit), so a6 fits [0,16): heap 48, utilisation 1.
    check(Policy::BestFit, T2, 48, 48);
}

#[test]
fn segregated_by_hand() {
    // T3: 8-byte blocks come back to the class-8 list only; the 16-byte block finds its class
    // empty and goes on top at 32: heap 48, utilisation 32/48.
    check(Policy::Segregated, T3, 48, 32);
    // T2: a5 reuses [24,32) (class 8), a6 reuses [0,16) (class 16): heap 48.
    check(Policy::Segregated, T2, 48, 48);
}

#[test]
fn buddy_by_hand() {
    // T3: the arena doubles 8 → 16 → 32 for a0..a3; freeing 24 joins it with its buddy 16
    // into [16,32), where a6 goes: heap 32.
    check(Policy::Buddy, T3, 32, 32);
    // T2: a0 [0,16) (arena 16); a1 doubles to 32 and splits [16,32); a3 doubles to 64 and
    // splits [32,64) into [32,40), [40,48), [48,64); a4 takes [40,48). Freed: [0,16) and
    // [24,32); a5 takes [24,32) and a6 [0,16): arena 64, utilisation 48/64.
    check(Policy::Buddy, T2, 64, 48);
}

#[test]
fn header_and_alignment_by_hand() {
    // Header 8, alignment 8: a0 (1 byte) takes 16, a1 (9) takes 24 at 16 (heap 40); a2 (1)
    // reuses [0,16). Peak live payload 1 + 9 = 10: utilisation 10/40.
    let r = run(Policy::FirstFit, 8, "a 0 1; a 1 9; f 0; a 2 1");
    assert_eq!((r.peak_heap, r.peak_live), (40, 10));
    assert!((r.utilisation() - 0.25).abs() < 1e-12);
    // Alignment 16: a 1-byte block takes 16, a 17-byte one 32.
    let mut o = Options::new(Policy::FirstFit);
    o.align = 16;
    let r = simulate(o, events("a 0 1; a 1 17"));
    assert_eq!(r.peak_heap, 48);
}

#[test]
fn realloc_moves_and_stays_by_hand() {
    // a0 [0,8), a1 [8,16); r0 to 16 bytes does not fit its block: placed on top at [16,32)
    // and [0,8) freed; a2 reuses [0,8); r0 to 4 bytes stays. Live 8, 16, 24, 32, 20.
    let r = run(
        Policy::FirstFit,
        0,
        "a 0 8; a 1 8; r 0 16; a 2 8; r 0 4; f 9",
    );
    assert_eq!((r.peak_heap, r.peak_live, r.final_live), (32, 32, 20));
    assert_eq!(
        (
            r.counts.allocs,
            r.counts.reallocs,
            r.counts.frees,
            r.counts.unknown_frees
        ),
        (3, 2, 0, 1)
    );
    assert_eq!(r.final_blocks, 3);
}

#[test]
fn unknown_frees_and_impossible_sizes_are_counted() {
    let mut o = Options::new(Policy::BestFit);
    o.max_block_size = 1 << 20;
    let r = simulate(
        o,
        events("f 7; a 0 84000000000000000; a 1 8; f 0; f 1; a 2 18446744073709551615"),
    );
    assert_eq!(
        (
            r.counts.unknown_frees,
            r.refused,
            r.counts.frees,
            r.counts.allocs
        ),
        (2, 2, 1, 1)
    );
    assert_eq!(r.largest_refused, Some((5, u64::MAX)));
    assert_eq!(r.peak_heap, 8);
    // Without the limit, a size past 2^64 after rounding is still refused, not wrapped.
    let mut o = Options::new(Policy::Buddy);
    o.max_block_size = u64::MAX;
    let r = simulate(
        o,
        events("a 0 18446744073709551615; a 1 9223372036854775809"),
    );
    assert_eq!((r.refused, r.counts.allocs, r.peak_heap), (2, 0, 0));
}

#[test]
fn samples_follow_the_heap() {
    let r = run(Policy::NextFit, 0, T3);
    assert_eq!(r.samples.len(), 11);
    assert_eq!(
        r.samples[3],
        Sample {
            event: 4,
            heap: 32,
            live: 32
        }
    );
    assert_eq!(r.samples.last().map(|s| s.heap), Some(40));
    // Many events: the curve stays bounded and evenly spaced.
    let mut text = String::new();
    for i in 0..5000 {
        text.push_str(&format!("a {i} 8; "));
    }
    let r = run(Policy::FirstFit, 0, &text);
    assert!(r.samples.len() <= 512, "{}", r.samples.len());
    assert_eq!(r.samples.last().map(|s| s.event), Some(5000));
    assert!(r
        .samples
        .windows(2)
        .all(|w| w[1].heap == w[1].event * 8 && w[0].event < w[1].event));
}

/// 1000 blocks of 64 bytes (site 1), every other one freed, then a block of 100000 bytes
/// (site 2) placed and freed: under first fit the big block fits no 64-byte hole, so the heap
/// grows, and each hole left between two live 64-byte blocks is stranded, half to each.
#[test]
fn the_waste_of_a_known_fragmentation_is_attributed_to_its_class_and_site() {
    let mut text = String::new();
    for i in 0..1000 {
        text.push_str(&format!("a {i} 64;"));
    }
    for i in (1..1000).step_by(2) {
        text.push_str(&format!("f {i};"));
    }
    text.push_str("a 5000 100000; f 5000");
    let mut evs = events(&text);
    for e in evs.iter_mut() {
        let big = matches!(e.op, HeapOp::Alloc { size: 100000, .. });
        e.site = Some(if big { 2 } else { 1 });
    }
    let r = simulate(Options::new(Policy::FirstFit), evs);
    // Worked out from the construction: blocks at 64·i; the holes at odd i, of which the last
    // (i = 999) is at the top and the big block starts there.
    let holes_between_live = (1..999).step_by(2).count() as u64 * 64;
    let live_small = 500 * 64;
    let top = 999 * 64;
    assert_eq!(r.peak_heap, top + 100_000);
    let peak = r.frag.at_peak.as_ref().expect("a peak");
    assert_eq!(peak.event, 1000 + 500 + 1);
    assert_eq!(
        (peak.total, peak.live),
        (top + 100_000, live_small + 100_000)
    );
    assert_eq!(peak.unattributed, 0);
    let c64 = peak.classes.iter().find(|c| c.hi == 64).expect("class 64");
    assert_eq!((c64.lo, c64.figures.blocks), (57, 500));
    assert_eq!(c64.figures.live, live_small);
    assert_eq!(c64.figures.waste(), holes_between_live);
    assert_eq!(peak.waste(), holes_between_live);
    assert_eq!(peak.sites[0].site, Some(1));
    assert_eq!(peak.sites[0].figures.stranded, holes_between_live);
    assert_eq!(peak.sites[1].figures.waste(), 0);
    // At the end the big block is gone: the heap above the last 64-byte block is free, held
    // by no block.
    let end = r.frag.at_end.as_ref().expect("the end");
    assert_eq!(end.unattributed, top + 100_000 - (998 * 64 + 64));
    assert_eq!(end.classes.len(), 1);
    assert_eq!(end.classes[0].figures.stranded, holes_between_live);
}

/// Every byte of the heap is live, overhead, stranded, or above the highest live block, at
/// both moments, under every policy, with headers and reallocations.
#[test]
fn the_attributed_waste_adds_up_to_the_heap() {
    for policy in Policy::ALL {
        for header in [0, 8] {
            let r = run(
                policy,
                header,
                &format!("{T2}; r 1 40; a 7 3; f 3; r 7 200; a 8 24; f 5; {T3}"),
            );
            for s in [&r.frag.at_peak, &r.frag.at_end] {
                let s = s.as_ref().expect("a snapshot");
                let all = s.attributed();
                assert_eq!(
                    all.live + all.waste() + s.unattributed,
                    s.total,
                    "{policy:?} header {header}: {s:?}"
                );
                assert_eq!(all.live, s.live);
                let sites = s.sites.iter().fold(0, |n, x| n + x.figures.waste());
                assert_eq!(sites, all.waste());
            }
        }
    }
}
