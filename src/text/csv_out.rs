//! CSV for spreadsheets (`mtf dump --format csv --record NAME`): one record type per file, one
//! row per record, one column per key of the text form.

// Design: the columns are the keys of the record type's shape outside its repeats (nested
// records flattened as dotted keys, one column per repeat), so that the header row is known
// before any record; the cells are filled by the printer's walk, whose keys are the same (the
// compiled program's).

use std::io::{self, Write};

use crate::decode::{FieldWalk, Reader, RecordView, Val, Value, Visit};
use crate::dtd::{Display, RecordId};
use crate::layout::Shape;

use super::linebuf::LineBuf;
use super::value::flat_displays;
use super::value::{element_display, shown, write_value};

/// Prints the records of one record type as CSV rows (RFC 4180: `,` between cells, `"`-quoted
/// cells where needed, `\n` between rows).
pub struct CsvPrinter {
    fields: FieldWalk,
    record: RecordId,
    columns: Vec<String>,
    cells: Vec<Vec<u8>>,
    /// For a flat record type (`FieldWalk::is_flat`) whose columns after the first three are
    /// its keys in order: how many; its integer rows are then written in one line buffer,
    /// without the walk.
    flat: Option<usize>,
    /// The display of each field of a flat record type.
    displays: Vec<Display>,
    /// The row of a flat record.
    line: LineBuf,
}

impl CsvPrinter {
    /// A printer for the records of type `record`.
    pub fn new(reader: &Reader<'_>, record: RecordId) -> CsvPrinter {
        let fields = FieldWalk::new(reader);
        let mut columns = vec![
            "record_index".to_string(),
            "byte_offset".to_string(),
            "section".to_string(),
        ];
        columns.extend(Shape::top_keys(&Shape::of(reader.schema().record(record))));
        let prog = fields.program(record);
        let keys = &prog.keys;
        let unique = columns
            .iter()
            .enumerate()
            .all(|(i, c)| !columns[..i].contains(c));
        let is_flat = fields.is_flat(record);
        let flat = (is_flat
            && unique
            && columns[3..]
                .iter()
                .map(|c| &**c)
                .eq(keys.iter().map(|k| &**k)))
        .then_some(keys.len());
        let displays = match flat {
            Some(_) => flat_displays(prog, reader.schema().record(record)),
            None => Vec::new(),
        };
        CsvPrinter {
            fields,
            displays,
            line: LineBuf::default(),
            record,
            cells: vec![Vec::new(); columns.len()],
            columns,
            flat,
        }
    }

    /// The row of a flat record whose fields are all integers, in one piece; `None` for any
    /// other record.
    fn flat_row(&mut self, view: &RecordView<'_>) -> Option<&[u8]> {
        let n = self.flat?;
        let values = view.values.get(1..).unwrap_or(&[]);
        if !values.iter().all(|fv| matches!(fv.value, Val::Int(_))) {
            return None;
        }
        use super::linebuf::Cursor;
        let line = &mut self.line;
        line.clear();
        let mut c = line.cursor(3 * Cursor::MOST_NUMBER + 2 + n * (Cursor::MOST_NUMBER + 1) + 1);
        c.dec(view.index());
        c.byte(b',');
        c.dec(view.offset());
        c.byte(b',');
        c.dec(view.section() as u64);
        // A record cut short leaves the cells of the fields it lacks empty.
        let mut fields = values.iter().zip(&self.displays);
        for _ in 0..n {
            c.byte(b',');
            if let Some((fv, &display)) = fields.next() {
                c.int(fv.value.number(), display);
            }
        }
        c.byte(b'\n');
        let end = c.n;
        line.done(end);
        Some(line.as_bytes())
    }

    /// Print every row by the general walk, without the flat-row plan: the same bytes, more
    /// slowly (for tests that compare the two).
    #[doc(hidden)]
    pub fn without_plans(mut self) -> CsvPrinter {
        self.flat = None;
        self
    }

    /// The record type printed.
    pub fn record_id(&self) -> RecordId {
        self.record
    }

