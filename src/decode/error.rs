//! What decoding can find wrong, told apart by type: a [`Problem`] leaves the record's extent
//! known and decoding goes on with the next record; a [`Damage`] leaves it unknown, so the rest
//! of the region cannot be decoded and the reader resumes at the next region.
//!
//! Both carry a [`Position`]: byte offset, record index, section, record type and field.

// Design: two types rather than one with an `is_recoverable` flag, so that what a caller may do
// next follows from the type it holds and cannot disagree with what the decoder did.

use std::fmt;

use miette::Diagnostic;

use crate::layout::{MetaRefused, WidthError, MAX_FIELDS_PER_RECORD};

/// Where a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// Absolute byte offset (the field, or the record when no field applies).
    pub offset: u64,
    /// Index of the record in the trace (counting every record from 0), when known: after a
    /// damaged region the count of later records is no longer exact.
    pub record_index: Option<u64>,
    /// Section id of the scope (0 = global region).
    pub section: u8,
    /// Section name ("" for the global region or an undeclared section).
    pub section_name: String,
    /// Record type name, when known.
    pub record: Option<String>,
    /// Field display name, when the problem is in one field.
    pub field: Option<String>,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}", self.offset)?;
        if let Some(i) = self.record_index {
            write!(f, ", record #{i}")?;
        }
        if self.section == 0 {
            f.write_str(", global region")?;
        } else if self.section_name.is_empty() {
            write!(f, ", section {}", self.section)?;
        } else {
            write!(f, ", section {} ({})", self.section_name, self.section)?;
        }
        match (&self.record, &self.field) {
            (Some(r), Some(fl)) => write!(f, ", {r}.{fl}"),
            (Some(r), None) => write!(f, ", {r}"),
            _ => Ok(()),
        }
    }
}

/// A problem that leaves the record's extent known: the trace is invalid, decoding goes on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {kind}")]
pub struct Problem {
    /// Where.
    pub at: Position,
    /// What.
    pub kind: ProblemKind,
}

/// What a [`Problem`] is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProblemKind {
    /// A field differs from its fixed `value` property.
    #[error("value {found} differs from the DTD's fixed value {expected}")]
    FixedValue {
        /// The DTD's value.
        expected: u64,
        /// The decoded value.
        found: u64,
    },
    /// A metadata record that cannot be applied; the state is unchanged.
    #[error("bad metadata: {0}")]
    Metadata(MetaRefused),
    /// A `section` record whose number disagrees with the section index.
    #[error("section record says section {record}, the section index says {index}")]
    SectionNumberMismatch {
        /// Number in the index.
        index: u8,
        /// Number in the record.
        record: u64,
    },
    /// A `section` record anywhere but at the start of a section.
    #[error("a `section` record may only open a section listed in the index")]
    MisplacedSection,
    /// A reference that cannot be followed.
    #[error(transparent)]
    Reference(RefError),
    /// The header's `nrecords` differs from the records decoded.
    #[error("header says {header} records, the trace holds {actual}")]
    RecordCount {
        /// `nrecords` in the header.
        header: u64,
        /// Records decoded.
        actual: u64,
    },
}

/// Why a `sectionOffset` or `sectionStride` value leads to no element (docs/format.md §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    /// An offset that is not the start of an element.
    #[error("{}", offset_message(*section, *offset, *content))]
    BadOffset {
        /// Target section.
        section: u8,
        /// The offset.
        offset: u64,
        /// Size of the section's content.
        content: u64,
    },
    /// An index outside the section.
    #[error(
        "sectionStride element {index} is outside section {section} ({})",
        plural(*count, "element", "elements")
    )]
    BadIndex {
        /// Target section.
        section: u8,
        /// The index.
        index: i64,
        /// Number of elements.
        count: u64,
    },
    /// A section the trace does not contain.
    #[error("refers to section {section}, which this trace does not contain")]
    MissingSection {
        /// The section id.
        section: u8,
    },
    /// A section whose own region is damaged before the element.
    #[error("refers to section {section}, which is damaged at byte {at} before the element")]
    DamagedSection {
        /// The section id.
        section: u8,
        /// Where its decoding stopped.
        at: u64,
    },
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn offset_message(section: u8, offset: u64, content: u64) -> String {
    if offset >= content {
        format!("sectionOffset {offset} is outside section {section} ({content} content bytes)")
    } else {
        format!(
            "sectionOffset {offset} is not the start of an element of section {section} (a \
             record other than section, metadata or comment)"
        )
    }
}

