//! The text form (or JSON lines) → a trace: reads [`Line`]s and hands them to a
//! [`TraceWriter`]. The one place that joins [`text`](crate::text) and [`encode`](crate::encode).

use std::io::BufRead;

use miette::Diagnostic;

use crate::dtd::RecordId;
use crate::encode::{EncodeError, In, TraceWriter};
use crate::text::{
    meta_property, parse_line, section_id, InputFormat, Line, LineError, LineReader, SectionRef,
    TextError, TextErrorKind, TextHeader,
};

/// Why packing failed.
#[derive(Debug, thiserror::Error, Diagnostic)]
pub enum PackError {
    /// Reading the input failed.
    #[error("reading the input: {0}")]
    #[diagnostic(code(mtf::pack::io))]
    Io(#[source] std::io::Error),
    /// A line is malformed or names a value that cannot be written.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Text(#[from] TextError),
    /// Finishing the trace failed (a reference that leads nowhere, an I/O error).
    #[error(transparent)]
    #[diagnostic(transparent)]
    Write(EncodeError),
}

impl From<LineError> for PackError {
    fn from(e: LineError) -> Self {
        match e {
            LineError::Text(t) => PackError::Text(t),
            LineError::Io(e) => PackError::Io(e),
        }
    }
}

/// Read the header line of an input (the first line that is not blank or a comment).
pub fn read_header<R: BufRead>(
    lines: &mut LineReader<R>,
    format: InputFormat,
) -> Result<TextHeader, PackError> {
    loop {
        let Some((n, s)) = lines.next_line()? else {
            return Err(PackError::Text(TextError {
                line: lines.line_number() + 1,
                column: 1,
                kind: TextErrorKind::Syntax("empty input: expected a `%mtf` header line"),
            }));
        };
        match parse_line(format, s, n)? {
            None => continue,
            Some(p) => match p.line {
                Line::Header(h) => return Ok(h),
                _ => {
                    return Err(PackError::Text(TextError {
                        line: n,
                        column: 1,
                        kind: TextErrorKind::Syntax(
                            "expected a `%mtf 1 dtd=… class=… order=…` header first",
                        ),
                    }))
                }
            },
        }
    }
}

/// Input lines of the records written so far: a record's line is its index plus the offset
/// recorded at the last place where blank or comment lines shifted them apart.
#[derive(Debug, Default)]
pub struct LineMap(Vec<(u64, usize)>);

impl LineMap {
    fn note(&mut self, record: u64, line: usize) {
        let shift = line - record as usize;
        if self.0.last().map(|&(_, s)| s) != Some(shift) {
            self.0.push((record, shift));
        }
    }

