//! The exporter: reads an imported trace through [`TraceSource`] and writes the foreign format
//! back, byte for byte: each record is rendered with its pattern, raw-line records are copied.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::mapping::{Mapping, Units};
use super::pattern::{FieldKind, Out};
use super::records::{self, Container, PartKind};
use super::sink::WriterSink;
use super::source::{Cursor, Rec, TraceSource};
use super::units::Eol;
use super::zipio;
use crate::decode::EventPasses;

/// Where export writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Standard output (`-o -`).
    Stdout,
    /// A file (or, for a trace of several plain files, a folder).
    Path(PathBuf),
}

/// What an export did.
#[derive(Debug, Clone, Default)]
pub struct ExportReport {
    /// The format name recorded in the trace.
    pub format: String,
    /// Files or ZIP entries written.
    pub parts: Vec<String>,
    /// Bytes written (uncompressed).
    pub bytes: u64,
    /// Records rendered from patterns.
    pub rendered: u64,
    /// Raw-line records copied.
    pub raw: u64,
}

/// The origin of an imported trace: its format name and mapping text, container and file count.
#[derive(Debug, Clone)]
pub struct Origin {
    /// Format name.
    pub format: String,
    /// Mapping text.
    pub mapping: String,
    /// What the input was.
    pub container: Container,
    /// Number of input files.
    pub files: u64,
}

/// Read the origin record of an imported trace (the first record of its global region).
pub fn origin(src: &TraceSource<'_>) -> Result<Origin, ExportError> {
    let mut found = None;
    let r = src.for_each(|rec| {
        if rec.name() == records::ORIGIN {
            let version = rec.int("version").unwrap_or(1);
            if version > records::VERSION {
                return Err(format!(
                    "`{}` version {version}: the trace was imported by a newer mtf (this one reads versions up to {})",
                    records::ORIGIN,
                    records::VERSION
                ));
            }
            let code = rec.int("container").unwrap_or(0);
            let Some(container) = Container::from_code(code) else {
                return Err(format!(
                    "`{}` names container {code}, which this version of mtf does not know",
                    records::ORIGIN
                ));
            };
            found = Some(Origin {
                format: String::from_utf8_lossy(rec.bytes("format.data").unwrap_or_default())
                    .into_owned(),
                mapping: String::from_utf8_lossy(rec.bytes("mapping.data").unwrap_or_default())
                    .into_owned(),
                container,
                files: rec.int("files").unwrap_or(1),
            });
        }
        Err(String::new()) // stop after the first record
    });
    match (found, r) {
        (Some(o), _) => Ok(o),
        (None, Err(e)) if !e.is_empty() => Err(ExportError::Trace(e)),
        _ => Err(ExportError::NotImported {
            trace: String::new(),
        }),
    }
}

enum Out2 {
    /// A plain file or standard output, written directly (devices, `-`) or to a temporary file
    /// renamed into place on commit (regular files).
    Plain(crate::io::Output),
    /// A ZIP archive being built in a scratch file (the ZIP writer seeks), copied to its target
    /// when complete.
    Zip(Box<zipio::Writer<crate::io::TempFile>>, PathBuf),
    None,
}

/// Why an export failed, told apart so that a command can say what happened: a request that
/// cannot be met, the output that could not be written (nothing to say on a closed pipe), or a
/// trace that cannot be exported.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
#[non_exhaustive]
pub enum ExportError {
    /// The output asked for does not suit the trace (a ZIP to standard output, several files to
    /// one file, a name that says another kind of file).
    #[error("{0}")]
    #[diagnostic(code(mtf::export::output))]
    Usage(String),
    /// The mapping is for another DTD than the trace's: its records are not the format's.
    #[error("the trace's DTD is {trace_dtd}, not {format_dtd}, the DTD of format `{format}`: its records are not {format} records")]
    #[diagnostic(
        code(mtf::export::wrong_dtd),
        help("export with the mapping stored in the trace (leave out --to and --map), or with a mapping for {trace_dtd}")
    )]
    WrongDtd {
        /// The DTD named in the trace's header.
        trace_dtd: String,
        /// The format of the mapping asked for.
        format: String,
        /// The DTD that mapping names.
        format_dtd: String,
    },
    /// The trace is valid but was not made by `mtf import`: there is nothing to export to.
    #[error(
        "{}the trace has no `import_origin` record: it was not made by `mtf import`",
        lead(trace)
    )]
    #[diagnostic(
        code(mtf::export::not_imported),
        help("`mtf export` writes back what `mtf import` read; for other traces use `mtf dump`, or `mtf export --to parquet`")
    )]
    NotImported {
        /// The trace's name as shown (may be empty).
        trace: String,
    },
    /// Writing the output failed.
    #[error("cannot write {target}: {source}")]
    #[diagnostic(code(mtf::export::write))]
    Write {
        /// The output, as shown to the user.
        target: String,
        /// What failed.
        source: std::io::Error,
    },
    /// The trace cannot be exported (not made by `mtf import`, damaged, a record no rule of the
    /// mapping renders).
    #[error("{0}")]
    #[diagnostic(code(mtf::export::trace))]
    Trace(String),
}

