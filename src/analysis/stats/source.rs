//! Where heap events come from: the trace's own declarations through an `Interpreter`.

use crate::analysis::event::{HeapEvent, HeapOp, Places};
use crate::decode::RecordView;
use crate::dtd::Schema;

use super::{HeapStats, Position, SpaceInfo};

/// Where heap events come from: a trace's allocation declarations interpreted over its records.
pub trait HeapEventSource {
    /// The namespaces, indexed by [`HeapEvent::space`].
    fn spaces(&self) -> Vec<SpaceInfo>;
    /// Appends the heap events of one record to `out`; returns the record's declared time, if
    /// it has one.
    fn record(&mut self, view: &RecordView<'_>, out: &mut Vec<HeapEvent>) -> Option<u64>;
    /// [`HeapEventSource::record`], with the places of each event's blocks in `places` (one
    /// per event; `None` where the source does not number its blocks, as by default). Not part
    /// of the stable interface.
    #[doc(hidden)]
    fn record_placed(
        &mut self,
        view: &RecordView<'_>,
        out: &mut Vec<HeapEvent>,
        places: &mut Vec<Option<Places>>,
    ) -> Option<u64> {
        let t = self.record(view, out);
        places.resize(out.len(), None);
        t
    }
    /// Whether the source hands each event over as it comes ([`HeapEventSource::record_each`])
    /// with the places of its blocks. Not part of the stable interface.
    #[doc(hidden)]
    fn direct(&self) -> bool {
        false
    }
    /// [`HeapEventSource::record_placed`] with each event given to `each` as it comes, in
    /// order, instead of appended to a vector, where [`HeapEventSource::direct`] says so;
    /// otherwise the events go to `each` after the record. Each event's time is the record's
    /// (the time returned). Not part of the stable interface.
    #[doc(hidden)]
    fn record_each(
        &mut self,
        view: &RecordView<'_>,
        each: &mut dyn FnMut(&HeapEvent, Option<Places>),
    ) -> Option<u64> {
        let (mut out, mut places) = (Vec::new(), Vec::new());
        let t = self.record_placed(view, &mut out, &mut places);
        for (e, p) in out.iter().zip(&places) {
            each(e, *p);
        }
        t
    }
    /// [`HeapEventSource::record_each`] with each event given straight to the statistics of
    /// a pass (`into`), where the source can (`None` where it cannot: the pass then calls
    /// `record_each`). Not part of the stable interface.
    #[doc(hidden)]
    fn record_into(&mut self, view: &RecordView<'_>, into: &mut Inlet<'_>) -> Option<Option<u64>> {
        let _ = (view, into);
        None
    }
    /// Per record type, the fields whose values [`HeapEventSource::record_values_into`] needs
    /// of its records, or `None` for a type whose records it must see whole; `None` for a
    /// source that takes every record as its view (by default). Not part of the stable
    /// interface.
    #[doc(hidden)]
    fn scan_fields(&self) -> Option<Vec<Option<Box<[crate::dtd::SlotId]>>>> {
        None
    }
    /// [`HeapEventSource::record_into`] for a record a scan stepped over (`at`), given as the
    /// values of the fields [`HeapEventSource::scan_fields`] names for its type, in that order
    /// (values after those are not read); the record's time, or the latest before it. `text(k)`
    /// is the string a reference among the values names (`Scanned::bytes`). Only called where
    /// `scan_fields` gives the record's type fields. Not part of the stable interface.
    #[doc(hidden)]
    fn record_values_into(
        &mut self,
        at: crate::analysis::At,
        values: &[u64],
        text: &dyn Fn(usize) -> Option<String>,
        into: &mut Inlet<'_>,
    ) -> Option<u64> {
        let _ = (at, values, text, into);
        None
    }
    /// The name of a site of a namespace, where the trace can resolve it.
    fn site_name(&mut self, space: u32, site: u64) -> Option<String>;
    /// Frees of ids that were not alive, per namespace, that the source kept to itself (no
    /// event); added to the engine's own count.
    fn unknown_frees(&self, space: u32) -> u64 {
        let _ = space;
        0
    }
    /// The sum of [`HeapEventSource::unknown_frees`] over the namespaces, where the source
    /// keeps it (`None` by default): a pass asks each namespace only when it changed. Not part
    /// of the stable interface.
    #[doc(hidden)]
    fn unknown_frees_total(&self) -> Option<u64> {
        None
    }
    /// Whether records after the slice may still name its sites (tables at the end of a
    /// trace): then reading goes on to the end, feeding only the source.
    fn names_later(&self) -> bool {
        false
    }
    /// Per record type (by id), whether its records can change a site's name or a stack
    /// profile: after the slice, only those are read ([`HeapEventSource::names_later`]);
    /// `None`: every record may.
    fn naming_types(&self) -> Option<Vec<bool>> {
        None
    }
    /// The figures of a namespace by stack (extension stacks/1), from its leaves
    /// ([`SpaceSummary::leaves`](super::SpaceSummary::leaves)), where the trace declares stacks.
    fn stack_profile(
        &self,
        space: u32,
        leaves: &[super::LeafSummary],
    ) -> Option<crate::stacks::StackProfile> {
        let _ = (space, leaves);
        None
    }
    /// Write the source's state into an analysis-state blob (docs/format.md §15.4); false
    /// for a source that cannot be resumed.
    fn save_state(&self, e: &mut crate::index::analysis::Enc) -> bool {
        let _ = e;
        false
    }
    /// Replace the source's state by one [`HeapEventSource::save_state`] wrote.
    fn restore_state(
        &mut self,
        d: &mut crate::index::analysis::Dec<'_>,
    ) -> Result<(), crate::index::analysis::StateError> {
        Err(d.error("this source of heap events cannot be resumed"))
    }
    /// The numbers the source gives the live blocks holding id `id` (`key`) of namespace
    /// `space` in the events' [`Places`](crate::analysis::event::Places), the oldest first
    /// (several in a shared namespace), into `out` (cleared first); false where it numbers no
    /// block of the id. A resumed pass puts the blocks of a state there.
    fn places_of(&self, space: u32, key: u64, id: u64, out: &mut Vec<u32>) -> bool {
        let _ = (space, key, id);
        out.clear();
        false
    }
}

/// The [`HeapEventSource`] of a trace's own declarations (extension analysis/1): an
/// [`Interpreter`](crate::analysis::Interpreter) fed each record. Only namespaces of ids
/// (`kind = ids`) make heap figures; they are numbered in declaration order.
pub struct Declared<'s> {
    interp: crate::analysis::Interpreter<'s>,
    /// Declared namespace → index among the namespaces of ids.
    map: Vec<Option<u32>>,
    /// Index among the namespaces of ids → declared namespace.
    back: Vec<crate::analysis::SpaceId>,
    /// Frees of ids not alive per namespace of ids, then their sum (one more entry: what
    /// [`HeapEventSource::unknown_frees_total`] reads at every record).
    unknown: Vec<u64>,
}

