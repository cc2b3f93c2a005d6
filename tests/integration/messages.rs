//! Messages that say what happened (issue reproductions, one test each).

use crate::util;

const HEAD: &str = "%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection 1\n";

fn pack_error(line: &str) -> String {
    let text = format!("{HEAD}{line}\n");
    let (out, path, _dir) = util::pack_stdin("dtds/hatf10.dtd", text.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    assert!(!path.exists());
    util::text(&out.stderr)
}

#[test]
fn a_duplicate_key_is_named_as_a_duplicate() {
    let e = pack_error("alloc size=1 size=2 address=5 vfield.data=\"\"");
    assert!(
        e.contains("-:3:14: alloc.size: field `size` is given twice"),
        "{e}"
    );
}

#[test]
fn a_negative_value_is_shown_as_written() {
    let e = pack_error("alloc size=-1 address=5 vfield.data=\"\"");
    assert!(e.contains("value -1 does not fit in 4 byte(s)"), "{e}");
    assert!(!e.contains("18446744073709551615"), "{e}");
}

#[test]
fn a_missing_key_says_the_field_needs_a_value() {
    let e = pack_error("alloc size=1 vfield.data=\"\"");
    assert!(
        e.contains("alloc.address: no value given; the field's interpretation none needs one"),
        "{e}"
    );
}

#[test]
fn one_element_is_not_plural() {
    let e = metatf::decode::RefError::BadIndex {
        section: 2,
        index: 1,
        count: 1,
    };
    assert_eq!(
        e.to_string(),
        "sectionStride element 1 is outside section 2 (1 element)"
    );
}

#[test]
fn a_section_named_global_is_selected_by_its_name() {
    let dir = util::tempdir();
    let dtd = dir.path().join("g.dtd");
    std::fs::write(
        &dtd,
        "section global 7 { r : (tag, v) { tag.value = 4; v.width = 1; v.interpretation = none; } }",
    )
    .unwrap();
    let trace = dir.path().join("g.mtf");
    let text = "%mtf 1 dtd=\"g.dtd\" class=32 order=little\ncomment vfield.data=\"top\"\nsection global\nr v=3\n";
    let out = util::mtf_stdin(
        &[
            "pack",
            "--dtd",
            dtd.to_str().unwrap(),
            "-",
            "-o",
            trace.to_str().unwrap(),
        ],
        text.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stderr));
    let t = trace.to_str().unwrap();
    let out = util::mtf(&["dump", "--section", "global", t]);
    let d = util::text(&out.stdout);
    assert!(d.contains("r v=3") && !d.contains("comment"), "{d}");
    // The global region is still `0`.
    let out = util::mtf(&["dump", "--section", "0", t]);
    let d = util::text(&out.stdout);
    assert!(d.contains("comment") && !d.contains("r v=3"), "{d}");
}

