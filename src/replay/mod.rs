//! `mtf replay`: a trace's heap events played against a real allocator in this process, with
//! per-operation latencies, RSS over the replay beside the trace's own live bytes, and page
//! faults.
//!
//! Events become [`ReplayOp`]s (dense thread and namespace numbers; [`OpsBuilder`], which also
//! counts what the trace says in a [`TraceSummary`], with the [`OpCounts`] each run counts
//! too), and [`run`] plays them:
//!
//! * a block's id maps to the live pointer the allocator returned (a [`LiveMap`]: memory bounded
//!   by the live blocks); a free or realloc of an id that is not live is counted and skipped;
//! * a size above [`Options::max_block_size`], or one no `Layout` can describe, is refused and
//!   counted; an allocator that returns null is counted too — nothing aborts;
//! * threads: with [`ThreadMode::Ordered`] one real thread per trace thread, each waiting for its
//!   turn so that the trace's interleaving is kept exactly (consecutive operations of one thread
//!   run as one turn); with [`ThreadMode::Free`] every thread runs its own operations as fast as
//!   it can (the worst-case contention memory_replay measures), the live blocks shared between
//!   threads in a sharded map; a trace with one thread runs on the calling thread.
//!
//! Latencies are measured with `Instant` around each allocator call only (not the map look-ups)
//! and kept in bounded-memory HDR histograms (2 significant digits).
//!
//! With [`Timing::Recorded`] each thread waits until its operation's recorded time after the
//! first timed operation ran (the trace's gaps kept per thread; in ordered mode its order too),
//! and records how late the operation starts in a histogram of its own; a block whose trace
//! gives its present bytes has that many bytes touched. An allocator is a built-in one or a
//! library loaded by path ([`library`]).

pub mod library;
pub mod ops;
#[cfg(feature = "plot")]
pub mod plot;
pub mod probe;
mod raw;

use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex, OnceLock};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::analysis::event::OpCounts;
use serde::{Deserialize, Serialize};

pub use crate::simulate::LiveMap;
pub use library::{is_library_name, Library, LibraryError};
pub use ops::{OpKind, OpsBuilder, OpsReader, ReplayOp, TraceSummary, NO_PRESENT, NO_TIME};
pub use probe::Probe;
pub use raw::{Allocator, Block};

/// How a trace's threads are replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThreadMode {
    /// Each thread waits for its turn: the trace's own interleaving, deterministically.
    Ordered,
    /// Each thread runs its operations as fast as it can.
    Free,
}

/// When operations run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Timing {
    /// Each operation as soon as the one before it is done.
    #[default]
    Fast,
    /// Each timed operation no earlier than its recorded time after the first (the trace's
    /// gaps kept per thread), and a block the trace says the program touched `present` bytes
    /// of has those bytes touched.
    Recorded,
}

/// How to replay.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Threads' order.
    pub threads: ThreadMode,
    /// As fast as possible, or at the recorded times.
    pub timing: Timing,
    /// Write to each page of every new block (so that RSS counts it).
    pub touch: bool,
    /// Larger requests are refused (counted, not made).
    pub max_block_size: u64,
    /// Sample RSS after every this many operations (ordered; a power of two from
    /// [`TraceSummary::every`] puts the samples at the trace's own live-byte points).
    pub sample_every: u64,
}

/// Operations by kind as the trace has them, and what became of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Every operation played, by kind; the frees, reallocations and moves of an id that was
    /// not live are counted in `unknown_frees` and `unknown_moves` too (skipped; such a
    /// reallocation then allocates).
    #[serde(flatten)]
    pub ops: OpCounts,
    /// Requests refused: over the maximum block size or no valid layout.
    pub refused: u64,
    /// Requests the allocator answered with null.
    pub failed: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.ops.add(&o.ops);
        self.refused += o.refused;
        self.failed += o.failed;
    }
}

/// Latency of one kind of allocator call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// `alloc`, `free` or `realloc`.
    pub kind: String,
    /// Calls timed.
    pub count: u64,
    /// Time in them (ns).
    pub total_ns: u64,
    /// Median (ns).
    pub p50_ns: u64,
    /// 99th percentile (ns).
    pub p99_ns: u64,
    /// 99.9th percentile (ns).
    pub p999_ns: u64,
    /// Slowest (ns).
    pub max_ns: u64,
}