impl<'s> Declared<'s> {
    /// The declarations of `schema`.
    pub fn new(schema: &'s Schema) -> Declared<'s> {
        let mut interp = crate::analysis::Interpreter::new(schema);
        // `Collect` counts findings of ids not alive and reads nothing else of them.
        interp.without_dead_details();
        let mut map = Vec::new();
        let mut back = Vec::new();
        for (i, ns) in interp.namespaces().iter().enumerate() {
            if ns.kind == crate::analysis::SpaceKind::Ids {
                map.push(Some(back.len() as u32));
                back.push(i as crate::analysis::SpaceId);
            } else {
                map.push(None);
            }
        }
        let unknown = vec![0; back.len() + 1];
        Declared {
            interp,
            map,
            back,
            unknown,
        }
    }
}

struct Collect<'a> {
    out: &'a mut Vec<HeapEvent>,
    /// The places of the events in `out`, where asked for.
    places: Option<&'a mut Vec<Option<Places>>>,
    map: &'a [Option<u32>],
    unknown: &'a mut [u64],
    /// The (declared namespace, key, id) of a define of a live id just reported: the free of
    /// the old block that the interpreter emits after it is not a free of the trace.
    redefined: Option<(u32, u64, u64)>,
}

/// What `Collect` and `Direct` take of a finding: a free of an id not alive is counted; a
/// define of a live id is remembered until the next event (the old block's free).
fn take_finding(
    f: &crate::analysis::Finding,
    map: &[Option<u32>],
    unknown: &mut [u64],
    redefined: &mut Option<(u32, u64, u64)>,
) {
    use crate::analysis::FindingKind;
    *redefined = None;
    match f.kind {
        FindingKind::NotAlive => {
            if let Some(Some(i)) = f.space.and_then(|s| map.get(s as usize)) {
                unknown[*i as usize] += 1;
                // The sum, kept last (`Declared::unknown`).
                if let Some(total) = unknown.last_mut() {
                    *total += 1;
                }
            }
        }
        FindingKind::Redefined => {
            if let Some(space) = f.space {
                *redefined = Some((space, f.key, f.id));
            }
        }
        _ => {}
    }
}

/// Where a pass's events go as they come ([`HeapEventSource::record_into`]): its statistics,
/// the slice opened at the first event of the record that opens it. Not part of the stable
/// interface.
#[doc(hidden)]
pub struct Inlet<'h> {
    pub(super) heap: &'h mut HeapStats,
    pub(super) start: &'h mut Option<Position>,
    /// The record's position (its time is each event's).
    pub(super) at: Position,
    /// Whether the slice is open by now.
    pub(super) opened: bool,
}

