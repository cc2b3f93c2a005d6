//! The seek index (docs/format.md §15): checkpoints of the decoder every N records or bytes,
//! stored beside a trace as `TRACE.idx`, so that reading can start at a record number or a
//! declared time without decoding what comes before.
//!
//! ```
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use metatf::index::{self, BuildOptions};
//! let opened = metatf::open("traces/hatf-le32.mtf")?;
//! let reader = opened.reader();
//! let idx = index::build(&reader, &BuildOptions { every_records: 4, ..Default::default() });
//! // Decode from the checkpoint at or before record 10.
//! let (cp, mut records) = idx.seek(&reader, index::Target::Record(10))?.expect("a checkpoint");
//! assert!(idx.entries()[cp].record <= 10);
//! while let Some(_event) = records.next() {}
//! # Ok(()) }
//! # demo().unwrap();
//! ```

// Design: the index lives beside the trace, not in it. Inside, it would have to be a section
// (which the DTD must declare, §2.2) or a new container extension bit, which a 1.0 reader
// refuses: an optional acceleration would make traces unreadable to readers that do not need
// it. A sidecar also indexes a trace that cannot be written (read-only, shared), and a
// compressed one (offsets are in the decompressed trace). The price is that it can go stale:
// it records the trace's size and hashes of its first and last 4 KiB, each checkpoint a hash of
// the bytes where it resumes, and the file a checksum of itself; what does not match is refused
// with a typed error, and the command line then decodes from the start with a warning.

pub mod analysis;
pub mod tables;

use std::path::{Path, PathBuf};

use miette::Diagnostic;

use crate::decode::{
    Checkpoint, Event, EventStream, Reader, RecordView, Records, ResumeError, ScanStop, ScanTimes,
    StoredError,
};
use crate::dtd::analysis::TimeUnit;
use crate::dtd::Interp;
use crate::dtd::Schema;
use crate::io::{IoError, Output};
use crate::layout::MetaProperty;

/// The first bytes of an index file: `\x7fMTX`.
pub const MAGIC: [u8; 4] = [0x7F, b'M', b'T', b'X'];
/// The version of the index format this library reads and writes.
pub const VERSION: u8 = 1;
/// Bytes of the fixed header.
const HEADER: usize = 56;
/// Bytes of an entry before its checkpoint: length, has-time, time, probe.
const ENTRY_HEAD: usize = 4 + 1 + 8 + 8;
/// Bytes of the smallest stored checkpoint (docs/format.md §15.3).
const MIN_CHECKPOINT: usize = 8 + 8 + 4 + 1 + 8;
/// Bytes hashed at each end of the trace for its fingerprint.
const ENDS: u64 = 4096;
/// Bytes hashed at a checkpoint's offset.
const PROBE: u64 = 32;
pub use crate::limits::MAX_INDEX_BYTES;

/// 64-bit FNV-1a, as docs/format.md §15.2 specifies.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_on(FNV1A_START, bytes)
}

/// FNV-1a's value before any byte.
pub(crate) const FNV1A_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a of the bytes `h` is the value of, followed by `bytes` (for a file read in pieces).
pub(crate) fn fnv1a_on(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// How often [`build`] takes a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildOptions {
    /// A checkpoint after at least this many records since the previous one (or the start).
    pub every_records: u64,
    /// ... or after at least this many bytes, whichever comes first.
    pub every_bytes: u64,
}

/// Records between checkpoints by default: 65,536 (about 5 ms of decoding; an index of a
/// 100 M-record trace holds 1,526 checkpoints).
pub const DEFAULT_EVERY_RECORDS: u64 = 1 << 16;
/// Bytes between checkpoints by default: 1 MiB, for traces of large records.
pub const DEFAULT_EVERY_BYTES: u64 = 1 << 20;

impl Default for BuildOptions {
    fn default() -> BuildOptions {
        BuildOptions {
            every_records: DEFAULT_EVERY_RECORDS,
            every_bytes: DEFAULT_EVERY_BYTES,
        }
    }
}

/// One checkpoint of an [`Index`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Records before it: the index of the record it resumes at.
    pub record: u64,
    /// Byte offset of that record.
    pub offset: u64,
    /// The latest declared time (docs/format.md §14.4) of the records before it — the largest,
    /// if times go backwards — or `None` if none of them has a time or the DTD declares none.
    pub time: Option<u64>,
    /// Hash of the trace bytes at `offset` (§15.2).
    probe: u64,
    /// The stored checkpoint (§15.3).
    state: Vec<u8>,
    /// Where the stored checkpoint starts in the index file (for messages).
    at: u64,
}

/// What the index knows of the trace it was built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fingerprint {
    size: u64,
    head: u64,
    tail: u64,
}

impl Fingerprint {
    fn of(bytes: &[u8]) -> Fingerprint {
        let n = bytes.len();
        let ends = (ENDS as usize).min(n);
        Fingerprint {
            size: n as u64,
            head: fnv1a(&bytes[..ends]),
            tail: fnv1a(&bytes[n - ends..]),
        }
    }
}

