//! The slice of a trace a command reads (`--from`/`--to`: a record index or a declared time),
//! checked against the trace, and where each record stands relative to it.

use std::path::Path;

use crate::analysis::event::HeapEvent;
use crate::analysis::stats::{Bound, Clock, Declared, HeapEventSource, Place, Stats, Window};
use crate::decode::RecordView;
use crate::dtd::Schema;
use crate::Opened;

use super::UsageError;

/// A slice: records from `from` (inclusive) to `to` (exclusive), each a record index or a
/// declared time; both `None` for the whole trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slice {
    /// Where the slice starts.
    pub from: Option<Bound>,
    /// Where it ends (exclusive).
    pub to: Option<Bound>,
}

impl Slice {
    /// The window; an empty one (`from` at or after `to`, both records or both times) is a
    /// usage error.
    pub fn window(&self) -> Result<Window, UsageError> {
        let empty = match (self.from, self.to) {
            (Some(Bound::Record(a)), Some(Bound::Record(b)))
            | (Some(Bound::Time(a)), Some(Bound::Time(b))) => a >= b,
            _ => false,
        };
        if empty {
            return Err(UsageError::EmptySlice);
        }
        Ok(Window {
            from: self.from,
            to: self.to,
        })
    }

    /// Whether this is the whole trace.
    pub fn is_all(&self) -> bool {
        self.from.is_none() && self.to.is_none()
    }

    /// A slice by time needs a clock: a trace whose DTD declares no time (docs/format.md
    /// §14.4) is refused at once (a statistics run also refuses a declared time that never
    /// moves, which only a pass can tell: [`check_clock`]).
    pub fn need_declared_time(&self, schema: &Schema, trace: &Path) -> Result<(), UsageError> {
        match by_time(self.from, self.to) {
            Some(time) if schema.analysis.time_unit.is_none() => Err(UsageError::NoDeclaredTime {
                trace: crate::escape::escape_path(trace).into_owned(),
                time,
            }),
            _ => Ok(()),
        }
    }
}

/// The time of the first bound given as a time.
fn by_time(from: Option<Bound>, to: Option<Bound>) -> Option<u64> {
    [from, to].into_iter().find_map(|b| match b {
        Some(Bound::Time(t)) => Some(t),
        _ => None,
    })
}

/// Whether the pass of `stats` stopped at the end of its slice, before the end of the trace:
/// it read the first data record after the slice. Its clock is then the clock of the records
/// up to there only.
pub fn ended_early(stats: &Stats) -> bool {
    stats.end.record < stats.data_records
}

/// After a statistics run of `trace` over a slice: a slice by time needs a clock, and without
/// one (no record has a time, or every time is the same) it is refused, as it would be empty or
/// the whole trace by accident. `Ok(Some(note))` when `--from` lies past the end (the figures
/// are those of an empty slice): the note says so, for the caller to show. A `moment` (`--at`,
/// the slice that opens and closes at one bound) stops at the first record at or after it,
/// having seen one time: a single time is a clock there, and the note names `--at`. `clock`
/// is the trace's: `stats.clock`, or the whole trace's where the pass ended early
/// ([`ended_early`]) before the times moved.
pub fn check_clock(
    trace: &Path,
    stats: &Stats,
    moment: bool,
    clock: Clock,
) -> Result<Option<String>, UsageError> {
    let name = crate::escape::escape_path(trace);
    let w = stats.window;
    if let Some(time) = by_time(w.from, w.to) {
        let why = match clock {
            Clock::Moving => None,
            Clock::Constant(_) if moment => None,
            Clock::None => Some("no record has a declared time".to_string()),
            Clock::Constant(c) => Some(format!("every declared time is {c}")),
        };
        if let Some(why) = why {
            return Err(UsageError::NoClock {
                trace: name.into_owned(),
                time,
                why,
            });
        }
    }
    if stats.records != 0 || stats.start.record < stats.data_records {
        return Ok(None);
    }
    let past = match w.from {
        Some(Bound::Record(r)) => format!("data record {r}"),
        Some(Bound::Time(t)) => format!("time {t}"),
        None => return Ok(None),
    };
    let last = match (stats.clock, stats.end.time) {
        (Clock::Moving, Some(t)) => format!(", the last time is {t}"),
        _ => String::new(),
    };
    let option = if moment { "--at" } else { "--from" };
    Ok(Some(format!(
        "{name}: no data record at or after {option} ({past}): the trace has {} data records{last}",
        stats.data_records
    )))
}

/// What a record-by-record pass says when `--from` lies past the last record (`reached`: whether
/// any record reached the slice or passed it).
pub fn past_end_note(slice: &Slice, reached: bool, trace: &str, records: u64) -> Option<String> {
    if reached {
        return None;
    }
    let past = match slice.from? {
        Bound::Record(r) => format!("record {r}"),
        Bound::Time(t) => format!("time {t}"),
    };
    Some(format!(
        "{trace}: no record at or after --from ({past}): the trace has {records} records"
    ))
}

/// Where each record of a trace stands relative to a slice: by record index, or by the declared
/// time the trace's declarations give (the last time seen, for a record without one).
pub struct Slicer<'o> {
    window: Window,
    /// The declarations, only when a bound is a time.
    source: Option<Declared<'o>>,
    time: Option<u64>,
    events: Vec<HeapEvent>,
}

impl<'o> Slicer<'o> {
    /// A slicer for `window` over the records of `o`.
    pub fn new(o: &'o Opened, window: Window) -> Slicer<'o> {
        let timed = by_time(window.from, window.to).is_some();
        Slicer {
            window,
            source: timed.then(|| Declared::new(o.schema())),
            time: None,
            events: Vec::new(),
        }
    }

    /// Whether every record is inside (no bound).
    pub fn is_all(&self) -> bool {
        self.window.is_all()
    }

    /// Where `v` stands.
    pub fn place(&mut self, v: &RecordView<'_>) -> Place {
        if self.window.is_all() {
            return Place::Inside;
        }
        if let Some(s) = self.source.as_mut() {
            self.events.clear();
            if let Some(t) = s.record(v, &mut self.events) {
                self.time = Some(t);
            }
        }
        self.window.place(v.index(), self.time)
    }
}
