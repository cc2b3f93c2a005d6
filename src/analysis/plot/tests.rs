use super::*;
use crate::analysis::event::{HeapEvent, HeapOp};
use crate::analysis::stats::{HeapStats, Position, SizeClass, SpaceInfo};

/// Statistics of one sized namespace `heap`, its window open.
fn sized_heap() -> HeapStats {
    let mut h = HeapStats::new(vec![SpaceInfo {
        name: "heap".into(),
        sized: true,
        shared: false,
        time_unit: None,
        temporary_reset: None,
        stacks: false,
    }]);
    h.open_window(Position::default());
    h
}

fn space() -> SpaceSummary {
    let mut h = sized_heap();
    for i in 0..1000u64 {
        let op = if i % 3 == 2 {
            HeapOp::Free { id: i - 2 }
        } else {
            HeapOp::Alloc {
                id: i,
                size: 1 + i % 700,
                align: None,
            }
        };
        h.event(&HeapEvent {
            record: i,
            space: 0,
            key: 0,
            thread: None,
            time: None,
            site: Some(i % 5),
            stack: None,
            op,
        });
    }
    h.finish(
        Position {
            record: 1000,
            time: None,
            source: None,
        },
        |_, s| Some(format!("f{s}")),
    )
    .remove(0)
}

#[test]
fn the_font_is_valid_and_pictures_are_drawn() {
    assert!(ab_glyph_font_ok());
    let s = space();
    assert_eq!(Chart::all_for(&s).len(), 6);
    let svg = svg("t", &s, 1000).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("peak "), "the peak is labelled");
    assert!(svg.contains("f0"), "sites are named");
    let png = png("t", &s, 800).unwrap();
    assert_eq!(&png[1..4], b"PNG");
}

