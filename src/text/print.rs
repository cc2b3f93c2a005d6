//! Printing decoded records as the text form (docs/text-format.md) or as JSON lines.

// Design: the printer steps through the record's program with the shared walker, taking repeat
// counts from the decoded values, so keys and nesting are those the text reader expects. Output
// goes straight to a `Write`; nothing is allocated per record in the text form.

use std::io::{self, Write};

use crate::container::{ByteOrder, Class};
use crate::decode::{Field, Reader, RecordView, Val, Value};
use crate::dtd::Builtin;
use crate::layout::{Compiled, Op, Program, Step, Walk};

use super::linebuf::{LineBuf, Padded};
use super::value::{write_int, write_string, write_value};

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
    int_strings: bool,
    logical: bool,
    compiled: std::sync::Arc<Compiled>,
    walk: Walk,
    last: Vec<u64>,
    /// Per record type, what is written before each field of a flat record (see [`Plan`]).
    pub(crate) plans: Vec<Plan>,
    /// The line being printed, written out in one piece.
    pub(crate) line: LineBuf,
    /// The JSON writer's stack of open objects and arrays, kept from record to record.
    #[cfg(feature = "json")]
    pub(crate) json_first: Vec<bool>,
    /// `N,"index":` for each section number N, the piece of a JSON line after the head
    /// (a section number is a byte).
    #[cfg(feature = "json")]
    pub(crate) json_sections: Vec<Padded>,
    /// Whether planned lines are kept in `line` from record to record (see
    /// [`Printer::with_batched_output`]).
    pub(crate) batch: bool,
}

/// How much [`Printer::with_batched_output`] keeps before writing it out.
pub(crate) const BATCH: usize = 64 * 1024;

/// The bytes a record type's line is made of, computed once per record type.
// Design: most records of real traces have no repeat (an allocation: a few integers). For such a
// *flat* record the fields are the record's values in order, one per operation of its program,
// so the printers write a precomputed prefix per field (` size=`, `,"size":`) and the number,
// into one line buffer, instead of stepping the walker and a visitor per field. Records with
// repeats, and `--raw`, take the walk; both write the same bytes (tests below).
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Whether the record has no repeat and every field has a key.
    pub(crate) flat: bool,
    /// The record's name (text form).
    pub(crate) name: Padded,
    /// ` key=` before each field of a flat record (text form).
    pub(crate) text: Vec<Padded>,
    /// `"key":` before each field of a flat record, after a `,` for all but the first and
    /// after `,"fields":{` for the first (JSON lines).
    #[cfg(feature = "json")]
    pub(crate) json: Vec<Padded>,
    /// `{"record":"NAME","section":` (JSON lines).
    #[cfg(feature = "json")]
    pub(crate) json_head: Padded,
    /// The display of each field of a flat record.
    pub(crate) displays: Vec<crate::dtd::Display>,
    /// Bytes a flat record's line takes at most, in either format and with every option.
    pub(crate) most: usize,
}

