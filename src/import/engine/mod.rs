//! The import engine: reads inputs unit by unit, matches each unit against the mapping's
//! patterns and writes records through a [`Sink`]; a unit that no pattern takes back
//! byte-for-byte is written as a raw-line record. String tables are written last.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::error::{ImportError, ImportErrorKind};
use super::input::{Body, ImportInput};
use super::intern::Interner;
use super::mapping::{glob, Mapping};
use super::pattern::Val;
use super::records::{self, Container, PartKind};
use super::sink::{FieldType, PlanId, Sink, SinkError, Value, WriterSink};
use super::zipio;
use crate::dtd::Schema;
use crate::encode::TraceWriter;

mod plans;
mod report;
mod route;
mod rules;
mod stream;

use plans::{OwnPlans, RulePlan};
pub use report::ImportReport;
use route::{flush_run, Routed};
use rules::Slot;

/// How many raw-line positions a report lists.
pub const RAW_LISTED: usize = 5;

/// After this many units the share kept raw is checked a first time, so that an input of
/// another format is refused early (when nine in ten units were kept raw; at the end, when more
/// than half were).
pub const EARLY_CHECK: u64 = 10_000;

/// The import state for one mapping.
pub struct Importer<'m, 's> {
    m: &'m Mapping,
    sink: WriterSink<'s>,
    rules: Vec<Vec<RulePlan>>, // per part, per rule
    /// Per part, by the first byte of a unit (256: an empty unit), the rules that may match
    /// it, in the mapping's order: those whose literal lead starts with that byte, and those
    /// without a lead.
    // Design: trying every rule's lead on every line was the import's hottest loop for
    // mappings of many rules; the first byte of a rule's lead decides most of them at once,
    // and the order of the remaining candidates is the mapping's, so the rule chosen is the
    // same.
    dispatch: Vec<Vec<Vec<u32>>>,
    table_plans: Vec<PlanId>,
    tables: Vec<Interner>,
    /// The plans of the importer's own records.
    p: OwnPlans,
    routed: Vec<Routed>,
    /// Records routed since the last record of the part's section: (routed section, count),
    /// written as one `import_routed` record before the next record there.
    run: Option<(usize, u64)>,
    opened: Vec<String>,
    current: Option<String>,
    vals: Vec<Val>,
    fin: Vec<Slot>,  // scratch: the values of the record being assembled
    joined: Vec<u8>, // scratch: lines of a multi-line unit, joined by `\n`
    /// The report so far.
    pub report: ImportReport,
    progress: Option<Box<dyn FnMut(u64) + 'm>>,
    keep_unmatched: bool,
    /// The most bytes of distinct strings one string table may hold.
    string_limit: u64,
    checked_early: bool,
    /// The inputs imported so far, as shown.
    names: Vec<String>,
    /// Per part: the names of its `keep` fields.
    kept_names: Vec<Vec<String>>,
    /// The current part's last value of each `keep` field.
    kept: Vec<u64>,
    /// The current part: whether a rule other than `head` took a unit (the header is over).
    body_seen: bool,
    /// The current part: how many more units its `limit` lets the rules take.
    left: Option<u64>,
}

fn fatal(file: &str, e: SinkError) -> ImportError {
    ImportError::at(file, ImportErrorKind::Write(e.to_string()))
}

impl<'m, 's> Importer<'m, 's> {
    /// Lower (or raise) the most bytes of distinct strings one string table may hold, by default
    /// [`crate::limits::MAX_STRING_TABLE_BYTES`]; passing it stops the import with an error.
    pub fn set_string_limit(&mut self, bytes: u64) {
        self.string_limit = bytes;
    }

    /// Import even when most units match no rule of the mapping (they are kept verbatim).
    /// Without it, an import where more than half the units are kept raw stops with
    /// [`ImportErrorKind::Unmatched`] at the end, or after [`EARLY_CHECK`] units when nine in
    /// ten were.
    pub fn keep_unmatched(&mut self, keep: bool) {
        self.keep_unmatched = keep;
    }

