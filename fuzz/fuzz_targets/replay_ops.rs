//! The replay operations file read as it comes (`OpsReader`: header, fixed-size operations):
//! any bytes; what is read is validated by `replay::run` (thread numbers, kinds) and played
//! against the system allocator with a capped heap (64 KiB blocks at most, at most 4 threads,
//! at most 10,000 operations). Never a panic, never a huge allocation.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::replay::{self, Allocator, OpsReader, ThreadMode};

fuzz_target!(|data: &[u8]| {
    let Ok(r) = OpsReader::new(data) else {
        return;
    };
    let (threads, count) = (r.threads, r.count);
    if threads > 4 {
        return;
    }
    let options = replay::Options {
        timing: replay::Timing::Fast,
        threads: if data.len() % 2 == 0 {
            ThreadMode::Ordered
        } else {
            ThreadMode::Free
        },
        touch: data.len() % 3 == 0,
        max_block_size: 64 << 10,
        sample_every: 1 << 20,
    };
    if let Err(e) = replay::run(Allocator::System, &options, threads, count, r.take(10_000)) {
        let _ = e.to_string();
    }
});
