//! Record layouts compiled into flat programs with their display keys, and per-scope tag tables.
//!
//! A schema is compiled once; decoding or encoding a record then runs a straight list of
//! operations with no name lookups and no tree walks. The same program, stepped by
//! [`Walk`](super::Walk), drives the decoder, the encoder, both printers, the text reader and
//! `mtf dtd show`.

// Design: repeats become a pair of jump operations (`Repeat`/`EndRepeat`), so nested repeats need
// only a small loop stack. Nested records and composites vanish: their fields are emitted in
// place. The display keys of docs/text-format.md are computed here, once, from the structure of
// the layout tree (how many naming levels a key crosses), never by searching names as strings:
// a name that repeats at two levels (`n*(n*(a,b))`) cannot confuse a length.

use std::collections::HashMap;

use crate::dtd::{Expr, Node, RecordId, RecordType, Schema, SlotId, SlotKind};

/// One operation of a record program.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Op {
    /// An integer slot, decoded with its live width and interpretation.
    Int(SlotId),
    /// A byte-string slot whose length is the expression.
    Bytes(SlotId, Expr),
    /// Start of a repeat: the count is the most recent value of `count`; `end` is the index of
    /// the matching `EndRepeat`; `single` when one occurrence is exactly one scalar field.
    Repeat {
        count: SlotId,
        end: u32,
        single: bool,
    },
    /// End of one occurrence; `begin` is the index of the matching `Repeat`.
    EndRepeat { begin: u32 },
}

/// The compiled program of one record type.
#[derive(Debug, Clone, Default)]
pub(crate) struct Program {
    /// Operations after the tag (the tag is read before the record type is known).
    pub(crate) ops: Vec<Op>,
    /// The display key of each operation (docs/text-format.md): for a field, its name relative
    /// to the enclosing repeat item (or the record); for a repeat, the key of its list. Empty for
    /// `EndRepeat` and for the one field of a `single` repeat, which the repeat's key names.
    pub(crate) keys: Vec<Box<str>>,
    /// Number of slots of the record type.
    pub(crate) nslots: usize,
    /// For each operation, the index of the first `Repeat`/`EndRepeat` at or after it: the end of
    /// the run of plain fields that starts there.
    pub(crate) run_end: Vec<u32>,
    /// Whether a width expression reads a slot inside a repeat, which may not have occurred in
    /// a record: then the most recent values must start from 0 at every record
    /// (docs/format.md §3.4). Other slots an expression reads always occur before it.
    pub(crate) reset_values: bool,
}

impl Program {
    fn compile(rt: &RecordType) -> Program {
        let mut p = Program {
            ops: Vec::new(),
            keys: Vec::new(),
            nslots: rt.slots.len(),
            run_end: Vec::new(),
            reset_values: false,
        };
        p.emit(rt, &rt.layout, "", "", true);
        let mut end = p.ops.len() as u32;
        p.run_end = vec![0; p.ops.len()];
        for i in (0..p.ops.len()).rev() {
            if matches!(p.ops[i], Op::Repeat { .. } | Op::EndRepeat { .. }) {
                end = i as u32;
            }
            p.run_end[i] = end;
        }
        p.reset_values = p.ops.iter().any(|op| match op {
            Op::Bytes(_, e) => reads_repeated(e, rt),
            _ => false,
        });
        p
    }

    fn push(&mut self, op: Op, key: &str) -> usize {
        self.ops.push(op);
        self.keys.push(key.into());
        self.ops.len() - 1
    }

