//! Pass 6: the analysis declarations (extension `analysis/1`, docs/format.md §14) resolved into
//! [`Analysis`]: namespaces with their attributes, and per record type its actions, byte
//! counts, time, thread, site, monotonic series, depth and name fields.
//!
//! The declarations are DTD 1.0 properties (a 1.0 reader keeps and ignores them, §3.3), so the
//! parser already read them: this pass gives them meaning. One function per kind of value
//! (`space_name`, `field_ref`, `keyword`, `const_value`, `aexpr`), each reporting its own
//! span-carrying diagnostic with a did-you-mean where a name or keyword is close to a known one.

// Design (no new grammar): every declaration is a 1.0 property whose value is an identifier or
// an expression, which the 1.0 parser (`parse.rs`) already reads, one rule each. A syntax of
// its own would make every shipped DTD unreadable to a 1.0 reader (the independent reader of
// tests/independent among them) although the declarations never change how bytes decode; so the
// extension is ignored safely rather than refused, and its grammar is the kinds of values below.
//
// Design: a record's field roles are found per slot with the 1.0 priority rules (record body
// first, then section and global defaults by type name; the first source of each property name
// wins), captured while the slots are resolved (`Resolver::analysis_props`); namespace
// attributes are defaults by type name whose "type" is a namespace name. Nothing here changes a
// `Slot`: the 1.0 listing (`mtf dtd show`'s notes) keeps showing the properties as written.

mod record;
mod stacks;
mod values;

use std::collections::HashMap;

use super::collect::edit_distance;
use super::*;
use crate::dtd::analysis::*;
use record::RecCtx;

/// Field properties of extension analysis/1 (in record bodies, or by type name).
pub(super) const FIELD_PROPS: [&str; 21] = [
    "dead",
    "leaves",
    "resident",
    "defines",
    "undefines",
    "refers",
    "definesNext",
    "opens",
    "closes",
    "bytes",
    "when",
    "is",
    "isNot",
    "align",
    "thread",
    "time",
    "size",
    "monotonic",
    "site",
    "names",
    "depth",
];

/// Namespace properties (`NS.prop = …;` outside record bodies).
pub(super) const SPACE_PROPS: [&str; 9] = [
    "kind",
    "key",
    "shared",
    "null",
    "unknown",
    "unknownRefers",
    "atEnd",
    "close",
    "first",
];

/// Field properties of extension stacks/1 (docs/format.md §17), read when the DTD declares
/// `stacks.version`.
pub(super) const STACK_PROPS: [&str; 12] = [
    "parent",
    "frame",
    "function",
    "owner",
    "file",
    "line",
    "module",
    "address",
    "context",
    "stops",
    "skips",
    "suppresses",
];

const ROLE_PROPS: [(&str, ActionKind); 6] = [
    ("undefines", ActionKind::Undefine),
    ("closes", ActionKind::Close),
    ("refers", ActionKind::Refer),
    ("defines", ActionKind::Define),
    ("definesNext", ActionKind::DefineNext),
    ("opens", ActionKind::Open),
];

