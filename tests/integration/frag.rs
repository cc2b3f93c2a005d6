//! Fragmentation attributed by size class and site (issue 30, item 4), end to end: a malloc-lab
//! trace whose fragmentation is known by construction, simulated and replayed, the figures set
//! against the layout worked out here from the text (not from `mtf`), on every input path.

use std::collections::HashMap;

use serde_json::Value;

use crate::util::{self, compress, mtf, mtf_stdin, text};

const SMALL: u64 = 64;
const BLOCKS: u64 = 1000;
const BIG: u64 = 100_000;

/// 1000 blocks of 64 bytes, every other one freed (the odd ids), a block of 100000 bytes
/// allocated and freed: malloc-lab's `.rep` text.
fn rep() -> String {
    let mut ops = Vec::new();
    for i in 0..BLOCKS {
        ops.push(format!("a {i} {SMALL}"));
    }
    for i in (1..BLOCKS).step_by(2) {
        ops.push(format!("f {i}"));
    }
    ops.push(format!("a {BLOCKS} {BIG}"));
    ops.push(format!("f {BLOCKS}"));
    format!("0\n{}\n{}\n0\n{}\n", BLOCKS + 1, ops.len(), ops.join("\n"))
}

/// Live blocks and bytes by size.
type BySize = HashMap<u64, (u64, u64)>;

/// What the text says, read on its own: live bytes and blocks by size at the live peak (after
/// the big allocation) and at the end, and the operations up to the peak.
fn live_by_size(text: &str) -> (BySize, BySize, u64) {
    let mut live: HashMap<u64, u64> = HashMap::new();
    let (mut bytes, mut peak, mut at_peak, mut n, mut peak_event) = (0u64, 0u64, None, 0u64, 0);
    let by_size = |live: &HashMap<u64, u64>| {
        let mut m = BySize::new();
        for &s in live.values() {
            let e = m.entry(s).or_default();
            e.0 += 1;
            e.1 += s;
        }
        m
    };
    for line in text.lines().skip(4) {
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["a", id, size] => {
                let s: u64 = size.parse().unwrap();
                live.insert(id.parse().unwrap(), s);
                bytes += s;
            }
            ["f", id] => bytes -= live.remove(&id.parse().unwrap()).unwrap(),
            _ => continue,
        }
        n += 1;
        if bytes > peak {
            (peak, peak_event) = (bytes, n);
            at_peak = Some(by_size(&live));
        }
    }
    (at_peak.unwrap(), by_size(&live), peak_event)
}

fn json(out: &std::process::Output) -> Value {
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)))
}

