//! Two traces compared (`mtf diff`): the statistics of the same slice of each, side by side.

use std::path::Path;

use crate::analysis::diff::Diff;
use crate::analysis::stats::Stats;

use super::slice::Slice;
use super::stats::StatsOptions;
use super::UsageError;

/// What a comparison reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffOptions {
    /// The same slice of both traces.
    pub slice: Slice,
}

impl DiffOptions {
    /// Refuses what cannot be compared before anything is read: both traces from standard
    /// input, an empty slice. The options of each trace's statistics run.
    pub fn check(&self, a: &Path, b: &Path) -> Result<StatsOptions, UsageError> {
        if a.as_os_str() == "-" && b.as_os_str() == "-" {
            return Err(UsageError::BothStdin);
        }
        self.slice.window()?;
        Ok(StatsOptions {
            slice: self.slice,
            jobs: super::jobs::Jobs::one(),
            ..StatsOptions::default()
        })
    }
}

/// The comparison of two statistics runs (each from [`super::stats::stats`] with the options
/// [`DiffOptions::check`] gives).
pub fn diff(a: &Stats, b: &Stats) -> Diff {
    crate::analysis::diff::diff(a, b)
}
