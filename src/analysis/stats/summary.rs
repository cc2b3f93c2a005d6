//! The figures a pass returns: per namespace, per site, per record type, and the whole.

use super::{Curve, SourceLine, TypeSummary, Window};

/// What the statistics need to know about one namespace of ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceInfo {
    /// Its name in the DTD.
    pub name: String,
    /// Whether its allocations carry a byte count (else only blocks are counted).
    pub sized: bool,
    /// Whether many live blocks may hold the same id at once (heaptrack's allocation-info
    /// index); else a second allocation of a live id replaces the first (counted as
    /// `redefined`).
    pub shared: bool,
    /// The unit of the declared time, where the DTD declares a time (`ns`, `ms`, `ticks`).
    pub time_unit: Option<String>,
    /// After a free, the id the temporary rule compares the next free with, instead of none
    /// (`NS.temporaryReset`, extension stacks/1: heaptrack's reader).
    pub temporary_reset: Option<u64>,
    /// Whether the namespace's allocations have stacks (extension stacks/1): then
    /// [`SpaceSummary::leaves`] lists every site and stack.
    pub stacks: bool,
}

/// The figures of one site under one calling context (or of one site, where the site is its
/// own stack), for [`SpaceSummary::leaves`].
#[derive(Debug, Clone)]
pub struct LeafSummary {
    /// The calling-context node (extension stacks/1), `None` where the site is the stack.
    pub stack: Option<u64>,
    /// The site's figures under it.
    pub figures: SiteSummary,
}

/// Where something happened: a data record's position, where declared the time, and for an
/// imported trace the line of the input it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    /// The position among the data records ([`RecordView::is_data`]), from 0: the same for
    /// every encoding of the same records (metadata records, tables and split streams are not
    /// counted), unlike the record index `mtf dump` shows.
    pub record: u64,
    /// The declared time of the record (or the last one before it), where there is one.
    pub time: Option<u64>,
    /// For a trace made by `mtf import` from a line-based format: the input file and line.
    pub source: Option<SourceLine>,
}

/// A log2 class of sizes or lifetimes: `[lo, hi]`, how many fell in it and (for sizes) their
/// bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeClass {
    /// Smallest value of the class.
    pub lo: u64,
    /// Largest value of the class.
    pub hi: u64,
    /// How many values.
    pub count: u64,
    /// Their sum (sizes only; 0 for lifetimes). 128 bits: sizes of 64 bits add up beyond them.
    pub bytes: u128,
}

/// Lifetimes between define and undefine, in records or in declared time.
#[derive(Debug, Clone, PartialEq)]
pub struct LifetimeSummary {
    /// Blocks freed in the slice.
    pub count: u64,
    /// Shortest lifetime.
    pub min: u64,
    /// Mean lifetime (exact).
    pub mean: f64,
    /// Median: the smallest lifetime at or below which half the lifetimes fall (the
    /// ⌈n/2⌉-th smallest; exact unless [`LifetimeSummary::exact`] is false).
    pub median: u64,
    /// 99th percentile, as the median.
    pub p99: u64,
    /// Longest lifetime (exact).
    pub max: u64,
    /// Whether the median and p99 are exact: true unless more than [`EXACT_DISTINCT`]
    /// distinct lifetimes occurred, when they come from an HDR histogram (within 0.1 %).
    pub exact: bool,
    /// Log2 classes.
    pub histogram: Vec<SizeClass>,
}

/// One allocation site of a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteSummary {
    /// The site id (`None`: allocations without a declared site).
    pub site: Option<u64>,
    /// Its name, where the trace can resolve it.
    pub name: Option<String>,
    /// Allocations in the slice.
    pub allocations: u64,
    /// Bytes allocated in the slice.
    pub bytes_allocated: u128,
    /// Live bytes of this site at the namespace's peak (heaptrack's "peak" per site).
    pub peak_bytes: u128,
    /// Live blocks of this site at the namespace's peak.
    pub peak_blocks: u64,
    /// The site's own highest live bytes (DHAT's "max live"), over the whole trace up to the end
    /// of the slice.
    pub max_live_bytes: u128,
    /// Live bytes of this site at the end of the slice.
    pub leaked_bytes: u128,
    /// Live blocks of this site at the end of the slice.
    pub leaked_blocks: u64,
    /// Temporary allocations of this site.
    pub temporary: u64,
}

