//! One line of the text form (docs/text-format.md) → a [`Line`]: the header, a section, a
//! metadata change, or a record with its fields by name.

use crate::container::{ByteOrder, Class};
use crate::encode::{FieldIn, Fields};

use super::error::{TextError, TextErrorKind};
use super::lex::{Lexer, TVal};

/// The `%mtf` header line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextHeader {
    /// DTD name to store.
    pub dtd: String,
    /// The trace class.
    pub class: Class,
    /// The byte order.
    pub order: ByteOrder,
}

/// A section as a line names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionRef {
    /// By id.
    Id(u64),
    /// By name.
    Name(String),
}

/// A metadata argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// A number (negative ones as two's complement).
    Int(u64),
    /// A word (a section name).
    Word(String),
    /// Anything else (an error when used).
    Other,
}

/// One parsed input line.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// The `%mtf` header.
    Header(TextHeader),
    /// `section N` / `section number=N` / `section NAME`.
    Section(SectionRef),
    /// `metadata record.field property args…`.
    Metadata {
        /// `record.field`.
        target: String,
        /// Property name.
        property: String,
        /// Arguments.
        args: Vec<Arg>,
    },
    /// A record with its values by key.
    Record {
        /// Record name.
        name: String,
        /// Fields.
        fields: Fields,
    },
}

/// A line with the columns of its parts: for a record, the name's then each key's; for a
/// metadata line, `metadata`'s, the target's and the property's; for a section, the keyword's.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The line.
    pub line: Line,
    /// 1-based columns.
    pub columns: Vec<usize>,
}

fn section_ref(v: TVal) -> SectionRef {
    match v {
        TVal::Int(n) => SectionRef::Id(n),
        TVal::Word(w) => SectionRef::Name(w),
        _ => SectionRef::Name(String::new()),
    }
}

fn arg(v: TVal) -> Arg {
    match v {
        TVal::Int(n) => Arg::Int(n),
        TVal::Neg(n) => Arg::Int(n as u64),
        TVal::Word(w) => Arg::Word(w),
        _ => Arg::Other,
    }
}

/// A parsed value as the writer takes it.
pub(crate) fn field_in(v: TVal) -> Result<FieldIn, TextErrorKind> {
    Ok(match v {
        TVal::Int(i) => FieldIn::Int(i),
        TVal::Neg(i) => FieldIn::Neg(i),
        TVal::Bytes(b) => FieldIn::Bytes(b),
        TVal::Offset(o) => FieldIn::Offset(o),
        TVal::Index(i) => FieldIn::Index(i as i64),
        TVal::List(l) => FieldIn::List(l.into_iter().map(field_in).collect::<Result<_, _>>()?),
        TVal::Group(g) => {
            let mut f = Fields::new();
            for (k, _, v) in g {
                f.push(k, field_in(v)?);
            }
            FieldIn::Group(f)
        }
        TVal::Word(word) => return Err(TextErrorKind::WordNotValue { word }),
    })
}

/// Parse one line of the text form; `None` for blank and comment lines.
pub(crate) fn parse_text_line(s: &str, line: usize) -> Result<Option<Parsed>, TextError> {
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
            return Err(lx.syntax(0, "expected a `%mtf 1 dtd=… class=… order=…` header"));
        }
        let v = lx.value(0)?;
        if v != TVal::Int(1) {
            return Err(lx.syntax(
                0,
                "unsupported text-form version (this mtf reads version 1)",
            ));
        }
        let mut h = TextHeader {
            dtd: String::new(),
            class: Class::Bits32,
            order: ByteOrder::Little,
        };
        while !lx.at_end() {
            let (k, at, v) = lx.pair(0)?;
            match (k.as_str(), v) {
                ("dtd", TVal::Bytes(b)) => {
                    h.dtd =
                        String::from_utf8(b).map_err(|_| lx.syntax(at, "DTD name is not UTF-8"))?
                }
                ("dtd", TVal::Word(w)) => h.dtd = w,
                ("class", TVal::Int(32)) => h.class = Class::Bits32,
                ("class", TVal::Int(64)) => h.class = Class::Bits64,
                ("order", TVal::Word(w)) if w == "little" => h.order = ByteOrder::Little,
                ("order", TVal::Word(w)) if w == "big" => h.order = ByteOrder::Big,
                (k, _) => {
                    return Err(lx.err(at, TextErrorKind::BadHeaderItem { key: k.to_string() }))
                }
            }
        }
        if h.dtd.is_empty() {
            return Err(lx.syntax(0, "the header needs dtd=\"NAME\""));
        }
        return Ok(Some(Parsed {
            line: Line::Header(h),
            columns: vec![],
        }));
    }
    if lx.peek() == Some('@') {
        lx.pos += 1;
        lx.int()?;
    }
    let name_at = lx.pos;
    let Some(name) = lx.word() else {
        return Err(lx.syntax(lx.pos, "expected a record name"));
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
            return Err(lx.syntax(lx.pos, "unexpected text after the section"));
        }
        return Ok(Some(Parsed {
            line: Line::Section(section_ref(v)),
            columns: vec![lx.column(name_at)],
        }));
    }
    if name == "metadata" {
        lx.skip_ws();
        let t_at = lx.pos;
        let Some(target) = lx.word() else {
            return Err(lx.syntax(lx.pos, "expected `record.field` after metadata"));
        };
        let target = target.to_string();
        let p_at = lx.pos;
        let Some(property) = lx.word() else {
            return Err(lx.syntax(lx.pos, "expected a property (width, none, baseOffset, delta, default, sectionOffset, stride, sectionStride)"));
        };
        let property = property.to_string();
        let mut args = Vec::new();
        while !lx.at_end() {
            args.push(lx.value(0)?);
        }
        let args = args.into_iter().map(arg).collect();
        return Ok(Some(Parsed {
            line: Line::Metadata {
                target,
                property,
                args,
            },
            columns: vec![lx.column(name_at), lx.column(t_at), lx.column(p_at)],
        }));
    }
    let mut fields = Fields::new();
    let mut columns = vec![lx.column(name_at)];
    while !lx.at_end() {
        let (k, at, v) = lx.pair(0)?;
        let col = lx.column(at);
        fields.push(k, field_in(v).map_err(|kind| lx.err(at, kind))?);
        columns.push(col);
    }
    Ok(Some(Parsed {
        line: Line::Record { name, fields },
        columns,
    }))
}