fn class(snapshot: &Value, hi: u64) -> &Value {
    snapshot["classes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["hi"] == hi)
        .unwrap_or_else(|| panic!("no class up to {hi}: {snapshot}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn simulate_finds_the_holes_of_a_known_fragmentation_in_their_class() {
    let dir = util::tempdir();
    let text_rep = rep();
    let src = dir.path().join("holes.rep");
    std::fs::write(&src, &text_rep).unwrap();
    let t = util::import_into(dir.path(), &src, Some("malloclab"));
    let (at_peak, at_end, _) = live_by_size(&text_rep);
    // The layout under first fit, alignment 8, worked out from the construction: block i at
    // 64·i; the holes are the freed odd blocks; the last (999) is at the top, where the big
    // block then starts. A hole between two live blocks is stranded, half to each.
    let holes_between_live = (1..BLOCKS - 1).step_by(2).count() as u64 * SMALL;
    let extent = (BLOCKS - 1) * SMALL + BIG;
    let gz = dir.path().join("holes.mtf.gz");
    std::fs::write(&gz, compress("gz", &std::fs::read(&t).unwrap())).unwrap();
    let mut docs = vec![
        json(&mtf(&[
            "simulate",
            &t.to_string_lossy(),
            "-p",
            "first-fit",
            "-f",
            "json",
        ])),
        json(&mtf(&[
            "simulate",
            &gz.to_string_lossy(),
            "-p",
            "first-fit",
            "-f",
            "json",
        ])),
    ];
    docs.push(json(&mtf_stdin(
        &["simulate", "-", "-p", "first-fit", "-f", "json"],
        &std::fs::read(&t).unwrap(),
    )));
    for doc in &docs {
        let waste = &doc["policies"][0]["waste"];
        let peak = &waste["at_peak"];
        assert_eq!((u(&peak["total"]), u(&peak["unattributed"])), (extent, 0));
        let c64 = class(peak, SMALL);
        assert_eq!(u(&c64["lo"]), 57);
        assert_eq!(
            (u(&c64["blocks"]), u(&c64["live"])),
            at_peak[&SMALL],
            "{peak}"
        );
        assert_eq!(u(&c64["stranded"]), holes_between_live);
        assert_eq!(u(&c64["overhead"]), 0);
        let big = peak["classes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| u(&c["lo"]) <= BIG && BIG <= u(&c["hi"]))
            .unwrap_or_else(|| panic!("no class holds {BIG}: {peak}"));
        assert_eq!((u(&big["blocks"]), u(&big["live"])), (1, BIG));
        let end = &waste["at_end"];
        assert_eq!(u(&class(end, SMALL)["stranded"]), holes_between_live);
        assert_eq!(u(&class(end, SMALL)["blocks"]), at_end[&SMALL].0);
        assert_eq!(
            u(&end["unattributed"]),
            extent - ((BLOCKS - 2) * SMALL + SMALL)
        );
        assert_eq!(docs[0]["policies"][0]["waste"], *waste);
    }
    // The text: the table after the summary, the class named by its sizes.
    let out = mtf(&["simulate", &t.to_string_lossy(), "-p", "first-fit"]);
    let table = text(&out.stdout);
    let row = table
        .lines()
        .find(|l| l.trim_start().starts_with("57–64"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains(&holes_between_live.to_string()), "{row}");
    assert!(
        table.contains("(the trace declares no allocation sites)"),
        "{table}"
    );
    // --top 0: no tables.
    let out = mtf(&["simulate", &t.to_string_lossy(), "--top", "0"]);
    assert!(!text(&out.stdout).contains("waste by size class"));
    // The picture: the bars of waste by class under the curves, the class labelled.
    let svg = dir.path().join("heap.svg");
    let out = mtf(&[
        "simulate",
        &t.to_string_lossy(),
        "-o",
        &svg.to_string_lossy(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(
        s.contains("waste at the heap&apos;s peak by size class")
            || s.contains("waste at the heap's peak by size class"),
        "{}",
        &s[..s.len().min(400)]
    );
    assert!(s.contains("\n57-64\n"), "no class label");
}

#[test]
fn replay_attributes_the_pages_of_the_live_blocks_at_the_live_peak_and_the_end() {
    let dir = util::tempdir();
    let text_rep = rep();
    let src = dir.path().join("holes.rep");
    std::fs::write(&src, &text_rep).unwrap();
    let t = util::import_into(dir.path(), &src, Some("malloclab"));
    let (at_peak, at_end, peak_event) = live_by_size(&text_rep);
    let out = mtf(&[
        "replay",
        &t.to_string_lossy(),
        "--repeat",
        "1",
        "--touch",
        "-f",
        "json",
    ]);
    let doc = json(&out);
    for a in doc["allocators"].as_array().unwrap() {
        let frag = &a["runs"][0]["frag"];
        for (s, want) in [(&frag["at_peak"], &at_peak), (&frag["at_end"], &at_end)] {
            let mut blocks = 0;
            for c in s["classes"].as_array().unwrap() {
                let (lo, hi) = (u(&c["lo"]), u(&c["hi"]));
                let (n, bytes) = want
                    .iter()
                    .filter(|(size, _)| (lo..=hi).contains(*size))
                    .fold((0, 0), |(n, b), (_, (k, x))| (n + k, b + x));
                assert_eq!((u(&c["blocks"]), u(&c["live"])), (n, bytes), "{c}");
                assert_eq!(u(&c["overhead"]), 0);
                blocks += n;
            }
            assert_eq!(blocks, want.values().map(|v| v.0).sum::<u64>());
            // Pages holding live bytes hold them and the stranded bytes; RSS beyond them is
            // the allocator's own.
            let page = u(&s["page_size"]);
            let pages = u(&s["pages"]);
            let stranded: u64 = s["classes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| u(&c["stranded"]))
                .sum();
            assert!(stranded <= pages * page, "{s}");
            assert_eq!(
                u(&s["unattributed"]),
                u(&s["total"]).saturating_sub(pages * page)
            );
            // 500 live 64-byte blocks (32000 bytes) lie on at least 8 pages, touched.
            assert!(pages * page >= 500 * SMALL, "{s}");
        }
        assert_eq!(u(&frag["at_peak"]["event"]), peak_event);
    }
    let svg = dir.path().join("rss.svg");
    let out = mtf(&[
        "replay",
        &t.to_string_lossy(),
        "--repeat",
        "1",
        "-o",
        &svg.to_string_lossy(),
    ]);
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(
        s.contains("live peak by size class"),
        "{}",
        &s[..s.len().min(400)]
    );
    let table = text(&out.stdout);
    assert!(
        table.contains("at the trace's live peak (after event"),
        "{table}"
    );
    assert!(table.contains("57–64"), "{table}");
}

/// A trace with sites: the tables name them as `mtf stats` does.
#[test]
fn sites_are_named_as_stats_names_them() {
    let stats = text(&mtf(&["stats", "traces/et3.mtf"]).stdout);
    let out = mtf(&[
        "simulate",
        "traces/et3.mtf",
        "-p",
        "first-fit",
        "-f",
        "json",
    ]);
    let doc = json(&out);
    let sites = doc["policies"][0]["waste"]["at_peak"]["sites"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!sites.is_empty());
    for s in &sites {
        let name = s["name"].as_str().unwrap_or_else(|| panic!("{s}"));
        assert!(stats.contains(name), "{name} not in\n{stats}");
    }
    let out = mtf(&["replay", "traces/et3.mtf", "--repeat", "1", "-f", "json"]);
    let doc = json(&out);
    let names: Vec<&str> = doc["allocators"][0]["runs"][0]["frag"]["at_peak"]["sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    let want: Vec<&str> = sites.iter().filter_map(|s| s["name"].as_str()).collect();
    let mut a = names.clone();
    let mut b = want.clone();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);
}
