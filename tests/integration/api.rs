//! The library's reading and writing API as a user meets it (issue 16, items 11–14): one way to
//! open a trace, whatever its path; writers that cannot panic; references read as values.

use std::io::Write;

use metatf::container::{ByteOrder, Class};
use metatf::decode::Event;
use metatf::dtd::Interp;
use metatf::encode::{EncodeErrorKind, TraceWriter};
use metatf::{MetaProperty, OpenError, OpenOptions};

use crate::util;

/// The (name, fields as text) of every record of an opened trace.
fn records(o: &metatf::Opened) -> Vec<String> {
    let reader = o.reader();
    let mut out = Vec::new();
    let mut records = reader.records();
    while let Some(e) = records.next() {
        match e {
            Event::Record(r) => out.push(
                r.fields()
                    .map(|f| f.to_string())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            Event::Problem(p) => panic!("{p}"),
            Event::Damage(d) => panic!("{d}"),
        }
    }
    out
}

#[test]
fn open_reads_a_compressed_trace_as_mtf_does() {
    let plain = util::root().join("traces/hatf-split-le64.mtf");
    let bytes = std::fs::read(&plain).unwrap();
    let dir = util::tempdir();
    let gz = dir.path().join("t.mtf.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), Default::default());
    e.write_all(&bytes).unwrap();
    let packed = e.finish().unwrap();
    std::fs::write(&gz, &packed).unwrap();
    let want = records(&metatf::open(&plain).unwrap());
    #[cfg(feature = "compression")]
    {
        assert_eq!(records(&metatf::open(&gz).unwrap()), want);
        // The same bytes from memory.
        let o = OpenOptions::new().open_bytes(packed.clone()).unwrap();
        assert_eq!(records(&o), want);
        // The cap on memory applies to what is decompressed.
        for e in [
            OpenOptions::new().max_input_bytes(100).open(&gz).err(),
            OpenOptions::new()
                .max_input_bytes(100)
                .open_bytes(packed.clone())
                .err(),
        ] {
            assert!(
                matches!(
                    e,
                    Some(OpenError::Io(metatf::io::IoError::InputTooLarge { .. }))
                ),
                "{e:?}"
            );
        }
    }
    #[cfg(not(feature = "compression"))]
    assert!(matches!(metatf::open(&gz), Err(OpenError::Io(_))));
}

#[cfg(unix)]
#[test]
fn open_reads_a_fifo() {
    let plain = util::root().join("traces/hatf-le32.mtf");
    let bytes = std::fs::read(&plain).unwrap();
    let dir = util::tempdir();
    let fifo = dir.path().join("fifo");
    let ok = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(ok.success());
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(fifo, bytes).unwrap())
    };
    let o = metatf::open(&fifo).unwrap();
    writer.join().unwrap();
    assert_eq!(records(&o), records(&metatf::open(&plain).unwrap()));
}

#[test]
fn open_errors_are_typed_and_name_the_file() {
    let dir = util::tempdir();
    let missing = dir.path().join("missing.mtf");
    let e = metatf::open(&missing).err().unwrap();
    assert!(matches!(e, OpenError::Io(_)), "{e}");
    assert!(e.to_string().contains("missing.mtf"), "{e}");
    let empty = dir.path().join("empty.mtf");
    std::fs::write(&empty, b"").unwrap();
    let e = metatf::open(&empty).err().unwrap();
    assert!(matches!(e, OpenError::Container(_)), "{e}");
    assert!(e.to_string().contains("empty.mtf"), "{e}");
    // A cap on what is read into memory.
    let e = OpenOptions::new()
        .max_input_bytes(10)
        .open_bytes(std::fs::read(util::root().join("traces/hatf-le32.mtf")).unwrap());
    // Bytes in memory are not read again: only a decompressed stream counts against the cap.
    assert!(e.is_ok());
}

#[test]
fn options_name_the_dtd_and_salvage() {
    let trace = util::root().join("traces/hatf-le32.mtf");
    let o = OpenOptions::new()
        .dtd(util::root().join("dtds/hatf10.dtd"))
        .open(&trace)
        .unwrap();
    assert!(matches!(o.dtd_source(), metatf::DtdSource::Explicit(_)));
    let bytes = std::fs::read(&trace).unwrap();
    let cut = bytes[..bytes.len() - 5].to_vec();
    assert!(matches!(
        OpenOptions::new().open_bytes(cut.clone()),
        Err(OpenError::Container(_))
    ));
    let o = OpenOptions::new().salvage(true).open_bytes(cut).unwrap();
    assert!(o.damage().is_some());
}