impl Plan {
    fn new(prog: &Program, rt: &crate::dtd::RecordType) -> Plan {
        let name = &rt.name;
        let flat = prog
            .ops
            .iter()
            .all(|op| matches!(op, Op::Int(_) | Op::Bytes(..)))
            && prog.keys.iter().all(|k| !k.is_empty());
        let mut plan = Plan {
            flat,
            name: Padded::new(name.as_bytes()),
            ..Plan::default()
        };
        #[cfg(feature = "json")]
        {
            let mut head = b"{\"record\":".to_vec();
            // Writing to a Vec cannot fail.
            let _ = serde_json::to_writer(&mut head, name);
            head.extend_from_slice(b",\"section\":");
            plan.json_head = Padded::new(&head);
        }
        #[cfg(not(feature = "json"))]
        let _ = name;
        if !flat {
            return plan;
        }
        for op in &prog.ops {
            let (Op::Int(slot) | Op::Bytes(slot, _)) = op else {
                unreachable!("a flat program holds fields only")
            };
            plan.displays.push(rt.slots[*slot as usize].display);
        }
        for (i, key) in prog.keys.iter().enumerate() {
            let mut t = Vec::with_capacity(key.len() + 2);
            t.push(b' ');
            t.extend_from_slice(key.as_bytes());
            t.push(b'=');
            plan.text.push(Padded::new(&t));
            #[cfg(feature = "json")]
            {
                // The first after `,"fields":{`, the others after a `,`.
                let mut j = Vec::with_capacity(key.len() + 16);
                j.extend_from_slice(if i > 0 { b"," } else { b",\"fields\":{" });
                let _ = serde_json::to_writer(&mut j, &**key);
                j.push(b':');
                plan.json.push(Padded::new(&j));
            }
            #[cfg(not(feature = "json"))]
            let _ = i;
        }
        // `@OFFSET `, the name or the JSON head, `,"index":N,"offset":N,"fields":{`, `}}` and a
        // newline, then a prefix and a number per field (quoted with --int-strings).
        use super::linebuf::Cursor;
        let piece = |p: &Padded| p.len().max(Cursor::MOST_PADDED);
        plan.most = 2 + 4 * Cursor::MOST_NUMBER + piece(&plan.name) + 4 * Cursor::MOST_PADDED;
        #[cfg(feature = "json")]
        {
            plan.most += piece(&plan.json_head);
        }
        let json: &[Padded] = {
            #[cfg(feature = "json")]
            {
                &plan.json
            }
            #[cfg(not(feature = "json"))]
            {
                &[]
            }
        };
        plan.most += plan.text.iter().chain(json).map(piece).sum::<usize>();
        plan.most += prog.keys.len() * (Cursor::MOST_NUMBER + 2);
        plan
    }
}

/// Repeat steps, as the printers see them.
pub(crate) enum Visit<'v> {
    Field(&'v str, Field<'v>),
    ListStart(&'v str),
    ItemStart(bool, u64),
    ItemEnd(bool),
    ListEnd,
}

impl Printer {
    /// A printer for the records of `reader` (sharing its compiled programs).
    pub fn new(reader: &Reader<'_>, opts: Options) -> Printer {
        let compiled = reader.compiled.clone();
        let plans = (0..compiled.programs.len())
            .map(|rid| {
                Plan::new(
                    compiled.program(rid as u32),
                    reader.schema().record(rid as u32),
                )
            })
            .collect();
        Printer {
            last: vec![0; compiled.max_slots],
            plans,
            line: LineBuf::default(),
            opts,
            int_strings: false,
            logical: false,
            compiled,
            walk: Walk::default(),
            #[cfg(feature = "json")]
            json_first: Vec::new(),
            #[cfg(feature = "json")]
            json_sections: (0..=u8::MAX)
                .map(|n| Padded::new(format!("{n},\"index\":").as_bytes()))
                .collect(),
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
            Format::Jsonl => super::json_out::write_record(self, w, view),
        }
    }

    /// In JSON lines, write integer field values as JSON strings (`"18446744073709551615"`),
    /// for tools that read JSON numbers as doubles and lose precision above 2⁵³. `mtf pack`
    /// reads such strings back as integers.
    pub fn with_int_strings(mut self, on: bool) -> Printer {
        self.int_strings = on;
        self
    }

