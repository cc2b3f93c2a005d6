//! Replay operations: heap events with dense thread and namespace numbers, in a fixed-size
//! binary form that the measuring child processes read (so that a trace read from a pipe or
//! decompressed is decoded once, and no child measures the decoder).

use std::collections::HashMap;
use std::io::{self, BufRead, Read, Seek, Write};

use crate::analysis::event::{HeapEvent, HeapOp, OpCounts};
use crate::simulate::{LiveMap, Sample, Samples};

pub use crate::analysis::event::OpKind;

/// One operation to replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayOp {
    /// What it does.
    pub kind: OpKind,
    /// The thread that does it (dense, 0-based in order of first appearance).
    pub thread: u32,
    /// The namespace of its ids (dense: one per (space, key) of the events).
    pub ns: u32,
    /// The block (the old block of a realloc or move).
    pub id: u64,
    /// The new block's id (realloc, move).
    pub new: u64,
    /// Bytes asked for (alloc, realloc).
    pub size: u64,
    /// The alignment asked for (0: the allocator's default).
    pub align: u64,
    /// The trace record it comes from.
    pub record: u64,
    /// Whether it is the last operation of its thread (the thread then ends, as threads of
    /// the traced program did).
    pub last: bool,
    /// When the trace says it started, in ns after the trace's first declared time
    /// ([`NO_TIME`] where the trace gives it none).
    pub time: u64,
    /// How many bytes of the block it makes the traced program touched (Android's
    /// `present_bytes`), [`NO_PRESENT`] where the trace does not say.
    pub present: u64,
}

/// [`ReplayOp::time`] of an operation without a time.
pub const NO_TIME: u64 = u64::MAX;
/// [`ReplayOp::present`] of a block whose touched bytes the trace does not say.
pub const NO_PRESENT: u64 = u64::MAX;

// Design: version 02 adds each operation's time and present bytes (16 bytes); a file of
// version 01 (45-byte operations, kept as fuzzing regressions) is still read, without them.
const MAGIC: &[u8; 8] = b"MTFRPL02";
const MAGIC_01: &[u8; 8] = b"MTFRPL01";
const OP_BYTES: usize = 61;
const OP_BYTES_01: usize = 45;
const HEADER_BYTES: u64 = 20;
/// The bit of the kind byte that marks the last operation of a thread.
const LAST: u8 = 0x80;

/// An operation's kind in the file.
fn kind_code(kind: OpKind) -> u8 {
    match kind {
        OpKind::Alloc => 0,
        OpKind::Free => 1,
        OpKind::Realloc => 2,
        OpKind::Move => 3,
    }
}

impl ReplayOp {
    fn write(&self, out: &mut impl Write) -> io::Result<()> {
        let mut b = [0u8; OP_BYTES];
        b[0] = kind_code(self.kind) | if self.last { LAST } else { 0 };
        b[1..5].copy_from_slice(&self.thread.to_le_bytes());
        b[5..9].copy_from_slice(&self.ns.to_le_bytes());
        b[9..17].copy_from_slice(&self.id.to_le_bytes());
        b[17..25].copy_from_slice(&self.new.to_le_bytes());
        b[25..33].copy_from_slice(&self.size.to_le_bytes());
        b[33..37].copy_from_slice(&(self.align.min(u32::MAX as u64) as u32).to_le_bytes());
        b[37..45].copy_from_slice(&self.record.to_le_bytes());
        b[45..53].copy_from_slice(&self.time.to_le_bytes());
        b[53..61].copy_from_slice(&self.present.to_le_bytes());
        out.write_all(&b)
    }

    fn read(b: &[u8; OP_BYTES], v01: bool) -> io::Result<ReplayOp> {
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(x)
        };
        let kind = match b[0] & !LAST {
            0 => OpKind::Alloc,
            1 => OpKind::Free,
            2 => OpKind::Realloc,
            3 => OpKind::Move,
            k => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("not a replay operation (kind {k})"),
                ))
            }
        };
        Ok(ReplayOp {
            kind,
            thread: u32_at(1),
            ns: u32_at(5),
            id: u64_at(9),
            new: u64_at(17),
            size: u64_at(25),
            align: u32_at(33) as u64,
            record: u64_at(37),
            last: b[0] & LAST != 0,
            time: if v01 { NO_TIME } else { u64_at(45) },
            present: if v01 { NO_PRESENT } else { u64_at(53) },
        })
    }
}

