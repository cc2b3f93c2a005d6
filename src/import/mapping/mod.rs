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
//! record  RECORD 'PATTERN' implied  # a record the importer writes from `emit` lines only
//! emit    RECORD 'LINE'             # written at the start of the part; not exported
//! ```

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use super::pattern::{FieldKind, Pattern};

mod error;
mod parse;

pub use error::{MapError, MappingDtdError, MappingLoadError};

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
    /// `implied`: the rule never takes a unit of input; its records are written by the
    /// importer from the part's `emit` lines, at the start of the part, and export leaves them
    /// out (facts a format's reader knows, such as heaptrack_print's stop frames).
    pub implied: bool,
}

/// `emit RECORD 'LINE'`: a record the importer writes at the start of each input of the part,
/// from `LINE` matched against the pattern of rule `rule` (an `implied` rule of the part).
#[derive(Debug, Clone)]
pub struct Emit {
    /// Index of the rule in the part.
    pub rule: usize,
    /// The line.
    pub line: String,
    /// 1-based line of the directive in the mapping file.
    pub lineno: usize,
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
    /// `emit` lines: records written at the start of each input of the part, in order.
    pub emits: Vec<Emit>,
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

    /// The repeated group the rules of record type `record` fill, if one of them has one (the
    /// rules that have one agree on its name and fields: checked by [`Mapping::parse`]).
    pub fn repeat_of(&self, record: &str) -> Option<&super::pattern::Repeat> {
        self.rules
            .iter()
            .filter(|r| r.record == record)
            .find_map(|r| r.pattern.repeat.as_ref())
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
    /// The format interleaves other text with its own (`interleaved`: a valgrind log holds the
    /// program's output): most units may match no rule, and only an input none of whose units
    /// match is refused as another format.
    pub interleaved: bool,
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

impl Mapping {
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

    #[test]
    fn implied_rules_and_emit() {
        let head = "format t\ndtd t.dtd\npart p section main\n";
        let m = Mapping::parse(
            "t.map",
            &format!("{head}record a 'a {{n:dec}}'\nrecord stop 'stop {{name:text}}' implied\nemit stop 'stop main'\nemit stop 'stop x y'\n"),
        )
        .unwrap();
        let p = &m.parts[0];
        assert!(!p.rules[0].implied && p.rules[1].implied);
        let lines: Vec<(usize, &str, usize)> = p
            .emits
            .iter()
            .map(|e| (e.rule, e.line.as_str(), e.lineno))
            .collect();
        assert_eq!(lines, [(1, "stop main", 6), (1, "stop x y", 7)]);
        for (bad, why, line, col) in [
            ("emit a 'a 1'\n", "no `implied` rule of record `a`", 5, 6),
            (
                "emit stop 'halt main'\n",
                "does not match the pattern of record `stop`",
                5,
                11,
            ),
            (
                "emit stop\n",
                "`emit` takes a record name and a quoted line",
                5,
                1,
            ),
            (
                "record b section s 'b' implied\n",
                "one-line `record` rule",
                5,
                24,
            ),
            ("head b 'b' implied\n", "one-line `record` rule", 5, 12),
            (
                "record stop 'halt {name:text}' set k=1\n",
                "`implied` and not",
                5,
                8,
            ),
        ] {
            let text = format!("{head}record stop 'stop {{name:text}}' implied\n{bad}");
            let text = text.replace("record stop 'halt {name:text}' set k=1\n", "");
            let text = if bad.starts_with("record stop 'halt") {
                format!("{head}record stop 'halt {{name:text}}' set k=1\nrecord stop 'stop {{name:text}}' implied\n")
            } else {
                text
            };
            let e = Mapping::parse("t.map", &text).unwrap_err();
            assert!(e.message.contains(why), "{bad}: {}", e.message);
            assert_eq!((e.line, e.col), (line, col), "{bad}: {}", e.message);
        }
        let e = Mapping::parse("t.map", "format t\ndtd t.dtd\nemit a 'a'\n").unwrap_err();
        assert!(e.message.contains("belongs to a part"), "{}", e.message);
    }
}
