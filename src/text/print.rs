//! Printing decoded records as the text form (docs/text-format.md) or as JSON lines.

// Design: the printer walks the record's layout tree alongside the flat list of decoded values;
// the values are in the same depth-first order, so one index suffices. Output goes straight to a
// `Write` (a `BufWriter` in the CLI); nothing is allocated per record except for JSON strings.

use std::io::{self, Write};

use crate::decode::{ElementRef, Field, RecordView, Value};
use crate::dtd::{Display, Node, RecordType};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// One line per record, `record key=value …` (the form `mtf pack` reads).
    #[default]
    Text,
    /// One JSON object per line.
    Jsonl,
}

/// Printing options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Printer {
    /// Text or JSON lines.
    pub format: Format,
    /// Prefix each record with `@offset`.
    pub offsets: bool,
    /// Show stored values too (`~raw`).
    pub raw: bool,
}

/// Facts about a trace that its dump begins with, so that `mtf pack` can rebuild it.
#[derive(Debug, Clone)]
pub struct DumpHeader<'a> {
    /// DTD name stored in the header.
    pub dtd: &'a str,
    /// 32 or 64.
    pub class_bits: u32,
    /// `true` for big-endian.
    pub big_endian: bool,
}

impl Printer {
    /// Print the header line.
    pub fn header(&self, w: &mut impl Write, h: &DumpHeader<'_>) -> io::Result<()> {
        let order = if h.big_endian { "big" } else { "little" };
        match self.format {
            Format::Text => {
                write!(w, "%mtf 1 dtd=")?;
                write_string(w, h.dtd.as_bytes())?;
                writeln!(w, " class={} order={order}", h.class_bits)
            }
            Format::Jsonl => {
                let v = serde_json::json!({"mtf": 1, "dtd": h.dtd, "class": h.class_bits, "order": order});
                writeln!(w, "{v}")
            }
        }
    }

    /// Print one record.
    pub fn record(&self, w: &mut impl Write, view: &RecordView<'_>) -> io::Result<()> {
        match self.format {
            Format::Text => self.text(w, view),
            Format::Jsonl => {
                let v = self.json(view);
                writeln!(w, "{v}")
            }
        }
    }

    fn text(&self, w: &mut impl Write, view: &RecordView<'_>) -> io::Result<()> {
        if self.offsets {
            write!(w, "@{} ", view.offset)?;
        }
        w.write_all(view.name().as_bytes())?;
        let rt = view.record();
        if rt.builtin == Some(crate::dtd::Builtin::Metadata) {
            if let Some(m) = view.metadata() {
                let target = view.reader().schema().record(m.record);
                write!(
                    w,
                    " {}.{} {}",
                    target.name,
                    target.slots[m.slot as usize].name,
                    m.property.name()
                )?;
                let (words, n) = m.property.words();
                let names_section = matches!(
                    m.property,
                    crate::decode::MetaProperty::Interp(
                        crate::dtd::Interp::SectionOffset(_)
                            | crate::dtd::Interp::SectionStride { .. }
                    )
                );
                for (i, word) in words.iter().take(n).enumerate() {
                    let signed =
                        matches!(m.property, crate::decode::MetaProperty::Interp(_)) && i == 1;
                    let section = view.reader().section_name(*word as u8);
                    if names_section && i == 0 && !section.is_empty() {
                        write!(w, " {section}")?;
                    } else if signed {
                        write!(w, " {}", *word as i64)?;
                    } else {
                        write!(w, " {word}")?;
                    }
                }
                return writeln!(w);
            }
            // A refused metadata record: show its stored fields.
            for f in view.fields().skip(1) {
                write!(w, " {}={}", f.name(), f.fv.raw)?;
            }
            return writeln!(w);
        }
        if rt.builtin == Some(crate::dtd::Builtin::Section) {
            // `section number=1:heap`: the name is an annotation for the reader.
            if let Some(f) = view.field_at(1) {
                write!(w, " number={}", f.fv.raw)?;
                let name = view.reader().section_name(f.fv.raw as u8);
                if !name.is_empty() && f.fv.raw <= 255 {
                    write!(w, ":{name}")?;
                }
                return writeln!(w);
            }
        }
        let mut idx = 0;
        self.text_nodes(w, view, rt, &rt.layout, &mut idx, "", true)?;
        writeln!(w)
    }

