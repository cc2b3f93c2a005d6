use super::pass::Thinned;
use super::Sample;

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
