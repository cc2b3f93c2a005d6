//! The span-carrying syntax tree of a DTD, as written (docs/format.md §3.2).
//!
//! Nothing here is checked beyond the grammar: names are not looked up, properties are not
//! validated. [`super::resolve`] turns a [`Dtd`] into a [`super::Schema`].

// Design: every node carries the `Span` of the text it was parsed from, so that the resolver can
// point at the exact token when it reports a problem. Spans are byte ranges into the text the
// tree was parsed from; the prelude and the user's DTD are parsed separately, so the resolver
// must know which text a node came from (it marks prelude items, see `resolve`).

use super::ids::Span;
use super::schema::InterpSpec;

/// A whole DTD file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dtd {
    /// Top-level items in file order.
    pub items: Vec<Item>,
}

/// A top-level item, or an item inside a `section` block (which cannot hold sections).
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// `path.prop = value;`
    Property(PropertyDef),
    /// `name : (fields) { properties }`
    Record(RecordDef),
    /// `section name id { items }`
    Section(SectionDef),
    /// `include name;` (top level only): the built-in fragment `name` (docs/format.md §3.5).
    Include(Ident),
}

/// An identifier with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ident {
    /// The identifier text.
    pub name: String,
    /// Where it was written.
    pub span: Span,
}

/// An integer literal. `value` is `None` when the literal does not fit in 64 bits (the parser has
/// already reported it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntLit {
    /// The value, if representable.
    pub value: Option<u64>,
    /// Where it was written.
    pub span: Span,
}

/// `section NAME ID { items }`.
#[derive(Debug, Clone, PartialEq)]
pub struct SectionDef {
    /// The section name.
    pub name: Ident,
    /// The section id as written (range-checked by the resolver).
    pub id: IntLit,
    /// Property and record definitions of the section, in order.
    pub items: Vec<Item>,
    /// The whole definition.
    pub span: Span,
}

/// `name : (fields) { properties }`, or `name : type { properties }`.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordDef {
    /// The record type name.
    pub name: Ident,
    /// The field list. For `name : type`, a list of the one item `type`.
    pub fields: FieldList,
    /// `Some(type)` when the record was defined as `name : type` (docs/format.md §4.2): with a
    /// `tag.value` in its body it means `name : (tag, type)`, else it is an alias of `type`.
    pub of_type: Option<Ident>,
    /// The property definitions of the body (empty when there is no body).
    pub body: Vec<PropertyDef>,
    /// The whole definition.
    pub span: Span,
}

/// `( item, item, … )`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldList {
    /// The items, at least one.
    pub items: Vec<FieldItem>,
    /// From `(` to `)`.
    pub span: Span,
}

/// `[name :] type`.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldItem {
    /// The explicit field name, if given.
    pub name: Option<Ident>,
    /// The field's type.
    pub ty: FieldType,
    /// The whole item.
    pub span: Span,
}

/// What a field item is made of.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldType {
    /// A scalar field type or the name of a nested record type.
    Named(Ident),
    /// `count * item`.
    Repeat {
        /// The count field (a scalar type name).
        count: Ident,
        /// The repeated item.
        item: Box<FieldType>,
        /// The whole repeat.
        span: Span,
    },
    /// `( items )`.
    Composite(FieldList),
}

impl FieldType {
    /// Where this type was written.
    pub fn span(&self) -> Span {
        match self {
            FieldType::Named(id) => id.span,
            FieldType::Repeat { span, .. } => *span,
            FieldType::Composite(list) => list.span,
        }
    }
}

/// `a.b.prop = value;`.
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyDef {
    /// The field path (at least one identifier).
    pub path: Vec<Ident>,
    /// The property name (the last identifier before `=`).
    pub prop: Ident,
    /// The value.
    pub value: PropValue,
    /// The whole definition, `;` included.
    pub span: Span,
}

impl PropertyDef {
    /// The path joined with `.`.
    pub fn path_string(&self) -> String {
        join_path(&self.path)
    }
}

/// Join identifiers with `.`.
pub fn join_path(path: &[Ident]) -> String {
    let mut s = String::new();
    for (i, id) in path.iter().enumerate() {
        if i > 0 {
            s.push('.');
        }
        s.push_str(&id.name);
    }
    s
}

/// The right-hand side of a property definition.
#[derive(Debug, Clone, PartialEq)]
pub enum PropValue {
    /// An interpretation (only parsed after `interpretation =`).
    Interp(InterpDef),
    /// An arithmetic expression.
    Expr(Expr),
    /// A bare identifier (`display = hex`).
    Ident(Ident),
}

impl PropValue {
    /// Where the value was written.
    pub fn span(&self) -> Span {
        match self {
            PropValue::Interp(i) => i.span,
            PropValue::Expr(e) => e.span,
            PropValue::Ident(i) => i.span,
        }
    }
}

/// An interpretation with its arguments, as written. Which keywords exist and what arguments
/// they take is [`super::schema::INTERPRETATIONS`]; the parser reads the arguments that the
/// keyword's entry lists, so `args` matches `spec.args` one to one.
#[derive(Debug, Clone, PartialEq)]
pub struct InterpDef {
    /// The keyword's entry in the interpretation table.
    pub spec: &'static InterpSpec,
    /// The arguments, in the order of `spec.args`.
    pub args: Vec<InterpArgDef>,
    /// The whole interpretation text.
    pub span: Span,
}

/// One interpretation argument as written.
#[derive(Debug, Clone, PartialEq)]
pub enum InterpArgDef {
    /// A (possibly negated) integer: [`super::schema::InterpArg::Value`] or [`super::schema::InterpArg::Stride`].
    Int(Arg),
    /// A section id or name: [`super::schema::InterpArg::Section`].
    Section(SectionRef),
}

/// An interpretation argument: an optionally negated integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arg {
    /// Whether a leading `-` was written.
    pub negative: bool,
    /// The magnitude.
    pub int: IntLit,
    /// The whole argument, sign included.
    pub span: Span,
}

impl Arg {
    /// The argument as a 64-bit two's complement value (`None` if the literal was too large).
    pub fn value(&self) -> Option<u64> {
        let v = self.int.value?;
        Some(if self.negative { v.wrapping_neg() } else { v })
    }
}

/// A section named by id or name.
#[derive(Debug, Clone, PartialEq)]
pub enum SectionRef {
    /// By id.
    Id(IntLit),
    /// By name.
    Name(Ident),
}

impl SectionRef {
    /// Where the reference was written.
    pub fn span(&self) -> Span {
        match self {
            SectionRef::Id(i) => i.span,
            SectionRef::Name(n) => n.span,
        }
    }
}

/// An arithmetic expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// The expression.
    pub kind: ExprKind,
    /// Its text.
    pub span: Span,
}

/// Which field property an expression reference reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefProp {
    /// `.value`: the interpreted value of an earlier field (dynamic).
    Value,
    /// `.width`: the declared width (static).
    Width,
}

/// Binary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
}

/// The shapes of [`Expr`].
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// An integer literal.
    Int(IntLit),
    /// `path.value` or `path.width`.
    Ref {
        /// The field path.
        path: Vec<Ident>,
        /// The property read.
        prop: RefProp,
    },
    /// `a op b`.
    Binary(BinOp, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// Whether the expression reads any `.value` (is dynamic).
    pub fn uses_value(&self) -> bool {
        match &self.kind {
            ExprKind::Int(_) => false,
            ExprKind::Ref { prop, .. } => *prop == RefProp::Value,
            ExprKind::Binary(_, a, b) => a.uses_value() || b.uses_value(),
        }
    }
}
