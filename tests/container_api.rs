//! The container's public API end to end: encode a header, write a file, open it, find its DTD.

use metatf::container::{locate_dtd, ByteOrder, Class, ContainerError, Header, Located, MAGIC};

#[test]
fn write_open_locate() {
    let dir = tempfile::tempdir().unwrap();
    let records = [0x10u8, 0x20, 2, 7, 0x30];
    // One global record byte, then section 7 with 4 bytes.
    let mut file = Header::encode(
        Class::Bits64,
        ByteOrder::Big,
        "https://example.org/my.dtd",
        2,
        1,
        &[(7, 4)],
    )
    .unwrap();
    assert_eq!(&file[..4], &MAGIC);
    file.extend_from_slice(&records);
    let path = dir.path().join("run.mtf");
    std::fs::write(&path, &file).unwrap();
    std::fs::write(dir.path().join("my.dtd"), "// empty").unwrap();

    let trace = metatf::io::Input::open(&path)
        .unwrap()
        .into_trace()
        .unwrap();
    assert_eq!(trace.header().class, Class::Bits64);
    assert_eq!(trace.header().int_width, 4);
    assert_eq!(trace.global_bytes(), &records[..1]);
    assert_eq!(trace.section_bytes(7), Some(&records[1..]));
    let located = trace.locate_dtd(None, None);
    assert_eq!(located, Located::TraceDir(dir.path().join("my.dtd")));
    assert_eq!(located.read_text().unwrap(), "// empty");
    assert_eq!(
        locate_dtd(None, trace.dtd_name(), None, Some(dir.path().as_os_str())),
        Located::EnvPath(dir.path().join("my.dtd"))
    );

    // Truncating the file breaks the last section; the error names file and offset.
    std::fs::write(&path, &file[..file.len() - 1]).unwrap();
    let e = metatf::io::Input::open(&path)
        .unwrap()
        .into_trace()
        .unwrap_err();
    assert!(matches!(
        e.innermost(),
        ContainerError::SectionBeyondEof { .. }
    ));
    assert!(e.to_string().contains("run.mtf"), "{e}");
    assert!(e.offset().is_some());
}