    /// Emit `nodes`, whose fields are named below `prefix` (the structural path of the current
    /// naming level, `""` or `"g."`), with keys relative to `base` (the current item's path).
    fn emit(&mut self, rt: &RecordType, nodes: &[Node], prefix: &str, base: &str, top: bool) {
        for (i, node) in nodes.iter().enumerate() {
            match node {
                // The tag (first field of the top level) is read before the program runs.
                Node::Field(0) if top && i == 0 => {}
                Node::Field(s) => {
                    let slot = &rt.slots[*s as usize];
                    let key = relative(&slot.name, base);
                    match &slot.kind {
                        SlotKind::Int { .. } => self.push(Op::Int(*s), key),
                        SlotKind::Bytes { width } => self.push(Op::Bytes(*s, width.clone()), key),
                    };
                }
                Node::Group { name, children } => {
                    let inner = format!("{prefix}{name}.");
                    self.emit(rt, children, &inner, base, false);
                }
                Node::Repeat { name, count, item } => {
                    let single = single_field(item);
                    // A repeat of one scalar is keyed by that field's name; any other by the
                    // repeat's own path, and its item's keys are relative to that path.
                    let (key, inner) = match single {
                        Some(s) => (relative(&rt.slots[s as usize].name, base).to_string(), None),
                        None => {
                            let path = format!("{prefix}{name}");
                            (relative(&path, base).to_string(), Some(format!("{path}.")))
                        }
                    };
                    let begin = self.push(
                        Op::Repeat {
                            count: *count,
                            end: 0,
                            single: single.is_some(),
                        },
                        &key,
                    );
                    match &inner {
                        Some(p) => self.emit(rt, item, p, p, false),
                        // The single field's own key is never used: the repeat names it.
                        None => {
                            let mark = self.ops.len();
                            self.emit(rt, item, prefix, base, false);
                            for k in &mut self.keys[mark..] {
                                *k = "".into();
                            }
                        }
                    }
                    let end = self.push(
                        Op::EndRepeat {
                            begin: begin as u32,
                        },
                        "",
                    );
                    if let Op::Repeat { end: e, .. } = &mut self.ops[begin] {
                        *e = end as u32;
                    }
                }
            }
        }
    }

    /// The fewest bytes one occurrence of the repeat at `pc` can take with the given live
    /// widths (byte strings and nested repeats count 0): docs/format.md §6.4's `m`.
    pub(crate) fn item_min_size(&self, pc: usize, width: impl Fn(SlotId) -> u8) -> u64 {
        let Some(Op::Repeat { end, .. }) = self.ops.get(pc) else {
            return 0;
        };
        let mut depth = 0u32;
        let mut total = 0u64;
        for op in &self.ops[pc + 1..*end as usize] {
            match op {
                Op::Int(s) if depth == 0 => total += width(*s) as u64,
                Op::Repeat { .. } => depth += 1,
                Op::EndRepeat { .. } => depth -= 1,
                _ => {}
            }
        }
        total
    }
}

/// The shape of a record type as every output shows it: its fields, groups (nested records and
/// composites) and lists (repeats), keyed as the compiled program keys them
/// (docs/text-format.md). The text form and JSON lines use the keys flat (`vfield.data`); Parquet
/// nests them (a struct `vfield` with a member `data`); CSV and `dtd show` list them.
///
/// Keys are relative to the enclosing group or list item; a group's or list's own key is
/// relative to its parent the same way, so joining the keys of the groups down to a field with
/// `.` gives the program's key of that field within its item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// A scalar field (integer or byte string).
    Field {
        /// Its key within the enclosing group or item.
        key: String,
        /// Its slot.
        slot: SlotId,
    },
    /// A nested record or composite.
    Group {
        /// Its key within the enclosing group or item.
        key: String,
        /// Its members.
        members: Vec<Shape>,
    },
    /// A repeat.
    List {
        /// The list's key: for a repeat of one scalar field, that field's key; else the
        /// repeat's own.
        key: String,
        /// The slot whose value counts the occurrences.
        count: SlotId,
        /// One occurrence: for a repeat of one scalar field, that field alone, with an empty key
        /// (the list's key names it).
        item: Vec<Shape>,
        /// Whether one occurrence is exactly one scalar field.
        single: bool,
    },
}

impl Shape {
    /// The shape of a record type, without its tag (constant per record type).
    pub fn of(rt: &RecordType) -> Vec<Shape> {
        shape_of(rt, &rt.layout, "", "", true)
    }

