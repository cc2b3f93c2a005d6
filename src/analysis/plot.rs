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

/// The charts a picture can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chart {
    /// Live bytes over the trace, the peak marked.
    LiveBytes,
    /// Live blocks over the trace.
    LiveBlocks,
    /// Allocations per log2 size class.
    Sizes,
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
        if s.sized && !s.sizes.is_empty() {
            v.push(Chart::Sizes);
        }
        if !s.lifetime_records.histogram.is_empty() {
            v.push(Chart::Lifetimes);
        }
        if s.top_sites(SiteOrder::Peak, 1).any(|x| x.site.is_some()) {
            v.push(Chart::Sites);
        }
        v
    }
}

const BLUE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const LIGHT_BLUE: RGBColor = RGBColor(0xae, 0xc7, 0xe8);
const ORANGE: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
const GREEN: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
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
            true,
            GREEN,
        ),
        Chart::Lifetimes => histogram(
            area,
            "Lifetimes of freed blocks (log2 classes)",
            &s.lifetime_records.histogram,
            false,
            PURPLE,
        ),
        Chart::Sites => sites(area, s),
    }
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
    let x0 = s.start.record as f64;
    let x1 = (s.end.record as f64).max(x0 + 1.0);
    let ymax = if bytes {
        b.iter().map(|x| x.bytes_max).max().unwrap_or(0)
    } else {
        b.iter()
            .map(|x| u128::from(x.blocks_max))
            .max()
            .unwrap_or(0)
    };
    let ymax = (ymax as f64 * 1.12).max(1.0);
    let title = if bytes {
        format!("Live bytes — {}", s.name)
    } else {
        format!("Live blocks — {}", s.name)
    };
    let mut c = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, 0f64..ymax)
        .map_err(draw_err)?;
    c.configure_mesh()
        .x_desc("data record")
        .x_label_formatter(&|v| human_count(*v))
        .y_label_formatter(&|v| {
            if bytes {
                human_bytes(*v)
            } else {
                human_count(*v)
            }
        })
        .light_line_style(WHITE.mix(0.0))
        .draw()
        .map_err(draw_err)?;
    let span = s.curve.span as f64;
    if bytes {
        // Each bucket's range from its lowest to its highest value, then the highest values.
        c.draw_series(b.iter().map(|k| {
            let x = k.start.record as f64;
            Rectangle::new(
                [(x, k.bytes_min as f64), (x + span, k.bytes_max as f64)],
                LIGHT_BLUE.filled(),
            )
        }))
        .map_err(draw_err)?;
        c.draw_series(LineSeries::new(
            steps(b, span, |k| (k.bytes_max, k.bytes_last)),
            BLUE.stroke_width(1),
        ))
        .map_err(draw_err)?;
        let (px, py) = (s.peak_at.record as f64, s.peak_bytes as f64);
        c.draw_series(std::iter::once(Circle::new((px, py), 5, RED.filled())))
            .map_err(draw_err)?;
        let label = format!(
            "peak {} at data record {}",
            human_bytes(py),
            s.peak_at.record
        );
        // The label goes left of the point when the point is in the right half.
        let right = px > x0 + (x1 - x0) * 0.6;
        let style = TextStyle::from(("sans-serif", 15).into_font()).color(&RED);
        let style = if right {
            style.pos(Pos::new(HPos::Right, VPos::Bottom))
        } else {
            style.pos(Pos::new(HPos::Left, VPos::Bottom))
        };
        c.draw_series(std::iter::once(Text::new(
            label,
            (
                if right {
                    px - (x1 - x0) * 0.01
                } else {
                    px + (x1 - x0) * 0.01
                },
                py,
            ),
            style,
        )))
        .map_err(draw_err)?;
    } else {
        c.draw_series(LineSeries::new(
            steps(b, span, |k| (k.blocks_max.into(), k.blocks_last.into())),
            ORANGE.stroke_width(1),
        ))
        .map_err(draw_err)?;
        let (px, py) = (s.max_blocks_at.record as f64, s.max_blocks as f64);
        c.draw_series(std::iter::once(Circle::new((px, py), 4, RED.filled())))
            .map_err(draw_err)?;
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
        c.draw_series(std::iter::once(Text::new(
            format!(
                "most {} blocks at data record {}",
                s.max_blocks, s.max_blocks_at.record
            ),
            (px + dx, py),
            style,
        )))
        .map_err(draw_err)?;
    }
    Ok(())
}

/// A step line through the buckets: each bucket's highest value at its start, then its last
/// value until the next bucket starts (the state holds between events).
fn steps(
    b: &[super::stats::CurveBucket],
    span: f64,
    v: impl Fn(&super::stats::CurveBucket) -> (u128, u128),
) -> Vec<(f64, f64)> {
    let mut pts = Vec::with_capacity(b.len() * 2);
    for (i, k) in b.iter().enumerate() {
        let x = k.start.record as f64;
        let next = b.get(i + 1).map_or(x + span, |n| n.start.record as f64);
        let (max, last) = v(k);
        pts.push((x, max as f64));
        pts.push((next, last as f64));
    }
    pts
}

