//! Pass 6, extension stacks/1 (docs/format.md §17): the version, and per record its stack
//! roles — a node's parent and frame, a frame's parts, an allocation's calling context, the
//! rules (stop, skip, suppress) — each checked against what the record does.

use super::super::*;
use super::record::RecCtx;
use super::{Build, STACK_PROPS};
use crate::dtd::analysis::*;

impl<'a> Resolver<'a> {
    /// The value of `stacks.version`: an integer this reader knows (else a warning, and the
    /// roles are ignored as an older reader ignores them), 0 when not declared.
    pub(super) fn stacks_version(&mut self) -> u64 {
        let Some(vdef) = self.stacks_declared() else {
            return 0;
        };
        let value = match &vdef.value {
            PropValue::Expr(e) => match &e.kind {
                ast::ExprKind::Int(ast::IntLit { value: Some(v), .. }) => Some(*v),
                _ => None,
            },
            _ => None,
        };
        match value {
            Some(v) if (1..=STACKS_VERSION).contains(&v) => v,
            Some(v) => {
                self.warnings.push(DtdWarning::AnalysisIgnored {
                    msg: format!(
                        "stacks declarations of version {v} are ignored: this reader knows versions 1 to {STACKS_VERSION}"
                    ),
                    src: self.src(),
                    span: sspan(vdef.span),
                });
                0
            }
            None => {
                self.bad(
                    "`stacks.version` expects an integer".into(),
                    vdef.value.span(),
                    Some("write `stacks.version = 1;`".into()),
                );
                0
            }
        }
    }

    /// The stack roles of one record.
    pub(super) fn stack_roles(
        &mut self,
        rec: &RecCtx<'_, 'a>,
        defines: &[(SpaceId, Span)],
        b: &mut Build,
        rd: &mut RecordDecl,
    ) {
        let opens: Vec<SpaceId> = rd
            .actions
            .iter()
            .filter(|a| a.kind == ActionKind::Open)
            .map(|a| a.space)
            .collect();
        let defined = |sp: SpaceId| defines.iter().any(|(d, _)| *d == sp);
        for prop in STACK_PROPS {
            for (s, p) in rec.by_prop(prop) {
                let Some(space) = self.space_value(&b.spaces, p) else {
                    continue;
                };
                let ns = &b.spaces[space as usize].ns;
                let kind = match prop {
                    "parent" => StackKind::Parent,
                    "frame" => StackKind::Frame,
                    "function" => StackKind::Part(FramePart::Function),
                    "owner" => StackKind::Part(FramePart::Owner),
                    "file" => StackKind::Part(FramePart::File),
                    "line" => StackKind::Part(FramePart::Line),
                    "module" => StackKind::Part(FramePart::Module),
                    "address" => StackKind::Part(FramePart::Address),
                    "context" => StackKind::Context,
                    "stops" => StackKind::Rule(StackRule::Stop),
                    "skips" => StackKind::Rule(StackRule::Skip),
                    _ => StackKind::Rule(StackRule::Suppress),
                };
                let problem = match kind {
                    StackKind::Parent if !defined(space) => Some(format!(
                        "record `{}` defines no id of `{}` to give a parent",
                        rec.rt.name, ns.name
                    )),
                    StackKind::Parent if ns.kind != SpaceKind::Table => Some(format!(
                        "`{}` is not a table (`{}.kind = table;`): a stack tree's nodes are a table's ids",
                        ns.name, ns.name
                    )),
                    StackKind::Frame if defines.is_empty() && opens.is_empty() => Some(format!(
                        "record `{}` neither defines a node nor opens a level to give a frame",
                        rec.rt.name
                    )),
                    StackKind::Part(_) if !defined(space) => Some(format!(
                        "record `{}` defines no id of `{}` to describe",
                        rec.rt.name, ns.name
                    )),
                    StackKind::Context if defines.is_empty() => Some(format!(
                        "record `{}` defines no id to give a calling context",
                        rec.rt.name
                    )),
                    _ => None,
                };
                if let Some(msg) = problem {
                    self.bad(format!("`{}.{prop}`: {msg}", p.path_string()), p.span, None);
                    continue;
                }
                let numeric = matches!(
                    kind,
                    StackKind::Parent
                        | StackKind::Frame
                        | StackKind::Part(FramePart::Line | FramePart::Address)
                );
                if numeric && !self.int_slot(rec.rt, s, p) {
                    continue;
                }
                if kind == StackKind::Context {
                    if let Some(k) = ns.key.clone() {
                        if super::field_by_name(rec.rt, &k).is_none() {
                            let msg = format!(
                                "`{}.context`: namespace `{}` is keyed by `{k}`, which record `{}` does not have",
                                p.path_string(),
                                ns.name,
                                rec.rt.name
                            );
                            self.bad(msg, p.span, None);
                            continue;
                        }
                    }
                }
                if kind == StackKind::Context {
                    // Whether NS is a nesting namespace is known once every record is seen.
                    b.contexts.push((rec.ri, space, p.span));
                }
                if kind == StackKind::Parent {
                    b.spaces[space as usize].ns.tree = true;
                }
                rd.stack.push(StackRole {
                    slot: s as SlotId,
                    space,
                    kind,
                });
            }
        }
        rd.stack.sort_by_key(|r| r.slot);
    }

    /// Every `context` role names a nesting namespace (known once every record is seen).
    pub(super) fn check_contexts(&mut self, b: &mut Build) {
        for (ri, space, span) in std::mem::take(&mut b.contexts) {
            let ns = &b.spaces[space as usize].ns;
            if ns.kind == SpaceKind::Nesting {
                continue;
            }
            let msg = format!(
                "`context`: `{}` is not a nesting namespace: a calling context is the levels open in one",
                ns.name
            );
            self.bad(
                msg,
                span,
                Some("name the namespace a record `opens`".into()),
            );
            b.records[ri]
                .stack
                .retain(|r| r.kind != StackKind::Context || r.space != space);
        }
    }
}
