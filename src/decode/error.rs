//! Decoding errors: every one carries the byte offset, the record index and the section.

use std::fmt;

/// What went wrong while decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// A tag that no record type of the current scope has.
    UnknownTag {
        /// The tag value read.
        tag: u64,
    },
    /// A record or field runs past the end of its region.
    Truncated {
        /// Bytes needed.
        needed: u64,
        /// Bytes left in the region.
        available: u64,
    },
    /// A field differs from its fixed `value` property.
    FixedValue {
        /// The DTD's value.
        expected: u64,
        /// The decoded value.
        found: u64,
    },
    /// A metadata record that cannot be applied.
    BadMetadata(String),
    /// A section region that does not begin with its `section` record.
    MissingSectionRecord,
    /// A `section` record whose number disagrees with the index.
    SectionNumberMismatch {
        /// Number in the index.
        index: u8,
        /// Number in the record.
        record: u64,
    },
    /// A `section` record anywhere but at the start of a section.
    MisplacedSection,
    /// A section in the index that the DTD does not declare.
    UndeclaredSection,
    /// A repeat count the decoder refuses (docs/format.md §6.4).
    RepeatTooLong {
        /// The count.
        count: u64,
        /// Bytes left in the region.
        available: u64,
    },
    /// A record with more field occurrences than the decoder accepts (docs/format.md §6.4).
    RecordTooLarge {
        /// Field occurrences decoded when the limit was passed.
        fields: u64,
    },
    /// A width expression that overflows or goes negative.
    BadWidth(String),
    /// A `sectionOffset` that is not the start of an element of its section.
    BadSectionOffset {
        /// Target section.
        section: u8,
        /// The offset.
        offset: u64,
        /// Size of the section's content.
        content: u64,
    },
    /// A `sectionStride` index outside its section.
    BadSectionIndex {
        /// Target section.
        section: u8,
        /// The index.
        index: i64,
        /// Number of elements in the section.
        count: u64,
    },
    /// A reference to a section that the trace does not contain.
    MissingSection {
        /// The section id.
        section: u8,
    },
    /// The header's `nrecords` differs from the records decoded.
    RecordCount {
        /// `nrecords` in the header.
        header: u64,
        /// Records decoded.
        actual: u64,
    },
}

/// A decoding error with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// Absolute byte offset of the problem (the field, or the record when no field applies).
    pub offset: u64,
    /// Index of the record in the trace (counting every record from 0), when known.
    pub record_index: Option<u64>,
    /// Section id of the scope (0 = global region).
    pub section: u8,
    /// Section name ("" for the global region).
    pub section_name: String,
    /// Record type name, when known.
    pub record: Option<String>,
    /// Field name, when the problem is in one field.
    pub field: Option<String>,
    /// What went wrong.
    pub kind: ErrorKind,
}

impl DecodeError {
    /// Whether decoding can go on with the next record of the same region.
    pub fn is_recoverable(&self) -> bool {
        !matches!(
            self.kind,
            ErrorKind::UnknownTag { .. }
                | ErrorKind::Truncated { .. }
                | ErrorKind::MissingSectionRecord
                | ErrorKind::UndeclaredSection
                | ErrorKind::RepeatTooLong { .. }
                | ErrorKind::RecordTooLarge { .. }
                | ErrorKind::BadWidth(_)
        )
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::UnknownTag { tag } => write!(f, "unknown tag {tag} in this section"),
            ErrorKind::Truncated { needed, available } => write!(
                f,
                "truncated: needs {needed} byte(s), {available} left in the section"
            ),
            ErrorKind::FixedValue { expected, found } => {
                write!(f, "value {found} differs from the DTD's fixed value {expected}")
            }
            ErrorKind::BadMetadata(m) => write!(f, "bad metadata: {m}"),
            ErrorKind::MissingSectionRecord => {
                f.write_str("the section does not begin with a `section` record")
            }
            ErrorKind::SectionNumberMismatch { index, record } => write!(
                f,
                "section record says section {record}, the section index says {index}"
            ),
            ErrorKind::MisplacedSection => {
                f.write_str("a `section` record may only open a section listed in the index")
            }
            ErrorKind::UndeclaredSection => f.write_str("section id not declared in the DTD"),
            ErrorKind::RepeatTooLong { count, available } => write!(
                f,
                "repeat count {count} is impossible with {available} byte(s) left in the section"
            ),
            ErrorKind::RecordTooLarge { fields } => write!(
                f,
                "record has more than {fields} field occurrences; the limit is {}",
                super::MAX_FIELDS_PER_RECORD
            ),
            ErrorKind::BadWidth(m) => write!(f, "bad width: {m}"),
            ErrorKind::BadSectionOffset {
                section,
                offset,
                content,
            } => {
                if offset >= content {
                    write!(
                        f,
                        "sectionOffset {offset} is outside section {section} ({content} content bytes)"
                    )
                } else {
                    write!(
                        f,
                        "sectionOffset {offset} is not the start of an element of section {section} (a record other than section, metadata or comment)"
                    )
                }
            }
            ErrorKind::BadSectionIndex {
                section,
                index,
                count,
            } => write!(
                f,
                "sectionStride element {index} is past the end of section {section} ({count} elements)"
            ),
            ErrorKind::MissingSection { section } => {
                write!(f, "refers to section {section}, which this trace does not contain")
            }
            ErrorKind::RecordCount { header, actual } => write!(
                f,
                "header says {header} records, the trace holds {actual}"
            ),
        }
    }
}

impl fmt::Display for DecodeError {
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
            (Some(r), Some(fl)) => write!(f, ", {r}.{fl}")?,
            (Some(r), None) => write!(f, ", {r}")?,
            _ => {}
        }
        write!(f, ": {}", self.kind)
    }
}

impl std::error::Error for DecodeError {}
