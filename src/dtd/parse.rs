//! The DTD parser: text → [`Dtd`] (docs/format.md §3.1–3.2).
//!
//! One small method per grammar rule, built from nom 7 combinators. The parser never stops at
//! the first problem: a statement that does not parse is reported and skipped up to the next `;`
//! or `}` at its own nesting level, so one run reports every syntax error of a file.

// Design: the rules are methods of `Parser`, which holds the whole text (spans are computed as
// `text.len() - remaining.len()`, kdl-rs style), the list of problems found so far, and the
// current nesting depth. Problems that do not derail parsing (an integer that is too large, an
// unterminated comment) are pushed to the list and parsing goes on; real syntax errors travel
// as nom errors up to the nearest statement loop (`block`), which records them and resynchronises.
// Every token rule skips leading white space and comments itself, so an error always points at
// the offending token and never at the blank before it.

use std::cell::{Cell, RefCell};

use nom::bytes::complete::{tag, take_while, take_while1};
use nom::combinator::{cut, opt, recognize};
use nom::error::{ErrorKind, ParseError};
use nom::sequence::pair;
use nom::IResult;

use super::ast::*;
use super::ids::Span;
use super::schema::{InterpArg, InterpSpec};

pub use crate::limits::MAX_DTD_DEPTH as MAX_DEPTH;

/// A problem found while parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseProblem {
    /// Input that does not match the grammar.
    Syntax {
        /// What would have been accepted here (already formatted, e.g. "`;`").
        expected: Vec<&'static str>,
        /// What was found instead ("end of file", "`foo`", "`@`").
        found: String,
        /// The offending token.
        span: Span,
    },
    /// `/*` without `*/`.
    UnterminatedComment {
        /// The `/*`.
        span: Span,
    },
    /// An integer literal over 2⁶⁴−1.
    BadInteger {
        /// The literal.
        span: Span,
    },
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep {
        /// Where the limit was crossed.
        span: Span,
    },
}

/// Parse DTD text. Always returns a tree (of what could be parsed) and the problems found; the
/// text is valid only if the list is empty.
pub fn parse(text: &str) -> (Dtd, Vec<ParseProblem>) {
    let p = Parser::new(text);
    let (_, items) = p.block(text, BlockKind::Top, |i| p.item(i, true));
    let mut problems = p.problems.into_inner();
    if p.comment_unterminated.get() {
        // Everything after an unterminated comment was swallowed; "expected `}`, found end of
        // file" would only repeat the same problem.
        problems.retain(
            |e| !matches!(e, ParseProblem::Syntax { span, .. } if span.offset == text.len()),
        );
    }
    (Dtd { items }, problems)
}

/// A nom error: where it happened and what would have been accepted there.
#[derive(Debug, Clone, PartialEq)]
pub struct PError<'a> {
    /// The remaining input at the error.
    pub input: &'a str,
    /// Expected tokens (empty: a generic error).
    pub expected: Vec<&'static str>,
    /// The nesting limit was crossed.
    pub too_deep: bool,
}

impl<'a> PError<'a> {
    fn expected(input: &'a str, what: &'static str) -> Self {
        PError {
            input,
            expected: vec![what],
            too_deep: false,
        }
    }
}

impl<'a> ParseError<&'a str> for PError<'a> {
    fn from_error_kind(input: &'a str, _kind: ErrorKind) -> Self {
        PError {
            input,
            expected: Vec::new(),
            too_deep: false,
        }
    }

    fn append(_input: &'a str, _kind: ErrorKind, other: Self) -> Self {
        other
    }

    // Keep the error that got furthest; merge the expectations of equally far ones so that the
    // message lists every alternative ("expected `,` or `)`").
    fn or(self, other: Self) -> Self {
        use std::cmp::Ordering::*;
        match self.input.len().cmp(&other.input.len()) {
            Less => self,
            Greater => other,
            Equal => {
                let mut merged = self;
                for e in other.expected {
                    if !merged.expected.contains(&e) {
                        merged.expected.push(e);
                    }
                }
                merged.too_deep |= other.too_deep;
                merged
            }
        }
    }
}

/// Result type of every rule.
pub type PResult<'a, T> = IResult<&'a str, T, PError<'a>>;

#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockKind {
    Top,
    Braced,
}

struct Parser<'a> {
    text: &'a str,
    problems: RefCell<Vec<ParseProblem>>,
    depth: Cell<usize>,
    comment_unterminated: Cell<bool>,
}

/// Restores the nesting depth when a rule returns, whichever way it returns.
struct DepthGuard<'p> {
    depth: &'p Cell<usize>,
    saved: usize,
}

