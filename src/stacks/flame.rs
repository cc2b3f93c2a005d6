//! SVG flame graphs of a stack profile, drawn by inferno (flamegraph.pl's port) from the folded
//! stacks (feature `flamegraph`; docs/stacks.md, *Flame graphs*).

use std::io::Write;

use inferno::flamegraph::{self, color, Direction, Options, TextTruncateDirection};

use super::{
    diff_folded_lines, folded_lines, human, Cost, FoldedOptions, StackProfile, StacksError,
};

/// How a flame graph is drawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlameOptions {
    /// The cost the widths are of.
    pub cost: Cost,
    /// The title; `None`: the cost's (`Allocations by stack`, `Bytes live at the peak by
    /// stack`, …).
    pub title: Option<String>,
    /// What the graph is of (the trace's name, `before → after`), shown under the title with
    /// the total.
    pub subject: Option<String>,
    /// How stacks are written: `reverse` puts the allocating functions at the base (who calls
    /// them above), `leaf_site` adds the site as the innermost frame. `merge` and `heaptrack`
    /// are not used: a flame graph merges equal stacks and shows frames in call order.
    pub folded: FoldedOptions,
    /// Drawn from the top down (an icicle graph), as suits a reversed one.
    pub inverted: bool,
    /// The width in pixels; `None`: as wide as the window showing it.
    pub width: Option<usize>,
    /// In a differential graph, the widths are the first profile's (`before`), so that what
    /// shrank or vanished stays visible; the colours still show the change from `before` to
    /// `after`. Otherwise they are `after`'s, as flamegraph.pl draws them.
    pub widths_before: bool,
}

impl Default for FlameOptions {
    fn default() -> Self {
        FlameOptions {
            cost: Cost::Allocations,
            title: None,
            subject: None,
            folded: FoldedOptions::default(),
            inverted: false,
            width: None,
            widths_before: false,
        }
    }
}

/// The default title of a flame graph of a cost.
fn title(cost: Cost, diff: bool, reverse: bool) -> String {
    let what = match cost {
        Cost::Allocations => "Allocations",
        Cost::Bytes => "Bytes allocated",
        Cost::Temporary => "Temporary allocations",
        Cost::Peak => "Bytes live at the peak",
        Cost::Leaked => "Bytes leaked",
    };
    let order = if reverse {
        ", allocating functions first"
    } else {
        ""
    };
    if diff {
        format!("{what} by stack{order}: differences")
    } else {
        format!("{what} by stack{order}")
    }
}

/// inferno's options for ours.
fn inferno_options(opts: &FlameOptions, subtitle: String, diff: bool) -> Options<'static> {
    let mut o = Options::default();
    o.title = opts
        .title
        .clone()
        .unwrap_or_else(|| title(opts.cost, diff, opts.folded.reverse));
    o.subtitle = Some(subtitle);
    o.count_name = opts.cost.noun().into();
    o.name_type = "Frame:".into();
    // flamegraph.pl's palette for memory (greens); a differential graph is coloured by the
    // change (red: more after, blue: less) whatever the palette.
    o.colors = color::Palette::Basic(color::BasicPalette::Mem);
    if diff {
        o.bgcolors = Some(color::BackgroundColor::Grey);
    }
    o.hash = true;
    o.direction = if opts.inverted {
        Direction::Inverted
    } else {
        Direction::Straight
    };
    o.image_width = opts.width;
    // A frame reads `function (file)`: a narrow box keeps the function's start, not the file.
    o.text_truncate_direction = TextTruncateDirection::Right;
    o
}

/// The folded options a flame graph is drawn from.
fn folded(opts: &FlameOptions) -> FoldedOptions {
    FoldedOptions {
        merge: true,
        heaptrack: false,
        ..opts.folded
    }
}