    /// Refuse the import when more than half the units were kept raw (`early`: after
    /// [`EARLY_CHECK`] units, only when nine in ten were, so that a long prologue the mapping
    /// does not describe does not stop an input that matches further on); for a format that
    /// interleaves other text (`interleaved`), only when every unit was.
    fn check_unmatched(&self, file: &str, early: bool) -> Result<(), ImportError> {
        let r = &self.report;
        let refuse = if self.m.interleaved {
            r.units > 0 && r.raw == r.units
        } else if early {
            r.raw * 10 >= r.units * 9
        } else {
            r.mostly_unmatched()
        };
        if self.keep_unmatched || !refuse {
            return Ok(());
        }
        Err(ImportError::at(
            file,
            ImportErrorKind::Unmatched {
                format: self.m.name.clone(),
                raw: self.report.raw,
                units: self.report.units,
                cause: r.cause(),
            },
        ))
    }

    /// Call `f` with the input bytes read so far (all inputs together, decompressed), as the
    /// import goes on: for a progress bar.
    pub fn on_progress(&mut self, f: impl FnMut(u64) + 'm) {
        self.progress = Some(Box::new(f));
    }

    #[inline]
    fn tick(&mut self) {
        if let Some(f) = &mut self.progress {
            f(self.report.bytes_in);
        }
    }

    /// Prepare every record kind of the mapping for `writer` (whose DTD is `schema`) and write
    /// the origin record; `files` is the number of inputs.
    pub fn new(
        m: &'m Mapping,
        writer: TraceWriter<'s>,
        schema: &'s Schema,
        container: Container,
        files: u64,
    ) -> Result<Self, ImportError> {
        let mut sink = WriterSink::new(writer, schema);
        let f = |e: SinkError| {
            ImportError::at(
                "",
                ImportErrorKind::Dtd(format!(
                    "DTD {} (of mapping `{}`): {e}",
                    schema.name, m.name
                )),
            )
        };
        let routed_names = m.routed();
        let p = OwnPlans::new(&mut sink, !routed_names.is_empty()).map_err(f)?;
        let mut table_plans = Vec::new();
        for t in &m.tables {
            table_plans.push(
                sink.plan(Some(&t.section), &t.record, &[(&t.field, FieldType::Bytes)])
                    .map_err(f)?,
            );
        }
        let rules = plans::rule_plans(&mut sink, m, schema, &routed_names)?;
        sink.write(
            p.origin,
            &[
                Value::Int(records::VERSION),
                Value::Int(container.code()),
                Value::Int(files),
                Value::Bytes(m.name.as_bytes()),
                Value::Bytes(m.text.as_bytes()),
            ],
        )
        .map_err(f)?;
        Ok(Importer {
            m,
            sink,
            dispatch: plans::dispatch(m, &rules),
            rules,
            table_plans,
            tables: m.tables.iter().map(|_| Interner::new()).collect(),
            p,
            routed: Routed::sections(m, &routed_names),
            run: None,
            opened: Vec::new(),
            current: None,
            vals: Vec::new(),
            fin: Vec::new(),
            joined: Vec::new(),
            report: ImportReport::default(),
            progress: None,
            keep_unmatched: false,
            string_limit: crate::limits::MAX_STRING_TABLE_BYTES,
            checked_early: false,
            names: Vec::new(),
            kept_names: m.parts.iter().map(|p| p.kept()).collect(),
            kept: Vec::new(),
            body_seen: false,
            left: None,
        })
    }

    fn enter(&mut self, section: &str, file: &str) -> Result<(), ImportError> {
        if self.current.as_deref() == Some(section) {
            return Ok(());
        }
        if self.opened.iter().any(|s| s == section) {
            return Err(ImportError::at(
                file,
                ImportErrorKind::Order(section.to_string()),
            ));
        }
        self.sink.section(section).map_err(|e| fatal(file, e))?;
        self.opened.push(section.to_string());
        self.current = Some(section.to_string());
        Ok(())
    }