fn probe(bytes: &[u8], offset: u64) -> u64 {
    let start = (offset as usize).min(bytes.len());
    let end = (offset.saturating_add(PROBE) as usize).min(bytes.len());
    fnv1a(&bytes[start..end])
}

/// A seek index: checkpoints of one trace (docs/format.md §15).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    /// Where it was read from or is to be written (for messages).
    name: String,
    fingerprint: Fingerprint,
    options: BuildOptions,
    time_unit: Option<TimeUnit>,
    entries: Vec<Entry>,
    /// Which sections are tables, from the tables file beside it (§15.6) or, when built, from
    /// the pass of [`Reader::is_table`] where the trace needs one.
    tables: tables::Tables,
}

/// Where to start reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// At a record index (0-based, every record counted, as `mtf dump` numbers them).
    Record(u64),
    /// At the first record whose declared time is at least this (docs/format.md §14.4).
    Time(u64),
}

/// Why an index cannot be read, does not fit its trace, or disagrees with it.
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum IndexError {
    /// The index file could not be read or written.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Io(#[from] IoError),
    /// The bytes are not an index this library reads.
    #[error("{name}: not a valid seek index: {what} at byte {at}")]
    #[diagnostic(
        code(mtf::index::corrupt),
        help("rebuild it with `mtf index TRACE` (with `-o FILE` for an index named by --index FILE), or delete it: reading works without it")
    )]
    Corrupt {
        /// The index file.
        name: String,
        /// Offset in the index file.
        at: u64,
        /// What is wrong.
        what: String,
    },
    /// The index was built for another trace, or the trace changed since.
    #[error("{name}: the index does not belong to this trace ({why})")]
    #[diagnostic(
        code(mtf::index::stale),
        help("rebuild it with `mtf index TRACE` (with `-o FILE` for an index named by --index FILE), or delete it: reading works without it")
    )]
    Stale {
        /// The index file.
        name: String,
        /// What differs.
        why: String,
    },
    /// An analysis state (§15.4) made for another index or DTD.
    #[error("{name}: the analysis state does not belong to the index beside it ({why})")]
    #[diagnostic(
        code(mtf::index::stale),
        help("rebuild both with `mtf index TRACE`, or delete the state: figures are then read from the start of the trace")
    )]
    StaleState {
        /// The state file.
        name: String,
        /// What differs.
        why: String,
    },
    /// A checkpoint does not fit the trace.
    #[error("{name}: checkpoint {checkpoint} does not fit the trace: {source}")]
    #[diagnostic(code(mtf::index::stale))]
    Resume {
        /// The index file.
        name: String,
        /// Number of the checkpoint (0-based).
        checkpoint: usize,
        /// Why.
        #[source]
        source: ResumeError,
    },
    /// A checkpoint differs from the one a full decode takes there (`mtf index --check`).
    #[error(
        "{name}: checkpoint {checkpoint} (record {record}) differs from a full decode: {what}"
    )]
    #[diagnostic(
        code(mtf::index::mismatch),
        help(
            "rebuild it with `mtf index TRACE` (with `-o FILE` for an index named by --index FILE)"
        )
    )]
    Mismatch {
        /// The index file.
        name: String,
        /// Number of the checkpoint (0-based).
        checkpoint: usize,
        /// Its record number.
        record: u64,
        /// What differs.
        what: String,
    },
    /// The tables file beside the index (§15.6) cannot be used, or differs from what a full
    /// decode finds (`mtf check --index`, `mtf index --check`).
    #[error("{name}: {what}")]
    #[diagnostic(
        code(mtf::index::tables),
        help("rebuild it with `mtf index TRACE`, or delete it: a decode from a checkpoint then reads the trace's metadata records once to find the tables")
    )]
    Tables {
        /// The tables file.
        name: String,
        /// What is wrong.
        what: String,
    },
    /// A time target, and the index holds no times.
    #[error("{name}: the index holds no times (the DTD declares none, §14.4)")]
    #[diagnostic(code(mtf::index::no_times))]
    NoTimes {
        /// The index file.
        name: String,
    },
}

/// The index file beside a trace: `TRACE.idx` (`None` for standard input, `-`).
pub fn sidecar(trace: &Path) -> Option<PathBuf> {
    if trace.as_os_str() == "-" {
        return None;
    }
    let mut s = trace.as_os_str().to_owned();
    s.push(".idx");
    Some(PathBuf::from(s))
}

/// The declared time of a record (docs/format.md §14.4: the sum of its time fields in the
/// DTD's finest unit), if it has time fields and they occurred. A time field read through a
/// reference counts as every analysis role reads one (§14.1, [`Field::number`](crate::decode::Field::number)): the integer
/// its element holds, else the number it carries — what `mtf check` counts.
pub(crate) fn record_time(schema: &Schema, view: &RecordView<'_>) -> Option<u64> {
    let unit = schema.analysis.time_unit?;
    let decl = schema.analysis.records.get(view.record_id() as usize)?;
    if decl.time.is_empty() {
        return None;
    }
    let int = |slot| {
        view.fields()
            .find(|f| f.slot() == slot)
            .and_then(|f| f.number())
    };
    let mut total = None;
    for &(slot, u) in &decl.time {
        if !decl.applies(slot, int) {
            continue; // a time the record does not carry (its guard's flag)
        }
        let v = int(slot)?;
        let scale = (u.nanos() / unit.nanos()).max(1);
        total = Some(total.unwrap_or(0u64).wrapping_add(v.wrapping_mul(scale)));
    }
    total
}

