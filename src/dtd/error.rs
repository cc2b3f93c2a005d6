//! DTD diagnostics (docs/format.md §9.1): one miette diagnostic per problem, collected into
//! [`DtdErrors`]; typo warnings as [`DtdWarning`].

// Design: every error carries the DTD source (a cheap `Arc` clone) so it renders on its own with
// file:line:col, and also inside `DtdErrors`, whose `#[related]` list prints them all after a
// one-line summary. Messages are built by the resolver (it knows the names involved); the codes
// and help texts are fixed here, one variant per code.

use std::sync::Arc;

use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, NamedSource, SourceSpan};

use super::schema::Span;

/// The source text a diagnostic points into: file name and text.
pub type Src = NamedSource<Arc<str>>;

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
    /// Nesting or size beyond the implementation limits.
    #[error("{msg}")]
    #[diagnostic(code(mtf::dtd::limit), help("flatten the definition"))]
    Limit {
        msg: String,
        #[source_code]
        src: Src,
        #[label("limit exceeded here")]
        span: SourceSpan,
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
    #[error("tag {tag} of record `{record}` is already used by record `{other}`")]
    #[diagnostic(
        code(mtf::dtd::duplicate_tag),
        help("tag values must be unique among the global records and those of each section")
    )]
    DuplicateTag {
        tag: u64,
        record: String,
        other: String,
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
    /// A user definition of a built-in name or tag.
    #[error("{msg}")]
    #[diagnostic(
        code(mtf::dtd::reserved_name),
        help("the names vfield, comment, section and metadata and the tags 1, 2 and 3 belong to the built-in records")
    )]
    ReservedName {
        msg: String,
        #[source_code]
        src: Src,
        #[label("reserved")]
        span: SourceSpan,
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

/// Every error found in one DTD file.
#[derive(Debug, Clone, thiserror::Error, Diagnostic)]
#[error("{summary}")]
pub struct DtdErrors {
    /// "NAME: N errors".
    pub summary: String,
    /// The errors, in source order.
    #[related]
    pub errors: Vec<DtdError>,
}

impl DtdErrors {
    /// Collect errors of the DTD `name`: sort them by position and drop repeats (a nested type
    /// used by several records would otherwise report its own problems once per use).
    pub fn new(name: &str, mut errors: Vec<DtdError>) -> Self {
        errors.sort_by_key(DtdError::offset);
        let mut seen = std::collections::HashSet::new();
        errors.retain(|e| seen.insert((e.code_str(), e.offset(), e.to_string())));
        let n = errors.len();
        DtdErrors {
            summary: format!("{name}: {n} error{}", if n == 1 { "" } else { "s" }),
            errors,
        }
    }
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
}

/// Render a diagnostic (with its related ones) as plain Unicode text, without colours or
/// hyperlinks: deterministic output for files, pipes and golden tests.
pub fn render_plain(diag: &dyn Diagnostic) -> String {
    render_with(diag, GraphicalTheme::unicode_nocolor())
}

/// Render a diagnostic with a given theme (e.g. coloured for a terminal).
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
                found,
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
        },
    }
}
