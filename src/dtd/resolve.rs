//! AST → [`Schema`]: scopes, record layouts, slots and property resolution (docs/format.md §4).
//!
//! The resolver works in passes over the whole DTD (prelude first), so that definitions are
//! order-independent:
//!
//! 1. sections: ids, names, duplicates;
//! 2. record definitions and property definitions are indexed per scope, and every property
//!    value is checked for its kind (`width` is an expression, `interpretation` an
//!    interpretation, …) once;
//! 3. every record type is expanded into a tree of named fields (nested types inlined, names
//!    suffixed `_2`…), which checks recursion, `tag` placement and duplicate names, and the
//!    property paths of its body;
//! 4. every taggable record type is flattened into slots, and each slot's properties are
//!    resolved in the order of §4.3;
//! 5. tags are checked per scope and the [`Schema`] is assembled.
//!
//! Every problem is collected; the schema is returned only if there is none.

// Design: nested record types are expanded afresh at every use (no memo) because their errors are
// deduplicated by `DtdErrors::new` anyway, and expansion is bounded: nesting depth by
// `MAX_DEPTH`, total size by `MAX_FIELDS`, so that hostile input cannot blow up time or stack.
// Spans of prelude nodes never become primary labels: the prelude sets every reserved property
// of its own fields in its bodies, which take precedence over anything a user DTD says.

use std::collections::HashMap;

use super::ast::{self, FieldItem, FieldList, FieldType, InterpKind, Item, PropValue, PropertyDef};
use super::error::{sspan, DtdError, DtdWarning, Src};
use super::parse::MAX_DEPTH;
use super::schema::*;

/// Maximum number of fields (nodes) of one expanded record type: slot numbers are 16-bit.
pub const MAX_FIELDS: usize = u16::MAX as usize;

/// Maximum number of fields expanded over the whole DTD (every record type, every use of a
/// nested type), so that types nesting each other several times cannot take exponential time.
pub const MAX_TOTAL_FIELDS: usize = 1 << 18;

/// The reserved and display property names, for typo warnings.
const KNOWN_PROPS: [&str; 4] = ["width", "interpretation", "value", "display"];

/// Names of the built-in record types.
pub const BUILTIN_NAMES: [&str; 4] = ["vfield", "comment", "section", "metadata"];

/// One DTD text to resolve, with the name and text its spans point into.
pub struct Input<'a> {
    /// The parsed text.
    pub dtd: &'a ast::Dtd,
    /// The text itself (for showing unknown property values).
    pub text: &'a str,
}

/// Resolve a user DTD together with the prelude. `src` is the user DTD's source, used in
/// diagnostics.
pub fn resolve(
    name: &str,
    prelude: Input<'_>,
    user: Input<'_>,
    src: &Src,
) -> (Option<Schema>, Vec<DtdError>, Vec<DtdWarning>) {
    let mut r = Resolver {
        src: src.clone(),
        errors: Vec::new(),
        warnings: Vec::new(),
        prelude_text: prelude.text,
        user_text: user.text,
        defs: Vec::new(),
        scopes: Vec::new(),
        tag_width: 1,
        tag_width_span: None,
        tags: Vec::new(),
        expanded: 0,
    };
    r.collect(prelude.dtd, user.dtd);
    let schema = r.build(name);
    if r.errors.is_empty() {
        (schema, r.errors, r.warnings)
    } else {
        (None, r.errors, r.warnings)
    }
}

type DefId = usize;

/// A property value, checked for the kind its property needs.
#[derive(Debug, Clone)]
enum PVal<'a> {
    Width(&'a ast::Expr),
    Interp(Interp, Span),
    Value(&'a ast::Expr),
    Display(Display),
    Extra(String),
    /// Already reported; counts as "set" so that no follow-up error is reported.
    Invalid,
}

#[derive(Debug, Clone)]
struct Prop<'a> {
    def: &'a PropertyDef,
    val: PVal<'a>,
}

/// Properties by (path or type name, property name).
type PropMap<'a> = HashMap<(String, String), Prop<'a>>;

struct Def<'a> {
    ast: &'a ast::RecordDef,
    scope: usize,
    prelude: bool,
    body: PropMap<'a>,
    /// `tag.value`, if set in the body.
    tag_value: Option<Prop<'a>>,
    taggable: bool,
}

struct ScopeInfo<'a> {
    /// Valid id (1..=255) of a section, 0 for global; `None` when the declared id is invalid.
    id: Option<u8>,
    name: String,
    span: Span,
    defs: Vec<DefId>,
    by_name: HashMap<String, DefId>,
    defaults: PropMap<'a>,
}

struct Resolver<'a> {
    src: Src,
    errors: Vec<DtdError>,
    warnings: Vec<DtdWarning>,
    prelude_text: &'a str,
    user_text: &'a str,
    defs: Vec<Def<'a>>,
    scopes: Vec<ScopeInfo<'a>>,
    tag_width: u8,
    tag_width_span: Option<Span>,
    /// Tag value of every taggable record type whose tag resolved, even if it has other errors.
    tags: Vec<(DefId, u64)>,
    /// Fields expanded so far, over all record types.
    expanded: usize,
}

/// A node of an expanded record type (names relative to their level).
#[derive(Debug, Clone)]
enum TNode {
    Scalar {
        name: String,
        ty: String,
        span: Span,
    },
    /// A nested record or a named composite: a naming level.
    Group {
        name: String,
        def: Option<DefId>,
        children: Vec<TNode>,
    },
    /// `count * item`. `flat`: the item is a scalar whose slot takes the repeat's own name.
    Repeat {
        name: String,
        count: Box<TNode>,
        def: Option<DefId>,
        flat: bool,
        children: Vec<TNode>,
    },
}

/// Field names already used at one naming level.
#[derive(Default)]
struct Level {
    names: HashMap<String, Span>,
    bases: HashMap<String, u32>,
}

struct Expander {
    stack: Vec<DefId>,
    depth: usize,
    nodes: usize,
    limit_reported: bool,
}

/// A slot under resolution.
struct FlatSlot {
    full: String,
    /// Prefix of the slot's naming level (`""` or `group.`).
    level: String,
    ty: String,
    span: Span,
    in_repeat: bool,
    /// Record types whose bodies apply, outermost (the record itself) first, with the prefix of
    /// their instance.
    bodies: Vec<(DefId, String)>,
}

#[derive(Debug, Clone, PartialEq)]
enum W {
    Const(u64),
    Dyn(Expr),
}

#[derive(Clone)]
enum WState {
    Todo,
    Busy,
    Done(Option<W>),
}

/// Per-record resolution state.
struct Rec {
    def: DefId,
    scope: usize,
    slots: Vec<FlatSlot>,
    by_name: HashMap<String, usize>,
    interps: Vec<Option<(Interp, Option<Span>)>>,
    widths: Vec<WState>,
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let v = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
            cur.push(v);
        }
        prev = cur;
    }
    prev[b.len()]
}

impl<'a> Resolver<'a> {
    fn err(&mut self, e: DtdError) {
        self.errors.push(e);
    }

    fn src(&self) -> Src {
        self.src.clone()
    }

    // ---- pass 1 and 2: sections, definitions, properties ---------------------------------

    fn collect(&mut self, prelude: &'a ast::Dtd, user: &'a ast::Dtd) {
        self.scopes.push(ScopeInfo {
            id: Some(0),
            name: String::new(),
            span: Span::default(),
            defs: Vec::new(),
            by_name: HashMap::new(),
            defaults: HashMap::new(),
        });
        // Sections first: interpretations may name a section declared later.
        for item in &user.items {
            if let Item::Section(s) = item {
                self.declare_section(s);
            }
        }
        for item in &prelude.items {
            self.global_item(item, true);
        }
        for item in &user.items {
            self.global_item(item, false);
        }
        let mut sec = 0;
        for item in &user.items {
            if let Item::Section(s) = item {
                sec += 1;
                for it in &s.items {
                    match it {
                        Item::Record(r) => self.define_record(r, sec, false),
                        Item::Property(p) => self.scope_property(p, sec, false),
                        Item::Section(_) => {} // the parser never nests sections
                    }
                }
            }
        }
    }

