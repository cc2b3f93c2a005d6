//! The heap figures of hand-worked sequences and of a naive model.

use crate::analysis::event::{HeapEvent, HeapOp};

use super::*;

fn space(shared: bool) -> SpaceInfo {
    SpaceInfo {
        name: "heap".into(),
        sized: true,
        shared,
        time_unit: Some("ms".into()),
        temporary_reset: None,
        stacks: false,
    }
}

fn ev(record: u64, time: u64, site: Option<u64>, op: HeapOp) -> HeapEvent {
    HeapEvent {
        record,
        space: 0,
        key: 0,
        thread: None,
        time: Some(time),
        site,
        stack: None,
        op,
    }
}

fn alloc(id: u64, size: u64) -> HeapOp {
    HeapOp::Alloc {
        id,
        size,
        align: None,
    }
}

/// The sequence of the first tests; its figures are worked out by hand in the comments.
fn sequence() -> Vec<HeapEvent> {
    vec![
        ev(0, 10, Some(7), alloc(1, 100)),        // live 100
        ev(1, 20, Some(8), alloc(2, 50)),         // 150
        ev(2, 30, None, HeapOp::Free { id: 1 }),  // 50; lifetime 2 records, 20 ms
        ev(3, 35, Some(7), alloc(3, 200)),        // 250: the peak (blocks 2 and 3)
        ev(4, 40, None, HeapOp::Free { id: 3 }),  // 50; temporary; lifetime 1, 5 ms
        ev(5, 50, Some(8), alloc(4, 10)),         // 60
        ev(6, 60, None, HeapOp::Free { id: 99 }), // unknown
        ev(
            7,
            70,
            None,
            HeapOp::Move {
                old: 2,
                new: 5,
                size: Some(80),
            },
        ), // free 2 (lifetime 6, 50 ms) → 10, then 80 at site 8 → 90
    ]
}

fn run(events: &[HeapEvent], shared: bool, end: u64) -> SpaceSummary {
    let mut h = HeapStats::new(vec![space(shared)]);
    h.open_window(Position {
        record: 0,
        time: None,
        source: None,
    });
    for e in events {
        h.event(e);
    }
    let mut v = h.finish(
        Position {
            record: end,
            time: None,
            source: None,
        },
        |_, s| Some(format!("site{s}")),
    );
    v.remove(0)
}

#[test]
fn figures_of_a_hand_worked_sequence() {
    let s = run(&sequence(), false, 8);
    assert_eq!((s.allocations, s.bytes_allocated), (5, 440));
    assert_eq!((s.frees, s.bytes_freed), (3, 350));
    assert_eq!((s.peak_bytes, s.peak_blocks), (250, 2));
    assert_eq!(
        s.peak_at,
        Position {
            record: 3,
            time: Some(35),
            source: None,
        }
    );
    assert_eq!((s.max_blocks, s.max_blocks_at.record), (2, 1));
    assert_eq!((s.live_bytes, s.live_blocks), (90, 2));
    assert_eq!((s.temporary, s.unknown_frees, s.redefined), (1, 1, 0));
    let l = &s.lifetime_records;
    assert_eq!((l.count, l.min, l.median, l.p99, l.max), (3, 1, 2, 6, 6));
    assert_eq!(l.mean, 3.0);
    let t = s.lifetime_time.as_ref().unwrap();
    assert_eq!((t.count, t.min, t.median, t.p99, t.max), (3, 5, 20, 50, 50));
    assert_eq!(t.mean, 25.0);
    let classes: Vec<_> = s
        .sizes
        .iter()
        .map(|c| (c.lo, c.hi, c.count, c.bytes))
        .collect();
    assert_eq!(
        classes,
        vec![
            (8, 15, 1, 10),
            (32, 63, 1, 50),
            (64, 127, 2, 180),
            (128, 255, 1, 200)
        ]
    );
    let h: Vec<_> = l.histogram.iter().map(|c| (c.lo, c.count)).collect();
    assert_eq!(h, vec![(1, 1), (2, 1), (4, 1)]);
    assert_eq!(s.sites.len(), 2);
    let (a, b) = (&s.sites[0], &s.sites[1]);
    assert_eq!(a.site, Some(7));
    assert_eq!(a.name.as_deref(), Some("site7"));
    assert_eq!((a.allocations, a.bytes_allocated), (2, 300));
    assert_eq!(
        (a.peak_bytes, a.peak_blocks, a.max_live_bytes),
        (200, 1, 200)
    );
    assert_eq!((a.leaked_bytes, a.leaked_blocks, a.temporary), (0, 0, 1));
    assert_eq!(b.site, Some(8));
    assert_eq!((b.allocations, b.bytes_allocated), (3, 140));
    assert_eq!((b.peak_bytes, b.peak_blocks, b.max_live_bytes), (50, 1, 90));
    assert_eq!((b.leaked_bytes, b.leaked_blocks, b.temporary), (90, 2, 0));
}

