//! Line patterns: literal text with typed tokens (`{field:type}`), optional parts
//! (`[?flag:…]`) and one repeated group (`[*list:…]`), matched against one unit of input (a
//! line without its line end, or one XML tag or text run) and rendered back from the values.
//!
//! A pattern with optional parts is expanded into flat *variants* (every combination of parts
//! present or absent), so matching is a single left-to-right pass with no backtracking.
//!
//! A repeated group's values follow the pattern's own in the values of a match: `vals[..n]`
//! are the pattern's fields (`n` = `fields.len()`), then each item's fields in order, so a
//! match of `k` items has `n + k·m` values (`m` = the group's fields).

// Design: a repeat is matched greedily — while the unit continues with the group's leading
// literal, one more item must follow — so matching stays one pass without backtracking, and
// rendering the items back writes exactly what was read. Its values are appended to the flat
// values rather than kept in a nested structure, so the engine, the routed-record spool and the
// sink keep passing one slice per record, and a match allocates nothing once the buffer has
// grown.

use super::number::NumSpell;

/// What a field of a pattern holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldKind {
    /// An integer (a number token, or an optional part's presence flag).
    Int,
    /// A string interned into the string table with this index (`str`, `str(TABLE)`);
    /// the record stores its `sectionOffset`.
    Interned(usize),
    /// A string stored inline in the record (`text`).
    Inline,
}

/// One field a pattern fills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldSpec {
    /// The field's name in the DTD record.
    pub name: String,
    /// What it holds.
    pub kind: FieldKind,
    /// For a `one(A|B|…)` token: the number of alternatives (the value is an index below it);
    /// 0 for any other field.
    pub choices: usize,
}

/// One element of a flat pattern variant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elem {
    /// Literal bytes.
    Lit(Vec<u8>),
    /// A number token filling field `.0`.
    Num(usize, NumSpell),
    /// A string token filling field `.0` (interned or inline, per the field's kind).
    Str(usize),
    /// One of several literal spellings (`one(A|B|…)`); field `.0` holds the index.
    One(usize, Vec<Vec<u8>>),
    /// A field seen before in the pattern: the same number, written again.
    BackNum(usize, NumSpell),
    /// A field seen before in the pattern: the same string, written again.
    BackStr(usize),
    /// The pattern's repeated group ([`Pattern::repeat`]): as many items as the unit has.
    Repeat,
}

/// A repeated group `[*list:BODY]`: `BODY` (a literal first, then number tokens and literals)
/// as many times as the unit has it; its fields are those of one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repeat {
    /// The list's name: the DTD repeat whose items the group fills (`inl` for
    /// `inl : n*(function, file, line)`), whose count is the number of items.
    pub name: String,
    /// The fields of one item, in order of first appearance (numbers and `one(…)` only).
    pub fields: Vec<FieldSpec>,
    /// The elements of one item (field indexes into [`Repeat::fields`]).
    pub elems: Vec<Elem>,
    /// The literal every item starts with (never empty).
    pub lead: Vec<u8>,
}

/// The most tokens one item of a repeated group may hold.
pub const MAX_ITEM_FIELDS: usize = 8;

/// A flat variant: one combination of optional parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    /// The elements in order.
    pub elems: Vec<Elem>,
    /// Presence flags fixed by this variant: (field, 0 or 1).
    pub flags: Vec<(usize, u64)>,
}

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// The fields, in order of first appearance.
    pub fields: Vec<FieldSpec>,
    /// The variants, most optional parts present first.
    pub variants: Vec<Variant>,
    /// The repeated group, if the pattern has one (at most one, outside optional parts).
    pub repeat: Option<Repeat>,
    /// The literal text every variant starts with (see [`Pattern::lead`]).
    lead: Vec<u8>,
    /// How many lines a unit of this pattern spans (1 + the `\n` in the pattern).
    pub lines: usize,
}

/// A matched value: an integer or a byte range of the unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Val {
    /// An integer.
    Int(u64),
    /// Bytes `start..end` of the unit.
    Span(usize, usize),
}

/// A value to render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Out<'a> {
    /// An integer.
    Int(u64),
    /// Bytes.
    Bytes(&'a [u8]),
}

