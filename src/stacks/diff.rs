//! Differences between two stack profiles, stack by stack (docs/stacks.md, *Differences*).

use std::fmt::Write as _;

use super::folded::Folder;
use super::{human, Cost, Figures, FoldedOptions, Map, StackProfile};

/// One stack's figures in two profiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackDelta {
    /// The frames' text, root first (as [`super::folded_lines`] writes them with its
    /// options); `["??"]` for allocations without a stack.
    pub frames: Vec<String>,
    /// The figures in the first profile (0 where the stack is not in it).
    pub before: Figures,
    /// The figures in the second.
    pub after: Figures,
}

impl StackDelta {
    /// `after - before` of one cost.
    pub fn delta(&self, cost: Cost) -> i128 {
        signed(self.after.get(cost)) - signed(self.before.get(cost))
    }
}

/// A u128 figure as a signed one (figures beyond i128 saturate: no trace reaches them).
fn signed(v: u128) -> i128 {
    i128::try_from(v).unwrap_or(i128::MAX)
}

/// The differences of two profiles by stack: every stack present in either, with its figures
/// in both, stacks matched by their frames' text (never by node ids, which differ between
/// two runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackDiff {
    /// One row per distinct stack, sorted by stack.
    pub stacks: Vec<StackDelta>,
    /// The first profile's totals.
    pub before: Figures,
    /// The second's.
    pub after: Figures,
}

/// The differences of two profiles by stack, stacks written in call order (the default
/// [`FoldedOptions`]).
pub fn diff(a: &StackProfile, b: &StackProfile) -> StackDiff {
    StackDiff::with(a, b, &FoldedOptions::default())
}

impl StackDiff {
    /// The differences, stacks written with `opts` (`reverse`, `leaf_site`, `heaptrack`;
    /// stacks are always merged by their text).
    pub fn with(a: &StackProfile, b: &StackProfile, opts: &FoldedOptions) -> StackDiff {
        // Stacks are keyed by their folded text (one string a leaf, no list of strings).
        let mut index: Map<String, usize> = Map::default();
        let mut stacks: Vec<StackDelta> = Vec::new();
        let mut totals = [Figures::default(); 2];
        let mut text = String::new();
        for (side, p) in [a, b].into_iter().enumerate() {
            let mut folder = Folder::new(p, *opts);
            for leaf in &p.leaves {
                let f = StackProfile::figures(leaf);
                if f.is_zero() {
                    continue;
                }
                totals[side].add(&f);
                folder.stack(leaf, &mut text);
                let i = match index.get(text.as_str()) {
                    Some(&i) => i,
                    None => {
                        let mut frames = Vec::new();
                        folder.frames(leaf, &mut frames);
                        index.insert(text.clone(), stacks.len());
                        stacks.push(StackDelta {
                            frames,
                            before: Figures::default(),
                            after: Figures::default(),
                        });
                        stacks.len() - 1
                    }
                };
                let row = &mut stacks[i];
                if side == 0 {
                    row.before.add(&f);
                } else {
                    row.after.add(&f);
                }
            }
        }
        stacks.sort_by(|x, y| x.frames.cmp(&y.frames));
        StackDiff {
            stacks,
            before: totals[0],
            after: totals[1],
        }
    }

    /// The stacks whose figure of `cost` changed, largest change first (growth before shrink
    /// of the same size, then by stack); at most `top` (0: all).
    pub fn changed(&self, cost: Cost, top: usize) -> Vec<&StackDelta> {
        let mut rows: Vec<&StackDelta> =
            self.stacks.iter().filter(|s| s.delta(cost) != 0).collect();
        rows.sort_by(|x, y| {
            y.delta(cost)
                .unsigned_abs()
                .cmp(&x.delta(cost).unsigned_abs())
                .then_with(|| y.delta(cost).cmp(&x.delta(cost)))
                .then_with(|| x.frames.cmp(&y.frames))
        });
        if top > 0 {
            rows.truncate(top);
        }
        rows
    }

