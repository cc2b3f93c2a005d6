//! The lines of an imported trace's input that its records came from.

use crate::decode::RecordView;
use crate::dtd::{RecordId, Schema};

/// A line of an input of `mtf import`: the file (an index into [`Stats::files`]) and the line,
/// counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceLine {
    /// The input file: an index into [`Stats::files`].
    pub file: u32,
    /// The line, from 1.
    pub line: u64,
}

/// The lines of an imported trace's input that its records came from, followed record by
/// record (docs/stats.md, *Positions*).
// Design: an imported trace says what it came from in the records of the import fragment of
// the DTD language (docs/format.md §3.5, docs/mappings.md): `import_origin` holds the mapping
// (whose `units` directive says whether units are lines), `import_part` starts each input file
// in the section its units go to, and each unit of that section is one record there — a record
// of the format or an `import_raw` line — except that a run of routed units is one
// `import_routed` record with their count. So counting the records of the part's section gives
// each record its line, with no table and no look at the input. A pattern holding `\n` spans
// that many more lines (malloc-lab's 4-line header, mtrace's realloc pairs): the mapping's
// `record` and `head` rules are read for it (the directive, the record name, the pattern's
// quoted text); a record type whose rules span different numbers of lines ends the lines of its
// part, rather than give wrong ones. For `units xml` a unit is a tag, not a line: no lines.
#[derive(Debug, Clone)]
pub struct SourceLines {
    /// What each record type is to the lines (empty: the DTD has no import records).
    kinds: Vec<LineKind>,
    /// Units are lines (the mapping says `units lines`, the default).
    lines: bool,
    /// The record types' names (to read the mapping's rules).
    names: Vec<String>,
    /// Per record type: the lines of one of its units (0: its rules disagree).
    span: Vec<u64>,
    /// The section of the current part's units, its file and the last line counted.
    part: Option<(u8, u32, u64)>,
    pub(super) files: Vec<String>,
}

/// What a record type is to [`SourceLines`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// A unit: a record of the format, or `import_raw`.
    Unit,
    /// `import_origin`.
    Origin,
    /// `import_part`.
    Part,
    /// `import_routed`: `count` units routed elsewhere.
    Routed,
    /// The other records of the import fragment (`import_noeol`, ZIP entries and chunks):
    /// no unit.
    None,
}

impl SourceLines {
    /// Follows the lines of a trace of `schema` (nothing, if its DTD has no import records).
    pub fn new(schema: &Schema) -> SourceLines {
        let kinds: Vec<LineKind> = schema
            .records
            .iter()
            .map(|r| match r.name.as_str() {
                "import_origin" => LineKind::Origin,
                "import_part" => LineKind::Part,
                "import_routed" => LineKind::Routed,
                "import_raw" => LineKind::Unit,
                n if n.starts_with("import_") => LineKind::None,
                _ => LineKind::Unit,
            })
            .collect();
        let imported = kinds.contains(&LineKind::Origin) && kinds.contains(&LineKind::Part);
        SourceLines {
            span: vec![1; kinds.len()],
            kinds: if imported { kinds } else { Vec::new() },
            names: schema.records.iter().map(|r| r.name.clone()).collect(),
            lines: false,
            part: None,
            files: Vec::new(),
        }
    }

    /// Write what the next records' lines depend on (an analysis-state blob, docs/format.md
    /// §15.4): the units, the lines per unit of each record type, the current part, the files.
    pub(super) fn save_state(&self, e: &mut crate::index::analysis::Enc) {
        e.u8(self.lines as u8);
        e.len(self.span.len());
        for x in &self.span {
            e.u64(*x);
        }
        match self.part {
            None => e.u8(0),
            Some((section, file, line)) => {
                e.u8(1);
                e.u8(section);
                e.u32(file);
                e.u64(line);
            }
        }
        e.len(self.files.len());
        for f in &self.files {
            e.str(f);
        }
    }

    /// Read back what [`SourceLines::save_state`] wrote.
    pub(super) fn restore_state(
        &mut self,
        d: &mut crate::index::analysis::Dec<'_>,
    ) -> Result<(), crate::index::analysis::StateError> {
        self.lines = d.flag()?;
        let n = d.count(1)?;
        if n != self.span.len() {
            return Err(d.error("line spans of another DTD"));
        }
        for x in &mut self.span {
            *x = d.u64()?;
        }
        self.part = if d.flag()? {
            Some((d.u8()?, d.u32()?, d.u64()?))
        } else {
            None
        };
        let n = d.count(1)?;
        self.files = Vec::with_capacity(n);
        for _ in 0..n {
            self.files.push(d.str()?.to_string());
        }
        Ok(())
    }

    /// The input files met so far (by [`SourceLine::file`]).
    pub fn files(&self) -> &[String] {
        &self.files
    }

