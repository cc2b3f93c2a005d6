//! Any text as `mtf pack` input for the HATF DTD: an error with a line and column, or a trace;
//! never a panic.
#![no_main]
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use metatf::dtd::Schema;
use metatf::pack::pack_to_vec;
use metatf::text::InputFormat;

fn schema() -> &'static Schema {
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(|| {
        metatf::dtd::parse_str("hatf10-split.dtd", include_str!("../../dtds/hatf10-split.dtd"))
            .ok()
            .unwrap()
            .schema
    })
}

fuzz_target!(|data: &[u8]| {
    for format in [InputFormat::Text, InputFormat::Jsonl] {
        let _ = pack_to_vec(schema(), data, format);
    }
});
