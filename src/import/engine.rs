//! The import engine: reads inputs unit by unit, matches each unit against the mapping's
//! patterns and writes records through a [`Sink`]; a unit that no pattern takes back
//! byte-for-byte is written as a raw-line record. String tables are written last.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::error::{ImportError, ImportErrorKind};
use super::input::{Body, ImportInput};
use super::intern::Interner;
use super::mapping::{glob, Mapping, Units};
use super::pattern::{FieldKind, Val};
use super::records::{self, Container, PartKind};
use super::sink::{FieldType, PlanId, Sink, SinkError, Value, WriterSink};
use super::spool::{self, SpoolReader};
use super::units::{Eol, UnitReader};
use super::zipio;
use crate::dtd::Schema;
use crate::encode::TraceWriter;

/// How many raw-line positions a report lists.
pub const RAW_LISTED: usize = 5;

/// After this many units the share kept raw is checked a first time, so that an input of
/// another format is refused early (when nine in ten units were kept raw; at the end, when more
/// than half were).
pub const EARLY_CHECK: u64 = 10_000;

/// What an import did.
#[derive(Debug, Default, Clone)]
pub struct ImportReport {
    /// Units read (lines, or XML tags and text runs).
    pub units: u64,
    /// Units written as records of the format.
    pub mapped: u64,
    /// Units kept verbatim in raw-line records.
    pub raw: u64,
    /// The first few raw units: (file, line, column).
    pub first_raw: Vec<(String, u64, u64)>,
    /// Input bytes (uncompressed).
    pub bytes_in: u64,
    /// Per string table: (section, distinct strings, bytes of text held).
    pub tables: Vec<(String, usize, u64)>,
    /// ZIP entries kept verbatim.
    pub verbatim_entries: Vec<String>,
    /// Per routed section: (section, records).
    pub routed: Vec<(String, u64)>,
    /// Raw units that a rule matched but whose values could not be stored (counted in
    /// `raw`), with the first one's position and why.
    pub unfit: u64,
    /// The first unit of `unfit`: (file, line, why).
    pub first_unfit: Option<(String, u64, String)>,
    /// Units after as many as the header announces (`limit`; counted in `raw`), with the
    /// field that says how many.
    pub beyond: u64,
    /// The `limit` field and its value, for the first part that had one.
    pub limit: Option<(String, u64)>,
}

impl ImportReport {
    /// The share of units kept raw, in percent (rounded down; 0 without units).
    pub fn raw_percent(&self) -> u64 {
        (self.raw * 100).checked_div(self.units).unwrap_or(0)
    }

    /// Whether most units match no rule (more than half kept raw).
    pub fn mostly_unmatched(&self) -> bool {
        self.raw * 2 > self.units
    }

    /// Why units were kept raw, when some were not for want of a matching rule: values that
    /// cannot be stored, units after the count the header gives. `None` otherwise.
    pub fn cause(&self) -> Option<String> {
        if self.unfit == 0 && self.beyond == 0 {
            return None;
        }
        let mut parts = Vec::new();
        let none = self.raw.saturating_sub(self.unfit + self.beyond);
        if none > 0 {
            parts.push(format!("{none} match no rule"));
        }
        if let Some((f, l, why)) = &self.first_unfit {
            parts.push(format!(
                "{} match a rule but hold a value that cannot be stored (the first at {f}:{l}: {why})",
                self.unfit
            ));
        }
        if self.beyond > 0 {
            let (field, n) = self.limit.clone().unwrap_or_default();
            parts.push(format!(
                "{} come after the {n} the header announces (`{field}`), which the format's reader does not read",
                self.beyond
            ));
        }
        Some(parts.join("; "))
    }
}

/// A value of a record being assembled from a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// An integer.
    Int(u64),
    /// A byte offset (an interned string's, or a `ref`'s record's).
    Offset(u64),
    /// Bytes `start..end` of the unit, stored inline.
    Inline(usize, usize),
    /// Bytes `start..end` of the unit, to intern.
    Intern(usize, usize),
    /// The empty string, to intern.
    InternEmpty,
}

