//! The decoder over each DTD built into `mtf`: the fuzz input chooses the DTD, the class, the
//! byte order, live/1 and up to three sections of that DTD, and gives the bytes of each region;
//! the target builds a valid header and section table (and each section's `section` record) so
//! that the records themselves are what is fuzzed. Every record is decoded, printed and its
//! values read; the semantic checker runs over them too. Never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::container::{ByteOrder, Class, Header, Trace, EXT_LIVE};
use metatf::decode::Reader;
use metatf::encode::TraceWriter;

fuzz_target!(|data: &[u8]| {
    let [d, flags, l1, l2, l3, n0, n1, rest @ ..] = data else {
        return;
    };
    let shipped = metatf_fuzz::shipped();
    let (name, schema) = &shipped[*d as usize % shipped.len()];
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
    // The sections this DTD declares, in the order the input picks them.
    let ids: Vec<u8> = schema
        .scopes
        .iter()
        .map(|s| s.id)
        .filter(|&i| i != 0)
        .collect();
    let nsec = ((flags >> 2) & 3) as usize;
    let mut chosen: Vec<u8> = Vec::new();
    for k in 0..nsec.min(ids.len()) {
        let id = ids[(*flags as usize >> 4).wrapping_add(k) % ids.len()];
        if !chosen.contains(&id) {
            chosen.push(id);
        }
    }
    // Each section's `section` record, as the writer makes it.
    let mut w = TraceWriter::in_memory(schema, class, order, name);
    for &id in &chosen {
        if w.section(id).is_err() {
            return;
        }
    }
    let Ok(empty) = w.finish_to_vec() else {
        return;
    };
    let Ok(t) = Trace::from_bytes(empty) else {
        return;
    };
    let heads: Vec<Vec<u8>> = chosen
        .iter()
        .map(|&id| t.section_bytes(id).unwrap_or_default().to_vec())
        .collect();
    // Cut the rest into the global region and one body per section.
    let mut cuts = [*l1 as usize, *l2 as usize, *l3 as usize];
    let mut bodies: Vec<&[u8]> = Vec::new();
    let mut at = rest;
    for c in cuts.iter_mut().take(chosen.len()) {
        let k = (*c).min(at.len());
        bodies.push(&at[..k]);
        at = &at[k..];
    }
    bodies.push(at);
    // What is left after the sections' bodies is the global region (first in the file).
    let global = bodies.pop().unwrap_or_default();
    let sections: Vec<(u8, u64)> = chosen
        .iter()
        .zip(&heads)
        .zip(&bodies)
        .map(|((&id, h), b)| (id, (h.len() + b.len()) as u64))
        .filter(|&(_, size)| size > 0)
        .collect();
    if sections.len() != chosen.len() {
        return;
    }
    let body_len = global.len() as u64 + sections.iter().map(|s| s.1).sum::<u64>();
    let nrecords = (u16::from_le_bytes([*n0, *n1]) as u64).min(body_len);
    let Ok(mut file) = Header::encode(class, order, name, nrecords, global.len() as u64, &sections)
    else {
        return;
    };
    if flags & 0x80 != 0 {
        Header::set_extensions(&mut file, EXT_LIVE);
    }
    file.extend_from_slice(global);
    for (h, b) in heads.iter().zip(&bodies) {
        file.extend_from_slice(h);
        file.extend_from_slice(b);
    }
    let Ok(trace) = Trace::from_bytes(file) else {
        return;
    };
    let reader = Reader::new(&trace, schema);
    metatf_fuzz::decode_all(&reader);
    // The semantic pass over the same records (analysis declarations of the hatf DTDs).
    let mut check = metatf::analysis::check::Check::new(schema);
    check.set_limit(4096);
    let mut records = reader.records();
    while let Some(e) = records.next() {
        if let metatf::decode::Event::Record(v) = e {
            for f in check.record(&v).to_vec() {
                let _ = check.describe(&f);
            }
        }
    }
    for f in check.finish().to_vec() {
        let _ = check.describe(&f);
    }
});
