//! Printing decoded records as the text form (docs/text-format.md) or as JSON lines.

// Design: the printer steps through the record's program with the shared walker, taking repeat
// counts from the decoded values, so keys and nesting are those the text reader expects. Output
// goes straight to a `Write`; nothing is allocated per record in the text form.

use std::io::{self, Write};

use crate::container::{ByteOrder, Class};
use crate::decode::{Field, Reader, RecordView, Value};
use crate::dtd::Builtin;
use crate::layout::{Compiled, Op, Program, Step, Walk};

use super::value::{write_string, write_value};

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
        Printer {
            last: vec![0; compiled.max_slots],
            opts,
            int_strings: false,
            logical: false,
            compiled,
            walk: Walk::default(),
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
        match self.opts.format {
            Format::Text => self.text(w, view),
            #[cfg(feature = "json")]
            Format::Jsonl => {
                let v = super::json_out::record(self, view);
                writeln!(w, "{v}")
            }
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
                        if first_in_group {
                            first_in_group = false;
                        } else {
                            w.write_all(b" ")?;
                        }
                        w.write_all(key.as_bytes())?;
                        w.write_all(b"=")?;
                    }
                    let (value, display) = shown(reader, &f, logical);
                    write_value(w, reader, value, display, 0)?;
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
