//! `mtf report`: one self-contained HTML page (no script, no external resource) with a trace's
//! summary, its tables and its charts as inline SVG.

use std::fmt::Write as _;

use super::plot::{chart_svg, height, human_bytes, Chart, PlotError};
use super::stats::{SiteOrder, SizeClass, SpaceSummary, Stats};

/// Text made safe for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() => {
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;\
margin:2em auto;max-width:1100px;color:#222;padding:0 1em}\
h1{font-size:1.5em;word-break:break-all}h2{margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:.5em 0 1.5em}\
td,th{padding:.2em .7em;border-bottom:1px solid #eee;text-align:right;vertical-align:top}\
th{background:#f4f4f4}td.l,th.l{text-align:left}td.l{overflow-wrap:anywhere;min-width:8em}.muted{color:#777}\
.kpi{display:inline-block;margin:0 1.5em 1em 0;padding:.6em 1em;background:#f4f8fc;\
border-radius:6px}.kpi b{display:block;font-size:1.4em}\
svg{max-width:100%;height:auto}.charts{display:flex;flex-wrap:wrap;gap:8px 2em;align-items:flex-start}";

fn kpi(o: &mut String, label: &str, value: &str, note: &str) {
    let _ = write!(
        o,
        "<div class=kpi>{}<b>{}</b><span class=muted>{}</span></div>",
        esc(label),
        esc(value),
        esc(note)
    );
}

fn class_table(o: &mut String, title: &str, classes: &[SizeClass], bytes: bool) {
    let _ = write!(
        o,
        "<table><tr><th class=l>{}</th><th>{}</th>{}</tr>",
        esc(title),
        if bytes { "allocations" } else { "freed blocks" },
        if bytes { "<th>bytes</th>" } else { "" }
    );
    for c in classes {
        let range = if c.lo == c.hi {
            c.lo.to_string()
        } else {
            format!("{}–{}", c.lo, c.hi)
        };
        let _ = write!(o, "<tr><td class=l>{range}</td><td>{}</td>", c.count);
        if bytes {
            let _ = write!(o, "<td>{}</td>", c.bytes);
        }
        o.push_str("</tr>");
    }
    o.push_str("</table>");
}

fn space(o: &mut String, s: &SpaceSummary, top: usize) -> Result<(), PlotError> {
    let _ = write!(o, "<h2>Namespace {}</h2>", esc(&s.name));
    kpis(o, s);
    figures(o, s);
    lifetimes(o, s);
    charts(o, s)?;
    if s.sized && !s.sizes.is_empty() {
        class_table(o, "allocation size (bytes)", &s.sizes, true);
    }
    if !s.lifetime_records.histogram.is_empty() {
        class_table(
            o,
            "lifetime (records)",
            &s.lifetime_records.histogram,
            false,
        );
    }
    sites(o, s, top);
    #[cfg(feature = "flamegraph")]
    flame_graphs(o, s);
    Ok(())
}

/// Where the bytes come from (extension stacks/1): flame graphs of the bytes live at the peak,
/// of the allocations and of what leaked, static (the page runs no script: a box's figures show
/// on hover, through its title).
#[cfg(feature = "flamegraph")]
fn flame_graphs(o: &mut String, s: &SpaceSummary) {
    use crate::stacks::{static_svg, write_flamegraph, Cost, FlameOptions, FoldedOptions};
    let Some(p) = &s.stacks else {
        return;
    };
    let mut costs = vec![Cost::Peak, Cost::Allocations];
    if p.total(Cost::Leaked) > 0 {
        costs.push(Cost::Leaked);
    }
    if !p.sized {
        costs.retain(|c| !c.is_bytes());
    }
    o.push_str("<h3>Where the bytes come from</h3><div class=charts>");
    for cost in costs {
        let opts = FlameOptions {
            cost,
            folded: FoldedOptions {
                leaf_site: p.contexts,
                ..FoldedOptions::default()
            },
            width: Some(1060),
            ..FlameOptions::default()
        };
        let mut svg = Vec::new();
        if write_flamegraph(p, &opts, &mut svg).is_ok() {
            o.push_str(&static_svg(&String::from_utf8_lossy(&svg)));
        }
    }
    o.push_str("</div>");
}

/// The key figures, as cards.
fn kpis(o: &mut String, s: &SpaceSummary) {
    if s.sized {
        kpi(
            o,
            "peak live bytes",
            &human_bytes(s.peak_bytes as f64),
            &format!("{} blocks, {}", s.peak_blocks, s.position(s.peak_at)),
        );
        kpi(
            o,
            "alive at the end",
            &human_bytes(s.live_bytes as f64),
            &format!("{} blocks", s.live_blocks),
        );
        kpi(
            o,
            "allocated",
            &human_bytes(s.bytes_allocated as f64),
            &format!("{} allocations", s.allocations),
        );
    } else {
        kpi(
            o,
            "most live blocks",
            &s.max_blocks.to_string(),
            &s.position(s.max_blocks_at),
        );
        kpi(o, "alive at the end", &s.live_blocks.to_string(), "blocks");
        kpi(o, "allocations", &s.allocations.to_string(), "");
    }
    let pct = if s.allocations > 0 {
        format!(
            "{:.1} % of allocations",
            s.temporary as f64 * 100.0 / s.allocations as f64
        )
    } else {
        String::new()
    };
    kpi(o, "temporary", &s.temporary.to_string(), &pct);
}

/// Every figure of the namespace, as a table.
fn figures(o: &mut String, s: &SpaceSummary) {
    o.push_str("<table>");
    let rows: Vec<(&str, String)> = vec![
        ("allocations", s.allocations.to_string()),
        ("bytes allocated", s.bytes_allocated.to_string()),
        ("frees", s.frees.to_string()),
        ("bytes freed", s.bytes_freed.to_string()),
        ("moves", s.moves.to_string()),
        (
            "peak live bytes",
            format!(
                "{} ({} blocks) at {}",
                s.peak_bytes,
                s.peak_blocks,
                s.position(s.peak_at)
            ),
        ),
        (
            "most live blocks",
            format!("{} at {}", s.max_blocks, s.position(s.max_blocks_at)),
        ),
        (
            "alive at the end",
            format!("{} bytes in {} blocks", s.live_bytes, s.live_blocks),
        ),
        ("temporary allocations", s.temporary.to_string()),
        ("frees of ids not alive", s.unknown_frees.to_string()),
        ("allocations of live ids", s.redefined.to_string()),
    ];
    for (k, v) in rows {
        let _ = write!(
            o,
            "<tr><th class=l>{}</th><td class=l>{}</td></tr>",
            esc(k),
            esc(&v)
        );
    }
    o.push_str("</table>");
}

/// The lifetime figures, in data records and, where there is a clock, in time.
fn lifetimes(o: &mut String, s: &SpaceSummary) {
    let unit = s.time_unit.as_deref();
    let _ = write!(
        o,
        "<table><tr><th class=l>lifetime</th><th>freed</th><th>mean</th><th>median</th>\
         <th>p99</th><th>max</th></tr>"
    );
    let mut life = |name: String, l: &super::stats::LifetimeSummary| {
        let _ = write!(
            o,
            "<tr><td class=l>{}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&name),
            l.count,
            l.mean,
            l.median,
            l.p99,
            l.max
        );
    };
    life("data records".into(), &s.lifetime_records);
    if let Some(l) = s.lifetime_time.as_ref().filter(|l| s.clock && l.max > 0) {
        life(format!("time ({})", unit.unwrap_or("declared unit")), l);
    }
    o.push_str("</table>");
}

/// The charts, inline SVG.
fn charts(o: &mut String, s: &SpaceSummary) -> Result<(), PlotError> {
    o.push_str("<div class=charts>");
    for chart in Chart::all_for(s) {
        let size = if chart.is_histogram() {
            (526, 340)
        } else {
            (1060, height(s, chart) - 20)
        };
        let svg = chart_svg(s, chart, size)?;
        // The SVG's own XML declaration is not allowed inside HTML.
        let svg = match svg.find("<svg") {
            Some(i) => &svg[i..],
            None => &svg[..],
        };
        o.push_str(svg);
    }
    o.push_str("</div>");
    Ok(())
}

/// The top sites in each order.
fn sites(o: &mut String, s: &SpaceSummary, top: usize) {
    if s.sites.iter().any(|x| x.site.is_some()) {
        for (title, order) in [
            ("Top sites by bytes at the peak", SiteOrder::Peak),
            (
                "Top sites by bytes alive at the end (leaked)",
                SiteOrder::Leaked,
            ),
            ("Top sites by bytes allocated", SiteOrder::Allocated),
        ] {
            let _ = write!(
                o,
                "<h3>{}</h3><table><tr><th class=l>site</th><th>bytes at the peak</th>\
                 <th>blocks at the peak</th><th>bytes leaked</th><th>blocks leaked</th>\
                 <th>bytes allocated</th><th>allocations</th><th>temporary</th></tr>",
                esc(title)
            );
            if s.top_sites(order, 1).next().is_none() {
                o.push_str("<tr><td class=l colspan=8>(none)</td></tr>");
            }
            for x in s.top_sites(order, top) {
                let name = match (&x.name, x.site) {
                    (Some(n), Some(id)) => format!("{n} [{id}]"),
                    (Some(n), None) => n.clone(),
                    (None, Some(id)) => format!("site {id}"),
                    (None, None) => "(no site)".into(),
                };
                let _ = write!(
                    o,
                    "<tr><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                     <td>{}</td><td>{}</td><td>{}</td></tr>",
                    esc(&name),
                    x.peak_bytes,
                    x.peak_blocks,
                    x.leaked_bytes,
                    x.leaked_blocks,
                    x.bytes_allocated,
                    x.allocations,
                    x.temporary
                );
            }
            o.push_str("</table>");
        }
    }
}

/// The page for a trace named `trace` (shown as given, escaped).
pub fn html(trace: &str, stats: &Stats, top: usize) -> Result<String, PlotError> {
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>\
         <meta name=viewport content='width=device-width,initial-scale=1'>\
         <title>{} — mtf report</title><style>{STYLE}</style></head><body>",
        esc(trace)
    );
    let _ = write!(o, "<h1>{}</h1>", esc(trace));
    let slice = if stats.window.is_all() {
        format!("{} data records", stats.records)
    } else {
        format!(
            "data records {} to {} ({} data records)",
            stats.start.record, stats.end.record, stats.records
        )
    };
    let _ = write!(o, "<p>{}", esc(&slice));
    if stats.problems > 0 {
        let _ = write!(
            o,
            ". <b>{} problem(s)</b> while decoding: the figures cover what could be decoded \
             (<code>mtf check</code> lists them)",
            stats.problems
        );
    }
    o.push_str(".</p>");
    let shown = stats.shown_spaces();
    if stats.spaces.is_empty() {
        o.push_str("<p>The trace's DTD declares no namespaces of ids: no heap figures.</p>");
    } else if shown.is_empty() {
        o.push_str("<p>No allocations in the slice.</p>");
    }
    for s in &shown {
        space(&mut o, s, top)?;
    }
    let hidden = stats.hidden_spaces();
    if !shown.is_empty() && !hidden.is_empty() {
        let names: Vec<String> = hidden.iter().map(|s| esc(&s.name)).collect();
        let _ = write!(
            o,
            "<p class=muted>Not shown, no bytes allocated: namespace{} {} \
             (<code>mtf stats -f json</code> has every namespace).</p>",
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        );
    }
    o.push_str(
        "<h2>Records per type</h2><table><tr><th class=l>record</th><th class=l>section</th>\
         <th>count</th><th class=l>field</th><th>min</th><th>max</th><th>sum</th></tr>",
    );
    for t in &stats.types {
        let _ = write!(
            o,
            "<tr><td class=l>{}</td><td class=l>{}</td><td>{}</td><td></td><td></td><td></td>\
             <td></td></tr>",
            esc(&t.name),
            esc(&t.section),
            t.count
        );
        for f in &t.fields {
            let _ = write!(
                o,
                "<tr class=muted><td></td><td></td><td></td><td class=l>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td></tr>",
                esc(&f.name),
                f.min,
                f.max,
                // A sum of ids, times or threads means nothing (docs/stats.md).
                if f.summable {
                    f.sum.to_string()
                } else {
                    String::new()
                }
            );
        }
    }
    o.push_str("</table><p class=muted>Made by mtf report (metatf).</p></body></html>\n");
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(esc("a\u{1b}b"), "a\\u{1b}b");
    }
}
