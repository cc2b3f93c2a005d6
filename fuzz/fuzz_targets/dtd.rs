//! Any text as a DTD: parsed and resolved (the analysis declarations of docs/format.md §14 and
//! the built-in fragments of `include` too), a schema or diagnostics with spans, never a panic;
//! a schema is listed as `mtf dtd show` lists it, and its record programs are compiled by
//! opening an empty trace with it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::container::{ByteOrder, Class, Header, Trace};
use metatf::decode::Reader;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match metatf::dtd::parse_str("fuzz.dtd", text) {
        Ok(loaded) => {
            for w in &loaded.warnings {
                let _ = w.to_string();
            }
            let _ = metatf::text::schema_summary(&loaded.schema);
            let _ = metatf::text::schema_listing(&loaded.schema);
            let empty = Header::encode(Class::Bits64, ByteOrder::Little, "fuzz.dtd", 0, 0, &[])
                .expect("an empty header");
            let trace = Trace::from_bytes(empty).expect("an empty trace");
            let reader = Reader::new(&trace, &loaded.schema);
            metatf_fuzz::decode_all(&reader);
        }
        Err(e) => {
            let _ = format!("{e} {e:?}");
        }
    }
});
