//! Issue 19 item 7: `-j N` decodes on several threads and gives exactly what one thread gives:
//! the same standard output, standard error and exit status for `check`, `dump` (text, JSON
//! lines, CSV) and `stats`, whether the trace is cut at its regions or at the checkpoints of a
//! seek index, valid or damaged, from a file or a pipe.

use std::path::{Path, PathBuf};
use std::process::Output;

use metatf::decode::{Event, EventStream};

use crate::util::{mtf, mtf_stdin, root, tempdir, text};

/// What a run shows.
fn shown(o: &Output) -> (String, String, Option<i32>) {
    (text(&o.stdout), text(&o.stderr), o.status.code())
}

/// The subcommands compared, as arguments before the trace.
const RUNS: &[&[&str]] = &[
    &["check"],
    &["check", "--no-semantic"],
    &["check", "--max-errors", "1"],
    &["dump"],
    &["dump", "--offsets", "--raw"],
    &["dump", "-f", "jsonl"],
    &["dump", "--data-only"],
    &["dump", "-f", "csv", "-r", "alloc"],
    &["dump", "--skip", "3", "-n", "4"],
    &["stats"],
    &["stats", "-f", "json"],
];

/// The index verdict of `check`: `-j 1` verifies everything, `-j N` the states and says so.
fn without_index_verdict(
    (out, err, code): (String, String, Option<i32>),
) -> (String, String, Option<i32>) {
    let out = out
        .lines()
        .filter(|l| !l.contains(": index valid (") && !l.contains(": index states valid ("))
        .map(|l| format!("{l}\n"))
        .collect();
    (out, err, code)
}

/// Every run of [`RUNS`] on `trace` with `-j 1` (and `one`) and with each of `parallel` gives
/// the same.
fn same_on_threads(trace: &Path, one: &[&str], parallel: &[&[&str]]) {
    let t = trace.to_str().unwrap();
    for run in RUNS {
        let first: Vec<&str> = run
            .iter()
            .copied()
            .chain([t, "-j", "1"])
            .chain(one.iter().copied())
            .collect();
        let want = without_index_verdict(shown(&mtf(&first)));
        for p in parallel {
            let args: Vec<&str> = run
                .iter()
                .copied()
                .chain([t])
                .chain(p.iter().copied())
                .collect();
            let got = without_index_verdict(shown(&mtf(&args)));
            assert_eq!(got, want, "mtf {}", args.join(" "));
        }
    }
}

/// The shipped traces.
fn shipped() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("traces"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "mtf"))
        .collect();
    v.sort();
    assert!(v.len() >= 10, "{v:?}");
    v
}

/// Cut at every region (workers decode them), or with some regions decoded by the thread that
/// writes the output.
const CUT_AT_REGIONS: &[&[&str]] = &[
    &["-j", "2", "--chunk-bytes", "1", "--no-index"],
    &["-j", "4", "--chunk-bytes", "1", "--no-index"],
    &[
        "-j",
        "3",
        "--chunk-bytes",
        "1",
        "--inline-bytes",
        "30",
        "--no-index",
    ],
];

#[test]
fn every_shipped_trace_gives_the_same_on_any_number_of_threads() {
    for t in shipped() {
        same_on_threads(&t, &["--no-index"], CUT_AT_REGIONS);
    }
}

#[test]
fn damaged_traces_give_the_same_problems_and_record_numbers_on_any_number_of_threads() {
    let dir = tempdir();
    let bytes = std::fs::read(root().join("traces/hatf-split-le64.mtf")).unwrap();
    // Bytes in each region: a table's string, a stream's value, metadata and records of the
    // heap section (damage, bad metadata, references into damaged tables).
    for off in [100usize, 130, 150, 170, 200, 240] {
        let mut b = bytes.clone();
        b[off] ^= 0xff;
        let p = dir.path().join(format!("c{off}.mtf"));
        std::fs::write(&p, &b).unwrap();
        same_on_threads(&p, &["--no-index"], CUT_AT_REGIONS);
    }
}