/// The figures of one namespace.
#[derive(Debug, Clone)]
pub struct SpaceSummary {
    /// The namespace's name.
    pub name: String,
    /// Whether sizes are declared (else byte figures are 0).
    pub sized: bool,
    /// The declared time unit.
    pub time_unit: Option<String>,
    /// Where the slice starts.
    pub start: Position,
    /// Where it ends (the first record after it, or the record count).
    pub end: Position,
    /// Allocations (a realloc counts as a free and an allocation).
    pub allocations: u64,
    /// Frees of live blocks.
    pub frees: u64,
    /// Moves that keep the block (objMove).
    pub moves: u64,
    /// Bytes allocated (128 bits: byte figures are exact beyond 2⁶⁴ − 1).
    pub bytes_allocated: u128,
    /// Bytes freed.
    pub bytes_freed: u128,
    /// Peak live bytes (the first time the highest value was reached).
    pub peak_bytes: u128,
    /// Live blocks at that peak.
    pub peak_blocks: u64,
    /// When the peak was reached.
    pub peak_at: Position,
    /// Most live blocks at once.
    pub max_blocks: u64,
    /// When.
    pub max_blocks_at: Position,
    /// Live bytes at the end of the slice (leaked, at the end of the trace).
    pub live_bytes: u128,
    /// Live blocks at the end of the slice.
    pub live_blocks: u64,
    /// Temporary allocations: freed with no other allocation or free of the namespace in between
    /// (heaptrack's definition).
    pub temporary: u64,
    /// Frees (and moves) of an id that was not live.
    pub unknown_frees: u64,
    /// Allocations of an id that was already live (not in a shared namespace).
    pub redefined: u64,
    /// Allocation sizes in log2 classes.
    pub sizes: Vec<SizeClass>,
    /// Lifetimes in records.
    pub lifetime_records: LifetimeSummary,
    /// Lifetimes in declared time, where both ends have a time.
    pub lifetime_time: Option<LifetimeSummary>,
    /// Every site, by peak bytes (descending).
    pub sites: Vec<SiteSummary>,
    /// Where the namespace has stacks ([`SpaceInfo::stacks`]): every site (or site under a
    /// calling context) in the order first allocated from, unfiltered; else empty.
    pub leaves: Vec<LeafSummary>,
    /// The figures by stack (extension stacks/1), made from `leaves` at the end of the pass.
    pub stacks: Option<crate::stacks::StackProfile>,
    /// Live bytes and blocks over the slice, sampled.
    pub curve: Curve,
    /// The input files of an imported trace (what [`SourceLine::file`] indexes).
    pub files: Vec<String>,
    /// Whether the trace has a clock (times that move): else times are not shown.
    pub clock: bool,
}

impl SpaceSummary {
    /// A position for people: `data record 4120, time 5 tick, line 4119 of trace`. The time is
    /// left out without a clock. The file name is as the import recorded it (escape it for a
    /// terminal).
    pub fn position(&self, a: Position) -> String {
        let mut o = format!("data record {}", a.record);
        if let (true, Some(t)) = (self.clock, a.time) {
            o.push_str(&format!(", time {t}"));
            if let Some(u) = &self.time_unit {
                o.push_str(&format!(" {u}"));
            }
        }
        if let Some(l) = a.source {
            o.push_str(&format!(", line {}", l.line));
            if let Some(f) = self.files.get(l.file as usize) {
                o.push_str(&format!(" of {f}"));
            }
        }
        o
    }
}

/// How sites are ranked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteOrder {
    /// By live bytes at the peak.
    Peak,
    /// By bytes alive at the end (leaked).
    Leaked,
    /// By bytes allocated.
    Allocated,
}

