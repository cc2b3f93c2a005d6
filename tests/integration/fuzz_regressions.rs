//! Every input the fuzz targets (fuzz/README.md) found a defect with, replayed the way its
//! target runs it: `tests/fuzz-regressions/TARGET/NAME`, with the outcome expected now that the
//! defect is fixed (an error naming what is wrong, or success). A file in those folders that is
//! not listed in `CASES` fails the test, so that none is forgotten.

use std::path::PathBuf;

use crate::util;

/// What replaying an input must give: success with a summary, or an error, whose text
/// contains the given text.
#[derive(Debug)]
enum Expect {
    Ok(&'static str),
    Err(&'static str),
}

/// (target, file, expected outcome, what the defect was).
const CASES: &[(&str, &str, Expect, &str)] = &[
    (
        "replay_ops",
        "bad-thread-after-alloc",
        Expect::Err("names thread 1 of 1"),
        "a replay stopped by a bad operation leaked the blocks it had made (LeakSanitizer)",
    ),
    (
        "replay_ops",
        "operation-after-thread-end",
        Expect::Err("which has ended"),
        "an operation of a thread after its last one: the ordered replay waited forever",
    ),
    (
        "replay_ops",
        "operation-after-thread-end-2",
        Expect::Err("which has ended"),
        "the same: an allocation of thread 0 after its last operation",
    ),
    (
        "replay_ops",
        "operation-after-thread-end-3",
        Expect::Err("which has ended"),
        "the same: a second last operation of thread 1",
    ),
    (
        "replay_ops",
        "huge-alignment",
        Expect::Ok("6 operations, 5 refused"),
        "a 512-byte block aligned to 2 GiB was not capped: gigabytes reserved (out of memory)",
    ),
    (
        "import_zip",
        "entry-with-empty-name",
        Expect::Err("is named \"\" in its central-directory header at offset 411 but \"trace\" in its local header"),
        "a ZIP entry named \"\" lost its date and attributes (the import told a ZIP entry from a plain stream by its empty name); its local header names it \"trace\", so it is now refused like the central-name-differs-from-local inputs",
    ),
    (
        "import_zip",
        "zip-without-central-entries",
        Expect::Err("central directory lists none"),
        "a ZIP whose central directory lists no entry imported as empty; export wrote no file",
    ),
    (
        "import_zip",
        "zip-without-central-entries-2",
        Expect::Err("central directory lists none"),
        "the same, found again with other entries (tptp mapping)",
    ),
    (
        "import_zip",
        "central-name-differs-from-local",
        Expect::Err("is named \"\" in its central-directory header at offset 411 but \"info/\" in its local header at offset 0"),
        "a central entry named \"\" pointing at the local header of `info/`: imported and exported without an error, an entry different",
    ),
    (
        "import_zip",
        "central-name-differs-from-local-2",
        Expect::Err("is named \"\" in its central-directory header at offset 411 but \"info/\" in its local header at offset 0"),
        "the same, found again (another \"version made by\")",
    ),
    (
        "import_zip",
        "local-method-differs-from-central",
        Expect::Err("has compression method 0 in its central-directory header at offset 303 but 10 in its local header at offset 0"),
        "a local header with method 10 under a central one with method 0: the export failed with \"No file has been started\"",
    ),
    (
        "import_zip",
        "invalid-dos-time",
        Expect::Err("entry 3 (\"trace\") has an invalid DOS date and time (date 0x755d, time 0x2fbc)"),
        "an entry dated minute 61 came back dated 1980-01-01 with no error (found after the fixes above)",
    ),
];

fn dir() -> PathBuf {
    util::root().join("tests/fuzz-regressions")
}

/// The input replayed as its target runs it: `Ok` with a summary, or the error's message.
fn replay(target: &str, data: &[u8]) -> Result<String, String> {
    match target {
        "replay_ops" => replay_ops(data),
        "import_zip" => import_zip(data),
        other => panic!("no replay for fuzz target {other}"),
    }
}

/// fuzz/fuzz_targets/replay_ops.rs: the bytes as an operations file, played with the system
/// allocator, blocks capped at 64 KiB.
fn replay_ops(data: &[u8]) -> Result<String, String> {
    use metatf::replay::{self, Allocator, OpsReader, ThreadMode};
    let r = OpsReader::new(data).map_err(|e| e.to_string())?;
    let (threads, count) = (r.threads, r.count);
    assert!(threads <= 4, "the target plays at most 4 threads");
    let options = replay::Options {
        timing: replay::Timing::Fast,
        threads: if data.len().is_multiple_of(2) {
            ThreadMode::Ordered
        } else {
            ThreadMode::Free
        },
        touch: false,
        max_block_size: 64 << 10,
        sample_every: 1 << 20,
    };
    // A replay that waits forever fails the test instead of hanging it.
    let data = data.to_vec();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = OpsReader::new(&data[..]).expect("read above");
        let got = replay::run(Allocator::System, &options, threads, count, r.take(10_000))
            .map(|rep| format!("{} operations, {} refused", rep.ops, rep.counts.refused))
            .map_err(|e| e.to_string());
        let _ = tx.send(got);
    });
    rx.recv_timeout(std::time::Duration::from_secs(60))
        .expect("the replay ends within a minute")
}

