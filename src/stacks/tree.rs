//! Trees of a stack profile (heaptrack_gui's semantics, docs/stacks.md): top-down (root →
//! leaf, inclusive and self costs), bottom-up (leaf → root: who calls a function) and
//! caller/callee figures per symbol, every cost at once.

use std::fmt::Write as _;

use super::frame::{push_frame_text, Style};
use super::{human, Cost, Figures, Map, Set, StackProfile};

/// What makes two frames one row of a tree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Merge {
    /// The function and its module (heaptrack_gui's `Symbol`): every call site of a function is
    /// one row. A frame without a function is its address (and module).
    #[default]
    Function,
    /// The frame as the profile holds it: its instruction pointer (and, for inlined frames,
    /// its place in the instruction pointer's list).
    Address,
}

impl Merge {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Merge::Function => "function",
            Merge::Address => "address",
        }
    }
}

impl std::str::FromStr for Merge {
    type Err = String;
    fn from_str(s: &str) -> Result<Merge, String> {
        match s {
            "function" => Ok(Merge::Function),
            "address" => Ok(Merge::Address),
            _ => Err(format!("unknown merge `{s}` (function, address)")),
        }
    }
}

/// Which way a tree goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum TreeKind {
    /// From the roots (`main`, a thread's start) to the allocating functions, each row with its
    /// inclusive cost and its self cost (allocations made in that function itself).
    #[default]
    TopDown,
    /// From the allocating functions to their callers: a top-level row is a function that
    /// allocates (its cost is its self cost), a row under it the caller it was reached from.
    BottomUp,
}

impl TreeKind {
    /// The name used on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            TreeKind::TopDown => "top-down",
            TreeKind::BottomUp => "bottom-up",
        }
    }
}

/// How a tree or caller/callee table is built from a profile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeOptions {
    /// At most this many frames of each stack, from the root (top-down) or the leaf
    /// (bottom-up); `None`: all. The costs of the frames cut off stay in the inclusive cost
    /// of the deepest row kept. Caller/callee figures take every frame.
    pub depth: Option<usize>,
    /// What makes two frames one row.
    pub merge: Merge,
    /// The leaf's site name (a Java trace's allocated class) as one more frame under the
    /// innermost one, when the leaf has a site.
    pub leaf_site: bool,
}

/// A row's identity: a function (with its module), a frame, a site name, or an unknown stack.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Symbol {
    /// What is printed: the frame's text ([`super::frame_text`] without the inlined frames'
    /// parentheses), the site's name, or `??` for the leaves without a stack.
    pub text: String,
    /// The function, unshortened.
    pub function: Option<String>,
    /// The function's qualifier (a Java method's class).
    pub owner: Option<String>,
    /// The module.
    pub module: Option<String>,
    /// The file of the first frame met with this identity.
    pub file: Option<String>,
    /// The line of the first frame met with this identity.
    pub line: Option<u64>,
    /// The address of the first frame met with this identity.
    pub address: Option<u64>,
    /// Whether this row is a leaf's site name, not a frame.
    pub site: bool,
}

/// One row of a [`Tree`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeNode {
    /// Index into [`Tree::symbols`].
    pub symbol: u32,
    /// The row above (`None`: a top-level row).
    pub parent: Option<u32>,
    /// The rows below, in the order they were first met.
    pub children: Vec<u32>,
    /// The costs of every stack through this row (top-down: this function and what it
    /// calls; bottom-up: the leaf function reached through this caller chain).
    pub inclusive: Figures,
    /// The costs of the stacks ending at this row (top-down: allocations made by this
    /// function itself; bottom-up: the top-level rows only).
    pub exclusive: Figures,
}

/// A top-down or bottom-up tree of a profile's stacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    /// Top-down or bottom-up.
    pub kind: TreeKind,
    /// What made two frames one row.
    pub merge: Merge,
    /// The rows' identities.
    pub symbols: Vec<Symbol>,
    /// The rows; a row's parent comes before it.
    pub nodes: Vec<TreeNode>,
    /// The top-level rows.
    pub roots: Vec<u32>,
    /// The totals over every leaf.
    pub total: Figures,
    /// Per cost, the leaves with a figure of it (stacks counted, one per leaf).
    pub stacks: Figures,
    /// The bytes leaked by leaves a leak suppression matches: in no `leaked` figure.
    pub suppressed_leaked: u128,
}

/// The caller/callee figures of one symbol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolFigures {
    /// Index into [`CallerCallee::symbols`].
    pub symbol: u32,
    /// The costs of every stack the symbol appears in, counted once per stack however often
    /// it appears (recursion).
    pub inclusive: Figures,
    /// The costs of the stacks whose innermost frame is the symbol.
    pub exclusive: Figures,
    /// The symbols that call it, each with the costs of the stacks where that call happens
    /// (once per stack).
    pub callers: Vec<(u32, Figures)>,
    /// The symbols it calls, likewise.
    pub callees: Vec<(u32, Figures)>,
}