/// How one rule's values land in the record's plan: every rule of a record type in a part
/// writes the union of their fields (fields a rule does not read are 0 or the empty string).
struct RulePlan {
    plan: PlanId,
    /// Kinds of the union's fields.
    types: Vec<FieldKind>,
    /// Union names (for `when` conditions).
    names: Vec<String>,
    /// Pattern field index → union index.
    slot_of: Vec<usize>,
    /// `set` constants: (union index, value).
    set: Vec<(usize, u64)>,
    /// Indexes of the earlier rules of the same record type in the part.
    earlier: Vec<usize>,
    /// Lines a unit of this rule spans.
    lines: usize,
    /// The routed section the records go to (index into `Importer::routed`), if not the part's.
    route: Option<usize>,
    /// `ref` fields: (union index, routed section the index points into).
    refs: Vec<(usize, usize)>,
    /// `keep` fields: (union index, index into the part's kept values).
    keep_in: Vec<(usize, usize)>,
    /// Integer fields named like a `keep` field of the part: (union index, index into the
    /// kept values), whose value is kept when the record is written.
    keep_out: Vec<(usize, usize)>,
    /// A head rule's union index of the part's `limit` field.
    limit: Option<usize>,
}

/// A section records are routed to (`record R section S …`): its records are spooled to a
/// temporary file in the order read, laid out as they come (so a `ref` index becomes the byte
/// offset the record will have), and written after the data sections.
struct Routed {
    name: String,
    spool: Option<std::io::BufWriter<crate::io::TempFile>>,
    /// Records routed so far.
    count: u64,
    /// Size of the section so far, when every record's size is known in advance.
    next: Option<u64>,
    /// Offsets of its records, kept when a `ref` points into the section.
    offsets: Option<Vec<u64>>,
}

