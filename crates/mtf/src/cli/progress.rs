//! The progress bar of long-running subcommands: on standard error, only when it is a terminal
//! and `--quiet` was not given; bytes and records per second and the time left.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::common::color_enabled;

/// A progress bar over the bytes of a trace (or nothing).
pub struct Progress {
    bar: Option<ProgressBar>,
    start: Instant,
    /// Records are counted between updates; the bar is touched every `STEP` records.
    pending: u64,
}

/// Records between two updates of the bar.
const STEP: u64 = 4096;

impl Progress {
    /// A bar for `total` bytes labelled `what`, shown when standard error is a terminal and
    /// `quiet` is false.
    pub fn new(total: u64, what: &str, quiet: bool) -> Progress {
        Progress::when(total, what, !quiet && std::io::stderr().is_terminal())
    }

    /// A bar shown when `show` is true.
    pub fn when(total: u64, what: &str, show: bool) -> Progress {
        let bar = show.then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let template = if color_enabled() {
                "{prefix:.bold} [{bar:30.cyan/blue}] {binary_bytes}/{binary_total_bytes} \
                 ({binary_bytes_per_sec}, {msg}) ETA {eta}"
            } else {
                "{prefix} [{bar:30}] {binary_bytes}/{binary_total_bytes} \
                 ({binary_bytes_per_sec}, {msg}) ETA {eta}"
            };
            bar.set_style(
                ProgressStyle::with_template(template)
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            bar.set_prefix(what.to_string());
            bar.enable_steady_tick(Duration::from_millis(250));
            bar
        });
        Progress {
            bar,
            start: Instant::now(),
            pending: 0,
        }
    }

    /// One more record, ending at byte `position`; cheap when called for every record.
    #[inline]
    pub fn record(&mut self, position: u64, records: u64) {
        self.pending += 1;
        if self.pending >= STEP {
            self.pending = 0;
            self.set(position, records);
        }
    }

    /// The position and record count now.
    pub fn set(&self, position: u64, records: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(position);
            let secs = self.start.elapsed().as_secs_f64().max(1e-3);
            bar.set_message(format!(
                "{} records, {}/s",
                human(records as f64),
                human(records as f64 / secs)
            ));
        }
    }

    /// The position now, for work counted in input bytes rather than records.
    pub fn set_bytes(&self, position: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(position);
            bar.set_message("input read");
        }
    }

    /// `n` more bytes of work done; from any thread.
    pub fn inc_bytes(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
        }
    }

    /// Restart for a new pass labelled `what`.
    pub fn restart(&mut self, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_prefix(what.to_string());
            bar.reset();
        }
        self.start = Instant::now();
    }

    /// Run `f` with the bar hidden (to print a line to the same terminal).
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(bar) => bar.suspend(f),
            None => f(),
        }
    }

    /// Remove the bar from the terminal.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

fn human(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.1}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.1}M", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}