/// RSS after `event` operations, and the bytes of the blocks the replay held then.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RssSample {
    /// Operations done.
    pub event: u64,
    /// Resident set size (bytes).
    pub rss: u64,
    /// Sum of the sizes of the live blocks (bytes).
    pub live: u64,
}

/// What one replay measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The allocator.
    pub allocator: String,
    /// How threads ran.
    pub mode: ThreadMode,
    /// Threads used.
    pub threads: u32,
    /// Operations played.
    pub ops: u64,
    /// By kind and outcome.
    pub counts: Counts,
    /// The largest refused request: (record, bytes).
    pub largest_refused: Option<(u64, u64)>,
    /// Wall-clock time of the replay (ns), thread hand-overs included.
    pub wall_ns: u64,
    /// Time inside allocator calls (ns), summed over threads.
    pub call_ns: u64,
    /// Latency by kind of call.
    pub latency: Vec<Latency>,
    /// RSS before the first operation (bytes): `mtf` itself and the operations it holds.
    pub rss_baseline: u64,
    /// The largest sampled RSS (bytes).
    pub peak_rss: u64,
    /// The process's high-water RSS from `getrusage` (bytes).
    pub max_rss: u64,
    /// Minor page faults during the replay.
    pub minor_faults: u64,
    /// Major page faults during the replay.
    pub major_faults: u64,
    /// RSS over the replay.
    pub samples: Vec<RssSample>,
    /// The waste (RSS above the baseline minus live bytes) by size class and site, by the
    /// resident pages the live blocks lie on, at the trace's live peak and at the end
    /// ([`Probe`]; absent from the reports of older versions).
    #[serde(default)]
    pub frag: crate::frag::Attributed,
    /// A library allocator's path (`None` for a built-in one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator_path: Option<String>,
    /// The entry points a library allocator was called through.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entry_points: Vec<String>,
    /// When operations ran.
    #[serde(default)]
    pub timing: Timing,
    /// With recorded timing: the recorded time from the first to the last timed operation
    /// played (ns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded_ns: Option<u64>,
    /// With recorded timing: how far behind its recorded time each timed operation started
    /// (kind `lateness`; 0 when on time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lateness: Option<Latency>,
    /// With recorded timing: blocks whose touched bytes the trace gives (`present`), and the
    /// bytes touched in them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub present_blocks: u64,
    /// The bytes touched in those blocks.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub present_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Report {
    /// Allocator calls per second of time spent in them.
    pub fn calls_per_sec(&self) -> f64 {
        let calls: u64 = self.latency.iter().map(|l| l.count).sum();
        if self.call_ns == 0 {
            0.0
        } else {
            calls as f64 * 1e9 / self.call_ns as f64
        }
    }

    /// Operations per second of wall-clock time.
    pub fn ops_per_sec(&self) -> f64 {
        if self.wall_ns == 0 {
            0.0
        } else {
            self.ops as f64 * 1e9 / self.wall_ns as f64
        }
    }

    /// The sample with the most live bytes.
    pub fn peak_sample(&self) -> Option<&RssSample> {
        self.samples
            .iter()
            .max_by_key(|s| (s.live, u64::MAX - s.event))
    }

    /// Fragmentation at the live peak: RSS above the baseline / live bytes.
    pub fn fragmentation_at_peak(&self) -> Option<f64> {
        let s = self.peak_sample()?;
        (s.live > 0).then(|| s.rss.saturating_sub(self.rss_baseline) as f64 / s.live as f64)
    }

    /// The latency of `kind`.
    pub fn latency_of(&self, kind: &str) -> Option<&Latency> {
        self.latency.iter().find(|l| l.kind == kind)
    }
}

/// A failure to read the operations to replay.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ReplayError {
    /// Reading the operations failed.
    #[error("reading the replay operations: {0}")]
    #[diagnostic(code(mtf::replay::io))]
    Io(#[from] std::io::Error),
    /// An operation names a thread the header does not have.
    #[error("replay operation {index} names thread {thread} of {threads}")]
    #[diagnostic(code(mtf::replay::thread))]
    Thread {
        /// The operation's index.
        index: u64,
        /// Its thread.
        thread: u32,
        /// Threads in the header.
        threads: u32,
    },
    /// An operation of a thread after that thread's last operation.
    #[error("replay operation {index} is of thread {thread}, which has ended")]
    #[diagnostic(code(mtf::replay::ended))]
    Ended {
        /// The operation's index.
        index: u64,
        /// Its thread.
        thread: u32,
    },
    /// A thread could not be started.
    #[error("starting replay thread {0}: {1}")]
    #[diagnostic(code(mtf::replay::spawn))]
    Spawn(u32, std::io::Error),
}

