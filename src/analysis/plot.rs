//! Pictures of a trace's heap statistics (`mtf plot`, `mtf report`): live bytes and live
//! blocks over the trace with the peak marked, the allocation size histogram, the lifetime
//! histogram and the top sites, drawn with plotters as SVG or PNG.
//!
//! The format, the error, the bundled font and the PNG encoding are [`crate::picture`]'s, shared
//! with `mtf replay`'s pictures; PNG text is laid out here (`plot/text.rs`).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::stats::{SiteOrder, SpaceSummary, Stats};

pub use crate::picture::PlotError;
use crate::picture::{draw_err, FONT};

/// Registers the bundled font; were it not valid (a unit test draws with it), text would be
/// left out rather than the process stopped.
fn register_font() {
    let _ = crate::picture::register_font();
}

mod axis;
mod charts;
#[cfg(test)]
mod tests;
mod text;

pub use super::stats::human_bytes;
pub use axis::{human_count, nice_step, range_ticks, value_ticks, KeyAxis, Ticks};
pub use charts::curve_span;
use charts::{curve, histogram, sites, Hist};

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

// The palette (plotters' prelude has colours of these names too: `charts.rs` imports these by
// name).
const BLUE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const LIGHT_BLUE: RGBColor = RGBColor(0xae, 0xc7, 0xe8);
const ORANGE: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
const GREEN: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
const TEAL: RGBColor = RGBColor(0x17, 0xbe, 0xcf);
const PURPLE: RGBColor = RGBColor(0x94, 0x67, 0xbd);
const RED: RGBColor = RGBColor(0xd6, 0x27, 0x28);

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

/// Why no namespace can be drawn.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[non_exhaustive]
pub enum NamespaceError {
    /// The namespace asked for is not declared.
    #[error("no namespace `{name}` in this trace's DTD (it declares: {known})")]
    #[diagnostic(code(mtf::usage::namespace))]
    Unknown {
        /// The name asked for, escaped for a terminal.
        name: String,
        /// The namespaces declared, comma-separated, or `none`.
        known: String,
    },
    /// The DTD declares no namespaces.
    #[error("nothing to plot: the trace's DTD declares no namespaces of ids (allocations)")]
    #[diagnostic(code(mtf::usage::namespace))]
    None,
}

/// The namespace a picture shows: the one named, else the first with content
/// ([`Stats::shown_spaces`]), else the first with sizes, else the first.
pub fn pick_space<'s>(
    stats: &'s Stats,
    name: Option<&str>,
) -> Result<&'s SpaceSummary, NamespaceError> {
    match name {
        Some(n) => stats.spaces.iter().find(|s| s.name == n).ok_or_else(|| {
            let known: Vec<&str> = stats.spaces.iter().map(|s| s.name.as_str()).collect();
            NamespaceError::Unknown {
                name: crate::escape::escape_for_terminal(n).into_owned(),
                known: if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                },
            }
        }),
        None => stats
            .shown_spaces()
            .first()
            .copied()
            .or(stats.spaces.iter().find(|s| s.sized))
            .or(stats.spaces.first())
            .ok_or(NamespaceError::None),
    }
}

/// The picture of namespace `s` in `format`: an SVG document's or a PNG file's bytes.
pub fn picture(
    title: &str,
    s: &SpaceSummary,
    width: u32,
    format: crate::picture::PictureFormat,
) -> Result<Vec<u8>, PlotError> {
    match format {
        crate::picture::PictureFormat::Svg => svg(title, s, width).map(String::into_bytes),
        crate::picture::PictureFormat::Png => png(title, s, width),
    }
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
    crate::picture::encode_png(&rgb, w, h)
}
