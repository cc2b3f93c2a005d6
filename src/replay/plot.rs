//! The picture of a replay: RSS over the replay for every allocator, beside the trace's own
//! live bytes, in one chart (SVG, or PNG through plotters' bitmap backend).

use plotters::prelude::*;

use crate::simulate::Sample;

use super::Report;

use crate::picture::draw_err;
pub use crate::picture::{PictureFormat, PlotError};

const SIZE: (u32, u32) = (1000, 600);
const COLORS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

/// One line of a chart: its legend and its points (x: events, y: bytes).
#[derive(Debug, Clone)]
pub struct Series {
    /// The legend.
    pub name: String,
    /// The points.
    pub points: Vec<(u64, u64)>,
}

/// Draws `live` (the trace's live bytes after each event) and, for each `(name, report)`, the
/// RSS above its baseline after the same events; below them, where the reports attributed it,
/// the waste by size class at the trace's live peak, a bar per allocator; returns the
/// picture's bytes.
pub fn chart(
    format: PictureFormat,
    title: &str,
    live: &[Sample],
    runs: &[(&str, &Report)],
) -> Result<Vec<u8>, PlotError> {
    let series = rss_series(live, runs);
    let snaps: Vec<(&str, &crate::frag::Snapshot)> = runs
        .iter()
        .filter_map(|(n, r)| r.frag.at_peak.as_ref().map(|s| (*n, s)))
        .collect();
    let panel = WastePanel {
        caption: "waste at the trace's live peak by size class: unused bytes of the resident pages holding live bytes",
        own: "RSS outside pages with live bytes",
    };
    lines_with_waste(format, title, &series, &snaps, &panel)
}

/// What the panel of waste by size class says: its caption, and the name of the bytes held by
/// no live block (in each legend).
#[derive(Debug, Clone, Copy)]
pub struct WastePanel<'a> {
    /// The caption.
    pub caption: &'a str,
    /// What a snapshot's `unattributed` bytes are.
    pub own: &'a str,
}

/// Draws `series` as [`lines`] does and, below them, the waste by size class of each named
/// snapshot, a bar each (only the lines when no snapshot has a class); returns the picture's
/// bytes.
pub fn lines_with_waste(
    format: PictureFormat,
    title: &str,
    series: &[Series],
    snaps: &[(&str, &crate::frag::Snapshot)],
    panel: &WastePanel<'_>,
) -> Result<Vec<u8>, PlotError> {
    let waste = Waste::of(snaps, panel);
    if waste.classes.is_empty() {
        return lines(format, title, series);
    }
    crate::picture::register_font()?;
    let size = (SIZE.0, SIZE.1 + WASTE_HEIGHT);
    match format {
        PictureFormat::Svg => {
            let mut s = String::new();
            {
                let root = SVGBackend::with_string(&mut s, size).into_drawing_area();
                root.fill(&WHITE).map_err(draw_err)?;
                let (top, bottom) = root.split_vertically(SIZE.1);
                draw(&top, title, series)?;
                waste.draw(&root, &bottom)?;
                root.present().map_err(draw_err)?;
            }
            Ok(s.into_bytes())
        }
        PictureFormat::Png => {
            let mut buf = vec![0u8; (size.0 * size.1 * 3) as usize];
            {
                let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
                root.fill(&WHITE).map_err(draw_err)?;
                let (top, bottom) = root.split_vertically(SIZE.1);
                draw(&top, title, series)?;
                waste.draw(&root, &bottom)?;
                root.present().map_err(draw_err)?;
            }
            crate::picture::encode_png(&buf, size.0, size.1)
        }
    }
}

/// The height of the panel of waste by size class.
const WASTE_HEIGHT: u32 = 380;
/// The size classes drawn: the ones holding the most waste over all allocators.
const WASTE_CLASSES: usize = 12;

/// The waste by size class of each snapshot (an allocator's run, a policy).
struct Waste {
    /// The classes drawn, smallest first: (label, waste per snapshot in bytes).
    classes: Vec<(String, Vec<u64>)>,
    /// Each snapshot's name and its bytes held by no live block.
    allocators: Vec<(String, u64)>,
    caption: String,
    own: String,
}

impl Waste {
    fn of(snaps: &[(&str, &crate::frag::Snapshot)], panel: &WastePanel<'_>) -> Waste {
        let mut by_class: std::collections::BTreeMap<(u64, u64), Vec<u64>> = Default::default();
        for (i, (_, s)) in snaps.iter().enumerate() {
            for c in &s.classes {
                by_class
                    .entry((c.lo, c.hi))
                    .or_insert_with(|| vec![0; snaps.len()])[i] += c.figures.waste();
            }
        }
        let mut ranked: Vec<((u64, u64), Vec<u64>)> = by_class.into_iter().collect();
        ranked.sort_by_key(|(_, w)| std::cmp::Reverse(w.iter().sum::<u64>()));
        ranked.truncate(WASTE_CLASSES);
        ranked.retain(|(_, w)| w.iter().any(|&x| x > 0));
        ranked.sort_by_key(|((lo, _), _)| *lo);
        Waste {
            classes: ranked
                .into_iter()
                .map(|((lo, hi), w)| (format!("{lo}-{hi}"), w))
                .collect(),
            allocators: snaps
                .iter()
                .map(|(n, s)| (n.to_string(), s.unattributed))
                .collect(),
            caption: panel.caption.to_string(),
            own: panel.own.to_string(),
        }
    }