    /// The column names: `record_index`, `byte_offset`, `section`, then the keys of the text
    /// form (`size`, `vfield.data`, a repeat's key).
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    /// Print the header row.
    pub fn header(&self, w: &mut impl Write) -> io::Result<()> {
        for (i, c) in self.columns.iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            write_cell(w, c.as_bytes())?;
        }
        w.write_all(b"\n")
    }

    /// Print one record (of the printer's type; others are ignored).
    pub fn record(&mut self, w: &mut impl Write, view: &RecordView<'_>) -> io::Result<()> {
        if view.record_id() != self.record {
            return Ok(());
        }
        if let Some(row) = self.flat_row(view) {
            return w.write_all(row);
        }
        for c in &mut self.cells {
            c.clear();
        }
        let mut n = itoa::Buffer::new();
        self.cells[0].extend_from_slice(n.format(view.index()).as_bytes());
        self.cells[1].extend_from_slice(n.format(view.offset()).as_bytes());
        self.cells[2].extend_from_slice(n.format(view.section()).as_bytes());
        let reader = view.reader();
        let columns = &self.columns;
        let cells = &mut self.cells;
        // Inside a repeat: the cell being written, and whether a group's first key is next.
        let mut list: Option<usize> = None;
        let mut depth = 0usize;
        let mut first_in_group = false;
        self.fields.visit(view, |v| -> io::Result<()> {
            match (v, list) {
                (Visit::Field(key, f), None) => {
                    if let Some(i) = columns.iter().position(|c| c == key) {
                        scalar(&mut cells[i], reader, f.value(), f.def().display)?;
                    }
                }
                (Visit::ListStart(key), None) => {
                    list = columns.iter().position(|c| c == key);
                    depth = 1;
                    if let Some(i) = list {
                        cells[i].push(b'[');
                    }
                }
                (v, Some(i)) => {
                    let c = &mut cells[i];
                    match v {
                        Visit::Field(key, f) => {
                            if !key.is_empty() {
                                if !first_in_group {
                                    c.push(b' ');
                                }
                                c.extend_from_slice(key.as_bytes());
                                c.push(b'=');
                            }
                            first_in_group = false;
                            let (value, display) = shown(reader, &f, true);
                            write_value(c, reader, value, display, 0)?;
                        }
                        Visit::ListStart(key) => {
                            depth += 1;
                            if !first_in_group {
                                c.push(b' ');
                            }
                            first_in_group = false;
                            write!(c, "{key}=[")?;
                        }
                        Visit::ItemStart(single, index) => {
                            if index > 0 {
                                c.push(b' ');
                            }
                            if !single {
                                c.push(b'{');
                            }
                            first_in_group = true;
                        }
                        Visit::ItemEnd(single) => {
                            if !single {
                                c.push(b'}');
                            }
                            first_in_group = false;
                        }
                        Visit::ListEnd => {
                            c.push(b']');
                            depth -= 1;
                            if depth == 0 {
                                list = None;
                            }
                        }
                    }
                }
                (Visit::ListEnd, None) => depth = depth.saturating_sub(1),
                (Visit::ItemStart(..) | Visit::ItemEnd(_), None) => {}
            }
            Ok(())
        })?;
        for (i, c) in self.cells.iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            write_cell(w, c)?;
        }
        w.write_all(b"\n")
    }
}

/// A value alone in a cell: text as it is, other byte strings in hex, integers as the DTD
/// displays them, references as what they lead to.
fn scalar(c: &mut Vec<u8>, reader: &Reader<'_>, v: Value<'_>, display: Display) -> io::Result<()> {
    match v {
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) if display == Display::Text => c.extend_from_slice(s.as_bytes()),
            _ => {
                for x in b {
                    write!(c, "{x:02x}")?;
                }
            }
        },
        Value::Ref(r) => match reader.resolve(r) {
            Ok(res) => {
                let d = element_display(reader, res.record);
                match res.value {
                    Value::Ref(_) => write!(c, "{r}")?,
                    // An integer as if the record stored it (a split stream's value).
                    value @ Value::Int(_) => scalar(c, reader, value, display)?,
                    value => scalar(c, reader, value, d)?,
                }
            }
            Err(_) => write!(c, "{r}")?,
        },
        Value::Int(_) => write_value(c, reader, v, display, 0)?,
    }
    Ok(())
}

/// One cell, quoted when it holds `,`, `"`, a line break, or space at either end.
fn write_cell(w: &mut impl Write, b: &[u8]) -> io::Result<()> {
    let quote = b.iter().any(|&x| matches!(x, b',' | b'"' | b'\n' | b'\r'))
        || b.first().is_some_and(|x| x.is_ascii_whitespace())
        || b.last().is_some_and(|x| x.is_ascii_whitespace());
    if !quote {
        return w.write_all(b);
    }
    w.write_all(b"\"")?;
    for &x in b {
        if x == b'"' {
            w.write_all(b"\"\"")?;
        } else {
            w.write_all(&[x])?;
        }
    }
    w.write_all(b"\"")
}
