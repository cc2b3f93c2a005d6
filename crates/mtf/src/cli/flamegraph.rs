//! `mtf flamegraph TRACE -o F.svg`: where the bytes come from, as a flame graph (inferno) of a
//! cost by call stack or calling context, or as folded stacks (`--folded`, flamegraph.pl's
//! input; for a heaptrack recording, exactly what `heaptrack_print -F` writes).

use std::path::PathBuf;

use clap::Args;

use metatf::analysis::stats::Bound;
use metatf::command::stacks::{Moment, StackOptions};
use metatf::command::stats::StatsOptions;
use metatf::stacks::{write_flamegraph, write_folded, Cost, FlameOptions, FoldedOptions};

use super::common::{guard_files, stacks_with, Failure, SeekArgs, SliceArgs};
use super::EXIT_OK;

/// A cost on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CostArg {
    /// Allocations (count).
    Allocations,
    /// Bytes allocated.
    Bytes,
    /// Temporary allocations (freed right after, nothing allocated between).
    Temporary,
    /// Bytes live at the peak.
    Peak,
    /// Bytes live at the end (leaked; suppressed leaks count 0). With --at: live then.
    Leaked,
}

impl From<CostArg> for Cost {
    fn from(c: CostArg) -> Cost {
        match c {
            CostArg::Allocations => Cost::Allocations,
            CostArg::Bytes => Cost::Bytes,
            CostArg::Temporary => Cost::Temporary,
            CostArg::Peak => Cost::Peak,
            CostArg::Leaked => Cost::Leaked,
        }
    }
}

/// Arguments of `mtf flamegraph`.
#[derive(Debug, Args)]
pub struct FlamegraphArgs {
    /// The trace (`-` for standard input; pipes and compressed traces too).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Write to this file (`-`: standard output, the default): SVG, or with --folded text.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// What the widths are: allocations, bytes, temporary, peak, leaked (default allocations;
    /// with --at-peak, peak; with --at, what was live then).
    #[arg(long, value_enum)]
    pub cost: Option<CostArg>,
    /// The allocating functions at the base, their callers above (who calls an allocation
    /// function), drawn top down.
    #[arg(long)]
    pub reverse: bool,
    /// Write folded stacks (flamegraph.pl's input) instead of a picture: one line per site and
    /// stack, frames root first each followed by `;`, a space, the cost; for a heaptrack
    /// recording the lines `heaptrack_print -F` writes.
    #[arg(long)]
    pub folded: bool,
    /// With --folded: equal stacks merged into one line, zero costs left out, frames separated
    /// by `;` in call order (as stackcollapse tools write them).
    #[arg(long, requires = "folded")]
    pub merge: bool,
    /// The allocation site's name (a Java trace's allocated class) as the innermost frame
    /// (default: on where stacks are calling contexts, off for a stack tree such as heaptrack's).
    #[arg(long, value_name = "yes|no")]
    pub leaf_site: Option<YesNo>,
    /// What was live at the peak (cost peak).
    #[arg(long, conflicts_with = "at")]
    pub at_peak: bool,
    /// What was live just before this record index (`1234`) or declared time (`t1234`).
    #[arg(long, value_name = "RECORD|tTIME", conflicts_with = "to")]
    pub at: Option<Bound>,
    /// The namespace whose allocations are drawn (default: the first with stacks and sizes).
    #[arg(long, value_name = "NAME")]
    pub space: Option<String>,
    /// The title (default: the cost's).
    #[arg(long)]
    pub title: Option<String>,
    /// The picture's width in pixels (default: as wide as the window showing it).
    #[arg(long, value_name = "PIXELS")]
    pub width: Option<usize>,
    /// The slice.
    #[command(flatten)]
    pub slice: SliceArgs,
    #[command(flatten)]
    pub jobs: super::jobs::JobsArgs,
    /// The seek index whose checkpoints cut the trace for `-j`.
    #[command(flatten)]
    pub seek: SeekArgs,
}

/// `yes` or `no`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum YesNo {
    /// Yes.
    Yes,
    /// No.
    No,
}

impl FlamegraphArgs {
    /// The library's options for the profile.
    pub fn stack_options(&self) -> StackOptions {
        StackOptions {
            stats: StatsOptions {
                slice: self.slice.slice(),
                jobs: self.jobs.jobs(),
                seek: self.seek.options(),
                ..StatsOptions::default()
            },
            space: self.space.clone(),
            moment: match (self.at_peak, self.at) {
                (true, _) => Moment::AtPeak,
                (false, Some(b)) => Moment::At(b),
                (false, None) => Moment::Whole,
            },
            cost: None,
        }
    }
}

/// Run `mtf flamegraph`.
pub fn run(args: &FlamegraphArgs) -> Result<i32, Failure> {
    args.slice.window()?;
    if let Some(o) = args.output.as_deref().filter(|o| o.as_os_str() != "-") {
        guard_files(&[&args.trace], &[o])?;
    }
    let mut options = args.stack_options();
    let cost = args
        .cost
        .map(Cost::from)
        .or(options.implied_cost())
        .unwrap_or_default();
    // A flame graph draws one cost only.
    options.cost = Some(cost);
    let p = stacks_with(&args.trace, args.dtd.as_deref(), &options)?;
    let leaf_site = match args.leaf_site {
        Some(y) => y == YesNo::Yes,
        None => p.profile.contexts,
    };
    let mut bytes = Vec::new();
    if args.folded {
        let mut opts = if args.merge {
            FoldedOptions::default()
        } else {
            FoldedOptions::heaptrack()
        };
        opts.reverse = args.reverse;
        opts.leaf_site = leaf_site;
        write_folded(&p.profile, cost, &opts, &mut bytes).map_err(stacks_failure)?;
    } else {
        let opts = FlameOptions {
            cost,
            title: args.title.clone(),
            subject: Some(subject(args, &options)),
            folded: FoldedOptions {
                reverse: args.reverse,
                leaf_site,
                ..FoldedOptions::default()
            },
            inverted: args.reverse,
            width: args.width,
            widths_before: false,
        };
        write_flamegraph(&p.profile, &opts, &mut bytes).map_err(stacks_failure)?;
    }
    super::common::emit_bytes(args.output.as_deref(), &bytes)?;
    Ok(EXIT_OK)
}

/// What a picture is of: the trace, and the moment or slice.
pub fn subject(args: &FlamegraphArgs, options: &StackOptions) -> String {
    let mut s = metatf::io::input_name(&args.trace).to_string();
    match options.moment {
        Moment::AtPeak => s.push_str(", at the peak"),
        Moment::At(b) => s.push_str(&format!(", live before {}", bound(b))),
        Moment::Whole => {}
    }
    if let Some(f) = args.slice.from {
        s.push_str(&format!(", from {}", bound(f)));
    }
    if let Some(t) = args.slice.to {
        s.push_str(&format!(", to {}", bound(t)));
    }
    s
}

fn bound(b: Bound) -> String {
    match b {
        Bound::Record(r) => format!("record {r}"),
        Bound::Time(t) => format!("t{t}"),
    }
}

/// A flame graph that cannot be drawn or written.
pub fn stacks_failure(e: metatf::stacks::StacksError) -> Failure {
    Failure::diagnostic(super::exit::for_stacks(&e), &e)
}
