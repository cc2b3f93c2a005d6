//! `mtf diff A B`: two traces' heap figures side by side, sorted by change.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;

use metatf::analysis::diff::{Diff, Pair};
use metatf::command::diff::{diff, DiffOptions};

use super::common::{emit, json_text, stats_with, usage_failure, Failure, SliceArgs, StatsFormat};
use super::EXIT_OK;

/// Arguments of `mtf diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The base trace (`-` for standard input).
    pub a: PathBuf,
    /// The trace compared with it.
    pub b: PathBuf,
    /// The DTD of A, instead of the one its header names.
    #[arg(long, value_name = "DTD")]
    pub dtd_a: Option<PathBuf>,
    /// The DTD of B, instead of the one its header names.
    #[arg(long, value_name = "DTD")]
    pub dtd_b: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = StatsFormat::Text)]
    pub format: StatsFormat,
    /// Sites and size classes listed.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Write to this file instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// The same slice of both traces.
    #[command(flatten)]
    pub slice: SliceArgs,
}

/// Run `mtf diff`.
pub fn run(args: &DiffArgs) -> Result<i32, Failure> {
    let options = DiffOptions {
        slice: args.slice.slice(),
    };
    let each = options
        .check(&args.a, &args.b)
        .map_err(|e| usage_failure(&e))?;
    let a = stats_with(&args.a, args.dtd_a.as_deref(), &each)?;
    let b = stats_with(&args.b, args.dtd_b.as_deref(), &each)?;
    let d = diff(&a, &b);
    let text = match args.format {
        StatsFormat::Json => json_text(&d.to_json(args.top)),
        StatsFormat::Text => render(&d, args.top),
    };
    emit(args.output.as_deref(), &text)?;
    Ok(EXIT_OK)
}

fn delta(p: &Pair) -> String {
    let d = p.delta();
    let rel = if p.a == 0 {
        String::new()
    } else {
        format!(" ({:+.1} %)", d as f64 * 100.0 / p.a as f64)
    };
    format!("{d:+}{rel}")
}

/// The text form.
pub fn render(d: &Diff, top: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{:<32} {:>16} {:>16}  change", "", "A (base)", "B");
    let _ = writeln!(
        o,
        "{:<32} {:>16} {:>16}  {}",
        "data records",
        d.records.a,
        d.records.b,
        delta(&d.records)
    );
    if d.spaces.is_empty() && d.only_a.is_empty() && d.only_b.is_empty() {
        let _ = writeln!(
            o,
            "\nno allocations in either trace: no namespace to compare"
        );
    }
    for n in &d.only_a {
        let _ = writeln!(o, "namespace {n}: only in A");
    }
    for n in &d.only_b {
        let _ = writeln!(o, "namespace {n}: only in B");
    }
    for s in &d.spaces {
        if s.name_a == s.name_b {
            let _ = writeln!(o, "\nnamespace {}", s.name_a);
        } else {
            let _ = writeln!(o, "\nnamespace {} (A) / {} (B)", s.name_a, s.name_b);
        }
        for (n, p) in &s.figures {
            let _ = writeln!(
                o,
                "  {:<30} {:>16} {:>16}  {}",
                n.replace('_', " "),
                p.a,
                p.b,
                delta(p)
            );
        }
        if s.sites.iter().any(|x| x.change() > 0) {
            let _ = writeln!(o, "\n  sites by change (bytes: A → B)");
            let _ = writeln!(
                o,
                "    {:>24} {:>24} {:>24}  site",
                "at the peak", "leaked", "allocated"
            );
            for x in s.sites.iter().filter(|x| x.change() > 0).take(top) {
                let ab = |p: &Pair| format!("{} → {}", p.a, p.b);
                let _ = writeln!(
                    o,
                    "    {:>24} {:>24} {:>24}  {}",
                    ab(&x.peak),
                    ab(&x.leaked),
                    ab(&x.allocated),
                    metatf::escape::escape_for_terminal(&x.label)
                );
            }
        }
        if s.sizes.iter().any(|c| c.count.delta() != 0) {
            let _ = writeln!(o, "\n  size classes by change (allocations)");
            for c in s.sizes.iter().filter(|c| c.count.delta() != 0).take(top) {
                let class = if c.lo == c.hi {
                    c.lo.to_string()
                } else {
                    format!("{}–{}", c.lo, c.hi)
                };
                let _ = writeln!(
                    o,
                    "    {:<22} {:>16} {:>16}  {}",
                    class,
                    c.count.a,
                    c.count.b,
                    delta(&c.count)
                );
            }
        }
    }
    o
}
