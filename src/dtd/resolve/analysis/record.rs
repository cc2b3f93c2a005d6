//! Pass 6, per record: one record's analysis declarations, one function per kind (roles and
//! their `null` marks, byte counts, guards, yes/no roles, times, monotonic series, depths,
//! names, site), in the order their diagnostics are reported.

use super::super::*;
use super::{defines_of, field_by_name, near, Build, SpaceBuild, ROLE_PROPS};
use crate::dtd::analysis::*;

/// One record being resolved: its type and the analysis properties of its slots.
pub(super) struct RecCtx<'r, 'a> {
    pub(super) ri: usize,
    pub(super) rt: &'r RecordType,
    pub(super) props: Vec<(usize, &'a PropertyDef)>,
}

impl<'a> RecCtx<'_, 'a> {
    /// The slots declaring property `name`, with the declaration.
    pub(super) fn by_prop(&self, name: &str) -> Vec<(usize, &'a PropertyDef)> {
        self.props
            .iter()
            .filter(|(_, p)| p.prop.name == name)
            .map(|(s, p)| (*s, *p))
            .collect()
    }

    /// Whether slot `s` declares property `name`.
    fn has(&self, s: usize, name: &str) -> bool {
        self.props
            .iter()
            .any(|(t, p)| *t == s && p.prop.name == name)
    }
}

/// The order actions apply in (§14.1): undefines and closes, then references, then defines and
/// opens, each group in field order (a stable sort: one field's roles keep the order of
/// `ROLE_PROPS`).
fn sort_actions(actions: &mut [Action]) {
    actions.sort_by_key(|a| {
        let group = match a.kind {
            ActionKind::Undefine | ActionKind::Close => 0,
            ActionKind::Refer => 1,
            ActionKind::Define | ActionKind::DefineNext | ActionKind::Open => 2,
        };
        (group, a.slot)
    });
}

impl<'a> Resolver<'a> {
    /// Every declaration of one record.
    pub(super) fn record_decl(&mut self, rec: &RecCtx<'_, 'a>, b: &mut Build) -> RecordDecl {
        let mut rd = RecordDecl::default();
        self.roles(rec, &b.spaces, &mut rd);
        self.null_marks(rec, b.version, &mut rd);
        sort_actions(&mut rd.actions);
        self.space_kinds(&rd, &mut b.spaces);
        let defines = defines_of(&rd);
        for (s, p) in rec.by_prop("bytes") {
            if let Some(bytes) = self.byte_count(rec, s, p, &defines, &mut b.spaces, &rd) {
                rd.bytes.push(bytes);
            }
        }
        self.guards(rec, &mut rd);
        self.flags(rec, &mut rd);
        self.resident(rec, b.version, &mut rd);
        self.times(rec, &mut b.units, &mut rd);
        for (s, p) in rec.by_prop("monotonic") {
            if let Some(m) = self.monotonic(rec, s, p, &rd, &mut b.series) {
                rd.monotonic.push(m);
            }
        }
        self.depths(rec, &b.spaces, &mut rd);
        self.names(rec, &defines, &b.spaces, &mut rd);
        self.site(rec, &defines, b, &mut rd);
        if b.stacks > 0 {
            self.stack_roles(rec, &defines, b, &mut rd);
        }
        rd
    }

    /// Roles (`F.defines = NS;` and the like): the record's actions.
    fn roles(&mut self, rec: &RecCtx<'_, 'a>, spaces: &[SpaceBuild], rd: &mut RecordDecl) {
        let rt = rec.rt;
        for (kw, kind) in ROLE_PROPS {
            for (s, p) in rec.by_prop(kw) {
                let Some(space) = self.space_value(spaces, p) else {
                    continue;
                };
                if !self.int_slot(rt, s, p) {
                    continue;
                }
                let ns = &spaces[space as usize].ns;
                let key = match &ns.key {
                    Some(k) => match field_by_name(rt, k) {
                        Some(ks) => Some(ks),
                        None => {
                            let msg = format!(
                                "record `{}` uses namespace `{}`, which is keyed by `{k}`, but has no field `{k}`",
                                rt.name, ns.name
                            );
                            self.bad(msg, p.span, Some(format!("add `{k}` to the record, or declare the namespace without `key`")));
                            continue;
                        }
                    },
                    None => None,
                };
                rd.actions.push(Action {
                    kind,
                    space,
                    slot: s as SlotId,
                    key,
                    dead_null: false,
                    leaves_null: false,
                    span: p.span,
                });
            }
        }
    }

