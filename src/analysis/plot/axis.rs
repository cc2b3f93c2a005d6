//! The axes: ticks chosen in the displayed unit, numbers and byte counts for people, the
//! categorical axis of the sites chart.

/// `12k`, `3.4M`: a count for an axis.
pub fn human_count(n: f64) -> String {
    let a = n.abs();
    if a >= 1e9 {
        format!("{:.1}G", n / 1e9)
    } else if a >= 1e6 {
        format!("{:.1}M", n / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", n / 1e3)
    } else {
        format!("{n:.0}")
    }
}

/// The lower bound of a log2 class, compactly: `0`, `1`, `512`, `1K`, `64K`, `2M`.
pub(super) fn class_text(lo: u64) -> String {
    let units = ["", "K", "M", "G", "T", "P", "E"];
    let mut v = lo;
    let mut u = 0;
    while v >= 1024 && v & 1023 == 0 && u + 1 < units.len() {
        v /= 1024;
        u += 1;
    }
    format!("{v}{}", units[u])
}

/// The ticks of an axis: where they stand (in the data's unit) and how they read, in one
/// displayed unit (`KiB`, `k`) with as many decimals as the step needs.
// Design: plotters chooses its own ticks in the data's unit (bytes), which gives 1.9, 3.8,
// 5.7 MiB; the ticks are chosen here, at 1, 2, 2.5 or 5 × 10^k of the displayed unit, and
// handed to plotters as key points.
#[derive(Debug, Clone, PartialEq)]
pub struct Ticks {
    /// Where the axis ends (the highest tick for a value axis).
    pub top: f64,
    /// The ticks, in the data's unit.
    pub keys: Vec<f64>,
    /// The step between ticks, in the data's unit.
    pub step: f64,
    pub(super) unit: f64,
    pub(super) suffix: &'static str,
    pub(super) decimals: usize,
}

impl Ticks {
    /// A tick's label: `0`, `2.5 MiB`, `40k`.
    pub fn label(&self, v: f64) -> String {
        let x = v / self.unit;
        if x.abs() < 1e-9 {
            return "0".into();
        }
        format!("{x:.*}{}", self.decimals, self.suffix)
    }
}

impl Ticks {
    /// The axis from `lo` to `hi` with these ticks.
    pub fn axis(&self, lo: f64, hi: f64) -> KeyAxis {
        KeyAxis::new(lo, hi, self.keys.clone())
    }
}

/// A linear axis of `f64` whose ticks are given (plotters' `with_key_points` gives no label
/// formatter for floating-point axes).
#[derive(Clone)]
pub struct KeyAxis {
    pub(super) inner: plotters::coord::types::RangedCoordf64,
    pub(super) keys: Vec<f64>,
}

impl KeyAxis {
    pub(super) fn new(lo: f64, hi: f64, keys: Vec<f64>) -> KeyAxis {
        KeyAxis {
            inner: (lo..hi).into(),
            keys,
        }
    }
}

impl plotters::coord::ranged1d::Ranged for KeyAxis {
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;
    type ValueType = f64;
    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }
    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.keys.clone()
        }
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// The step of about `raw` that a reader expects: 1, 2, 2.5 or 5 × 10^k, at least 1 when the
/// values are whole.
pub fn nice_step(raw: f64, whole: bool) -> f64 {
    let raw = if raw.is_finite() && raw > 0.0 {
        raw
    } else {
        1.0
    };
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        let s = m * mag;
        if whole && (s < 1.0 || (s - s.round()).abs() > 1e-9) {
            continue;
        }
        if s >= raw * (1.0 - 1e-9) {
            return s;
        }
    }
    (10.0 * mag).max(1.0)
}

/// The unit a value is shown in: binary units for bytes, `k`, `M`, `G` for counts.
pub(super) fn unit_of(max: f64, bytes: bool) -> (f64, &'static str) {
    if bytes {
        let units = [" B", " KiB", " MiB", " GiB", " TiB", " PiB", " EiB"];
        let mut u = 0;
        let mut div = 1.0;
        while max >= div * 1024.0 && u + 1 < units.len() {
            div *= 1024.0;
            u += 1;
        }
        (div, units[u])
    } else if max >= 1e10 {
        (1e9, "G")
    } else if max >= 1e7 {
        (1e6, "M")
    } else if max >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    }
}

pub(super) fn decimals(step: f64) -> usize {
    let mut d = 0;
    let mut s = step;
    while d < 3 && (s - s.round()).abs() > 1e-6 {
        s *= 10.0;
        d += 1;
    }
    d
}

/// A value axis from 0 with about `n` ticks whose top is at or above `max`; with `room`, above
/// it by enough for a mark and its label.
pub fn value_ticks(max: f64, bytes: bool, n: usize, room: bool) -> Ticks {
    let (unit, suffix) = unit_of(max, bytes);
    let v = max / unit;
    let step = nice_step(v / n.max(1) as f64, unit == 1.0);
    let mut top = (v / step - 1e-9).ceil().max(1.0) * step;
    if top * unit < max {
        top += step;
    }
    if room && top - v < 0.06 * top {
        top += step;
    }
    let count = (top / step).round() as usize;
    Ticks {
        top: top * unit,
        keys: (0..=count).map(|i| i as f64 * step * unit).collect(),
        step: step * unit,
        unit,
        suffix,
        decimals: decimals(step),
    }
}

/// An axis over `[lo, hi]` (record indices) with about `n` ticks inside it.
pub fn range_ticks(lo: f64, hi: f64, n: usize) -> Ticks {
    let (unit, suffix) = unit_of(hi.abs().max(lo.abs()), false);
    let step = nice_step((hi - lo) / unit / n.max(1) as f64, unit == 1.0);
    let first = (lo / unit / step - 1e-9).ceil() * step;
    let mut keys = Vec::new();
    let mut i = 0.0;
    while first + i * step <= hi / unit + 1e-9 && keys.len() <= 4 * n + 4 {
        keys.push((first + i * step) * unit);
        i += 1.0;
    }
    Ticks {
        top: hi,
        keys,
        step: step * unit,
        unit,
        suffix,
        decimals: decimals(step),
    }
}