/// A HATF 1.0 trace of `n` allocations and frees in text, with metadata changes along the way
/// and two frees of blocks not alive (semantic errors in the middle).
fn hatf_text(n: u64) -> String {
    let mut s = String::from("%mtf 1 dtd=\"hatf10.dtd\" class=64 order=little\nsection number=1\n");
    s.push_str(
        "createThread thread=0 vfield.data=\"\"\ncreateHeap thread=0 heap=0 vfield.data=\"\"\n",
    );
    for i in 0..n {
        if i % 97 == 0 {
            let w = [2, 4, 8][(i / 97 % 3) as usize];
            s.push_str(&format!("metadata alloc.size width {w}\n"));
        }
        let a = 0x10000 + i * 32;
        s.push_str(&format!(
            "alloc size={} address={a} vfield.data=\"\"\n",
            i % 200 + 1
        ));
        if i % 3 == 0 {
            s.push_str(&format!("free address={a} vfield.data=\"\"\n"));
        }
        if i == n / 2 || i == n / 3 {
            s.push_str(&format!("free address={} vfield.data=\"\"\n", a + 8));
        }
    }
    s
}

#[test]
fn a_trace_cut_at_the_checkpoints_of_its_index_gives_the_same() {
    let dir = tempdir();
    let (out, packed, _guard) =
        crate::util::pack_stdin("dtds/hatf10.dtd", hatf_text(3000).as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = dir.path().join("big.mtf");
    std::fs::copy(&packed, &t).unwrap();
    let idx = dir.path().join("big.idx");
    let o = mtf(&[
        "index",
        t.to_str().unwrap(),
        "-o",
        idx.to_str().unwrap(),
        "--every",
        "100",
        "--every-bytes",
        "1024",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let i = idx.to_str().unwrap();
    // The index is used: the plan has more than one chunk of a single section.
    let opened = metatf::open(&t).unwrap();
    let reader = opened.reader();
    let index = metatf::index::Index::load(&idx).unwrap();
    let plan = metatf::parallel::plan_indexed(&reader, &index).unwrap();
    assert!(plan.chunks.len() > 10, "{} chunks", plan.chunks.len());
    // Without it, the trace (one small section) is one chunk: nothing to decode apart.
    assert!(!metatf::parallel::plan(&reader).is_parallel());
    same_on_threads(
        &t,
        &["--index", i],
        &[&["-j", "2", "--index", i], &["-j", "4", "--index", i]],
    );
    // `check -j 2` validating only verifies the index's states on the threads, and says so.
    let o = mtf(&[
        "check",
        "--no-semantic",
        t.to_str().unwrap(),
        "-j",
        "2",
        "--index",
        i,
    ]);
    assert!(
        text(&o.stdout).contains("index states valid ("),
        "{}",
        text(&o.stdout)
    );
    // A damaged copy: the index no longer fits (a warning, then the same as one thread), or
    // where the damage is past a checkpoint's probe, the chunks still agree.
    let mut b = std::fs::read(&t).unwrap();
    let n = b.len();
    b[n / 2] ^= 0x5a;
    b[n / 3] = 0xff;
    let d = dir.path().join("damaged.mtf");
    std::fs::write(&d, &b).unwrap();
    let d = d.to_str().unwrap();
    for semantic in [&[][..], &["--no-semantic"]] {
        let args = |j: &'static str| -> Vec<&str> {
            ["check", d, "-j", j, "--index", i]
                .into_iter()
                .chain(semantic.iter().copied())
                .collect()
        };
        let one = without_index_verdict(shown(&mtf(&args("1"))));
        let two = without_index_verdict(shown(&mtf(&args("2"))));
        assert_eq!((&one.0, one.2), (&two.0, two.2));
    }
}

#[test]
fn a_pipe_decodes_on_several_threads_too() {
    let t = root().join("traces/hatf-split-le64.mtf");
    let bytes = std::fs::read(&t).unwrap();
    for run in [&["check"][..], &["dump", "-f", "jsonl"], &["stats"]] {
        let one: Vec<&str> = run.iter().copied().chain(["-", "-j", "1"]).collect();
        let two: Vec<&str> = run
            .iter()
            .copied()
            .chain(["-", "-j", "2", "--chunk-bytes", "1"])
            .collect();
        assert_eq!(
            shown(&mtf_stdin(&one, &bytes)),
            shown(&mtf_stdin(&two, &bytes))
        );
    }
}

/// The library's events, as `Reader::records` gives them (record indices included).
fn events_of(stream: &mut dyn EventStream) -> Vec<String> {
    let mut v = Vec::new();
    while let Some(e) = stream.next_event() {
        v.push(match e {
            Event::Record(r) => format!("{} {} {} {:?}", r.index(), r.offset(), r.name(), {
                r.fields()
                    .map(|f| format!("{:?}", f.value()))
                    .collect::<Vec<_>>()
            }),
            Event::Problem(p) => format!("problem {p}"),
            Event::Damage(d) => format!("damage {d}"),
        });
    }
    v.push(format!("dropped {}", stream.dropped_problems()));
    v
}

#[test]
fn the_library_replays_every_event_in_order() {
    for t in shipped() {
        let opened = metatf::open(&t).unwrap();
        let reader = opened.reader();
        let want = events_of(&mut reader.records());
        for (chunk, inline) in [(1, u64::MAX), (1, 40), (64, 64)] {
            let plan = metatf::parallel::plan_with(&reader, chunk, inline);
            for jobs in [1, 2, 3] {
                let got = metatf::parallel::events(&opened, &reader, &plan, jobs, false, |e| {
                    events_of(e)
                });
                assert_eq!(got, want, "{} chunk {chunk} inline {inline}", t.display());
            }
        }
    }
}

/// The files of a folder, by name, with their bytes.
fn files_in(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    v.sort();
    v
}

/// `mtf export` of `trace` with `-j 1` and with each of `parallel`: the same files, byte for
/// byte, and the same messages (the output's name aside) and exit status.
fn export_same_on_threads(trace: &Path, to: &[&str], parallel: &[&[&str]], dir: &Path) {
    let t = trace.to_str().unwrap();
    // One folder per trace and run: an export replaces a folder only when it holds an export
    // of the same trace.
    let stem = trace
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .replace('.', "_");
    let run = |name: &str, extra: &[&str]| {
        let out = dir.join(format!("{stem}-{name}"));
        let o = mtf(&[&["export", t], to, &["-o", out.to_str().unwrap()], extra].concat());
        let (stdout, stderr, code) = shown(&o);
        let files = if out.is_dir() {
            files_in(&out)
        } else if out.exists() {
            vec![(String::new(), std::fs::read(&out).unwrap())]
        } else {
            Vec::new()
        };
        let stderr = stderr.replace(out.to_str().unwrap(), "OUT");
        (files, stdout, stderr, code)
    };
    let want = run("one", &["-j", "1"]);
    assert!(!want.0.is_empty(), "{t}: nothing exported: {}", want.2);
    for (i, p) in parallel.iter().enumerate() {
        let got = run(&format!("par{i}"), p);
        assert_eq!(got, want, "mtf export {t} {} {}", to.join(" "), p.join(" "));
    }
}

#[test]
fn parquet_export_writes_the_same_files_on_any_number_of_threads() {
    let dir = tempdir();
    for t in shipped() {
        export_same_on_threads(
            &t,
            &["--to", "parquet"],
            &[CUT_AT_REGIONS[0], CUT_AT_REGIONS[2]],
            dir.path(),
        );
    }
}

#[test]
fn mapping_export_writes_the_same_bytes_on_any_number_of_threads() {
    let dir = tempdir();
    let mut imported = 0;
    for t in shipped() {
        // The traces made by `mtf import` (their first record names their origin).
        let dump = mtf(&["dump", t.to_str().unwrap(), "-n", "3"]);
        if !text(&dump.stdout).contains("import_origin") {
            continue;
        }
        imported += 1;
        export_same_on_threads(&t, &[], CUT_AT_REGIONS, dir.path());
    }
    assert!(imported >= 5, "{imported} imported traces");
}

#[test]
fn exports_cut_at_the_checkpoints_of_an_index_give_the_same() {
    let dir = tempdir();
    let index = |t: &Path, every: &str| {
        let idx = dir
            .path()
            .join(format!("{}.idx", t.file_name().unwrap().to_string_lossy()));
        let o = mtf(&[
            "index",
            t.to_str().unwrap(),
            "-o",
            idx.to_str().unwrap(),
            "--every",
            every,
            "--every-bytes",
            "256",
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        idx
    };
    // Parquet of a HATF trace of one section, cut at many checkpoints.
    let (out, packed, _guard) =
        crate::util::pack_stdin("dtds/hatf10.dtd", hatf_text(3000).as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let idx = index(&packed, "50");
    let opened = metatf::open(&packed).unwrap();
    let reader = opened.reader();
    let loaded = metatf::index::Index::load(&idx).unwrap();
    let plan = metatf::parallel::plan_indexed(&reader, &loaded).unwrap();
    assert!(plan.chunks.len() > 10, "{} chunks", plan.chunks.len());
    let i = idx.to_str().unwrap();
    export_same_on_threads(
        &packed,
        &["--to", "parquet"],
        &[&["-j", "2", "--index", i], &["-j", "3", "--index", i]],
        dir.path(),
    );
    // A mapping export of an imported trace, cut at checkpoints.
    let t = root().join("traces/android.mtf");
    let idx = index(&t, "5");
    let i = idx.to_str().unwrap();
    export_same_on_threads(
        &t,
        &[],
        &[&["-j", "2", "--index", i], &["-j", "4", "--index", i]],
        dir.path(),
    );
}

/// A HATF 1.0 trace of `n` heap records with findings of every kind the interpreter decides
/// from its memory: double frees of blocks freed long before (across many checkpoints), frees
/// of blocks never seen (information in HATF), blocks defined twice, blocks alive at the end.
fn hatf_with_findings(n: usize) -> String {
    let mut rng = crate::util::Rng(0x51ed_270b_0d3a_11c5);
    let mut s = String::from(
        "%mtf 1 dtd=\"hatf10.dtd\" class=32 order=little\nsection number=1\ncreateThread thread=0 vfield.data=\"\"\n",
    );
    let (mut live, mut freed): (Vec<u64>, Vec<u64>) = (Vec::new(), Vec::new());
    let mut next = 0x1000u64;
    for _ in 0..n {
        let r = rng.below(100);
        if r < 45 || live.is_empty() {
            next += 16;
            live.push(next);
            s.push_str(&format!(
                "alloc size={} address={next} vfield.data=\"\"\n",
                1 + rng.below(64)
            ));
        } else if r < 88 {
            let a = live.swap_remove(rng.below(live.len() as u64) as usize);
            freed.push(a);
            s.push_str(&format!("free address={a} vfield.data=\"\"\n"));
        } else if r < 94 && !freed.is_empty() {
            // Freed again: often one freed long ago.
            let a = freed[rng.below(freed.len() as u64) as usize];
            if !live.contains(&a) {
                s.push_str(&format!("free address={a} vfield.data=\"\"\n"));
            }
        } else if r < 97 {
            s.push_str(&format!(
                "free address={} vfield.data=\"\"\n",
                0x7000_0000 + rng.below(1 << 20)
            ));
        } else {
            let a = live[rng.below(live.len() as u64) as usize];
            s.push_str(&format!("alloc size=8 address={a} vfield.data=\"\"\n"));
        }
    }
    s
}

/// Issue 28 item 3: the semantic check of a trace whose seek index carries analysis states runs
/// each chunk between two checkpoints on its own thread from the state stored there, and says
/// exactly what one thread says — also of a double free whose first free is chunks before it
/// (one thread's memory of recently freed blocks is not in the state).
#[test]
fn semantic_check_on_threads_from_analysis_states_says_what_one_thread_says() {
    let dtd = root().join("dtds/hatf10.dtd");
    let (out, trace, _dir) =
        crate::util::pack_stdin(dtd.to_str().unwrap(), hatf_with_findings(6000).as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = trace.to_str().unwrap();
    let ix = mtf(&["index", "--every", "97", t]);
    assert!(ix.status.success(), "{}", text(&ix.stderr));
    assert!(Path::new(&format!("{t}.idx.state")).is_file());
    let args = ["check", "--max-errors", "100000", "--max-info", "100000"];
    let one = mtf(&[&args[..], &["-j", "1", t]].concat());
    let (o1, e1, s1) = shown(&one);
    // Double frees whose first free is more than a checkpoint before them.
    let far = o1
        .lines()
        .filter(|l| l.contains("which is not alive"))
        .filter_map(|l| {
            let at: u64 = l.split("record ").nth(1)?.split(' ').next()?.parse().ok()?;
            let by: u64 = l
                .split("; undefined by record ")
                .nth(1)?
                .split(' ')
                .next()?
                .parse()
                .ok()?;
            Some(at - by)
        })
        .filter(|d| *d > 300)
        .count();
    assert!(far > 10, "{far} double frees far apart:\n{o1}");
    // At most a chunk per thread, so the states started from (and verified) are at most
    // jobs − 1, and the index line says how many, and on how many threads; -j 40 cuts at every
    // state (as many chunk boundaries as there are states for the double frees to cross).
    for jobs in ["2", "3", "40"] {
        let many = mtf(&[&args[..], &["-j", jobs, t]].concat());
        let (o, e, s) = shown(&many);
        assert!(
            o.contains("index states valid"),
            "the states were not used (-j {jobs}):\n{o}"
        );
        let count = |before: &str, after: &str| -> usize {
            o.split(before)
                .nth(1)
                .and_then(|x| x.split(after).next())
                .and_then(|x| x.parse().ok())
                .unwrap_or_else(|| panic!("no count (-j {jobs}):\n{o}"))
        };
        let used = count(" threads from ", " ");
        let threads = count("checkpoints, on ", " ");
        let j: usize = jobs.parse().unwrap();
        assert!(used >= 1 && used < j, "{used} states at -j {jobs}:\n{o}");
        assert_eq!(threads, used + 1, "a thread per chunk (-j {jobs}):\n{o}");
        if j == 40 {
            assert!(used >= 20, "{used} states at -j 40:\n{o}");
        }
        let drop_index = |x: &str| -> String {
            x.lines()
                .filter(|l| !l.contains(".idx: index"))
                .map(|l| format!("{l}\n"))
                .collect()
        };
        assert_eq!(drop_index(&o), drop_index(&o1), "-j {jobs}");
        assert_eq!((e.as_str(), s), (e1.as_str(), s1), "-j {jobs}");
    }
}

/// A HATF 1.0 trace of `n` steps shaped to catch a wrong join of chunks' statistics: the live
/// bytes climb to their peak in the middle (not in the first chunk) and fall, a block allocated
/// at the start is freed at the end (a lifetime across every chunk), each step allocates and at
/// once frees a block (a temporary allocation, whichever side of a checkpoint the free falls),
/// the peak is reached again and again over several chunks (the first time is the peak),
/// sizes and metadata widths change along the way, and a few frees are of blocks not alive.
fn hatf_peak_in_the_middle(n: u64) -> String {
    let mut s = String::from("%mtf 1 dtd=\"hatf10.dtd\" class=64 order=little\nsection number=1\n");
    s.push_str("createThread thread=0 vfield.data=\"\"\n");
    s.push_str("alloc size=5000 address=16 vfield.data=\"\"\n");
    let mut live: Vec<u64> = Vec::new();
    let mut rng = crate::util::Rng(0x0dd_ba11_5eed);
    for i in 0..n {
        if i % 89 == 0 {
            let w = [2, 4, 8][(i / 89 % 3) as usize];
            s.push_str(&format!("metadata alloc.size width {w}\n"));
        }
        let a = 0x10000 + i * 64;
        s.push_str(&format!(
            "alloc size={} address={a} vfield.data=\"\"\n",
            1 + rng.below(200)
        ));
        if i % 2 == 0 {
            s.push_str(&format!("free address={a} vfield.data=\"\"\n"));
        } else if i < n / 2 {
            live.push(a);
        } else if !live.is_empty() {
            s.push_str(&format!("free address={a} vfield.data=\"\"\n"));
            let b = live.swap_remove(rng.below(live.len() as u64) as usize);
            s.push_str(&format!("free address={b} vfield.data=\"\"\n"));
        }
        if i == n / 2 {
            // A plateau: the same peak reached again and again, in several chunks (the first
            // is the peak).
            for j in 0..300 {
                let a = 0x1000_0000 + j * 64;
                s.push_str(&format!("alloc size=500 address={a} vfield.data=\"\"\n"));
                s.push_str(&format!("free address={a} vfield.data=\"\"\n"));
            }
        }
        if i % 501 == 250 {
            s.push_str(&format!("free address={} vfield.data=\"\"\n", a + 8));
        }
    }
    s.push_str("free address=16 vfield.data=\"\"\n");
    s
}

/// `hatf_peak_in_the_middle(3000)` packed with hatf10.dtd and indexed with a checkpoint every 61
/// records and `--state-budget BUDGET`: the trace and the folder holding it.
fn peak_in_the_middle_indexed(budget: &str) -> (PathBuf, tempfile::TempDir) {
    let dtd = root().join("dtds/hatf10.dtd");
    let (out, trace, dir) = crate::util::pack_stdin(
        dtd.to_str().unwrap(),
        hatf_peak_in_the_middle(3000).as_bytes(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = trace.to_str().unwrap();
    let ix = mtf(&["index", "--every", "61", "--state-budget", budget, t]);
    assert!(ix.status.success(), "{}", text(&ix.stderr));
    (trace, dir)
}

/// Issue 28 item 3: `stats -j N` of a trace whose seek index carries analysis states analyses
/// each chunk between two checkpoints on its own thread from the state stored there, and joins
/// the figures into exactly those of one thread (text and JSON; a few chunks per thread, or one
/// at every checkpoint with a state); a state that is not where the chunks before end is refused with a warning
/// naming its checkpoint, and the figures are still one thread's.
#[test]
fn stats_on_threads_from_analysis_states_are_one_threads() {
    let (trace, dir) = peak_in_the_middle_indexed("100000");
    let t = trace.to_str().unwrap();
    let state = PathBuf::from(format!("{t}.idx.state"));
    assert!(state.is_file());
    let runs: &[&[&str]] = &[
        &["stats"],
        &["stats", "-f", "json"],
        &["stats", "--top", "3"],
    ];
    for run in runs {
        let one = shown(&mtf(&[run, &[t, "-j", "1"][..]].concat()));
        assert_eq!(one.2, Some(0), "{}", one.1);
        // At most a chunk per thread: -j 40 cuts at every checkpoint with a state.
        for jobs in ["2", "3", "40"] {
            let many = shown(&mtf(&[run, &[t, "-j", jobs][..]].concat()));
            assert_eq!(many, one, "mtf {} {t} -j {jobs}", run.join(" "));
        }
    }
    // What the join must get right is there: the peak is past the first chunk, temporary
    // allocations and a lifetime across every chunk.
    let json = text(&mtf(&["stats", "-f", "json", t]).stdout);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let block = &v["namespaces"][0];
    let peak_at = block["peak"]["at"]["data_record"].as_u64().unwrap();
    assert!(peak_at > 1000, "peak at {peak_at}:\n{json}");
    assert!(block["temporary"].as_u64().unwrap() > 1000, "{json}");
    assert!(
        block["lifetime"]["data_records"]["max"].as_u64().unwrap() > 4000,
        "{json}"
    );

    // A state moved to the next checkpoint: the chunk it starts is not where the one before
    // ends. The join is refused (a warning naming it) and the figures are one thread's.
    let moved = move_states_to_the_next_checkpoints(&trace, dir.path(), &state);
    let one = shown(&mtf(&["stats", t, "-j", "1"]));
    let two = shown(&mtf(&["stats", t, "-j", "40"]));
    assert_eq!(two.0, one.0);
    assert!(
        moved
            .iter()
            .any(|m| two.1.contains(&format!("checkpoint {m} ")))
            && two.1.contains("analysis state differs"),
        "{}",
        two.1
    );
    // `index --check` names the first state moved (it makes the states of a full pass only
    // where one is stored, and compares each as it is made).
    let out = mtf(&["index", "--check", t]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let first = moved.iter().min().unwrap();
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("checkpoint {first} "))
            && err.contains("its analysis state differs from the one a full pass takes there"),
        "{err}"
    );
}

/// A seek index without analysis states (`--state-budget 0`): `stats -j 2` takes the figures on
/// one thread, the same as `-j 1`'s, and says why on standard error, once; so does the semantic
/// `check -j 2`.
#[test]
fn stats_on_threads_without_analysis_states_says_it_runs_on_one() {
    let (trace, _dir) = peak_in_the_middle_indexed("0");
    let t = trace.to_str().unwrap();
    assert!(!PathBuf::from(format!("{t}.idx.state")).exists());
    let one = shown(&mtf(&["stats", t, "-j", "1"]));
    let two = shown(&mtf(&["stats", t, "-j", "2"]));
    assert_eq!(two.0, one.0);
    assert_eq!(two.2, Some(0), "{}", two.1);
    assert!(!one.1.contains("analysis state"), "{}", one.1);
    assert_eq!(
        two.1.matches("carries no analysis state").count(),
        1,
        "{}",
        two.1
    );
    let one = shown(&mtf(&["check", t, "-j", "1"]));
    let two = shown(&mtf(&["check", t, "-j", "2"]));
    assert_eq!((&two.0, two.2), (&one.0, one.2));
    assert!(!one.1.contains("analysis state"), "{}", one.1);
    assert_eq!(
        two.1.matches("carries no analysis state").count(),
        1,
        "{}",
        two.1
    );
}

/// A state file damaged where it still reads (a byte of its end state, which no chunk starts
/// from): `stats -j N` and `check -j N` compute its checksum while the chunks are read, so it is
/// refused as one loaded whole is: `stats` warns and gives one thread's figures, `check` says
/// what `-j 1` says.
#[test]
fn a_damaged_state_file_is_refused_on_threads_as_on_one() {
    let (trace, _dir) = peak_in_the_middle_indexed("100000");
    let t = trace.to_str().unwrap();
    let state = PathBuf::from(format!("{t}.idx.state"));
    let good = std::fs::read(&state).unwrap();
    let stats_one = shown(&mtf(&["stats", t, "-j", "1"]));
    // Undamaged, the states are used.
    let check_two = shown(&mtf(&["check", t, "-j", "2"]));
    assert!(
        check_two.0.contains("from 1 analysis state;"),
        "{}",
        check_two.0
    );
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 9] ^= 0x55;
    std::fs::write(&state, &bad).unwrap();
    let check_one = shown(&mtf(&["check", t, "-j", "1"]));
    assert!(!check_one.0.contains("analysis state"), "{}", check_one.0);
    for jobs in ["2", "3"] {
        let (o, e, s) = shown(&mtf(&["stats", t, "-j", jobs]));
        assert_eq!((o.as_str(), s), (stats_one.0.as_str(), stats_one.2));
        assert!(
            e.contains("x.mtf.idx.state") && e.contains("checksum mismatch"),
            "-j {jobs}: {e}"
        );
        let check = shown(&mtf(&["check", t, "-j", jobs]));
        assert_eq!(check, check_one, "-j {jobs}");
    }
}

/// States that are not the ones a pass reaches at their checkpoints (each the one before it,
/// moved there): `check -j N` compares each chunk's end with the next chunk's restored interpreter
/// (digests of their live entries, in whatever order each holds them) and reports the index's
/// problem naming the checkpoint; an undamaged index is valid.
#[test]
fn semantic_check_on_threads_reports_a_state_that_differs() {
    let dtd = root().join("dtds/hatf10.dtd");
    let (out, trace, dir) =
        crate::util::pack_stdin(dtd.to_str().unwrap(), hatf_with_findings(3000).as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = trace.to_str().unwrap();
    let ix = mtf(&["index", "--every", "61", "--state-budget", "100000", t]);
    assert!(ix.status.success(), "{}", text(&ix.stderr));
    let valid = shown(&mtf(&["check", t, "-j", "40"]));
    assert!(valid.0.contains("index states valid"), "{}", valid.0);
    let state = PathBuf::from(format!("{t}.idx.state"));
    let moved = move_states_to_the_next_checkpoints(&trace, dir.path(), &state);
    let (o, _, status) = shown(&mtf(&["check", "--max-errors", "100000", t, "-j", "40"]));
    assert_eq!(status, Some(1), "{o}");
    assert!(
        moved
            .iter()
            .any(|m| o.contains(&format!("checkpoint {m} ")))
            && o.contains("its analysis state differs from the one the semantic pass reaches"),
        "{o}"
    );
}

/// Rewrite the state file of `trace` (indexed as `x.mtf.idx` in `dir`) with the state of each
/// checkpoint from the middle one on replaced by that of the checkpoint with a state before it:
/// a chunk started from any of them is not where the one before ends, wherever the trace is
/// cut. Returns the checkpoints whose states were replaced.
fn move_states_to_the_next_checkpoints(trace: &Path, dir: &Path, state: &Path) -> Vec<usize> {
    let o = metatf::open(trace).unwrap();
    let reader = o.reader();
    let idx = metatf::index::Index::load(&dir.join("x.mtf.idx")).unwrap();
    let good = metatf::index::analysis::AnalysisState::load(state).unwrap();
    let n = idx.entries().len();
    let with: Vec<usize> = (0..n).filter(|&i| good.entry(i).is_some()).collect();
    assert!(with.len() > 10, "{} states", with.len());
    let mut entries: Vec<Option<Vec<u8>>> =
        (0..n).map(|i| good.entry(i).map(<[u8]>::to_vec)).collect();
    let moved: Vec<usize> = with[with.len() / 2..].to_vec();
    for k in with.len() / 2..with.len() {
        entries[with[k]] = good.entry(with[k - 1]).map(<[u8]>::to_vec);
    }
    let mut bad = metatf::index::analysis::AnalysisState::new(
        &idx,
        reader.schema(),
        entries,
        good.end().0.to_vec(),
    );
    bad.set_name(format!("{}.state", idx.name()));
    bad.write(state).unwrap();
    moved
}
