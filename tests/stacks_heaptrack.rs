//! `metatf::stacks::write_folded` in heaptrack mode against heaptrack_print's own output:
//! every recording of tests/data/heaptrack-stacks, every cost type `-F` offers.
//!
//! The profiles are built here from the recordings' text by heaptrack's reading rules
//! (heaptrack 1.4.0's `accumulatedtracedata.cpp`, restated in that folder's README): `s`
//! strings, `i` instruction pointers with their inlined frames, `t` trace nodes (an
//! `operator new` node replaced by its parent, the walk stopping after `main`), `a` allocation
//! infos, and the costs of `+` and `-` lines. Nothing of mtf's own reading is used, so a match
//! shows that the folded writer prints a profile as heaptrack_print does.

use std::collections::HashMap;
use std::path::PathBuf;

use metatf::stacks::{write_folded, Cost, Costs, FoldedOptions, Frame, Leaf, Node, StackProfile};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/heaptrack-stacks")
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s, 16).unwrap_or_else(|_| panic!("not hex: {s}"))
}

const OPERATOR_NEW: [&str; 4] = [
    "operator new(unsigned long)",
    "operator new[](unsigned long)",
    "operator new(unsigned int)",
    "operator new[](unsigned int)",
];
const STOPS: [&str; 3] = [
    "main",
    "__libc_start_main",
    "__static_initialization_and_destruction_0",
];

/// A recording read as heaptrack_print reads it, into a profile whose leaves are its
/// allocation traces in the order of the first `a` line naming each.
fn profile(name: &str) -> StackProfile {
    let raw = std::fs::read(dir().join(format!("{name}.zst"))).unwrap();
    let text = String::from_utf8(zstd::stream::decode_all(&raw[..]).unwrap()).unwrap();
    let mut strings: Vec<String> = Vec::new();
    let mut p = StackProfile {
        space: "block".into(),
        sized: true,
        ..StackProfile::default()
    };
    // Per ip (1-based): its frames' indices and whether its first frame stops a walk.
    let mut ips: Vec<(Vec<u32>, bool)> = Vec::new();
    // Per trace (1-based): its node in the profile (None: the root).
    let mut traces: Vec<Option<u32>> = Vec::new();
    let mut infos: Vec<(u64, usize)> = Vec::new(); // size, trace
    let mut leaf_of: HashMap<usize, usize> = HashMap::new(); // trace -> leaf
    let s = |strings: &Vec<String>, i: u64| (i > 0).then(|| strings[i as usize - 1].clone());
    let mut events: Vec<(bool, usize)> = Vec::new();
    for line in text.lines() {
        let mut w = line.split(' ');
        match w.next() {
            Some("s") => {
                let len = hex(w.next().unwrap()) as usize;
                let at = line.find(' ').unwrap() + 1;
                let rest = &line[at..];
                let at = rest.find(' ').unwrap() + 1;
                assert_eq!(rest[at..].len(), len);
                strings.push(rest[at..].to_string());
            }
            Some("i") => {
                let f: Vec<u64> = w.map(hex).collect();
                let (address, module) = (f[0], s(&strings, f[1]));
                let triples: Vec<&[u64]> = f[2..].chunks(3).collect();
                let mut frames = Vec::new();
                let n = triples.len().max(1);
                for k in 0..n {
                    let t = triples.get(k).copied().unwrap_or(&[]);
                    p.frames.push(Frame {
                        function: t.first().and_then(|&i| s(&strings, i)),
                        file: t.get(1).and_then(|&i| s(&strings, i)),
                        line: t.get(2).copied(),
                        module: module.clone(),
                        address: Some(address),
                        owner: None,
                        inlined: k + 1 < n,
                    });
                    frames.push(p.frames.len() as u32 - 1);
                }
                let first = p.frames[frames[0] as usize].function.as_deref();
                let stop = first.is_some_and(|f| STOPS.contains(&f));
                let new = first.is_some_and(|f| OPERATOR_NEW.contains(&f));
                ips.push((if new { Vec::new() } else { frames }, stop));
            }
            Some("t") => {
                let (ip, parent) = (hex(w.next().unwrap()), hex(w.next().unwrap()) as usize);
                let parent_node = if parent == 0 {
                    None
                } else {
                    traces[parent - 1]
                };
                let (frames, stop) = &ips[ip as usize - 1];
                if frames.is_empty() {
                    // operator new: the trace is its parent.
                    traces.push(parent_node);
                    continue;
                }
                p.nodes.push(Node {
                    parent: if *stop { None } else { parent_node },
                    frames: frames.clone(),
                });
                traces.push(Some(p.nodes.len() as u32 - 1));
            }
            Some("a") => {
                let (size, trace) = (hex(w.next().unwrap()), hex(w.next().unwrap()) as usize);
                infos.push((size, trace));
                leaf_of.entry(trace).or_insert_with(|| {
                    p.leaves.push(Leaf {
                        node: if trace == 0 { None } else { traces[trace - 1] },
                        ..Leaf::default()
                    });
                    p.leaves.len() - 1
                });
            }
            Some("+") => events.push((true, hex(w.next().unwrap()) as usize)),
            Some("-") => events.push((false, hex(w.next().unwrap()) as usize)),
            _ => {}
        }
    }
    // The costs, as heaptrack's two passes compute them.
    let mut max = 0i128;
    let mut total = 0i128;
    for &(alloc, info) in &events {
        let size = infos[info].0 as i128;
        if alloc {
            total += size;
            max = max.max(total);
        } else {
            total -= size;
        }
    }
    let mut live = vec![0i128; p.leaves.len()];
    let mut costs = vec![Costs::default(); p.leaves.len()];
    let (mut total, mut last, mut peak_taken) = (0i128, 0usize, false);
    for &(alloc, info) in &events {
        let (size, trace) = infos[info];
        let leaf = leaf_of[&trace];
        if alloc {
            costs[leaf].allocations += 1;
            costs[leaf].bytes += size as u128;
            live[leaf] += size as i128;
            total += size as i128;
            last = info;
            if total == max && !peak_taken {
                peak_taken = true;
                for (c, l) in costs.iter_mut().zip(&live) {
                    c.peak = *l as u128;
                }
            }
        } else {
            live[leaf] -= size as i128;
            total -= size as i128;
            if info == last {
                costs[leaf].temporary += 1;
            }
            last = 0;
        }
    }
    for ((leaf, c), l) in p.leaves.iter_mut().zip(costs).zip(live) {
        leaf.costs = c;
        leaf.costs.leaked = l as u128;
    }
    p
}

