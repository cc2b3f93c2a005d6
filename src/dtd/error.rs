//! DTD diagnostics (docs/format.md §9.1): one miette diagnostic per problem, collected into
//! [`DtdErrors`]; typo warnings as [`DtdWarning`].

// Design: every error carries the DTD source (a cheap `Arc` clone) so it renders on its own with
// file:line:col, and also inside `DtdErrors`, whose `#[related]` list prints them all after a
// one-line summary. Messages are built by the resolver (it knows the names involved); the codes
// and help texts are fixed here, one variant per code.

// Design (bounded output): a DTD may be hostile. `DtdSource` serves snippets in time
// proportional to the snippet (a line index built once), never more than `SNIPPET_CUT` bytes
// on either side of the labels and `SNIPPET_MAX` bytes in all, so that no label lies more than
// 65,535 columns into a line (miette panics there); line:column stay those of the whole file.
// Control and bidi characters are replaced in snippets (same byte length, so labels stay put)
// and escaped in messages. `DtdErrors` keeps the first `MAX_REPORTED` errors and counts the rest.

use std::sync::Arc;

use miette::{Diagnostic, MietteError, MietteSpanContents, SourceCode, SourceSpan, SpanContents};
#[cfg(feature = "fancy")]
use miette::{GraphicalReportHandler, GraphicalTheme};

use super::ids::Span;

/// The most errors (and warnings) a DTD reports; the rest are counted.
pub const MAX_REPORTED: usize = 100;

/// Bytes of context kept on either side of the labels in a snippet.
const SNIPPET_CUT: usize = 160;

/// The most bytes of one snippet (a label further away is not drawn).
const SNIPPET_MAX: usize = 8192;

/// The source text a diagnostic points into: file name and text (see [`DtdSource`]).
pub type Src = DtdSource;

/// DTD text for diagnostics: cheap to clone, snippets bounded and free of control characters.
#[derive(Debug, Clone)]
pub struct DtdSource {
    name: Arc<str>,
    /// The text with control and bidi characters replaced (same byte offsets).
    shown: Arc<str>,
    /// Byte offset of the start of every line.
    line_starts: Arc<[usize]>,
}

impl DtdSource {
    /// Index `text` (one pass) under the file name `name`.
    pub fn new(name: &str, text: &str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        DtdSource {
            name: name.into(),
            shown: replace_controls(text).into(),
            line_starts: line_starts.into(),
        }
    }

    /// The file name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// 0-based line of a byte offset.
    fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset) - 1
    }

    /// End of line `l` (after its `\n`), or the end of the text.
    fn line_end(&self, l: usize) -> usize {
        self.line_starts
            .get(l + 1)
            .copied()
            .unwrap_or(self.shown.len())
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

impl SourceCode for DtdSource {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let text = &*self.shown;
        let start = span.offset();
        let end = start + span.len();
        if end > text.len() {
            return Err(MietteError::OutOfBounds);
        }
        // As miette's own `str` source: whole context lines, or the span itself without context.
        let l0 = self.line_of(start);
        let l1 = self.line_of(end.saturating_sub(1).max(start));
        let mut from = if context_lines_before == 0 {
            start
        } else {
            self.line_starts[l0.saturating_sub(context_lines_before)]
        };
        let mut to = self.line_end(l1 + context_lines_after);
        if context_lines_before == 0 && context_lines_after == 0 {
            to = end;
        }
        // Bound the snippet around the span.
        if start - from > SNIPPET_CUT {
            from = floor_boundary(text, start - SNIPPET_CUT / 2);
        }
        to = to.min(end + SNIPPET_CUT).min(from + SNIPPET_MAX);
        let to = ceil_boundary(text, to.max(from)).min(text.len());
        let line = self.line_of(from);
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.to_string(),
            &text.as_bytes()[from..to],
            (from, to - from).into(),
            line,
            from - self.line_starts[line],
            // As miette's `str` source: the newlines from the start of the text to the end of
            // the snippet (miette merges nearby snippets with it).
            self.line_of(to),
        )))
    }
}

