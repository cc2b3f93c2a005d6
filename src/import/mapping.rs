//! The format-mapping language (docs/mappings.md): a small line-oriented text file that says
//! how the units of a foreign text format (lines, or XML tags and text) become records of a
//! Meta-TF DTD and back.
//!
//! ```text
//! format  NAME                      # the format's name (`mtf import --from NAME`)
//! describe 'TEXT'                   # one line for `mtf import --list`
//! dtd     FILE.dtd                  # the DTD the records belong to
//! units   lines | xml               # how input is cut into units (default: lines)
//! zip-entry 'GLOB'                  # in a ZIP input, the entries that are mapped
//! refuse  'GLOB' 'MESSAGE'          # an input of that name is refused with the message
//! table   SECTION RECORD FIELD      # a string table; the first is the default for `str`
//! part    NAME [file 'GLOB'] section SECTION
//! header  N                         # the part's first N units try only `head` patterns
//! record  RECORD 'PATTERN'          # a unit matching PATTERN becomes a RECORD
//! head    RECORD 'PATTERN'          # the same, only within the header block
//! ```

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use miette::{Diagnostic, NamedSource, SourceSpan};

use super::pattern::{FieldKind, Pattern};

/// How input is cut into units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    /// One unit per line; the line end is kept apart (LF or CRLF).
    Lines,
    /// XML: one unit per tag (`<…>`) and per text run between tags.
    Xml,
}

/// A string table: interned tokens are written as records of `record` in `section`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Section name in the DTD.
    pub section: String,
    /// Record type written for each distinct string.
    pub record: String,
    /// Its byte-string field holding the string.
    pub field: String,
}

/// A comparison of a `when` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// The right side of a condition: a number or another field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operand {
    /// A constant.
    Num(u64),
    /// A field's value.
    Field(String),
}

/// One `when` condition: `FIELD OP VALUE` (unsigned comparison).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cond {
    /// The field on the left.
    pub field: String,
    /// The comparison.
    pub op: Op,
    /// The right side.
    pub rhs: Operand,
}

/// One pattern rule of a part.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The record type it produces.
    pub record: String,
    /// Only tried within the header block.
    pub head: bool,
    /// The compiled pattern.
    pub pattern: Pattern,
    /// 1-based line of the rule in the mapping file.
    pub line: usize,
    /// `set F=N`: integer fields the rule gives a constant value (not in the pattern).
    pub set: Vec<(String, u64)>,
    /// `when …`: conditions on the record's values; all must hold.
    pub when: Vec<Cond>,
    /// `record R section S '…'`: the records go to section `S` instead of the part's section
    /// (routed: spooled while importing, written after the data sections, and put back in
    /// file order by export).
    pub section: Option<String>,
    /// `ref F=S`: the integer field `F` holds a 1-based index of a record routed to section
    /// `S` (the rule's own routed section), stored as a `sectionOffset` to that record.
    pub refs: Vec<(String, String)>,
    /// `keep F`: the integer field `F`, which the pattern does not read, takes the value field
    /// `F` had in the last record of the part that had one (0 before any): a value the format
    /// leaves out because the line before gave it (malloc-lab's `a ID` with no size).
    pub keep: Vec<String>,
}

impl Rule {
    /// Whether this rule may stand for a record with these integer values (by field name;
    /// fields the record does not have are 0): its `set` constants are the values, its `when`
    /// conditions hold and every `one(…)` index is in range. Export renders a record with the
    /// first rule of its record type that applies; import takes a unit with a rule only when
    /// no earlier rule of the same record type applies to the values read.
    pub fn applies(&self, get: &dyn Fn(&str) -> u64) -> bool {
        self.set.iter().all(|(f, v)| get(f) == *v)
            && self.when.iter().all(|c| {
                let (a, b) = (
                    get(&c.field),
                    match &c.rhs {
                        Operand::Num(n) => *n,
                        Operand::Field(f) => get(f),
                    },
                );
                match c.op {
                    Op::Eq => a == b,
                    Op::Ne => a != b,
                    Op::Lt => a < b,
                    Op::Le => a <= b,
                    Op::Gt => a > b,
                    Op::Ge => a >= b,
                }
            })
            && self
                .pattern
                .fields
                .iter()
                .all(|f| f.choices == 0 || get(&f.name) < f.choices as u64)
    }
}