impl Inlet<'_> {
    /// One event, with the places of its blocks.
    #[inline]
    pub(super) fn event(&mut self, ev: &HeapEvent, places: Option<Places>) {
        let at = Position {
            time: ev.time,
            ..self.at
        };
        if !self.opened {
            self.opened = true;
            *self.start = Some(at);
            self.heap.open_window(at);
        }
        match places {
            Some(p) => self.heap.event_placed(ev, at, p),
            None => self.heap.event_at(ev, at),
        }
    }
}

// Design: `Direct` hands each event to where it goes as the interpreter makes it: to a closure
// of the pass (`record_each`), a second call through a pointer per event after the interpreter's
// call of its sink, or, for `Declared`, straight to the pass's statistics (`Inlet`,
// `record_into`), so that an event goes from the interpreter to `HeapStats` through one indirect
// call only. The library's `HeapEventSource`s other than `Declared` keep `record_each`.
/// Where [`Direct`] hands each event.
trait Take {
    fn take(&mut self, e: &HeapEvent, places: Places);
}

impl Take for &mut (dyn FnMut(&HeapEvent, Option<Places>) + '_) {
    #[inline]
    fn take(&mut self, e: &HeapEvent, places: Places) {
        (self)(e, Some(places))
    }
}

impl Take for &mut Inlet<'_> {
    #[inline]
    fn take(&mut self, e: &HeapEvent, places: Places) {
        self.event(e, Some(places))
    }
}

/// `Collect` without the vector: each event handed to `to` as the interpreter makes it.
struct Direct<'a, T> {
    to: T,
    map: &'a [Option<u32>],
    unknown: &'a mut [u64],
    redefined: Option<(u32, u64, u64)>,
}

impl<T: Take> crate::analysis::interpret::SinkDyn for Direct<'_, T> {
    #[inline]
    fn event_placed(&mut self, mut e: HeapEvent, places: Places) {
        if frees_redefined(&mut self.redefined, &e) {
            return;
        }
        if let Some(Some(i)) = self.map.get(e.space as usize) {
            e.space = *i;
            self.to.take(&e, places);
        }
    }

    fn finding(&mut self, f: crate::analysis::Finding) {
        take_finding(&f, self.map, self.unknown, &mut self.redefined);
    }

    fn wants_events(&self) -> bool {
        true
    }
}

// Design: `Collect` is a sink of the crate (`SinkDyn`), not a `Sink`: it takes the places of
// each event's blocks, so that `HeapStats` keeps its figures of a block at its place in the
// interpreter's slab and never looks an id up itself (docs/stats.md, "Memory").
impl crate::analysis::interpret::SinkDyn for Collect<'_> {
    fn event_placed(&mut self, mut e: HeapEvent, places: Places) {
        if frees_redefined(&mut self.redefined, &e) {
            return;
        }
        if let Some(Some(i)) = self.map.get(e.space as usize) {
            e.space = *i;
            self.out.push(e);
            if let Some(p) = &mut self.places {
                p.push(Some(places));
            }
        }
    }

    fn finding(&mut self, f: crate::analysis::Finding) {
        take_finding(&f, self.map, self.unknown, &mut self.redefined);
    }

    fn wants_events(&self) -> bool {
        true
    }
}