#[test]
fn a_window_counts_flows_inside_it_and_the_state_from_the_start() {
    let events = sequence();
    let mut h = HeapStats::new(vec![space(false)]);
    let w = Window {
        from: Some(Bound::Record(2)),
        to: Some(Bound::Record(5)),
    };
    for e in &events {
        match w.place(e.record, e.time) {
            Place::Before => {}
            Place::Inside => h.open_window(Position {
                record: e.record,
                time: e.time,
                source: None,
            }),
            Place::After => break,
        }
        h.event(e);
    }
    let s = h
        .finish(
            Position {
                record: 5,
                time: Some(50),
                source: None,
            },
            |_, _| None,
        )
        .remove(0);
    assert_eq!(s.start.record, 2);
    assert_eq!((s.allocations, s.bytes_allocated, s.frees), (1, 200, 2));
    assert_eq!((s.peak_bytes, s.peak_at.record), (250, 3));
    assert_eq!((s.live_bytes, s.live_blocks, s.temporary), (50, 1, 1));
    assert_eq!(s.lifetime_records.max, 2);
    // A slice where nothing happens: the peak is the state when it opens.
    let mut h = HeapStats::new(vec![space(false)]);
    h.event(&events[0]);
    h.open_window(Position {
        record: 1,
        time: None,
        source: None,
    });
    let s = h.finish(Position::default(), |_, _| None).remove(0);
    assert_eq!((s.peak_bytes, s.peak_at.record, s.allocations), (100, 1, 0));
    assert_eq!(s.sites[0].peak_bytes, 100);
}

#[test]
fn a_shared_namespace_frees_the_newest_block_of_an_id() {
    let events = vec![
        ev(0, 0, None, alloc(1, 10)),
        ev(1, 0, None, alloc(1, 20)),
        ev(2, 0, None, HeapOp::Free { id: 1 }), // the 20-byte block; temporary
        ev(3, 0, None, HeapOp::Free { id: 1 }), // the 10-byte block
        ev(4, 0, None, HeapOp::Free { id: 1 }), // none left
    ];
    let s = run(&events, true, 5);
    assert_eq!((s.peak_bytes, s.peak_blocks, s.live_blocks), (30, 2, 0));
    assert_eq!((s.frees, s.unknown_frees, s.temporary), (2, 1, 1));
    assert_eq!(s.bytes_freed, 30);
    assert_eq!(s.lifetime_records.max, 3);
    assert_eq!(s.lifetime_records.min, 1);
    // Not shared: the second allocation replaces the first.
    let s = run(&events[..2], false, 2);
    assert_eq!((s.redefined, s.live_bytes, s.live_blocks), (1, 20, 1));
}

#[test]
fn a_move_without_size_keeps_the_block() {
    let events = vec![
        ev(0, 0, Some(1), alloc(1, 16)),
        ev(
            1,
            5,
            None,
            HeapOp::Move {
                old: 1,
                new: 2,
                size: None,
            },
        ),
        ev(3, 9, None, HeapOp::Free { id: 2 }),
    ];
    let s = run(&events, false, 4);
    assert_eq!(
        (s.allocations, s.moves, s.frees, s.unknown_frees),
        (1, 1, 1, 0)
    );
    assert_eq!((s.lifetime_records.max, s.live_bytes), (3, 0));
    assert_eq!(s.lifetime_time.unwrap().max, 9);
}