/// Caller/callee figures of every symbol of a profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerCallee {
    /// What made two frames one symbol.
    pub merge: Merge,
    /// The symbols.
    pub symbols: Vec<Symbol>,
    /// One row per symbol, `rows[i].symbol == i`.
    pub rows: Vec<SymbolFigures>,
    /// The totals over every leaf.
    pub total: Figures,
    /// The bytes leaked by leaves a leak suppression matches: in no `leaked` figure.
    pub suppressed_leaked: u128,
}

/// How a tree or a caller/callee table is shown (text and JSON).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeView {
    /// The cost rows are sorted by and shown in text.
    pub cost: Cost,
    /// At most this many rows under each row (and top-level rows); 0: all.
    pub top: usize,
    /// Rows whose cost is below this fraction of the total are left out (0.0: none).
    pub threshold: f64,
}

impl Default for TreeView {
    fn default() -> Self {
        TreeView {
            cost: Cost::Allocations,
            top: 0,
            threshold: 0.0,
        }
    }
}

/// A frame's identity for one merge mode; borrowed from the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key<'p> {
    Frame(u32),
    Function(Option<&'p str>, &'p str, Option<&'p str>),
    Address(u64, Option<&'p str>),
    Site(&'p str),
    Unknown,
}

/// The symbol table, built as stacks are walked.
struct Symbols<'p> {
    profile: &'p StackProfile,
    merge: Merge,
    ids: Map<Key<'p>, u32>,
    /// Per frame of the profile: its symbol, once known.
    of_frame: Vec<Option<u32>>,
    symbols: Vec<Symbol>,
    /// A buffer for a leaf's nodes.
    nodes: Vec<u32>,
}

impl<'p> Symbols<'p> {
    fn new(profile: &'p StackProfile, merge: Merge) -> Self {
        Symbols {
            profile,
            merge,
            ids: Map::default(),
            of_frame: vec![None; profile.frames.len()],
            symbols: Vec::new(),
            nodes: Vec::new(),
        }
    }

    fn intern(&mut self, key: Key<'p>, make: impl FnOnce() -> Symbol) -> u32 {
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = self.symbols.len() as u32;
        self.symbols.push(make());
        self.ids.insert(key, id);
        id
    }

    fn frame(&mut self, f: u32) -> u32 {
        if let Some(Some(id)) = self.of_frame.get(f as usize) {
            return *id;
        }
        let profile = self.profile;
        let frame = &profile.frames[f as usize];
        let key = match (self.merge, &frame.function, frame.address) {
            (Merge::Address, _, _) => Key::Frame(f),
            (Merge::Function, Some(func), _) => Key::Function(
                frame.owner.as_deref(),
                func.as_str(),
                frame.module.as_deref(),
            ),
            (Merge::Function, None, Some(a)) => Key::Address(a, frame.module.as_deref()),
            (Merge::Function, None, None) => Key::Frame(f),
        };
        let id = self.intern(key, || {
            let mut text = String::new();
            let style = Style {
                address: true,
                parens: false,
            };
            push_frame_text(&mut text, frame, style);
            Symbol {
                text,
                function: frame.function.clone(),
                owner: frame.owner.clone(),
                module: frame.module.clone(),
                file: frame.file.clone(),
                line: frame.line,
                address: frame.address,
                site: false,
            }
        });
        self.of_frame[f as usize] = Some(id);
        id
    }

    fn site(&mut self, name: &'p str) -> u32 {
        self.intern(Key::Site(name), || Symbol {
            text: name.replace(['\n', '\r'], " "),
            site: true,
            ..Symbol::default()
        })
    }

    fn unknown(&mut self) -> u32 {
        self.intern(Key::Unknown, || Symbol {
            text: "??".into(),
            ..Symbol::default()
        })
    }

    /// A leaf's symbols, root first, into `out`; `[??]` (then the site) for a leaf without a
    /// stack.
    fn stack(&mut self, leaf: &'p super::Leaf, leaf_site: bool, out: &mut Vec<u32>) {
        out.clear();
        let profile = self.profile;
        let mut nodes = std::mem::take(&mut self.nodes);
        profile.nodes_of(leaf, &mut nodes);
        for &n in &nodes {
            // A node's frames innermost first: in call order, outermost first.
            for &f in profile.nodes[n as usize].frames.iter().rev() {
                if (f as usize) < profile.frames.len() {
                    let s = self.frame(f);
                    out.push(s);
                }
            }
        }
        self.nodes = nodes;
        if out.is_empty() {
            let s = self.unknown();
            out.push(s);
        }
        if let Some(site) = leaf.site.as_deref().filter(|_| leaf_site) {
            let s = self.site(site);
            out.push(s);
        }
    }
}

/// Where a profile node's innermost frame is in a top-down tree being built.
#[derive(Debug, Clone, Copy)]
struct Memo {
    /// Its row (`None`: the root, a node without frames).
    row: Option<u32>,
    /// The row's depth (1: a top-level row).
    depth: usize,
    /// Whether the depth limit cut the node's path (its leaves have no self cost).
    cut: bool,
}

/// The rows of a tree being built.
struct Builder<'p> {
    symbols: Symbols<'p>,
    nodes: Vec<TreeNode>,
    roots: Vec<u32>,
    /// (parent row or `u32::MAX`, symbol) → row.
    children: Map<(u32, u32), u32>,
}

