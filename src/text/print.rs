//! Printing decoded records as the text form (docs/text-format.md) or as JSON lines.

// Design: the printer steps through the record's program with the shared walker, taking repeat
// counts from the decoded values, so keys and nesting are those the text reader expects. Output
// goes straight to a `Write`; nothing is allocated per record in the text form.

use std::io::{self, Write};

use crate::container::{ByteOrder, Class};
use crate::decode::{FieldWalk, Reader, RecordView, Val, Value, Visit};
use crate::dtd::Builtin;
use crate::layout::Program;

#[cfg(feature = "json")]
use super::json_out::JsonLines;
use super::linebuf::{line_most, LineBuf, Padded};
use super::value::{flat_displays, shown, write_int, write_string, write_value};

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// One line per record, `record key=value …` (the form `mtf pack` reads).
    #[default]
    Text,
    /// One JSON object per line.
    #[cfg(feature = "json")]
    Jsonl,
}

/// Printing options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
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
    /// The class.
    pub class: Class,
    /// The byte order.
    pub order: ByteOrder,
}

/// Prints the records of one trace.
pub struct Printer {
    opts: Options,
    logical: bool,
    /// The walk of a record's fields with their keys.
    pub(crate) fields: FieldWalk,
    /// Per record type, what is written before each field of a flat record (see
    /// [`PrintPlan`]).
    pub(crate) plans: Vec<PrintPlan>,
    /// The line being printed, written out in one piece.
    pub(crate) line: LineBuf,
    /// JSON lines: their own plans and state.
    #[cfg(feature = "json")]
    json: JsonLines,
    /// Whether planned lines are kept in `line` from record to record (see
    /// [`Printer::with_batched_output`]).
    batch: bool,
}

/// The bytes a record type's line of the text form is made of, computed once per record type.
// Design: most records of real traces have no repeat (an allocation: a few integers). For such a
// *flat* record (`FieldWalk::is_flat`) the fields are the record's values in order, one per
// operation of its program, so the printers write a precomputed prefix per field (` size=`,
// `,"size":`) and the number, into one line buffer, instead of stepping the walker and a
// visitor per field. Records with repeats, and `--raw`, take the walk; both write the same
// bytes (tests below). JSON lines have their own plans (`json_out::JsonPlan`).
#[derive(Debug, Default)]
pub(crate) struct PrintPlan {
    /// Whether the record has no repeat and every field has a key.
    pub(crate) flat: bool,
    /// The record's name.
    pub(crate) name: Padded,
    /// ` key=` before each field of a flat record.
    pub(crate) text: Vec<Padded>,
    /// The display of each field of a flat record.
    pub(crate) displays: Vec<crate::dtd::Display>,
    /// Bytes a flat record's line takes at most, with every option.
    pub(crate) most: usize,
}

impl PrintPlan {
    fn new(prog: &Program, rt: &crate::dtd::RecordType, flat: bool) -> PrintPlan {
        let mut plan = PrintPlan {
            flat,
            name: Padded::new(rt.name.as_bytes()),
            ..PrintPlan::default()
        };
        if !flat {
            return plan;
        }
        plan.displays = flat_displays(prog, rt);
        for key in &prog.keys {
            let mut t = Vec::with_capacity(key.len() + 2);
            t.push(b' ');
            t.extend_from_slice(key.as_bytes());
            t.push(b'=');
            plan.text.push(Padded::new(&t));
        }
        // `@OFFSET `, the name, then a prefix and a number per field.
        plan.most = line_most(&plan.name, &plan.text);
        plan
    }
}

impl Printer {
    /// A printer for the records of `reader` (sharing its compiled programs).
    pub fn new(reader: &Reader<'_>, opts: Options) -> Printer {
        let fields = FieldWalk::new(reader);
        let plans = (0..fields.record_types() as u32)
            .map(|rid| {
                let rt = reader.schema().record(rid);
                PrintPlan::new(fields.program(rid), rt, fields.is_flat(rid))
            })
            .collect();
        Printer {
            #[cfg(feature = "json")]
            json: JsonLines::new(reader, &fields, opts.raw),
            fields,
            plans,
            line: LineBuf::default(),
            opts,
            logical: false,
            batch: false,
        }
    }

