//! One JSON line of `mtf dump --format jsonl` → a [`Line`], as the text form's twin.

use crate::container::{ByteOrder, Class};
use crate::encode::{FieldIn, Fields};

use super::error::{TextError, TextErrorKind};
use super::lex::{Lexer, TVal};
use super::line::{field_in, Arg, Line, Parsed, SectionRef, TextHeader};

/// Convert a JSON value of a dump into a text-form value.
fn from_json(v: &serde_json::Value) -> Result<TVal, &'static str> {
    use serde_json::Value as J;
    Ok(match v {
        J::Number(n) => {
            if let Some(u) = n.as_u64() {
                TVal::Int(u)
            } else if let Some(i) = n.as_i64() {
                TVal::Neg(i)
            } else {
                return Err("a number that is not an integer");
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
                TVal::Bytes(
                    lx.hexbytes()
                        .map_err(|_| "bad hex digits in {\"hex\": …}")?,
                )
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
                        .collect::<Result<_, &'static str>>()?,
                )
            }
        }
        J::Bool(_) | J::Null => return Err("unexpected true/false/null"),
    })
}

/// A key of a JSON line: how deep its object is (1 for the line's own keys), the key as written
/// between its quotes (escapes not undone), and its 1-based column in characters.
pub(crate) struct KeyAt<'a> {
    depth: u32,
    raw: &'a str,
    column: usize,
}

impl KeyAt<'_> {
    fn is(&self, key: &str) -> bool {
        if self.raw.contains('\\') {
            serde_json::from_str::<String>(&format!("\"{}\"", self.raw)).is_ok_and(|k| k == key)
        } else {
            self.raw == key
        }
    }
}

