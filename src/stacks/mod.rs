//! Where the bytes come from: the costs of a trace's allocations by call stack or calling
//! context (extension stacks/1, docs/format.md §17), and what is drawn from them — folded
//! stacks for flame graphs, top-down and bottom-up trees, caller/callee figures, differences
//! between two profiles.
//!
//! A [`StackProfile`] is the producer's answer (the statistics pass with the stack tree the
//! interpreter read from the trace's declarations): a table of [`Frame`]s, a tree of
//! [`Node`]s over them and one [`Leaf`] per allocation site and stack, with its [`Costs`].
//! Everything else in this module is a consumer of that value and knows nothing of DTDs,
//! records or formats.

// Design: the profile is plain data (no lifetimes, no reference into a trace) so that a
// consumer can be written, tested and fuzzed from hand-made profiles, and so that the same
// consumers serve a heaptrack recording (a stack tree held in the trace), a Java trace (calling
// contexts derived from method entries and exits) and two profiles compared. Stop and skip
// rules (heaptrack_print's `main`, `operator new`) are applied by the producer, so a node's
// parent chain is the stack as the format's own reader shows it.

mod diff;
mod error;
#[cfg(feature = "flamegraph")]
mod flame;
mod folded;
mod frame;
mod human;
#[cfg(feature = "json")]
mod json;
mod tree;

pub use diff::{diff, StackDelta, StackDiff};
pub use error::StacksError;
#[cfg(feature = "flamegraph")]
pub use flame::{static_svg, write_diff_flamegraph, write_flamegraph, FlameOptions};
pub use folded::{diff_folded_lines, folded_lines, write_diff_folded, write_folded, FoldedOptions};
pub use frame::{basename, frame_text, pretty_function};
pub use human::bytes as human_bytes;
#[cfg(feature = "json")]
pub use json::{CALLERS_SCHEMA, DIFF_SCHEMA, TREE_SCHEMA};
pub use tree::{
    CallerCallee, Merge, Symbol, SymbolFigures, Tree, TreeKind, TreeNode, TreeOptions, TreeView,
};

// Design: the consumers' hash maps use foldhash, as the live sets do: a map lookup per frame
// of every leaf is their inner loop, and foldhash's per-process seed keeps texts from a trace
// from being chosen to collide.
type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type Set<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// One frame: a function (or an address when unresolved) with its source location and module.
/// Every part is optional; a frame with none is shown by its address, or as `??`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The function's name, as the trace's tables give it (not demangled or shortened here).
    pub function: Option<String>,
    /// A qualifier shown before the function with `.` (a Java method's class).
    pub owner: Option<String>,
    /// The source file.
    pub file: Option<String>,
    /// The line in the source file.
    pub line: Option<u64>,
    /// The module (shared object, executable) the code belongs to.
    pub module: Option<String>,
    /// The instruction pointer, where the trace has one.
    pub address: Option<u64>,
    /// Whether this frame was inlined into the frame after it in its node's list (heaptrack's
    /// inlined frames: every frame of a node but the last).
    pub inlined: bool,
}

/// A node of the stack tree: one step from a caller to a callee. A node holds one or more
/// frames (an instruction pointer with the frames inlined at it): `frames` lists them
/// innermost first, as heaptrack's `i` records do, so the last one is the real (not inlined)
/// frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    /// The caller's node (`None`: a child of the root, or the stack was cut by a stop rule).
    pub parent: Option<u32>,
    /// Indices into [`StackProfile::frames`], innermost first; never empty.
    pub frames: Vec<u32>,
}

/// The costs of one leaf (a site and stack), over the slice the profile was taken for. Byte
/// figures are 0 when the trace declares no sizes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Costs {
    /// Allocations (a realloc counts as a free and an allocation, as in `mtf stats`).
    pub allocations: u64,
    /// Bytes allocated.
    pub bytes: u128,
    /// Temporary allocations: freed directly after they were allocated, with no other
    /// allocation in between (heaptrack's definition; docs/stats.md).
    pub temporary: u64,
    /// Live bytes of this leaf at the namespace's peak (the first time the live total reached
    /// its maximum).
    pub peak: u128,
    /// Live blocks of this leaf at the peak.
    pub peak_blocks: u64,
    /// Live bytes at the end of the slice (leaked, when the slice is the whole trace; what was
    /// live at a moment, when the slice ends there).
    pub leaked: u128,
    /// Live blocks at the end of the slice.
    pub leaked_blocks: u64,
}

