//! Errors found while reading or writing the trace container (docs/format.md §2, §9.2).

// Design: one flat enum, one variant per rule, so that a test can assert exactly which rule
// fired and at which byte. Offsets are absolute file offsets of the first byte of the field that
// is wrong (or, for truncation, of the first byte that is missing). Header-integer values are kept
// as `u64` even in 4-byte traces so that a message shows the value as stored.

use std::path::PathBuf;

use miette::Diagnostic;
use thiserror::Error;

/// The four bytes every trace starts with: `"\x7FMTF"` (docs/format.md §2.1).
pub const MAGIC: [u8; 4] = [0x7F, b'M', b'T', b'F'];

/// A broken container rule: the header or the section index of a trace is invalid.
///
/// Every variant that concerns a byte of the file carries `offset`, the absolute byte offset of
/// the offending field.
#[derive(Debug, Error, Diagnostic)]
#[non_exhaustive]
pub enum ContainerError {
    /// The file does not start with `"\x7FMTF"`.
    #[error(
        "not a Meta-TF trace: bad magic {} at offset {offset} (expected 7F 4D 54 46)",
        hex_and_text(found)
    )]
    #[diagnostic(code(mtf::trace::bad_magic))]
    BadMagic {
        /// Always 0.
        offset: u64,
        /// The bytes found (fewer than four if the file is shorter).
        found: Vec<u8>,
    },

    /// The file ends inside the header or the section header table.
    #[error(
        "truncated trace: the {what} at offset {offset} needs {needed} bytes but only \
         {available} remain"
    )]
    #[diagnostic(code(mtf::trace::truncated_header))]
    TruncatedHeader {
        /// Offset at which the missing part starts.
        offset: u64,
        /// What was being read (`"fixed header"`, `"DTD name"`, ...).
        what: &'static str,
        /// Bytes needed from `offset`.
        needed: u64,
        /// Bytes present from `offset` to the end of the file.
        available: u64,
    },

    /// The `class` byte is neither 1 (32-bit) nor 2 (64-bit).
    #[error("bad class {value} at offset {offset} (expected 1 = 32-bit or 2 = 64-bit)")]
    #[diagnostic(code(mtf::trace::bad_class))]
    BadClass {
        /// Always 4.
        offset: u64,
        /// The byte found.
        value: u8,
    },

    /// The `byteorder` byte is neither 1 (little-endian) nor 2 (big-endian).
    #[error(
        "bad byte order {value} at offset {offset} (expected 1 = little-endian or 2 = big-endian)"
    )]
    #[diagnostic(code(mtf::trace::bad_byte_order))]
    BadByteOrder {
        /// Always 5.
        offset: u64,
        /// The byte found.
        value: u8,
    },

    /// The `dtdlength` byte is 0; a DTD name is 1..255 bytes.
    #[error("empty DTD name: dtdlength at offset {offset} is 0 (expected 1..255)")]
    #[diagnostic(code(mtf::trace::empty_dtd_name))]
    EmptyDtdName {
        /// Always 6.
        offset: u64,
    },

    /// The `intwidth` byte is neither 0 (4-byte header integers) nor 8 (8-byte).
    #[error("bad intwidth {value} at offset {offset} (expected 0 = 4-byte or 8 = 8-byte header integers)")]
    #[diagnostic(code(mtf::trace::bad_intwidth))]
    BadIntWidth {
        /// Always 7.
        offset: u64,
        /// The byte found.
        value: u8,
    },

    /// The `extensions` byte declares an extension this reader does not know.
    #[error("header byte 8 (extensions) is {value:#04x}: this reader knows only extension live/1 (0x01)")]
    #[diagnostic(
        code(mtf::trace::unknown_extension),
        help("the trace needs a newer reader; a plain Meta-TF 1.0 trace has 0 here (docs/format.md §13)")
    )]
    UnknownExtension {
        /// Always 8.
        offset: u64,
        /// The byte found.
        value: u8,
    },

    /// One of the seven reserved bytes 9..16 is not zero.
    #[error("reserved header byte {index} (offset {offset}) is {value:#04x}, must be zero")]
    #[diagnostic(code(mtf::trace::reserved_not_zero))]
    ReservedNotZero {
        /// 8..16.
        offset: u64,
        /// Which reserved byte, 0..8.
        index: u8,
        /// The byte found.
        value: u8,
    },

    /// The DTD name is not valid UTF-8.
    #[error("DTD name at offset {offset} is not valid UTF-8 (bad byte at offset {bad_offset})")]
    #[diagnostic(code(mtf::trace::dtd_name_not_utf8))]
    DtdNameNotUtf8 {
        /// Offset of the first byte of the name.
        offset: u64,
        /// Offset of the first byte that is not valid UTF-8.
        bad_offset: u64,
    },

    /// `nsections · 3W` bytes of section headers do not fit in the file.
    #[error(
        "nsections = {nsections} (offset {offset}) needs {needed} bytes of section headers \
         but only {available} bytes follow the DTD name"
    )]
    #[diagnostic(code(mtf::trace::too_many_sections))]
    TooManySections {
        /// Offset of the `nsections` field (16).
        offset: u64,
        /// The value claimed.
        nsections: u64,
        /// Bytes the table would need (saturating).
        needed: u64,
        /// Bytes left in the file after the DTD name.
        available: u64,
    },

    /// `start` is not the end of the section header table.
    #[error("start = {start} (offset {offset}) must equal the end of the section header table, {expected}")]
    #[diagnostic(code(mtf::trace::bad_start))]
    BadStart {
        /// Offset of the `start` field (16 + W).
        offset: u64,
        /// The value found.
        start: u64,
        /// `16 + 3W + dtdlength + nsections·3W`.
        expected: u64,
    },

    /// `nrecords` is larger than the number of bytes after `start`; every record takes at least
    /// one byte (its tag), so such a count cannot be right.
    #[error(
        "nrecords = {nrecords} (offset {offset}) exceeds the {available} bytes of records after \
         start; every record is at least one byte"
    )]
    #[diagnostic(code(mtf::trace::too_many_records))]
    TooManyRecords {
        /// Offset of the `nrecords` field (16 + 2W).
        offset: u64,
        /// The value found.
        nrecords: u64,
        /// Bytes from `start` to the end of the file.
        available: u64,
    },

    /// A section header's `sh_number` is outside 1..255.
    #[error("section header {index}: sh_number {number} at offset {offset} is outside 1..255")]
    #[diagnostic(code(mtf::trace::bad_section_number))]
    BadSectionNumber {
        /// Offset of the `sh_number` field.
        offset: u64,
        /// Index of the section header in the table.
        index: usize,
        /// The value found.
        number: u64,
    },

    /// Two section headers name the same section.
    #[error(
        "section {number} listed twice: section headers {first} and {second} \
         (the second at offset {offset})"
    )]
    #[diagnostic(code(mtf::trace::duplicate_section))]
    DuplicateSection {
        /// Offset of the second header's `sh_number`.
        offset: u64,
        /// The section id.
        number: u8,
        /// Index of the first header with this id.
        first: usize,
        /// Index of the second header with this id.
        second: usize,
    },

    /// The first section starts before `start`, inside the header.
    #[error("section header 0: sh_start {sh_start} at offset {offset} is before the first record at {start}")]
    #[diagnostic(code(mtf::trace::section_before_start))]
    SectionBeforeStart {
        /// Offset of the `sh_start` field.
        offset: u64,
        /// The value found.
        sh_start: u64,
        /// The header's `start`.
        start: u64,
    },

    /// `sh_start` does not strictly increase (rule 1).
    #[error(
        "section header {index}: sh_start {sh_start} at offset {offset} is not after the previous \
         section's start {previous}; section headers must be in file order"
    )]
    #[diagnostic(code(mtf::trace::sections_not_in_order))]
    SectionsNotInOrder {
        /// Offset of the `sh_start` field.
        offset: u64,
        /// Index of the section header.
        index: usize,
        /// The value found.
        sh_start: u64,
        /// The previous header's `sh_start`.
        previous: u64,
    },

    /// A section starts before the previous one ends (rule 2).
    #[error(
        "section header {index}: sh_start {sh_start} at offset {offset} overlaps the previous \
         section, which ends at {previous_end}"
    )]
    #[diagnostic(code(mtf::trace::section_overlap))]
    SectionOverlap {
        /// Offset of the `sh_start` field.
        offset: u64,
        /// Index of the section header.
        index: usize,
        /// The value found.
        sh_start: u64,
        /// `sh_start + sh_size` of the previous header.
        previous_end: u64,
    },

    /// A section starts after the previous one ends, leaving bytes in no region (rule 2).
    #[error(
        "section header {index}: sh_start {sh_start} at offset {offset} leaves a gap after the \
         previous section, which ends at {previous_end}"
    )]
    #[diagnostic(code(mtf::trace::section_gap))]
    SectionGap {
        /// Offset of the `sh_start` field.
        offset: u64,
        /// Index of the section header.
        index: usize,
        /// The value found.
        sh_start: u64,
        /// `sh_start + sh_size` of the previous header.
        previous_end: u64,
    },

    /// A section has `sh_size` 0; it cannot hold its `section` record (rule 4).
    #[error("section header {index}: sh_size at offset {offset} is 0; a section holds at least its section record")]
    #[diagnostic(code(mtf::trace::empty_section))]
    EmptySection {
        /// Offset of the `sh_size` field.
        offset: u64,
        /// Index of the section header.
        index: usize,
    },

    /// A section runs past the end of the file.
    #[error(
        "section header {index} (offset {offset}): section [{sh_start}, {sh_start} + {sh_size}) \
         runs past the end of the file at {file_len}"
    )]
    #[diagnostic(code(mtf::trace::section_beyond_eof))]
    SectionBeyondEof {
        /// Offset of the section header (its `sh_number`).
        offset: u64,
        /// Index of the section header.
        index: usize,
        /// The section's `sh_start`.
        sh_start: u64,
        /// The section's `sh_size`.
        sh_size: u64,
        /// Length of the file.
        file_len: u64,
    },

    /// The last section ends before the end of the file (rule 2).
    #[error(
        "section header {index} (offset {offset}): the last section ends at {end}, \
         but the file is {file_len} bytes long"
    )]
    #[diagnostic(code(mtf::trace::last_section_short))]
    LastSectionShort {
        /// Offset of the last section header's `sh_size`.
        offset: u64,
        /// Index of the last section header.
        index: usize,
        /// `sh_start + sh_size`.
        end: u64,
        /// Length of the file.
        file_len: u64,
    },

    /// The trace file could not be opened, measured or mapped.
    #[error("cannot read trace {}: {source}", path.display())]
    #[diagnostic(code(mtf::trace::io))]
    Io {
        /// The path given.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A container error in a named file.
    #[error("{}: {source}", path.display())]
    #[diagnostic(code(mtf::trace::invalid))]
    InFile {
        /// The trace file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: Box<ContainerError>,
    },
}

