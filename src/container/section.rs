//! The section header table (docs/format.md §2.2): [`SectionHeader`] and the checked
//! [`SectionIndex`].

// Design: because section ids are distinct bytes 1..=255, a valid table has at most 255
// entries whatever `nsections` claims; the parser reserves at most that much and stops at the
// first duplicate, so a huge claim in a huge file still costs no more than 255 entries before
// it is rejected. Lookup by id is a 256-entry table of indices, so `by_number` is one load.

use std::ops::Range;

use super::error::ContainerError;
use super::header::Header;

/// One section header: three `W`-byte integers on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SectionHeader {
    /// `sh_number`: the section id, 1..=255.
    pub number: u8,
    /// `sh_start`: offset from the start of the file of the section's `section` record.
    pub start: u64,
    /// `sh_size`: size in bytes, from the `section` record to the next section or end of file.
    pub size: u64,
}

impl SectionHeader {
    /// The byte range `[start, start + size)` the section covers.
    pub fn range(&self) -> Range<u64> {
        self.start..self.start + self.size
    }
}

/// The checked section header table of a trace.
///
/// [`SectionIndex::parse`] guarantees rules 1–3 of §2.2 except "declared in the DTD", which the
/// decoder checks: ids are 1..=255 and distinct, the sections are listed in file order, each
/// starts where the previous one ends, the first starts at or after `start`, none is empty, and
/// the last ends at the end of the file. So the global region and the sections tile
/// `[start, file length)` exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionIndex {
    sections: Vec<SectionHeader>,
    by_number: [Option<u16>; 256],
    start: u64,
    file_len: u64,
}

impl SectionIndex {
    /// Parses and checks the section header table of `bytes` (the whole file), whose header is
    /// `header` (from [`Header::parse`] on the same bytes).
    pub fn parse(bytes: &[u8], header: &Header) -> Result<SectionIndex, ContainerError> {
        let file_len = bytes.len() as u64;
        let w = header.int_width as usize;
        let order = header.byte_order;
        // Header::parse checked that [header_len, start) is inside the file and holds exactly
        // nsections entries; re-derive the count from the slice so that a Header built by hand
        // cannot make us read out of bounds.
        let table = bytes
            .get(header.header_len as usize..header.start as usize)
            .ok_or(ContainerError::TruncatedHeader {
                offset: header.header_len,
                what: "section header table",
                needed: header.start.saturating_sub(header.header_len),
                available: file_len.saturating_sub(header.header_len),
            })?;
        let count = table.len() / (3 * w);
        let mut sections = Vec::with_capacity(count.min(255));
        let mut by_number = [None::<u16>; 256];
        let mut previous: Option<SectionHeader> = None;

        for (index, raw) in table.chunks_exact(3 * w).enumerate() {
            let at = header.header_len + (index * 3 * w) as u64;
            let (off_number, off_start, off_size) = (at, at + w as u64, at + 2 * w as u64);
            let number = order.read_uint(raw, w);
            let sh_start = order.read_uint(&raw[w..], w);
            let sh_size = order.read_uint(&raw[2 * w..], w);

            if !(1..=255).contains(&number) {
                return Err(ContainerError::BadSectionNumber {
                    offset: off_number,
                    index,
                    number,
                });
            }
            let number = number as u8;
            if let Some(first) = by_number[number as usize] {
                return Err(ContainerError::DuplicateSection {
                    offset: off_number,
                    number,
                    first: first as usize,
                    second: index,
                });
            }

            match previous {
                None if sh_start < header.start => {
                    return Err(ContainerError::SectionBeforeStart {
                        offset: off_start,
                        sh_start,
                        start: header.start,
                    })
                }
                None => {}
                Some(prev) => {
                    // `prev` passed the end-of-file check, so its end does not overflow.
                    let previous_end = prev.start + prev.size;
                    if sh_start <= prev.start {
                        return Err(ContainerError::SectionsNotInOrder {
                            offset: off_start,
                            index,
                            sh_start,
                            previous: prev.start,
                        });
                    }
                    if sh_start < previous_end {
                        return Err(ContainerError::SectionOverlap {
                            offset: off_start,
                            index,
                            sh_start,
                            previous_end,
                        });
                    }
                    if sh_start > previous_end {
                        return Err(ContainerError::SectionGap {
                            offset: off_start,
                            index,
                            sh_start,
                            previous_end,
                        });
                    }
                }
            }
            if sh_size == 0 {
                return Err(ContainerError::EmptySection {
                    offset: off_size,
                    index,
                });
            }
            let past_eof = match sh_start.checked_add(sh_size) {
                Some(end) => end > file_len,
                None => true,
            };
            if past_eof {
                return Err(ContainerError::SectionBeyondEof {
                    offset: off_number,
                    index,
                    sh_start,
                    sh_size,
                    file_len,
                });
            }

            let sh = SectionHeader {
                number,
                start: sh_start,
                size: sh_size,
            };
            // index < 255 here: a 256th entry would have hit a duplicate above.
            by_number[number as usize] = Some(index as u16);
            sections.push(sh);
            previous = Some(sh);
        }

        if let Some(last) = previous {
            let end = last.start + last.size;
            if end != file_len {
                let index = sections.len() - 1;
                return Err(ContainerError::LastSectionShort {
                    offset: header.header_len + (index * 3 * w + 2 * w) as u64,
                    index,
                    end,
                    file_len,
                });
            }
        }

        Ok(SectionIndex {
            sections,
            by_number,
            start: header.start,
            file_len,
        })
    }

    /// The section headers, in file order.
    pub fn sections(&self) -> &[SectionHeader] {
        &self.sections
    }

    /// Number of sections.
    pub fn len(&self) -> usize {
        self.sections.len()
    }

    /// Whether the trace has no sections.
    pub fn is_empty(&self) -> bool {
        self.sections.is_empty()
    }

    /// The global region: from `start` to the first section, or to the end of the file when
    /// there are no sections. May be empty.
    pub fn global_region(&self) -> Range<u64> {
        let end = self.sections.first().map_or(self.file_len, |s| s.start);
        self.start..end
    }

    /// Each section's id and byte range, in file order.
    pub fn regions(&self) -> impl ExactSizeIterator<Item = (u8, Range<u64>)> + '_ {
        self.sections.iter().map(|s| (s.number, s.range()))
    }

    /// The header of section `number`, if the trace has that section.
    #[inline]
    pub fn by_number(&self, number: u8) -> Option<&SectionHeader> {
        self.by_number[number as usize].map(|i| &self.sections[i as usize])
    }

    /// The position in file order of section `number`, if the trace has that section.
    #[inline]
    pub fn index_of(&self, number: u8) -> Option<usize> {
        self.by_number[number as usize].map(usize::from)
    }
}
