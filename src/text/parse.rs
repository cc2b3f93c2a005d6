//! Reading the text form (docs/text-format.md) and its JSON-lines twin, and writing the records
//! they describe through a [`TraceWriter`].

// Design: a line is first tokenised into a small tree of keyed values (`TVal`), independent of
// the schema; a second step walks the record's layout tree and turns the tree into the flat,
// ordered list of values the encoder takes. Keeping the steps apart lets text and JSON share the
// second one.

use std::fmt;
use std::io::BufRead;

use crate::decode::MetaProperty;
use crate::dtd::{Expr, Interp, Node, RecordId, RecordType, Schema, SlotKind};
use crate::write::{In, TraceWriter, WriteError};

/// A parsed value of the text form.
#[derive(Debug, Clone, PartialEq)]
pub enum TVal {
    /// An integer (negative ones as two's complement).
    Int(u64),
    /// A quoted string or `x"…"` byte string.
    Bytes(Vec<u8>),
    /// `@offset`.
    Offset(u64),
    /// `#index`.
    Index(u64),
    /// `[ … ]`.
    List(Vec<TVal>),
    /// `{ key=value … }`.
    Group(Vec<(String, usize, TVal)>),
    /// A bare word (only in annotations and `section NAME`).
    Word(String),
}

/// An error in the text input, with its position.
#[derive(Debug)]
pub struct TextError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters; 1 for JSON lines).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for TextError {}

/// The `%mtf` header line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextHeader {
    /// DTD name to store.
    pub dtd: String,
    /// 32 or 64.
    pub class_bits: u32,
    /// Big-endian?
    pub big_endian: bool,
}

impl TextHeader {
    /// The trace class the header names.
    pub fn class(&self) -> crate::container::Class {
        if self.class_bits == 64 {
            crate::container::Class::Bits64
        } else {
            crate::container::Class::Bits32
        }
    }

    /// The byte order the header names.
    pub fn byte_order(&self) -> crate::container::ByteOrder {
        if self.big_endian {
            crate::container::ByteOrder::Big
        } else {
            crate::container::ByteOrder::Little
        }
    }
}

struct Lexer<'a> {
    s: &'a str,
    pos: usize,
    line: usize,
}