#[test]
fn folded_stacks_equal_heaptrack_print() {
    let mut checked = 0;
    for name in ["nested", "temporaries", "inlined", "threads", "templates"] {
        let p = profile(name);
        for cost in [Cost::Allocations, Cost::Temporary, Cost::Peak, Cost::Leaked] {
            let golden =
                std::fs::read_to_string(dir().join(format!("{name}.{}.folded", cost.name())))
                    .unwrap();
            let mut out = Vec::new();
            write_folded(&p, cost, &FoldedOptions::heaptrack(), &mut out).unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                golden,
                "{name}, {}",
                cost.name()
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 20);
}

/// Flame graphs of every recording: each names every frame of its folded stacks, with the
/// cost's unit. `MTF_FLAME_OUT=DIR` keeps the pictures (`P.C.svg`, `P.reverse.svg`) to be looked at.
#[test]
fn flame_graphs_name_every_frame() {
    use metatf::stacks::{folded_lines, write_flamegraph, FlameOptions};
    let keep = std::env::var_os("MTF_FLAME_OUT").map(PathBuf::from);
    for name in ["nested", "temporaries", "inlined", "threads", "templates"] {
        let p = profile(name);
        for (cost, reverse) in [
            (Cost::Allocations, false),
            (Cost::Peak, false),
            (Cost::Leaked, true),
        ] {
            let opts = FlameOptions {
                cost,
                subject: Some(format!("{name}.zst")),
                folded: FoldedOptions {
                    reverse,
                    ..FoldedOptions::default()
                },
                inverted: reverse,
                ..FlameOptions::default()
            };
            let mut out = Vec::new();
            write_flamegraph(&p, &opts, &mut out).unwrap();
            let svg = String::from_utf8(out).unwrap();
            assert!(svg.contains(&format!("{name}.zst: ")));
            for (stack, _) in folded_lines(&p, cost, &FoldedOptions::default()) {
                for frame in stack.split(';') {
                    let escaped = frame
                        .replace('&', "&amp;")
                        .replace('<', "&lt;")
                        .replace('>', "&gt;");
                    assert!(
                        svg.contains(&format!("<title>{escaped} (")),
                        "{name} {}: {frame}",
                        cost.name()
                    );
                }
            }
            assert!(svg.contains(&format!(" {}, ", cost.noun())));
            if let Some(dir) = &keep {
                let file = if reverse {
                    format!("{name}.{}.reverse.svg", cost.name())
                } else {
                    format!("{name}.{}.svg", cost.name())
                };
                std::fs::write(dir.join(file), svg).unwrap();
            }
        }
    }
}

/// A differential flame graph between a recording and a changed copy (recursion doubled, the
/// `grow` stacks gone): kept with `MTF_FLAME_OUT=DIR` as `nested.diff.svg`.
#[test]
fn a_differential_flame_graph_of_a_recording() {
    use metatf::stacks::{write_diff_flamegraph, FlameOptions};
    let before = profile("nested");
    let mut after = before.clone();
    for leaf in &mut after.leaves {
        let stack: Vec<_> = after_frames(&before, leaf);
        if stack.iter().any(|f| f == "recurse") {
            leaf.costs.allocations *= 3;
        }
        if stack.iter().any(|f| f == "grow") {
            leaf.costs.allocations = 0;
        }
    }
    let opts = FlameOptions {
        subject: Some("nested.zst → changed".into()),
        ..FlameOptions::default()
    };
    let mut out = Vec::new();
    write_diff_flamegraph(&before, &after, &opts, &mut out).unwrap();
    let svg = String::from_utf8(out).unwrap();
    assert!(svg.contains("nested.zst → changed: 15 before, 19 after (+4); widths: after"));
    // The vanished `grow` stacks have no width with `after`'s widths, and are blue with
    // `before`'s, while recursion stays red.
    assert!(!svg.contains("<title>grow (nested.c)"));
    let opts = FlameOptions {
        widths_before: true,
        ..opts
    };
    let mut out = Vec::new();
    write_diff_flamegraph(&before, &after, &opts, &mut out).unwrap();
    let svg2 = String::from_utf8(out).unwrap();
    let fill = |svg: &str, title: &str| {
        let at = svg.find(title).unwrap_or_else(|| panic!("{title}"));
        let rest = &svg[at..];
        let i = rest.find("fill=\"rgb(").unwrap() + 10;
        rest[i..].split(')').next().unwrap().to_string()
    };
    let grow = fill(&svg2, "<title>grow (nested.c) (4 allocations");
    let deep = fill(&svg2, "<title>recurse (nested.c) (1 allocations");
    let rgb = |s: &str| -> Vec<u32> { s.split(',').map(|x| x.trim().parse().unwrap()).collect() };
    assert!(rgb(&grow)[2] > rgb(&grow)[0], "vanished is blue: {grow}");
    assert!(rgb(&deep)[0] > rgb(&deep)[2], "growth is red: {deep}");
    if let Some(dir) = std::env::var_os("MTF_FLAME_OUT") {
        std::fs::write(PathBuf::from(&dir).join("nested.diff.svg"), svg).unwrap();
        std::fs::write(PathBuf::from(dir).join("nested.diff-before.svg"), svg2).unwrap();
    }
}

fn after_frames(p: &StackProfile, leaf: &Leaf) -> Vec<String> {
    p.stack_of(leaf)
        .into_iter()
        .filter_map(|(_, f)| p.frames[f as usize].function.clone())
        .collect()
}

/// Trees against heaptrack_print: on the recordings whose stacks have no frames inlined in
/// another order than their calls (nested, temporaries, templates), every top-down row's
/// inclusive cost is the sum of heaptrack_print's folded lines under its path, every
/// bottom-up row's the sum of the lines ending in its path, for the four costs.
#[test]
fn trees_add_up_heaptrack_prints_folded_lines() {
    use metatf::stacks::{Tree, TreeKind, TreeOptions};
    for name in ["nested", "temporaries", "templates"] {
        let p = profile(name);
        for cost in [Cost::Allocations, Cost::Temporary, Cost::Peak, Cost::Leaked] {
            let golden =
                std::fs::read_to_string(dir().join(format!("{name}.{}.folded", cost.name())))
                    .unwrap();
            // heaptrack_print's lines: frames (each followed by `;`) and the cost.
            let lines: Vec<(Vec<&str>, u128)> = golden
                .lines()
                .map(|l| {
                    let (stack, v) = l.rsplit_once(' ').unwrap();
                    let frames = stack.strip_suffix(';').unwrap().split(';').collect();
                    (frames, v.parse().unwrap())
                })
                .collect();
            let total: u128 = lines.iter().map(|l| l.1).sum();
            for kind in [TreeKind::TopDown, TreeKind::BottomUp] {
                let t = Tree::build(&p, kind, &TreeOptions::default());
                assert_eq!(t.total.get(cost), total, "{name} {}", cost.name());
                // Rows by their text path: two functions may print alike (`Box<long, 4>::Box()`
                // and `Box<char, 100>::Box()` are both `Box<>::Box()`), two rows then.
                let mut paths: Vec<Vec<&str>> = Vec::new();
                let mut by_path: HashMap<Vec<&str>, u128> = HashMap::new();
                for node in &t.nodes {
                    let mut path = match node.parent {
                        Some(parent) => paths[parent as usize].clone(),
                        None => Vec::new(),
                    };
                    path.push(&t.symbols[node.symbol as usize].text);
                    *by_path.entry(path.clone()).or_default() += node.inclusive.get(cost);
                    paths.push(path);
                }
                assert!(by_path.len() >= 3);
                for (path, got) in by_path {
                    let want: u128 = lines
                        .iter()
                        .filter(|(frames, _)| match kind {
                            TreeKind::TopDown => frames.starts_with(&path),
                            TreeKind::BottomUp => {
                                frames.iter().rev().take(path.len()).eq(path.iter())
                            }
                        })
                        .map(|l| l.1)
                        .sum();
                    assert_eq!(got, want, "{name} {} {kind:?} {path:?}", cost.name());
                }
            }
        }
    }
}

/// Compare `actual` with the golden file tests/data/stacks/`name`; rewrite it when
/// `MTF_BLESS=1` (then review the diff).
fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/stacks")
        .join(name);
    if std::env::var_os("MTF_BLESS").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!("missing golden file {name}; run with MTF_BLESS=1 to create it")
    });
    assert_eq!(
        expected, actual,
        "{name} differs from the output (run with MTF_BLESS=1 to accept, and review the diff)"
    );
}

