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

// Design: one `Resolver` holds the state shared by the passes (definitions, scopes, errors);
// each pass is an `impl Resolver` block in its own file, and this file only declares the state
// and drives the passes (`resolve`, `build`). Spans of prelude nodes never become primary labels: the prelude sets every reserved property
// of its own fields in its bodies, which take precedence over anything a user DTD says.

mod analysis;
mod collect;
mod expand;
mod show;
mod slots;
mod tags;

use std::collections::HashMap;

use super::ast::{self, FieldItem, FieldList, FieldType, Item, PropValue, PropertyDef};
use super::error::{sspan, DtdError, DtdWarning, Src, BUILTIN_HELP};
use super::ids::{RecordId, SlotId, Span};
use super::parse::MAX_DEPTH;
use super::schema::*;

pub use show::show_expr;

pub use crate::limits::{MAX_FIELDS, MAX_TOTAL_FIELDS};

/// The reserved and display property names, for typo warnings.
const KNOWN_PROPS: [&str; 5] = ["width", "interpretation", "value", "display", "liveset"];

/// Names of the built-in record types.
pub const BUILTIN_NAMES: [&str; 4] = ["vfield", "comment", "section", "metadata"];

/// One DTD text to resolve, with the name and text its spans point into.
pub struct ParsedDtd<'a> {
    /// The parsed text.
    pub dtd: &'a ast::Dtd,
    /// The text itself (for showing unknown property values).
    pub text: &'a str,
}

/// Resolve a user DTD together with the prelude. `src` is the user DTD's source, used in
/// diagnostics.
pub fn resolve(
    name: &str,
    prelude: ParsedDtd<'_>,
    user: ParsedDtd<'_>,
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
        analysis_props: HashMap::new(),
        fragments: Vec::new(),
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
    /// `liveset = N` (extension `live/1`).
    LiveSet(&'a ast::Expr),
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

/// The non-reserved properties by path or type name, in source order (an index of the
/// `PVal::Extra` entries of a `PropMap`, so that a slot finds its own without a scan).
type Extras<'a> = HashMap<String, Vec<Prop<'a>>>;

struct Def<'a> {
    ast: &'a ast::RecordDef,
    scope: usize,
    prelude: bool,
    body: PropMap<'a>,
    /// The non-reserved properties of `body`.
    extras: Extras<'a>,
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
    /// The non-reserved properties of `defaults`.
    extras: Extras<'a>,
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
    /// The analysis properties of each taggable record's slots (extension analysis/1), by
    /// slot, first source per property name (see `analysis.rs`).
    analysis_props: HashMap<DefId, Vec<(usize, &'a PropertyDef)>>,
    /// The fragments the user DTD includes (docs/format.md §3.5): where each one's text is in
    /// `prelude_text`, its name, and the `include` that took it in (in the user's text).
    fragments: Vec<(std::ops::Range<usize>, &'static str, Span)>,
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
    /// Scalar fields made so far: the slots of the type (§4.4), `tag` included.
    slots: usize,
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
    /// Rank of the level each interpretation was found at (see `find_ranked`).
    interp_rank: Vec<usize>,
    widths: Vec<WState>,
}

impl<'a> Resolver<'a> {
    pub(super) fn err(&mut self, e: DtdError) {
        self.errors.push(e);
    }

    pub(super) fn src(&self) -> Src {
        self.src.clone()
    }

    // ---- pass 4: slots and properties -------------------------------------------------------

    pub(super) fn build(&mut self, name: &str) -> Option<Schema> {
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
        let mut defs_of = vec![0; records.len()];
        for (d, r) in &rec_of_def {
            defs_of[*r] = *d;
        }
        let analysis = self.resolve_analysis(&records, &defs_of);
        if !self.errors.is_empty() {
            return None;
        }
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
            analysis,
        })
    }
}

#[cfg(test)]
pub(super) mod tests {
    use crate::dtd::{parse_str, Builtin, Schema, SlotKind};

    /// Resolve DTD text that must be valid.
    pub(crate) fn schema(text: &str) -> Schema {
        match parse_str("t.dtd", text) {
            Ok(l) => l.schema,
            Err(e) => panic!("{}", crate::dtd::render_plain(&e)),
        }
    }

    /// The error codes of DTD text that must be invalid.
    pub(crate) fn codes(text: &str) -> Vec<String> {
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
    fn user_types_do_not_leak_into_the_prelude() {
        let s = schema("length : (x); number : (x); x.width = 1; x.interpretation = none;");
        let sec = s.record(s.builtin(Builtin::Section));
        assert_eq!(sec.slots[1].name, "number");
        assert_eq!(sec.slots[1].kind, SlotKind::Int { width: 1 });
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
}