/// One allocation site under one stack.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leaf {
    /// The innermost node of the stack (`None`: the allocations have no stack).
    pub node: Option<u32>,
    /// The declared site's name where the trace gives one (a Java trace's allocated class;
    /// heaptrack's innermost function). Consumers may show it as an extra leaf frame.
    pub site: Option<String>,
    /// Whether a leak suppression matches this stack (heaptrack's `S leak:…` lines and the
    /// built-in ones its reader applies): its `leaked` bytes are reported apart.
    pub suppressed: bool,
    /// The costs.
    pub costs: Costs,
}

/// The costs of a trace by stack: frames, the stack tree, and the leaves in the order their
/// site was first seen in the trace. See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackProfile {
    /// The frames, each once.
    pub frames: Vec<Frame>,
    /// The nodes of the stack tree; a node's parent comes before it.
    pub nodes: Vec<Node>,
    /// The leaves, in the order their site was first allocated from in the trace.
    pub leaves: Vec<Leaf>,
    /// The namespace the figures are of (`block`, `object`).
    pub space: String,
    /// Whether sizes are declared (else byte costs are 0).
    pub sized: bool,
    /// Whether the stacks are calling contexts (method entries open on a thread), whose
    /// leaves' site (the allocated class) is worth showing as the innermost frame; else a stack
    /// tree held in the trace, whose innermost frame is the allocating function already.
    pub contexts: bool,
}

/// Which figure of a leaf a flame graph or a tree weighs its stacks by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Cost {
    /// Allocations (count).
    #[default]
    Allocations,
    /// Bytes allocated.
    Bytes,
    /// Temporary allocations (count).
    Temporary,
    /// Live bytes at the peak.
    Peak,
    /// Bytes live at the end (unsuppressed: a suppressed leaf counts 0, as heaptrack_print).
    Leaked,
}

impl Cost {
    /// The leaf's figure for this cost.
    pub fn of(self, leaf: &Leaf) -> u128 {
        let c = &leaf.costs;
        match self {
            Cost::Allocations => c.allocations as u128,
            Cost::Bytes => c.bytes,
            Cost::Temporary => c.temporary as u128,
            Cost::Peak => c.peak,
            Cost::Leaked if leaf.suppressed => 0,
            Cost::Leaked => c.leaked,
        }
    }

    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Cost::Allocations => "allocations",
            Cost::Bytes => "bytes",
            Cost::Temporary => "temporary",
            Cost::Peak => "peak",
            Cost::Leaked => "leaked",
        }
    }

    /// Every cost, in the order above.
    pub const ALL: [Cost; 5] = [
        Cost::Allocations,
        Cost::Bytes,
        Cost::Temporary,
        Cost::Peak,
        Cost::Leaked,
    ];
}

/// A figure for every [`Cost`] at once (indexed by the cost), so that one tree or one
/// difference serves every flame graph and every ranking. `leaked` leaves out the leaks a
/// suppression matches, as [`Cost::of`] does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures(pub [u128; 5]);

impl Figures {
    /// The figure of one cost.
    pub fn get(&self, cost: Cost) -> u128 {
        self.0[cost as usize]
    }

    /// Adds another's figures (saturating: a sum never wraps).
    pub fn add(&mut self, other: &Figures) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a = a.saturating_add(b);
        }
    }

    /// Whether every figure is 0.
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|&v| v == 0)
    }
}

impl Cost {
    /// Whether the figure is a byte count (else a count of allocations).
    pub fn is_bytes(self) -> bool {
        matches!(self, Cost::Bytes | Cost::Peak | Cost::Leaked)
    }

    /// The unit of the figure, for people: `bytes` or `allocations`.
    pub fn unit(self) -> &'static str {
        if self.is_bytes() {
            "bytes"
        } else {
            "allocations"
        }
    }

    /// What a figure counts, for people: `bytes`, `allocations`, `temporary allocations`.
    pub fn noun(self) -> &'static str {
        match self {
            Cost::Temporary => "temporary allocations",
            c => c.unit(),
        }
    }
}

impl std::str::FromStr for Cost {
    type Err = String;
    fn from_str(s: &str) -> Result<Cost, String> {
        Cost::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                format!("unknown cost `{s}` (allocations, bytes, temporary, peak, leaked)")
            })
    }
}