fn histogram<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    classes: &[SizeClass],
    bytes: bool,
    color: RGBColor,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    // Every class from the smallest to the largest, empty ones too, so the axis is a log scale.
    let lo = classes.first().map_or(0, |c| class_index(c.lo));
    let hi = classes.last().map_or(0, |c| class_index(c.lo));
    let n = (hi - lo + 1) as u32;
    let count = |k: usize| {
        classes
            .iter()
            .find(|c| class_index(c.lo) == k)
            .map_or(0, |c| c.count)
    };
    let ymax = classes.iter().map(|c| c.count).max().unwrap_or(0) as f64 * 1.1;
    let mut c = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(60)
        // Integer ranges are inclusive in plotters: n classes are 0..n-1.
        .build_cartesian_2d((0u32..n - 1).into_segmented(), 0f64..ymax.max(1.0))
        .map_err(draw_err)?;
    let label = |v: &SegmentValue<u32>| match v {
        SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
            class_text(class_bounds(lo + *i as usize).0)
        }
        SegmentValue::Last => String::new(),
    };
    c.configure_mesh()
        .disable_x_mesh()
        .x_labels(n as usize)
        .x_label_formatter(&label)
        .x_label_style(("sans-serif", 11).into_font().color(&BLACK))
        .x_desc(if bytes {
            "size ≥ (bytes; K = 1024)"
        } else {
            "lifetime ≥ (data records; K = 1024)"
        })
        .light_line_style(WHITE.mix(0.0))
        .y_label_formatter(&|v| human_count(*v))
        .y_desc("count")
        .draw()
        .map_err(draw_err)?;
    c.draw_series((0..n).map(|i| {
        let v = count(lo + i as usize) as f64;
        let mut r = Rectangle::new(
            [
                (SegmentValue::Exact(i), 0.0),
                (SegmentValue::Exact(i + 1), v),
            ],
            color.filled(),
        );
        r.set_margin(0, 0, 2, 2);
        r
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
    let top: Vec<_> = s.top_sites(SiteOrder::Peak, 12).collect();
    let n = top.len().max(1) as u32;
    let xmax = top.iter().map(|x| x.peak_bytes).max().unwrap_or(0) as f64 * 1.05;
    let what = if s.sized { "bytes" } else { "blocks" };
    let mut c = ChartBuilder::on(area)
        .caption(
            format!("Top sites by live {what} at the peak"),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(10)
        .build_cartesian_2d(0f64..xmax.max(1.0), (0u32..n - 1).into_segmented())
        .map_err(draw_err)?;
    c.configure_mesh()
        .disable_y_mesh()
        .light_line_style(WHITE.mix(0.0))
        .y_labels(n as usize)
        .y_label_formatter(&|_| String::new())
        .x_label_formatter(&|v| {
            if s.sized {
                human_bytes(*v)
            } else {
                human_count(*v)
            }
        })
        .draw()
        .map_err(draw_err)?;
    let value = |x: &super::stats::SiteSummary| {
        if s.sized {
            x.peak_bytes as f64
        } else {
            x.peak_blocks as f64
        }
    };
    c.draw_series(top.iter().enumerate().map(|(i, x)| {
        let i = n - 1 - i as u32;
        let mut r = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(i)),
                (value(x), SegmentValue::Exact(i + 1)),
            ],
            LIGHT_BLUE.filled(),
        );
        r.set_margin(2, 2, 0, 0);
        r
    }))
    .map_err(draw_err)?;
    c.draw_series(top.iter().enumerate().map(|(i, x)| {
        let i = n - 1 - i as u32;
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
            (xmax * 0.005, SegmentValue::CenterOf(i)),
            TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center)),
        )
    }))
    .map_err(draw_err)?;
    Ok(())
}

/// Height in pixels of each chart in [`draw_all`].
fn height(chart: Chart) -> u32 {
    match chart {
        Chart::LiveBytes => 420,
        Chart::LiveBlocks => 300,
        Chart::Sizes | Chart::Lifetimes => 380,
        Chart::Sites => 420,
    }
}

/// The size of the picture [`draw_all`] draws for this namespace.
pub fn picture_size(s: &SpaceSummary, width: u32) -> (u32, u32) {
    let charts = Chart::all_for(s);
    let hist = charts
        .iter()
        .filter(|c| matches!(c, Chart::Sizes | Chart::Lifetimes))
        .count();
    let mut h = 40;
    for c in &charts {
        if !matches!(c, Chart::Sizes | Chart::Lifetimes) {
            h += height(*c);
        }
    }
    if hist > 0 {
        h += height(Chart::Sizes);
    }
    (width, h)
}

/// Draws every chart of namespace `s` on one canvas (the two histograms side by side), under a
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
    let charts = Chart::all_for(s);
    let hist: Vec<Chart> = charts
        .iter()
        .copied()
        .filter(|c| matches!(c, Chart::Sizes | Chart::Lifetimes))
        .collect();
    let mut hist_done = false;
    for chart in charts {
        if matches!(chart, Chart::Sizes | Chart::Lifetimes) {
            if hist_done {
                continue;
            }
            hist_done = true;
            let (row, r) = rest.split_vertically(height(Chart::Sizes));
            rest = r;
            if hist.len() == 2 {
                let (l, rr) = row.split_horizontally(row.dim_in_pixel().0 / 2);
                draw_chart(&l, s, hist[0])?;
                draw_chart(&rr, s, hist[1])?;
            } else {
                draw_chart(&row, s, hist[0])?;
            }
            continue;
        }
        let (row, r) = rest.split_vertically(height(chart));
        rest = r;
        draw_chart(&row, s, chart)?;
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
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw_all(&root, title, s)?;
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

    fn space() -> SpaceSummary {
        let mut h = HeapStats::new(vec![SpaceInfo {
            name: "heap".into(),
            sized: true,
            shared: false,
            time_unit: None,
        }]);
        h.open_window(At::default());
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
        assert_eq!(Chart::all_for(&s).len(), 5);
        let svg = svg("t", &s, 1000).unwrap();
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("peak "), "the peak is labelled");
        assert!(svg.contains("f0"), "sites are named");
        let png = png("t", &s, 800).unwrap();
        assert_eq!(&png[1..4], b"PNG");
    }

    fn ab_glyph_font_ok() -> bool {
        plotters::style::register_font("test-font", FontStyle::Normal, FONT).is_ok()
    }
}
