//! `mtf stats`, `diff`, `plot`, `report`: figures checked against an independent count of the
//! original text, golden JSON on the shipped samples, and every input path.
//!
//! Regenerate the golden files with `MTF_BLESS=1 cargo test --test integration stats`.

use std::collections::HashMap;

use metatf::analysis::stats::{compute_opened, Bound, SpaceSummary, Window};

use crate::util;

/// What an independent reading of an Android memory_replay text gives: a few lines of
/// straightforward code over `<tid>: <action> <ptr> [args]`, with the semantics of
/// README.format (calloc allocates nmemb × size; realloc frees the old block, if any, and
/// allocates the new one, if any; free(0x0) does nothing; a free of a block that is not alive
/// does nothing).
#[derive(Debug, Default, PartialEq)]
struct Independent {
    allocations: u64,
    bytes_allocated: u128,
    frees: u64,
    bytes_freed: u128,
    peak_bytes: u128,
    peak_blocks: u64,
    leaked_bytes: u128,
    leaked_blocks: u64,
    temporary: u64,
    /// Allocations and their bytes per log2 class of size (index: bit length of the size):
    /// the two size histograms of `mtf plot`.
    classes: HashMap<u32, (u64, u64)>,
}

fn independent(text: &str) -> Independent {
    let mut live: HashMap<u64, u64> = HashMap::new();
    let mut r = Independent::default();
    let mut bytes = 0u128;
    // heaptrack's temporary: a free that immediately follows the allocation of the same block.
    let mut last_alloc: Option<u64> = None;
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let dec = |s: &str| s.parse::<u64>().unwrap();
    for line in text.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let mut free = |r: &mut Independent, bytes: &mut u128, a: u64| {
            if let Some(size) = live.remove(&a) {
                let size = u128::from(size);
                r.frees += 1;
                r.bytes_freed += size;
                *bytes -= size;
                if last_alloc == Some(a) {
                    r.temporary += 1;
                }
                last_alloc = None;
            }
        };
        let (mut freed, mut alloc) = (None, None);
        match w[1] {
            "malloc" => alloc = Some((hex(w[2]), dec(w[3]))),
            "calloc" => alloc = Some((hex(w[2]), dec(w[3]) * dec(w[4]))),
            "memalign" => alloc = Some((hex(w[2]), dec(w[4]))),
            "free" => freed = Some(hex(w[2])),
            "realloc" => {
                let (new, old, size) = (hex(w[2]), hex(w[3]), dec(w[4]));
                if old != 0 {
                    freed = Some(old);
                }
                if new != 0 {
                    alloc = Some((new, size));
                }
            }
            _ => {}
        }
        if let Some(a) = freed.filter(|a| *a != 0) {
            free(&mut r, &mut bytes, a);
        }
        if let Some((a, size)) = alloc {
            live.insert(a, size);
            bytes += u128::from(size);
            r.allocations += 1;
            r.bytes_allocated += u128::from(size);
            let class = r.classes.entry(64 - size.leading_zeros()).or_default();
            class.0 += 1;
            class.1 += size;
            last_alloc = Some(a);
            if bytes > r.peak_bytes {
                r.peak_bytes = bytes;
                r.peak_blocks = live.len() as u64;
            }
        }
    }
    r.leaked_bytes = live.values().map(|&v| u128::from(v)).sum();
    r.leaked_blocks = live.len() as u64;
    r
}

fn engine(s: &SpaceSummary) -> Independent {
    Independent {
        allocations: s.allocations,
        bytes_allocated: s.bytes_allocated,
        frees: s.frees,
        bytes_freed: s.bytes_freed,
        peak_bytes: s.peak_bytes,
        peak_blocks: s.peak_blocks,
        leaked_bytes: s.live_bytes,
        leaked_blocks: s.live_blocks,
        temporary: s.temporary,
        classes: s
            .sizes
            .iter()
            .map(|c| (64 - c.lo.leading_zeros(), (c.count, c.bytes as u64)))
            .collect(),
    }
}