/// Whether `step`, read in the displayed unit, is 1, 2, 2.5 or 5 × 10^k.
fn reads_nicely(t: &Ticks) -> bool {
    let x = t.step / t.unit;
    let mag = 10f64.powf(x.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .any(|m| ((x / mag) - m).abs() < 1e-9)
}

#[test]
fn ticks_are_steps_a_reader_expects_with_the_peak_inside() {
    // 5.7 MiB gave ticks at 1.9, 3.8, 5.7 MiB (steps of 2,000,000 bytes).
    let mut maxima: Vec<(f64, bool)> = vec![
        (5.7 * 1048576.0, true),
        (22508.0, true),
        (12288.0, true),
        (56.0, true),
        (1.0, true),
        (0.0, true),
        (10441709.0, true),
        (3.0, false),
        (1.0, false),
        (60097.0, false),
        (863700.0, false),
        (123456789.0, false),
    ];
    // And every power of two and its neighbours, bytes and counts.
    for k in 0..50 {
        let v = (1u64 << k) as f64;
        for m in [v - 1.0, v, v + 1.0, v * 1.5] {
            maxima.push((m, true));
            maxima.push((m, false));
        }
    }
    for (max, bytes) in maxima {
        for room in [false, true] {
            let t = value_ticks(max, bytes, 5, room);
            assert!(reads_nicely(&t), "{max} {bytes}: step {}", t.step);
            assert!(t.top >= max, "{max}: top {}", t.top);
            if room && max > 0.0 {
                assert!(t.top > max, "{max}: no room above the peak");
            }
            assert_eq!(t.keys.first(), Some(&0.0));
            assert!((t.keys.last().unwrap() - t.top).abs() < 1e-6 * t.top.max(1.0));
            assert!((2..=12).contains(&t.keys.len()), "{max}: {:?}", t.keys);
            if !bytes || t.unit == 1.0 {
                // Whole things: no tick between two whole numbers.
                assert!(t.keys.iter().all(|k| (k - k.round()).abs() < 1e-9));
            }
            // Distinct labels, each naming the unit.
            let labels: Vec<String> = t.keys.iter().map(|k| t.label(*k)).collect();
            let mut seen = labels.clone();
            seen.dedup();
            assert_eq!(seen.len(), labels.len(), "{labels:?}");
        }
    }
    let t = value_ticks(5.7 * 1048576.0, true, 6, true);
    let labels: Vec<String> = t.keys.iter().map(|k| t.label(*k)).collect();
    assert_eq!(
        labels,
        ["0", "1 MiB", "2 MiB", "3 MiB", "4 MiB", "5 MiB", "6 MiB", "7 MiB"]
    );
    let t = value_ticks(12288.0, true, 5, true);
    assert_eq!(t.label(t.keys[1]), "2.5 KiB");
    let t = value_ticks(3.0, false, 5, false);
    assert_eq!(t.keys, [0.0, 1.0, 2.0, 3.0]);
}

#[test]
fn record_ticks_stay_inside_their_range() {
    for (lo, hi) in [(4.0, 16.0), (8.0, 19.0), (0.0, 863700.0), (1500.0, 1501.0)] {
        let t = range_ticks(lo, hi, 10);
        assert!(reads_nicely(&t));
        assert!(!t.keys.is_empty());
        assert!(t.keys.iter().all(|k| *k >= lo && *k <= hi), "{:?}", t.keys);
        assert!(t.keys.iter().all(|k| (k - k.round()).abs() < 1e-9));
    }
    let t = range_ticks(0.0, 863700.0, 10);
    assert_eq!(t.label(t.keys[1]), "100k");
}

#[test]
fn the_record_axis_spans_the_heap_events() {
    // Records 0..10 and 21..100 carry no heap event (a header, string tables).
    let mut h = sized_heap();
    for (record, op) in [
        (
            10,
            HeapOp::Alloc {
                id: 1,
                size: 100,
                align: None,
            },
        ),
        (
            15,
            HeapOp::Alloc {
                id: 2,
                size: 50,
                align: None,
            },
        ),
        (20, HeapOp::Free { id: 1 }),
        (25, HeapOp::Free { id: 99 }), // not alive: no change
    ] {
        h.event(&HeapEvent {
            record,
            space: 0,
            key: 0,
            thread: None,
            time: None,
            site: None,
            stack: None,
            op,
        });
    }
    let s = h
        .finish(
            Position {
                record: 100,
                time: None,
                source: None,
            },
            |_, _| None,
        )
        .remove(0);
    assert_eq!(curve_span(&s), (10.0, 21.0));
    // Every chart is drawn with it (the bytes histogram too).
    assert!(Chart::all_for(&s).contains(&Chart::SizeBytes));
    let svg = svg("t", &s, 800).unwrap();
    assert!(svg.contains("peak 150 B at data record 15"));
}

#[test]
fn one_class_fills_its_histogram() {
    // A histogram of one class drew a sliver at the left edge: the bar is as wide as the
    // plot.
    let classes = [SizeClass {
        lo: 8,
        hi: 15,
        count: 2,
        bytes: 24,
    }];
    let mut out = String::new();
    register_font();
    {
        let root = SVGBackend::with_string(&mut out, (400, 300)).into_drawing_area();
        histogram(&root, "t", &classes, Hist::SizeCount, GREEN).unwrap();
    }
    let bar = out
        .lines()
        .find(|l| l.contains("<rect") && l.contains("#2CA02C"))
        .expect("a bar");
    let width: f64 = bar
        .split("width=\"")
        .nth(1)
        .and_then(|x| x.split('"').next())
        .and_then(|x| x.parse().ok())
        .unwrap();
    assert!(width > 200.0, "{bar}");
}

fn ab_glyph_font_ok() -> bool {
    plotters::style::register_font("test-font", FontStyle::Normal, FONT).is_ok()
}

fn stats_of(spaces: Vec<SpaceSummary>) -> Stats {
    Stats {
        window: crate::analysis::stats::Window::all(),
        start: Position::default(),
        end: Position::default(),
        records: 0,
        other_records: 0,
        data_records: 0,
        clock: crate::analysis::stats::Clock::None,
        problems: 0,
        types: Vec::new(),
        spaces,
        files: Vec::new(),
    }
}

#[test]
fn the_namespace_drawn_is_the_one_named_else_the_first_with_content() {
    let stats = stats_of(vec![space()]);
    assert_eq!(
        pick_space(&stats, None).map(|s| s.name.as_str()).ok(),
        Some("heap")
    );
    assert_eq!(
        pick_space(&stats, Some("heap"))
            .map(|s| s.name.as_str())
            .ok(),
        Some("heap")
    );
    let e = pick_space(&stats, Some("no\u{1b}pe"))
        .map(|_| ())
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("it declares: heap"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
    let none = stats_of(Vec::new());
    assert!(matches!(pick_space(&none, None), Err(NamespaceError::None)));
    assert!(pick_space(&none, Some("heap"))
        .unwrap_err()
        .to_string()
        .contains("(it declares: none)"));
}
