use super::*;
use crate::analysis::event::{HeapEvent, HeapOp};

/// Events from `thread:op` words: `t:a id size`, `t:f id`, `t:r old new size`, `t:m old new`.
fn events(text: &str) -> Vec<HeapEvent> {
    text.split(';')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(i, line)| {
            let (thread, rest) = line.split_once(':').unwrap();
            let w: Vec<&str> = rest.split_whitespace().collect();
            let n = |k: usize| w[k].parse::<u64>().unwrap();
            let op = match w[0] {
                "a" => HeapOp::Alloc {
                    id: n(1),
                    size: n(2),
                    align: None,
                },
                "f" => HeapOp::Free { id: n(1) },
                "r" => HeapOp::Move {
                    old: n(1),
                    new: n(2),
                    size: Some(n(3)),
                },
                "m" => HeapOp::Move {
                    old: n(1),
                    new: n(2),
                    size: None,
                },
                other => panic!("bad op {other}"),
            };
            HeapEvent {
                record: i as u64,
                space: 0,
                key: 0,
                thread: thread.parse().ok(),
                time: None,
                site: None,
                stack: None,
                op,
            }
        })
        .collect()
}

/// The operations of `text` through the binary form, and the trace's summary.
fn ops(text: &str) -> (Vec<u8>, TraceSummary) {
    let mut b = OpsBuilder::new();
    let ops: Vec<ReplayOp> = events(text).iter().map(|e| b.op(e)).collect();
    let last = b.last_ops().to_vec();
    let summary = b.finish();
    let mut bytes = Vec::new();
    let n = ops.len() as u64;
    ops::write_ops(&mut bytes, summary.threads, ops.iter().copied(), n).unwrap();
    // Threads end after their last operation.
    ops::mark_last_ops(&mut std::io::Cursor::new(&mut bytes), &last).unwrap();
    (bytes, summary)
}

fn replay(text: &str, alloc: Allocator, threads: ThreadMode, max: u64) -> (Report, TraceSummary) {
    let (bytes, summary) = ops(text);
    let reader = OpsReader::new(&bytes[..]).unwrap();
    let options = Options {
        timing: Timing::Fast,
        threads,
        touch: true,
        max_block_size: max,
        sample_every: 1,
    };
    let (t, c) = (reader.threads, reader.count);
    (run(alloc, &options, t, c, reader).unwrap(), summary)
}

const MESSY: &str = "x:f 5; x:a 0 100; x:a 1 84000000000000000; x:f 1; x:f 0; x:f 0; \
     x:a 2 0; x:r 2 3 5000; x:r 9 4 64; x:m 3 6; x:m 77 78; x:a 7 18446744073709551615; \
     x:r 6 6 9223372036854775807";

#[test]
fn unknown_frees_null_and_impossible_sizes_replay_without_crashing() {
    for alloc in Allocator::available() {
        // With a limit: the giant is refused before any allocator sees it.
        let (r, s) = replay(MESSY, alloc, ThreadMode::Ordered, 1 << 30);
        let c = &r.counts.ops;
        assert_eq!((c.allocs, c.frees, c.reallocs, c.moves), (4, 4, 3, 2));
        let t = &s.counts;
        assert_eq!((t.allocs, t.frees, t.reallocs, t.moves), (4, 4, 3, 2));
        // f 5, f 1 (refused, never live), the second f 0.
        assert_eq!(c.unknown_frees, 3, "{}", alloc.name());
        assert_eq!(c.unknown_moves, 2);
        // In the trace f 1 finds its block: f 5 and the second f 0; r 9 and m 77.
        assert_eq!((t.unknown_frees, t.unknown_moves), (2, 2));
        assert_eq!(r.counts.refused, 3);
        assert_eq!(r.largest_refused, Some((11, u64::MAX)));
        assert_eq!(r.ops, 13);
        assert_eq!(r.threads, 1);
        // Without a limit the allocator itself says no (null), and that is counted too.
        let (r, _) = replay(MESSY, alloc, ThreadMode::Ordered, u64::MAX);
        assert_eq!(
            r.counts.failed + r.counts.refused,
            3,
            "{}: {:?}",
            alloc.name(),
            r.counts
        );
    }
}

#[test]
fn live_bytes_follow_the_trace() {
    let t = "x:a 1 4096; x:a 2 8192; x:f 1; x:r 2 2 100000; x:a 3 10; x:f 2";
    let (r, s) = replay(t, Allocator::System, ThreadMode::Ordered, u64::MAX);
    assert_eq!(s.peak_live, 100_010);
    let live: Vec<u64> = r.samples.iter().map(|p| p.live).collect();
    assert_eq!(live, [0, 4096, 12288, 8192, 100_000, 100_010, 10]);
    let trace: Vec<u64> = s.live.iter().map(|p| p.live).collect();
    assert_eq!(&live[1..], &trace[..]);
    assert_eq!(r.peak_sample().map(|p| p.event), Some(5));
    assert!(r.samples.iter().all(|p| p.rss > 0));
    let kinds: Vec<&str> = r.latency.iter().map(|l| l.kind.as_str()).collect();
    assert_eq!(kinds, ["alloc", "free", "realloc"]);
    assert_eq!(r.latency_of("alloc").map(|l| l.count), Some(3));
    let l = r.latency_of("free").unwrap();
    assert!(l.p50_ns <= l.p99_ns && l.p99_ns <= l.p999_ns && l.p999_ns <= l.max_ns);
}

