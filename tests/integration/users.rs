//! Issue 12: compressed and piped input, shell conventions, JSON and CSV for tools.

use std::io::Write;

use crate::util::{self, mtf, mtf_stdin};

const T: &str = "traces/hatf-le32.mtf";

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(b).unwrap();
    gz.finish().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn check_reads_a_zstd_trace_and_dump_reads_gzip_from_standard_input() {
    let raw = std::fs::read(util::root().join(T)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let zst = dir.path().join("t.mtf.zst");
    std::fs::write(&zst, zstd::encode_all(&raw[..], 3).unwrap()).unwrap();
    let out = mtf(&["check", zst.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).ends_with(": valid\n"));
    // Detected by magic, not by name; and no progress bar when stderr is not a terminal.
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    let plain = mtf(&["dump", T]);
    let piped = mtf_stdin(&["dump", "-"], &gzip(&raw));
    assert!(piped.status.success());
    assert_eq!(piped.stdout, plain.stdout);
    assert!(piped.stderr.is_empty());
}

#[test]
fn pack_reads_compressed_text_from_standard_input_with_the_headers_builtin_dtd() {
    let dump = mtf(&["dump", T]).stdout;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.mtf");
    // No --dtd: hatf10.dtd, named in the header, is built in.
    let r = mtf_stdin(&["pack", "-", "-o", out.to_str().unwrap()], &gzip(&dump));
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(util::root().join(T)).unwrap()
    );
}

#[test]
fn pack_finds_the_dtd_beside_the_input() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.dtd"),
        std::fs::read(util::root().join("dtds/hatf10.dtd")).unwrap(),
    )
    .unwrap();
    let dump = text(&mtf(&["dump", T]).stdout).replace("dtd=\"hatf10.dtd\"", "dtd=\"mine.dtd\"");
    let input = dir.path().join("t.txt");
    std::fs::write(&input, dump).unwrap();
    let out = dir.path().join("t.mtf");
    let r = mtf(&["pack", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    // Nowhere to be found: status 3 and a hint.
    std::fs::remove_file(dir.path().join("mine.dtd")).unwrap();
    let r = mtf(&["pack", input.to_str().unwrap(), "-o", out.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(3), "{}", text(&r.stderr));
    assert!(text(&r.stderr).contains("--dtd"));
}

#[test]
fn jsonl_int_strings_pack_back_and_the_header_can_be_left_out() {
    for t in ["traces/hatf-split-le64.mtf", "traces/hatf-be64.mtf", T] {
        let j = mtf(&["dump", "-f", "jsonl", "--int-strings", t]);
        assert!(j.status.success());
        assert!(text(&j.stdout).contains("\"size\":\""), "{t}");
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.mtf");
        let r = mtf_stdin(&["pack", "-", "-o", out.to_str().unwrap()], &j.stdout);
        assert!(r.status.success(), "{t}: {}", text(&r.stderr));
        assert_eq!(
            std::fs::read(&out).unwrap(),
            std::fs::read(util::root().join(t)).unwrap()
        );
    }
    let j = text(&mtf(&["dump", "-f", "jsonl", "--no-header", "-n", "1", T]).stdout);
    assert!(j.starts_with("{\"record\":"), "{j}");
    assert_eq!(j.lines().count(), 1);
}

#[test]
fn csv_needs_one_record_type_and_has_a_header_row() {
    let r = mtf(&["dump", "-f", "csv", T]);
    assert_eq!(r.status.code(), Some(2));
    assert!(text(&r.stderr).contains("-r NAME"));
    let r = mtf(&["dump", "-f", "csv", "-r", "alloc", T]);
    assert!(r.status.success());
    let out = text(&r.stdout);
    let mut lines = out.lines();
    assert_eq!(
        lines.next(),
        Some("record_index,byte_offset,section,size,address,time,thread,heap,vfield.length,vfield.data")
    );
    assert_eq!(lines.count(), 10);
}

#[test]
fn dump_takes_several_traces_and_short_flags() {
    let r = mtf(&[
        "dump",
        "-r",
        "alloc",
        "-n",
        "1",
        "-s",
        "heap",
        T,
        "traces/hatf-be64.mtf",
    ]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let out = text(&r.stdout);
    assert_eq!(out.matches("%mtf 1").count(), 2, "{out}");
    assert_eq!(out.matches("\nalloc ").count(), 2, "{out}");
    // A missing trace among others: reported, the others dumped, status 2.
    let r = mtf(&["dump", "-n", "1", "nope.mtf", T]);
    assert_eq!(r.status.code(), Some(2));
    assert!(text(&r.stdout).contains("%mtf 1"));
}

#[test]
fn completions_man_pages_and_builtin_dtds() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let r = mtf(&["completions", shell]);
        assert!(r.status.success(), "{shell}");
        assert!(text(&r.stdout).contains("mtf"), "{shell}");
    }
    let r = mtf(&["man"]);
    assert!(r.status.success());
    assert!(text(&r.stdout).starts_with(".ie"));
    let dir = tempfile::tempdir().unwrap();
    let r = mtf(&["man", "-d", dir.path().to_str().unwrap()]);
    assert!(r.status.success());
    assert!(dir.path().join("mtf-dump.1").is_file());
    let r = mtf(&["dtd", "list"]);
    assert!(text(&r.stdout).contains("hatf10.dtd"));
    let r = mtf(&["dtd", "show", "hatf10"]);
    assert!(r.status.success());
    assert!(text(&r.stdout).contains("record alloc"));
}

#[test]
fn color_never_and_no_color_give_plain_diagnostics() {
    for (args, env) in [
        (vec!["--color", "never", "dump", "nope.mtf"], None),
        (vec!["dump", "nope.mtf"], Some("1")),
    ] {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"));
        c.args(&args).current_dir(util::root());
        if let Some(v) = env {
            c.env("NO_COLOR", v);
        }
        let r = c.output().unwrap();
        assert_eq!(r.status.code(), Some(2));
        assert!(!r.stderr.contains(&0x1b), "{}", text(&r.stderr));
    }
    // Forced colour: escape sequences even into a pipe.
    let r = mtf(&["--color", "always", "dump", "nope.mtf"]);
    assert!(r.stderr.contains(&0x1b), "{}", text(&r.stderr));
}
