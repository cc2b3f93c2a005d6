//! The allocator simulator (`mtf simulate`, a safe model: no real memory is placed) over the
//! heap events of any trace (raw bytes or text packed, first byte odd), and over events made
//! directly from the bytes: every policy, odd alignments and headers. Never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::analysis::{HeapEvent, HeapEvents, HeapOp};
use metatf::simulate::{simulate, Options, Policy};
use metatf::OpenOptions;

/// Events straight from bytes: 12 bytes each (op, space, id, size).
fn raw_events(data: &[u8]) -> Vec<HeapEvent> {
    data.chunks_exact(12)
        .enumerate()
        .map(|(i, c)| {
            let id = u32::from_le_bytes([c[2], c[3], c[4], c[5]]) as u64;
            let n = u32::from_le_bytes([c[6], c[7], c[8], c[9]]) as u64;
            let size = n << (c[10] & 31);
            let op = match c[0] % 4 {
                0 => HeapOp::Alloc {
                    id,
                    size,
                    align: (c[11] & 1 == 1).then_some(1u64 << (c[11] >> 4)),
                },
                1 => HeapOp::Free { id },
                2 => HeapOp::Move {
                    old: id,
                    new: n,
                    size: Some(size),
                },
                _ => HeapOp::Move {
                    old: id,
                    new: n,
                    size: None,
                },
            };
            HeapEvent {
                record: i as u64,
                space: (c[1] % 3) as u32,
                key: (c[1] >> 4) as u64,
                thread: None,
                time: None,
                site: None,
                op,
            }
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let events: Vec<HeapEvent> = if mode & 2 == 0 {
        raw_events(rest)
    } else {
        let Some(bytes) = metatf_fuzz::trace_from_input(data) else {
            return;
        };
        let Ok(o) = OpenOptions::new()
            .salvage(true)
            .max_input_bytes(1 << 22)
            .open_bytes(bytes)
        else {
            return;
        };
        let reader = o.reader();
        let mut ev = HeapEvents::new(&reader);
        ev.interpreter_mut().set_limit(10_000);
        ev.take(100_000).collect()
    };
    for policy in Policy::ALL {
        let mut opts = Options::new(policy);
        opts.align = 1u64 << (mode >> 4 & 7);
        opts.header = (mode >> 2 & 3) as u64 * 8;
        let report = simulate(opts, events.iter().copied());
        let _ = report.utilisation();
    }
});
