//! A user-supplied mapping file (docs/mappings.md): any text is parsed as a mapping, an error
//! with a line and column or a mapping; a mapping that parses and names a built-in DTD is then
//! used: its DTD is checked against it, and a few lines (after a NUL byte in the input) are
//! imported and exported, which must give them back byte for byte (lossless by construction).
#![no_main]
use libfuzzer_sys::fuzz_target;
use metatf::import::records::Container;
use metatf::import::Mapping;

fuzz_target!(|data: &[u8]| {
    let (text, input) = match data.iter().position(|&b| b == 0) {
        Some(k) => (&data[..k], &data[k + 1..]),
        None => (data, &b""[..]),
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let m = match Mapping::parse("fuzz.map", text) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    if metatf_fuzz::shipped_schema(&m.dtd).is_none() {
        return;
    }
    let name = metatf_fuzz::part_file_name(&m, 0);
    let out = metatf_fuzz::scratch_dir().join("mapping.out");
    let r = metatf_fuzz::import_then_export(
        &m,
        |imp| imp.import_stream(&name, &name, input, 0),
        Container::Plain,
        &out,
    );
    if r.is_ok() {
        let back = std::fs::read(&out).expect("the exported file");
        assert!(
            back == input,
            "import then export with a user mapping changed the input"
        );
    }
});
