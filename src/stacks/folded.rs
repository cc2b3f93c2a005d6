//! Folded stacks, the input of flamegraph.pl and inferno: one line per stack, its frames
//! root first separated by `;`, a space, the cost (docs/stacks.md).

use std::io::Write;

use super::frame::{push_clean, push_frame_text, Style};
use super::{Cost, Leaf, Map, StackProfile, StacksError};

// Design: two modes rather than one. heaptrack_print's lines are the yardstick for a heaptrack
// recording (issue 27: equal, line for line), but they are not what a person wants from a
// folded file: the same stack on several lines, lines of cost 0, inlined frames in the reverse
// of their call order and a trailing `;` that inferno draws as an empty frame. So the default
// is the merged, call-order form every flamegraph tool reads, and `heaptrack()` is the exact
// one, chosen explicitly (`mtf flamegraph --folded` with a flag for it).

/// How folded stacks are written (docs/stacks.md, *Folded stacks*).
///
/// [`FoldedOptions::default`] is what a person draws a flame graph from: equal stacks merged
/// into one line, zero costs left out, frames in call order. [`FoldedOptions::heaptrack`] is
/// exactly what `heaptrack_print -F` writes for a heaptrack recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoldedOptions {
    /// The leaf first (who calls an allocation function), instead of the root.
    pub reverse: bool,
    /// The leaf's site name (a Java trace's allocated class) as one more frame under the
    /// innermost one, when the leaf has a site.
    pub leaf_site: bool,
    /// Equal stacks written once with their costs summed, lines with a cost of 0 left out,
    /// lines sorted by their stack (as stackcollapse tools write them). Otherwise one line per
    /// leaf in the profile's order, zero costs written.
    pub merge: bool,
    /// heaptrack_print's text: every frame followed by `;` (the stack ends in `;`), and a
    /// node's inlined frames in the record's order (innermost first, after the instruction
    /// pointer's own frame) where the call order has them outermost first; the frames of an
    /// instruction pointer's `inlined` list always with their ` (FILE)`. Otherwise frames are
    /// separated by `;` in call order, as flamegraph.pl's other collapse tools write them.
    pub heaptrack: bool,
}

impl Default for FoldedOptions {
    fn default() -> Self {
        FoldedOptions {
            reverse: false,
            leaf_site: false,
            merge: true,
            heaptrack: false,
        }
    }
}

impl FoldedOptions {
    /// `heaptrack_print -F FILE --flamegraph-cost-type C`'s lines, exactly: one per leaf in the
    /// profile's order, nothing merged, zero costs written, heaptrack's frame order and text.
    pub fn heaptrack() -> FoldedOptions {
        FoldedOptions {
            reverse: false,
            leaf_site: false,
            merge: false,
            heaptrack: true,
        }
    }
}

/// The text of every frame of a profile in each style, made once.
struct Texts<'p> {
    profile: &'p StackProfile,
    /// Per frame: its text by [`Style::of`], by heaptrack's first-frame rule, by its
    /// inlined-frame rule.
    cache: Vec<[Option<String>; 3]>,
}

impl<'p> Texts<'p> {
    fn new(profile: &'p StackProfile) -> Self {
        Texts {
            profile,
            cache: vec![Default::default(); profile.frames.len()],
        }
    }

    fn get(&mut self, frame: u32, which: usize) -> &str {
        let slot = &mut self.cache[frame as usize][which];
        slot.get_or_insert_with(|| {
            let f = &self.profile.frames[frame as usize];
            let style = match which {
                0 => Style::of(f),
                1 => Style::heaptrack(true),
                _ => Style::heaptrack(false),
            };
            let mut s = String::new();
            push_frame_text(&mut s, f, style);
            s
        })
    }
}

/// Builds the stacks of leaves as text, reusing its buffers.
pub(crate) struct Folder<'p> {
    texts: Texts<'p>,
    opts: FoldedOptions,
    nodes: Vec<u32>,
    parts: Vec<(u32, usize)>,
}

impl<'p> Folder<'p> {
    pub(crate) fn new(profile: &'p StackProfile, opts: FoldedOptions) -> Self {
        Folder {
            texts: Texts::new(profile),
            opts,
            nodes: Vec::new(),
            parts: Vec::new(),
        }
    }