fn parse_number(s: &str) -> Option<u64> {
    match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

fn parse_cond(s: &str) -> Result<Cond, String> {
    let ops = [
        ("!=", Op::Ne),
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("=", Op::Eq),
        ("<", Op::Lt),
        (">", Op::Gt),
    ];
    for (t, op) in ops {
        if let Some((l, r)) = s.split_once(t) {
            if l.is_empty() || r.is_empty() {
                break;
            }
            let rhs = match parse_number(r) {
                Some(n) => Operand::Num(n),
                None if r
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.') =>
                {
                    Operand::Field(r.to_string())
                }
                None => break,
            };
            return Ok(Cond {
                field: l.to_string(),
                op,
                rhs,
            });
        }
    }
    Err(format!(
        "`{s}` is not a condition: write FIELD=VALUE, !=, <, <=, > or >= with no spaces"
    ))
}

/// A part: one kind of input file (or ZIP entry) and its patterns.
#[derive(Debug, Clone)]
pub struct Part {
    /// Name.
    pub name: String,
    /// File-name glob selecting inputs for this part (`None`: every input no other part takes).
    pub file: Option<String>,
    /// Section its records go to.
    pub section: String,
    /// Units at the start that form the header block.
    pub header: usize,
    /// `limit F`: the part takes at most as many units after the header as the header record's
    /// integer field `F` says (malloc-lab's operation count); later units are kept raw.
    pub limit: Option<String>,
    /// Rules in order: the first that matches and renders back identically wins.
    pub rules: Vec<Rule>,
}

impl Part {
    /// The fields of the part's `keep` options, each once, in order of first appearance.
    pub fn kept(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for f in self.rules.iter().flat_map(|r| &r.keep) {
            if !v.contains(f) {
                v.push(f.clone());
            }
        }
        v
    }

    /// The fields every rule of record type `record` in this part writes: the union of their
    /// pattern and `set` fields, in order of first appearance, with their kinds (a `set`
    /// field is an integer). The rules of one record type agree on the kinds (checked by
    /// [`Mapping::parse`]).
    pub fn fields_of(&self, record: &str) -> (Vec<String>, Vec<FieldKind>) {
        let mut names: Vec<String> = Vec::new();
        let mut kinds: Vec<FieldKind> = Vec::new();
        for r in self.rules.iter().filter(|r| r.record == record) {
            let more = r.pattern.fields.iter().map(|f| (&f.name, f.kind.clone()));
            let sets = r.set.iter().map(|(f, _)| (f, FieldKind::Int));
            let kept = r.keep.iter().map(|f| (f, FieldKind::Int));
            for (n, k) in more.chain(sets).chain(kept) {
                if !names.contains(n) {
                    names.push(n.clone());
                    kinds.push(k);
                }
            }
        }
        (names, kinds)
    }
}

/// A parsed mapping.
#[derive(Debug, Clone)]
pub struct Mapping {
    /// Format name.
    pub name: String,
    /// One-line description.
    pub describe: String,
    /// DTD file name.
    pub dtd: String,
    /// Unit kind.
    pub units: Units,
    /// Glob of the ZIP entries that are mapped (others are kept verbatim).
    pub zip_entry: String,
    /// String tables.
    pub tables: Vec<Table>,
    /// Inputs refused by file name (`refuse 'GLOB' 'MESSAGE'`): files of a kind the format
    /// has but the mapping cannot read, refused rather than imported as lines of a part.
    pub refuse: Vec<(String, String)>,
    /// Parts.
    pub parts: Vec<Part>,
    /// The mapping text (stored in imported traces so export needs nothing else).
    pub text: Arc<str>,
}

/// The largest mapping file read (a mapping is a few hundred lines).
pub const MAX_MAPPING_BYTES: u64 = 1 << 20;

/// Why a mapping file could not be loaded.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[non_exhaustive]
pub enum MappingLoadError {
    /// The file could not be read, is too large or is not UTF-8.
    #[error("cannot read mapping {path}: {message}")]
    #[diagnostic(code(mtf::import::mapping_io))]
    Read {
        /// The file, as given.
        path: String,
        /// What failed.
        message: String,
    },
    /// The mapping has an error.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Parse(Box<MapError>),
}

/// Why the DTD of a mapping could not be loaded.
#[derive(Debug, thiserror::Error, Diagnostic)]
#[non_exhaustive]
pub enum MappingDtdError {
    /// The DTD file could not be loaded.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Load(#[from] crate::dtd::DtdLoadError),
    /// Neither beside the mapping nor among the shipped DTDs.
    #[error("DTD {dtd} of mapping `{mapping}` not found")]
    #[diagnostic(
        code(mtf::import::dtd_not_found),
        help("put it beside the mapping file, or give --dtd")
    )]
    NotFound {
        /// The DTD the mapping names.
        dtd: String,
        /// The mapping's format name.
        mapping: String,
    },
    /// The name or the file it leads to may not be used (docs/format.md §10).
    #[error("DTD {dtd} of mapping `{mapping}` is not used: {why}")]
    #[diagnostic(
        code(mtf::import::dtd_refused),
        help("a mapping names a DTD file beside it (a name ending in .dtd, no folder); give another one with --dtd")
    )]
    Refused {
        /// The DTD the mapping names (escaped for a terminal).
        dtd: String,
        /// The mapping's format name.
        mapping: String,
        /// Why.
        why: String,
    },
}