    fn flush_run(&mut self) -> Result<(), SinkError> {
        flush_run(&mut self.sink, &mut self.run, self.p.routed)
    }

    /// Import the input `path` (`-` for standard input; compressed, or a ZIP, as
    /// [`ImportInput::open`] reads it).
    pub fn import_path(&mut self, path: &Path) -> Result<(), ImportError> {
        self.import_input(ImportInput::open(path)?)
    }

    /// Import an opened input, with what detection has read of it.
    pub fn import_input(&mut self, input: ImportInput) -> Result<(), ImportError> {
        self.names.push(input.name.clone());
        match input.body {
            Body::Zip(z, _spool) => self.import_zip(&input.name, z),
            Body::Text { head, rest, .. } => {
                let r = super::input::replay(head, rest);
                self.stream_part(&input.name, &input.base, r, 0, None)
            }
        }
    }

    fn import_zip(&mut self, name: &str, mut z: zipio::Reader) -> Result<(), ImportError> {
        let bad = |shown: &str, e: String| ImportError::at(shown, ImportErrorKind::Input(e));
        // Design: an input is read as a ZIP because it starts with a local file header, so an
        // archive whose central directory lists no entry is damaged (found by fuzzing: the
        // entries' bytes were dropped and export wrote no file). Refused: nothing is lost.
        if z.is_empty() {
            return Err(bad(
                name,
                "damaged ZIP archive: it starts with a file entry, but its central directory lists none".into(),
            ));
        }
        for i in 0..z.len() {
            let meta = z.meta(i).map_err(|e| bad(name, e))?;
            let shown = format!("{name}:{}", meta.name);
            let r = z.entry(i).map_err(|e| bad(&shown, e))?;
            if meta.is_file && glob(&self.m.zip_entry, &meta.name) {
                let r = BufReader::with_capacity(1 << 16, r);
                self.stream_part(&shown, &meta.name, r, meta.method, Some(&meta))?;
            } else {
                self.verbatim(&shown, r, &meta)?;
            }
        }
        // The archive comment, after the entries (export sets it when it closes the archive).
        if let Some(plan) = self.p.archive {
            let comment = z.comment().to_vec();
            self.sink
                .write(plan, &[Value::Bytes(&comment)])
                .map_err(|e| fatal(name, e))?;
        }
        Ok(())
    }

    /// The `import_entry` record of a ZIP entry (after its `import_part` record), when the DTD
    /// declares it.
    fn entry_record(&mut self, shown: &str, e: &zipio::EntryMeta) -> Result<(), ImportError> {
        let Some(plan) = self.p.entry else {
            return Ok(());
        };
        self.sink
            .write(
                plan,
                &[
                    Value::Int(e.time as u64),
                    Value::Int(e.attrs as u64),
                    Value::Int(e.made_by as u64),
                    Value::Bytes(&e.local_extra),
                    Value::Bytes(&e.central_extra),
                    Value::Bytes(&e.comment),
                ],
            )
            .map_err(|err| fatal(shown, err))
    }

