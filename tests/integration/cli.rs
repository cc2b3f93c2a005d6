//! Command-line behaviour that is not about one format feature.

use crate::util;

#[test]
fn dump_into_a_closed_pipe_exits_cleanly() {
    // `mtf dump big.mtf | head -1`: build a trace large enough that the pipe closes mid-dump.
    let dir = util::tempdir();
    let src = dir.path().join("big.txt");
    let mut text = String::from("%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection 1\n");
    for i in 0..200_000u32 {
        text.push_str(&format!(
            "alloc size={} address={} vfield.data=\"\"\n",
            i % 200,
            4096 + 16 * i
        ));
    }
    std::fs::write(&src, text).unwrap();
    let trace = dir.path().join("big.mtf");
    let out = util::mtf(&[
        "pack",
        "--dtd",
        "dtds/hatf10.dtd",
        src.to_str().unwrap(),
        "-o",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stderr));
    let sh = format!(
        "{} dump {} | head -1",
        env!("CARGO_BIN_EXE_mtf"),
        trace.display()
    );
    let out = std::process::Command::new("bash")
        .args(["-o", "pipefail", "-c", &sh])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        util::text(&out.stderr)
    );
    assert!(util::text(&out.stdout).starts_with("%mtf 1"));
    assert!(
        util::text(&out.stderr).is_empty(),
        "{}",
        util::text(&out.stderr)
    );
}

#[test]
fn dump_filters_and_options() {
    let t = "traces/hatf-le32.mtf";
    let out = util::mtf(&["dump", "--record", "free", "--data-only", t]);
    let s = util::text(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        s.lines().filter(|l| l.starts_with("free ")).count(),
        3,
        "{s}"
    );
    assert!(!s.lines().any(|l| l.starts_with("alloc")));
    let out = util::mtf(&[
        "dump",
        "--skip",
        "2",
        "--limit",
        "3",
        "--offsets",
        "--raw",
        t,
    ]);
    let s = util::text(&out.stdout);
    assert_eq!(s.lines().count(), 4, "{s}");
    assert!(s.lines().nth(1).unwrap().starts_with('@'));
    let out = util::mtf(&["dump", "--section", "nosuch", t]);
    assert_eq!(out.status.code(), Some(2));
    let out = util::mtf(&[
        "dump",
        "--section",
        "heap",
        "--data-only",
        "traces/hatf-split-le64.mtf",
    ]);
    let s = util::text(&out.stdout);
    // The logical records: references as the values they lead to.
    assert!(s.contains("heap=\"scratch arena\""), "{s}");
    assert!(s.contains("address=140737488289792"), "{s}");
    assert!(!s.contains("addr address"), "{s}");
}