fn import(src: &str, dir: &tempfile::TempDir) -> std::path::PathBuf {
    let out = dir.path().join("t.mtf");
    let o = util::mtf(&["import", src, "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", util::text(&o.stderr));
    out
}

#[test]
fn android_figures_match_an_independent_count_of_the_text() {
    for src in [
        "tests/data/stats/android-stats.txt",
        "tests/data/import/alloc/android-systemui.txt",
    ] {
        let text = std::fs::read_to_string(util::root().join(src)).unwrap();
        let expected = independent(&text);
        assert!(expected.allocations > 0 && expected.frees > 0);
        let dir = util::tempdir();
        let t = import(src, &dir);
        let opened = metatf::open(&t).unwrap();
        let stats = compute_opened(&opened, Window::all());
        assert_eq!(stats.problems, 0);
        let heap: Vec<&SpaceSummary> = stats.spaces.iter().filter(|s| s.sized).collect();
        assert_eq!(heap.len(), 1, "{src}: one namespace of sized blocks");
        assert_eq!(engine(heap[0]), expected, "{src}");
        // The heap is the namespace shown; heaps and threads hold no bytes.
        let shown: Vec<&str> = stats
            .shown_spaces()
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(shown, [heap[0].name.as_str()], "{src}");
    }
}

#[test]
fn a_slice_counts_only_its_allocations() {
    let dir = util::tempdir();
    let t = import("tests/data/stats/android-stats.txt", &dir);
    let opened = metatf::open(&t).unwrap();
    let all = compute_opened(&opened, Window::all());
    let n = all.end.record;
    let halves = [
        Window {
            from: None,
            to: Some(Bound::Record(n / 2)),
        },
        Window {
            from: Some(Bound::Record(n / 2)),
            to: None,
        },
    ];
    let parts: Vec<_> = halves.iter().map(|w| compute_opened(&opened, *w)).collect();
    let (a, b) = (&parts[0].spaces[0], &parts[1].spaces[0]);
    let whole = &all.spaces[0];
    assert_eq!(a.allocations + b.allocations, whole.allocations);
    assert_eq!(a.bytes_allocated + b.bytes_allocated, whole.bytes_allocated);
    assert_eq!(a.frees + b.frees, whole.frees);
    assert_eq!(a.temporary + b.temporary, whole.temporary);
    assert_eq!(b.live_bytes, whole.live_bytes);
    assert_eq!(a.peak_bytes.max(b.peak_bytes), whole.peak_bytes);
    assert_eq!(parts[0].records + parts[1].records, all.records);
    assert_eq!(parts[1].start.record, n / 2);
}

/// The samples the golden files cover: (trace, golden name).
const SAMPLES: [&str; 5] = ["android", "et3", "heaptrack", "valgrind", "malloclab"];

#[test]
fn golden_stats_json() {
    for name in SAMPLES {
        let o = util::mtf(&["stats", "-f", "json", &format!("traces/{name}.mtf")]);
        assert!(o.status.success(), "{name}: {}", util::text(&o.stderr));
        util::golden(
            &format!("tests/golden/stats/{name}.json"),
            &util::text(&o.stdout),
        );
    }
    let o = util::mtf(&["stats", "traces/et3.mtf"]);
    assert!(o.status.success());
    util::golden("tests/golden/stats/et3.txt", &util::text(&o.stdout));
}

#[test]
fn golden_diff_json() {
    let o = util::mtf(&[
        "diff",
        "-f",
        "json",
        "traces/android.mtf",
        "traces/valgrind.mtf",
    ]);
    assert!(o.status.success(), "{}", util::text(&o.stderr));
    util::golden(
        "tests/golden/stats/diff-android-valgrind.json",
        &util::text(&o.stdout),
    );
    let o = util::mtf(&["diff", "traces/android.mtf", "traces/valgrind.mtf"]);
    assert!(o.status.success());
    util::golden(
        "tests/golden/stats/diff-android-valgrind.txt",
        &util::text(&o.stdout),
    );
}

#[test]
fn every_input_path_gives_the_same_figures() {
    let file = util::mtf(&["stats", "-f", "json", "traces/android.mtf"]);
    assert!(file.status.success());
    let bytes = std::fs::read(util::root().join("traces/android.mtf")).unwrap();
    let stdin = util::mtf_stdin(&["stats", "-f", "json", "-"], &bytes);
    assert_eq!(util::text(&stdin.stdout), util::text(&file.stdout));
    let dir = util::tempdir();
    let gz = dir.path().join("t.mtf.gz");
    {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz).unwrap(),
            flate2::Compression::fast(),
        );
        e.write_all(&bytes).unwrap();
        e.finish().unwrap();
    }
    let z = util::mtf(&["stats", "-f", "json", gz.to_str().unwrap()]);
    assert_eq!(util::text(&z.stdout), util::text(&file.stdout));
    // -o writes the same through a file.
    let out = dir.path().join("s.json");
    let o = util::mtf(&[
        "stats",
        "-f",
        "json",
        "traces/android.mtf",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        util::text(&file.stdout)
    );
}

