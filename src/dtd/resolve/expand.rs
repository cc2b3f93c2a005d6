//! Pass 3: every record type is expanded into a tree of named fields (nested types inlined,
//! names suffixed `_2`…), which checks recursion, `tag` placement, duplicate names and the
//! property paths of its body.

// Design: nested record types are expanded afresh at every use (no memo) because their errors are
// deduplicated by `DtdErrors::new` anyway, and expansion is bounded: nesting depth by
// `MAX_DEPTH`, the slots of one type by `MAX_FIELDS` and the nodes made over the whole DTD by
// `MAX_TOTAL_FIELDS`, so that hostile input cannot blow up time or stack. The per-type limit
// counts slots — scalar fields, `tag` and repeat counts included, each repeated item once
// (docs/format.md §4.4, §16) — not the items written: a type has one verdict however its fields
// are grouped, and a slot number always fits its 16 bits.

use super::*;

impl<'a> Resolver<'a> {
    /// The record type `name` as seen from the definitions of `def`, if any.
    pub(super) fn lookup(&self, from: DefId, name: &str) -> Option<DefId> {
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
    pub(super) fn expand_root(&mut self, def: DefId) -> Vec<TNode> {
        let mut ex = Expander {
            stack: vec![def],
            depth: 0,
            slots: 0,
            limit_reported: false,
        };
        let mut level = Level::default();
        let d = &self.defs[def];
        let list = &d.ast.fields;
        if !d.taggable {
            return self.expand_fields(def, &mut level, &mut ex);
        }
        // `name : type { tag.value = …; }` has an implicit leading `tag`, shown at the name.
        let implicit_tag = d.ast.of_type.is_some().then_some(d.ast.name.span);
        let mut out = Vec::new();
        for (i, item) in list.items.iter().enumerate() {
            if i == 0 {
                let span = implicit_tag.unwrap_or(item.span);
                self.count_slot(&mut ex, span);
                level.names.insert("tag".into(), span);
                level.bases.insert("tag".into(), 1);
                out.push(TNode::Scalar {
                    name: "tag".into(),
                    ty: "tag".into(),
                    span,
                });
                if implicit_tag.is_none() {
                    continue;
                }
            }
            if let Some(n) = self.expand_item(def, item, &mut level, &mut ex) {
                out.push(n);
            }
        }
        out
    }

    /// The fields of a record type that is not taggable, at `level`. An alias `name : type`
    /// of a record type has that type's fields, at the same naming level (a nameless group
    /// that carries the type's body).
    fn expand_fields(&mut self, def: DefId, level: &mut Level, ex: &mut Expander) -> Vec<TNode> {
        let d = &self.defs[def];
        if let Some(ty) = &d.ast.of_type {
            if let Some(target) = self.lookup(def, &ty.name) {
                return match self.expand_nested(target, ty.span, ex) {
                    Some(children) => vec![TNode::Group {
                        name: String::new(),
                        def: Some(target),
                        children,
                    }],
                    None => Vec::new(),
                };
            }
        }
        self.expand_list(def, &d.ast.fields, level, ex)
    }

    pub(super) fn expand_list(
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
    pub(super) fn name_at(
        &mut self,
        level: &mut Level,
        base: &str,
        explicit: bool,
        span: Span,
    ) -> String {
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

    /// Count one slot of the type being expanded (a scalar field about to be made); `false`
    /// beyond [`MAX_FIELDS`], reported once at the first slot too many.
    pub(super) fn count_slot(&mut self, ex: &mut Expander, span: Span) -> bool {
        ex.slots += 1;
        if ex.slots <= MAX_FIELDS {
            return true;
        }
        if !ex.limit_reported {
            ex.limit_reported = true;
            let name = &self.defs[ex.stack[0]].ast.name.name;
            self.err(DtdError::Limit {
                msg: format!(
                    "record type `{name}` has more than {MAX_FIELDS} slots (scalar fields, `tag` \
                     included)"
                ),
                src: self.src(),
                span: sspan(span),
                help: "slot numbers are 16-bit (docs/format.md §16): split the record type".into(),
            });
        }
        false
    }

    pub(super) fn bump(&mut self, ex: &mut Expander, span: Span) -> bool {
        self.expanded += 1;
        if ex.depth > MAX_DEPTH || ex.slots > MAX_FIELDS || self.expanded > MAX_TOTAL_FIELDS {
            let local = ex.depth > MAX_DEPTH || ex.slots > MAX_FIELDS;
            // The whole-DTD budget is reported once, by the expansion that exhausts it (too
            // many slots were reported by `count_slot`).
            if !ex.limit_reported && (local || self.expanded == MAX_TOTAL_FIELDS + 1) {
                ex.limit_reported = true;
                let (msg, help) = if ex.depth > MAX_DEPTH {
                    (
                        format!("record types nest more than {MAX_DEPTH} levels deep"),
                        "flatten the definition",
                    )
                } else {
                    (
                        format!("the DTD expands to more than {MAX_TOTAL_FIELDS} fields"),
                        "record types that use others several times multiply their fields: \
                         flatten the definition",
                    )
                };
                self.err(DtdError::Limit {
                    msg,
                    src: self.src(),
                    span: sspan(span),
                    help: help.into(),
                });
            }
            return false;
        }
        true
    }

    pub(super) fn expand_item(
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
    pub(super) fn expand_named(
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
                if !self.count_slot(ex, id.span) {
                    return None;
                }
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
    pub(super) fn expand_nested(
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
            let mut cycle: Vec<DefId> = ex.stack[pos..].to_vec();
            cycle.push(nested);
            self.recursive(nested, &cycle, use_span);
            return None;
        }
        let nd = &self.defs[nested];
        if nd.taggable {
            // A taggable type cannot be nested; if it contains a type that is being expanded,
            // the real problem is recursion (reported once, like the cycles above).
            if let Some(path) = self.path_back(nested, &ex.stack) {
                let back = *path.last().expect("non-empty");
                let pos = ex
                    .stack
                    .iter()
                    .position(|&d| d == back)
                    .expect("on the stack");
                let mut cycle: Vec<DefId> = ex.stack[pos..].to_vec();
                cycle.extend(&path);
                if cycle.iter().min() == Some(&back) {
                    self.recursive(back, &cycle, use_span);
                }
                return None;
            }
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
        let children = self.expand_fields(nested, &mut inner, ex);
        ex.depth -= 1;
        ex.stack.pop();
        Some(children)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn expand_repeat(
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
        if !self.count_slot(ex, count.span) {
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
                None if !self.count_slot(ex, id.span) => None,
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

    /// The record types that `from` uses (in its field list, at any depth).
    /// Report that `name` contains itself through `cycle` (the types in order), at the use.
    fn recursive(&mut self, name: DefId, cycle: &[DefId], use_span: Span) {
        let chain: Vec<&str> = cycle
            .iter()
            .map(|&d| self.defs[d].ast.name.name.as_str())
            .collect();
        let chain = chain.join(" → ");
        let name = self.defs[name].ast.name.name.clone();
        self.err(DtdError::RecursiveType {
            name,
            chain,
            src: self.src(),
            span: sspan(use_span),
        });
    }

    fn uses(&self, from: DefId) -> Vec<DefId> {
        fn walk(t: &FieldType, out: &mut Vec<String>) {
            match t {
                FieldType::Named(id) => out.push(id.name.clone()),
                FieldType::Repeat { item, .. } => walk(item, out),
                FieldType::Composite(list) => list.items.iter().for_each(|i| walk(&i.ty, out)),
            }
        }
        let mut names = Vec::new();
        for item in &self.defs[from].ast.fields.items {
            walk(&item.ty, &mut names);
        }
        names.iter().filter_map(|n| self.lookup(from, n)).collect()
    }

    /// A chain of uses from `from` to a record type on `stack` (`from` first, the type on the
    /// stack last), if there is one. Linear in the size of the DTD (each type visited once).
    fn path_back(&self, from: DefId, stack: &[DefId]) -> Option<Vec<DefId>> {
        let mut parent: HashMap<DefId, DefId> = HashMap::new();
        let mut todo = vec![from];
        parent.insert(from, from);
        while let Some(d) = todo.pop() {
            for u in self.uses(d) {
                if stack.contains(&u) {
                    let mut path = vec![u, d];
                    let mut cur = d;
                    while cur != from {
                        cur = parent[&cur];
                        path.push(cur);
                    }
                    path.reverse();
                    return Some(path);
                }
                if let std::collections::hash_map::Entry::Vacant(v) = parent.entry(u) {
                    v.insert(d);
                    todo.push(u);
                }
            }
        }
        None
    }

    pub(super) fn tag_misplaced(&mut self, span: Span) {
        self.err(DtdError::TagNotFirst {
            msg: "`tag` must be the first field of a record type".into(),
            src: self.src(),
            span: sspan(span),
            def: None,
        });
    }

    /// Every property path of a record body must name a scalar field of that record type.
    pub(super) fn check_body_paths(&mut self, d: DefId, tree: &[TNode]) {
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

#[cfg(test)]
mod tests {
    use super::super::tests::schema;
    use crate::dtd::{Node, SlotKind};

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
}