/// The nearest of `known` to `name` within edit distance 2.
fn near<'k>(name: &str, known: impl IntoIterator<Item = &'k str>) -> Option<&'k str> {
    known
        .into_iter()
        .map(|k| (edit_distance(name, k), k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

struct SpaceBuild {
    ns: Namespace,
    uses: usize,
    first_use: Span,
    /// Records that define its ids, with their site.
    site_srcs: Vec<(Span, Option<Site>)>,
    /// Whether some record uses it for ids (not nesting).
    ids_seen: bool,
    /// Whether `unknownRefers` was declared.
    refers_set: bool,
}

/// What pass 6 builds across records.
struct Build {
    version: u64,
    /// The declared version of extension stacks/1 (0: none).
    stacks: u64,
    /// `context` roles, checked once every record is seen: (record, namespace, where).
    contexts: Vec<(usize, SpaceId, Span)>,
    spaces: Vec<SpaceBuild>,
    records: Vec<RecordDecl>,
    /// A series is a field type name (`time` for record times) with its key: `trace` (None) or
    /// the key field's name; a keyed series is one sequence per value of the key.
    series: HashMap<(String, Option<String>), u32>,
    units: Vec<(TimeUnit, Span)>,
    /// Sites decided once every record is seen: (record, slot, namespace referred to).
    inherit: Vec<(usize, SlotId, SpaceId)>,
}
impl<'a> Resolver<'a> {
    /// Whether the DTD declares `analysis.version` (any value): the analysis properties are
    /// then reserved.
    pub(super) fn analysis_declared(&self) -> Option<&'a PropertyDef> {
        self.scopes[0]
            .defaults
            .get(&("analysis".to_string(), "version".to_string()))
            .map(|p| p.def)
    }

    /// Whether the DTD declares `stacks.version` (any value): the stacks properties are then
    /// reserved.
    pub(super) fn stacks_declared(&self) -> Option<&'a PropertyDef> {
        self.scopes[0]
            .defaults
            .get(&("stacks".to_string(), "version".to_string()))
            .map(|p| p.def)
    }

    fn bad(&mut self, msg: String, span: Span, help: Option<String>) {
        self.err(DtdError::BadAnalysis {
            msg,
            src: self.src(),
            span: sspan(span),
            help,
        });
    }

    /// Collect the analysis properties of one record's slots (called while its slots resolve).
    pub(super) fn capture_analysis(&mut self, d: DefId, rec: &Rec) {
        if self.analysis_declared().is_none() {
            return;
        }
        let mut props = Vec::new();
        let stacks = self.stacks_declared().is_some();
        for s in 1..rec.slots.len() {
            let mut seen = std::collections::HashSet::new();
            for p in self.extra_sources(rec, s) {
                let name = p.def.prop.name.as_str();
                let known = FIELD_PROPS.contains(&name) || (stacks && STACK_PROPS.contains(&name));
                if known && seen.insert(name) {
                    props.push((s, p.def));
                }
            }
        }
        self.analysis_props.insert(d, props);
    }

    /// Pass 6. `records[i]` is the record type resolved from `defs_of[i]`: the version, the
    /// namespaces the roles name, their attributes, each record's declarations
    /// (`record.rs`), then what needs every record seen (stored fields, sites, typos, the
    /// time unit).
    pub(super) fn resolve_analysis(
        &mut self,
        records: &[RecordType],
        defs_of: &[DefId],
    ) -> Analysis {
        let Some(vdef) = self.analysis_declared() else {
            self.undeclared_roles();
            return Analysis::default();
        };
        let Some(version) = self.analysis_version(vdef) else {
            return Analysis::default();
        };
        self.analysis_typos();
        let stacks = self.stacks_version();
        let mut b = Build {
            version,
            stacks,
            contexts: Vec::new(),
            spaces: Vec::new(),
            records: vec![RecordDecl::default(); records.len()],
            series: HashMap::new(),
            units: Vec::new(),
            inherit: Vec::new(),
        };
        self.create_spaces(records, defs_of, &mut b.spaces);
        self.space_attrs(records, &mut b.spaces);
        for (ri, rt) in records.iter().enumerate() {
            let props = self
                .analysis_props
                .get(&defs_of[ri])
                .cloned()
                .unwrap_or_default();
            if !props.is_empty() {
                b.records[ri] = self.record_decl(&RecCtx { ri, rt, props }, &mut b);
            }
        }
        self.check_contexts(&mut b);
        self.lookup_stores(records, &mut b);
        inherit_sites(&mut b);
        self.choose_sites(&mut b.spaces);
        self.single_use_spaces(&b.spaces);
        let time_unit = self.time_unit(&b.units);
        Analysis {
            version,
            namespaces: b.spaces.into_iter().map(|s| s.ns).collect(),
            records: b.records,
            time_unit,
            stacks: b.stacks,
        }
    }

    /// The value of `analysis.version`: an integer this reader knows, else reported.
    fn analysis_version(&mut self, vdef: &PropertyDef) -> Option<u64> {
        let value = match &vdef.value {
            PropValue::Expr(e) => match &e.kind {
                ast::ExprKind::Int(ast::IntLit { value: Some(v), .. }) => Some(*v),
                _ => None,
            },
            _ => None,
        };
        let Some(version) = value else {
            self.bad(
                "`analysis.version` expects an integer".into(),
                vdef.value.span(),
                Some("write `analysis.version = 1;`".into()),
            );
            return None;
        };
        if !(1..=ANALYSIS_VERSION).contains(&version) {
            self.warnings.push(DtdWarning::AnalysisIgnored {
                msg: format!(
                    "analysis declarations of version {version} are ignored: this reader knows versions 1 to {ANALYSIS_VERSION}"
                ),
                src: self.src(),
                span: sspan(vdef.span),
            });
            return None;
        }
        Some(version)
    }

    /// First pass over the records: the namespaces their roles name (created by their use).
    fn create_spaces(
        &mut self,
        records: &[RecordType],
        defs_of: &[DefId],
        spaces: &mut Vec<SpaceBuild>,
    ) {
        for d in defs_of.iter().take(records.len()) {
            let props = self.analysis_props.get(d).cloned().unwrap_or_default();
            for (_, p) in &props {
                let name = p.prop.name.as_str();
                let creates = ROLE_PROPS.iter().any(|(k, _)| *k == name) || name == "site";
                if !creates {
                    continue;
                }
                if let PropValue::Ident(id) = &p.value {
                    if name == "site" && id.name == "text" {
                        continue;
                    }
                    if id.name == "analysis" {
                        self.bad(
                            "`analysis` cannot name a namespace".into(),
                            id.span,
                            Some("it is the name of the extension's version declaration".into()),
                        );
                        continue;
                    }
                    space_of(spaces, &id.name, id.span);
                }
            }
        }
    }

    /// Namespace attributes (`NS.prop = …;`), in the order they are written.
    fn space_attrs(&mut self, records: &[RecordType], spaces: &mut [SpaceBuild]) {
        let mut attrs: Vec<&'a PropertyDef> = Vec::new();
        for sc in &self.scopes {
            for ((path, prop), p) in &sc.defaults {
                let stacks = prop == "temporaryReset" && self.stacks_declared().is_some();
                if (SPACE_PROPS.contains(&prop.as_str()) || stacks) && path != "analysis" {
                    attrs.push(p.def);
                }
            }
        }
        attrs.sort_by_key(|p| p.span.offset);
        for p in attrs {
            let path = p.path_string();
            let Some(si) = spaces.iter().position(|s| s.ns.name == path) else {
                // A default for a field type of that name is a 1.0 property, not ours.
                if records
                    .iter()
                    .any(|r| r.slots.iter().any(|s| s.type_name == path))
                {
                    continue;
                }
                let names: Vec<&str> = spaces.iter().map(|s| s.ns.name.as_str()).collect();
                let help = match near(&path, names.iter().copied()) {
                    Some(n) => format!("did you mean `{n}`?"),
                    None if names.is_empty() => {
                        "no field declares a namespace (`F.defines = NAME;` and the like)".into()
                    }
                    None => format!("declared namespaces: {}", names.join(", ")),
                };
                self.bad(
                    format!("`{path}.{}`: no namespace is named `{path}`", p.prop.name),
                    p.path[0].span,
                    Some(help),
                );
                continue;
            };
            self.space_attr(&mut spaces[si], p);
        }
    }

    /// Lookups need their stored fields in every record that defines the namespace.
    fn lookup_stores(&mut self, records: &[RecordType], b: &mut Build) {
        for (ri, rt) in records.iter().enumerate() {
            let defines: Vec<SpaceId> = defines_of(&b.records[ri])
                .into_iter()
                .map(|(sp, _)| sp)
                .collect();
            for sp in defines {
                let stored = b.spaces[sp as usize].ns.stored.clone();
                for (i, f) in stored.iter().enumerate() {
                    match field_by_name(rt, f) {
                        Some(slot) => b.records[ri].stores.push((sp, i as u16, slot)),
                        None => {
                            let msg = format!(
                                "record `{}` defines ids of `{}`, whose field `{f}` a byte count reads, but has no field `{f}`",
                                rt.name, b.spaces[sp as usize].ns.name
                            );
                            self.bad(msg, rt.span, None);
                        }
                    }
                }
            }
        }
    }

    /// Sites of each namespace: a namespace's ids take their names from one namespace.
    fn choose_sites(&mut self, spaces: &mut [SpaceBuild]) {
        for i in 0..spaces.len() {
            let mut chosen: Option<(Option<SpaceId>, bool, Span)> = None;
            for (span, site) in spaces[i].site_srcs.clone() {
                let (sp, text) = match site {
                    Some(Site::Inherited { space }) => {
                        // The sites of the namespace referred to (one level).
                        let from = &spaces[space as usize];
                        match from.site_srcs.first().and_then(|(_, s)| *s) {
                            Some(s @ Site::Field { .. }) => site_naming(s),
                            _ => (None, false),
                        }
                    }
                    Some(s) => site_naming(s),
                    None => continue,
                };
                match chosen {
                    None => chosen = Some((sp, text, span)),
                    Some((csp, ctext, _)) if csp == sp && ctext == text => {}
                    Some(_) => {
                        let msg = format!(
                            "the sites of namespace `{}` are named in two different ways",
                            spaces[i].ns.name
                        );
                        self.bad(msg, span, Some("every record that defines its ids must name its site through the same namespace (or all as text)".into()));
                    }
                }
            }
            if let Some((sp, text, _)) = chosen {
                spaces[i].ns.site_space = sp;
                spaces[i].ns.site_text = text;
            }
        }
    }

    /// A namespace named once only is likely a typo of another.
    fn single_use_spaces(&mut self, spaces: &[SpaceBuild]) {
        for (i, sb) in spaces.iter().enumerate() {
            if sb.uses != 1 {
                continue;
            }
            let others = spaces
                .iter()
                .enumerate()
                .filter(|(j, s)| *j != i && s.uses > 1)
                .map(|(_, s)| s.ns.name.as_str());
            if let Some(m) = near(&sb.ns.name, others) {
                self.warnings.push(DtdWarning::AnalysisTypo {
                    msg: format!(
                        "namespace `{}` is named only here; did you mean `{m}`?",
                        sb.ns.name
                    ),
                    src: self.src(),
                    span: sspan(sb.first_use),
                });
            }
        }
    }

    /// The time unit: the finest declared; a logical clock does not mix with real time.
    fn time_unit(&mut self, units: &[(TimeUnit, Span)]) -> Option<TimeUnit> {
        if let Some((_, span)) = units.iter().find(|(u, _)| *u == TimeUnit::Tick) {
            if units.iter().any(|(u, _)| *u != TimeUnit::Tick) {
                self.bad(
                    "a time in ticks (a logical clock) cannot be added to a time in real units".into(),
                    *span,
                    Some("declare every time field of the DTD in ticks, or every one in ns, us, ms or s".into()),
                );
            }
        }
        units
            .iter()
            .map(|(u, _)| *u)
            .min_by_key(|u| (u.nanos(), *u))
    }

    /// Without `analysis.version`, a role (`address.defines = block;`) is a 1.0 property that
    /// means nothing: say so once, at the first.
    fn undeclared_roles(&mut self) {
        let first = self
            .defs
            .iter()
            .flat_map(|d| d.extras.values().flatten())
            .map(|p| p.def)
            .filter(|p| ROLE_PROPS.iter().any(|(k, _)| *k == p.prop.name))
            .min_by_key(|p| p.span.offset);
        if let Some(p) = first {
            self.warnings.push(DtdWarning::AnalysisIgnored {
                msg: format!(
                    "`{}` is a declaration of extension analysis/1, which this DTD does not declare: it is ignored (add `analysis.version = 1;` to use it)",
                    p.prop.name
                ),
                src: self.src(),
                span: sspan(p.prop.span),
            });
        }
    }

    /// Warn about property names close to an analysis property (`undefine`, `atend`).
    fn analysis_typos(&mut self) {
        let mut seen = std::collections::HashSet::new();
        let mut found: Vec<&'a PropertyDef> = Vec::new();
        for d in &self.defs {
            found.extend(d.extras.values().flatten().map(|p| p.def));
        }
        for sc in &self.scopes {
            found.extend(sc.extras.values().flatten().map(|p| p.def));
        }
        found.sort_by_key(|p| p.span.offset);
        for p in found {
            let name = p.prop.name.as_str();
            let ours = FIELD_PROPS.contains(&name) || SPACE_PROPS.contains(&name);
            let stacks = STACK_PROPS.contains(&name) || name == "temporaryReset";
            if ours || stacks || name == "version" {
                continue;
            }
            // Short names are close to many words: one edit for them, two for longer ones.
            let max = if name.chars().count() <= 5 { 1 } else { 2 };
            let known = FIELD_PROPS.iter().chain(SPACE_PROPS.iter()).copied();
            let n = known
                .map(|k| (edit_distance(name, k), k))
                .filter(|(d, _)| *d <= max)
                .min_by_key(|(d, _)| *d)
                .map(|(_, k)| k);
            if let Some(n) = n {
                if seen.insert(p.prop.span.offset) {
                    self.warnings.push(DtdWarning::PropertyTypo {
                        name: name.to_string(),
                        suggestion: n.to_string(),
                        src: self.src(),
                        span: sspan(p.prop.span),
                    });
                }
            }
        }
    }

    fn space_attr(&mut self, sb: &mut SpaceBuild, p: &'a PropertyDef) {
        sb.uses += 1;
        let ns = &mut sb.ns;
        match p.prop.name.as_str() {
            "kind" => match self.keyword(p, &["ids", "table", "nesting"]) {
                Some("table") => ns.kind = SpaceKind::Table,
                Some("nesting") => ns.kind = SpaceKind::Nesting,
                _ => {}
            },
            "key" => match &p.value {
                PropValue::Ident(id) => ns.key = Some(id.name.clone()),
                _ => self.bad(
                    format!("`{}.key` expects a field name", p.path_string()),
                    p.value.span(),
                    Some(
                        "e.g. `block.key = heap;`: ids are per value of each record's `heap`"
                            .into(),
                    ),
                ),
            },
            "shared" => ns.shared = self.keyword(p, &["yes", "no"]) == Some("yes"),
            "null" => ns.null = self.const_value(p),
            "unknown" => {
                if let Some(s) = self.severity(p) {
                    ns.unknown = s;
                    if !sb.refers_set {
                        ns.unknown_refers = s;
                    }
                }
            }
            "atEnd" => {
                if let Some(s) = self.severity(p) {
                    ns.at_end = s;
                }
            }
            "close" => ns.close_same = self.keyword(p, &["same", "any"]) != Some("any"),
            "first" => ns.first = self.const_value(p).unwrap_or(0),
            "temporaryReset" => ns.temporary_reset = self.const_value(p),
            "unknownRefers" => {
                if let Some(s) = self.severity(p) {
                    ns.unknown_refers = s;
                    sb.refers_set = true;
                }
            }
            _ => {}
        }
    }
}

