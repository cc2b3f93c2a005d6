use super::pages::{attribute, LiveSpan};
use super::*;

#[test]
fn size_classes_are_four_per_power_of_two() {
    let uppers: Vec<u64> = (0..14).map(|c| class_bounds(c).1).collect();
    assert_eq!(
        uppers,
        [8, 16, 20, 24, 28, 32, 40, 48, 56, 64, 80, 96, 112, 128]
    );
    // Every size lies within the bounds of its class, and classes tile the sizes.
    for size in 0..5000u64 {
        let (lo, hi) = class_bounds(class_of(size));
        assert!(lo <= size && size <= hi, "{size} in {lo}..={hi}");
    }
    for c in 1..(CLASSES as u16) {
        assert_eq!(class_bounds(c).0, class_bounds(c - 1).1 + 1, "class {c}");
    }
    assert_eq!(class_of(u64::MAX) as usize, CLASSES - 1);
    assert_eq!(class_bounds(CLASSES as u16 - 1).1, u64::MAX);
    assert_eq!(class_of(57), class_of(64));
    assert_ne!(class_of(56), class_of(57));
}

/// Blocks of 8 at 0, 16, 40 (blocks of 16, 24, 8 bytes for 8-byte payloads): the gaps are
/// inside the blocks (overhead), none between them; freeing the middle one leaves a 24-byte gap
/// split 12/12 between its neighbours.
#[test]
fn gaps_are_split_between_the_neighbours() {
    let mut t = Tracker::new();
    let a = t.site(0, Some(1));
    let b = t.site(0, Some(2));
    t.insert(0, 16, 8, a);
    t.insert(16, 24, 8, b);
    t.insert(40, 8, 8, a);
    t.peak(3, 48);
    assert_eq!(t.remove(16), Some(b));
    let r = t.finish(4, 48);
    let peak = r.at_peak.expect("a peak");
    assert_eq!((peak.total, peak.live, peak.unattributed), (48, 24, 0));
    let all = peak.attributed();
    assert_eq!((all.blocks, all.overhead, all.stranded), (3, 24, 0));
    let end = r.at_end.expect("an end");
    assert_eq!((end.live, end.unattributed), (16, 0));
    assert_eq!(end.classes.len(), 1);
    let c = end.classes[0].figures;
    assert_eq!((c.blocks, c.live, c.overhead, c.stranded), (2, 16, 8, 24));
    assert_eq!(end.sites.len(), 1);
    assert_eq!(end.sites[0].site, Some(1));
    // Everything of the heap is live, overhead, stranded or above the highest block.
    assert_eq!(c.live + c.waste() + end.unattributed, end.total);
    // The gap below the lowest block goes to it; the space above the highest goes to none.
    assert_eq!(t.remove(0), Some(a));
    let end = t.finish(5, 48).at_end.expect("an end");
    assert_eq!(end.attributed().stranded, 40);
    assert_eq!(t.remove(40), Some(a));
    let end = t.finish(6, 48).at_end.expect("an end");
    assert_eq!((end.unattributed, end.classes.len()), (48, 0));
}

#[test]
fn pages_held_by_few_blocks_are_charged_to_them() {
    let page = 4096;
    // Page 0: one 16-byte block; page 1: two 100-byte blocks; pages 2–4: a block of 2 pages
    // and 10 bytes from the start of page 2; page 5 not resident, one 8-byte block on it.
    let mut spans = vec![
        LiveSpan {
            start: 16,
            size: 16,
            site: 0,
        },
        LiveSpan {
            start: page + 200,
            size: 100,
            site: 1,
        },
        LiveSpan {
            start: page + 400,
            size: 100,
            site: 1,
        },
        LiveSpan {
            start: 2 * page,
            size: 2 * page + 10,
            site: 0,
        },
        LiveSpan {
            start: 5 * page,
            size: 8,
            site: 1,
        },
    ];
    let sites = [(0, Some(7)), (0, None)];
    let mut asked = Vec::new();
    let mut resident = |addr: u64, b: &mut [u8]| {
        asked.push((addr / page, b.len()));
        for (i, x) in b.iter_mut().enumerate() {
            *x = u8::from(addr / page + (i as u64) != 5);
        }
        true
    };
    let s = attribute(&mut spans, &sites, 9, 10 * page, page, &mut resident);
    // Resident pages with live bytes: 0, 1, 2, 3 (full), 4.
    assert_eq!(s.pages, 5);
    assert_eq!(s.unattributed, 5 * page);
    assert_eq!(s.live, 16 + 200 + 2 * page + 10 + 8);
    let class16 = s.classes.iter().find(|c| c.hi == 16).expect("class 16");
    assert_eq!(class16.figures.stranded, page - 16);
    let class100 = s.classes.iter().find(|c| c.hi == 112).expect("class 112");
    assert_eq!(class100.figures.stranded, page - 200);
    let big = s.classes.last().expect("the big block's class");
    assert_eq!(big.figures.stranded, page - 10);
    let class8 = s.classes.first().expect("class 8");
    assert_eq!((class8.figures.blocks, class8.figures.stranded), (1, 0));
    let all = s.attributed();
    assert_eq!(all.live + all.stranded, s.pages * page + 8);
    assert_eq!(s.sites[0].site, Some(7));
    assert_eq!(s.sites[0].figures.stranded, page - 16 + page - 10);
}