/// Whether a character must not reach a terminal raw: C0 controls other than tab, LF and CR,
/// DEL, C1 controls, and the Unicode bidi controls.
pub fn is_hostile(c: char) -> bool {
    // Tab, LF and CR lay out a DTD's own text; every other unsafe character is hostile.
    !matches!(c, '\t' | '\n' | '\r') && crate::escape::is_unsafe(c)
}

/// Replace hostile characters by characters of the same UTF-8 length (`?`, `¿`, `\u{fffd}`),
/// so that byte offsets do not move.
fn replace_controls(text: &str) -> String {
    if !text.chars().any(is_hostile) {
        return text.to_string();
    }
    text.chars()
        .map(|c| match (is_hostile(c), c.len_utf8()) {
            (false, _) => c,
            (true, 1) => '?',
            (true, 2) => '¿',
            (true, _) => '\u{fffd}',
        })
        .collect()
}

/// `text` with hostile characters escaped (for messages), as every untrusted string shown to a
/// terminal is ([`crate::escape`]).
pub fn escape_hostile(text: &str) -> String {
    crate::escape::escape_for_terminal(text).into_owned()
}

/// Convert a schema span to a miette span.
pub fn sspan(s: Span) -> SourceSpan {
    (s.offset, s.len).into()
}

/// One problem that makes a DTD unusable.
#[derive(Debug, Clone, thiserror::Error, Diagnostic)]
#[allow(missing_docs)] // variant fields are self-describing: message, source, spans, help
pub enum DtdError {
    /// Input that does not match the grammar.
    #[error("expected {expected}, found {found}")]
    #[diagnostic(code(mtf::dtd::syntax), help("see the grammar in docs/format.md §3.2"))]
    Syntax {
        expected: String,
        found: String,
        #[source_code]
        src: Src,
        #[label("unexpected here")]
        span: SourceSpan,
    },
    /// `/*` without `*/`.
    #[error("unterminated comment")]
    #[diagnostic(
        code(mtf::dtd::unterminated_comment),
        help("close the comment with `*/`")
    )]
    UnterminatedComment {
        #[source_code]
        src: Src,
        #[label("comment opened here is never closed")]
        span: SourceSpan,
    },
    /// An integer literal over 2⁶⁴−1.
    #[error("integer literal too large")]
    #[diagnostic(
        code(mtf::dtd::bad_integer),
        help("integers must be at most 2^64-1 (0xFFFFFFFFFFFFFFFF)")
    )]
    BadInteger {
        #[source_code]
        src: Src,
        #[label("does not fit in 64 bits")]
        span: SourceSpan,
    },
    /// An `include` of a fragment that does not exist, or of one already included.
    #[error("{msg}")]
    #[diagnostic(
        code(mtf::dtd::include),
        help("the built-in fragments: {}", super::FRAGMENTS.iter().map(|f| f.0).collect::<Vec<_>>().join(", "))
    )]
    Include {
        msg: String,
        #[source_code]
        src: Src,
        #[label("here")]
        span: SourceSpan,
    },
    /// Nesting or size beyond the implementation limits.
    #[error("{msg}")]
    #[diagnostic(code(mtf::dtd::limit))]
    Limit {
        msg: String,
        #[source_code]
        src: Src,
        #[label("limit exceeded here")]
        span: SourceSpan,
        #[help]
        help: String,
    },
    /// A reference or property path naming no field.
    #[error("{msg}")]
    #[diagnostic(code(mtf::dtd::unknown_type))]
    UnknownType {
        msg: String,
        #[source_code]
        src: Src,
        #[label("no such field")]
        span: SourceSpan,
        #[help]
        help: Option<String>,
    },
    /// A field without a width.
    #[error("field `{field}` of record `{record}` has no width")]
    #[diagnostic(
        code(mtf::dtd::missing_width),
        help("add `{type_name}.width = N;` (globally or in the record body), or give it a zero-width interpretation")
    )]
    MissingWidth {
        field: String,
        record: String,
        type_name: String,
        #[source_code]
        src: Src,
        #[label("declared here")]
        span: SourceSpan,
        #[label("in this record")]
        used_in: Option<SourceSpan>,
    },
    /// A field without an interpretation.
    #[error("field `{field}` of record `{record}` has no interpretation")]
    #[diagnostic(
        code(mtf::dtd::missing_interpretation),
        help("add `{type_name}.interpretation = none;` (or another interpretation)")
    )]
    MissingInterpretation {
        field: String,
        record: String,
        type_name: String,
        #[source_code]
        src: Src,
        #[label("declared here")]
        span: SourceSpan,
        #[label("in this record")]
        used_in: Option<SourceSpan>,
    },
    /// A non-zero width on a zero-width interpretation.
    #[error("field `{field}` of record `{record}` has width {width} but interpretation `{interp}` has no stored bytes")]
    #[diagnostic(
        code(mtf::dtd::width_on_zero_width),
        help("`default`, `stride` and `sectionStride` fields have width 0: a width set at the same level as the interpretation, or more specifically, must be 0; a width set less specifically (e.g. globally) is the field's last non-zero width")
    )]
    WidthOnZeroWidth {
        field: String,
        record: String,
        width: String,
        interp: String,
        #[source_code]
        src: Src,
        #[label("width set here")]
        span: SourceSpan,
        #[label("interpretation set here")]
        interp_span: Option<SourceSpan>,
    },
    /// Two record types with the same tag in one scope.
    #[error("tag {tag} of record `{record}` is already used by record `{other}`{origin}")]
    #[diagnostic(
        code(mtf::dtd::duplicate_tag),
        help("tag values must be unique among the global records and those of each section")
    )]
    DuplicateTag {
        tag: u64,
        record: String,
        other: String,
        /// `""`, or where `other` comes from (` of the built-in fragment `import``).
        origin: String,
        #[source_code]
        src: Src,
        #[label("duplicate tag")]
        span: SourceSpan,
        #[label("first used here")]
        first: Option<SourceSpan>,
    },
    /// A taggable record without `tag.value`.
    #[error("record `{record}` has no tag value")]
    #[diagnostic(
        code(mtf::dtd::missing_tag_value),
        help("add `tag.value = N;` to the record body")
    )]
    MissingTagValue {
        record: String,
        #[source_code]
        src: Src,
        #[label("this record starts with `tag` but sets no `tag.value`")]
        span: SourceSpan,
    },
    /// Section id outside 1..255.
    #[error("section id {id} is out of range")]
    #[diagnostic(
        code(mtf::dtd::section_id_range),
        help("section ids are 1..255 (0 is the global scope)")
    )]
    SectionIdRange {
        id: String,
        #[source_code]
        src: Src,
        #[label("not in 1..255")]
        span: SourceSpan,
    },
    /// Two sections with the same id or name.
    #[error("{msg}")]
    #[diagnostic(
        code(mtf::dtd::duplicate_section),
        help("section names and ids must be unique")
    )]
    DuplicateSection {
        msg: String,
        #[source_code]
        src: Src,
        #[label("duplicate")]
        span: SourceSpan,
        #[label("first declared here")]
        first: Option<SourceSpan>,
    },
    /// `.value` of a later field or of the field itself.
    #[error("{msg}")]
    #[diagnostic(
        code(mtf::dtd::forward_reference),
        help("a `.value` reference must name a field decoded before this one")
    )]
    ForwardReference {
        msg: String,
        #[source_code]
        src: Src,
        #[label("refers forward")]
        span: SourceSpan,
    },
    /// A record type containing itself.
    #[error("record type `{name}` contains itself ({chain})")]
    #[diagnostic(
        code(mtf::dtd::recursive_type),
        help("record types cannot be recursive; use a repeat instead")
    )]
    RecursiveType {
        name: String,
        chain: String,
        #[source_code]
        src: Src,
        #[label("recursive use")]
        span: SourceSpan,
    },
    /// `tag.width` set twice or outside the global scope.
    #[error("{msg}")]
    #[diagnostic(
        code(mtf::dtd::tag_width_twice),
        help("`tag.width` may be set once, at the top level of the DTD")
    )]
    TagWidthTwice {
        msg: String,
        #[source_code]
        src: Src,
        #[label("here")]
        span: SourceSpan,
        #[label("first set here")]
        first: Option<SourceSpan>,
    },
    /// Two record types with one name in a scope.
    #[error("record type `{name}` is defined twice")]
    #[diagnostic(
        code(mtf::dtd::duplicate_record),
        help("record type names must be unique within the global scope and each section")
    )]
    DuplicateRecord {
        name: String,
        #[source_code]
        src: Src,
        #[label("redefined here")]
        span: SourceSpan,
        #[label("first defined here")]
        first: Option<SourceSpan>,
    },
    /// Two fields with one name at one level.
    #[error("field `{name}` is defined twice")]
    #[diagnostic(
        code(mtf::dtd::duplicate_field),
        help("give one of the fields another name with `name : type`")
    )]
    DuplicateField {
        name: String,
        #[source_code]
        src: Src,
        #[label("duplicate field")]
        span: SourceSpan,
        #[label("first defined here")]
        first: Option<SourceSpan>,
    },
    /// A user definition of a built-in name or tag, or of the name of a record of an included
    /// fragment (docs/format.md §3.5).
    #[error("{msg}")]
    #[diagnostic(code(mtf::dtd::reserved_name))]
    ReservedName {
        msg: String,
        #[source_code]
        src: Src,
        #[label("reserved")]
        span: SourceSpan,
        /// The `include` that took the name in, for a fragment's name.
        #[label("taken in here")]
        include: Option<SourceSpan>,
        #[help]
        help: String,
    },
    /// A width that cannot be represented.
    #[error("{msg}")]
    #[diagnostic(code(mtf::dtd::bad_width))]
    BadWidth {
        msg: String,
        #[source_code]
        src: Src,
        #[label("here")]
        span: SourceSpan,
        #[help]
        help: Option<String>,
    },
    /// An interpretation that cannot apply.
    #[error("{msg}")]
    #[diagnostic(code(mtf::dtd::bad_interpretation))]
    BadInterpretation {
        msg: String,
        #[source_code]
        src: Src,
        #[label("here")]
        span: SourceSpan,
        #[help]
        help: Option<String>,
    },
    /// A `value` property that reads `.value`.
    #[error("a `value` property must be constant")]
    #[diagnostic(
        code(mtf::dtd::non_constant_value),
        help("only `width` properties may use `.value` references")
    )]
    NonConstantValue {
        #[source_code]
        src: Src,
        #[label("reads a field value")]
        span: SourceSpan,
    },
    /// `tag` misplaced.
    #[error("{msg}")]
    #[diagnostic(
        code(mtf::dtd::tag_not_first),
        help(
            "`tag` may only be the first field of a record type that is not used as a nested type"
        )
    )]
    TagNotFirst {
        msg: String,
        #[source_code]
        src: Src,
        #[label("here")]
        span: SourceSpan,
        #[label("nested type defined here")]
        def: Option<SourceSpan>,
    },
    /// A reserved property with the wrong kind of value, or in the wrong place.
    #[error("{msg}")]
    #[diagnostic(code(mtf::dtd::bad_property))]
    BadProperty {
        msg: String,
        #[source_code]
        src: Src,
        #[label("here")]
        span: SourceSpan,
        #[help]
        help: Option<String>,
    },
    /// An analysis declaration (extension analysis/1, docs/format.md §14) that cannot be
    /// resolved: an unknown namespace, keyword or field, or declarations that contradict.
    #[error("{msg}")]
    #[diagnostic(code(mtf::dtd::bad_analysis))]
    BadAnalysis {
        msg: String,
        #[source_code]
        src: Src,
        #[label("here")]
        span: SourceSpan,
        #[help]
        help: Option<String>,
    },
    /// A repeat count that is not a scalar field.
    #[error("repeat count `{name}` is a record type, not a scalar field")]
    #[diagnostic(
        code(mtf::dtd::bad_count),
        help("in `n * item`, `n` must be a scalar field type")
    )]
    BadCount {
        name: String,
        #[source_code]
        src: Src,
        #[label("not a scalar")]
        span: SourceSpan,
    },
    /// Widths defined in terms of each other.
    #[error("the width of field `{field}` depends on itself")]
    #[diagnostic(
        code(mtf::dtd::cyclic_width),
        help("`.width` references must not form a cycle")
    )]
    CyclicWidth {
        field: String,
        #[source_code]
        src: Src,
        #[label("cycle through here")]
        span: SourceSpan,
    },
}