// Design: serde_json's values carry no positions. An error names the column of the key it
// concerns, found by this scan of the line (strings, escapes and nesting followed; a string
// followed by `:` is a key). It runs on each line parsed here, a short pass over bytes the
// JSON parser has just read; the fast reader of `pack` calls it only for a line in error.
/// The keys of a JSON line, in the order they are written.
pub(crate) fn json_keys(s: &str) -> Vec<KeyAt<'_>> {
    let b = s.as_bytes();
    let mut keys = Vec::new();
    let mut depth = 0u32;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                let end = i.min(b.len());
                let mut j = end + 1;
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                if j < b.len() && b[j] == b':' {
                    if let (Some(raw), Some(before)) = (s.get(start + 1..end), s.get(..start)) {
                        keys.push(KeyAt {
                            depth,
                            raw,
                            column: before.chars().count() + 1,
                        });
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    keys
}

/// The column of the line's own key `key`, or of the key `field` of its `"fields"` object.
pub(crate) fn key_column(keys: &[KeyAt<'_>], key: &str, field: Option<&str>) -> Option<usize> {
    let at = keys.iter().position(|k| k.depth == 1 && k.is(key))?;
    let Some(field) = field else {
        return Some(keys[at].column);
    };
    keys[at + 1..]
        .iter()
        .take_while(|k| k.depth >= 2)
        .find(|k| k.depth == 2 && k.is(field))
        .map(|k| k.column)
}

/// The keys a record's line may have (`set` for a metadata record's).
const RECORD_KEYS: [&str; 6] = ["record", "section", "index", "offset", "fields", "set"];

/// A syntax error at `line`:`column`.
fn syntax(line: usize, column: usize, m: &'static str) -> TextError {
    TextError {
        line,
        column,
        kind: TextErrorKind::Syntax(m),
    }
}

type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Parse one JSON line of a `--format jsonl` dump.
pub(crate) fn parse_json_line(s: &str, line: usize) -> Result<Option<Parsed>, TextError> {
    if s.trim().is_empty() {
        return Ok(None);
    }
    let keys = json_keys(s);
    let at = |key: &str| key_column(&keys, key, None).unwrap_or(1);
    let v: serde_json::Value = serde_json::from_str(s).map_err(|e| TextError {
        line,
        column: e.column(),
        kind: TextErrorKind::Json {
            message: e.to_string(),
        },
    })?;
    let obj = v
        .as_object()
        .ok_or_else(|| syntax(line, 1, "expected a JSON object"))?;
    if obj.contains_key("mtf") {
        return header(obj, line).map(Some);
    }
    // A misspelt key (`"felds"`) is named, not taken for fields left out.
    if let Some(k) = obj.keys().find(|k| !RECORD_KEYS.contains(&k.as_str())) {
        return Err(TextError {
            line,
            column: at(k),
            kind: TextErrorKind::UnknownJsonKey {
                // Shown on a terminal: control characters as escapes.
                key: k.escape_debug().to_string(),
            },
        });
    }
    let name = obj
        .get("record")
        .and_then(|r| r.as_str())
        .ok_or_else(|| {
            syntax(
                line,
                at("record"),
                "expected \"record\": the record type's name",
            )
        })?
        .to_string();
    if let Some(set) = obj.get("set") {
        let columns = vec![at("record"), at("set"), at("set")];
        return metadata(set, columns, line).map(Some);
    }
    let (fields, columns) = record_fields(obj, &keys, at("record"), line)?;
    if name == "section" {
        let n = fields
            .0
            .iter()
            .find(|f| f.0 == "number")
            .and_then(|f| match f.1 {
                FieldIn::Int(n) => Some(SectionRef::Id(n)),
                _ => None,
            })
            .ok_or_else(|| syntax(line, at("fields"), "section needs number"))?;
        return Ok(Some(Parsed {
            line: Line::Section(n),
            columns: vec![at("record")],
        }));
    }
    Ok(Some(Parsed {
        line: Line::Record { name, fields },
        columns,
    }))
}

/// The header line (`{"mtf":1,"dtd":…,"class":…,"order":…}`).
fn header(obj: &JsonObject, line: usize) -> Result<Parsed, TextError> {
    let err = |m: &'static str| syntax(line, 1, m);
    let dtd = obj
        .get("dtd")
        .and_then(|d| d.as_str())
        .ok_or_else(|| err("header needs \"dtd\""))?;
    let class = match obj.get("class").and_then(|c| c.as_u64()) {
        Some(32) => Class::Bits32,
        Some(64) => Class::Bits64,
        _ => return Err(err("header needs \"class\": 32 or 64")),
    };
    let order = match obj.get("order").and_then(|o| o.as_str()) {
        Some("little") => ByteOrder::Little,
        Some("big") => ByteOrder::Big,
        _ => return Err(err("header needs \"order\": \"little\" or \"big\"")),
    };
    Ok(Parsed {
        line: Line::Header(TextHeader {
            dtd: dtd.to_string(),
            class,
            order,
        }),
        columns: vec![],
    })
}

/// A metadata record's `"set"`: record, field, property and arguments.
fn metadata(
    set: &serde_json::Value,
    columns: Vec<usize>,
    line: usize,
) -> Result<Parsed, TextError> {
    let g = |k: &str| set.get(k).and_then(|x| x.as_str()).map(str::to_string);
    let (Some(r), Some(f), Some(p)) = (g("record"), g("field"), g("property")) else {
        return Err(syntax(
            line,
            columns[1],
            "\"set\" needs record, field and property",
        ));
    };
    let args = match set.get("args") {
        Some(serde_json::Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                serde_json::Value::String(s) => Arg::Word(s.clone()),
                v => match from_json(v) {
                    Ok(TVal::Int(n)) => Arg::Int(n),
                    Ok(TVal::Neg(n)) => Arg::Int(n as u64),
                    _ => Arg::Other,
                },
            })
            .collect(),
        _ => vec![],
    };
    Ok(Parsed {
        line: Line::Metadata {
            target: format!("{r}.{f}"),
            property: p,
            args,
        },
        columns,
    })
}

/// A record's `"fields"` by name, with the column of each (after `record_column`).
fn record_fields(
    obj: &JsonObject,
    keys: &[KeyAt<'_>],
    record_column: usize,
    line: usize,
) -> Result<(Fields, Vec<usize>), TextError> {
    let mut fields = Fields::new();
    let mut columns = vec![record_column];
    match obj.get("fields") {
        Some(serde_json::Value::Object(m)) => {
            for (k, v) in m {
                let column = key_column(keys, "fields", Some(k)).unwrap_or(1);
                let v = from_json(v)
                    .map_err(TextErrorKind::Syntax)
                    .and_then(field_in)
                    .map_err(|kind| TextError { line, column, kind })?;
                fields.push(k.clone(), v);
                columns.push(column);
            }
        }
        None => {}
        _ => {
            let column = key_column(keys, "fields", None).unwrap_or(1);
            return Err(syntax(line, column, "\"fields\" must be an object"));
        }
    };
    Ok((fields, columns))
}
