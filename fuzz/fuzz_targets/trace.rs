//! Any bytes as a HATF trace (and as a split-stream trace): open, decode and print every record;
//! never panic, never read out of bounds.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use metatf::container::Trace;
use metatf::decode::Reader;
use metatf::dtd::Schema;
use metatf::text::Printer;

fn schemas() -> &'static [Schema; 2] {
    static S: OnceLock<[Schema; 2]> = OnceLock::new();
    S.get_or_init(|| {
        let load = |t: &str| metatf::dtd::parse_str("x.dtd", t).ok().unwrap().schema;
        [
            load(include_str!("../../dtds/hatf10.dtd")),
            load(include_str!("../../dtds/hatf10-split.dtd")),
        ]
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = Trace::from_slice(data) else { return };
    for schema in schemas() {
        let reader = Reader::from_trace(&trace, schema);
        let mut dec = reader.records();
        let printer = Printer::default();
        let mut sink = std::io::sink();
        while let Some(r) = dec.next() {
            if let Ok(v) = r {
                printer.record(&mut sink, &v).unwrap();
            }
        }
    }
});
