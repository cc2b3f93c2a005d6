//! Printing one record as a JSON object (`mtf dump --format jsonl`).

use std::io::{self, Write};

use serde_json::{json, Map, Value as J};

use crate::decode::{ElementRef, Field, FieldWalk, Reader, RecordView, Val, Value, Visit};
use crate::dtd::{Builtin, Display};

use super::linebuf::{line_most, Cursor, LineBuf, Padded};
use super::value::flat_displays;
use super::value::{element_display, shown};

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

/// The line of a metadata record that made its change `m`, written straight to `w`: the bytes
/// [`metadata`]'s value tree gives, without building it.
// Design: on the traces Meta-TF was designed for, one record in six is a metadata record (the
// metadata-heavy shape of issue 28), too many for a value tree and its allocations each.
fn metadata_set(
    w: &mut (impl Write + ?Sized),
    view: &RecordView<'_>,
    m: crate::decode::MetaChange,
) -> io::Result<()> {
    let target = view.reader().schema().record(m.record);
    let mut n = itoa::Buffer::new();
    w.write_all(b"{\"record\":")?;
    string(w, view.name())?;
    w.write_all(b",\"section\":")?;
    w.write_all(n.format(view.section()).as_bytes())?;
    w.write_all(b",\"index\":")?;
    w.write_all(n.format(view.index()).as_bytes())?;
    w.write_all(b",\"offset\":")?;
    w.write_all(n.format(view.offset()).as_bytes())?;
    w.write_all(b",\"set\":{\"record\":")?;
    string(w, &target.name)?;
    w.write_all(b",\"field\":")?;
    string(w, &target.slots[m.slot as usize].name)?;
    w.write_all(b",\"property\":")?;
    string(w, m.property.name())?;
    w.write_all(b",\"args\":[")?;
    let (words, k) = m.property.words();
    for (i, &wd) in words.iter().take(k).enumerate() {
        if i > 0 {
            w.write_all(b",")?;
        }
        let text = if m.property.word_is_signed(i) {
            n.format(wd as i64)
        } else {
            n.format(wd)
        };
        w.write_all(text.as_bytes())?;
    }
    w.write_all(b"]}}\n")
}

/// The pieces between a record's numbers, padded for [`LineBuf`](super::linebuf::LineBuf).
const INDEX: Padded = Padded::Short(*b",\"index\":\0\0\0\0\0\0\0", 9);
const OFFSET: Padded = Padded::Short(*b",\"offset\":\0\0\0\0\0\0", 10);
const FIELDS: Padded = Padded::Short(*b",\"fields\":{\0\0\0\0\0", 11);

/// `}}` and a newline, the end of a record's line.
const END: Padded = Padded::Short(*b"}}\n\0\0\0\0\0\0\0\0\0\0\0\0\0", 3);

/// The JSON-lines printer's state, kept from record to record (owned by a
/// [`Printer`](super::Printer) of format JSON lines).
pub(crate) struct JsonLines {
    /// Per record type, the pieces of a flat record's line (see [`JsonPlan`]).
    plans: Vec<JsonPlan>,
    /// Whether the innermost open object or array has no member yet (the walk's stack).
    first: Vec<bool>,
    /// `N,"index":` for each section number N, the piece of a line after the head (a section
    /// number is a byte).
    sections: Vec<Padded>,
    /// `--raw`: stored values too.
    raw: bool,
    /// Integers as JSON strings (`Printer::with_int_strings`).
    pub(crate) strings: bool,
    /// References as the values they lead to (`Printer::with_logical_values`).
    pub(crate) logical: bool,
}

/// The bytes a record type's JSON line is made of, computed once per record type (as the text
/// form's `PrintPlan`).
#[derive(Debug, Default)]
struct JsonPlan {
    /// Whether the record has no repeat and every field has a key.
    flat: bool,
    /// `{"record":"NAME","section":`.
    head: Padded,
    /// `"key":` before each field of a flat record, after a `,` for all but the first and after
    /// `,"fields":{` for the first.
    fields: Vec<Padded>,
    /// The display of each field of a flat record.
    displays: Vec<Display>,
    /// Bytes a flat record's line takes at most, with every option.
    most: usize,
}

impl JsonLines {
    /// The plans of the record types of `reader`.
    pub(crate) fn new(reader: &Reader<'_>, walk: &FieldWalk, raw: bool) -> JsonLines {
        let plans = (0..walk.record_types() as u32)
            .map(|rid| {
                let rt = reader.schema().record(rid);
                let mut head = b"{\"record\":".to_vec();
                // Writing to a Vec cannot fail.
                let _ = serde_json::to_writer(&mut head, &rt.name);
                head.extend_from_slice(b",\"section\":");
                let mut plan = JsonPlan {
                    flat: walk.is_flat(rid),
                    head: Padded::new(&head),
                    ..JsonPlan::default()
                };
                if plan.flat {
                    let prog = walk.program(rid);
                    plan.displays = flat_displays(prog, rt);
                    for (i, key) in prog.keys.iter().enumerate() {
                        // The first after `,"fields":{`, the others after a `,`.
                        let mut j = Vec::with_capacity(key.len() + 16);
                        j.extend_from_slice(if i > 0 { b"," } else { b",\"fields\":{" });
                        let _ = serde_json::to_writer(&mut j, &**key);
                        j.push(b':');
                        plan.fields.push(Padded::new(&j));
                    }
                    plan.most = line_most(&plan.head, &plan.fields);
                }
                plan
            })
            .collect();
        JsonLines {
            plans,
            first: Vec::new(),
            sections: (0..=u8::MAX)
                .map(|n| Padded::new(format!("{n},\"index\":").as_bytes()))
                .collect(),
            raw,
            strings: false,
            logical: false,
        }
    }

