//! Reading the mapping language: words and quoting, one method per directive, every rule
//! checked when it is parsed (docs/mappings.md).

use std::sync::Arc;

use miette::NamedSource;

use super::super::pattern::{FieldKind, Pattern};
use super::{Cond, Emit, MapError, Mapping, Op, Operand, Part, Rule, Table, Units};

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
            "interleaved" => {
                self.want(d, 0, "no argument")?;
                self.m.interleaved = true;
            }
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
            "emit" => self.emit(d)?,
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
            emits: Vec::new(),
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
        let mut opts = &args[2..];
        // `implied` (last): the importer writes the records from `emit` lines only.
        let implied = matches!(opts.last(), Some(w) if !w.quoted && w.text == "implied");
        if implied {
            let w = &opts[opts.len() - 1];
            opts = &opts[..opts.len() - 1];
            if head || routed.is_some() || pattern.lines > 1 {
                return Err(self.fail(
                    w.at,
                    7,
                    "an `implied` rule is a one-line `record` rule of the part's section".into(),
                ));
            }
        }
        let (set, when, refs, keep) =
            self.rule_options(&record, &pattern, routed.as_deref(), opts)?;
        if implied && !(refs.is_empty() && keep.is_empty()) {
            return Err(self.fail(
                d.first.at,
                d.line.len(),
                "an `implied` rule takes no `ref` or `keep`".into(),
            ));
        }
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
            implied,
        };
        self.check_rule(&rule, &d.args[0])?;
        if let Some(part) = self.m.parts.last_mut() {
            part.rules.push(rule);
        }
        Ok(())
    }

    /// `emit RECORD 'LINE'`: a record of an `implied` rule of the current part, written from
    /// `LINE` at the start of each of its inputs.
    fn emit(&mut self, d: &Directive<'_>) -> Parsed<()> {
        self.want(d, 2, "a record name and a quoted line")?;
        let record = self.plain(&d.args[0])?;
        let line = &d.args[1];
        if !line.quoted {
            return Err(self.fail(line.at, line.text.len(), "the line must be quoted".into()));
        }
        let Some(part) = self.m.parts.last() else {
            return Err(self.fail(
                d.first.at,
                4,
                "`emit` belongs to a part: write `part` first".into(),
            ));
        };
        let rules: Vec<usize> = (0..part.rules.len())
            .filter(|&k| part.rules[k].record == record && part.rules[k].implied)
            .collect();
        if rules.is_empty() {
            return Err(self.fail(
                d.args[0].at,
                record.len(),
                format!("no `implied` rule of record `{record}` before it in this part"),
            ));
        }
        let mut vals = Vec::new();
        let found = rules.into_iter().find(|&k| {
            part.rules[k]
                .pattern
                .matches(line.text.as_bytes(), &mut vals)
                .is_some()
        });
        let Some(rule) = found else {
            return Err(self.fail(
                line.at,
                line.raw.len() + 2,
                format!("the line does not match the pattern of record `{record}`"),
            ));
        };
        let emit = Emit {
            rule,
            line: line.text.clone(),
            lineno: d.lineno,
        };
        if let Some(part) = self.m.parts.last_mut() {
            part.emits.push(emit);
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
        if let Some(prev) = same().find(|r| r.implied != rule.implied) {
            return Err(fail(format!(
                "the rules of record `{record}` are `implied` and not (line {} and this one): a record type is read from input or written from `emit` lines",
                prev.line
            )));
        }
        if let Some(prev) = same().find(|r| r.section != rule.section) {
            return Err(fail(format!(
                "the rules of record `{record}` name different sections (line {} and this one)",
                prev.line
            )));
        }
        // The rules that fill a repeat fill the same one: the record's items are written alike.
        if let (Some(a), Some(b)) = (part.repeat_of(record), &rule.pattern.repeat) {
            let same_fields = a.fields.len() == b.fields.len()
                && a.fields
                    .iter()
                    .zip(&b.fields)
                    .all(|(x, y)| x.name == y.name);
            if a.name != b.name || !same_fields {
                return Err(fail(format!(
                    "record `{record}`: another pattern fills repeat `{}` with other fields; the patterns of a record fill one repeat with the same fields in the same order",
                    a.name
                )));
            }
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
                interleaved: false,
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
}