/// What a scan reads of the records' times (as [`record_time`] takes them): per record type its
/// time fields and their scales to the DTD's unit, and their guards; a type with a time field a
/// scan cannot read, or a guard testing one (the tag, a byte string), is one a scan stops
/// before.
fn scan_times(schema: &Schema) -> ScanTimes {
    let Some(unit) = schema.analysis.time_unit else {
        return ScanTimes::default();
    };
    let per_type = (0..schema.records.len())
        .map(|rid| {
            let Some(decl) = schema.analysis.records.get(rid) else {
                return Some(Box::default());
            };
            let rt = &schema.records[rid];
            let integer = |slot: crate::dtd::SlotId| {
                slot != 0
                    && rt
                        .slots
                        .get(slot as usize)
                        .is_some_and(|d| !matches!(d.kind, crate::dtd::SlotKind::Bytes { .. }))
            };
            let guard = |slot| decl.guards.iter().find(|(s, _)| *s == slot).map(|g| g.1);
            let readable = decl
                .time
                .iter()
                .all(|&(slot, _)| integer(slot) && guard(slot).is_none_or(|g| integer(g.slot)));
            readable.then(|| {
                decl.time
                    .iter()
                    .map(|&(slot, u)| (slot, (u.nanos() / unit.nanos()).max(1)))
                    .collect()
            })
        })
        .collect();
    let mut times = ScanTimes::new(per_type);
    for (rid, decl) in schema.analysis.records.iter().enumerate() {
        for &(slot, _) in &decl.time {
            if let Some((_, g)) = decl.guards.iter().find(|(s, _)| *s == slot) {
                times.guard(rid, slot, g.slot, g.value, g.negated);
            }
        }
    }
    times
}

/// Takes checkpoints while a caller decodes: call [`Builder::before_next`] before each
/// [`Records::next`] and [`Builder::record`] for each record, then [`Builder::finish`]. For a
/// loop that does something else as well (`mtf check` verifies an index this way); [`build`]
/// is the loop alone.
pub struct Builder<'r> {
    reader: &'r Reader<'r>,
    options: BuildOptions,
    times: bool,
    entries: Vec<Entry>,
    last_record: u64,
    last_offset: u64,
    /// Offset after the last record seen.
    pos: u64,
    /// The latest time, and what a scan reads of the records' times.
    clock: ScanTimes,
    /// A checkpoint whose state would be large waits until this many bytes have passed.
    defer_bytes: u64,
    /// The live values that made the waiting checkpoint wait.
    defer_live: usize,
    /// Where the trace needs the tables file (§15.6): the sections that the DTD and the
    /// metadata records seen so far make tables.
    tables: Option<[bool; 256]>,
}

/// A checkpoint that was due but not taken: its live sets (extension live/1) would hold more
/// than 1/16 of the trace bytes since the previous checkpoint (docs/format.md §15.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waiting {
    /// Values in the live sets where it was due (8 bytes each in a checkpoint).
    pub live_values: usize,
    /// Trace bytes since the previous checkpoint (or the start) it needed.
    pub bytes_needed: u64,
    /// Trace bytes since the previous checkpoint (or the start) there were.
    pub bytes_there: u64,
}