impl<'p> Builder<'p> {
    /// The row of `sym` under `at` (`None`: a top-level row), made when new.
    fn child(&mut self, at: Option<u32>, sym: u32) -> u32 {
        let key = (at.unwrap_or(u32::MAX), sym);
        if let Some(&n) = self.children.get(&key) {
            return n;
        }
        let n = self.nodes.len() as u32;
        self.nodes.push(TreeNode {
            symbol: sym,
            parent: at,
            children: Vec::new(),
            inclusive: Figures::default(),
            exclusive: Figures::default(),
        });
        match at {
            Some(p) => self.nodes[p as usize].children.push(n),
            None => self.roots.push(n),
        }
        self.children.insert(key, n);
        n
    }

    /// The top-down row of a profile node (parents before nodes), mapping the node and its
    /// ancestors not mapped yet.
    fn node_row(
        &mut self,
        profile: &'p StackProfile,
        memo: &mut [Option<Memo>],
        up: &mut Vec<u32>,
        node: Option<u32>,
        depth: usize,
    ) -> Memo {
        let root = Memo {
            row: None,
            depth: 0,
            cut: false,
        };
        up.clear();
        let mut at = node.filter(|&n| (n as usize) < profile.nodes.len());
        let mut base = root;
        while let Some(n) = at {
            if let Some(m) = memo[n as usize] {
                base = m;
                break;
            }
            up.push(n);
            at = profile.nodes[n as usize].parent;
        }
        for &n in up.iter().rev() {
            for &f in profile.nodes[n as usize].frames.iter().rev() {
                if (f as usize) >= profile.frames.len() {
                    continue;
                }
                if base.depth >= depth {
                    base.cut = true;
                    break;
                }
                let s = self.symbols.frame(f);
                base.row = Some(self.child(base.row, s));
                base.depth += 1;
            }
            memo[n as usize] = Some(base);
        }
        match node {
            Some(n) if (n as usize) < profile.nodes.len() => memo[n as usize].unwrap_or(root),
            _ => root,
        }
    }
}

impl Tree {
    /// Builds a tree of a profile's stacks.
    pub fn build(profile: &StackProfile, kind: TreeKind, opts: &TreeOptions) -> Tree {
        let mut b = Builder {
            symbols: Symbols::new(profile, opts.merge),
            nodes: Vec::new(),
            roots: Vec::new(),
            children: Map::default(),
        };
        let mut total = Figures::default();
        let mut stacks = Figures::default();
        let depth = opts.depth.map_or(usize::MAX, |d| d.max(1));
        // Design: a top-down row's path is its profile node's path, the same for every leaf
        // at that node: each node is mapped to its row once, a leaf's costs land on its row
        // alone, and inclusive costs are summed up the tree at the end — linear in nodes plus
        // leaves, not in leaves times depth. It needs parents before their nodes (the
        // profile's rule); a profile that breaks it takes the walk per leaf.
        let sound = profile
            .nodes
            .iter()
            .enumerate()
            .all(|(i, n)| n.parent.is_none_or(|p| (p as usize) < i));
        let mut memo: Vec<Option<Memo>> = Vec::new();
        if kind == TreeKind::TopDown && sound {
            memo = vec![None; profile.nodes.len()];
        }
        let mut path = Vec::new();
        let mut up = Vec::new();
        for leaf in &profile.leaves {
            let figures = StackProfile::figures(leaf);
            if figures.is_zero() {
                continue;
            }
            total.add(&figures);
            for (n, v) in stacks.0.iter_mut().zip(figures.0) {
                *n += u128::from(v > 0);
            }
            if !memo.is_empty() {
                let mut at = b.node_row(profile, &mut memo, &mut up, leaf.node, depth);
                if at.row.is_none() {
                    let unknown = b.symbols.unknown();
                    at = Memo {
                        row: Some(b.child(None, unknown)),
                        depth: 1,
                        cut: false,
                    };
                }
                if let Some(site) = leaf.site.as_deref().filter(|_| opts.leaf_site) {
                    if at.cut || at.depth >= depth {
                        at.cut = true;
                    } else {
                        let s = b.symbols.site(site);
                        at.row = Some(b.child(at.row, s));
                    }
                }
                if let Some(r) = at.row {
                    let row = &mut b.nodes[r as usize];
                    row.inclusive.add(&figures);
                    if !at.cut {
                        row.exclusive.add(&figures);
                    }
                }
                continue;
            }
            b.symbols.stack(leaf, opts.leaf_site, &mut path);
            if kind == TreeKind::BottomUp {
                path.reverse();
            }
            let keep = depth.min(path.len());
            let mut at: Option<u32> = None;
            for (i, &sym) in path[..keep].iter().enumerate() {
                let n = b.child(at, sym);
                let node = &mut b.nodes[n as usize];
                node.inclusive.add(&figures);
                let is_self = match kind {
                    TreeKind::TopDown => i + 1 == path.len(),
                    TreeKind::BottomUp => i == 0,
                };
                if is_self {
                    node.exclusive.add(&figures);
                }
                at = Some(n);
            }
        }
        if !memo.is_empty() {
            // Rows come after their parents: summing from the last row up adds each row's
            // inclusive cost, complete by then, to its parent's.
            for r in (0..b.nodes.len()).rev() {
                if let Some(p) = b.nodes[r].parent {
                    let inc = b.nodes[r].inclusive;
                    b.nodes[p as usize].inclusive.add(&inc);
                }
            }
        }
        Tree {
            kind,
            merge: opts.merge,
            symbols: b.symbols.symbols,
            nodes: b.nodes,
            roots: b.roots,
            total,
            stacks,
            suppressed_leaked: profile.suppressed_leaked(),
        }
    }

