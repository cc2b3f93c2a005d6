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

/// Parse one JSON line of a `--format jsonl` dump.
pub(crate) fn parse_json_line(s: &str, line: usize) -> Result<Option<Parsed>, TextError> {
    let err = |m: &'static str| TextError {
        line,
        column: 1,
        kind: TextErrorKind::Syntax(m),
    };
    if s.trim().is_empty() {
        return Ok(None);
    }
    let v: serde_json::Value = serde_json::from_str(s).map_err(|e| TextError {
        line,
        column: e.column(),
        kind: TextErrorKind::Json {
            message: e.to_string(),
        },
    })?;
    let obj = v.as_object().ok_or_else(|| err("expected a JSON object"))?;
    if obj.contains_key("mtf") {
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
        return Ok(Some(Parsed {
            line: Line::Header(TextHeader {
                dtd: dtd.to_string(),
                class,
                order,
            }),
            columns: vec![],
        }));
    }
    let name = obj
        .get("record")
        .and_then(|r| r.as_str())
        .ok_or_else(|| err("expected \"record\""))?
        .to_string();
    if let Some(set) = obj.get("set") {
        let g = |k: &str| set.get(k).and_then(|x| x.as_str()).map(str::to_string);
        let (Some(r), Some(f), Some(p)) = (g("record"), g("field"), g("property")) else {
            return Err(err("\"set\" needs record, field and property"));
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
        return Ok(Some(Parsed {
            line: Line::Metadata {
                target: format!("{r}.{f}"),
                property: p,
                args,
            },
            columns: vec![1, 1, 1],
        }));
    }
    let mut fields = Fields::new();
    match obj.get("fields") {
        Some(serde_json::Value::Object(m)) => {
            for (k, v) in m {
                let v = from_json(v).and_then(field_in).map_err(err)?;
                fields.push(k.clone(), v);
            }
        }
        None => {}
        _ => return Err(err("\"fields\" must be an object")),
    };
    if name == "section" {
        let n = fields
            .0
            .iter()
            .find(|f| f.0 == "number")
            .and_then(|f| match f.1 {
                FieldIn::Int(n) => Some(SectionRef::Id(n)),
                _ => None,
            })
            .ok_or_else(|| err("section needs number"))?;
        return Ok(Some(Parsed {
            line: Line::Section(n),
            columns: vec![1],
        }));
    }
    let columns = vec![1; fields.0.len() + 1];
    Ok(Some(Parsed {
        line: Line::Record { name, fields },
        columns,
    }))
}