/// A problem in a mapping file, with its position.
#[derive(Debug, Clone, thiserror::Error, Diagnostic)]
#[error("{file}:{line}:{col}: {message}")]
#[diagnostic(code(mtf::import::mapping), help("see docs/mappings.md"))]
pub struct MapError {
    /// Mapping file name.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub col: usize,
    /// What is wrong.
    pub message: String,
    /// The mapping source.
    #[source_code]
    pub src: NamedSource<Arc<str>>,
    /// Where.
    #[label("here")]
    pub span: SourceSpan,
}

struct Word {
    text: String,
    raw: String,
    quoted: bool,
    at: usize, // byte offset in the file
}

fn unescape(s: &str, pattern: bool) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('\\') if pattern => out.push_str("\\\\"),
            Some('\\') => out.push('\\'),
            Some('\'') => out.push('\''),
            Some('"') => out.push('"'),
            // In patterns, `\{ \} \[ \]` and `\\` are left for the pattern compiler.
            Some(c @ ('{' | '}' | '[' | ']')) if pattern => {
                out.push('\\');
                out.push(c);
            }
            Some(c @ ('{' | '}' | '[' | ']')) => out.push(c),
            Some(o) => return Err(format!("unknown escape `\\{o}`")),
            None => return Err("`\\` at the end of a string".into()),
        }
    }
    Ok(out)
}

fn words(line: &str, base: usize) -> Result<Vec<Word>, (usize, String)> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b' ' || c == b'\t' || c == b'\r' {
            i += 1;
        } else if c == b'#' {
            break;
        } else if c == b'\'' || c == b'"' {
            let start = i;
            i += 1;
            let mut esc = false;
            while i < b.len() && (esc || b[i] != c) {
                esc = !esc && b[i] == b'\\';
                i += 1;
            }
            if i >= b.len() {
                return Err((base + start, "unterminated string".into()));
            }
            let raw = line[start + 1..i].to_string();
            let text = unescape(&raw, false).map_err(|m| (base + start, m))?;
            out.push(Word {
                text,
                raw,
                quoted: true,
                at: base + start,
            });
            i += 1;
        } else {
            let start = i;
            while i < b.len() && !matches!(b[i], b' ' | b'\t' | b'\r' | b'#') {
                i += 1;
            }
            out.push(Word {
                text: line[start..i].to_string(),
                raw: String::new(),
                quoted: false,
                at: base + start,
            });
        }
    }
    Ok(out)
}

/// The mapping being parsed: the directives read so far, and how to report a position.
struct Parser<'t> {
    file: &'t str,
    text: &'t str,
    src: Arc<str>,
    m: Mapping,
}

type Parsed<T> = Result<T, Box<MapError>>;

/// One directive: its first word and the words after it.
struct Directive<'w> {
    first: &'w Word,
    args: &'w [Word],
    /// The whole line (for spans).
    line: &'w str,
    /// 1-based line number.
    lineno: usize,
}