    fn declare_section(&mut self, s: &'a ast::SectionDef) {
        let mut id = None;
        match s.id.value {
            Some(v @ 1..=255) => id = Some(v as u8),
            Some(v) => self.err(DtdError::SectionIdRange {
                id: v.to_string(),
                src: self.src(),
                span: sspan(s.id.span),
            }),
            None => {} // already reported as bad_integer
        }
        if let Some(v) = id {
            if let Some(prev) = self.scopes.iter().find(|sc| sc.id == Some(v)) {
                let first = Some(sspan(prev.span));
                self.err(DtdError::DuplicateSection {
                    msg: format!("section id {v} is declared twice"),
                    src: self.src(),
                    span: sspan(s.id.span),
                    first,
                });
                id = None;
            }
        }
        let name = &s.name.name;
        if name == "section" || BUILTIN_NAMES.contains(&name.as_str()) {
            self.err(DtdError::ReservedName {
                msg: format!("`{name}` is reserved and cannot name a section"),
                src: self.src(),
                span: sspan(s.name.span),
            });
        } else if let Some(prev) = self.scopes.iter().skip(1).find(|sc| &sc.name == name) {
            let first = Some(sspan(prev.span));
            self.err(DtdError::DuplicateSection {
                msg: format!("section `{name}` is declared twice"),
                src: self.src(),
                span: sspan(s.name.span),
                first,
            });
        }
        self.scopes.push(ScopeInfo {
            id,
            name: name.clone(),
            span: s.name.span,
            defs: Vec::new(),
            by_name: HashMap::new(),
            defaults: HashMap::new(),
        });
    }

    fn global_item(&mut self, item: &'a Item, prelude: bool) {
        match item {
            Item::Record(r) => self.define_record(r, 0, prelude),
            Item::Property(p) => self.scope_property(p, 0, prelude),
            Item::Section(_) => {}
        }
    }