impl<'a> Lexer<'a> {
    fn err(&self, at: usize, m: impl Into<String>) -> TextError {
        TextError {
            line: self.line,
            column: self.s[..at.min(self.s.len())].chars().count() + 1,
            message: m.into(),
        }
    }
    fn skip_ws(&mut self) {
        while let Some(c) = self.s[self.pos..].chars().next() {
            if c == ' ' || c == '\t' || c == '\r' {
                self.pos += 1;
            } else {
                break;
            }
        }
    }
    fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }
    fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.pos >= self.s.len() || self.peek() == Some('#') && self.s[self.pos..].starts_with("# ")
    }
    fn word(&mut self) -> Option<&'a str> {
        self.skip_ws();
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        (self.pos > start).then(|| &self.s[start..self.pos])
    }
    fn int(&mut self) -> Result<u64, TextError> {
        let start = self.pos;
        let neg = self.s[self.pos..].starts_with('-');
        if neg {
            self.pos += 1;
        }
        let body_start = self.pos;
        let hex = self.s[self.pos..].starts_with("0x") || self.s[self.pos..].starts_with("0X");
        if hex {
            self.pos += 2;
        }
        let digits_start = self.pos;
        while let Some(c) = self.peek() {
            if (hex && c.is_ascii_hexdigit()) || c.is_ascii_digit() {
                self.pos += 1;
            } else {
                break;
            }
        }
        let digits = &self.s[digits_start..self.pos];
        if digits.is_empty() {
            return Err(self.err(start, "expected a number"));
        }
        let v = if hex {
            u64::from_str_radix(digits, 16)
        } else {
            digits.parse::<u64>()
        }
        .map_err(|_| self.err(body_start, format!("number {digits} is larger than 2^64-1")))?;
        if neg {
            if v > 1u64 << 63 {
                return Err(self.err(start, "negative number below -2^63"));
            }
            Ok((v as i64).wrapping_neg() as u64)
        } else {
            Ok(v)
        }
    }
    fn string(&mut self) -> Result<Vec<u8>, TextError> {
        let start = self.pos;
        self.pos += 1; // opening quote
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.err(start, "unterminated string"));
            };
            self.pos += c.len_utf8();
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let Some(e) = self.peek() else {
                        return Err(self.err(start, "unterminated string"));
                    };
                    self.pos += 1;
                    match e {
                        'n' => out.push(b'\n'),
                        'r' => out.push(b'\r'),
                        't' => out.push(b'\t'),
                        '0' => out.push(0),
                        '"' => out.push(b'"'),
                        '\\' => out.push(b'\\'),
                        'x' => {
                            let h = self.s.get(self.pos..self.pos + 2).unwrap_or("");
                            let b = u8::from_str_radix(h, 16)
                                .map_err(|_| self.err(self.pos - 2, "\\x needs two hex digits"))?;
                            self.pos += 2;
                            out.push(b);
                        }
                        _ => return Err(self.err(self.pos - 2, format!("unknown escape \\{e}"))),
                    }
                }
                c => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
    }
    fn hexbytes(&mut self) -> Result<Vec<u8>, TextError> {
        let start = self.pos;
        self.pos += 2; // x"
        let end = self.s[self.pos..]
            .find('"')
            .ok_or_else(|| self.err(start, "unterminated byte string"))?;
        let h = &self.s[self.pos..self.pos + end];
        if let Some(i) = h.find(|c: char| !c.is_ascii_hexdigit()) {
            return Err(self.err(self.pos + i, "bad hex digit in a byte string"));
        }
        if h.len() % 2 != 0 {
            return Err(self.err(start, "a byte string needs an even number of hex digits"));
        }
        let mut out = Vec::with_capacity(h.len() / 2);
        for i in (0..h.len()).step_by(2) {
            out.push(
                u8::from_str_radix(&h[i..i + 2], 16)
                    .map_err(|_| self.err(self.pos + i, "bad hex digit"))?,
            );
        }
        self.pos += end + 1;
        Ok(out)
    }
    /// A value with its optional `:annotation` and `~raw` (both ignored).
    fn value(&mut self, depth: usize) -> Result<TVal, TextError> {
        if depth > 32 {
            return Err(self.err(self.pos, "nesting too deep"));
        }
        self.skip_ws();
        let start = self.pos;
        let v = match self.peek() {
            Some('"') => TVal::Bytes(self.string()?),
            Some('x') if self.s[self.pos..].starts_with("x\"") => TVal::Bytes(self.hexbytes()?),
            Some('@') => {
                self.pos += 1;
                TVal::Offset(self.int()?)
            }
            Some('#') => {
                self.pos += 1;
                TVal::Index(self.int()?)
            }
            Some('[') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    match self.peek() {
                        Some(']') => {
                            self.pos += 1;
                            break;
                        }
                        Some(',') => self.pos += 1,
                        None => return Err(self.err(start, "unterminated list")),
                        _ => items.push(self.value(depth + 1)?),
                    }
                }
                TVal::List(items)
            }
            Some('{') => {
                self.pos += 1;
                let mut fields = Vec::new();
                loop {
                    self.skip_ws();
                    match self.peek() {
                        Some('}') => {
                            self.pos += 1;
                            break;
                        }
                        None => return Err(self.err(start, "unterminated group")),
                        _ => fields.push(self.pair(depth + 1)?),
                    }
                }
                TVal::Group(fields)
            }
            Some(c) if c == '-' || c.is_ascii_digit() => TVal::Int(self.int()?),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                TVal::Word(self.word().unwrap_or("").to_string())
            }
            _ => return Err(self.err(start, "expected a value")),
        };
        if self.peek() == Some(':') {
            self.pos += 1;
            if self.peek() == Some('?') {
                self.pos += 1;
            } else {
                self.value(depth + 1)?;
            }
        }
        if self.peek() == Some('~') {
            self.pos += 1;
            self.int()?;
        }
        Ok(v)
    }
    fn pair(&mut self, depth: usize) -> Result<(String, usize, TVal), TextError> {
        self.skip_ws();
        let at = self.pos;
        let Some(k) = self.word() else {
            return Err(self.err(at, "expected `name=value`"));
        };
        if self.peek() != Some('=') {
            return Err(self.err(self.pos, format!("expected `=` after `{k}`")));
        }
        self.pos += 1;
        let v = self.value(depth)?;
        Ok((k.to_string(), at, v))
    }
}