impl Parser<'_> {
    fn fail(&self, at: usize, len: usize, message: String) -> Box<MapError> {
        let text = self.text;
        let line = text[..at].matches('\n').count() + 1;
        let col = at - text[..at].rfind('\n').map(|k| k + 1).unwrap_or(0) + 1;
        Box::new(MapError {
            file: self.file.to_string(),
            line,
            col,
            message,
            src: NamedSource::new(self.file, self.src.clone()),
            span: (at, len.max(1)).into(),
        })
    }

    fn want(&self, d: &Directive<'_>, n: usize, what: &str) -> Parsed<()> {
        if d.args.len() != n {
            return Err(self.fail(
                d.first.at,
                d.first.text.len(),
                format!("`{}` takes {what}", d.first.text),
            ));
        }
        Ok(())
    }

    fn plain(&self, w: &Word) -> Parsed<String> {
        if w.quoted || w.text.is_empty() {
            return Err(self.fail(w.at, w.text.len(), "expected a name, not a string".into()));
        }
        Ok(w.text.clone())
    }

    fn directive(&mut self, d: &Directive<'_>) -> Parsed<()> {
        match d.first.text.as_str() {
            "format" => {
                self.want(d, 1, "a name")?;
                self.m.name = self.plain(&d.args[0])?;
            }
            "describe" => {
                self.want(d, 1, "one quoted string")?;
                self.m.describe = d.args[0].text.clone();
            }
            "dtd" => {
                self.want(d, 1, "a DTD file name")?;
                self.m.dtd = d.args[0].text.clone();
            }
            "units" => self.units(d)?,
            "zip-entry" => {
                self.want(d, 1, "a quoted glob")?;
                self.m.zip_entry = d.args[0].text.clone();
            }
            "refuse" => {
                self.want(d, 2, "a quoted glob and a quoted message")?;
                let g = d.args[0].text.clone();
                self.m.refuse.push((g, d.args[1].text.clone()));
            }
            "table" => {
                self.want(d, 3, "a section, a record and its string field")?;
                let t = Table {
                    section: self.plain(&d.args[0])?,
                    record: self.plain(&d.args[1])?,
                    field: self.plain(&d.args[2])?,
                };
                self.m.tables.push(t);
            }
            "part" => self.part(d)?,
            "header" => self.header(d)?,
            "limit" => {
                self.want(d, 1, "a field of the part's header records")?;
                let f = self.plain(&d.args[0])?;
                match self.m.parts.last_mut() {
                    Some(part) => part.limit = Some(f),
                    None => {
                        return Err(self.fail(
                            d.first.at,
                            5,
                            "`limit` belongs to a part: write `part` first".into(),
                        ))
                    }
                }
            }
            "record" | "head" => self.rule(d)?,
            o => return Err(self.fail(d.first.at, o.len(), format!("unknown directive `{o}`"))),
        }
        Ok(())
    }

    fn units(&mut self, d: &Directive<'_>) -> Parsed<()> {
        self.want(d, 1, "`lines` or `xml`")?;
        self.m.units = match d.args[0].text.as_str() {
            "lines" => Units::Lines,
            "xml" => Units::Xml,
            o => {
                return Err(self.fail(
                    d.args[0].at,
                    o.len(),
                    format!("unknown units `{o}`: lines or xml"),
                ))
            }
        };
        Ok(())
    }

    /// `part NAME [file 'GLOB'] section SECTION`
    fn part(&mut self, d: &Directive<'_>) -> Parsed<()> {
        let bad = || {
            self.fail(
                d.first.at,
                d.line.len(),
                "write `part NAME [file 'GLOB'] section SECTION`".into(),
            )
        };
        let (name, rest) = d.args.split_first().ok_or_else(bad)?;
        let (file, rest) = match rest {
            [f, g, rest @ ..] if !f.quoted && f.text == "file" => (Some(g.text.clone()), rest),
            _ => (None, rest),
        };
        let section = match rest {
            [s, n] if !s.quoted && s.text == "section" => self.plain(n)?,
            _ => return Err(bad()),
        };
        let name_at = name.at;
        let name = self.plain(name)?;
        if self.m.parts.iter().any(|p| p.name == name) {
            return Err(self.fail(name_at, name.len(), format!("part `{name}` defined twice")));
        }
        if file.is_none() && self.m.parts.iter().any(|p| p.file.is_none()) {
            return Err(self.fail(
                d.first.at,
                d.line.len(),
                "only one part may leave out `file`".into(),
            ));
        }
        self.m.parts.push(Part {
            name,
            file,
            section,
            header: 0,
            limit: None,
            rules: Vec::new(),
        });
        Ok(())
    }

    /// `header N`
    fn header(&mut self, d: &Directive<'_>) -> Parsed<()> {
        self.want(d, 1, "a number of units")?;
        let a = &d.args[0];
        let n = a
            .text
            .parse::<usize>()
            .map_err(|_| self.fail(a.at, a.text.len(), "expected a number".into()))?;
        if self.m.parts.is_empty() {
            return Err(self.fail(
                d.first.at,
                6,
                "`header` belongs to a part: write `part` first".into(),
            ));
        }
        if let Some(part) = self.m.parts.last_mut() {
            part.header = n;
        }
        Ok(())
    }

    /// `record RECORD [section SECTION] 'PATTERN' [set …] [when …] [ref …]` or `head …`
    fn rule(&mut self, d: &Directive<'_>) -> Parsed<()> {
        if d.args.len() < 2 {
            self.want(d, 2, "a record name and a quoted pattern")?;
        }
        let head = d.first.text == "head";
        let record = self.plain(&d.args[0])?;
        // `record R section S 'PATTERN' …`: the records go to a section of their own.
        let mut routed = None;
        let mut args = d.args;
        if args.len() >= 4 && !args[1].quoted && args[1].text == "section" {
            if head {
                return Err(self.fail(
                    args[1].at,
                    7,
                    "`section` is for `record` rules, not `head`".into(),
                ));
            }
            let sec = self.plain(&args[2])?;
            if self.m.tables.iter().any(|t| t.section == sec) {
                return Err(self.fail(
                    args[2].at,
                    sec.len(),
                    format!("section `{sec}` is a string table"),
                ));
            }
            routed = Some(sec);
            args = &args[2..];
        }
        let pattern = self.pattern(&args[1])?;
        let (set, when, refs, keep) =
            self.rule_options(&record, &pattern, routed.as_deref(), &args[2..])?;
        if self.m.parts.is_empty() {
            return Err(self.fail(
                d.first.at,
                d.first.text.len(),
                "patterns belong to a part: write `part NAME section SECTION` first".into(),
            ));
        }
        let rule = Rule {
            record,
            head,
            pattern,
            line: d.lineno,
            set,
            when,
            section: routed,
            refs,
            keep,
        };
        self.check_rule(&rule, &d.args[0])?;
        if let Some(part) = self.m.parts.last_mut() {
            part.rules.push(rule);
        }
        Ok(())
    }

    fn pattern(&self, w: &Word) -> Parsed<Pattern> {
        if !w.quoted {
            return Err(self.fail(w.at, w.text.len(), "the pattern must be quoted".into()));
        }
        let tables = &self.m.tables;
        let lookup = |t: Option<&str>| -> Result<usize, String> {
            match t {
                None if tables.is_empty() => {
                    Err("`str` needs a `table` line before the patterns".into())
                }
                None => Ok(0),
                Some(n) => tables
                    .iter()
                    .position(|x| x.section == n)
                    .ok_or_else(|| format!("no `table {n} …` line")),
            }
        };
        let ptext = unescape(&w.raw, true).map_err(|msg| self.fail(w.at, 1, msg))?;
        Pattern::compile(ptext.as_bytes(), &lookup)
            .map_err(|e| self.fail(w.at + 1 + e.at.min(w.raw.len()), 1, e.message))
    }

    /// `set F=N …`, `when COND …`, `ref F=SECTION …` and `keep F …` after a pattern.
    #[allow(clippy::type_complexity)]
    fn rule_options(
        &self,
        record: &str,
        pattern: &Pattern,
        routed: Option<&str>,
        words: &[Word],
    ) -> Parsed<(
        Vec<(String, u64)>,
        Vec<Cond>,
        Vec<(String, String)>,
        Vec<String>,
    )> {
        let (mut set, mut when, mut refs) = (Vec::new(), Vec::new(), Vec::new());
        let mut keep: Vec<String> = Vec::new();
        let mut mode = "";
        for w in words {
            if !w.quoted && matches!(w.text.as_str(), "set" | "when" | "ref" | "keep") {
                mode = match w.text.as_str() {
                    "set" => "set",
                    "when" => "when",
                    "keep" => "keep",
                    _ => "ref",
                };
                continue;
            }
            let bad = |msg: String| self.fail(w.at, w.text.len(), msg);
            match mode {
                "set" => {
                    let (f, v) = w
                        .text
                        .split_once('=')
                        .and_then(|(f, v)| Some((f, parse_number(v)?)))
                        .ok_or_else(|| bad("write `set FIELD=NUMBER`".into()))?;
                    if pattern.fields.iter().any(|x| x.name == f) {
                        return Err(bad(format!(
                            "`{f}` is a field of the pattern; `set` gives fields the pattern does not read"
                        )));
                    }
                    set.push((f.to_string(), v));
                }
                "when" => when.push(parse_cond(&w.text).map_err(bad)?),
                "ref" => {
                    let (f, sec) = w
                        .text
                        .split_once('=')
                        .ok_or_else(|| bad("write `ref FIELD=SECTION`".into()))?;
                    let is_int = pattern
                        .fields
                        .iter()
                        .any(|x| x.name == f && x.kind == FieldKind::Int);
                    if !is_int {
                        return Err(bad(format!("`{f}` is not a number field of the pattern")));
                    }
                    if routed != Some(sec) {
                        return Err(bad(format!(
                            "`ref` points into the rule's own section: write `record {record} section {sec} '…'`"
                        )));
                    }
                    refs.push((f.to_string(), sec.to_string()));
                }
                "keep" => {
                    let f = w.text.as_str();
                    let named = pattern.fields.iter().any(|x| x.name == f)
                        || set.iter().any(|(x, _)| x == f);
                    if named || !f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                        return Err(bad(format!(
                            "`keep {f}`: name a field that neither the pattern nor `set` gives"
                        )));
                    }
                    keep.push(f.to_string());
                }
                _ => return Err(bad(
                    "after the pattern: `set FIELD=N …`, `when CONDITION …`, `ref FIELD=SECTION` or `keep FIELD`"
                        .into(),
                )),
            }
        }
        Ok((set, when, refs, keep))
    }

    /// A rule against the earlier rules of its record type in the part: export must be able
    /// to choose among them, and they must agree on the section and the fields' kinds.
    fn check_rule(&self, rule: &Rule, at: &Word) -> Parsed<()> {
        let Some(part) = self.m.parts.last() else {
            return Ok(());
        };
        let record = &rule.record;
        let fail = |msg: String| self.fail(at.at, record.len(), msg);
        // Several patterns for one record type: every one but the last must say by `set` or
        // `when` when it applies, so export can choose.
        let same = || part.rules.iter().filter(|r| &r.record == record);
        if let Some(prev) = same().find(|r| r.set.is_empty() && r.when.is_empty()) {
            return Err(fail(format!("record `{record}` already has a pattern without `set` or `when` in this part (line {}): only the last pattern of a record may leave them out", prev.line)));
        }
        if let Some(prev) = same().find(|r| r.section != rule.section) {
            return Err(fail(format!(
                "the rules of record `{record}` name different sections (line {} and this one)",
                prev.line
            )));
        }
        let (names, kinds) = part.fields_of(record);
        let mine = rule.pattern.fields.iter().map(|f| (&f.name, &f.kind));
        let sets = rule.set.iter().map(|(f, _)| (f, &FieldKind::Int));
        let kept = rule.keep.iter().map(|f| (f, &FieldKind::Int));
        for (n, k) in mine.chain(sets).chain(kept) {
            if let Some(i) = names.iter().position(|x| x == n) {
                if &kinds[i] != k {
                    return Err(fail(format!(
                        "field `{n}` of record `{record}` has a different type in another pattern of the record"
                    )));
                }
            }
        }
        Ok(())
    }

    /// What the whole mapping must have.
    fn finish(self) -> Parsed<Mapping> {
        let m = &self.m;
        let end = self.text.len().saturating_sub(1);
        if m.name.is_empty() {
            return Err(self.fail(0, 1, "the mapping needs a `format NAME` line".into()));
        }
        if m.dtd.is_empty() {
            return Err(self.fail(0, 1, "the mapping needs a `dtd FILE` line".into()));
        }
        if m.parts.is_empty() {
            return Err(self.fail(end, 1, "the mapping has no `part`".into()));
        }
        for p in &m.parts {
            if let Some(f) = &p.limit {
                let named = p.rules.iter().any(|r| {
                    r.head
                        && r.pattern
                            .fields
                            .iter()
                            .any(|x| &x.name == f && x.kind == FieldKind::Int)
                });
                if !named {
                    return Err(self.fail(
                        0,
                        1,
                        format!(
                            "part `{}`: `limit {f}` names no number field of a `head` pattern",
                            p.name
                        ),
                    ));
                }
            }
        }
        for r in m.parts.iter().flat_map(|p| &p.rules) {
            if let Some(sec) = &r.section {
                if m.parts.iter().any(|p| &p.section == sec) {
                    return Err(self.fail(
                        0,
                        1,
                        format!(
                            "line {}: section `{sec}` is a part's section; a routed record needs a section of its own",
                            r.line
                        ),
                    ));
                }
            }
        }
        Ok(self.m)
    }
}

