//! What commands write: never over one of their inputs; compressed by the output's name; the
//! traces they still read when cut short or compressed.

use std::path::Path;

use crate::util::{self, mtf, text};

/// Every command that writes refuses an output that is one of its inputs — by the same name,
/// through a symbolic link, through a hard link, through standard input — with status 2, the
/// typed error, and the input left as it was.
#[cfg(unix)]
#[test]
fn no_command_writes_over_one_of_its_inputs() {
    let dir = util::tempdir();
    let d = dir.path();
    let t = d.join("t.mtf");
    let imported = d.join("imp.mtf");
    let txt = d.join("trace.txt");
    std::fs::copy(util::root().join("traces/hatf-le32.mtf"), &t).unwrap();
    std::fs::copy(util::root().join("traces/src/hatf-le32.txt"), &txt).unwrap();
    std::fs::copy(util::root().join("traces/android.mtf"), &imported).unwrap();
    std::os::unix::fs::symlink("t.mtf", d.join("link.mtf")).unwrap();
    std::fs::hard_link(&t, d.join("hard.mtf")).unwrap();
    let dtd = d.join("hatf10.dtd");
    std::fs::copy(util::root().join("dtds/hatf10.dtd"), &dtd).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let (ts, link, hard, dtds) = (
        s(&t),
        s(&d.join("link.mtf")),
        s(&d.join("hard.mtf")),
        s(&dtd),
    );
    let cases: Vec<Vec<String>> = vec![
        vec!["stats".into(), ts.clone(), "-o".into(), ts.clone()],
        vec!["stats".into(), ts.clone(), "-o".into(), link.clone()],
        vec!["report".into(), ts.clone(), "-o".into(), hard.clone()],
        vec![
            "plot".into(),
            ts.clone(),
            "-f".into(),
            "svg".into(),
            "-o".into(),
            ts.clone(),
        ],
        vec![
            "diff".into(),
            ts.clone(),
            ts.clone(),
            "-o".into(),
            link.clone(),
        ],
        vec!["compact".into(), ts.clone(), "-o".into(), hard.clone()],
        vec!["index".into(), ts.clone(), "-o".into(), link.clone()],
        vec!["simulate".into(), ts.clone(), "-o".into(), ts.clone()],
        vec!["pack".into(), s(&txt), "-o".into(), s(&txt)],
        // The DTD is an input too, named or found beside the trace.
        vec![
            "stats".into(),
            ts.clone(),
            "-d".into(),
            dtds.clone(),
            "-o".into(),
            dtds.clone(),
        ],
        vec!["stats".into(), ts.clone(), "-o".into(), dtds.clone()],
        vec!["export".into(), s(&imported), "-o".into(), s(&imported)],
    ];
    let before: Vec<Vec<u8>> = [&t, &txt, &dtd, &imported]
        .iter()
        .map(|p| std::fs::read(p).unwrap_or_default())
        .collect();
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = mtf(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("mtf::io::overwrites_input"), "{args:?}: {err}");
        assert!(err.contains("not writing over it"), "{args:?}: {err}");
    }
    // Standard input redirected from the trace.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
        .args(["stats", "-", "-o", &ts])
        .stdin(std::fs::File::open(&t).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("standard input"));
    let after: Vec<Vec<u8>> = [&t, &txt, &dtd, &imported]
        .iter()
        .map(|p| std::fs::read(p).unwrap_or_default())
        .collect();
    assert!(before == after, "an input was changed");
    assert!(std::fs::symlink_metadata(d.join("link.mtf"))
        .unwrap()
        .file_type()
        .is_symlink());
    // Another output is written as always.
    let out = mtf(&["stats", &ts, "-o", &s(&d.join("stats.txt"))]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// `data` decompressed as `kind` says, by the codecs' own crates (what `zstd -d`, `gzip -d`,
/// `xz -d`, `bzip2 -d` do); panics if it is not such a stream.
fn decompress(kind: &str, data: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    match kind {
        "gz" => {
            assert!(data.starts_with(&[0x1f, 0x8b]), "not gzip");
            flate2::read::MultiGzDecoder::new(data)
                .read_to_end(&mut out)
                .unwrap();
        }
        "zst" => out = zstd::decode_all(data).unwrap(),
        "xz" => {
            xz2::read::XzDecoder::new(data)
                .read_to_end(&mut out)
                .unwrap();
        }
        "bz2" => {
            bzip2::read::BzDecoder::new(data)
                .read_to_end(&mut out)
                .unwrap();
        }
        _ => unreachable!(),
    }
    out
}

/// An output named `.gz`, `.zst`, `.xz` or `.bz2` is compressed so by every command that
/// writes (as the input side decompresses by content): decompressed by the codec's own
/// decoder it is the plain output, byte for byte.
#[test]
fn outputs_are_compressed_by_their_name() {
    let dir = util::tempdir();
    let d = dir.path();
    let p = |name: &str| d.join(name).to_str().unwrap().to_string();
    let plain = |args: &[&str], out: &str| {
        let o = mtf(&[args, &["-o", out, "-q"]].concat());
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        std::fs::read(out).unwrap()
    };
    let txt = "traces/src/hatf-le32.txt";
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("pack", vec!["pack", txt]),
        (
            "import",
            vec![
                "import",
                "--from",
                "android",
                "tests/data/import/alloc/android-systemui.txt",
            ],
        ),
        ("export", vec!["export", "traces/android.mtf"]),
        ("stats", vec!["stats", "traces/android.mtf"]),
    ];
    for (name, args) in &cases {
        let reference = plain(args, &p(&format!("{name}.plain")));
        for kind in ["gz", "zst", "xz", "bz2"] {
            let out = p(&format!("{name}.out.{kind}"));
            let packed = plain(args, &out);
            assert_ne!(packed, reference, "{name} .{kind}: written plain");
            assert_eq!(decompress(kind, &packed), reference, "{name} .{kind}");
        }
    }
    // compact measures what it writes: a name that asks for zstd, xz or gzip is written as
    // `--compress` writes it (the cost model estimating compressed sizes), bzip2 plain and
    // compressed by the name.
    let compact = ["compact", "traces/hatf-le32.mtf"];
    for (kind, codec) in [("gz", "gzip"), ("zst", "zstd"), ("xz", "xz")] {
        let by_name = plain(&compact, &p(&format!("c.{kind}")));
        let asked = plain(
            &[&compact[..], &["--compress", codec]].concat(),
            &p(&format!("c-{kind}.ref")),
        );
        assert_eq!(by_name, asked, "compact .{kind}");
        assert!(decompress(kind, &by_name).starts_with(b"\x7fMTF"));
    }
    let packed = plain(&compact, &p("c.bz2"));
    assert_eq!(decompress("bz2", &packed), plain(&compact, &p("c.plain")));
    // Upper case too; `-o -` is never compressed.
    let packed = plain(&["pack", txt], &p("T.MTF.ZST"));
    assert_eq!(
        decompress("zst", &packed),
        plain(&["pack", txt], &p("t.mtf"))
    );
    // A trace written compressed reads back as the plain one.
    let a = mtf(&["dump", &p("pack.out.xz")]);
    let b = mtf(&["dump", &p("pack.plain")]);
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout);
    // compact: the name chooses the codec for its cost model; one that disagrees with
    // --compress is refused.
    let o = mtf(&[
        "compact",
        "traces/hatf-le32.mtf",
        "-o",
        &p("c.zst"),
        "--compress",
        "xz",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("--compress"),
        "{}",
        text(&o.stderr)
    );
    let o = mtf(&[
        "compact",
        "traces/hatf-le32.mtf",
        "-o",
        &p("c2.gz"),
        "--compress",
        "gzip",
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let once = decompress("gz", &std::fs::read(p("c2.gz")).unwrap());
    assert!(once.starts_with(b"\x7fMTF"), "compressed twice");
}