    /// The keys of a shape outside its lists, as the text form writes them: each field with
    /// its groups' keys joined by `.` (`vfield.data`), one key per list (CSV's columns).
    pub fn top_keys(shape: &[Shape]) -> Vec<String> {
        fn walk(shape: &[Shape], group: &str, out: &mut Vec<String>) {
            for s in shape {
                match s {
                    Shape::Field { key, .. } | Shape::List { key, .. } => {
                        out.push(format!("{group}{key}"))
                    }
                    Shape::Group { key, members } => walk(members, &format!("{group}{key}."), out),
                }
            }
        }
        let mut out = Vec::new();
        walk(shape, "", &mut out);
        out
    }
}

/// `nodes`, named below the structural `prefix` (`""` or `"g."`), keyed relative to `base` (the
/// enclosing group's or item's path): the same naming as `Program::emit`.
fn shape_of(rt: &RecordType, nodes: &[Node], prefix: &str, base: &str, top: bool) -> Vec<Shape> {
    let mut out = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        match node {
            Node::Field(0) if top && i == 0 => {}
            Node::Field(s) => out.push(Shape::Field {
                key: relative(&rt.slots[*s as usize].name, base).to_string(),
                slot: *s,
            }),
            Node::Group { name, children } => {
                let inner = format!("{prefix}{name}.");
                let key = relative(&inner[..inner.len() - 1], base).to_string();
                out.push(Shape::Group {
                    key,
                    members: shape_of(rt, children, &inner, &inner, false),
                });
            }
            Node::Repeat { name, count, item } => {
                let single = single_field(item);
                let (key, item) = match single {
                    Some(s) => (
                        relative(&rt.slots[s as usize].name, base).to_string(),
                        vec![Shape::Field {
                            key: String::new(),
                            slot: s,
                        }],
                    ),
                    None => {
                        let path = format!("{prefix}{name}");
                        let inner = format!("{path}.");
                        (
                            relative(&path, base).to_string(),
                            shape_of(rt, item, &inner, &inner, false),
                        )
                    }
                };
                out.push(Shape::List {
                    key,
                    count: *count,
                    item,
                    single: single.is_some(),
                });
            }
        }
    }
    out
}

/// Whether an expression reads a slot that lies inside a repeat.
fn reads_repeated(e: &Expr, rt: &RecordType) -> bool {
    match e {
        Expr::Const(_) => false,
        Expr::Value(s) => rt.slots.get(*s as usize).is_some_and(|s| s.in_repeat),
        Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Mul(a, b) => {
            reads_repeated(a, rt) || reads_repeated(b, rt)
        }
    }
}

/// `name` relative to the item path `base` (a structural prefix of it by construction).
fn relative<'n>(name: &'n str, base: &str) -> &'n str {
    name.strip_prefix(base).unwrap_or(name)
}

/// The slot of an item that is exactly one scalar field (through nested records and
/// composites, with no repeat inside), if it is one.
fn single_field(item: &[Node]) -> Option<SlotId> {
    fn count(nodes: &[Node], found: &mut Option<SlotId>, n: &mut usize) -> bool {
        for node in nodes {
            match node {
                Node::Field(s) => {
                    *n += 1;
                    *found = Some(*s);
                }
                Node::Group { children, .. } => {
                    if !count(children, found, n) {
                        return false;
                    }
                }
                Node::Repeat { .. } => return false,
            }
        }
        true
    }
    let (mut found, mut n) = (None, 0);
    (count(item, &mut found, &mut n) && n == 1)
        .then_some(found)
        .flatten()
}

/// Tag value → record type for one scope.
#[derive(Debug, Clone, Default)]
pub(crate) struct TagTable {
    dense: Vec<u32>,
    sparse: HashMap<u64, RecordId>,
}

const NONE: u32 = u32::MAX;
const DENSE_LIMIT: u64 = 4096;

