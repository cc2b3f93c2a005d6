//! Every shipped import mapping over a ZIP input (and over whatever else a file's bytes may be:
//! gzip, zstd, xz, bzip2 are read decompressed): the first byte chooses the mapping, the rest
//! is the file. Round trip (issue 20 item 2, docs/mappings.md *ZIP and XML*): the import
//! refuses with an error, or the export gives back an archive with the same entries in the
//! same order, with the same names, methods, dates, contents and archive comment (a plain input
//! comes back byte for byte, decompressed). Never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::import::{order_inputs, zipio, ImportInput};

/// (name, method, time, bytes) of every entry, and the comment; `None` if unreadable.
fn entries(p: &std::path::Path) -> Option<(Vec<(String, u64, u32, Vec<u8>)>, Vec<u8>)> {
    use std::io::Read;
    let mut z = zipio::Reader::new(std::fs::File::open(p).ok()?).ok()?;
    let mut v = Vec::new();
    for i in 0..z.len() {
        let meta = z.meta(i).ok()?;
        let mut b = Vec::new();
        z.entry(i).ok()?.take(1 << 24).read_to_end(&mut b).ok()?;
        v.push((meta.name, meta.method, meta.time, b));
    }
    Some((v, z.comment().to_vec()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, file)) = data.split_first() else {
        return;
    };
    let maps = metatf_fuzz::mappings();
    let (_, m) = &maps[sel as usize % maps.len()];
    let dir = metatf_fuzz::scratch_dir();
    let input = dir.join("in.zip");
    std::fs::write(&input, file).expect("scratch write");
    let Ok(opened) = ImportInput::open(&input) else {
        return;
    };
    let zip = opened.is_zip();
    let Ok((mut inputs, container)) = order_inputs(m, vec![opened]) else {
        return;
    };
    let Some(one) = inputs.pop() else {
        return;
    };
    let out = dir.join(if zip { "out.zip" } else { "out.bin" });
    let r = metatf_fuzz::import_then_export(m, |imp| imp.import_input(one), container, &out);
    let Ok(_) = r else {
        return;
    };
    if zip {
        let a = entries(&input).expect("an imported ZIP reads");
        let b = entries(&out).expect("an exported ZIP reads");
        assert!(
            a == b,
            "{}: the exported ZIP differs from the input",
            m.name
        );
    } else {
        // Not a ZIP: what was read (decompressed) comes back.
        let mut plain = Vec::new();
        {
            use std::io::Read;
            let Ok(mut r) = metatf::io::Input::reader(&input) else {
                return;
            };
            if r.read_to_end(&mut plain).is_err() {
                return;
            }
        }
        let back = std::fs::read(&out).expect("the exported file");
        assert!(
            back == plain,
            "{}: import then export changed the input",
            m.name
        );
    }
});
