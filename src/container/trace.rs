//! An opened trace: its bytes (mapped, owned or borrowed) with the checked header and section
//! index.

// Design: one type `Trace<'a>` covers the three ways of holding the bytes; a trace read from a
// file or a `Vec` is `Trace<'static>`. The header and index hold only offsets, never slices, so
// an owned trace is not self-referential; views borrow from `&self`.

use std::ffi::OsStr;
use std::ops::Range;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::dtdpath::{locate_dtd, Located};
use super::error::ContainerError;
use super::header::Header;
use super::section::SectionIndex;

/// The bytes of a trace.
#[derive(Debug)]
pub enum TraceData<'a> {
    /// A read-only memory map of a file.
    Mmap(Mmap),
    /// Bytes owned by the trace (also used for empty files, which cannot be mapped).
    Owned(Vec<u8>),
    /// Bytes borrowed from the caller.
    Borrowed(&'a [u8]),
}

impl TraceData<'_> {
    /// The whole file.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match self {
            TraceData::Mmap(m) => m,
            TraceData::Owned(v) => v,
            TraceData::Borrowed(b) => b,
        }
    }
}

/// A trace whose container (header and section index, docs/format.md §2) has been checked.
///
/// Records are not decoded here; [`Trace::global_bytes`] and [`Trace::section_bytes`] give the
/// regions the decoder walks.
#[derive(Debug)]
pub struct Trace<'a> {
    data: TraceData<'a>,
    header: Header,
    index: SectionIndex,
    path: Option<PathBuf>,
    damage: Option<ContainerError>,
    /// Whether `data` is the head of a stream only (header and section table,
    /// [`Trace::stream_head`]).
    head: bool,
}

impl Trace<'static> {
    /// Checks a trace held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Trace<'static>, ContainerError> {
        Trace::from_data(TraceData::Owned(bytes), None)
    }
}

impl<'a> Trace<'a> {
    /// Let the operating system drop from memory the pages of a memory-mapped trace that lie
    /// before byte `offset` (rounded down to 64 KiB); a reader that has passed them calls this
    /// so that reading a trace of any size keeps only a window of it resident. Nothing changes
    /// for a trace held in memory. The bytes stay readable: a page read again is read again
    /// from the file.
    pub fn release_before(&self, offset: u64) {
        self.release_range(0, offset);
    }

