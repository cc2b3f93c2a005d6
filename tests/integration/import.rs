//! `mtf import` / `mtf export`: every fixture of `tests/data/import/` is imported, checked,
//! exported and compared byte for byte (ZIPs entry by entry); a user's mapping works without
//! code; errors name their position; random lines round-trip; the real samples of
//! `../shared/data` round-trip when that folder exists.

use std::io::Read;
use std::path::{Path, PathBuf};

use metatf::container::{ByteOrder, Class, Trace};
use metatf::encode::TraceWriter;
use metatf::import::records::Container;
use metatf::import::source::TraceSource;
use metatf::import::{export, origin, shipped, Importer, Target};
use proptest::prelude::*;

use crate::util::{self, mtf, text};

fn data(rel: &str) -> String {
    format!("tests/data/import/{rel}")
}

/// The entries of a ZIP file: (name, bytes), in order.
fn zip_entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut z = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..z.len())
        .map(|i| {
            let mut e = z.by_index(i).unwrap();
            let mut b = Vec::new();
            e.read_to_end(&mut b).unwrap();
            (e.name().to_string(), b)
        })
        .collect()
}

/// Import `inputs` (with `from` if given), check, export; compare each output with its input.
/// Returns the import's standard error.
fn round_trip(from: Option<&str>, inputs: &[&str]) -> String {
    let dir = util::tempdir();
    let trace = dir.path().join("t.mtf");
    let mut args = vec!["import"];
    if let Some(f) = from {
        args.extend(["--from", f]);
    }
    args.extend(inputs.iter().copied());
    args.extend(["-o", trace.to_str().unwrap()]);
    let out = mtf(&args);
    let err = text(&out.stderr);
    assert!(out.status.success(), "import {inputs:?}: {err}");
    let check = mtf(&["check", "-q", "--no-semantic", trace.to_str().unwrap()]);
    assert!(
        check.status.success(),
        "check {inputs:?}: {}",
        text(&check.stdout)
    );
    let back = dir
        .path()
        .join(if inputs.len() > 1 { "out" } else { "out.file" });
    let out = mtf(&[
        "export",
        trace.to_str().unwrap(),
        "-o",
        back.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "export {inputs:?}: {}",
        text(&out.stderr)
    );
    for input in inputs {
        let orig = util::root().join(input);
        let got = if inputs.len() > 1 {
            back.join(orig.file_name().unwrap())
        } else {
            back.clone()
        };
        if metatf::import::zipio::is_zip(&orig) {
            assert_eq!(
                zip_entries(&got),
                zip_entries(&orig),
                "{input}: ZIP entries differ"
            );
        } else {
            let (a, b) = (std::fs::read(&got).unwrap(), std::fs::read(&orig).unwrap());
            assert!(a == b, "{input}: export differs from the input");
        }
    }
    err
}

fn raw_count(stderr: &str) -> u64 {
    let s = stderr.split(" kept as raw lines").next().unwrap();
    s.rsplit(", ").next().unwrap().trim().parse().unwrap()
}

#[test]
fn every_fixture_round_trips_byte_for_byte() {
    // (format, inputs, lines kept raw)
    let cases: &[(&str, &[&str], u64)] = &[
        ("et_merlin", &["et_merlin/odd.txt"], 7),
        ("et_merlin", &["et_merlin/crlf.txt"], 0),
        ("et_merlin", &["et_merlin/empty.txt"], 0),
        ("et_merlin", &["et_merlin/noeol-raw.txt"], 1),
        ("et3", &["et3/trace"], 1),
        (
            "et3",
            &[
                "et3/trace",
                "et3/classes.txt",
                "et3/methods.txt",
                "et3/fields.txt",
            ],
            1,
        ),
        ("et3", &["et2/trace"], 0),
        ("jvm_trace", &["jvm/run.zip"], 1),
        ("jvm_trace", &["jvm/trace.txt"], 1),
        ("tptp", &["tptp/trace.xml"], 2),
        ("tptp", &["tptp/two.trcxml"], 4),
    ];
    for (format, inputs, raw) in cases {
        let inputs: Vec<String> = inputs.iter().map(|i| data(i)).collect();
        let refs: Vec<&str> = inputs.iter().map(|s| s.as_str()).collect();
        let err = round_trip(Some(format), &refs);
        assert_eq!(raw_count(&err), *raw, "{inputs:?}: {err}");
        if *raw > 0 {
            assert!(err.contains("raw lines at: "), "{err}");
        }
    }
}

#[test]
fn the_format_is_detected_from_the_content() {
    for (input, format) in [
        ("et_merlin/odd.txt", "et_merlin"),
        ("et3/trace", "et3"),
        ("jvm/run.zip", "jvm_trace"),
        ("tptp/trace.xml", "tptp"),
        ("tptp/two.trcxml", "tptp"),
    ] {
        let err = round_trip(None, &[&data(input)]);
        assert!(
            err.contains(&format!("detected format {format} (")),
            "{input}: {err}"
        );
    }
}

#[test]
fn raw_lines_are_reported_with_their_positions() {
    let err = round_trip(Some("et_merlin"), &[&data("et_merlin/odd.txt")]);
    assert!(err.contains("odd.txt:15:1, "), "{err}");
    let err = round_trip(Some("tptp"), &[&data("tptp/trace.xml")]);
    assert!(err.contains("trace.xml:3:1841"), "{err}");
}

#[test]
fn user_mapping_round_trips_and_dumps_with_its_dtd() {
    let dir = util::tempdir();
    let trace = dir.path().join("run.mtf");
    let t = trace.to_str().unwrap();
    let map = data("user/allocs.map");
    let out = mtf(&["import", "--map", &map, &data("user/run.log"), "-o", t]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(raw_count(&err), 3, "{err}");
    let dtd = data("user/allocs.dtd");
    let dump = mtf(&["dump", "--dtd", &dtd, t]);
    let d = text(&dump.stdout);
    assert!(
        d.contains(r#"alloc ptr=0x7f3a10 size=32 sited=1 site=@0:"main.c:10""#),
        "{d}"
    );
    assert!(d.contains("banner version=2"), "{d}");
    let back = dir.path().join("run.log");
    let out = mtf(&["export", "--dtd", &dtd, t, "-o", back.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(&back).unwrap(),
        std::fs::read(util::root().join(data("user/run.log"))).unwrap()
    );
    // Standard output works too.
    let out = mtf(&["export", "--dtd", &dtd, t, "-o", "-"]);
    assert_eq!(
        out.stdout,
        std::fs::read(util::root().join(data("user/run.log"))).unwrap()
    );
}

#[test]
fn mapping_errors_name_file_line_and_column() {
    let dir = util::tempdir();
    let map = dir.path().join("bad.map");
    std::fs::write(
        &map,
        "format bad\ndtd allocs.dtd\npart p section events\nrecord free 'free {ptr:float}'\n",
    )
    .unwrap();
    let out = mtf(&[
        "import",
        "--map",
        map.to_str().unwrap(),
        &data("user/run.log"),
        "-o",
        dir.path().join("x.mtf").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("bad.map:4:19: unknown token type `float`"),
        "{err}"
    );
    assert!(!dir.path().join("x.mtf").exists());
}

#[test]
fn input_errors_name_the_file() {
    let dir = util::tempdir();
    let bad = dir.path().join("broken.zip");
    std::fs::write(&bad, b"PK\x03\x04 this is not really a zip").unwrap();
    let out = mtf(&[
        "import",
        "--from",
        "jvm_trace",
        bad.to_str().unwrap(),
        "-o",
        dir.path().join("x.mtf").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("broken.zip: not a readable ZIP file"), "{err}");
    let out = mtf(&[
        "import",
        "--from",
        "nope",
        &data("et3/trace"),
        "-o",
        dir.path().join("x.mtf").to_str().unwrap(),
    ]);
    assert!(text(&out.stderr).contains("unknown format `nope`"));
}

#[test]
fn list_names_every_shipped_format() {
    let out = mtf(&["import", "--list"]);
    assert!(out.status.success());
    let s = text(&out.stdout);
    for (file, m) in shipped::all() {
        assert!(
            s.contains(&m.name) && s.contains(&m.dtd) && s.contains(file),
            "{s}"
        );
    }
}

/// The sample traces in `traces/` are the imports of fixtures (regenerate with MTF_BLESS=1).
#[test]
fn sample_traces_are_imports_of_the_fixtures() {
    let samples: &[(&str, &str, &[&str])] = &[
        ("traces/et_merlin.mtf", "et_merlin", &["et_merlin/odd.txt"]),
        (
            "traces/et3.mtf",
            "et3",
            &[
                "et3/trace",
                "et3/classes.txt",
                "et3/methods.txt",
                "et3/fields.txt",
            ],
        ),
        ("traces/jvm_trace.mtf", "jvm_trace", &["jvm/run.zip"]),
        ("traces/tptp.mtf", "tptp", &["tptp/trace.xml"]),
        (
            "traces/android.mtf",
            "android",
            &["alloc/android-systemui.txt"],
        ),
        (
            "traces/android-timed.mtf",
            "android",
            &["alloc/android-timed.txt"],
        ),
        (
            "traces/valgrind.mtf",
            "valgrind",
            &["alloc/valgrind-odd.vg"],
        ),
        ("traces/mtrace.mtf", "mtrace", &["alloc/mtrace-odd.mtrace"]),
        (
            "traces/malloclab.mtf",
            "malloclab",
            &["alloc/malloclab-2002.rep"],
        ),
        (
            "traces/heaptrack.mtf",
            "heaptrack",
            &["alloc/heaptrack-v2.txt"],
        ),
    ];
    let dir = util::tempdir();
    for (target, format, inputs) in samples {
        let t = dir.path().join("t.mtf");
        let inputs: Vec<String> = inputs.iter().map(|i| data(i)).collect();
        let mut args = vec!["import", "--from", format];
        args.extend(inputs.iter().map(|s| s.as_str()));
        args.extend(["-o", t.to_str().unwrap()]);
        let out = mtf(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let made = std::fs::read(&t).unwrap();
        let path = util::root().join(target);
        if std::env::var_os("MTF_BLESS").is_some_and(|v| v == "1") {
            std::fs::write(&path, &made).unwrap();
        }
        let committed = std::fs::read(&path).unwrap_or_else(|_| {
            panic!("{target} missing; run MTF_BLESS=1 cargo test --test integration import")
        });
        assert!(
            committed == made,
            "{target} is stale; regenerate with MTF_BLESS=1"
        );
        let dump = mtf(&["dump", target]);
        assert!(dump.status.success(), "{target}: {}", text(&dump.stderr));
    }
}

/// The real samples in `../shared/data` (not part of the repository).
#[test]
#[ignore = "reads the real samples in ../shared/data, which a clone does not have: cargo test -- --ignored"]
fn shared_samples_round_trip() {
    let shared = util::root().join("../shared/data");
    if !shared.is_dir() {
        eprintln!("skipped: {} is absent", shared.display());
        return;
    }
    let mut n = 0;
    for prog in ["HelloWorld", "LotsOfAllocs", "SimpleTrace"] {
        for t in ["trace", "trace_with_deaths", "trace_reordered"] {
            let p = shared.join("et3").join(prog).join(t);
            if p.is_file() {
                let err = round_trip(Some("et3"), &[p.to_str().unwrap()]);
                assert_eq!(raw_count(&err), 0, "{}: {err}", p.display());
                n += 1;
            }
        }
    }
    let st = shared.join("et3/SimpleTrace");
    if st.join("classes.txt").is_file() {
        let files: Vec<PathBuf> = [
            "trace_with_deaths",
            "classes.txt",
            "methods.txt",
            "fields.txt",
        ]
        .iter()
        .map(|f| st.join(f))
        .collect();
        let refs: Vec<&str> = files.iter().map(|p| p.to_str().unwrap()).collect();
        let err = round_trip(Some("et3"), &refs);
        assert_eq!(raw_count(&err), 0, "{err}");
        n += 1;
    }
    let tptp = shared.join("tptp/statechum_1.trcxml");
    if tptp.is_file() {
        let err = round_trip(None, &[tptp.to_str().unwrap()]);
        assert!(err.contains("detected format tptp"), "{err}");
        assert_eq!(raw_count(&err), 0, "{err}");
        n += 1;
    }
    assert!(n > 0, "no sample found under {}", shared.display());
}

// ---- property test: random lines of a mapped format round-trip through the library API ----

fn import_export(format: &str, input: &[u8]) -> (Vec<u8>, u64) {
    let m = shipped::by_name(format).unwrap();
    let text = metatf::container::shipped_dtd(&m.dtd).unwrap();
    let schema = metatf::dtd::parse_str(&m.dtd, text).unwrap().schema;
    let w = TraceWriter::in_memory(&schema, Class::Bits64, ByteOrder::Little, &m.dtd);
    let mut imp = Importer::new(&m, w, &schema, Container::Plain, 1).unwrap();
    imp.keep_unmatched(true);
    imp.import_stream("input", "trace", input, 0).unwrap();
    let (writer, rep) = imp.finish().unwrap();
    let bytes = writer.finish_to_vec().unwrap();
    let trace = Trace::from_bytes(bytes).unwrap();
    let src = TraceSource::new(&trace, &schema);
    let org = origin(&src).unwrap();
    let dir = util::tempdir();
    let out = dir.path().join("out");
    export(&src, &m, &org, Target::Path(out.clone())).unwrap();
    (std::fs::read(out).unwrap(), rep.raw)
}

fn et_line() -> impl Strategy<Value = Vec<u8>> {
    let num = prop_oneof![
        0u64..10,
        0u64..100_000,
        any::<u32>().prop_map(u64::from),
        any::<u64>()
    ];
    let junk = proptest::collection::vec(
        prop_oneof![
            Just(b' '),
            Just(b'#'),
            Just(b'0'),
            Just(b'\r'),
            Just(b'\t'),
            0x20u8..0x7f,
            any::<u8>()
        ],
        0..12,
    );
    prop_oneof![
        (
            prop::sample::select(vec!["N", "A", "U", "T", "H", "X", "M", "E", "D"]),
            proptest::collection::vec(num, 2..7)
        )
            .prop_map(|(k, ns)| {
                let mut s = k.to_string();
                for n in ns {
                    s.push(' ');
                    s.push_str(&n.to_string());
                }
                s.into_bytes()
            }),
        junk.prop_filter("no newline", |j| !j.contains(&b'\n')),
        Just(b"#comment".to_vec()),
        Just(Vec::new()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn random_lines_round_trip(
        lines in proptest::collection::vec((et_line(), prop::bool::weighted(0.9)), 0..40),
        final_eol in any::<bool>(),
        crlf in any::<bool>(),
    ) {
        let mut input = Vec::new();
        for (i, (l, lf)) in lines.iter().enumerate() {
            input.extend_from_slice(l);
            let last = i + 1 == lines.len();
            if last && !final_eol {
                break;
            }
            input.extend_from_slice(if crlf == *lf { b"\r\n" } else { b"\n" });
        }
        for format in ["et_merlin", "et3"] {
            let (out, _) = import_export(format, &input);
            prop_assert_eq!(&out, &input);
        }
    }
}

fn xml_value() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('a'),
            Just(' '),
            Just('>'),
            Just('='),
            Just('/'),
            Just('é'),
            Just('&'),
            Just('\'')
        ],
        0..8,
    )
    .prop_map(|v| v.into_iter().collect())
}

fn xml_unit() -> impl Strategy<Value = String> {
    let n = prop_oneof![0u64..10, any::<u32>().prop_map(u64::from), any::<u64>()];
    let ns = prop_oneof![0u64..1_000_000_000, Just(5u64)];
    prop_oneof![
        (n.clone(), any::<u32>(), ns.clone(), n.clone(), n.clone(), n.clone(), 0u64..300).prop_map(|(t, s, ns, m, c, k, d)| format!(
            r#"<methodEntry threadIdRef="{t}" time="{s}.{ns:09}" methodIdRef="{m}" classIdRef="{c}" ticket="{k}" stackDepth="{d}"/>"#
        )),
        (n.clone(), n.clone(), any::<u32>(), ns.clone(), any::<u16>(), ns).prop_map(|(t, m, s, ns, o, ons)| format!(
            r#"<methodExit threadIdRef="{t}" methodIdRef="{m}" classIdRef="1" ticket="2" time="{s}.{ns:09}" overhead="{o}.{ons:09}"/>"#
        )),
        (xml_value(), xml_value()).prop_map(|(k, v)| format!(r#"<option key="{k}" value="{v}"/>"#)),
        (xml_value(), any::<i32>(), n).prop_map(|(name, l, m)| format!(
            r#"<methodDef name="{name}" signature="()V" startLineNumber="{l}" endLineNumber="-1" methodId="{m}" classIdRef="3"/>"#
        )),
        Just("\n".to_string()),
        Just("<TRACE>".to_string()),
        Just("</TRACE>".to_string()),
        Just(r#"<?xml version="1.0"?>"#.to_string()),
        Just(r#"<option value="x" key="y"/>"#.to_string()),
        Just(r#"<option  key="x" value="y"/>"#.to_string()),
        Just(r#"<methodEntry threadIdRef="01" time="1.5" methodIdRef="1" classIdRef="1" ticket="1" stackDepth="1"/>"#.to_string()),
        Just("<!-- a > b -->".to_string()),
        xml_value().prop_map(|t| t.replace(['<', '>'], "")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn random_xml_units_round_trip(units in proptest::collection::vec(xml_unit(), 0..30)) {
        let input = units.concat().into_bytes();
        let (out, _) = import_export("tptp", &input);
        prop_assert_eq!(out, input);
    }
}

/// A mapping can send a record type to a section of its own (`record R section S '…'`), and
/// `ref F=S` turns a 1-based index of those records into a `sectionOffset`; export interleaves
/// the routed records with the others again, byte for byte (CRLF, raw lines, a routed last
/// line without a line end).
#[test]
fn routed_records_go_to_their_section_and_come_back_in_order() {
    let dir = util::tempdir();
    let dtd = "tag.width = 1;\ninclude import;\n\
n.width = 4; n.interpretation = none;\n\
id.width = 4; id.interpretation = none;\n\
section main 1 { ev : (tag, n) { tag.value = 4; } }\n\
section nodes 2 {\n\
    root : (tag, id) { tag.value = 4; }\n\
    child : (tag, id, parent) { tag.value = 5; parent.width = 2; parent.interpretation = sectionOffset nodes; }\n\
}\n";
    std::fs::write(dir.path().join("tree.dtd"), dtd).unwrap();
    let map = dir.path().join("tree.map");
    std::fs::write(
        &map,
        "format tree\ndtd tree.dtd\npart log section main\nrecord ev 'ev {n:dec}'\n\
record root section nodes 'node {id:dec} 0'\n\
record child section nodes 'node {id:dec} {parent:dec}' ref parent=nodes\n",
    )
    .unwrap();
    let input = b"# tree\r\nnode 1 0\r\nev 5\r\nnode 2 1\r\nnode 3 9\r\nNODE x\r\nev 6\r\nnode 4 2\r\nnode 5 1";
    let log = dir.path().join("run.log");
    std::fs::write(&log, input).unwrap();
    let t = dir.path().join("run.mtf");
    let (map, log, t) = (
        map.to_str().unwrap(),
        log.to_str().unwrap(),
        t.to_str().unwrap(),
    );
    let out = mtf(&["import", "--map", map, log, "-o", t]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    // `# tree`, `NODE x` and `node 3 9` (no 9th node yet) are raw.
    assert_eq!(raw_count(&err), 3, "{err}");
    let out = mtf(&["check", t]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let d = mtf(&["dump", "-s", "nodes", t]);
    let d = text(&d.stdout);
    let nodes: Vec<&str> = d
        .lines()
        .filter(|l| l.starts_with("root") || l.starts_with("child"))
        .collect();
    // root 5 bytes, child 7: node 2 at 5, node 4 at 12 points at node 2, node 5 at node 1.
    assert_eq!(nodes.len(), 4, "{d}");
    assert!(nodes[0].starts_with("root id=1"), "{d}");
    assert!(nodes[1].starts_with("child id=2 parent=@0:"), "{d}");
    assert!(nodes[2].starts_with("child id=4 parent=@5:"), "{d}");
    assert!(nodes[3].starts_with("child id=5 parent=@0:"), "{d}");
    let d = mtf(&["dump", "-s", "main", t]);
    let d = text(&d.stdout);
    assert!(!d.contains("root") && !d.contains("child"), "{d}");
    let out = mtf(&["export", t, "-o", "-"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(out.stdout, input.to_vec());
}

/// A trace made before ZIP entry metadata was recorded (`import_origin.version` 1, no
/// `import_entry` records; `tests/data/import/v1/jvm_trace.mtf` is the import of
/// `jvm/run.zip` by that version) still exports, with the same entries and contents.
#[test]
fn a_version_1_import_still_exports() {
    let dir = util::tempdir();
    let out = dir.path().join("back.zip");
    let r = mtf(&[
        "export",
        &data("v1/jvm_trace.mtf"),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert_eq!(
        zip_entries(&out),
        zip_entries(&util::root().join(data("jvm/run.zip")))
    );
}

/// The worked example of docs/mappings.md prints exactly what the document shows, every line
/// (standard error included), run in a folder holding the example's three files.
#[test]
fn the_worked_example_of_mappings_md_prints_what_it_shows() {
    let doc = std::fs::read_to_string(util::root().join("docs/mappings.md")).unwrap();
    let at = doc
        .find("Then, in a folder holding the three files")
        .unwrap();
    let block = doc[at..].split("```\n").nth(1).unwrap();
    let dir = util::tempdir();
    for f in ["run.log", "allocs.map", "allocs.dtd"] {
        std::fs::copy(
            util::root().join(data(&format!("user/{f}"))),
            dir.path().join(f),
        )
        .unwrap();
    }
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    for line in block.lines() {
        match line.strip_prefix("$ ") {
            Some(cmd) => steps.push((cmd.to_string(), Vec::new())),
            None => steps.last_mut().unwrap().1.push(line.to_string()),
        }
    }
    assert_eq!(steps.len(), 3, "{block}");
    for (cmd, want) in steps {
        let (cmd, sed) = match cmd.split_once(" | sed -n ") {
            Some((c, range)) => {
                let (a, b) = range.trim_end_matches('p').split_once(',').unwrap();
                (
                    c.to_string(),
                    Some((a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap())),
                )
            }
            None => (cmd, None),
        };
        let (cmd, cmp) = match cmd.split_once(" && cmp ") {
            Some((c, files)) => (c.to_string(), Some(files.to_string())),
            None => (cmd, None),
        };
        let args: Vec<&str> = cmd.split_whitespace().skip(1).collect();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{cmd}: {}", text(&out.stderr));
        let mut got: Vec<String> = text(&out.stderr).lines().map(String::from).collect();
        let stdout: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
        match sed {
            Some((a, b)) => got.extend(stdout[a - 1..b].iter().cloned()),
            None => got.extend(stdout),
        }
        assert_eq!(got, want, "{cmd}");
        if let Some(files) = cmp {
            let (x, y) = files.split_once(' ').unwrap();
            assert_eq!(
                std::fs::read(dir.path().join(x)).unwrap(),
                std::fs::read(dir.path().join(y)).unwrap(),
                "{files}"
            );
        }
    }
}

#[test]
fn quiet_import_and_export_print_nothing_but_write_the_same() {
    let dir = util::tempdir();
    let input = data("et3/trace");
    for quiet in [false, true] {
        let trace = dir.path().join(format!("t{quiet}.mtf"));
        let back = dir.path().join(format!("back{quiet}.txt"));
        let q: &[&str] = if quiet { &["-q"] } else { &[] };
        let imp = mtf(&[q, &["import", &input, "-o", trace.to_str().unwrap()]].concat());
        assert!(imp.status.success(), "{}", text(&imp.stderr));
        let exp = mtf(&[
            q,
            &[
                "export",
                trace.to_str().unwrap(),
                "-o",
                back.to_str().unwrap(),
            ],
        ]
        .concat());
        assert!(exp.status.success(), "{}", text(&exp.stderr));
        assert_eq!(
            std::fs::read(&back).unwrap(),
            std::fs::read(crate::util::root().join(&input)).unwrap()
        );
        // `pack` likewise (its summary: records and bytes written).
        let dumped = dir.path().join(format!("d{quiet}.txt"));
        let dump = mtf(&["dump", trace.to_str().unwrap()]);
        std::fs::write(&dumped, &dump.stdout).unwrap();
        let packed = dir.path().join(format!("p{quiet}.mtf"));
        let pack = mtf(&[
            q,
            &[
                "pack",
                dumped.to_str().unwrap(),
                "-o",
                packed.to_str().unwrap(),
            ],
        ]
        .concat());
        assert!(pack.status.success(), "{}", text(&pack.stderr));
        assert_eq!(
            std::fs::read(&packed).unwrap(),
            std::fs::read(&trace).unwrap()
        );
        // Without -q the summaries are said (the format detected, what was written); with it,
        // nothing.
        let said = format!(
            "{}{}{}",
            text(&imp.stderr),
            text(&exp.stderr),
            text(&pack.stderr)
        );
        if quiet {
            assert_eq!(said, "", "-q");
        } else {
            assert!(said.contains("detected format et3"), "{said}");
            assert!(
                said.contains("imported ")
                    && said.contains("exported ")
                    && said.contains(" records, "),
                "{said}"
            );
        }
    }
}