/// Damage: the current record's length is unknown, so nothing after it in the same region can
/// be decoded. The reader reports it and resumes at the next region.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {kind}")]
pub struct Damage {
    /// Where.
    pub at: Position,
    /// What.
    pub kind: DamageKind,
}

/// What a [`Damage`] is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DamageKind {
    /// A tag that no record type of the current scope has.
    #[error("unknown tag {tag} in this section")]
    UnknownTag {
        /// The tag value read.
        tag: u64,
    },
    /// A record or field runs past the end of its region.
    #[error("truncated: needs {needed} byte(s), {available} left in the section")]
    Truncated {
        /// Bytes needed.
        needed: u64,
        /// Bytes left in the region.
        available: u64,
    },
    /// A metadata property code outside 0..7.
    #[error("bad metadata: unknown property code {code} (0..7 are defined); the record's length is unknown")]
    UnknownMetaCode {
        /// The code.
        code: u8,
    },
    /// A section region that does not begin with its `section` record.
    #[error("the section does not begin with a `section` record")]
    MissingSectionRecord,
    /// A section in the index that the DTD does not declare.
    #[error("section id not declared in the DTD")]
    UndeclaredSection,
    /// A repeat count the reader refuses (docs/format.md §6.4).
    #[error("repeat count {count} is impossible with {available} byte(s) left in the section")]
    RepeatTooLong {
        /// The count.
        count: u64,
        /// Bytes left in the region.
        available: u64,
    },
    /// More field occurrences than a record may hold (docs/format.md §6.4).
    #[error(
        "record has more than {fields} field occurrences; the limit is {MAX_FIELDS_PER_RECORD}"
    )]
    RecordTooLarge {
        /// Field occurrences decoded when the limit was passed.
        fields: u64,
    },
    /// More field occurrences than the record's bytes allow (docs/format.md §6.4): repeats of
    /// items that take no bytes.
    #[error(
        "record has {fields} field occurrences in {bytes} byte(s); the limit is {limit} (one per field of its type, {} per byte, and what is left of the trace's reserve of {})",
        crate::limits::MAX_OCCURRENCES_PER_BYTE,
        crate::limits::SPARSE_RESERVE
    )]
    SparseRecord {
        /// Field occurrences decoded when the limit was passed.
        fields: u64,
        /// Bytes of the record read so far.
        bytes: u64,
        /// The limit for those bytes.
        limit: u64,
    },
    /// A width expression that overflows or goes negative.
    #[error("bad width: {0}")]
    BadWidth(WidthError),
}

impl ProblemKind {
    /// The diagnostic code, `mtf::trace::…`.
    pub fn code(&self) -> &'static str {
        match self {
            ProblemKind::FixedValue { .. } => "mtf::trace::fixed_value",
            ProblemKind::Metadata(_) => "mtf::trace::bad_metadata",
            ProblemKind::SectionNumberMismatch { .. } => "mtf::trace::section_number",
            ProblemKind::MisplacedSection => "mtf::trace::misplaced_section",
            ProblemKind::Reference(_) => "mtf::trace::bad_reference",
            ProblemKind::RecordCount { .. } => "mtf::trace::record_count",
        }
    }
}

impl DamageKind {
    /// The diagnostic code, `mtf::trace::…`.
    pub fn code(&self) -> &'static str {
        match self {
            DamageKind::UnknownTag { .. } => "mtf::trace::unknown_tag",
            DamageKind::Truncated { .. } => "mtf::trace::truncated",
            DamageKind::UnknownMetaCode { .. } => "mtf::trace::bad_metadata",
            DamageKind::MissingSectionRecord => "mtf::trace::missing_section_record",
            DamageKind::UndeclaredSection => "mtf::trace::undeclared_section",
            DamageKind::RepeatTooLong { .. } => "mtf::trace::repeat_count",
            DamageKind::RecordTooLarge { .. } => "mtf::trace::record_too_large",
            DamageKind::SparseRecord { .. } => "mtf::trace::sparse_record",
            DamageKind::BadWidth(_) => "mtf::trace::bad_width",
        }
    }
}

impl Diagnostic for Problem {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.kind.code()))
    }
}

impl Diagnostic for Damage {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.kind.code()))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(
            "the rest of this region cannot be decoded; reading resumes at the next section",
        ))
    }
}
