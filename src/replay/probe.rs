//! The waste of a replay by size class and site ([`crate::frag::pages`]), taken at two
//! moments: after the operation at which the trace's live bytes peak (known before the run)
//! and after the last one, before the live blocks are freed. The time it takes is left out of
//! the replay's wall time; the RSS it uses is read before it allocates anything.
//!
//! The sites come from a file the parent writes beside the operations ([`write_site`]): for
//! each operation that makes a block, its data record and its site, in trace order. A block
//! the replay holds knows the record that made it; the file is read once per moment, in
//! order, against the live blocks sorted by record.

use std::collections::HashMap;
use std::io::{self, BufReader, Read, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::frag::pages::{attribute, LiveSpan};
use crate::frag::Attributed;

use super::raw;

const ENTRY: usize = 24;

/// Appends one entry to a sites file: the block made by data record `record` is of site
/// `site` in namespace `space`.
pub fn write_site(
    out: &mut impl Write,
    record: u64,
    space: u32,
    site: Option<u64>,
) -> io::Result<()> {
    let mut b = [0u8; ENTRY];
    b[0..8].copy_from_slice(&record.to_le_bytes());
    b[8..12].copy_from_slice(&space.to_le_bytes());
    b[12..16].copy_from_slice(&u32::from(site.is_some()).to_le_bytes());
    b[16..24].copy_from_slice(&site.unwrap_or(0).to_le_bytes());
    out.write_all(&b)
}

fn read_site(b: &[u8; ENTRY]) -> (u64, (u32, Option<u64>)) {
    let u64_at = |i: usize| {
        let mut x = [0u8; 8];
        x.copy_from_slice(&b[i..i + 8]);
        u64::from_le_bytes(x)
    };
    let space = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
    let has = b[12] & 1 != 0;
    (u64_at(0), (space, has.then(|| u64_at(16))))
}

// Design: the first moment is the trace's live peak, not the RSS peak: the live peak is known
// before the run (the parent's pass found it), so the snapshot is taken once, between two
// operations; the RSS peak is known only afterwards, and a snapshot at every new RSS high
// would cost O(live blocks) many times and disturb the RSS and time it measures. The end
// covers the memory an allocator keeps after the frees.
/// What the replay attributes, and when.
#[derive(Debug, Default)]
pub struct Probe {
    /// Take the first snapshot after this many operations (`None`: at the end only).
    pub at: Option<u64>,
    /// The sites file; `None`: every block is of no site.
    pub sites: Option<PathBuf>,
    spent: Duration,
    result: Attributed,
}

impl Probe {
    /// A probe that attributes after `at` operations and at the end, with the sites of `sites`.
    pub fn new(at: Option<u64>, sites: Option<PathBuf>) -> Probe {
        Probe {
            at,
            sites,
            ..Probe::default()
        }
    }

    /// Whether the first snapshot is due after `n` operations.
    pub(crate) fn due(&self, n: u64) -> bool {
        self.at == Some(n)
    }

    /// The time the snapshots took.
    pub(crate) fn spent(&self) -> Duration {
        self.spent
    }

    /// Takes a snapshot after `event` operations of the live blocks `blocks` (address, size,
    /// record), the RSS `base` bytes above the start; `end`: the last one.
    pub(crate) fn take(
        &mut self,
        event: u64,
        base: u64,
        blocks: impl Iterator<Item = (u64, u64, u64)>,
        end: bool,
    ) {
        let rss = raw::resident_bytes().unwrap_or(0).saturating_sub(base);
        let start = Instant::now();
        let mut spans: Vec<(LiveSpan, u64)> = blocks
            .map(|(start, size, record)| {
                (
                    LiveSpan {
                        start,
                        size,
                        site: 0,
                    },
                    record,
                )
            })
            .collect();
        let table = self.sites_of(&mut spans);
        let mut spans: Vec<LiveSpan> = spans.into_iter().map(|(s, _)| s).collect();
        let page = raw::page_size() as u64;
        let snapshot = attribute(
            &mut spans,
            &table,
            event,
            rss,
            page,
            &mut raw::resident_pages,
        );
        if end {
            self.result.at_end = Some(snapshot);
        } else {
            self.result.at_peak = Some(snapshot);
        }
        self.spent += start.elapsed();
    }

    /// Runs the code of a snapshot once on a block of its own, before the replay's baseline
    /// is taken, so that the pages of that code (and the sites file's first read) are
    /// resident before, not counted as the allocator's own at the first snapshot.
    pub(crate) fn warm(&mut self) {
        let block = std::hint::black_box([1u8; 64]);
        let mut spans = vec![(
            LiveSpan {
                start: block.as_ptr() as usize as u64,
                size: block.len() as u64,
                site: 0,
            },
            0,
        )];
        let table = self.sites_of(&mut spans);
        let mut spans: Vec<LiveSpan> = spans.into_iter().map(|(s, _)| s).collect();
        let page = raw::page_size() as u64;
        let rss = raw::resident_bytes().unwrap_or(0);
        let _ = attribute(&mut spans, &table, 0, rss, page, &mut raw::resident_pages);
    }

    /// Sets each span's site from the sites file; returns the table the indices point into.
    fn sites_of(&self, spans: &mut [(LiveSpan, u64)]) -> Vec<(u32, Option<u64>)> {
        let mut table = vec![(0, None)];
        let Some(file) = self
            .sites
            .as_ref()
            .and_then(|p| std::fs::File::open(p).ok())
        else {
            return table;
        };
        let mut index: HashMap<(u32, Option<u64>), u32> = HashMap::new();
        index.insert((0, None), 0);
        spans.sort_unstable_by_key(|s| s.1);
        let mut r = BufReader::with_capacity(1 << 16, file);
        let mut b = [0u8; ENTRY];
        let mut entry: Option<(u64, (u32, Option<u64>))> = None;
        for (span, record) in spans.iter_mut() {
            while entry.is_none_or(|(rec, _)| rec < *record) {
                if r.read_exact(&mut b).is_err() {
                    entry = None;
                    break;
                }
                entry = Some(read_site(&b));
            }
            if let Some((rec, key)) = entry {
                if rec == *record {
                    let next = table.len() as u32;
                    span.site = *index.entry(key).or_insert_with(|| {
                        table.push(key);
                        next
                    });
                }
            }
        }
        table
    }

    /// The snapshots taken.
    pub(crate) fn finish(self) -> Attributed {
        self.result
    }
}