    /// Print the header line.
    pub fn header(&self, w: &mut impl Write, h: &DumpHeader<'_>) -> io::Result<()> {
        let order = match h.order {
            ByteOrder::Little => "little",
            ByteOrder::Big => "big",
        };
        let bits = 8 * h.class.word_size();
        match self.opts.format {
            Format::Text => {
                write!(w, "%mtf 1 dtd=")?;
                write_string(w, h.dtd.as_bytes())?;
                writeln!(w, " class={bits} order={order}")
            }
            #[cfg(feature = "json")]
            Format::Jsonl => {
                let v = serde_json::json!({"mtf": 1, "dtd": h.dtd, "class": bits, "order": order});
                writeln!(w, "{v}")
            }
        }
    }

    /// Print one record.
    pub fn record(&mut self, w: &mut impl Write, view: &RecordView<'_>) -> io::Result<()> {
        let planned = self.planned(view);
        if self.batch && !planned {
            self.write_pending(w)?;
        }
        match self.opts.format {
            Format::Text if planned => self.text_flat(w, view),
            Format::Text => self.text(w, view),
            #[cfg(feature = "json")]
            Format::Jsonl => {
                let lines = (&mut self.line, self.batch);
                self.json.record(lines, &mut self.fields, w, view)
            }
        }
    }

    /// In JSON lines, write integer field values as JSON strings (`"18446744073709551615"`),
    /// for tools that read JSON numbers as doubles and lose precision above 2⁵³. `mtf pack`
    /// reads such strings back as integers.
    #[cfg_attr(not(feature = "json"), allow(unused_mut, unused_variables))]
    pub fn with_int_strings(mut self, on: bool) -> Printer {
        #[cfg(feature = "json")]
        {
            self.json.strings = on;
        }
        self
    }

    /// Print each `sectionStride`/`sectionOffset` field as the value it leads to (`size=16`)
    /// rather than as the reference and its value (`size=#3:16`): the logical record, as
    /// `dump --data-only` shows it. Such output does not pack back into the same trace.
    pub fn with_logical_values(mut self, on: bool) -> Printer {
        self.logical = on;
        #[cfg(feature = "json")]
        {
            self.json.logical = on;
        }
        self
    }

    /// Keep the lines of planned records (most records of most traces) in one buffer and write
    /// them to the `Write` given to [`Printer::record`] 64 KiB at a time, rather than one write
    /// per record. **Whoever writes to that `Write` by other means, or finishes with it, must
    /// first call [`Printer::write_pending`]**, or lines are lost or out of order.
    // Design: for a dump to a pipe or a file, one write of 64 KiB straight from the line
    // buffer (a `BufWriter` passes a write of its own size through) instead of a copy of each
    // line into the `BufWriter`: the copy and the call per record were 5 % of a dump's time.
    pub fn with_batched_output(mut self, on: bool) -> Printer {
        self.batch = on;
        self
    }

    /// Writes the lines kept by [`Printer::with_batched_output`], if any.
    pub fn write_pending(&mut self, w: &mut impl Write) -> io::Result<()> {
        if self.line.len() > 0 {
            let r = w.write_all(self.line.as_bytes());
            self.line.clear();
            r?;
        }
        Ok(())
    }

    /// Whether a record is printed from its record type's plan (into the line buffer).
    #[inline]
    fn planned(&self, view: &RecordView<'_>) -> bool {
        let rt = view.record();
        let flat = !self.opts.raw && self.plans[view.record_id() as usize].flat;
        match self.opts.format {
            Format::Text => {
                flat && !matches!(rt.builtin, Some(Builtin::Metadata | Builtin::Section))
            }
            #[cfg(feature = "json")]
            Format::Jsonl => flat && rt.builtin != Some(Builtin::Metadata),
        }
    }

