//! The heap events of a trace's blocks — the namespaces of ids its DTD declares with byte
//! counts (docs/format.md §14) — in trace order, for `simulate` and `replay`, with what the
//! reading met besides them.

use crate::analysis::event::{HeapEvent, HeapOp};
use crate::analysis::{Finding, FindingKind, Interpreter, Sink, SpaceKind};
use crate::decode::{Event, Reader};

/// What reading a trace's heap events met besides the events.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// Records that could not be decoded (and damaged regions).
    pub problems: u64,
    /// Lines the import kept verbatim (`import_raw` records): not events.
    pub raw_lines: u64,
    /// Where the interpreter stopped at its limit of tracked ids (the events after it are
    /// missing).
    pub stopped_at: Option<u64>,
    /// Frees (and reallocs) of ids that were not live: no event, counted here from the
    /// interpreter's findings. A free of the null id is neither.
    pub unknown_frees: u64,
}

impl Reading {
    /// Records not decoded, plus one when the interpreter stopped early: a nonzero count makes
    /// the figures incomplete (the command exits 1).
    pub fn problems(&self) -> u64 {
        self.problems + u64::from(self.stopped_at.is_some())
    }

    /// What the events leave out, a warning each, for the trace named `name` (already escaped
    /// for a terminal): records not decoded, lines kept verbatim, events missing after the
    /// interpreter's limit.
    pub fn warnings(&self, name: &str) -> Vec<String> {
        let mut lines = Vec::new();
        if self.problems > 0 {
            lines.push(format!(
                "mtf: {name}: {} records could not be decoded and are not replayed (mtf check shows them)",
                self.problems
            ));
        }
        if self.raw_lines > 0 {
            lines.push(format!(
                "mtf: {name}: {} lines the import kept verbatim (not records of the format, or values \
                 too wide for its DTD) are not replayed",
                self.raw_lines
            ));
        }
        if let Some(at) = self.stopped_at {
            lines.push(format!(
                "mtf: {name}: too many live ids to track: the events after data record {at} are missing"
            ));
        }
        lines
    }
}

/// A trace whose DTD declares no allocations: nothing to replay or simulate.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[error(
    "its DTD declares no allocations (no namespace of ids with byte counts, extension \
     analysis/1 of docs/format.md §14), so there is nothing to replay"
)]
#[diagnostic(code(mtf::usage::analysis))]
pub struct NoAllocations;

struct Blocks<'a, F> {
    f: &'a mut F,
    /// The current record's resident bytes of the block it ends (`F.resident`), if it says.
    resident: Option<u64>,
    sized: Vec<bool>,
    unknown: u64,
    /// The current record's position among the data records (docs/stats.md, *Positions*): the
    /// events' `record`, the same for every encoding of the trace.
    data: u64,
}

impl<F: FnMut(&HeapEvent, Option<u64>)> Blocks<'_, F> {
    fn sized(&self, space: u32) -> bool {
        self.sized.get(space as usize).copied().unwrap_or(false)
    }
}

impl<F: FnMut(&HeapEvent, Option<u64>)> Sink for Blocks<'_, F> {
    fn event(&mut self, mut e: HeapEvent) {
        if self.sized(e.space) {
            e.record = self.data;
            // The resident bytes are of the block the record ends or moves away.
            let resident = match e.op {
                HeapOp::Alloc { .. } => None,
                HeapOp::Free { .. } | HeapOp::Move { .. } => self.resident,
            };
            (self.f)(&e, resident);
        }
    }
    fn resident(&mut self, bytes: u64) {
        self.resident = Some(bytes);
    }
    fn finding(&mut self, finding: Finding) {
        if finding.kind == FindingKind::NotAlive && finding.space.is_some_and(|s| self.sized(s)) {
            self.unknown += 1;
        }
    }
}

/// Hands each heap event of the blocks of `reader`'s trace to `f`, in trace order.
pub fn for_each_block_event(
    reader: &Reader<'_>,
    mut f: impl FnMut(&HeapEvent),
) -> Result<Reading, NoAllocations> {
    for_each_block_event_resident(reader, |e, _| f(e)).map(|(reading, _)| reading)
}

/// As [`for_each_block_event`], with the bytes of the block a free or a move ends that the
/// trace says were resident (`F.resident`, docs/format.md §14.1), where it says; and the
/// interpreter that read the events returned: what names their sites
/// ([`Interpreter::site_name`]), as `mtf stats` names them.
pub fn for_each_block_event_resident<'a>(
    reader: &Reader<'a>,
    mut f: impl FnMut(&HeapEvent, Option<u64>),
) -> Result<(Reading, Interpreter<'a>), NoAllocations> {
    let schema = reader.schema();
    let mut interp = Interpreter::new(schema);
    let sized: Vec<bool> = interp
        .namespaces()
        .iter()
        .map(|n| n.kind == SpaceKind::Ids && n.sized)
        .collect();
    if !sized.contains(&true) {
        return Err(NoAllocations);
    }
    let raw = schema
        .records
        .iter()
        .position(|r| r.name == "import_raw")
        .map(|i| i as crate::dtd::RecordId);
    let mut sink = Blocks {
        f: &mut f,
        resident: None,
        sized,
        unknown: 0,
        data: 0,
    };
    let mut reading = Reading::default();
    let mut records = reader.records();
    while let Some(ev) = records.next() {
        match ev {
            Event::Record(v) => {
                if Some(v.record_id()) == raw {
                    reading.raw_lines += 1;
                }
                sink.resident = None;
                interp.record(&v, &mut sink);
                if interp.stopped() && reading.stopped_at.is_none() {
                    reading.stopped_at = Some(sink.data);
                }
                if v.is_data() {
                    sink.data += 1;
                }
            }
            Event::Problem(_) | Event::Damage(_) => reading.problems += 1,
        }
    }
    reading.problems += records.dropped_problems();
    reading.unknown_frees = sink.unknown;
    Ok((reading, interp))
}

/// Names the sites of `snapshot` as `mtf stats` does, from the interpreter that read the
/// trace, and keeps the `top` with the most waste.
pub fn name_sites(snapshot: &mut crate::frag::Snapshot, interp: &Interpreter<'_>, top: usize) {
    snapshot.sites.truncate(top);
    for s in snapshot.sites.iter_mut() {
        if let Some(id) = s.site {
            s.name = interp.site_name(s.space, id);
        }
    }
}