/// One line read ahead.
struct Ahead {
    buf: Vec<u8>,
    line: u64,
    col: u64,
}

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
    p_part: PlanId,
    p_raw: PlanId,
    p_noeol: PlanId,
    p_chunk: PlanId,
    p_routed: Option<PlanId>,
    p_entry: Option<PlanId>,
    p_archive: Option<PlanId>,
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
    /// does not describe does not stop an input that matches further on).
    fn check_unmatched(&self, file: &str, early: bool) -> Result<(), ImportError> {
        let r = &self.report;
        let refuse = if early {
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
        let p_origin = sink
            .plan(
                None,
                records::ORIGIN,
                &[
                    ("version", FieldType::Int),
                    ("container", FieldType::Int),
                    ("files", FieldType::Int),
                    ("format", FieldType::Bytes),
                    ("mapping", FieldType::Bytes),
                ],
            )
            .map_err(f)?;
        let p_part = sink
            .plan(
                None,
                records::PART,
                &[
                    ("kind", FieldType::Int),
                    ("part", FieldType::Int),
                    ("eol", FieldType::Int),
                    ("method", FieldType::Int),
                    ("name", FieldType::Bytes),
                ],
            )
            .map_err(f)?;
        let p_raw = sink
            .plan(None, records::RAW, &[("line", FieldType::Bytes)])
            .map_err(f)?;
        let p_noeol = sink.plan(None, records::NOEOL, &[]).map_err(f)?;
        let p_chunk = sink
            .plan(None, records::CHUNK, &[("data", FieldType::Bytes)])
            .map_err(f)?;
        // ZIP entry metadata (version 2): written when the DTD declares the records (an older
        // DTD that does not still imports, and its ZIP entries come back with the 1980 date).
        let p_entry = if sink.has_record(records::ENTRY) {
            Some(
                sink.plan(
                    None,
                    records::ENTRY,
                    &[
                        ("time", FieldType::Int),
                        ("attrs", FieldType::Int),
                        ("madeby", FieldType::Int),
                        ("extra", FieldType::Bytes),
                        ("central", FieldType::Bytes),
                        ("comment", FieldType::Bytes),
                    ],
                )
                .map_err(f)?,
            )
        } else {
            None
        };
        let p_archive = if sink.has_record(records::ARCHIVE) {
            Some(
                sink.plan(None, records::ARCHIVE, &[("comment", FieldType::Bytes)])
                    .map_err(f)?,
            )
        } else {
            None
        };
        let mut table_plans = Vec::new();
        for t in &m.tables {
            table_plans.push(
                sink.plan(Some(&t.section), &t.record, &[(&t.field, FieldType::Bytes)])
                    .map_err(f)?,
            );
        }
        let routed_names = m.routed();
        let p_routed = if routed_names.is_empty() {
            None
        } else {
            Some(
                sink.plan(
                    None,
                    records::ROUTED,
                    &[("target", FieldType::Int), ("count", FieldType::Int)],
                )
                .map_err(f)?,
            )
        };
        let route_of = |s: &str| routed_names.iter().position(|x| x == s).unwrap_or(0);
        let mut rules = Vec::new();
        let xml = m.units == Units::Xml;
        for part in &m.parts {
            let mut rp: Vec<RulePlan> = Vec::new();
            for (ri, r) in part.rules.iter().enumerate() {
                let err = |msg: String| {
                    ImportError::at(
                        "",
                        ImportErrorKind::Dtd(format!(
                            "DTD {} does not fit the rule at line {} of mapping `{}`: {msg}",
                            schema.name, r.line, m.name
                        )),
                    )
                };
                let same: Vec<usize> = (0..part.rules.len())
                    .filter(|&j| part.rules[j].record == r.record)
                    .collect();
                // The union of the fields of every rule of this record type, in order (their
                // kinds agree: checked when the mapping was parsed).
                let (names, types) = part.fields_of(&r.record);
                let pos = |n: &str| names.iter().position(|x| x == n).unwrap_or(0);
                let slot_of = r.pattern.fields.iter().map(|f| pos(&f.name)).collect();
                // `ref` fields (of any rule of the record type) are section offsets.
                let ref_fields: Vec<&String> = same
                    .iter()
                    .flat_map(|&j| part.rules[j].refs.iter().map(|(f, _)| f))
                    .collect();
                let refs = r
                    .refs
                    .iter()
                    .map(|(f, sec)| (pos(f), route_of(sec)))
                    .collect();
                let set = r.set.iter().map(|(f, v)| (pos(f), *v)).collect();
                let kept = part.kept();
                let keep_in = r
                    .keep
                    .iter()
                    .filter_map(|f| Some((pos(f), kept.iter().position(|x| x == f)?)))
                    .collect();
                let keep_out = names
                    .iter()
                    .zip(&types)
                    .enumerate()
                    .filter(|(_, (_, t))| **t == FieldKind::Int)
                    .filter_map(|(k, (n, _))| Some((k, kept.iter().position(|x| x == n)?)))
                    .collect();
                let limit = match &part.limit {
                    Some(f) if r.head => names.iter().position(|x| x == f),
                    _ => None,
                };
                let plan = match same.iter().position(|&j| j < ri) {
                    Some(k) => rp[same[k]].plan,
                    None => {
                        let fields: Vec<(&str, FieldType)> = names
                            .iter()
                            .zip(&types)
                            .map(|(n, k)| {
                                let ty = match k {
                                    FieldKind::Int if ref_fields.contains(&n) => FieldType::Offset,
                                    FieldKind::Int => FieldType::Int,
                                    FieldKind::Interned(_) => FieldType::Offset,
                                    FieldKind::Inline => FieldType::Bytes,
                                };
                                (n.as_str(), ty)
                            })
                            .collect();
                        let section = r.section.as_ref().unwrap_or(&part.section);
                        sink.plan(Some(section), &r.record, &fields)
                            .map_err(|e| err(e.to_string()))?
                    }
                };
                rp.push(RulePlan {
                    plan,
                    types,
                    names,
                    slot_of,
                    set,
                    earlier: same.into_iter().filter(|&j| j < ri).collect(),
                    lines: if xml { 1 } else { r.pattern.lines },
                    route: r.section.as_deref().map(route_of),
                    refs,
                    keep_in,
                    keep_out,
                    limit,
                });
            }
            rules.push(rp);
        }
        sink.write(
            p_origin,
            &[
                Value::Int(records::VERSION),
                Value::Int(container.code()),
                Value::Int(files),
                Value::Bytes(m.name.as_bytes()),
                Value::Bytes(m.text.as_bytes()),
            ],
        )
        .map_err(f)?;
        let dispatch = m
            .parts
            .iter()
            .zip(&rules)
            .map(|(part, plans)| {
                let mut by_byte = vec![Vec::new(); 257];
                for (ri, (rule, rp)) in part.rules.iter().zip(plans).enumerate() {
                    // What `try_rules` compares the first line with.
                    let lead = rule.pattern.lead();
                    let key = if rp.lines == 1 {
                        lead
                    } else {
                        &lead[..lead.iter().position(|&c| c == b'\n').unwrap_or(lead.len())]
                    };
                    match key.first() {
                        Some(&b) => by_byte[b as usize].push(ri as u32),
                        None => by_byte.iter_mut().for_each(|l| l.push(ri as u32)),
                    }
                }
                by_byte
            })
            .collect();
        Ok(Importer {
            m,
            sink,
            rules,
            dispatch,
            table_plans,
            tables: m.tables.iter().map(|_| Interner::new()).collect(),
            p_part,
            p_raw,
            p_noeol,
            p_chunk,
            p_routed,
            p_entry,
            p_archive,
            routed: routed_names
                .iter()
                .map(|n| {
                    let target = m
                        .parts
                        .iter()
                        .flat_map(|p| &p.rules)
                        .any(|r| r.refs.iter().any(|(_, s)| s == n));
                    Routed {
                        name: n.clone(),
                        spool: None,
                        count: 0,
                        next: Some(0),
                        offsets: target.then(Vec::new),
                    }
                })
                .collect(),
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
        flush_run(&mut self.sink, &mut self.run, self.p_routed)
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
        if let Some(plan) = self.p_archive {
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
        let Some(plan) = self.p_entry else {
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
                self.p_part,
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
                .write(self.p_chunk, &[Value::Bytes(&buf[..n])])
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

    /// Import one stream of units; `method`: its ZIP compression code (0 for a plain file);
    /// `entry`: the ZIP entry it is, whose metadata is recorded.
    // Design: the entry is passed apart from the method; an entry used to be told from a plain
    // stream by its empty name, so a ZIP entry named "" lost its date and attributes (found by
    // fuzzing the ZIP round trip).
    fn stream_part(
        &mut self,
        shown: &str,
        part_name: &str,
        r: impl BufRead,
        method: u64,
        entry: Option<&zipio::EntryMeta>,
    ) -> Result<(), ImportError> {
        let m = self.m;
        let pi = m
            .part_for(part_name)
            .ok_or_else(|| ImportError::at(shown, ImportErrorKind::NoPart(m.name.clone())))?;
        let part = &m.parts[pi];
        self.enter(&part.section, shown)?;
        let xml = m.units == Units::Xml;
        let mut u = UnitReader::new(r, xml);
        let io_err = |u: &UnitReader<_>, e: std::io::Error| {
            ImportError::new(shown, u.line, u.col, ImportErrorKind::of_read(&e))
        };
        let mut have = u.next_unit().map_err(|e| io_err(&u, e))?;
        let part_eol = if xml || !have {
            Eol::Lf
        } else {
            match u.split_line().1 {
                Eol::CrLf => Eol::CrLf,
                _ => Eol::Lf,
            }
        };
        self.sink
            .write(
                self.p_part,
                &[
                    Value::Int(PartKind::Mapped.code()),
                    Value::Int(pi as u64),
                    Value::Int(part_eol.code()),
                    Value::Int(method),
                    Value::Bytes(part_name.as_bytes()),
                ],
            )
            .map_err(|e| fatal(shown, e))?;
        if let Some(e) = entry {
            self.entry_record(shown, e)?;
        }
        // Lines read ahead for patterns that span several lines; the first is the current unit.
        let mut ahead: std::collections::VecDeque<Ahead> = std::collections::VecDeque::new();
        let mut pool: Vec<Vec<u8>> = Vec::new();
        let need = self.rules[pi].iter().map(|r| r.lines).max().unwrap_or(1);
        let mut index = 0usize;
        let mut done = 0u64;
        self.kept.clear();
        self.kept.resize(self.kept_names[pi].len(), 0);
        self.body_seen = false;
        self.left = None;
        loop {
            // Fill the window (the first unit was read above to find the part's line end).
            while ahead.len() < need && have {
                let mut b = pool.pop().unwrap_or_default();
                b.clear();
                b.extend_from_slice(&u.buf);
                ahead.push_back(Ahead {
                    buf: b,
                    line: u.line,
                    col: u.col,
                });
                have = u.next_unit().map_err(|e| io_err(&u, e))?;
            }
            if ahead.is_empty() {
                break;
            }
            // Past as many units as the header announces (`limit`): kept raw.
            // Design: the count is the format's reader's (malloc-lab's driver reads `ops`
            // operations with fscanf and stops), so every non-blank unit after the header
            // counts, also one no rule took (the driver reads `f  1` as an operation too);
            // blank lines do not (fscanf skips white space). The units after are kept raw, not
            // refused: export gives them back, and the report says why they are raw.
            let beyond = self.left == Some(0);
            let taken = if beyond {
                None
            } else {
                self.try_rules(pi, index, &ahead, part_eol, xml, shown)
                    .map_err(|e| fatal(shown, e))?
            };
            let blank = ahead[0].buf.iter().all(|c| c.is_ascii_whitespace());
            let n = match taken {
                Some((n, noeol, head)) => {
                    if !head {
                        self.left = self.left.map(|l| l.saturating_sub(1));
                    }
                    self.report.units += n as u64;
                    self.report.mapped += n as u64;
                    if noeol {
                        self.flush_run().map_err(|e| fatal(shown, e))?;
                        self.sink
                            .write(self.p_noeol, &[])
                            .map_err(|e| fatal(shown, e))?;
                    }
                    n
                }
                None => {
                    if !beyond && self.too_wide(pi, &ahead[0].buf) {
                        let why = "a decimal number of more than 64 bits".to_string();
                        self.report.unfit += 1;
                        if self.report.first_unfit.is_none() {
                            self.report.first_unfit = Some((shown.to_string(), ahead[0].line, why));
                        }
                    }
                    let a = &ahead[0];
                    self.report.units += 1;
                    self.report.raw += 1;
                    if beyond {
                        self.report.beyond += 1;
                    } else if !blank {
                        // An operation the format's reader counts, though no rule took it.
                        self.left = self.left.map(|l| l.saturating_sub(1));
                    }
                    if self.report.first_raw.len() < RAW_LISTED {
                        self.report
                            .first_raw
                            .push((shown.to_string(), a.line, a.col));
                    }
                    self.flush_run().map_err(|e| fatal(shown, e))?;
                    self.sink
                        .write(self.p_raw, &[Value::Bytes(&a.buf)])
                        .map_err(|e| fatal(shown, e))?;
                    1
                }
            };
            for _ in 0..n {
                if let Some(a) = ahead.pop_front() {
                    done += a.buf.len() as u64;
                    pool.push(a.buf);
                }
            }
            index += n;
            if !self.checked_early && self.report.units >= EARLY_CHECK {
                self.checked_early = true;
                self.check_unmatched(shown, true)?;
            }
            if index % 4096 < n {
                // Approximate (line ends are not counted): for a progress bar only.
                if let Some(f) = &mut self.progress {
                    f(self.report.bytes_in + done);
                }
            }
        }
        self.flush_run().map_err(|e| fatal(shown, e))?;
        self.report.bytes_in += u.bytes;
        self.tick();
        Ok(())
    }

    /// Whether a unit no rule took holds a decimal number wider than 64 bits, without which a
    /// one-line rule of the part would match it: the cause a refusal names (such a value cannot
    /// be stored in any field).
    // Design: only units kept raw are looked at, and only when they hold a run of 20 digits or
    // more, so the common path pays nothing.
    fn too_wide(&mut self, pi: usize, unit: &[u8]) -> bool {
        let mut runs = Vec::new();
        let mut i = 0;
        while i < unit.len() {
            if unit[i].is_ascii_digit() {
                let start = i;
                while i < unit.len() && unit[i].is_ascii_digit() {
                    i += 1;
                }
                let digits = &unit[start..i];
                let wide = digits.len() >= 20
                    && std::str::from_utf8(digits).is_ok_and(|d| d.parse::<u64>().is_err());
                if wide {
                    runs.push((start, i));
                }
            } else {
                i += 1;
            }
        }
        if runs.is_empty() {
            return false;
        }
        let mut narrow = Vec::with_capacity(unit.len());
        let mut at = 0;
        for (a, b) in runs {
            narrow.extend_from_slice(&unit[at..a]);
            narrow.push(b'1');
            at = b;
        }
        narrow.extend_from_slice(&unit[at..]);
        while matches!(narrow.last(), Some(b'\n' | b'\r')) {
            narrow.pop();
        }
        let part = &self.m.parts[pi];
        part.rules.iter().zip(&self.rules[pi]).any(|(r, rp)| {
            !r.head && rp.lines == 1 && r.pattern.matches(&narrow, &mut self.vals).is_some()
        })
    }

    /// Try the part's rules on the units at the front of `ahead`; when a record was written,
    /// the number of units it took and whether its last line had no line end.
    fn try_rules(
        &mut self,
        pi: usize,
        index: usize,
        ahead: &std::collections::VecDeque<Ahead>,
        part_eol: Eol,
        xml: bool,
        shown: &str,
    ) -> Result<Option<(usize, bool, bool)>, SinkError> {
        let part = &self.m.parts[pi];
        let split = |b: &[u8]| -> (usize, Eol) {
            if b.ends_with(b"\r\n") {
                (b.len() - 2, Eol::CrLf)
            } else if b.ends_with(b"\n") {
                (b.len() - 1, Eol::Lf)
            } else {
                (b.len(), Eol::None)
            }
        };
        let first = &ahead[0].buf;
        let (first_len, first_eol) = if xml {
            (first.len(), Eol::Lf)
        } else {
            split(first)
        };
        let first_ok = first_eol == part_eol || first_eol == Eol::None;
        let key = first[..first_len].first().map_or(256, |&b| b as usize);
        // Within the header block, `head` rules are tried first, then the others: a header may
        // be shorter than the block (malloc-lab's 2-line header), and the header is over when
        // another rule takes a unit. After the block, only the others.
        let in_header = index < part.header && !self.body_seen;
        let mut unfit: Option<String> = None;
        let candidates = self.dispatch[pi][key].len();
        for k in 0..candidates * if in_header { 2 } else { 1 } {
            let head_pass = in_header && k < candidates;
            let ri = self.dispatch[pi][key][k % candidates] as usize;
            let rule = &part.rules[ri];
            let lines = self.rules[pi][ri].lines;
            let placed = if rule.head {
                head_pass && index + lines <= part.header
            } else {
                !head_pass
            };
            if !placed {
                continue;
            }
            // The unit: one line, or `lines` lines joined by `\n` (all but the last with the
            // part's line end).
            let (unit, last_eol): (&[u8], Eol) = if lines == 1 {
                if !first_ok || !first[..first_len].starts_with(rule.pattern.lead()) {
                    continue;
                }
                (&first[..first_len], first_eol)
            } else {
                let lead = rule.pattern.lead();
                let lead1 = &lead[..lead.iter().position(|&c| c == b'\n').unwrap_or(lead.len())];
                if ahead.len() < lines || !first[..first_len].starts_with(lead1) {
                    continue;
                }
                self.joined.clear();
                let mut last = Eol::None;
                let mut ok = true;
                for (k, a) in ahead.iter().take(lines).enumerate() {
                    let (n, e) = split(&a.buf);
                    if k > 0 {
                        self.joined.push(b'\n');
                    }
                    self.joined.extend_from_slice(&a.buf[..n]);
                    ok &= e == part_eol || (k + 1 == lines && e == Eol::None);
                    last = e;
                }
                if !ok {
                    continue;
                }
                (&self.joined[..], last)
            };
            if rule.pattern.matches(unit, &mut self.vals).is_none() {
                continue;
            }
            let rp = &self.rules[pi][ri];
            // Intern strings first (an over-long string makes the unit raw).
            self.fin.clear();
            self.fin.extend(rp.types.iter().map(|t| match t {
                FieldKind::Int => Slot::Int(0),
                FieldKind::Interned(_) => Slot::InternEmpty,
                FieldKind::Inline => Slot::Inline(0, 0),
            }));
            for &(k, v) in &rp.set {
                self.fin[k] = Slot::Int(v);
            }
            for &(k, c) in &rp.keep_in {
                self.fin[k] = Slot::Int(self.kept[c]);
            }
            let mut ok = true;
            for (k, v) in self.vals.iter().enumerate() {
                let slot = rp.slot_of[k];
                self.fin[slot] = match (&rp.types[slot], *v) {
                    (FieldKind::Interned(_), Val::Span(a, b)) => Slot::Intern(a, b),
                    (FieldKind::Interned(_), Val::Int(_)) => Slot::InternEmpty,
                    (FieldKind::Inline, Val::Span(a, b)) => Slot::Inline(a, b),
                    (FieldKind::Inline, Val::Int(_)) => Slot::Inline(0, 0),
                    (FieldKind::Int, Val::Int(x)) => Slot::Int(x),
                    (FieldKind::Int, Val::Span(..)) => Slot::Int(0),
                };
            }
            // Export renders a record with the first rule of its type that applies: take the
            // unit only if no earlier rule of the same record type would be chosen instead.
            {
                let fin = &self.fin;
                let get = |n: &str| -> u64 {
                    match rp.names.iter().position(|x| x == n).map(|i| fin[i]) {
                        Some(Slot::Int(v)) => v,
                        _ => 0,
                    }
                };
                if rp.earlier.iter().any(|&j| part.rules[j].applies(&get)) || !rule.applies(&get) {
                    continue;
                }
            }
            for k in 0..self.fin.len() {
                let text = match self.fin[k] {
                    Slot::Intern(a, b) => &unit[a..b],
                    Slot::InternEmpty => &[][..],
                    _ => continue,
                };
                let FieldKind::Interned(t) = rp.types[k] else {
                    continue;
                };
                let plan = self.table_plans[t];
                let sink = &self.sink;
                let table = &self.tables[t];
                if table.held + text.len() as u64 > self.string_limit && !table.contains(text) {
                    return Err(SinkError::Fatal(format!(
                        "a string table holds more than {} bytes of distinct strings (the limit)",
                        self.string_limit
                    )));
                }
                match self.tables[t].intern(text, |n| sink.record_size(plan, n)) {
                    Some(o) => self.fin[k] = Slot::Offset(o),
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            // `ref` fields: a 1-based index of a record already routed to the section becomes
            // that record's offset (0, or an index not yet seen, does not match).
            for &(k, t) in &rp.refs {
                let off = match (&self.routed[t].offsets, self.fin[k]) {
                    (Some(o), Slot::Int(v)) if v >= 1 && v <= o.len() as u64 => o[v as usize - 1],
                    _ => {
                        ok = false;
                        break;
                    }
                };
                self.fin[k] = Slot::Offset(off);
            }
            if !ok {
                continue;
            }
            let ins: Vec<Value> = self
                .fin
                .iter()
                .map(|&v| match v {
                    Slot::Int(a) => Value::Int(a),
                    Slot::Offset(a) => Value::Offset(a),
                    Slot::Inline(a, b) | Slot::Intern(a, b) => Value::Bytes(&unit[a..b]),
                    Slot::InternEmpty => Value::Bytes(b""),
                })
                .collect();
            let written = match rp.route {
                Some(t) => route(
                    &mut self.sink,
                    &mut self.routed,
                    &mut self.run,
                    self.p_routed,
                    (t, rp.plan),
                    &ins,
                ),
                None => {
                    flush_run(&mut self.sink, &mut self.run, self.p_routed)?;
                    self.sink.write(rp.plan, &ins)
                }
            };
            match written {
                Ok(()) => {
                    for &(k, c) in &rp.keep_out {
                        if let Slot::Int(v) = self.fin[k] {
                            self.kept[c] = v;
                        }
                    }
                    if let Some(k) = rp.limit {
                        if let Slot::Int(v) = self.fin[k] {
                            self.left = Some(v);
                            if self.report.limit.is_none() {
                                let name = part.limit.clone().unwrap_or_default();
                                self.report.limit = Some((name, v));
                            }
                        }
                    }
                    self.body_seen |= !rule.head;
                    return Ok(Some((lines, !xml && last_eol == Eol::None, rule.head)));
                }
                Err(SinkError::Unrepresentable(why)) => {
                    unfit.get_or_insert(why);
                    continue;
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(why) = unfit {
            self.report.unfit += 1;
            if self.report.first_unfit.is_none() {
                self.report.first_unfit = Some((shown.to_string(), ahead[0].line, why));
            }
        }
        Ok(None)
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
        // The routed sections, each from its spool, in the order of the mapping's rules.
        for t in 0..self.routed.len() {
            let Some(spool) = self.routed[t].spool.take() else {
                continue;
            };
            let name = self.routed[t].name.clone();
            let shown = format!("section {name}");
            let io =
                |e: std::io::Error| ImportError::at(&shown, ImportErrorKind::Write(e.to_string()));
            let mut f = spool.into_inner().map_err(|e| io(e.into_error()))?;
            std::io::Seek::rewind(&mut f).map_err(io)?;
            self.enter(&name, &shown)?;
            let mut r = SpoolReader::new(BufReader::with_capacity(1 << 16, f));
            let mut k = 0usize;
            while let Some(plan) = r.next_record().map_err(io)? {
                if let Some(o) = &self.routed[t].offsets {
                    if o.get(k).copied() != Some(self.sink.position()) {
                        return Err(ImportError::at(
                            &shown,
                            ImportErrorKind::Write(format!(
                                "record {k} is not at the offset laid out for it"
                            )),
                        ));
                    }
                }
                let ins = r.values();
                self.sink.write(plan, &ins).map_err(|e| fatal(&shown, e))?;
                k += 1;
            }
            self.report.routed.push((name, self.routed[t].count));
        }
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

/// Write the pending `import_routed` record: the routed records read since the last record of
/// the part's section go here, in order.
fn flush_run<S: Sink>(
    sink: &mut S,
    run: &mut Option<(usize, u64)>,
    p_routed: Option<PlanId>,
) -> Result<(), SinkError> {
    if let (Some((target, count)), Some(plan)) = (run.take(), p_routed) {
        sink.write(plan, &[Value::Int(target as u64), Value::Int(count)])?;
    }
    Ok(())
}

/// Spool a record routed to section `t` (checked to fit; its offset laid out).
fn route<S: Sink>(
    sink: &mut S,
    routed: &mut [Routed],
    run: &mut Option<(usize, u64)>,
    p_routed: Option<PlanId>,
    (t, plan): (usize, PlanId),
    ins: &[Value<'_>],
) -> Result<(), SinkError> {
    let size = sink.check(plan, ins)?;
    let r = &mut routed[t];
    if r.offsets.is_some() && size.is_none() && sink.fixed_layout(plan) {
        // A value wider than its field: the record's size is not known in advance.
        return Err(SinkError::Unrepresentable(format!(
            "section `{}` is laid out in advance (a `ref` points into it): a value wider than its field cannot be widened there",
            r.name
        )));
    }
    if r.offsets.is_some() && size.is_none() {
        return Err(SinkError::Fatal(format!(
            "section `{}`: a `ref` points into it, so its records may not have `default` or `delta` fields",
            r.name
        )));
    }
    if r.spool.is_none() {
        let f = crate::io::TempFile::new().map_err(|e| SinkError::Fatal(e.to_string()))?;
        r.spool = Some(std::io::BufWriter::with_capacity(1 << 16, f));
    }
    let at = r.next;
    r.next = match (r.next, size) {
        (Some(n), Some(k)) => Some(n + k),
        _ => None,
    };
    if let (Some(o), Some(at)) = (&mut r.offsets, at) {
        o.push(at);
    }
    r.count += 1;
    if let Some(w) = r.spool.as_mut() {
        spool::write(w, plan, ins).map_err(|e| SinkError::Fatal(e.to_string()))?;
    }
    match run {
        Some((rt, n)) if *rt == t && *n < u32::MAX as u64 => *n += 1,
        _ => {
            flush_run(sink, run, p_routed)?;
            *run = Some((t, 1));
        }
    }
    Ok(())
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
