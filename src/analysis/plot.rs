//! Pictures of a trace's heap statistics (`mtf plot`, `mtf report`): live bytes and live
//! blocks over the trace with the peak marked, the allocation size histogram, the lifetime
//! histogram and the top sites, drawn with plotters as SVG or PNG.
//!
//! PNG text is drawn with a bundled subset of Roboto (Apache-2.0, `assets/fonts/`): nothing is
//! read from the system, so a PNG looks the same on every machine, offline. SVG text names the
//! generic `sans-serif` family and is rendered by the viewer.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::stats::{class_bounds, SiteOrder, SizeClass, SpaceSummary, Stats};

/// Roboto Regular reduced to ASCII and a few symbols (see `assets/fonts/README.md`).
static FONT: &[u8] = include_bytes!("../../assets/fonts/Roboto-Regular-subset.ttf");

/// Why a picture could not be drawn.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum PlotError {
    /// The drawing library failed.
    #[error("cannot draw the plot: {0}")]
    #[diagnostic(code(mtf::plot::draw))]
    Draw(String),
    /// PNG encoding failed.
    #[error("cannot encode the PNG: {0}")]
    #[diagnostic(code(mtf::plot::png))]
    Png(String),
}

fn draw_err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> PlotError {
    PlotError::Draw(e.to_string())
}

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The bundled font is a valid TrueType file (a unit test draws with it); were it not,
        // text would be left out rather than the process stopped.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

mod text;

/// The charts a picture can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// Live bytes over the trace, the peak marked.
    LiveBytes,
    /// Live blocks over the trace.
    LiveBlocks,
    /// Allocations per log2 size class.
    Sizes,
    /// Bytes allocated per log2 size class (where large blocks show).
    SizeBytes,
    /// Frees per log2 class of lifetime (records).
    Lifetimes,
    /// The sites with the most live bytes at the peak.
    Sites,
}

impl Chart {
    /// Every chart that has something to show for this namespace, in the page's order.
    pub fn all_for(s: &SpaceSummary) -> Vec<Chart> {
        let mut v = Vec::new();
        if s.sized {
            v.push(Chart::LiveBytes);
        }
        v.push(Chart::LiveBlocks);
        if !s.sizes.is_empty() {
            v.push(Chart::Sizes);
            if s.has_bytes() {
                v.push(Chart::SizeBytes);
            }
        }
        if !s.lifetime_records.histogram.is_empty() {
            v.push(Chart::Lifetimes);
        }
        if s.top_sites(SiteOrder::Peak, 1).any(|x| x.site.is_some()) {
            v.push(Chart::Sites);
        }
        v
    }

    /// Whether the chart is a histogram (two of them share a row).
    pub fn is_histogram(self) -> bool {
        matches!(self, Chart::Sizes | Chart::SizeBytes | Chart::Lifetimes)
    }
}

const BLUE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const LIGHT_BLUE: RGBColor = RGBColor(0xae, 0xc7, 0xe8);
const ORANGE: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
const GREEN: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
const TEAL: RGBColor = RGBColor(0x17, 0xbe, 0xcf);
const PURPLE: RGBColor = RGBColor(0x94, 0x67, 0xbd);
const RED: RGBColor = RGBColor(0xd6, 0x27, 0x28);

pub use super::stats::human_bytes;

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
fn class_text(lo: u64) -> String {
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
    unit: f64,
    suffix: &'static str,
    decimals: usize,
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
    inner: plotters::coord::types::RangedCoordf64,
    keys: Vec<f64>,
}

