//! Reading what a damaged trace still holds: a trace cut short by a crashed tracer, or one whose
//! section table does not match the file, still has records worth showing (issue: "a truncated
//! trace still shows what it holds").

// Design: the fixed header, the header integers and the DTD name must be intact — without the
// byte order, the class and the DTD nothing can be decoded. The section table is then trusted
// entry by entry, in file order, up to the first entry that is not plausible (an id outside
// 1..255 or seen before, a start before the records or before the previous section's end, a start
// at or past the end of the file); each section ends where the next begins, the last one at the
// end of the file. The checks of `Header::parse` and `SectionIndex::parse` are not weakened:
// this is a separate, explicitly lenient reading, and the trace it yields always carries the
// error that made the strict reading fail.

use super::error::ContainerError;
use super::header::{Header, OFF_INTEGERS};
use super::section::{SectionHeader, SectionIndex};

/// Whether a container error leaves the header itself unreadable (nothing can be salvaged).
fn header_is_broken(e: &ContainerError) -> bool {
    matches!(
        e,
        ContainerError::BadMagic { .. }
            | ContainerError::TruncatedHeader { .. }
            | ContainerError::BadClass { .. }
            | ContainerError::BadByteOrder { .. }
            | ContainerError::EmptyDtdName { .. }
            | ContainerError::BadIntWidth { .. }
            | ContainerError::ReservedNotZero { .. }
            | ContainerError::UnknownExtension { .. }
            | ContainerError::DtdNameNotUtf8 { .. }
            | ContainerError::Io { .. }
    )
}

/// The header and a section index of what can be trusted in `bytes`, or `None` when the header
/// itself is unreadable. `error` is the strict reading's error.
pub(crate) fn salvage(bytes: &[u8], error: &ContainerError) -> Option<(Header, SectionIndex)> {
    if header_is_broken(error.innermost()) {
        return None;
    }
    // The fields that precede the claims are intact: read them as the strict parser does, on a
    // prefix that ends at the DTD name so that no claim about the rest of the file is checked.
    let prefix_len = {
        let w = match bytes.get(7) {
            Some(8) => 8,
            _ => 4,
        };
        let dtd_len = *bytes.get(6)? as usize;
        OFF_INTEGERS as usize + 3 * w + dtd_len
    };
    let mut header = Header::parse_fields(bytes.get(..prefix_len)?).ok()?;
    let file_len = bytes.len() as u64;
    let w = header.int_width as u64;
    // The records start after the table the header claims, or at the end of the file.
    let room = (file_len - header.header_len) / (3 * w);
    let nsections = header.nsections.min(room).min(255);
    header.start = header.start.clamp(header.header_len, file_len);
    let order = header.byte_order;
    let mut sections: Vec<SectionHeader> = Vec::new();
    let mut seen = [false; 256];
    for i in 0..nsections {
        let at = (header.header_len + i * 3 * w) as usize;
        let read = |k: u64| order.read_uint(&bytes[at + (k * w) as usize..], w as usize);
        let (number, start) = (read(0), read(1));
        let after_previous = sections.last().map_or(header.start, |s| s.start + 1);
        if !(1..=255).contains(&number)
            || seen[number as usize]
            || start < after_previous
            || start >= file_len
        {
            break;
        }
        seen[number as usize] = true;
        if let Some(prev) = sections.last_mut() {
            prev.size = start - prev.start;
        }
        sections.push(SectionHeader {
            number: number as u8,
            start,
            size: file_len - start,
        });
    }
    header.nsections = sections.len() as u64;
    let start = header.start;
    Some((header, SectionIndex::from_parts(sections, start, file_len)))
}