impl StackProfile {
    /// The frames of a leaf's stack, root first, as (node, frame) pairs: the nodes from the
    /// root down, and within one node its frames outermost first (the reverse of
    /// [`Node::frames`]). Empty for a leaf without a stack. A cycle in the parents (a damaged
    /// profile) ends the walk at the node met twice.
    pub fn stack_of(&self, leaf: &Leaf) -> Vec<(u32, u32)> {
        let mut nodes = Vec::new();
        self.nodes_of(leaf, &mut nodes);
        let mut out = Vec::new();
        for &n in &nodes {
            if let Some(node) = self.nodes.get(n as usize) {
                out.extend(node.frames.iter().rev().map(|&f| (n, f)));
            }
        }
        out
    }

    /// The nodes of a leaf's stack, root first, into `out` (cleared first; empty for a leaf
    /// without a stack). A cycle in the parents ends the walk at the node met twice; a node
    /// index out of range ends it too.
    pub fn nodes_of(&self, leaf: &Leaf, out: &mut Vec<u32>) {
        out.clear();
        let mut at = leaf.node;
        let mut damaged = false;
        while let Some(n) = at {
            let Some(node) = self.nodes.get(n as usize) else {
                break;
            };
            // Design: a parent comes before its node, so a sound walk goes to ever smaller
            // indices; only after a step that does not (a damaged profile) is each node
            // checked against the nodes met, which keeps a deep stack linear.
            damaged |= out.last().is_some_and(|&prev| n >= prev);
            if (damaged && out.contains(&n)) || out.len() > self.nodes.len() {
                break;
            }
            out.push(n);
            at = node.parent;
        }
        out.reverse();
    }

    /// A leaf's figure for every cost at once.
    pub fn figures(leaf: &Leaf) -> Figures {
        let mut f = Figures::default();
        for c in Cost::ALL {
            f.0[c as usize] = c.of(leaf);
        }
        f
    }

    /// The bytes leaked by the leaves a leak suppression matches (not in [`Cost::Leaked`]'s
    /// figures, so that a report can say what it left out).
    pub fn suppressed_leaked(&self) -> u128 {
        self.leaves
            .iter()
            .filter(|l| l.suppressed)
            .map(|l| l.costs.leaked)
            .sum()
    }

    /// The total of a cost over every leaf.
    pub fn total(&self, cost: Cost) -> u128 {
        self.leaves.iter().map(|l| cost.of(l)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(f: &str) -> Frame {
        Frame {
            function: Some(f.into()),
            ..Frame::default()
        }
    }

    #[test]
    fn a_stack_is_walked_root_first_and_inlined_frames_outermost_first() {
        let p = StackProfile {
            frames: vec![frame("main"), frame("inner"), frame("outer"), frame("leaf")],
            nodes: vec![
                Node {
                    parent: None,
                    frames: vec![0],
                },
                // `inner` inlined into `outer` at one instruction pointer.
                Node {
                    parent: Some(0),
                    frames: vec![1, 2],
                },
                Node {
                    parent: Some(1),
                    frames: vec![3],
                },
            ],
            leaves: vec![Leaf {
                node: Some(2),
                ..Leaf::default()
            }],
            ..StackProfile::default()
        };
        let names: Vec<_> = p
            .stack_of(&p.leaves[0])
            .into_iter()
            .map(|(_, f)| p.frames[f as usize].function.clone().unwrap_or_default())
            .collect();
        assert_eq!(names, ["main", "outer", "inner", "leaf"]);
    }

    #[test]
    fn a_cycle_in_the_parents_ends_the_walk() {
        let p = StackProfile {
            frames: vec![frame("a"), frame("b")],
            nodes: vec![
                Node {
                    parent: Some(1),
                    frames: vec![0],
                },
                Node {
                    parent: Some(0),
                    frames: vec![1],
                },
            ],
            leaves: vec![Leaf {
                node: Some(0),
                ..Leaf::default()
            }],
            ..StackProfile::default()
        };
        assert_eq!(p.stack_of(&p.leaves[0]).len(), 2);
    }

    #[test]
    fn a_suppressed_leak_costs_nothing_as_leaked() {
        let mut l = Leaf::default();
        l.costs.leaked = 56;
        assert_eq!(Cost::Leaked.of(&l), 56);
        l.suppressed = true;
        assert_eq!(Cost::Leaked.of(&l), 0);
        assert_eq!("peak".parse::<Cost>(), Ok(Cost::Peak));
        assert!("nope".parse::<Cost>().is_err());
    }
}