/// The namespace named `name`, created at its first use.
fn space_of(spaces: &mut Vec<SpaceBuild>, name: &str, span: Span) -> SpaceId {
    if let Some(i) = spaces.iter().position(|s| s.ns.name == name) {
        spaces[i].uses += 1;
        return i as SpaceId;
    }
    spaces.push(SpaceBuild {
        ns: Namespace {
            name: name.to_string(),
            kind: SpaceKind::Ids,
            key: None,
            shared: false,
            null: None,
            unknown: Severity::Error,
            unknown_refers: Severity::Error,
            at_end: Severity::Info,
            close_same: true,
            first: 0,
            sized: false,
            site_space: None,
            site_text: false,
            stored: Vec::new(),
            tree: false,
            temporary_reset: None,
            span,
        },
        uses: 1,
        first_use: span,
        site_srcs: Vec::new(),
        ids_seen: false,
        refers_set: false,
    });
    (spaces.len() - 1) as SpaceId
}

/// How a site names: through a namespace, or as text.
fn site_naming(site: Site) -> (Option<SpaceId>, bool) {
    match site {
        Site::Field { space: None, .. } => (None, true),
        Site::Field { space: Some(s), .. } => (Some(s), false),
        Site::Inherited { .. } => (None, false),
    }
}

/// A site of a referred namespace that has no sites of its own is the referring field.
fn inherit_sites(b: &mut Build) {
    for (ri, slot, space) in std::mem::take(&mut b.inherit) {
        if !b.spaces[space as usize].site_srcs.is_empty() {
            continue;
        }
        let site = Site::Field {
            slot,
            space: Some(space),
        };
        b.records[ri].site = Some(site);
        for sb in b.spaces.iter_mut() {
            for (_, s) in sb.site_srcs.iter_mut() {
                if *s == Some(Site::Inherited { space }) {
                    *s = Some(site);
                }
            }
        }
    }
}

