//! Extension stacks/1 applied (docs/format.md §17): the nodes of stack trees as records define
//! them, calling contexts as nesting levels open, the parts of frames, the rules; and the
//! [`StackProfile`] of a namespace made from them and the statistics' figures per leaf.

// Design: one registry of nodes for both kinds of stacks. A stack tree held in the trace
// (heaptrack's `t` records) maps each of its ids to a node as the record defining it is read; a
// calling context is interned as (parent node, frame) when a level opens, so a thread's open
// levels each remember their node and an allocation takes the innermost one. Nodes, frames
// and context children are entries like any other the interpreter tracks: they count towards
// its limit, and memory is bounded by the distinct stack nodes, never by the trace. A node
// whose frame is skipped (`operator new`, a `skips` rule) is its parent's node, decided when it
// is read, as heaptrack's reader does; stops are applied when a profile is made (a stop frame
// keeps its node, only its parent is cut), so a rule read late still applies.

use foldhash::HashMap;

use crate::decode::{Field, RecordView, Value};
use crate::dtd::analysis::{ActionKind, FramePart, RecordDecl, SpaceId, StackKind, StackRule};
use crate::dtd::SlotId;
use crate::stacks::{Costs, Frame, Leaf, Node, StackProfile};

use super::values::Name;
use super::Interpreter;

mod resume;

/// No node: the root of every stack.
pub(super) const ROOT: u32 = u32::MAX;

/// A node: its parent and the frame it adds (an id of a frame namespace).
#[derive(Debug, Clone, Copy)]
pub(super) struct RNode {
    parent: u32,
    space: SpaceId,
    frame: u64,
}

/// The parts of one frame, as read (names resolved when a profile is made: tables may come
/// later in the trace).
#[derive(Debug, Clone, Default)]
struct Parts {
    function: Option<Name>,
    owner: Option<Name>,
    file: Option<Name>,
    module: Option<Name>,
    line: Option<u64>,
    address: Option<u64>,
}

impl Parts {
    fn has(&self, p: FramePart) -> bool {
        match p {
            FramePart::Function => self.function.is_some(),
            FramePart::Owner => self.owner.is_some(),
            FramePart::File => self.file.is_some(),
            FramePart::Module => self.module.is_some(),
            FramePart::Line => self.line.is_some(),
            FramePart::Address => self.address.is_some(),
        }
    }
}

/// A frame id's frames: the first (innermost), then those it was inlined into.
#[derive(Debug, Clone, Default)]
struct FrameInfo {
    frames: Vec<Parts>,
}

/// What extension stacks/1 keeps while a trace is read.
#[derive(Debug, Default)]
pub(super) struct StackState {
    nodes: Vec<RNode>,
    /// A stack tree's ids: (namespace, id) → node (a skipped node is its parent's).
    tree: HashMap<(SpaceId, u64), u32>,
    /// The offsets of the records that defined a tree's ids (for a parent given as a link).
    at_offset: HashMap<(SpaceId, u64), u64>,
    /// Calling contexts: (parent node, frame namespace, frame id) → node.
    children: HashMap<(u32, SpaceId, u64), u32>,
    frames: HashMap<(SpaceId, u64), FrameInfo>,
    rules: Vec<(StackRule, Name)>,
    /// Per record type with a `context` role: the nesting namespace and its key's slot.
    pub(super) context_of: Vec<Option<(SpaceId, Option<SlotId>)>>,
    /// The namespaces whose ids records give a calling context.
    context_spaces: Vec<SpaceId>,
}

impl StackState {
    /// The per-record `context` roles of a schema, resolved once.
    pub(super) fn new(schema: &crate::dtd::Schema) -> StackState {
        let decl = &schema.analysis;
        let context_of = (0..schema.records.len())
            .map(|r| {
                let d = decl.record(r as crate::dtd::RecordId);
                let role = d.stack.iter().find(|x| x.kind == StackKind::Context)?;
                let ns = &decl.namespaces[role.space as usize];
                let key = ns.key.as_ref().and_then(|k| {
                    schema.records[r]
                        .slots
                        .iter()
                        .position(|s| &s.name == k)
                        .map(|s| s as SlotId)
                });
                Some((role.space, key))
            })
            .collect();
        let mut context_spaces: Vec<SpaceId> = decl
            .records
            .iter()
            .filter(|d| d.stack.iter().any(|x| x.kind == StackKind::Context))
            .flat_map(|d| {
                d.actions
                    .iter()
                    .filter(|a| matches!(a.kind, ActionKind::Define | ActionKind::DefineNext))
                    .map(|a| a.space)
            })
            .collect();
        context_spaces.sort_unstable();
        context_spaces.dedup();
        StackState {
            context_of,
            context_spaces,
            ..StackState::default()
        }
    }
}

