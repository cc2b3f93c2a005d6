//! Any text: the DTD parser and resolver return a schema or diagnostics, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(e) = metatf::dtd::parse_str("fuzz.dtd", text) {
            let _ = metatf::dtd::render_plain(&e);
        }
    }
});