impl KeyAxis {
    fn new(lo: f64, hi: f64, keys: Vec<f64>) -> KeyAxis {
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
fn unit_of(max: f64, bytes: bool) -> (f64, &'static str) {
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

fn decimals(step: f64) -> usize {
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

/// Draws one chart of namespace `s` into `area`.
pub fn draw_chart<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &SpaceSummary,
    chart: Chart,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    register_font();
    match chart {
        Chart::LiveBytes | Chart::LiveBlocks => curve(area, s, chart == Chart::LiveBytes),
        Chart::Sizes => histogram(
            area,
            "Allocations by size (log2 classes)",
            &s.sizes,
            Hist::SizeCount,
            GREEN,
        ),
        Chart::SizeBytes => histogram(
            area,
            "Bytes allocated by size (log2 classes)",
            &s.sizes,
            Hist::SizeBytes,
            TEAL,
        ),
        Chart::Lifetimes => histogram(
            area,
            "Lifetimes of freed blocks (log2 classes)",
            &s.lifetime_records.histogram,
            Hist::Lifetime,
            PURPLE,
        ),
        Chart::Sites => sites(area, s),
    }
}

/// The records the curve's axis spans: from the slice's first heap event that changed the
/// live state to its last (the string tables, name tables and headers around them are left
/// out), the marked peaks always inside.
pub fn curve_span(s: &SpaceSummary) -> (f64, f64) {
    let (a, b) = match s.curve.events {
        Some((first, last)) => (first.record, last.record.saturating_add(1)),
        None => (s.start.record, s.end.record),
    };
    let a = a.min(s.peak_at.record).min(s.max_blocks_at.record);
    let b = b
        .max(s.peak_at.record.saturating_add(1))
        .max(s.max_blocks_at.record.saturating_add(1));
    let (x0, x1) = (a as f64, b as f64);
    (x0, x1.max(x0 + 1.0))
}

fn curve<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &SpaceSummary,
    bytes: bool,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let b = &s.curve.buckets;
    let (x0, x1) = curve_span(s);
    let ymax = if bytes {
        b.iter().map(|x| x.bytes_max).max().unwrap_or(0)
    } else {
        b.iter()
            .map(|x| u128::from(x.blocks_max))
            .max()
            .unwrap_or(0)
    };
    let yt = value_ticks(ymax as f64, bytes, 6, true);
    let xt = range_ticks(x0, x1, 10);
    let title = if bytes {
        format!("Live bytes — {}", s.name)
    } else {
        format!("Live blocks — {}", s.name)
    };
    let mut c = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .margin_right(30)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(xt.axis(x0, x1), yt.axis(0.0, yt.top))
        .map_err(draw_err)?;
    c.configure_mesh()
        .x_desc("data record")
        .x_label_formatter(&|v| xt.label(*v))
        .y_label_formatter(&|v| yt.label(*v))
        .label_style(("sans-serif", 12).into_font())
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(draw_err)?;
    let span = s.curve.span as f64;
    // Each bucket's records, cut to the axis (`None`: outside it).
    let range = |i: usize| {
        let k = &b[i];
        let lo = k.start.record as f64;
        let hi = b.get(i + 1).map_or(lo + span, |n| n.start.record as f64);
        let (lo, hi) = (lo.max(x0), hi.min(x1));
        (lo < hi).then_some((lo, hi))
    };
    let value = |k: &CurveBucket| {
        if bytes {
            (k.bytes_max, k.bytes_last)
        } else {
            (k.blocks_max.into(), k.blocks_last.into())
        }
    };
    let color = if bytes { BLUE } else { ORANGE };
    if bytes {
        // Each bucket's range from its lowest to its highest value, then the highest values.
        c.draw_series((0..b.len()).filter_map(|i| {
            let (lo, hi) = range(i)?;
            let k = &b[i];
            Some(Rectangle::new(
                [(lo, k.bytes_min as f64), (hi, k.bytes_max as f64)],
                LIGHT_BLUE.filled(),
            ))
        }))
        .map_err(draw_err)?;
    }
    let mut pts = Vec::with_capacity(b.len() * 2);
    for (i, k) in b.iter().enumerate() {
        if let Some((lo, hi)) = range(i) {
            // Each bucket's highest value at its start, then its last value until the next
            // bucket starts (the state holds between events).
            let (max, last) = value(k);
            pts.push((lo, max as f64));
            pts.push((hi, last as f64));
        }
    }
    c.draw_series(LineSeries::new(pts, color.stroke_width(1)))
        .map_err(draw_err)?;
    let (px, py, label) = if bytes {
        (
            s.peak_at.record as f64,
            s.peak_bytes as f64,
            format!(
                "peak {} at data record {}",
                human_bytes(s.peak_bytes as f64),
                s.peak_at.record
            ),
        )
    } else {
        (
            s.max_blocks_at.record as f64,
            s.max_blocks as f64,
            format!(
                "most {} blocks at data record {}",
                s.max_blocks, s.max_blocks_at.record
            ),
        )
    };
    if py <= 0.0 {
        // Nothing was ever alive: no peak to mark.
        return Ok(());
    }
    c.draw_series(std::iter::once(Circle::new((px, py), 4, RED.filled())))
        .map_err(draw_err)?;
    // The label goes left of the point when the point is in the right half.
    let right = px > x0 + (x1 - x0) * 0.6;
    let style = TextStyle::from(("sans-serif", 14).into_font()).color(&RED);
    let (style, dx) = if right {
        (
            style.pos(Pos::new(HPos::Right, VPos::Bottom)),
            -(x1 - x0) * 0.01,
        )
    } else {
        (
            style.pos(Pos::new(HPos::Left, VPos::Bottom)),
            (x1 - x0) * 0.01,
        )
    };
    c.draw_series(std::iter::once(Text::new(label, (px + dx, py), style)))
        .map_err(draw_err)?;
    Ok(())
}

use super::stats::CurveBucket;

/// What a histogram counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hist {
    SizeCount,
    SizeBytes,
    Lifetime,
}

fn histogram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    classes: &[SizeClass],
    what: Hist,
    color: RGBColor,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    // Every class from the smallest to the largest, empty ones too, so the axis is a log scale.
    let lo = classes.first().map_or(0, |c| class_index(c.lo));
    let hi = classes.last().map_or(0, |c| class_index(c.lo)).max(lo);
    let n = hi - lo + 1;
    let value = |k: usize| {
        classes
            .iter()
            .find(|c| class_index(c.lo) == k)
            .map_or(0, |c| match what {
                Hist::SizeBytes => c.bytes,
                _ => u128::from(c.count),
            })
    };
    let max = (lo..=hi).map(value).max().unwrap_or(0) as f64;
    let bytes = what == Hist::SizeBytes;
    let yt = value_ticks(max, bytes, 5, true);
    // A label for every class that has room: about 36 pixels each.
    let width = area.dim_in_pixel().0.saturating_sub(90).max(36) as usize;
    let every = n.div_ceil((width / 36).max(1));
    let keys: Vec<f64> = (0..n).step_by(every).map(|i| i as f64).collect();
    let mut c = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(
            KeyAxis::new(-0.5, n as f64 - 0.5, keys),
            yt.axis(0.0, yt.top),
        )
        .map_err(draw_err)?;
    c.configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&|v| class_text(class_bounds(lo + v.round().max(0.0) as usize).0))
        .x_label_style(("sans-serif", 12).into_font().color(&BLACK))
        .y_label_style(("sans-serif", 12).into_font().color(&BLACK))
        .x_desc(match what {
            Hist::Lifetime => "lifetime ≥ (data records; K = 1024)",
            _ => "size ≥ (bytes; K = 1024)",
        })
        .light_line_style(WHITE.mix(0.0))
        .y_label_formatter(&|v| yt.label(*v))
        .y_desc(match what {
            Hist::SizeCount => "allocations",
            Hist::SizeBytes => "bytes allocated",
            Hist::Lifetime => "freed blocks",
        })
        .draw()
        .map_err(draw_err)?;
    c.draw_series((0..n).filter_map(|i| {
        let v = value(lo + i) as f64;
        (v > 0.0).then(|| {
            Rectangle::new(
                [(i as f64 - 0.42, 0.0), (i as f64 + 0.42, v)],
                color.filled(),
            )
        })
    }))
    .map_err(draw_err)?;
    Ok(())
}

