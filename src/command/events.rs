//! A trace's events in trace order for one pass of a command: decoded as they arrive (a piped
//! or compressed trace opened to be streamed), from the reader on one thread, or on several
//! threads as a plan cuts the trace (`-j N`).

use crate::decode::{EventStream, Reader};
use crate::index::Index;
use crate::io::IoError;
use crate::parallel::{self, Plan};
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
    ) -> Option<Plan> {
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

/// A callback for the fault of a compressed stream cut short.
pub type OnCut<'o> = Box<dyn FnMut(&IoError) + 'o>;

/// What the caller does with the faults of a streamed trace (nothing, by default: the events
/// stop where the fault is, and [`crate::stream::TraceStream::fault`] holds it).
#[derive(Default)]
pub struct Faults<'o> {
    /// Called with a fault as soon as the stream finds it, before the events stop.
    pub on_fault: Option<OnFault<'o>>,
    /// Called after the consumer is done, with the fault of a compressed stream cut short
    /// (salvaged: its events were those of the bytes it holds).
    pub on_cut: Option<OnCut<'o>>,
    /// Called last, once the stream is dropped.
    pub on_end: Option<Box<dyn FnOnce() + 'o>>,
}

/// Let `f` read every event of the trace in trace order: from the stream `o` was opened for,
/// from `reader.records()` on one thread (no plan), or decoded on `threads` threads as `plan`
/// cuts the trace.
pub fn with_events<'o, T>(
    o: &'o Opened,
    reader: &'o Reader<'o>,
    plan: Option<&Plan>,
    threads: usize,
    skip_values: bool,
    faults: Faults<'o>,
    f: impl FnOnce(&mut dyn EventStream) -> T,
) -> T {
    if let Some(mut stream) = o.stream() {
        stream.skip_values(skip_values);
        let Faults {
            on_fault,
            on_cut,
            on_end,
        } = faults;
        if let Some(on_fault) = on_fault {
            stream.on_fault(on_fault);
        }
        let out = f(&mut stream);
        if let (Some(mut on_cut), Some(e)) = (on_cut, stream.input_fault()) {
            on_cut(e);
        }
        drop(stream);
        if let Some(on_end) = on_end {
            on_end();
        }
        return out;
    }
    match plan {
        None => {
            let mut records = reader.records();
            records.skip_values(skip_values);
            f(&mut records)
        }
        Some(plan) => parallel::events(o, reader, plan, threads, skip_values, |e| f(e)),
    }
}
