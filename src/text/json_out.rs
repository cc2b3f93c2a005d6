//! Printing one record as a JSON object (`mtf dump --format jsonl`).

use serde_json::{json, Map, Value as J};

use crate::decode::{ElementRef, Field, Reader, RecordView, Value};
use crate::dtd::{Builtin, Display};

use super::print::{Printer, Visit};

/// The JSON object of one record.
pub(crate) fn record(p: &mut Printer, view: &RecordView<'_>) -> J {
    let rt = view.record();
    let reader = view.reader();
    let mut obj = Map::new();
    obj.insert("record".into(), json!(view.name()));
    obj.insert("section".into(), json!(view.section()));
    obj.insert("index".into(), json!(view.index()));
    obj.insert("offset".into(), json!(view.offset()));
    if rt.builtin == Some(Builtin::Metadata) {
        if let Some(m) = view.metadata() {
            let target = reader.schema().record(m.record);
            let (words, n) = m.property.words();
            let args: Vec<J> = words
                .iter()
                .take(n)
                .enumerate()
                .map(|(i, &wd)| {
                    if m.property.word_is_signed(i) {
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
            // A refused metadata record: its stored numbers, the value words (none, one or
            // two) as one array, as the text form prints one `value=WORD` per word.
            let mut fields = Map::new();
            let mut words = Vec::new();
            for f in view.fields().skip(1) {
                if f.name() == "value" {
                    words.push(json!(f.fv.raw));
                } else {
                    fields.insert(f.name().to_string(), json!(f.fv.raw));
                }
            }
            fields.insert("value".into(), J::Array(words));
            obj.insert("fields".into(), J::Object(fields));
        }
        return J::Object(obj);
    }
    let raw = p.opts().raw;
    // A section record's number is the section id, small and read as a number by `pack`.
    let strings = p.int_strings() && rt.builtin != Some(Builtin::Section);
    let logical = p.logical_values();
    // A stack of open containers: the record's fields, then lists and groups.
    enum Open {
        Map(Map<String, J>),
        List(String, Vec<J>),
    }
    let mut stack = vec![Open::Map(Map::new())];
    let _ = p.visit(view, |v| -> Result<(), ()> {
        match v {
            Visit::Field(key, f) => {
                let value = field(reader, &f, raw, strings, logical);
                match stack.last_mut().expect("open") {
                    Open::Map(m) => {
                        m.insert(key.to_string(), value);
                    }
                    Open::List(_, l) => l.push(value),
                }
            }
            Visit::ListStart(key) => stack.push(Open::List(key.to_string(), Vec::new())),
            Visit::ItemStart(single, _) => {
                if !single {
                    stack.push(Open::Map(Map::new()));
                }
            }
            Visit::ItemEnd(single) => {
                if !single {
                    if let Some(Open::Map(m)) = stack.pop() {
                        if let Some(Open::List(_, l)) = stack.last_mut() {
                            l.push(J::Object(m));
                        }
                    }
                }
            }
            Visit::ListEnd => {
                if let Some(Open::List(key, l)) = stack.pop() {
                    if let Some(Open::Map(m)) = stack.last_mut() {
                        m.insert(key, J::Array(l));
                    }
                }
            }
        }
        Ok(())
    });
    let fields = match stack.pop() {
        Some(Open::Map(m)) => m,
        _ => Map::new(),
    };
    obj.insert("fields".into(), J::Object(fields));
    J::Object(obj)
}

fn field(reader: &Reader<'_>, f: &Field<'_>, raw: bool, strings: bool, logical: bool) -> J {
    let (value, display) = super::print::shown(reader, f, logical);
    let v = match (strings, value, display) {
        (true, Value::Int(v), Display::Signed) => json!((v as i64).to_string()),
        (true, Value::Int(v), _) => json!(v.to_string()),
        (_, value, display) => json_value(reader, value, display, 0),
    };
    if raw {
        if let Some(r) = f.raw() {
            let r = if strings {
                json!(r.to_string())
            } else {
                json!(r)
            };
            return json!({"value": v, "raw": r});
        }
    }
    v
}

fn json_value(reader: &Reader<'_>, value: Value<'_>, display: Display, depth: usize) -> J {
    match value {
        Value::Int(v) => match display {
            Display::Signed => json!(v as i64),
            _ => json!(v),
        },
        Value::Bytes(b) => match (display, std::str::from_utf8(b)) {
            (Display::Text, Ok(s)) => json!(s),
            _ => json!({"hex": hex(b)}),
        },
        Value::Ref(r) => {
            let mut m = Map::new();
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
                if let Ok(res) = reader.resolve(r) {
                    let rt = reader.schema().record(res.record);
                    let d = rt.slots.last().map_or(Display::Decimal, |s| s.display);
                    m.insert("value".into(), json_value(reader, res.value, d, depth + 1));
                }
            }
            J::Object(m)
        }
    }
}

fn hex(b: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(2 * b.len());
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}
