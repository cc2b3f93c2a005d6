//! The library's explicit limits (docs/format.md §16, src/limits.rs): each one hit, and the
//! message checked. Limits tested elsewhere are named in the table of docs/format.md.

use std::io::{Read, Write};

use metatf::limits;
use metatf::text::InputFormat;

use crate::util;

/// The first error of a DTD that does not load, rendered.
fn dtd_error(text: &str) -> String {
    match metatf::dtd::parse_str("limit.dtd", text) {
        Ok(_) => panic!("accepted: {text:.200}"),
        Err(e) => metatf::dtd::render_plain(&e),
    }
}

#[test]
fn field_lists_nested_too_deep() {
    let depth = limits::MAX_DTD_DEPTH + 1;
    let text = format!(
        "x.width = 1; x.interpretation = none;\nr : (tag, {}x{}) {{ tag.value = 4; }}",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    let e = dtd_error(&text);
    assert!(e.contains("mtf::dtd::limit"), "{e}");
    assert!(e.contains("nesting deeper than 64 levels"), "{e}");
    // At the limit it is accepted.
    let ok = format!(
        "x.width = 1; x.interpretation = none;\nr : (tag, {}x{}) {{ tag.value = 4; }}",
        "(".repeat(limits::MAX_DTD_DEPTH - 2),
        ")".repeat(limits::MAX_DTD_DEPTH - 2)
    );
    metatf::dtd::parse_str("ok.dtd", &ok).unwrap();
}

#[test]
fn expressions_nested_too_deep() {
    let depth = limits::MAX_DTD_DEPTH + 1;
    let text = format!("x.width = {}1{};", "(".repeat(depth), ")".repeat(depth));
    let e = dtd_error(&text);
    assert!(e.contains("nesting deeper than 64 levels"), "{e}");
}

#[test]
fn types_nesting_each_other_too_deep_or_exponentially() {
    // 2,000 types each holding the next.
    let deep: String = (0..2000)
        .map(|i| format!("t{i} : (t{});\n", i + 1))
        .collect::<String>()
        + "t2000 : (x);\nr : (tag, t0) { tag.value = 4; }\nx.width = 1; x.interpretation = none;";
    let e = dtd_error(&deep);
    assert!(e.contains("mtf::dtd::limit"), "{e}");
    // Each type holding the next twice: 2^40 fields if expanded.
    let wide: String = (0..40)
        .map(|i| format!("w{i} : (w{0}, w{0});\n", i + 1))
        .collect::<String>()
        + "w40 : (x);\nr : (tag, w0) { tag.value = 4; }\nx.width = 1; x.interpretation = none;";
    let e = dtd_error(&wide);
    assert!(
        e.contains("record type `w0` has more than 65536 slots (scalar fields, `tag` included)"),
        "{e}"
    );
    // Many record types, each just under the per-type limit: the whole-DTD budget.
    let mut many: String = (0..15)
        .map(|i| format!("w{i} : (w{0}, w{0});\n", i + 1))
        .collect::<String>()
        + "w15 : (x);\nx.width = 1; x.interpretation = none;\n";
    for i in 0..10 {
        many.push_str(&format!("r{i} : (tag, w0) {{ tag.value = {}; }}\n", i + 4));
    }
    let e = dtd_error(&many);
    assert!(
        e.contains("the DTD expands to more than 262144 fields"),
        "{e}"
    );
}

#[test]
fn dtd_size() {
    let too_big = std::io::repeat(b' ').take(limits::MAX_DTD_BYTES + 1);
    let e = metatf::dtd::read_capped(too_big, std::path::Path::new("huge.dtd")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "DTD huge.dtd is too large: more than 16777216 bytes"
    );
    // A file whose size the metadata does not tell (a FIFO, /proc) is capped while reading.
    let exact = std::io::repeat(b' ').take(limits::MAX_DTD_BYTES);
    assert!(metatf::dtd::read_capped(exact, std::path::Path::new("x.dtd")).is_ok());
}

#[test]
fn mapping_size() {
    let dir = util::tempdir();
    let p = dir.path().join("big.map");
    let mut f = std::fs::File::create(&p).unwrap();
    f.write_all(&vec![b'#'; 1 << 20]).unwrap();
    f.write_all(b"\n").unwrap();
    drop(f);
    let e = metatf::import::Mapping::load(&p).unwrap_err().to_string();
    assert!(e.contains("more than 1048576 bytes"), "{e}");
}

#[test]
fn widths() {
    // An integer field is at most 8 bytes; a wider constant width makes a byte string, which
    // only `none` can interpret.
    let e = dtd_error("x.width = 9; x.interpretation = delta 0;\nr : (tag, x) { tag.value = 4; }");
    assert!(
        e.contains("fields wider than 8 bytes or of variable width must use `none`"),
        "{e}"
    );
    let e = dtd_error("tag.width = 9;\nr : (tag) { tag.value = 4; }");
    assert!(e.contains("tag.width"), "{e}");
    // A metadata record that sets a width above 8 is refused, by the writer as by the reader.
    let schema = util::schema("dtds/hatf10.dtd");
    let text =
        "%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection 1\nmetadata alloc.size width 9\n";
    let e = metatf::pack::pack_to_vec(&schema, text.as_bytes(), InputFormat::Text)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "line 3, column 20: `width` needs a width 0..8 as argument 1"
    );
}