    /// The rows shown under `parent` (`None`: the top-level rows) by a view: sorted by the
    /// view's cost (largest first, then by text), cut by `top` and `threshold`; with the number
    /// of rows left out.
    pub fn shown(&self, parent: Option<u32>, view: &TreeView) -> (Vec<u32>, usize) {
        let all = match parent {
            Some(p) => &self.nodes[p as usize].children,
            None => &self.roots,
        };
        let cost = view.cost;
        let mut rows: Vec<u32> = all.clone();
        rows.sort_by(|&a, &b| {
            let (a, b) = (&self.nodes[a as usize], &self.nodes[b as usize]);
            b.inclusive
                .get(cost)
                .cmp(&a.inclusive.get(cost))
                .then_with(|| {
                    self.symbols[a.symbol as usize]
                        .text
                        .cmp(&self.symbols[b.symbol as usize].text)
                })
        });
        let before = rows.len();
        let min = min_figure(self.total.get(cost), view.threshold);
        rows.retain(|&n| {
            let v = self.nodes[n as usize].inclusive.get(cost);
            v > 0 && v >= min
        });
        if view.top > 0 {
            rows.truncate(view.top);
        }
        let left = before - rows.len();
        (rows, left)
    }

    /// The rows a view shows, in pre-order, each with its depth (0: top level), and the rows
    /// left out.
    pub fn walk(&self, view: &TreeView) -> (Vec<(u32, usize)>, usize) {
        let mut out = Vec::new();
        let mut left = 0;
        // An explicit stack: trees of deep recursions are deep.
        let mut todo: Vec<(u32, usize)> = Vec::new();
        let (top, l) = self.shown(None, view);
        left += l;
        todo.extend(top.into_iter().rev().map(|n| (n, 0)));
        while let Some((n, d)) = todo.pop() {
            out.push((n, d));
            let (kids, l) = self.shown(Some(n), view);
            left += l;
            todo.extend(kids.into_iter().rev().map(|k| (k, d + 1)));
        }
        (out, left)
    }

    /// The tree as indented text, as heaptrack_print indents a backtrace: per row the view's
    /// cost (inclusive, its share of the total, and for top-down the self cost) and the
    /// frame.
    pub fn to_text(&self, view: &TreeView) -> String {
        let cost = view.cost;
        let (rows, left) = self.walk(view);
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{} tree by {}, merged by {}: {} in {} stack{}",
            self.kind.name(),
            cost.name(),
            self.merge.name(),
            total_label(cost, self.total.get(cost)),
            self.stacks.get(cost),
            if self.stacks.get(cost) == 1 { "" } else { "s" },
        );
        let total = self.total.get(cost);
        let cells: Vec<(String, String, String)> = rows
            .iter()
            .map(|&(n, _)| {
                let node = &self.nodes[n as usize];
                let v = node.inclusive.get(cost);
                (
                    human::figure(cost, v),
                    human::percent(v, total),
                    human::figure(cost, node.exclusive.get(cost)),
                )
            })
            .collect();
        let w0 = cells.iter().map(|c| c.0.len()).max().unwrap_or(0).max(9);
        let w1 = cells.iter().map(|c| c.1.len()).max().unwrap_or(0).max(7);
        let w2 = cells.iter().map(|c| c.2.len()).max().unwrap_or(0).max(4);
        match self.kind {
            TreeKind::TopDown => {
                let _ = writeln!(
                    o,
                    "{:>w0$} {:>w1$}  {:>w2$}  frame",
                    "inclusive", "", "self"
                );
            }
            TreeKind::BottomUp => {
                let _ = writeln!(
                    o,
                    "{:>w0$} {:>w1$}  frame, its callers under it",
                    cost.name(),
                    ""
                );
            }
        }
        for ((n, depth), (v, p, s)) in rows.iter().zip(&cells) {
            let text = &self.symbols[self.nodes[*n as usize].symbol as usize].text;
            let indent = "  ".repeat(*depth);
            let text = escape(text);
            match self.kind {
                TreeKind::TopDown => {
                    let _ = writeln!(o, "{v:>w0$} {p:>w1$}  {s:>w2$}  {indent}{text}");
                }
                TreeKind::BottomUp => {
                    let _ = writeln!(o, "{v:>w0$} {p:>w1$}  {indent}{text}");
                }
            }
        }
        if rows.is_empty() {
            let _ = writeln!(o, "(no stack has a cost of {})", cost.name());
        }
        if left > 0 {
            let _ = writeln!(
                o,
                "({left} row{} not shown: {})",
                plural(left),
                cut_label(view, true)
            );
        }
        suppressed_line(&mut o, cost, self.suppressed_leaked);
        o
    }
}

