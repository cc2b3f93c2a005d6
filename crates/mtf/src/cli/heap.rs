//! The heap events of a trace for `stats`, `diff`, `plot`, `report`, and the record slices of
//! `dump` and `check`: the DTD's analysis declarations (docs/format.md §14) interpreted by the
//! library.

use metatf::analysis::event::HeapEvent;
use metatf::analysis::stats::{Bound, Declared, EventSource, Place, Window};
use metatf::decode::RecordView;
use metatf::Opened;

use super::common::Failure;

/// The event source of an opened trace: its own declarations.
pub fn source_for(o: &Opened) -> Result<Box<dyn EventSource + '_>, Failure> {
    Ok(Box::new(Declared::new(o.schema())))
}

/// Where each record of a trace stands relative to `--from`/`--to`: by record index, or by the
/// declared time the trace's declarations give (the last time seen, for a record without one).
pub struct Slicer<'o> {
    window: Window,
    /// The declarations, only when a bound is a time.
    source: Option<Box<dyn EventSource + 'o>>,
    time: Option<u64>,
    events: Vec<HeapEvent>,
}

impl<'o> Slicer<'o> {
    /// A slicer for `window` over the records of `o`.
    pub fn new(o: &'o Opened, window: Window) -> Result<Slicer<'o>, Failure> {
        let timed = matches!(window.from, Some(Bound::Time(_)))
            || matches!(window.to, Some(Bound::Time(_)));
        Ok(Slicer {
            window,
            source: if timed { Some(source_for(o)?) } else { None },
            time: None,
            events: Vec::new(),
        })
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
