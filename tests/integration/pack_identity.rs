//! docs/text-format.md, *Round trip*: `mtf dump T | mtf pack - -o T2` is byte-identical to `T`
//! for the class of traces stated there, and what `pack` does with the rest of live/1 traces.

use metatf::container::{ByteOrder, Class, Header};

use crate::util;

const LIVE_DTD: &str = "\
tag.width = 1;
a.width = 1; a.interpretation = none; a.liveset = 1;
f.width = 1; f.interpretation = live 1;
alloc : (tag, a) { tag.value = 4; }
free : (tag, f) { tag.value = 5; }
";

/// A trace of LIVE_DTD (in `dir`, as `name`) whose global region holds `records`, with header
/// byte 8 (extensions) set to `ext`.
fn live_trace(dir: &std::path::Path, name: &str, records: &[&[u8]], ext: u8) -> std::path::PathBuf {
    std::fs::write(dir.join("live.dtd"), LIVE_DTD).unwrap();
    let body: Vec<u8> = records.concat();
    let mut t = Header::encode(
        Class::Bits32,
        ByteOrder::Little,
        "live.dtd",
        records.len() as u64,
        body.len() as u64,
        &[],
    )
    .unwrap();
    t[8] = ext;
    t.extend_from_slice(&body);
    let p = dir.join(name);
    std::fs::write(&p, &t).unwrap();
    p
}

/// `mtf dump T | mtf pack - -o T2`: (status of pack, T2's bytes, dump of T, dump of T2).
fn round_trip(
    t: &std::path::Path,
    dtd: Option<&std::path::Path>,
) -> (i32, Vec<u8>, String, String) {
    let mut args = vec!["dump", t.to_str().unwrap()];
    if let Some(d) = dtd {
        args.extend(["-d", d.to_str().unwrap()]);
    }
    let dump = util::mtf(&args);
    assert_eq!(dump.status.code(), Some(0), "{}", util::text(&dump.stderr));
    // T2 in a folder of its own: never beside T (which may be a shipped sample).
    let out_dir = util::tempdir();
    let t2 = out_dir.path().join("t2.mtf");
    let mut pack = vec!["pack", "-", "-o", t2.to_str().unwrap()];
    if let Some(d) = dtd {
        pack.extend(["-d", d.to_str().unwrap()]);
    }
    let out = util::mtf_stdin(&pack, &dump.stdout);
    let code = out.status.code().unwrap_or(-1);
    if code != 0 {
        assert!(!t2.exists(), "a refused pack leaves no output");
        return (
            code,
            Vec::new(),
            util::text(&dump.stdout),
            util::text(&out.stderr),
        );
    }
    let mut args = vec!["dump", t2.to_str().unwrap()];
    if let Some(d) = dtd {
        args.extend(["-d", d.to_str().unwrap()]);
    }
    let again = util::mtf(&args);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        util::text(&again.stderr)
    );
    (
        code,
        std::fs::read(&t2).unwrap(),
        util::text(&dump.stdout),
        util::text(&again.stdout),
    )
}

