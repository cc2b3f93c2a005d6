//! [`Event`], and [`EventStream`]: what every source of a trace's events gives.

use super::super::error::{Damage, Problem};
use super::super::view::RecordView;
use super::{Records, ScanStop, ScanTimes, ScanValues, Scanned};

/// One thing found while reading a trace.
#[derive(Debug)]
pub enum Event<'r> {
    /// A decoded record.
    Record(RecordView<'r>),
    /// A problem in the record just yielded (or, at the end, in the trace as a whole): the trace
    /// is invalid, and reading goes on with the next record.
    Problem(Box<Problem>),
    /// The rest of the current region cannot be decoded; reading resumes at the next region.
    Damage(Box<Damage>),
}

/// Runs a consumer over every event of a trace in trace order, once per call (an export that
/// reads a trace twice calls it twice): over `reader.records()`, or over the events of
/// [`crate::events::read`] (a stream, or chunks decoded on several threads), which are the same.
pub type EventPasses<'s> = dyn FnMut(&mut dyn FnMut(&mut dyn EventStream)) + 's;

/// A source of a trace's events in trace order: [`Records`], or the events of a trace decoded
/// on several threads (`metatf::parallel::Events`), for code that consumes either.
pub trait EventStream {
    /// The next event, or `None` at the end.
    fn next_event(&mut self) -> Option<Event<'_>>;
    /// Problems not reported because one record had more than [`MAX_PROBLEMS_PER_RECORD`].
    fn dropped_problems(&self) -> u64;
    /// The decoder itself, when the events come straight from one (for what needs its
    /// checkpoints: building or verifying a seek index).
    fn as_records(&self) -> Option<&Records<'_>> {
        None
    }
    /// Step over records that cannot be invalid but for their length, counting them per type
    /// ([`Records::scan`]); 0 where the events do not come straight from a decoder.
    fn scan(&mut self, _per_type: &mut [u64], _stop: ScanStop) -> u64 {
        0
    }
    /// As [`EventStream::scan`], noting the records' times ([`Records::scan_timed`]).
    fn scan_timed(
        &mut self,
        _per_type: &mut [u64],
        _stop: ScanStop,
        _times: &mut ScanTimes,
    ) -> u64 {
        0
    }
    /// As [`EventStream::scan`], giving `each` the values `values` names of each record
    /// stepped over ([`Records::scan_values`]); with `times`, noting their times
    /// ([`Records::scan_values_timed`]).
    fn scan_values(
        &mut self,
        _per_type: &mut [u64],
        _stop: ScanStop,
        _values: &mut ScanValues,
        _times: Option<&mut ScanTimes>,
        _each: &mut dyn FnMut(Scanned<'_>) -> bool,
    ) -> u64 {
        0
    }
}

impl EventStream for Records<'_> {
    fn next_event(&mut self) -> Option<Event<'_>> {
        self.next()
    }
    fn dropped_problems(&self) -> u64 {
        Records::dropped_problems(self)
    }
    fn as_records(&self) -> Option<&Records<'_>> {
        Some(self)
    }
    fn scan(&mut self, per_type: &mut [u64], stop: ScanStop) -> u64 {
        Records::scan(self, per_type, stop)
    }
    fn scan_timed(&mut self, per_type: &mut [u64], stop: ScanStop, times: &mut ScanTimes) -> u64 {
        Records::scan_timed(self, per_type, stop, times)
    }
    fn scan_values(
        &mut self,
        per_type: &mut [u64],
        stop: ScanStop,
        values: &mut ScanValues,
        times: Option<&mut ScanTimes>,
        each: &mut dyn FnMut(Scanned<'_>) -> bool,
    ) -> u64 {
        match times {
            None => Records::scan_values(self, per_type, stop, values, each),
            Some(t) => Records::scan_values_timed(self, per_type, stop, values, t, each),
        }
    }
}