fn class_index(lo: u64) -> usize {
    (64 - lo.leading_zeros()) as usize
}

fn sites<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &SpaceSummary,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let top: Vec<_> = s.top_sites(SiteOrder::Peak, SITES).collect();
    let n = top.len().max(1);
    let value = |x: &super::stats::SiteSummary| {
        if s.sized {
            x.peak_bytes as f64
        } else {
            x.peak_blocks as f64
        }
    };
    let max = top.iter().map(|x| value(x)).fold(0.0, f64::max);
    let xt = value_ticks(max, s.sized, 8, false);
    let what = if s.sized { "bytes" } else { "blocks" };
    let mut c = ChartBuilder::on(area)
        .caption(
            format!("Top sites by live {what} at the peak"),
            ("sans-serif", 18),
        )
        .margin(12)
        .margin_right(30)
        .x_label_area_size(36)
        .y_label_area_size(10)
        .build_cartesian_2d(
            xt.axis(0.0, xt.top),
            KeyAxis::new(0.0, n as f64, Vec::new()),
        )
        .map_err(draw_err)?;
    c.configure_mesh()
        .disable_y_mesh()
        .light_line_style(WHITE.mix(0.0))
        .x_label_formatter(&|v| xt.label(*v))
        .label_style(("sans-serif", 12).into_font())
        .draw()
        .map_err(draw_err)?;
    // The first site at the top.
    let row = |i: usize| (n - 1 - i) as f64;
    c.draw_series(top.iter().enumerate().map(|(i, x)| {
        Rectangle::new(
            [(0.0, row(i) + 0.08), (value(x), row(i) + 0.92)],
            LIGHT_BLUE.filled(),
        )
    }))
    .map_err(draw_err)?;
    c.draw_series(top.iter().enumerate().map(|(i, x)| {
        let name = match (&x.name, x.site) {
            (Some(n), _) => n.clone(),
            (None, Some(id)) => format!("site {id}"),
            (None, None) => "(no site)".into(),
        };
        let name: String = name.chars().take(90).collect();
        let amount = if s.sized {
            human_bytes(x.peak_bytes as f64)
        } else {
            format!("{} blocks", x.peak_blocks)
        };
        Text::new(
            format!("{name}  ({amount})"),
            (xt.top * 0.005, row(i) + 0.5),
            TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center)),
        )
    }))
    .map_err(draw_err)?;
    Ok(())
}