/// The help of [`DtdError::ReservedName`] for the built-in records' names and tags.
pub(crate) const BUILTIN_HELP: &str = "the names vfield, comment, section and metadata and the tags 1, 2 and 3 belong to the built-in records";

impl DtdError {
    /// The error code (`mtf::dtd::…`).
    pub fn code_str(&self) -> String {
        self.code().map(|c| c.to_string()).unwrap_or_default()
    }

    /// The byte offset of the primary label (for sorting).
    pub fn offset(&self) -> usize {
        self.labels()
            .and_then(|mut l| l.next())
            .map_or(0, |l| l.offset())
    }
}

/// Every error found in one DTD file (the first [`MAX_REPORTED`] of them, in source order).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{summary}")]
pub struct DtdErrors {
    /// "NAME: N errors" (N counts every error, reported or not).
    pub summary: String,
    /// The errors, in source order: at most [`MAX_REPORTED`].
    pub errors: Vec<DtdError>,
    /// How many more errors were found but are not in `errors`.
    pub omitted: usize,
    more: Option<Omitted>,
}

/// The line that ends a capped list: "N more errors not shown".
#[derive(Debug, Clone, thiserror::Error, Diagnostic)]
#[error("{count} more {what} not shown")]
#[diagnostic(severity(Advice))]
pub struct Omitted {
    /// How many were left out.
    pub count: usize,
    /// "errors" or "warnings".
    pub what: &'static str,
}

