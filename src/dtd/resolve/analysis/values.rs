//! Pass 6, the kinds of value a declaration takes: a keyword, a severity, a constant, a
//! namespace, an integer field, a field named by an identifier, a byte count's expression;
//! each reports its own diagnostic with a did-you-mean.

use super::super::*;
use super::{field_by_name, near, SpaceBuild};
use crate::dtd::analysis::*;

impl Resolver<'_> {
    pub(super) fn severity(&mut self, p: &PropertyDef) -> Option<Severity> {
        match self.keyword(p, &["error", "info", "normal"])? {
            "error" => Some(Severity::Error),
            "info" => Some(Severity::Info),
            _ => Some(Severity::Normal),
        }
    }

    /// An identifier value among `allowed` (reported with a did-you-mean otherwise).
    pub(super) fn keyword(
        &mut self,
        p: &PropertyDef,
        allowed: &[&'static str],
    ) -> Option<&'static str> {
        let found = match &p.value {
            PropValue::Ident(id) => id,
            _ => {
                self.bad(
                    format!(
                        "`{}.{}` expects one of: {}",
                        p.path_string(),
                        p.prop.name,
                        allowed.join(", ")
                    ),
                    p.value.span(),
                    None,
                );
                return None;
            }
        };
        if let Some(k) = allowed.iter().find(|k| **k == found.name) {
            return Some(k);
        }
        let help = match near(&found.name, allowed.iter().copied()) {
            Some(n) => format!("did you mean `{n}`?"),
            None => format!("one of: {}", allowed.join(", ")),
        };
        self.bad(
            format!("`{}` is not a value of `{}`", found.name, p.prop.name),
            found.span,
            Some(help),
        );
        None
    }

    pub(super) fn const_value(&mut self, p: &PropertyDef) -> Option<u64> {
        if let PropValue::Expr(e) = &p.value {
            if let Ok(v) = super::collect::const_expr_pub(e) {
                return v;
            }
        }
        self.bad(
            format!("`{}.{}` expects a constant", p.path_string(), p.prop.name),
            p.value.span(),
            Some("e.g. `block.null = 0;`".into()),
        );
        None
    }

    /// A namespace named by a role's value (which the first pass created).
    pub(super) fn space_value(
        &mut self,
        spaces: &[SpaceBuild],
        p: &PropertyDef,
    ) -> Option<SpaceId> {
        let PropValue::Ident(id) = &p.value else {
            self.bad(
                format!(
                    "`{}.{}` expects a namespace name",
                    p.path_string(),
                    p.prop.name
                ),
                p.value.span(),
                Some(format!(
                    "e.g. `{}.{} = block;`",
                    p.path_string(),
                    p.prop.name
                )),
            );
            return None;
        };
        if let Some(i) = spaces.iter().position(|s| s.ns.name == id.name) {
            return Some(i as SpaceId);
        }
        let names: Vec<&str> = spaces.iter().map(|s| s.ns.name.as_str()).collect();
        let help = match near(&id.name, names.iter().copied()) {
            Some(n) => format!("did you mean `{n}`?"),
            None if names.is_empty() => "namespaces are named by `defines`, `undefines`, `refers`, `definesNext`, `opens` and `closes`".into(),
            None => format!("declared namespaces: {}", names.join(", ")),
        };
        self.bad(
            format!("no namespace is named `{}`", id.name),
            id.span,
            Some(help),
        );
        None
    }

    /// Whether slot `s` is an integer field (roles need a number).
    pub(super) fn int_slot(&mut self, rt: &RecordType, s: usize, p: &PropertyDef) -> bool {
        if matches!(rt.slots[s].kind, SlotKind::Int { .. }) {
            return true;
        }
        self.bad(
            format!(
                "`{}.{}`: field `{}` of record `{}` is a byte string, not a number",
                p.path_string(),
                p.prop.name,
                rt.slots[s].name,
                rt.name
            ),
            p.span,
            None,
        );
        false
    }

    /// A field named by an identifier value (`nmemb.when = func;`).
    pub(super) fn field_value_ref(&mut self, rt: &RecordType, p: &PropertyDef) -> Option<SlotId> {
        let PropValue::Ident(id) = &p.value else {
            self.bad(
                format!("`{}.{}` expects a field name", p.path_string(), p.prop.name),
                p.value.span(),
                None,
            );
            return None;
        };
        if let Some(s) = field_by_name(rt, &id.name) {
            return Some(s);
        }
        let names = rt.slots.iter().skip(1).map(|s| s.name.as_str());
        let help = near(&id.name, names).map(|n| format!("did you mean `{n}`?"));
        self.bad(
            format!("record `{}` has no field `{}`", rt.name, id.name),
            id.span,
            help,
        );
        None
    }

    /// An expression of a byte count: constants, `F.value` of the record's fields, and
    /// `NS.F.value`, a field kept with the id the record refers to in namespace NS.
    pub(super) fn aexpr(
        &mut self,
        rt: &RecordType,
        rd: &RecordDecl,
        spaces: &mut [SpaceBuild],
        e: &ast::Expr,
    ) -> Option<AExpr> {
        Some(match &e.kind {
            ast::ExprKind::Int(n) => AExpr::Const(n.value?),
            ast::ExprKind::Binary(op, a, b) => {
                let a = self.aexpr(rt, rd, spaces, a);
                let b = self.aexpr(rt, rd, spaces, b);
                let (a, b) = (Box::new(a?), Box::new(b?));
                match op {
                    ast::BinOp::Add => AExpr::Add(a, b),
                    ast::BinOp::Sub => AExpr::Sub(a, b),
                    ast::BinOp::Mul => AExpr::Mul(a, b),
                }
            }
            ast::ExprKind::Ref { path, prop } => {
                if *prop != ast::RefProp::Value {
                    self.bad(
                        "a byte count reads `.value`s, not `.width`s".into(),
                        e.span,
                        None,
                    );
                    return None;
                }
                let full = ast::join_path(path);
                if let Some(s) = rt.slot_by_name(&full) {
                    if !matches!(rt.slots[s as usize].kind, SlotKind::Int { .. }) {
                        self.bad(
                            format!("`{full}` is a byte string, not a number"),
                            e.span,
                            None,
                        );
                        return None;
                    }
                    return Some(AExpr::Field(s));
                }
                // `NS.field.value`: a field of the record that defined the id referred to.
                if path.len() >= 2 {
                    if let Some(si) = spaces.iter().position(|s| s.ns.name == path[0].name) {
                        let referred = rd
                            .actions
                            .iter()
                            .any(|a| a.kind == ActionKind::Refer && a.space as usize == si);
                        if !referred {
                            self.bad(
                                format!(
                                    "`{full}.value`: record `{}` does not refer to an id of `{}`",
                                    rt.name, path[0].name
                                ),
                                e.span,
                                Some(format!(
                                    "add `F.refers = {};` on the field that holds the id",
                                    path[0].name
                                )),
                            );
                            return None;
                        }
                        let field = ast::join_path(&path[1..]);
                        let ns = &mut spaces[si].ns;
                        let i = match ns.stored.iter().position(|f| *f == field) {
                            Some(i) => i,
                            None => {
                                ns.stored.push(field);
                                ns.stored.len() - 1
                            }
                        };
                        return Some(AExpr::Lookup {
                            space: si as SpaceId,
                            stored: i as u16,
                        });
                    }
                }
                let names = rt.slots.iter().skip(1).map(|s| s.name.as_str());
                let help = match near(&full, names) {
                    Some(n) => format!("did you mean `{n}`?"),
                    None => format!("`F.value` names a field of record `{}`; `NS.F.value` a field of the record that defined the id it refers to in namespace NS", rt.name),
                };
                self.bad(
                    format!("record `{}` has no field `{full}`", rt.name),
                    e.span,
                    Some(help),
                );
                return None;
            }
        })
    }
}
