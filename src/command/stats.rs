//! A statistics run (`mtf stats`, and under `diff`, `plot` and `report`): records and integer
//! fields per type, and the heap figures of the trace's declared events, over a slice, decoded
//! on one thread or several.

use std::path::Path;

use crate::analysis::stats::{
    compute_scoped, Bound, Clock, Declared, HeapEventSource, Stats, StatsScope, Window,
};
use crate::Opened;

use super::jobs::{self, Faults, Jobs};
use super::resume::{resumed, Goal};
use super::seek::SeekOptions;
use super::slice::{check_clock, ended_early, Slice};
use super::{UsageError, Warning};

mod parallel;

/// What a statistics run reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsOptions {
    /// The slice (the whole trace by default).
    pub slice: Slice,
    /// Threads decoding; by default one (every record goes through one sequential pass anyway).
    pub jobs: Jobs,
    /// The seek index whose checkpoints cut the trace for several threads.
    pub seek: SeekOptions,
    /// Which figures (every one by default; a stack profile needs the heap figures only).
    pub scope: StatsScope,
    /// The state just before a data record or a declared time (`mtf stats --at`): a slice
    /// that opens and closes there (live bytes and blocks, by site, at that moment; no flows).
    /// Not with `slice`.
    pub at: Option<Bound>,
    /// Only the state at the peak is wanted (`--at-peak`): with a seek index carrying the
    /// analysis state, the whole trace's peak is read from the checkpoint before it, without
    /// a pass from the start (figures other than those at the peak are then not the whole
    /// trace's).
    pub at_peak: bool,
}

impl StatsOptions {
    /// Whether `trace`, when it cannot be mapped, is best opened to be streamed
    /// ([`crate::OpenOptions::stream`]): one pass in order, unless several threads are asked
    /// for or a seek index is there to cut at.
    pub fn streams(&self, trace: &Path) -> bool {
        self.jobs.is_single() && !self.seek.has_index(trace)
    }
}

/// The statistics of `o` (opened from `trace`, salvaging: the figures of a damaged trace are
/// those of the records it holds). A slice by time of a trace without a clock is refused; a
/// `--from` past the end is a [`Warning::PastEnd`].
pub fn stats<'o>(
    o: &'o Opened,
    trace: &Path,
    options: &StatsOptions,
    faults: Faults<'o>,
    warn: &mut dyn FnMut(Warning),
) -> Result<Stats, UsageError> {
    // The damage to the container (a section or the file cut short) or to the compressed
    // stream is one problem more, as `mtf check` counts it: known when a file is opened, and
    // when a stream ends.
    let ended = std::rc::Rc::new(std::cell::Cell::new(false));
    let seen = ended.clone();
    let on_end = faults.on_end;
    let faults = Faults {
        on_fault: faults.on_fault,
        on_end: Some(Box::new(move |e: crate::events::Ended| {
            let container = matches!(e.fault, Some(crate::stream::StreamError::Container(_)));
            seen.set(container || e.input_fault.is_some());
            if let Some(f) = on_end {
                f(e);
            }
        })),
    };
    let mut stats = stats_of(o, trace, options, faults, warn)?;
    if o.damage().is_some() || o.input_fault().is_some() || ended.get() {
        stats.problems += 1;
    }
    Ok(stats)
}