impl Diagnostic for DtdErrors {
    fn related<'a>(&'a self) -> Option<Box<dyn Iterator<Item = &'a dyn Diagnostic> + 'a>> {
        let errors = self.errors.iter().map(|e| e as &dyn Diagnostic);
        let more = self.more.iter().map(|m| m as &dyn Diagnostic);
        Some(Box::new(errors.chain(more)))
    }
}

impl DtdErrors {
    /// Collect errors of the DTD `name`: sort them by position, drop repeats (a nested type
    /// used by several records would otherwise report its own problems once per use), and keep
    /// the first [`MAX_REPORTED`].
    pub fn new(name: &str, mut errors: Vec<DtdError>) -> Self {
        errors.sort_by_key(DtdError::offset);
        let mut seen = std::collections::HashSet::new();
        errors.retain(|e| seen.insert((e.code_str(), e.offset(), e.to_string())));
        let n = errors.len();
        let omitted = n.saturating_sub(MAX_REPORTED);
        errors.truncate(MAX_REPORTED);
        DtdErrors {
            summary: format!("{name}: {n} error{}", if n == 1 { "" } else { "s" }),
            errors,
            omitted,
            more: (omitted > 0).then_some(Omitted {
                count: omitted,
                what: "errors",
            }),
        }
    }
}