impl CallerCallee {
    /// Builds the caller/callee figures of a profile's symbols (every frame of every stack;
    /// `opts.depth` is not applied).
    pub fn build(profile: &StackProfile, opts: &TreeOptions) -> CallerCallee {
        let mut symbols = Symbols::new(profile, opts.merge);
        let mut rows: Vec<SymbolFigures> = Vec::new();
        let mut pairs: Map<(u32, u32), Figures> = Map::default();
        let mut total = Figures::default();
        let mut path = Vec::new();
        let mut seen: Set<u32> = Set::default();
        let mut seen_pairs: Set<(u32, u32)> = Set::default();
        for leaf in &profile.leaves {
            let figures = StackProfile::figures(leaf);
            if figures.is_zero() {
                continue;
            }
            total.add(&figures);
            symbols.stack(leaf, opts.leaf_site, &mut path);
            while rows.len() < symbols.symbols.len() {
                let symbol = rows.len() as u32;
                rows.push(SymbolFigures {
                    symbol,
                    inclusive: Figures::default(),
                    exclusive: Figures::default(),
                    callers: Vec::new(),
                    callees: Vec::new(),
                });
            }
            // Design: a recursion guard per stack, as heaptrack_gui's: a function that appears
            // three times in one stack is charged that stack's cost once.
            seen.clear();
            seen_pairs.clear();
            for &s in &path {
                if seen.insert(s) {
                    rows[s as usize].inclusive.add(&figures);
                }
            }
            if let Some(&last) = path.last() {
                rows[last as usize].exclusive.add(&figures);
            }
            for w in path.windows(2) {
                if seen_pairs.insert((w[0], w[1])) {
                    pairs.entry((w[0], w[1])).or_default().add(&figures);
                }
            }
        }
        let mut pairs: Vec<_> = pairs.into_iter().collect();
        pairs.sort_unstable_by_key(|&((a, b), _)| (a, b));
        for ((caller, callee), f) in pairs {
            rows[caller as usize].callees.push((callee, f));
            rows[callee as usize].callers.push((caller, f));
        }
        CallerCallee {
            merge: opts.merge,
            symbols: symbols.symbols,
            rows,
            total,
            suppressed_leaked: profile.suppressed_leaked(),
        }
    }

    /// The symbols a view shows, by inclusive cost (largest first, then by text), and how
    /// many it leaves out.
    pub fn shown(&self, view: &TreeView) -> (Vec<u32>, usize) {
        let cost = view.cost;
        let mut rows: Vec<u32> = (0..self.rows.len() as u32).collect();
        rows.sort_by(|&a, &b| {
            let (ra, rb) = (&self.rows[a as usize], &self.rows[b as usize]);
            rb.inclusive
                .get(cost)
                .cmp(&ra.inclusive.get(cost))
                .then_with(|| {
                    self.symbols[a as usize]
                        .text
                        .cmp(&self.symbols[b as usize].text)
                })
        });
        let before = rows.len();
        let min = min_figure(self.total.get(cost), view.threshold);
        rows.retain(|&r| {
            let v = self.rows[r as usize].inclusive.get(cost);
            v > 0 && v >= min
        });
        if view.top > 0 {
            rows.truncate(view.top);
        }
        let left = before - rows.len();
        (rows, left)
    }