#[test]
fn every_shipped_trace_and_a_compacted_live_trace_pack_back_byte_for_byte() {
    let dir = util::tempdir();
    let mut traces: Vec<std::path::PathBuf> = std::fs::read_dir(util::root().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtf"))
        .collect();
    // A live/1 trace as a writer writes it (class 4 of the stated conditions).
    let live = dir.path().join("live.mtf");
    let c = util::mtf(&[
        "compact",
        "traces/hatf-le32.mtf",
        "-o",
        live.to_str().unwrap(),
        "--live",
    ]);
    assert!(c.status.success());
    traces.push(live);
    for t in traces {
        let (code, t2, _, _) = round_trip(&t, None);
        assert_eq!(code, 0, "{}", t.display());
        assert!(
            t2 == std::fs::read(&t).unwrap(),
            "{} does not pack back",
            t.display()
        );
    }
}

#[cfg(feature = "compression")]
#[test]
fn a_compressed_trace_packs_back_to_its_decompressed_bytes() {
    let dir = util::tempdir();
    let plain = std::fs::read(util::root().join("traces/android.mtf")).unwrap();
    let p = dir.path().join("android.mtf.zst");
    std::fs::write(&p, zstd::encode_all(&plain[..], 3).unwrap()).unwrap();
    let (code, t2, _, _) = round_trip(&p, None);
    assert_eq!(code, 0);
    assert!(t2 == plain);
}

#[test]
fn the_live_bit_without_use_is_the_only_byte_pack_changes() {
    let dir = util::tempdir();
    // live.dtd uses live/1, so a trace of another DTD: hatf10 with header byte 8 set.
    let mut t = std::fs::read(util::root().join("traces/hatf-le32.mtf")).unwrap();
    t[8] = 1;
    let p = dir.path().join("bit.mtf");
    std::fs::write(&p, &t).unwrap();
    let (code, t2, before, after) = round_trip(&p, None);
    assert_eq!(code, 0);
    assert_eq!(before, after);
    let differ: Vec<usize> = (0..t.len()).filter(|&i| t[i] != t2[i]).collect();
    assert_eq!(differ, [8], "only header byte 8");
}

#[test]
fn a_position_of_an_older_duplicate_packs_to_the_newest_with_the_same_values() {
    let dir = util::tempdir();
    // Set 1 = [5, 7, 5]; the free stores position 2 (the older 5), a writer stores 0.
    let p = live_trace(
        dir.path(),
        "older.mtf",
        &[&[4, 5], &[4, 7], &[4, 5], &[5, 2], &[5, 7]],
        1,
    );
    let (code, t2, before, after) = round_trip(&p, Some(&dir.path().join("live.dtd")));
    assert_eq!(code, 0, "{after}");
    let t = std::fs::read(&p).unwrap();
    assert_eq!(t2.len(), t.len());
    assert_eq!(before, after, "the same records and values");
    assert!(t2 != t, "the stored positions are the writer's");
}

#[test]
fn an_escape_for_a_value_in_the_set_packs_to_its_position() {
    let dir = util::tempdir();
    // Set 1 = [5]; the free stores the escape len + 5 = 6, a writer the position 0.
    let p = live_trace(dir.path(), "escape.mtf", &[&[4, 5], &[5, 6]], 1);
    let (code, t2, before, after) = round_trip(&p, Some(&dir.path().join("live.dtd")));
    assert_eq!(code, 0, "{after}");
    assert_eq!(before, after);
    let t = std::fs::read(&p).unwrap();
    assert_eq!((t[t.len() - 1], t2[t2.len() - 1]), (6, 0));
}

#[test]
fn a_live_trace_whose_positions_a_writer_cannot_keep_is_refused_naming_the_line() {
    let dir = util::tempdir();
    // Set 1 = [5, 7, 5]; free stores 2 (the older 5): the set is [7, 5]. Then `free.f` becomes
    // zero-width and a free stores 0, the newest: 5. A writer took the newest 5 out first, so
    // its set is [5, 7] and 5 is at position 1, which a zero-width field cannot hold.
    let p = live_trace(
        dir.path(),
        "cannot.mtf",
        &[
            &[4, 5],
            &[4, 7],
            &[4, 5],
            &[5, 2],
            &[3, 5, 1, 0, 0, 0, 0, 0],
            &[5],
        ],
        1,
    );
    let check = util::mtf(&["check", p.to_str().unwrap()]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "the trace is valid: {}",
        util::text(&check.stdout)
    );
    let (code, _, _, err) = round_trip(&p, Some(&dir.path().join("live.dtd")));
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("-:7:"), "the line is named: {err}");
    assert!(err.contains("mtf::encode::unrepresentable"), "{err}");
}

/// docs/format.md §13 defines when a trace uses live/1; `pack` sets header bit 0 exactly then.
#[test]
fn the_live_bit_is_set_exactly_when_the_trace_uses_live_1_as_defined() {
    let dir = util::tempdir();
    let hatf = std::fs::read_to_string(util::root().join("dtds/hatf10.dtd")).unwrap();
    // A liveset that no field takes, and a liveset 0, do not count.
    let unused = format!("{hatf}\nnosuchfield.liveset = 3;\nsize.liveset = 0;\n");
    std::fs::write(dir.path().join("unused.dtd"), &unused).unwrap();
    let used = hatf.replace(
        "address.width = 4;",
        "address.width = 4; address.liveset = 1;",
    );
    assert_ne!(used, hatf);
    std::fs::write(dir.path().join("used.dtd"), &used).unwrap();
    let body = "section 1\nalloc size=1 address=2 vfield.data=x\"\"\n";
    let cases = [
        ("unused.dtd", "", 0u8),
        ("used.dtd", "", 1),
        // A code-9 metadata record counts, whatever its word.
        ("unused.dtd", "metadata alloc.size liveset 0\n", 1),
        ("unused.dtd", "metadata alloc.size none\n", 0),
    ];
    for (dtd, meta, bit) in cases {
        let text = format!("%mtf 1 dtd=\"{dtd}\" class=32 order=little\n{body}{meta}");
        let src = dir.path().join("t.txt");
        std::fs::write(&src, &text).unwrap();
        let out = dir.path().join("t.mtf");
        let r = util::mtf(&["pack", src.to_str().unwrap(), "-o", out.to_str().unwrap()]);
        assert!(
            r.status.success(),
            "{dtd} {meta}: {}",
            util::text(&r.stderr)
        );
        let t = std::fs::read(&out).unwrap();
        assert_eq!(t[8], bit, "{dtd} {meta:?}");
    }
}
