//! Pass 4: every taggable record type is flattened into slots, and each slot's width,
//! interpretation, value and display are resolved in the order of docs/format.md §4.3.

// Design: each property of each slot is looked up on its own (`find`), walking the sources of
// §4.3 in priority order; widths are resolved on demand with a per-slot `WState` so that
// `.width` references can point forwards and cycles are caught (`CyclicWidth`).

use super::*;

impl<'a> Resolver<'a> {
    pub(super) fn resolve_record(&mut self, d: DefId, tree: &[TNode]) -> Option<RecordType> {
        let def = &self.defs[d];
        let mut rec = Rec {
            def: d,
            scope: def.scope,
            slots: Vec::new(),
            by_name: HashMap::new(),
            interps: Vec::new(),
            interp_rank: Vec::new(),
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
        rec.interp_rank = vec![0; n];
        let errors_before = self.errors.len();
        // Interpretations first: whether a width is needed depends on them.
        for s in 0..n {
            let interp = if s == 0 {
                Some((Interp::None, None))
            } else {
                match self.find_ranked(&rec, s, "interpretation") {
                    Some((
                        Prop {
                            val: PVal::Interp(i, span),
                            ..
                        },
                        _,
                        rank,
                    )) => {
                        rec.interp_rank[s] = rank;
                        Some((i, Some(span)))
                    }
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
        self.capture_analysis(d, &rec);
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
    pub(super) fn used_in(&self, d: DefId, field_span: Span) -> Option<miette::SourceSpan> {
        let r = self.defs[d].ast;
        let inside =
            field_span.offset >= r.span.offset && field_span.offset < r.span.offset + r.span.len;
        (!inside && !self.defs[d].prelude).then(|| sspan(r.name.span))
    }

    /// The first source of property `prop` for slot `s` (§4.3), with the prefix that its
    /// references are relative to.
    pub(super) fn find(&self, rec: &Rec, s: usize, prop: &str) -> Option<(Prop<'a>, String)> {
        self.find_ranked(rec, s, prop)
            .map(|(p, prefix, _)| (p, prefix))
    }

    /// [`Self::find`], with the rank of the level the property was found at: 0 for the record's
    /// own body, then one per nested body, then the section defaults, then the global ones. A
    /// smaller rank is a more specific level.
    pub(super) fn find_ranked(
        &self,
        rec: &Rec,
        s: usize,
        prop: &str,
    ) -> Option<(Prop<'a>, String, usize)> {
        let sl = &rec.slots[s];
        for (rank, (d, prefix)) in sl.bodies.iter().enumerate() {
            let rel = sl.full.strip_prefix(prefix.as_str()).unwrap_or(&sl.full);
            if let Some(p) = self.defs[*d].body.get(&(rel.to_string(), prop.to_string())) {
                return Some((p.clone(), prefix.clone(), rank));
            }
        }
        let n = sl.bodies.len();
        let key = (sl.ty.clone(), prop.to_string());
        if rec.scope != 0 {
            if let Some(p) = self.scopes[rec.scope].defaults.get(&key) {
                return Some((p.clone(), sl.level.clone(), n));
            }
        }
        self.scopes[0]
            .defaults
            .get(&key)
            .map(|p| (p.clone(), sl.level.clone(), n + 1))
    }

    /// The declared width of a slot: `None` if missing or invalid (reported).
    pub(super) fn width(&mut self, rec: &mut Rec, s: usize) -> Option<W> {
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
    pub(super) fn expr(
        &mut self,
        rec: &mut Rec,
        s: usize,
        e: &ast::Expr,
        prefix: &str,
    ) -> Option<W> {
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

    pub(super) fn finish_slot(&mut self, rec: &mut Rec, s: usize, w: Option<W>) -> Slot {
        let interp = rec.interps[s];
        let sl = &rec.slots[s];
        let (name, ty, in_repeat) = (sl.full.clone(), sl.ty.clone(), sl.in_repeat);
        let kind = self.slot_kind(rec, s, &name, w.as_ref());
        let mut slot = Slot {
            name,
            type_name: ty,
            kind,
            interp: interp.map_or(Interp::None, |(i, _)| i),
            fixed: None,
            display: Display::default(),
            liveset: 0,
            in_repeat,
            extra: Vec::new(),
        };
        if s != 0 {
            self.slot_properties(rec, s, &mut slot);
        }
        slot
    }

    /// The kind of slot `s` (named `name`) from its width `w` and interpretation.
    fn slot_kind(&mut self, rec: &Rec, s: usize, name: &str, w: Option<&W>) -> SlotKind {
        let interp = rec.interps[s];
        let sl = &rec.slots[s];
        let rname = self.defs[rec.def].ast.name.name.clone();
        let (width_src, width_rank) = match s {
            0 => (None, 0),
            _ => match self.find_ranked(rec, s, "width") {
                Some((p, prefix, rank)) => (Some((p, prefix)), rank),
                None => (None, usize::MAX),
            },
        };
        match (w, interp) {
            // A zero-width interpretation set more specifically than a width: the width is the
            // field's last non-zero width, restored by a later `none` (docs/format.md §4.3).
            (Some(W::Const(c @ 1..=8)), Some((i, _)))
                if i.is_zero_width() && width_rank > rec.interp_rank[s] =>
            {
                SlotKind::Int { width: *c as u8 }
            }
            (Some(W::Const(c)), Some((i, ispan))) if i.is_zero_width() && *c != 0 => {
                let src = width_src.as_ref();
                self.zero_width_error(name, &rname, c.to_string(), i, src, ispan, sl.span);
                SlotKind::Int { width: 0 }
            }
            (Some(W::Dyn(e)), Some((i, ispan))) if i.is_zero_width() => {
                let shown = show_expr(e, &rec.slots);
                let src = width_src.as_ref();
                self.zero_width_error(name, &rname, shown, i, src, ispan, sl.span);
                SlotKind::Int { width: 0 }
            }
            (Some(W::Const(c)), _) if *c <= 8 => SlotKind::Int { width: *c as u8 },
            (Some(W::Const(c)), i) => {
                self.bytes_interp(name, i);
                SlotKind::Bytes {
                    width: Expr::Const(*c),
                }
            }
            (Some(W::Dyn(e)), i) => {
                self.bytes_interp(name, i);
                SlotKind::Bytes { width: e.clone() }
            }
            (None, _) => SlotKind::Int { width: 0 },
        }
    }

    /// A field's `value`, `display` and `liveset`, and every other property (first source
    /// wins per name, in source order).
    fn slot_properties(&mut self, rec: &mut Rec, s: usize, slot: &mut Slot) {
        if let Some((
            Prop {
                val: PVal::Value(e),
                ..
            },
            prefix,
        )) = self.find(rec, s, "value")
        {
            slot.fixed = self.constant(rec, s, e, &prefix);
        }
        if let Some((
            Prop {
                val: PVal::Display(d),
                ..
            },
            _,
        )) = self.find(rec, s, "display")
        {
            slot.display = d;
        }
        if let Some((
            Prop {
                val: PVal::LiveSet(e),
                ..
            },
            prefix,
        )) = self.find(rec, s, "liveset")
        {
            let span = e.span;
            match self.constant(rec, s, e, &prefix) {
                Some(n) if n <= crate::limits::MAX_LIVE_SETS as u64 => slot.liveset = n as u8,
                Some(n) => {
                    let e = self.live_set_outside(n, span);
                    self.err(e);
                }
                None => {}
            }
        }
        let mut seen = std::collections::HashSet::new();
        for p in self.extra_sources(rec, s) {
            if let PVal::Extra(v) = &p.val {
                if seen.insert(p.def.prop.name.as_str()) {
                    slot.extra.push((p.def.prop.name.clone(), v.clone()));
                }
            }
        }
    }

    /// Every non-reserved property of a slot, from every source in priority order, each source
    /// in source order. Linear in the number of such properties (indexed by path, see `Extras`).
    pub(super) fn extra_sources(&self, rec: &Rec, s: usize) -> Vec<&Prop<'a>> {
        let sl = &rec.slots[s];
        let mut out = Vec::new();
        for (d, prefix) in &sl.bodies {
            let rel = sl.full.strip_prefix(prefix.as_str()).unwrap_or(&sl.full);
            out.extend(self.defs[*d].extras.get(rel).into_iter().flatten());
        }
        if rec.scope != 0 {
            out.extend(
                self.scopes[rec.scope]
                    .extras
                    .get(&sl.ty)
                    .into_iter()
                    .flatten(),
            );
        }
        out.extend(self.scopes[0].extras.get(&sl.ty).into_iter().flatten());
        out
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn zero_width_error(
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

    pub(super) fn bytes_interp(&mut self, field: &str, interp: Option<(Interp, Option<Span>)>) {
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
    pub(super) fn constant(
        &mut self,
        rec: &mut Rec,
        s: usize,
        e: &ast::Expr,
        prefix: &str,
    ) -> Option<u64> {
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

    pub(super) fn tag_value(&mut self, rec: &mut Rec) -> Option<u64> {
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
            TNode::Group {
                name,
                def,
                children,
            } if name.is_empty() => {
                // An unnamed composite, or an alias of a record type (whose body applies).
                let mut b = bodies.to_vec();
                if let Some(d) = def {
                    b.push((*d, prefix.to_string()));
                }
                flatten(children, prefix, in_repeat, &b, slots, out);
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

#[cfg(test)]
mod tests {
    use super::super::tests::schema;
    use crate::dtd::{Expr, Interp, SlotKind};

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
}
