//! Decoding a trace on several threads with results in trace order (`mtf check|dump|stats|export
//! -j N`).
//!
//! A trace is cut into **chunks** that can be decoded without the state of what comes before
//! them: the regions of a trace (the global region and each section start with a fresh scope and
//! state, docs/format.md §2.3 and §4) and, inside a region, the decoder checkpoints of a seek
//! index. [`ordered`] decodes the chunks on a pool of threads and hands each chunk's output to
//! the caller's consumer on the calling thread, in chunk order, so that what is printed, counted
//! and checked is what one thread would produce. [`events`] is what most consumers want: the
//! events of the whole trace, each chunk decoded by a worker into a
//! [`Detached`](crate::decode::Detached) batch and replayed in order, as
//! [`Reader::records`](crate::decode::Reader::records) yields them.

// Design: the reducer runs on the calling thread and the workers are long-lived tasks of a rayon
// pool of exactly `jobs` threads, each with its own state (`init`: a `Reader` with its lazily
// built tables, a printer), so nothing that is not `Sync` is shared. A worker takes the next
// chunk only while fewer than `2 × jobs` chunks are taken and not yet reduced: the memory held
// in outputs is bounded by that many chunks whatever the trace's size, and a slow reducer (a
// terminal, a sequential semantic pass) holds the workers back instead of letting outputs pile
// up. Outputs that arrive early wait in a ring of that size. One job, or one chunk, runs on the
// calling thread without a pool: exactly the sequential code path.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Condvar, Mutex};

mod events;
mod plan;

pub use events::{events, release_behind, Events};
pub use plan::{plan, plan_indexed, plan_with, Chunk, ChunkPlan, From, CHUNK_BYTES};

/// Place a problem's position, found by a decoder of one chunk counting records from 0, in the
/// whole trace: its record index shifted by the records before the chunk, or left out when
/// they were not all decoded exactly (`exact` false: a damaged region before).
pub fn shift_position(at: &mut crate::decode::Position, first: u64, exact: bool) {
    at.record_index = at.record_index.filter(|_| exact).map(|i| i + first);
}

/// The number of threads "all cores" means here (1 when it cannot be told).
pub fn available() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Chunks taken but not yet reduced, per job: the bound on outputs held in memory.
pub const IN_FLIGHT_PER_JOB: usize = 2;

