//! `mtf stats TRACE`: records per type, integer fields, and per namespace the heap figures
//! (peak live bytes and when, totals, leaks, temporary allocations, lifetimes, sizes, top sites).

use std::path::PathBuf;

use clap::Args;

use metatf::command::stats::StatsOptions;

use super::common::{emit, json_text, stats_with, Failure, SeekArgs, SliceArgs, StatsFormat};
use super::EXIT_OK;

/// Arguments of `mtf stats`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The trace (`-` for standard input; pipes and compressed traces too).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = StatsFormat::Text)]
    pub format: StatsFormat,
    /// Sites listed per ranking.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    /// Only the state at the peak: live bytes and blocks by site.
    #[arg(long, conflicts_with = "at")]
    pub at_peak: bool,
    /// Only the state just before this data record (`1234`) or declared time (`t1234`): live
    /// bytes and blocks by site (with a seek index carrying the analysis state, read from the
    /// checkpoint before it).
    #[arg(long, value_name = "RECORD|tTIME", conflicts_with_all = ["from", "to"])]
    pub at: Option<metatf::analysis::stats::Bound>,
    /// The figures by allocation site (default), or by call stack or calling context (where
    /// the trace's DTD declares stacks: extension stacks/1) as a tree (--tree).
    #[cfg(feature = "flamegraph")]
    #[arg(long, value_enum, default_value_t = By::Site)]
    pub by: By,
    #[cfg(feature = "flamegraph")]
    #[command(flatten)]
    pub stacks: by_stack::StackArgs,
    /// Write to this file instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// The slice.
    #[command(flatten)]
    pub slice: SliceArgs,
    #[command(flatten)]
    pub jobs: super::jobs::JobsArgs,
    /// The seek index whose checkpoints cut the trace for `-j`.
    #[command(flatten)]
    pub seek: SeekArgs,
}

/// Run `mtf stats`.
pub fn run(args: &StatsArgs) -> Result<i32, Failure> {
    // An empty slice is refused before the trace is opened.
    args.slice.window()?;
    let options = StatsOptions {
        slice: args.slice.slice(),
        jobs: args.jobs.jobs(),
        seek: args.seek.options(),
        at: args.at,
        at_peak: args.at_peak,
        ..StatsOptions::default()
    };
    #[cfg(feature = "flamegraph")]
    if args.by == By::Stack {
        return by_stack::run(args, options);
    }
    let stats = stats_with(&args.trace, args.dtd.as_deref(), &options)?;
    if args.at.is_some() {
        let text = match args.format {
            StatsFormat::Json => json_text(&stats.at_moment_json(args.top)),
            StatsFormat::Text => stats.at_moment_text(args.top),
        };
        emit(args.output.as_deref(), &text)?;
        return Ok(EXIT_OK);
    }
    let text = match (args.format, args.at_peak) {
        (StatsFormat::Json, false) => json_text(&stats.to_json(args.top)),
        (StatsFormat::Json, true) => json_text(&stats.at_peak_json(args.top)),
        (StatsFormat::Text, false) => stats.to_text(args.top),
        (StatsFormat::Text, true) => stats.at_peak_text(args.top),
    };
    emit(args.output.as_deref(), &text)?;
    Ok(EXIT_OK)
}

/// What `mtf stats` attributes figures to.
#[cfg(feature = "flamegraph")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    /// Allocation sites (the site the DTD declares: a call-stack id, a class).
    Site,
    /// Call stacks or calling contexts, as a tree.
    Stack,
}

/// `mtf stats --by stack`: a top-down or bottom-up tree, or caller/callee figures per function.
#[cfg(feature = "flamegraph")]
mod by_stack {
    use metatf::command::stacks::{Moment, StackOptions};
    use metatf::command::stats::StatsOptions;
    use metatf::stacks::{CallerCallee, Cost, Merge, Tree, TreeKind, TreeOptions, TreeView};

    use super::super::common::{emit, json_text, stacks_with, Failure, StatsFormat};
    use super::super::flamegraph::{CostArg, YesNo};
    use super::super::EXIT_OK;
    use super::StatsArgs;

    /// Which view of the stacks.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
    pub enum TreeArg {
        /// From the roots to the allocating functions, with inclusive and self costs.
        TopDown,
        /// From the allocating functions to their callers (who calls an allocation function).
        BottomUp,
        /// Per function: its own cost, its inclusive cost, its callers and callees.
        Callers,
    }

    /// The options of `--by stack`.
    #[derive(Debug, Clone, clap::Args)]
    pub struct StackArgs {
        /// With --by stack: the view.
        #[arg(long, value_enum, default_value_t = TreeArg::TopDown)]
        pub tree: TreeArg,
        /// With --by stack: rows sorted by this cost (every cost is shown in JSON).
        #[arg(long, value_enum, default_value_t = CostArg::Allocations)]
        pub cost: CostArg,
        /// With --by stack: at most N frames of each stack (from the root, or from the leaf
        /// bottom-up); deeper frames' costs stay in the deepest row shown.
        #[arg(long, value_name = "N")]
        pub depth: Option<usize>,
        /// With --by stack: one row per function (and module) or per address.
        #[arg(long, value_name = "function|address", default_value = "function")]
        pub merge: Merge,
        /// With --by stack: rows below this percentage of the total are left out.
        #[arg(long, value_name = "PERCENT", default_value_t = 0.0)]
        pub threshold: f64,
        /// With --by stack: the allocation site's name as the innermost frame (default: on
        /// where stacks are calling contexts).
        #[arg(long, value_name = "yes|no")]
        pub leaf_site: Option<YesNo>,
        /// With --by stack: the namespace (default: the first with stacks and sizes).
        #[arg(long, value_name = "NAME")]
        pub space: Option<String>,
    }

    pub fn run(args: &StatsArgs, mut stats: StatsOptions) -> Result<i32, Failure> {
        let s = &args.stacks;
        // The moment is the profile's.
        stats.at = None;
        stats.at_peak = false;
        let options = StackOptions {
            stats,
            space: s.space.clone(),
            moment: match (args.at_peak, args.at) {
                (true, _) => Moment::AtPeak,
                (false, Some(b)) => Moment::At(b),
                (false, None) => Moment::Whole,
            },
            // A tree reads every cost (its JSON, the rows it leaves out).
            cost: None,
        };
        let p = stacks_with(&args.trace, args.dtd.as_deref(), &options)?;
        let opts = TreeOptions {
            depth: s.depth,
            merge: s.merge,
            leaf_site: match s.leaf_site {
                Some(y) => y == YesNo::Yes,
                None => p.profile.contexts,
            },
        };
        let cost = if args.at_peak {
            Cost::Peak
        } else if args.at.is_some() {
            Cost::Leaked
        } else {
            Cost::from(s.cost)
        };
        let view = TreeView {
            cost,
            top: args.top,
            threshold: s.threshold / 100.0,
        };
        let json = args.format == StatsFormat::Json;
        let text = match s.tree {
            TreeArg::Callers => {
                let c = CallerCallee::build(&p.profile, &opts);
                if json {
                    json_text(&c.to_json(&view))
                } else {
                    c.to_text(&view)
                }
            }
            kind => {
                let kind = if kind == TreeArg::TopDown {
                    TreeKind::TopDown
                } else {
                    TreeKind::BottomUp
                };
                let t = Tree::build(&p.profile, kind, &opts);
                if json {
                    json_text(&t.to_json(&view))
                } else {
                    t.to_text(&view)
                }
            }
        };
        emit(args.output.as_deref(), &text)?;
        Ok(EXIT_OK)
    }
}