    /// Grouped bars in `area`; the class labels under them are drawn on `root`.
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, plotters::coord::Shift>,
        area: &DrawingArea<DB, plotters::coord::Shift>,
    ) -> Result<(), PlotError> {
        const KIB: f64 = 1024.0;
        let n = self.classes.len();
        let k = self.allocators.len().max(1);
        let y_max = (self
            .classes
            .iter()
            .flat_map(|(_, w)| w.iter())
            .copied()
            .max()
            .unwrap_or(0) as f64
            / KIB)
            .max(1.0 / KIB)
            // Room above the bars for the legend, a line per bar.
            * (1.15 + 0.1 * k as f64);
        let mut chart = ChartBuilder::on(area)
            .caption(&self.caption, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..n as f64, 0f64..y_max)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_desc("KiB")
            .y_label_formatter(&|v| format!("{v:.0}"))
            .label_style(("sans-serif", 15))
            .draw()
            .map_err(draw_err)?;
        let width = 0.8 / k as f64;
        for (j, (name, own)) in self.allocators.iter().enumerate() {
            let color = COLORS[j % COLORS.len()];
            chart
                .draw_series(self.classes.iter().enumerate().map(|(i, (_, w))| {
                    let x0 = i as f64 + 0.1 + j as f64 * width;
                    Rectangle::new([(x0, 0.0), (x0 + width, w[j] as f64 / KIB)], color.filled())
                }))
                .map_err(draw_err)?
                .label(format!(
                    "{name} ({}: {:.1} MiB)",
                    self.own,
                    *own as f64 / (KIB * KIB)
                ))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 15, y + 5)], color.filled())
                });
        }
        let style = TextStyle::from(("sans-serif", 13).into_font()).pos(
            plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Center,
                plotters::style::text_anchor::VPos::Top,
            ),
        );
        for (i, (label, _)) in self.classes.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
            root.draw(&Text::new(label.clone(), (x, y + 6), style.clone()))
                .map_err(draw_err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 15))
            .draw()
            .map_err(draw_err)?;
        Ok(())
    }
}

/// The trace's live bytes and each run's RSS above its baseline.
fn rss_series(live: &[Sample], runs: &[(&str, &Report)]) -> Vec<Series> {
    let mut series = vec![Series {
        name: "trace live bytes".into(),
        points: live.iter().map(|s| (s.event, s.live)).collect(),
    }];
    for (name, r) in runs {
        series.push(Series {
            name: format!("RSS above start, {name}"),
            points: r
                .samples
                .iter()
                .map(|s| (s.event, s.rss.saturating_sub(r.rss_baseline)))
                .collect(),
        });
    }
    series
}

/// Draws lines of bytes over events, the first one black and thick; returns the picture's
/// bytes.
pub fn lines(format: PictureFormat, title: &str, series: &[Series]) -> Result<Vec<u8>, PlotError> {
    crate::picture::register_font()?;
    match format {
        PictureFormat::Svg => {
            let mut s = String::new();
            {
                let root = SVGBackend::with_string(&mut s, SIZE).into_drawing_area();
                draw(&root, title, series)?;
                root.present().map_err(draw_err)?;
            }
            Ok(s.into_bytes())
        }
        PictureFormat::Png => {
            let mut buf = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
            {
                let root = BitMapBackend::with_buffer(&mut buf, SIZE).into_drawing_area();
                draw(&root, title, series)?;
                root.present().map_err(draw_err)?;
            }
            crate::picture::encode_png(&buf, SIZE.0, SIZE.1)
        }
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    series: &[Series],
) -> Result<(), PlotError> {
    root.fill(&WHITE).map_err(draw_err)?;
    const MIB: f64 = 1024.0 * 1024.0;
    let all = || series.iter().flat_map(|s| s.points.iter());
    let x_max = all().map(|p| p.0).max().unwrap_or(1).max(1);
    let y_max = (all().map(|p| p.1).max().unwrap_or(0) as f64 / MIB).max(1.0 / 1024.0) * 1.05;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0u64..x_max, 0f64..y_max)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .x_desc("events")
        .y_desc("MiB")
        .y_label_formatter(&|v| format!("{v:.1}"))
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(draw_err)?;
    for (i, s) in series.iter().enumerate() {
        let (color, width) = if i == 0 {
            (BLACK, 3)
        } else {
            (COLORS[(i - 1) % COLORS.len()], 2)
        };
        chart
            .draw_series(LineSeries::new(
                s.points.iter().map(|&(x, y)| (x, y as f64 / MIB)),
                color.stroke_width(width),
            ))
            .map_err(draw_err)?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(draw_err)?;
    Ok(())
}
