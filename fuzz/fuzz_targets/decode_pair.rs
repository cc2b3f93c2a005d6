//! The decoder over a fuzzed DTD and trace pair: the input is DTD text, a NUL byte, then the
//! records of the global region (the target writes the header for the DTD's name), so that
//! the DTD language and the decoder are explored together (widths from expressions, repeats,
//! live sets, metadata records, references). Never a panic, never a hang.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::container::{ByteOrder, Class, Header, Trace, EXT_LIVE};
use metatf::decode::Reader;

fuzz_target!(|data: &[u8]| {
    let Some(cut) = data.iter().position(|&b| b == 0) else {
        return;
    };
    let Ok(text) = std::str::from_utf8(&data[..cut]) else {
        return;
    };
    let Some((&flags, body)) = data[cut + 1..].split_first() else {
        return;
    };
    let Ok(loaded) = metatf::dtd::parse_str("fuzz.dtd", text) else {
        return;
    };
    let schema = loaded.schema;
    let class = if flags & 1 == 0 {
        Class::Bits32
    } else {
        Class::Bits64
    };
    let order = if flags & 2 == 0 {
        ByteOrder::Little
    } else {
        ByteOrder::Big
    };
    let nrecords = if flags & 4 == 0 { 0 } else { body.len() as u64 };
    let Ok(mut file) = Header::encode(class, order, "fuzz.dtd", nrecords, body.len() as u64, &[])
    else {
        return;
    };
    if flags & 8 != 0 {
        Header::set_extensions(&mut file, EXT_LIVE);
    }
    file.extend_from_slice(body);
    let Ok(trace) = Trace::from_bytes(file) else {
        return;
    };
    let reader = Reader::new(&trace, &schema);
    metatf_fuzz::decode_all(&reader);
});