    /// Calls `f` with the text of each frame of a leaf's stack, in the order written (root
    /// first, or leaf first with `reverse`), `??` for a leaf without a stack, the site last
    /// (first) with `leaf_site`.
    fn each(&mut self, leaf: &Leaf, mut f: impl FnMut(&str)) {
        let profile = self.texts.profile;
        profile.nodes_of(leaf, &mut self.nodes);
        // (frame, style) in root-first order.
        self.parts.clear();
        for &n in &self.nodes {
            let frames = &profile.nodes[n as usize].frames;
            let valid = frames
                .iter()
                .filter(|&&f| (f as usize) < profile.frames.len());
            if self.opts.heaptrack {
                for (i, &f) in valid.enumerate() {
                    self.parts.push((f, if i == 0 { 1 } else { 2 }));
                }
            } else {
                let at = self.parts.len();
                self.parts.extend(valid.map(|&f| (f, 0)));
                self.parts[at..].reverse();
            }
        }
        let mut site = String::new();
        let has_site = match leaf.site.as_deref() {
            Some(s) if self.opts.leaf_site => {
                push_clean(&mut site, s);
                true
            }
            _ => false,
        };
        if self.opts.reverse && has_site {
            f(&site);
        }
        if self.parts.is_empty() {
            f("??");
        }
        let n = self.parts.len();
        for k in 0..n {
            let i = if self.opts.reverse { n - 1 - k } else { k };
            let (frame, which) = self.parts[i];
            f(self.texts.get(frame, which));
        }
        if !self.opts.reverse && has_site {
            f(&site);
        }
    }

    /// Writes a leaf's stack (without the cost) into `out` (cleared first).
    pub(crate) fn stack(&mut self, leaf: &Leaf, out: &mut String) {
        out.clear();
        let heaptrack = self.opts.heaptrack;
        let mut first = true;
        self.each(leaf, |text| {
            if !heaptrack && !first {
                out.push(';');
            }
            first = false;
            out.push_str(text);
            if heaptrack {
                out.push(';');
            }
        });
        // heaptrack_print writes a trace-less line as `??`, with no `;`.
        if heaptrack && out == "??;" {
            out.pop();
        }
    }

    /// The text of each frame of a leaf's stack, in the order written, into `out`.
    pub(crate) fn frames(&mut self, leaf: &Leaf, out: &mut Vec<String>) {
        out.clear();
        self.each(leaf, |text| out.push(text.to_string()));
    }
}

/// The folded stacks of a profile for one cost, as (stack, cost) pairs: one per leaf in the
/// profile's order, or merged (see [`FoldedOptions::merge`]).
pub fn folded_lines(
    profile: &StackProfile,
    cost: Cost,
    opts: &FoldedOptions,
) -> Vec<(String, u128)> {
    let mut folder = Folder::new(profile, *opts);
    let mut buf = String::new();
    if !opts.merge {
        return profile
            .leaves
            .iter()
            .map(|leaf| {
                folder.stack(leaf, &mut buf);
                (buf.clone(), cost.of(leaf))
            })
            .collect();
    }
    let mut merged: Map<String, u128> = Map::default();
    for leaf in &profile.leaves {
        let v = cost.of(leaf);
        if v == 0 {
            continue;
        }
        folder.stack(leaf, &mut buf);
        match merged.get_mut(buf.as_str()) {
            Some(total) => *total = total.saturating_add(v),
            None => {
                merged.insert(buf.clone(), v);
            }
        }
    }
    let mut lines: Vec<_> = merged.into_iter().collect();
    lines.sort_unstable();
    lines
}