    /// `F.dead = null;` and `F.leaves = null;` (version 2): on a field that undefines an id.
    fn null_marks(&mut self, rec: &RecCtx<'_, 'a>, version: u64, rd: &mut RecordDecl) {
        for (s, p) in rec.by_prop("dead").into_iter().chain(rec.by_prop("leaves")) {
            let prop = p.prop.name.as_str();
            if version < 2 {
                self.bad(
                    format!(
                        "`{}.{prop}` is a declaration of analysis version 2",
                        p.path_string()
                    ),
                    p.span,
                    Some("write `analysis.version = 2;`".into()),
                );
                continue;
            }
            let null = matches!(&p.value, PropValue::Ident(id) if id.name == "null");
            if !null {
                self.bad(
                    format!("`{}.{prop}` expects `null`", p.path_string()),
                    p.value.span(),
                    Some(format!("write `F.{prop} = null;`")),
                );
                continue;
            }
            let mut found = false;
            for a in rd.actions.iter_mut() {
                if a.slot == s as SlotId && a.kind == ActionKind::Undefine {
                    if prop == "dead" {
                        a.dead_null = true;
                    } else {
                        a.leaves_null = true;
                    }
                    found = true;
                }
            }
            if !found {
                self.bad(
                    format!(
                        "`{}.{prop}` is for a field that undefines an id",
                        p.path_string()
                    ),
                    p.span,
                    Some("declare `F.undefines = NS;` on the same field".into()),
                );
            }
        }
    }

    /// The kinds of the namespaces used: ids, nesting, or a table (which cannot nest).
    fn space_kinds(&mut self, rd: &RecordDecl, spaces: &mut [SpaceBuild]) {
        for a in &rd.actions {
            let sb = &mut spaces[a.space as usize];
            let nesting = matches!(a.kind, ActionKind::Open | ActionKind::Close);
            let name = &sb.ns.name;
            match (sb.ns.kind, nesting) {
                (SpaceKind::Ids, true) if sb.ids_seen => {
                    let msg = format!(
                        "namespace `{name}` is used both for ids (defines, undefines, refers) and for nesting (opens, closes)"
                    );
                    self.bad(msg, a.span, Some("use two namespaces".into()));
                }
                (SpaceKind::Ids, true) => sb.ns.kind = SpaceKind::Nesting,
                (SpaceKind::Nesting, false) => {
                    let msg = format!(
                        "namespace `{name}` is used both for nesting (opens, closes) and for ids (defines, undefines, refers)"
                    );
                    self.bad(msg, a.span, Some("use two namespaces".into()));
                }
                (SpaceKind::Table, true) => {
                    let msg = format!("namespace `{name}` is a table and cannot nest");
                    self.bad(msg, a.span, None);
                }
                _ => {}
            }
            if !nesting {
                sb.ids_seen = true;
            }
        }
    }

    /// One byte count (`F.bytes = EXPR;`) with its guard (`F.when`, `F.is`).
    fn byte_count(
        &mut self,
        rec: &RecCtx<'_, 'a>,
        s: usize,
        p: &'a PropertyDef,
        defines: &[(SpaceId, Span)],
        spaces: &mut [SpaceBuild],
        rd: &RecordDecl,
    ) -> Option<Bytes> {
        let rt = rec.rt;
        let PropValue::Expr(e) = &p.value else {
            self.bad(
                format!("`{}.bytes` expects an expression", p.path_string()),
                p.value.span(),
                Some("e.g. `address.bytes = size.value;` or `nmemb.value * size.value`".into()),
            );
            return None;
        };
        let expr = self.aexpr(rt, rd, spaces, e)?;
        let w = rec.by_prop("when").into_iter().find(|(ws, _)| *ws == s);
        let i = rec.by_prop("is").into_iter().find(|(is, _)| *is == s);
        let when = match (w, i) {
            (None, None) => None,
            (Some((_, wp)), Some((_, ip))) => {
                let (Some(ws), Some(v)) = (self.field_value_ref(rt, wp), self.const_value(ip))
                else {
                    return None;
                };
                Some((ws, v))
            }
            (Some((_, p)), None) | (None, Some((_, p))) => {
                self.bad(
                    format!("`{}.when` and `{}.is` go together", p.path_string(), p.path_string()),
                    p.span,
                    Some("e.g. `nmemb.when = func; nmemb.is = 1;`: the byte count applies when `func` is 1".into()),
                );
                return None;
            }
        };
        self.one_define(rt, p, defines, spaces)?;
        spaces[defines[0].0 as usize].ns.sized = true;
        Some(Bytes { expr, when })
    }