/// A pattern compile error: message and byte offset within the pattern text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    /// What is wrong.
    pub message: String,
    /// Byte offset in the pattern text (after unescaping positions are approximate).
    pub at: usize,
}

/// A pattern as written: elements, and optional parts holding more.
enum Tree {
    Elem(Elem),
    Opt(usize, Vec<Tree>),
}

/// What the parser collects besides the fields: optional parts counted, the repeated group.
struct Extra {
    nopt: usize,
    repeat: Option<Repeat>,
}

/// How a `str` token names its table: resolved by the caller.
pub type TableLookup<'a> = &'a dyn Fn(Option<&str>) -> Result<usize, String>;

/// The most optional parts one pattern may have (variants grow as 2^n).
pub const MAX_OPTIONAL: usize = 6;

impl Pattern {
    /// Compile pattern text (already unquoted and unescaped).
    pub fn compile(text: &[u8], tables: TableLookup<'_>) -> Result<Pattern, PatternError> {
        let mut fields = Vec::new();
        let mut pos = 0;
        let mut extra = Extra {
            nopt: 0,
            repeat: None,
        };
        let tree = parse_seq(text, &mut pos, &mut fields, tables, 0, &mut extra)?;
        if pos < text.len() {
            return Err(PatternError {
                message: "unbalanced `]`".into(),
                at: pos,
            });
        }
        let mut variants = Vec::new();
        expand(&tree, Vec::new(), Vec::new(), &mut variants);
        for v in &mut variants {
            merge_lits(&mut v.elems);
            for w in v.elems.windows(2) {
                let lit = |e: &Elem| matches!(e, Elem::Lit(_));
                // A repeat starts with a literal, so a number may come right before it; a
                // string would run to the end of the unit, and whatever follows it must be text.
                let adjacent = match (&w[0], &w[1]) {
                    (Elem::Str(_) | Elem::BackStr(_), Elem::Repeat) => true,
                    (_, Elem::Repeat) => false,
                    (a, b) => !lit(a) && !lit(b),
                };
                if adjacent {
                    let message = if w.contains(&Elem::Repeat) {
                        "a repeated group needs literal text after it, and may not follow a string token"
                    } else {
                        "two tokens need literal text between them"
                    };
                    return Err(PatternError {
                        message: message.into(),
                        at: 0,
                    });
                }
            }
        }
        // Greedy items: text after the group that starts with an item's own text would always
        // be taken for another item, so the pattern could never match.
        if let Some(r) = &extra.repeat {
            for v in &variants {
                let after = v
                    .elems
                    .iter()
                    .position(|e| *e == Elem::Repeat)
                    .and_then(|i| v.elems.get(i + 1));
                if let Some(Elem::Lit(l)) = after {
                    if l.starts_with(&r.lead) {
                        return Err(PatternError {
                            message: format!(
                                "the text after the repeated group starts with its items' text `{}`, which the group would take: no unit could match",
                                String::from_utf8_lossy(&r.lead)
                            ),
                            at: 0,
                        });
                    }
                }
            }
        }
        let count = |v: &Variant| -> usize {
            v.elems
                .iter()
                .map(|e| match e {
                    Elem::Lit(l) => l.iter().filter(|&&c| c == b'\n').count(),
                    _ => 0,
                })
                .sum()
        };
        let lines = variants.first().map(count).unwrap_or(0) + 1;
        if variants.iter().any(|v| count(v) + 1 != lines) {
            return Err(PatternError {
                message: "an optional part may not hold a line end (`\\n`)".into(),
                at: 0,
            });
        }
        let lead = common_lead(&variants).to_vec();
        Ok(Pattern {
            fields,
            variants,
            repeat: extra.repeat,
            lead,
            lines,
        })
    }

    /// The literal text every variant starts with (for quick dispatch), possibly empty.
    pub fn lead(&self) -> &[u8] {
        &self.lead
    }
}

fn common_lead(variants: &[Variant]) -> &[u8] {
    let mut lead: Option<&[u8]> = None;
    for v in variants {
        let l: &[u8] = match v.elems.first() {
            Some(Elem::Lit(l)) => l,
            _ => b"",
        };
        lead = Some(match lead {
            None => l,
            Some(p) => &p[..common(p, l)],
        });
    }
    lead.unwrap_or(b"")
}