    /// Print every record by the general walk, without the per-record-type plans: the same
    /// bytes, more slowly (for tests that compare the two).
    #[doc(hidden)]
    pub fn without_plans(mut self) -> Printer {
        for p in &mut self.plans {
            p.flat = false;
        }
        #[cfg(feature = "json")]
        self.json.without_plans();
        self
    }

    fn text(&mut self, w: &mut impl Write, view: &RecordView<'_>) -> io::Result<()> {
        if self.opts.offsets {
            write!(w, "@{} ", view.offset())?;
        }
        w.write_all(view.name().as_bytes())?;
        let rt = view.record();
        let reader = view.reader();
        if rt.builtin == Some(Builtin::Metadata) {
            if let Some(m) = view.metadata() {
                let target = reader.schema().record(m.record);
                write!(
                    w,
                    " {}.{} {}",
                    target.name,
                    target.slots[m.slot as usize].name,
                    m.property.name()
                )?;
                let (words, n) = m.property.words();
                for (i, word) in words.iter().take(n).enumerate() {
                    let section = reader.section_name(*word as u8);
                    if m.property.names_section() && i == 0 && !section.is_empty() {
                        write!(w, " {section}")?;
                    } else if m.property.word_is_signed(i) {
                        write!(w, " {}", *word as i64)?;
                    } else {
                        write!(w, " {word}")?;
                    }
                }
                return writeln!(w);
            }
            // A refused metadata record: its stored fields.
            for f in view.fields().skip(1) {
                write!(w, " {}={}", f.name(), f.fv.raw)?;
            }
            return writeln!(w);
        }
        if rt.builtin == Some(Builtin::Section) {
            // `section number=1:heap`: the name is an annotation for the reader.
            if let Some(f) = view.field_at(1) {
                write!(w, " number={}", f.fv.raw)?;
                let name = reader.section_name(f.fv.raw as u8);
                if !name.is_empty() && f.fv.raw <= 255 {
                    write!(w, ":{name}")?;
                }
                return writeln!(w);
            }
        }
        let raw = self.opts.raw;
        let logical = self.logical;
        let mut first_in_group = false;
        self.fields.visit(view, |v| -> io::Result<()> {
            match v {
                Visit::Field(key, f) => {
                    if !key.is_empty() {
                        // ` key=` in one write where it is short, as it nearly always is.
                        let space = !std::mem::take(&mut first_in_group);
                        let mut buf = [b' '; 64];
                        let k = key.as_bytes();
                        if k.len() + 2 <= buf.len() {
                            buf[1..1 + k.len()].copy_from_slice(k);
                            buf[1 + k.len()] = b'=';
                            w.write_all(&buf[usize::from(!space)..2 + k.len()])?;
                        } else {
                            if space {
                                w.write_all(b" ")?;
                            }
                            w.write_all(k)?;
                            w.write_all(b"=")?;
                        }
                    }
                    match shown(reader, &f, logical) {
                        (Value::Int(v), display) => write_int(w, v, display)?,
                        (value, display) => write_value(w, reader, value, display, 0)?,
                    }
                    if raw {
                        if let Some(r) = f.raw() {
                            write!(w, "~{r:#x}")?;
                        }
                    }
                }
                Visit::ListStart(key) => {
                    if first_in_group {
                        first_in_group = false;
                    } else {
                        w.write_all(b" ")?;
                    }
                    write!(w, "{key}=[")?;
                }
                Visit::ItemStart(single, index) => {
                    if index > 0 {
                        w.write_all(b" ")?;
                    }
                    if !single {
                        w.write_all(b"{")?;
                        first_in_group = true;
                    }
                }
                Visit::ItemEnd(single) => {
                    if !single {
                        w.write_all(b"}")?;
                    }
                    first_in_group = false;
                }
                Visit::ListEnd => w.write_all(b"]")?,
            }
            Ok(())
        })?;
        writeln!(w)
    }