#[test]
fn trace_errors_name_the_file_once() {
    let mut bytes = std::fs::read(util::root().join("traces/hatf-le32.mtf")).unwrap();
    bytes[0] = b'X';
    let dir = util::tempdir();
    let p = dir.path().join("bad.mtf");
    std::fs::write(&p, &bytes).unwrap();
    let out = util::mtf(&["check", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let e = util::text(&out.stderr);
    assert_eq!(e.matches("bad.mtf").count(), 1, "{e}");
}

/// Regression: `mtf import --list > /dev/full` panicked (exit 101) in `println!`.
#[cfg(unix)]
#[test]
fn a_full_stdout_is_an_io_error_not_a_panic() {
    for args in [
        &["import", "--list"][..],
        &["size-report", "traces/hatf-le32.mtf"][..],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
            .args(args)
            .current_dir(util::root())
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            util::text(&out.stderr)
        );
        assert!(
            util::text(&out.stderr).contains("No space left"),
            "{args:?}"
        );
    }
}

/// `mtf dump in.txt`, edited, then `mtf pack in.txt -o in.txt` destroyed the text: refused now.
#[test]
fn pack_refuses_to_overwrite_its_input() {
    let dir = util::tempdir();
    let p = dir.path().join("in.txt");
    let text = util::mtf(&["dump", "traces/hatf-le32.mtf"]).stdout;
    std::fs::write(&p, &text).unwrap();
    let s = p.to_str().unwrap();
    let out = util::mtf(&["pack", s, "-o", s]);
    assert_eq!(out.status.code(), Some(2));
    assert!(util::text(&out.stderr).contains("mtf::io::overwrites_input"));
    assert_eq!(std::fs::read(&p).unwrap(), text);
}

/// Export's errors say what happened: an unknown format is a usage error whatever the trace,
/// and a full output is an I/O error naming the output.
#[cfg(all(unix, feature = "import"))]
#[test]
fn export_errors_have_their_own_exit_status() {
    let out = util::mtf(&["export", "--to", "csv", "traces/hatf-le32.mtf", "-o", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(util::text(&out.stderr).contains("unknown format `csv`"));
    let out = util::mtf(&["export", "traces/et3.mtf", "-o", "/dev/full"]);
    assert_eq!(out.status.code(), Some(2), "{}", util::text(&out.stderr));
    assert!(util::text(&out.stderr).contains("cannot write /dev/full"));
}

#[test]
fn a_misspelt_interpretation_with_an_argument_gets_the_same_help_as_without() {
    let base = std::fs::read_to_string(crate::util::root().join("dtds/hatf10.dtd")).unwrap();
    let mut messages = Vec::new();
    for typo in ["defualt 0", "defualt", "Default 0", "stide 4 1"] {
        let text = base.replace(
            "time.interpretation = default 0;",
            &format!("time.interpretation = {typo};"),
        );
        let e = metatf::dtd::parse_str("t.dtd", &text).unwrap_err();
        let msg = metatf::dtd::render_plain(&e);
        assert!(msg.contains("mtf::dtd::bad_property"), "{typo}: {msg}");
        assert!(msg.contains("one of: none, default V"), "{typo}: {msg}");
        assert!(msg.contains("did you mean"), "{typo}: {msg}");
        assert!(!msg.contains("expected `.value`"), "{typo}: {msg}");
        messages.push(
            msg.lines()
                .find(|l| l.contains('×') && l.contains("expects"))
                .map(str::to_string),
        );
    }
    assert_eq!(messages[0], messages[1], "with and without the argument");
    // A known keyword with a bad argument is still a syntax error at the argument.
    let text = base.replace(
        "time.interpretation = default 0;",
        "time.interpretation = default x;",
    );
    let msg = metatf::dtd::render_plain(&metatf::dtd::parse_str("t.dtd", &text).unwrap_err());
    assert!(msg.contains("an integer argument"), "{msg}");
}

#[test]
fn an_unused_liveset_out_of_range_is_refused_like_an_unused_live_0() {
    let head = "tag.width = 1;\n";
    let tail =
        "section s 1 {\n r: (tag, a) { tag.value = 4; a.width = 1; a.interpretation = none; }\n}\n";
    for (line, code) in [
        ("x.liveset = 17;", "mtf::dtd::bad_property"),
        ("x.liveset = 16 + 1;", "mtf::dtd::bad_property"),
        ("x.interpretation = live 0;", "mtf::dtd::bad_interpretation"),
    ] {
        let text = format!("{head}{line}\n{tail}");
        let e = metatf::dtd::parse_str("t.dtd", &text).unwrap_err();
        let msg = metatf::dtd::render_plain(&e);
        assert!(msg.contains(code), "{line}: {msg}");
        assert_eq!(
            msg.matches("outside").count(),
            1,
            "{line}: reported once: {msg}"
        );
    }
    for ok in ["x.liveset = 16;", "x.liveset = 0;"] {
        let text = format!("{head}{ok}\n{tail}");
        assert!(metatf::dtd::parse_str("t.dtd", &text).is_ok(), "{ok}");
    }
}

#[test]
fn jsonl_keeps_both_value_words_of_a_refused_metadata_record() {
    use metatf::container::{ByteOrder, Class, Header};
    // hatf10.dtd, section heap (1): a stride metadata record (code 6, two words 5 and 7) aimed at
    // `alloc`'s tag slot, which a reader refuses (§5.4) but decodes to its full length.
    let section = vec![2u8, 1, 3, 4, 0, 6, 5, 0, 0, 0, 7, 0, 0, 0];
    let mut t = Header::encode(
        Class::Bits32,
        ByteOrder::Little,
        "hatf10.dtd",
        2,
        0,
        &[(1, 14)],
    )
    .unwrap();
    t.extend_from_slice(&section);
    let dir = util::tempdir();
    let path = dir.path().join("refused.mtf");
    std::fs::write(&path, &t).unwrap();
    let p = path.to_str().unwrap();
    let text = util::mtf(&["dump", p]);
    assert_eq!(text.status.code(), Some(1));
    let text = util::text(&text.stdout);
    assert!(text.contains("value=5 value=7"), "{text}");
    let json = util::mtf(&["dump", "-f", "jsonl", p]);
    assert_eq!(json.status.code(), Some(1));
    let json = util::text(&json.stdout);
    let line = json.lines().find(|l| l.contains("\"metadata\"")).unwrap();
    assert!(line.contains("\"value\":[5,7]"), "{line}");
}

const JHEAD: &str = "{\"mtf\":1,\"dtd\":\"hatf10.dtd\",\"class\":32,\"order\":\"little\"}\n{\"record\":\"section\",\"section\":1,\"fields\":{\"number\":1}}\n";

fn pack_json_error(line: &str) -> String {
    let text = format!("{JHEAD}{line}\n");
    let (out, path, _dir) = util::pack_stdin("dtds/hatf10.dtd", text.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    assert!(!path.exists());
    util::text(&out.stderr)
}

#[test]
fn a_bare_word_for_a_value_says_what_a_value_is() {
    let e = pack_error("alloc size=abc address=5 vfield.data=\"\"");
    assert!(
        e.contains("-:3:7: `abc` is not a value: give a number (16, 0x10, -3)"),
        "{e}"
    );
    assert!(!e.contains("quote a string"), "{e}");
}

#[test]
fn a_json_line_error_names_the_column_of_its_key() {
    // Columns counted by hand: `{"record":"alloc","section":1,"fields":{"size":1,"sise":2,…`
    //                            1         11      19        29 31      40       50
    let e = pack_json_error(
        "{\"record\":\"alloc\",\"section\":1,\"fields\":{\"size\":1,\"sise\":2,\"address\":5,\"vfield.data\":\"\"}}",
    );
    assert!(
        e.contains("-:3:50: alloc: record `alloc` has no field `sise`"),
        "{e}"
    );
    // A value the writer refuses: at its key too (the fast reader's path).
    let e = pack_json_error(
        "{\"record\":\"alloc\",\"section\":1,\"fields\":{\"size\":-1,\"address\":5,\"vfield.data\":\"\"}}",
    );
    assert!(
        e.contains("-:3:41: alloc.size: value -1 does not fit"),
        "{e}"
    );
}

#[test]
fn a_misspelt_json_key_is_named_not_taken_for_missing_values() {
    let e = pack_json_error("{\"record\":\"alloc\",\"section\":1,\"felds\":{\"size\":1}}");
    assert!(e.contains("-:3:31: unknown key `felds`"), "{e}");
    assert!(!e.contains("no value given"), "{e}");
    let e = pack_json_error("{\"recrd\":\"alloc\",\"fields\":{}}");
    assert!(e.contains("-:3:2: unknown key `recrd`"), "{e}");
}

#[test]
fn a_missing_dtd_file_is_an_unusable_dtd_as_one_found_nowhere() {
    let out = util::mtf(&["stats", "-d", "no/such/file.dtd", "traces/hatf-le32.mtf"]);
    assert_eq!(out.status.code(), Some(3), "{}", util::text(&out.stderr));
    let e = util::text(&out.stderr);
    assert!(e.contains("mtf::dtd::not_found") && e.contains("× "), "{e}");
    // A DTD file that cannot be read at all (a folder): the same status.
    let out = util::mtf(&["dump", "-d", "dtds", "traces/hatf-le32.mtf"]);
    assert_eq!(out.status.code(), Some(3), "{}", util::text(&out.stderr));
}

#[test]
fn errors_of_every_subcommand_have_a_code_and_a_cross() {
    let cases: [&[&str]; 5] = [
        &["diff", "-", "-"],
        &["plot", "traces/hatf-le32.mtf", "-o", "x.gif"],
        &["simulate", "-p", "worst-fit", "traces/android.mtf"],
        &["simulate", "--align", "3", "traces/android.mtf"],
        &["replay", "-a", "nosuch", "traces/android.mtf"],
    ];
    for args in cases {
        let out = util::mtf(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let e = util::text(&out.stderr);
        let mut lines = e.lines();
        assert!(
            lines.next().is_some_and(|l| l.starts_with("mtf::")),
            "{args:?}: {e}"
        );
        assert!(e.contains("  × "), "{args:?}: {e}");
    }
}

#[test]
fn man_pages_are_written_for_visible_subcommands_only() {
    let dir = util::tempdir();
    let out = util::mtf(&["man", "-d", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(dir.path().join("mtf-dump.1").is_file());
    assert!(!dir.path().join("mtf-replay-child.1").exists());
}

#[test]
fn import_list_says_no_seed_numbers() {
    let out = util::mtf(&["import", "--list"]);
    assert_eq!(out.status.code(), Some(0));
    let t = util::text(&out.stdout);
    assert!(t.contains("JVM execution trace"), "{t}");
    assert!(!t.contains("seed"), "{t}");
}

#[test]
fn dump_data_only_leaves_out_the_import_bookkeeping() {
    let out = util::mtf(&["dump", "--data-only", "traces/android.mtf"]);
    assert_eq!(out.status.code(), Some(0));
    let t = util::text(&out.stdout);
    assert!(!t.contains("import_"), "{}", &t[..t.len().min(2000)]);
    assert!(
        t.lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("alloc ") || l.starts_with("free ")),
        "{}",
        &t[..t.len().min(500)]
    );
    // Without --data-only they are there, so that the dump packs back.
    let out = util::mtf(&["dump", "traces/android.mtf"]);
    assert!(util::text(&out.stdout).contains("import_origin "));
}

#[test]
fn stats_with_another_formats_dtd_warns() {
    let out = util::mtf(&["stats", "-d", "dtds/et3.dtd", "traces/android.mtf"]);
    assert_eq!(out.status.code(), Some(0));
    let e = util::text(&out.stderr);
    assert!(
        e.contains("mtf::dtd::other")
            && e.contains("names the DTD hatf-android.dtd, but --dtd gave et3.dtd"),
        "{e}"
    );
    // The DTD the header names, given with --dtd: nothing to say.
    let out = util::mtf(&["stats", "-d", "dtds/hatf-android.dtd", "traces/android.mtf"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        util::text(&out.stderr).is_empty(),
        "{}",
        util::text(&out.stderr)
    );
}

#[test]
fn a_text_trace_is_recognised_and_import_suggested() {
    let dir = util::tempdir();
    // An Android memory_replay trace, as systemui.txt starts.
    let txt = dir.path().join("sysui.txt");
    std::fs::write(&txt, "202: malloc 0xb4827400 1024\n202: free 0xb4827400\n").unwrap();
    let out = util::mtf(&["stats", txt.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let e = util::text(&out.stderr);
    assert!(
        e.contains("bad magic 32 30 32 3A (\"202:\") at offset 0"),
        "{e}"
    );
    assert!(e.contains("this looks like a text trace"), "{e}");
    assert!(e.contains(" -o sysui.mtf`"), "{e}");
    assert!(e.contains("`mtf import "), "{e}");
    // The text form of a dump, from standard input: `pack` it.
    let out = util::mtf_stdin(
        &["info", "-"],
        b"%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\n",
    );
    let e = util::text(&out.stderr);
    assert!(e.contains("`mtf pack - -o trace.mtf`"), "{e}");
    // Bytes that are not text get no such advice.
    let bin = dir.path().join("b.bin");
    std::fs::write(&bin, [0x01u8, 0xFE, 0x80, 0x00, 9, 9]).unwrap();
    let out = util::mtf(&["info", bin.to_str().unwrap()]);
    let e = util::text(&out.stderr);
    assert!(e.contains("bad magic 01 FE 80 00 at"), "{e}");
    assert!(!e.contains("mtf import") && !e.contains("help:"), "{e}");
}

// A time slice of a trace whose DTD declares no time: refused at once by dump and check (as
// stats refuses one without a clock), not an empty slice with exit status 0.
#[test]
fn a_time_slice_without_declared_time_is_refused_by_dump_and_check() {
    for cmd in ["dump", "check", "stats"] {
        let o = util::mtf(&[cmd, "traces/malloclab.mtf", "--from", "t5"]);
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        let e = util::text(&o.stderr);
        assert!(e.contains("cannot slice by time"), "{cmd}: {e}");
        assert!(
            e.contains("mtf::usage::no_clock") && e.contains('×'),
            "{cmd}: {e}"
        );
        assert!(o.stdout.is_empty() || cmd == "stats", "{cmd}");
    }
    // A trace that declares time still slices by it.
    let o = util::mtf(&["dump", "traces/et3.mtf", "--from", "t0"]);
    assert_eq!(o.status.code(), Some(0), "{}", util::text(&o.stderr));
}

// An output in a folder that exists but takes no new file (/proc) is no "missing folder".
#[cfg(target_os = "linux")]
#[test]
fn an_output_the_system_refuses_is_not_called_a_missing_folder() {
    let o = util::mtf(&["stats", "traces/android.mtf", "-o", "/proc/mtf-x"]);
    assert_eq!(o.status.code(), Some(2));
    let e = util::text(&o.stderr);
    assert!(e.contains("cannot create /proc/mtf-x"), "{e}");
    assert!(!e.contains("does not exist"), "{e}");
}