/// Height in pixels of each chart of namespace `s` in [`draw_all`] and the report.
pub fn height(s: &SpaceSummary, chart: Chart) -> u32 {
    match chart {
        Chart::LiveBytes => 420,
        Chart::LiveBlocks => 300,
        Chart::Sizes | Chart::SizeBytes | Chart::Lifetimes => 360,
        // A bar of about 30 pixels per site.
        Chart::Sites => 100 + 30 * s.top_sites(SiteOrder::Peak, SITES).count().max(2) as u32,
    }
}

/// Sites in the chart of the top sites.
const SITES: usize = 12;

/// The rows of [`draw_all`]: each chart on its own row, the histograms side by side.
fn rows(s: &SpaceSummary) -> Vec<Vec<Chart>> {
    let mut rows: Vec<Vec<Chart>> = Vec::new();
    for c in Chart::all_for(s) {
        match rows.last_mut() {
            Some(r) if c.is_histogram() && r.len() < 3 && r[0].is_histogram() => r.push(c),
            _ => rows.push(vec![c]),
        }
    }
    rows
}

/// The size of the picture [`draw_all`] draws for this namespace.
pub fn picture_size(s: &SpaceSummary, width: u32) -> (u32, u32) {
    (
        width,
        40 + rows(s).iter().map(|r| height(s, r[0])).sum::<u32>(),
    )
}