/// What the trace itself says, counted while its events become operations: the reference the
/// replay's figures are set beside.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceSummary {
    /// Heap events.
    pub events: u64,
    /// Every operation by kind; `unknown_frees` also counts the frees of ids that were not
    /// live that the trace's reading met without an event (`command::blocks::Reading`).
    pub counts: OpCounts,
    /// Threads (1 for a trace without threads).
    pub threads: u32,
    /// The largest sum of live block sizes, in trace order.
    pub peak_live: u64,
    /// The event after which it was reached.
    pub peak_event: u64,
    /// Live bytes over the trace (`heap` is unused: 0).
    pub live: Vec<Sample>,
    /// The spacing of `live`'s points in events (a power of two): the replay samples RSS at
    /// the same points.
    pub every: u64,
    /// Events with a declared time (`--timing recorded` keeps their gaps).
    pub timed: u64,
    /// The time from the first to the last declared time of an event (ns).
    pub duration_ns: u64,
    /// The unit of the DTD's times (`ns`, `us`, `ms`, `s`, `tick`), where it declares one.
    pub time_unit: Option<&'static str>,
    /// Blocks whose resident bytes the trace gives (Android's present bytes: `F.resident`).
    pub present_blocks: u64,
}

/// Turns heap events into replay operations and counts what the trace says.
#[derive(Debug)]
pub struct OpsBuilder {
    threads: HashMap<Option<u64>, u32>,
    spaces: HashMap<(u32, u64), u32>,
    /// Each live block's size and the index of the operation that made it.
    live: LiveMap<(u32, u64), (u64, u64)>,
    live_bytes: u64,
    samples: Samples,
    summary: TraceSummary,
    last_ops: Vec<u64>,
    /// Nanoseconds per unit of the events' times (`None`: times unusable, a logical clock).
    nanos: Option<u64>,
    first_time: Option<u64>,
}

impl Default for OpsBuilder {
    fn default() -> Self {
        OpsBuilder {
            threads: HashMap::new(),
            spaces: HashMap::new(),
            live: LiveMap::new(),
            live_bytes: 0,
            samples: Samples::new(200),
            summary: TraceSummary::default(),
            last_ops: Vec::new(),
            nanos: None,
            first_time: None,
        }
    }
}

impl OpsBuilder {
    /// A builder that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder for events whose times are in `unit` (the DTD's
    /// [`crate::dtd::analysis::Analysis::time_unit`]): each operation gets its time in ns after
    /// the first. A logical clock (`tick`) gives no times.
    pub fn with_time_unit(unit: Option<crate::dtd::analysis::TimeUnit>) -> Self {
        use crate::dtd::analysis::TimeUnit;
        OpsBuilder {
            nanos: unit.filter(|u| *u != TimeUnit::Tick).map(TimeUnit::nanos),
            summary: TraceSummary {
                time_unit: unit.map(TimeUnit::keyword),
                ..TraceSummary::default()
            },
            ..Self::default()
        }
    }

    /// The operation for `event`.
    pub fn op(&mut self, event: &HeapEvent) -> ReplayOp {
        self.op_resident(event, None).0
    }