const KINDS: [&str; 3] = ["alloc", "free", "realloc"];

/// A block the replay holds, with the size the trace asked for.
struct Held {
    block: Block,
    size: u64,
    /// The data record that made it (its site, for [`Probe`]).
    record: u64,
}

impl Held {
    /// Its address, size and record, for [`Probe::take`].
    fn span(&self) -> (u64, u64, u64) {
        (self.block.addr(), self.size, self.record)
    }
}

/// Where the live blocks are kept: one map, or shards of one shared by free-running threads.
trait Blocks {
    fn insert(&mut self, key: (u32, u64), held: Held);
    fn remove(&mut self, key: &(u32, u64)) -> Option<Held>;
}

impl Blocks for LiveMap<(u32, u64), Held> {
    fn insert(&mut self, key: (u32, u64), held: Held) {
        LiveMap::insert(self, key, held)
    }
    fn remove(&mut self, key: &(u32, u64)) -> Option<Held> {
        LiveMap::remove(self, key)
    }
}

const SHARDS: usize = 64;

struct Sharded(Vec<Mutex<LiveMap<(u32, u64), Held>>>);

impl Sharded {
    fn shard(&self, key: &(u32, u64)) -> std::sync::MutexGuard<'_, LiveMap<(u32, u64), Held>> {
        let h = (key.1 ^ ((key.0 as u64) << 48)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58;
        // A poisoned shard only means another replay thread panicked; its map is still whole.
        self.0[h as usize % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

impl Blocks for &Sharded {
    fn insert(&mut self, key: (u32, u64), held: Held) {
        self.shard(&key).insert(key, held)
    }
    fn remove(&mut self, key: &(u32, u64)) -> Option<Held> {
        self.shard(key).remove(key)
    }
}

/// One thread's replaying: its allocator, its counters and histograms.
struct Worker {
    alloc: Allocator,
    touch: bool,
    /// With recorded timing: the moment the first timed operation ran, shared by the threads.
    schedule: Option<Arc<OnceLock<Instant>>>,
    late: Histogram<u64>,
    recorded_ns: u64,
    present_blocks: u64,
    present_bytes: u64,
    page: usize,
    max: u64,
    counts: Counts,
    hist: [Histogram<u64>; 3],
    kind_ns: [u64; 3],
    live: i64,
    largest_refused: Option<(u64, u64)>,
}

impl Worker {
    fn new(alloc: Allocator, o: &Options, schedule: &Arc<OnceLock<Instant>>) -> Worker {
        let hist = new_hist;
        Worker {
            alloc,
            touch: o.touch,
            schedule: (o.timing == Timing::Recorded).then(|| schedule.clone()),
            late: hist(),
            recorded_ns: 0,
            present_blocks: 0,
            present_bytes: 0,
            page: raw::page_size(),
            max: o.max_block_size,
            counts: Counts::default(),
            hist: [hist(), hist(), hist()],
            kind_ns: [0; 3],
            live: 0,
            largest_refused: None,
        }
    }

    /// With recorded timing, waits until `op`'s recorded time after the first timed operation,
    /// and records how late it starts.
    fn wait(&mut self, op: &ReplayOp) {
        let Some(schedule) = &self.schedule else {
            return;
        };
        if op.time == ops::NO_TIME {
            return;
        }
        let now = Instant::now();
        let first = *schedule.get_or_init(|| now);
        // A time beyond what the clock can add (centuries) is not waited for.
        let Some(due) = first.checked_add(Duration::from_nanos(op.time)) else {
            return;
        };
        // Design: sleep until a millisecond before the time (the kernel's sleeps overshoot by
        // tens of microseconds or more), then yield until it: a trace's operations are often
        // microseconds apart, and a sleep each would put the replay ever further behind.
        loop {
            let now = Instant::now();
            if now >= due {
                let late = now.duration_since(due).as_nanos().min(u64::MAX as u128) as u64;
                self.late.saturating_record(late.max(1));
                break;
            }
            let left = due - now;
            if left > Duration::from_millis(2) {
                std::thread::sleep(left - Duration::from_millis(1));
            } else {
                std::thread::yield_now();
            }
        }
        self.recorded_ns = self.recorded_ns.max(op.time);
    }

    /// Touches a new block: the bytes the trace says the program touched (recorded timing),
    /// else every page with `--touch`.
    fn touch_new(&mut self, block: &Block, op: &ReplayOp, from: usize) {
        if self.schedule.is_some() && op.present != ops::NO_PRESENT {
            let n = usize::try_from(op.present)
                .unwrap_or(usize::MAX)
                .min(block.size());
            block.touch_within(from, n, self.page);
            self.present_blocks += 1;
            self.present_bytes += n.saturating_sub(from) as u64;
        } else if self.touch {
            block.touch(from, self.page);
        }
    }

    fn time(&mut self, kind: usize, start: Instant) {
        let ns = start.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        self.kind_ns[kind] += ns;
        self.hist[kind].saturating_record(ns.max(1));
    }

    /// The layout for a request, or `None` (counted) when it is refused.
    fn layout(&mut self, op: &ReplayOp) -> Option<std::alloc::Layout> {
        let size = op.size.max(1);
        // Without a requested alignment, the largest power of two up to 16 that the size
        // allows: what malloc guarantees, and what keeps every allocator on its plain
        // malloc path.
        let align = if op.align > 0 {
            op.align
        } else {
            1u64 << size.ilog2().min(4)
        };
        // Design: the alignment is capped like the size (found by fuzzing: a 512-byte block
        // aligned to 2 GiB made the allocator reserve and touch gigabytes), since an allocator
        // may need up to `size + align` bytes for it.
        let layout = (op.size <= self.max && align <= self.max)
            .then(|| usize::try_from(size).ok())
            .flatten()
            .and_then(|s| std::alloc::Layout::from_size_align(s, align as usize).ok());
        if layout.is_none() {
            self.counts.refused += 1;
            if self.largest_refused.is_none_or(|(_, s)| s < op.size) {
                self.largest_refused = Some((op.record, op.size));
            }
        }
        layout
    }

    fn allocate(&mut self, op: &ReplayOp, map: &mut impl Blocks) {
        let Some(layout) = self.layout(op) else {
            return;
        };
        let start = Instant::now();
        let block = self.alloc.alloc(layout);
        self.time(0, start);
        match block {
            Some(block) => {
                self.touch_new(&block, op, 0);
                self.live += op.size as i64;
                map.insert(
                    (op.ns, op.new),
                    Held {
                        block,
                        size: op.size,
                        record: op.record,
                    },
                );
            }
            None => self.counts.failed += 1,
        }
    }

    fn apply(&mut self, op: &ReplayOp, map: &mut impl Blocks) {
        self.wait(op);
        match op.kind {
            OpKind::Alloc => {
                self.counts.ops.count(op.kind, true);
                self.allocate(op, map);
            }
            OpKind::Free => {
                let held = map.remove(&(op.ns, op.id));
                self.counts.ops.count(op.kind, held.is_some());
                if let Some(held) = held {
                    self.live -= held.size as i64;
                    let start = Instant::now();
                    self.alloc.free(held.block);
                    self.time(1, start);
                }
            }
            OpKind::Realloc => {
                let held = map.remove(&(op.ns, op.id));
                self.counts.ops.count(op.kind, held.is_some());
                let Some(held) = held else {
                    // realloc of a block allocated before tracing began: its new block is
                    // allocated afresh.
                    self.allocate(op, map);
                    return;
                };
                let new_size = (op.size <= self.max)
                    .then(|| usize::try_from(op.size.max(1)).ok())
                    .flatten();
                let Some(new_size) = new_size else {
                    self.counts.refused += 1;
                    if self.largest_refused.is_none_or(|(_, s)| s < op.size) {
                        self.largest_refused = Some((op.record, op.size));
                    }
                    // As after a failed realloc, the old block stays.
                    map.insert((op.ns, op.id), held);
                    return;
                };
                let old = held.block.size();
                let start = Instant::now();
                let result = self.alloc.realloc(held.block, new_size);
                self.time(2, start);
                match result {
                    Ok(block) => {
                        self.touch_new(&block, op, old);
                        self.live += op.size as i64 - held.size as i64;
                        map.insert(
                            (op.ns, op.new),
                            Held {
                                block,
                                size: op.size,
                                record: op.record,
                            },
                        );
                    }
                    Err(block) => {
                        self.counts.failed += 1;
                        map.insert((op.ns, op.id), Held { block, ..held });
                    }
                }
            }
            OpKind::Move => {
                let held = map.remove(&(op.ns, op.id));
                self.counts.ops.count(op.kind, held.is_some());
                if let Some(held) = held {
                    map.insert((op.ns, op.new), held);
                }
            }
        }
    }
}

/// A histogram of nanoseconds from 1 ns to about 18 minutes at 2 significant digits (a few
/// KiB, whatever the number of calls); longer calls count as the longest.
fn new_hist() -> Histogram<u64> {
    match Histogram::<u64>::new_with_bounds(1, 1 << 40, 2) {
        Ok(h) => h,
        // The bounds above are valid; an auto-resizing histogram is the same in practice.
        Err(_) => Histogram::new(2).unwrap_or_else(|_| unreachable!("2 significant digits")),
    }
}

/// A counter alone on its cache line, written by one thread and read by the sampler.
#[repr(align(128))]
#[derive(Default)]
struct Slot {
    live: AtomicI64,
    done: AtomicU64,
}

/// Plays `ops` (`threads` trace threads, `count` operations, as an [`OpsReader`] gives them)
/// with `alloc`.
pub fn run<I>(
    alloc: Allocator,
    options: &Options,
    threads: u32,
    count: u64,
    ops: I,
) -> Result<Report, ReplayError>
where
    I: Iterator<Item = std::io::Result<ReplayOp>>,
{
    run_probed(alloc, options, threads, count, ops, Probe::default())
}

/// [`run`], with the waste attributed as `probe` says ([`Report::frag`]).
pub fn run_probed<I>(
    alloc: Allocator,
    options: &Options,
    threads: u32,
    count: u64,
    ops: I,
    mut probe: Probe,
) -> Result<Report, ReplayError>
where
    I: Iterator<Item = std::io::Result<ReplayOp>>,
{
    probe.warm();
    let threads = threads.max(1);
    let every = options.sample_every.max(1);
    let mut samples = Vec::new();
    let mut sample = |event: u64, live: i64| {
        samples.push(RssSample {
            event,
            rss: raw::resident_bytes().unwrap_or(0),
            live: live.max(0) as u64,
        })
    };
    let check = |index: u64, op: std::io::Result<ReplayOp>| -> Result<ReplayOp, ReplayError> {
        let op = op?;
        if op.thread >= threads {
            return Err(ReplayError::Thread {
                index,
                thread: op.thread,
                threads,
            });
        }
        Ok(op)
    };

    let schedule = Arc::new(OnceLock::new());
    let (workers, wall, base, before, mode) = if threads == 1 {
        let mut w = Worker::new(alloc, options, &schedule);
        let mut map = LiveMap::new();
        let base = raw::resident_bytes().unwrap_or(0);
        let before = raw::usage();
        sample(0, 0);
        let start = Instant::now();
        let mut n = 0;
        for op in ops {
            // Design: a bad operation half-way (found by fuzzing) stops the replay with an
            // error, and the blocks made so far are freed first: a library caller that goes on
            // (not only the `mtf replay` child, which exits) must not leak them.
            let op = match check(n, op) {
                Ok(op) => op,
                Err(e) => {
                    release(alloc, map.drain());
                    return Err(e);
                }
            };
            w.apply(&op, &mut map);
            n += 1;
            if n.is_multiple_of(every) {
                sample(n, w.live);
            }
            if probe.due(n) {
                probe.take(n, base, map.values().map(Held::span), false);
            }
        }
        let wall = wall_time(start, &probe, options);
        if !n.is_multiple_of(every) {
            sample(n, w.live);
        }
        probe.take(n, base, map.values().map(Held::span), true);
        release(alloc, map.drain());
        (vec![w], wall, base, before, options.threads)
    } else if options.threads == ThreadMode::Ordered {
        ordered(
            alloc,
            options,
            &schedule,
            threads,
            ops,
            check,
            &mut sample,
            &mut probe,
        )?
    } else {
        free_running(
            alloc,
            options,
            &schedule,
            threads,
            count,
            ops,
            check,
            &mut sample,
            &mut probe,
        )?
    };
    let after = raw::usage();

    let mut counts = Counts::default();
    let mut hist: Vec<Histogram<u64>> = (0..3).map(|_| new_hist()).collect();
    let mut kind_ns = [0u64; 3];
    let mut largest_refused: Option<(u64, u64)> = None;
    let mut late = new_hist();
    let (mut recorded_ns, mut present_blocks, mut present_bytes) = (0, 0, 0);
    for w in &workers {
        counts.add(&w.counts);
        // Both histograms have the same precision, so adding cannot fail.
        let _ = late.add(&w.late);
        recorded_ns = recorded_ns.max(w.recorded_ns);
        present_blocks += w.present_blocks;
        present_bytes += w.present_bytes;
        for (k, ns) in kind_ns.iter_mut().zip(w.kind_ns) {
            *k += ns;
        }
        for (h, wh) in hist.iter_mut().zip(&w.hist) {
            // Both histograms have the same precision, so adding cannot fail.
            let _ = h.add(wh);
        }
        if let Some((r, s)) = w.largest_refused {
            if largest_refused.is_none_or(|(_, m)| m < s) {
                largest_refused = Some((r, s));
            }
        }
    }
    let latency = KINDS
        .iter()
        .zip(hist.iter().zip(kind_ns))
        .filter(|(_, (h, _))| !h.is_empty())
        .map(|(k, (h, total_ns))| Latency {
            kind: k.to_string(),
            count: h.len(),
            total_ns,
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        })
        .collect::<Vec<_>>();
    let ops_done = counts.ops.total();
    Ok(Report {
        allocator: alloc.name().to_string(),
        mode,
        threads,
        ops: ops_done,
        counts,
        largest_refused,
        wall_ns: wall.as_nanos().min(u64::MAX as u128) as u64,
        call_ns: kind_ns.iter().sum(),
        latency,
        rss_baseline: base,
        peak_rss: samples.iter().map(|s| s.rss).max().unwrap_or(0),
        max_rss: after.max_rss,
        minor_faults: after.minor_faults.saturating_sub(before.minor_faults),
        major_faults: after.major_faults.saturating_sub(before.major_faults),
        samples,
        frag: probe.finish(),
        allocator_path: alloc.path().map(|p| p.to_string_lossy().into_owned()),
        entry_points: match alloc {
            Allocator::Library(l) => l.entry_points().iter().map(|e| e.to_string()).collect(),
            _ => Vec::new(),
        },
        timing: options.timing,
        recorded_ns: (options.timing == Timing::Recorded).then_some(recorded_ns),
        lateness: (options.timing == Timing::Recorded && !late.is_empty()).then(|| Latency {
            kind: "lateness".into(),
            count: late.len(),
            total_ns: 0,
            p50_ns: late.value_at_quantile(0.5),
            p99_ns: late.value_at_quantile(0.99),
            p999_ns: late.value_at_quantile(0.999),
            max_ns: late.max(),
        }),
        present_blocks,
        present_bytes,
    })
}

/// Frees what is still live at the end (not timed).
fn release(alloc: Allocator, held: impl Iterator<Item = Held>) {
    for h in held {
        alloc.free(h.block);
    }
}

type Ran = (Vec<Worker>, Duration, u64, raw::Usage, ThreadMode);

fn spawn<T: Send + 'static>(
    t: u32,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<std::thread::JoinHandle<T>, ReplayError> {
    std::thread::Builder::new()
        .name(format!("replay-{t}"))
        .stack_size(256 << 10)
        .spawn(f)
        .map_err(|e| ReplayError::Spawn(t, e))
}

fn join(handles: Vec<std::thread::JoinHandle<Worker>>) -> Vec<Worker> {
    handles.into_iter().filter_map(|h| h.join().ok()).collect()
}

// Design: the snapshots of the heap's pages (`Probe`) are not the replay's work, so their time
// is taken off its wall clock; but with recorded timing the operations wait for their recorded
// times, which go on while a snapshot is taken, so the snapshot's time is waited out rather than
// added, and taking it off again made the wall clock shorter than the trace's recorded span.
/// The wall-clock time of a replay that started at `start`.
fn wall_time(start: Instant, probe: &Probe, options: &Options) -> Duration {
    match options.timing {
        Timing::Recorded => start.elapsed(),
        _ => start.elapsed().saturating_sub(probe.spent()),
    }
}

/// Threads in the trace's order: the calling thread hands each run of consecutive operations
/// of one thread to that thread and waits until it is done.
#[allow(clippy::too_many_arguments)]
fn ordered<I, C>(
    alloc: Allocator,
    options: &Options,
    schedule: &Arc<OnceLock<Instant>>,
    threads: u32,
    ops: I,
    check: C,
    sample: &mut impl FnMut(u64, i64),
    probe: &mut Probe,
) -> Result<Ran, ReplayError>
where
    I: Iterator<Item = std::io::Result<ReplayOp>>,
    C: Fn(u64, std::io::Result<ReplayOp>) -> Result<ReplayOp, ReplayError>,
{
    const TURN: usize = 4096;
    let every = options.sample_every.max(1);
    let map = Arc::new(Mutex::new(LiveMap::<(u32, u64), Held>::new()));
    let slots: Arc<Vec<Slot>> = Arc::new((0..threads).map(|_| Slot::default()).collect());
    let (done_tx, done_rx) = mpsc::channel::<Vec<ReplayOp>>();
    let mut senders = Vec::new();
    let mut handles = Vec::new();
    for t in 0..threads {
        let (tx, rx) = mpsc::channel::<Vec<ReplayOp>>();
        let (map, slots, done) = (map.clone(), slots.clone(), done_tx.clone());
        let mut w = Worker::new(alloc, options, schedule);
        handles.push(spawn(t, move || {
            while let Ok(turn) = rx.recv() {
                {
                    let mut m = map.lock().unwrap_or_else(|e| e.into_inner());
                    for op in &turn {
                        w.apply(op, &mut *m);
                    }
                }
                slots[t as usize].live.store(w.live, Ordering::Release);
                let last = turn.last().is_some_and(|op| op.last);
                if done.send(turn).is_err() || last {
                    break;
                }
            }
            w
        })?);
        senders.push(tx);
    }
    let live = |slots: &[Slot]| slots.iter().map(|s| s.live.load(Ordering::Acquire)).sum();
    let base = raw::resident_bytes().unwrap_or(0);
    let before = raw::usage();
    sample(0, 0);
    let start = Instant::now();
    let mut turn: Vec<ReplayOp> = Vec::with_capacity(TURN);
    let mut spare: Vec<ReplayOp> = Vec::with_capacity(TURN);
    let mut n = 0u64;
    let play = |turn: &mut Vec<ReplayOp>, spare: &mut Vec<ReplayOp>| {
        let Some(thread) = turn.first().map(|f| f.thread) else {
            return;
        };
        let full = std::mem::replace(turn, std::mem::take(spare));
        if senders[thread as usize].send(full).is_ok() {
            if let Ok(mut back) = done_rx.recv() {
                back.clear();
                *spare = back;
            }
        }
    };
    // Design: a thread ends after its last operation (`op.last`); an operation of that thread
    // after it would be handed to a thread that is gone, and the wait for it would never end
    // (found by fuzzing an operations file). It is refused as a thread the trace does not have.
    let mut ended = vec![false; threads as usize];
    for op in ops {
        let op = match check(n, op).and_then(|op| {
            if ended[op.thread as usize] {
                return Err(ReplayError::Ended {
                    index: n,
                    thread: op.thread,
                });
            }
            ended[op.thread as usize] |= op.last;
            Ok(op)
        }) {
            Ok(op) => op,
            Err(e) => {
                // The threads end when their channels close; then what they made is freed.
                drop(senders);
                join(handles);
                if let Ok(mut m) = map.lock() {
                    release(alloc, m.drain());
                }
                return Err(e);
            }
        };
        if turn.first().is_some_and(|f| f.thread != op.thread) || turn.len() >= TURN {
            play(&mut turn, &mut spare);
        }
        turn.push(op);
        n += 1;
        // A thread's last operation ends its turn: the thread then exits, as the traced
        // program's did, and its allocator's thread cache goes with it.
        if op.last || n.is_multiple_of(every) || probe.due(n) {
            play(&mut turn, &mut spare);
            if n.is_multiple_of(every) {
                sample(n, live(&slots));
            }
            if probe.due(n) {
                // Every thread is waiting for its turn: the map holds what the trace has live.
                let m = map.lock().unwrap_or_else(|e| e.into_inner());
                probe.take(n, base, m.values().map(Held::span), false);
            }
        }
    }
    play(&mut turn, &mut spare);
    let wall = wall_time(start, probe, options);
    if !n.is_multiple_of(every) {
        sample(n, live(&slots));
    }
    drop(senders);
    let workers = join(handles);
    if let Ok(mut m) = map.lock() {
        probe.take(n, base, m.values().map(Held::span), true);
        release(alloc, m.drain());
    }
    Ok((workers, wall, base, before, ThreadMode::Ordered))
}

/// Free-running threads: each plays its own operations as fast as it can; the calling thread
/// samples RSS every millisecond or so.
#[allow(clippy::too_many_arguments)]
fn free_running<I, C>(
    alloc: Allocator,
    options: &Options,
    schedule: &Arc<OnceLock<Instant>>,
    threads: u32,
    count: u64,
    ops: I,
    check: C,
    sample: &mut impl FnMut(u64, i64),
    probe: &mut Probe,
) -> Result<Ran, ReplayError>
where
    I: Iterator<Item = std::io::Result<ReplayOp>>,
    C: Fn(u64, std::io::Result<ReplayOp>) -> Result<ReplayOp, ReplayError>,
{
    let mut per_thread: Vec<Vec<ReplayOp>> = (0..threads).map(|_| Vec::new()).collect();
    for (n, op) in ops.enumerate() {
        let op = check(n as u64, op)?;
        per_thread[op.thread as usize].push(op);
    }
    let map = Arc::new(Sharded(
        (0..SHARDS).map(|_| Mutex::new(LiveMap::new())).collect(),
    ));
    let slots: Arc<Vec<Slot>> = Arc::new((0..threads).map(|_| Slot::default()).collect());
    let finished = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(threads as usize + 1));
    let mut handles = Vec::new();
    for (t, mine) in per_thread.into_iter().enumerate() {
        let (map, slots, finished, barrier) = (
            map.clone(),
            slots.clone(),
            finished.clone(),
            barrier.clone(),
        );
        let mut w = Worker::new(alloc, options, schedule);
        handles.push(spawn(t as u32, move || {
            barrier.wait();
            let slot = &slots[t];
            let mut shards = &*map;
            for (i, op) in mine.iter().enumerate() {
                w.apply(op, &mut shards);
                slot.live.store(w.live, Ordering::Relaxed);
                slot.done.store(i as u64 + 1, Ordering::Relaxed);
            }
            finished.fetch_add(1, Ordering::Release);
            // The operations go back to the calling thread, freed after the last sample, so
            // that the replay's own memory does not shrink under the allocator's.
            (w, mine)
        })?);
    }
    let totals = |slots: &[Slot]| {
        slots.iter().fold((0u64, 0i64), |(d, l), s| {
            (
                d + s.done.load(Ordering::Relaxed),
                l + s.live.load(Ordering::Relaxed),
            )
        })
    };
    let base = raw::resident_bytes().unwrap_or(0);
    let before = raw::usage();
    sample(0, 0);
    // Taken before the threads go: with recorded timing, no thread's first wait starts before
    // it, so the wall clock covers the recorded span.
    let start = Instant::now();
    barrier.wait();
    let mut last = 0;
    // Aim at a few hundred samples whatever the speed: the interval doubles as they pile up.
    let mut interval = Duration::from_micros(500);
    let mut taken = 0u32;
    while finished.load(Ordering::Acquire) < threads as usize {
        std::thread::sleep(interval);
        let (done, live) = totals(&slots);
        if done > last && done < count {
            sample(done, live);
            last = done;
            taken += 1;
            if taken.is_multiple_of(200) {
                interval *= 2;
            }
        }
    }
    let wall = start.elapsed();
    let (workers, held): (Vec<Worker>, Vec<Vec<ReplayOp>>) =
        handles.into_iter().filter_map(|h| h.join().ok()).unzip();
    let (done, live) = totals(&slots);
    sample(done, live);
    drop(held);
    // Free-running threads have no moment at which the trace's live blocks are the replay's:
    // the end only.
    let shards: Vec<_> = map.0.iter().filter_map(|s| s.lock().ok()).collect();
    probe.take(
        done,
        base,
        shards.iter().flat_map(|m| m.values().map(Held::span)),
        true,
    );
    drop(shards);
    for shard in &map.0 {
        if let Ok(mut m) = shard.lock() {
            release(alloc, m.drain());
        }
    }
    Ok((workers, wall, base, before, ThreadMode::Free))
}

#[cfg(test)]
mod tests;
