//! The import engine: reads inputs unit by unit, matches each unit against the mapping's
//! patterns and writes records through a [`Sink`]; a unit that no pattern takes back
//! byte-for-byte is written as a raw-line record. String tables are written last.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use super::intern::Interner;
use super::mapping::{glob, Mapping, Units};
use super::pattern::{FieldKind, Val};
use super::sink::{FieldIn, FieldType, PlanId, Sink, SinkError};
use super::units::{Eol, UnitReader};
use super::zipio;
use super::{records, ImportError};

/// How many raw-line positions a report lists.
pub const RAW_LISTED: usize = 5;

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
pub struct Importer<'m, S: Sink> {
    m: &'m Mapping,
    sink: S,
    rules: Vec<Vec<RulePlan>>, // per part, per rule
    table_plans: Vec<PlanId>,
    tables: Vec<Interner>,
    p_part: PlanId,
    p_raw: PlanId,
    p_noeol: PlanId,
    p_chunk: PlanId,
    p_routed: Option<PlanId>,
    routed: Vec<Routed>,
    /// Records routed since the last record of the part's section: (routed section, count),
    /// written as one `import_routed` record before the next record there.
    run: Option<(usize, u64)>,
    opened: Vec<String>,
    current: Option<String>,
    vals: Vec<Val>,
    fin: Vec<(usize, u64, u64)>, // scratch: (kind 0 int / 1 offset / 2 inline start, a, b)
    joined: Vec<u8>,             // scratch: lines of a multi-line unit, joined by `\n`
    /// The report so far.
    pub report: ImportReport,
    progress: Option<Box<dyn FnMut(u64) + 'm>>,
}

fn fatal(file: &str, e: SinkError) -> ImportError {
    ImportError::new(file, 0, 0, e.to_string())
}

impl<'m, S: Sink> Importer<'m, S> {
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

