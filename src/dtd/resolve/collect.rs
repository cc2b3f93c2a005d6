//! Passes 1 and 2: sections, record definitions and property definitions, indexed per scope;
//! every property value is checked for the kind its property needs, once.

// Design: property values are checked for their kind here, once per definition, so that a bad
// value is reported once however many fields it applies to; later passes see it as
// `PVal::Invalid` ("set", so no follow-up "missing" error).

use std::collections::HashMap;

use super::*;

/// The value of an expression made of integer literals only (`None` if it reads a property or
/// overflows, which is reported where it is evaluated).
fn literal_value(e: &ast::Expr) -> Option<u64> {
    match &e.kind {
        ast::ExprKind::Int(i) => i.value,
        ast::ExprKind::Ref { .. } => None,
        ast::ExprKind::Binary(op, a, b) => {
            let (a, b) = (literal_value(a)?, literal_value(b)?);
            match op {
                ast::BinOp::Add => a.checked_add(b),
                ast::BinOp::Sub => a.checked_sub(b),
                ast::BinOp::Mul => a.checked_mul(b),
            }
        }
    }
}

pub(super) fn edit_distance(a: &str, b: &str) -> usize {
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
    pub(super) fn collect(&mut self, prelude: &'a ast::Dtd, user: &'a ast::Dtd) {
        self.scopes.push(ScopeInfo {
            id: Some(0),
            name: String::new(),
            span: Span::default(),
            defs: Vec::new(),
            by_name: HashMap::new(),
            defaults: HashMap::new(),
            extras: HashMap::new(),
        });
        // Where the included fragments are in the prelude's text, to name them in messages.
        for item in &user.items {
            if let Item::Include(n) = item {
                let found = crate::dtd::FRAGMENTS.iter().find(|f| f.0 == n.name);
                if let Some(&(name, body)) = found {
                    if let Some(at) = self.prelude_text.find(body) {
                        self.fragments.push((at..at + body.len(), name, n.span));
                    }
                }
            }
        }
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
                        // The parser never nests sections nor includes in them.
                        Item::Section(_) | Item::Include(_) => {}
                    }
                }
            }
        }
    }

    /// For a record type of an included fragment: the fragment's name and the `include` that
    /// took it in.
    pub(super) fn fragment_of(&self, d: DefId) -> Option<(&'static str, Span)> {
        let def = &self.defs[d];
        if !def.prelude {
            return None;
        }
        let at = def.ast.name.span.offset;
        self.fragments
            .iter()
            .find(|(range, _, _)| range.contains(&at))
            .map(|&(_, name, include)| (name, include))
    }

    /// The names of a fragment's record types, in its order, for messages.
    fn fragment_records(&self, fragment: &str) -> String {
        let names: Vec<String> = (0..self.defs.len())
            .filter(|&d| self.fragment_of(d).is_some_and(|(f, _)| f == fragment))
            .map(|d| self.defs[d].ast.name.name.clone())
            .collect();
        names.join(", ")
    }

    pub(super) fn declare_section(&mut self, s: &'a ast::SectionDef) {
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
                include: None,
                help: BUILTIN_HELP.into(),
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
            extras: HashMap::new(),
        });
    }

    pub(super) fn global_item(&mut self, item: &'a Item, prelude: bool) {
        match item {
            Item::Record(r) => self.define_record(r, 0, prelude),
            Item::Property(p) => self.scope_property(p, 0, prelude),
            // Fragments are resolved with the prelude (`dtd::parse_str`).
            Item::Section(_) | Item::Include(_) => {}
        }
    }

    pub(super) fn define_record(&mut self, r: &'a ast::RecordDef, scope: usize, prelude: bool) {
        let name = &r.name.name;
        if !prelude && BUILTIN_NAMES.contains(&name.as_str()) {
            self.err(DtdError::ReservedName {
                msg: format!("`{name}` is a built-in record type and cannot be redefined"),
                src: self.src(),
                span: sspan(r.name.span),
                include: None,
                help: BUILTIN_HELP.into(),
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
            if let (false, Some((fragment, include))) = (prelude, self.fragment_of(prev)) {
                // A name of an included fragment is reserved as a built-in's is (§3.5); the
                // fragment's text is not the user's, so the labels are the definition and the
                // `include`.
                let names = self.fragment_records(fragment);
                self.err(DtdError::ReservedName {
                    msg: format!(
                        "`{name}` is a record type of the built-in fragment `{fragment}` and \
                         cannot be redefined"
                    ),
                    src: self.src(),
                    span: sspan(r.name.span),
                    include: Some(sspan(include)),
                    help: format!(
                        "give the record type another name: the fragment `{fragment}` defines \
                         {names}"
                    ),
                });
                return;
            }
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
        // `name : type { … }` is taggable when its body sets `tag.value` (docs/format.md §4.2).
        let taggable = if r.of_type.is_some() {
            r.body
                .iter()
                .any(|p| p.path.len() == 1 && p.path[0].name == "tag" && p.prop.name == "value")
        } else {
            matches!(r.fields.items.first(), Some(FieldItem { name: n, ty: FieldType::Named(t), .. })
                if t.name == "tag" && n.as_ref().is_none_or(|n| n.name == "tag"))
        };
        let mut def = Def {
            ast: r,
            scope,
            prelude,
            body: HashMap::new(),
            extras: HashMap::new(),
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
                    let prop = Prop { def: p, val };
                    if let PVal::Extra(_) = prop.val {
                        let path = v.key().0.clone();
                        def.extras.entry(path).or_default().push(prop.clone());
                    }
                    v.insert(prop);
                }
            }
        }
        self.scopes[scope].by_name.insert(name.clone(), id);
        self.scopes[scope].defs.push(id);
        self.defs.push(def);
    }

    pub(super) fn twice(&mut self, p: &PropertyDef) {
        self.err(DtdError::BadProperty {
            msg: format!("`{}.{}` is set twice here", p.path_string(), p.prop.name),
            src: self.src(),
            span: sspan(p.span),
            help: Some("remove one of the definitions".into()),
        });
    }

    /// A property outside record bodies: a default by type name, or `tag.width`.
    pub(super) fn scope_property(&mut self, p: &'a PropertyDef, scope: usize, prelude: bool) {
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
        let sc = &mut self.scopes[scope];
        match sc.defaults.entry(key) {
            std::collections::hash_map::Entry::Occupied(_) => self.twice(p),
            std::collections::hash_map::Entry::Vacant(v) => {
                let prop = Prop { def: p, val };
                if let PVal::Extra(_) = prop.val {
                    let path = v.key().0.clone();
                    sc.extras.entry(path).or_default().push(prop.clone());
                }
                v.insert(prop);
            }
        }
    }

    pub(super) fn set_tag_width(&mut self, p: &'a PropertyDef) {
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
            Ok(Some(w @ 1..=8)) => self.tag_width = w as u8,
            Ok(Some(w)) => self.err(DtdError::BadWidth {
                msg: format!("tag width {w} is out of range"),
                src: self.src(),
                span: sspan(e.span),
                help: Some("`tag.width` must be 1..8".into()),
            }),
            Ok(None) => {} // bad literal, reported by the parser
            Err(ConstError::NotConstant) => self.err(DtdError::BadWidth {
                msg: "`tag.width` must be a constant".into(),
                src: self.src(),
                span: sspan(e.span),
                help: Some(
                    "write an integer or an expression of integers, e.g. `tag.width = 1;`".into(),
                ),
            }),
            Err(ConstError::Overflow(span)) => self.err(DtdError::BadWidth {
                msg: "arithmetic overflow or negative result".into(),
                src: self.src(),
                span: sspan(span),
                help: Some("constant expressions are unsigned 64-bit integers".into()),
            }),
        }
    }

    /// Check a property value's kind. `None`: reported, ignore the property entirely.
    pub(super) fn check_value(&mut self, p: &'a PropertyDef, prelude: bool) -> Option<PVal<'a>> {
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
            ("width", _) => bad(
                self,
                "an expression",
                "e.g. `x.width = 4;` or `data.width = length.value;`",
            ),
            ("interpretation", PropValue::Interp(i)) => Some(self.interp(i)),
            ("interpretation", PropValue::Ident(id)) => bad(
                self,
                &not_an_interpretation(&id.name),
                &format!("one of: {}", InterpSpec::all_synopses()),
            ),
            ("interpretation", _) => bad(
                self,
                "an interpretation",
                &format!("one of: {}", InterpSpec::all_synopses()),
            ),
            ("value", PropValue::Expr(e)) => {
                if e.uses_value() {
                    self.err(DtdError::NonConstantValue {
                        src: self.src(),
                        span: sspan(e.span),
                    });
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
                _ => bad(
                    self,
                    "a display style",
                    "one of: decimal, hex, signed, text, bytes",
                ),
            },
            ("display", _) => bad(
                self,
                "a display style",
                "one of: decimal, hex, signed, text, bytes",
            ),
            ("liveset", PropValue::Expr(e)) if !e.uses_value() => {
                // A set number made of literals only is checked here, where it is written, so
                // that a property no record uses is refused like an unused `live 0` (§13); one
                // that reads a `.width` is checked in each record it applies to.
                match literal_value(e) {
                    Some(n) if n > crate::limits::MAX_LIVE_SETS as u64 => {
                        let e = self.live_set_outside(n, e.span);
                        self.err(e);
                        Some(PVal::Invalid)
                    }
                    _ => Some(PVal::LiveSet(e)),
                }
            }
            ("liveset", _) => bad(
                self,
                "a live set number, 0..16",
                "e.g. `address.liveset = 1;` (extension live/1, docs/format.md §13)",
            ),
            _ => Some(self.extra_value(p, prelude)),
        }
    }

    /// A property this reader does not reserve: kept as written (a warning when its name is
    /// close to a reserved one).
    fn extra_value(&mut self, p: &'a PropertyDef, prelude: bool) -> PVal<'a> {
        let name = p.prop.name.as_str();
        if let Some(near) = KNOWN_PROPS.iter().find(|k| edit_distance(name, k) <= 2) {
            self.warnings.push(DtdWarning::PropertyTypo {
                name: name.to_string(),
                suggestion: near.to_string(),
                src: self.src(),
                span: sspan(p.prop.span),
            });
        }
        let text = if prelude {
            self.prelude_text
        } else {
            self.user_text
        };
        let s = p.value.span();
        let shown = text
            .get(s.offset..s.offset + s.len)
            .unwrap_or("")
            .to_string();
        PVal::Extra(shown)
    }

    /// A live set number above the last (extension live/1).
    pub(super) fn live_set_outside(&self, n: u64, span: Span) -> DtdError {
        DtdError::BadProperty {
            msg: format!(
                "live set {n} is outside 0..{}",
                crate::limits::MAX_LIVE_SETS
            ),
            src: self.src(),
            span: sspan(span),
            help: Some(
                "extension live/1 numbers live sets 1..16; 0 is none (docs/format.md §13)".into(),
            ),
        }
    }

    pub(super) fn interp(&mut self, i: &ast::InterpDef) -> PVal<'a> {
        let mut values = Vec::with_capacity(i.args.len());
        for a in &i.args {
            let v = match a {
                ast::InterpArgDef::Int(a) => a.value(),
                ast::InterpArgDef::Section(s) => self.section_ref(s).map(u64::from),
            };
            values.push(v);
        }
        // `None` values were reported (a bad literal, an undeclared section).
        if let (
            InterpSpec {
                keyword: "live", ..
            },
            [Some(n)],
        ) = (i.spec, &values[..])
        {
            if !(1..=crate::limits::MAX_LIVE_SETS as u64).contains(n) {
                self.err(DtdError::BadInterpretation {
                    msg: format!(
                        "live set {n} is outside 1..{}",
                        crate::limits::MAX_LIVE_SETS
                    ),
                    src: self.src(),
                    span: sspan(i.span),
                    help: Some(
                        "extension live/1 numbers live sets 1..16 (docs/format.md §13)".into(),
                    ),
                });
                return PVal::Invalid;
            }
        }
        match values
            .into_iter()
            .collect::<Option<Vec<u64>>>()
            .and_then(|v| Interp::from_parts(i.spec.keyword, &v))
        {
            Some(v) => PVal::Interp(v, i.span),
            None => PVal::Invalid,
        }
    }

    pub(super) fn section_ref(&mut self, s: &ast::SectionRef) -> Option<u8> {
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
}

/// Why an expression outside a record body has no constant value.
enum ConstError {
    /// It reads a field (`.value` or `.width`): there is no record to read it in.
    NotConstant,
    /// Overflow or a negative (intermediate) result, at this sub-expression.
    Overflow(Span),
}

/// [`const_expr`] for the analysis pass: `Err(())` when the expression is not a constant.
pub(super) fn const_expr_pub(e: &ast::Expr) -> Result<Option<u64>, ()> {
    const_expr(e).map_err(|_| ())
}

/// The value of an expression of integer literals (`tag.width = 1 + 1;`): `Ok(None)` when a
/// literal was too large (already reported by the parser).
fn const_expr(e: &ast::Expr) -> Result<Option<u64>, ConstError> {
    match &e.kind {
        ast::ExprKind::Int(n) => Ok(n.value),
        ast::ExprKind::Ref { .. } => Err(ConstError::NotConstant),
        ast::ExprKind::Binary(op, a, b) => {
            let (a, b) = (const_expr(a)?, const_expr(b)?);
            let (Some(a), Some(b)) = (a, b) else {
                return Ok(None);
            };
            let r = match op {
                ast::BinOp::Add => a.checked_add(b),
                ast::BinOp::Sub => a.checked_sub(b),
                ast::BinOp::Mul => a.checked_mul(b),
            };
            r.map(Some).ok_or(ConstError::Overflow(e.span))
        }
    }
}

/// What `interpretation = NAME;` is told when NAME is no interpretation (with the nearest).
fn not_an_interpretation(name: &str) -> String {
    let near = INTERPRETATIONS
        .iter()
        .map(|s| s.keyword)
        .filter(|k| edit_distance(&name.to_ascii_lowercase(), &k.to_ascii_lowercase()) <= 2)
        .min_by_key(|k| edit_distance(name, k));
    match near {
        Some(k) => format!("an interpretation; `{name}` is not one (did you mean `{k}`?)"),
        None => format!("an interpretation; `{name}` is not one"),
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::schema;
    use crate::dtd::Interp;

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
    fn edit_distance_works() {
        assert_eq!(super::edit_distance("widht", "width"), 2);
        assert_eq!(super::edit_distance("value", "value"), 0);
        assert_eq!(super::edit_distance("", "abc"), 3);
    }
}