/// Three threads that pass blocks between them.
fn threaded() -> String {
    let mut t = String::new();
    for i in 0..3000u64 {
        let th = i % 3;
        t.push_str(&format!("{th}:a {i} {}; ", 16 + i % 200));
        if i >= 10 {
            // Frees a block another thread made.
            t.push_str(&format!("{}:f {}; ", (th + 1) % 3, i - 10));
        }
        if i % 7 == 0 {
            t.push_str(&format!("{th}:r {i} {i} {}; ", 300 + i));
        }
    }
    t
}

#[test]
fn ordered_threads_keep_the_trace_order() {
    let t = threaded();
    let (r, s) = replay(&t, Allocator::System, ThreadMode::Ordered, u64::MAX);
    assert_eq!(r.threads, 3);
    assert_eq!(r.mode, ThreadMode::Ordered);
    // In the trace's order every free finds its block, and the live bytes after each
    // operation are the trace's.
    assert_eq!(r.counts.ops, s.counts);
    assert_eq!(r.counts.ops.unknown_frees, 0);
    let mut by_event = std::collections::HashMap::new();
    for p in &r.samples {
        by_event.insert(p.event, p.live);
    }
    for p in &s.live {
        assert_eq!(by_event.get(&p.event), Some(&p.live), "event {}", p.event);
    }
    assert_eq!(r.peak_sample().map(|p| p.live), Some(s.peak_live));
}

#[test]
fn free_running_threads_play_every_operation() {
    let t = threaded();
    for alloc in Allocator::available() {
        let (r, s) = replay(&t, alloc, ThreadMode::Free, u64::MAX);
        assert_eq!(r.mode, ThreadMode::Free);
        assert_eq!(r.ops, s.events);
        assert_eq!(
            (
                r.counts.ops.allocs,
                r.counts.ops.frees,
                r.counts.ops.reallocs
            ),
            (s.counts.allocs, s.counts.frees, s.counts.reallocs)
        );
        // A free may now come before its allocation on another thread: it is skipped.
        let freed = r.latency_of("free").map_or(0, |l| l.count);
        assert_eq!(freed + r.counts.ops.unknown_frees, s.counts.frees);
        assert_eq!(r.samples.last().map(|p| p.event), Some(s.events));
    }
}

#[test]
fn a_trace_without_threads_runs_on_one() {
    let (r, s) = replay(
        "x:a 1 10; x:f 1",
        Allocator::System,
        ThreadMode::Free,
        1 << 20,
    );
    assert_eq!((r.threads, s.threads, r.ops), (1, 1, 2));
}

#[test]
fn operations_round_trip_and_bad_files_are_refused() {
    let (bytes, s) = ops(MESSY);
    let back: Vec<ReplayOp> = OpsReader::new(&bytes[..])
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back.len() as u64, s.events);
    let mut b = OpsBuilder::new();
    let mut again: Vec<ReplayOp> = events(MESSY).iter().map(|e| b.op(e)).collect();
    for &i in b.last_ops() {
        again[i as usize].last = true;
    }
    assert_eq!(b.last_ops(), [12]);
    // Alignments are stored in 32 bits; none is asked for here.
    assert_eq!(back, again);
    assert!(OpsReader::new(&b"not ops at all......"[..]).is_err());
    // Cut short: an error, not a panic.
    let cut = &bytes[..bytes.len() - 3];
    let r: Result<Vec<_>, _> = OpsReader::new(cut).unwrap().collect();
    assert!(r.is_err());
    // A thread the header does not have.
    let mut bad = bytes.clone();
    bad[20 + 1] = 7;
    let reader = OpsReader::new(&bad[..]).unwrap();
    let options = Options {
        timing: Timing::Fast,
        threads: ThreadMode::Ordered,
        touch: false,
        max_block_size: 1 << 20,
        sample_every: 1,
    };
    assert!(matches!(
        run(Allocator::System, &options, 2, reader.count, reader),
        Err(ReplayError::Thread { thread: 7, .. })
    ));
}