    fn define_record(&mut self, r: &'a ast::RecordDef, scope: usize, prelude: bool) {
        let name = &r.name.name;
        if !prelude && BUILTIN_NAMES.contains(&name.as_str()) {
            self.err(DtdError::ReservedName {
                msg: format!("`{name}` is a built-in record type and cannot be redefined"),
                src: self.src(),
                span: sspan(r.name.span),
            });
            return;
        }
        let clash = self.scopes[scope]
            .by_name
            .get(name)
            .or_else(|| {
                if scope != 0 {
                    self.scopes[0].by_name.get(name)
                } else {
                    None
                }
            })
            .copied();
        if let Some(prev) = clash {
            let first = Some(sspan(self.defs[prev].ast.name.span));
            self.err(DtdError::DuplicateRecord {
                name: name.clone(),
                src: self.src(),
                span: sspan(r.name.span),
                first,
            });
            return;
        }
        let id = self.defs.len();
        let taggable = matches!(r.fields.items.first(), Some(FieldItem { name: n, ty: FieldType::Named(t), .. })
            if t.name == "tag" && n.as_ref().map_or(true, |n| n.name == "tag"));
        let mut def = Def {
            ast: r,
            scope,
            prelude,
            body: HashMap::new(),
            tag_value: None,
            taggable,
        };
        for p in &r.body {
            let Some(val) = self.check_value(p, prelude) else {
                continue;
            };
            let path = p.path_string();
            if path == "tag" {
                match p.prop.name.as_str() {
                    "value" => {
                        if def.tag_value.is_some() {
                            self.twice(p);
                        } else {
                            def.tag_value = Some(Prop { def: p, val });
                        }
                    }
                    "width" => self.err(DtdError::TagWidthTwice {
                        msg: "`tag.width` cannot be set in a record body".into(),
                        src: self.src(),
                        span: sspan(p.span),
                        first: None,
                    }),
                    other => self.err(DtdError::BadProperty {
                        msg: format!("`tag.{other}` cannot be set"),
                        src: self.src(),
                        span: sspan(p.span),
                        help: Some("a record body may only set `tag.value`".into()),
                    }),
                }
                continue;
            }
            let key = (path, p.prop.name.clone());
            match def.body.entry(key) {
                std::collections::hash_map::Entry::Occupied(_) => self.twice(p),
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(Prop { def: p, val });
                }
            }
        }
        self.scopes[scope].by_name.insert(name.clone(), id);
        self.scopes[scope].defs.push(id);
        self.defs.push(def);
    }

    fn twice(&mut self, p: &PropertyDef) {
        self.err(DtdError::BadProperty {
            msg: format!("`{}.{}` is set twice here", p.path_string(), p.prop.name),
            src: self.src(),
            span: sspan(p.span),
            help: Some("remove one of the definitions".into()),
        });
    }

    /// A property outside record bodies: a default by type name, or `tag.width`.
    fn scope_property(&mut self, p: &'a PropertyDef, scope: usize, prelude: bool) {
        let Some(val) = self.check_value(p, prelude) else {
            return;
        };
        let path = p.path_string();
        if path == "tag" {
            match p.prop.name.as_str() {
                "width" if scope == 0 => self.set_tag_width(p),
                "width" => self.err(DtdError::TagWidthTwice {
                    msg: "`tag.width` cannot be set inside a section".into(),
                    src: self.src(),
                    span: sspan(p.span),
                    first: None,
                }),
                "value" => self.err(DtdError::BadProperty {
                    msg: "`tag.value` can only be set in a record body".into(),
                    src: self.src(),
                    span: sspan(p.span),
                    help: Some("move it into the body of the record it identifies".into()),
                }),
                other => self.err(DtdError::BadProperty {
                    msg: format!("`tag.{other}` cannot be set"),
                    src: self.src(),
                    span: sspan(p.span),
                    help: Some("the tag's interpretation is always `none`; only `tag.width` may be set globally".into()),
                }),
            }
            return;
        }
        if p.path.len() > 1 {
            self.err(DtdError::BadProperty {
                msg: format!(
                    "`{path}.{}`: outside a record body a property names a field type, not a path",
                    p.prop.name
                ),
                src: self.src(),
                span: sspan(Span {
                    offset: p.path[0].span.offset,
                    len: p.prop.span.offset - p.path[0].span.offset - 1,
                }),
                help: Some(
                    "write the property in the body of the record type that has this field".into(),
                ),
            });
            return;
        }
        let key = (path, p.prop.name.clone());
        match self.scopes[scope].defaults.entry(key) {
            std::collections::hash_map::Entry::Occupied(_) => self.twice(p),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(Prop { def: p, val });
            }
        }
    }

    fn set_tag_width(&mut self, p: &'a PropertyDef) {
        if let Some(first) = self.tag_width_span {
            self.err(DtdError::TagWidthTwice {
                msg: "`tag.width` is set twice".into(),
                src: self.src(),
                span: sspan(p.span),
                first: Some(sspan(first)),
            });
            return;
        }
        self.tag_width_span = Some(p.span);
        let PropValue::Expr(e) = &p.value else { return };
        match const_expr(e) {
            Some(Some(w @ 1..=8)) => self.tag_width = w as u8,
            Some(Some(w)) => self.err(DtdError::BadWidth {
                msg: format!("tag width {w} is out of range"),
                src: self.src(),
                span: sspan(e.span),
                help: Some("`tag.width` must be 1..8".into()),
            }),
            Some(None) => {} // bad literal, reported by the parser
            None => self.err(DtdError::BadWidth {
                msg: "`tag.width` must be a constant".into(),
                src: self.src(),
                span: sspan(e.span),
                help: Some("write an integer, e.g. `tag.width = 1;`".into()),
            }),
        }
    }

    /// Check a property value's kind. `None`: reported, ignore the property entirely.
    fn check_value(&mut self, p: &'a PropertyDef, prelude: bool) -> Option<PVal<'a>> {
        let name = p.prop.name.as_str();
        let bad = |this: &mut Self, what: &str, help: &str| {
            this.err(DtdError::BadProperty {
                msg: format!("`{}.{name}` expects {what}", p.path_string()),
                src: this.src(),
                span: sspan(p.value.span()),
                help: Some(help.into()),
            });
            Some(PVal::Invalid)
        };
        match (name, &p.value) {
            ("width", PropValue::Expr(e)) => Some(PVal::Width(e)),
            ("width", _) => bad(self, "an expression", "e.g. `x.width = 4;` or `data.width = length.value;`"),
            ("interpretation", PropValue::Interp(i)) => Some(self.interp(i)),
            ("interpretation", _) => bad(
                self,
                "an interpretation",
                "one of: none, default V, baseOffset B, delta V, stride V S, sectionOffset N, sectionStride N S",
            ),
            ("value", PropValue::Expr(e)) => {
                if e.uses_value() {
                    self.err(DtdError::NonConstantValue { src: self.src(), span: sspan(e.span) });
                    return Some(PVal::Invalid);
                }
                Some(PVal::Value(e))
            }
            ("value", _) => bad(self, "a constant expression", "e.g. `tag.value = 4;`"),
            ("display", PropValue::Ident(id)) => match id.name.as_str() {
                "decimal" => Some(PVal::Display(Display::Decimal)),
                "hex" => Some(PVal::Display(Display::Hex)),
                "signed" => Some(PVal::Display(Display::Signed)),
                "text" => Some(PVal::Display(Display::Text)),
                "bytes" => Some(PVal::Display(Display::Bytes)),
                _ => bad(self, "a display style", "one of: decimal, hex, signed, text, bytes"),
            },
            ("display", _) => bad(self, "a display style", "one of: decimal, hex, signed, text, bytes"),
            _ => {
                if let Some(near) = KNOWN_PROPS.iter().find(|k| edit_distance(name, k) <= 2) {
                    self.warnings.push(DtdWarning::PropertyTypo {
                        name: name.to_string(),
                        suggestion: near.to_string(),
                        src: self.src(),
                        span: sspan(p.prop.span),
                    });
                }
                let text = if prelude { self.prelude_text } else { self.user_text };
                let s = p.value.span();
                let shown = text.get(s.offset..s.offset + s.len).unwrap_or("").to_string();
                Some(PVal::Extra(shown))
            }
        }
    }

    fn interp(&mut self, i: &ast::InterpDef) -> PVal<'a> {
        let arg = |a: &ast::Arg| a.value();
        let v = match &i.kind {
            InterpKind::None => Some(Interp::None),
            InterpKind::Default(a) => arg(a).map(Interp::Default),
            InterpKind::BaseOffset(a) => arg(a).map(Interp::BaseOffset),
            InterpKind::Delta(a) => arg(a).map(Interp::Delta),
            InterpKind::Stride(a, b) => match (arg(a), arg(b)) {
                (Some(initial), Some(s)) => Some(Interp::Stride {
                    initial,
                    stride: s as i64,
                }),
                _ => None,
            },
            InterpKind::SectionOffset(s) => self.section_ref(s).map(Interp::SectionOffset),
            InterpKind::SectionStride(s, b) => match (self.section_ref(s), arg(b)) {
                (Some(section), Some(st)) => Some(Interp::SectionStride {
                    section,
                    stride: st as i64,
                }),
                _ => None,
            },
        };
        match v {
            Some(v) => PVal::Interp(v, i.span),
            None => PVal::Invalid,
        }
    }

    fn section_ref(&mut self, s: &ast::SectionRef) -> Option<u8> {
        let found = match s {
            ast::SectionRef::Id(n) => {
                let v = n.value?;
                self.scopes
                    .iter()
                    .skip(1)
                    .find(|sc| sc.id.is_some_and(|id| u64::from(id) == v))
                    .and_then(|sc| sc.id)
            }
            ast::SectionRef::Name(n) => self
                .scopes
                .iter()
                .skip(1)
                .find(|sc| sc.name == n.name)
                .and_then(|sc| sc.id),
        };
        if found.is_none() {
            let what = match s {
                ast::SectionRef::Id(n) => {
                    format!("section {} is not declared", n.value.unwrap_or(0))
                }
                ast::SectionRef::Name(n) => format!("no section is named `{}`", n.name),
            };
            let declared: Vec<String> = self
                .scopes
                .iter()
                .skip(1)
                .filter_map(|sc| sc.id.map(|id| format!("{} ({id})", sc.name)))
                .collect();
            let help = if declared.is_empty() {
                "this DTD declares no sections".to_string()
            } else {
                format!("declared sections: {}", declared.join(", "))
            };
            self.err(DtdError::BadInterpretation {
                msg: what,
                src: self.src(),
                span: sspan(s.span()),
                help: Some(help),
            });
        }
        found
    }

    // ---- pass 3: expansion -----------------------------------------------------------------

    /// The record type `name` as seen from the definitions of `def`, if any.
    fn lookup(&self, from: DefId, name: &str) -> Option<DefId> {
        let d = &self.defs[from];
        let hit = self.scopes[d.scope]
            .by_name
            .get(name)
            .or_else(|| self.scopes[0].by_name.get(name))
            .copied()?;
        // Prelude records only see each other (see prelude.dtd).
        (!d.prelude || self.defs[hit].prelude).then_some(hit)
    }

    /// Expand a record type as a root: its fields at level "".
    fn expand_root(&mut self, def: DefId) -> Vec<TNode> {
        let mut ex = Expander {
            stack: vec![def],
            depth: 0,
            nodes: 0,
            limit_reported: false,
        };
        let mut level = Level::default();
        let list = &self.defs[def].ast.fields;
        let taggable = self.defs[def].taggable;
        let mut out = Vec::new();
        for (i, item) in list.items.iter().enumerate() {
            if i == 0 && taggable {
                level.names.insert("tag".into(), item.span);
                level.bases.insert("tag".into(), 1);
                out.push(TNode::Scalar {
                    name: "tag".into(),
                    ty: "tag".into(),
                    span: item.span,
                });
                continue;
            }
            if let Some(n) = self.expand_item(def, item, &mut level, &mut ex) {
                out.push(n);
            }
        }
        out
    }

    fn expand_list(
        &mut self,
        def: DefId,
        list: &'a FieldList,
        level: &mut Level,
        ex: &mut Expander,
    ) -> Vec<TNode> {
        let mut out = Vec::new();
        for item in &list.items {
            if let Some(n) = self.expand_item(def, item, level, ex) {
                out.push(n);
            }
        }
        out
    }

    /// Register a field name at a level: explicit names are kept (and must be new); implicit
    /// ones get `_2`, `_3`… when they repeat.
    fn name_at(&mut self, level: &mut Level, base: &str, explicit: bool, span: Span) -> String {
        let n = level.bases.entry(base.to_string()).or_insert(0);
        *n += 1;
        let name = if explicit || *n == 1 {
            base.to_string()
        } else {
            format!("{base}_{n}")
        };
        if let Some(first) = level.names.get(&name) {
            let first = Some(sspan(*first));
            self.err(DtdError::DuplicateField {
                name: name.clone(),
                src: self.src(),
                span: sspan(span),
                first,
            });
        } else {
            level.names.insert(name.clone(), span);
        }
        name
    }

    fn bump(&mut self, ex: &mut Expander, span: Span) -> bool {
        ex.nodes += 1;
        self.expanded += 1;
        if ex.depth > MAX_DEPTH || ex.nodes > MAX_FIELDS || self.expanded > MAX_TOTAL_FIELDS {
            let local = ex.depth > MAX_DEPTH || ex.nodes > MAX_FIELDS;
            // The whole-DTD budget is reported once, by the expansion that exhausts it.
            if !ex.limit_reported && (local || self.expanded == MAX_TOTAL_FIELDS + 1) {
                ex.limit_reported = true;
                let msg = if ex.depth > MAX_DEPTH {
                    format!("record types nest more than {MAX_DEPTH} levels deep")
                } else if ex.nodes > MAX_FIELDS {
                    format!("record type has more than {MAX_FIELDS} fields")
                } else {
                    format!("the DTD expands to more than {MAX_TOTAL_FIELDS} fields")
                };
                self.err(DtdError::Limit {
                    msg,
                    src: self.src(),
                    span: sspan(span),
                });
            }
            return false;
        }
        true
    }

    fn expand_item(
        &mut self,
        def: DefId,
        item: &'a FieldItem,
        level: &mut Level,
        ex: &mut Expander,
    ) -> Option<TNode> {
        if !self.bump(ex, item.span) {
            return None;
        }
        if let Some(n) = &item.name {
            if n.name == "tag" {
                self.tag_misplaced(n.span);
                return None;
            }
        }
        match &item.ty {
            FieldType::Named(id) => {
                let explicit = item.name.as_ref();
                let base = explicit.map_or(&id.name, |n| &n.name).clone();
                self.expand_named(def, id, base, explicit.is_some(), item.span, level, ex)
            }
            FieldType::Composite(list) => match &item.name {
                None => {
                    ex.depth += 1;
                    let children = self.expand_list(def, list, level, ex);
                    ex.depth -= 1;
                    // Unnamed composites are inlined: wrap the children in a nameless group
                    // that the flattening step dissolves.
                    Some(TNode::Group {
                        name: String::new(),
                        def: None,
                        children,
                    })
                }
                Some(n) => {
                    let name = self.name_at(level, &n.name, true, n.span);
                    ex.depth += 1;
                    let mut inner = Level::default();
                    let children = self.expand_list(def, list, &mut inner, ex);
                    ex.depth -= 1;
                    Some(TNode::Group {
                        name,
                        def: None,
                        children,
                    })
                }
            },
            FieldType::Repeat {
                count, item: rep, ..
            } => self.expand_repeat(def, count, rep, item.name.as_ref(), level, ex),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn expand_named(
        &mut self,
        def: DefId,
        id: &'a ast::Ident,
        base: String,
        explicit: bool,
        span: Span,
        level: &mut Level,
        ex: &mut Expander,
    ) -> Option<TNode> {
        if id.name == "tag" {
            self.tag_misplaced(id.span);
            return None;
        }
        match self.lookup(def, &id.name) {
            None => {
                let name = self.name_at(level, &base, explicit, span);
                Some(TNode::Scalar {
                    name,
                    ty: id.name.clone(),
                    span: id.span,
                })
            }
            Some(nested) => {
                let name = self.name_at(level, &base, explicit, span);
                let children = self.expand_nested(nested, id.span, ex)?;
                Some(TNode::Group {
                    name,
                    def: Some(nested),
                    children,
                })
            }
        }
    }

    /// The fields of a nested record type at a fresh level; `None` if it cannot be nested.
    fn expand_nested(
        &mut self,
        nested: DefId,
        use_span: Span,
        ex: &mut Expander,
    ) -> Option<Vec<TNode>> {
        if let Some(pos) = ex.stack.iter().position(|&d| d == nested) {
            // Every expansion that enters the cycle finds it; report it once, from the
            // expansion of its first-defined member.
            if ex.stack[pos..].iter().any(|&d| d < nested) {
                return None;
            }
            let mut chain: Vec<&str> = ex.stack[pos..]
                .iter()
                .map(|&d| self.defs[d].ast.name.name.as_str())
                .collect();
            chain.push(&self.defs[nested].ast.name.name);
            let chain = chain.join(" → ");
            let name = self.defs[nested].ast.name.name.clone();
            self.err(DtdError::RecursiveType {
                name,
                chain,
                src: self.src(),
                span: sspan(use_span),
            });
            return None;
        }
        let nd = &self.defs[nested];
        if nd.taggable {
            let msg = format!(
                "record type `{}` starts with `tag` and cannot be used as a nested type",
                nd.ast.name.name
            );
            let def = Some(sspan(nd.ast.name.span));
            self.err(DtdError::TagNotFirst {
                msg,
                src: self.src(),
                span: sspan(use_span),
                def,
            });
            return None;
        }
        ex.stack.push(nested);
        ex.depth += 1;
        let mut inner = Level::default();
        let list = &self.defs[nested].ast.fields;
        let children = self.expand_list(nested, list, &mut inner, ex);
        ex.depth -= 1;
        ex.stack.pop();
        Some(children)
    }

    #[allow(clippy::too_many_arguments)]
    fn expand_repeat(
        &mut self,
        def: DefId,
        count: &'a ast::Ident,
        item: &'a FieldType,
        explicit: Option<&'a ast::Ident>,
        level: &mut Level,
        ex: &mut Expander,
    ) -> Option<TNode> {
        if count.name == "tag" {
            self.tag_misplaced(count.span);
            return None;
        }
        if self.lookup(def, &count.name).is_some() {
            self.err(DtdError::BadCount {
                name: count.name.clone(),
                src: self.src(),
                span: sspan(count.span),
            });
            return None;
        }
        let count_name = self.name_at(level, &count.name, false, count.span);
        let count_node = TNode::Scalar {
            name: count_name.clone(),
            ty: count.name.clone(),
            span: count.span,
        };
        let base = match explicit {
            Some(n) => n.name.clone(),
            None => item_name(item).map_or_else(|| format!("{count_name}_items"), str::to_string),
        };
        let name = self.name_at(
            level,
            &base,
            explicit.is_some(),
            explicit.map_or(item.span(), |n| n.span),
        );
        ex.depth += 1;
        let mut inner = Level::default();
        let out = match item {
            FieldType::Named(id) if id.name == "tag" => {
                self.tag_misplaced(id.span);
                None
            }
            FieldType::Named(id) => match self.lookup(def, &id.name) {
                None => {
                    let child = TNode::Scalar {
                        name: name.clone(),
                        ty: id.name.clone(),
                        span: id.span,
                    };
                    Some(TNode::Repeat {
                        name,
                        count: Box::new(count_node),
                        def: None,
                        flat: true,
                        children: vec![child],
                    })
                }
                Some(nested) => {
                    self.expand_nested(nested, id.span, ex)
                        .map(|children| TNode::Repeat {
                            name,
                            count: Box::new(count_node),
                            def: Some(nested),
                            flat: false,
                            children,
                        })
                }
            },
            FieldType::Composite(list) => {
                let children = self.expand_list(def, list, &mut inner, ex);
                Some(TNode::Repeat {
                    name,
                    count: Box::new(count_node),
                    def: None,
                    flat: false,
                    children,
                })
            }
            FieldType::Repeat {
                count: c2,
                item: i2,
                ..
            } => self
                .expand_repeat(def, c2, i2, None, &mut inner, ex)
                .map(|child| TNode::Repeat {
                    name,
                    count: Box::new(count_node),
                    def: None,
                    flat: false,
                    children: vec![child],
                }),
        };
        ex.depth -= 1;
        out
    }

    fn tag_misplaced(&mut self, span: Span) {
        self.err(DtdError::TagNotFirst {
            msg: "`tag` must be the first field of a record type".into(),
            src: self.src(),
            span: sspan(span),
            def: None,
        });
    }

    // ---- pass 4: slots and properties -------------------------------------------------------

    fn build(&mut self, name: &str) -> Option<Schema> {
        let mut trees = Vec::with_capacity(self.defs.len());
        for d in 0..self.defs.len() {
            let tree = self.expand_root(d);
            self.check_body_paths(d, &tree);
            trees.push(tree);
        }
        let mut records: Vec<Option<RecordType>> = Vec::new();
        let mut rec_of_def: HashMap<DefId, usize> = HashMap::new();
        for (d, tree) in trees.iter().enumerate() {
            if !self.defs[d].taggable {
                continue;
            }
            let rt = self.resolve_record(d, tree);
            rec_of_def.insert(d, records.len());
            records.push(rt);
        }
        self.check_tags();
        if !self.errors.is_empty() {
            return None;
        }
        let records: Vec<RecordType> = records.into_iter().map(|r| r.expect("no errors")).collect();
        let mut scopes = Vec::new();
        let mut scope_of_section = vec![None; 256];
        let global: Vec<RecordId> = self.scopes[0]
            .defs
            .iter()
            .filter_map(|d| rec_of_def.get(d))
            .map(|&i| i as RecordId)
            .collect();
        for (si, sc) in self.scopes.iter().enumerate() {
            let mut ids = if si == 0 { Vec::new() } else { global.clone() };
            ids.extend(
                sc.defs
                    .iter()
                    .filter_map(|d| rec_of_def.get(d))
                    .map(|&i| i as RecordId),
            );
            let by_tag = ids.iter().map(|&r| (records[r as usize].tag, r)).collect();
            let id = sc.id.expect("valid when there are no errors");
            scope_of_section[id as usize] = Some(si as u16);
            scopes.push(Scope {
                id,
                name: sc.name.clone(),
                records: ids,
                by_tag,
                span: sc.span,
            });
        }
        Some(Schema {
            name: name.to_string(),
            tag_width: self.tag_width,
            records,
            scopes,
            scope_of_section,
        })
    }

    /// Every property path of a record body must name a scalar field of that record type.
    fn check_body_paths(&mut self, d: DefId, tree: &[TNode]) {
        let mut fields = Vec::new();
        let mut groups = Vec::new();
        collect_names(tree, "", &mut fields, &mut groups);
        let mut props: Vec<&Prop<'a>> = self.defs[d].body.values().collect();
        props.sort_by_key(|p| p.def.span.offset);
        let mut errs = Vec::new();
        for p in props {
            let path = p.def.path_string();
            if fields.contains(&path) {
                continue;
            }
            let rname = &self.defs[d].ast.name.name;
            let msg = if groups.contains(&path) {
                format!("`{path}` in record type `{rname}` is a nested record, not a field")
            } else {
                format!("record type `{rname}` has no field `{path}`")
            };
            let help = Some(format!("its fields are: {}", fields.join(", ")));
            let first = &p.def.path[0].span;
            let last = &p.def.path[p.def.path.len() - 1].span;
            let span = Span {
                offset: first.offset,
                len: last.offset + last.len - first.offset,
            };
            errs.push(DtdError::UnknownType {
                msg,
                src: self.src(),
                span: sspan(span),
                help,
            });
        }
        self.errors.extend(errs);
        if self.defs[d].taggable && self.defs[d].tag_value.is_none() {
            let r = self.defs[d].ast;
            self.err(DtdError::MissingTagValue {
                record: r.name.name.clone(),
                src: self.src(),
                span: sspan(r.name.span),
            });
        }
    }

    fn resolve_record(&mut self, d: DefId, tree: &[TNode]) -> Option<RecordType> {
        let def = &self.defs[d];
        let mut rec = Rec {
            def: d,
            scope: def.scope,
            slots: Vec::new(),
            by_name: HashMap::new(),
            interps: Vec::new(),
            widths: Vec::new(),
        };
        let mut layout = Vec::new();
        flatten(
            tree,
            "",
            false,
            &[(d, String::new())],
            &mut rec.slots,
            &mut layout,
        );
        for (i, s) in rec.slots.iter().enumerate() {
            rec.by_name.insert(s.full.clone(), i);
        }
        let n = rec.slots.len();
        rec.widths = vec![WState::Todo; n];
        let errors_before = self.errors.len();
        // Interpretations first: whether a width is needed depends on them.
        for s in 0..n {
            let interp = if s == 0 {
                Some((Interp::None, None))
            } else {
                match self.find(&rec, s, "interpretation") {
                    Some((
                        Prop {
                            val: PVal::Interp(i, span),
                            ..
                        },
                        _,
                    )) => Some((i, Some(span))),
                    Some(_) => None, // invalid, reported
                    None => {
                        let sl = &rec.slots[s];
                        let e = DtdError::MissingInterpretation {
                            field: sl.full.clone(),
                            record: self.defs[d].ast.name.name.clone(),
                            type_name: sl.ty.clone(),
                            src: self.src(),
                            span: sspan(sl.span),
                            used_in: self.used_in(d, sl.span),
                        };
                        self.err(e);
                        None
                    }
                }
            };
            rec.interps.push(interp);
        }
        let mut slots = Vec::with_capacity(n);
        for s in 0..n {
            let w = self.width(&mut rec, s);
            let slot = self.finish_slot(&mut rec, s, w);
            slots.push(slot);
        }
        let tag = self.tag_value(&mut rec);
        if let Some(t) = tag {
            self.tags.push((d, t));
        }
        if self.errors.len() > errors_before {
            return None;
        }
        slots[0].fixed = tag;
        let def = &self.defs[d];
        Some(RecordType {
            name: def.ast.name.name.clone(),
            tag: tag?,
            scope: self.scopes[def.scope].id.unwrap_or(0),
            builtin: if def.prelude {
                match def.ast.name.name.as_str() {
                    "comment" => Some(Builtin::Comment),
                    "section" => Some(Builtin::Section),
                    "metadata" => Some(Builtin::Metadata),
                    _ => None,
                }
            } else {
                None
            },
            slots,
            layout,
            span: if def.prelude {
                Span::default()
            } else {
                def.ast.span
            },
        })
    }

    /// A secondary label pointing at the record that uses a field declared elsewhere.
    fn used_in(&self, d: DefId, field_span: Span) -> Option<miette::SourceSpan> {
        let r = self.defs[d].ast;
        let inside =
            field_span.offset >= r.span.offset && field_span.offset < r.span.offset + r.span.len;
        (!inside && !self.defs[d].prelude).then(|| sspan(r.name.span))
    }

    /// The first source of property `prop` for slot `s` (§4.3), with the prefix that its
    /// references are relative to.
    fn find(&self, rec: &Rec, s: usize, prop: &str) -> Option<(Prop<'a>, String)> {
        let sl = &rec.slots[s];
        for (d, prefix) in &sl.bodies {
            let rel = sl.full.strip_prefix(prefix.as_str()).unwrap_or(&sl.full);
            if let Some(p) = self.defs[*d].body.get(&(rel.to_string(), prop.to_string())) {
                return Some((p.clone(), prefix.clone()));
            }
        }
        let key = (sl.ty.clone(), prop.to_string());
        if rec.scope != 0 {
            if let Some(p) = self.scopes[rec.scope].defaults.get(&key) {
                return Some((p.clone(), sl.level.clone()));
            }
        }
        self.scopes[0]
            .defaults
            .get(&key)
            .map(|p| (p.clone(), sl.level.clone()))
    }

    /// The declared width of a slot: `None` if missing or invalid (reported).
    fn width(&mut self, rec: &mut Rec, s: usize) -> Option<W> {
        match &rec.widths[s] {
            WState::Done(w) => return w.clone(),
            WState::Busy => {
                let sl = &rec.slots[s];
                self.err(DtdError::CyclicWidth {
                    field: sl.full.clone(),
                    src: self.src(),
                    span: sspan(sl.span),
                });
                return None;
            }
            WState::Todo => {}
        }
        rec.widths[s] = WState::Busy;
        let w = if s == 0 {
            Some(W::Const(u64::from(self.tag_width)))
        } else {
            match self.find(rec, s, "width") {
                Some((
                    Prop {
                        val: PVal::Width(e),
                        ..
                    },
                    prefix,
                )) => self.expr(rec, s, e, &prefix),
                Some(_) => None,
                None => match rec.interps[s] {
                    Some((i, _)) if i.is_zero_width() => Some(W::Const(0)),
                    Some(_) => {
                        let sl = &rec.slots[s];
                        let e = DtdError::MissingWidth {
                            field: sl.full.clone(),
                            record: self.defs[rec.def].ast.name.name.clone(),
                            type_name: sl.ty.clone(),
                            src: self.src(),
                            span: sspan(sl.span),
                            used_in: self.used_in(rec.def, sl.span),
                        };
                        self.err(e);
                        None
                    }
                    None => None,
                },
            }
        };
        rec.widths[s] = WState::Done(w.clone());
        w
    }

    /// Convert an expression of slot `s`'s properties, relative to `prefix`.
    fn expr(&mut self, rec: &mut Rec, s: usize, e: &ast::Expr, prefix: &str) -> Option<W> {
        match &e.kind {
            ast::ExprKind::Int(n) => n.value.map(W::Const),
            ast::ExprKind::Ref { path, prop } => {
                let full = format!("{prefix}{}", ast::join_path(path));
                let pspan = Span {
                    offset: e.span.offset,
                    len: e.span.len,
                };
                let Some(&t) = rec.by_name.get(&full) else {
                    let fields: Vec<&str> = rec.slots.iter().map(|s| s.full.as_str()).collect();
                    self.err(DtdError::UnknownType {
                        msg: format!(
                            "no field `{full}` in record `{}`",
                            self.defs[rec.def].ast.name.name
                        ),
                        src: self.src(),
                        span: sspan(pspan),
                        help: Some(format!("its fields are: {}", fields.join(", "))),
                    });
                    return None;
                };
                match prop {
                    ast::RefProp::Width => match self.width(rec, t)? {
                        W::Const(c) => Some(W::Const(c)),
                        W::Dyn(_) => {
                            self.err(DtdError::BadWidth {
                                msg: format!("`{full}` has a variable width, so `{full}.width` is not a constant"),
                                src: self.src(),
                                span: sspan(pspan),
                                help: None,
                            });
                            None
                        }
                    },
                    ast::RefProp::Value => {
                        if t >= s {
                            let what = if t == s { "itself" } else { "a later field" };
                            self.err(DtdError::ForwardReference {
                                msg: format!(
                                    "field `{}` reads the value of {what}, `{full}`",
                                    rec.slots[s].full
                                ),
                                src: self.src(),
                                span: sspan(pspan),
                            });
                            return None;
                        }
                        match self.width(rec, t)? {
                            W::Const(c) if c <= 8 => Some(W::Dyn(Expr::Value(t as SlotId))),
                            _ => {
                                self.err(DtdError::BadWidth {
                                    msg: format!(
                                        "`{full}` is a byte string; its value is not a number"
                                    ),
                                    src: self.src(),
                                    span: sspan(pspan),
                                    help: Some(
                                        "`.value` references must name integer fields".into(),
                                    ),
                                });
                                None
                            }
                        }
                    }
                }
            }
            ast::ExprKind::Binary(op, a, b) => {
                let a = self.expr(rec, s, a, prefix);
                let b = self.expr(rec, s, b, prefix);
                let (a, b) = (a?, b?);
                match (a, b) {
                    (W::Const(x), W::Const(y)) => {
                        let r = match op {
                            ast::BinOp::Add => x.checked_add(y),
                            ast::BinOp::Sub => x.checked_sub(y),
                            ast::BinOp::Mul => x.checked_mul(y),
                        };
                        if r.is_none() {
                            self.err(DtdError::BadWidth {
                                msg: "arithmetic overflow or negative result".into(),
                                src: self.src(),
                                span: sspan(e.span),
                                help: Some(
                                    "constant expressions are unsigned 64-bit integers".into(),
                                ),
                            });
                        }
                        r.map(W::Const)
                    }
                    (a, b) => {
                        let to = |w: W| match w {
                            W::Const(c) => Expr::Const(c),
                            W::Dyn(e) => e,
                        };
                        let (a, b) = (Box::new(to(a)), Box::new(to(b)));
                        Some(W::Dyn(match op {
                            ast::BinOp::Add => Expr::Add(a, b),
                            ast::BinOp::Sub => Expr::Sub(a, b),
                            ast::BinOp::Mul => Expr::Mul(a, b),
                        }))
                    }
                }
            }
        }
    }

    fn finish_slot(&mut self, rec: &mut Rec, s: usize, w: Option<W>) -> Slot {
        let interp = rec.interps[s];
        let sl = &rec.slots[s];
        let (name, ty, in_repeat) = (sl.full.clone(), sl.ty.clone(), sl.in_repeat);
        let rname = self.defs[rec.def].ast.name.name.clone();
        let width_src = if s == 0 {
            None
        } else {
            self.find(rec, s, "width")
        };
        let kind = match (&w, interp) {
            (Some(W::Const(c)), Some((i, ispan))) if i.is_zero_width() && *c != 0 => {
                self.zero_width_error(
                    &name,
                    &rname,
                    c.to_string(),
                    i,
                    width_src.as_ref(),
                    ispan,
                    sl.span,
                );
                SlotKind::Int { width: 0 }
            }
            (Some(W::Dyn(e)), Some((i, ispan))) if i.is_zero_width() => {
                self.zero_width_error(
                    &name,
                    &rname,
                    show_expr(e, &rec.slots),
                    i,
                    width_src.as_ref(),
                    ispan,
                    sl.span,
                );
                SlotKind::Int { width: 0 }
            }
            (Some(W::Const(c)), _) if *c <= 8 => SlotKind::Int { width: *c as u8 },
            (Some(W::Const(c)), i) => {
                self.bytes_interp(&name, i);
                SlotKind::Bytes {
                    width: Expr::Const(*c),
                }
            }
            (Some(W::Dyn(e)), i) => {
                self.bytes_interp(&name, i);
                SlotKind::Bytes { width: e.clone() }
            }
            (None, _) => SlotKind::Int { width: 0 },
        };
        let mut fixed = None;
        let mut display = Display::default();
        let mut extra: Vec<(String, String)> = Vec::new();
        if s != 0 {
            if let Some((
                Prop {
                    val: PVal::Value(e),
                    ..
                },
                prefix,
            )) = self.find(rec, s, "value")
            {
                fixed = self.constant(rec, s, e, &prefix);
            }
            if let Some((
                Prop {
                    val: PVal::Display(d),
                    ..
                },
                _,
            )) = self.find(rec, s, "display")
            {
                display = d;
            }
            // Every other property, first source wins per name, in source order.
            let mut names: Vec<(usize, String, String)> = Vec::new();
            let sources = self.extra_sources(rec, s);
            for p in sources {
                if let PVal::Extra(v) = &p.val {
                    if !names.iter().any(|(_, n, _)| n == &p.def.prop.name) {
                        names.push((p.def.span.offset, p.def.prop.name.clone(), v.clone()));
                    }
                }
            }
            extra = names.into_iter().map(|(_, n, v)| (n, v)).collect();
        }
        Slot {
            name,
            type_name: ty,
            kind,
            interp: interp.map_or(Interp::None, |(i, _)| i),
            fixed,
            display,
            in_repeat,
            extra,
        }
    }

    /// Every property source of a slot, in priority order.
    fn extra_sources(&self, rec: &Rec, s: usize) -> Vec<Prop<'a>> {
        let sl = &rec.slots[s];
        let mut out = Vec::new();
        let mut push_matching = |map: &PropMap<'a>, key: &str| {
            let mut v: Vec<&Prop<'a>> = map
                .iter()
                .filter(|((p, _), _)| p == key)
                .map(|(_, p)| p)
                .collect();
            v.sort_by_key(|p| p.def.span.offset);
            out.extend(v.into_iter().cloned());
        };
        for (d, prefix) in &sl.bodies {
            let rel = sl.full.strip_prefix(prefix.as_str()).unwrap_or(&sl.full);
            push_matching(&self.defs[*d].body, rel);
        }
        if rec.scope != 0 {
            push_matching(&self.scopes[rec.scope].defaults, &sl.ty);
        }
        push_matching(&self.scopes[0].defaults, &sl.ty);
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn zero_width_error(
        &mut self,
        field: &str,
        record: &str,
        width: String,
        i: Interp,
        width_src: Option<&(Prop<'a>, String)>,
        ispan: Option<Span>,
        field_span: Span,
    ) {
        let span = width_src.map_or(field_span, |(p, _)| p.def.span);
        self.err(DtdError::WidthOnZeroWidth {
            field: field.to_string(),
            record: record.to_string(),
            width,
            interp: i.keyword().to_string(),
            src: self.src(),
            span: sspan(span),
            interp_span: ispan.map(sspan),
        });
    }

    fn bytes_interp(&mut self, field: &str, interp: Option<(Interp, Option<Span>)>) {
        if let Some((i, Some(span))) = interp {
            if i != Interp::None {
                self.err(DtdError::BadInterpretation {
                    msg: format!(
                        "byte-string field `{field}` cannot have interpretation `{}`",
                        i.keyword()
                    ),
                    src: self.src(),
                    span: sspan(span),
                    help: Some(
                        "fields wider than 8 bytes or of variable width must use `none`".into(),
                    ),
                });
            }
        }
    }

    /// Evaluate a constant expression in the context of slot `s`.
    fn constant(&mut self, rec: &mut Rec, s: usize, e: &ast::Expr, prefix: &str) -> Option<u64> {
        match self.expr(rec, s, e, prefix)? {
            W::Const(c) => Some(c),
            W::Dyn(_) => {
                self.err(DtdError::NonConstantValue {
                    src: self.src(),
                    span: sspan(e.span),
                });
                None
            }
        }
    }

    fn tag_value(&mut self, rec: &mut Rec) -> Option<u64> {
        let p = self.defs[rec.def].tag_value.clone()?;
        let PVal::Value(e) = p.val else { return None };
        let v = self.constant(rec, 0, e, "")?;
        let tw = self.tag_width;
        if tw < 8 && v >> (8 * u32::from(tw)) != 0 {
            self.err(DtdError::BadProperty {
                msg: format!(
                    "tag value {v} does not fit in `tag.width` = {tw} byte{}",
                    if tw == 1 { "" } else { "s" }
                ),
                src: self.src(),
                span: sspan(e.span),
                help: Some("increase `tag.width` or use a smaller tag".into()),
            });
            return None;
        }
        Some(v)
    }

    // ---- pass 5: tags ---------------------------------------------------------------------------

    fn check_tags(&mut self) {
        let tags: HashMap<DefId, u64> = self.tags.iter().copied().collect();
        let tag_of = |d: &DefId| tags.get(d).map(|&t| (t, *d));
        let global: Vec<(u64, DefId)> = self.scopes[0].defs.iter().filter_map(tag_of).collect();
        let mut errs = Vec::new();
        for sc in 0..self.scopes.len() {
            let mut seen: Vec<(u64, DefId)> = if sc == 0 { Vec::new() } else { global.clone() };
            for (tag, d) in self.scopes[sc].defs.iter().filter_map(tag_of) {
                let def = &self.defs[d];
                let span = def
                    .tag_value
                    .as_ref()
                    .map_or(def.ast.name.span, |p| p.def.value.span());
                if !def.prelude && (1..=3).contains(&tag) {
                    errs.push(DtdError::ReservedName {
                        msg: format!(
                            "tag {tag} of record `{}` is reserved for a built-in record",
                            def.ast.name.name
                        ),
                        src: self.src(),
                        span: sspan(span),
                    });
                } else if let Some(&(_, other)) = seen.iter().find(|(t, _)| *t == tag) {
                    let o = &self.defs[other];
                    let first = o.tag_value.as_ref().map(|p| sspan(p.def.value.span()));
                    errs.push(DtdError::DuplicateTag {
                        tag,
                        record: def.ast.name.name.clone(),
                        other: o.ast.name.name.clone(),
                        src: self.src(),
                        span: sspan(span),
                        first,
                    });
                }
                seen.push((tag, d));
            }
        }
        self.errors.extend(errs);
    }
}

/// `Some(Some(v))` for an integer literal, `Some(None)` for a bad literal, `None` otherwise.
fn const_expr(e: &ast::Expr) -> Option<Option<u64>> {
    match &e.kind {
        ast::ExprKind::Int(n) => Some(n.value),
        _ => None,
    }
}

/// The name a repeat takes from its item, if it has one.
fn item_name(t: &FieldType) -> Option<&str> {
    match t {
        FieldType::Named(id) => Some(&id.name),
        FieldType::Repeat { item, .. } => item_name(item),
        FieldType::Composite(_) => None,
    }
}

/// Full names of the scalar fields and of the groups of an expanded tree.
fn collect_names(tree: &[TNode], prefix: &str, fields: &mut Vec<String>, groups: &mut Vec<String>) {
    for n in tree {
        match n {
            TNode::Scalar { name, .. } => fields.push(format!("{prefix}{name}")),
            TNode::Group { name, children, .. } if name.is_empty() => {
                collect_names(children, prefix, fields, groups)
            }
            TNode::Group { name, children, .. } => {
                groups.push(format!("{prefix}{name}"));
                collect_names(children, &format!("{prefix}{name}."), fields, groups);
            }
            TNode::Repeat {
                name,
                count,
                flat,
                children,
                ..
            } => {
                collect_names(std::slice::from_ref(count), prefix, fields, groups);
                if *flat {
                    collect_names(children, prefix, fields, groups);
                } else {
                    groups.push(format!("{prefix}{name}"));
                    collect_names(children, &format!("{prefix}{name}."), fields, groups);
                }
            }
        }
    }
}

/// Flatten an expanded tree into slots (depth-first, repeated items once) and layout nodes.
fn flatten(
    tree: &[TNode],
    prefix: &str,
    in_repeat: bool,
    bodies: &[(DefId, String)],
    slots: &mut Vec<FlatSlot>,
    out: &mut Vec<Node>,
) {
    for n in tree {
        match n {
            TNode::Scalar { name, ty, span } => {
                out.push(Node::Field(slots.len() as SlotId));
                slots.push(FlatSlot {
                    full: format!("{prefix}{name}"),
                    level: prefix.to_string(),
                    ty: ty.clone(),
                    span: *span,
                    in_repeat,
                    bodies: bodies.to_vec(),
                });
            }
            TNode::Group { name, children, .. } if name.is_empty() => {
                flatten(children, prefix, in_repeat, bodies, slots, out);
            }
            TNode::Group {
                name,
                def,
                children,
            } => {
                let p = format!("{prefix}{name}.");
                let mut b = bodies.to_vec();
                if let Some(d) = def {
                    b.push((*d, p.clone()));
                }
                let mut inner = Vec::new();
                flatten(children, &p, in_repeat, &b, slots, &mut inner);
                out.push(Node::Group {
                    name: name.clone(),
                    children: inner,
                });
            }
            TNode::Repeat {
                name,
                count,
                def,
                flat,
                children,
            } => {
                let count_slot = slots.len() as SlotId;
                flatten(
                    std::slice::from_ref(count),
                    prefix,
                    in_repeat,
                    bodies,
                    slots,
                    out,
                );
                let p = if *flat {
                    prefix.to_string()
                } else {
                    format!("{prefix}{name}.")
                };
                let mut b = bodies.to_vec();
                if let Some(d) = def {
                    b.push((*d, p.clone()));
                }
                let mut inner = Vec::new();
                flatten(children, &p, true, &b, slots, &mut inner);
                out.push(Node::Repeat {
                    name: name.clone(),
                    count: count_slot,
                    item: inner,
                });
            }
        }
    }
}

/// Show a width expression with slot names (`vfield.length.value + 2`).
pub fn show_expr(e: &Expr, slots: &[impl SlotName]) -> String {
    fn go(e: &Expr, slots: &[impl SlotName], out: &mut String, parent_prec: u8) {
        let (prec, op, a, b) = match e {
            Expr::Const(c) => return out.push_str(&c.to_string()),
            Expr::Value(s) => {
                out.push_str(slots.get(*s as usize).map_or("?", |s| s.slot_name()));
                return out.push_str(".value");
            }
            Expr::Add(a, b) => (1, " + ", a, b),
            Expr::Sub(a, b) => (1, " - ", a, b),
            Expr::Mul(a, b) => (2, " * ", a, b),
        };
        if prec < parent_prec {
            out.push('(');
        }
        go(a, slots, out, prec);
        out.push_str(op);
        // Right operands of `-` need parentheses at equal precedence: a - (b + c).
        go(b, slots, out, prec + 1);
        if prec < parent_prec {
            out.push(')');
        }
    }
    let mut s = String::new();
    go(e, slots, &mut s, 0);
    s
}

/// Anything with a slot name, for [`show_expr`].
pub trait SlotName {
    /// The slot's display name.
    fn slot_name(&self) -> &str;
}

impl SlotName for Slot {
    fn slot_name(&self) -> &str {
        &self.name
    }
}

impl SlotName for FlatSlot {
    fn slot_name(&self) -> &str {
        &self.full
    }
}

#[cfg(test)]
mod tests {
    use crate::dtd::{parse_str, Builtin, Expr, Interp, Node, Schema, SlotKind};

    fn schema(text: &str) -> Schema {
        match parse_str("t.dtd", text) {
            Ok(l) => l.schema,
            Err(e) => panic!("{e:?}"),
        }
    }

    fn codes(text: &str) -> Vec<String> {
        let e = parse_str("t.dtd", text).expect_err("should fail");
        e.errors.iter().map(|e| e.code_str()).collect()
    }

    #[test]
    fn prelude_alone() {
        let s = schema("");
        assert_eq!(s.records.len(), 3);
        assert_eq!(s.record(s.builtin(Builtin::Comment)).tag, 1);
        assert_eq!(s.record(s.builtin(Builtin::Section)).tag, 2);
        assert_eq!(s.record(s.builtin(Builtin::Metadata)).tag, 3);
        assert!(
            s.record_by_name(0, "vfield").is_none(),
            "vfield is not taggable"
        );
        assert_eq!(s.scope_of_section.len(), 256);
        assert_eq!(s.scope_of_section[0], Some(0));
        assert!(s.scope_of_section[1..].iter().all(Option::is_none));
    }

    #[test]
    fn property_priority() {
        let s = schema(
            "x.width = 1; x.interpretation = none;
             inner : (x) { x.width = 2; }
             outer : (inner) { inner.x.width = 3; }
             section s 1 {
                 x.width = 4;
                 a : (tag, x, inner, outer) { tag.value = 4; outer.inner.x.width = 5; }
                 b : (tag, outer) { tag.value = 5; }
             }
             c : (tag, x) { tag.value = 6; }",
        );
        let a = s.record(s.record_by_name(1, "a").unwrap());
        let w: Vec<_> = a
            .slots
            .iter()
            .map(|s| (s.name.as_str(), s.kind.clone()))
            .collect();
        assert_eq!(
            w[1],
            ("x", SlotKind::Int { width: 4 }),
            "section default beats global"
        );
        assert_eq!(
            w[2],
            ("inner.x", SlotKind::Int { width: 2 }),
            "nested body beats defaults"
        );
        assert_eq!(
            w[3],
            ("outer.inner.x", SlotKind::Int { width: 5 }),
            "record body first"
        );
        let b = s.record(s.record_by_name(1, "b").unwrap());
        assert_eq!(
            b.slots[1].kind,
            SlotKind::Int { width: 3 },
            "outer nested body beats inner"
        );
        let c = s.record(s.record_by_name(0, "c").unwrap());
        assert_eq!(
            c.slots[1].kind,
            SlotKind::Int { width: 1 },
            "section defaults stay local"
        );
    }

    #[test]
    fn names_and_suffixes() {
        let s = schema(
            "address.width = 4; address.interpretation = none;
             r : (tag, address, old : address, address, address) { tag.value = 4; old.width = 2; }",
        );
        let r = s.record(s.record_by_name(0, "r").unwrap());
        let names: Vec<_> = r.slots.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["tag", "address", "old", "address_2", "address_3"]);
        assert_eq!(r.slots[2].type_name, "address");
        assert_eq!(r.slots[2].kind, SlotKind::Int { width: 2 });
    }

    #[test]
    fn repeats_layout() {
        let s = schema(
            "n.width = 1; n.interpretation = none; a.width = 2; a.interpretation = none;
             m.width = 1; m.interpretation = none; b.width = 1; b.interpretation = none;
             r : (tag, n * (a, m * b)) { tag.value = 4; }",
        );
        let r = s.record(s.record_by_name(0, "r").unwrap());
        let names: Vec<_> = r
            .slots
            .iter()
            .map(|s| (s.name.as_str(), s.in_repeat))
            .collect();
        assert_eq!(
            names,
            [
                ("tag", false),
                ("n", false),
                ("n_items.a", true),
                ("n_items.m", true),
                ("n_items.b", true)
            ]
        );
        assert_eq!(
            r.layout,
            vec![
                Node::Field(0),
                Node::Field(1),
                Node::Repeat {
                    name: "n_items".into(),
                    count: 1,
                    item: vec![
                        Node::Field(2),
                        Node::Field(3),
                        Node::Repeat {
                            name: "b".into(),
                            count: 3,
                            item: vec![Node::Field(4)]
                        },
                    ],
                },
            ]
        );
    }

    #[test]
    fn expressions_resolve() {
        let s = schema(
            "tag.width = 2; len.width = 1; len.interpretation = none; data.interpretation = none;
             r : (tag, len, data, w, big) {
                 tag.value = 4;
                 data.width = len.value + tag.width;
                 w.width = tag.width * 2; w.interpretation = delta 0;
                 big.width = w.width * 4; big.interpretation = none;
             }",
        );
        let r = s.record(s.record_by_name(0, "r").unwrap());
        assert_eq!(
            r.slots[2].kind,
            SlotKind::Bytes {
                width: Expr::Add(Box::new(Expr::Value(1)), Box::new(Expr::Const(2)))
            }
        );
        assert_eq!(r.slots[3].kind, SlotKind::Int { width: 4 });
        assert_eq!(r.slots[3].interp, Interp::Delta(0));
        assert_eq!(
            r.slots[4].kind,
            SlotKind::Bytes {
                width: Expr::Const(16)
            }
        );
    }

    #[test]
    fn user_types_do_not_leak_into_the_prelude() {
        let s = schema("length : (x); number : (x); x.width = 1; x.interpretation = none;");
        let sec = s.record(s.builtin(Builtin::Section));
        assert_eq!(sec.slots[1].name, "number");
        assert_eq!(sec.slots[1].kind, SlotKind::Int { width: 1 });
    }

    #[test]
    fn interpretation_section_refs() {
        let s = schema(
            "section strings 7 { }
             r : (tag, a, b) { tag.value = 4; a.width = 2;
                 a.interpretation = sectionOffset strings; b.interpretation = sectionStride 7 -1; }",
        );
        let r = s.record(s.record_by_name(0, "r").unwrap());
        assert_eq!(r.slots[1].interp, Interp::SectionOffset(7));
        assert_eq!(
            r.slots[2].interp,
            Interp::SectionStride {
                section: 7,
                stride: -1
            }
        );
        assert_eq!(s.scope_of_section[7], Some(1));
    }

    #[test]
    fn errors_are_collected() {
        assert_eq!(
            codes("r : (tag, x) { }"),
            [
                "mtf::dtd::missing_tag_value",
                "mtf::dtd::missing_interpretation",
            ]
        );
        assert_eq!(
            codes("r : (tag) { tag.value = 4; }\nq : (tag) { tag.value = 4; }"),
            ["mtf::dtd::duplicate_tag"]
        );
        assert_eq!(codes("vfield : (x);"), ["mtf::dtd::reserved_name"]);
        assert_eq!(codes("a.b.width = 1;"), ["mtf::dtd::bad_property"]);
    }

    #[test]
    fn edit_distance_works() {
        assert_eq!(super::edit_distance("widht", "width"), 2);
        assert_eq!(super::edit_distance("value", "value"), 0);
        assert_eq!(super::edit_distance("", "abc"), 3);
    }
}