    /// The line of record `index`, if it was noted.
    pub fn line_of(&self, index: u64) -> Option<usize> {
        let i = self.0.partition_point(|&(r, _)| r <= index);
        i.checked_sub(1).map(|i| index as usize + self.0[i].1)
    }
}

/// Read every line after the header and write it. Memory stays constant: one line at a time
/// (plus one entry per run of records between blank or comment lines, to name the line of an
/// error found only when the trace is finished).
pub fn pack_lines<R: BufRead>(
    lines: &mut LineReader<R>,
    format: InputFormat,
    writer: &mut TraceWriter<'_>,
    map: &mut LineMap,
) -> Result<(), PackError> {
    let schema = writer.schema();
    let mut fast = Fast::new(writer);
    while let Some((n, s)) = lines.next_line()? {
        if let Some(rid) = fast.parse(format, s, writer) {
            map.note(writer.records_written(), n);
            writer
                .record(rid, &fast.values)
                .map_err(|e| fast.error(s, n, rid, writer, e))?;
            continue;
        }
        let Some(parsed) = parse_line(format, s, n)? else {
            continue;
        };
        let cols = parsed.columns;
        let err = |column: usize, kind: TextErrorKind| TextError {
            line: n,
            column,
            kind,
        };
        map.note(writer.records_written(), n);
        match parsed.line {
            Line::Header(_) => {
                return Err(err(1, TextErrorKind::Syntax("a second header line")).into())
            }
            Line::Section(v) => {
                let id = section_id(schema, &v).ok_or_else(|| {
                    err(
                        cols[0],
                        TextErrorKind::UnknownSection {
                            given: match &v {
                                SectionRef::Id(n) => n.to_string(),
                                SectionRef::Name(s) => s.clone(),
                            },
                        },
                    )
                })?;
                writer
                    .section(id)
                    .map_err(|e| err(cols[0], TextErrorKind::Encode(e)))?;
            }
            Line::Metadata {
                target,
                property,
                args,
            } => {
                let Some((rname, fname)) = target.split_once('.') else {
                    return Err(err(
                        cols[1],
                        TextErrorKind::Syntax("expected `record.field` after metadata"),
                    )
                    .into());
                };
                let rid = writer.lookup(rname).ok_or_else(|| {
                    err(cols[1], TextErrorKind::UnknownRecord { name: rname.into() })
                })?;
                let slot = schema.record(rid).slot_by_name(fname).ok_or_else(|| {
                    err(
                        cols[1],
                        TextErrorKind::UnknownField {
                            record: rname.into(),
                            field: fname.into(),
                        },
                    )
                })?;
                let prop = meta_property(schema, &property, &args).map_err(|k| err(cols[2], k))?;
                writer
                    .metadata(rid, slot, prop)
                    .map_err(|e| err(cols[0], TextErrorKind::Encode(e)))?;
            }
            Line::Record { name, fields } => {
                if writer.lookup(&name).is_none() {
                    return Err(err(cols[0], TextErrorKind::UnknownRecord { name }).into());
                }
                writer.write_fields_at(&name, &fields).map_err(|(at, e)| {
                    let col = at.and_then(|i| cols.get(i + 1).copied()).unwrap_or(cols[0]);
                    err(col, TextErrorKind::Encode(e))
                })?;
            }
        }
    }
    Ok(())
}

/// The lines of the most common records read without building a [`Line`].
// Design: nearly every line of a dump is a record whose fields are all integers and that has no
// repeat, written as `mtf dump` writes it: `alloc size=16 address=0x1000 …` with the keys in
// layout order, or its JSON twin. For such a line the values go straight into one reused list
// for the encoder, with no allocation per line or per token. Anything else (another spacing,
// an annotation, a comment, a number the fast reader does not take, a string, a section or
// metadata line, an error) is read by the full parser, from the start of the line, so the
// fast reader never decides what a line means: it only recognises lines whose meaning the full
// parser would give the same values for (tests compare both on every form).
struct Fast {
    /// Per record type: whether it is flat (integers only, no repeat).
    flat: Vec<bool>,
    /// The values of the line read last, in layout order.
    values: Vec<In>,
    /// The byte offset of each key of that line (for the column of an error).
    keys_at: Vec<usize>,
}

impl Fast {
    fn new(writer: &TraceWriter<'_>) -> Fast {
        let flat = (0..writer.schema().records.len())
            .map(|rid| writer.flat_keys(rid as RecordId).is_some())
            .collect();
        Fast {
            flat,
            values: Vec::new(),
            keys_at: Vec::new(),
        }
    }

    /// The record type of a line the fast reader takes, its values in `self.values`; `None`
    /// for a line for the full parser.
    fn parse(
        &mut self,
        format: InputFormat,
        s: &str,
        writer: &TraceWriter<'_>,
    ) -> Option<RecordId> {
        self.values.clear();
        self.keys_at.clear();
        match format {
            InputFormat::Text => self.text(s.as_bytes(), writer),
            #[cfg(feature = "json")]
            InputFormat::Jsonl => self.json(s.as_bytes(), writer),
        }
    }

    /// A flat record of the current section by name.
    fn record(&self, name: &[u8], writer: &TraceWriter<'_>) -> Option<RecordId> {
        let name = std::str::from_utf8(name).ok()?;
        if name == "section" || name == "metadata" {
            return None;
        }
        let rid = writer.lookup(name)?;
        self.flat.get(rid as usize).copied()?.then_some(rid)
    }

