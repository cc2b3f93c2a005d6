//! `mtf diff A B`: two traces' heap figures side by side, sorted by change.

use std::path::PathBuf;

use clap::Args;

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
    /// The cost stacks are compared by, where both traces have stacks (the per-stack deltas
    /// and the differential flame graph).
    #[cfg(feature = "flamegraph")]
    #[arg(long, value_enum, default_value_t = super::flamegraph::CostArg::Allocations)]
    pub cost: super::flamegraph::CostArg,
    /// Write a differential flame graph (SVG) instead of the figures: widths are B's, red a
    /// frame whose cost grew from A, blue one that shrank; with --folded, its input lines
    /// (`stack A B`).
    #[cfg(feature = "flamegraph")]
    #[arg(long)]
    pub flamegraph: bool,
    /// With --flamegraph: the folded lines instead of the picture.
    #[cfg(feature = "flamegraph")]
    #[arg(long, requires = "flamegraph")]
    pub folded: bool,
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
    if let Some(o) = args.output.as_deref().filter(|o| o.as_os_str() != "-") {
        super::common::guard_files(&[&args.a, &args.b], &[o])?;
    }
    let a = stats_with(&args.a, args.dtd_a.as_deref(), &each)?;
    let b = stats_with(&args.b, args.dtd_b.as_deref(), &each)?;
    #[cfg(feature = "flamegraph")]
    if args.flamegraph {
        return by_stack::picture(args, &a, &b);
    }
    let d = diff(&a, &b);
    #[allow(unused_mut)]
    let mut text = match args.format {
        StatsFormat::Json => {
            #[allow(unused_mut)]
            let mut v = d.to_json(args.top);
            #[cfg(feature = "flamegraph")]
            by_stack::add_json(args, &a, &b, &mut v);
            json_text(&v)
        }
        StatsFormat::Text => d.to_text(args.top),
    };
    #[cfg(feature = "flamegraph")]
    if args.format == StatsFormat::Text {
        by_stack::add_text(args, &a, &b, &mut text);
    }
    emit(args.output.as_deref(), &text)?;
    Ok(EXIT_OK)
}

/// Differences by stack, where both traces have stacks (extension stacks/1).
#[cfg(feature = "flamegraph")]
mod by_stack {
    use metatf::analysis::stats::Stats;
    use metatf::stacks::{
        write_diff_flamegraph, write_diff_folded, Cost, FlameOptions, FoldedOptions, StackDiff,
        StackProfile,
    };

    use metatf::command::UsageError;

    use super::super::common::{emit_bytes, usage_failure, Failure};
    use super::super::flamegraph::stacks_failure;
    use super::super::EXIT_OK;
    use super::DiffArgs;

    /// The profile a comparison takes of a trace: its first namespace with stacks, byte
    /// counts first (as `mtf flamegraph` chooses).
    fn profile(s: &Stats) -> Option<&StackProfile> {
        let with = || s.spaces.iter().filter_map(|x| x.stacks.as_ref());
        with().find(|p| p.sized).or_else(|| with().next())
    }

    fn both<'s>(a: &'s Stats, b: &'s Stats) -> Option<(&'s StackProfile, &'s StackProfile)> {
        Some((profile(a)?, profile(b)?))
    }

    /// The differential flame graph (or its folded lines).
    pub fn picture(args: &DiffArgs, a: &Stats, b: &Stats) -> Result<i32, Failure> {
        let Some((pa, pb)) = both(a, b) else {
            return Err(usage_failure(&UsageError::Stacks(
                "a differential flame graph needs stacks in both traces (extension stacks/1, docs/format.md §17)".into(),
            )));
        };
        let cost = Cost::from(args.cost);
        let leaf_site = pa.contexts && pb.contexts;
        let mut bytes = Vec::new();
        if args.folded {
            let opts = FoldedOptions {
                leaf_site,
                ..FoldedOptions::default()
            };
            write_diff_folded(pa, pb, cost, &opts, &mut bytes).map_err(stacks_failure)?;
        } else {
            let opts = FlameOptions {
                cost,
                subject: Some(format!(
                    "{} → {}",
                    metatf::io::input_name(&args.a),
                    metatf::io::input_name(&args.b)
                )),
                folded: FoldedOptions {
                    leaf_site,
                    ..FoldedOptions::default()
                },
                ..FlameOptions::default()
            };
            write_diff_flamegraph(pa, pb, &opts, &mut bytes).map_err(stacks_failure)?;
        }
        emit_bytes(args.output.as_deref(), &bytes)?;
        Ok(EXIT_OK)
    }

    fn stack_diff(a: &Stats, b: &Stats) -> Option<StackDiff> {
        let (pa, pb) = both(a, b)?;
        let opts = FoldedOptions {
            leaf_site: pa.contexts && pb.contexts,
            ..FoldedOptions::default()
        };
        Some(StackDiff::with(pa, pb, &opts))
    }

    /// Per-stack deltas after the figures.
    pub fn add_text(args: &DiffArgs, a: &Stats, b: &Stats, text: &mut String) {
        if let Some(d) = stack_diff(a, b) {
            let cost = Cost::from(args.cost);
            text.push_str(&format!("\nby stack ({})\n", cost.name()));
            text.push_str(&d.to_text(cost, args.top));
        }
    }

    /// Per-stack deltas as the document's `stacks` member.
    pub fn add_json(args: &DiffArgs, a: &Stats, b: &Stats, v: &mut serde_json::Value) {
        if let (Some(d), Some(o)) = (stack_diff(a, b), v.as_object_mut()) {
            o.insert("stacks".into(), d.to_json(Cost::from(args.cost), args.top));
        }
    }
}
