//! Where the interpreter reports heap events and findings.

use crate::analysis::event::{HeapEvent, Places};

use super::finding::Finding;

/// What an interpreter reports to.
pub trait Sink {
    /// A heap event, in trace order.
    fn event(&mut self, event: HeapEvent);
    /// A finding (a broken declaration, or information such as a leak). Ignored by default.
    fn finding(&mut self, finding: Finding) {
        let _ = finding;
    }
    /// Whether the sink looks at events at all; `false` (a sink of findings only, such as
    /// `mtf check`'s) spares the interpreter making them. `true` by default.
    fn wants_events(&self) -> bool {
        true
    }
    /// Before the events of a record that says how many bytes of the block it ends or moves
    /// away were resident (`F.resident`, docs/format.md §14.1; Android's present bytes): those
    /// bytes. Ignored by default.
    fn resident(&mut self, bytes: u64) {
        let _ = bytes;
    }
}

impl Sink for Vec<HeapEvent> {
    fn event(&mut self, event: HeapEvent) {
        self.push(event);
    }
}

/// [`Sink`] as a trait object (the interpreter's internals take `&mut dyn`); a sink of the
/// crate may also take the places of each event's blocks (`Places`), which a [`Sink`] ignores.
pub(crate) trait SinkDyn {
    fn event_placed(&mut self, event: HeapEvent, places: Places);
    fn finding(&mut self, finding: Finding);
    fn wants_events(&self) -> bool;
    fn resident(&mut self, bytes: u64) {
        let _ = bytes;
    }
}

impl<T: Sink + ?Sized> SinkDyn for T {
    fn event_placed(&mut self, event: HeapEvent, _: Places) {
        Sink::event(self, event);
    }
    fn finding(&mut self, finding: Finding) {
        Sink::finding(self, finding);
    }
    fn wants_events(&self) -> bool {
        Sink::wants_events(self)
    }
    fn resident(&mut self, bytes: u64) {
        Sink::resident(self, bytes);
    }
}