/// A count for inferno, which takes 64 bits (no trace reaches beyond).
fn count(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

fn subtitle(opts: &FlameOptions, total: String) -> String {
    match &opts.subject {
        Some(s) => format!("{s}: {total}"),
        None => total,
    }
}

/// `15 allocations in 3 stacks`, `71.9 KiB (73660 bytes) in 3 stacks`.
fn total_label(cost: Cost, v: u128, stacks: usize) -> String {
    let figure = if cost.is_bytes() && v >= 1024 {
        format!("{} ({v} bytes)", human::figure(cost, v))
    } else if cost.is_bytes() {
        format!("{v} bytes")
    } else {
        format!("{v} {}", cost.noun())
    };
    format!(
        "{figure} in {stacks} stack{}",
        if stacks == 1 { "" } else { "s" }
    )
}

/// Draws a profile's flame graph as SVG.
///
/// Fails with [`StacksError::Empty`] when no stack has a cost (an empty picture would say
/// nothing), and with [`StacksError::Write`] when `out` cannot be written.
pub fn write_flamegraph(
    profile: &StackProfile,
    opts: &FlameOptions,
    out: &mut dyn Write,
) -> Result<(), StacksError> {
    let lines = folded_lines(profile, opts.cost, &folded(opts));
    if lines.is_empty() {
        return Err(StacksError::Empty {
            cost: opts.cost.name(),
        });
    }
    let total: u128 = lines.iter().map(|l| l.1).sum();
    let text: Vec<String> = lines
        .iter()
        .map(|(stack, v)| format!("{stack} {}", count(*v)))
        .collect();
    let mut total = total_label(opts.cost, total, lines.len());
    let suppressed = profile.suppressed_leaked();
    if opts.cost == Cost::Leaked && suppressed > 0 {
        total.push_str(&format!(
            "; {suppressed} bytes leaked under a leak suppression not drawn"
        ));
    }
    let mut o = inferno_options(opts, subtitle(opts, total), false);
    flamegraph::from_lines(&mut o, text.iter().map(String::as_str), out)
        .map_err(StacksError::write("flame graph"))
}

/// Draws the differential flame graph of two profiles as SVG: the widths are the second
/// profile's (`after`), a frame's colour the change of its cost from the first (red: grew,
/// blue: shrank, the deeper the larger the change), as flamegraph.pl's differential graphs.
/// A stack only in `before` has no width then; its loss shows in the totals under the title,
/// and in the picture with [`FlameOptions::widths_before`].
pub fn write_diff_flamegraph(
    before: &StackProfile,
    after: &StackProfile,
    opts: &FlameOptions,
    out: &mut dyn Write,
) -> Result<(), StacksError> {
    let lines = diff_folded_lines(before, after, opts.cost, &folded(opts));
    let (b, a) = lines
        .iter()
        .fold((0u128, 0u128), |(x, y), l| (x + l.1, y + l.2));
    if (if opts.widths_before { b } else { a }) == 0 {
        return Err(StacksError::Empty {
            cost: opts.cost.name(),
        });
    }
    let text: Vec<String> = lines
        .iter()
        .map(|(stack, x, y)| {
            // inferno takes the widths from the second count; with the counts swapped, negated
            // differences keep red for growth.
            let (x, y) = if opts.widths_before { (y, x) } else { (x, y) };
            format!("{stack} {} {}", count(*x), count(*y))
        })
        .collect();
    let cost = opts.cost;
    let total = format!(
        "{} before, {} after ({})",
        human::figure(cost, b),
        human::figure(cost, a),
        human::delta(
            cost,
            i128::try_from(a).unwrap_or(i128::MAX) - i128::try_from(b).unwrap_or(i128::MAX)
        ),
    );
    let widths = if opts.widths_before {
        "; widths: before"
    } else {
        "; widths: after"
    };
    let mut o = inferno_options(opts, subtitle(opts, format!("{total}{widths}")), true);
    o.negate_differentials = opts.widths_before;
    flamegraph::from_lines(&mut o, text.iter().map(String::as_str), out)
        .map_err(StacksError::write("flame graph"))
}

/// A flame graph made static, for a page that runs no script (`mtf report`): the `<svg>`
/// element alone (no XML prologue or comments), without its script, its event handlers, the
/// namespaces they use, and the controls that need them (search, zoom, details). Each box keeps
/// its `<title>`, which a browser shows on hover.
pub fn static_svg(svg: &str) -> String {
    let mut s = match svg.find("<svg") {
        Some(i) => svg[i..].to_string(),
        None => svg.to_string(),
    };
    let cut = |s: &mut String, open: &str, close: &str| {
        while let Some(a) = s.find(open) {
            let from = a + open.len();
            match s[from..].find(close) {
                Some(b) => s.replace_range(a..from + b + close.len(), ""),
                None => break,
            }
        }
    };
    cut(&mut s, "<!--", "-->");
    cut(&mut s, "<script", "</script>");
    for id in ["details", "unzoom", "search", "matched"] {
        cut(&mut s, &format!("<text id=\"{id}\""), "</text>");
    }
    for attr in [" onload=\"", " xmlns:xlink=\"", " xmlns:fg=\""] {
        cut(&mut s, attr, "\"");
    }
    // The frames' own attributes in inferno's namespace, which only its script reads.
    for attr in [" fg:x=\"", " fg:w=\""] {
        cut(&mut s, attr, "\"");
    }
    // The background's gradient by reference (`url(#background)`) becomes its first colour:
    // several graphs in one page would share one id.
    let colour = s
        .split_once("stop-color=\"")
        .and_then(|(_, r)| r.split_once('"'))
        .map(|(c, _)| c.to_string())
        .unwrap_or_else(|| "#eeeeee".into());
    cut(&mut s, "<defs>", "</defs>");
    s = s.replace("url(#background)", &colour);
    scope_style(&mut s);
    s
}

/// Its style rules made to apply to this picture only (`svg.flame …`), so that a page holding
/// it keeps its own fonts elsewhere.
fn scope_style(s: &mut String) {
    let (Some(a), Some(b)) = (s.find("<style"), s.find("</style>")) else {
        return;
    };
    let Some(open) = s[a..b].find('>').map(|i| a + i + 1) else {
        return;
    };
    let rules: String = s[open..b]
        .lines()
        .map(|line| match line.split_once('{') {
            Some((sel, rest)) => {
                let sel: Vec<String> = sel
                    .split(',')
                    .map(|x| format!("svg.flame {}", x.trim()))
                    .collect();
                format!("{} {{{rest}\n", sel.join(", "))
            }
            None => format!("{line}\n"),
        })
        .collect();
    s.replace_range(open..b, &rules);
    if let Some(i) = s.find("<svg") {
        s.insert_str(i + 4, " class=\"flame\"");
    }
}

#[cfg(test)]
mod tests {
    use super::super::folded::tests::inlined;
    use super::super::tree::tests::sample;
    use super::*;

    fn svg(p: &StackProfile, opts: &FlameOptions) -> String {
        let mut out = Vec::new();
        write_flamegraph(p, opts, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Every element of the document closes: a check that it is XML without an XML parser.
    fn well_formed(s: &str) {
        assert!(s.starts_with("<?xml"), "{}", &s[..s.len().min(200)]);
        let mut stack: Vec<String> = Vec::new();
        let mut rest = s;
        while let Some(i) = rest.find('<') {
            rest = &rest[i + 1..];
            if rest.starts_with("?") || rest.starts_with("!") {
                let end = if rest.starts_with("![CDATA[") {
                    rest.find("]]>").unwrap() + 3
                } else {
                    rest.find('>').unwrap() + 1
                };
                rest = &rest[end..];
                continue;
            }
            let end = rest.find('>').unwrap();
            let tag = &rest[..end];
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(
                    stack.pop().as_deref(),
                    Some(name.trim()),
                    "unbalanced </{name}>"
                );
            } else if !tag.ends_with('/') {
                let name = tag.split_whitespace().next().unwrap().to_string();
                stack.push(name);
            }
            rest = &rest[end + 1..];
        }
        assert!(stack.is_empty(), "unclosed: {stack:?}");
    }

    #[test]
    fn a_flame_graph_names_every_frame_and_its_unit() {
        let p = inlined();
        let opts = FlameOptions {
            cost: Cost::Leaked,
            subject: Some("inlined.zst".into()),
            ..FlameOptions::default()
        };
        let s = svg(&p, &opts);
        well_formed(&s);
        assert!(s.contains("Bytes leaked by stack"));
        assert!(
            s.contains("inlined.zst: 528 bytes in 2 stacks"),
            "{}",
            &s[..3000]
        );
        for f in [
            "main (inlined.c)",
            "not_inlined (inlined.c)",
            "outer_inline (inlined.c)",
            "inner_inline (inlined.c)",
            "_start",
            "__libc_start_main_impl (libc-start.c)",
        ] {
            assert!(s.contains(&format!("<title>{f} (")), "{f}");
        }
        assert!(s.contains("320 bytes"), "counts in bytes");
        // The rtld stack leaked nothing: not drawn.
        assert!(!s.contains("rtld.c"));
        let s = svg(&p, &FlameOptions::default());
        assert!(
            s.contains("<title>0x7f00fdca57b9 (1 allocations"),
            "counts in allocations"
        );
    }

    #[test]
    fn reversed_and_inverted() {
        let p = sample();
        let opts = FlameOptions {
            folded: FoldedOptions {
                reverse: true,
                ..FoldedOptions::default()
            },
            inverted: true,
            ..FlameOptions::default()
        };
        let s = svg(&p, &opts);
        well_formed(&s);
        // `b` is a base frame: 7 of the 11 allocations.
        assert!(
            s.contains("<title>b (7 allocations, 63.64%)</title>"),
            "{s}"
        );
    }

    #[test]
    fn a_differential_graph_colours_growth_and_shrink() {
        let a = sample();
        let mut b = sample();
        b.leaves[0].costs.allocations = 30; // main;a;b grows
        b.leaves[3].costs.allocations = 1; // main;b shrinks
        let mut out = Vec::new();
        write_diff_flamegraph(&a, &b, &FlameOptions::default(), &mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        well_formed(&s);
        assert!(s.contains("Allocations by stack: differences"));
        // flamegraph.pl colours a stack's innermost frame by its change.
        let fill = |at: usize| {
            let rest = &s[at..];
            let i = rest.find("fill=\"rgb(").unwrap();
            let rgb: Vec<u32> = rest[i + 10..]
                .split(')')
                .next()
                .unwrap()
                .split(',')
                .map(|x| x.trim().parse().unwrap())
                .collect();
            (rgb[0], rgb[2])
        };
        // main;a;b grew (30 of 3), main;b shrank (1 of 4); main;r did not change.
        let (red, blue) = fill(s.find("<title>b (30 allocations").unwrap());
        assert!(red > blue, "growth is red: {red} {blue}");
        let (red, blue) = fill(s.find("<title>b (1 allocations").unwrap());
        assert!(blue > red, "shrink is blue: {red} {blue}");
        assert_eq!(fill(s.find("<title>r (").unwrap()), (250, 250));
    }

    #[test]
    fn suppressed_leaks_are_named_under_the_title() {
        let mut p = inlined();
        p.leaves[1].suppressed = true;
        let opts = FlameOptions {
            cost: Cost::Leaked,
            ..FlameOptions::default()
        };
        let s = svg(&p, &opts);
        assert!(
            s.contains("208 bytes in 1 stack; 320 bytes leaked under a leak suppression not drawn")
        );
        assert!(!s.contains("not_inlined"));
    }

    #[test]
    fn nothing_to_draw_is_an_error() {
        let p = sample();
        let opts = FlameOptions {
            cost: Cost::Peak,
            ..FlameOptions::default()
        };
        let mut out = Vec::new();
        let e = write_flamegraph(&p, &opts, &mut out).unwrap_err();
        assert!(e.to_string().contains("no stack has a cost of peak"), "{e}");
    }

    #[test]
    fn a_static_flame_graph_has_no_script_and_scoped_style() {
        let p = super::super::folded::tests::inlined();
        let mut svg = Vec::new();
        write_flamegraph(&p, &FlameOptions::default(), &mut svg).unwrap();
        let s = static_svg(&String::from_utf8(svg).unwrap());
        assert!(
            s.starts_with("<svg class=\"flame\" version=\"1.1\""),
            "{}",
            &s[..80]
        );
        for gone in [
            "<script",
            "onload",
            "xmlns:xlink",
            "fg:x=",
            "<!--",
            "id=\"search\"",
            "url(",
        ] {
            assert!(!s.contains(gone), "{gone} left in the static SVG");
        }
        assert!(s.contains("svg.flame text {") && s.contains("<title>"));
        assert!(s.ends_with("</svg>"));
    }
}
