//! What `mtf import` and `mtf export` refuse rather than do silently: an input of another format,
//! prose taken for a trace, an export with another format's mapping, an output name that does
//! not fit what is written; and what they say about it.

use crate::util::{self, mtf, text};

fn data(rel: &str) -> String {
    format!("tests/data/import/{rel}")
}

/// `--from android` on an ET3 trace matches none of its lines: refused, nothing written,
/// with the way to import it anyway; `--keep-unmatched` imports it and says how much is raw.
#[test]
fn an_input_of_another_format_is_refused_unless_asked() {
    let dir = util::tempdir();
    let out = dir.path().join("t.mtf");
    let o = out.to_str().unwrap();
    let r = mtf(&["import", "--from", "android", &data("et3/trace"), "-o", o]);
    let err = text(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(
        err.contains("× tests/data/import/et3/trace: 13 of 13 units (100%) match no rule of format `android`"),
        "{err}"
    );
    assert!(err.contains("--keep-unmatched"), "{err}");
    assert!(!out.exists(), "a refused import wrote {o}");
    let r = mtf(&[
        "import",
        "--from",
        "android",
        "--keep-unmatched",
        &data("et3/trace"),
        "-o",
        o,
    ]);
    let err = text(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(err.contains("13 kept as raw lines (100%)"), "{err}");
    let back = mtf(&["export", o, "-o", "-"]);
    assert_eq!(
        back.stdout,
        std::fs::read(crate::util::root().join(data("et3/trace"))).unwrap()
    );
}

/// The share of raw lines is reported with every import.
#[test]
fn the_share_kept_raw_is_reported() {
    let dir = util::tempdir();
    let out = dir.path().join("t.mtf");
    let r = mtf(&[
        "import",
        "--from",
        "et_merlin",
        &data("et_merlin/odd.txt"),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = text(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(err.contains("7 kept as raw lines (30%)"), "{err}");
}

/// A README with a few lines that look like a trace is not taken for one: detection needs more
/// than half of the non-blank lines, and says which format came closest.
#[test]
fn prose_is_not_detected_as_a_trace() {
    let dir = util::tempdir();
    let out = dir.path().join("t.mtf");
    let r = mtf(&[
        "import",
        &data("prose/README.txt"),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = text(&r.stderr);
    assert_eq!(r.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no shipped format matches most of its first units (best: et_merlin"),
        "{err}"
    );
    assert!(err.contains("--from"), "{err}");
    assert!(!out.exists());
}

/// `mtf import --list` names each record type once per part.
#[test]
fn import_list_names_each_record_once() {
    let out = mtf(&["import", "--list"]);
    assert!(out.status.success());
    let list = text(&out.stdout);
    let mut n = 0;
    for line in list
        .lines()
        .filter(|l| l.trim_start().starts_with("records:"))
    {
        for part in line.trim_start()["records:".len()..].split(';') {
            let names: Vec<&str> = part
                .split_once(':')
                .map_or("", |x| x.1)
                .split_whitespace()
                .collect();
            let mut unique = names.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), names.len(), "repeats in {part:?}");
            n += 1;
        }
    }
    assert!(n >= 10, "{list}");
    assert!(list.contains("alloc free"), "{list}");
}

/// `mtf export --to et3` of an Android trace says that the trace's DTD is not the format's,
/// instead of failing on the first field that does not fit.
#[test]
fn export_with_another_formats_mapping_names_both_dtds() {
    let dir = util::tempdir();
    let out = dir.path().join("x");
    let r = mtf(&[
        "export",
        "--to",
        "et3",
        "traces/android.mtf",
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = text(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the trace's DTD is hatf-android.dtd, not et3.dtd, the DTD of format `et3`"),
        "{err}"
    );
    assert!(!out.exists());
}

/// A trace imported from a ZIP is not written under a text file's name, and a trace of several
/// files not under a file's name (it would silently become a folder).
#[test]
fn an_output_name_that_does_not_fit_is_refused() {
    let dir = util::tempdir();
    let txt = dir.path().join("x.txt");
    let r = mtf(&[
        "export",
        "traces/jvm_trace.mtf",
        "-o",
        txt.to_str().unwrap(),
    ]);
    let err = text(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains("export writes a ZIP, not a .txt file"),
        "{err}"
    );
    assert!(!txt.exists());
    let four = dir.path().join("simple4.txt");
    let r = mtf(&["export", "traces/et3.mtf", "-o", four.to_str().unwrap()]);
    let err = text(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("the trace holds 4 files"), "{err}");
    assert!(!four.exists(), "a folder was created");
    // A folder name (no extension, or an existing folder) is fine.
    let folder = dir.path().join("simple4");
    let r = mtf(&["export", "traces/et3.mtf", "-o", folder.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert!(folder.join("classes.txt").is_file());
}

/// A ZIP comes back with its entries' names, order, methods, dates, Unix permissions and
/// extra fields, and its archive comment.
#[test]
fn zip_entry_metadata_is_kept() {
    use std::io::Write;
    use zip::write::{FileOptions, FullFileOptions};
    let dir = util::tempdir();
    let src = dir.path().join("in.zip");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&src).unwrap());
    let t = |y, mo, d, h, mi, s| zip::DateTime::from_date_and_time(y, mo, d, h, mi, s).unwrap();
    let mut o: FullFileOptions<'_> = FileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .last_modified_time(t(2007, 2, 12, 11, 8, 58))
        .unix_permissions(0o640);
    o.add_extra_data(0x7875, vec![1, 4, 1, 0, 0, 0, 4, 2, 0, 0, 0].into(), false)
        .unwrap();
    z.start_file("README", o).unwrap();
    z.write_all(b"not the trace\n").unwrap();
    let o: FullFileOptions<'_> = FileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(t(2015, 9, 11, 15, 35, 14));
    z.start_file("trace", o).unwrap();
    z.write_all(&std::fs::read(crate::util::root().join(data("jvm/trace.txt"))).unwrap())
        .unwrap();
    z.set_comment("made for a test");
    z.finish().unwrap();
    let t1 = dir.path().join("t.mtf");
    let r = mtf(&[
        "import",
        "--from",
        "jvm_trace",
        src.to_str().unwrap(),
        "-o",
        t1.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let back = dir.path().join("back.zip");
    let r = mtf(&["export", t1.to_str().unwrap(), "-o", back.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let meta = |p: &std::path::Path| {
        let mut r = metatf::import::zipio::Reader::new(std::fs::File::open(p).unwrap()).unwrap();
        let entries: Vec<_> = (0..r.len())
            .map(|i| {
                let m = r.meta(i).unwrap();
                (
                    m.name,
                    m.method,
                    m.time,
                    m.attrs >> 16,
                    m.local_extra,
                    m.central_extra,
                )
            })
            .collect();
        (entries, r.comment().to_vec())
    };
    assert_eq!(meta(&back), meta(&src));
}

/// The early check stops a large input of another format after 10,000 units, but a long prologue
/// the mapping does not describe does not stop an input that matches further on.
#[test]
fn the_early_check_refuses_only_a_clear_mismatch() {
    use metatf::container::{ByteOrder, Class};
    use metatf::import::records::Container;
    use metatf::import::{shipped, ImportErrorKind, Importer};
    let m = shipped::by_name("et3").unwrap();
    let dtd = metatf::container::shipped_dtd(&m.dtd).unwrap();
    let schema = metatf::dtd::parse_str(&m.dtd, dtd).unwrap().schema;
    let run = |input: &[u8]| {
        let w = metatf::encode::TraceWriter::in_memory(
            &schema,
            Class::Bits64,
            ByteOrder::Little,
            &m.dtd,
        );
        let mut imp = Importer::new(&m, w, &schema, Container::Plain, 1).unwrap();
        let r = imp.import_stream("in", "trace", input, 0);
        let rep = imp.report.clone();
        (r.and_then(|_| imp.finish().map(|_| ())), rep)
    };
    let junk = "this is not a trace line\n".repeat(12_000);
    let (r, rep) = run(junk.as_bytes());
    let e = r.unwrap_err();
    assert!(matches!(e.kind, ImportErrorKind::Unmatched { .. }), "{e}");
    assert_eq!(rep.units, 10_000, "stopped after the first 10,000 units");
    let mut mixed = "a prologue line\n".repeat(1200);
    mixed.push_str(&"N 1 24 2 55 0 5\n".repeat(3000));
    let (r, rep) = run(mixed.as_bytes());
    assert!(r.is_ok(), "{r:?}");
    assert_eq!((rep.units, rep.raw), (4200, 1200));
}

/// A valid trace that was not imported is not an invalid trace: exit status 2 (a request that
/// cannot be met), with the reason and what to use instead.
#[test]
fn exporting_a_trace_that_was_not_imported_says_so() {
    let dir = util::tempdir();
    let out = dir.path().join("x");
    let r = mtf(&[
        "export",
        "traces/hatf-le32.mtf",
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = text(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains("traces/hatf-le32.mtf: the trace has no `import_origin` record"),
        "{err}"
    );
    assert!(err.contains("mtf::export::not_imported"), "{err}");
}

/// A DTD that does not fit the mapping names itself, the mapping and what is missing, and how
/// a DTD takes in the import records.
#[test]
fn a_dtd_that_does_not_fit_the_mapping_says_what_is_missing() {
    let dir = util::tempdir();
    let dtd = dir.path().join("mine.dtd");
    std::fs::write(
        &dtd,
        "tag.width = 1;\nsection events 1 { x : (tag) { tag.value = 4; } }\n",
    )
    .unwrap();
    let out = dir.path().join("t.mtf");
    let r = mtf(&[
        "import",
        "--from",
        "et3",
        "-d",
        dtd.to_str().unwrap(),
        &data("et3/trace"),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = text(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.contains("DTD mine.dtd (of mapping `et3`): the DTD has no record `import_origin`"),
        "{err}"
    );
    assert!(err.contains("include import;"), "{err}");
    let r = mtf(&[
        "import",
        "--from",
        "et3",
        "-d",
        "dtds/tptp.dtd",
        &data("et3/trace"),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = text(&r.stderr);
    assert!(
        err.contains("DTD tptp.dtd does not fit the rule at line 9 of mapping `et3`"),
        "{err}"
    );
}

/// A ZIP whose central directory and local headers disagree on an entry's name or compression
/// method is refused at import, naming the file, the entry and both headers' offsets (found by
/// fuzzing: such archives were exported with an entry different, or not at all). A
/// well-formed archive with an entry named "" still comes back with that entry's date.
#[test]
fn a_zip_whose_headers_disagree_is_refused() {
    use std::io::Write;
    use zip::write::SimpleFileOptions;
    let dir = util::tempdir();
    let make = |empty_name: bool| {
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let t = zip::DateTime::from_date_and_time(2015, 9, 11, 15, 35, 14).unwrap();
        let o = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .last_modified_time(t);
        z.start_file(if empty_name { "" } else { "README" }, o)
            .unwrap();
        z.write_all(b"not the trace\n").unwrap();
        z.start_file("trace", o).unwrap();
        z.write_all(&std::fs::read(crate::util::root().join(data("jvm/trace.txt"))).unwrap())
            .unwrap();
        z.finish().unwrap().into_inner()
    };
    let import = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let t = dir.path().join(format!("{name}.mtf"));
        let r = mtf(&[
            "import",
            "--from",
            "jvm_trace",
            p.to_str().unwrap(),
            "-o",
            t.to_str().unwrap(),
        ]);
        (r, t)
    };
    let good = make(false);
    let central = good
        .windows(4)
        .rposition(|w| w == b"PK\x01\x02")
        .expect("the central header of `trace`");
    // The central header of `trace` renamed `traXe`: the local header still says `trace`.
    let mut renamed = good.clone();
    renamed[central + 46 + 3] = b'X';
    let (r, _) = import("renamed.zip", &renamed);
    assert!(!r.status.success());
    let err = text(&r.stderr);
    assert!(
        err.contains("renamed.zip")
            && err.contains(&format!(
                "entry 2 is named \"traXe\" in its central-directory header at offset {central} but \"trace\" in its local header at offset"
            )),
        "{err}"
    );
    // Its central header says deflated (8), its local header stored (0).
    let mut method = good.clone();
    method[central + 10] = 8;
    let (r, _) = import("method.zip", &method);
    assert!(!r.status.success());
    let err = text(&r.stderr);
    assert!(
        err.contains("method.zip")
            && err.contains(
                "entry 2 (\"trace\") has compression method 8 in its central-directory header"
            )
            && err.contains("but 0 in its local header at offset"),
        "{err}"
    );
    // The same archive, well formed, imports; an entry named "" keeps its date on the way back.
    let (r, t) = import("empty-name.zip", &make(true));
    assert!(r.status.success(), "{}", text(&r.stderr));
    let back = dir.path().join("back.zip");
    let r = mtf(&["export", t.to_str().unwrap(), "-o", back.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let mut z = metatf::import::zipio::Reader::new(std::fs::File::open(&back).unwrap()).unwrap();
    let m = z.meta(0).unwrap();
    assert_eq!(
        (m.name.as_str(), m.time >> 16),
        ("", (35 << 9) | (9 << 5) | 11)
    );
}

/// A valgrind log whose program's output is most of its lines (valgrind writes its
/// `--trace-malloc` lines among them; the mapping says `interleaved`) is imported, the program's
/// lines kept raw and the heap figures those of its valgrind lines; text none of whose lines is
/// valgrind's is still refused, early on a large input and at the end on a small one.
#[test]
fn an_interleaved_format_is_refused_only_when_nothing_matches() {
    let dir = util::tempdir();
    let log = dir.path().join("sort.vg");
    let mut text_in = String::from("==7== Memcheck, a memory error detector\n");
    for i in 0..400u64 {
        text_in.push_str(&format!(
            "--7-- malloc({}) = 0x{:X}\n",
            16 + i,
            0x4A40000 + 64 * i
        ));
        for k in 0..30 {
            text_in.push_str(&format!("line {k} of the program's output\n"));
        }
    }
    std::fs::write(&log, &text_in).unwrap();
    let out = dir.path().join("sort.mtf");
    let (l, o) = (log.to_str().unwrap(), out.to_str().unwrap());
    let r = mtf(&["import", "--from", "valgrind", l, "-o", o]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let s = text(&mtf(&["stats", o]).stdout);
    let bytes: u64 = (16..416).sum();
    assert!(
        s.contains(&format!("allocations          400, {bytes} bytes")),
        "{s}"
    );
    for (lines, why) in [(12_000, "large"), (50, "small")] {
        let junk = dir.path().join("junk.txt");
        std::fs::write(&junk, "not a valgrind line\n".repeat(lines)).unwrap();
        let r = mtf(&[
            "import",
            "--from",
            "valgrind",
            junk.to_str().unwrap(),
            "-o",
            o,
        ]);
        assert_eq!(r.status.code(), Some(1), "{why}");
        assert!(text(&r.stderr).contains("probably not valgrind"), "{why}");
    }
}
