//! `mtf replay`'s event stream: the heap events of any trace (raw bytes or the text form
//! packed, first byte odd) become replay operations (`OpsBuilder`), are written to an
//! operations file and read back (`OpsReader`), and are played against the system allocator
//! with a capped heap: blocks over 64 KiB are refused (counted, not made), at most 4 threads.
//! The operations read back must be the ones written. Never a panic, never a huge allocation.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::analysis::HeapEvents;
use metatf::replay::{self, ops, Allocator, OpsBuilder, OpsReader, ThreadMode};
use metatf::OpenOptions;

fuzz_target!(|data: &[u8]| {
    let Some(bytes) = metatf_fuzz::trace_from_input(data) else {
        return;
    };
    let Ok(opened) = OpenOptions::new()
        .salvage(true)
        .max_input_bytes(1 << 22)
        .open_bytes(bytes)
    else {
        return;
    };
    let reader = opened.reader();
    let mut events = HeapEvents::new(&reader);
    events.interpreter_mut().set_limit(10_000);
    let mut builder = OpsBuilder::new();
    let mut file = std::io::Cursor::new(Vec::new());
    ops::write_ops_header(&mut file).expect("to memory");
    let mut written = Vec::new();
    for e in events.by_ref().take(100_000) {
        let op = builder.op(&e);
        ops::write_op(&mut file, &op).expect("to memory");
        written.push(op);
    }
    ops::finish_ops_header(&mut file, builder.threads(), builder.events()).expect("to memory");
    ops::mark_last_ops(&mut file, builder.last_ops()).expect("to memory");
    let threads = builder.threads();
    let _ = builder.finish();
    let bytes = file.into_inner();
    let read: Vec<_> = OpsReader::new(&bytes[..])
        .expect("the header just written")
        .collect::<Result<_, _>>()
        .expect("the operations just written");
    assert_eq!(read.len(), written.len(), "operations lost in the file");
    for (a, b) in read.iter().zip(&written) {
        assert!(
            a.kind == b.kind && a.thread == b.thread && a.id == b.id && a.size == b.size,
            "an operation changed in the file: {a:?} / {b:?}"
        );
    }
    if threads > 4 {
        return;
    }
    let options = replay::Options {
        timing: replay::Timing::Fast,
        threads: ThreadMode::Ordered,
        touch: false,
        max_block_size: 64 << 10,
        sample_every: 1 << 20,
    };
    let r = OpsReader::new(&bytes[..]).expect("the header just written");
    let (t, count) = (r.threads, r.count);
    if let Err(e) = replay::run(Allocator::System, &options, t, count, r) {
        let _ = e.to_string();
    }
});