impl SpaceSummary {
    /// Whether anything happened in the namespace within the slice, or anything is alive in it.
    pub fn has_content(&self) -> bool {
        self.allocations > 0
            || self.frees > 0
            || self.moves > 0
            || self.live_blocks > 0
            || self.unknown_frees > 0
            || self.redefined > 0
    }

    /// Whether it holds bytes: sizes are declared and some byte figure is not zero.
    pub fn has_bytes(&self) -> bool {
        self.sized && (self.bytes_allocated > 0 || self.peak_bytes > 0 || self.live_bytes > 0)
    }

    /// The `n` first sites in an order (ties by site id), leaving out sites with nothing to
    /// show in that order.
    pub fn top_sites(&self, order: SiteOrder, n: usize) -> impl Iterator<Item = &SiteSummary> {
        let key = move |s: &SiteSummary| match order {
            SiteOrder::Peak => (s.peak_bytes, s.peak_blocks),
            SiteOrder::Leaked => (s.leaked_bytes, s.leaked_blocks),
            SiteOrder::Allocated => (s.bytes_allocated, s.allocations),
        };
        let mut v: Vec<&SiteSummary> = self.sites.iter().filter(|s| key(s) != (0, 0)).collect();
        v.sort_by(|a, b| key(b).cmp(&key(a)).then(a.site.cmp(&b.site)));
        v.truncate(n);
        v.into_iter()
    }
}

/// What a trace's declared times are (docs/format.md §14.4), up to where it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// No record had a time (the DTD declares none, or no record carries one).
    None,
    /// Every record's time was this one (a format whose time field is always 0).
    Constant(u64),
    /// The times moved: a clock.
    Moving,
}

/// Everything `mtf stats` reports about a trace (or a slice of it).
#[derive(Debug, Clone)]
pub struct Stats {
    /// The slice asked for.
    pub window: Window,
    /// Where the slice starts (its first record).
    pub start: Position,
    /// Where it ends (the first data record after it, or the number of data records read).
    pub end: Position,
    /// Data records in the slice ([`RecordView::is_data`]).
    pub records: u64,
    /// Records in the slice that only encode the data (metadata, section starts, table
    /// elements, split streams): they depend on the encoding, and have no figures.
    pub other_records: u64,
    /// Data records read in all (up to the end of the slice).
    pub data_records: u64,
    /// The trace's clock, as far as it was read.
    pub clock: Clock,
    /// Problems met while decoding (the figures cover what could be decoded).
    pub problems: u64,
    /// Records per type in the slice.
    pub types: Vec<TypeSummary>,
    /// Heap figures per namespace.
    pub spaces: Vec<SpaceSummary>,
    /// The input files of an imported trace that [`SourceLine::file`] indexes.
    pub files: Vec<String>,
}

impl Stats {
    /// The namespaces worth showing (docs/stats.md, *Which namespaces are shown*): those that
    /// hold bytes, or, when none does, those where anything happened. The others — a DTD's
    /// bookkeeping namespaces (Android's heaps and threads, heaptrack's allocation infos, the
    /// TPTP profiler's agents and classes) and namespaces with nothing in the slice — would
    /// fill tables with zeros and charts with flat lines.
    pub fn shown_spaces(&self) -> Vec<&SpaceSummary> {
        let bytes = self.spaces.iter().any(SpaceSummary::has_bytes);
        self.spaces
            .iter()
            .filter(|s| {
                if bytes {
                    s.has_bytes()
                } else {
                    s.has_content()
                }
            })
            .collect()
    }

    /// The namespaces [`Stats::shown_spaces`] leaves out.
    pub fn hidden_spaces(&self) -> Vec<&SpaceSummary> {
        let shown = self.shown_spaces();
        self.spaces
            .iter()
            .filter(|s| !shown.iter().any(|x| std::ptr::eq(*x, *s)))
            .collect()
    }
}