    /// `name key=N key=N …`, one space apart, every key in layout order, nothing after.
    fn text(&mut self, b: &[u8], writer: &TraceWriter<'_>) -> Option<RecordId> {
        let name_len = b
            .iter()
            .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_' || c == b'.'))
            .unwrap_or(b.len());
        if name_len == 0 {
            return None;
        }
        let rid = self.record(&b[..name_len], writer)?;
        let mut p = name_len;
        for key in writer.flat_keys(rid)? {
            let key = key.as_bytes();
            if b.get(p) != Some(&b' ') {
                return None;
            }
            p += 1;
            self.keys_at.push(p);
            if !b[p..].starts_with(key) || b.get(p + key.len()) != Some(&b'=') {
                return None;
            }
            p += key.len() + 1;
            // As the full parser reads numbers: `-`, then `0x` and hex digits, or digits.
            let neg = b.get(p) == Some(&b'-');
            if neg {
                p += 1;
            } else if !b.get(p).is_some_and(u8::is_ascii_digit) {
                return None;
            }
            let hex = b[p..].starts_with(b"0x") || b[p..].starts_with(b"0X");
            if hex {
                p += 2;
            }
            let start = p;
            let mut v: u64 = 0;
            while let Some(&c) = b.get(p) {
                let d = match c {
                    b'0'..=b'9' => c - b'0',
                    b'a'..=b'f' if hex => c - b'a' + 10,
                    b'A'..=b'F' if hex => c - b'A' + 10,
                    _ => break,
                };
                v = v
                    .checked_mul(if hex { 16 } else { 10 })?
                    .checked_add(u64::from(d))?;
                p += 1;
            }
            if p == start || !matches!(b.get(p), None | Some(b' ')) {
                return None;
            }
            self.values.push(if neg {
                if v > 1 << 63 {
                    return None;
                }
                In::Neg((v as i64).wrapping_neg())
            } else {
                In::Int(v)
            });
        }
        (p == b.len()).then_some(rid)
    }

    /// `{"record":"NAME","section":N,"index":N,"offset":N,"fields":{"key":N,…}}` as `mtf dump
    /// --format jsonl` writes it (numbers, or decimal strings with `--int-strings`).
    #[cfg(feature = "json")]
    fn json(&mut self, b: &[u8], writer: &TraceWriter<'_>) -> Option<RecordId> {
        let rest = b.strip_prefix(b"{\"record\":\"")?;
        let name_len = rest
            .iter()
            .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_' || c == b'.'))?;
        let rid = self.record(&rest[..name_len], writer)?;
        let mut p = b.len() - rest.len() + name_len;
        for head in [&b"\",\"section\":"[..], b",\"index\":", b",\"offset\":"] {
            if !b[p..].starts_with(head) {
                return None;
            }
            p += head.len();
            json_number(b, &mut p)?;
        }
        if !b[p..].starts_with(b",\"fields\":{") {
            return None;
        }
        p += 11;
        for (i, key) in writer.flat_keys(rid)?.iter().enumerate() {
            if i > 0 {
                if b.get(p) != Some(&b',') {
                    return None;
                }
                p += 1;
            }
            let key = key.as_bytes();
            // Keys are words: written without escapes.
            if b.get(p) != Some(&b'"')
                || !b[p + 1..].starts_with(key)
                || !b[p + 1 + key.len()..].starts_with(b"\":")
            {
                return None;
            }
            p += key.len() + 3;
            // With --int-strings, `"123"` (a decimal string the encoder takes as an integer).
            let quoted = b.get(p) == Some(&b'"');
            if quoted {
                p += 1;
            }
            let neg = b.get(p) == Some(&b'-');
            if neg {
                p += 1;
            }
            let v = json_number(b, &mut p)?;
            if quoted {
                if b.get(p) != Some(&b'"') {
                    return None;
                }
                p += 1;
            }
            // JSON reads `-0` as a float; a string `"-0"` is the integer 0.
            self.values.push(match (neg, v) {
                (false, v) => In::Int(v),
                (true, 0) if !quoted => return None,
                (true, v) if v <= 1 << 63 => In::Neg((v as i64).wrapping_neg()),
                _ => return None,
            });
        }
        (&b[p..] == b"}}").then_some(rid)
    }