#[test]
fn dump_of_a_damaged_trace_prints_what_precedes_the_damage() {
    let mut bytes = std::fs::read(util::root().join("traces/hatf-le32.mtf")).unwrap();
    let n = bytes.len();
    // Cut the last record (destroyThread: tag, empty vfield) in half and fix nothing else: the
    // container then reports the short last section at open.
    bytes.truncate(n - 1);
    let dir = util::tempdir();
    let p = dir.path().join("cut.mtf");
    std::fs::write(&p, &bytes).unwrap();
    let out = util::mtf(&["dump", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let e = util::text(&out.stderr);
    assert!(
        e.contains("mtf::trace::invalid") && e.contains("cut.mtf"),
        "{e}"
    );
    // Damage inside the records instead: an unknown tag where the 5th record starts.
    let mut bytes = std::fs::read(util::root().join("traces/hatf-le32.mtf")).unwrap();
    let dump = util::text(&util::mtf(&["dump", "--offsets", "traces/hatf-le32.mtf"]).stdout);
    let fifth: usize = dump.lines().nth(5).unwrap()[1..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    bytes[fifth] = 0x7e;
    std::fs::write(&p, &bytes).unwrap();
    let out = util::mtf(&["dump", "--offsets", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let s = util::text(&out.stdout);
    assert_eq!(
        s.lines().count(),
        5,
        "header + the 4 records before the damage: {s}"
    );
    let e = util::text(&out.stderr);
    assert!(
        e.contains(&format!("byte {fifth}")) && e.contains("unknown tag 126"),
        "{e}"
    );
}

#[test]
fn pack_names_line_and_field_of_an_unrepresentable_value() {
    let input = "%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection 1\nmetadata alloc.size width 1\nalloc size=300 address=1 vfield.data=\"\"\n";
    let (out, out_path, _dir) = util::pack_stdin("dtds/hatf10.dtd", input.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let e = util::text(&out.stderr);
    assert!(
        e.contains("-:4:7:")
            && e.contains("alloc.size")
            && e.contains("300 does not fit in 1 byte"),
        "{e}"
    );
    assert!(
        !out_path.exists(),
        "no file under the output name after a failed pack"
    );
}

#[test]
fn pack_interrupted_by_a_failing_reader_leaves_no_file() {
    use std::io::{BufReader, Read};
    // A reader that yields a valid beginning, then fails half-way.
    struct Failing(std::io::Cursor<Vec<u8>>);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.read(buf)?;
            if n == 0 {
                Err(std::io::Error::other("disk on fire"))
            } else {
                Ok(n)
            }
        }
    }
    let schema = util::schema("dtds/hatf10.dtd");
    let dir = util::tempdir();
    let target = dir.path().join("t.mtf");
    let text = b"%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection 1\nalloc size=1 address=2 vfield.data=\"\"\n".to_vec();
    let input = BufReader::with_capacity(16, Failing(std::io::Cursor::new(text)));
    let mut input = metatf::text::LineReader::new(input);
    let h = metatf::pack::read_header(&mut input, metatf::text::InputFormat::Text).unwrap();
    let mut w = metatf::encode::TraceWriter::create(
        &schema,
        &target,
        metatf::container::Class::Bits32,
        metatf::container::ByteOrder::Little,
        &h.dtd,
    )
    .unwrap();
    let r = metatf::pack::pack_lines(
        &mut input,
        metatf::text::InputFormat::Text,
        &mut w,
        &mut Default::default(),
    );
    assert!(r.is_err());
    drop(w);
    assert!(!target.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(
        leftovers.is_empty(),
        "temporary files were removed: {leftovers:?}"
    );
}

#[test]
fn pack_reports_invalid_utf8_with_its_line() {
    let mut input = b"%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection 1\n".to_vec();
    input.extend_from_slice(b"comment vfield.data=\"\xff\"\n");
    let (out, out_path, _dir) = util::pack_stdin("dtds/hatf10.dtd", &input);
    assert_eq!(out.status.code(), Some(1));
    let e = util::text(&out.stderr);
    assert!(e.contains("-:3:1: the line is not valid UTF-8"), "{e}");
    assert!(!out_path.exists());
}

/// One exit-status policy (src/cli/exit.rs, the README): 0 success, 1 invalid trace or input,
/// 2 usage or I/O, 3 unusable DTD, the same for every subcommand.
#[test]
fn every_subcommand_follows_the_one_exit_status_policy() {
    let dir = util::tempdir();
    let d = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    let cut = d("cut.mtf");
    std::fs::write(
        &cut,
        &std::fs::read(crate::util::root().join("traces/hatf-le32.mtf")).unwrap()[..200],
    )
    .unwrap();
    let bad_dtd = d("bad.dtd");
    std::fs::write(&bad_dtd, "this is not a DTD").unwrap();
    // A regular file where a folder is expected: the output cannot be created (even as root).
    let not_a_folder = d("file");
    std::fs::write(&not_a_folder, "").unwrap();
    let into = |name: &str| format!("{not_a_folder}/{name}");
    let missing = d("missing.mtf");
    let hatf = ["-d", "dtds/hatf10.dtd"];
    let cases: Vec<(Vec<String>, i32)> = vec![
        (vec!["info".into(), "traces/android.mtf".into()], 0),
        (
            vec!["info".into(), cut.clone(), hatf[0].into(), hatf[1].into()],
            1,
        ),
        (
            vec!["check".into(), cut.clone(), hatf[0].into(), hatf[1].into()],
            1,
        ),
        (
            vec!["dump".into(), cut.clone(), hatf[0].into(), hatf[1].into()],
            1,
        ),
        (vec!["info".into(), missing.clone()], 2),
        (vec!["check".into(), missing.clone()], 2),
        (vec!["dump".into(), missing.clone()], 2),
        (vec!["size-report".into(), missing.clone()], 2),
        (
            vec!["compact".into(), missing.clone(), "-o".into(), d("o.mtf")],
            2,
        ),
        (
            vec!["pack".into(), missing.clone(), "-o".into(), d("o.mtf")],
            2,
        ),
        (
            vec![
                "dump".into(),
                "--no-such-flag".into(),
                "traces/android.mtf".into(),
            ],
            2,
        ),
        (
            vec![
                "check".into(),
                "traces/android.mtf".into(),
                "-d".into(),
                bad_dtd.clone(),
            ],
            3,
        ),
        (vec!["dtd".into(), "check".into(), bad_dtd.clone()], 3),
        (
            vec![
                "compact".into(),
                cut.clone(),
                hatf[0].into(),
                hatf[1].into(),
                "-o".into(),
                d("o.mtf"),
            ],
            1,
        ),
        (
            vec![
                "compact".into(),
                "traces/android.mtf".into(),
                "-o".into(),
                into("o.mtf"),
            ],
            2,
        ),
        (
            vec![
                "dump".into(),
                "traces/android.mtf".into(),
                "-r".into(),
                "nope".into(),
            ],
            2,
        ),
        // export: an output that cannot be created is I/O, for a ZIP as for plain text ...
        (
            vec![
                "export".into(),
                "traces/android.mtf".into(),
                "-o".into(),
                into("a.zip"),
            ],
            2,
        ),
        (
            vec![
                "export".into(),
                "traces/et3.mtf".into(),
                "-o".into(),
                into("a.txt"),
            ],
            2,
        ),
        (
            vec![
                "export".into(),
                "traces/tptp.mtf".into(),
                "-o".into(),
                into("a.trcxml"),
            ],
            2,
        ),
        // ... and a valid trace that was not imported is the wrong input, not an invalid one.
        (
            vec![
                "export".into(),
                "traces/hatf-le32.mtf".into(),
                "-o".into(),
                d("x.txt"),
            ],
            2,
        ),
    ];
    let mut cases = cases;
    // A ZIP export is written through a temporary file in the output's folder.
    cases.push((
        vec![
            "export".into(),
            "traces/jvm_trace.mtf".into(),
            "-o".into(),
            into("a.zip"),
        ],
        2,
    ));
    // A folder that exists but cannot be written (`/sys` refuses even root), for a ZIP as for
    // plain text.
    if std::path::Path::new("/sys/kernel").is_dir() {
        for (t, name) in [
            ("jvm_trace", "a.zip"),
            ("et3", "a.txt"),
            ("android", "a.txt"),
        ] {
            let args = vec![
                "export".into(),
                format!("traces/{t}.mtf"),
                "-o".into(),
                format!("/sys/{name}"),
            ];
            cases.push((args, 2));
        }
    }
    for (args, want) in cases {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = util::mtf(&a);
        let err = util::text(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(want),
            "mtf {}: {err}",
            args.join(" ")
        );
        if !err.is_empty() {
            // Every error line is in the one style: a code, then `× message`.
            assert!(
                err.contains("mtf::") && err.contains('×'),
                "mtf {}: {err}",
                args.join(" ")
            );
            assert!(
                !err.starts_with("error:") && !err.contains("\nmtf: "),
                "{err}"
            );
        }
    }
}

/// docs/text-format.md's first example is what `mtf dump` prints for the trace it packs into.
#[test]
fn the_text_format_example_is_what_dump_prints() {
    let doc = std::fs::read_to_string(util::root().join("docs/text-format.md")).unwrap();
    let start = doc.find("```\n%mtf").expect("the example") + "```\n".len();
    let example = &doc[start..start + doc[start..].find("```").unwrap()];
    let dir = util::tempdir();
    let t = dir.path().join("t.mtf");
    let out = util::mtf_stdin(
        &["pack", "-", "-o", t.to_str().unwrap()],
        example.as_bytes(),
    );
    assert!(out.status.success(), "{}", util::text(&out.stderr));
    let dump = util::mtf(&["dump", t.to_str().unwrap()]);
    assert_eq!(util::text(&dump.stdout), example);
}

/// `dtd check` and `dtd show` count the same record types (the built-ins apart, in both).
#[test]
fn dtd_check_and_dtd_show_count_the_same_record_types() {
    for dtd in ["dtds/hatf10.dtd", "dtds/et3.dtd", "dtds/hatf10-split.dtd"] {
        let check = util::text(&util::mtf(&["dtd", "check", dtd]).stdout);
        let show = util::text(&util::mtf(&["dtd", "show", dtd]).stdout);
        let summary = |s: &str| {
            let at = s.find(" record types").expect("a count");
            let from = s[..at].rfind([' ', '(']).unwrap() + 1;
            let end = s[at..].find(" in ").unwrap() + at;
            s[from..end].to_string()
        };
        assert_eq!(summary(&check), summary(&show), "{check}\n{show}");
        assert!(summary(&check).contains("built-in"), "{check}");
        // The sum is what `dtd show` lists, one `record NAME:` each.
        let listed: std::collections::HashSet<&str> = show
            .lines()
            .filter_map(|l| l.trim().strip_prefix("record "))
            .filter_map(|l| l.split(':').next())
            .collect();
        let numbers: Vec<usize> = summary(&check)
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect();
        assert_eq!(
            numbers.iter().sum::<usize>(),
            listed.len(),
            "{check}\n{show}"
        );
    }
}

#[test]
fn a_subcommand_group_named_alone_prints_its_help_laid_out_with_status_2() {
    let out = util::mtf(&["dtd"]);
    assert_eq!(out.status.code(), Some(2));
    let err = util::text(&out.stderr);
    assert!(err.contains("\nCommands:\n  check "), "{err}");
    assert!(err.contains("\nExit status: "), "{err}");
}
