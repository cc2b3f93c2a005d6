//! The heap events of a trace for `stats`, `diff`, `plot` and `report`.
//!
//! INTERIM: a stand-in for the DTD's allocation declarations (HATF record names), replaced by
//! the library's producer when it lands.

use metatf::analysis::event::{HeapEvent, HeapOp};
use metatf::analysis::stats::{EventSource, SpaceInfo};
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