/// The namespaces a record's actions define ids of, with the declarations' spans.
fn defines_of(rd: &RecordDecl) -> Vec<(SpaceId, Span)> {
    rd.actions
        .iter()
        .filter(|a| matches!(a.kind, ActionKind::Define | ActionKind::DefineNext))
        .map(|a| (a.space, a.span))
        .collect()
}

/// A field of a record by display name, else by type name (the first).
fn field_by_name(rt: &RecordType, name: &str) -> Option<SlotId> {
    rt.slot_by_name(name)
        .or_else(|| rt.slot_where(|s| s.type_name == name))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{codes, schema};
    use crate::dtd::analysis::*;
    use crate::dtd::parse_str;

    const BASE: &str = "size.width = 4; size.interpretation = none;
        address.width = 4; address.interpretation = none;
        heap.interpretation = default 0;
        func.interpretation = default 0; nmemb.interpretation = default 0;";

    fn with(decls: &str) -> String {
        format!("{BASE}\n{decls}")
    }

    /// The help texts of a DTD's errors.
    fn helps(text: &str) -> Vec<String> {
        let e = parse_str("t.dtd", text).expect_err("should fail");
        e.errors
            .iter()
            .map(|e| {
                use miette::Diagnostic;
                e.help().map(|h| h.to_string()).unwrap_or_default()
            })
            .collect()
    }

    #[test]
    fn without_the_version_the_properties_are_plain_1_0() {
        let s = schema(&with(
            "a : (tag, address) { tag.value = 4; address.defines = block; }",
        ));
        assert!(!s.analysis.is_declared());
        let a = s.record(s.record_by_name(0, "a").unwrap());
        assert_eq!(
            a.slots[1].extra,
            [("defines".to_string(), "block".to_string())]
        );
    }

    #[test]
    fn another_version_is_ignored_with_a_warning() {
        let l = parse_str(
            "t.dtd",
            &with("analysis.version = 4; a : (tag, address) { tag.value = 4; address.defines = nowhere; }"),
        )
        .unwrap();
        assert!(!l.schema.analysis.is_declared());
        assert_eq!(l.warnings.len(), 1);
        assert!(l.warnings[0].to_string().contains("version 4"));
    }

    #[test]
    fn version_2_marks_undefines_dead_and_leaves_null() {
        let s = schema(&with(
            "analysis.version = 2; id.width = 4; id.interpretation = none;
             r : (tag, size, id) { tag.value = 5; id.undefines = block; id.dead = null; id.defines = block; id.bytes = size.value; }
             z : (tag, size, id) { tag.value = 6; id.undefines = block; id.dead = null; id.leaves = null; }
             f : (tag, id) { tag.value = 7; id.undefines = block; }",
        ));
        let a = &s.analysis;
        assert_eq!(a.version, 2);
        let flags = |name: &str| -> Vec<(ActionKind, bool, bool)> {
            a.record(s.record_by_name(0, name).unwrap())
                .actions
                .iter()
                .map(|x| (x.kind, x.dead_null, x.leaves_null))
                .collect()
        };
        assert_eq!(
            flags("r"),
            [
                (ActionKind::Undefine, true, false),
                (ActionKind::Define, false, false)
            ]
        );
        assert_eq!(flags("z"), [(ActionKind::Undefine, true, true)]);
        assert_eq!(flags("f"), [(ActionKind::Undefine, false, false)]);
    }

    #[test]
    fn dead_and_leaves_need_version_2_null_and_an_undefine() {
        let err = |decls: &str| -> String {
            let text = with(&format!("id.width = 4; id.interpretation = none; {decls}"));
            let e = parse_str("t.dtd", &text).expect_err("should fail");
            e.errors
                .iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let e = err("analysis.version = 1; f : (tag, id) { tag.value = 7; id.undefines = block; id.dead = null; }");
        assert!(
            e.contains("`f.id.dead` is a declaration of analysis version 2")
                || e.contains("is a declaration of analysis version 2"),
            "{e}"
        );
        let e = err("analysis.version = 2; f : (tag, id) { tag.value = 7; id.undefines = block; id.leaves = 0; }");
        assert!(e.contains("expects `null`"), "{e}");
        let e = err("analysis.version = 2; f : (tag, id) { tag.value = 7; id.defines = block; id.dead = null; }");
        assert!(e.contains("is for a field that undefines an id"), "{e}");
    }

    #[test]
    fn version_3_declares_the_resident_bytes_of_a_freed_block() {
        let s = schema(&with(
            "analysis.version = 3; id.width = 4; id.interpretation = none;
             has.interpretation = default 0; present.interpretation = default 0;
             present.resident = yes; present.when = has; present.is = 1;
             f : (tag, id, has, present) { tag.value = 7; id.undefines = block; }
             a : (tag, size, id) { tag.value = 8; id.defines = block; id.bytes = size.value; }",
        ));
        let a = &s.analysis;
        assert_eq!(a.version, 3);
        let f = a.record(s.record_by_name(0, "f").unwrap());
        assert_eq!(f.resident, Some(3));
        assert_eq!(f.guards.len(), 1, "guarded by `has`");
        assert_eq!(a.record(s.record_by_name(0, "a").unwrap()).resident, None);
        let err = |decls: &str| -> String {
            let text = with(&format!(
                "id.width = 4; id.interpretation = none; p.interpretation = default 0; {decls}"
            ));
            let e = parse_str("t.dtd", &text).expect_err("should fail");
            e.errors
                .iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let e = err("analysis.version = 2; f : (tag, id, p) { tag.value = 7; id.undefines = block; p.resident = yes; }");
        assert!(e.contains("is a declaration of analysis version 3"), "{e}");
        let e = err("analysis.version = 3; f : (tag, id, p) { tag.value = 7; id.defines = block; p.resident = yes; }");
        assert!(e.contains("is for a record that undefines an id"), "{e}");
    }

    #[test]
    fn roles_resolve_in_order() {
        let s = schema(&with(
            "analysis.version = 1; block.key = heap; block.null = 0;
             r : (tag, size, old : address, address, heap, func, nmemb) {
                 tag.value = 5;
                 address.defines = block; old.undefines = block;
                 address.bytes = size.value;
                 nmemb.bytes = nmemb.value * size.value; nmemb.when = func; nmemb.is = 1;
             }",
        ));
        let a = &s.analysis;
        assert_eq!(a.version, 1);
        let block = a.space_by_name("block").unwrap();
        let ns = &a.namespaces[block as usize];
        assert_eq!(ns.key.as_deref(), Some("heap"));
        assert_eq!(ns.null, Some(0));
        assert!(ns.sized);
        let rd = a.record(s.record_by_name(0, "r").unwrap());
        // Undefines before defines, whatever the order written.
        let kinds: Vec<ActionKind> = rd.actions.iter().map(|x| x.kind).collect();
        assert_eq!(kinds, [ActionKind::Undefine, ActionKind::Define]);
        assert_eq!(rd.actions[0].slot, 2);
        assert_eq!(rd.actions[0].key, Some(4));
        assert_eq!(rd.bytes.len(), 2);
        assert_eq!(rd.bytes[0].expr, AExpr::Field(1));
        assert_eq!(rd.bytes[1].when, Some((5, 1)));
    }

    #[test]
    fn lookups_keep_fields_of_the_defining_record() {
        let s = schema(&with(
            "analysis.version = 1; trace.kind = table; info.atEnd = normal;
             trace.width = 4; trace.interpretation = none;
             i : (tag, size, trace) { tag.value = 4; size.definesNext = info; trace.site = trace; }
             a : (tag, address) { tag.value = 5; address.refers = info; address.defines = block;
                                  address.bytes = info.size.value; address.site = info; }",
        ));
        let a = &s.analysis;
        let info = a.space_by_name("info").unwrap();
        let block = a.space_by_name("block").unwrap();
        assert_eq!(a.namespaces[info as usize].stored, ["size"]);
        let i = a.record(s.record_by_name(0, "i").unwrap());
        assert_eq!(i.stores, [(info, 0, 1)]);
        let r = a.record(s.record_by_name(0, "a").unwrap());
        assert_eq!(
            r.bytes[0].expr,
            AExpr::Lookup {
                space: info,
                stored: 0
            }
        );
        assert_eq!(r.site, Some(Site::Inherited { space: info }));
        let trace = a.space_by_name("trace").unwrap();
        assert_eq!(a.namespaces[block as usize].site_space, Some(trace));
        assert_eq!(a.namespaces[trace as usize].kind, SpaceKind::Table);
    }

    #[test]
    fn times_take_the_finest_unit() {
        let s = schema(
            "analysis.version = 1; sec.width = 4; sec.interpretation = none;
             ns.width = 4; ns.interpretation = none;
             sec.time = s; ns.time = ns; sec.monotonic = trace;
             r : (tag, sec, ns, oh : sec) { tag.value = 4; oh.time = none; }",
        );
        let a = &s.analysis;
        assert_eq!(a.time_unit, Some(TimeUnit::Ns));
        let rd = a.record(s.record_by_name(0, "r").unwrap());
        assert_eq!(rd.time, [(1, TimeUnit::S), (2, TimeUnit::Ns)]);
        // One series on the record's time; `oh` is no time and has none.
        assert_eq!(rd.monotonic.len(), 1);
        assert_eq!(rd.monotonic[0].slot, None);
    }

    #[test]
    fn errors_name_the_nearest_namespace_field_or_keyword() {
        let text = with(
            "analysis.version = 1; blok.key = heap; block.unknown = norml;
             a : (tag, size, address) { tag.value = 4; address.defines = block;
                  address.bytes = sise.value; address.time = nsec; }",
        );
        assert_eq!(
            codes(&text),
            ["mtf::dtd::bad_analysis"; 4],
            "{:?}",
            helps(&text)
        );
        let h = helps(&text);
        assert_eq!(h[0], "did you mean `block`?");
        assert_eq!(h[1], "did you mean `normal`?");
        assert_eq!(h[2], "did you mean `size`?");
        assert_eq!(h[3], "did you mean `ns`?");
    }

    #[test]
    fn guards_of_roles_and_times() {
        // A failed realloc keeps its block: `old`'s undefine applies unless `address` is 0; a
        // time carried only when a flag says so.
        let s = schema(&with(
            "analysis.version = 1; t.width = 8; t.interpretation = none;
             timed.interpretation = default 0;
             r : (tag, size, old : address, address, timed, t) { tag.value = 4;
                 old.undefines = block; address.defines = block; address.bytes = size.value;
                 old.when = address; old.isNot = 0;
                 t.time = ns; t.when = timed; t.is = 1; }",
        ));
        let rd = &s.analysis.records[s.record_by_name(0, "r").unwrap() as usize];
        let g = |slot: u16| rd.guards.iter().find(|(s, _)| *s == slot).map(|(_, g)| *g);
        assert_eq!(
            g(2),
            Some(Guard {
                slot: 3,
                value: 0,
                negated: true
            })
        );
        assert_eq!(
            g(5),
            Some(Guard {
                slot: 4,
                value: 1,
                negated: false
            })
        );
        let vals = |address: u64, timed: u64| {
            move |s: u16| Some([0, 16, 0x10, address, timed, 7][s as usize])
        };
        assert!(rd.applies(2, vals(0x20, 0)));
        assert!(!rd.applies(2, vals(0, 0)));
        assert!(rd.applies(5, vals(0, 1)));
        assert!(!rd.applies(5, vals(0, 0)));
        assert!(rd.applies(3, vals(0, 0))); // no guard
    }

    #[test]
    fn contradictions_are_errors() {
        // A keyed namespace used by a record without the key.
        let text = with(
            "analysis.version = 1; frame.key = thread;
             e : (tag, address) { tag.value = 4; address.opens = frame; }",
        );
        assert_eq!(codes(&text), ["mtf::dtd::bad_analysis"]);
        // Ids and nesting in one namespace.
        let text = with(
            "analysis.version = 1;
             a : (tag, address) { tag.value = 4; address.defines = x; }
             e : (tag, address) { tag.value = 5; address.opens = x; }",
        );
        assert_eq!(codes(&text), ["mtf::dtd::bad_analysis"]);
        // A byte count in a record that defines nothing, a guard that guards nothing (no byte
        // count, role or time on its field).
        let text = with(
            "analysis.version = 1;
             a : (tag, size, address) { tag.value = 4; address.bytes = size.value;
                                        address.refers = x; size.when = address; size.is = 1; }",
        );
        assert_eq!(codes(&text), ["mtf::dtd::bad_analysis"; 2]);
        // A guard with both `is` and `isNot`, or neither; `isNot` without `when`; `isNot` on a
        // byte count.
        for body in [
            "address.when = size; address.is = 1; address.isNot = 2;",
            "address.when = size;",
            "address.isNot = 2;",
        ] {
            let text = with(&format!(
                "analysis.version = 1;
                 a : (tag, size, address) {{ tag.value = 4; address.undefines = x; {body} }}"
            ));
            assert_eq!(codes(&text), ["mtf::dtd::bad_analysis"], "{body}");
        }
        let text = with(
            "analysis.version = 1;
             a : (tag, size, address) { tag.value = 4; address.defines = x;
                 address.bytes = size.value; address.when = size; address.isNot = 0; }",
        );
        assert!(codes(&text).contains(&"mtf::dtd::bad_analysis".to_string()));
        // Ticks and seconds do not add up.
        let text = "analysis.version = 1; a.width = 4; a.interpretation = none;
             b.width = 4; b.interpretation = none;
             r : (tag, a, b) { tag.value = 4; a.time = tick; b.time = s; }";
        assert_eq!(codes(text), ["mtf::dtd::bad_analysis"]);
        // A role on a byte string.
        let text = "analysis.version = 1; len.width = 1; len.interpretation = none;
             txt.width = len.value; txt.interpretation = none;
             r : (tag, len, txt) { tag.value = 4; txt.defines = x; }";
        assert_eq!(codes(text), ["mtf::dtd::bad_analysis"]);
    }

    #[test]
    fn typos_are_warnings() {
        let l = parse_str(
            "t.dtd",
            &with(
                "analysis.version = 1; block.null = 0; block.nul = 0;
                 a : (tag, address) { tag.value = 4; address.defines = block; }
                 f : (tag, address) { tag.value = 5; address.undefine = block; address.undefines = blocks; }",
            ),
        )
        .unwrap();
        let w: Vec<String> = l.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            w,
            [
                "unknown property `nul` (did you mean `null`?)",
                "unknown property `undefine` (did you mean `undefines`?)",
                "namespace `blocks` is named only here; did you mean `block`?",
            ]
        );
    }

    #[test]
    fn every_shipped_dtd_declares_analysis() {
        for e in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/dtds")).unwrap() {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap();
            let l = parse_str(&p.display().to_string(), &text).unwrap();
            assert!(l.schema.analysis.is_declared(), "{}", p.display());
            assert!(l.warnings.is_empty(), "{}: {:?}", p.display(), l.warnings);
        }
    }
}