    /// As [`Trace::release_before`], for the pages between bytes `from` (rounded up to 64 KiB)
    /// and `to` (rounded down): what a reader of one part of the trace has passed, beside
    /// readers of the other parts.
    // Unsafe code (docs/architecture.md): `madvise` on the mapping.
    // Design: called once per few megabytes from decoders' inner loops; kept out of them (not
    // inlined) so that it takes none of their registers.
    #[allow(unsafe_code)]
    #[inline(never)]
    pub fn release_range(&self, from: u64, to: u64) {
        // Design: MADV_DONTNEED on a read-only file mapping only drops clean page-cache pages
        // from this process's resident set; a later access faults them back in from the file,
        // so borrowed slices (tables read behind the cursor) stay valid. It is never applied
        // to owned bytes, where it would zero anonymous memory.
        #[cfg(unix)]
        if let TraceData::Mmap(m) = &self.data {
            const STEP: u64 = 1 << 16;
            let len = m.len() as u64;
            let to = to.min(len) & !(STEP - 1);
            let from = from.min(to).div_ceil(STEP) * STEP;
            if to > from {
                // SAFETY: the mapping is read-only and file-backed (see the design note above):
                // dropping its pages does not change what any reference into it reads.
                let _ = unsafe {
                    m.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        from as usize,
                        (to - from) as usize,
                    )
                };
            }
        }
        #[cfg(not(unix))]
        let _ = (from, to);
    }

    /// Checks a trace borrowed from the caller.
    pub fn from_slice(bytes: &'a [u8]) -> Result<Trace<'a>, ContainerError> {
        Trace::from_data(TraceData::Borrowed(bytes), None)
    }

    /// Checks a trace from any [`TraceData`]; `path`, if given, is kept for DTD lookup and
    /// named in errors.
    pub fn from_data(
        data: TraceData<'a>,
        path: Option<PathBuf>,
    ) -> Result<Trace<'a>, ContainerError> {
        let parsed = parse_strict(data.bytes(), path.as_ref())?;
        Ok(Trace::with(data, parsed, path, None))
    }

    /// As [`Trace::from_data`], but a trace whose section table does not match the file (cut
    /// short by a crashed tracer, say) is still opened: its header is read, its sections are
    /// trusted in file order up to the first implausible entry, the last one ends at the end of
    /// the file, and [`Trace::damage`] holds the error the strict reading found. Fails only when
    /// the header itself is unreadable.
    pub fn salvage(
        data: TraceData<'a>,
        path: Option<PathBuf>,
    ) -> Result<Trace<'a>, ContainerError> {
        let error = match parse_strict(data.bytes(), path.as_ref()) {
            Ok(parsed) => return Ok(Trace::with(data, parsed, path, None)),
            Err(e) => e,
        };
        match super::salvage::salvage(data.bytes(), &error) {
            Some(parsed) => Ok(Trace::with(data, parsed, path, Some(error))),
            None => Err(error),
        }
    }

    /// A trace of `data` whose header and section table are `parsed`, with the `damage` a
    /// salvaging reading stepped over.
    fn with(
        data: TraceData<'a>,
        (header, index): (Header, SectionIndex),
        path: Option<PathBuf>,
        damage: Option<ContainerError>,
    ) -> Trace<'a> {
        Trace {
            data,
            header,
            index,
            path,
            damage,
            head: false,
        }
    }

    /// The head of a trace read as a stream: `head` holds the header and the whole section
    /// table (at least `start` bytes), checked as far as they can be without the length of the
    /// file, which is not known yet. The checks that need it are
    /// [`Trace::check_stream_length`], once the stream has ended. The regions lie beyond the
    /// bytes; the last one ends at `u64::MAX` when the trace has no sections.
    pub(crate) fn stream_head(
        head: Vec<u8>,
        path: Option<PathBuf>,
    ) -> Result<Trace<'static>, ContainerError> {
        let header = Header::parse_fields(&head)?;
        header.check_claims(u64::MAX)?;
        let index = SectionIndex::parse_len(&head, &header, None)?;
        Ok(Trace {
            data: TraceData::Owned(head),
            header,
            index,
            path,
            damage: None,
            head: true,
        })
    }

    /// The error the container checks give for a file that starts with `head` (at least its
    /// header and section table) and is `file_len` bytes long, in the order
    /// [`Trace::from_data`] makes them; `None` when it passes.
    pub(crate) fn check_stream_length(head: &[u8], file_len: u64) -> Option<ContainerError> {
        Header::parse_fields(head)
            .and_then(|h| {
                h.check_claims(file_len)?;
                SectionIndex::parse_len(head, &h, Some(file_len))
            })
            .err()
    }

    /// Whether this is the head of a trace read as a stream: [`Trace::bytes`] holds the header
    /// and section table only.
    pub fn is_head(&self) -> bool {
        self.head
    }

    /// For a trace opened by [`Trace::salvage`] whose container is damaged, the error the strict
    /// reading found; the regions are then only what could be trusted, and the record count of
    /// the header is not checked.
    pub fn damage(&self) -> Option<&ContainerError> {
        self.damage.as_ref()
    }

    /// The whole file.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        self.data.bytes()
    }

    /// The checked header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The checked section index.
    pub fn sections(&self) -> &SectionIndex {
        &self.index
    }

    /// The DTD name exactly as stored in the header.
    pub fn dtd_name(&self) -> &str {
        &self.header.dtd_name
    }

    /// The path the trace was opened from, if any.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The folder that holds the trace (`.` for a bare file name), if it was opened from a path.
    pub fn dir(&self) -> Option<&Path> {
        let parent = self.path.as_deref()?.parent()?;
        Some(if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        })
    }

    /// Finds this trace's DTD (docs/format.md §10), given the user's `--dtd` and the value of
    /// `MTF_DTD_PATH`; see [`locate_dtd`].
    pub fn locate_dtd(&self, explicit: Option<&Path>, env_path: Option<&OsStr>) -> Located {
        locate_dtd(explicit, self.dtd_name(), self.dir(), env_path)
    }

    /// The bytes of `range`, which must lie within the file (as every range from
    /// [`SectionIndex`] does).
    ///
    /// # Panics
    ///
    /// If `range` is outside the file.
    pub fn region(&self, range: Range<u64>) -> &[u8] {
        &self.bytes()[range.start as usize..range.end as usize]
    }

    /// All records: the bytes from `start` to the end of the file.
    pub fn records_bytes(&self) -> &[u8] {
        &self.bytes()[self.header.start as usize..]
    }

    /// The records of the global region.
    pub fn global_bytes(&self) -> &[u8] {
        self.region(self.index.global_region())
    }

    /// The bytes of section `number` (starting with its `section` record), if present.
    pub fn section_bytes(&self, number: u8) -> Option<&[u8]> {
        self.index.by_number(number).map(|s| self.region(s.range()))
    }

    /// Gives back the bytes.
    pub fn into_data(self) -> TraceData<'a> {
        self.data
    }
}

