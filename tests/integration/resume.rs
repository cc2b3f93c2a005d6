//! The analysis state beside a seek index (docs/format.md §15.4, `INDEX.state`): `mtf index`
//! writes it, and a slice, a moment or the peak read from it gives the output of a pass from
//! the start byte for byte (`--no-index` is that pass). The state file is read here from the
//! spec (its header and entries), to tell that states were stored and to tamper with them:
//! a state moved to another checkpoint must change the figures (the state is really used) and
//! fail `mtf index --check`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::bench_shapes::generator;
use super::util::{mtf, root, tempdir, text};

/// FNV-1a 64 (docs/format.md §15.2): the checksum of a version-1 state file.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// CRC-32 as docs/format.md §15.4 gives it (reflected, polynomial 0xEDB88320, initial and
/// final XOR 0xFFFFFFFF), a bit at a time: the checksum of a version-2 state file.
fn crc32(bytes: &[u8]) -> u64 {
    let mut c: u32 = 0xFFFF_FFFF;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0xEDB8_8320
            } else {
                c >> 1
            };
        }
    }
    u64::from(!c)
}

/// The checksum of a state file of `version`.
fn state_sum(version: u8, bytes: &[u8]) -> u64 {
    match version {
        1 => fnv1a(bytes),
        _ => crc32(bytes),
    }
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// A state file split as §15.4 lays it out: the header, per checkpoint its state (if stored),
/// the end state.
struct StateFile {
    head: Vec<u8>,
    states: Vec<Option<Vec<u8>>>,
    end: Vec<u8>,
}

impl StateFile {
    fn read(path: &Path) -> StateFile {
        let b = std::fs::read(path).unwrap();
        assert_eq!(&b[..5], b"\x7fMTS\x03", "magic and version");
        let body = b.len() - 8;
        assert_eq!(crc32(&b[..body]), le64(&b, body), "checksum");
        let count = le64(&b, 24) as usize;
        let mut at = 32;
        let mut states = Vec::new();
        for _ in 0..count {
            let len = le64(&b, at) as usize;
            at += 8;
            if len == 0 {
                states.push(None);
            } else {
                states.push(Some(b[at..at + len - 1].to_vec()));
                at += len - 1;
            }
        }
        let len = le64(&b, at) as usize;
        at += 8;
        let end = b[at..at + len].to_vec();
        assert_eq!(at + len, body, "the entries cover the file");
        StateFile {
            head: b[..32].to_vec(),
            states,
            end,
        }
    }

    fn write(&self, path: &Path) {
        let mut b = self.head.clone();
        for s in &self.states {
            match s {
                None => b.extend_from_slice(&0u64.to_le_bytes()),
                Some(s) => {
                    b.extend_from_slice(&(s.len() as u64 + 1).to_le_bytes());
                    b.extend_from_slice(s);
                }
            }
        }
        b.extend_from_slice(&(self.end.len() as u64).to_le_bytes());
        b.extend_from_slice(&self.end);
        let sum = state_sum(b[4], &b);
        b.extend_from_slice(&sum.to_le_bytes());
        std::fs::write(path, b).unwrap();
    }
}

/// The first integer of a state (LEB128): the data records before its checkpoint.
fn data_before(state: &[u8]) -> u64 {
    let mut v = 0u64;
    for (i, b) in state.iter().enumerate() {
        v |= u64::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            break;
        }
    }
    v
}

fn state_of(trace: &Path) -> PathBuf {
    PathBuf::from(format!("{}.idx.state", trace.display()))
}

/// `mtf ARGS TRACE` with the index and its state, and with `--no-index`: the same status,
/// standard output and standard error. Returns the output.
fn same(trace: &Path, args: &[&str]) -> String {
    let t = trace.to_str().unwrap();
    let mut with: Vec<&str> = args.to_vec();
    with.push(t);
    let a = mtf(&with);
    with.push("--no-index");
    let b = mtf(&with);
    assert!(a.status.success(), "{args:?}: {}", text(&a.stderr));
    assert_eq!(
        text(&a.stderr),
        text(&b.stderr),
        "{t} {args:?}: standard error"
    );
    assert_eq!(
        text(&a.stdout),
        text(&b.stdout),
        "{t} {args:?}: the output from the analysis state differs from a pass from the start"
    );
    text(&a.stdout)
}