impl<'r> Builder<'r> {
    /// A builder for a decode of `reader` from its start.
    pub fn new(reader: &'r Reader<'r>, options: BuildOptions) -> Builder<'r> {
        let schema = reader.schema();
        let times = schema.analysis.time_unit.is_some()
            && schema.analysis.records.iter().any(|d| !d.time.is_empty());
        Builder {
            reader,
            options: BuildOptions {
                every_records: options.every_records.max(1),
                every_bytes: options.every_bytes.max(1),
            },
            times,
            entries: Vec::new(),
            last_record: 0,
            last_offset: 0,
            pos: 0,
            clock: if times {
                scan_times(schema)
            } else {
                ScanTimes::default()
            },
            defer_bytes: 0,
            defer_live: 0,
            tables: reader.tables_need_pass().then(|| reader.dtd_tables()),
        }
    }

    /// After the decode: the checkpoint that was due at the end but waited for its live sets
    /// ([`Waiting`]), if any; a trace whose live sets stay large gets no checkpoint at all.
    pub fn waiting(&self) -> Option<Waiting> {
        (self.defer_bytes > 0).then(|| Waiting {
            live_values: self.defer_live,
            bytes_needed: self.defer_bytes,
            bytes_there: self.pos.saturating_sub(self.last_offset),
        })
    }

    /// Whether the records' values are needed (for their times): if so, the decode must not
    /// [skip values](Records::skip_values), and a scan must be [`Builder::scan`].
    pub fn needs_values(&self) -> bool {
        self.times
    }

    /// Step over records with [`Records::scan`] (through `records`, counted in `per_type`) up
    /// to `stop` and no further than [`Builder::scan_stop`], reading their times when the
    /// index needs them ([`Records::scan_timed`]); then call [`Builder::scanned`].
    pub fn scan(
        &mut self,
        records: &mut dyn EventStream,
        per_type: &mut [u64],
        stop: ScanStop,
    ) -> u64 {
        let due = self.scan_stop();
        let stop = ScanStop {
            records: stop.records.min(due.records),
            offset: stop.offset.min(due.offset),
        };
        match self.times {
            true => records.scan_timed(per_type, stop, &mut self.clock),
            false => records.scan(per_type, stop),
        }
    }

    /// As [`Builder::scan`], giving `each` the values `values` names of each record stepped
    /// over ([`Records::scan_values`]); then call [`Builder::scanned`].
    pub fn scan_values(
        &mut self,
        records: &mut dyn EventStream,
        per_type: &mut [u64],
        stop: ScanStop,
        values: &mut crate::decode::ScanValues,
        each: &mut dyn FnMut(crate::decode::Scanned<'_>) -> bool,
    ) -> u64 {
        let due = self.scan_stop();
        let stop = ScanStop {
            records: stop.records.min(due.records),
            offset: stop.offset.min(due.offset),
        };
        let times = self.times.then_some(&mut self.clock);
        records.scan_values(per_type, stop, values, times, each)
    }

    /// Before each call of [`Records::next`]: takes a checkpoint when one is due.
    pub fn before_next(&mut self, records: &Records<'_>) {
        let count = records.count();
        if count == 0 || count == self.last_record || !records.at_record_boundary() {
            return;
        }
        let bytes = self.pos.saturating_sub(self.last_offset);
        let due = count - self.last_record >= self.options.every_records
            || bytes >= self.options.every_bytes;
        if !due || bytes < self.defer_bytes {
            return;
        }
        let cp = records.checkpoint();
        // The live sets of a checkpoint cost at most 1/16 of the trace bytes since the previous
        // one: with large live sets, checkpoints are taken further apart (what they hold stays
        // under 1/16 of the trace).
        let estimate = 8 * cp.live_values() as u64;
        if estimate.saturating_mul(16) > bytes {
            self.defer_bytes = estimate.saturating_mul(16);
            self.defer_live = cp.live_values();
            return;
        }
        self.push(&cp);
    }

    /// Where a [`Records::scan`] between two calls of [`Builder::before_next`] must stop: at
    /// the first record boundary where a checkpoint may be due (by records, by bytes, or where
    /// a deferred one may be taken). Call [`Builder::scanned`] after the scan.
    pub fn scan_stop(&self) -> ScanStop {
        if self.defer_bytes > 0 {
            // A checkpoint was due already and waits for these bytes only.
            return ScanStop {
                records: u64::MAX,
                offset: self.last_offset.saturating_add(self.defer_bytes),
            };
        }
        ScanStop {
            records: self.last_record.saturating_add(self.options.every_records),
            offset: self.last_offset.saturating_add(self.options.every_bytes),
        }
    }

    /// After a [`Records::scan`] that stepped over `n` records (for what [`Builder::record`]
    /// notes of each: where the last one ends; a builder that [needs values](Builder::needs_values)
    /// for the times must have scanned with [`Builder::scan`]).
    pub fn scanned(&mut self, records: &Records<'_>, n: u64) {
        if n > 0 {
            self.pos = records.offset();
        }
    }

    fn push(&mut self, cp: &Checkpoint) {
        let mut state = Vec::new();
        cp.to_bytes(self.reader.schema(), &mut state);
        self.entries.push(Entry {
            record: cp.record(),
            offset: cp.offset(),
            time: self.clock.latest(),
            probe: probe(self.reader.bytes(), cp.offset()),
            state,
            at: 0,
        });
        self.last_record = cp.record();
        self.last_offset = cp.offset();
        self.defer_bytes = 0;
    }

    /// For each record event.
    pub fn record(&mut self, view: &RecordView<'_>) {
        self.pos = view.offset() + view.len();
        // The metadata records that make a field read a section are events (a scan stops
        // before them): the tables, as `Reader::is_table`'s pass finds them, without it.
        if let (Some(tables), Some(m)) = (self.tables.as_mut(), view.metadata()) {
            if let MetaProperty::Interp(
                Interp::SectionOffset(n) | Interp::SectionStride { section: n, .. },
            ) = m.property
            {
                tables[n as usize] = true;
            }
        }
        if self.times {
            if let Some(t) = record_time(self.reader.schema(), view) {
                self.clock.note(t);
            }
        }
    }

    /// The index, to be written as `name` (for messages). Where the trace has a section that
    /// the DTD alone does not make a table, it holds which sections are tables (§15.6): the
    /// answer of [`Reader::is_table`], found in the decode (the metadata records it met), so
    /// that pass is not made.
    pub fn finish(self, name: impl Into<String>) -> Index {
        let tables = match self.tables {
            Some(mut sections) => {
                sections[0] = false;
                tables::Tables::Stored {
                    dtd: analysis::schema_hash(self.reader.schema()),
                    sections: Box::new(sections),
                }
            }
            None => tables::Tables::None,
        };
        Index {
            tables,
            name: name.into(),
            fingerprint: Fingerprint::of(self.reader.bytes()),
            options: self.options,
            time_unit: if self.times {
                self.reader.schema().analysis.time_unit
            } else {
                None
            },
            entries: self.entries,
        }
    }
}