impl Drop for DepthGuard<'_> {
    fn drop(&mut self) {
        self.depth.set(self.saved);
    }
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Convert a nom error outcome into the inner error (both kinds are reported the same way).
fn inner<'a>(e: nom::Err<PError<'a>>, at: &'a str) -> PError<'a> {
    match e {
        nom::Err::Error(e) | nom::Err::Failure(e) => e,
        nom::Err::Incomplete(_) => PError::expected(at, "more input"),
    }
}

impl<'a> Parser<'a> {
    fn new(text: &'a str) -> Self {
        Parser {
            text,
            problems: RefCell::new(Vec::new()),
            depth: Cell::new(0),
            comment_unterminated: Cell::new(false),
        }
    }

    fn offset(&self, rest: &'a str) -> usize {
        self.text.len() - rest.len()
    }

    /// The span from `start` (remaining input before) to `end` (remaining input after).
    fn span(&self, start: &'a str, end: &'a str) -> Span {
        Span {
            offset: self.offset(start),
            len: start.len() - end.len(),
        }
    }

    fn problem(&self, p: ParseProblem) {
        self.problems.borrow_mut().push(p);
    }

    /// Enter one nesting level; fails (without backtracking) beyond [`MAX_DEPTH`].
    fn nest(&self, i: &'a str) -> Result<(), nom::Err<PError<'a>>> {
        let d = self.depth.get() + 1;
        if d > MAX_DEPTH {
            return Err(nom::Err::Failure(PError {
                input: i,
                expected: Vec::new(),
                too_deep: true,
            }));
        }
        self.depth.set(d);
        Ok(())
    }

    fn guard(&self) -> DepthGuard<'_> {
        DepthGuard {
            depth: &self.depth,
            saved: self.depth.get(),
        }
    }

    // ---- lexical rules -------------------------------------------------------------------