/// One parsed input line.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// The `%mtf` header.
    Header(TextHeader),
    /// `section N` / `section number=N` / `section NAME`.
    Section(TVal),
    /// `metadata record.field property args…`.
    Metadata {
        /// `record.field`.
        target: String,
        /// Property name.
        property: String,
        /// Arguments.
        args: Vec<TVal>,
    },
    /// A record with its keyed values (key, character offset, value).
    Record {
        /// Record name.
        name: String,
        /// Fields.
        fields: Vec<(String, usize, TVal)>,
    },
}

/// Parse one line of the text form; `None` for blank and comment lines.
pub fn parse_text_line(s: &str, line: usize) -> Result<Option<(Line, Vec<usize>)>, TextError> {
    let mut lx = Lexer { s, pos: 0, line };
    lx.skip_ws();
    if lx.at_end()
        || lx.peek() == Some('#') && !s.trim_start()[1..].starts_with(|c: char| c.is_ascii_digit())
    {
        return Ok(None);
    }
    if lx.peek() == Some('%') {
        lx.pos += 1;
        let w = lx.word();
        if w != Some("mtf") {
            return Err(lx.err(0, "expected a `%mtf 1 dtd=… class=… order=…` header"));
        }
        let v = lx.value(0)?;
        if v != TVal::Int(1) {
            return Err(lx.err(
                0,
                "unsupported text-form version (this mtf reads version 1)",
            ));
        }
        let mut h = TextHeader {
            dtd: String::new(),
            class_bits: 32,
            big_endian: false,
        };
        while !lx.at_end() {
            let (k, at, v) = lx.pair(0)?;
            match (k.as_str(), v) {
                ("dtd", TVal::Bytes(b)) => {
                    h.dtd = String::from_utf8(b).map_err(|_| lx.err(at, "DTD name is not UTF-8"))?
                }
                ("dtd", TVal::Word(w)) => h.dtd = w,
                ("class", TVal::Int(32)) => h.class_bits = 32,
                ("class", TVal::Int(64)) => h.class_bits = 64,
                ("order", TVal::Word(w)) if w == "little" => h.big_endian = false,
                ("order", TVal::Word(w)) if w == "big" => h.big_endian = true,
                (k, _) => {
                    return Err(lx.err(
                        at,
                        format!("bad header item `{k}` (dtd=\"…\", class=32|64, order=little|big)"),
                    ))
                }
            }
        }
        if h.dtd.is_empty() {
            return Err(lx.err(0, "the header needs dtd=\"NAME\""));
        }
        return Ok(Some((Line::Header(h), vec![])));
    }
    if lx.peek() == Some('@') {
        lx.pos += 1;
        lx.int()?;
    }
    let name_at = lx.pos;
    let Some(name) = lx.word() else {
        return Err(lx.err(lx.pos, "expected a record name"));
    };
    let name = name.to_string();
    if name == "section" {
        lx.skip_ws();
        let v = if s[lx.pos..].starts_with("number=") {
            lx.pair(0)?.2
        } else {
            lx.value(0)?
        };
        if !lx.at_end() {
            return Err(lx.err(lx.pos, "unexpected text after the section"));
        }
        return Ok(Some((Line::Section(v), vec![name_at])));
    }
    if name == "metadata" {
        lx.skip_ws();
        let t_at = lx.pos;
        let Some(target) = lx.word() else {
            return Err(lx.err(lx.pos, "expected `record.field` after metadata"));
        };
        let target = target.to_string();
        let p_at = lx.pos;
        let Some(property) = lx.word() else {
            return Err(lx.err(lx.pos, "expected a property (width, none, baseOffset, delta, default, sectionOffset, stride, sectionStride)"));
        };
        let property = property.to_string();
        let mut args = Vec::new();
        while !lx.at_end() {
            args.push(lx.value(0)?);
        }
        return Ok(Some((
            Line::Metadata {
                target,
                property,
                args,
            },
            vec![name_at, t_at, p_at],
        )));
    }
    let mut fields = Vec::new();
    while !lx.at_end() {
        fields.push(lx.pair(0)?);
    }
    Ok(Some((Line::Record { name, fields }, vec![name_at])))
}