#[test]
fn sections() {
    let e = dtd_error(
        "x.width = 1; x.interpretation = none;\nsection s 256 { r : (tag, x) { tag.value = 4; } }",
    );
    assert!(e.contains("section id 256 is out of range"), "{e}");
    // A header that claims more section headers than the file can hold is refused before
    // anything is allocated for them.
    let mut t = metatf::container::Header::encode(
        metatf::container::Class::Bits32,
        metatf::container::ByteOrder::Little,
        "hatf10.dtd",
        0,
        0,
        &[],
    )
    .unwrap();
    t[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = metatf::container::Trace::from_bytes(t)
        .unwrap_err()
        .to_string();
    assert!(e.contains("4294967295"), "{e}");
}

#[test]
fn repeat_counts_are_bounded_by_the_bytes_left() {
    // `notes : (tag, n * vfield)` of tests/data/dtd/valid/repeats.dtd: a count of 200
    // vfields (one byte each at least) with 3 bytes left.
    let schema = util::schema("tests/data/dtd/valid/repeats.dtd");
    let t = util::assemble("repeats.dtd", 1, &[5, 200, 0, 0, 0], &[]);
    let trace = metatf::container::Trace::from_bytes(t).unwrap();
    let reader = metatf::decode::Reader::new(&trace, &schema);
    let mut records = reader.records();
    let mut damage = Vec::new();
    while let Some(e) = records.next() {
        if let metatf::decode::Event::Damage(d) = e {
            damage.push(d.to_string());
        }
    }
    assert_eq!(damage.len(), 1, "{damage:?}");
    assert!(
        damage[0].contains("repeat count 200 is impossible with 3 byte(s) left"),
        "{damage:?}"
    );
}

#[test]
fn vfield_length() {
    // The built-in vfield's length is one byte: at most 255 bytes of data.
    let schema = util::schema("dtds/hatf10.dtd");
    let long = "x".repeat(256);
    let text = format!(
        "%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection 1\nalloc size=1 address=2 vfield.data=\"{long}\"\n"
    );
    let e = metatf::pack::pack_to_vec(&schema, text.as_bytes(), InputFormat::Text)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "line 3, column 1: alloc.vfield.length: value 256 does not fit in 1 byte(s) (interpretation none)"
    );
    let ok = text.replace(&long, &"x".repeat(255));
    metatf::pack::pack_to_vec(&schema, ok.as_bytes(), InputFormat::Text).unwrap();
}

#[test]
fn pack_line_length() {
    let schema = util::schema("dtds/hatf10.dtd");
    let header = &b"%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\n"[..];
    let input = header.chain(std::io::repeat(b'a').take(limits::MAX_LINE + 1));
    let e = metatf::pack::pack_to_vec(&schema, std::io::BufReader::new(input), InputFormat::Text)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "line 2, column 1: line is longer than 64 MiB");
}

/// The user mapping of tests/data/import/user/ with its DTD.
fn user_mapping() -> (metatf::import::Mapping, metatf::dtd::Schema) {
    let map = util::root().join("tests/data/import/user/allocs.map");
    let m = metatf::import::Mapping::load(&map).unwrap();
    let schema = m.load_dtd(Some(&map), None).unwrap().schema;
    (m, schema)
}

#[test]
fn imported_line_length() {
    use metatf::import::records::Container;
    use metatf::import::Importer;
    let (m, schema) = user_mapping();
    let w = metatf::encode::TraceWriter::in_memory(
        &schema,
        metatf::container::Class::Bits64,
        metatf::container::ByteOrder::Little,
        &m.dtd,
    );
    let mut imp = Importer::new(&m, w, &schema, Container::Plain, 1).unwrap();
    imp.keep_unmatched(true);
    let part = m.parts[0].name.clone();
    let input = std::io::repeat(b'a').take(64 * 1024 * 1024 + 1);
    let e = imp
        .import_stream("long.log", &part, std::io::BufReader::new(input), 0)
        .unwrap_err()
        .to_string();
    assert!(e.contains("longer than 67108864 bytes"), "{e}");
}

#[test]
fn string_table_size() {
    use metatf::import::records::Container;
    use metatf::import::Importer;
    let (m, schema) = user_mapping();
    let input = std::fs::read(util::root().join("tests/data/import/user/run.log")).unwrap();
    let import = |limit: Option<u64>| {
        let w = metatf::encode::TraceWriter::in_memory(
            &schema,
            metatf::container::Class::Bits64,
            metatf::container::ByteOrder::Little,
            &m.dtd,
        );
        let mut imp = Importer::new(&m, w, &schema, Container::Plain, 1).unwrap();
        if let Some(l) = limit {
            imp.set_string_limit(l);
        }
        let part = m.parts[0].name.clone();
        imp.import_stream("run.log", &part, &input[..], 0)
            .and_then(|()| imp.finish().map(|_| ()))
    };
    import(None).unwrap();
    let e = import(Some(4)).unwrap_err().to_string();
    assert!(
        e.contains("a string table holds more than 4 bytes of distinct strings (the limit)"),
        "{e}"
    );
    assert_eq!(limits::MAX_STRING_TABLE_BYTES, 1 << 30);
}