/// Draws every chart of namespace `s` on one canvas (the histograms side by side), under a
/// title line.
pub fn draw_all<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &SpaceSummary,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    register_font();
    root.fill(&WHITE).map_err(draw_err)?;
    let (head, mut rest) = root.split_vertically(40);
    head.draw_text(
        title,
        &TextStyle::from(("sans-serif", 16).into_font()).color(&BLACK),
        (12, 12),
    )
    .map_err(draw_err)?;
    for row in rows(s) {
        let (area, r) = rest.split_vertically(height(s, row[0]));
        rest = r;
        if row.len() == 1 {
            draw_chart(&area, s, row[0])?;
        } else {
            for (cell, chart) in area.split_evenly((1, row.len())).iter().zip(&row) {
                draw_chart(cell, s, *chart)?;
            }
        }
    }
    root.present().map_err(draw_err)?;
    Ok(())
}

/// A title line for a namespace of a trace.
pub fn title(trace: &str, stats: &Stats, s: &SpaceSummary) -> String {
    let slice = if stats.window.is_all() {
        format!("{} data records", stats.records)
    } else {
        format!(
            "data records {}..{} ({} data records)",
            stats.start.record, stats.end.record, stats.records
        )
    };
    let peak = if s.sized {
        format!(
            "peak {} in {} blocks",
            human_bytes(s.peak_bytes as f64),
            s.peak_blocks
        )
    } else {
        format!("most live blocks {}", s.max_blocks)
    };
    format!(
        "{trace} — namespace {}: {slice}, {} allocations, {peak}, {} alive at the end",
        s.name,
        s.allocations,
        if s.sized {
            human_bytes(s.live_bytes as f64)
        } else {
            format!("{} blocks", s.live_blocks)
        }
    )
}

/// The picture as an SVG document.
pub fn svg(title: &str, s: &SpaceSummary, width: u32) -> Result<String, PlotError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, picture_size(s, width)).into_drawing_area();
        draw_all(&root, title, s)?;
    }
    Ok(out)
}

/// One chart as an SVG document (for the HTML report).
pub fn chart_svg(s: &SpaceSummary, chart: Chart, size: (u32, u32)) -> Result<String, PlotError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        draw_chart(&root, s, chart)?;
        root.present().map_err(draw_err)?;
    }
    Ok(out)
}

/// The picture as a PNG file's bytes.
pub fn png(title: &str, s: &SpaceSummary, width: u32) -> Result<Vec<u8>, PlotError> {
    let (w, h) = picture_size(s, width);
    let mut rgb = vec![0u8; (w as usize) * (h as usize) * 3];
    {
        let bitmap = BitMapBackend::with_buffer(&mut rgb, (w, h));
        // The bundled font is valid (a unit test draws with it); were it not, plotters' own
        // text would do.
        match text::Glyphs::new(bitmap, FONT) {
            Ok(g) => draw_all(&g.into_drawing_area(), title, s)?,
            Err(bitmap) => draw_all(&bitmap.into_drawing_area(), title, s)?,
        }
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc
            .write_header()
            .map_err(|e| PlotError::Png(e.to_string()))?;
        writer
            .write_image_data(&rgb)
            .map_err(|e| PlotError::Png(e.to_string()))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::event::{HeapEvent, HeapOp};
    use crate::analysis::stats::{At, HeapStats, SpaceInfo};

    /// Statistics of one sized namespace `heap`, its window open.
    fn sized_heap() -> HeapStats {
        let mut h = HeapStats::new(vec![SpaceInfo {
            name: "heap".into(),
            sized: true,
            shared: false,
            time_unit: None,
        }]);
        h.open_window(At::default());
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
                op,
            });
        }
        h.finish(
            At {
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
                op,
            });
        }
        let s = h
            .finish(
                At {
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
}
