//! Any bytes as a HATF trace (and as a split-stream trace, and as a trace with live sets,
//! extension live/1): open, decode and print every record; never panic, never read out of
//! bounds.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use metatf::container::Trace;
use metatf::decode::{Event, Reader};
use metatf::dtd::Schema;
use metatf::text::{Options, Printer};

fn schemas() -> &'static [Schema; 3] {
    static S: OnceLock<[Schema; 3]> = OnceLock::new();
    S.get_or_init(|| {
        let load = |t: &str| metatf::dtd::parse_str("x.dtd", t).ok().unwrap().schema;
        [
            load(include_str!("../../dtds/hatf10.dtd")),
            load(include_str!("../../dtds/hatf10-split.dtd")),
            load(include_str!("../../tests/data/dtd/valid/live_sets.dtd")),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    // A damaged container is salvaged as `mtf dump` does, so the lenient reading is fuzzed too.
    let Ok(trace) = Trace::salvage(metatf::container::TraceData::Borrowed(data), None) else {
        return;
    };
    for schema in schemas() {
        let reader = Reader::new(&trace, schema);
        let mut records = reader.records();
        let mut printer = Printer::new(&reader, Options::default());
        let mut sink = std::io::sink();
        while let Some(event) = records.next() {
            if let Event::Record(v) = event {
                printer.record(&mut sink, &v).unwrap();
            }
        }
    }
});