    /// The text line of a flat record ([`PrintPlan`]), without `--raw`: the record name, then
    /// ` key=value` per field, built in the line buffer and written in one piece.
    fn text_flat(&mut self, w: &mut impl Write, view: &RecordView<'_>) -> io::Result<()> {
        let plan = &self.plans[view.record_id() as usize];
        let line = &mut self.line;
        let slots = &view.record().slots;
        // The tag is not printed; a record cut short prints the fields it has.
        let values = view.values.get(1..).unwrap_or(&[]);
        if !self.batch {
            line.clear();
        }
        // Integers (nearly every field) through a cursor with room for the whole line.
        let mut c = line.cursor(plan.most);
        if self.opts.offsets {
            c.byte(b'@');
            c.dec(view.offset());
            c.byte(b' ');
        }
        c.padded(&plan.name);
        let mut done = 0;
        // (`self.last` keeps repeat counts for the walk; a flat record has none.)
        for ((fv, prefix), &display) in values.iter().zip(&plan.text).zip(&plan.displays) {
            let Val::Int(v) = fv.value else { break };
            c.padded(prefix);
            c.int(v, display);
            done += 1;
        }
        let end = c.n;
        line.done(end);
        // From the first field that is not an integer on, the general way.
        let reader = view.reader();
        if done < values.len().min(plan.text.len()) {
            let rest = values.iter().zip(plan.text.iter()).enumerate();
            for (i, (fv, prefix)) in rest.skip(done) {
                line.padded(prefix);
                match fv.value {
                    Val::Int(v) => line.int(v, slots[fv.slot as usize].display),
                    _ => {
                        if let Some(f) = view.field_at(i + 1) {
                            match shown(reader, &f, self.logical) {
                                (Value::Int(v), display) => write_int(line, v, display)?,
                                (value, display) => write_value(line, reader, value, display, 0)?,
                            }
                        }
                    }
                }
            }
        }
        line.byte(b'\n');
        line.line_done(self.batch, w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Event;

    /// Every record of the shipped traces, printed through the flat plan and through the walk,
    /// in every format and with every option that the plan serves: the same bytes.
    #[test]
    fn flat_plans_print_what_the_walk_prints() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/traces");
        let mut flat_records = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "mtf") {
                continue;
            }
            // Opened as `metatf::open` would, with what this module may use.
            let trace = crate::container::Trace::from_bytes(std::fs::read(&path).unwrap()).unwrap();
            let name = trace.header().dtd_name.clone();
            let loaded = match crate::container::locate_dtd(None, &name, Some(dir.as_ref()), None) {
                crate::container::Located::Shipped(n, text) => {
                    crate::dtd::parse_str(n, text).unwrap()
                }
                found => crate::dtd::load(found.path().unwrap()).unwrap(),
            };
            let reader = Reader::new(&trace, &loaded.schema);
            let mut formats = vec![Format::Text];
            #[cfg(feature = "json")]
            formats.push(Format::Jsonl);
            for format in formats {
                for (offsets, logical, strings) in [
                    (false, false, false),
                    (true, true, false),
                    (false, false, true),
                ] {
                    let opts = Options {
                        format,
                        offsets,
                        raw: false,
                    };
                    let mut planned = Printer::new(&reader, opts)
                        .with_logical_values(logical)
                        .with_int_strings(strings);
                    let mut walked = Printer::new(&reader, opts)
                        .with_logical_values(logical)
                        .with_int_strings(strings)
                        .without_plans();
                    let mut records = reader.records();
                    while let Some(event) = records.next() {
                        if let Event::Record(v) = event {
                            if planned.plans[v.record_id() as usize].flat {
                                flat_records += 1;
                            }
                            let (mut a, mut b) = (Vec::new(), Vec::new());
                            planned.record(&mut a, &v).unwrap();
                            walked.record(&mut b, &v).unwrap();
                            assert_eq!(
                                String::from_utf8_lossy(&a),
                                String::from_utf8_lossy(&b),
                                "{}",
                                path.display()
                            );
                        }
                    }
                }
            }
        }
        assert!(flat_records > 100, "the traces have flat records");
    }
}