    /// §14.3: a record with a byte count defines exactly one id.
    fn one_define(
        &mut self,
        rt: &RecordType,
        p: &PropertyDef,
        defines: &[(SpaceId, Span)],
        spaces: &[SpaceBuild],
    ) -> Option<()> {
        if defines.is_empty() {
            self.bad(
                format!(
                    "record `{}` declares a byte count but defines no id",
                    rt.name
                ),
                p.span,
                Some("add `F.defines = NAMESPACE;` on the field that holds the id".into()),
            );
            return None;
        }
        if defines.len() > 1 {
            let msg = if defines.iter().all(|(d, _)| *d == defines[0].0) {
                format!(
                    "record `{}` declares a byte count and defines {} ids of `{}`: which one it counts is unclear",
                    rt.name,
                    defines.len(),
                    spaces[defines[0].0 as usize].ns.name
                )
            } else {
                format!("record `{}` declares a byte count and defines ids in two namespaces: which one it counts is unclear", rt.name)
            };
            self.bad(
                msg,
                p.span,
                Some(
                    "a record with a byte count defines exactly one id (docs/format.md §14.3)"
                        .into(),
                ),
            );
            return None;
        }
        Some(())
    }

    /// Guards of fields without a byte count (their roles and time), and the guards' own rules.
    fn guards(&mut self, rec: &RecCtx<'_, 'a>, rd: &mut RecordDecl) {
        let (whens, iss, nots) = (rec.by_prop("when"), rec.by_prop("is"), rec.by_prop("isNot"));
        for (s, p) in nots.iter() {
            if rec.has(*s, "bytes") {
                self.bad(
                    format!("`{}.isNot` on a byte count", p.path_string()),
                    p.span,
                    Some("a byte count's guard is `when` with `is`".into()),
                );
            }
        }
        for (s, wp) in whens.iter() {
            if rec.has(*s, "bytes") {
                continue;
            }
            let i = iss.iter().find(|(is, _)| is == s);
            let n = nots.iter().find(|(is, _)| is == s);
            if let Some(g) = self.guard(rec, rd, *s, wp, i.or(n), i.is_some() == n.is_some()) {
                rd.guards.push((*s as SlotId, g));
            }
        }
        for (s, p) in iss.iter().chain(nots.iter()) {
            if !rec.has(*s, "bytes") && !whens.iter().any(|(w, _)| w == s) {
                self.bad(
                    format!(
                        "`{}.{}` without `{}.when`",
                        p.path_string(),
                        p.prop.name,
                        p.path_string()
                    ),
                    p.span,
                    Some("e.g. `nmemb.when = func; nmemb.is = 1;`".into()),
                );
            }
        }
        if rd.bytes.len() > 1 && rd.bytes.iter().filter(|b| b.when.is_none()).count() > 1 {
            self.bad(
                format!(
                    "record `{}` has two byte counts without a guard (`when`/`is`)",
                    rec.rt.name
                ),
                rec.rt.span,
                Some("at most one byte count of a record applies when no guard holds: give the others `F.when = G; F.is = V;`".into()),
            );
        }
    }