/// Keep the first [`MAX_REPORTED`] warnings; if there were more, the last one kept says how
/// many were left out ([`DtdWarning::Omitted`]).
pub fn cap_warnings(mut warnings: Vec<DtdWarning>) -> Vec<DtdWarning> {
    if warnings.len() > MAX_REPORTED {
        let count = warnings.len() - MAX_REPORTED;
        warnings.truncate(MAX_REPORTED);
        warnings.push(DtdWarning::Omitted { count });
    }
    warnings
}

/// A problem that does not make the DTD unusable.
#[derive(Debug, Clone, thiserror::Error, Diagnostic)]
#[allow(missing_docs)]
pub enum DtdWarning {
    /// A property name close to a reserved one.
    #[error("unknown property `{name}` (did you mean `{suggestion}`?)")]
    #[diagnostic(
        severity(Warning),
        code(mtf::dtd::unknown_property),
        help("unknown properties are kept for documentation and otherwise ignored")
    )]
    PropertyTypo {
        name: String,
        suggestion: String,
        #[source_code]
        src: Src,
        #[label("not a reserved property")]
        span: SourceSpan,
    },
    /// Analysis declarations of a version this reader does not know: ignored (they never
    /// change how a trace decodes).
    #[error("{msg}")]
    #[diagnostic(code(mtf::dtd::analysis_ignored), severity(Warning))]
    AnalysisIgnored {
        msg: String,
        #[source_code]
        src: Src,
        #[label("here")]
        span: SourceSpan,
    },
    /// A namespace named once only, close to another's name.
    #[error("{msg}")]
    #[diagnostic(code(mtf::dtd::analysis_typo), severity(Warning))]
    AnalysisTypo {
        msg: String,
        #[source_code]
        src: Src,
        #[label("here")]
        span: SourceSpan,
    },
    /// Ends a capped list of warnings.
    #[error("{count} more warnings not shown")]
    #[diagnostic(severity(Warning))]
    Omitted { count: usize },
}