fn stats_of<'o>(
    o: &'o Opened,
    trace: &Path,
    options: &StatsOptions,
    faults: Faults<'o>,
    warn: &mut dyn FnMut(Warning),
) -> Result<Stats, UsageError> {
    let window = match options.at {
        Some(b) if options.slice.is_all() => Window {
            from: Some(b),
            to: Some(b),
        },
        Some(_) => return Err(UsageError::AtAndSlice),
        None => options.slice.window()?,
    };
    let jobs = options.jobs.decide(true);
    if jobs.threads() <= 1 {
        // From the analysis state at the checkpoint nearest before the slice, where the seek
        // index carries one (docs/format.md §15.4): the same figures without a pass from the
        // start.
        let goal = if options.at_peak && options.slice.is_all() && options.at.is_none() {
            Some(Goal::AtPeak)
        } else if window.from.is_some() {
            Some(Goal::Slice(window))
        } else {
            None
        };
        if let Some(goal) = goal {
            if let Some(mut stats) = resumed(o, trace, &options.seek, goal, options.scope, warn) {
                if let Some(note) =
                    clock_checked(o, trace, &mut stats, options.at.is_some(), options.scope)?
                {
                    warn(Warning::PastEnd(note));
                }
                return Ok(stats);
            }
        }
    }
    let reader = o.reader();
    let mut source = Declared::new(o.schema());
    let index = if jobs.threads() > 1 {
        options.seek.load(trace, warn)
    } else {
        None
    };
    let mut one_thread = false;
    if let (Some(idx), true) = (&index, window == Window::all() && !options.at_peak) {
        // Each chunk analysed on its own thread from the analysis state where it starts, the
        // figures joined in trace order: those of one thread.
        if let Some(mut stats) = parallel::run(
            o,
            trace,
            &options.seek,
            idx,
            jobs.threads(),
            options.scope,
            warn,
        ) {
            if let Some(note) = clock_checked(o, trace, &mut stats, false, options.scope)? {
                warn(Warning::PastEnd(note));
            }
            return Ok(stats);
        }
        // Design: without the states, the index could still cut the decoding among threads,
        // each record then handed to the one thread that analyses as its view. Where the
        // analysis takes most records as the values a scan reads of them, that one thread
        // alone is faster (a heaptrack recording of 16.9 M records: 2.7 s on one thread, 3.7 s
        // decoded on two): so it runs alone, and says why.
        let scanned = source
            .scan_fields()
            .is_some_and(|f| f.iter().any(Option::is_some));
        if scanned {
            one_thread = true;
            if let Some(p) = options.seek.index_path(trace) {
                if !crate::index::analysis::state_path(&p).is_some_and(|s| s.is_file()) {
                    warn(Warning::NoAnalysisState {
                        index: crate::escape::escape_path(&p).into_owned(),
                    });
                }
            }
        }
    }
    let plan = if one_thread {
        None
    } else {
        jobs.plan(&reader, index.as_ref(), warn)
    };
    // One pass over the whole trace meets every metadata record that could make a section a
    // table: it assumes the DTD's tables rather than reading the trace for them first, and is
    // run again in the rare trace where it was wrong (`Reader::speculate_tables`).
    let speculating = plan.is_none() && window == Window::all() && reader.speculate_tables();
    let mut stats = jobs::read(
        o,
        &reader,
        plan.as_ref(),
        jobs.threads(),
        false,
        faults,
        |records| {
            let stats = compute_scoped(&reader, records, &mut source, window, options.scope);
            if !(speculating && reader.tables_refuted()) {
                return stats;
            }
            let mut source = Declared::new(o.schema());
            let mut again = reader.records();
            compute_scoped(&reader, &mut again, &mut source, window, options.scope)
        },
    );
    if let Some(note) = clock_checked(o, trace, &mut stats, options.at.is_some(), options.scope)? {
        warn(Warning::PastEnd(note));
    }
    Ok(stats)
}

// Design: a slice by time is refused when the trace has no clock (docs/stats.md), which is a
// property of the whole trace; a pass that stopped at the end of its slice has seen the times
// up to there only, and a slice that ends at or before the first time seen (`--to t100` of a
// trace whose times run from 100) has seen one. Only then, and only when its times have not
// moved, the rest of the trace is read for its clock, in a second pass from the start (a
// stream cannot be read again: its slice is judged by the times read). The usual slice, whose
// times moved, pays nothing.
/// [`check_clock`] with the clock of the whole trace where the pass of `stats` ended before
/// its times moved.
fn clock_checked(
    o: &Opened,
    trace: &Path,
    stats: &mut Stats,
    moment: bool,
    scope: StatsScope,
) -> Result<Option<String>, UsageError> {
    let clock = match check_clock(trace, stats, moment, stats.clock) {
        Err(UsageError::NoClock { .. }) if ended_early(stats) && !o.is_streamed() => {
            let reader = o.reader();
            let mut source = Declared::new(o.schema());
            let mut records = reader.records();
            let whole = compute_scoped(&reader, &mut records, &mut source, Window::all(), scope);
            whole.clock
        }
        r => return r,
    };
    if clock == Clock::Moving {
        // The slice's figures are shown with the trace's clock.
        stats.clock = clock;
        for s in &mut stats.spaces {
            s.clock = true;
        }
    }
    check_clock(trace, stats, moment, clock)
}