impl TagTable {
    /// Look a tag up.
    #[inline]
    pub(crate) fn get(&self, tag: u64) -> Option<RecordId> {
        if tag < self.dense.len() as u64 {
            match self.dense[tag as usize] {
                NONE => None,
                r => Some(r),
            }
        } else if self.sparse.is_empty() {
            None
        } else {
            self.sparse.get(&tag).copied()
        }
    }
}

/// Programs for every record type and tag tables for every scope of a schema.
#[derive(Debug, Clone)]
pub(crate) struct Compiled {
    /// Indexed by `RecordId`.
    pub(crate) programs: Vec<Program>,
    /// Indexed by section id (0 = global); `None` for undeclared sections.
    pub(crate) tags: Vec<Option<TagTable>>,
    /// The most slots any record type has.
    pub(crate) max_slots: usize,
}

impl Compiled {
    /// Compile a schema.
    pub(crate) fn new(schema: &Schema) -> Compiled {
        let programs: Vec<Program> = schema.records.iter().map(Program::compile).collect();
        let mut tags = vec![None; 256];
        for scope in &schema.scopes {
            let mut t = TagTable::default();
            for (&tag, &rid) in &scope.by_tag {
                if tag < DENSE_LIMIT {
                    if t.dense.len() <= tag as usize {
                        t.dense.resize(tag as usize + 1, NONE);
                    }
                    t.dense[tag as usize] = rid;
                } else {
                    t.sparse.insert(tag, rid);
                }
            }
            tags[scope.id as usize] = Some(t);
        }
        let max_slots = programs.iter().map(|p| p.nslots).max().unwrap_or(0);
        Compiled {
            programs,
            tags,
            max_slots,
        }
    }

    /// The program of a record type.
    #[inline]
    pub(crate) fn program(&self, rid: RecordId) -> &Program {
        &self.programs[rid as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys of a shape in program order: fields joined with their groups' keys, a list's
    /// key where its `Repeat` stands (the single field of a list has none of its own).
    fn flat(shape: &[Shape], group: &str, out: &mut Vec<String>) {
        for s in shape {
            match s {
                Shape::Field { key, .. } if key.is_empty() => out.push(String::new()),
                Shape::Field { key, .. } => out.push(format!("{group}{key}")),
                Shape::Group { key, members } => flat(members, &format!("{group}{key}."), out),
                Shape::List { key, item, .. } => {
                    out.push(format!("{group}{key}"));
                    flat(item, "", out);
                    out.push(String::new());
                }
            }
        }
    }

    /// The shape's keys are the program's, for every record type of every shipped DTD and of
    /// the test DTDs (repeats of fields, of nested records, of composites, nested repeats).
    #[test]
    fn shape_keys_are_the_program_keys() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut texts: Vec<(String, String)> = Vec::new();
        for dir in ["dtds", "tests/data/dtd/valid", "tests/data/check"] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|e| e == "dtd") {
                    let name = p.display().to_string();
                    texts.push((name, std::fs::read_to_string(p).unwrap()));
                }
            }
        }
        let mut checked = 0;
        for (name, text) in texts {
            let schema = crate::dtd::parse_str(&name, &text)
                .unwrap_or_else(|e| panic!("{name}: {}", crate::dtd::render_plain(&e)))
                .schema;
            for rt in &schema.records {
                let prog = Program::compile(rt);
                let mut want = Vec::new();
                for (op, key) in prog.ops.iter().zip(&prog.keys) {
                    match op {
                        Op::Int(_) | Op::Bytes(..) | Op::Repeat { .. } => {
                            want.push(key.to_string())
                        }
                        Op::EndRepeat { .. } => want.push(String::new()),
                    }
                }
                let mut got = Vec::new();
                flat(&Shape::of(rt), "", &mut got);
                assert_eq!(got, want, "{name}: {}", rt.name);
                checked += 1;
            }
        }
        assert!(checked > 50, "{checked}");
    }
}
