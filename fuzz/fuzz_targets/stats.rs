//! `mtf stats` and the semantic checker (src/analysis) over any trace: raw bytes with the
//! built-in DTD the header names, or the text form packed (first byte odd; the HATF DTDs
//! declare what records do, docs/format.md §14). Figures or nothing, never a panic; the
//! checker's findings are described.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::analysis::check::Check;
use metatf::analysis::stats::{compute_opened, SiteOrder, Window};
use metatf::decode::Event;
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
    let stats = compute_opened(&opened, Window::all());
    for space in &stats.spaces {
        for order in [SiteOrder::Peak, SiteOrder::Leaked, SiteOrder::Allocated] {
            for s in space.top_sites(order, 5) {
                let _ = format!("{s:?}");
            }
        }
    }
    let _ = format!("{stats:?}");
    let reader = opened.reader();
    let mut check = Check::new(opened.schema());
    check.set_limit(1000);
    let mut records = reader.records();
    while let Some(e) = records.next() {
        if let Event::Record(v) = e {
            for f in check.record(&v).to_vec() {
                let _ = check.describe(&f);
            }
        }
    }
    for f in check.finish().to_vec() {
        let _ = check.describe(&f);
    }
    let _ = check.counts().count();
});