    /// The operation for `event`, and where the event says how many bytes of the block it ends
    /// or moves away were resident (`resident`, from
    /// [`crate::command::blocks::for_each_block_event_resident`]), the index of the operation
    /// that made that block with those bytes: its [`ReplayOp::present`]
    /// ([`OpsWriter::set_present`]). A negative count (Android's signed field) says nothing.
    pub fn op_resident(
        &mut self,
        event: &HeapEvent,
        resident: Option<u64>,
    ) -> (ReplayOp, Option<(u64, u64)>) {
        let resident = resident.filter(|&r| r < 1 << 63);
        let mut patch = None;
        let next = self.threads.len() as u32;
        let thread = *self.threads.entry(event.thread).or_insert(next);
        let next = self.spaces.len() as u32;
        let ns = *self.spaces.entry((event.space, event.key)).or_insert(next);
        let index = self.summary.events;
        if self.last_ops.len() <= thread as usize {
            self.last_ops.resize(thread as usize + 1, 0);
        }
        self.last_ops[thread as usize] = index;
        let s = &mut self.summary;
        s.events += 1;
        let mut op = ReplayOp {
            kind: event.op.kind(),
            thread,
            ns,
            id: 0,
            new: 0,
            size: 0,
            align: 0,
            record: event.record,
            last: false,
            time: NO_TIME,
            present: NO_PRESENT,
        };
        if let (Some(t), Some(n)) = (event.time, self.nanos) {
            let ns = t.saturating_mul(n);
            let first = *self.first_time.get_or_insert(ns);
            // A time before the first (threads' clocks need not agree) is due at once.
            op.time = ns.saturating_sub(first).min(NO_TIME - 1);
            s.timed += 1;
            s.duration_ns = s.duration_ns.max(op.time);
        }
        let live = match event.op {
            HeapOp::Alloc { id, size, align } => {
                op.id = id;
                op.new = id;
                op.size = size;
                op.align = align.unwrap_or(0);
                self.live.insert((ns, id), (size, index));
                self.live_bytes = self.live_bytes.saturating_add(size);
                true
            }
            HeapOp::Free { id } => {
                op.id = id;
                let held = self.live.remove(&(ns, id));
                if let Some((size, made)) = held {
                    self.live_bytes -= size;
                    patch = resident.map(|r| (made, r));
                }
                held.is_some()
            }
            HeapOp::Move { old, new, size } => {
                op.id = old;
                op.new = new;
                op.size = size.unwrap_or(0);
                let held = self.live.remove(&(ns, old));
                let before = held.map(|(b, _)| b);
                if let Some((b, made)) = held {
                    self.live_bytes -= b;
                    patch = resident.map(|r| (made, r));
                }
                if let Some(after) = size.or(before) {
                    // A block moved without a call keeps the operation that made it.
                    let made = match (size, held) {
                        (None, Some((_, made))) => made,
                        _ => index,
                    };
                    self.live.insert((ns, new), (after, made));
                    self.live_bytes = self.live_bytes.saturating_add(after);
                }
                before.is_some()
            }
        };
        s.counts.count(op.kind, live);
        if self.live_bytes > s.peak_live {
            s.peak_live = self.live_bytes;
            s.peak_event = s.events;
        }
        if self.samples.due(s.events) {
            self.samples.push(Sample {
                event: s.events,
                heap: 0,
                live: self.live_bytes,
            });
        }
        (op, patch)
    }

    /// Threads seen so far (at least 1).
    pub fn threads(&self) -> u32 {
        (self.threads.len() as u32).max(1)
    }

    /// The index of the last operation of each thread so far (by dense thread number).
    pub fn last_ops(&self) -> &[u64] {
        &self.last_ops
    }

    /// Events seen so far.
    pub fn events(&self) -> u64 {
        self.summary.events
    }

    /// The summary of everything seen.
    pub fn finish(mut self) -> TraceSummary {
        let last = Sample {
            event: self.summary.events,
            heap: 0,
            live: self.live_bytes,
        };
        self.summary.threads = (self.threads.len() as u32).max(1);
        let every = self.samples.every();
        let points = self.samples.finish(last);
        self.summary.every = every;
        self.summary.live = points;
        self.summary
    }
}

/// Writes operations in the binary form [`OpsReader`] reads: a header with the number of
/// threads and operations, then fixed-size records.
pub fn write_ops(
    out: &mut impl Write,
    threads: u32,
    ops: impl IntoIterator<Item = ReplayOp>,
    count: u64,
) -> io::Result<()> {
    out.write_all(MAGIC)?;
    out.write_all(&threads.to_le_bytes())?;
    out.write_all(&count.to_le_bytes())?;
    for op in ops {
        op.write(out)?;
    }
    Ok(())
}

/// Starts an operations file whose counts are filled in later with [`finish_ops_header`].
pub fn write_ops_header(out: &mut impl Write) -> io::Result<()> {
    out.write_all(MAGIC)?;
    out.write_all(&[0u8; 12])
}

/// Writes one operation after [`write_ops_header`].
pub fn write_op(out: &mut impl Write, op: &ReplayOp) -> io::Result<()> {
    op.write(out)
}

/// Fills in the counts of an operations file begun with [`write_ops_header`].
pub fn finish_ops_header<W: Write + io::Seek>(
    out: &mut W,
    threads: u32,
    count: u64,
) -> io::Result<()> {
    out.seek(io::SeekFrom::Start(MAGIC.len() as u64))?;
    out.write_all(&threads.to_le_bytes())?;
    out.write_all(&count.to_le_bytes())?;
    out.seek(io::SeekFrom::End(0))?;
    Ok(())
}

/// Marks the operations at `indices` (from [`OpsBuilder::last_ops`]) of an operations file
/// as the last of their threads.
pub fn mark_last_ops<F: Read + Write + io::Seek>(file: &mut F, indices: &[u64]) -> io::Result<()> {
    for &i in indices {
        let at = HEADER_BYTES + i * OP_BYTES as u64;
        file.seek(io::SeekFrom::Start(at))?;
        let mut kind = [0u8; 1];
        file.read_exact(&mut kind)?;
        kind[0] |= LAST;
        file.seek(io::SeekFrom::Start(at))?;
        file.write_all(&kind)?;
    }
    file.seek(io::SeekFrom::End(0))?;
    Ok(())
}

