//! Printing one record as a JSON object (`mtf dump --format jsonl`).

use std::io::{self, Write};

use serde_json::{json, Map, Value as J};

use crate::decode::{ElementRef, Field, Reader, RecordView, Val, Value};
use crate::dtd::{Builtin, Display};

use super::linebuf::{Cursor, LineBuf, Padded};
use super::print::{Printer, Visit};

/// The JSON object of a metadata record (rare: built as a value).
fn metadata(view: &RecordView<'_>) -> J {
    let reader = view.reader();
    let mut obj = Map::new();
    obj.insert("record".into(), json!(view.name()));
    obj.insert("section".into(), json!(view.section()));
    obj.insert("index".into(), json!(view.index()));
    obj.insert("offset".into(), json!(view.offset()));
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
    J::Object(obj)
}

/// The pieces between a record's numbers, padded for [`LineBuf`](super::linebuf::LineBuf).
const INDEX: Padded = Padded::Short(*b",\"index\":\0\0\0\0\0\0\0", 9);
const OFFSET: Padded = Padded::Short(*b",\"offset\":\0\0\0\0\0\0", 10);
const FIELDS: Padded = Padded::Short(*b",\"fields\":{\0\0\0\0\0", 11);

/// `}}` and a newline, the end of a record's line.
const END: Padded = Padded::Short(*b"}}\n\0\0\0\0\0\0\0\0\0\0\0\0\0", 3);

/// Write one record as a JSON object and a newline, straight to `w`: numbers through `itoa`,
/// strings escaped by serde_json, no value tree (except for the rare metadata record).
pub(crate) fn write_record(
    p: &mut Printer,
    w: &mut impl Write,
    view: &RecordView<'_>,
) -> io::Result<()> {
    let rt = view.record();
    if rt.builtin == Some(Builtin::Metadata) {
        return writeln!(w, "{}", metadata(view));
    }
    if !p.opts().raw && p.plans[view.record_id() as usize].flat {
        // A section record's number is the section id, small and read as a number by `pack`.
        return if p.int_strings() && rt.builtin != Some(Builtin::Section) {
            flat::<true>(p, w, view)
        } else {
            flat::<false>(p, w, view)
        };
    }
    walked(p, w, view)
}

/// The line of a flat record (see `Plan`), without `--raw`: the head, a prefix and a value per
/// field, in the line buffer; integers (nearly every field) through the cursor, quoted when
/// `STRINGS`, the rest from the first other on the general way.
// Design: the hot path of `dump --format jsonl`. The constant parts of a line are copied as
// padded blocks: the head up to `"section":`, then `N,"index":` for the section number N (one
// of 256 built once), `,"offset":`, and each key's `,"key":` (the first with `,"fields":{`
// before it); the numbers are the cursor's SWAR decimal; `--int-strings` is a const parameter,
// so the loop over the fields has no branch but a field's sign.
#[inline]
fn flat<const STRINGS: bool>(
    p: &mut Printer,
    w: &mut impl Write,
    view: &RecordView<'_>,
) -> io::Result<()> {
    let logical = p.logical_values();
    let plan = &p.plans[view.record_id() as usize];
    let line = &mut p.line;
    // Lines kept for a batched write are written before any record that is not planned.
    if !p.batch {
        line.clear();
    }
    let values = view.values.get(1..).unwrap_or(&[]);
    let mut c = line.cursor(plan.most);
    c.padded(&plan.json_head);
    c.padded(&p.json_sections[view.section() as usize]);
    c.dec(view.index());
    c.padded(&OFFSET);
    c.dec(view.offset());
    // The first field's piece begins with `,"fields":{`.
    if values.is_empty() || plan.json.is_empty() {
        c.padded(&FIELDS);
    }
    let mut done = 0;
    for ((fv, prefix), &display) in values.iter().zip(&plan.json).zip(&plan.displays) {
        let Val::Int(v) = fv.value else { break };
        c.padded(prefix);
        if STRINGS {
            c.byte(b'"');
        }
        // One digit (a thread, a heap, a flag: often) without the eight-digit conversion.
        if v < 10 {
            c.byte(b'0' + v as u8);
        } else if display == Display::Signed {
            c.signed(v as i64);
        } else {
            c.dec(v);
        }
        if STRINGS {
            c.byte(b'"');
        }
        done += 1;
    }
    if done == values.len().min(plan.json.len()) {
        c.padded(&END);
        let end = c.n;
        line.done(end);
        return p.line_done(w);
    }
    let end = c.n;
    line.done(end);
    let result = rest(line, view, &plan.json, done, STRINGS, logical);
    p.line.put(b"}}\n");
    result.and_then(|()| p.line_done(w))
}

/// The fields of a flat record from the first that is not an integer on (`done` before it).
#[inline(never)]
fn rest(
    line: &mut LineBuf,
    view: &RecordView<'_>,
    prefixes: &[Padded],
    done: usize,
    strings: bool,
    logical: bool,
) -> io::Result<()> {
    let reader = view.reader();
    let slots = &view.record().slots;
    let values = view.values.get(1..).unwrap_or(&[]);
    let rest = values.iter().zip(prefixes).enumerate();
    for (i, (fv, prefix)) in rest.skip(done) {
        line.padded(prefix);
        let display = slots[fv.slot as usize].display;
        match (fv.value, strings, display) {
            (Val::Int(v), false, Display::Signed) => line.signed(v as i64),
            (Val::Int(v), false, _) => line.dec(v),
            (Val::Int(v), true, Display::Signed) => {
                line.byte(b'"');
                line.signed(v as i64);
                line.byte(b'"');
            }
            (Val::Int(v), true, _) => {
                line.byte(b'"');
                line.dec(v);
                line.byte(b'"');
            }
            _ => {
                if let Some(f) = view.field_at(i + 1) {
                    field(line, reader, &f, false, strings, logical)?;
                }
            }
        }
    }
    Ok(())
}

