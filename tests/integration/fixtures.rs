//! The sample traces in `traces/`: each is produced by the writer from its text source in
//! `traces/src/`, has a golden dump, checks valid, and survives `dump | pack` byte for byte.
//!
//! Regenerate traces and goldens with `MTF_BLESS=1 cargo test --test integration fixtures`, then
//! review the diff.

use std::io::BufReader;
use std::path::PathBuf;

use metatf::pack::{pack_to_vec, read_header};
use metatf::text::{InputFormat, LineReader};

use crate::util;

/// Every text source, as (name, path).
fn sources() -> Vec<(String, PathBuf)> {
    let mut v: Vec<_> = std::fs::read_dir(util::root().join("traces/src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .map(|p| (p.file_stem().unwrap().to_string_lossy().into_owned(), p))
        .collect();
    v.sort();
    assert!(v.len() >= 3, "traces/src holds the fixture sources");
    v
}

/// Pack a text source in-process, with the DTD its header names (from `dtds/`).
pub fn pack_source(path: &std::path::Path) -> (Vec<u8>, String) {
    let text = std::fs::read(path).unwrap();
    let h = read_header(
        &mut LineReader::new(BufReader::new(&text[..])),
        InputFormat::Text,
    )
    .unwrap();
    let dtd_rel = format!("dtds/{}", h.dtd);
    let schema = util::schema(&dtd_rel);
    let bytes = pack_to_vec(&schema, BufReader::new(&text[..]), InputFormat::Text)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (bytes, dtd_rel)
}

#[test]
fn traces_are_generated_from_their_sources() {
    for (name, src) in sources() {
        let (bytes, _) = pack_source(&src);
        let target = util::root().join(format!("traces/{name}.mtf"));
        if std::env::var_os("MTF_BLESS").is_some_and(|v| v == "1") {
            std::fs::write(&target, &bytes).unwrap();
            continue;
        }
        let committed = std::fs::read(&target)
            .unwrap_or_else(|_| panic!("traces/{name}.mtf is missing; run MTF_BLESS=1 cargo test --test integration fixtures"));
        assert!(
            committed == bytes,
            "traces/{name}.mtf is stale; regenerate it with MTF_BLESS=1"
        );
    }
}

#[test]
fn golden_dumps() {
    for (name, _) in sources() {
        let out = util::mtf(&["dump", &format!("traces/{name}.mtf")]);
        assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stderr));
        util::golden(
            &format!("tests/golden/dump/{name}.txt"),
            &util::text(&out.stdout),
        );
        let out = util::mtf(&[
            "dump",
            "--format",
            "jsonl",
            "--offsets",
            &format!("traces/{name}.mtf"),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stderr));
        util::golden(
            &format!("tests/golden/dump/{name}.jsonl"),
            &util::text(&out.stdout),
        );
    }
}

#[test]
fn golden_info_and_check() {
    for (name, _) in sources() {
        let out = util::mtf(&["info", &format!("traces/{name}.mtf")]);
        assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stderr));
        util::golden(
            &format!("tests/golden/info/{name}.txt"),
            &util::text(&out.stdout),
        );
        let out = util::mtf(&["check", &format!("traces/{name}.mtf")]);
        assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stdout));
        assert!(util::text(&out.stdout).contains("valid"));
    }
}

#[test]
fn dump_then_pack_is_byte_identical() {
    for (name, src) in sources() {
        let trace = format!("traces/{name}.mtf");
        let (_, dtd) = pack_source(&src);
        for format in ["text", "jsonl"] {
            let dump = util::mtf(&["dump", "--format", format, &trace]);
            assert_eq!(dump.status.code(), Some(0));
            let dir = util::tempdir();
            let out = dir.path().join("again.mtf");
            let packed = util::mtf_stdin(
                &["pack", "--dtd", &dtd, "-", "-o", out.to_str().unwrap()],
                &dump.stdout,
            );
            assert_eq!(
                packed.status.code(),
                Some(0),
                "{name} ({format}): {}",
                util::text(&packed.stderr)
            );
            let a = std::fs::read(util::root().join(&trace)).unwrap();
            let b = std::fs::read(&out).unwrap();
            assert!(
                a == b,
                "{name} ({format}): dump | pack is not byte-identical"
            );
        }
    }
}

#[test]
fn fixtures_cover_the_format() {
    // Together the samples use every interpretation, every built-in, both classes and orders,
    // metadata mid-section and more than one section.
    let all: String = sources()
        .iter()
        .map(|(_, p)| std::fs::read_to_string(p).unwrap())
        .collect();
    for needle in [
        "baseOffset",
        "delta",
        "stride",
        "default",
        "sectionOffset",
        "sectionStride",
        " none",
        "comment ",
        "section ",
        "metadata ",
        "vfield",
        "class=32",
        "class=64",
        "order=little",
        "order=big",
    ] {
        assert!(all.contains(needle), "no fixture uses {needle:?}");
    }
}