/// Build the index of a trace: one full decode.
pub fn build(reader: &Reader<'_>, options: &BuildOptions) -> Index {
    let mut b = Builder::new(reader, *options);
    b.decode(reader, &mut |_, _| {});
    b.finish("(index)")
}

impl Builder<'_> {
    /// Decodes all of `reader`'s trace into this builder; `progress` is told the byte offset
    /// and the records decoded as the decode goes. Records that cannot be invalid but for their
    /// length are stepped over (`Records::scan`, reading their times if the DTD declares
    /// times), stopping where a checkpoint may be due.
    pub fn decode(&mut self, reader: &Reader<'_>, progress: &mut dyn FnMut(u64, u64)) {
        let mut records = reader.records();
        records.skip_values(!self.needs_values());
        let mut per_type = vec![0u64; reader.schema().records.len()];
        loop {
            self.before_next(&records);
            let n = self.scan(&mut records, &mut per_type, ScanStop::NONE);
            self.scanned(&records, n);
            self.before_next(&records);
            let count = records.count();
            let Some(event) = records.next() else { break };
            if let Event::Record(v) = event {
                progress(v.offset(), count + 1);
                self.record(&v);
            }
        }
    }
}

fn time_code(u: Option<TimeUnit>) -> u8 {
    match u {
        None => 0,
        Some(TimeUnit::Ns) => 1,
        Some(TimeUnit::Us) => 2,
        Some(TimeUnit::Ms) => 3,
        Some(TimeUnit::S) => 4,
        Some(TimeUnit::Tick) => 5,
    }
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// The checks of an index file's fixed head (magic, version, reserved bytes) and checksum; its
/// time unit.
fn check_head(
    bytes: &[u8],
    bad: &dyn Fn(usize, String) -> IndexError,
) -> Result<Option<TimeUnit>, IndexError> {
    if bytes.len() < HEADER + 8 {
        return Err(bad(
            bytes.len(),
            format!("{} bytes, too short", bytes.len()),
        ));
    }
    if bytes[..4] != MAGIC {
        return Err(bad(0, "no index magic (\\x7fMTX)".into()));
    }
    if bytes[4] != VERSION {
        return Err(bad(
            4,
            format!("version {}; this reader knows version {VERSION}", bytes[4]),
        ));
    }
    let time_unit = match bytes[5] {
        0 => None,
        1 => Some(TimeUnit::Ns),
        2 => Some(TimeUnit::Us),
        3 => Some(TimeUnit::Ms),
        4 => Some(TimeUnit::S),
        5 => Some(TimeUnit::Tick),
        u => return Err(bad(5, format!("unknown time unit code {u}"))),
    };
    if bytes[6..8] != [0, 0] {
        return Err(bad(6, "reserved bytes are not zero".into()));
    }
    let body = bytes.len() - 8;
    if fnv1a(&bytes[..body]) != le64(bytes, body) {
        return Err(bad(body, "checksum mismatch (the file is damaged)".into()));
    }
    Ok(time_unit)
}

/// Checkpoint `i`, stored at `at` in `body` (the file without its checksum), and the bytes it
/// takes.
fn read_entry(
    body: &[u8],
    at: usize,
    i: usize,
    time_unit: Option<TimeUnit>,
    bad: &dyn Fn(usize, String) -> IndexError,
) -> Result<(Entry, usize), IndexError> {
    if body.len() - at < ENTRY_HEAD {
        return Err(bad(at, format!("checkpoint {i} is cut short")));
    }
    let len = u32::from_le_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]) as usize;
    if len < ENTRY_HEAD - 4 + MIN_CHECKPOINT || len > body.len() - at - 4 {
        return Err(bad(
            at,
            format!("checkpoint {i} has an impossible length {len}"),
        ));
    }
    let has_time = body[at + 4];
    if has_time > 1 {
        return Err(bad(at + 4, format!("checkpoint {i}: time flag {has_time}")));
    }
    if has_time == 1 && time_unit.is_none() {
        return Err(bad(
            at + 4,
            format!("checkpoint {i} has a time without a unit"),
        ));
    }
    let time = (has_time == 1).then(|| le64(body, at + 5));
    if has_time == 0 && le64(body, at + 5) != 0 {
        return Err(bad(
            at + 5,
            format!("checkpoint {i}: a time without its flag"),
        ));
    }
    let probe = le64(body, at + 13);
    let state = body[at + ENTRY_HEAD..at + 4 + len].to_vec();
    let entry = Entry {
        record: le64(&state, 0),
        offset: le64(&state, 8),
        time,
        probe,
        state,
        at: (at + ENTRY_HEAD) as u64,
    };
    Ok((entry, 4 + len))
}

impl Index {
    /// The checkpoints, in trace order (the start of the trace is not one).
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// How often checkpoints were taken.
    pub fn options(&self) -> BuildOptions {
        self.options
    }

    /// The unit of the checkpoints' times, if they have times.
    pub fn time_unit(&self) -> Option<TimeUnit> {
        self.time_unit
    }