    #[allow(clippy::too_many_arguments)]
    fn text_nodes(
        &self,
        w: &mut impl Write,
        view: &RecordView<'_>,
        rt: &RecordType,
        nodes: &[Node],
        idx: &mut usize,
        strip: &str,
        top: bool,
    ) -> io::Result<()> {
        for (i, node) in nodes.iter().enumerate() {
            match node {
                Node::Field(0) if top && i == 0 => *idx += 1,
                Node::Field(_) => {
                    let Some(f) = view.field_at(*idx) else {
                        return Ok(());
                    };
                    *idx += 1;
                    w.write_all(b" ")?;
                    w.write_all(key(f.name(), strip).as_bytes())?;
                    w.write_all(b"=")?;
                    self.text_value(w, view, &f)?;
                }
                Node::Group { children, .. } => {
                    self.text_nodes(w, view, rt, children, idx, strip, false)?;
                }
                Node::Repeat { name, count, item } => {
                    let n = last_number(view, *idx, *count);
                    let full = super::repeat_key(rt, name, item);
                    write!(w, " {}=[", key(&full, strip))?;
                    let inner = format!("{full}.");
                    for k in 0..n {
                        if k > 0 {
                            w.write_all(b" ")?;
                        }
                        if let [Node::Field(_)] = item.as_slice() {
                            let Some(f) = view.field_at(*idx) else { break };
                            *idx += 1;
                            self.text_value(w, view, &f)?;
                        } else {
                            w.write_all(b"{")?;
                            let mut sub = Vec::new();
                            self.text_nodes(&mut sub, view, rt, item, idx, &inner, false)?;
                            w.write_all(sub.strip_prefix(b" ").unwrap_or(&sub))?;
                            w.write_all(b"}")?;
                        }
                    }
                    w.write_all(b"]")?;
                }
            }
        }
        Ok(())
    }

    fn text_value(
        &self,
        w: &mut impl Write,
        view: &RecordView<'_>,
        f: &Field<'_>,
    ) -> io::Result<()> {
        write_value(w, view, f.value(), f.def.display, 0)?;
        if self.raw {
            if let Some(raw) = f.raw() {
                write!(w, "~{raw:#x}")?;
            }
        }
        Ok(())
    }

    fn json(&self, view: &RecordView<'_>) -> serde_json::Value {
        use serde_json::{json, Map};
        let rt = view.record();
        let mut obj = Map::new();
        obj.insert("record".into(), json!(view.name()));
        obj.insert("section".into(), json!(view.section));
        obj.insert("index".into(), json!(view.index));
        obj.insert("offset".into(), json!(view.offset));
        if rt.builtin == Some(crate::dtd::Builtin::Metadata) {
            if let Some(m) = view.metadata() {
                let target = view.reader().schema().record(m.record);
                let (words, n) = m.property.words();
                let args: Vec<serde_json::Value> = words
                    .iter()
                    .take(n)
                    .enumerate()
                    .map(|(i, &wd)| {
                        if i == 1 && matches!(m.property, crate::decode::MetaProperty::Interp(_)) {
                            json!(wd as i64)
                        } else {
                            json!(wd)
                        }
                    })
                    .collect();
                obj.insert(
                    "set".into(),
                    json!({"record": target.name, "field": target.slots[m.slot as usize].name,
                           "property": m.property.name(), "args": args}),
                );
            } else {
                let mut fields = Map::new();
                for f in view.fields().skip(1) {
                    fields.insert(f.name().to_string(), json!(f.fv.raw));
                }
                obj.insert("fields".into(), serde_json::Value::Object(fields));
            }
            return serde_json::Value::Object(obj);
        }
        let mut fields = Map::new();
        let mut idx = 0;
        self.json_nodes(&mut fields, view, &rt.layout, &mut idx, "", true);
        obj.insert("fields".into(), serde_json::Value::Object(fields));
        serde_json::Value::Object(obj)
    }

    fn json_nodes(
        &self,
        out: &mut serde_json::Map<String, serde_json::Value>,
        view: &RecordView<'_>,
        nodes: &[Node],
        idx: &mut usize,
        strip: &str,
        top: bool,
    ) {
        for (i, node) in nodes.iter().enumerate() {
            match node {
                Node::Field(0) if top && i == 0 => *idx += 1,
                Node::Field(_) => {
                    let Some(f) = view.field_at(*idx) else { return };
                    *idx += 1;
                    out.insert(key(f.name(), strip).to_string(), self.json_field(view, &f));
                }
                Node::Group { children, .. } => {
                    self.json_nodes(out, view, children, idx, strip, false)
                }
                Node::Repeat { name, count, item } => {
                    let n = last_number(view, *idx, *count);
                    let full = super::repeat_key(view.record(), name, item);
                    let inner = format!("{full}.");
                    let mut list = Vec::new();
                    for _ in 0..n {
                        if let [Node::Field(_)] = item.as_slice() {
                            let Some(f) = view.field_at(*idx) else { break };
                            *idx += 1;
                            list.push(self.json_field(view, &f));
                        } else {
                            let mut m = serde_json::Map::new();
                            self.json_nodes(&mut m, view, item, idx, &inner, false);
                            list.push(serde_json::Value::Object(m));
                        }
                    }
                    out.insert(
                        key(&full, strip).to_string(),
                        serde_json::Value::Array(list),
                    );
                }
            }
        }
    }

