//! Any bytes as a trace file opened in memory, as `mtf` opens one: compressed or not, strict and
//! salvaging, the DTD found by the header's name among the built-in DTDs; every record decoded
//! and printed. An error or a trace, never a panic, never memory in proportion to a claim.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::container::{Trace, TraceData};
use metatf::OpenOptions;

fuzz_target!(|data: &[u8]| {
    // The container alone: header, section table, regions.
    if let Ok(t) = Trace::from_slice(data) {
        let _ = t.header();
        for s in t.sections().sections() {
            let _ = t.section_bytes(s.number);
        }
        let _ = t.global_bytes();
        let _ = t.locate_dtd(None, None);
    }
    if let Ok(t) = Trace::salvage(TraceData::Borrowed(data), None) {
        let _ = t.damage().map(|d| d.to_string());
        for (_, r) in t.sections().regions() {
            let _ = t.region(r);
        }
    }
    // The whole opening path (decompression, DTD lookup), as `mtf dump` and `mtf check` do.
    // Design: a small cap on decompressed bytes keeps a compression bomb within the fuzzer's
    // memory limit; the cap itself is what is being tested.
    for salvage in [false, true] {
        let opened = OpenOptions::new()
            .salvage(salvage)
            .max_input_bytes(1 << 22)
            .open_bytes(data.to_vec());
        match opened {
            Ok(o) => {
                let reader = o.reader();
                metatf_fuzz::decode_all(&reader);
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
});
