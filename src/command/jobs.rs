//! How a command reads a trace's events in one pass: on how many threads and cut where
//! ([`Jobs`], `-j N`), and what the caller does with a streamed trace's faults ([`Faults`]).
//! The events themselves come from [`crate::events::read`].

use crate::decode::{EventStream, Reader};
use crate::events::{self, Ended, EventOptions};
use crate::index::Index;
use crate::parallel::{self, ChunkPlan};
use crate::stream::StreamError;
use crate::Opened;

use super::Warning;

/// How many threads decode (`-j N`), and how the trace is cut for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jobs {
    /// Threads; `Some(0)`: one per core; `None`: the command's default ([`Jobs::decide`]).
    pub jobs: Option<usize>,
    /// Trace bytes per chunk decoded apart.
    pub chunk_bytes: u64,
    /// Regions larger than this are decoded by the thread that consumes the events.
    pub inline_bytes: u64,
}

impl Default for Jobs {
    fn default() -> Jobs {
        Jobs {
            jobs: None,
            chunk_bytes: parallel::CHUNK_BYTES,
            inline_bytes: parallel::CHUNK_BYTES,
        }
    }
}

impl Jobs {
    /// One thread.
    pub fn one() -> Jobs {
        Jobs {
            jobs: Some(1),
            ..Jobs::default()
        }
    }

    /// With the default decided: one thread when a sequential pass over every record bounds
    /// the time (`sequential`), else one per core.
    pub fn decide(&self, sequential: bool) -> Jobs {
        Jobs {
            jobs: Some(self.jobs.unwrap_or(if sequential { 1 } else { 0 })),
            ..*self
        }
    }

    /// Threads to use.
    pub fn threads(&self) -> usize {
        match self.jobs {
            Some(0) => parallel::available(),
            Some(n) => n,
            None => 1,
        }
    }

    /// Whether one thread was asked for (or nothing): a piped trace is then decoded as it
    /// arrives, unless a seek index is there to use.
    pub fn is_single(&self) -> bool {
        self.jobs.is_none_or(|j| j == 1)
    }

    /// The plan for `reader`'s trace, or `None` when one thread does it all: cut at the
    /// checkpoints of `index` when there is one that fits (else `warn` is told), else at its
    /// regions.
    pub fn plan<'r>(
        &self,
        reader: &'r Reader<'r>,
        index: Option<&Index>,
        warn: &mut dyn FnMut(Warning),
    ) -> Option<ChunkPlan> {
        // A stream is read once, in order.
        if self.threads() <= 1 || reader.is_streamed() {
            return None;
        }
        if let Some(idx) = index {
            match parallel::plan_indexed(reader, idx) {
                Ok(plan) if plan.is_parallel() => return Some(plan),
                Ok(_) => {}
                Err(e) => warn(Warning::IndexNotForPlan(e)),
            }
        }
        let plan = parallel::plan_with(reader, self.chunk_bytes, self.inline_bytes);
        plan.is_parallel().then_some(plan)
    }
}

/// A callback for a fault of a streamed trace.
pub type OnFault<'o> = Box<dyn FnMut(&StreamError) + 'o>;

/// A callback for what a streamed trace's source found once it ended.
pub type OnEnd<'o> = Box<dyn FnOnce(Ended) + 'o>;

/// What the caller does with the faults of a streamed trace (nothing, by default: the events
/// stop where the fault is).
#[derive(Default)]
pub struct Faults<'o> {
    /// Called with a fault as soon as the stream finds it, before the events stop.
    pub on_fault: Option<OnFault<'o>>,
    /// Called once the consumer is done and the stream dropped, with its fault and the fault of
    /// a compressed stream cut short (salvaged: its events were those of the bytes it holds).
    pub on_end: Option<OnEnd<'o>>,
}

/// Let `f` read every event of the trace in trace order ([`events::read`]): decoded on
/// `threads` threads as `plan` cuts the trace, or on one (no plan), or from the stream `o` was
/// opened for; its faults given to `faults`.
pub fn read<'o, T>(
    o: &'o Opened,
    reader: &'o Reader<'o>,
    plan: Option<&ChunkPlan>,
    threads: usize,
    skip_values: bool,
    faults: Faults<'o>,
    f: impl FnOnce(&mut dyn EventStream) -> T,
) -> T {
    let mut options = EventOptions::new().skip_values(skip_values);
    if let Some(plan) = plan {
        options = options.chunks(plan, threads);
    }
    let Faults {
        mut on_fault,
        on_end,
    } = faults;
    let (out, ended) = events::read(
        o,
        reader,
        &options,
        |e| {
            if let Some(on_fault) = on_fault.as_mut() {
                on_fault(e);
            }
        },
        f,
    );
    if let Some(on_end) = on_end {
        on_end(ended);
    }
    out
}