#[test]
fn the_curve_is_bounded_and_keeps_the_peak() {
    let mut h = HeapStats::new(vec![space(false)]);
    h.open_window(Position::default());
    let mut r = 0;
    for i in 0..100_000u64 {
        h.event(&ev(r, r, None, alloc(i, 8)));
        r += 1;
        let spike = i == 76_543;
        if spike {
            h.event(&ev(r, r, None, alloc(u64::MAX, 1 << 20)));
            r += 1;
            h.event(&ev(r, r, None, HeapOp::Free { id: u64::MAX }));
            r += 1;
        }
        h.event(&ev(r, r, None, HeapOp::Free { id: i }));
        r += 1;
    }
    assert_eq!(h.live_blocks(), 0);
    let s = h.finish(Position::default(), |_, _| None).remove(0);
    assert!(s.curve.buckets.len() <= CURVE_POINTS);
    assert!(s.curve.buckets.len() > CURVE_POINTS / 4);
    let top = s.curve.buckets.iter().map(|b| b.bytes_max).max();
    assert_eq!(top, Some(s.peak_bytes));
    assert_eq!(s.peak_bytes, 8 + (1 << 20));
    assert_eq!(s.temporary, 100_000);
}

#[test]
fn bounds_and_windows() {
    assert_eq!("12".parse(), Ok(Bound::Record(12)));
    assert_eq!("r1_000".parse(), Ok(Bound::Record(1000)));
    assert_eq!("t5".parse(), Ok(Bound::Time(5)));
    assert_eq!("@5".parse(), Ok(Bound::Time(5)));
    assert!("x".parse::<Bound>().is_err());
    assert!("-1".parse::<Bound>().is_err());
    // A number too large says so (it said it was neither a record index nor a time).
    let e = "t99999999999999999999999".parse::<Bound>().unwrap_err();
    assert!(e.contains("is larger than 18446744073709551615"), "{e}");
    let e = "x".parse::<Bound>().unwrap_err();
    assert!(e.contains("neither"), "{e}");
    let w = Window {
        from: Some(Bound::Time(10)),
        to: Some(Bound::Record(100)),
    };
    assert_eq!(w.place(0, None), Place::Before);
    assert_eq!(w.place(1, Some(9)), Place::Before);
    assert_eq!(w.place(2, Some(10)), Place::Inside);
    assert_eq!(w.place(99, Some(10)), Place::Inside);
    assert_eq!(w.place(100, Some(10)), Place::After);
    assert_eq!(Window::all().place(5, None), Place::Inside);
}

#[test]
fn records_and_fields_of_a_sample() {
    let opened = crate::open(concat!(env!("CARGO_MANIFEST_DIR"), "/traces/hatf-le32.mtf"))
        .expect("sample opens");
    let reader = opened.reader();
    let mut c = RecordCounter::new(opened.schema());
    let mut records = reader.records();
    // An independent count: sizes of the allocations by `RecordView::get`.
    let (mut n, mut sum, mut min, mut max) = (0u64, 0i128, i128::MAX, i128::MIN);
    while let Some(e) = records.next() {
        if let crate::decode::Event::Record(v) = e {
            c.record(&v);
            if v.name() == "alloc" {
                let s = v.get("size").and_then(|x| x.as_u64()).unwrap() as i128;
                n += 1;
                sum += s;
                min = min.min(s);
                max = max.max(s);
            }
        }
    }
    let types = c.finish(opened.schema());
    let a = types.iter().find(|t| t.name == "alloc").unwrap();
    assert_eq!(a.count, n);
    assert_eq!(a.section, "heap");
    let f = a.fields.iter().find(|f| f.name == "size").unwrap();
    assert_eq!((f.count, f.sum, f.min, f.max), (n, sum, min, max));
    assert_eq!(c.total(), types.iter().map(|t| t.count).sum::<u64>());
}