impl Mapping {
    /// Parse a mapping from its text; `file` names it in errors. Every rule is checked here,
    /// so an import with a parsed mapping fails only on its DTD or its input.
    pub fn parse(file: &str, text: &str) -> Result<Mapping, Box<MapError>> {
        let src: Arc<str> = Arc::from(text);
        let mut p = Parser {
            file,
            text,
            src: src.clone(),
            m: Mapping {
                name: String::new(),
                describe: String::new(),
                dtd: String::new(),
                units: Units::Lines,
                zip_entry: "*".into(),
                tables: Vec::new(),
                refuse: Vec::new(),
                parts: Vec::new(),
                text: src,
            },
        };
        let mut offset = 0;
        for (lineno, line) in text.split('\n').enumerate() {
            let base = offset;
            offset += line.len() + 1;
            let ws = words(line, base).map_err(|(at, msg)| p.fail(at, 1, msg))?;
            let Some((first, args)) = ws.split_first() else {
                continue;
            };
            p.directive(&Directive {
                first,
                args,
                line,
                lineno: lineno + 1,
            })?;
        }
        p.finish()
    }

    /// Read and parse a mapping file (at most [`MAX_MAPPING_BYTES`]).
    pub fn load(path: &Path) -> Result<Mapping, MappingLoadError> {
        let shown = crate::escape::escape_path(path).into_owned();
        let fail = |message: String| MappingLoadError::Read {
            path: shown.clone(),
            message,
        };
        let file = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(fail("it is a folder".into()));
        }
        let mut bytes = Vec::new();
        file.take(MAX_MAPPING_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(e.to_string()))?;
        if bytes.len() as u64 > MAX_MAPPING_BYTES {
            return Err(fail(format!("more than {MAX_MAPPING_BYTES} bytes")));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            fail(format!(
                "not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ))
        })?;
        Mapping::parse(&shown, &text).map_err(MappingLoadError::Parse)
    }

