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

/// A HATF trace of `n` allocations and frees with varied sizes and addresses, packed by
/// `mtf pack` into `dir/big.mtf`.
fn big_trace(dir: &Path, n: u64) -> std::path::PathBuf {
    let mut rng = util::Rng(0x9E37_79B9_7F4A_7C15);
    let mut lines = String::from(
        "%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection number=1\ncreateThread thread=0 vfield.data=\"\"\ncreateHeap thread=0 heap=0 vfield.data=\"\"\n",
    );
    let mut live = Vec::new();
    for i in 0..n {
        let addr = 4096 + 64 * i + rng.below(32);
        lines += &format!(
            "alloc size={} address={addr} vfield.data=\"\"\n",
            1 + rng.below(4000)
        );
        live.push(addr);
        if rng.chance(40) {
            let k = rng.below(live.len() as u64) as usize;
            let a = live.swap_remove(k);
            lines += &format!("free address={a} vfield.data=\"\"\n");
        }
    }
    let src = dir.join("big.txt");
    std::fs::write(&src, lines).unwrap();
    let out = dir.join("big.mtf");
    let o = mtf(&[
        "pack",
        src.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    out
}

/// What the codec's own decoder gives of a stream cut short before it fails (as
/// `zstd -dc cut.zst` and `gzip -dc cut.gz` write it), read 64 KiB at a time.
fn decompress_prefix(kind: &str, data: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut r: Box<dyn Read> = match kind {
        "gz" => Box::new(flate2::read::MultiGzDecoder::new(data)),
        "zst" => Box::new(zstd::stream::read::Decoder::new(data).unwrap()),
        _ => unreachable!(),
    };
    let mut out = Vec::new();
    let mut buf = vec![0; 64 << 10];
    loop {
        match r.read(&mut buf) {
            Ok(0) => panic!("{kind}: the cut stream decoded to its end"),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => return out,
        }
    }
}

/// A zstd or gzip trace cut short (a crashed tracer's, compressed on the fly) dumps the same
/// records as its decompressed bytes piped in (`zstd -dc cut.mtf.zst | mtf dump -`), with the
/// decompressor's fault and the container's damage reported and status 1 — streamed from a
/// small window, from the default one, and spooled.
#[test]
fn a_compressed_trace_cut_short_gives_what_its_bytes_hold() {
    let dir = util::tempdir();
    let trace = std::fs::read(big_trace(dir.path(), 60_000)).unwrap();
    for kind in ["zst", "gz"] {
        let packed = util::compress(kind, &trace);
        let cut = &packed[..packed.len() * 2 / 3];
        let prefix = decompress_prefix(kind, cut);
        assert!(prefix.len() > trace.len() / 3, "{kind}: {}", prefix.len());
        let path = dir.path().join(format!("cut.mtf.{kind}"));
        std::fs::write(&path, cut).unwrap();
        let piped = util::mtf_stdin(&["dump", "-"], &prefix);
        assert_eq!(piped.status.code(), Some(1), "{}", text(&piped.stderr));
        let records = piped.stdout.iter().filter(|&&b| b == b'\n').count();
        assert!(records > 10_000, "{kind}: {records}");
        for window in ["65536", "", "0"] {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
                .args(["dump", path.to_str().unwrap()])
                .env("MTF_STREAM_WINDOW", window)
                .output()
                .unwrap();
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{kind} {window}: {err}");
            assert!(
                out.stdout == piped.stdout,
                "{kind} window {window:?}: other records"
            );
            assert!(
                err.contains("mtf::io::decompress"),
                "{kind} {window}: {err}"
            );
            assert!(
                err.contains("mtf::trace::invalid"),
                "{kind} {window}: {err}"
            );
        }
    }
}

/// stats, plot, report and export read a trace cut short as dump and check do: what it holds,
/// the damage reported, status 1 once the output is written.
#[test]
fn commands_that_write_salvage_a_trace_cut_short() {
    let dir = util::tempdir();
    let d = dir.path();
    let bytes = std::fs::read(util::root().join("traces/android.mtf")).unwrap();
    let cut = d.join("cut.mtf");
    std::fs::write(&cut, &bytes[..bytes.len() - 200]).unwrap();
    let c = cut.to_str().unwrap();
    let p = |name: &str| d.join(name).to_str().unwrap().to_string();
    // The records the salvaged trace holds, as dump gives them (one line each, after the
    // header line).
    let dumped = mtf(&["dump", c]);
    assert_eq!(dumped.status.code(), Some(1));
    let held = text(&dumped.stdout)
        .lines()
        .filter(|l| !l.starts_with('%') && !l.starts_with('#'))
        .count() as u64;
    let stats = mtf(&["stats", "-f", "json", c]);
    assert_eq!(stats.status.code(), Some(1), "{}", text(&stats.stderr));
    assert!(text(&stats.stderr).contains("mtf::trace::invalid"));
    let json: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    let counted: u64 = json["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["count"].as_u64().unwrap())
        .sum();
    // `stats` counts data records (metadata and table records are the encoding's), `dump`
    // prints every record: the salvaged figures count what the salvaged trace holds.
    assert!(counted > 50);
    assert_eq!(
        counted,
        json["slice"]["data_records"].as_u64().unwrap(),
        "{json}"
    );
    assert!(held >= counted, "{held} {counted}");
    // The same from a pipe (streamed): the damage is found at the end, the figures written.
    let piped = util::mtf_stdin(&["stats", "-f", "json", "-"], &bytes[..bytes.len() - 200]);
    assert_eq!(piped.status.code(), Some(1), "{}", text(&piped.stderr));
    assert_eq!(piped.stdout, stats.stdout);
    for args in [
        vec!["plot", c, "-o", &p("x.svg")],
        vec!["report", c, "-o", &p("x.html")],
        vec!["export", c, "-o", &p("x.txt")],
    ] {
        let out = mtf(&args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("mtf::trace::invalid"), "{args:?}: {err}");
        assert!(std::fs::metadata(args[3]).unwrap().len() > 0, "{args:?}");
    }
    // The export is the original text up to the damage.
    let whole = mtf(&["export", "traces/android.mtf", "-o", "-"]);
    let part = std::fs::read(p("x.txt")).unwrap();
    assert!(!part.is_empty() && whole.stdout.starts_with(&part));
}

/// A small valid zstd trace whose metadata makes a field a reference into a section read as
/// a table (tests/data/stream/compressed-table-reference): compressed, piped or not, it reads
/// exactly as its decompressed bytes in a file do (it was refused with
/// mtf::stream::random_access and advice to give a file).
#[test]
fn a_compressed_trace_with_tables_reads_as_its_file() {
    let dir = util::tempdir();
    let case = util::root().join("tests/data/stream/compressed-table-reference");
    let dtd = case.join("t.dtd");
    let zst = case.join("t.mtf.zst");
    let plain = dir.path().join("t.mtf");
    std::fs::write(
        &plain,
        zstd::decode_all(&std::fs::read(&zst).unwrap()[..]).unwrap(),
    )
    .unwrap();
    let d = dtd.to_str().unwrap();
    for cmd in ["check", "dump", "stats", "info"] {
        let run = |trace: &Path, stdin: Option<Vec<u8>>| {
            let path = if stdin.is_some() {
                "-"
            } else {
                trace.to_str().unwrap()
            };
            let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"));
            c.args([cmd, "--dtd", d, path]).current_dir(util::root());
            let out = match stdin {
                Some(bytes) => util::output_with_stdin(&mut c, &bytes),
                None => c.output().unwrap(),
            };
            let name = if path == "-" { "standard input" } else { path };
            let shown = text(&out.stdout)
                .replace(name, "TRACE")
                .replace("(402 bytes)", "");
            (out.status.code(), shown, text(&out.stderr))
        };
        let want = run(&plain, None);
        assert_eq!(want.0, Some(0), "{cmd}: {}", want.2);
        for got in [
            run(&zst, None),
            run(&zst, Some(std::fs::read(&zst).unwrap())),
        ] {
            assert_eq!(got.0, want.0, "{cmd}: {}", got.2);
            assert!(!got.2.contains("random_access"), "{cmd}: {}", got.2);
            assert_eq!(got.1, want.1, "{cmd}");
        }
    }
}

/// The names in a folder, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A Parquet export replaces an earlier export of the same trace as a whole (no file of the
/// first beside the second's), refuses a folder that holds anything else or another trace's
/// export, and writes nothing for a damaged trace (it said "exported" and left files).
#[cfg(feature = "parquet")]
#[test]
fn a_parquet_export_replaces_its_own_folder_whole_or_refuses() {
    let dir = util::tempdir();
    let d = dir.path();
    let pq = d.join("pq");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let t = d.join("t.mtf");
    std::fs::copy(util::root().join("traces/android.mtf"), &t).unwrap();
    let export = |trace: &Path, out: &Path| {
        mtf(&["export", "--to", "parquet", &s(trace), "-o", &s(out), "-q"])
    };
    let o = export(&t, &pq);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let first = names(&pq);
    assert!(first.contains(&".mtf-export".to_string()), "{first:?}");
    assert!(first.iter().filter(|n| n.ends_with(".parquet")).count() > 1);
    // The same trace, now with fewer record types: only its own files are left.
    let text_form = text(&mtf(&["dump", &s(&t)]).stdout);
    let fewer: String = text_form
        .lines()
        .filter(|l| !l.starts_with("free ") && !l.starts_with("realloc"))
        .map(|l| format!("{l}\n"))
        .collect();
    let txt = d.join("t.txt");
    std::fs::write(&txt, fewer).unwrap();
    let o = mtf(&["pack", &s(&txt), "-o", &s(&t), "-q"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = export(&t, &pq);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let second = names(&pq);
    assert!(second.len() < first.len(), "{first:?} → {second:?}");
    assert!(!second.iter().any(|n| n.starts_with("free")), "{second:?}");
    // Nothing is left beside the folder.
    assert_eq!(names(d), ["pq", "t.mtf", "t.txt"]);
    // Another trace's export, and a folder with other files, are refused and left as they are.
    let other = d.join("other.mtf");
    std::fs::copy(util::root().join("traces/hatf-le32.mtf"), &other).unwrap();
    let o = export(&other, &pq);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("mtf::parquet::folder_not_empty"));
    assert_eq!(names(&pq), second);
    let mine = d.join("mine");
    std::fs::create_dir(&mine).unwrap();
    std::fs::write(mine.join("notes.txt"), b"keep").unwrap();
    let o = export(&t, &mine);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("notes.txt"), "{}", text(&o.stderr));
    assert_eq!(names(&mine), ["notes.txt"]);
    // An empty folder is filled.
    let empty = d.join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(export(&t, &empty).status.success());
    // A damaged trace: status 1, nothing written, the earlier export left as it was.
    let bytes = std::fs::read(&t).unwrap();
    std::fs::write(&t, &bytes[..bytes.len() - 9]).unwrap();
    let o = mtf(&["export", "--to", "parquet", &s(&t), "-o", &s(&pq)]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.lines().any(|l| l.starts_with("exported")), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(names(&pq), second);
    let fresh = d.join("fresh");
    let o = export(&t, &fresh);
    assert_eq!(o.status.code(), Some(1));
    assert!(!fresh.exists());
    // A record that breaks the format (found by the first pass): the same.
    let mut bad = bytes.clone();
    let n = bad.len();
    bad[n - 30] ^= 0xff;
    std::fs::write(&t, &bad).unwrap();
    let o = export(&t, &fresh);
    if o.status.code() == Some(1) {
        assert!(!fresh.exists(), "{}", text(&o.stderr));
    }
    assert!(
        names(d).iter().all(|n| !n.starts_with('.')),
        "{:?}",
        names(d)
    );
}

/// A compressed file whose metadata makes a section a table only after the stream's window has
/// moved on (a long global region first): read again from its start as a file, the records
/// already given out dropped, so that it reads as its decompressed bytes do.
#[test]
fn a_compressed_file_needing_random_access_late_is_read_again_as_a_file() {
    let dir = util::tempdir();
    let d = dir.path();
    let case = util::root().join("tests/data/stream/compressed-table-reference");
    let dtd = d.join("t.dtd");
    std::fs::copy(case.join("t.dtd"), &dtd).unwrap();
    let mut lines = String::from("%mtf 1 dtd=\"t.dtd\" class=32 order=little\n");
    for i in 0..20_000u64 {
        lines += &format!("pf0 u={}\n", 1 + i * 7919 % 100_003);
    }
    lines += "metadata pf0.u sectionStride heap143 1\nmetadata pf0.u none\npf0 u=5\n";
    lines += "section number=143:heap143\n";
    lines += "s143_0 vfield.length=5 vfield.data=x\"e7198b1d41\" ln=12 dat=x\"2427f9f86b2823df5732748bf2b4343b3d231c8b9e2b28f7ffccc2903eed01bdc4ec2529\" pc=0xd640c02787f91fd8 blob=x\"4b62a5306eff2877382dddc3\"\n";
    let txt = d.join("t.txt");
    std::fs::write(&txt, lines).unwrap();
    let plain = d.join("t.mtf");
    let o = mtf(&[
        "pack",
        txt.to_str().unwrap(),
        "-o",
        plain.to_str().unwrap(),
        "-q",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let bytes = std::fs::read(&plain).unwrap();
    let zst = d.join("t.mtf.zst");
    std::fs::write(&zst, util::compress("zst", &bytes)).unwrap();
    for cmd in ["dump", "check", "stats"] {
        let run = |trace: &Path| {
            std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
                .args([cmd, trace.to_str().unwrap()])
                .env("MTF_STREAM_WINDOW", "4096")
                .output()
                .unwrap()
        };
        let want = run(&plain);
        assert_eq!(want.status.code(), Some(0), "{cmd}: {}", text(&want.stderr));
        let got = run(&zst);
        assert_eq!(got.status.code(), Some(0), "{cmd}: {}", text(&got.stderr));
        let name = |o: &std::process::Output, p: &Path| {
            text(&o.stdout).replace(p.to_str().unwrap(), "TRACE")
        };
        assert!(
            name(&got, &zst) == name(&want, &plain),
            "{cmd}: other output"
        );
    }
    // Piped, compressed or not, it cannot be read again: the bytes the window dropped were
    // kept in the spool, which is mapped and decoded as the file (issue 25 item 11).
    for (input, label) in [(&zst, "zstd"), (&plain, "plain")] {
        for cmd in ["dump", "check", "stats"] {
            let want = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
                .args([cmd, plain.to_str().unwrap()])
                .env("MTF_STREAM_WINDOW", "4096")
                .output()
                .unwrap();
            let piped = util::output_with_stdin(
                std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
                    .args([cmd, "-d", dtd.to_str().unwrap(), "-"])
                    .env("MTF_STREAM_WINDOW", "4096"),
                &std::fs::read(input).unwrap(),
            );
            assert_eq!(
                piped.status.code(),
                Some(0),
                "{label} {cmd}: {}",
                text(&piped.stderr)
            );
            assert!(!text(&piped.stderr).contains("random_access"));
            let shown =
                |o: &std::process::Output, name: &str| text(&o.stdout).replace(name, "TRACE");
            assert!(
                shown(&piped, "standard input") == shown(&want, plain.to_str().unwrap()),
                "{label} {cmd}: other output"
            );
        }
    }
    // Without a temporary folder to keep them in, the typed error (not other records).
    let piped = util::output_with_stdin(
        std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
            .args(["check", "-d", dtd.to_str().unwrap(), "-"])
            .env("MTF_STREAM_WINDOW", "4096")
            .env("TMPDIR", d.join("no-such-folder")),
        &std::fs::read(&zst).unwrap(),
    );
    assert_eq!(piped.status.code(), Some(2), "{}", text(&piped.stderr));
    assert!(text(&piped.stderr).contains("mtf::stream::random_access"));
}