/// Writes an operations file as [`write_ops_header`], [`write_op`] and [`finish_ops_header`]
/// do, through its own buffer, so that the present bytes of an operation already written can be
/// set when the free of its block says them ([`OpsWriter::set_present`]): in the buffer while
/// the operation is there, else in the file (memory bounded by the buffer).
#[derive(Debug)]
pub struct OpsWriter<'f> {
    file: &'f std::fs::File,
    buf: Vec<u8>,
    /// Operations in the file.
    flushed: u64,
    /// Operations written (in the file and the buffer).
    count: u64,
}

const BUFFER: usize = OP_BYTES << 14;
/// Where an operation's present bytes are in its record.
const PRESENT_AT: u64 = 53;

impl<'f> OpsWriter<'f> {
    /// Starts an operations file at the start of `file`.
    pub fn new(mut file: &'f std::fs::File) -> io::Result<Self> {
        file.write_all(MAGIC)?;
        file.write_all(&[0u8; 12])?;
        Ok(OpsWriter {
            file,
            buf: Vec::with_capacity(BUFFER),
            flushed: 0,
            count: 0,
        })
    }

    /// Writes one operation.
    pub fn write(&mut self, op: &ReplayOp) -> io::Result<()> {
        op.write(&mut self.buf)?;
        self.count += 1;
        if self.buf.len() >= BUFFER {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut f = self.file;
        f.write_all(&self.buf)?;
        self.flushed = self.count;
        self.buf.clear();
        Ok(())
    }

    /// Sets the present bytes of operation `index` (already written).
    pub fn set_present(&mut self, index: u64, bytes: u64) -> io::Result<()> {
        if index >= self.count {
            return Ok(());
        }
        let b = bytes.to_le_bytes();
        if index >= self.flushed {
            let at = ((index - self.flushed) * OP_BYTES as u64 + PRESENT_AT) as usize;
            self.buf[at..at + 8].copy_from_slice(&b);
            return Ok(());
        }
        let mut f = self.file;
        f.seek(io::SeekFrom::Start(
            HEADER_BYTES + index * OP_BYTES as u64 + PRESENT_AT,
        ))?;
        f.write_all(&b)?;
        f.seek(io::SeekFrom::End(0))?;
        Ok(())
    }

    /// Writes what is buffered and the header's counts.
    pub fn finish(mut self, threads: u32) -> io::Result<()> {
        self.flush()?;
        let mut f = self.file;
        f.seek(io::SeekFrom::Start(MAGIC.len() as u64))?;
        f.write_all(&threads.to_le_bytes())?;
        f.write_all(&self.count.to_le_bytes())?;
        f.seek(io::SeekFrom::End(0))?;
        Ok(())
    }
}

/// Reads an operations file: its header, then the operations one by one.
#[derive(Debug)]
pub struct OpsReader<R> {
    input: R,
    /// Threads of the trace.
    pub threads: u32,
    /// Operations in the file.
    pub count: u64,
    read: u64,
    /// Bytes per operation (version 01: 45, without times).
    op_bytes: usize,
}

impl<R: BufRead> OpsReader<R> {
    /// Reads the header.
    pub fn new(mut input: R) -> io::Result<Self> {
        let mut head = [0u8; 20];
        input.read_exact(&mut head)?;
        let op_bytes = match &head[..8] {
            m if m == MAGIC => OP_BYTES,
            m if m == MAGIC_01 => OP_BYTES_01,
            _ => 0,
        };
        if op_bytes == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a replay operations file",
            ));
        }
        let threads = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
        let mut c = [0u8; 8];
        c.copy_from_slice(&head[12..20]);
        Ok(OpsReader {
            input,
            threads,
            count: u64::from_le_bytes(c),
            read: 0,
            op_bytes,
        })
    }
}

impl<R: Read> Iterator for OpsReader<R> {
    type Item = io::Result<ReplayOp>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.read >= self.count {
            return None;
        }
        self.read += 1;
        let mut b = [0u8; OP_BYTES];
        let n = self.op_bytes;
        Some(
            self.input
                .read_exact(&mut b[..n])
                .and_then(|()| ReplayOp::read(&b, n == OP_BYTES_01)),
        )
    }
}