#[test]
fn time_slices_and_the_state_at_the_peak() {
    // ET3 declares times: a slice by time starts at the first record with that time or later.
    let opened = metatf::open(util::root().join("traces/et3.mtf")).unwrap();
    let all = compute_opened(&opened, Window::all());
    let t = all.end.time.expect("ET3 declares times");
    assert!(t > 0);
    let w = Window {
        from: Some(Bound::Time(t)),
        to: None,
    };
    let part = compute_opened(&opened, w);
    assert!(part.records < all.records && part.records > 0);
    assert!(part.start.time.is_some_and(|x| x >= t));
    assert_eq!(part.end.record, all.end.record);
    let empty = util::mtf(&["stats", "--from", "10", "--to", "10", "traces/et3.mtf"]);
    assert_eq!(empty.status.code(), Some(2));
    assert!(util::text(&empty.stderr).contains("slice is empty"));
    let o = util::mtf(&["stats", "--at-peak", "traces/android.mtf"]);
    assert!(o.status.success());
    let text = util::text(&o.stdout);
    assert!(text.contains("peak"), "{text}");
    let bad = util::mtf(&["stats", "--from", "x12", "traces/android.mtf"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(util::text(&bad.stderr).contains("record index"));
}

#[test]
fn plot_and_report_write_their_files() {
    let dir = util::tempdir();
    for ext in ["svg", "png"] {
        let out = dir.path().join(format!("p.{ext}"));
        let o = util::mtf(&["plot", "traces/android.mtf", "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", util::text(&o.stderr));
        let data = std::fs::read(&out).unwrap();
        match ext {
            "svg" => assert!(util::text(&data).contains("<svg")),
            _ => assert_eq!(&data[1..4], b"PNG"),
        }
    }
    let bad = util::mtf(&[
        "plot",
        "traces/android.mtf",
        "-o",
        dir.path().join("p.gif").to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(!dir.path().join("p.gif").exists());
    let page = dir.path().join("r.html");
    let o = util::mtf(&["report", "traces/et3.mtf", "-o", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", util::text(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg"));
    // Self-contained: no script, nothing loaded (the only URL is the SVG namespace's name).
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href="));
    assert!(!html.contains("@import") && !html.contains("url("));
    let urls = html.matches("http").count();
    assert_eq!(urls, html.matches("http://www.w3.org/2000/svg").count());
}

#[test]
fn bookkeeping_namespaces_and_sums_of_ids_are_left_out() {
    // Android declares heaps and threads beside the heap's blocks; heaptrack its allocation
    // infos: ids without bytes. The text names them once; the JSON keeps them.
    for (trace, hidden) in [
        ("traces/android.mtf", "namespaces heaps, threads"),
        ("traces/heaptrack.mtf", "namespace allocinfo"),
    ] {
        let o = util::mtf(&["stats", trace]);
        assert!(o.status.success());
        let text = util::text(&o.stdout);
        assert_eq!(text.matches("\nnamespace ").count(), 1, "{text}");
        assert!(
            text.contains(&format!("(not shown, no bytes allocated: {hidden};")),
            "{text}"
        );
        let o = util::mtf(&["stats", "-f", "json", trace]);
        let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(json["namespaces"].as_array().unwrap().len() > 1);
    }
    // A sum of addresses means nothing: the fields that define or end ids, times and threads
    // have none in the text; sizes keep theirs (and the JSON has every sum). (HATF's `time`
    // column is no declared time in hatf-android.dtd: bionic's `start` is.)
    let o = util::mtf(&["stats", "traces/android.mtf"]);
    let text = util::text(&o.stdout);
    let alloc = text.split("  alloc [heap]").nth(1).unwrap();
    let line = |name: &str| {
        alloc
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap()
            .to_string()
    };
    assert!(line("size").ends_with("sum 2864"), "{}", line("size"));
    for label in ["address", "thread"] {
        assert!(!line(label).contains("sum"), "{}", line(label));
    }
    let o = util::mtf(&["stats", "-f", "json", "traces/android.mtf"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let alloc = json["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "alloc")
        .unwrap();
    let field = |n: &str| {
        alloc["fields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(field("address")["summable"], false);
    assert_eq!(field("size")["summable"], true);
    assert_eq!(field("size")["sum"], 2864);
}

#[test]
fn the_report_heads_each_column_once_and_shows_what_has_content() {
    let dir = util::tempdir();
    let page = dir.path().join("r.html");
    let o = util::mtf(&["report", "traces/android.mtf", "-o", page.to_str().unwrap()]);
    assert!(o.status.success(), "{}", util::text(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    for table in html.split("<table>").skip(1) {
        let head = table.split("</tr>").next().unwrap();
        let names: Vec<&str> = head
            .split("<th")
            .skip(1)
            .map(|h| h.split('>').nth(1).unwrap().trim_end_matches("</th"))
            .filter(|h| !h.is_empty())
            .collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
    }
    assert!(html.contains("<h2>Namespace block</h2>"));
    assert!(!html.contains("<h2>Namespace heaps") && !html.contains("<h2>Namespace threads"));
    assert!(html.contains("namespaces heaps, threads"));
    // Both size histograms; no sum of addresses (157296601144) in the records' table.
    assert!(html.contains("Allocations by size") && html.contains("Bytes allocated by size"));
    assert!(!html.contains("157296601144"));
    assert!(html.contains("<td>2864</td>"));
    // The sample has no clock: no time is shown.
    assert!(!html.contains("time 0"), "a time that never moves");
}

#[test]
fn the_plot_axis_spans_the_heap_events() {
    // mtrace.mtf: 17 data records, the heap events among data records 3 to 10; the later ones
    // are raw lines. The live-bytes chart's axis is labelled from 3 to 11 (data records).
    let o = util::mtf(&["plot", "traces/mtrace.mtf", "-o", "-"]);
    assert!(o.status.success(), "{}", util::text(&o.stderr));
    let svg = util::text(&o.stdout);
    let labels: Vec<&str> = svg
        .split("</text>")
        .filter_map(|t| t.rsplit('>').next().map(str::trim))
        .collect();
    for tick in ["3", "4", "10", "11"] {
        assert!(labels.contains(&tick), "{tick} in {labels:?}");
    }
    for tick in ["14", "16", "17"] {
        assert!(!labels.contains(&tick), "{tick} in {labels:?}");
    }
    assert!(labels.contains(&"12.5 KiB") && !labels.iter().any(|l| l.contains("11.7")));
}

/// A slice by time that ends at or before the first time a record declares has seen one time
/// only; the trace's clock is the whole trace's (docs/stats.md, "Time"): android-timed.mtf's
/// times move, so the slice is taken (empty), as `dump` and `check` take it, and its clock is
/// shown as moving; android.mtf has no clock, and the same slice is still refused.
#[test]
fn a_time_slice_ending_before_the_times_move_is_judged_by_the_whole_trace_s_clock() {
    for to in ["--to=t1000000000", "--to=t5"] {
        let o = util::mtf(&["stats", "-f", "json", to, "traces/android-timed.mtf"]);
        assert!(o.status.success(), "{to}: {}", util::text(&o.stderr));
        let json = util::text(&o.stdout);
        assert!(json.contains(r#""clock": "moving""#), "{to}: {json}");
        let o = util::mtf(&["stats", to, "traces/android-timed.mtf"]);
        assert!(util::text(&o.stdout).contains("no allocations in the slice"));
    }
    let o = util::mtf(&["stats", "--to", "t0", "traces/android.mtf"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(util::text(&o.stderr).contains("no_clock"));
}