/// fuzz/fuzz_targets/import_zip.rs: the bytes after the first as a file, imported with the
/// shipped mapping the first byte chooses (unmatched units kept).
fn import_zip(data: &[u8]) -> Result<String, String> {
    use metatf::container::{ByteOrder, Class, Trace};
    use metatf::encode::TraceWriter;
    use metatf::import::source::TraceSource;
    use metatf::import::{export, order_inputs, origin, shipped, ImportInput, Importer, Target};
    let (&sel, file) = data.split_first().expect("a selector byte");
    let maps = shipped::all();
    let (_, m) = &maps[sel as usize % maps.len()];
    let dir = util::tempdir();
    let input = dir.path().join("in.zip");
    std::fs::write(&input, file).unwrap();
    let opened = ImportInput::open(&input).map_err(|e| e.to_string())?;
    let (mut inputs, container) = order_inputs(m, vec![opened]).map_err(|e| e.to_string())?;
    let text = metatf::container::shipped_dtd(&m.dtd).expect("shipped");
    let schema = metatf::dtd::parse_str(&m.dtd, text).unwrap().schema;
    let w = TraceWriter::in_memory(&schema, Class::Bits64, ByteOrder::Little, &m.dtd);
    let mut imp = Importer::new(m, w, &schema, container, 1).map_err(|e| e.to_string())?;
    imp.keep_unmatched(true);
    imp.import_input(inputs.pop().expect("one input"))
        .map_err(|e| e.to_string())?;
    let (writer, _) = imp.finish().map_err(|e| e.to_string())?;
    // Exported, the archive has the same entries (docs/mappings.md, *ZIP and XML*).
    let trace = Trace::from_bytes(writer.finish_to_vec().unwrap()).unwrap();
    let src = TraceSource::new(&trace, &schema);
    let org = origin(&src).unwrap();
    let out = dir.path().join("out.zip");
    export(&src, m, &org, Target::Path(out.clone())).expect("an import exports");
    let (a, b) = (zip_entries(&input), zip_entries(&out));
    assert_eq!(a, b, "the exported ZIP's entries differ from the input's");
    Ok(format!("{} entries exported as they were", a.0.len()))
}

/// (name, method, DOS time, bytes) of every entry of a ZIP, and its comment.
type Entries = (Vec<(String, u64, u32, Vec<u8>)>, Vec<u8>);

fn zip_entries(p: &std::path::Path) -> Entries {
    use std::io::Read;
    let mut z = metatf::import::zipio::Reader::new(std::fs::File::open(p).unwrap()).unwrap();
    let mut v = Vec::new();
    for i in 0..z.len() {
        let meta = z.meta(i).unwrap();
        let mut b = Vec::new();
        z.entry(i).unwrap().read_to_end(&mut b).unwrap();
        v.push((meta.name, meta.method, meta.time, b));
    }
    (v, z.comment().to_vec())
}

#[test]
fn every_fuzz_regression_input_is_handled() {
    for (target, file, expect, defect) in CASES {
        let path = dir().join(target).join(file);
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let got = replay(target, &data);
        match (expect, &got) {
            (Expect::Ok(want), Ok(summary)) if summary.contains(want) => {}
            (Expect::Err(want), Err(msg)) if msg.contains(want) => {}
            _ => panic!("{target}/{file} ({defect}): expected {expect:?}, got {got:?}"),
        }
    }
}

#[test]
fn every_fuzz_regression_input_is_listed() {
    for target in std::fs::read_dir(dir()).unwrap() {
        let target = target.unwrap();
        let t = target.file_name().into_string().unwrap();
        if !target.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(target.path()).unwrap() {
            let f = f.unwrap().file_name().into_string().unwrap();
            assert!(
                CASES.iter().any(|c| c.0 == t && c.1 == f),
                "tests/fuzz-regressions/{t}/{f} is not listed in CASES"
            );
        }
    }
}
