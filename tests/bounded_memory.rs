//! Issue 19 item 5: reading a compressed or piped trace holds a bounded amount of memory,
//! whatever its size. A global allocator counts the heap in use (this test binary has this one
//! test, so nothing else allocates meanwhile); the trace, 24 MiB once decompressed, is read whole
//! through `metatf::OpenOptions` and decoded record by record. With the spool (the default) the
//! peak heap stays under 12 MiB; streamed from a 1 MiB window (`OpenOptions::stream_window`),
//! under 4 MiB; with the spool turned off (everything in memory, as before)
//! it is over 24 MiB, which shows that the measure sees the difference. The pages of the mapped
//! spool are not heap: `Trace::release_before` keeps them to a window (docs/performance.md
//! has the peak RSS measured at 1 M to 100 M records).

#![cfg(feature = "compression")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counters only add up
// the sizes it was asked for.
#[allow(unsafe_code)] // a counting global allocator
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = NOW.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        NOW.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = NOW.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size
                    - layout.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                NOW.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const DTD: &str = "
    tag.width = 1;
    x.width = 4;   x.interpretation = none;
    r : (tag, x) { tag.value = 4; }
";

/// Records in the trace: 5 bytes each, 24 MiB in all.
const RECORDS: u64 = (24 << 20) / 5;

/// Heap in use above what was in use before `f`, at its peak, and `f`'s result.
fn peak_during<T>(f: impl FnOnce() -> T) -> (usize, T) {
    let base = NOW.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = f();
    (PEAK.load(Ordering::Relaxed).saturating_sub(base), out)
}

/// Opens the trace with `options`, decodes every record, returns how many and their checksum.
fn read_all(options: metatf::OpenOptions, path: &std::path::Path) -> (u64, u64) {
    use metatf::decode::Event;
    let opened = options.open(path).unwrap();
    let reader = opened.reader();
    let mut records = reader.records();
    let (mut n, mut sum) = (0u64, 0u64);
    while let Some(event) = records.next() {
        match event {
            Event::Record(r) => {
                n += 1;
                sum = sum.wrapping_add(r.fields().nth(1).and_then(|f| f.as_u64()).unwrap_or(0));
            }
            other => panic!("{other:?}"),
        }
    }
    (n, sum)
}

#[test]
fn a_compressed_trace_is_read_in_bounded_memory() {
    use metatf::container::{ByteOrder, Class, Header};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mem.dtd"), DTD).unwrap();
    let zst = dir.path().join("big.mtf.zst");
    let mut z = zstd::Encoder::new(std::fs::File::create(&zst).unwrap(), 1).unwrap();
    let header = Header::encode(
        Class::Bits32,
        ByteOrder::Little,
        "mem.dtd",
        RECORDS,
        RECORDS * 5,
        &[],
    )
    .unwrap();
    z.write_all(&header).unwrap();
    let mut want = 0u64;
    let mut block = Vec::with_capacity(5 << 12);
    for i in 0..RECORDS {
        let x = (i as u32).wrapping_mul(2_654_435_761);
        want = want.wrapping_add(u64::from(x));
        block.push(4);
        block.extend_from_slice(&x.to_le_bytes());
        if block.len() >= 5 << 12 {
            z.write_all(&block).unwrap();
            block.clear();
        }
    }
    z.write_all(&block).unwrap();
    z.finish().unwrap();
    drop(block);

    let spool = dir.path().join("spool");
    std::fs::create_dir(&spool).unwrap();
    let (peak, (n, sum)) =
        peak_during(|| read_all(metatf::OpenOptions::new().spool_dir(&spool), &zst));
    assert_eq!((n, sum), (RECORDS, want));
    eprintln!("peak heap with the spool: {peak} bytes");
    assert!(peak < 12 << 20, "peak heap {peak} bytes with the spool");
    assert_eq!(std::fs::read_dir(&spool).unwrap().count(), 0);

    // Streamed (`OpenOptions::stream`, read through `events::read`): no temporary file, the heap bounded by the window.
    let (peak, (n, sum)) = peak_during(|| {
        use metatf::decode::Event;
        let opened = metatf::OpenOptions::new()
            .stream_window(1 << 20)
            .spool_dir(&spool)
            .open(&zst)
            .unwrap();
        assert!(opened.is_streamed(), "a compressed trace is streamed");
        let reader = opened.reader();
        let options = metatf::events::EventOptions::new();
        let (counted, end) = metatf::events::read(
            &opened,
            &reader,
            &options,
            |_| {},
            |events| {
                let (mut n, mut sum) = (0u64, 0u64);
                while let Some(event) = events.next_event() {
                    match event {
                        Event::Record(r) => {
                            n += 1;
                            let x = r.fields().nth(1).and_then(|f| f.as_u64()).unwrap_or(0);
                            sum = sum.wrapping_add(x);
                        }
                        other => panic!("{other:?}"),
                    }
                }
                (n, sum)
            },
        );
        assert!(end.fault.is_none());
        counted
    });
    assert_eq!((n, sum), (RECORDS, want));
    eprintln!("peak heap streamed: {peak} bytes");
    assert!(peak < 4 << 20, "peak heap {peak} bytes streamed");
    assert_eq!(std::fs::read_dir(&spool).unwrap().count(), 0);

    // The control: everything in memory.
    let (peak, (n, sum)) =
        peak_during(|| read_all(metatf::OpenOptions::new().spool_above(u64::MAX), &zst));
    assert_eq!((n, sum), (RECORDS, want));
    eprintln!("peak heap in memory: {peak} bytes");
    assert!(peak > 24 << 20, "peak heap {peak} bytes in memory");
}