/// Render a diagnostic (with its related ones) as plain Unicode text, without colours or
/// hyperlinks: deterministic output for files, pipes and golden tests.
#[cfg(feature = "fancy")]
pub fn render_plain(diag: &dyn Diagnostic) -> String {
    render_with(diag, GraphicalTheme::unicode_nocolor())
}

/// Render a diagnostic with a given theme (e.g. coloured for a terminal).
#[cfg(feature = "fancy")]
pub fn render_with(diag: &dyn Diagnostic, theme: GraphicalTheme) -> String {
    let handler = GraphicalReportHandler::new_themed(theme).with_links(false);
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = handler.render_report(&mut out, diag);
    out
}

/// Convert a parser problem to a diagnostic.
pub fn from_parse(p: super::parse::ParseProblem, src: &Src) -> DtdError {
    use super::parse::ParseProblem as P;
    let src = src.clone();
    match p {
        P::Syntax {
            expected,
            found,
            span,
        } => {
            let expected = match expected.as_slice() {
                [] => "something else".to_string(),
                [one] => one.to_string(),
                [init @ .., last] => format!("{} or {last}", init.join(", ")),
            };
            DtdError::Syntax {
                expected,
                found: escape_hostile(&found),
                src,
                span: sspan(span),
            }
        }
        P::UnterminatedComment { span } => DtdError::UnterminatedComment {
            src,
            span: sspan(span),
        },
        P::BadInteger { span } => DtdError::BadInteger {
            src,
            span: sspan(span),
        },
        P::TooDeep { span } => DtdError::Limit {
            msg: format!("nesting deeper than {} levels", super::parse::MAX_DEPTH),
            src,
            span: sspan(span),
            help: "each field list and repeat counts a level, and in an expression each \
                   operator and each pair of parentheses (`1 + 2 + 3` has 2; docs/format.md \
                   §3.4): flatten the definition"
                .into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use crate::dtd::{parse_str, render_plain, MAX_REPORTED};

    #[test]
    fn very_long_lines_render_with_their_line_and_column() {
        for cols in [65_530, 70_000, 200_000] {
            let text = format!("{}x.width = 1;;", " ".repeat(cols));
            let e = parse_str("ll.dtd", &text).unwrap_err();
            let out = render_plain(&e);
            assert!(out.contains(&format!("ll.dtd:1:{}", cols + 13)), "{out}");
            assert!(
                out.len() < 4_000,
                "snippet not truncated: {} bytes",
                out.len()
            );
        }
        // Two labels far apart on one line (width and interpretation).
        let text = format!(
            "x.width = 1;{}x.interpretation = default 0; r : (tag, x) {{ tag.value = 4; }}",
            " ".repeat(100_000)
        );
        let out = render_plain(&parse_str("w.dtd", &text).unwrap_err());
        assert!(out.contains("width_on_zero_width"), "{out}");
    }

    #[test]
    fn reported_errors_are_capped_and_counted() {
        let text = "x.width = ;\n".repeat(MAX_REPORTED + 50);
        let e = parse_str("many.dtd", &text).unwrap_err();
        assert_eq!(e.errors.len(), MAX_REPORTED);
        assert_eq!(e.omitted, 50);
        let out = render_plain(&e);
        assert!(out.contains("many.dtd: 150 errors"), "{out}");
        assert!(out.contains("50 more errors not shown"), "{out}");
    }

    #[test]
    fn control_and_bidi_characters_are_not_printed_raw() {
        let text = "x.width = 1;\n\u{0}\u{1b}[31m \u{202e}abc\u{7f};\n";
        let out = render_plain(&parse_str("c.dtd", text).unwrap_err());
        for c in ['\u{0}', '\u{1b}', '\u{202e}', '\u{7f}'] {
            assert!(!out.contains(c), "{c:?} printed raw:\n{out}");
        }
        assert!(out.contains("found `\\x00`"), "{out}");
        assert!(out.contains("c.dtd:2:1"), "{out}");
    }
}