    /// The differences as text: the totals, then the `top` stacks (0: all) whose `cost`
    /// changed most, each with its figure before and after and the change.
    pub fn to_text(&self, cost: Cost, top: usize) -> String {
        let mut o = String::new();
        let (b, a) = (self.before.get(cost), self.after.get(cost));
        let total_delta = signed(a) - signed(b);
        let _ = writeln!(
            o,
            "differences by stack in {}: {} before, {} after ({})",
            cost.name(),
            human::figure(cost, b),
            human::figure(cost, a),
            human::delta(cost, total_delta),
        );
        let changed = self.stacks.iter().filter(|s| s.delta(cost) != 0).count();
        let (only_before, only_after) = self.stacks.iter().fold((0, 0), |(x, y), s| {
            (
                x + usize::from(s.after.is_zero()),
                y + usize::from(s.before.is_zero()),
            )
        });
        let _ = writeln!(
            o,
            "{} stacks: {} changed, {} only before, {} only after",
            self.stacks.len(),
            changed,
            only_before,
            only_after
        );
        let rows = self.changed(cost, top);
        if rows.is_empty() {
            return o;
        }
        let cells: Vec<[String; 3]> = rows
            .iter()
            .map(|r| {
                [
                    human::figure(cost, r.before.get(cost)),
                    human::figure(cost, r.after.get(cost)),
                    human::delta(cost, r.delta(cost)),
                ]
            })
            .collect();
        let w: Vec<usize> = (0..3)
            .map(|i| cells.iter().map(|c| c[i].len()).max().unwrap_or(0).max(6))
            .collect();
        let _ = writeln!(
            o,
            "\n{:>w0$}  {:>w1$}  {:>w2$}  stack (root first)",
            "before",
            "after",
            "change",
            w0 = w[0],
            w1 = w[1],
            w2 = w[2]
        );
        for (r, c) in rows.iter().zip(&cells) {
            let stack = crate::escape::escape_for_terminal(&r.frames.join(";")).into_owned();
            let _ = writeln!(
                o,
                "{:>w0$}  {:>w1$}  {:>w2$}  {stack}",
                c[0],
                c[1],
                c[2],
                w0 = w[0],
                w1 = w[1],
                w2 = w[2]
            );
        }
        if changed > rows.len() {
            let _ = writeln!(
                o,
                "({} more changed stacks not shown)",
                changed - rows.len()
            );
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Costs, Frame, Leaf, Node};
    use super::*;

    fn profile(stacks: &[(&[&str], u64, u128)]) -> StackProfile {
        let mut p = StackProfile::default();
        for (names, allocations, bytes) in stacks {
            let mut parent = None;
            for name in names.iter() {
                p.frames.push(Frame {
                    function: Some(name.to_string()),
                    ..Frame::default()
                });
                p.nodes.push(Node {
                    parent,
                    frames: vec![p.frames.len() as u32 - 1],
                });
                parent = Some(p.nodes.len() as u32 - 1);
            }
            p.leaves.push(Leaf {
                node: parent,
                costs: Costs {
                    allocations: *allocations,
                    bytes: *bytes,
                    ..Costs::default()
                },
                ..Leaf::default()
            });
        }
        p
    }

    #[test]
    fn stacks_are_matched_by_text_and_every_cost_compared() {
        let a = profile(&[
            (&["main", "grow"], 4, 400),
            (&["main", "keep"], 2, 20),
            (&["main", "gone"], 1, 10),
            (&[], 1, 8),
        ]);
        // Another run: other node ids, one stack split over two leaves.
        let b = profile(&[
            (&["main", "keep"], 2, 20),
            (&["main", "grow"], 5, 500),
            (&["main", "grow"], 1, 100),
            (&["main", "new"], 3, 30),
            (&[], 1, 8),
        ]);
        let d = diff(&a, &b);
        assert_eq!(d.stacks.len(), 5);
        let grow = d
            .stacks
            .iter()
            .find(|s| s.frames == ["main", "grow"])
            .unwrap();
        assert_eq!(grow.delta(Cost::Allocations), 2);
        assert_eq!(grow.delta(Cost::Bytes), 200);
        let gone = d
            .stacks
            .iter()
            .find(|s| s.frames == ["main", "gone"])
            .unwrap();
        assert_eq!(gone.delta(Cost::Allocations), -1);
        assert!(d
            .stacks
            .iter()
            .any(|s| s.frames == ["??"] && s.delta(Cost::Bytes) == 0));
        let changed: Vec<_> = d
            .changed(Cost::Allocations, 0)
            .iter()
            .map(|s| s.frames.join(";"))
            .collect();
        assert_eq!(changed, ["main;new", "main;grow", "main;gone"]);
        let text = d.to_text(Cost::Bytes, 2);
        assert!(text.starts_with("differences by stack in bytes: 438 B before, 658 B after (+220 B)\n5 stacks: 3 changed, 1 only before, 1 only after\n"), "{text}");
        assert!(
            text.contains("\n 400 B   600 B  +200 B  main;grow\n"),
            "{text}"
        );
        assert!(text.contains("(1 more changed stacks not shown)"), "{text}");
        assert_eq!(d.before.get(Cost::Allocations), 8);
        assert_eq!(d.after.get(Cost::Allocations), 12);
    }
}