/// The packed live-block tables (one map per namespace, blocks shadowed in shared ones,
/// the site-less blocks outside the sites' map) against a naive model: every holder of an
/// id in a list, newest last. After every event the live blocks agree; at the end every
/// count, byte total, lifetime and per-site figure does.
mod model {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    #[derive(Debug, Clone, Copy)]
    struct Held {
        size: u64,
        site: Option<u64>,
        born: u64,
    }

    #[derive(Debug, Default, Clone)]
    struct Figures {
        allocations: u64,
        frees: u64,
        moves: u64,
        bytes_allocated: u64,
        bytes_freed: u64,
        unknown_frees: u64,
        redefined: u64,
        temporary: u64,
        lifetimes: Vec<u64>,
        last_alloc: Option<(u64, u64)>,
    }

    #[derive(Default)]
    struct Model {
        live: BTreeMap<(u32, u64, u64), Vec<Held>>,
        figures: [Figures; 2],
    }

    impl Model {
        fn shared(sp: u32) -> bool {
            sp == 1
        }

        fn put(&mut self, sp: u32, key: u64, id: u64, h: Held) -> bool {
            let v = self.live.entry((sp, key, id)).or_default();
            let redefined = !v.is_empty() && !Model::shared(sp);
            if redefined {
                v.clear();
            }
            v.push(h);
            redefined
        }

        fn take(&mut self, sp: u32, key: u64, id: u64) -> Option<Held> {
            let v = self.live.get_mut(&(sp, key, id))?;
            let h = v.pop();
            if v.is_empty() {
                self.live.remove(&(sp, key, id));
            }
            h
        }

        fn alloc(&mut self, sp: u32, key: u64, id: u64, size: u64, r: u64, site: Option<u64>) {
            let held = Held {
                size,
                site,
                born: r,
            };
            let redefined = self.put(sp, key, id, held);
            let f = &mut self.figures[sp as usize];
            f.redefined += u64::from(redefined);
            f.allocations += 1;
            f.bytes_allocated += size;
            f.last_alloc = Some((key, id));
        }

        fn free(&mut self, sp: u32, key: u64, id: u64, r: u64) -> Option<u64> {
            let taken = self.take(sp, key, id);
            let f = &mut self.figures[sp as usize];
            let Some(h) = taken else {
                f.unknown_frees += 1;
                return None;
            };
            let temporary = f.last_alloc == Some((key, id));
            f.last_alloc = None;
            f.frees += 1;
            f.bytes_freed += h.size;
            f.lifetimes.push(r - h.born);
            f.temporary += u64::from(temporary);
            h.site
        }

        fn event(&mut self, e: &HeapEvent) {
            let (sp, key, r) = (e.space, e.key, e.record);
            match e.op {
                HeapOp::Alloc { id, size, .. } => self.alloc(sp, key, id, size, r, e.site),
                HeapOp::Free { id } => {
                    self.free(sp, key, id, r);
                }
                HeapOp::Move {
                    old,
                    new,
                    size: Some(size),
                } => {
                    let site = self.free(sp, key, old, r);
                    self.alloc(sp, key, new, size, r, e.site.or(site));
                }
                HeapOp::Move {
                    old,
                    new,
                    size: None,
                } => {
                    let Some(h) = self.take(sp, key, old) else {
                        self.figures[sp as usize].unknown_frees += 1;
                        return;
                    };
                    let f = &mut self.figures[sp as usize];
                    f.moves += 1;
                    if f.last_alloc == Some((key, old)) {
                        f.last_alloc = Some((key, new));
                    } else if f.last_alloc == Some((key, new)) && !Model::shared(sp) {
                        f.last_alloc = None;
                    }
                    let redefined = self.put(sp, key, new, h);
                    self.figures[sp as usize].redefined += u64::from(redefined);
                }
            }
        }
    }