/// The header and section table of a whole file, checked; an error names `path` when given.
fn parse_strict(
    bytes: &[u8],
    path: Option<&PathBuf>,
) -> Result<(Header, SectionIndex), ContainerError> {
    Header::parse(bytes)
        .and_then(|header| SectionIndex::parse(bytes, &header).map(|i| (header, i)))
        .map_err(|e| match path {
            Some(path) => ContainerError::InFile {
                path: path.clone(),
                source: Box::new(e),
            },
            None => e,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::{ByteOrder, Class};

    fn sample() -> Vec<u8> {
        let mut bytes = Header::encode(
            Class::Bits32,
            ByteOrder::Little,
            "x.dtd",
            3,
            2,
            &[(4, 3), (1, 2)],
        )
        .unwrap();
        bytes.extend_from_slice(&[10, 11, 20, 21, 22, 30, 31]);
        bytes
    }

    /// Pages released behind a reader are read again from the file: the bytes do not change.
    #[allow(unsafe_code)]
    #[test]
    fn released_pages_of_a_mapped_trace_read_the_same() {
        let mut bytes = sample();
        // Several 64 KiB steps of comment records (tag 1, length 0) after the sample's records.
        let extra = 3 << 16;
        bytes.extend(std::iter::repeat_n([1u8, 0u8], extra / 2).flatten());
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &bytes).unwrap();
        let f = std::fs::File::open(file.path()).unwrap();
        // SAFETY: a private temporary file that nothing else writes.
        let map = unsafe { memmap2::Mmap::map(&f) }.unwrap();
        // The appended bytes lie outside the section table: salvaged, the trace keeps its map.
        let trace = Trace::salvage(TraceData::Mmap(map), None).unwrap();
        assert!(matches!(trace.data, TraceData::Mmap(_)));
        let before = trace.bytes().to_vec();
        trace.release_before(bytes.len() as u64);
        assert_eq!(trace.bytes(), &before[..]);
        assert_eq!(trace.bytes(), &bytes[..]);
    }

    #[test]
    fn from_bytes_and_slice_give_regions() {
        let bytes = sample();
        let owned = Trace::from_bytes(bytes.clone()).unwrap();
        let borrowed = Trace::from_slice(&bytes).unwrap();
        for t in [&owned, &borrowed] {
            assert_eq!(t.dtd_name(), "x.dtd");
            assert_eq!(t.global_bytes(), &[10, 11]);
            assert_eq!(t.section_bytes(4), Some(&[20u8, 21, 22][..]));
            assert_eq!(t.section_bytes(1), Some(&[30u8, 31][..]));
            assert_eq!(t.section_bytes(2), None);
            assert_eq!(t.records_bytes(), &[10, 11, 20, 21, 22, 30, 31]);
            assert_eq!(t.path(), None);
            assert_eq!(t.dir(), None);
            assert_eq!(t.sections().len(), 2);
            assert_eq!(t.header().nrecords, 3);
        }
        assert_eq!(owned.into_data().bytes(), &bytes[..]);
    }

    #[test]
    fn bare_file_name_dir_is_dot() {
        let t = Trace::from_data(TraceData::Owned(sample()), Some(PathBuf::from("t.mtf"))).unwrap();
        assert_eq!(t.dir(), Some(Path::new(".")));
    }

    #[test]
    fn bytes_errors_have_no_path() {
        let e = Trace::from_bytes(b"\x7FMTF".to_vec()).unwrap_err();
        assert!(matches!(e, ContainerError::TruncatedHeader { .. }));
    }
}