/// The probe's snapshots in each thread mode: at the trace's live peak (ordered threads, one
/// thread) the live blocks are the trace's, by class; at the end too (every mode). A report
/// without them (an older child's) still loads.
#[test]
fn waste_is_attributed_at_the_live_peak_and_the_end() {
    let t = threaded();
    for mode in [ThreadMode::Ordered, ThreadMode::Free] {
        let (bytes, summary) = ops(&t);
        let reader = OpsReader::new(&bytes[..]).unwrap();
        let options = Options {
            threads: mode,
            timing: Timing::Fast,
            touch: true,
            max_block_size: u64::MAX,
            sample_every: 1,
        };
        let (th, c) = (reader.threads, reader.count);
        let probe = Probe::new(Some(summary.peak_event), None);
        let r = run_probed(Allocator::System, &options, th, c, reader, probe).unwrap();
        let end = r.frag.at_end.as_ref().expect("the end");
        assert_eq!(end.event, summary.events);
        // Free-running threads may free a block before another thread made it: the end is
        // the trace's only in order.
        if mode == ThreadMode::Ordered {
            assert_eq!(end.live, summary.live.last().map_or(0, |s| s.live));
        }
        assert_eq!(end.attributed().live, end.live);
        match (mode, &r.frag.at_peak) {
            (ThreadMode::Ordered, Some(peak)) => {
                assert_eq!(
                    (peak.event, peak.live),
                    (summary.peak_event, summary.peak_live)
                );
                assert_eq!(peak.attributed().live, summary.peak_live);
                assert!(peak.pages > 0 && peak.page_size > 0);
                assert_eq!(peak.sites.len(), 1, "no sites file: one row, no site");
            }
            (ThreadMode::Free, None) => {}
            (m, p) => panic!("{m:?}: {p:?}"),
        }
        #[cfg(feature = "json")]
        {
            let mut v = serde_json::to_value(&r).unwrap();
            v.as_object_mut().unwrap().remove("frag");
            let old: Report = serde_json::from_value(v).unwrap();
            assert_eq!(old.frag, crate::frag::Attributed::default());
        }
    }
}

#[test]
fn present_bytes_are_set_in_the_buffer_and_in_the_file() {
    // More operations than the writer buffers, so that the first ones are in the file when
    // their frees say their present bytes, and the last ones still in the buffer.
    let n = 40_000u64;
    let mut b = OpsBuilder::new();
    let temp = crate::io::TempFile::new().unwrap();
    let mut w = ops::OpsWriter::new(temp.file()).unwrap();
    let ev = |record: u64, op: HeapOp| HeapEvent {
        record,
        space: 0,
        key: 0,
        thread: None,
        time: None,
        site: None,
        stack: None,
        op,
    };
    for id in 0..n {
        let (op, patch) = b.op_resident(
            &ev(
                id,
                HeapOp::Alloc {
                    id,
                    size: 100,
                    align: None,
                },
            ),
            None,
        );
        assert!(patch.is_none());
        w.write(&op).unwrap();
    }
    // The first block's free, and the last's; a negative count says nothing.
    for (i, (id, resident)) in [(0, Some(10)), (n - 1, Some(20)), (1, Some(u64::MAX))]
        .into_iter()
        .enumerate()
    {
        let (op, patch) = b.op_resident(&ev(n + i as u64, HeapOp::Free { id }), resident);
        w.write(&op).unwrap();
        if let Some((index, bytes)) = patch {
            w.set_present(index, bytes).unwrap();
        }
    }
    w.finish(b.threads()).unwrap();
    let file = std::fs::File::open(temp.path()).unwrap();
    let read: Vec<ReplayOp> = OpsReader::new(std::io::BufReader::new(file))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(read.len() as u64, n + 3);
    assert_eq!(read[0].present, 10);
    assert_eq!(read[(n - 1) as usize].present, 20);
    assert_eq!(read[1].present, NO_PRESENT);
    assert_eq!(read[2].present, NO_PRESENT);
}

#[test]
fn recorded_timing_keeps_the_gaps_of_ordered_threads() {
    // Three operations on two threads, 30 ms apart in the trace.
    let mut b = OpsBuilder::with_time_unit(Some(crate::dtd::analysis::TimeUnit::Ms));
    let evs = events("1:a 1 10; 2:a 2 20; 1:f 1");
    let ops: Vec<ReplayOp> = evs
        .iter()
        .zip([1000u64, 1030, 1060])
        .map(|(e, t)| {
            b.op(&HeapEvent {
                time: Some(t),
                ..*e
            })
        })
        .collect();
    let s = b.finish();
    assert_eq!((s.timed, s.duration_ns), (3, 60_000_000));
    assert_eq!(
        ops.iter().map(|o| o.time).collect::<Vec<_>>(),
        [0, 30_000_000, 60_000_000]
    );
    let options = Options {
        timing: Timing::Recorded,
        threads: ThreadMode::Ordered,
        touch: false,
        max_block_size: 1 << 20,
        sample_every: 1,
    };
    let r = run(Allocator::System, &options, 2, 3, ops.into_iter().map(Ok)).unwrap();
    assert!(r.wall_ns >= 60_000_000, "{}", r.wall_ns);
    assert_eq!(r.recorded_ns, Some(60_000_000));
    let late = r.lateness.expect("lateness");
    assert_eq!(late.count, 3);
    assert_eq!(r.timing, Timing::Recorded);
}