/// A record by the general walk (one with a repeat or a field without a key, or `--raw`).
#[inline(never)]
fn walked(p: &mut Printer, w: &mut impl Write, view: &RecordView<'_>) -> io::Result<()> {
    let rt = view.record();
    let reader = view.reader();
    let raw = p.opts().raw;
    // A section record's number is the section id, small and read as a number by `pack`.
    let strings = p.int_strings() && rt.builtin != Some(Builtin::Section);
    let logical = p.logical_values();
    let plan = &p.plans[view.record_id() as usize];
    let mut line = std::mem::take(&mut p.line);
    line.clear();
    let head = plan.json_head.len().max(Cursor::MOST_PADDED) + 3 * Cursor::MOST_NUMBER + 96;
    let mut c = line.cursor(head);
    c.padded(&plan.json_head);
    c.dec(view.section() as u64);
    c.padded(&INDEX);
    c.dec(view.index());
    c.padded(&OFFSET);
    c.dec(view.offset());
    c.padded(&FIELDS);
    let end = c.n;
    line.done(end);
    let head = w.write_all(line.as_bytes());
    line.clear();
    p.line = line;
    head?;
    // Whether the innermost open object or array has no member yet; the record's fields are the
    // first level. At most one entry per nested repeat.
    let mut first = std::mem::take(&mut p.json_first);
    first.clear();
    first.push(true);
    let result = p.visit(view, |v| -> io::Result<()> {
        let sep = |w: &mut dyn Write, first: &mut Vec<bool>| -> io::Result<()> {
            match first.last_mut() {
                Some(f) if *f => {
                    *f = false;
                    Ok(())
                }
                _ => w.write_all(b","),
            }
        };
        match v {
            Visit::Field(key, f) => {
                sep(w, &mut first)?;
                if !key.is_empty() {
                    string(w, key)?;
                    w.write_all(b":")?;
                }
                field(w, reader, &f, raw, strings, logical)?;
            }
            Visit::ListStart(key) => {
                sep(w, &mut first)?;
                string(w, key)?;
                w.write_all(b":[")?;
                first.push(true);
            }
            Visit::ItemStart(single, _) => {
                if !single {
                    sep(w, &mut first)?;
                    w.write_all(b"{")?;
                    first.push(true);
                }
            }
            Visit::ItemEnd(single) => {
                if !single {
                    first.pop();
                    w.write_all(b"}")?;
                }
            }
            Visit::ListEnd => {
                first.pop();
                w.write_all(b"]")?;
            }
        }
        Ok(())
    });
    p.json_first = first;
    result?;
    w.write_all(b"}}\n")
}

fn int(w: &mut (impl Write + ?Sized), v: u64) -> io::Result<()> {
    w.write_all(itoa::Buffer::new().format(v).as_bytes())
}

fn string(w: &mut (impl Write + ?Sized), s: &str) -> io::Result<()> {
    serde_json::to_writer(w, s).map_err(io::Error::other)
}

fn field(
    w: &mut (impl Write + ?Sized),
    reader: &Reader<'_>,
    f: &Field<'_>,
    raw: bool,
    strings: bool,
    logical: bool,
) -> io::Result<()> {
    let r = if raw { f.raw() } else { None };
    if r.is_some() {
        w.write_all(b"{\"value\":")?;
    }
    let (value, display) = super::print::shown(reader, f, logical);
    match (strings, value, display) {
        (true, Value::Int(v), Display::Signed) => {
            write!(w, "\"{}\"", itoa::Buffer::new().format(v as i64))?
        }
        (true, Value::Int(v), _) => write!(w, "\"{}\"", itoa::Buffer::new().format(v))?,
        (_, value, display) => json_value(w, reader, value, display, 0)?,
    }
    if let Some(r) = r {
        w.write_all(b",\"raw\":")?;
        if strings {
            write!(w, "\"{}\"", itoa::Buffer::new().format(r))?;
        } else {
            int(w, r)?;
        }
        w.write_all(b"}")?;
    }
    Ok(())
}

fn json_value(
    w: &mut (impl Write + ?Sized),
    reader: &Reader<'_>,
    value: Value<'_>,
    display: Display,
    depth: usize,
) -> io::Result<()> {
    match value {
        Value::Int(v) => match display {
            Display::Signed => w.write_all(itoa::Buffer::new().format(v as i64).as_bytes()),
            _ => int(w, v),
        },
        Value::Bytes(b) => match (display, std::str::from_utf8(b)) {
            (Display::Text, Ok(s)) => string(w, s),
            _ => write!(w, "{{\"hex\":\"{}\"}}", hex(b)),
        },
        Value::Ref(r) => {
            w.write_all(b"{\"section\":")?;
            match r {
                ElementRef::Offset { offset, section } => {
                    int(w, section as u64)?;
                    w.write_all(b",\"offset\":")?;
                    int(w, offset)?;
                }
                ElementRef::Index { index, section } => {
                    int(w, section as u64)?;
                    w.write_all(b",\"index\":")?;
                    w.write_all(itoa::Buffer::new().format(index).as_bytes())?;
                }
            }
            if depth == 0 {
                if let Ok(res) = reader.resolve(r) {
                    let rt = reader.schema().record(res.record);
                    let d = rt.slots.last().map_or(Display::Decimal, |s| s.display);
                    w.write_all(b",\"value\":")?;
                    json_value(w, reader, res.value, d, depth + 1)?;
                }
            }
            w.write_all(b"}")
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
