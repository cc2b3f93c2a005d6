//! A snapshot's tables as text (the same for `simulate` and `replay`), and as JSON (feature
//! `json`; the fields `replay`'s serialised reports have).

use std::io::{self, Write};

use super::{ClassRow, Figures, Snapshot};

/// `part` of `whole` in percent, one decimal.
fn share(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// Writes the waste of `s` by size class (the `top` classes holding the most, in size order,
/// the others summed on one line) and its `top` sites, under the heading `title`, indented by
/// two spaces. `total` names what `s.total` is, `unattributed` what `s.unattributed` is.
pub fn write_snapshot(
    w: &mut dyn Write,
    title: &str,
    s: &Snapshot,
    top: usize,
    (total, unattributed): (&str, &str),
) -> io::Result<()> {
    let waste = s.waste();
    writeln!(
        w,
        "  {title}: {total} {} bytes, live {}, waste {waste} ({}); {unattributed} {}",
        s.total,
        s.live,
        share(waste, s.total),
        s.unattributed
    )?;
    if s.classes.is_empty() {
        return writeln!(w, "    no live blocks");
    }
    if s.page_size > 0 && s.pages == 0 && s.live > 0 {
        writeln!(
            w,
            "    no page holding live bytes is resident: the blocks were never written (--touch \
             writes them)"
        )?;
    }
    writeln!(
        w,
        "    {:<21} {:>11} {:>14} {:>12} {:>12} {:>12} {:>7}",
        "size class", "live blocks", "live bytes", "overhead", "stranded", "waste", "share"
    )?;
    let mut by_waste: Vec<&ClassRow> = s.classes.iter().collect();
    by_waste.sort_by(|a, b| {
        b.figures
            .waste()
            .cmp(&a.figures.waste())
            .then(a.lo.cmp(&b.lo))
    });
    let (shown, rest) = by_waste.split_at(top.min(by_waste.len()));
    let mut shown = shown.to_vec();
    shown.sort_by_key(|c| c.lo);
    // A replay cannot tell a block's overhead from the rest of its page (always 0): `-`.
    let pages = s.page_size > 0;
    let row = |w: &mut dyn Write, label: &str, f: &Figures| {
        let overhead = if pages {
            "-".to_string()
        } else {
            f.overhead.to_string()
        };
        writeln!(
            w,
            "    {:<21} {:>11} {:>14} {:>12} {:>12} {:>12} {:>7}",
            label,
            f.blocks,
            f.live,
            overhead,
            f.stranded,
            f.waste(),
            share(f.waste(), waste)
        )
    };
    for c in &shown {
        row(w, &format!("{}–{}", c.lo, c.hi), &c.figures)?;
    }
    if !rest.is_empty() {
        let mut other = Figures::default();
        for c in rest {
            other.add(&c.figures);
        }
        row(w, &format!("{} other classes", rest.len()), &other)?;
    }
    if s.sites.iter().all(|x| x.site.is_none()) {
        return writeln!(w, "    (the trace declares no allocation sites)");
    }
    writeln!(
        w,
        "    {:>12} {:>7} {:>14} {:>11}  top sites by waste",
        "waste", "share", "live bytes", "live blocks"
    )?;
    for x in s.sites.iter().take(top) {
        writeln!(
            w,
            "    {:>12} {:>7} {:>14} {:>11}  {}",
            x.figures.waste(),
            share(x.figures.waste(), waste),
            x.figures.live,
            x.figures.blocks,
            crate::escape::escape_for_terminal(&x.label())
        )?;
    }
    if s.sites.len() > top {
        writeln!(w, "    … {} more sites (--top N)", s.sites.len() - top)?;
    }
    Ok(())
}

/// `s` as JSON, with its `top` sites.
#[cfg(feature = "json")]
pub fn to_json(s: &Snapshot, top: usize) -> serde_json::Value {
    use serde_json::json;
    let fig = |f: &Figures| json!({"blocks": f.blocks, "live": f.live, "overhead": f.overhead, "stranded": f.stranded});
    let with = |mut v: serde_json::Value, f: &Figures| {
        if let (Some(o), serde_json::Value::Object(more)) = (v.as_object_mut(), fig(f)) {
            o.extend(more);
        }
        v
    };
    json!({
        "event": s.event,
        "total": s.total,
        "live": s.live,
        "unattributed": s.unattributed,
        "pages": s.pages,
        "page_size": s.page_size,
        "classes": s.classes.iter().map(|c| with(json!({"lo": c.lo, "hi": c.hi}), &c.figures)).collect::<Vec<_>>(),
        "sites": s.sites.iter().take(top).map(|x| with(json!({"space": x.space, "site": x.site, "name": x.name}), &x.figures)).collect::<Vec<_>>(),
    })
}