/// The text and JSON forms on real recordings, as golden files (their figures are checked
/// above against heaptrack_print; these show the layout). Regenerate with
/// `MTF_BLESS=1 cargo test -p metatf --test stacks_heaptrack`.
#[test]
fn text_and_json_forms() {
    use metatf::stacks::{
        diff, CallerCallee, Merge, StackDiff, Tree, TreeKind, TreeOptions, TreeView,
    };
    let nested = profile("nested");
    let threads = profile("threads");
    let td = Tree::build(&nested, TreeKind::TopDown, &TreeOptions::default());
    let view = |cost, top, threshold| TreeView {
        cost,
        top,
        threshold,
    };
    golden(
        "nested.top-down.allocations.txt",
        &td.to_text(&view(Cost::Allocations, 0, 0.0)),
    );
    golden(
        "nested.top-down.leaked.top2.txt",
        &td.to_text(&view(Cost::Leaked, 2, 0.0)),
    );
    let bu = Tree::build(
        &threads,
        TreeKind::BottomUp,
        &TreeOptions {
            depth: Some(3),
            ..TreeOptions::default()
        },
    );
    golden(
        "threads.bottom-up.peak.depth3.txt",
        &bu.to_text(&view(Cost::Peak, 0, 0.01)),
    );
    let by_address = Tree::build(
        &threads,
        TreeKind::TopDown,
        &TreeOptions {
            merge: Merge::Address,
            ..TreeOptions::default()
        },
    );
    golden(
        "threads.top-down.temporary.by-address.txt",
        &by_address.to_text(&view(Cost::Temporary, 0, 0.0)),
    );
    let cc = CallerCallee::build(&nested, &TreeOptions::default());
    golden(
        "nested.callers.allocations.txt",
        &cc.to_text(&view(Cost::Allocations, 0, 0.0)),
    );
    let mut json = serde_json::to_string_pretty(&td.to_json(&view(Cost::Peak, 3, 0.0))).unwrap();
    json.push('\n');
    golden("nested.top-down.peak.top3.json", &json);
    let mut json = serde_json::to_string_pretty(&cc.to_json(&view(Cost::Leaked, 2, 0.0))).unwrap();
    json.push('\n');
    golden("nested.callers.leaked.top2.json", &json);
    // Two programs. A frame without a function is named by its address, which differs
    // between two runs (ASLR): libstdc++'s pool, allocated at load time in both, is two
    // stacks here, one gone and one new.
    let temporaries = profile("temporaries");
    let d: StackDiff = diff(&nested, &temporaries);
    golden(
        "nested-temporaries.diff.bytes.txt",
        &d.to_text(Cost::Bytes, 8),
    );
    let mut json = serde_json::to_string_pretty(&d.to_json(Cost::Allocations, 3)).unwrap();
    json.push('\n');
    golden("nested-temporaries.diff.allocations.top3.json", &json);
}