impl Interpreter<'_> {
    /// Room for one more entry (node, frame, context): false at the limit (the entry is not
    /// kept; the limit finding comes from the next define).
    fn room(&mut self) -> bool {
        if self.tracked >= self.limit {
            return false;
        }
        self.tracked += 1;
        true
    }

    /// A record defined `id` in `space`: its node (a stack tree's), its frame's parts.
    pub(super) fn stack_define(
        &mut self,
        decl: &RecordDecl,
        space: SpaceId,
        id: u64,
        view: &RecordView<'_>,
    ) {
        if decl
            .stack
            .iter()
            .any(|r| r.space == space && matches!(r.kind, StackKind::Part(_)))
        {
            self.frame_parts(decl, space, id, view);
        }
        if self.decl.namespaces[space as usize].tree {
            self.tree_node(decl, space, id, view);
        }
    }

    fn frame_parts(&mut self, decl: &RecordDecl, space: SpaceId, id: u64, view: &RecordView<'_>) {
        let mut info = FrameInfo {
            frames: vec![Parts::default()],
        };
        let slots = &view.record().slots;
        for f in view.fields() {
            let slot = f.slot();
            let Some(part) = decl.stack.iter().find_map(|r| match r.kind {
                StackKind::Part(p) if r.slot == slot && r.space == space => Some(p),
                _ => None,
            }) else {
                continue;
            };
            let inlined = slots.get(slot as usize).is_some_and(|s| s.in_repeat);
            if inlined
                && (info.frames.len() == 1 || info.frames.last().is_some_and(|x| x.has(part)))
            {
                info.frames.push(Parts::default());
            }
            let Some(at) = (if inlined {
                info.frames.last_mut()
            } else {
                info.frames.first_mut()
            }) else {
                continue;
            };
            match part {
                FramePart::Line => at.line = number(&f),
                FramePart::Address => at.address = number(&f),
                FramePart::Function => at.function = self.field_name(decl, slot, &f),
                FramePart::Owner => at.owner = self.field_name(decl, slot, &f),
                FramePart::File => at.file = self.field_name(decl, slot, &f),
                FramePart::Module => at.module = self.field_name(decl, slot, &f),
            }
        }
        if self.room() {
            self.st.frames.insert((space, id), info);
        }
    }

    fn tree_node(&mut self, decl: &RecordDecl, space: SpaceId, id: u64, view: &RecordView<'_>) {
        let ns = &self.decl.namespaces[space as usize];
        let mut parent = ROOT;
        let mut frame = (space, id);
        for r in &decl.stack {
            match r.kind {
                StackKind::Parent if r.space == space => {
                    let p = self.parent_id(r.slot, space, view);
                    let none = p.is_none() || p == ns.null || (ns.first > 0 && p == Some(0));
                    if !none {
                        if let Some(n) = p.and_then(|p| self.st.tree.get(&(space, p))) {
                            parent = *n;
                        }
                    }
                }
                StackKind::Frame => {
                    if let Some(v) = self.int(r.slot) {
                        frame = (r.space, v);
                    }
                }
                _ => {}
            }
        }
        if !self.room() {
            return;
        }
        self.st.at_offset.insert((space, view.offset()), id);
        let skipped = self.rule_applies(StackRule::Skip, frame);
        let node = if skipped {
            parent
        } else {
            self.st.nodes.push(RNode {
                parent,
                space: frame.0,
                frame: frame.1,
            });
            (self.st.nodes.len() - 1) as u32
        };
        self.st.tree.insert((space, id), node);
    }

    /// The id a parent field names: its number, or, for a link to a record, the id that
    /// record defined.
    fn parent_id(&self, slot: SlotId, space: SpaceId, view: &RecordView<'_>) -> Option<u64> {
        let v = self.vals.get(slot as usize).filter(|v| v.gen == self.gen)?;
        let f = view.field_at(v.field as usize)?;
        match f.value() {
            Value::Ref(_) => {
                let off = f.target_offset()?.ok()?;
                self.st.at_offset.get(&(space, off)).copied()
            }
            Value::Int(i) => Some(i),
            Value::Bytes(_) => None,
        }
    }

    /// The rules a record holds (`stops`, `skips`, `suppresses`).
    pub(super) fn stack_rules(&mut self, decl: &RecordDecl, view: &RecordView<'_>) {
        for r in &decl.stack {
            if let StackKind::Rule(rule) = r.kind {
                // A guarded rule (`F.when = G; F.is = V;`) holds only when its guard does.
                if !decl.applies(r.slot, |s| self.int(s)) {
                    continue;
                }
                if let Some(name) = self.name_of(r.slot, view) {
                    if self.room() {
                        self.st.rules.push((rule, name));
                    }
                }
            }
        }
    }

    /// The calling context of an id a record defines now: the node of the innermost level
    /// open for the record's key in the namespace its `context` role names.
    pub(super) fn context(&self, rtype: usize) -> Option<u64> {
        let (space, key) = self.st.context_of.get(rtype).copied().flatten()?;
        let key = key.and_then(|s| self.int(s)).unwrap_or(0);
        let node = self.stacks.get(&(space, key))?.last()?.ctx;
        (node != ROOT).then_some(u64::from(node))
    }

    /// The node of a level opened now under `parent` (the innermost open level's node), with
    /// the frame the opening record names, else the level's own id.
    pub(super) fn open_context(
        &mut self,
        decl: &RecordDecl,
        parent: u32,
        space: SpaceId,
        id: u64,
    ) -> u32 {
        let frame = decl
            .stack
            .iter()
            .find(|r| r.kind == StackKind::Frame)
            .and_then(|r| Some((r.space, self.int(r.slot)?)))
            .unwrap_or((space, id));
        let key = (parent, frame.0, frame.1);
        if let Some(n) = self.st.children.get(&key) {
            return *n;
        }
        if !self.room() {
            return parent;
        }
        self.st.nodes.push(RNode {
            parent,
            space: frame.0,
            frame: frame.1,
        });
        let n = (self.st.nodes.len() - 1) as u32;
        self.st.children.insert(key, n);
        n
    }

    /// The name a field occurrence gives (inside a repeat too): its text, the text it links
    /// to, or an id of the namespace the record says it refers to.
    fn field_name(&self, decl: &RecordDecl, slot: SlotId, f: &Field<'_>) -> Option<Name> {
        let text = |b: &[u8]| Some(Name::Text(String::from_utf8_lossy(b).into()));
        match f.value() {
            Value::Bytes(b) => text(b),
            Value::Ref(_) => match f.resolve()?.ok()?.value {
                Value::Bytes(b) => text(b),
                _ => None,
            },
            Value::Int(i) => decl
                .actions
                .iter()
                .find(|a| a.slot == slot && a.kind == ActionKind::Refer)
                .map(|a| Name::Ref(a.space, i)),
        }
    }

    fn text(&self, n: &Option<Name>) -> Option<String> {
        match n.as_ref()? {
            Name::Text(t) => Some(t.to_string()),
            Name::Ref(s, i) => self.name(*s, *i),
        }
    }

    /// The function of a frame id's first frame.
    fn function(&self, frame: (SpaceId, u64)) -> Option<String> {
        match self.st.frames.get(&frame) {
            Some(info) => self.text(&info.frames.first()?.function),
            None => self.name(frame.0, frame.1),
        }
    }

    fn rule_applies(&self, rule: StackRule, frame: (SpaceId, u64)) -> bool {
        if !self.st.rules.iter().any(|(r, _)| *r == rule) {
            return false;
        }
        let Some(f) = self.function(frame) else {
            return false;
        };
        self.st.rules.iter().any(|(r, n)| {
            *r == rule
                && match n {
                    Name::Text(t) => **t == *f,
                    Name::Ref(s, i) => self.name(*s, *i).as_deref() == Some(f.as_str()),
                }
        })
    }

    /// The frames of a frame id, as the profile shows them.
    fn frames_of(&self, frame: (SpaceId, u64)) -> Vec<Frame> {
        let Some(info) = self.st.frames.get(&frame) else {
            let name = self.name(frame.0, frame.1).unwrap_or_else(|| {
                format!(
                    "{} {}",
                    self.decl.namespaces[frame.0 as usize].name, frame.1
                )
            });
            return vec![Frame {
                function: Some(name),
                ..Frame::default()
            }];
        };
        info.frames
            .iter()
            .enumerate()
            .map(|(i, p)| Frame {
                function: self.text(&p.function),
                owner: self.text(&p.owner),
                file: self.text(&p.file),
                line: p.line,
                module: self.text(&p.module),
                address: p.address,
                inlined: i > 0,
            })
            .collect()
    }

    /// The function of the node a stack-tree id is (after skip rules), else its address.
    pub(super) fn tree_site_function(&self, space: SpaceId, id: u64) -> Option<String> {
        if !self.decl.namespaces.get(space as usize)?.tree {
            return None;
        }
        let n = *self.st.tree.get(&(space, id))?;
        let r = self.st.nodes.get(n as usize)?;
        if let Some(f) = self.function((r.space, r.frame)) {
            return Some(f);
        }
        // No function: its address, as heaptrack_print shows an unresolved frame.
        let info = self.st.frames.get(&(r.space, r.frame))?;
        info.frames.first()?.address.map(|a| format!("0x{a:x}"))
    }

    /// The node of a leaf: its calling context, or the stack-tree node its site is.
    fn leaf_node(&self, space: SpaceId, site: Option<u64>, stack: Option<u64>) -> Option<u32> {
        if let Some(s) = stack {
            return u32::try_from(s).ok().filter(|n| *n != ROOT);
        }
        let ns = self.decl.namespaces.get(space as usize)?;
        let t = ns
            .site_space
            .filter(|t| self.decl.namespaces[*t as usize].tree)?;
        self.st
            .tree
            .get(&(t, site?))
            .copied()
            .filter(|n| *n != ROOT)
    }

    /// Whether the trace's declarations give the ids of `space` stacks (a site in a stack tree,
    /// or a calling context).
    pub fn has_stacks(&self, space: SpaceId) -> bool {
        if self.decl.stacks == 0 {
            return false;
        }
        let ns = &self.decl.namespaces;
        let tree = ns
            .get(space as usize)
            .and_then(|n| n.site_space)
            .is_some_and(|t| ns[t as usize].tree);
        tree || self.st.context_spaces.contains(&space)
    }

    /// The profile of namespace `space` from the figures of its leaves (site, calling context,
    /// site name, costs), in the order given.
    pub fn stack_profile(
        &self,
        space: SpaceId,
        leaves: impl IntoIterator<Item = (Option<u64>, Option<u64>, Option<String>, Costs)>,
    ) -> StackProfile {
        let ns = &self.decl.namespaces[space as usize];
        let tree = ns
            .site_space
            .is_some_and(|t| self.decl.namespaces[t as usize].tree);
        let mut p = StackProfile {
            space: ns.name.clone(),
            sized: ns.sized,
            contexts: !tree,
            ..StackProfile::default()
        };
        let mut made: HashMap<u32, u32> = HashMap::default();
        let mut frames: HashMap<(SpaceId, u64), Vec<u32>> = HashMap::default();
        let suppress: Vec<String> = self
            .st
            .rules
            .iter()
            .filter(|(r, _)| *r == StackRule::Suppress)
            .filter_map(|(_, n)| self.text(&Some(n.clone())))
            .map(|t| t.strip_prefix("leak:").unwrap_or(&t).to_string())
            .collect();
        let mut memo = Suppressed::default();
        for (site, stack, name, costs) in leaves {
            let node = self.leaf_node(space, site, stack);
            let leaf_node = node.map(|n| self.profile_node(n, &mut p, &mut made, &mut frames));
            let suppressed = !suppress.is_empty() && self.suppressed(node, &suppress, &mut memo);
            p.leaves.push(Leaf {
                node: leaf_node,
                site: name,
                suppressed,
                costs,
            });
        }
        p
    }

    /// The profile's node for a registry node, made with its parents (iteratively: a deep
    /// stack makes no deep recursion).
    fn profile_node(
        &self,
        n: u32,
        p: &mut StackProfile,
        made: &mut HashMap<u32, u32>,
        frames: &mut HashMap<(SpaceId, u64), Vec<u32>>,
    ) -> u32 {
        // The chain from `n` up to a node already made, the root, or a stop frame.
        let mut chain = Vec::new();
        let mut at = n;
        let mut guard = 0usize;
        while at != ROOT && !made.contains_key(&at) && guard <= self.st.nodes.len() {
            guard += 1;
            chain.push(at);
            let r = self.st.nodes[at as usize];
            if self.rule_applies(StackRule::Stop, (r.space, r.frame)) {
                break;
            }
            at = r.parent;
        }
        for &c in chain.iter().rev() {
            let r = self.st.nodes[c as usize];
            let stop = self.rule_applies(StackRule::Stop, (r.space, r.frame));
            let parent = if stop {
                None
            } else {
                made.get(&r.parent).copied()
            };
            let fr = frames
                .entry((r.space, r.frame))
                .or_insert_with(|| {
                    let list = self.frames_of((r.space, r.frame));
                    let first = p.frames.len() as u32;
                    p.frames.extend(list);
                    (first..p.frames.len() as u32).collect()
                })
                .clone();
            p.nodes.push(Node { parent, frames: fr });
            made.insert(c, (p.nodes.len() - 1) as u32);
        }
        made.get(&n).copied().unwrap_or(0)
    }

    /// Whether a leak suppression matches a function, file or module of the stack, to the
    /// root (stop frames do not end it), inlined frames included. Each node is decided once
    /// (`memo.nodes`: a node is suppressed when its own frames match or its parent is), and
    /// each name once (`memo.names`: the frames of a recording share few modules, files and
    /// functions; matching every name of every node was 3 % of `stats` on a recording of 42 k
    /// call stacks).
    fn suppressed(&self, node: Option<u32>, patterns: &[String], memo: &mut Suppressed) -> bool {
        // The chain up to a node already decided (or the root).
        let mut chain = Vec::new();
        let mut at = node.unwrap_or(ROOT);
        while at != ROOT && !memo.nodes.contains_key(&at) && chain.len() <= self.st.nodes.len() {
            chain.push(at);
            at = self.st.nodes[at as usize].parent;
        }
        let mut above = at != ROOT && memo.nodes.get(&at).copied().unwrap_or(false);
        for &n in chain.iter().rev() {
            if !above {
                let r = self.st.nodes[n as usize];
                above = self.frames_of((r.space, r.frame)).iter().any(|f| {
                    [&f.function, &f.file, &f.module]
                        .iter()
                        .filter_map(|x| x.as_deref())
                        .any(|s| match memo.names.get(s) {
                            Some(&m) => m,
                            None => {
                                let m = patterns.iter().any(|pat| template_match(pat, s));
                                memo.names.insert(s.to_string(), m);
                                m
                            }
                        })
                });
            }
            memo.nodes.insert(n, above);
        }
        match node {
            Some(n) if n != ROOT => memo.nodes.get(&n).copied().unwrap_or(false),
            _ => false,
        }
    }
}