    /// The error of writing the record of line `n` (`s`), at the column of the key it
    /// concerns, as the full parser reports it.
    fn error(
        &self,
        s: &str,
        n: usize,
        rid: RecordId,
        writer: &TraceWriter<'_>,
        e: EncodeError,
    ) -> PackError {
        let at = e
            .field()
            .and_then(|f| writer.flat_keys(rid)?.iter().position(|k| &**k == f))
            .and_then(|i| self.keys_at.get(i).copied());
        // JSON lines name no column.
        let column = match (self.keys_at.is_empty(), at) {
            (false, Some(at)) => s[..at].chars().count() + 1,
            _ => 1,
        };
        PackError::Text(TextError {
            line: n,
            column,
            kind: TextErrorKind::Encode(e),
        })
    }
}

/// A JSON number without sign, fraction or exponent: `0` or digits not starting with `0`,
/// followed by `,`, `}` or `"`; `None` for anything else (read by the full parser).
#[cfg(feature = "json")]
fn json_number(b: &[u8], p: &mut usize) -> Option<u64> {
    let start = *p;
    let mut v: u64 = 0;
    while let Some(&c) = b.get(*p).filter(|c| c.is_ascii_digit()) {
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        *p += 1;
    }
    let digits = *p - start;
    if digits == 0 || (digits > 1 && b[start] == b'0') {
        return None;
    }
    matches!(b.get(*p), Some(b',' | b'}' | b'"')).then_some(v)
}

/// Turn an error of [`TraceWriter::finish`] into one that names the input line of the record
/// it concerns, when it concerns one.
pub fn finish_error(e: EncodeError, map: &LineMap) -> PackError {
    match e.record_index().and_then(|i| map.line_of(i)) {
        Some(line) => PackError::Text(TextError {
            line,
            column: 1,
            kind: TextErrorKind::Encode(e),
        }),
        None => PackError::Write(e),
    }
}

/// Pack a whole input (header line first) into a trace in memory, with `schema`.
pub fn pack_to_vec(
    schema: &crate::dtd::Schema,
    input: impl BufRead,
    format: InputFormat,
) -> Result<Vec<u8>, PackError> {
    let mut lines = LineReader::new(input);
    let h = read_header(&mut lines, format)?;
    let mut w = TraceWriter::in_memory(schema, h.class, h.order, &h.dtd);
    let mut map = LineMap::default();
    pack_lines(&mut lines, format, &mut w, &mut map)?;
    w.finish_to_vec().map_err(|e| finish_error(e, &map))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast reader takes exactly the lines it should, with the values the full parser and
    /// the assembler give them.
    #[cfg(all(feature = "import", feature = "json"))]
    #[test]
    fn fast_lines_read_as_the_full_parser_reads_them() {
        use crate::text::Parsed;
        let dtd = include_str!("../benches/hatf-bench.dtd");
        let schema = crate::dtd::parse_str("hatf-bench.dtd", dtd).unwrap().schema;
        let header = "%mtf 1 dtd=\"x\" class=64 order=little";
        let Some(Parsed {
            line: Line::Header(h),
            ..
        }) = parse_line(InputFormat::Text, header, 1).unwrap()
        else {
            panic!("a header")
        };
        let mut w = TraceWriter::in_memory(&schema, h.class, h.order, "x");
        w.section(1).unwrap();
        let mut fast = Fast::new(&w);
        let taken = [
            (
                InputFormat::Text,
                "alloc size=16 address=0x7f0000001000 time=5 thread=1 heap=0",
            ),
            (
                InputFormat::Text,
                "alloc size=-1 address=0X1F time=0 thread=0 heap=-9223372036854775808",
            ),
            (
                InputFormat::Text,
                "free address=18446744073709551615 time=00 thread=-0 heap=-0x10",
            ),
            (
                InputFormat::Text,
                "realloc size=1 old=2 address=3 time=4 thread=5 heap=6",
            ),
            (
                InputFormat::Jsonl,
                r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"size":16,"address":139637976731648,"time":5,"thread":1,"heap":0}}"#,
            ),
            (
                InputFormat::Jsonl,
                r#"{"record":"free","section":1,"index":0,"offset":0,"fields":{"address":"18446744073709551615","time":"-0","thread":-5,"heap":"-9223372036854775808"}}"#,
            ),
        ];
        for (format, line) in taken {
            let rid = fast.parse(format, line, &w);
            assert!(rid.is_some(), "{line}");
            let Some(Parsed {
                line: Line::Record { name, fields },
                ..
            }) = parse_line(format, line, 1).unwrap()
            else {
                panic!("{line}: not a record")
            };
            assert_eq!(rid, w.lookup(&name));
            let want = w.assemble(rid.unwrap(), &fields).unwrap();
            assert_eq!(fast.values, want, "{line}");
        }
        let refused = [
            (
                InputFormat::Text,
                "alloc size=16  address=1 time=5 thread=1 heap=0",
            ),
            (
                InputFormat::Text,
                " alloc size=16 address=1 time=5 thread=1 heap=0",
            ),
            (
                InputFormat::Text,
                "alloc size=16:x address=1 time=5 thread=1 heap=0",
            ),
            (
                InputFormat::Text,
                "alloc size=16~0x10 address=1 time=5 thread=1 heap=0",
            ),
            (
                InputFormat::Text,
                "alloc address=1 size=16 time=5 thread=1 heap=0",
            ),
            (InputFormat::Text, "alloc size=16 address=1 time=5 thread=1"),
            (
                InputFormat::Text,
                "alloc size=16 address=1 time=5 thread=1 heap=0 # note",
            ),
            (
                InputFormat::Text,
                "alloc size=16 address=1 time=5 thread=1 heap=0 ",
            ),
            (
                InputFormat::Text,
                "alloc size=18446744073709551616 address=1 time=5 thread=1 heap=0",
            ),
            (
                InputFormat::Text,
                "alloc size=-9223372036854775809 address=1 time=5 thread=1 heap=0",
            ),
            (
                InputFormat::Text,
                "alloc size=0x address=1 time=5 thread=1 heap=0",
            ),
            (
                InputFormat::Text,
                "alloc size=\"16\" address=1 time=5 thread=1 heap=0",
            ),
            (
                InputFormat::Text,
                "alloc size=#1 address=1 time=5 thread=1 heap=0",
            ),
            (InputFormat::Text, "section number=1"),
            (InputFormat::Text, "metadata alloc.size width 2"),
            (InputFormat::Text, "nosuch a=1"),
            (
                InputFormat::Jsonl,
                r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"size":016,"address":1,"time":5,"thread":1,"heap":0}}"#,
            ),
            (
                InputFormat::Jsonl,
                r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"size":-0,"address":1,"time":5,"thread":1,"heap":0}}"#,
            ),
            (
                InputFormat::Jsonl,
                r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"size":1.5,"address":1,"time":5,"thread":1,"heap":0}}"#,
            ),
            (
                InputFormat::Jsonl,
                r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"size":1,"address":1,"time":5,"thread":1,"heap":0}} "#,
            ),
            (
                InputFormat::Jsonl,
                r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"address":1,"size":1,"time":5,"thread":1,"heap":0}}"#,
            ),
            (
                InputFormat::Jsonl,
                r#"{"record":"alloc", "section":1,"index":10,"offset":20,"fields":{"size":1,"address":1,"time":5,"thread":1,"heap":0}}"#,
            ),
            (
                InputFormat::Jsonl,
                r#"{"record":"alloc","section":1,"index":10,"offset":20,"fields":{"size":99999999999999999999,"address":1,"time":5,"thread":1,"heap":0}}"#,
            ),
        ];
        for (format, line) in refused {
            assert_eq!(fast.parse(format, line, &w), None, "{line}");
        }
    }

    #[test]
    fn line_map_follows_shifts() {
        let mut m = LineMap::default();
        m.note(0, 2);
        m.note(1, 3);
        m.note(2, 6);
        assert_eq!(m.line_of(0), Some(2));
        assert_eq!(m.line_of(1), Some(3));
        assert_eq!(m.line_of(2), Some(6));
        assert_eq!(m.line_of(5), Some(9));
        assert_eq!(m.0.len(), 2);
    }
}