    /// Prepare every record kind of the mapping in the sink and write the origin record.
    pub fn new(
        m: &'m Mapping,
        mut sink: S,
        container: u64,
        files: u64,
    ) -> Result<Self, ImportError> {
        let f = |e: SinkError| {
            let hint =
                " (a DTD used by a mapping declares the import_* records: see docs/mappings.md)";
            let mut e = fatal(&format!("mapping {}", m.name), e);
            if e.message.contains("no record `import_") {
                e.message.push_str(hint);
            }
            e
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
                    ImportError::new(&format!("mapping {}", m.name), r.line as u64, 1, msg)
                };
                let same: Vec<usize> = (0..part.rules.len())
                    .filter(|&j| part.rules[j].record == r.record)
                    .collect();
                // The union of the fields of every rule of this record type, in order.
                let mut names: Vec<String> = Vec::new();
                let mut types: Vec<FieldKind> = Vec::new();
                for &j in &same {
                    let o = &part.rules[j];
                    let more = o.pattern.fields.iter().map(|f| (&f.name, f.kind.clone()));
                    let sets = o.set.iter().map(|(f, _)| (f, FieldKind::Int));
                    for (n, k) in more.chain(sets) {
                        match names.iter().position(|x| x == n) {
                            Some(i) if types[i] != k => {
                                return Err(err(format!(
                                "field `{n}` of record `{}` has different types in its patterns",
                                r.record
                            )))
                            }
                            Some(_) => {}
                            None => {
                                names.push(n.clone());
                                types.push(k);
                            }
                        }
                    }
                }
                let pos = |n: &str| names.iter().position(|x| x == n).unwrap_or(0);
                let slot_of = r.pattern.fields.iter().map(|f| pos(&f.name)).collect();
                // `ref` fields (of any rule of the record type) are section offsets.
                let ref_fields: Vec<&String> = same
                    .iter()
                    .flat_map(|&j| part.rules[j].refs.iter().map(|(f, _)| f))
                    .collect();
                if same.iter().any(|&j| part.rules[j].section != r.section) {
                    return Err(err(format!(
                        "the rules of record `{}` name different sections",
                        r.record
                    )));
                }
                let refs = r
                    .refs
                    .iter()
                    .map(|(f, sec)| (pos(f), route_of(sec)))
                    .collect();
                let set = r.set.iter().map(|(f, v)| (pos(f), *v)).collect();
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
                });
            }
            rules.push(rp);
        }
        sink.write(
            p_origin,
            &[
                FieldIn::Int(records::VERSION),
                FieldIn::Int(container),
                FieldIn::Int(files),
                FieldIn::Bytes(m.name.as_bytes()),
                FieldIn::Bytes(m.text.as_bytes()),
            ],
        )
        .map_err(f)?;
        Ok(Importer {
            m,
            sink,
            rules,
            table_plans,
            tables: m.tables.iter().map(|_| Interner::new()).collect(),
            p_part,
            p_raw,
            p_noeol,
            p_chunk,
            p_routed,
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
        })
    }

    fn enter(&mut self, section: &str, file: &str) -> Result<(), ImportError> {
        if self.current.as_deref() == Some(section) {
            return Ok(());
        }
        if self.opened.iter().any(|s| s == section) {
            return Err(ImportError::new(file, 0, 0, format!("section `{section}` was already written: give the inputs in the order of the mapping's parts")));
        }
        self.sink.section(section).map_err(|e| fatal(file, e))?;
        self.opened.push(section.to_string());
        self.current = Some(section.to_string());
        Ok(())
    }

    fn flush_run(&mut self) -> Result<(), SinkError> {
        flush_run(&mut self.sink, &mut self.run, self.p_routed)
    }

    /// Import one plain input file (or `-` for standard input).
    pub fn import_path(&mut self, path: &Path) -> Result<(), ImportError> {
        let name = path.display().to_string();
        if path != Path::new("-") && zipio::is_zip(path) {
            let file =
                File::open(path).map_err(|e| ImportError::new(&name, 0, 0, e.to_string()))?;
            return self.import_zip(&name, file);
        }
        let base = if path == Path::new("-") {
            "stdin".to_string()
        } else {
            path.file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        // Compressed inputs (gzip, zstd, xz, bzip2) are read decompressed: export gives back
        // the decompressed text.
        let r = crate::io::Input::reader(path)
            .map_err(|e| ImportError::new(&name, 0, 0, e.to_string()))?;
        self.import_stream(&name, &base, r, 0)
    }

    fn import_zip(&mut self, name: &str, file: File) -> Result<(), ImportError> {
        let mut z = zipio::Reader::new(file).map_err(|e| ImportError::new(name, 0, 0, e))?;
        for i in 0..z.len() {
            let (entry_name, method, is_file) =
                z.meta(i).map_err(|e| ImportError::new(name, 0, 0, e))?;
            let shown = format!("{name}:{entry_name}");
            let r = z.entry(i).map_err(|e| ImportError::new(&shown, 0, 0, e))?;
            if is_file && glob(&self.m.zip_entry, &entry_name) {
                self.import_stream(
                    &shown,
                    &entry_name,
                    BufReader::with_capacity(1 << 16, r),
                    method,
                )?;
            } else {
                self.verbatim(&shown, &entry_name, r, method, is_file)?;
            }
        }
        Ok(())
    }

    fn verbatim(
        &mut self,
        shown: &str,
        entry: &str,
        mut r: impl Read,
        method: u64,
        is_file: bool,
    ) -> Result<(), ImportError> {
        let section = self.m.parts[self.m.part_for("").unwrap_or(0)]
            .section
            .clone();
        self.enter(&section, shown)?;
        let kind = if is_file {
            records::KIND_VERBATIM
        } else {
            records::KIND_DIR
        };
        self.sink
            .write(
                self.p_part,
                &[
                    FieldIn::Int(kind),
                    FieldIn::Int(0),
                    FieldIn::Int(0),
                    FieldIn::Int(method),
                    FieldIn::Bytes(entry.as_bytes()),
                ],
            )
            .map_err(|e| fatal(shown, e))?;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = read_full(&mut r, &mut buf)
                .map_err(|e| ImportError::new(shown, 0, 0, e.to_string()))?;
            if n == 0 {
                break;
            }
            self.report.bytes_in += n as u64;
            self.tick();
            self.sink
                .write(self.p_chunk, &[FieldIn::Bytes(&buf[..n])])
                .map_err(|e| fatal(shown, e))?;
        }
        self.report.verbatim_entries.push(shown.to_string());
        Ok(())
    }

    /// Import one stream of units as a part chosen by `part_name`.
    pub fn import_stream(
        &mut self,
        shown: &str,
        part_name: &str,
        r: impl BufRead,
        method: u64,
    ) -> Result<(), ImportError> {
        let m = self.m;
        let pi = m.part_for(part_name).ok_or_else(|| {
            ImportError::new(
                shown,
                0,
                0,
                format!("no part of mapping `{}` takes this file", m.name),
            )
        })?;
        let part = &m.parts[pi];
        self.enter(&part.section, shown)?;
        let xml = m.units == Units::Xml;
        let mut u = UnitReader::new(r, xml);
        let io_err = |u: &UnitReader<_>, e: std::io::Error| {
            ImportError::new(shown, u.line, u.col, e.to_string())
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
                    FieldIn::Int(records::KIND_MAPPED),
                    FieldIn::Int(pi as u64),
                    FieldIn::Int(part_eol.code()),
                    FieldIn::Int(method),
                    FieldIn::Bytes(part_name.as_bytes()),
                ],
            )
            .map_err(|e| fatal(shown, e))?;
        // Lines read ahead for patterns that span several lines; the first is the current unit.
        let mut ahead: std::collections::VecDeque<Ahead> = std::collections::VecDeque::new();
        let mut pool: Vec<Vec<u8>> = Vec::new();
        let need = self.rules[pi].iter().map(|r| r.lines).max().unwrap_or(1);
        let mut index = 0usize;
        let mut done = 0u64;
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
            let taken = self
                .try_rules(pi, index, &ahead, part_eol, xml)
                .map_err(|e| fatal(shown, e))?;
            let n = match taken {
                Some((n, noeol)) => {
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
                    let a = &ahead[0];
                    self.report.units += 1;
                    self.report.raw += 1;
                    if self.report.first_raw.len() < RAW_LISTED {
                        self.report
                            .first_raw
                            .push((shown.to_string(), a.line, a.col));
                    }
                    self.flush_run().map_err(|e| fatal(shown, e))?;
                    self.sink
                        .write(self.p_raw, &[FieldIn::Bytes(&a.buf)])
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

    /// Try the part's rules on the units at the front of `ahead`; when a record was written,
    /// the number of units it took and whether its last line had no line end.
    fn try_rules(
        &mut self,
        pi: usize,
        index: usize,
        ahead: &std::collections::VecDeque<Ahead>,
        part_eol: Eol,
        xml: bool,
    ) -> Result<Option<(usize, bool)>, SinkError> {
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
        for (ri, rule) in part.rules.iter().enumerate() {
            let lines = self.rules[pi][ri].lines;
            // A `head` rule takes units within the header block only, the others after it.
            let placed = if rule.head {
                index + lines <= part.header
            } else {
                index >= part.header
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
            for t in &rp.types {
                self.fin.push(match t {
                    FieldKind::Int => (0, 0, 0),
                    FieldKind::Interned(_) => (3, 0, 0), // the empty string, interned below
                    FieldKind::Inline => (2, 0, 0),
                });
            }
            for &(k, v) in &rp.set {
                self.fin[k] = (0, v, 0);
            }
            let mut ok = true;
            for (k, v) in self.vals.iter().enumerate() {
                let slot = rp.slot_of[k];
                self.fin[slot] = match (&rp.types[slot], *v) {
                    (FieldKind::Interned(_), Val::Span(a, b)) => (4, a as u64, b as u64),
                    (FieldKind::Interned(_), Val::Int(_)) => (3, 0, 0),
                    (FieldKind::Inline, Val::Span(a, b)) => (2, a as u64, b as u64),
                    (FieldKind::Inline, Val::Int(_)) => (2, 0, 0),
                    (FieldKind::Int, Val::Int(x)) => (0, x, 0),
                    (FieldKind::Int, Val::Span(..)) => (0, 0, 0),
                };
            }
            // Export renders a record with the first rule of its type that applies: take the
            // unit only if no earlier rule of the same record type would be chosen instead.
            if !rp.earlier.is_empty() {
                let fin = &self.fin;
                let get = |n: &str| -> u64 {
                    match rp.names.iter().position(|x| x == n) {
                        Some(i) if fin[i].0 == 0 => fin[i].1,
                        _ => 0,
                    }
                };
                if rp.earlier.iter().any(|&j| part.rules[j].applies(&get)) {
                    continue;
                }
            }
            {
                let fin = &self.fin;
                let get = |n: &str| -> u64 {
                    match rp.names.iter().position(|x| x == n) {
                        Some(i) if fin[i].0 == 0 => fin[i].1,
                        _ => 0,
                    }
                };
                if !rule.applies(&get) {
                    continue;
                }
            }
            for k in 0..self.fin.len() {
                let (kind, a, b) = self.fin[k];
                if kind != 3 && kind != 4 {
                    continue;
                }
                let FieldKind::Interned(t) = rp.types[k] else {
                    continue;
                };
                let text = if kind == 4 {
                    &unit[a as usize..b as usize]
                } else {
                    &[][..]
                };
                let plan = self.table_plans[t];
                let sink = &self.sink;
                match self.tables[t].intern(text, |n| sink.record_size(plan, n)) {
                    Some(o) => self.fin[k] = (1, o, 0),
                    None => {
                        ok = false;
                        break;
                    }
                }
            }
            // `ref` fields: a 1-based index of a record already routed to the section becomes
            // that record's offset (0, or an index not yet seen, does not match).
            for &(k, t) in &rp.refs {
                let (kind, v, _) = self.fin[k];
                let off = match (&self.routed[t].offsets, kind) {
                    (Some(o), 0) if v >= 1 && v <= o.len() as u64 => o[v as usize - 1],
                    _ => {
                        ok = false;
                        break;
                    }
                };
                self.fin[k] = (1, off, 0);
            }
            if !ok {
                continue;
            }
            let ins: Vec<FieldIn> = self
                .fin
                .iter()
                .map(|&(k, a, b)| match k {
                    0 => FieldIn::Int(a),
                    1 => FieldIn::Offset(a),
                    _ => FieldIn::Bytes(&unit[a as usize..b as usize]),
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
                Ok(()) => return Ok(Some((lines, !xml && last_eol == Eol::None))),
                Err(SinkError::Unrepresentable(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// Write the string tables and return the sink and the report.
    pub fn finish(mut self) -> Result<(S, ImportReport), ImportError> {
        self.flush_run().map_err(|e| fatal("routed records", e))?;
        // The routed sections, each from its spool, in the order of the mapping's rules.
        for t in 0..self.routed.len() {
            let Some(spool) = self.routed[t].spool.take() else {
                continue;
            };
            let name = self.routed[t].name.clone();
            let shown = format!("section {name}");
            let io = |e: std::io::Error| ImportError::new(&shown, 0, 0, e.to_string());
            let mut f = spool.into_inner().map_err(|e| io(e.into_error()))?;
            std::io::Seek::rewind(&mut f).map_err(io)?;
            self.enter(&name, &shown)?;
            let mut r = BufReader::with_capacity(1 << 16, f);
            let mut data = Vec::new();
            let mut k = 0usize;
            while let Some(plan) = spool_read(&mut r, &mut data).map_err(io)? {
                if let Some(o) = &self.routed[t].offsets {
                    if o.get(k).copied() != Some(self.sink.position()) {
                        return Err(ImportError::new(
                            &shown,
                            0,
                            0,
                            format!("record {k} is not at the offset laid out for it"),
                        ));
                    }
                }
                let ins = spool_values(&data);
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
                    .write(self.table_plans[t], &[FieldIn::Bytes(s)])
                    .map_err(|e| fatal("string table", e))?;
            }
        }
        Ok((self.sink, self.report))
    }
}

// A routed record in its spool: the plan (u32), the number of values (u16), then each value:
// kind 0 integer / 1 offset (u64), or 2 bytes (u32 length, the bytes); little endian.
fn spool_write(
    w: &mut impl std::io::Write,
    plan: PlanId,
    ins: &[FieldIn<'_>],
) -> std::io::Result<()> {
    w.write_all(&(plan as u32).to_le_bytes())?;
    w.write_all(&(ins.len() as u16).to_le_bytes())?;
    for v in ins {
        match v {
            FieldIn::Int(x) => {
                w.write_all(&[0])?;
                w.write_all(&x.to_le_bytes())?;
            }
            FieldIn::Offset(x) => {
                w.write_all(&[1])?;
                w.write_all(&x.to_le_bytes())?;
            }
            FieldIn::Bytes(b) => {
                w.write_all(&[2])?;
                w.write_all(&(b.len() as u32).to_le_bytes())?;
                w.write_all(b)?;
            }
        }
    }
    Ok(())
}

/// Read one spooled record: its plan, and its values (still encoded) into `data`.
fn spool_read(r: &mut impl Read, data: &mut Vec<u8>) -> std::io::Result<Option<PlanId>> {
    let mut head = [0u8; 6];
    match r.read_exact(&mut head[..1]) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    r.read_exact(&mut head[1..])?;
    let plan = u32::from_le_bytes(head[..4].try_into().expect("4")) as PlanId;
    let n = u16::from_le_bytes(head[4..6].try_into().expect("2"));
    data.clear();
    data.extend_from_slice(&n.to_le_bytes());
    for _ in 0..n {
        let mut kind = [0u8; 1];
        r.read_exact(&mut kind)?;
        data.push(kind[0]);
        let mut w = [0u8; 8];
        if kind[0] == 2 {
            r.read_exact(&mut w[..4])?;
            let len = u32::from_le_bytes(w[..4].try_into().expect("4")) as usize;
            data.extend_from_slice(&w[..4]);
            let at = data.len();
            data.resize(at + len, 0);
            r.read_exact(&mut data[at..])?;
        } else {
            r.read_exact(&mut w)?;
            data.extend_from_slice(&w);
        }
    }
    Ok(Some(plan))
}

/// The values of a record read by [`spool_read`].
fn spool_values(data: &[u8]) -> Vec<FieldIn<'_>> {
    let n = u16::from_le_bytes([data[0], data[1]]) as usize;
    let mut out = Vec::with_capacity(n);
    let mut i = 2;
    for _ in 0..n {
        let kind = data[i];
        i += 1;
        if kind == 2 {
            let len = u32::from_le_bytes(data[i..i + 4].try_into().expect("4")) as usize;
            i += 4;
            out.push(FieldIn::Bytes(&data[i..i + len]));
            i += len;
        } else {
            let x = u64::from_le_bytes(data[i..i + 8].try_into().expect("8"));
            i += 8;
            out.push(if kind == 0 {
                FieldIn::Int(x)
            } else {
                FieldIn::Offset(x)
            });
        }
    }
    out
}

/// Write the pending `import_routed` record: the routed records read since the last record of
/// the part's section go here, in order.
fn flush_run<S: Sink>(
    sink: &mut S,
    run: &mut Option<(usize, u64)>,
    p_routed: Option<PlanId>,
) -> Result<(), SinkError> {
    if let (Some((target, count)), Some(plan)) = (run.take(), p_routed) {
        sink.write(plan, &[FieldIn::Int(target as u64), FieldIn::Int(count)])?;
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
    ins: &[FieldIn<'_>],
) -> Result<(), SinkError> {
    let size = sink.check(plan, ins)?;
    let r = &mut routed[t];
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
    let w = r.spool.as_mut().expect("spool");
    spool_write(w, plan, ins).map_err(|e| SinkError::Fatal(e.to_string()))?;
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

/// How well a mapping fits an input: (units matched, units sampled) over its first units.
pub fn score(m: &Mapping, path: &Path, sample: usize) -> (usize, usize) {
    if zipio::is_zip(path) {
        let Ok(file) = File::open(path) else {
            return (0, 0);
        };
        let Ok(mut z) = zipio::Reader::new(file) else {
            return (0, 0);
        };
        for i in 0..z.len() {
            let Ok((name, _, true)) = z.meta(i) else {
                continue;
            };
            if glob(&m.zip_entry, &name) {
                let Ok(r) = z.entry(i) else { return (0, 0) };
                return score_stream(m, &name, BufReader::new(r), sample);
            }
        }
        return (0, 0);
    }
    let base = path
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    match crate::io::Input::reader(path) {
        Ok(r) => score_stream(m, &base, r, sample),
        Err(_) => (0, 0),
    }
}

fn score_stream(m: &Mapping, name: &str, r: impl BufRead, sample: usize) -> (usize, usize) {
    let Some(pi) = m.part_for(name) else {
        return (0, 0);
    };
    let part = &m.parts[pi];
    let mut u = UnitReader::new(r, m.units == Units::Xml);
    let (mut matched, mut seen) = (0, 0);
    let mut vals = Vec::new();
    while seen < sample && matches!(u.next_unit(), Ok(true)) {
        seen += 1;
        let content = if m.units == Units::Xml {
            &u.buf[..]
        } else {
            u.split_line().0
        };
        if part
            .rules
            .iter()
            .any(|r| r.pattern.matches(content, &mut vals).is_some())
        {
            matched += 1;
        }
    }
    (matched, seen)
}

/// Order inputs by the mapping part that takes them (stable), so each section is written once.
pub fn order_inputs(m: &Mapping, inputs: &[PathBuf]) -> Vec<PathBuf> {
    let mut v: Vec<(usize, PathBuf)> = inputs
        .iter()
        .map(|p| {
            let base = p
                .file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            (m.part_for(&base).unwrap_or(usize::MAX), p.clone())
        })
        .collect();
    v.sort_by_key(|x| x.0);
    v.into_iter().map(|x| x.1).collect()
}