    fn op() -> impl Strategy<Value = (u8, u32, u64, u64, u64, u64, Option<u64>)> {
        (
            0u8..5,
            0u32..2,
            0u64..2,
            0u64..6,
            0u64..6,
            0u64..300,
            proptest::option::of(0u64..3),
        )
    }

    proptest! {
        #[test]
        fn the_live_blocks_agree_with_a_naive_model(
            ops in proptest::collection::vec(op(), 0..300),
        ) {
            let info = |shared| SpaceInfo {
                name: "s".into(),
                sized: true,
                shared,
                time_unit: None,
                temporary_reset: None,
                stacks: false,
            };
            let mut h = HeapStats::new(vec![info(false), info(true)]);
            h.open_window(Position { record: 0, time: None, source: None });
            let mut m = Model::default();
            for (r, &(kind, space, key, id, id2, size, site)) in ops.iter().enumerate() {
                let op = match kind {
                    0 | 1 => HeapOp::Alloc { id, size, align: None },
                    2 => HeapOp::Free { id },
                    3 => HeapOp::Move { old: id, new: id2, size: Some(size) },
                    _ => HeapOp::Move { old: id, new: id2, size: None },
                };
                let e = HeapEvent {
                    record: r as u64,
                    space,
                    key,
                    thread: None,
                    time: None,
                    site,
                    stack: None,
                    op,
                };
                h.event(&e);
                m.event(&e);
                let held: usize = m.live.values().map(Vec::len).sum();
                prop_assert_eq!(h.live_blocks(), held);
            }
            let end = Position { record: ops.len() as u64, time: None, source: None };
            let out = h.finish(end, |_, _| None);
            for (sp, s) in out.iter().enumerate() {
                let f = &m.figures[sp];
                let held: Vec<Held> = m
                    .live
                    .iter()
                    .filter(|((x, _, _), _)| *x as usize == sp)
                    .flat_map(|(_, v)| v.iter().copied())
                    .collect();
                prop_assert_eq!(s.live_blocks, held.len() as u64);
                prop_assert_eq!(s.live_bytes, held.iter().map(|h| u128::from(h.size)).sum::<u128>());
                prop_assert_eq!(
                    (s.allocations, s.frees, s.moves, s.bytes_allocated, s.bytes_freed),
                    (f.allocations, f.frees, f.moves, f.bytes_allocated.into(), f.bytes_freed.into())
                );
                prop_assert_eq!(
                    (s.unknown_frees, s.redefined, s.temporary),
                    (f.unknown_frees, f.redefined, f.temporary)
                );
                prop_assert_eq!(s.lifetime_records.count, f.lifetimes.len() as u64);
                prop_assert_eq!(
                    s.lifetime_records.max,
                    f.lifetimes.iter().copied().max().unwrap_or(0)
                );
                // Per site (None included): what is left alive.
                let mut leaked: BTreeMap<Option<u64>, (u128, u64)> = BTreeMap::new();
                for h in &held {
                    let e = leaked.entry(h.site).or_default();
                    e.0 += u128::from(h.size);
                    e.1 += 1;
                }
                for site in &s.sites {
                    let want = leaked.remove(&site.site).unwrap_or((0, 0));
                    prop_assert_eq!((site.leaked_bytes, site.leaked_blocks), want);
                }
                prop_assert!(leaked.is_empty(), "sites missing: {:?}", leaked);
            }
        }
    }
}

/// A source that hides the places of its events: `HeapStats` then keeps its own map of live
/// blocks (the path of `HeapStats::event`).
struct Unplaced<'s>(Declared<'s>);

