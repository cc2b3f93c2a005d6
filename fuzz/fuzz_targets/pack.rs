//! Any text as `mtf pack` input, in the text form and as JSON lines, with the built-in DTD the
//! header names (the HATF split-stream DTD when it names none of them): an error with a line
//! and column, or a trace; never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::pack::pack_to_vec;
use metatf::text::InputFormat;

fuzz_target!(|data: &[u8]| {
    for format in [InputFormat::Text, InputFormat::Jsonl] {
        let schema = metatf_fuzz::schema_of_text(data, format)
            .or_else(|| metatf_fuzz::shipped_schema("hatf10-split.dtd"))
            .expect("a shipped DTD");
        match pack_to_vec(schema, data, format) {
            Ok(_) => {}
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
});