/// Convert a JSON value of a dump into a text-form value.
fn from_json(v: &serde_json::Value) -> Result<TVal, String> {
    use serde_json::Value as J;
    Ok(match v {
        J::Number(n) => {
            if let Some(u) = n.as_u64() {
                TVal::Int(u)
            } else if let Some(i) = n.as_i64() {
                TVal::Int(i as u64)
            } else {
                return Err(format!("{n} is not an integer"));
            }
        }
        J::String(s) => TVal::Bytes(s.as_bytes().to_vec()),
        J::Array(a) => TVal::List(a.iter().map(from_json).collect::<Result<_, _>>()?),
        J::Object(m) => {
            if let Some(J::String(h)) = m.get("hex") {
                let mut lx = Lexer {
                    s: "",
                    pos: 0,
                    line: 0,
                };
                let quoted = format!("x\"{h}\"");
                lx.s = &quoted;
                TVal::Bytes(lx.hexbytes().map_err(|e| e.message)?)
            } else if let Some(o) = m.get("offset").and_then(J::as_u64) {
                TVal::Offset(o)
            } else if let Some(i) = m.get("index").and_then(J::as_i64) {
                TVal::Index(i as u64)
            } else if let (Some(v), true) = (m.get("value"), m.contains_key("raw")) {
                from_json(v)?
            } else {
                TVal::Group(
                    m.iter()
                        .map(|(k, v)| Ok((k.clone(), 0, from_json(v)?)))
                        .collect::<Result<_, String>>()?,
                )
            }
        }
        J::Bool(_) | J::Null => return Err("unexpected true/false/null".into()),
    })
}

