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
        SectionIndex::parse_len(bytes, header, Some(bytes.len() as u64))
    }

    /// As [`SectionIndex::parse`], with `bytes` the start of a file of `file_len` bytes that
    /// holds at least the section header table; `None`: a stream whose length is not known yet,
    /// with every check that needs the length left out (the last region then ends at
    /// `u64::MAX` until it is known).
    pub(crate) fn parse_len(
        bytes: &[u8],
        header: &Header,
        known_len: Option<u64>,
    ) -> Result<SectionIndex, ContainerError> {
        let file_len = known_len.unwrap_or(u64::MAX);
        let w = header.int_width as usize;
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
            let entry = Entry::read(raw, header, at, index);
            let sh = entry.check(header, &by_number, previous, known_len)?;
            // index < 255 here: a 256th entry would have hit a duplicate.
            by_number[sh.number as usize] = Some(index as u16);
            sections.push(sh);
            previous = Some(sh);
        }
        if let Some(last) = previous {
            let end = last.start + last.size;
            if end != file_len && known_len.is_some() {
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
            file_len: if known_len.is_some() {
                file_len
            } else {
                // Until the length is known, the global region of a trace without sections
                // runs on; after a last section, the file must end where it does.
                previous.map_or(u64::MAX, |s| s.start + s.size)
            },
        })
    }

    /// An index of sections already known to tile `[start, file_len)` (a salvaged trace).
    pub(crate) fn from_parts(
        sections: Vec<SectionHeader>,
        start: u64,
        file_len: u64,
    ) -> SectionIndex {
        let mut by_number = [None; 256];
        for (i, s) in sections.iter().enumerate() {
            by_number[s.number as usize] = Some(i as u16);
        }
        SectionIndex {
            sections,
            by_number,
            start,
            file_len,
        }
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

/// One entry of the section header table as stored, with where it is.
struct Entry {
    /// Its index in the table.
    index: usize,
    /// The file offset of its number field (its start and size fields follow).
    at: u64,
    width: u64,
    number: u64,
    start: u64,
    size: u64,
}

impl Entry {
    /// Entry `index` of the table, stored at `at` as `raw`.
    fn read(raw: &[u8], header: &Header, at: u64, index: usize) -> Entry {
        let (w, order) = (header.int_width as usize, header.byte_order);
        Entry {
            index,
            at,
            width: w as u64,
            number: order.read_uint(raw, w),
            start: order.read_uint(&raw[w..], w),
            size: order.read_uint(&raw[2 * w..], w),
        }
    }

    /// The section it describes, checked: a number not seen before (`by_number`), placed
    /// right after the `previous` section (or at the start of the data), not empty, inside a
    /// file of `known_len` bytes.
    fn check(
        &self,
        header: &Header,
        by_number: &[Option<u16>; 256],
        previous: Option<SectionHeader>,
        known_len: Option<u64>,
    ) -> Result<SectionHeader, ContainerError> {
        let (index, number, sh_start, sh_size) = (self.index, self.number, self.start, self.size);
        let (off_number, off_size) = (self.at, self.at + 2 * self.width);
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
        self.check_place(header, previous)?;
        if sh_size == 0 {
            return Err(ContainerError::EmptySection {
                offset: off_size,
                index,
            });
        }
        let file_len = known_len.unwrap_or(u64::MAX);
        let past_eof = match sh_start.checked_add(sh_size) {
            Some(end) => end > file_len && known_len.is_some(),
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
        Ok(SectionHeader {
            number,
            start: sh_start,
            size: sh_size,
        })
    }

    /// Its start: at or after the data's start for the first section, right at the end of the
    /// `previous` one for the others.
    fn check_place(
        &self,
        header: &Header,
        previous: Option<SectionHeader>,
    ) -> Result<(), ContainerError> {
        let (index, sh_start, offset) = (self.index, self.start, self.at + self.width);
        let Some(prev) = previous else {
            if sh_start < header.start {
                return Err(ContainerError::SectionBeforeStart {
                    offset,
                    sh_start,
                    start: header.start,
                });
            }
            return Ok(());
        };
        // `prev` passed the end-of-file check, so its end does not overflow.
        let previous_end = prev.start + prev.size;
        if sh_start <= prev.start {
            return Err(ContainerError::SectionsNotInOrder {
                offset,
                index,
                sh_start,
                previous: prev.start,
            });
        }
        if sh_start < previous_end {
            return Err(ContainerError::SectionOverlap {
                offset,
                index,
                sh_start,
                previous_end,
            });
        }
        if sh_start > previous_end {
            return Err(ContainerError::SectionGap {
                offset,
                index,
                sh_start,
                previous_end,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::testutil::Raw;

    fn parse(raw: &Raw) -> Result<SectionIndex, ContainerError> {
        let bytes = raw.bytes();
        let h = Header::parse(&bytes).expect("header is valid in these tests");
        SectionIndex::parse(&bytes, &h)
    }

    /// Offset of field `f` (0 number, 1 start, 2 size) of section header `i`.
    fn field(raw: &Raw, i: usize, f: usize) -> u64 {
        raw.header_len() + ((3 * i + f) * raw.w()) as u64
    }

    fn two(sections: Vec<(u64, u64, u64)>, body_len: usize) -> Raw {
        Raw {
            sections,
            body_len,
            ..Raw::default()
        }
    }

    #[test]
    fn valid_layouts() {
        // Global region of 3 bytes, then sections 9 and 4.
        let raw = two(vec![(9, 3, 5), (4, 8, 2)], 10);
        let idx = parse(&raw).unwrap();
        let s = raw.table_end();
        assert_eq!(idx.len(), 2);
        assert_eq!(idx.global_region(), s..s + 3);
        assert_eq!(
            idx.regions().collect::<Vec<_>>(),
            vec![(9, s + 3..s + 8), (4, s + 8..s + 10)]
        );
        assert_eq!(idx.by_number(4).unwrap().start, s + 8);
        assert_eq!(idx.by_number(5), None);
        assert_eq!(idx.index_of(9), Some(0));
        // No sections: the global region is the whole record stream, maybe empty.
        let raw = two(vec![], 7);
        let idx = parse(&raw).unwrap();
        assert!(idx.is_empty());
        assert_eq!(idx.global_region(), raw.table_end()..raw.table_end() + 7);
        let idx = parse(&two(vec![], 0)).unwrap();
        assert!(idx.global_region().is_empty());
        // Empty global region.
        let idx = parse(&two(vec![(1, 0, 4)], 4)).unwrap();
        assert!(idx.global_region().is_empty());
        // 8-byte header integers, big-endian.
        let raw = Raw {
            intwidth: 8,
            order: 2,
            ..two(vec![(200, 1, 1)], 2)
        };
        let idx = parse(&raw).unwrap();
        assert_eq!(
            idx.by_number(200).unwrap().range(),
            raw.table_end() + 1..raw.table_end() + 2
        );
    }

    #[test]
    fn section_number_out_of_range() {
        for n in [0u64, 256, u32::MAX as u64] {
            let raw = two(vec![(1, 0, 1), (n, 1, 1)], 2);
            match parse(&raw).unwrap_err() {
                ContainerError::BadSectionNumber {
                    offset,
                    index: 1,
                    number,
                } => assert_eq!((offset, number), (field(&raw, 1, 0), n)),
                e => panic!("{e}"),
            }
        }
    }

    #[test]
    fn duplicate_section() {
        let raw = two(vec![(5, 0, 1), (6, 1, 1), (5, 2, 1)], 3);
        match parse(&raw).unwrap_err() {
            ContainerError::DuplicateSection {
                offset,
                number: 5,
                first: 0,
                second: 2,
            } => assert_eq!(offset, field(&raw, 2, 0)),
            e => panic!("{e}"),
        }
    }

    /// More headers than distinct ids: rejected at the 256th, whatever nsections says.
    #[test]
    fn more_than_255_sections() {
        let mut sections: Vec<_> = (1..=255u64).map(|n| (n, n - 1, 1)).collect();
        sections.push((17, 255, 1));
        sections.extend((0..1000).map(|i| (1, 256 + i, 1)));
        let raw = two(sections, 1256);
        match parse(&raw).unwrap_err() {
            ContainerError::DuplicateSection {
                number: 17,
                first: 16,
                second: 255,
                offset,
            } => assert_eq!(offset, field(&raw, 255, 0)),
            e => panic!("{e}"),
        }
    }

    #[test]
    fn section_before_start() {
        // sh_start points into the section table itself.
        let mut raw = two(vec![(1, 0, 4)], 4);
        raw.relative = false;
        raw.sections[0].1 = raw.table_end() - 1;
        match parse(&raw).unwrap_err() {
            ContainerError::SectionBeforeStart {
                offset,
                sh_start,
                start,
            } => {
                assert_eq!(offset, field(&raw, 0, 1));
                assert_eq!((sh_start, start), (raw.table_end() - 1, raw.table_end()));
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn not_in_order_overlap_gap() {
        let s = two(vec![], 0).table_end() + 24; // table_end with two sections
        let raw = two(vec![(1, 4, 2), (2, 0, 4)], 6);
        match parse(&raw).unwrap_err() {
            ContainerError::SectionsNotInOrder {
                offset,
                index: 1,
                sh_start,
                previous,
            } => {
                assert_eq!(offset, field(&raw, 1, 1));
                assert_eq!((sh_start, previous), (s, s + 4));
            }
            e => panic!("{e}"),
        }
        // Equal starts are "not increasing" too.
        let raw = two(vec![(1, 0, 2), (2, 0, 2)], 2);
        assert!(matches!(
            parse(&raw).unwrap_err(),
            ContainerError::SectionsNotInOrder { index: 1, .. }
        ));
        let raw = two(vec![(1, 0, 3), (2, 2, 2)], 4);
        match parse(&raw).unwrap_err() {
            ContainerError::SectionOverlap {
                offset,
                index: 1,
                sh_start,
                previous_end,
            } => {
                assert_eq!(offset, field(&raw, 1, 1));
                assert_eq!((sh_start, previous_end), (s + 2, s + 3));
            }
            e => panic!("{e}"),
        }
        let raw = two(vec![(1, 0, 2), (2, 3, 2)], 5);
        match parse(&raw).unwrap_err() {
            ContainerError::SectionGap {
                offset,
                index: 1,
                sh_start,
                previous_end,
            } => {
                assert_eq!(offset, field(&raw, 1, 1));
                assert_eq!((sh_start, previous_end), (s + 3, s + 2));
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn empty_section() {
        let raw = two(vec![(1, 0, 2), (2, 2, 0)], 2);
        match parse(&raw).unwrap_err() {
            ContainerError::EmptySection { offset, index: 1 } => {
                assert_eq!(offset, field(&raw, 1, 2))
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn beyond_eof_and_short() {
        let raw = two(vec![(1, 0, 2), (2, 2, 5)], 6);
        let file_len = raw.bytes().len() as u64;
        match parse(&raw).unwrap_err() {
            ContainerError::SectionBeyondEof {
                offset,
                index: 1,
                sh_size: 5,
                file_len: f,
                ..
            } => assert_eq!((offset, f), (field(&raw, 1, 0), file_len)),
            e => panic!("{e}"),
        }
        // A size that overflows u64 with its start.
        let raw = Raw {
            intwidth: 8,
            ..two(vec![(1, 0, u64::MAX)], 2)
        };
        assert!(matches!(
            parse(&raw).unwrap_err(),
            ContainerError::SectionBeyondEof {
                index: 0,
                sh_size: u64::MAX,
                ..
            }
        ));
        let raw = two(vec![(1, 0, 2), (2, 2, 3)], 6);
        let file_len = raw.bytes().len() as u64;
        match parse(&raw).unwrap_err() {
            ContainerError::LastSectionShort {
                offset,
                index: 1,
                end,
                file_len: f,
            } => {
                assert_eq!(offset, field(&raw, 1, 2));
                assert_eq!((end, f), (file_len - 1, file_len));
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn hand_built_header_cannot_cause_out_of_bounds() {
        let raw = two(vec![], 0);
        let bytes = raw.bytes();
        let mut h = Header::parse(&bytes).unwrap();
        h.start = 10_000;
        assert!(matches!(
            SectionIndex::parse(&bytes, &h).unwrap_err(),
            ContainerError::TruncatedHeader {
                what: "section header table",
                ..
            }
        ));
    }
}