    fn json_field(&self, view: &RecordView<'_>, f: &Field<'_>) -> serde_json::Value {
        let v = json_value(view, f.value(), f.def.display, 0);
        if self.raw {
            if let Some(raw) = f.raw() {
                return serde_json::json!({"value": v, "raw": raw});
            }
        }
        v
    }
}

fn key<'k>(name: &'k str, strip: &str) -> &'k str {
    name.strip_prefix(strip).unwrap_or(name)
}

/// The value of the most recent occurrence of `slot` before position `idx`.
fn last_number(view: &RecordView<'_>, idx: usize, slot: u16) -> u64 {
    view.values()[..idx.min(view.values().len())]
        .iter()
        .rev()
        .find(|v| v.slot == slot)
        .map_or(0, |v| v.value.as_number())
}

/// Write a value in the text form.
pub fn write_value(
    w: &mut impl Write,
    view: &RecordView<'_>,
    value: Value,
    display: Display,
    depth: usize,
) -> io::Result<()> {
    match value {
        Value::Int(v) => match display {
            Display::Hex => write!(w, "{v:#x}"),
            Display::Signed => write!(w, "{}", v as i64),
            _ => write!(w, "{v}"),
        },
        Value::Bytes { offset, len } => {
            let b = &view.reader().bytes()[offset as usize..(offset + len) as usize];
            if display == Display::Text {
                write_string(w, b)
            } else {
                w.write_all(b"x\"")?;
                for x in b {
                    write!(w, "{x:02x}")?;
                }
                w.write_all(b"\"")
            }
        }
        Value::Ref(r) => {
            match r {
                ElementRef::Offset { offset, .. } => write!(w, "@{offset}")?,
                ElementRef::Index { index, .. } => write!(w, "#{index}")?,
            }
            if depth > 0 {
                return Ok(());
            }
            w.write_all(b":")?;
            match view.reader().resolve(r) {
                Ok(res) => {
                    let rt = view.reader().schema().record(res.record);
                    let d = rt.slots.last().map_or(Display::Decimal, |s| s.display);
                    write_value(w, view, res.value, d, depth + 1)
                }
                Err(_) => w.write_all(b"?"),
            }
        }
    }
}

fn json_value(
    view: &RecordView<'_>,
    value: Value,
    display: Display,
    depth: usize,
) -> serde_json::Value {
    use serde_json::json;
    match value {
        Value::Int(v) => match display {
            Display::Signed => json!(v as i64),
            _ => json!(v),
        },
        Value::Bytes { offset, len } => {
            let b = &view.reader().bytes()[offset as usize..(offset + len) as usize];
            match (display, std::str::from_utf8(b)) {
                (Display::Text, Ok(s)) => json!(s),
                _ => json!({"hex": hex(b)}),
            }
        }
        Value::Ref(r) => {
            let mut m = serde_json::Map::new();
            match r {
                ElementRef::Offset { offset, section } => {
                    m.insert("section".into(), json!(section));
                    m.insert("offset".into(), json!(offset));
                }
                ElementRef::Index { index, section } => {
                    m.insert("section".into(), json!(section));
                    m.insert("index".into(), json!(index));
                }
            }
            if depth == 0 {
                if let Ok(res) = view.reader().resolve(r) {
                    let rt = view.reader().schema().record(res.record);
                    let d = rt.slots.last().map_or(Display::Decimal, |s| s.display);
                    m.insert("value".into(), json_value(view, res.value, d, depth + 1));
                }
            }
            serde_json::Value::Object(m)
        }
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(2 * b.len());
    for x in b {
        s.push_str(&format!("{x:02x}"));
    }
    s
}

/// Write bytes as a quoted string: printable ASCII and valid UTF-8 as is; `\"`, `\\`, `\n`, `\r`,
/// `\t` escaped; any other byte as `\xHH`.
pub fn write_string(w: &mut impl Write, b: &[u8]) -> io::Result<()> {
    w.write_all(b"\"")?;
    let mut rest = b;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                write_str_escaped(w, s)?;
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                write_str_escaped(w, std::str::from_utf8(good).expect("valid prefix"))?;
                let n = e.error_len().unwrap_or(bad.len());
                for x in &bad[..n] {
                    write!(w, "\\x{x:02x}")?;
                }
                rest = &bad[n..];
            }
        }
    }
    w.write_all(b"\"")
}

fn write_str_escaped(w: &mut impl Write, s: &str) -> io::Result<()> {
    for c in s.chars() {
        match c {
            '"' => w.write_all(b"\\\"")?,
            '\\' => w.write_all(b"\\\\")?,
            '\n' => w.write_all(b"\\n")?,
            '\r' => w.write_all(b"\\r")?,
            '\t' => w.write_all(b"\\t")?,
            c if (c as u32) < 0x20 || c == '\u{7f}' => write!(w, "\\x{:02x}", c as u32)?,
            c => write!(w, "{c}")?,
        }
    }
    Ok(())
}