    /// The figures as text: per symbol its inclusive and self cost, then its callers and
    /// callees with theirs, largest first.
    pub fn to_text(&self, view: &TreeView) -> String {
        let cost = view.cost;
        let total = self.total.get(cost);
        let (rows, left) = self.shown(view);
        let mut o = String::new();
        let _ = writeln!(
            o,
            "callers and callees by {}, merged by {}: {}",
            cost.name(),
            self.merge.name(),
            total_label(cost, total),
        );
        for r in rows {
            let row = &self.rows[r as usize];
            let v = row.inclusive.get(cost);
            let _ = writeln!(
                o,
                "\n{}\n  inclusive {} ({}), self {}",
                escape(&self.symbols[r as usize].text),
                human::figure(cost, v),
                human::percent(v, total),
                human::figure(cost, row.exclusive.get(cost)),
            );
            for (label, list) in [("called from", &row.callers), ("calls", &row.callees)] {
                let mut list: Vec<_> = list.iter().filter(|(_, f)| f.get(cost) > 0).collect();
                if list.is_empty() {
                    continue;
                }
                list.sort_by(|a, b| {
                    b.1.get(cost).cmp(&a.1.get(cost)).then_with(|| {
                        self.symbols[a.0 as usize]
                            .text
                            .cmp(&self.symbols[b.0 as usize].text)
                    })
                });
                let _ = writeln!(o, "  {label}:");
                let n = list.len();
                let shown = if view.top > 0 { view.top.min(n) } else { n };
                for (s, f) in &list[..shown] {
                    let _ = writeln!(
                        o,
                        "    {:>10}  {}",
                        human::figure(cost, f.get(cost)),
                        escape(&self.symbols[*s as usize].text)
                    );
                }
                if shown < n {
                    let _ = writeln!(o, "    ({} more)", n - shown);
                }
            }
        }
        if left > 0 {
            let _ = writeln!(
                o,
                "\n({left} symbol{} not shown: {})",
                plural(left),
                cut_label(view, false)
            );
        }
        suppressed_line(&mut o, cost, self.suppressed_leaked);
        o
    }
}

/// The footer of a leaked figure that leaves out suppressed leaks, as heaptrack_print's
/// "suppressed leaks" line.
fn suppressed_line(o: &mut String, cost: Cost, suppressed: u128) {
    if cost == Cost::Leaked && suppressed > 0 {
        let _ = writeln!(
            o,
            "({} leaked under a leak suppression not counted)",
            total_label(cost, suppressed)
        );
    }
}