#[test]
fn finish_on_the_wrong_writer_is_an_error_not_a_panic() {
    let schema = util::schema("dtds/hatf10.dtd");
    let w = TraceWriter::in_memory(&schema, Class::Bits32, ByteOrder::Little, "hatf10.dtd");
    let e = w.finish().unwrap_err();
    assert!(
        matches!(e.kind(), EncodeErrorKind::WrongFinish { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("finish_to_vec"), "{e}");

    let dir = util::tempdir();
    let out = dir.path().join("t.mtf");
    let w = TraceWriter::create(
        &schema,
        &out,
        Class::Bits32,
        ByteOrder::Little,
        "hatf10.dtd",
    )
    .unwrap();
    let e = w.finish_to_vec().unwrap_err();
    assert!(
        matches!(e.kind(), EncodeErrorKind::WrongFinish { .. }),
        "{e}"
    );
    // Nothing was written under the target's name.
    assert!(!out.exists());
}

#[test]
fn get_gives_the_logical_value_of_a_reference_field() {
    let o = metatf::open(util::root().join("traces/hatf-split-le64.mtf")).unwrap();
    let reader = o.reader();
    let mut heaps = Vec::new();
    let mut addresses = Vec::new();
    let mut records = reader.records();
    while let Some(e) = records.next() {
        let Event::Record(r) = e else { continue };
        match r.name() {
            // `heap` switched to `sectionOffset names`: the name it leads to.
            "createHeap" => heaps.push(r.get("heap").map(|v| v.to_string())),
            "alloc" | "free" => addresses.push((
                r.get("address").and_then(|v| v.as_u64()),
                r.reference("address").map(|x| x.to_string()),
                r.get_stored("address").map(|v| v.to_string()),
            )),
            _ => {}
        }
    }
    // The first createHeap stores its heap itself; the others name a string of `names`.
    let hex = |t: &str| {
        let h: String = t.bytes().map(|b| format!("{b:02x}")).collect();
        Some(format!("x\"{h}\""))
    };
    assert_eq!(
        heaps,
        [Some("0".to_string()), hex("default"), hex("scratch arena")]
    );
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        addresses,
        [
            (Some(0x1000), s("#0"), s("#0")),
            (Some(0x1010), s("#1"), s("#1")),
            (Some(0x7fff_ffff_0000), s("#2"), s("#2")),
            (Some(0x1000), s("#0"), s("#0")),
            (Some(0x7fff_ffff_0000), s("#2"), s("#2")),
            (Some(0x3000), None, s("12288")),
        ]
    );
}

#[test]
fn many_deferred_offsets_into_one_section_are_checked() {
    // References into a section written before any `sectionOffset` pointed at it are checked at
    // the end by decoding that section, once for all of them.
    let schema = util::schema("tests/data/check/mirror.dtd");
    let mut w = TraceWriter::in_memory(&schema, Class::Bits32, ByteOrder::Little, "mirror.dtd");
    w.section_named("other").unwrap();
    let n = 2000u64;
    w.write("o").int("v", 0).done().unwrap();
    // Every element has the same size.
    let size = w.section_len();
    for v in 1..n {
        w.write("o").int("v", v % 256).done().unwrap();
    }
    w.section_named("main").unwrap();
    w.metadata_named("plain", "v", MetaProperty::Interp(Interp::SectionOffset(3)))
        .unwrap();
    w.metadata_named("plain", "v", MetaProperty::Width(4))
        .unwrap();
    for i in 0..n {
        w.write("plain").offset("v", i * size).done().unwrap();
    }
    // One offset between two elements is still found.
    let mut bad = w;
    bad.write("plain").offset("v", size + 1).done().unwrap();
    let e = bad.finish_to_vec().unwrap_err();
    assert!(e.to_string().contains("not the start of an element"), "{e}");
    // Indexes count from 0: two section records, two metadata records and 2n records before it.
    assert_eq!(e.record_index(), Some(1 + n + 1 + 2 + n));
}

#[test]
fn deferred_offsets_that_are_right_pass() {
    let schema = util::schema("tests/data/check/mirror.dtd");
    let mut w = TraceWriter::in_memory(&schema, Class::Bits32, ByteOrder::Little, "mirror.dtd");
    w.section_named("other").unwrap();
    w.write("o").int("v", 0).done().unwrap();
    let size = w.section_len();
    for v in 1..300 {
        w.write("o").int("v", v % 256).done().unwrap();
    }
    w.section_named("main").unwrap();
    w.metadata_named("plain", "v", MetaProperty::Interp(Interp::SectionOffset(3)))
        .unwrap();
    w.metadata_named("plain", "v", MetaProperty::Width(4))
        .unwrap();
    for i in 0..300 {
        w.write("plain").offset("v", i * size).done().unwrap();
    }
    let bytes = w.finish_to_vec().unwrap();
    let o = OpenOptions::new()
        .dtd(util::root().join("tests/data/check/mirror.dtd"))
        .open_bytes(bytes)
        .unwrap();
    // The header's section records, 300 elements, the main section, metadata and references.
    assert_eq!(records(&o).len(), 1 + 300 + 1 + 2 + 300);
}

#[test]
fn a_record_builder_dropped_without_done_is_never_lost_silently() {
    let schema = util::schema("dtds/hatf10.dtd");
    let mut w = TraceWriter::in_memory(&schema, Class::Bits32, ByteOrder::Little, "hatf10.dtd");
    w.section_named("heap").unwrap();
    w.write("alloc")
        .int("size", 16)
        .int("address", 4096)
        .bytes("vfield.data", "")
        .done()
        .unwrap();
    // Bound to a name and dropped: no warning at the call, so the writer must notice.
    let forgotten = w.write("alloc").int("size", 32);
    drop(forgotten);
    w.write("free")
        .int("address", 4096)
        .bytes("vfield.data", "")
        .done()
        .unwrap();
    let e = w.finish_to_vec().unwrap_err();
    assert!(
        matches!(e.kind(), EncodeErrorKind::AbandonedRecord { name } if name == "alloc"),
        "{e}"
    );
    assert_eq!(e.record_index(), Some(2));
    assert!(e.to_string().contains(".done()"), "{e}");
    // The same on a file writer: the target is not created.
    let dir = util::tempdir();
    let out = dir.path().join("t.mtf");
    let mut w = TraceWriter::create(
        &schema,
        &out,
        Class::Bits32,
        ByteOrder::Little,
        "hatf10.dtd",
    )
    .unwrap();
    w.section_named("heap").unwrap();
    let forgotten = w.write("alloc");
    drop(forgotten);
    assert!(w.finish().is_err());
    assert!(!out.exists());
}
