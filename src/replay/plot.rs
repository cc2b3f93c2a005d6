//! The picture of a replay: RSS over the replay for every allocator, beside the trace's own
//! live bytes, in one chart (SVG, or PNG through plotters' bitmap backend).

use plotters::prelude::*;

use crate::simulate::Sample;

use super::Report;

/// A failure to draw.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error("drawing the chart: {0}")]
#[diagnostic(code(mtf::replay::plot))]
pub struct ChartError(String);

/// The picture's format, from a file name's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PictureFormat {
    /// Scalable vector graphics.
    Svg,
    /// A PNG bitmap.
    Png,
}

impl PictureFormat {
    /// The format of `path` (`.svg` or `.png`, in any case).
    pub fn of(path: &std::path::Path) -> Option<PictureFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "svg" => Some(PictureFormat::Svg),
            "png" => Some(PictureFormat::Png),
            _ => None,
        }
    }
}

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
/// RSS above its baseline after the same events; returns the picture's bytes.
pub fn chart(
    format: PictureFormat,
    title: &str,
    live: &[Sample],
    runs: &[(&str, &Report)],
) -> Result<Vec<u8>, ChartError> {
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
    lines(format, title, &series)
}

/// Draws lines of bytes over events, the first one black and thick; returns the picture's
/// bytes.
pub fn lines(format: PictureFormat, title: &str, series: &[Series]) -> Result<Vec<u8>, ChartError> {
    super::font::ensure().map_err(ChartError)?;
    match format {
        PictureFormat::Svg => {
            let mut s = String::new();
            {
                let root = SVGBackend::with_string(&mut s, SIZE).into_drawing_area();
                draw(&root, title, series)?;
                root.present().map_err(|e| ChartError(e.to_string()))?;
            }
            Ok(s.into_bytes())
        }
        PictureFormat::Png => {
            let mut buf = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
            {
                let root = BitMapBackend::with_buffer(&mut buf, SIZE).into_drawing_area();
                draw(&root, title, series)?;
                root.present().map_err(|e| ChartError(e.to_string()))?;
            }
            let mut png_bytes = Vec::new();
            {
                let mut enc = png::Encoder::new(&mut png_bytes, SIZE.0, SIZE.1);
                enc.set_color(png::ColorType::Rgb);
                enc.set_depth(png::BitDepth::Eight);
                let mut w = enc.write_header().map_err(|e| ChartError(e.to_string()))?;
                w.write_image_data(&buf)
                    .map_err(|e| ChartError(e.to_string()))?;
            }
            Ok(png_bytes)
        }
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    series: &[Series],
) -> Result<(), ChartError> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| ChartError(e.to_string());
    root.fill(&WHITE).map_err(err)?;
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
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("events")
        .y_desc("MiB")
        .y_label_formatter(&|v| format!("{v:.1}"))
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(err)?;
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
            .map_err(err)?
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
        .map_err(err)?;
    Ok(())
}