    /// Print each `sectionStride`/`sectionOffset` field as the value it leads to (`size=16`)
    /// rather than as the reference and its value (`size=#3:16`): the logical record, as
    /// `dump --data-only` shows it. Such output does not pack back into the same trace.
    pub fn with_logical_values(mut self, on: bool) -> Printer {
        self.logical = on;
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

    /// The end of a planned line: written now, or kept with the lines before it.
    #[inline]
    pub(crate) fn line_done(&mut self, w: &mut impl Write) -> io::Result<()> {
        if !self.batch || self.line.len() >= BATCH {
            let r = w.write_all(self.line.as_bytes());
            self.line.clear();
            return r;
        }
        Ok(())
    }

    /// Print every record by the general walk, without the per-record-type plans: the same
    /// bytes, more slowly (for tests that compare the two).
    #[doc(hidden)]
    pub fn without_plans(mut self) -> Printer {
        for p in &mut self.plans {
            p.flat = false;
        }
        self
    }

    #[cfg(feature = "json")]
    pub(crate) fn logical_values(&self) -> bool {
        self.logical
    }

    #[cfg(feature = "json")]
    pub(crate) fn int_strings(&self) -> bool {
        self.int_strings
    }

    #[cfg(feature = "json")]
    pub(crate) fn opts(&self) -> Options {
        self.opts
    }

    /// Step through a record's fields with the shared walker, calling `visit` for each step.
    pub(crate) fn visit<'v, E>(
        &mut self,
        view: &RecordView<'v>,
        mut visit: impl FnMut(Visit<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let prog: &Program = self.compiled.program(view.record_id());
        let mut idx = 1; // the tag is not printed
        let mut singles: Vec<bool> = Vec::new();
        self.walk.reset();
        let last = &mut self.last;
        loop {
            let step = self.walk.next_run(prog, |s, _| last[s as usize]);
            let Some(step) = step else { return Ok(()) };
            match step {
                Step::Run { ops, pc } => {
                    for (k, op) in ops.iter().enumerate() {
                        let (Op::Int(slot) | Op::Bytes(slot, _)) = op else {
                            unreachable!("a run holds fields only")
                        };
                        let Some(f) = view.field_at(idx) else {
                            return Ok(());
                        };
                        idx += 1;
                        last[*slot as usize] = f.fv.value.number();
                        visit(Visit::Field(&prog.keys[pc + k], f))?;
                    }
                }
                Step::Int { slot, pc } | Step::Bytes { slot, pc, .. } => {
                    let Some(f) = view.field_at(idx) else {
                        return Ok(());
                    };
                    idx += 1;
                    last[slot as usize] = f.fv.value.number();
                    visit(Visit::Field(&prog.keys[pc], f))?;
                }
                Step::Enter { single, pc, .. } => {
                    singles.push(single);
                    visit(Visit::ListStart(&prog.keys[pc]))?;
                }
                Step::ItemStart { index } => {
                    visit(Visit::ItemStart(*singles.last().unwrap_or(&true), index))?
                }
                Step::ItemEnd { .. } => visit(Visit::ItemEnd(*singles.last().unwrap_or(&true)))?,
                Step::Leave { .. } => {
                    singles.pop();
                    visit(Visit::ListEnd)?;
                }
            }
        }
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
        self.visit(view, |v| -> io::Result<()> {
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

    /// The text line of a flat record ([`Plan`]), without `--raw`: the record name, then
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
        self.line_done(w)
    }
}

/// The value of a field to print, with the display to print it in: for a reference when
/// `logical`, the value of the element it leads to (an integer in the field's display, as if it
/// were stored in the record; a byte string in the element's); else the field's value as
/// stored.
pub(crate) fn shown<'d>(
    reader: &Reader<'_>,
    f: &Field<'d>,
    logical: bool,
) -> (Value<'d>, crate::dtd::Display) {
    if logical {
        if let Some(Ok(res)) = f.resolve() {
            if let Value::Int(_) = res.value {
                return (res.value, f.def().display);
            }
            if let Value::Bytes(_) = res.value {
                let rt = reader.schema().record(res.record);
                let d = rt
                    .slots
                    .last()
                    .map_or(crate::dtd::Display::Decimal, |s| s.display);
                return (res.value, d);
            }
        }
    }
    (f.value(), f.def().display)
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
                        .with_int_strings(strings);
                    for p in &mut walked.plans {
                        p.flat = false;
                    }
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