impl Pattern {
    /// Match a whole unit; fills `vals` (one per field, then the repeated group's items'
    /// fields, see the module's notes) and returns the variant index.
    pub fn matches(&self, unit: &[u8], vals: &mut Vec<Val>) -> Option<usize> {
        for (vi, v) in self.variants.iter().enumerate() {
            vals.clear();
            vals.resize(self.fields.len(), Val::Int(0));
            for &(f, x) in &v.flags {
                vals[f] = Val::Int(x);
            }
            if self.seq(&v.elems, unit, 0, vals, 0) == Some(unit.len()) {
                return Some(vi);
            }
        }
        None
    }

    /// The number of items of the repeated group in the values of a match (0 without one).
    pub fn items(&self, vals_len: usize) -> usize {
        match &self.repeat {
            Some(r) if !r.fields.is_empty() => {
                vals_len.saturating_sub(self.fields.len()) / r.fields.len()
            }
            _ => 0,
        }
    }

    /// Match `elems` at `pos` of `unit`, their field `f` stored at `vals[base + f]`; the
    /// position after them.
    fn seq(
        &self,
        elems: &[Elem],
        unit: &[u8],
        mut pos: usize,
        vals: &mut Vec<Val>,
        base: usize,
    ) -> Option<usize> {
        for (i, e) in elems.iter().enumerate() {
            match e {
                Elem::Lit(l) => {
                    if !unit[pos..].starts_with(l) {
                        return None;
                    }
                    pos += l.len();
                }
                Elem::Num(f, spell) => {
                    let (x, end) = spell.scan(unit, pos)?;
                    vals[base + f] = Val::Int(x);
                    pos = end;
                }
                Elem::Str(f) | Elem::BackStr(f) => {
                    let end = match elems.get(i + 1) {
                        Some(Elem::Lit(l)) => pos + find(&unit[pos..], l)?,
                        _ => unit.len(),
                    };
                    if let Elem::BackStr(_) = e {
                        match vals[base + f] {
                            Val::Span(a, b) if unit[a..b] == unit[pos..end] => {}
                            _ => return None,
                        }
                    } else {
                        vals[base + f] = Val::Span(pos, end);
                    }
                    pos = end;
                }
                Elem::BackNum(f, spell) => match spell.scan(unit, pos) {
                    Some((x, end)) if vals[base + f] == Val::Int(x) => pos = end,
                    _ => return None,
                },
                Elem::One(f, alts) => {
                    // The longest spelling that the unit continues with.
                    let (k, a) = alts
                        .iter()
                        .enumerate()
                        .filter(|(_, a)| unit[pos..].starts_with(a))
                        .max_by_key(|(_, a)| a.len())?;
                    vals[base + f] = Val::Int(k as u64);
                    pos += a.len();
                }
                Elem::Repeat => {
                    let r = self.repeat.as_ref()?;
                    // Greedy: while the unit continues with the item's literal, an item follows.
                    while unit[pos..].starts_with(&r.lead) {
                        let at = vals.len();
                        vals.resize(at + r.fields.len(), Val::Int(0));
                        pos = self.seq(&r.elems, unit, pos, vals, at)?;
                    }
                }
            }
        }
        Some(pos)
    }

    /// The variant to render for these values (by their presence flags).
    pub fn variant_for(&self, get: &dyn Fn(usize) -> Option<u64>) -> Option<&Variant> {
        self.variants.iter().find(|v| {
            v.flags
                .iter()
                .all(|&(f, x)| get(f).map(|g| (g != 0) as u64) == Some(x))
        })
    }

