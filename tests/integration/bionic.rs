//! An independent reading of Android's memory_replay traces, written from bionic's
//! memory_replay (never from mtf): the yardstick of the figures of imported Android traces.

use std::collections::HashMap;

/// What bionic's memory_replay makes of an Android trace (`PID: OP ARGS`, one per line):
/// `malloc P N`, `calloc P NMEMB SIZE` (NMEMB × SIZE bytes), `memalign P ALIGN N` allocate
/// block P; `free P` ends it (`free 0x0` is nothing); `realloc NEW OLD N` ends OLD (unless 0)
/// and allocates NEW with N bytes — except a failed realloc (NEW 0, N above 0), which leaves
/// OLD alive as C's realloc does; `realloc 0x0 OLD 0` frees OLD. Returns (peak, the first line
/// reaching it (from 1), allocations, heap events): a line is one event where it allocates or
/// ends a live block.
pub(crate) fn bionic(text: &str) -> (u128, u64, u64, u64) {
    let mut live: HashMap<u64, u64> = HashMap::new();
    let (mut bytes, mut peak, mut at, mut allocs, mut events) = (0u128, 0u128, 0u64, 0u64, 0u64);
    for (i, line) in text.lines().enumerate() {
        let (_, free, alloc) = bionic_line(line);
        let freed = free.and_then(|a| live.remove(&a));
        if let Some(size) = freed {
            bytes -= u128::from(size);
        }
        if freed.is_some() || alloc.is_some() {
            events += 1;
        }
        if let Some((a, size)) = alloc {
            if let Some(old) = live.insert(a, size) {
                bytes -= u128::from(old);
            }
            bytes += u128::from(size);
            allocs += 1;
        }
        if bytes > peak {
            peak = bytes;
            at = i as u64 + 1;
        }
    }
    (peak, at, allocs, events)
}

/// One line of bionic's memory_replay text as its reader takes it: the thread, the address a
/// free or a realloc ends (none for null), and the (address, bytes) an allocation makes (none
/// for a realloc that failed or freed).
pub(crate) fn bionic_line(line: &str) -> (u64, Option<u64>, Option<(u64, u64)>) {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let w: Vec<&str> = line.split_whitespace().collect();
    let thread: u64 = w[0].trim_end_matches(':').parse().unwrap();
    let (mut free, mut alloc) = (None, None);
    match w[1] {
        "malloc" => alloc = Some((hex(w[2]), w[3].parse::<u64>().unwrap())),
        "calloc" => {
            alloc = Some((
                hex(w[2]),
                w[3].parse::<u64>().unwrap() * w[4].parse::<u64>().unwrap(),
            ))
        }
        "memalign" => alloc = Some((hex(w[2]), w[4].parse().unwrap())),
        "free" => free = Some(hex(w[2])).filter(|a| *a != 0),
        "realloc" => {
            let (new, old, n) = (hex(w[2]), hex(w[3]), w[4].parse::<u64>().unwrap());
            if !(new == 0 && n > 0) {
                free = Some(old).filter(|a| *a != 0);
                alloc = Some((new, n)).filter(|a| a.0 != 0);
            }
        }
        _ => {}
    }
    (thread, free, alloc)
}
