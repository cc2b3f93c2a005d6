//! Figures by call stack or calling context (`mtf flamegraph`, `mtf stats --by stack`, `mtf diff
//! --flamegraph`): a statistics run whose namespace's stacks come back as a [`StackProfile`],
//! over the whole trace, a slice, or up to a moment.

use std::path::Path;

use crate::analysis::stats::{Bound, Stats};
use crate::stacks::{Cost, StackProfile};
use crate::Opened;

use super::jobs::Faults;
use super::stats::{stats, StatsOptions};
use super::{UsageError, Warning};

/// Which moment a profile is of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Moment {
    /// The slice as a whole: every cost (allocations, temporary, the peak, leaked at its end).
    #[default]
    Whole,
    /// What was live at the peak of the slice (the cost is the peak).
    AtPeak,
    /// What was live just before a record or a time (the slice ends there; the cost is what is
    /// live at its end, leak suppressions not applied: it is a moment, not the end).
    At(Bound),
}

/// What a stack profile reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackOptions {
    /// The statistics run (slice, threads, seek index).
    pub stats: StatsOptions,
    /// The namespace whose allocations are shown (by default the first with stacks, byte
    /// counts first).
    pub space: Option<String>,
    /// The moment.
    pub moment: Moment,
    /// The only cost the caller reads of the profile, where it reads one only (a flame
    /// graph); `None` when it reads every cost (a tree's JSON, a report). A moment drawn by
    /// the cost it implies (what is live then, the peak) reads only the state at that moment,
    /// which a seek index carrying the analysis state gives without a pass from the start.
    pub cost: Option<Cost>,
}

impl StackOptions {
    /// The cost a moment implies, where it implies one (`--at-peak`: peak; `--at`: live).
    pub fn implied_cost(&self) -> Option<Cost> {
        match self.moment {
            Moment::Whole => None,
            Moment::AtPeak => Some(Cost::Peak),
            Moment::At(_) => Some(Cost::Leaked),
        }
    }
}

/// A profile with the statistics it came from.
#[derive(Debug, Clone)]
pub struct Profiled {
    /// The profile of the chosen namespace.
    pub profile: StackProfile,
    /// The statistics of the run (every namespace).
    pub stats: Stats,
}

/// The stack profile of `o` (opened from `trace`). A trace whose DTD declares no stacks, or a
/// namespace without them, is a usage error naming what is there.
pub fn stack_profile<'o>(
    o: &'o Opened,
    trace: &Path,
    options: &StackOptions,
    faults: Faults<'o>,
    warn: &mut dyn FnMut(Warning),
) -> Result<Profiled, UsageError> {
    let mut run = options.stats.clone();
    // A profile needs the heap figures by site and stack only.
    run.scope = crate::analysis::stats::StatsScope::Heap;
    let cost = options.cost;
    if let Moment::At(b) = options.moment {
        if run.slice.to.is_some() {
            return Err(UsageError::Stacks(
                "--at ends the slice at a moment: give --at or --to, not both".into(),
            ));
        }
        if run.slice.is_all() && cost == Some(Cost::Leaked) {
            // Only what is live then is drawn: the state at the moment, which needs no flows
            // from the start (the same leaves, the same live figures).
            run.at = Some(b);
        } else {
            run.slice.to = Some(b);
        }
    }
    if options.moment == Moment::AtPeak && cost == Some(Cost::Peak) {
        run.at_peak = true;
    }
    let mut stats = stats(o, trace, &run, faults, warn)?;
    let name = crate::escape::escape_path(trace);
    let with: Vec<&str> = stats
        .spaces
        .iter()
        .filter(|s| s.stacks.is_some())
        .map(|s| s.name.as_str())
        .collect();
    let chosen = match &options.space {
        Some(want) => stats
            .spaces
            .iter()
            .position(|s| &s.name == want)
            .filter(|i| stats.spaces[*i].stacks.is_some()),
        None => stats
            .spaces
            .iter()
            .position(|s| s.stacks.is_some() && s.sized)
            .or_else(|| stats.spaces.iter().position(|s| s.stacks.is_some())),
    };
    let Some(i) = chosen else {
        let why = if o.schema().analysis.stacks == 0 {
            format!(
                "{name}: its DTD declares no call stacks or calling contexts (extension stacks/1, docs/format.md §17)"
            )
        } else if with.is_empty() {
            format!(
                "{name}: its DTD declares stacks, but not for the allocations of any namespace it has"
            )
        } else {
            format!(
                "{name}: namespace `{}` has no stacks; these have: {}",
                options.space.as_deref().unwrap_or(""),
                with.join(", ")
            )
        };
        return Err(UsageError::Stacks(why));
    };
    let mut profile = stats.spaces[i].stacks.take().unwrap_or_default();
    if let Moment::At(_) = options.moment {
        // What is live at a moment is not a leak: no suppression hides it.
        for l in &mut profile.leaves {
            l.suppressed = false;
        }
    }
    Ok(Profiled { profile, stats })
}