/// Parse one JSON line of a `--format jsonl` dump.
pub fn parse_json_line(s: &str, line: usize) -> Result<Option<(Line, Vec<usize>)>, TextError> {
    let err = |m: String| TextError {
        line,
        column: 1,
        message: m,
    };
    if s.trim().is_empty() {
        return Ok(None);
    }
    let v: serde_json::Value = serde_json::from_str(s).map_err(|e| TextError {
        line,
        column: e.column(),
        message: format!("bad JSON: {e}"),
    })?;
    let obj = v
        .as_object()
        .ok_or_else(|| err("expected a JSON object".into()))?;
    if obj.contains_key("mtf") {
        let dtd = obj
            .get("dtd")
            .and_then(|d| d.as_str())
            .ok_or_else(|| err("header needs \"dtd\"".into()))?;
        let class_bits = match obj.get("class").and_then(|c| c.as_u64()) {
            Some(32) => 32,
            Some(64) => 64,
            _ => return Err(err("header needs \"class\": 32 or 64".into())),
        };
        let big_endian = match obj.get("order").and_then(|o| o.as_str()) {
            Some("little") => false,
            Some("big") => true,
            _ => return Err(err("header needs \"order\": \"little\" or \"big\"".into())),
        };
        return Ok(Some((
            Line::Header(TextHeader {
                dtd: dtd.to_string(),
                class_bits,
                big_endian,
            }),
            vec![],
        )));
    }
    let name = obj
        .get("record")
        .and_then(|r| r.as_str())
        .ok_or_else(|| err("expected \"record\"".into()))?
        .to_string();
    if let Some(set) = obj.get("set") {
        let g = |k: &str| set.get(k).and_then(|x| x.as_str()).map(str::to_string);
        let (Some(r), Some(f), Some(p)) = (g("record"), g("field"), g("property")) else {
            return Err(err("\"set\" needs record, field and property".into()));
        };
        let args = match set.get("args") {
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .map(from_json)
                .collect::<Result<_, _>>()
                .map_err(err)?,
            _ => vec![],
        };
        return Ok(Some((
            Line::Metadata {
                target: format!("{r}.{f}"),
                property: p,
                args,
            },
            vec![0, 0, 0],
        )));
    }
    let fields = match obj.get("fields") {
        Some(serde_json::Value::Object(m)) => m
            .iter()
            .map(|(k, v)| Ok((k.clone(), 0, from_json(v)?)))
            .collect::<Result<Vec<_>, String>>()
            .map_err(err)?,
        None => vec![],
        _ => return Err(err("\"fields\" must be an object".into())),
    };
    if name == "section" {
        let n = fields
            .iter()
            .find(|f| f.0 == "number")
            .map(|f| f.2.clone())
            .ok_or_else(|| err("section needs number".into()))?;
        return Ok(Some((Line::Section(n), vec![0])));
    }
    Ok(Some((Line::Record { name, fields }, vec![0])))
}

/// Turn a record line's values into the encoder's ordered list, walking the layout.
pub fn record_inputs(
    rt: &RecordType,
    fields: &[(String, usize, TVal)],
) -> Result<Vec<In>, (Option<usize>, String)> {
    let mut out = Vec::new();
    let mut used = vec![false; fields.len()];
    walk(rt, &rt.layout, fields, &mut used, "", true, &mut out)?;
    if let Some(i) = used.iter().position(|u| !u) {
        return Err((
            Some(fields[i].1),
            format!("record `{}` has no field `{}`", rt.name, fields[i].0),
        ));
    }
    Ok(out)
}

fn find<'f>(
    fields: &'f [(String, usize, TVal)],
    used: &mut [bool],
    key: &str,
) -> Option<(usize, &'f TVal)> {
    let i = fields.iter().position(|f| f.0 == key)?;
    used[i] = true;
    Some((fields[i].1, &fields[i].2))
}