    /// Render a variant from values (one per field, then the repeated group's items' fields).
    pub fn render(&self, v: &Variant, vals: &[Out<'_>], out: &mut Vec<u8>) -> Result<(), String> {
        self.render_elems(&v.elems, vals, 0, out)
    }

    /// [`Pattern::render`] of `elems`, their field `f` at `vals[base + f]`.
    fn render_elems(
        &self,
        elems: &[Elem],
        vals: &[Out<'_>],
        base: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        for e in elems {
            if *e == Elem::Repeat {
                let Some(r) = &self.repeat else {
                    return Err("a repeated group the pattern does not have".into());
                };
                let m = r.fields.len().max(1);
                let items = vals.len().saturating_sub(self.fields.len()) / m;
                for k in 0..items {
                    for e in &r.elems {
                        render_one(e, vals, self.fields.len() + k * m, out)?;
                    }
                }
                continue;
            }
            render_one(e, vals, base, out)?;
        }
        Ok(())
    }
}

/// Render one element (not a repeat), its field `f` at `vals[base + f]`.
fn render_one(e: &Elem, vals: &[Out<'_>], base: usize, out: &mut Vec<u8>) -> Result<(), String> {
    let val = |f: usize| {
        vals.get(base + f)
            .copied()
            .ok_or_else(|| "a value missing for the pattern".to_string())
    };
    match e {
        Elem::Lit(l) => out.extend_from_slice(l),
        Elem::Num(f, spell) | Elem::BackNum(f, spell) => match val(*f)? {
            Out::Int(x) => spell.render(x, out),
            Out::Bytes(_) => return Err("a string where a number was expected".into()),
        },
        Elem::One(f, alts) => match val(*f)? {
            Out::Int(x) if (x as usize) < alts.len() => out.extend_from_slice(&alts[x as usize]),
            _ => return Err("a value outside the alternatives of `one(…)`".into()),
        },
        Elem::Str(f) | Elem::BackStr(f) => match val(*f)? {
            Out::Bytes(b) => out.extend_from_slice(b),
            Out::Int(_) => return Err("a number where a string was expected".into()),
        },
        Elem::Repeat => return Err("a repeated group inside a repeated group".into()),
    }
    Ok(())
}

fn common(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// First occurrence of `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    let first = needle[0];
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        match hay[i..=hay.len() - needle.len()]
            .iter()
            .position(|&c| c == first)
        {
            None => return None,
            Some(k) => {
                i += k;
                if hay[i..].starts_with(needle) {
                    return Some(i);
                }
                i += 1;
            }
        }
    }
    None
}

fn merge_lits(elems: &mut Vec<Elem>) {
    let mut out: Vec<Elem> = Vec::with_capacity(elems.len());
    for e in elems.drain(..) {
        match (out.last_mut(), e) {
            (Some(Elem::Lit(a)), Elem::Lit(b)) => a.extend_from_slice(&b),
            (_, Elem::Lit(b)) if b.is_empty() => {}
            (_, e) => out.push(e),
        }
    }
    *elems = out;
}

fn expand(tree: &[Tree], prefix: Vec<Elem>, flags: Vec<(usize, u64)>, out: &mut Vec<Variant>) {
    // Walk the tree; at each optional part, branch (present first).
    let mut elems = prefix;
    for (i, t) in tree.iter().enumerate() {
        match t {
            Tree::Elem(e) => elems.push(e.clone()),
            Tree::Opt(flag, body) => {
                let rest = &tree[i + 1..];
                // present: body then rest
                let mut with = Vec::new();
                expand(body, elems.clone(), flags.clone(), &mut with);
                for w in with {
                    let mut fl = w.flags;
                    fl.push((*flag, 1));
                    expand(rest, w.elems, fl, out);
                }
                let mut fl = flags;
                fl.push((*flag, 0));
                expand(rest, elems, fl, out);
                return;
            }
        }
    }
    out.push(Variant { elems, flags });
}

fn field_index(fields: &mut Vec<FieldSpec>, name: &str, kind: FieldKind) -> Result<usize, String> {
    if fields.iter().any(|f| f.name == name) {
        return Err(format!("field `{name}` appears twice in the pattern"));
    }
    fields.push(FieldSpec {
        name: name.to_string(),
        kind,
        choices: 0,
    });
    Ok(fields.len() - 1)
}

/// A field named a second time: a back-reference, which must have the same kind.
fn back_ref(fields: &[FieldSpec], name: &str, kind: &FieldKind) -> Result<Option<usize>, String> {
    match fields.iter().position(|f| f.name == name) {
        None => Ok(None),
        Some(i) if fields[i].kind == *kind && fields[i].choices == 0 => Ok(Some(i)),
        Some(_) => Err(format!(
            "field `{name}` appears twice with different types (a repeated field must repeat its type)"
        )),
    }
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && c.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// The elements of pattern text from `*pos` to its end, or to the `]` closing the optional
/// part at `depth`.
fn parse_seq(
    t: &[u8],
    pos: &mut usize,
    fields: &mut Vec<FieldSpec>,
    tables: TableLookup<'_>,
    depth: usize,
    extra: &mut Extra,
) -> Result<Vec<Tree>, PatternError> {
    let mut out = Vec::new();
    let mut lit = Vec::new();
    while *pos < t.len() {
        let c = t[*pos];
        let tree = match c {
            b'\\' if matches!(t.get(*pos + 1), Some(b'{' | b'}' | b'[' | b']' | b'\\')) => {
                lit.push(t[*pos + 1]);
                *pos += 2;
                continue;
            }
            b']' if depth > 0 => break,
            b'{' => Tree::Elem(token(t, pos, fields, tables)?),
            b'[' if t.get(*pos + 1) == Some(&b'?') => {
                optional(t, pos, fields, tables, depth, extra)?
            }
            b'[' if t.get(*pos + 1) == Some(&b'*') => {
                repeated(t, pos, tables, depth, extra)?;
                Tree::Elem(Elem::Repeat)
            }
            _ => {
                lit.push(c);
                *pos += 1;
                continue;
            }
        };
        if !lit.is_empty() {
            out.push(Tree::Elem(Elem::Lit(std::mem::take(&mut lit))));
        }
        out.push(tree);
    }
    if !lit.is_empty() {
        out.push(Tree::Elem(Elem::Lit(lit)));
    }
    Ok(out)
}

/// The token `{name:type}` at `*pos`; `*pos` moves past it.
fn token(
    t: &[u8],
    pos: &mut usize,
    fields: &mut Vec<FieldSpec>,
    tables: TableLookup<'_>,
) -> Result<Elem, PatternError> {
    let start = *pos;
    let close = t[start..]
        .iter()
        .position(|&c| c == b'}')
        .ok_or(PatternError {
            message: "`{` without `}` (write `\\{` for a literal brace)".into(),
            at: start,
        })?;
    let inner = std::str::from_utf8(&t[start + 1..start + close]).map_err(|_| PatternError {
        message: "token is not UTF-8".into(),
        at: start,
    })?;
    *pos = start + close + 1;
    let err = |m: String| PatternError {
        message: m,
        at: start,
    };
    let (name, ty) = inner.split_once(':').ok_or_else(|| {
        err(format!(
            "token `{{{inner}}}` needs a type: `{{field:type}}`"
        ))
    })?;
    if !is_name(name) {
        return Err(err(format!("`{name}` is not a field name")));
    }
    typed_token(fields, name, ty, tables).map_err(err)
}

/// The element of a token of field `name` and type `ty`.
fn typed_token(
    fields: &mut Vec<FieldSpec>,
    name: &str,
    ty: &str,
    tables: TableLookup<'_>,
) -> Result<Elem, String> {
    if let Some(spell) = NumSpell::from_type(ty) {
        return Ok(match back_ref(fields, name, &FieldKind::Int)? {
            Some(f) => Elem::BackNum(f, spell),
            None => Elem::Num(field_index(fields, name, FieldKind::Int)?, spell),
        });
    }
    if let Some(alts) = ty.strip_prefix("one(").and_then(|a| a.strip_suffix(')')) {
        let alts: Vec<Vec<u8>> = alts.split('|').map(|a| a.as_bytes().to_vec()).collect();
        if alts.iter().any(|a| a.is_empty()) || alts.len() > 255 {
            return Err("write `one(A|B|…)` with 1 to 255 non-empty spellings".into());
        }
        let f = field_index(fields, name, FieldKind::Int)?;
        fields[f].choices = alts.len();
        return Ok(Elem::One(f, alts));
    }
    let table = ty.strip_prefix("str(").and_then(|a| a.strip_suffix(')'));
    let kind = match ty {
        "text" => FieldKind::Inline,
        "str" => FieldKind::Interned(tables(None)?),
        _ if table.is_some() => FieldKind::Interned(tables(table)?),
        _ => return Err(format!(
            "unknown token type `{ty}` (dec, int, hex, HEX, 0xhex, 0xHEX, #hex, #HEX [/N], one(A|B), str, str(TABLE), text)"
        )),
    };
    Ok(match back_ref(fields, name, &kind)? {
        Some(f) => Elem::BackStr(f),
        None => Elem::Str(field_index(fields, name, kind)?),
    })
}

/// The optional part `[?flag:…]` at `*pos` (inside optional parts `depth` deep); `*pos` moves
/// past its `]`.
fn optional(
    t: &[u8],
    pos: &mut usize,
    fields: &mut Vec<FieldSpec>,
    tables: TableLookup<'_>,
    depth: usize,
    extra: &mut Extra,
) -> Result<Tree, PatternError> {
    let start = *pos;
    let name_end = t[start + 2..]
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_' || c == b'.'))
        .map(|k| start + 2 + k)
        .unwrap_or(t.len());
    let name = std::str::from_utf8(&t[start + 2..name_end]).unwrap_or("");
    let err = |m: String| PatternError {
        message: m,
        at: start,
    };
    if !is_name(name) {
        return Err(err(
            "an optional part starts `[?flag:` naming its presence field".into(),
        ));
    }
    extra.nopt += 1;
    if extra.nopt > MAX_OPTIONAL {
        return Err(err(format!("more than {MAX_OPTIONAL} optional parts")));
    }
    let f = field_index(fields, name, FieldKind::Int).map_err(err)?;
    // `[?flag:body]`: a colon ends the flag name.
    if t.get(name_end) != Some(&b':') {
        return Err(err("write an optional part as `[?flag:text]`".into()));
    }
    *pos = name_end + 1;
    let body = parse_seq(t, pos, fields, tables, depth + 1, extra)?;
    if t.get(*pos) != Some(&b']') {
        return Err(err("optional part without its closing `]`".into()));
    }
    *pos += 1;
    Ok(Tree::Opt(f, body))
}

/// The name after `[?` or `[*` at `start`, and where it ends.
fn part_name(t: &[u8], start: usize) -> (&str, usize) {
    let end = t[start + 2..]
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_' || c == b'.'))
        .map(|k| start + 2 + k)
        .unwrap_or(t.len());
    (std::str::from_utf8(&t[start + 2..end]).unwrap_or(""), end)
}

/// The repeated group `[*list:…]` at `*pos` (inside optional parts `depth` deep): kept in
/// `extra.repeat`; `*pos` moves past its `]`.
fn repeated(
    t: &[u8],
    pos: &mut usize,
    tables: TableLookup<'_>,
    depth: usize,
    extra: &mut Extra,
) -> Result<(), PatternError> {
    let start = *pos;
    let (name, name_end) = part_name(t, start);
    let err = |m: &str| PatternError {
        message: m.into(),
        at: start,
    };
    if !is_name(name) || t.get(name_end) != Some(&b':') {
        return Err(err(
            "write a repeated group as `[*list:text]`, naming the DTD repeat it fills",
        ));
    }
    if depth > 0 {
        return Err(err("a repeated group may not be inside an optional part"));
    }
    if extra.repeat.is_some() {
        return Err(err("a pattern may have one repeated group"));
    }
    let name = name.to_string();
    *pos = name_end + 1;
    // The item's fields are a naming level of their own (`inl.function`, beside `function`).
    let mut fields = Vec::new();
    let mut inner = Extra {
        nopt: MAX_OPTIONAL,
        repeat: None,
    };
    let body = parse_seq(t, pos, &mut fields, tables, depth + 1, &mut inner)?;
    if t.get(*pos) != Some(&b']') {
        return Err(err("repeated group without its closing `]`"));
    }
    *pos += 1;
    let mut elems = Vec::new();
    for tree in body {
        match tree {
            Tree::Elem(Elem::Str(_) | Elem::BackStr(_)) => {
                return Err(err(
                    "a repeated group holds number tokens and `one(…)`, not strings",
                ))
            }
            Tree::Elem(Elem::Repeat) | Tree::Opt(..) => {
                return Err(err(
                    "a repeated group may not hold optional parts or repeats",
                ))
            }
            Tree::Elem(e) => elems.push(e),
        }
    }
    merge_lits(&mut elems);
    let lead = match elems.first() {
        Some(Elem::Lit(l)) if !l.contains(&b'\n') => l.clone(),
        _ => {
            return Err(err(
                "a repeated group must start with literal text (and hold no line end)",
            ))
        }
    };
    if elems
        .iter()
        .any(|e| matches!(e, Elem::Lit(l) if l.contains(&b'\n')))
    {
        return Err(err("a repeated group may not hold a line end (`\\n`)"));
    }
    if fields.is_empty() || fields.len() > MAX_ITEM_FIELDS {
        return Err(err(&format!(
            "a repeated group holds 1 to {MAX_ITEM_FIELDS} tokens"
        )));
    }
    for w in elems.windows(2) {
        if !matches!(w[0], Elem::Lit(_)) && !matches!(w[1], Elem::Lit(_)) {
            return Err(err("two tokens need literal text between them"));
        }
    }
    extra.repeat = Some(Repeat {
        name,
        fields,
        elems,
        lead,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(p: &str) -> Pattern {
        Pattern::compile(p.as_bytes(), &|t| match t {
            None | Some("names") => Ok(0),
            Some(o) => Err(format!("no table {o}")),
        })
        .unwrap()
    }

    fn roundtrip(p: &Pattern, unit: &str) -> Option<Vec<Val>> {
        let mut vals = Vec::new();
        let vi = p.matches(unit.as_bytes(), &mut vals)?;
        let outs: Vec<Out> = vals
            .iter()
            .map(|v| match *v {
                Val::Int(x) => Out::Int(x),
                Val::Span(a, b) => Out::Bytes(&unit.as_bytes()[a..b]),
            })
            .collect();
        let mut out = Vec::new();
        p.render(&p.variants[vi], &outs, &mut out).unwrap();
        assert_eq!(out, unit.as_bytes());
        Some(vals)
    }

    #[test]
    fn numbers_strings_and_optional_parts() {
        let p = compile("D {objid:dec} {thread:dec} {time:dec}[?more: {extra:dec}]");
        assert_eq!(p.fields.len(), 5);
        assert_eq!(p.variants.len(), 2);
        assert_eq!(p.lead(), b"D ");
        let v = roundtrip(&p, "D 1 2 3 4").unwrap();
        assert_eq!(v[3], Val::Int(1));
        assert_eq!(v[4], Val::Int(4));
        let v = roundtrip(&p, "D 1 2 3").unwrap();
        assert_eq!(v[3], Val::Int(0));
        assert!(roundtrip(&p, "D 1 2 03").is_none());
        assert!(roundtrip(&p, "D 1  2 3").is_none());
        let q = compile("{id:dec} {owner:str} {name:str(names)}");
        let v = roundtrip(&q, "14 sun.launcher.LauncherHelper printLocales").unwrap();
        assert_eq!(v[1], Val::Span(3, 30));
        let x = compile(r#"<a x="{x:0xhex}" t="{s:dec}.{ns:dec/9}"/>"#);
        roundtrip(&x, r#"<a x="0xff" t="12.000000500"/>"#).unwrap();
        assert!(roundtrip(&x, r#"<a x="0xFF" t="12.000000500"/>"#).is_none());
    }

    #[test]
    fn compile_errors() {
        let lookup: TableLookup = &|_| Ok(0);
        assert!(Pattern::compile(b"{a:dec}{b:dec}", lookup).is_err());
        assert!(Pattern::compile(b"{a:float}", lookup).is_err());
        assert!(Pattern::compile(b"{a}", lookup).is_err());
        assert!(Pattern::compile(b"[?f x", lookup).is_err());
        assert!(Pattern::compile(b"{a:dec} {a:str}", lookup).is_err());
        assert!(Pattern::compile(b"{a:one()}", lookup).is_err());
        assert!(Pattern::compile(b"x[?f:\n]", lookup).is_err());
    }

    #[test]
    fn alternatives_back_references_and_lines() {
        let p = compile("{f:one(free|_ZdlPv|_ZdlPvm)}({a:0xHEX})");
        let v = roundtrip(&p, "_ZdlPvm(0x1F)").unwrap();
        assert_eq!(v[0], Val::Int(2));
        assert_eq!(roundtrip(&p, "free(0x1F)").unwrap()[0], Val::Int(0));
        assert!(roundtrip(&p, "fre(0x1F)").is_none());
        assert_eq!(p.fields[0].choices, 3);
        let q = compile("@ {c:str} < {old:0xhex}\n@ {c:str} > {new:0xhex} {size:#hex}");
        assert_eq!(q.lines, 2);
        roundtrip(&q, "@ ./a:[0x1] < 0x10\n@ ./a:[0x1] > 0x20 0").unwrap();
        assert!(roundtrip(&q, "@ ./a:[0x1] < 0x10\n@ ./b:[0x1] > 0x20 0x8").is_none());
        let r = compile("{n:dec} {n:dec}");
        assert!(roundtrip(&r, "3 3").is_some());
        assert!(roundtrip(&r, "3 4").is_none());
    }

    #[test]
    fn repeated_groups() {
        let p = compile(
            "i {ip:hex} {module:hex}[?f: {function:hex} {file:hex} {line:hex}][*inl: {function:hex} {file:hex} {line:hex}]",
        );
        let r = p.repeat.as_ref().unwrap();
        assert_eq!(
            (r.name.as_str(), r.fields.len(), r.lead.as_slice()),
            ("inl", 3, &b" "[..])
        );
        // No item, one, two: the items' values follow the pattern's own six.
        let v = roundtrip(&p, "i 7f 8 c d 79").unwrap();
        assert_eq!((v.len(), p.items(v.len()), v[2]), (6, 0, Val::Int(1)));
        let v = roundtrip(&p, "i 7f 8 e d 4a e d 1a").unwrap();
        assert_eq!(p.items(v.len()), 1);
        assert_eq!(&v[6..], &[Val::Int(0xe), Val::Int(0xd), Val::Int(0x1a)]);
        let v = roundtrip(&p, "i 5 1 16 15 8 17 15 10 18 15 15").unwrap();
        assert_eq!(
            (p.items(v.len()), v[9], v[11]),
            (2, Val::Int(0x18), Val::Int(0x15))
        );
        let v = roundtrip(&p, "i 5 1").unwrap();
        assert_eq!((p.items(v.len()), v[2]), (0, Val::Int(0)));
        // Greedy, no backtracking: an item started must be whole; no trailing text.
        assert!(roundtrip(&p, "i 5 1 16 15 8 17").is_none());
        assert!(roundtrip(&p, "i 5 1 16 15 8 17 15 10 ").is_none());
        assert!(roundtrip(&p, "i 5 1 16 15 8  17 15 10").is_none());
        // Text after the group, back-references inside an item, a single-field group.
        let q = compile("B[*xs:,{x:dec}:{x:dec}];");
        let v = roundtrip(&q, "B,1:1,22:22;").unwrap();
        assert_eq!(&v[..], &[Val::Int(1), Val::Int(22)]);
        assert!(roundtrip(&q, "B,1:2;").is_none());
        assert!(roundtrip(&q, "B;").is_some());
    }

    #[test]
    fn repeated_group_errors() {
        let lookup: TableLookup = &|_| Ok(0);
        let err = |p: &str| Pattern::compile(p.as_bytes(), lookup).unwrap_err().message;
        assert!(
            err("a[*r:{x:dec}]").contains("start with literal"),
            "{}",
            err("a[*r:{x:dec}]")
        );
        assert!(err("a[*r: x]").contains("1 to 8 tokens"));
        assert!(err("a[*r: {x:dec}][*s: {y:dec}]").contains("one repeated group"));
        assert!(err("a[?o: [*r: {x:dec}]]").contains("inside an optional part"));
        assert!(err("a[*r: {x:str}]").contains("not strings"));
        assert!(err("a[*r: {x:dec}[?o: y]]").contains("optional parts"));
        assert!(err("a[*r: {x:dec}]{y:dec}").contains("literal text after it"));
        assert!(err("a {s:str}[*r: {x:dec}]").contains("may not follow a string"));
        assert!(err("a[*r: {x:dec}").contains("closing"));
        assert!(err("a[*: {x:dec}]").contains("[*list:text]"));
        assert!(err("a[*r: {x:dec}\n]").contains("line end"));
        assert!(err("a[*r: {x:dec}] ;").contains("which the group would take"));
    }
}