    /// Feeds one record (every record, in trace order); returns its line, where it has one.
    pub fn record(&mut self, v: &RecordView<'_>) -> Option<SourceLine> {
        let kind = *self.kinds.get(v.record_id() as usize)?;
        if kind == LineKind::Origin {
            let mapping = v.get("mapping.data").and_then(|x| x.as_bytes());
            let mapping = String::from_utf8_lossy(mapping.unwrap_or_default()).into_owned();
            self.read_mapping(&mapping);
            self.part = None;
            return None;
        }
        if kind == LineKind::Part {
            let kind = v.get("kind").and_then(|x| x.as_u64()).unwrap_or(0);
            self.part = None;
            if self.lines && kind == 0 {
                let name = v.get("name.data").and_then(|x| x.as_bytes()).unwrap_or(b"");
                let name = String::from_utf8_lossy(name).into_owned();
                let file = match self.files.iter().position(|f| *f == name) {
                    Some(i) => i,
                    None => {
                        self.files.push(name);
                        self.files.len() - 1
                    }
                };
                self.part = Some((v.section(), file as u32, 0));
            }
            return None;
        }
        if kind == LineKind::Routed {
            let (section, _, line) = self.part.as_mut()?;
            if v.section() == *section && v.is_data() {
                *line = line.saturating_add(v.get("count").and_then(|x| x.as_u64()).unwrap_or(0));
            }
            return None;
        }
        self.unit(v.record_id(), v.section(), v.is_data())
    }

    /// Whether [`SourceLines::record`] reads the fields of a record of type `rid` (the import
    /// records that start a part, name the mapping or count routed units): such a record is
    /// to be given as a view; any other, as its type, section and kind ([`SourceLines::unit`]).
    pub(super) fn reads_fields(&self, rid: RecordId) -> bool {
        matches!(
            self.kinds.get(rid as usize),
            Some(LineKind::Origin | LineKind::Part | LineKind::Routed)
        )
    }

    /// [`SourceLines::record`] for a record of type `rid` of `section` (`is_data`: not an
    /// element of a table nor a built-in record) whose fields it does not read
    /// ([`SourceLines::reads_fields`]): a record a scan stepped over.
    pub(super) fn unit(&mut self, rid: RecordId, section: u8, is_data: bool) -> Option<SourceLine> {
        let kind = *self.kinds.get(rid as usize)?;
        let (part_section, file, line) = self.part.as_mut()?;
        if section != *part_section || !is_data || kind != LineKind::Unit {
            return None;
        }
        let span = self.span.get(rid as usize).copied().unwrap_or(1);
        if span == 0 {
            self.part = None;
            return None;
        }
        if span == NO_UNIT {
            return None;
        }
        // Saturating: a state read back (unchecked, in tests) may hold any count.
        let first = line.saturating_add(1);
        *line = line.saturating_add(span);
        Some(SourceLine {
            file: *file,
            line: first,
        })
    }

    /// What the mapping text says of lines: `units xml` (no lines), and how many lines the
    /// patterns of each record type span.
    fn read_mapping(&mut self, mapping: &str) {
        self.lines = true;
        self.span.iter_mut().for_each(|s| *s = 1);
        let mut seen = vec![false; self.span.len()];
        for l in mapping.lines() {
            let mut w = l.split_whitespace();
            let (Some(directive), Some(name)) = (w.next(), w.next()) else {
                continue;
            };
            if directive == "units" && name == "xml" {
                self.lines = false;
            }
            if directive != "record" && directive != "head" {
                continue;
            }
            let Some(rid) = self.names.iter().position(|n| n == name) else {
                continue;
            };
            let Some((span, end)) = pattern_lines(l) else {
                continue;
            };
            // A record the importer writes from the mapping's `emit` lines is no unit.
            let span = if implied(&l[end..]) { NO_UNIT } else { span };
            if seen[rid] && self.span[rid] != span {
                self.span[rid] = 0;
            } else if !seen[rid] {
                self.span[rid] = span;
            }
            seen[rid] = true;
        }
    }
}

/// The lines per unit of a record type whose records the importer writes from the mapping
/// (`implied` rules, `emit` lines): none, they are no units of the input.
const NO_UNIT: u64 = u64::MAX;

/// Whether the options after a rule's pattern, `rest`, say `implied` (before a comment).
fn implied(rest: &str) -> bool {
    rest.split('#')
        .next()
        .is_some_and(|r| r.split_whitespace().any(|w| w == "implied"))
}

/// The lines a rule's pattern spans: 1 + its `\n` escapes (in its first quoted text); and the
/// byte after the pattern's closing quote.
fn pattern_lines(rule: &str) -> Option<(u64, usize)> {
    let start = rule.find(['\'', '"'])?;
    let quote = rule[start..].chars().next()?;
    let mut lines = 1u64;
    let mut chars = rule[start + 1..].chars();
    while let Some(c) = chars.next() {
        // An escape takes the next character with it (`\'` is no end, `\n` a line).
        match c {
            '\\' if chars.next() == Some('n') => lines += 1,
            c if c == quote => return Some((lines, rule.len() - chars.as_str().len())),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_lines_count_newline_escapes() {
        let lines = |r: &str| pattern_lines(r).map(|(n, _)| n);
        assert_eq!(lines("record a 'a {id:dec} {size:dec}'"), Some(1));
        assert_eq!(
            lines(r"head h '{w:dec}\n{i:dec}\n{o:dec}\n{f:dec}' when w<=1"),
            Some(4)
        );
        assert_eq!(lines(r"record r 'x\\n\' y' # \n"), Some(1));
        assert_eq!(lines("record r"), None);
        let rule = "record s 'stop {name:text}' implied # not 'a'";
        let (_, end) = pattern_lines(rule).unwrap();
        assert_eq!(&rule[end..], " implied # not 'a'");
        assert!(implied(&rule[end..]));
        assert!(!implied(" set x=1 # implied"));
        assert!(!implied(" when implied_flag=1"));
    }
}