    /// Load the DTD the mapping names: `dtd` when given, else the file of that name beside the
    /// mapping file `map_file`, else the shipped DTD of that name. The schema is named after
    /// the file.
    pub fn load_dtd(
        &self,
        map_file: Option<&Path>,
        dtd: Option<&Path>,
    ) -> Result<crate::dtd::Loaded, MappingDtdError> {
        let from_file = |p: &Path| -> Result<crate::dtd::Loaded, MappingDtdError> {
            let mut loaded = crate::dtd::load(p)?;
            if let Some(n) = p.file_name() {
                loaded.schema.name = n.to_string_lossy().into_owned();
            }
            Ok(loaded)
        };
        if let Some(d) = dtd {
            return from_file(d);
        }
        // The rules of a trace header's DTD name (docs/format.md §10): the last component, a
        // name ending in .dtd, a regular file inside the mapping's folder.
        let refused = |why: String| MappingDtdError::Refused {
            dtd: crate::escape::escape_for_terminal(&self.dtd).into_owned(),
            mapping: self.name.clone(),
            why,
        };
        let name =
            crate::container::sanitize_dtd_name(&self.dtd).map_err(|e| refused(e.to_string()))?;
        if let Some(dir) = map_file.and_then(|p| p.parent()) {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            match crate::container::candidate(dir, name) {
                crate::container::Candidate::Found(p) => return from_file(&p),
                crate::container::Candidate::Refused(p, why) => {
                    return Err(refused(format!(
                        "{}: {why}",
                        crate::escape::escape_path(&p)
                    )))
                }
                crate::container::Candidate::Missing(_) => {}
            }
        }
        match crate::container::shipped_dtd(name) {
            Some(text) => Ok(crate::dtd::load_bytes(&self.dtd, text.as_bytes())?),
            None => Err(MappingDtdError::NotFound {
                dtd: self.dtd.clone(),
                mapping: self.name.clone(),
            }),
        }
    }