/// The smallest figure a threshold keeps.
fn min_figure(total: u128, threshold: f64) -> u128 {
    if threshold > 0.0 {
        (total as f64 * threshold).ceil() as u128
    } else {
        0
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Why rows were left out: `beyond the top 3 of a level, below 1 % of the total, or no peak`.
fn cut_label(view: &TreeView, of_level: bool) -> String {
    let mut why = Vec::new();
    if view.top > 0 {
        let level = if of_level { " of a level" } else { "" };
        why.push(format!("beyond the top {}{level}", view.top));
    }
    if view.threshold > 0.0 {
        why.push(format!("below {} % of the total", view.threshold * 100.0));
    }
    why.push(format!("no {}", view.cost.name()));
    match why.len() {
        1 => why.remove(0),
        _ => {
            let last = why.pop().unwrap_or_default();
            format!("{}, or {last}", why.join(", "))
        }
    }
}

/// `15 allocations`, `71.9 KiB (73660 bytes)`.
fn total_label(cost: Cost, v: u128) -> String {
    if cost.is_bytes() && v < 1024 {
        format!("{v} bytes")
    } else if cost.is_bytes() {
        format!("{} ({v} bytes)", human::figure(cost, v))
    } else {
        format!("{v} {}", cost.noun())
    }
}

/// A name from the trace, made safe for a terminal.
fn escape(s: &str) -> std::borrow::Cow<'_, str> {
    crate::escape::escape_for_terminal(s)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::{Costs, Frame, Leaf, Node};
    use super::*;

    fn frame(f: &str) -> Frame {
        Frame {
            function: Some(f.into()),
            module: Some("nested".into()),
            ..Frame::default()
        }
    }

    /// `main → a → b` (3 allocations, 100 bytes), `main → a` (1, 10), `main → r → r → r`
    /// (2, 20: recursion), `main → b` (4, 40), a leaf with no stack (1, 5).
    pub(crate) fn sample() -> StackProfile {
        let node = |parent: Option<u32>, f: u32| Node {
            parent,
            frames: vec![f],
        };
        let leaf = |node: Option<u32>, allocations: u64, bytes: u128| Leaf {
            node,
            costs: Costs {
                allocations,
                bytes,
                ..Costs::default()
            },
            ..Leaf::default()
        };
        StackProfile {
            frames: vec![frame("main"), frame("a"), frame("b"), frame("r")],
            nodes: vec![
                node(None, 0),    // 0 main
                node(Some(0), 1), // 1 main a
                node(Some(1), 2), // 2 main a b
                node(Some(0), 3), // 3 main r
                node(Some(3), 3), // 4 main r r
                node(Some(4), 3), // 5 main r r r
                node(Some(0), 2), // 6 main b
            ],
            leaves: vec![
                leaf(Some(2), 3, 100),
                leaf(Some(1), 1, 10),
                leaf(Some(5), 2, 20),
                leaf(Some(6), 4, 40),
                leaf(None, 1, 5),
                leaf(Some(2), 0, 0),
            ],
            space: "block".into(),
            sized: true,
            contexts: false,
        }
    }

    fn rows(t: &Tree, view: &TreeView) -> Vec<String> {
        let (rows, _) = t.walk(view);
        rows.iter()
            .map(|&(n, d)| {
                let node = &t.nodes[n as usize];
                format!(
                    "{}{} {} {}",
                    "  ".repeat(d),
                    t.symbols[node.symbol as usize].text,
                    node.inclusive.get(view.cost),
                    node.exclusive.get(view.cost)
                )
            })
            .collect()
    }

    #[test]
    fn top_down_has_inclusive_and_self_costs() {
        let t = Tree::build(&sample(), TreeKind::TopDown, &TreeOptions::default());
        assert_eq!(t.total.get(Cost::Allocations), 11);
        assert_eq!(t.stacks.get(Cost::Allocations), 5);
        assert_eq!(t.stacks.get(Cost::Peak), 0);
        assert_eq!(
            rows(&t, &TreeView::default()),
            [
                "main 10 0",
                "  a 4 1",
                "    b 3 3",
                "  b 4 4",
                "  r 2 0",
                "    r 2 0",
                "      r 2 2",
                "?? 1 1",
            ]
        );
        let by_bytes = TreeView {
            cost: Cost::Bytes,
            ..TreeView::default()
        };
        assert_eq!(rows(&t, &by_bytes)[1], "  a 110 10");
        // Σ self = total: every cost lands once.
        for c in Cost::ALL {
            let s: u128 = t.nodes.iter().map(|n| n.exclusive.get(c)).sum();
            assert_eq!(s, t.total.get(c));
        }
    }

    #[test]
    fn bottom_up_starts_at_the_allocating_functions() {
        let t = Tree::build(&sample(), TreeKind::BottomUp, &TreeOptions::default());
        assert_eq!(
            rows(&t, &TreeView::default()),
            [
                "b 7 7",
                "  main 4 0",
                "  a 3 0",
                "    main 3 0",
                "r 2 2",
                "  r 2 0",
                "    r 2 0",
                "      main 2 0",
                "?? 1 1",
                "a 1 1",
                "  main 1 0",
            ]
        );
    }

    #[test]
    fn depth_top_and_threshold_cut() {
        let opts = TreeOptions {
            depth: Some(2),
            ..TreeOptions::default()
        };
        let t = Tree::build(&sample(), TreeKind::TopDown, &opts);
        assert_eq!(
            rows(&t, &TreeView::default()),
            ["main 10 0", "  a 4 1", "  b 4 4", "  r 2 0", "?? 1 1"]
        );
        let view = TreeView {
            top: 1,
            threshold: 0.3,
            ..TreeView::default()
        };
        let (shown, left) = t.walk(&view);
        // main; under it a and b have 4 (≥ 30 % of 11), r is below; top 1 keeps a (by text).
        assert_eq!(shown.len(), 2);
        assert_eq!(left, 3); // ??, b, r
        let text = t.to_text(&view);
        assert!(
            text.contains(
                "top-down tree by allocations, merged by function: 11 allocations in 5 stacks"
            ),
            "{text}"
        );
        assert!(text.contains("(3 rows not shown:"), "{text}");
        assert!(text.contains("      4  36.4 %     1    a"), "{text}");
    }

    #[test]
    fn caller_callee_counts_a_stack_once_per_symbol() {
        let cc = CallerCallee::build(&sample(), &TreeOptions::default());
        let row = |name: &str| {
            let i = cc.symbols.iter().position(|s| s.text == name).unwrap();
            &cc.rows[i]
        };
        // r appears three times in one stack: its 2 allocations once.
        assert_eq!(row("r").inclusive.get(Cost::Allocations), 2);
        assert_eq!(row("r").exclusive.get(Cost::Allocations), 2);
        // r → r once per stack, main → r once.
        let r = cc.symbols.iter().position(|s| s.text == "r").unwrap() as u32;
        assert_eq!(row("r").callers.len(), 2);
        assert!(row("r").callers.contains(&(r, {
            let mut f = Figures::default();
            f.0[Cost::Allocations as usize] = 2;
            f.0[Cost::Bytes as usize] = 20;
            f
        })));
        assert_eq!(row("main").inclusive.get(Cost::Allocations), 10);
        assert_eq!(row("b").inclusive.get(Cost::Allocations), 7);
        assert_eq!(row("b").callers.len(), 2);
        assert_eq!(row("a").callees.len(), 1);
        let text = cc.to_text(&TreeView::default());
        assert!(text.contains("\nb\n  inclusive 7 (63.6 %), self 7\n  called from:\n             4  main\n             3  a\n"), "{text}");
    }

    #[test]
    fn merge_by_function_or_by_address() {
        let mut p = sample();
        // A second frame of `b` at another address and line: one symbol by function, two by
        // address.
        p.frames[2].address = Some(0x10);
        p.frames.push(Frame {
            address: Some(0x20),
            line: Some(9),
            ..p.frames[2].clone()
        });
        p.nodes[6].frames = vec![4];
        let by_fn = Tree::build(&p, TreeKind::BottomUp, &TreeOptions::default());
        assert_eq!(by_fn.symbols.iter().filter(|s| s.text == "b").count(), 1);
        let by_addr = Tree::build(
            &p,
            TreeKind::BottomUp,
            &TreeOptions {
                merge: Merge::Address,
                ..TreeOptions::default()
            },
        );
        assert_eq!(by_addr.symbols.iter().filter(|s| s.text == "b").count(), 2);
        assert_eq!(by_addr.roots.len(), by_fn.roots.len() + 1);
        assert_eq!("address".parse::<Merge>(), Ok(Merge::Address));
    }

    #[test]
    fn a_deep_recursion_is_walked_in_linear_time_without_recursing() {
        // 100 000 frames of one function: a quadratic walk or a recursive renderer would
        // take minutes or overflow the stack.
        let depth = 100_000u32;
        let p = StackProfile {
            frames: vec![frame("r")],
            nodes: (0..depth)
                .map(|i| Node {
                    parent: i.checked_sub(1),
                    frames: vec![0],
                })
                .collect(),
            leaves: vec![Leaf {
                node: Some(depth - 1),
                costs: Costs {
                    allocations: 1,
                    ..Costs::default()
                },
                ..Leaf::default()
            }],
            ..StackProfile::default()
        };
        assert_eq!(p.stack_of(&p.leaves[0]).len(), depth as usize);
        let t = Tree::build(&p, TreeKind::BottomUp, &TreeOptions::default());
        assert_eq!(t.nodes.len(), depth as usize);
        assert_eq!(t.walk(&TreeView::default()).0.len(), depth as usize);
        let cc = CallerCallee::build(&p, &TreeOptions::default());
        assert_eq!(cc.rows[0].inclusive.get(Cost::Allocations), 1);
        drop(t);
    }

    /// Each row as `path: inclusive/self` for every cost, sorted.
    fn by_path(t: &Tree) -> Vec<String> {
        let mut paths: Vec<String> = Vec::new();
        let mut out = Vec::new();
        for n in &t.nodes {
            let mut path = n
                .parent
                .map_or(String::new(), |p| paths[p as usize].clone() + ";");
            path.push_str(&t.symbols[n.symbol as usize].text);
            out.push(format!("{path}: {:?} {:?}", n.inclusive.0, n.exclusive.0));
            paths.push(path);
        }
        out.sort();
        out
    }

    #[test]
    fn the_linear_top_down_build_equals_the_walk_per_leaf() {
        let mut p = sample();
        p.leaves[3].site = Some("Foo".into());
        p.leaves[0].site = Some("Bar".into());
        // The same stacks with the nodes in reverse order: parents after their nodes, which
        // the linear build does not take, so the tree comes from the walk per leaf.
        let mut q = p.clone();
        let last = q.nodes.len() as u32 - 1;
        q.nodes.reverse();
        for n in &mut q.nodes {
            n.parent = n.parent.map(|x| last - x);
        }
        for l in &mut q.leaves {
            l.node = l.node.map(|x| last - x);
        }
        for depth in [None, Some(1), Some(2), Some(3), Some(4)] {
            for leaf_site in [false, true] {
                let opts = TreeOptions {
                    depth,
                    leaf_site,
                    ..TreeOptions::default()
                };
                let fast = Tree::build(&p, TreeKind::TopDown, &opts);
                let slow = Tree::build(&q, TreeKind::TopDown, &opts);
                assert_eq!(by_path(&fast), by_path(&slow), "{opts:?}");
                assert_eq!(fast.total, slow.total);
            }
        }
    }

    #[test]
    fn suppressed_leaks_are_left_out_and_said() {
        let mut p = sample();
        p.leaves[0].costs.leaked = 48;
        p.leaves[1].costs.leaked = 8;
        p.leaves[0].suppressed = true;
        let t = Tree::build(&p, TreeKind::TopDown, &TreeOptions::default());
        assert_eq!(t.total.get(Cost::Leaked), 8);
        let view = TreeView {
            cost: Cost::Leaked,
            ..TreeView::default()
        };
        let text = t.to_text(&view);
        assert!(text.contains("8 bytes in 1 stack\n"), "{text}");
        assert!(
            text.contains("(48 bytes leaked under a leak suppression not counted)"),
            "{text}"
        );
        let text = CallerCallee::build(&p, &TreeOptions::default()).to_text(&view);
        assert!(text.contains("(48 bytes leaked under"), "{text}");
        assert!(!t.to_text(&TreeView::default()).contains("suppression"));
    }

    #[test]
    fn leaf_site_adds_a_row_under_the_leaf() {
        let mut p = sample();
        p.leaves[3].site = Some("Foo".into());
        let opts = TreeOptions {
            leaf_site: true,
            ..TreeOptions::default()
        };
        let t = Tree::build(&p, TreeKind::TopDown, &opts);
        assert!(rows(&t, &TreeView::default()).contains(&"    Foo 4 4".to_string()));
        let empty = Tree::build(&StackProfile::default(), TreeKind::TopDown, &opts);
        assert!(empty
            .to_text(&TreeView::default())
            .contains("(no stack has a cost"));
    }
}