    /// Every record by the general walk (see `Printer::without_plans`).
    pub(crate) fn without_plans(&mut self) {
        for p in &mut self.plans {
            p.flat = false;
        }
    }

    /// Write one record as a JSON object and a newline, straight to `w`: numbers through
    /// `itoa`, strings escaped by serde_json, no value tree (except for the rare metadata
    /// record). A flat record's line is built in `line` and, when `batch`, kept there with the
    /// lines before it.
    pub(crate) fn record(
        &mut self,
        (line, batch): (&mut LineBuf, bool),
        walk: &mut FieldWalk,
        w: &mut impl Write,
        view: &RecordView<'_>,
    ) -> io::Result<()> {
        let rt = view.record();
        if rt.builtin == Some(Builtin::Metadata) {
            return match view.metadata() {
                Some(m) => metadata_set(w, view, m),
                None => writeln!(w, "{}", metadata(view)),
            };
        }
        if !self.raw && self.plans[view.record_id() as usize].flat {
            // A section record's number is the section id, small and read as a number by
            // `pack`.
            if !batch {
                line.clear();
            }
            return if self.strings && rt.builtin != Some(Builtin::Section) {
                self.flat::<true>(line, view)
            } else {
                self.flat::<false>(line, view)
            }
            .and_then(|()| line.line_done(batch, w));
        }
        self.walked(line, walk, w, view)
    }

    /// The line of a flat record (see [`JsonPlan`]), without `--raw`: the head, a prefix and a
    /// value per field, in the line buffer; integers (nearly every field) through the cursor,
    /// quoted when `STRINGS`, the rest from the first other on the general way.
    // Design: the hot path of `dump --format jsonl`. The constant parts of a line are copied as
    // padded blocks: the head up to `"section":`, then `N,"index":` for the section number N
    // (one of 256 built once), `,"offset":`, and each key's `,"key":` (the first with
    // `,"fields":{` before it); the numbers are the cursor's SWAR decimal; `--int-strings` is a
    // const parameter, so the loop over the fields has no branch but a field's sign.
    #[inline]
    fn flat<const STRINGS: bool>(
        &self,
        line: &mut LineBuf,
        view: &RecordView<'_>,
    ) -> io::Result<()> {
        let plan = &self.plans[view.record_id() as usize];
        let values = view.values.get(1..).unwrap_or(&[]);
        let mut c = line.cursor(plan.most);
        c.padded(&plan.head);
        c.padded(&self.sections[view.section() as usize]);
        c.dec(view.index());
        c.padded(&OFFSET);
        c.dec(view.offset());
        // The first field's piece begins with `,"fields":{`.
        if values.is_empty() || plan.fields.is_empty() {
            c.padded(&FIELDS);
        }
        let mut done = 0;
        for ((fv, prefix), &display) in values.iter().zip(&plan.fields).zip(&plan.displays) {
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
        if done == values.len().min(plan.fields.len()) {
            c.padded(&END);
            let end = c.n;
            line.done(end);
            return Ok(());
        }
        let end = c.n;
        line.done(end);
        let result = rest(line, view, &plan.fields, done, STRINGS, self.logical);
        line.put(b"}}\n");
        result
    }
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

impl JsonLines {
    /// A record by the general walk (one with a repeat or a field without a key, or `--raw`).
    #[inline(never)]
    fn walked(
        &mut self,
        line: &mut LineBuf,
        walk: &mut FieldWalk,
        w: &mut impl Write,
        view: &RecordView<'_>,
    ) -> io::Result<()> {
        let rt = view.record();
        let reader = view.reader();
        let raw = self.raw;
        // A section record's number is the section id, small and read as a number by `pack`.
        let strings = self.strings && rt.builtin != Some(Builtin::Section);
        let logical = self.logical;
        let plan = &self.plans[view.record_id() as usize];
        // Lines kept for a batched write go first.
        let kept = w.write_all(line.as_bytes());
        line.clear();
        kept?;
        let head = plan.head.len().max(Cursor::MOST_PADDED) + 3 * Cursor::MOST_NUMBER + 96;
        let mut c = line.cursor(head);
        c.padded(&plan.head);
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
        head?;
        // The record's fields are the first level; at most one entry per nested repeat.
        let first = &mut self.first;
        first.clear();
        first.push(true);
        walk.visit(view, |v| -> io::Result<()> {
            match v {
                Visit::Field(key, f) => {
                    separate(w, first)?;
                    if !key.is_empty() {
                        string(w, key)?;
                        w.write_all(b":")?;
                    }
                    field(w, reader, &f, raw, strings, logical)?;
                }
                Visit::ListStart(key) => {
                    separate(w, first)?;
                    string(w, key)?;
                    w.write_all(b":[")?;
                    first.push(true);
                }
                Visit::ItemStart(single, _) => {
                    if !single {
                        separate(w, first)?;
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
        })?;
        w.write_all(b"}}\n")
    }
}

/// A `,` before a member that is not the first of its object or array.
fn separate(w: &mut impl Write, first: &mut [bool]) -> io::Result<()> {
    match first.last_mut() {
        Some(f) if *f => {
            *f = false;
            Ok(())
        }
        _ => w.write_all(b","),
    }
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
    let (value, display) = shown(reader, f, logical);
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
                    let d = element_display(reader, res.record);
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