impl HeapEventSource for Unplaced<'_> {
    fn spaces(&self) -> Vec<SpaceInfo> {
        self.0.spaces()
    }
    fn record(
        &mut self,
        view: &crate::decode::RecordView<'_>,
        out: &mut Vec<HeapEvent>,
    ) -> Option<u64> {
        self.0.record(view, out)
    }
    fn site_name(&mut self, space: u32, site: u64) -> Option<String> {
        self.0.site_name(space, site)
    }
    fn unknown_frees(&self, space: u32) -> u64 {
        self.0.unknown_frees(space)
    }
    fn names_later(&self) -> bool {
        self.0.names_later()
    }
    fn naming_types(&self) -> Option<Vec<bool>> {
        self.0.naming_types()
    }
    fn stack_profile(
        &self,
        space: u32,
        leaves: &[LeafSummary],
    ) -> Option<crate::stacks::StackProfile> {
        self.0.stack_profile(space, leaves)
    }
}

/// The one live table (the interpreter's, the blocks' figures found by their places) gives
/// every figure that a table of the statistics' own gives, on every shipped trace (shared ids,
/// moves, reallocations, allocations of live ids), for the whole trace and for slices.
#[test]
fn blocks_found_by_place_give_the_figures_of_blocks_looked_up() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/traces");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("traces/") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("mtf") {
            continue;
        }
        let opened = crate::open(&path).expect("sample opens");
        let reader = opened.reader();
        for window in [
            Window::all(),
            Window {
                from: Some(Bound::Record(3)),
                to: Some(Bound::Record(200)),
            },
        ] {
            let placed = compute(&reader, &mut Declared::new(opened.schema()), window);
            let looked = compute(
                &reader,
                &mut Unplaced(Declared::new(opened.schema())),
                window,
            );
            assert_eq!(
                format!("{placed:?}"),
                format!("{looked:?}"),
                "{}",
                path.display()
            );
            seen += usize::from(placed.spaces.iter().any(|s| s.allocations > 0));
        }
    }
    assert!(seen >= 10, "{seen} traces with allocations");
}

/// A source that gathers each record's events with their places before the pass takes them
/// (`HeapEventSource::record_placed`), as every pass did before events were handed over as
/// they come (`Pass::record_direct`).
struct Gathered<'s>(Declared<'s>);

impl HeapEventSource for Gathered<'_> {
    fn spaces(&self) -> Vec<SpaceInfo> {
        self.0.spaces()
    }
    fn record(
        &mut self,
        view: &crate::decode::RecordView<'_>,
        out: &mut Vec<HeapEvent>,
    ) -> Option<u64> {
        self.0.record(view, out)
    }
    fn record_placed(
        &mut self,
        view: &crate::decode::RecordView<'_>,
        out: &mut Vec<HeapEvent>,
        places: &mut Vec<Option<crate::analysis::event::Places>>,
    ) -> Option<u64> {
        self.0.record_placed(view, out, places)
    }
    fn site_name(&mut self, space: u32, site: u64) -> Option<String> {
        self.0.site_name(space, site)
    }
    fn unknown_frees(&self, space: u32) -> u64 {
        self.0.unknown_frees(space)
    }
    fn unknown_frees_total(&self) -> Option<u64> {
        self.0.unknown_frees_total()
    }
    fn names_later(&self) -> bool {
        self.0.names_later()
    }
    fn naming_types(&self) -> Option<Vec<bool>> {
        self.0.naming_types()
    }
    fn stack_profile(
        &self,
        space: u32,
        leaves: &[LeafSummary],
    ) -> Option<crate::stacks::StackProfile> {
        self.0.stack_profile(space, leaves)
    }
}

/// A source that hands each event over as it comes through the pass's closure
/// (`HeapEventSource::record_each`), not straight into its statistics (`record_into`): the
/// path of a source of the library's users that hands events over as they come.
struct Each<'s>(Declared<'s>);