/// Run `work` over every chunk on `jobs` threads while `consume` takes the outputs, in chunk
/// order, on the calling thread ([`Outputs::next`]); returns what `consume` returns. Each worker
/// thread makes its own state with `init`, once. When `consume` returns before taking every
/// output, no further chunk is started.
///
/// With `jobs <= 1` or fewer than two chunks, or when a thread pool cannot be made, each chunk
/// is worked on by the calling thread when `consume` asks for it: the sequential code path.
///
/// ```
/// let chunks: Vec<u64> = (0..100).collect();
/// let sum = metatf::parallel::ordered(2, &chunks, || (), |_, c| c * c, |outputs| {
///     let mut sum = 0u64;
///     while let Some(sq) = outputs.next() {
///         sum += sq;
///     }
///     sum
/// });
/// assert_eq!(sum, (0..100u64).map(|c| c * c).sum::<u64>());
/// ```
pub fn ordered<C, S, R, T>(
    jobs: usize,
    chunks: &[C],
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &C) -> R + Sync,
    consume: impl FnOnce(&mut Outputs<'_, R>) -> T,
) -> T
where
    C: Sync,
    R: Send,
{
    let pool = if jobs > 1 && chunks.len() > 1 {
        rayon::ThreadPoolBuilder::new()
            .num_threads(jobs.min(chunks.len()))
            .thread_name(|i| format!("mtf-decode-{i}"))
            .build()
            .ok()
    } else {
        None
    };
    let Some(pool) = pool else {
        let mut state = None;
        let mut next = 0;
        let mut outputs = Outputs {
            source: Source::Here(Box::new(|| {
                let c = chunks.get(next)?;
                next += 1;
                Some(work(state.get_or_insert_with(&init), c))
            })),
        };
        return consume(&mut outputs);
    };
    let threads = pool.current_num_threads();
    let window = threads * IN_FLIGHT_PER_JOB;
    let gate = Gate {
        state: Mutex::new(GateState {
            next: 0,
            limit: window.min(chunks.len()),
        }),
        cv: Condvar::new(),
        stop: AtomicBool::new(false),
    };
    let (tx, rx) = mpsc::channel::<(usize, R)>();
    pool.in_place_scope(|scope| {
        for _ in 0..threads {
            let tx = tx.clone();
            let (gate, init, work) = (&gate, &init, &work);
            scope.spawn(move |_| {
                // A panicking worker stops the others, so that the consumer is not left waiting.
                let _guard = StopOnPanic(gate);
                let mut state = None;
                while let Some(i) = gate.take(chunks.len()) {
                    let s = state.get_or_insert_with(init);
                    let out = work(s, &chunks[i]);
                    if tx.send((i, out)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        let mut outputs = Outputs {
            source: Source::Pool {
                rx,
                gate: &gate,
                early: VecDeque::new(),
                next: 0,
                n: chunks.len(),
            },
        };
        let t = consume(&mut outputs);
        gate.stop.store(true, Ordering::SeqCst);
        gate.cv.notify_all();
        t
    })
}

/// The outputs of [`ordered`]'s workers, in chunk order.
pub struct Outputs<'g, R> {
    source: Source<'g, R>,
}

type Here<'g, R> = Box<dyn FnMut() -> Option<R> + 'g>;

enum Source<'g, R> {
    /// One thread: each chunk is worked on when asked for.
    Here(Here<'g, R>),
    Pool {
        rx: mpsc::Receiver<(usize, R)>,
        gate: &'g Gate,
        /// Outputs of the chunks after `next` that arrived before it.
        early: VecDeque<Option<R>>,
        next: usize,
        n: usize,
    },
}

impl<R> Outputs<'_, R> {
    /// The output of the next chunk, waiting for it; `None` after the last one (or when a
    /// worker panicked: the panic is raised again when [`ordered`] returns).
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<R> {
        match &mut self.source {
            Source::Here(f) => f(),
            Source::Pool {
                rx,
                gate,
                early,
                next,
                n,
            } => {
                if *next >= *n {
                    return None;
                }
                let out = loop {
                    if let Some(out) = early.front_mut().and_then(Option::take) {
                        early.pop_front();
                        break out;
                    }
                    let (i, out) = rx.recv().ok()?;
                    if i == *next {
                        early.pop_front();
                        break out;
                    }
                    let k = i - *next;
                    if early.len() <= k {
                        early.resize_with(k + 1, || None);
                    }
                    early[k] = Some(out);
                };
                *next += 1;
                gate.release(*n);
                Some(out)
            }
        }
    }
}

struct GateState {
    /// The next chunk to take.
    next: usize,
    /// Chunks below this may be taken.
    limit: usize,
}

/// Which chunk a worker takes next, and how many may be taken ahead of the reducer.
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
    stop: AtomicBool,
}

impl Gate {
    /// The next chunk, waiting while the window is full; `None` when there is none or the
    /// reducer stopped.
    fn take(&self, n: usize) -> Option<usize> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if self.stop.load(Ordering::SeqCst) || st.next >= n {
                return None;
            }
            if st.next < st.limit {
                st.next += 1;
                return Some(st.next - 1);
            }
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// One chunk reduced: one more may be taken.
    fn release(&self, n: usize) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.limit = (st.limit + 1).min(n);
        drop(st);
        self.cv.notify_one();
    }
}

struct StopOnPanic<'g>(&'g Gate);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop.store(true, Ordering::SeqCst);
            self.0.cv.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn all<R>(outputs: &mut Outputs<'_, R>) -> Vec<R> {
        let mut v = Vec::new();
        while let Some(r) = outputs.next() {
            v.push(r);
        }
        v
    }

    #[test]
    fn outputs_come_in_order_whatever_the_finishing_order() {
        let chunks: Vec<u64> = (0..200).collect();
        for jobs in [1, 2, 3, 8] {
            let seen = ordered(
                jobs,
                &chunks,
                || (),
                |_, &c| {
                    // Later chunks finish first now and then.
                    if c % 7 == 0 {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                    }
                    c
                },
                all,
            );
            assert_eq!(seen, chunks, "jobs {jobs}");
        }
    }

    #[test]
    fn at_most_two_chunks_per_job_are_held() {
        let chunks: Vec<usize> = (0..300).collect();
        let held = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        let jobs = 3;
        ordered(
            jobs,
            &chunks,
            || (),
            |_, &c| {
                let h = held.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(h, Ordering::SeqCst);
                c
            },
            |outputs| {
                while outputs.next().is_some() {
                    // A slow consumer: the workers must wait for it.
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    held.fetch_sub(1, Ordering::SeqCst);
                }
            },
        );
        let most = most.load(Ordering::SeqCst);
        // The window, and the output the consumer holds.
        assert!(most <= jobs * IN_FLIGHT_PER_JOB + 1, "{most} outputs held");
        assert!(most >= 2, "the workers ran ahead of the consumer: {most}");
    }

    #[test]
    fn stopping_early_starts_no_further_chunk() {
        let chunks: Vec<usize> = (0..1000).collect();
        let done = AtomicUsize::new(0);
        let r = ordered(
            2,
            &chunks,
            || (),
            |_, &c| {
                done.fetch_add(1, Ordering::SeqCst);
                c
            },
            |outputs| {
                for _ in 0..10 {
                    outputs.next();
                }
                "stopped"
            },
        );
        assert_eq!(r, "stopped");
        // Nothing beyond the window after the last output taken was started.
        assert!(done.load(Ordering::SeqCst) <= 10 + 2 * IN_FLIGHT_PER_JOB);
    }

    #[test]
    fn each_worker_makes_its_state_once() {
        let chunks: Vec<usize> = (0..50).collect();
        let made = AtomicUsize::new(0);
        for jobs in [1, 2] {
            made.store(0, Ordering::SeqCst);
            let total: usize = ordered(
                jobs,
                &chunks,
                || {
                    made.fetch_add(1, Ordering::SeqCst);
                    0usize
                },
                |s, &c| {
                    *s += 1;
                    c
                },
                |o| all(o).into_iter().sum(),
            );
            assert_eq!(total, (0..50).sum::<usize>());
            assert!(made.load(Ordering::SeqCst) <= jobs);
        }
    }

    #[test]
    fn a_panicking_worker_does_not_hang_the_consumer() {
        let chunks: Vec<usize> = (0..100).collect();
        let r = std::panic::catch_unwind(|| {
            ordered(
                2,
                &chunks,
                || (),
                |_, &c| {
                    assert!(c != 5, "chunk 5");
                    c
                },
                all,
            )
        });
        assert!(r.is_err());
    }
}