/// `32 30 32 3A ("202:")`: bytes in hex, then as text when they are all printable ASCII.
fn hex_and_text(b: &[u8]) -> String {
    let hex: Vec<String> = b.iter().map(|x| format!("{x:02X}")).collect();
    let hex = if hex.is_empty() {
        "(none)".to_string()
    } else {
        hex.join(" ")
    };
    if !b.is_empty() && b.iter().all(|c| c.is_ascii_graphic() || *c == b' ') {
        format!("{hex} (\"{}\")", String::from_utf8_lossy(b))
    } else {
        hex
    }
}

impl ContainerError {
    /// The byte offset the error is about, if it concerns a byte of the file.
    pub fn offset(&self) -> Option<u64> {
        use ContainerError::*;
        match self {
            BadMagic { offset, .. }
            | TruncatedHeader { offset, .. }
            | BadClass { offset, .. }
            | BadByteOrder { offset, .. }
            | EmptyDtdName { offset }
            | BadIntWidth { offset, .. }
            | ReservedNotZero { offset, .. }
            | UnknownExtension { offset, .. }
            | DtdNameNotUtf8 { offset, .. }
            | TooManySections { offset, .. }
            | BadStart { offset, .. }
            | TooManyRecords { offset, .. }
            | BadSectionNumber { offset, .. }
            | DuplicateSection { offset, .. }
            | SectionBeforeStart { offset, .. }
            | SectionsNotInOrder { offset, .. }
            | SectionOverlap { offset, .. }
            | SectionGap { offset, .. }
            | EmptySection { offset, .. }
            | SectionBeyondEof { offset, .. }
            | LastSectionShort { offset, .. } => Some(*offset),
            Io { .. } => None,
            InFile { source, .. } => source.offset(),
        }
    }