impl HeapEventSource for Each<'_> {
    fn spaces(&self) -> Vec<SpaceInfo> {
        self.0.spaces()
    }
    fn record(
        &mut self,
        view: &crate::decode::RecordView<'_>,
        out: &mut Vec<HeapEvent>,
    ) -> Option<u64> {
        self.0.record(view, out)
    }
    fn direct(&self) -> bool {
        self.0.direct()
    }
    fn record_each(
        &mut self,
        view: &crate::decode::RecordView<'_>,
        each: &mut dyn FnMut(&HeapEvent, Option<crate::analysis::event::Places>),
    ) -> Option<u64> {
        self.0.record_each(view, each)
    }
    fn site_name(&mut self, space: u32, site: u64) -> Option<String> {
        self.0.site_name(space, site)
    }
    fn unknown_frees(&self, space: u32) -> u64 {
        self.0.unknown_frees(space)
    }
    fn unknown_frees_total(&self) -> Option<u64> {
        self.0.unknown_frees_total()
    }
    fn names_later(&self) -> bool {
        self.0.names_later()
    }
    fn naming_types(&self) -> Option<Vec<bool>> {
        self.0.naming_types()
    }
    fn stack_profile(
        &self,
        space: u32,
        leaves: &[LeafSummary],
    ) -> Option<crate::stacks::StackProfile> {
        self.0.stack_profile(space, leaves)
    }
}

/// Events applied as the interpreter makes them give the figures of events gathered per
/// record, on every shipped trace, whole and sliced (a slice that opens at its first record,
/// one that opens later and ends early, one by time, which takes the gathered path).
#[test]
fn events_handed_over_as_they_come_give_the_figures_of_events_gathered() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/traces");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).expect("traces/") {
        let path = entry.expect("entry").path();
        if path.extension().and_then(|e| e.to_str()) != Some("mtf") {
            continue;
        }
        let opened = crate::open(&path).expect("sample opens");
        let reader = opened.reader();
        for window in [
            Window::all(),
            Window {
                from: None,
                to: Some(Bound::Record(40)),
            },
            Window {
                from: Some(Bound::Record(5)),
                to: Some(Bound::Record(120)),
            },
            Window {
                from: Some(Bound::Time(1)),
                to: None,
            },
        ] {
            let mut direct = Declared::new(opened.schema());
            assert!(direct.direct());
            let handed = compute(&reader, &mut direct, window);
            let gathered = compute(
                &reader,
                &mut Gathered(Declared::new(opened.schema())),
                window,
            );
            assert_eq!(
                format!("{handed:?}"),
                format!("{gathered:?}"),
                "{} {window:?}",
                path.display()
            );
            // And through the pass's closure rather than straight into its statistics.
            let each = compute(&reader, &mut Each(Declared::new(opened.schema())), window);
            assert_eq!(
                format!("{each:?}"),
                format!("{gathered:?}"),
                "{} {window:?}, by the closure",
                path.display()
            );
            seen += usize::from(handed.spaces.iter().any(|s| s.allocations > 0));
        }
    }
    assert!(seen >= 10, "{seen} traces with allocations");
}

/// A saved block keeps whether its birth time was declared (the flags word, bit 0), whether
/// or not it was, through a state and back; a state whose flags have another bit is refused.
#[test]
fn a_block_s_flags_round_trip_and_other_bits_are_refused() {
    use crate::index::analysis::{Dec, Enc};
    let mut h = HeapStats::new(vec![space(false)]);
    h.event(&ev(0, 7, None, alloc(1, 16)));
    let mut untimed = ev(1, 0, None, alloc(2, 32));
    untimed.time = None;
    h.event(&untimed);
    let mut e = Enc::default();
    h.save_live(&mut e);
    let mut back = HeapStats::new(vec![space(false)]);
    back.restore_live(&mut Dec::new(&e.out)).expect("restores");
    let mut again = Enc::default();
    back.save_live(&mut again);
    assert_eq!(again.out, e.out);
    // The last block's flags are the blob's last byte (1: its time declared, or 0).
    let last = *e.out.last().expect("a blob");
    assert!(last <= 1);
    let mut bad = e.out.clone();
    if let Some(b) = bad.last_mut() {
        *b = 2;
    }
    let err = HeapStats::new(vec![space(false)]).restore_live(&mut Dec::new(&bad));
    assert!(err.is_err_and(|e| e.what.contains("flags") && e.at == bad.len()));
}