    /// The sections records are routed to (`record R section S …`), in the order of their
    /// first rule: a routed section's number in `import_routed.target`.
    pub fn routed(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for r in self.parts.iter().flat_map(|p| &p.rules) {
            if let Some(s) = &r.section {
                if !v.contains(s) {
                    v.push(s.clone());
                }
            }
        }
        v
    }

    /// The message of the `refuse` directive that refuses an input named `name` (its last path
    /// component is matched), if any.
    pub fn refused(&self, name: &str) -> Option<&str> {
        let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
        self.refuse
            .iter()
            .find(|(g, _)| glob(g, base) || glob(g, name))
            .map(|(_, msg)| msg.as_str())
    }

    /// The part for an input or ZIP entry named `name` (its last path component is matched).
    pub fn part_for(&self, name: &str) -> Option<usize> {
        let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
        self.parts
            .iter()
            .position(|p| {
                p.file
                    .as_deref()
                    .is_some_and(|g| glob(g, base) || glob(g, name))
            })
            .or_else(|| self.parts.iter().position(|p| p.file.is_none()))
    }
}

/// Match a glob with `*` (any run) and `?` (any one character).
pub fn glob(pat: &str, s: &str) -> bool {
    let (p, s) = (pat.as_bytes(), s.as_bytes());
    let (mut pi, mut si, mut star, mut mark) = (0, 0, None, 0);
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = si;
            pi += 1;
        } else if let Some(st) = star {
            pi = st + 1;
            mark += 1;
            si = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_small_mapping() {
        let text = "format demo\ndtd demo.dtd\ntable strings string s\npart main section events\nrecord ev 'E {n:dec} {s:str}'\nrecord br '\\[x\\]'\n";
        let m = Mapping::parse("demo.map", text).unwrap();
        assert_eq!(m.parts[0].rules.len(), 2);
        let mut vals = Vec::new();
        assert!(m.parts[0].rules[1]
            .pattern
            .matches(b"[x]", &mut vals)
            .is_some());
        assert!(m.parts[0].rules[0]
            .pattern
            .matches(b"E 1 abc", &mut vals)
            .is_some());
    }

    #[test]
    fn keep_and_limit() {
        let head =
            "format t\ndtd t.dtd\npart p section main\nheader 2\nlimit ops\nhead h '{ops:dec}'\n";
        let m = Mapping::parse(
            "t.map",
            &format!(
                "{head}record a 'a {{id:dec}} {{size:dec}}'\nrecord k 'a {{id:dec}}' keep size\n"
            ),
        )
        .unwrap();
        let p = &m.parts[0];
        assert_eq!(p.limit.as_deref(), Some("ops"));
        assert_eq!(p.rules[2].keep, ["size"]);
        assert_eq!(p.kept(), ["size"]);
        let (names, kinds) = p.fields_of("k");
        assert_eq!(names, ["id", "size"]);
        assert_eq!(kinds, [FieldKind::Int, FieldKind::Int]);
        // `keep` names a field the pattern does not read.
        let e = Mapping::parse("t.map", &format!("{head}record a 'a {{id:dec}}' keep id\n"))
            .unwrap_err();
        assert!(
            e.to_string().contains("neither the pattern nor `set`"),
            "{e}"
        );
        // `limit` names a number of a `head` pattern.
        let e = Mapping::parse(
            "t.map",
            "format t\ndtd t.dtd\npart p section main\nlimit n\nrecord a 'a {n:dec}'\n",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("`limit n` names no number field of a `head` pattern"),
            "{e}"
        );
        let e = Mapping::parse("t.map", "format t\ndtd t.dtd\nlimit n\n").unwrap_err();
        assert!(e.to_string().contains("`limit` belongs to a part"), "{e}");
    }

    #[test]
    fn routed_records_and_refs() {
        let head = "format t\ndtd t.dtd\npart p section main\n";
        let m = Mapping::parse(
            "t.map",
            &format!("{head}record a section aux 'a {{n:dec}}' ref n=aux\nrecord b section more 'b'\nrecord c section aux 'c'\n"),
        )
        .unwrap();
        assert_eq!(m.routed(), ["aux", "more"]);
        assert_eq!(
            m.parts[0].rules[0].refs,
            [("n".to_string(), "aux".to_string())]
        );
        for (bad, why) in [
            (
                "record a section aux 'a {n:dec}' ref n=other\n",
                "own section",
            ),
            ("record a 'a {n:dec}' ref n=main\n", "own section"),
            (
                "record a section aux 'a {s:text}' ref s=aux\n",
                "not a number field",
            ),
            ("record a section main 'a'\n", "a part's section"),
            ("head a section aux 'a'\n", "not `head`"),
        ] {
            let e = Mapping::parse("t.map", &format!("{head}{bad}")).unwrap_err();
            assert!(e.message.contains(why), "{bad}: {}", e.message);
        }
    }

    #[test]
    fn errors_carry_line_and_column() {
        let e = Mapping::parse(
            "m.map",
            "format x\ndtd x.dtd\npart p section s\nrecord r 'A {n:float}'\n",
        )
        .unwrap_err();
        assert_eq!((e.line, e.col), (4, 13));
        assert!(e.message.contains("float"), "{}", e.message);
        let e = Mapping::parse("m.map", "format x\nbogus 1\n").unwrap_err();
        assert_eq!((e.line, e.col), (2, 1));
        let e = Mapping::parse(
            "m.map",
            "format x\ndtd d\npart p section s\nrecord r 'unterminated\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 4);
    }

    #[test]
    fn several_patterns_per_record_with_set_and_when() {
        let text = "format demo\ndtd d.dtd\npart p section s\nrecord alloc 'calloc {a:dec} {n:dec}' set func=1\nrecord alloc 'malloc {a:dec}' when a!=0\nrecord alloc 'x {a:dec}'\n";
        let m = Mapping::parse("demo.map", text).unwrap();
        let r = &m.parts[0].rules;
        assert_eq!(r[0].set, vec![("func".to_string(), 1)]);
        assert!(r[0].applies(&|f| (f == "func") as u64));
        assert!(!r[0].applies(&|_| 0));
        assert!(r[1].applies(&|f| (f == "a") as u64 * 5));
        assert!(!r[1].applies(&|_| 0));
        let e = Mapping::parse(
            "m.map",
            "format x\ndtd d\npart p section s\nrecord r 'a'\nrecord r 'b'\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 5);
        let e = Mapping::parse(
            "m.map",
            "format x\ndtd d\npart p section s\nrecord r 'a' when x~1\n",
        )
        .unwrap_err();
        assert!(e.message.contains("not a condition"), "{}", e.message);
    }

    #[test]
    fn globs() {
        assert!(glob("*.xml", "a.xml"));
        assert!(glob("trace", "trace"));
        assert!(!glob("trace", "trace2"));
        assert!(glob("c?asses.txt", "classes.txt"));
        assert!(glob("*", ""));
    }
}