    fn verbatim(
        &mut self,
        shown: &str,
        mut r: impl Read,
        meta: &zipio::EntryMeta,
    ) -> Result<(), ImportError> {
        let (entry, method, is_file) = (meta.name.as_str(), meta.method, meta.is_file);
        let section = self.m.parts[self.m.part_for("").unwrap_or(0)]
            .section
            .clone();
        self.enter(&section, shown)?;
        let kind = if is_file {
            PartKind::Verbatim
        } else {
            PartKind::Dir
        };
        self.sink
            .write(
                self.p.part,
                &[
                    Value::Int(kind.code()),
                    Value::Int(0),
                    Value::Int(0),
                    Value::Int(method),
                    Value::Bytes(entry.as_bytes()),
                ],
            )
            .map_err(|e| fatal(shown, e))?;
        self.entry_record(shown, meta)?;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = read_full(&mut r, &mut buf)
                .map_err(|e| ImportError::at(shown, ImportErrorKind::Read(e.to_string())))?;
            if n == 0 {
                break;
            }
            self.report.bytes_in += n as u64;
            self.tick();
            self.sink
                .write(self.p.chunk, &[Value::Bytes(&buf[..n])])
                .map_err(|e| fatal(shown, e))?;
        }
        self.report.verbatim_entries.push(shown.to_string());
        Ok(())
    }

    /// Import one stream of units as a part chosen by `part_name`; `method` is the ZIP
    /// compression code export uses for it (0 stored, 8 deflated; 0 for a plain file).
    pub fn import_stream(
        &mut self,
        shown: &str,
        part_name: &str,
        r: impl BufRead,
        method: u64,
    ) -> Result<(), ImportError> {
        self.names.push(shown.to_string());
        self.stream_part(shown, part_name, r, method, None)
    }

    /// Write the routed sections and the string tables; return the writer (to finish) and the
    /// report. Fails with [`ImportErrorKind::Unmatched`] when most units were kept raw and
    /// [`Importer::keep_unmatched`] was not asked for.
    pub fn finish(mut self) -> Result<(TraceWriter<'s>, ImportReport), ImportError> {
        let names = if self.names.is_empty() {
            "the input".to_string()
        } else {
            self.names.join(" ")
        };
        self.check_unmatched(&names, false)?;
        self.flush_run().map_err(|e| fatal("routed records", e))?;
        self.write_routed()?;
        for (t, table) in self.m.tables.iter().enumerate() {
            let strings = std::mem::take(&mut self.tables[t]);
            self.report
                .tables
                .push((table.section.clone(), strings.len(), strings.held));
            if strings.is_empty() {
                continue;
            }
            self.enter(&table.section, "string table")?;
            for s in &strings.order {
                self.sink
                    .write(self.table_plans[t], &[Value::Bytes(s)])
                    .map_err(|e| fatal("string table", e))?;
            }
        }
        Ok((self.sink.writer, self.report))
    }
}

fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The writer of an imported trace at `out` (`-`: standard output, written when finished; a
/// regular file appears only when complete): class 64, so that a metadata record can set any
/// 64-bit default or restart any delta chain (docs/mappings.md), little endian, and named
/// after the mapping's DTD so that export finds it.
pub fn create_writer<'s>(
    m: &Mapping,
    schema: &'s Schema,
    out: &Path,
) -> Result<TraceWriter<'s>, crate::encode::EncodeError> {
    use crate::container::{ByteOrder, Class};
    TraceWriter::create(schema, out, Class::Bits64, ByteOrder::Little, &m.dtd)
}

/// Put opened inputs in the order of the mapping parts that take them (stable), so that each
/// section is written once, and say what container they form: a ZIP must be the only input.
pub fn order_inputs(
    m: &Mapping,
    inputs: Vec<ImportInput>,
) -> Result<(Vec<ImportInput>, Container), ImportError> {
    for i in &inputs {
        if let Some(msg) = m.refused(&i.base) {
            return Err(ImportError::at(
                &i.name,
                ImportErrorKind::Refused(msg.to_string()),
            ));
        }
    }
    if inputs.len() > 1 {
        if let Some(z) = inputs.iter().find(|i| i.is_zip()) {
            return Err(ImportError::at(&z.name, ImportErrorKind::ZipNotAlone));
        }
    }
    let container = if inputs.iter().any(|i| i.is_zip()) {
        Container::Zip
    } else {
        Container::Plain
    };
    let mut v: Vec<(usize, ImportInput)> = inputs
        .into_iter()
        .map(|i| (m.part_for(&i.base).unwrap_or(usize::MAX), i))
        .collect();
    v.sort_by_key(|x| x.0);
    Ok((v.into_iter().map(|x| x.1).collect(), container))
}
