//! Line patterns: literal text with typed tokens (`{field:type}`) and optional parts
//! (`[?flag:…]`), matched against one unit of input (a line without its line end, or one XML
//! tag or text run) and rendered back from the values.
//!
//! A pattern with optional parts is expanded into flat *variants* (every combination of parts
//! present or absent), so matching is a single left-to-right pass with no backtracking.

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
}

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

/// How a `str` token names its table: resolved by the caller.
pub type TableLookup<'a> = &'a dyn Fn(Option<&str>) -> Result<usize, String>;

/// The most optional parts one pattern may have (variants grow as 2^n).
pub const MAX_OPTIONAL: usize = 6;

impl Pattern {
    /// Compile pattern text (already unquoted and unescaped).
    pub fn compile(text: &[u8], tables: TableLookup<'_>) -> Result<Pattern, PatternError> {
        let mut fields = Vec::new();
        let mut pos = 0;
        let mut nopt = 0;
        let tree = parse_seq(text, &mut pos, &mut fields, tables, 0, &mut nopt)?;
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
                let adjacent = !matches!(w[0], Elem::Lit(_)) && !matches!(w[1], Elem::Lit(_));
                if adjacent {
                    return Err(PatternError {
                        message: "two tokens need literal text between them".into(),
                        at: 0,
                    });
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
    /// Match a whole unit; fills `vals` (one per field) and returns the variant index.
    pub fn matches(&self, unit: &[u8], vals: &mut Vec<Val>) -> Option<usize> {
        'variants: for (vi, v) in self.variants.iter().enumerate() {
            vals.clear();
            vals.resize(self.fields.len(), Val::Int(0));
            for &(f, x) in &v.flags {
                vals[f] = Val::Int(x);
            }
            let mut pos = 0;
            for (i, e) in v.elems.iter().enumerate() {
                match e {
                    Elem::Lit(l) => {
                        if !unit[pos..].starts_with(l) {
                            continue 'variants;
                        }
                        pos += l.len();
                    }
                    Elem::Num(f, spell) => match spell.scan(unit, pos) {
                        Some((x, end)) => {
                            vals[*f] = Val::Int(x);
                            pos = end;
                        }
                        None => continue 'variants,
                    },
                    Elem::Str(f) | Elem::BackStr(f) => {
                        let end = match v.elems.get(i + 1) {
                            Some(Elem::Lit(l)) => match find(&unit[pos..], l) {
                                Some(k) => pos + k,
                                None => continue 'variants,
                            },
                            _ => unit.len(),
                        };
                        if let Elem::BackStr(_) = e {
                            match vals[*f] {
                                Val::Span(a, b) if unit[a..b] == unit[pos..end] => {}
                                _ => continue 'variants,
                            }
                        } else {
                            vals[*f] = Val::Span(pos, end);
                        }
                        pos = end;
                    }
                    Elem::BackNum(f, spell) => match spell.scan(unit, pos) {
                        Some((x, end)) if vals[*f] == Val::Int(x) => pos = end,
                        _ => continue 'variants,
                    },
                    Elem::One(f, alts) => {
                        // The longest spelling that the unit continues with.
                        let best = alts
                            .iter()
                            .enumerate()
                            .filter(|(_, a)| unit[pos..].starts_with(a))
                            .max_by_key(|(_, a)| a.len());
                        match best {
                            Some((k, a)) => {
                                vals[*f] = Val::Int(k as u64);
                                pos += a.len();
                            }
                            None => continue 'variants,
                        }
                    }
                }
            }
            if pos == unit.len() {
                return Some(vi);
            }
        }
        None
    }

    /// The variant to render for these values (by their presence flags).
    pub fn variant_for(&self, get: &dyn Fn(usize) -> Option<u64>) -> Option<&Variant> {
        self.variants.iter().find(|v| {
            v.flags
                .iter()
                .all(|&(f, x)| get(f).map(|g| (g != 0) as u64) == Some(x))
        })
    }

    /// Render a variant from values (one per field).
    pub fn render(v: &Variant, vals: &[Out<'_>], out: &mut Vec<u8>) -> Result<(), String> {
        for e in &v.elems {
            match e {
                Elem::Lit(l) => out.extend_from_slice(l),
                Elem::Num(f, spell) | Elem::BackNum(f, spell) => match vals[*f] {
                    Out::Int(x) => spell.render(x, out),
                    Out::Bytes(_) => return Err("a string where a number was expected".into()),
                },
                Elem::One(f, alts) => match vals[*f] {
                    Out::Int(x) if (x as usize) < alts.len() => {
                        out.extend_from_slice(&alts[x as usize])
                    }
                    _ => return Err("a value outside the alternatives of `one(…)`".into()),
                },
                Elem::Str(f) | Elem::BackStr(f) => match vals[*f] {
                    Out::Bytes(b) => out.extend_from_slice(b),
                    Out::Int(_) => return Err("a number where a string was expected".into()),
                },
            }
        }
        Ok(())
    }
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
    nopt: &mut usize,
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
                optional(t, pos, fields, tables, depth, nopt)?
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
    nopt: &mut usize,
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
    *nopt += 1;
    if *nopt > MAX_OPTIONAL {
        return Err(err(format!("more than {MAX_OPTIONAL} optional parts")));
    }
    let f = field_index(fields, name, FieldKind::Int).map_err(err)?;
    // `[?flag:body]`: a colon ends the flag name.
    if t.get(name_end) != Some(&b':') {
        return Err(err("write an optional part as `[?flag:text]`".into()));
    }
    *pos = name_end + 1;
    let body = parse_seq(t, pos, fields, tables, depth + 1, nopt)?;
    if t.get(*pos) != Some(&b']') {
        return Err(err("optional part without its closing `]`".into()));
    }
    *pos += 1;
    Ok(Tree::Opt(f, body))
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
        Pattern::render(&p.variants[vi], &outs, &mut out).unwrap();
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
}
