//! The heap events of a trace for `stats`, `diff`, `plot` and `report`.
//!
//! INTERIM: a stand-in for the DTD's allocation declarations (HATF record names), replaced by
//! the library's producer when it lands.

use metatf::analysis::event::{HeapEvent, HeapOp};
use metatf::analysis::stats::{Bound, EventSource, Place, SpaceInfo, Window};
use metatf::decode::RecordView;
use metatf::Opened;

use super::common::Failure;

struct Hatf;

impl EventSource for Hatf {
    fn spaces(&self) -> Vec<SpaceInfo> {
        vec![SpaceInfo {
            name: "heap".into(),
            sized: true,
            shared: false,
            time_unit: None,
        }]
    }

    fn record(&mut self, v: &RecordView<'_>, out: &mut Vec<HeapEvent>) -> Option<u64> {
        let g = |n: &str| v.get(n).and_then(|x| x.as_u64());
        let op = match v.name() {
            "alloc" => {
                let size = g("size").unwrap_or(0);
                let size = if g("func") == Some(1) {
                    size * g("nmemb").unwrap_or(1)
                } else {
                    size
                };
                HeapOp::Alloc {
                    id: g("address")?,
                    size,
                    align: None,
                }
            }
            "free" => HeapOp::Free { id: g("address")? },
            "realloc" | "reallocAllocFree" => HeapOp::Move {
                old: g("old")?,
                new: g("address")?,
                size: g("size"),
            },
            "reallocAlloc" => HeapOp::Alloc {
                id: g("address")?,
                size: g("size").unwrap_or(0),
                align: None,
            },
            "reallocFree" => HeapOp::Free { id: g("old")? },
            _ => return None,
        };
        out.push(HeapEvent {
            record: v.index(),
            space: 0,
            key: 0,
            thread: None,
            time: None,
            site: None,
            op,
        });
        None
    }

    fn site_name(&mut self, _: u32, _: u64) -> Option<String> {
        None
    }
}

/// The event source of an opened trace.
pub fn source_for(_o: &Opened) -> Result<Box<dyn EventSource + '_>, Failure> {
    Ok(Box::new(Hatf))
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