impl HeapEventSource for Declared<'_> {
    fn places_of(&self, space: u32, key: u64, id: u64, out: &mut Vec<u32>) -> bool {
        match self.back.get(space as usize) {
            Some(&sp) => self.interp.places_of(sp as usize, key, id, out),
            None => {
                out.clear();
                false
            }
        }
    }
    fn spaces(&self) -> Vec<SpaceInfo> {
        let unit = self.interp.time_unit().map(|u| u.keyword().to_string());
        self.back
            .iter()
            .map(|&i| {
                let ns = &self.interp.namespaces()[i as usize];
                SpaceInfo {
                    name: ns.name.clone(),
                    sized: ns.sized,
                    shared: ns.shared,
                    time_unit: unit.clone(),
                    temporary_reset: ns.temporary_reset,
                    stacks: self.interp.has_stacks(i),
                }
            })
            .collect()
    }

    fn record(&mut self, view: &RecordView<'_>, out: &mut Vec<HeapEvent>) -> Option<u64> {
        self.interp.record_dyn(
            view,
            &mut Collect {
                out,
                places: None,
                map: &self.map,
                unknown: &mut self.unknown,
                redefined: None,
            },
        );
        // The record's declared time, or the latest one before it.
        self.interp.clock()
    }

    fn record_placed(
        &mut self,
        view: &RecordView<'_>,
        out: &mut Vec<HeapEvent>,
        places: &mut Vec<Option<Places>>,
    ) -> Option<u64> {
        self.interp.record_dyn(
            view,
            &mut Collect {
                out,
                places: Some(places),
                map: &self.map,
                unknown: &mut self.unknown,
                redefined: None,
            },
        );
        self.interp.clock()
    }

    fn direct(&self) -> bool {
        true
    }

    fn record_each(
        &mut self,
        view: &RecordView<'_>,
        each: &mut dyn FnMut(&HeapEvent, Option<Places>),
    ) -> Option<u64> {
        self.interp.record_dyn(
            view,
            &mut Direct {
                to: each,
                map: &self.map,
                unknown: &mut self.unknown,
                redefined: None,
            },
        );
        self.interp.clock()
    }

    fn record_into(&mut self, view: &RecordView<'_>, into: &mut Inlet<'_>) -> Option<Option<u64>> {
        self.interp.record_dyn(
            view,
            &mut Direct {
                to: into,
                map: &self.map,
                unknown: &mut self.unknown,
                redefined: None,
            },
        );
        Some(self.interp.clock())
    }

    fn scan_fields(&self) -> Option<Vec<Option<Box<[crate::dtd::SlotId]>>>> {
        Some(self.interp.scan_fields())
    }

    fn record_values_into(
        &mut self,
        at: crate::analysis::At,
        values: &[u64],
        text: &dyn Fn(usize) -> Option<String>,
        into: &mut Inlet<'_>,
    ) -> Option<u64> {
        self.interp.record_values(
            at,
            values,
            text,
            &mut Direct {
                to: into,
                map: &self.map,
                unknown: &mut self.unknown,
                redefined: None,
            },
        );
        self.interp.clock()
    }

    fn site_name(&mut self, space: u32, site: u64) -> Option<String> {
        let i = *self.back.get(space as usize)?;
        self.interp.site_name(i, site)
    }

    fn unknown_frees(&self, space: u32) -> u64 {
        if space as usize >= self.back.len() {
            return 0;
        }
        self.unknown.get(space as usize).copied().unwrap_or(0)
    }

    fn unknown_frees_total(&self) -> Option<u64> {
        // Each count only grows, and only by one at a time: the sum changes when one does.
        self.unknown.last().copied()
    }

    fn stack_profile(
        &self,
        space: u32,
        leaves: &[super::LeafSummary],
    ) -> Option<crate::stacks::StackProfile> {
        let i = *self.back.get(space as usize)?;
        if !self.interp.has_stacks(i) {
            return None;
        }
        Some(self.interp.stack_profile(
            i,
            leaves.iter().map(|l| {
                let f = &l.figures;
                let costs = crate::stacks::Costs {
                    allocations: f.allocations,
                    bytes: f.bytes_allocated,
                    temporary: f.temporary,
                    peak: f.peak_bytes,
                    peak_blocks: f.peak_blocks,
                    leaked: f.leaked_bytes,
                    leaked_blocks: f.leaked_blocks,
                };
                (f.site, l.stack, f.name.clone(), costs)
            }),
        ))
    }

    fn save_state(&self, e: &mut crate::index::analysis::Enc) -> bool {
        let per_space = &self.unknown[..self.back.len()];
        e.len(per_space.len());
        for x in per_space {
            e.u64(*x);
        }
        self.interp.save_state(e);
        true
    }

    fn restore_state(
        &mut self,
        d: &mut crate::index::analysis::Dec<'_>,
    ) -> Result<(), crate::index::analysis::StateError> {
        let n = d.count(1)?;
        if n != self.back.len() {
            return Err(d.error("namespaces of another DTD"));
        }
        let mut total = 0u64;
        for x in &mut self.unknown[..n] {
            *x = d.u64()?;
            total = total.wrapping_add(*x);
        }
        self.unknown[n] = total;
        self.interp = self.interp.fresh();
        self.interp.restore_state(d)
    }

    fn naming_types(&self) -> Option<Vec<bool>> {
        Some(self.interp.naming_types())
    }

    fn names_later(&self) -> bool {
        self.back.iter().any(|&i| {
            let ns = &self.interp.namespaces()[i as usize];
            ns.site_space.is_some() || ns.site_text
        })
    }
}

/// Whether `e` is the free the interpreter makes of the old block of an id allocated again while
/// alive (`redefined`, noted by the finding just before it): the engine counts that allocation of
/// a live id itself, and the old block leaves the live state without a free or a lifetime, as
/// docs/stats.md says. Takes the note either way.
#[inline]
fn frees_redefined(redefined: &mut Option<(u32, u64, u64)>, e: &HeapEvent) -> bool {
    matches!((redefined.take(), e.op), (Some(r), HeapOp::Free { id }) if r == (e.space, e.key, id))
}