    /// The error without any [`ContainerError::InFile`] wrapper.
    pub fn innermost(&self) -> &ContainerError {
        match self {
            ContainerError::InFile { source, .. } => source.innermost(),
            other => other,
        }
    }
}

/// A request to [`Header::encode`](super::Header::encode) that cannot produce a valid trace.
#[derive(Debug, Error, Diagnostic, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderEncodeError {
    /// The DTD name is empty or longer than 255 bytes.
    #[error("DTD name must be 1..255 bytes long, got {len}")]
    #[diagnostic(code(mtf::write::bad_dtd_name))]
    BadDtdName {
        /// Its length in bytes.
        len: usize,
    },
    /// A section id is 0.
    #[error("section {index}: section id 0 is not allowed (ids are 1..255)")]
    #[diagnostic(code(mtf::write::bad_section_number))]
    BadSectionNumber {
        /// Index in the section list.
        index: usize,
    },
    /// Two sections have the same id.
    #[error("section {number} appears twice: at {first} and {second}")]
    #[diagnostic(code(mtf::write::duplicate_section))]
    DuplicateSection {
        /// The section id.
        number: u8,
        /// Index of its first occurrence.
        first: usize,
        /// Index of its second occurrence.
        second: usize,
    },
    /// A section has size 0.
    #[error("section {index}: size 0 (a section holds at least its section record)")]
    #[diagnostic(code(mtf::write::empty_section))]
    EmptySection {
        /// Index in the section list.
        index: usize,
    },
    /// `nrecords` exceeds the number of record bytes; every record is at least one byte.
    #[error("nrecords = {nrecords} exceeds the {available} bytes of records")]
    #[diagnostic(code(mtf::write::too_many_records))]
    TooManyRecords {
        /// The count given.
        nrecords: u64,
        /// Bytes of records (global region plus sections).
        available: u64,
    },
    /// The file would be larger than 2⁶⁴−1 bytes.
    #[error("trace too large: offsets overflow 64 bits")]
    #[diagnostic(code(mtf::write::too_large))]
    TooLarge,
}