    /// The guard `when` `wp` of slot `s`'s roles and time, with its value `vp` (`is` or `isNot`;
    /// `ambiguous` when there are both or neither).
    fn guard(
        &mut self,
        rec: &RecCtx<'_, 'a>,
        rd: &RecordDecl,
        s: usize,
        wp: &PropertyDef,
        vp: Option<&(usize, &'a PropertyDef)>,
        ambiguous: bool,
    ) -> Option<Guard> {
        let vp = match vp {
            Some((_, vp)) if !ambiguous => *vp,
            _ => {
                let w = wp.path_string();
                self.bad(
                    format!("`{w}.when` needs exactly one of `{w}.is` and `{w}.isNot`"),
                    wp.span,
                    Some("e.g. `old.when = address; old.isNot = 0;`: the roles of `old` apply unless `address` is 0".into()),
                );
                return None;
            }
        };
        let negated = vp.prop.name == "isNot";
        // A stack rule (extension stacks/1) is a role too (its roles are read after guards).
        let rule = ["stops", "skips", "suppresses"]
            .iter()
            .any(|r| rec.has(s, r));
        let has_role = rd.actions.iter().any(|a| a.slot as usize == s)
            || rec.has(s, "time")
            || rec.has(s, "resident")
            || rule;
        if !has_role {
            let w = wp.path_string();
            self.bad(
                format!("`{w}.when` guards nothing: `{w}` has no byte count, role or time"),
                wp.span,
                Some("write the guard on the field whose role or time it guards".into()),
            );
            return None;
        }
        let (Some(slot), Some(value)) = (self.field_value_ref(rec.rt, wp), self.const_value(vp))
        else {
            return None;
        };
        Some(Guard {
            slot,
            value,
            negated,
        })
    }

    /// Yes/no roles (`align`, `thread`) and sizes.
    fn flags(&mut self, rec: &RecCtx<'_, 'a>, rd: &mut RecordDecl) {
        let rt = rec.rt;
        for (s, p) in rec.by_prop("align") {
            if self.keyword(p, &["yes", "no"]) == Some("yes") && self.int_slot(rt, s, p) {
                rd.align = Some(s as SlotId);
            }
        }
        for (s, p) in rec.by_prop("thread") {
            if self.keyword(p, &["yes", "no"]) == Some("yes") && self.int_slot(rt, s, p) {
                rd.thread = Some(s as SlotId);
            }
        }
        for (s, p) in rec.by_prop("size") {
            if self.keyword(p, &["bytes"]).is_some() && self.int_slot(rt, s, p) {
                rd.sizes.push(s as SlotId);
            }
        }
    }

    /// `F.resident = yes;` (version 3): on a record that undefines an id, F is how many bytes of
    /// the block it ends or moves away the program touched.
    fn resident(&mut self, rec: &RecCtx<'_, 'a>, version: u64, rd: &mut RecordDecl) {
        for (s, p) in rec.by_prop("resident") {
            if version < 3 {
                self.bad(
                    format!(
                        "`{}.resident` is a declaration of analysis version 3",
                        p.path_string()
                    ),
                    p.span,
                    Some("write `analysis.version = 3;`".into()),
                );
                continue;
            }
            if self.keyword(p, &["yes", "no"]) != Some("yes") || !self.int_slot(rec.rt, s, p) {
                continue;
            }
            if !rd.actions.iter().any(|a| a.kind == ActionKind::Undefine) {
                self.bad(
                    format!(
                        "`{}.resident` is for a record that undefines an id",
                        p.path_string()
                    ),
                    p.span,
                    Some(
                        "declare it on a free or a realloc: the bytes of the block it ends".into(),
                    ),
                );
                continue;
            }
            rd.resident = Some(s as SlotId);
        }
    }

    /// Times (`F.time = UNIT;`), with their units for the DTD's time unit.
    fn times(
        &mut self,
        rec: &RecCtx<'_, 'a>,
        units: &mut Vec<(TimeUnit, Span)>,
        rd: &mut RecordDecl,
    ) {
        let unit_names: Vec<&str> = TimeUnit::ALL
            .iter()
            .map(|(k, _)| *k)
            .chain(["none"])
            .collect();
        for (s, p) in rec.by_prop("time") {
            let Some(k) = self.keyword(p, &unit_names) else {
                continue;
            };
            if k == "none" || !self.int_slot(rec.rt, s, p) {
                continue;
            }
            let u = TimeUnit::ALL.iter().find(|(n, _)| *n == k).map(|(_, u)| *u);
            if let Some(u) = u {
                rd.time.push((s as SlotId, u));
                units.push((u, p.value.span()));
            }
        }
    }

    /// A monotonic series (`F.monotonic = trace;` or a key field): a field type name (`time`
    /// for record times) with its key, numbered in `series`; None when there is none to add.
    fn monotonic(
        &mut self,
        rec: &RecCtx<'_, 'a>,
        s: usize,
        p: &PropertyDef,
        rd: &RecordDecl,
        series: &mut HashMap<(String, Option<String>), u32>,
    ) -> Option<Monotonic> {
        let rt = rec.rt;
        let PropValue::Ident(id) = &p.value else {
            self.bad(
                format!(
                    "`{}.monotonic` expects `trace` or the name of a key field",
                    p.path_string()
                ),
                p.value.span(),
                Some("e.g. `time.monotonic = trace;` or `time.monotonic = thread;`".into()),
            );
            return None;
        };
        let key = if id.name == "trace" {
            None
        } else {
            Some(self.series_key(rt, id, p)?)
        };
        let no_time = rec.props.iter().any(|(t, q)| {
            *t == s
                && q.prop.name == "time"
                && matches!(&q.value, PropValue::Ident(i) if i.name == "none")
        });
        if no_time {
            return None; // a duration beside a time (TPTP's overhead): not a clock
        }
        let on_time = rd.time.iter().any(|(t, _)| *t as usize == s);
        let (slot, name) = if on_time {
            (None, "time".to_string())
        } else {
            if !self.int_slot(rt, s, p) {
                return None;
            }
            (Some(s as SlotId), rt.slots[s].type_name.clone())
        };
        // Two time fields declared monotonic alike are one check of the record's time.
        if rd
            .monotonic
            .iter()
            .any(|m| m.slot == slot && m.series_name == name && m.key == key)
        {
            return None;
        }
        let n = series.len() as u32;
        let key_name = key.map(|_| id.name.clone());
        let id = *series.entry((name.clone(), key_name)).or_insert(n);
        Some(Monotonic {
            slot,
            series: id,
            series_name: name,
            key,
            strict: false,
        })
    }

    /// The key field of a keyed monotonic series.
    fn series_key(&mut self, rt: &RecordType, id: &ast::Ident, p: &PropertyDef) -> Option<SlotId> {
        if let Some(k) = field_by_name(rt, &id.name) {
            return Some(k);
        }
        let names = rt.slots.iter().skip(1).map(|s| s.name.as_str());
        let help = match near(&id.name, names) {
            Some(n) => format!("did you mean `{n}`?"),
            None => "`trace` (one series for the whole trace) or a field of this record".into(),
        };
        self.bad(
            format!(
                "record `{}` has no field `{}` to key `{}.monotonic`",
                rt.name,
                id.name,
                p.path_string()
            ),
            id.span,
            Some(help),
        );
        None
    }

    /// Depth fields (`F.depth = NS;`) of a record that opens or closes a level of NS.
    fn depths(&mut self, rec: &RecCtx<'_, 'a>, spaces: &[SpaceBuild], rd: &mut RecordDecl) {
        for (s, p) in rec.by_prop("depth") {
            let Some(space) = self.space_value(spaces, p) else {
                continue;
            };
            if !self.int_slot(rec.rt, s, p) {
                continue;
            }
            if !rd
                .actions
                .iter()
                .any(|a| a.space == space && matches!(a.kind, ActionKind::Open | ActionKind::Close))
            {
                self.bad(
                    format!(
                        "`{}.depth`: record `{}` neither opens nor closes a level of `{}`",
                        p.path_string(),
                        rec.rt.name,
                        spaces[space as usize].ns.name
                    ),
                    p.span,
                    None,
                );
                continue;
            }
            rd.depth.push(Depth {
                slot: s as SlotId,
                space,
            });
        }
    }

    /// Names (`F.names = NS;`) of the ids a record defines.
    fn names(
        &mut self,
        rec: &RecCtx<'_, 'a>,
        defines: &[(SpaceId, Span)],
        spaces: &[SpaceBuild],
        rd: &mut RecordDecl,
    ) {
        for (s, p) in rec.by_prop("names") {
            let Some(space) = self.space_value(spaces, p) else {
                continue;
            };
            if !defines.iter().any(|(d, _)| *d == space) {
                self.bad(
                    format!(
                        "`{}.names`: record `{}` defines no id of `{}` to name",
                        p.path_string(),
                        rec.rt.name,
                        spaces[space as usize].ns.name
                    ),
                    p.span,
                    Some("add `F.defines = …;` (or `definesNext`) for that namespace".into()),
                );
                continue;
            }
            rd.names.push((s as SlotId, space));
        }
    }

    /// The site (`F.site = text;` or a namespace) of the ids a record defines.
    fn site(
        &mut self,
        rec: &RecCtx<'_, 'a>,
        defines: &[(SpaceId, Span)],
        b: &mut Build,
        rd: &mut RecordDecl,
    ) {
        for (s, p) in rec.by_prop("site") {
            let PropValue::Ident(id) = &p.value else {
                self.bad(
                    format!("`{}.site` expects `text` or a namespace", p.path_string()),
                    p.value.span(),
                    Some("`text`: the field is a string reference; a namespace: its names name the site".into()),
                );
                continue;
            };
            let slot = s as SlotId;
            let site = if id.name == "text" {
                Site::Field { slot, space: None }
            } else {
                let Some(space) = self.space_value(&b.spaces, p) else {
                    continue;
                };
                let refers = rd.actions.iter().any(|a| {
                    a.kind == ActionKind::Refer && a.space == space && a.slot as usize == s
                });
                if refers && b.spaces[space as usize].ns.kind != SpaceKind::Table {
                    // Decided once every record is seen (`inherit_sites`): the referred id's
                    // own site if its namespace has sites, else this field.
                    b.inherit.push((rec.ri, slot, space));
                    Site::Inherited { space }
                } else {
                    Site::Field {
                        slot,
                        space: Some(space),
                    }
                }
            };
            rd.site = Some(site);
            for (d, _) in defines {
                b.spaces[*d as usize].site_srcs.push((p.span, Some(site)));
            }
        }
    }
}
