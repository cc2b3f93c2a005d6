//! `HeapEvents`: a reader's records as an iterator of heap events.

use crate::analysis::event::HeapEvent;
use crate::decode::{Event, Reader, Records};
use crate::dtd::analysis::SpaceId;

use super::sink::Sink;
use super::Interpreter;

/// The heap events of a trace, in trace order: its records decoded and interpreted by the
/// declarations of its DTD, one streaming pass. Records that do not decode (an invalid trace)
/// are skipped and counted ([`HeapEvents::problems`]); `mtf check` reports them. Beyond the
/// limit of tracked ids the events stop: check [`Interpreter::stopped`] at the end.
///
/// ```
/// let opened = metatf::open("traces/android.mtf")?;
/// let reader = opened.reader();
/// let mut events = metatf::analysis::HeapEvents::new(&reader);
/// let block = events.interpreter().declarations().space_by_name("block").unwrap();
/// let mut allocs = 0;
/// while let Some(e) = events.next() {
///     if e.space == block && matches!(e.op, metatf::analysis::HeapOp::Alloc { .. }) {
///         allocs += 1;
///     }
/// }
/// assert!(allocs > 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct HeapEvents<'r> {
    records: Records<'r>,
    interp: Interpreter<'r>,
    queue: std::collections::VecDeque<HeapEvent>,
    problems: u64,
    done: bool,
}

struct Queue<'q>(&'q mut std::collections::VecDeque<HeapEvent>);

impl Sink for Queue<'_> {
    fn event(&mut self, event: HeapEvent) {
        self.0.push_back(event);
    }
}

impl<'r> HeapEvents<'r> {
    /// The events of the trace a reader reads.
    pub fn new(reader: &'r Reader<'r>) -> HeapEvents<'r> {
        HeapEvents {
            records: reader.records(),
            interp: Interpreter::new(reader.schema()),
            queue: std::collections::VecDeque::new(),
            problems: 0,
            done: false,
        }
    }

    /// The interpreter: namespaces, time unit, site names, what is alive now.
    pub fn interpreter(&self) -> &Interpreter<'r> {
        &self.interp
    }

    /// The interpreter, to change its limit before the first event.
    pub fn interpreter_mut(&mut self) -> &mut Interpreter<'r> {
        &mut self.interp
    }

    /// Decoding problems and damaged regions met so far (their records yield no events).
    pub fn problems(&self) -> u64 {
        self.problems
    }

    /// Shorthand for [`Interpreter::site_name`].
    pub fn site_name(&self, space: SpaceId, site: u64) -> Option<String> {
        self.interp.site_name(space, site)
    }
}

impl Iterator for HeapEvents<'_> {
    type Item = HeapEvent;

    fn next(&mut self) -> Option<HeapEvent> {
        loop {
            if let Some(e) = self.queue.pop_front() {
                return Some(e);
            }
            if self.done {
                return None;
            }
            match self.records.next() {
                Some(Event::Record(v)) => self.interp.record(&v, &mut Queue(&mut self.queue)),
                Some(Event::Problem(_)) | Some(Event::Damage(_)) => self.problems += 1,
                None => self.done = true,
            }
        }
    }
}