fn index(trace: &Path, every: &str) -> StateFile {
    // States at most checkpoints (ten times the trace's bytes at most), for the test.
    let o = mtf(&[
        "index",
        "--every",
        every,
        "--state-budget",
        "1000",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let said = text(&o.stdout);
    assert!(said.contains(".idx.state: analysis state at"), "{said}");
    StateFile::read(&state_of(trace))
}

/// The declared time just before data record `n` (from a pass from the start).
fn time_before(trace: &Path, n: u64) -> Option<u64> {
    let o = mtf(&[
        "stats",
        "--no-index",
        "-f",
        "json",
        "--at",
        &n.to_string(),
        trace.to_str().unwrap(),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["namespaces"][0]["live"]["before"]["time"].as_u64()
}

#[test]
fn every_shape_resumes_with_the_figures_of_a_pass_from_the_start() {
    for (name, shape) in generator::Shape::ALL {
        let dir = tempdir();
        let mut bytes = Vec::new();
        generator::generate(&mut bytes, 30_000, 5, shape).unwrap();
        let (dtd_name, dtd) = shape.dtd();
        std::fs::write(dir.path().join(dtd_name), dtd).unwrap();
        let trace = dir.path().join("t.mtf");
        std::fs::write(&trace, &bytes).unwrap();
        let states = index(&trace, "3000");
        let stored: Vec<u64> = states
            .states
            .iter()
            .flatten()
            .map(|s| data_before(s))
            .collect();
        assert!(stored.len() >= 3, "{name}: states at {stored:?}");
        let mid = stored[stored.len() / 2];
        let mut points = vec![
            0,
            1,
            mid - 1,
            mid,
            mid + 1,
            mid + 777,
            29_999,
            30_000,
            45_000,
        ];
        points.extend(stored.iter().map(|d| d + 3));
        let t = time_before(&trace, mid + 500).expect("a clock");
        // Every point in JSON (every figure); the text is the same figures laid out, so it is
        // compared at a few points only (at, just after and between states, the end).
        let few = [mid, mid + 1, mid + 777, 30_000];
        for fmt in ["text", "json"] {
            let points = if fmt == "json" { &points[..] } else { &few[..] };
            for p in points {
                let p = p.to_string();
                same(&trace, &["stats", "-f", fmt, "--from", &p]);
                same(&trace, &["stats", "-f", fmt, "--at", &p]);
            }
            let (a, b) = ((mid + 10).to_string(), (mid + 9000).to_string());
            same(&trace, &["stats", "-f", fmt, "--from", &a, "--to", &b]);
            same(&trace, &["stats", "-f", fmt, "--from", &format!("t{t}")]);
            same(&trace, &["stats", "-f", fmt, "--at", &format!("t{t}")]);
            same(
                &trace,
                &["stats", "-f", fmt, "--from", &format!("t{t}"), "--to", &b],
            );
            same(&trace, &["stats", "-f", fmt, "--at-peak"]);
            // A slice that ends (by record, before the first state) before it starts (by
            // time, after several): no checkpoint is before it.
            let early = (mid - 1).to_string();
            let from_t = format!("t{t}");
            let args = ["stats", "-f", fmt, "--from", &from_t, "--to", &early];
            let mut pass = args.to_vec();
            pass.extend([trace.to_str().unwrap(), "--no-index"]);
            // (Where the clock has not moved by then, the slice by time is refused: no case.)
            if mtf(&pass).status.success() {
                same(&trace, &args);
            }
        }
        // The state is really what the figures come from: the state of one checkpoint moved
        // to the next one gives other figures (and `index --check` finds it).
        let check = mtf(&["index", "--check", trace.to_str().unwrap()]);
        assert!(check.status.success(), "{name}: {}", text(&check.stderr));
        assert!(text(&check.stdout).contains("analysis state at"));
        let i = states
            .states
            .iter()
            .position(|s| s.as_ref().is_some_and(|s| data_before(s) == mid))
            .unwrap();
        let mut moved = StateFile {
            head: states.head.clone(),
            states: states.states.clone(),
            end: states.end.clone(),
        };
        let j = (0..i).rev().find(|j| states.states[*j].is_some()).unwrap();
        moved.states[i] = states.states[j].clone();
        moved.write(&state_of(&trace));
        let at = (mid + 5).to_string();
        let t_ = trace.to_str().unwrap();
        let a = mtf(&["stats", "--from", &at, t_]);
        let b = mtf(&["stats", "--from", &at, "--no-index", t_]);
        assert_ne!(
            text(&a.stdout),
            text(&b.stdout),
            "{name}: a state moved to another checkpoint changed nothing: is it read?"
        );
        let check = mtf(&["index", "--check", t_]);
        assert_eq!(check.status.code(), Some(1), "{name}");
        let err = text(&check.stderr);
        assert!(
            err.contains("mtf::index::mismatch") && err.contains(&format!("checkpoint {i}")),
            "{name}: {err}"
        );
    }
}

/// The shipped Android trace copied into `dir`, indexed with a state every 10 records; with
/// the figures of `stats --from 60` (the same from the states as from the start).
fn android_indexed(dir: &tempfile::TempDir) -> (PathBuf, String) {
    let trace = dir.path().join("android.mtf");
    std::fs::copy(root().join("traces/android.mtf"), &trace).unwrap();
    let states = index(&trace, "10");
    assert!(states.states.iter().flatten().count() >= 2);
    let want = same(&trace, &["stats", "--from", "60"]);
    (trace, want)
}

#[test]
fn a_state_of_another_index_or_a_damaged_one_is_skipped_with_a_warning() {
    let dir = tempdir();
    let (trace, want) = android_indexed(&dir);
    let t = trace.to_str().unwrap();
    // The index rebuilt with other checkpoints, the old state kept: refused, not used.
    let kept = std::fs::read(state_of(&trace)).unwrap();
    let o = mtf(&["index", "--every", "12", t]);
    assert!(o.status.success());
    std::fs::write(state_of(&trace), &kept).unwrap();
    let o = mtf(&["stats", "--from", "60", t]);
    assert!(o.status.success());
    assert_eq!(text(&o.stdout), want);
    let err = text(&o.stderr);
    assert!(err.contains("made for another index"), "{err}");
    // A damaged state file: a warning naming it, the figures of a pass from the start.
    let mut bad = kept.clone();
    let n = bad.len();
    bad[n / 2] ^= 0x55;
    std::fs::write(state_of(&trace), &bad).unwrap();
    let o = mtf(&["stats", "--from", "60", t]);
    assert!(o.status.success());
    assert_eq!(text(&o.stdout), want);
    assert!(
        text(&o.stderr).contains("checksum mismatch"),
        "{}",
        text(&o.stderr)
    );
    // `--at` is a moment, not a slice.
    let o = mtf(&["stats", "--at", "5", "--from", "3", t]);
    assert_eq!(o.status.code(), Some(2));
}

/// A state file of versions 1 and 2 (whose input lines counted the records an import's mapping
/// writes, docs/format.md §15.4) and a version this reader does not know are refused with a
/// warning naming the version, the figures then those of a pass from the start; a state of
/// the version `mtf index` writes (3) is used, and refused where its checksum fails.
#[test]
fn a_state_of_an_older_or_unknown_version_is_refused() {
    let dir = tempdir();
    let (trace, want) = android_indexed(&dir);
    let t = trace.to_str().unwrap();
    let kept = std::fs::read(state_of(&trace)).unwrap();
    assert_eq!(kept[4], 3, "the version written");
    let with_version = |v: u8| {
        let mut b = kept[..kept.len() - 8].to_vec();
        b[4] = v;
        let sum = state_sum(v, &b);
        b.extend_from_slice(&sum.to_le_bytes());
        b
    };
    std::fs::write(state_of(&trace), with_version(3)).unwrap();
    let o = mtf(&["stats", "--from", "60", "-j", "1", t]);
    assert!(o.status.success());
    assert_eq!(text(&o.stdout), want);
    assert_eq!(text(&o.stderr), "", "a version-3 state is used as it is");
    for v in [1u8, 2, 4] {
        std::fs::write(state_of(&trace), with_version(v)).unwrap();
        let o = mtf(&["stats", "--from", "60", t]);
        assert!(o.status.success());
        assert_eq!(text(&o.stdout), want, "version {v}");
        let err = text(&o.stderr);
        assert!(
            err.contains(&format!("version {v}")) && err.contains(".idx.state"),
            "{err}"
        );
    }
    // The current version with its bytes damaged: its checksum fails.
    let mut bad = with_version(3);
    let n = bad.len();
    bad[n / 2] ^= 0x21;
    std::fs::write(state_of(&trace), &bad).unwrap();
    let o = mtf(&["stats", "--from", "60", t]);
    assert_eq!(text(&o.stdout), want);
    assert!(
        text(&o.stderr).contains("checksum mismatch"),
        "{}",
        text(&o.stderr)
    );
}

#[cfg(feature = "flamegraph")]
#[test]
fn flame_graphs_at_a_moment_and_at_the_peak_resume_on_traces_with_stacks() {
    let dir = tempdir();
    let mut traces = Vec::new();
    let stacks = root().join("tests/data/heaptrack-stacks");
    for (name, from, input) in [
        ("nested", "heaptrack", stacks.join("nested.zst")),
        ("inlined", "heaptrack", stacks.join("inlined.zst")),
        ("threads", "heaptrack", stacks.join("threads.zst")),
        ("et3", "et3", root().join("tests/data/stacks-et3/trace")),
    ] {
        let out = dir.path().join(format!("{name}.mtf"));
        let o = mtf(&[
            "import",
            "--from",
            from,
            input.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{name}: {}", text(&o.stderr));
        traces.push(out);
    }
    for trace in &traces {
        let states = index(trace, "8");
        let stored: Vec<u64> = states
            .states
            .iter()
            .flatten()
            .map(|s| data_before(s))
            .collect();
        assert!(!stored.is_empty(), "{}: no state stored", trace.display());
        let last = *stored.last().unwrap();
        for p in [
            stored[0],
            stored[0] + 1,
            last,
            last + 2,
            stored[stored.len() / 2] + 5,
        ] {
            let p = p.to_string();
            same(trace, &["flamegraph", "--folded", "--at", &p]);
            same(trace, &["flamegraph", "--folded", "--merge", "--at", &p]);
            same(trace, &["stats", "--by", "stack", "--at", &p]);
            same(trace, &["stats", "--at", &p, "-f", "json"]);
            // Drawn by another cost, a moment needs the flows from the start: a pass.
            same(
                trace,
                &[
                    "flamegraph",
                    "--folded",
                    "--at",
                    &p,
                    "--cost",
                    "allocations",
                ],
            );
        }
        same(trace, &["flamegraph", "--folded", "--at-peak"]);
        same(trace, &["flamegraph", "--at-peak", "-o", "-"]);
        same(trace, &["stats", "--by", "stack", "--at-peak"]);
        same(trace, &["stats", "--at-peak"]);
        same(trace, &["stats", "--at-peak", "-f", "json"]);
        same(
            trace,
            &["stats", "--from", &(last + 1).to_string(), "-f", "json"],
        );
    }
}

#[test]
fn a_moment_before_the_second_time_or_past_the_end_is_answered_and_named() {
    let dir = tempdir();
    let t = dir.path().join("android-timed.mtf");
    std::fs::copy(root().join("traces/android-timed.mtf"), &t).unwrap();
    let o = mtf(&["index", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // At time 0 the pass stops at the first record, having seen one time: a moment, not a
    // trace without a clock.
    let out = same(&t, &["stats", "--at", "t0"]);
    assert!(out.contains("nothing live"), "{out}");
    // Past the last record: the live state at the end, and a note naming the option given.
    let o = mtf(&["stats", "--at", "99999999", t.to_str().unwrap()]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("no data record at or after --at"), "{err}");
}