fn walk(
    rt: &RecordType,
    nodes: &[Node],
    fields: &[(String, usize, TVal)],
    used: &mut [bool],
    strip: &str,
    top: bool,
    out: &mut Vec<In>,
) -> Result<(), (Option<usize>, String)> {
    for (i, node) in nodes.iter().enumerate() {
        match node {
            Node::Field(0) if top && i == 0 => {}
            Node::Field(s) => {
                let slot = &rt.slots[*s as usize];
                let k = slot.name.strip_prefix(strip).unwrap_or(&slot.name);
                let input = match find(fields, used, k) {
                    Some((at, v)) => to_input(v).map_err(|m| (Some(at), format!("{k}: {m}")))?,
                    None => infer(rt, *s, nodes, fields, strip).unwrap_or(In::Auto),
                };
                out.push(input);
            }
            Node::Group { children, .. } => walk(rt, children, fields, used, strip, false, out)?,
            Node::Repeat { name, count, item } => {
                let full = super::repeat_key(rt, name, item);
                let k = full.strip_prefix(strip).unwrap_or(&full);
                let (at, list) = match find(fields, used, k) {
                    Some((at, TVal::List(l))) => (at, l.as_slice()),
                    Some((at, _)) => return Err((Some(at), format!("{k}: expected a list [ … ]"))),
                    None => (0, &[][..]),
                };
                // The count field was pushed just before; fill it in when it was left out.
                if let Some(last @ In::Auto) = out.last_mut() {
                    *last = In::Int(list.len() as u64);
                }
                let _ = count;
                let inner = format!("{full}.");
                for v in list {
                    if let [Node::Field(_)] = item.as_slice() {
                        out.push(to_input(v).map_err(|m| (Some(at), format!("{k}: {m}")))?);
                    } else {
                        let TVal::Group(g) = v else {
                            return Err((
                                Some(at),
                                format!("{k}: each item must be a {{ … }} group"),
                            ));
                        };
                        let mut gused = vec![false; g.len()];
                        walk(rt, item, g, &mut gused, &inner, false, out)?;
                        if let Some(j) = gused.iter().position(|u| !u) {
                            return Err((
                                Some(at),
                                format!("{k}: no field `{}` in an item", g[j].0),
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// A left-out length field: the length of the byte string whose width it is.
fn infer(
    rt: &RecordType,
    slot: u16,
    nodes: &[Node],
    fields: &[(String, usize, TVal)],
    strip: &str,
) -> Option<In> {
    for n in nodes {
        if let Node::Field(b) = n {
            let bs = &rt.slots[*b as usize];
            if let SlotKind::Bytes {
                width: Expr::Value(src),
            } = &bs.kind
            {
                if *src == slot {
                    let k = bs.name.strip_prefix(strip).unwrap_or(&bs.name);
                    if let Some((_, _, TVal::Bytes(v))) = fields.iter().find(|f| f.0 == k) {
                        return Some(In::Int(v.len() as u64));
                    }
                }
            }
        }
    }
    None
}

fn to_input(v: &TVal) -> Result<In, String> {
    Ok(match v {
        TVal::Int(i) => In::Int(*i),
        TVal::Bytes(b) => In::Bytes(b.clone()),
        TVal::Offset(o) => In::Offset(*o),
        TVal::Index(i) => In::Offset(*i),
        TVal::List(_) => return Err("a list where one value was expected".into()),
        TVal::Group(_) => return Err("a group where one value was expected".into()),
        TVal::Word(w) => return Err(format!("`{w}` is not a value")),
    })
}

fn section_id(schema: &Schema, v: &TVal) -> Option<u8> {
    match v {
        TVal::Int(n) if (1..=255).contains(n) => Some(*n as u8),
        TVal::Word(w) => schema
            .scopes
            .iter()
            .find(|s| s.id != 0 && s.name == *w)
            .map(|s| s.id),
        _ => None,
    }
}

/// The metadata property a line names.
pub fn meta_property(
    schema: &Schema,
    property: &str,
    args: &[TVal],
) -> Result<MetaProperty, String> {
    let int = |i: usize| -> Result<u64, String> {
        match args.get(i) {
            Some(TVal::Int(v)) => Ok(*v),
            _ => Err(format!("`{property}` needs an integer argument {}", i + 1)),
        }
    };
    let sec = |i: usize| -> Result<u8, String> {
        args.get(i)
            .and_then(|v| section_id(schema, v))
            .ok_or_else(|| {
                format!(
                    "`{property}` needs a declared section (id or name) as argument {}",
                    i + 1
                )
            })
    };
    let want = |n: usize| -> Result<(), String> {
        if args.len() != n {
            Err(format!(
                "`{property}` takes {n} argument(s), {} given",
                args.len()
            ))
        } else {
            Ok(())
        }
    };
    Ok(match property {
        "width" => {
            want(1)?;
            let w = int(0)?;
            if w > 8 {
                return Err(format!("width {w} exceeds 8 bytes"));
            }
            MetaProperty::Width(w as u8)
        }
        "none" => {
            want(0)?;
            MetaProperty::Interp(Interp::None)
        }
        "baseOffset" => {
            want(1)?;
            MetaProperty::Interp(Interp::BaseOffset(int(0)?))
        }
        "delta" => {
            want(1)?;
            MetaProperty::Interp(Interp::Delta(int(0)?))
        }
        "default" => {
            want(1)?;
            MetaProperty::Interp(Interp::Default(int(0)?))
        }
        "sectionOffset" => {
            want(1)?;
            MetaProperty::Interp(Interp::SectionOffset(sec(0)?))
        }
        "stride" => {
            want(2)?;
            MetaProperty::Interp(Interp::Stride { initial: int(0)?, stride: int(1)? as i64 })
        }
        "sectionStride" => {
            want(2)?;
            MetaProperty::Interp(Interp::SectionStride { section: sec(0)?, stride: int(1)? as i64 })
        }
        p => return Err(format!("unknown property `{p}` (width, none, baseOffset, delta, default, sectionOffset, stride, sectionStride)")),
    })
}

/// Which input syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormat {
    /// The text form.
    Text,
    /// JSON lines.
    Jsonl,
}

/// The longest input line `pack` accepts.
pub const MAX_LINE: u64 = 64 << 20;

/// Read one line (at most [`MAX_LINE`] bytes) into `buf`; `Ok(0)` at the end of the input.
fn read_line(
    input: &mut impl BufRead,
    buf: &mut String,
    line_no: usize,
) -> Result<usize, PackError> {
    use std::io::Read;
    match input.by_ref().take(MAX_LINE).read_line(buf) {
        Ok(n) => {
            if n as u64 == MAX_LINE && !buf.ends_with('\n') {
                return Err(PackError::Text(TextError {
                    line: line_no,
                    column: 1,
                    message: format!("line is longer than {} MiB", MAX_LINE >> 20),
                }));
            }
            Ok(n)
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Err(PackError::Text(TextError {
            line: line_no,
            column: 1,
            message: "the line is not valid UTF-8".into(),
        })),
        Err(e) => Err(PackError::Io(e)),
    }
}

/// Read the header line of an input (the first non-blank, non-comment line).
pub fn read_header(
    input: &mut impl BufRead,
    format: InputFormat,
    line_no: &mut usize,
) -> Result<TextHeader, PackError> {
    let mut line = String::new();
    loop {
        line.clear();
        if read_line(input, &mut line, *line_no + 1)? == 0 {
            return Err(PackError::Text(TextError {
                line: *line_no + 1,
                column: 1,
                message: "empty input: expected a `%mtf` header line".into(),
            }));
        }
        *line_no += 1;
        let parsed = match format {
            InputFormat::Text => parse_text_line(line.trim_end_matches('\n'), *line_no)?,
            InputFormat::Jsonl => parse_json_line(line.trim_end_matches('\n'), *line_no)?,
        };
        match parsed {
            None => continue,
            Some((Line::Header(h), _)) => return Ok(h),
            Some(_) => {
                return Err(PackError::Text(TextError {
                    line: *line_no,
                    column: 1,
                    message: "expected a `%mtf 1 dtd=… class=… order=…` header first".into(),
                }))
            }
        }
    }
}

/// An error while packing.
#[derive(Debug)]
pub enum PackError {
    /// Reading the input failed.
    Io(std::io::Error),
    /// The input is malformed or names a value that cannot be written.
    Text(TextError),
    /// Writing failed.
    Write(WriteError),
}

impl From<TextError> for PackError {
    fn from(e: TextError) -> Self {
        PackError::Text(e)
    }
}

impl fmt::Display for PackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PackError::Io(e) => write!(f, "{e}"),
            PackError::Text(e) => write!(f, "{e}"),
            PackError::Write(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PackError {}

/// Read every line after the header and write it. Memory stays constant: one line at a time.
pub fn pack_lines(
    input: &mut impl BufRead,
    format: InputFormat,
    writer: &mut TraceWriter<'_>,
    line_no: &mut usize,
) -> Result<(), PackError> {
    let schema = writer.encoder().schema();
    let mut line = String::new();
    loop {
        line.clear();
        if read_line(input, &mut line, *line_no + 1)? == 0 {
            return Ok(());
        }
        *line_no += 1;
        let n = *line_no;
        let text = line.trim_end_matches('\n');
        let parsed = match format {
            InputFormat::Text => parse_text_line(text, n)?,
            InputFormat::Jsonl => parse_json_line(text, n)?,
        };
        let Some((parsed, cols)) = parsed else {
            continue;
        };
        let col = |at: usize| -> usize {
            match format {
                InputFormat::Text => text[..at.min(text.len())].chars().count() + 1,
                InputFormat::Jsonl => 1,
            }
        };
        let werr = |e: WriteError, at: usize| {
            PackError::Text(TextError {
                line: n,
                column: col(at),
                message: e.to_string(),
            })
        };
        match parsed {
            Line::Header(_) => {
                return Err(PackError::Text(TextError {
                    line: n,
                    column: 1,
                    message: "a second header line".into(),
                }))
            }
            Line::Section(v) => {
                let id = section_id(schema, &v).ok_or_else(|| TextError {
                    line: n,
                    column: col(cols[0]),
                    message: "not a section declared in the DTD".into(),
                })?;
                writer.begin_section(id).map_err(|e| werr(e, cols[0]))?;
            }
            Line::Metadata {
                target,
                property,
                args,
            } => {
                let (rname, fname) = target.split_once('.').ok_or_else(|| TextError {
                    line: n,
                    column: col(cols[1]),
                    message: format!("expected `record.field`, found `{target}`"),
                })?;
                let rid: RecordId = writer.encoder().lookup(rname).ok_or_else(|| TextError {
                    line: n,
                    column: col(cols[1]),
                    message: format!("no record type `{rname}` in this section"),
                })?;
                let rt = schema.record(rid);
                let slot = rt.slot_by_name(fname).ok_or_else(|| TextError {
                    line: n,
                    column: col(cols[1]),
                    message: format!("record `{rname}` has no field `{fname}`"),
                })?;
                let prop = meta_property(schema, &property, &args).map_err(|m| TextError {
                    line: n,
                    column: col(cols[2]),
                    message: m,
                })?;
                writer
                    .metadata(rid, slot, prop)
                    .map_err(|e| werr(e, cols[0]))?;
            }
            Line::Record { name, fields } => {
                let rid = writer.encoder().lookup(&name).ok_or_else(|| TextError {
                    line: n,
                    column: col(cols[0]),
                    message: format!("no record type `{name}` in this section"),
                })?;
                let rt = schema.record(rid);
                let inputs = record_inputs(rt, &fields).map_err(|(at, m)| TextError {
                    line: n,
                    column: col(at.unwrap_or(cols[0])),
                    message: m,
                })?;
                writer.record(rid, &inputs).map_err(|e| {
                    let at = e
                        .field
                        .as_ref()
                        .and_then(|f| fields.iter().find(|x| &x.0 == f))
                        .map_or(cols[0], |x| x.1);
                    werr(e, at)
                })?;
            }
        }
    }
}

/// Pack a whole input (header line first) into a trace in memory, with `schema`.
pub fn pack_to_vec(
    schema: &Schema,
    input: &mut impl BufRead,
    format: InputFormat,
) -> Result<Vec<u8>, PackError> {
    let mut line = 0;
    let h = read_header(input, format, &mut line)?;
    let mut w = TraceWriter::in_memory(schema, h.class(), h.byte_order(), &h.dtd);
    pack_lines(input, format, &mut w, &mut line)?;
    w.finish_to_vec().map_err(PackError::Write)
}
