//! The text form (or JSON lines) → a trace: reads [`Line`]s and hands them to a
//! [`TraceWriter`]. The one place that joins [`text`](crate::text) and [`encode`](crate::encode).

use std::io::BufRead;

use miette::Diagnostic;

use crate::encode::{EncodeError, TraceWriter};
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
    while let Some((n, s)) = lines.next_line()? {
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