#[test]
fn ids_tracked_by_the_semantic_checker() {
    let out = util::mtf(&["check", "--max-ids", "1", "traces/android.mtf"]);
    assert_eq!(out.status.code(), Some(1));
    let text = util::text(&out.stdout);
    assert!(
        text.contains("INCOMPLETE, decodes, but semantic checks stopped at --max-ids 1"),
        "{text}"
    );
    let out = util::mtf(&["check", "traces/android.mtf"]);
    assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stdout));
}

#[cfg(feature = "replay")]
#[test]
fn blocks_replay_allocates() {
    let out = util::mtf(&[
        "replay",
        "--max-block-size",
        "16",
        "--repeat",
        "1",
        "traces/android.mtf",
    ]);
    let text = util::text(&out.stdout) + &util::text(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("requests refused as larger than --max-block-size or impossible (largest 19980 bytes, data record 52)"),
        "{text}"
    );
}

#[test]
fn inputs_that_cannot_be_mapped() {
    let dir = util::tempdir();
    let gz = dir.path().join("t.mtf.gz");
    let plain = std::fs::read(util::root().join("traces/hatf-le32.mtf")).unwrap();
    let mut e = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    e.write_all(&plain).unwrap();
    e.finish().unwrap();
    let Err(err) = metatf::OpenOptions::new().max_input_bytes(100).open(&gz) else {
        panic!("a 298-byte trace read under a cap of 100 bytes");
    };
    let err = err.to_string();
    assert!(
        err.contains("is larger than 100 bytes, the limit for inputs that cannot be memory-mapped"),
        "{err}"
    );
    assert_eq!(limits::DEFAULT_INPUT_CAP, 16 << 30);
}

#[test]
fn nrecords_beyond_the_bytes_is_refused_from_the_header() {
    let mut t = std::fs::read(util::root().join("traces/hatf-le32.mtf")).unwrap();
    // nrecords is the third header integer (offset 16 + 2·4).
    t[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = metatf::container::Trace::from_bytes(t)
        .unwrap_err()
        .to_string();
    assert!(e.contains("nrecords = 4294967295"), "{e}");
}

#[cfg(unix)]
#[test]
fn symbolic_link_loops_are_refused_by_outputs() {
    let dir = util::tempdir();
    let a = dir.path().join("a.mtf");
    let b = dir.path().join("b.mtf");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    let e = metatf::io::Output::create(&a).unwrap_err().to_string();
    assert!(e.contains("symbolic links"), "{e}");
}

#[test]
fn dtd_errors_reported() {
    let mut text = String::from("x.width = 1; x.interpretation = none;\n");
    for i in 0..150 {
        text.push_str(&format!(
            "r{i} : (tag, nope{i}) {{ tag.value = {}; }}\n",
            i + 4
        ));
    }
    let e = match metatf::dtd::parse_str("many.dtd", &text) {
        Ok(_) => panic!("accepted"),
        Err(e) => e,
    };
    assert_eq!(e.errors.len(), 100);
    assert_eq!(e.omitted, 50);
    assert!(e.summary.contains("150"), "{}", e.summary);
}

/// Records whose repeated values all become `default` under `mtf compact` hold far more field
/// occurrences than bytes: a few such records draw on the trace's reserve (§6.4) and stay valid.
#[test]
fn sparse_records_compact() {
    let dir = util::tempdir();
    let mut text = String::from("%mtf 1 dtd=\"repeats.dtd\" class=64 order=little\n");
    for _ in 0..50 {
        text.push_str(&format!("stack pc=[{}]\n", vec!["4096"; 250].join(" ")));
    }
    let src = dir.path().join("rep.txt");
    std::fs::write(&src, text).unwrap();
    let t = dir.path().join("rep.mtf");
    let c = dir.path().join("small.mtf");
    let dtd = "tests/data/dtd/valid/repeats.dtd";
    for args in [
        vec![
            "pack",
            "--dtd",
            dtd,
            src.to_str().unwrap(),
            "-o",
            t.to_str().unwrap(),
        ],
        vec![
            "compact",
            "--dtd",
            dtd,
            t.to_str().unwrap(),
            "-o",
            c.to_str().unwrap(),
        ],
        vec!["check", "--dtd", dtd, c.to_str().unwrap()],
    ] {
        let out = util::mtf(&args);
        assert!(
            out.status.success(),
            "{args:?}: {}{}",
            util::text(&out.stdout),
            util::text(&out.stderr)
        );
    }
    // 50 records of 1 byte (the tag: count and items became `default`).
    assert!(std::fs::metadata(&c).unwrap().len() < 200);
}