/// Writes a profile's folded stacks for one cost: `STACK COST` lines (docs/stacks.md).
///
/// ```
/// use metatf::stacks::*;
/// let profile = StackProfile {
///     frames: vec![
///         Frame { function: Some("main".into()), ..Frame::default() },
///         Frame { function: Some("make".into()), ..Frame::default() },
///     ],
///     nodes: vec![
///         Node { parent: None, frames: vec![0] },
///         Node { parent: Some(0), frames: vec![1] },
///     ],
///     leaves: vec![Leaf { node: Some(1), costs: Costs { allocations: 3, ..Costs::default() }, ..Leaf::default() }],
///     ..StackProfile::default()
/// };
/// let mut out = Vec::new();
/// write_folded(&profile, Cost::Allocations, &FoldedOptions::default(), &mut out).unwrap();
/// assert_eq!(String::from_utf8(out).unwrap(), "main;make 3\n");
/// let mut out = Vec::new();
/// write_folded(&profile, Cost::Allocations, &FoldedOptions::heaptrack(), &mut out).unwrap();
/// assert_eq!(String::from_utf8(out).unwrap(), "main;make; 3\n");
/// ```
pub fn write_folded(
    profile: &StackProfile,
    cost: Cost,
    opts: &FoldedOptions,
    out: &mut dyn Write,
) -> Result<(), StacksError> {
    let err = StacksError::write;
    if opts.merge {
        for (stack, v) in folded_lines(profile, cost, opts) {
            writeln!(out, "{stack} {v}").map_err(err("folded stacks"))?;
        }
        return Ok(());
    }
    // Unmerged: a line at a time, no table of lines.
    let mut folder = Folder::new(profile, *opts);
    let mut buf = String::new();
    for leaf in &profile.leaves {
        folder.stack(leaf, &mut buf);
        writeln!(out, "{buf} {}", cost.of(leaf)).map_err(err("folded stacks"))?;
    }
    Ok(())
}

/// The differential folded stacks of two profiles for one cost, as (stack, before, after)
/// triples: stacks matched by their text (never by node ids), merged as
/// [`FoldedOptions::merge`] does, a stack present in one profile only with 0 in the other,
/// sorted by stack. `opts.merge` is taken as true.
pub fn diff_folded_lines(
    before: &StackProfile,
    after: &StackProfile,
    cost: Cost,
    opts: &FoldedOptions,
) -> Vec<(String, u128, u128)> {
    let opts = FoldedOptions {
        merge: true,
        ..*opts
    };
    let mut map: Map<String, (u128, u128)> = Map::default();
    for (stack, v) in folded_lines(before, cost, &opts) {
        map.entry(stack).or_default().0 = v;
    }
    for (stack, v) in folded_lines(after, cost, &opts) {
        map.entry(stack).or_default().1 = v;
    }
    let mut lines: Vec<_> = map.into_iter().map(|(s, (a, b))| (s, a, b)).collect();
    lines.sort_unstable();
    lines
}

