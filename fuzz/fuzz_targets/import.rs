//! Every shipped import mapping over its own format's text (line units) or XML (tptp, XML
//! units): the first byte chooses the mapping and the part, the rest is the input. Round trip
//! (issue 20 item 2): the input imported then exported gives the same bytes back, or the
//! import refuses with an error; never a silently different file, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::import::records::Container;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, input)) = data.split_first() else {
        return;
    };
    let maps = metatf_fuzz::mappings();
    let (_, m) = &maps[sel as usize % maps.len()];
    let name = metatf_fuzz::part_file_name(m, sel as usize / maps.len());
    let out = metatf_fuzz::scratch_dir().join("import.out");
    let r = metatf_fuzz::import_then_export(
        m,
        |imp| imp.import_stream(&name, &name, input, 0),
        Container::Plain,
        &out,
    );
    match r {
        Ok(_) => {
            let back = std::fs::read(&out).expect("the exported file");
            assert!(
                back == input,
                "{}: import then export changed the input ({} bytes in, {} out)",
                m.name,
                input.len(),
                back.len()
            );
        }
        Err(message) => assert!(!message.is_empty(), "an import error without a message"),
    }
});