    /// White space and comments. Never fails; an unterminated `/*` is recorded and swallows the
    /// rest of the input.
    fn ws(&self, mut i: &'a str) -> &'a str {
        loop {
            let t = i.trim_start_matches([' ', '\t', '\r', '\n']);
            if let Some(rest) = t.strip_prefix("//") {
                i = rest.find('\n').map_or("", |n| &rest[n..]);
            } else if let Some(rest) = t.strip_prefix("/*") {
                match rest.find("*/") {
                    Some(n) => i = &rest[n + 2..],
                    None => {
                        if !self.comment_unterminated.replace(true) {
                            self.problem(ParseProblem::UnterminatedComment {
                                span: Span {
                                    offset: self.offset(t),
                                    len: 2,
                                },
                            });
                        }
                        return "";
                    }
                }
            } else {
                return t;
            }
        }
    }

    /// A punctuation token.
    fn sym(&self, i: &'a str, s: &'static str, what: &'static str) -> PResult<'a, Span> {
        let i = self.ws(i);
        match tag::<_, _, PError<'a>>(s)(i) {
            Ok((rest, _)) => Ok((rest, self.span(i, rest))),
            Err(_) => Err(nom::Err::Error(PError::expected(i, what))),
        }
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`
    fn ident(&self, i: &'a str) -> PResult<'a, Ident> {
        let i = self.ws(i);
        let r: PResult<'a, &'a str> =
            recognize(pair(take_while1(is_ident_start), take_while(is_ident_char)))(i);
        match r {
            Ok((rest, name)) => Ok((
                rest,
                Ident {
                    name: name.to_string(),
                    span: self.span(i, rest),
                },
            )),
            Err(_) => Err(nom::Err::Error(PError::expected(i, "an identifier"))),
        }
    }

    /// An identifier that must be `kw`.
    fn keyword(&self, i: &'a str, kw: &'static str, what: &'static str) -> PResult<'a, Ident> {
        match self.ident(i) {
            Ok((rest, id)) if id.name == kw => Ok((rest, id)),
            _ => Err(nom::Err::Error(PError::expected(self.ws(i), what))),
        }
    }

    /// Decimal or `0x` hexadecimal. Too-large literals are recorded and yield `value: None`.
    fn integer(&self, i: &'a str) -> PResult<'a, IntLit> {
        let i = self.ws(i);
        let hex: PResult<'a, &'a str> = recognize(pair(
            tag("0x"), // only lower-case, as §3.1 defines
            take_while1(|c: char| c.is_ascii_hexdigit()),
        ))(i);
        let (rest, text, radix) = match hex {
            Ok((rest, t)) => (rest, &t[2..], 16),
            Err(_) => match take_while1::<_, _, PError<'a>>(|c: char| c.is_ascii_digit())(i) {
                Ok((rest, t)) => (rest, t, 10),
                Err(_) => return Err(nom::Err::Error(PError::expected(i, "an integer"))),
            },
        };
        let span = self.span(i, rest);
        let value = u64::from_str_radix(text, radix).ok();
        if value.is_none() {
            self.problem(ParseProblem::BadInteger { span });
        }
        Ok((rest, IntLit { value, span }))
    }

    // ---- statements ----------------------------------------------------------------------

    /// A sequence of statements, up to the end of input (`Top`) or a `}` (`Braced`, the `}` is
    /// left for the caller). Statements that fail are reported and skipped.
    fn block<T>(
        &self,
        mut i: &'a str,
        kind: BlockKind,
        mut stmt: impl FnMut(&'a str) -> PResult<'a, T>,
    ) -> (&'a str, Vec<T>) {
        let mut out = Vec::new();
        loop {
            i = self.ws(i);
            if i.is_empty() {
                return (i, out);
            }
            if i.starts_with('}') {
                if kind == BlockKind::Braced {
                    return (i, out);
                }
                self.report(PError::expected(i, "a property or record definition"));
                i = &i[1..];
                continue;
            }
            match stmt(i) {
                Ok((rest, v)) => {
                    out.push(v);
                    i = rest;
                }
                Err(e) => {
                    let e = inner(e, i);
                    let at = e.input;
                    self.report(e);
                    let next = self.recover(at);
                    // Always make progress, even if the error was at a resynchronisation point.
                    i = if next.len() >= i.len() {
                        skip_char(i)
                    } else {
                        next
                    };
                }
            }
        }
    }

    /// Skip to just after the next `;` or balanced `{ … }` at this nesting level, or to just
    /// before a `}` that closes the enclosing block.
    fn recover(&self, i: &'a str) -> &'a str {
        let mut depth = 0usize;
        let mut rest = i;
        loop {
            rest = self.ws(rest);
            let Some(c) = rest.chars().next() else {
                return rest;
            };
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => return rest,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        let after = self.ws(&rest[1..]);
                        return after.strip_prefix(';').unwrap_or(&rest[1..]);
                    }
                }
                ';' if depth == 0 => return &rest[1..],
                _ => {}
            }
            rest = &rest[c.len_utf8()..];
        }
    }

    fn report(&self, e: PError<'a>) {
        let at = e.input;
        let found_len = token_len(at);
        let span = Span {
            offset: self.offset(at),
            len: found_len,
        };
        if e.too_deep {
            self.problem(ParseProblem::TooDeep { span });
            return;
        }
        let found = if at.is_empty() {
            "end of file".to_string()
        } else {
            format!("`{}`", &at[..found_len])
        };
        let mut expected = e.expected;
        if expected.is_empty() {
            expected.push("a valid token");
        }
        self.problem(ParseProblem::Syntax {
            expected,
            found,
            span,
        });
    }

    /// `top_item` (`top` = true) or an item of a section block.
    fn item(&self, i: &'a str, top: bool) -> PResult<'a, Item> {
        let i = self.ws(i);
        if let Ok((after_kw, _)) = self.keyword(i, "section", "") {
            // `section NAME …` opens a section; `section : …` / `section.x` are ordinary
            // definitions (of a reserved name, which the resolver rejects).
            if self.ident(after_kw).is_ok() {
                if !top {
                    return Err(nom::Err::Error(PError::expected(
                        i,
                        "a property or record definition",
                    )));
                }
                let (rest, s) = self.section_def(i)?;
                return Ok((rest, Item::Section(s)));
            }
        }
        if let Ok((after_kw, _)) = self.keyword(i, "include", "") {
            // `include NAME;` takes in a built-in fragment; `include : …` / `include.x` are
            // ordinary definitions.
            if let Ok((rest, name)) = self.ident(after_kw) {
                if !top {
                    return Err(nom::Err::Error(PError::expected(
                        i,
                        "a property or record definition",
                    )));
                }
                let (rest, _) = self.sym(rest, ";", "`;`")?;
                return Ok((rest, Item::Include(name)));
            }
        }
        let (rest, _) = self
            .ident(i)
            .map_err(|_| nom::Err::Error(PError::expected(i, "a property or record definition")))?;
        if self.sym(rest, ":", "").is_ok() {
            let (rest, r) = self.record_def(i)?;
            return Ok((rest, Item::Record(r)));
        }
        if self.sym(rest, ".", "").is_ok() {
            let (rest, p) = self.property_def(i)?;
            return Ok((rest, Item::Property(p)));
        }
        Err(nom::Err::Error(PError {
            input: self.ws(rest),
            expected: vec!["`:`", "`.`"],
            too_deep: false,
        }))
    }

    /// `section NAME ID { items } [;]`
    fn section_def(&self, i: &'a str) -> PResult<'a, SectionDef> {
        let start = self.ws(i);
        let (i, _) = self.keyword(start, "section", "`section`")?;
        let (i, name) = self.ident(i)?;
        let (i, id) = self.integer(i)?;
        let (i, _) = self.sym(i, "{", "`{`")?;
        let (i, items) = self.block(i, BlockKind::Braced, |i| self.item(i, false));
        let (i, _) = self.sym(i, "}", "`}`")?;
        let (i, _) = opt(|i| self.sym(i, ";", ""))(i)?;
        Ok((
            i,
            SectionDef {
                name,
                id,
                items,
                span: self.span(start, i),
            },
        ))
    }

    /// `NAME : ( field_list | type ) [record_body] [;]`
    fn record_def(&self, i: &'a str) -> PResult<'a, RecordDef> {
        let start = self.ws(i);
        let (i, name) = self.ident(start)?;
        let (i, _) = self.sym(i, ":", "`:`")?;
        let (i, fields, of_type) = if self.ws(i).starts_with('(') {
            let (i, fields) = self.field_list(i)?;
            (i, fields, None)
        } else {
            let (rest, ty) = self.ident(i).map_err(|_| {
                nom::Err::Error(PError {
                    input: self.ws(i),
                    expected: vec!["`(`", "a type name"],
                    too_deep: false,
                })
            })?;
            let item = FieldItem {
                name: None,
                ty: FieldType::Named(ty.clone()),
                span: ty.span,
            };
            let list = FieldList {
                items: vec![item],
                span: ty.span,
            };
            (rest, list, Some(ty))
        };
        let (i, body) = match self.sym(i, "{", "") {
            Ok((i, _)) => {
                let (i, body) = self.block(i, BlockKind::Braced, |i| self.property_def(i));
                let (i, _) = self.sym(i, "}", "`}`")?;
                (i, body)
            }
            Err(_) => (i, Vec::new()),
        };
        let (i, _) = opt(|i| self.sym(i, ";", ""))(i)?;
        Ok((
            i,
            RecordDef {
                name,
                fields,
                of_type,
                body,
                span: self.span(start, i),
            },
        ))
    }

    /// `( field_item { , field_item } )`
    fn field_list(&self, i: &'a str) -> PResult<'a, FieldList> {
        let _g = self.guard();
        let start = self.ws(i);
        let (mut i, _) = self.sym(start, "(", "`(`")?;
        self.nest(start)?;
        let mut items = Vec::new();
        loop {
            let (rest, item) = self.field_item(i)?;
            items.push(item);
            i = rest;
            match self.sym(i, ",", "`,`") {
                Ok((rest, _)) => i = rest,
                Err(e1) => match self.sym(i, ")", "`)`") {
                    Ok((rest, _)) => {
                        return Ok((
                            rest,
                            FieldList {
                                items,
                                span: self.span(start, rest),
                            },
                        ));
                    }
                    Err(e2) => return Err(nom::Err::Error(inner(e1, i).or(inner(e2, i)))),
                },
            }
        }
    }

    /// `[ NAME : ] field_type`
    fn field_item(&self, i: &'a str) -> PResult<'a, FieldItem> {
        let start = self.ws(i);
        let (i, name) = opt(|i| {
            let (i, id) = self.ident(i)?;
            let (i, _) = self.sym(i, ":", "`:`")?;
            Ok((i, id))
        })(start)?;
        let (i, ty) = self.field_type(i)?;
        Ok((
            i,
            FieldItem {
                name,
                ty,
                span: self.span(start, i),
            },
        ))
    }

    /// `NAME [ * field_type ]` or a composite `( … )`.
    fn field_type(&self, i: &'a str) -> PResult<'a, FieldType> {
        let start = self.ws(i);
        if start.starts_with('(') {
            let (i, list) = self.field_list(start)?;
            return Ok((i, FieldType::Composite(list)));
        }
        let (i, id) = self.ident(start).map_err(|_| {
            nom::Err::Error(PError {
                input: start,
                expected: vec!["a field type", "`(`"],
                too_deep: false,
            })
        })?;
        match self.sym(i, "*", "") {
            Ok((after, _)) => {
                let _g = self.guard();
                self.nest(after)?;
                let (i, item) = self.field_type(after)?;
                Ok((
                    i,
                    FieldType::Repeat {
                        count: id,
                        item: Box::new(item),
                        span: self.span(start, i),
                    },
                ))
            }
            Err(_) => Ok((i, FieldType::Named(id))),
        }
    }

    /// `path . prop = value ;`
    fn property_def(&self, i: &'a str) -> PResult<'a, PropertyDef> {
        let start = self.ws(i);
        let (mut i, first) = self.ident(start)?;
        let mut idents = vec![first];
        while let Ok((rest, _)) = self.sym(i, ".", "") {
            let (rest, id) = self.ident(rest)?;
            idents.push(id);
            i = rest;
        }
        if idents.len() < 2 {
            return Err(nom::Err::Error(PError::expected(self.ws(i), "`.`")));
        }
        let (i, _) = self.sym(i, "=", "`=`")?;
        let prop = idents.pop().expect("at least two identifiers");
        let (i, value) = self.prop_value(i, &prop.name)?;
        let (i, _) = self.sym(i, ";", "`;`")?;
        Ok((
            i,
            PropertyDef {
                path: idents,
                prop,
                value,
                span: self.span(start, i),
            },
        ))
    }

    /// `interp | expr | ident`; interpretations only after `interpretation =`.
    fn prop_value(&self, i: &'a str, prop: &str) -> PResult<'a, PropValue> {
        let i = self.ws(i);
        if prop == "interpretation" {
            match self.interp(i) {
                Ok((rest, v)) => return Ok((rest, PropValue::Interp(v))),
                Err(nom::Err::Error(_)) => {} // not a keyword: the resolver reports the kind
                Err(e) => return Err(e),
            }
            // An unknown word with arguments (`defualt 0`): the word and its arguments up to
            // the `;` on the same line are one value, so that the resolver gives the same help
            // (the list of interpretations, the nearest one) as for the word alone.
            if let Ok((rest, id)) = self.ident(i) {
                let line = rest.split('\n').next().unwrap_or("");
                if let Some(at) = line.find(';') {
                    let args = &line[..at];
                    if !args.trim().is_empty() && !args.contains(['{', '}', '=']) {
                        let rest = &rest[args.trim_end().len()..];
                        let span = self.span(self.ws(i), rest);
                        return Ok((
                            rest,
                            PropValue::Ident(Ident {
                                name: id.name,
                                span,
                            }),
                        ));
                    }
                }
            }
        }
        if let Ok((rest, id)) = self.ident(i) {
            if self.sym(rest, ";", "").is_ok() {
                return Ok((rest, PropValue::Ident(id)));
            }
        }
        let (rest, e) = self.expr(i)?;
        Ok((rest, PropValue::Expr(e)))
    }

    /// An interpretation keyword and its arguments, as listed in [`super::schema::INTERPRETATIONS`]. Once the
    /// keyword is recognised, missing or malformed arguments are errors (no backtracking).
    fn interp(&self, i: &'a str) -> PResult<'a, InterpDef> {
        let start = self.ws(i);
        let (mut i, kw) = self.ident(start)?;
        let Some(spec) = InterpSpec::by_keyword(&kw.name) else {
            return Err(nom::Err::Error(PError::expected(
                start,
                "an interpretation",
            )));
        };
        let mut args = Vec::with_capacity(spec.args.len());
        for kind in spec.args {
            let (rest, a) = match kind {
                InterpArg::Section => {
                    cut(|i| self.section_ref(i))(i).map(|(r, s)| (r, InterpArgDef::Section(s)))?
                }
                InterpArg::Value | InterpArg::Stride | InterpArg::Set => {
                    cut(|i| self.arg(i))(i).map(|(r, a)| (r, InterpArgDef::Int(a)))?
                }
            };
            args.push(a);
            i = rest;
        }
        Ok((
            i,
            InterpDef {
                spec,
                args,
                span: self.span(start, i),
            },
        ))
    }

    /// `[-] integer`
    fn arg(&self, i: &'a str) -> PResult<'a, Arg> {
        let start = self.ws(i);
        let (i, neg) = opt(|i| self.sym(i, "-", ""))(start)?;
        let (i, int) = self
            .integer(i)
            .map_err(|_| nom::Err::Error(PError::expected(self.ws(i), "an integer argument")))?;
        Ok((
            i,
            Arg {
                negative: neg.is_some(),
                int,
                span: self.span(start, i),
            },
        ))
    }

    /// `integer | NAME`
    fn section_ref(&self, i: &'a str) -> PResult<'a, SectionRef> {
        if let Ok((rest, n)) = self.integer(i) {
            return Ok((rest, SectionRef::Id(n)));
        }
        match self.ident(i) {
            Ok((rest, id)) => Ok((rest, SectionRef::Name(id))),
            Err(_) => Err(nom::Err::Error(PError::expected(
                self.ws(i),
                "a section id or name",
            ))),
        }
    }

    /// `term { (+|-) term }`
    fn expr(&self, i: &'a str) -> PResult<'a, Expr> {
        let (i, (e, _)) = self.expr_depth(i)?;
        Ok((i, e))
    }

    /// An expression's levels (docs/format.md §3.4): each operator is one level above its
    /// operands, each pair of parentheses one level above what they hold; more than
    /// [`MAX_DEPTH`] fails at the operator or parenthesis that makes one too many.
    fn deeper(&self, depth: usize, at: &'a str) -> Result<usize, nom::Err<PError<'a>>> {
        if depth > MAX_DEPTH {
            return Err(nom::Err::Failure(PError {
                input: at,
                expected: Vec::new(),
                too_deep: true,
            }));
        }
        Ok(depth)
    }

    /// [`Parser::expr`] with its levels.
    fn expr_depth(&self, i: &'a str) -> PResult<'a, (Expr, usize)> {
        let start = self.ws(i);
        let (mut i, (mut acc, mut depth)) = self.term(start)?;
        loop {
            let op = if let Ok((r, _)) = self.sym(i, "+", "") {
                (r, BinOp::Add)
            } else if let Ok((r, _)) = self.sym(i, "-", "") {
                (r, BinOp::Sub)
            } else {
                return Ok((i, (acc, depth)));
            };
            let (rest, (rhs, d)) = self.term(op.0)?;
            // `a - b + c` is `(a - b) + c`: the operator is above both operands.
            depth = self.deeper(1 + depth.max(d), self.ws(i))?;
            acc = Expr {
                kind: ExprKind::Binary(op.1, Box::new(acc), Box::new(rhs)),
                span: self.span(start, rest),
            };
            i = rest;
        }
    }

    /// `atom { * atom }`, with its levels.
    fn term(&self, i: &'a str) -> PResult<'a, (Expr, usize)> {
        let start = self.ws(i);
        let (mut i, (mut acc, mut depth)) = self.atom(start)?;
        while let Ok((r, _)) = self.sym(i, "*", "") {
            let (rest, (rhs, d)) = self.atom(r)?;
            depth = self.deeper(1 + depth.max(d), self.ws(i))?;
            acc = Expr {
                kind: ExprKind::Binary(BinOp::Mul, Box::new(acc), Box::new(rhs)),
                span: self.span(start, rest),
            };
            i = rest;
        }
        Ok((i, (acc, depth)))
    }

    /// `integer | path . (value|width) | ( expr )`, with its levels. The parentheses open
    /// so far are counted on the way down too (the parser's recursion): never more than the
    /// levels of the whole expression.
    fn atom(&self, i: &'a str) -> PResult<'a, (Expr, usize)> {
        let start = self.ws(i);
        if let Ok((i, n)) = self.integer(start) {
            return Ok((
                i,
                (
                    Expr {
                        kind: ExprKind::Int(n),
                        span: self.span(start, i),
                    },
                    0,
                ),
            ));
        }
        if let Ok((i, _)) = self.sym(start, "(", "") {
            let _g = self.guard();
            self.nest(start)?;
            let (i, (e, d)) = self.expr_depth(i)?;
            let (i, _) = self.sym(i, ")", "`)`")?;
            let depth = self.deeper(d + 1, start)?;
            return Ok((
                i,
                (
                    Expr {
                        kind: e.kind,
                        span: self.span(start, i),
                    },
                    depth,
                ),
            ));
        }
        let (mut i, first) = self.ident(start).map_err(|_| {
            nom::Err::Error(PError {
                input: start,
                expected: vec!["an integer", "a field reference", "`(`"],
                too_deep: false,
            })
        })?;
        let mut path = vec![first];
        while let Ok((rest, _)) = self.sym(i, ".", "") {
            let (rest, id) = self.ident(rest)?;
            path.push(id);
            i = rest;
        }
        let last = path.pop().expect("non-empty");
        let prop = match last.name.as_str() {
            "value" if !path.is_empty() => RefProp::Value,
            "width" if !path.is_empty() => RefProp::Width,
            _ => {
                // `x` alone: expected `.value` after it; `a.b`: `b` should have been a property.
                let at = if path.is_empty() {
                    self.ws(i)
                } else {
                    &self.text[last.span.offset..]
                };
                return Err(nom::Err::Failure(PError {
                    input: at,
                    expected: vec!["`.value`", "`.width`"],
                    too_deep: false,
                }));
            }
        };
        Ok((
            i,
            (
                Expr {
                    kind: ExprKind::Ref { path, prop },
                    span: self.span(start, i),
                },
                0,
            ),
        ))
    }
}

/// Length of the token at the start of `s`, for error spans: a whole identifier/number, or one
/// character.
fn token_len(s: &str) -> usize {
    let word = s.find(|c: char| !is_ident_char(c)).unwrap_or(s.len());
    if word > 0 {
        word
    } else {
        s.chars().next().map_or(0, char::len_utf8)
    }
}

fn skip_char(s: &str) -> &str {
    let mut c = s.chars();
    c.next();
    c.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Dtd {
        let (d, p) = parse(text);
        assert!(p.is_empty(), "unexpected problems: {p:?}");
        d
    }

    fn problems(text: &str) -> Vec<ParseProblem> {
        parse(text).1
    }

    #[test]
    fn empty_and_comments() {
        assert!(ok("").items.is_empty());
        assert!(ok("// hi\n/* a\n b */  // x").items.is_empty());
    }

    #[test]
    fn unterminated_comment() {
        let p = problems("a : (tag) { /* never closed");
        assert_eq!(
            p,
            vec![ParseProblem::UnterminatedComment {
                span: Span { offset: 12, len: 2 }
            }]
        );
    }

    #[test]
    fn global_property() {
        let d = ok("tag.width = 2;");
        let Item::Property(p) = &d.items[0] else {
            panic!()
        };
        assert_eq!(p.path_string(), "tag");
        assert_eq!(p.prop.name, "width");
        assert_eq!(p.span, Span { offset: 0, len: 14 });
        let PropValue::Expr(e) = &p.value else {
            panic!()
        };
        assert!(matches!(
            e.kind,
            ExprKind::Int(IntLit { value: Some(2), .. })
        ));
    }

    #[test]
    fn record_with_body() {
        let d = ok("alloc : (tag, size, n : address, vfield) { tag.value = 4; }");
        let Item::Record(r) = &d.items[0] else {
            panic!()
        };
        assert_eq!(r.name.name, "alloc");
        assert_eq!(r.fields.items.len(), 4);
        assert_eq!(r.fields.items[2].name.as_ref().unwrap().name, "n");
        assert_eq!(r.body.len(), 1);
        assert_eq!(r.span.len, 59);
    }

    #[test]
    fn repeats_and_composites() {
        let d = ok("r : (tag, n * (a, m * b), k * c);");
        let Item::Record(r) = &d.items[0] else {
            panic!()
        };
        let FieldType::Repeat { count, item, .. } = &r.fields.items[1].ty else {
            panic!()
        };
        assert_eq!(count.name, "n");
        let FieldType::Composite(list) = &**item else {
            panic!()
        };
        assert!(matches!(list.items[1].ty, FieldType::Repeat { .. }));
    }

    #[test]
    fn interpretations() {
        let d = ok(
            "a.interpretation = sectionStride strings -2; b.interpretation = default -1;\
                    c.interpretation = stride 0x10 3; d.interpretation = sectionOffset 4;",
        );
        let Item::Property(p) = &d.items[0] else {
            panic!()
        };
        let PropValue::Interp(InterpDef { spec, args, .. }) = &p.value else {
            panic!()
        };
        assert_eq!(spec.keyword, "sectionStride");
        let [InterpArgDef::Section(SectionRef::Name(n)), InterpArgDef::Int(s)] = &args[..] else {
            panic!("{args:?}")
        };
        assert_eq!(n.name, "strings");
        assert_eq!(s.value(), Some(-2i64 as u64));
    }

    #[test]
    fn interpretation_missing_argument_is_syntax_error() {
        let p = problems("a.interpretation = default;");
        assert!(
            matches!(&p[0], ParseProblem::Syntax { expected, .. } if expected == &vec!["an integer argument"])
        );
    }

    #[test]
    fn expressions() {
        let d = ok("x.width = (a.b.value + 2) * tag.width - 1;");
        let Item::Property(p) = &d.items[0] else {
            panic!()
        };
        let PropValue::Expr(e) = &p.value else {
            panic!()
        };
        assert!(e.uses_value());
        let ExprKind::Binary(BinOp::Sub, lhs, _) = &e.kind else {
            panic!()
        };
        let ExprKind::Binary(BinOp::Mul, inner, _) = &lhs.kind else {
            panic!()
        };
        let ExprKind::Binary(BinOp::Add, r, _) = &inner.kind else {
            panic!()
        };
        let ExprKind::Ref { path, prop } = &r.kind else {
            panic!()
        };
        assert_eq!(join_path(path), "a.b");
        assert_eq!(*prop, RefProp::Value);
    }

    #[test]
    fn ident_value() {
        let d = ok("x.display = hex;");
        let Item::Property(p) = &d.items[0] else {
            panic!()
        };
        assert!(matches!(&p.value, PropValue::Ident(i) if i.name == "hex"));
    }

    #[test]
    fn sections() {
        let d = ok("section heap 1 { a : (tag) { tag.value = 4; } size.width = 4; };");
        let Item::Section(s) = &d.items[0] else {
            panic!()
        };
        assert_eq!(s.name.name, "heap");
        assert_eq!(s.id.value, Some(1));
        assert_eq!(s.items.len(), 2);
    }

    #[test]
    fn hex_and_big_integers() {
        let d = ok("a.value = 0xFF;");
        let Item::Property(p) = &d.items[0] else {
            panic!()
        };
        assert!(matches!(
            &p.value,
            PropValue::Expr(Expr {
                kind: ExprKind::Int(IntLit {
                    value: Some(255),
                    ..
                }),
                ..
            })
        ));
        let p = problems("a.value = 18446744073709551616;");
        assert!(matches!(p[0], ParseProblem::BadInteger { .. }));
    }

    #[test]
    fn recovery_reports_every_error() {
        let text = "a : (tag, x y) { tag.value = 4; }\n b : (tag) { tag.value = ; c.width = 1; }\n d.width = 3 3;\n e : (tag) { tag.value = 5; }";
        let (d, p) = parse(text);
        assert_eq!(p.len(), 3, "{p:?}");
        // b, the property before the error in d, and e survive.
        let names: Vec<_> = d
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Record(r) => Some(r.name.name.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(names, ["b", "e"]);
        let Item::Record(b) = &d.items[0] else {
            panic!()
        };
        assert_eq!(b.body.len(), 1);
    }

    #[test]
    fn syntax_error_message() {
        let p = problems("a : (tag, x y);");
        assert_eq!(
            p,
            vec![ParseProblem::Syntax {
                expected: vec!["`,`", "`)`"],
                found: "`y`".into(),
                span: Span { offset: 12, len: 1 }
            }]
        );
    }

    #[test]
    fn stray_brace_and_unknown_chars() {
        let p = problems("} é; @; a.width = 1;");
        assert_eq!(p.len(), 3, "{p:?}");
    }

    #[test]
    fn nesting_is_capped() {
        let deep = format!("r : (tag, {}x{});", "(".repeat(200), ")".repeat(200));
        let p = problems(&deep);
        assert!(
            p.iter().any(|e| matches!(e, ParseProblem::TooDeep { .. })),
            "{p:?}"
        );
        let long = format!("x.width = {};", vec!["1"; 500].join(" + "));
        assert!(problems(&long)
            .iter()
            .any(|e| matches!(e, ParseProblem::TooDeep { .. })));
        let rep = format!("r : (tag, {}x);", "n * ".repeat(300));
        assert!(problems(&rep)
            .iter()
            .any(|e| matches!(e, ParseProblem::TooDeep { .. })));
        let parens = format!("x.width = {}1{};", "(".repeat(300), ")".repeat(300));
        assert!(problems(&parens)
            .iter()
            .any(|e| matches!(e, ParseProblem::TooDeep { .. })));
    }

    #[test]
    fn section_keyword_as_record_name_parses() {
        ok("section : (tag, number) { tag.value = 2; }");
    }

    /// Appendix B of the paper (as printed, restored only where extraction lost text) parses, and
    /// its `vfield` and `comment` are the prelude's (the prelude writes `comment : vfield`, as the
    /// paper does).
    #[test]
    fn paper_appendix_b() {
        use crate::dtd::ast::{Dtd, Item, RecordDef};
        let text = include_str!("../../tests/data/dtd/paper/appendix_b.dtd");
        let (paper, problems) = parse(text);
        assert!(problems.is_empty(), "{problems:?}");
        let (prelude, _) = parse(crate::dtd::PRELUDE);
        let find = |d: &Dtd, name: &str| -> RecordDef {
            d.items
                .iter()
                .find_map(|i| match i {
                    Item::Record(r) if r.name.name == name => Some(r.clone()),
                    _ => None,
                })
                .unwrap()
        };
        let shape = |r: &RecordDef, src: &str| {
            let fields: Vec<String> = r
                .fields
                .items
                .iter()
                .map(|f| src[f.span.offset..f.span.offset + f.span.len].to_string())
                .collect();
            let body: Vec<String> = r
                .body
                .iter()
                .map(|p| src[p.span.offset..p.span.offset + p.span.len].replace(' ', ""))
                .collect();
            (fields, r.of_type.as_ref().map(|t| t.name.clone()), body)
        };
        assert_eq!(
            shape(&find(&paper, "vfield"), text),
            shape(&find(&prelude, "vfield"), crate::dtd::PRELUDE)
        );
        let (pf, pt, pb) = shape(&find(&paper, "comment"), text);
        let (qf, qt, qb) = shape(&find(&prelude, "comment"), crate::dtd::PRELUDE);
        assert_eq!((pf, pt), (qf, qt));
        // The prelude adds only a display hint.
        assert_eq!(pb, ["tag.value=1;"]);
        assert_eq!(qb, ["tag.value=1;", "vfield.data.display=text;"]);
    }
}