/// Writes the differential folded stacks of two profiles, `STACK BEFORE AFTER` lines: the input
/// of a differential flame graph (inferno-flamegraph, flamegraph.pl via difffolded.pl's
/// output).
pub fn write_diff_folded(
    before: &StackProfile,
    after: &StackProfile,
    cost: Cost,
    opts: &FoldedOptions,
    out: &mut dyn Write,
) -> Result<(), StacksError> {
    for (stack, a, b) in diff_folded_lines(before, after, cost, opts) {
        writeln!(out, "{stack} {a} {b}")
            .map_err(StacksError::write("differential folded stacks"))?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::{Costs, Frame, Node};
    use super::*;

    fn fr(function: Option<&str>, file: Option<&str>, address: u64, inlined: bool) -> Frame {
        Frame {
            function: function.map(Into::into),
            file: file.map(Into::into),
            address: Some(address),
            inlined,
            module: Some("/tmp/heaptrack-stacks/inlined".into()),
            ..Frame::default()
        }
    }

    fn leaf(node: u32, allocations: u64, leaked: u128) -> Leaf {
        Leaf {
            node: Some(node),
            costs: Costs {
                allocations,
                leaked,
                ..Costs::default()
            },
            ..Leaf::default()
        }
    }

    /// `tests/data/heaptrack-stacks/inlined.zst` by hand: its `s`, `i` and `t` records as the
    /// producer reads them (`operator new` and stop rules already applied: the `main` frame of
    /// trace 8 stops the walk, so trace 8's parent is cut), and its three allocation traces.
    pub(crate) fn inlined() -> StackProfile {
        let frames = vec![
            // i 7f00fe0c6b9f 8 0 b 0
            fr(None, Some("./elf/rtld.c"), 0x7f00fe0c6b9f, false),
            // i 7f00fe0b0b03 8 c d 79
            fr(
                Some("_dl_init"),
                Some("./elf/dl-init.c"),
                0x7f00fe0b0b03,
                false,
            ),
            // i 7f00fe0b0a1d 8 e d 4a e d 1a: call_init inlined into call_init
            fr(
                Some("call_init"),
                Some("./elf/dl-init.c"),
                0x7f00fe0b0a1d,
                true,
            ),
            fr(
                Some("call_init"),
                Some("./elf/dl-init.c"),
                0x7f00fe0b0a1d,
                false,
            ),
            // i 7f00fdca57b9 6
            fr(None, None, 0x7f00fdca57b9, false),
            // i 564e82b0b140 1 f
            fr(Some("_start"), None, 0x564e82b0b140, false),
            // i 7f00fded0304 4 10 11 168
            fr(
                Some("__libc_start_main_impl"),
                Some("../csu/libc-start.c"),
                0x7f00fded0304,
                false,
            ),
            // i 7f00fded0249 4 12 13 3a
            fr(
                Some("__libc_start_call_main"),
                Some("../sysdeps/nptl/libc_start_call_main.h"),
                0x7f00fded0249,
                false,
            ),
            // i 564e82b0b086 1 14 15 1e
            fr(Some("main"), Some("./inlined.c"), 0x564e82b0b086, false),
            // i 564e82b0b21c 1 16 15 8 17 15 10 18 15 15
            fr(
                Some("inner_inline"),
                Some("./inlined.c"),
                0x564e82b0b21c,
                true,
            ),
            fr(
                Some("outer_inline"),
                Some("./inlined.c"),
                0x564e82b0b21c,
                true,
            ),
            fr(
                Some("not_inlined"),
                Some("./inlined.c"),
                0x564e82b0b21c,
                false,
            ),
            // i 564e82b0b0a8 1 16 15 8 17 15 10 14 15 23
            fr(
                Some("inner_inline"),
                Some("./inlined.c"),
                0x564e82b0b0a8,
                true,
            ),
            fr(
                Some("outer_inline"),
                Some("./inlined.c"),
                0x564e82b0b0a8,
                true,
            ),
            fr(Some("main"), Some("./inlined.c"), 0x564e82b0b0a8, false),
        ];
        let node = |parent: Option<u32>, frames: &[u32]| Node {
            parent,
            frames: frames.to_vec(),
        };
        StackProfile {
            frames,
            nodes: vec![
                node(None, &[0]),             // t 1 0
                node(Some(0), &[1]),          // t 2 1
                node(Some(1), &[2, 3]),       // t 3 2
                node(Some(2), &[4]),          // t 4 3
                node(None, &[5]),             // t 5 0
                node(Some(4), &[6]),          // t 6 5
                node(Some(5), &[7]),          // t 7 6
                node(None, &[8]),             // t 8 7: `main` stops the walk
                node(Some(7), &[9, 10, 11]),  // t 9 8
                node(Some(6), &[12, 13, 14]), // t a 7
            ],
            leaves: vec![leaf(3, 1, 0), leaf(8, 4, 320), leaf(9, 1, 208)],
            space: "block".into(),
            sized: true,
            contexts: false,
        }
    }

    fn text(p: &StackProfile, cost: Cost, opts: &FoldedOptions) -> String {
        let mut out = Vec::new();
        write_folded(p, cost, opts, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn heaptrack_mode_equals_heaptrack_print() {
        let golden = include_str!("../../tests/data/heaptrack-stacks/inlined.allocations.folded");
        assert_eq!(
            text(&inlined(), Cost::Allocations, &FoldedOptions::heaptrack()),
            golden
        );
    }

    #[test]
    fn the_default_is_merged_and_in_call_order() {
        let got = text(&inlined(), Cost::Allocations, &FoldedOptions::default());
        assert_eq!(
            got,
            "0x7f00fe0c6b9f (rtld.c);_dl_init (dl-init.c);call_init (dl-init.c);call_init (dl-init.c);0x7f00fdca57b9 1\n\
             _start;__libc_start_main_impl (libc-start.c);__libc_start_call_main (libc_start_call_main.h);main (inlined.c);outer_inline (inlined.c);inner_inline (inlined.c) 1\n\
             main (inlined.c);not_inlined (inlined.c);outer_inline (inlined.c);inner_inline (inlined.c) 4\n"
        );
        // Zero costs are left out when merging, written in heaptrack's mode.
        let leaked = text(&inlined(), Cost::Leaked, &FoldedOptions::default());
        assert_eq!(leaked.lines().count(), 2);
        let leaked = text(&inlined(), Cost::Leaked, &FoldedOptions::heaptrack());
        assert_eq!(leaked.lines().count(), 3);
        assert!(leaked.starts_with("0x7f00fe0c6b9f (rtld.c);"));
        assert!(leaked.lines().next().unwrap().ends_with("; 0"));
    }

    #[test]
    fn equal_stacks_merge_and_reverse_puts_the_leaf_first() {
        let mut p = inlined();
        p.leaves.push(leaf(8, 2, 0));
        let lines = folded_lines(&p, Cost::Allocations, &FoldedOptions::default());
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[2].1, 6);
        let unmerged = folded_lines(
            &p,
            Cost::Allocations,
            &FoldedOptions {
                merge: false,
                ..FoldedOptions::default()
            },
        );
        assert_eq!(unmerged.len(), 4);
        assert_eq!(unmerged[1].0, unmerged[3].0);
        let rev = FoldedOptions {
            reverse: true,
            ..FoldedOptions::default()
        };
        let lines = folded_lines(&p, Cost::Allocations, &rev);
        assert!(lines.iter().any(|(s, v)| *v == 6
            && s == "inner_inline (inlined.c);outer_inline (inlined.c);not_inlined (inlined.c);main (inlined.c)"));
    }

    #[test]
    fn leaf_site_and_stackless_leaves() {
        let mut p = StackProfile {
            frames: vec![Frame {
                function: Some("make".into()),
                owner: Some("app.Main".into()),
                ..Frame::default()
            }],
            nodes: vec![Node {
                parent: None,
                frames: vec![0],
            }],
            ..StackProfile::default()
        };
        let mut a = leaf(0, 2, 0);
        a.site = Some("java.lang.String".into());
        let mut b = leaf(0, 1, 0);
        b.node = None;
        b.site = Some("Foo".into());
        p.leaves = vec![a, b];
        let with_site = FoldedOptions {
            leaf_site: true,
            ..FoldedOptions::default()
        };
        assert_eq!(
            text(&p, Cost::Allocations, &with_site),
            "??;Foo 1\napp.Main.make;java.lang.String 2\n"
        );
        assert_eq!(
            text(&p, Cost::Allocations, &FoldedOptions::default()),
            "?? 1\napp.Main.make 2\n"
        );
        assert_eq!(
            text(&p, Cost::Allocations, &FoldedOptions::heaptrack()),
            "app.Main.make; 2\n?? 1\n"
        );
        let rev = FoldedOptions {
            reverse: true,
            ..with_site
        };
        assert_eq!(
            text(&p, Cost::Allocations, &rev),
            "Foo;?? 1\njava.lang.String;app.Main.make 2\n"
        );
    }

    #[test]
    fn differential_lines_match_stacks_by_text() {
        let a = inlined();
        let mut b = inlined();
        // The same stacks under other node ids: a copy of the tree with the leaves moved.
        b.nodes.push(b.nodes[8].clone());
        b.leaves[1].node = Some(10);
        b.leaves[1].costs.allocations = 7;
        b.leaves.remove(0);
        let lines = diff_folded_lines(&a, &b, Cost::Allocations, &FoldedOptions::default());
        let counts: Vec<_> = lines.iter().map(|(_, x, y)| (*x, *y)).collect();
        assert_eq!(counts, [(1, 0), (1, 1), (4, 7)]);
        let mut out = Vec::new();
        write_diff_folded(
            &a,
            &b,
            Cost::Allocations,
            &FoldedOptions::default(),
            &mut out,
        )
        .unwrap();
        assert!(String::from_utf8(out)
            .unwrap()
            .ends_with("outer_inline (inlined.c);inner_inline (inlined.c) 4 7\n"));
    }
}