/// `name: `, or nothing for an empty name.
fn lead(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!("{name}: ")
    }
}

impl ExportError {
    /// Whether the output was a pipe whose reader went away (`mtf export T -o - | head`).
    pub fn is_closed_pipe(&self) -> bool {
        matches!(self, ExportError::Write { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// The class of the failure.
    pub fn class(&self) -> super::ErrorClass {
        match self {
            ExportError::Usage(_)
            | ExportError::WrongDtd { .. }
            | ExportError::NotImported { .. } => super::ErrorClass::Usage,
            ExportError::Write { .. } => super::ErrorClass::Io,
            ExportError::Trace(_) => super::ErrorClass::Input,
        }
    }
}

struct Writer {
    failed: Option<ExportError>,
    target: Target,
    zip: bool,
    multi: bool,
    out: Out2,
    pending: Vec<crate::io::Output>,
    current: Option<crate::io::Output>,
    bytes: u64,
    /// The ZIP entry begun and not yet started, and whether it is a folder.
    entry: Option<(zipio::EntryMeta, bool)>,
    /// The archive comment.
    comment: Option<Vec<u8>>,
}

impl Writer {
    /// The output as shown to the user.
    fn shown(&self) -> String {
        match &self.target {
            Target::Stdout => "standard output".to_string(),
            Target::Path(p) => crate::escape::escape_path(p).into_owned(),
        }
    }

    /// Record a write failure (typed) and give its text for the `String` error path.
    fn fail_io(&mut self, e: std::io::Error) -> String {
        let m = e.to_string();
        self.failed = Some(ExportError::Write {
            target: self.shown(),
            source: e,
        });
        m
    }

    /// Create an output file (a write failure when it cannot be).
    fn open(&mut self, path: &Path) -> Result<crate::io::Output, String> {
        crate::io::Output::create(path).map_err(|e| self.fail_io(std::io::Error::other(e)))
    }

    /// Record a usage failure.
    fn fail_usage(&mut self, m: &str) -> String {
        self.failed = Some(ExportError::Usage(m.to_string()));
        m.to_string()
    }

    fn begin(&mut self, name: &str, method: u64, dir: bool) -> Result<(), String> {
        if self.zip {
            if let Out2::None = self.out {
                let Target::Path(p) = &self.target else {
                    return Err(
                        self.fail_usage("a ZIP cannot be written to standard output; give -o FILE")
                    );
                };
                let folder = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() && d.is_dir() => d.to_path_buf(),
                    _ => std::env::temp_dir(),
                };
                // A folder that cannot take the ZIP is a write failure, as for a plain file.
                let scratch = match crate::io::TempFile::new_in(&folder) {
                    Ok(s) => s,
                    Err(e) => return Err(self.fail_io(std::io::Error::other(e))),
                };
                self.out = Out2::Zip(Box::new(zipio::Writer::new(scratch)), p.clone());
            }
            self.start_entry()?;
            let meta = zipio::EntryMeta {
                name: name.to_string(),
                method,
                is_file: !dir,
                ..Default::default()
            };
            self.entry = Some((meta, dir));
            return Ok(());
        }
        self.end_file()?;
        match (&self.target, self.multi) {
            (Target::Stdout, false) => {
                if let Out2::None = self.out {
                    let o = self.open(Path::new("-"))?;
                    self.out = Out2::Plain(o);
                }
            }
            (Target::Stdout, true) => {
                return Err(self.fail_usage("the trace holds several files: give -o FOLDER"))
            }
            (Target::Path(p), false) => {
                if !self.pending.is_empty() {
                    return Err(self.fail_usage("the trace holds several files: give -o FOLDER"));
                }
                let p = p.clone();
                self.current = Some(self.open(&p)?);
            }
            (Target::Path(dir), true) => {
                let dir = dir.clone();
                if let Err(e) = std::fs::create_dir_all(&dir) {
                    return Err(self.fail_io(e));
                }
                let base = Path::new(name)
                    .file_name()
                    .ok_or_else(|| format!("bad file name {name:?} in the trace"))?;
                self.current = Some(self.open(&dir.join(base))?);
            }
        }
        Ok(())
    }

    /// Start the ZIP entry begun last: its metadata (an `import_entry` record) is known once
    /// its first bytes come, or the next entry begins, or the archive ends.
    fn start_entry(&mut self) -> Result<(), String> {
        let Some((meta, dir)) = self.entry.take() else {
            return Ok(());
        };
        if let Out2::Zip(z, _) = &mut self.out {
            if let Err(e) = z.start(&meta, dir) {
                return Err(self.fail_io(e));
            }
        }
        Ok(())
    }

    fn write(&mut self, b: &[u8]) -> Result<(), String> {
        if b.is_empty() {
            return Ok(());
        }
        self.start_entry()?;
        self.bytes += b.len() as u64;
        let r = if let Some(w) = &mut self.current {
            w.write_all(b)
        } else {
            match &mut self.out {
                Out2::Plain(w) => w.write_all(b),
                Out2::Zip(z, _) => z.write_all(b),
                Out2::None => return Err("data before the first part record".into()),
            }
        };
        r.map_err(|e| self.fail_io(e))
    }

    fn end_file(&mut self) -> Result<(), String> {
        if let Some(w) = self.current.take() {
            self.pending.push(w);
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<u64, String> {
        self.end_file()?;
        self.start_entry()?;
        match std::mem::replace(&mut self.out, Out2::None) {
            Out2::Plain(w) => self.pending.push(w),
            Out2::Zip(mut z, p) => {
                if let Some(c) = &self.comment {
                    z.set_comment(c);
                }
                let copied = (|| {
                    let mut scratch = z.finish()?;
                    scratch.rewind()?;
                    let mut w = crate::io::Output::create(&p).map_err(std::io::Error::other)?;
                    std::io::copy(&mut scratch, &mut w)?;
                    Ok::<_, std::io::Error>(w)
                })();
                match copied {
                    Ok(w) => self.pending.push(w),
                    Err(e) => return Err(self.fail_io(e)),
                }
            }
            Out2::None => {}
        }
        // Everything is complete: flushed first, so that a full disk shows before any file is
        // renamed into place (a multi-file export never leaves files of two runs), then renamed.
        let mut pending: Vec<_> = self.pending.drain(..).collect();
        for w in &mut pending {
            if let Err(e) = std::io::Write::flush(w) {
                let e = w.error(e);
                return Err(self.fail_io(std::io::Error::other(e)));
            }
        }
        for w in pending {
            if let Err(e) = w.commit() {
                return Err(self.fail_io(std::io::Error::other(e)));
            }
        }
        Ok(self.bytes)
    }
}

struct PartState {
    rules: HashMap<u32, Vec<usize>>, // record id -> its rules, in order
    part: usize,
    eol: Eol,
}

/// Export an imported trace with `m` (normally the mapping stored in the trace).
pub fn export(
    src: &TraceSource<'_>,
    m: &Mapping,
    origin: &Origin,
    target: Target,
) -> Result<ExportReport, ExportError> {
    export_from(src, m, origin, target, &mut |consume| src.events(consume))
}

/// As [`export`], the records of the trace (but those of routed sections, read apart) read from
/// `events`, which must yield the events of `src`'s trace through `src.reader()`: the output is
/// the same, byte for byte, whatever decodes them.
pub fn export_from(
    src: &TraceSource<'_>,
    m: &Mapping,
    origin: &Origin,
    target: Target,
    events: &mut EventPasses<'_>,
) -> Result<ExportReport, ExportError> {
    // A mapping for another DTD would fail on the first record it cannot render, or worse,
    // render records of another format: compare the DTD names first.
    // (The trace's own format may be stored under another DTD name, as `mtf compact --split`
    // writes it: only a mapping of another format is checked.)
    let base = |s: &str| s.rsplit(['/', '\\']).next().unwrap_or(s).to_string();
    if m.name != origin.format && base(src.dtd_name()) != base(&m.dtd) {
        return Err(ExportError::WrongDtd {
            trace_dtd: base(src.dtd_name()),
            format: m.name.clone(),
            format_dtd: base(&m.dtd),
        });
    }
    check_target(origin, &target)?;
    let mut w = Writer {
        failed: None,
        target: target.clone(),
        zip: origin.container == Container::Zip,
        // Several plain files, or an existing folder as the target: one file per part in it.
        multi: origin.container != Container::Zip
            && (origin.files > 1 || matches!(&target, Target::Path(p) if p.is_dir())),
        out: Out2::None,
        pending: Vec::new(),
        current: None,
        bytes: 0,
        entry: None,
        comment: None,
    };
    match export_into(src, m, origin, &mut w, events) {
        Ok(rep) => Ok(rep),
        Err(message) => Err(w.failed.take().unwrap_or(ExportError::Trace(message))),
    }
}

/// Extensions of text files: a ZIP is not written under such a name.
const TEXT_EXTENSIONS: &[&str] = &[
    "txt", "log", "csv", "tsv", "xml", "json", "jsonl", "md", "text", "trace", "mtf",
];

/// Refuse an output name that does not fit what export writes: a ZIP under a text file's name,
/// several files under a name that is not a folder's.
fn check_target(origin: &Origin, target: &Target) -> Result<(), ExportError> {
    let Target::Path(p) = target else {
        return Ok(());
    };
    let shown = crate::escape::escape_path(p).into_owned();
    let ext = p
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if origin.container == Container::Zip {
        if p.is_dir() {
            return Err(ExportError::Usage(format!(
                "{shown} is a folder, and the trace was imported from a ZIP archive: give -o FILE.zip"
            )));
        }
        if let Some(e) = ext.as_deref().filter(|e| TEXT_EXTENSIONS.contains(e)) {
            return Err(ExportError::Usage(format!(
                "the trace was imported from a ZIP archive, so export writes a ZIP, not a .{e} file: give -o NAME.zip (or the archive's own extension)"
            )));
        }
        return Ok(());
    }
    if origin.files > 1 && !p.is_dir() {
        let slash = p.as_os_str().to_string_lossy().ends_with('/');
        if ext.is_some() && !slash {
            return Err(ExportError::Usage(format!(
                "the trace holds {} files, written into a folder: {shown} looks like a file name; give -o FOLDER (a name without an extension, an existing folder, or a name ending with /)",
                origin.files
            )));
        }
    }
    Ok(())
}

/// The state of one export between records: the report, the part being written, the line end
/// still owed, the routed sections' cursors.
struct Export<'a, 's> {
    m: &'a Mapping,
    schema: &'s crate::dtd::Schema,
    rep: ExportReport,
    xml: bool,
    /// The mapped part being written (`None` in a verbatim ZIP entry, or before a part).
    st: Option<PartState>,
    /// The line end owed before the next line (none after the last line of a part that had
    /// none).
    pending: &'static [u8],
    /// Scratch: the rendered unit.
    line: Vec<u8>,
    /// Per rule: the DTD field names of the pattern's fields.
    names: HashMap<(usize, usize), Vec<String>>,
    /// Routed sections (docs/mappings.md): read by one cursor each, their records put back
    /// where the `import_routed` records of the part's section say.
    routed: Vec<String>,
    routed_ids: Vec<u8>,
    cursors: Vec<Cursor<'a>>,
    /// Per routed section, the bytes read so far (`u64::MAX`: the `section` record comes
    /// first) and the offsets of its records (to turn a `ref` offset back into an index).
    sizes: Vec<u64>,
    offsets: Vec<Vec<u64>>,
}

fn export_into(
    src: &TraceSource<'_>,
    m: &Mapping,
    origin: &Origin,
    w: &mut Writer,
    events: &mut EventPasses<'_>,
) -> Result<ExportReport, String> {
    let mut x = Export::new(src, m, origin)?;
    let mut outcome = Ok(());
    events(&mut |stream| {
        outcome = src.for_each_of(stream, |rec| x.record(w, rec));
    });
    outcome?;
    w.write(x.pending)?;
    x.rep.bytes = w.finish()?;
    Ok(x.rep)
}

impl<'a, 's> Export<'a, 's> {
    fn new(
        src: &'a TraceSource<'s>,
        m: &'a Mapping,
        origin: &Origin,
    ) -> Result<Export<'a, 's>, String> {
        let schema = src.schema();
        let routed = m.routed();
        let mut routed_ids = Vec::new();
        let mut cursors = Vec::new();
        for n in &routed {
            let id = WriterSink::section_id(schema, n)
                .ok_or_else(|| format!("the DTD has no section `{n}`"))?;
            routed_ids.push(id);
            cursors.push(src.cursor(id));
        }
        Ok(Export {
            m,
            schema,
            rep: ExportReport {
                format: origin.format.clone(),
                ..Default::default()
            },
            xml: m.units == Units::Xml,
            st: None,
            pending: b"",
            line: Vec::with_capacity(256),
            names: HashMap::new(),
            sizes: vec![u64::MAX; routed.len()],
            offsets: vec![Vec::new(); routed.len()],
            routed,
            routed_ids,
            cursors,
        })
    }

    /// Write what record `rec` stands for.
    fn record(&mut self, w: &mut Writer, rec: &Rec<'_, '_>) -> Result<(), String> {
        match rec.name() {
            records::ORIGIN => Ok(()),
            records::PART => self.part(w, rec),
            records::CHUNK => w.write(rec.bytes("data.data").unwrap_or_default()),
            records::ENTRY => {
                entry_meta(w, rec);
                Ok(())
            }
            records::ARCHIVE => {
                w.comment = Some(rec.bytes("comment.data").unwrap_or_default().to_vec());
                Ok(())
            }
            records::RAW => {
                w.write(self.pending)?;
                self.pending = b"";
                self.rep.raw += 1;
                w.write(rec.bytes("line.data").unwrap_or_default())
            }
            records::NOEOL => {
                self.pending = b"";
                Ok(())
            }
            // Read through the cursors, at their `import_routed` records.
            _ if self.routed_ids.contains(&rec.section()) => Ok(()),
            records::ROUTED => self.routed_run(w, rec),
            _ => {
                let Some(ps) = self.st.as_mut() else {
                    // Records outside a mapped part: string tables and the like.
                    return Ok(());
                };
                let (m, schema) = (self.m, self.schema);
                let (names, line) = (&mut self.names, &mut self.line);
                if render(rec, ps, m, schema, names, &self.offsets, &self.routed, line)? {
                    self.emit(w)?;
                }
                Ok(())
            }
        }
    }

    /// An `import_part` record: the next file or ZIP entry begins.
    fn part(&mut self, w: &mut Writer, rec: &Rec<'_, '_>) -> Result<(), String> {
        w.write(self.pending)?;
        self.pending = b"";
        let code = rec.int("kind").unwrap_or(0);
        let Some(kind) = PartKind::from_code(code) else {
            return Err(format!(
                "`{}` of kind {code}, which this version of mtf does not know",
                records::PART
            ));
        };
        let name = String::from_utf8_lossy(rec.bytes("name.data").unwrap_or_default()).into_owned();
        let method = rec.int("method").unwrap_or(8);
        w.begin(&name, method, kind == PartKind::Dir)?;
        self.rep.parts.push(name);
        self.st = None;
        if kind == PartKind::Mapped {
            let part = rec.int("part").unwrap_or(0) as usize;
            if part >= self.m.parts.len() {
                return Err(format!("part #{part} is not in mapping `{}`", self.m.name));
            }
            self.st = Some(PartState {
                rules: HashMap::new(),
                part,
                eol: Eol::from_code(rec.int("eol").unwrap_or(0)),
            });
        }
        Ok(())
    }

    /// An `import_routed` record: the next records of a routed section, rendered here.
    fn routed_run(&mut self, w: &mut Writer, rec: &Rec<'_, '_>) -> Result<(), String> {
        let target = rec.int("target").unwrap_or(0) as usize;
        let count = rec.int("count").unwrap_or(0);
        if self.st.is_none() {
            return Err("routed records outside a mapped part".into());
        }
        if target >= self.cursors.len() {
            return Err(format!(
                "no routed section #{target} in mapping `{}`",
                self.m.name
            ));
        }
        let mut left = count;
        while left > 0 {
            match self.next_routed(target) {
                None => {
                    return Err(format!(
                        "section `{}` ends before its records do",
                        self.routed[target]
                    ))
                }
                Some(Err(e)) => return Err(e),
                Some(Ok(false)) => continue,
                Some(Ok(true)) => {}
            }
            left -= 1;
            self.emit(w)?;
        }
        Ok(())
    }

    /// Read the next record of routed section `target` and render it into `self.line`:
    /// whether it was one of the part's rules (`None` at the end of the section).
    fn next_routed(&mut self, target: usize) -> Option<Result<bool, String>> {
        let (m, schema) = (self.m, self.schema);
        let Export {
            st: Some(ps),
            cursors,
            sizes,
            offsets,
            names,
            routed,
            line,
            ..
        } = self
        else {
            return Some(Err("routed records outside a mapped part".into()));
        };
        cursors[target].next(|r| {
            // Offsets count from the end of the section's own `section` record.
            if sizes[target] == u64::MAX {
                sizes[target] = 0;
                return Ok(false);
            }
            let at = sizes[target];
            sizes[target] += r.size();
            let done = render(r, ps, m, schema, names, offsets, routed, line)?;
            if done {
                offsets[target].push(at);
            }
            Ok(done)
        })
    }

    /// Write the rendered unit after the line end owed.
    fn emit(&mut self, w: &mut Writer) -> Result<(), String> {
        w.write(self.pending)?;
        w.write(&self.line)?;
        self.pending = match &self.st {
            Some(ps) if !self.xml => ps.eol.bytes(),
            _ => b"",
        };
        self.rep.rendered += 1;
        Ok(())
    }
}

/// An `import_entry` record: the metadata of the ZIP entry being written.
fn entry_meta(w: &mut Writer, rec: &Rec<'_, '_>) {
    if let Some((e, _)) = &mut w.entry {
        let int = |n: &str| rec.int(n).unwrap_or(0);
        let bytes = |n: &str| rec.bytes(n).unwrap_or_default().to_vec();
        e.time = int("time") as u32;
        e.attrs = int("attrs") as u32;
        e.made_by = int("madeby") as u16;
        e.local_extra = bytes("extra.data");
        e.central_extra = bytes("central.data");
        e.comment = bytes("comment.data");
    }
}

/// Render a record of the part's rules into `line` (with the part's line ends inside a
/// multi-line unit); `false` when the record is not one of them (metadata and the like).
#[allow(clippy::too_many_arguments)]
fn render(
    rec: &Rec<'_, '_>,
    ps: &mut PartState,
    m: &Mapping,
    schema: &crate::dtd::Schema,
    names: &mut HashMap<(usize, usize), Vec<String>>,
    offsets: &[Vec<u64>],
    routed: &[String],
    line: &mut Vec<u8>,
) -> Result<bool, String> {
    let xml = m.units == Units::Xml;
    let part = &m.parts[ps.part];
    let rid = rec.record_id();
    let cands = ps.rules.entry(rid).or_insert_with(|| {
        // The records of `implied` rules were written from the mapping, not read: left out.
        (0..part.rules.len())
            .filter(|&r| part.rules[r].record == rec.name() && !part.rules[r].implied)
            .collect()
    });
    if cands.is_empty() {
        return Ok(false); // not a line record of this part (e.g. metadata)
    }
    // The first rule of this record type that applies to its values (docs/mappings.md).
    let mut chosen = None;
    for &ri in cands.iter() {
        let rule = &part.rules[ri];
        if cands.len() > 1 || !rule.set.is_empty() || !rule.when.is_empty() {
            let get = |n: &str| -> u64 {
                WriterSink::slot_name(schema, rid, n)
                    .and_then(|s| rec.int(&s))
                    .unwrap_or(0)
            };
            if !rule.applies(&get) {
                continue;
            }
        }
        chosen = Some(ri);
        break;
    }
    let ri = chosen.ok_or_else(|| {
        format!(
            "record `{}`: none of its patterns applies to its values",
            rec.name()
        )
    })?;
    let rule = &part.rules[ri];
    let fnames = names.entry((ps.part, ri)).or_insert_with(|| {
        rule.pattern
            .fields
            .iter()
            .map(|f| WriterSink::slot_name(schema, rid, &f.name).unwrap_or_else(|| f.name.clone()))
            .collect()
    });
    let mut vals: Vec<Out> = Vec::with_capacity(fnames.len());
    for (f, n) in rule.pattern.fields.iter().zip(fnames.iter()) {
        vals.push(match f.kind {
                FieldKind::Int => match rule.refs.iter().find(|(r, _)| *r == f.name) {
                    // `ref`: the offset back to the 1-based index of the record it points at.
                    Some((_, sec)) => {
                        let t = routed.iter().position(|x| x == sec).unwrap_or(0);
                        let off = rec.ref_offset(n).ok_or_else(|| {
                            format!("record `{}`: field `{n}` is not a section offset", rec.name())
                        })?;
                        match offsets.get(t).map(|o| o.binary_search(&off)) {
                            Some(Ok(i)) => Out::Int(i as u64 + 1),
                            _ => {
                                return Err(format!(
                                    "record `{}`: field `{n}` points at offset {off} of section `{sec}`, where no earlier record starts",
                                    rec.name()
                                ))
                            }
                        }
                    }
                    None => Out::Int(rec_int(rec, n)?),
                },
                FieldKind::Interned(_) | FieldKind::Inline => {
                    Out::Bytes(rec.bytes(n).ok_or_else(|| {
                        format!("record `{}`: field `{n}` has no string", rec.name())
                    })?)
                }
            });
    }
    // The repeated group's items: every occurrence of its fields, item by item.
    if let Some(r) = &rule.pattern.repeat {
        let at = vals.len();
        for (j, f) in r.fields.iter().enumerate() {
            let slot = repeat_slot(schema, rid, &r.name, &f.name);
            let mut k = 0;
            for x in rec.ints_all(&slot) {
                let i = at + k * r.fields.len() + j;
                if j == 0 {
                    vals.resize(i + r.fields.len(), Out::Int(0));
                } else if i >= vals.len() {
                    return Err(format!(
                        "record `{}`: the items of `{}` do not all have field `{}`",
                        rec.name(),
                        r.name,
                        f.name
                    ));
                }
                vals[i] = Out::Int(x);
                k += 1;
            }
            if j > 0 && at + k * r.fields.len() != vals.len() {
                return Err(format!(
                    "record `{}`: the items of `{}` do not all have field `{}`",
                    rec.name(),
                    r.name,
                    f.name
                ));
            }
        }
    }
    let v = rule
        .pattern
        .variant_for(&|i| match vals[i] {
            Out::Int(x) => Some(x),
            _ => None,
        })
        .ok_or_else(|| format!("record `{}`: no variant of its pattern fits", rec.name()))?;
    line.clear();
    rule.pattern.render(v, &vals, line)?;
    if !xml && rule.pattern.lines > 1 && ps.eol == Eol::CrLf {
        // The lines of a multi-line unit end like the part's lines.
        let mut crlf = Vec::with_capacity(line.len() + rule.pattern.lines);
        for &c in line.iter() {
            if c == b'\n' {
                crlf.push(b'\r');
            }
            crlf.push(c);
        }
        *line = crlf;
    }
    Ok(true)
}

/// The DTD slot name of field `field` of the items of repeat `list` (`inl.function`; the
/// repeat's own name for a repeat of one scalar field).
pub(crate) fn repeat_slot(
    schema: &crate::dtd::Schema,
    rid: crate::dtd::RecordId,
    list: &str,
    field: &str,
) -> String {
    let rt = schema.record(rid);
    let inner = format!("{list}.{field}");
    if rt.slots.iter().any(|s| s.name == inner) || list != field {
        inner
    } else {
        list.to_string()
    }
}

fn rec_int(rec: &Rec<'_, '_>, n: &str) -> Result<u64, String> {
    rec.int(n)
        .ok_or_else(|| format!("record `{}`: field `{n}` is not an integer", rec.name()))
}