    /// Where the index was read from, or is to be written to.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Name the index (for messages).
    pub fn set_name(&mut self, name: impl Into<String>) {
        self.name = name.into();
    }

    /// The size of the trace it was built for.
    pub fn trace_size(&self) -> u64 {
        self.fingerprint.size
    }

    /// The stored form (docs/format.md §15.1).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            HEADER
                + 8
                + self
                    .entries
                    .iter()
                    .map(|e| ENTRY_HEAD + e.state.len())
                    .sum::<usize>(),
        );
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(time_code(self.time_unit));
        out.extend_from_slice(&[0, 0]);
        for v in [
            self.fingerprint.size,
            self.fingerprint.head,
            self.fingerprint.tail,
            self.options.every_records,
            self.options.every_bytes,
            self.entries.len() as u64,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for e in &self.entries {
            out.extend_from_slice(&((1 + 8 + 8 + e.state.len()) as u32).to_le_bytes());
            out.push(e.time.is_some() as u8);
            out.extend_from_slice(&e.time.unwrap_or(0).to_le_bytes());
            out.extend_from_slice(&e.probe.to_le_bytes());
            out.extend_from_slice(&e.state);
        }
        let sum = fnv1a(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// Write the index to `path` (atomically: a temporary file renamed into place; `-` is
    /// standard output), and beside it (not for `-`) its tables file (§15.6) when it has one,
    /// else removing one left from an earlier index.
    pub fn write(&self, path: &Path) -> Result<(), IndexError> {
        use std::io::Write;
        let mut out = Output::create(path)?;
        let bytes = self.to_bytes();
        out.write_all(&bytes).map_err(|e| out.error(e))?;
        out.commit()?;
        if let Some(tp) = tables::tables_path(path) {
            match &self.tables {
                tables::Tables::Stored { dtd, sections } => tables::write(
                    &tp,
                    &tables::to_bytes(le64(&bytes, bytes.len() - 8), *dtd, sections),
                )?,
                // One left from an earlier index would be refused (bound to that index).
                _ if tp.is_file() => {
                    let _ = std::fs::remove_file(&tp);
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Whether it has a tables file (§15.6) that a decode resumed from it uses.
    pub fn has_tables(&self) -> bool {
        matches!(self.tables, tables::Tables::Stored { .. })
    }

    /// Which sections its tables file (§15.6) gives as tables, indexed by section id.
    pub fn table_sections(&self) -> Option<&[bool; 256]> {
        match &self.tables {
            tables::Tables::Stored { sections, .. } => Some(&**sections),
            _ => None,
        }
    }

    /// Read an index file (at most [`MAX_INDEX_BYTES`]; `-` is standard input). Its magic is
    /// checked before more than its first bytes are read: a large file named by mistake is
    /// refused at once.
    pub fn load(path: &Path) -> Result<Index, IndexError> {
        use std::io::Read;
        let stdin = path.as_os_str() == "-";
        let name = if stdin {
            "standard input".to_string()
        } else {
            crate::escape::escape_path(path).to_string()
        };
        let read_err = |source| IoError::Read {
            path: path.to_path_buf(),
            source,
        };
        let too_large = |name| IndexError::Corrupt {
            name,
            at: MAX_INDEX_BYTES,
            what: format!("larger than {MAX_INDEX_BYTES} bytes"),
        };
        let file: Box<dyn Read> = if stdin {
            Box::new(std::io::stdin().lock())
        } else {
            let file = std::fs::File::open(path).map_err(|source| IoError::Open {
                path: path.to_path_buf(),
                source,
            })?;
            // A regular file is refused by its size before anything is read: reading 4 GiB
            // only to refuse them took half a minute.
            if let Ok(meta) = file.metadata() {
                if meta.is_file() && meta.len() > MAX_INDEX_BYTES {
                    return Err(too_large(name));
                }
            }
            Box::new(file)
        };
        let mut bytes = Vec::new();
        let mut file = file.take(HEADER as u64);
        file.read_to_end(&mut bytes).map_err(read_err)?;
        if bytes.len() >= 4 && bytes[..4] != MAGIC {
            return Err(IndexError::Corrupt {
                name,
                at: 0,
                what: "no index magic (\\x7fMTX)".into(),
            });
        }
        let mut file = file.into_inner().take(MAX_INDEX_BYTES + 1 - HEADER as u64);
        file.read_to_end(&mut bytes).map_err(read_err)?;
        if bytes.len() as u64 > MAX_INDEX_BYTES {
            return Err(too_large(name));
        }
        let mut index = Index::from_bytes(&bytes, name)?;
        if let Some(tp) = tables::tables_path(path).filter(|_| !stdin) {
            index.tables = tables::load(&tp, le64(&bytes, bytes.len() - 8));
        }
        Ok(index)
    }

    /// Read the stored form; `name` names it in messages. Everything is checked: a corrupt
    /// index is an error naming the byte, never a panic or an allocation the bytes do not
    /// justify.
    pub fn from_bytes(bytes: &[u8], name: impl Into<String>) -> Result<Index, IndexError> {
        let name = name.into();
        let bad = |at: usize, what: String| IndexError::Corrupt {
            name: name.clone(),
            at: at as u64,
            what,
        };
        let time_unit = check_head(bytes, &bad)?;
        let body = bytes.len() - 8;
        let fingerprint = Fingerprint {
            size: le64(bytes, 8),
            head: le64(bytes, 16),
            tail: le64(bytes, 24),
        };
        let options = BuildOptions {
            every_records: le64(bytes, 32),
            every_bytes: le64(bytes, 40),
        };
        let count = le64(bytes, 48);
        let room = (body - HEADER) / (ENTRY_HEAD + MIN_CHECKPOINT);
        if count > room as u64 {
            return Err(bad(
                48,
                format!("{count} checkpoints cannot fit in {} bytes", bytes.len()),
            ));
        }
        let mut entries: Vec<Entry> = Vec::with_capacity(count as usize);
        let mut at = HEADER;
        for i in 0..count as usize {
            let stored = &bytes[..body];
            let (entry, len) = read_entry(stored, at, i, time_unit, &bad)?;
            if let Some(prev) = entries.last() {
                if entry.record <= prev.record || entry.offset < prev.offset {
                    return Err(bad(
                        at + ENTRY_HEAD,
                        format!("checkpoint {i} is not after checkpoint {}", i - 1),
                    ));
                }
            }
            if entry.offset > fingerprint.size {
                return Err(bad(
                    at + ENTRY_HEAD + 8,
                    format!("checkpoint {i} is past the end of the trace"),
                ));
            }
            entries.push(entry);
            at += len;
        }
        if at != body {
            return Err(bad(
                at,
                format!("{} bytes after the last checkpoint", body - at),
            ));
        }
        Ok(Index {
            name,
            fingerprint,
            options,
            time_unit,
            entries,
            tables: tables::Tables::None,
        })
    }

    /// Whether the index was built for this trace: its size and the hashes of its first and
    /// last 4 KiB.
    pub fn fits(&self, reader: &Reader<'_>) -> Result<(), IndexError> {
        let now = Fingerprint::of(reader.bytes());
        let why = if now.size != self.fingerprint.size {
            format!(
                "it was built for a trace of {} bytes, this one has {}",
                self.fingerprint.size, now.size
            )
        } else if now.head != self.fingerprint.head {
            "the trace's first bytes differ".to_string()
        } else if now.tail != self.fingerprint.tail {
            "the trace's last bytes differ".to_string()
        } else {
            return Ok(());
        };
        Err(IndexError::Stale {
            name: self.name.clone(),
            why,
        })
    }

    /// Checkpoint `i`, read for `schema`.
    pub fn checkpoint(&self, i: usize, schema: &Schema) -> Result<Checkpoint, IndexError> {
        let e = &self.entries[i];
        Checkpoint::from_bytes(&e.state, schema).map_err(|StoredError { at, what }| {
            IndexError::Corrupt {
                name: self.name.clone(),
                at: e.at + at as u64,
                what: format!("checkpoint {i}: {what}"),
            }
        })
    }

    /// The checkpoint to start from for `target`: the last one at or before the target record,
    /// or the last one before which every declared time is below the target time. `None` when
    /// the target is before the first checkpoint (read from the start).
    pub fn find(&self, target: Target) -> Result<Option<usize>, IndexError> {
        let n = match target {
            Target::Record(r) => self.entries.partition_point(|e| e.record <= r),
            Target::Time(t) => {
                if self.time_unit.is_none() {
                    return Err(IndexError::NoTimes {
                        name: self.name.clone(),
                    });
                }
                // Times before checkpoints only grow (the largest so far): a partition.
                self.entries
                    .partition_point(|e| e.time.is_none_or(|m| m < t))
            }
        };
        Ok(n.checked_sub(1))
    }

    /// Resume a decode of `reader` at checkpoint `i`, after checking that the index fits the
    /// trace ([`Index::fits`]) and that the trace's bytes at the checkpoint are those it was
    /// taken at.
    pub fn records_at<'r>(
        &self,
        reader: &'r Reader<'r>,
        i: usize,
    ) -> Result<Records<'r>, IndexError> {
        self.fits(reader)?;
        self.resume_at(reader, i)
    }

    /// [`Index::records_at`] for a caller that has checked [`Index::fits`] once already for
    /// this reader (the planner of `-j`, which resumes at every checkpoint: the fingerprint
    /// hashes 8 KiB of the trace each time).
    pub fn resume_at<'r>(
        &self,
        reader: &'r Reader<'r>,
        i: usize,
    ) -> Result<Records<'r>, IndexError> {
        let e = &self.entries[i];
        if probe(reader.bytes(), e.offset) != e.probe {
            return Err(IndexError::Stale {
                name: self.name.clone(),
                why: format!(
                    "the trace's bytes at checkpoint {i} (offset {}) differ",
                    e.offset
                ),
            });
        }
        let cp = self.checkpoint(i, reader.schema())?;
        // Which sections are tables, from the tables file: not the pass over the whole trace.
        if let tables::Tables::Stored { dtd, sections } = &self.tables {
            if !reader.tables_known()
                && reader.tables_need_pass()
                && *dtd == analysis::schema_hash(reader.schema())
            {
                reader.assume_tables(**sections);
            }
        }
        reader
            .records_from(&cp)
            .map_err(|source| IndexError::Resume {
                name: self.name.clone(),
                checkpoint: i,
                source,
            })
    }

    /// [`Index::find`] then [`Index::records_at`]: the checkpoint used and the decode from it,
    /// or `None` when the target is before the first checkpoint.
    pub fn seek<'r>(
        &self,
        reader: &'r Reader<'r>,
        target: Target,
    ) -> Result<Option<(usize, Records<'r>)>, IndexError> {
        // A stale index is an error even when no checkpoint of it would be used.
        self.fits(reader)?;
        match self.find(target)? {
            None => Ok(None),
            Some(i) => Ok(Some((i, self.records_at(reader, i)?))),
        }
    }

    /// Compare with `fresh`, the index a full decode builds with the same options
    /// ([`Builder`]): the first checkpoint that differs is an error naming it.
    pub fn verify(&self, fresh: &Index) -> Result<(), IndexError> {
        let mismatch = |checkpoint: usize, record: u64, what: String| IndexError::Mismatch {
            name: self.name.clone(),
            checkpoint,
            record,
            what,
        };
        if self.fingerprint != fresh.fingerprint {
            return Err(IndexError::Stale {
                name: self.name.clone(),
                why: "the trace's size or ends differ".into(),
            });
        }
        for (i, (a, b)) in self.entries.iter().zip(&fresh.entries).enumerate() {
            if a.record != b.record || a.offset != b.offset {
                return Err(mismatch(
                    i,
                    a.record,
                    format!(
                        "it is at record {} (byte {}), a full decode takes it at record {} \
                         (byte {})",
                        a.record, a.offset, b.record, b.offset
                    ),
                ));
            }
            if a.time != b.time {
                let unit = self.time_unit.map_or("", |u| u.keyword());
                let show =
                    |t: Option<u64>| t.map_or_else(|| "no time".into(), |t| format!("{t} {unit}"));
                return Err(mismatch(
                    i,
                    a.record,
                    format!(
                        "the largest time before it is {}, a full decode has {}",
                        show(a.time),
                        show(b.time)
                    ),
                ));
            }
            if a.probe != b.probe || a.state != b.state {
                return Err(mismatch(i, a.record, "the metadata state differs".into()));
            }
        }
        if self.entries.len() != fresh.entries.len() {
            let i = self.entries.len().min(fresh.entries.len());
            let record = self
                .entries
                .get(i)
                .or(fresh.entries.get(i))
                .map_or(0, |e| e.record);
            return Err(mismatch(
                i,
                record,
                format!(
                    "the index has {} checkpoints, a full decode takes {}",
                    self.entries.len(),
                    fresh.entries.len()
                ),
            ));
        }
        self.verify_tables(fresh)
    }

    /// Why the tables file beside it (§15.6) is not used, when there is one that cannot be
    /// read (decoding from a checkpoint then finds the tables with a pass, as without it).
    pub fn tables_problem(&self) -> Option<IndexError> {
        match &self.tables {
            tables::Tables::Unusable { at, what } => Some(IndexError::Tables {
                name: format!("{}.tables", self.name),
                what: format!("not a valid tables file: {what} at byte {at}"),
            }),
            _ => None,
        }
    }

    /// Compare the tables file with `fresh`'s answer (an index without one is not wrong, only
    /// slower to resume from).
    fn verify_tables(&self, fresh: &Index) -> Result<(), IndexError> {
        use tables::Tables;
        let err = |what: String| IndexError::Tables {
            name: format!("{}.tables", self.name),
            what,
        };
        let list = |s: &[bool; 256]| {
            let ids: Vec<String> = (1..256).filter(|&i| s[i]).map(|i| i.to_string()).collect();
            if ids.is_empty() {
                "none".to_string()
            } else {
                ids.join(", ")
            }
        };
        match (&self.tables, &fresh.tables) {
            (Tables::None, _) => Ok(()),
            (Tables::Unusable { at, what }, _) => {
                Err(err(format!("not a valid tables file: {what} at byte {at}")))
            }
            (Tables::Stored { .. }, Tables::None | Tables::Unusable { .. }) => Err(err(
                "the trace needs no tables file (the DTD tells which sections are tables), \
                 a full decode makes none"
                    .into(),
            )),
            (
                Tables::Stored {
                    dtd: a,
                    sections: s,
                },
                Tables::Stored {
                    dtd: b,
                    sections: f,
                },
            ) => {
                if a != b {
                    Err(err("it was made with another DTD".into()))
                } else if s != f {
                    Err(err(format!(
                        "it gives the sections {} as tables, a full decode finds {}",
                        list(s),
                        list(f)
                    )))
                } else {
                    Ok(())
                }
            }
        }
    }
}

/// Build the index a full decode of `reader` gives with `index`'s options, and compare
/// ([`Index::verify`]).
pub fn check(reader: &Reader<'_>, index: &Index) -> Result<(), IndexError> {
    index.fits(reader)?;
    index.verify(&build(reader, &index.options))
}
