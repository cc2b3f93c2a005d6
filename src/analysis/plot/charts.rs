//! The charts: live bytes or blocks over the trace, the log2 histograms, the top sites.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::{class_text, range_ticks, value_ticks, KeyAxis};
use super::{BLUE, LIGHT_BLUE, ORANGE, RED, SITES};
use crate::analysis::stats::{
    class_bounds, human_bytes, CurveBucket, SiteOrder, SiteSummary, SizeClass, SpaceSummary,
};
use crate::picture::{draw_err, PlotError};

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

pub(super) fn curve<DB: DrawingBackend>(
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

/// What a histogram counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Hist {
    SizeCount,
    SizeBytes,
    Lifetime,
}

pub(super) fn histogram<DB: DrawingBackend>(
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

pub(super) fn class_index(lo: u64) -> usize {
    (64 - lo.leading_zeros()) as usize
}

pub(super) fn sites<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &SpaceSummary,
) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let top: Vec<_> = s.top_sites(SiteOrder::Peak, SITES).collect();
    let n = top.len().max(1);
    let value = |x: &SiteSummary| {
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