/// What [`Interpreter::suppressed`] decided: per node, and per name of a frame.
#[derive(Default)]
struct Suppressed {
    nodes: HashMap<u32, bool>,
    names: HashMap<String, bool>,
}

/// An integer part (line, address) of a field occurrence.
fn number(f: &Field<'_>) -> Option<u64> {
    match f.value() {
        Value::Int(i) => Some(i),
        Value::Ref(_) => match f.resolve()?.ok()?.value {
            Value::Int(i) => Some(i),
            _ => None,
        },
        Value::Bytes(_) => None,
    }
}

/// A leak-suppression pattern against a name, as LeakSanitizer's suppressions match (which
/// heaptrack follows): `^` anchors the start, `$` the end, `*` matches any run; otherwise the
/// pattern's pieces are found in order anywhere in the name. An empty name matches nothing.
pub(crate) fn template_match(pattern: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    let (anchored, mut rest) = match pattern.strip_prefix('^') {
        Some(r) => (true, r),
        None => (false, pattern),
    };
    let mut start = anchored;
    let mut star = false;
    let mut s = name;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('*') {
            rest = r;
            start = false;
            star = true;
            continue;
        }
        if rest.starts_with('$') {
            return s.is_empty() || star;
        }
        if s.is_empty() {
            return false;
        }
        let end = rest.find(['*', '$']).unwrap_or(rest.len());
        let piece = &rest[..end];
        let Some(pos) = s.find(piece) else {
            return false;
        };
        if start && pos != 0 {
            return false;
        }
        s = &s[pos + piece.len()..];
        rest = &rest[end..];
        start = false;
        star = false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::template_match;

    #[test]
    fn suppressions_match_as_leak_sanitizer_does() {
        assert!(template_match("__new_exitfn", "__new_exitfn"));
        assert!(template_match("exitfn", "__new_exitfn"));
        assert!(template_match("^__new", "__new_exitfn"));
        assert!(!template_match("^new", "__new_exitfn"));
        assert!(template_match("new*fn$", "__new_exitfn"));
        assert!(!template_match("exit$", "__new_exitfn"));
        assert!(template_match(
            "libc.so*",
            "/lib/x86_64-linux-gnu/libc.so.6"
        ));
        assert!(!template_match("foo", ""));
    }
}
