//! `mtf import` reads every input path the same way: a file, `-` from a pipe, `-` redirected
//! from a file, a compressed file and compressed standard input give the same trace, with and
//! without `--from` (detection reads the start of the input and that start is imported too),
//! for every shipped format (fixtures of `tests/data/import`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::{self, mtf, text};

/// (format, fixture): one small input of every shipped mapping.
const CASES: &[(&str, &str)] = &[
    ("et3", "et3/trace"),
    ("et_merlin", "et_merlin/odd.txt"),
    ("jvm_trace", "jvm/trace.txt"),
    ("jvm_trace", "jvm/run.zip"),
    ("tptp", "tptp/two.trcxml"),
    ("android", "alloc/android-systemui.txt"),
    ("valgrind", "alloc/valgrind-allocs.vg"),
    ("mtrace", "alloc/mtrace-allocs.mtrace"),
    ("malloclab", "alloc/malloclab-3e.rep"),
    ("heaptrack", "alloc/heaptrack-sort.zst"),
    ("heaptrack_raw", "alloc/heaptrack-sort.raw.zst"),
];

fn fixture(rel: &str) -> PathBuf {
    util::root().join("tests/data/import").join(rel)
}

/// The bytes of a fixture, decompressed.
fn plain_bytes(rel: &str) -> Vec<u8> {
    use std::io::Read;
    let mut r = metatf::io::Input::reader(fixture(rel)).unwrap();
    let mut b = Vec::new();
    r.read_to_end(&mut b).unwrap();
    b
}

/// Run `mtf import ARGS -o OUT` with standard input from `stdin` (a pipe fed with the bytes,
/// or a file); returns the trace written, and the standard error.
fn import(args: &[&str], stdin: Option<Stdin<'_>>, out: &Path) -> (Vec<u8>, String) {
    let mut all: Vec<&str> = vec!["import"];
    all.extend_from_slice(args);
    all.extend(["-o", out.to_str().unwrap()]);
    let o = match stdin {
        None => mtf(&all),
        Some(Stdin::Pipe(b)) => util::mtf_stdin(&all, b),
        Some(Stdin::File(p)) => Command::new(env!("CARGO_BIN_EXE_mtf"))
            .args(&all)
            .current_dir(util::root())
            .stdin(Stdio::from(std::fs::File::open(p).unwrap()))
            .output()
            .unwrap(),
    };
    let err = text(&o.stderr);
    assert!(o.status.success(), "import {all:?}: {err}");
    (std::fs::read(out).unwrap(), err)
}

enum Stdin<'a> {
    Pipe(&'a [u8]),
    File(&'a Path),
}

/// Every input path gives the trace that the same bytes give from a file (named `stdin`, the
/// name a trace records for standard input), with `--from` and with detection.
#[test]
fn standard_input_pipes_and_compressed_inputs_import_like_the_file() {
    let dir = util::tempdir();
    for (format, rel) in CASES {
        let bytes = plain_bytes(rel);
        // The reference: the decompressed bytes in a file named as standard input is named.
        let named = dir.path().join("stdin");
        std::fs::write(&named, &bytes).unwrap();
        for from in [Some(*format), None] {
            let mut args: Vec<&str> = Vec::new();
            if let Some(f) = from {
                args.extend(["--from", f]);
            }
            fn with<'a>(args: &[&'a str], extra: &'a str) -> Vec<&'a str> {
                let mut a = args.to_vec();
                a.push(extra);
                a
            }
            let out = dir.path().join("t.mtf");
            let (want, err) = import(&with(&args, named.to_str().unwrap()), None, &out);
            assert!(err.contains(&format!("({format})")), "{rel}: {err}");
            let (got, err) = import(&with(&args, "-"), Some(Stdin::Pipe(&bytes)), &out);
            assert!(got == want, "{rel} from a pipe ({from:?}): {err}");
            let (got, err) = import(&with(&args, "-"), Some(Stdin::File(&named)), &out);
            assert!(got == want, "{rel} redirected ({from:?}): {err}");
            for kind in ["gz", "zst", "xz"] {
                let packed = util::compress(kind, &bytes);
                let sub = dir.path().join(kind);
                std::fs::create_dir_all(&sub).unwrap();
                let file = sub.join("stdin");
                std::fs::write(&file, &packed).unwrap();
                let (got, err) = import(&with(&args, file.to_str().unwrap()), None, &out);
                assert!(got == want, "{rel} as a {kind} file ({from:?}): {err}");
                let (got, err) = import(&with(&args, "-"), Some(Stdin::Pipe(&packed)), &out);
                assert!(
                    got == want,
                    "{rel} as {kind} on standard input ({from:?}): {err}"
                );
            }
        }
    }
}

/// The import of standard input exports back to the input's bytes, and the report counts them
/// (the bug: detection consumed the input, and the import then read 0 bytes).
#[test]
fn detection_on_standard_input_loses_nothing() {
    let dir = util::tempdir();
    let bytes = plain_bytes("et3/trace");
    let out = dir.path().join("t.mtf");
    let (_, err) = import(&["-"], Some(Stdin::Pipe(&bytes)), &out);
    assert!(
        err.contains(&format!("{} input bytes", bytes.len())),
        "{err}"
    );
    let back = mtf(&["export", out.to_str().unwrap(), "-o", "-"]);
    assert!(back.status.success(), "{}", text(&back.stderr));
    assert!(back.stdout == bytes, "export differs from standard input");
}

/// A ZIP on standard input (and a gzipped ZIP) is read entry by entry, as from its file.
#[test]
fn a_zip_on_standard_input_is_read_entry_by_entry() {
    let dir = util::tempdir();
    let zip = std::fs::read(fixture("jvm/run.zip")).unwrap();
    let out = dir.path().join("t.mtf");
    let (want, _) = import(&[fixture("jvm/run.zip").to_str().unwrap()], None, &out);
    let (got, err) = import(&["-"], Some(Stdin::Pipe(&zip)), &out);
    assert!(got == want, "{err}");
    let (got, err) = import(&["-"], Some(Stdin::Pipe(&util::compress("gz", &zip))), &out);
    assert!(got == want, "{err}");
}

/// Standard input can be read once: `-` twice is refused.
#[test]
fn standard_input_named_twice_is_refused() {
    let dir = util::tempdir();
    let out = dir.path().join("t.mtf");
    let o = util::mtf_stdin(
        &[
            "import",
            "--from",
            "et3",
            "-",
            "-",
            "-o",
            out.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("name `-` once"),
        "{}",
        text(&o.stderr)
    );
}

/// A compressed input cut short is a damaged input (exit status 1, as the same trace cut short
/// uncompressed), with the line where it ends, from a file as from standard input.
#[test]
fn a_cut_compressed_input_is_invalid_input_not_an_io_error() {
    let dir = util::tempdir();
    let lines: Vec<u8> = (0..4000)
        .flat_map(|i| format!("N {i} 24 2 55 0 7\n").into_bytes())
        .collect();
    let packed = util::compress("gz", &lines);
    let cut = &packed[..packed.len() / 2];
    let file = dir.path().join("cut.gz");
    std::fs::write(&file, cut).unwrap();
    let out = dir.path().join("t.mtf");
    for stdin in [false, true] {
        let input = if stdin { "-" } else { file.to_str().unwrap() };
        let args = [
            "import",
            "--from",
            "et3",
            input,
            "-o",
            out.to_str().unwrap(),
        ];
        let o = if stdin {
            util::mtf_stdin(&args, cut)
        } else {
            mtf(&args)
        };
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("cannot decompress"), "{err}");
        assert!(!out.exists());
    }
}
