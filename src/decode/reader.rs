//! [`Reader`]: a trace's bytes and regions bound to a compiled schema; the source of
//! [`Records`](super::Records).

use std::cell::OnceCell;
use std::sync::Arc;

use crate::container::{ByteOrder, Class, Trace};
use crate::dtd::Schema;
use crate::layout::{Compiled, Wire};

use super::error::{Position, Problem, ProblemKind};
use super::records::{Event, Mode, Records};
use super::tables::ElementIndex;
use super::view::MetaChange;
use crate::dtd::Interp;
use crate::layout::MetaProperty;

/// One contiguous region of records: the global region (section 0) or a section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    /// Section id (0 = the global region).
    pub section: u8,
    /// Absolute offset of the first byte.
    pub start: u64,
    /// Absolute offset one past the last byte.
    pub end: u64,
}

/// What the decoder needs to know about the container, checked by whoever builds it.
#[derive(Debug, Clone)]
pub(crate) struct Input<'a> {
    /// The whole trace file (or the part the regions lie in); with `base` > 0 or `more`, a
    /// window of it: the bytes of the file from offset `base` on.
    pub(crate) bytes: &'a [u8],
    /// The offset in the file of `bytes[0]` (0 but for a window of a stream).
    pub(crate) base: u64,
    /// Whether the file goes on after the window (a stream not read to its end): a record that
    /// runs past the window stops the decode (`decode::stream`) rather than being damage.
    pub(crate) more: bool,
    /// With `more`: at a record boundary, the decode stops when fewer bytes than this are left
    /// in the window (and the region goes on), so that the window is refilled between records.
    pub(crate) margin: u64,
    /// Whether the trace is read as a stream (no random access: no pre-pass for tables).
    pub(crate) streamed: bool,
    pub(crate) order: ByteOrder,
    pub(crate) class: Class,
    /// Regions in file order: the global region first (possibly empty), then each section;
    /// every region lies within `bytes`.
    pub(crate) regions: Vec<Region>,
    /// `nrecords` from the header, when the count is to be checked.
    pub(crate) nrecords: Option<u64>,
    /// Where `nrecords` is stored in the header (for messages).
    pub(crate) nrecords_offset: u64,
    /// Whether the header declares extension `live/1` (docs/format.md §13).
    pub(crate) live: bool,
    /// The trace the bytes come from, when it is one (its pages are released behind the
    /// cursor: [`Trace::release_before`]).
    pub(crate) trace: Option<&'a Trace<'a>>,
}

/// A trace bound to its schema.
///
/// ```
/// # fn demo(reader: &metatf::decode::Reader) {
/// use metatf::decode::Event;
/// let mut records = reader.records();
/// while let Some(event) = records.next() {
///     match event {
///         Event::Record(r) => println!("{} at byte {}", r.name(), r.offset()),
///         Event::Problem(p) => eprintln!("{p}"),
///         Event::Damage(d) => eprintln!("{d}"),
///     }
/// }
/// # }
/// ```
pub struct Reader<'a> {
    pub(crate) input: Input<'a>,
    pub(crate) schema: &'a Schema,
    pub(crate) compiled: Arc<Compiled>,
    pub(crate) wire: Wire,
    pub(crate) region_of_section: Vec<Option<usize>>,
    pub(crate) tables: Vec<OnceCell<Option<ElementIndex>>>,
    /// Which sections are tables ([`Reader::is_table`]), found on first use.
    table_sections: OnceCell<[bool; 256]>,
}

impl<'a> Input<'a> {
    /// The `len` bytes of the file at absolute offset `offset` (which the window holds).
    #[inline]
    pub(crate) fn slice(&self, offset: u64, len: u64) -> &'a [u8] {
        let at = (offset - self.base) as usize;
        &self.bytes[at..at + len as usize]
    }

    /// The bytes of the file from absolute offset `offset` to the end of the window.
    #[inline]
    pub(crate) fn from(&self, offset: u64) -> &'a [u8] {
        &self.bytes[(offset - self.base) as usize..]
    }

    /// The absolute offset one past the window.
    #[inline]
    pub(crate) fn window_end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }
}

impl<'a> Reader<'a> {
    /// Bind an opened trace to its schema (compiles the schema's record programs).
    pub fn new(trace: &'a Trace<'_>, schema: &'a Schema) -> Reader<'a> {
        Reader::with_compiled(trace, schema, Arc::new(Compiled::new(schema)))
    }

    /// As [`Reader::new`], with the schema's programs compiled already (by
    /// [`crate::Opened`], once for all its readers).
    pub(crate) fn with_compiled(
        trace: &'a Trace<'_>,
        schema: &'a Schema,
        compiled: Arc<Compiled>,
    ) -> Reader<'a> {
        let header = trace.header();
        let index = trace.sections();
        let global = index.global_region();
        let mut regions = vec![Region {
            section: 0,
            start: global.start,
            end: global.end,
        }];
        regions.extend(index.regions().map(|(section, r)| Region {
            section,
            start: r.start,
            end: r.end,
        }));
        Reader::from_input(
            Input {
                bytes: trace.bytes(),
                order: header.byte_order,
                class: header.class,
                regions,
                // A salvaged trace holds fewer records than its header says.
                nrecords: trace.damage().is_none().then_some(header.nrecords),
                nrecords_offset: crate::container::OFF_INTEGERS + 2 * header.int_width as u64,
                live: header.extensions & crate::container::EXT_LIVE != 0,
                trace: Some(trace),
                base: 0,
                more: false,
                margin: 0,
                streamed: trace.is_head(),
            },
            schema,
            compiled,
        )
    }

    /// Bind checked input to a schema and its compiled programs.
    pub(crate) fn from_input(
        input: Input<'a>,
        schema: &'a Schema,
        compiled: Arc<Compiled>,
    ) -> Reader<'a> {
        debug_assert!(
            input.streamed
                || input
                    .regions
                    .iter()
                    .all(|r| r.start <= r.end && r.end <= input.bytes.len() as u64)
        );
        let mut region_of_section = vec![None; 256];
        for (i, r) in input.regions.iter().enumerate() {
            if r.section != 0 {
                region_of_section[r.section as usize] = Some(i);
            }
        }
        Reader {
            compiled,
            wire: Wire::new(schema),
            input,
            schema,
            region_of_section,
            tables: (0..256).map(|_| OnceCell::new()).collect(),
            table_sections: OnceCell::new(),
        }
    }

    /// Whether the trace is read as a stream ([`crate::Opened::stream`]): its records come from
    /// windows of it, never all at once, and a reader of its head ([`crate::Opened::reader`])
    /// gives its schema and regions but no records.
    pub fn is_streamed(&self) -> bool {
        self.input.streamed
    }

    /// The schema.
    pub fn schema(&self) -> &'a Schema {
        self.schema
    }

    /// The trace bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.input.bytes
    }

    /// The regions, in file order.
    pub fn regions(&self) -> &[Region] {
        &self.input.regions
    }

    /// The byte order.
    pub fn byte_order(&self) -> ByteOrder {
        self.input.order
    }

    /// The class (sets the metadata word size).
    pub fn class(&self) -> Class {
        self.input.class
    }

    /// Every record of the trace, in file order, with the problems found on the way.
    pub fn records(&self) -> Records<'_> {
        Records::new(self, (0..self.input.regions.len()).collect(), Mode::Main)
    }

    /// The records of one section only (none if the trace does not have it), in file order.
    pub fn section_records(&self, section: u8) -> Records<'_> {
        let regions = self.region_of_section[section as usize]
            .filter(|_| section != 0)
            .into_iter()
            .collect();
        Records::new(self, regions, Mode::Main)
    }

    /// The records of a run of regions (indices into [`Reader::regions`]), in file order, each
    /// region decoded from a fresh state as in a full decode. For decoding regions apart (on
    /// several threads: `metatf::parallel`): record indices count from 0 at the first region of
    /// the run, and the header's record count is not checked — the caller that decoded every
    /// region checks it with [`Reader::record_count_problem`].
    pub fn region_records(&self, regions: std::ops::Range<usize>) -> Records<'_> {
        let end = regions.end.min(self.input.regions.len());
        let regions = (regions.start.min(end)..end).collect();
        Records::new(self, regions, Mode::Part)
    }

    /// The problem a full decode reports at its end when the header's record count differs from
    /// the `decoded` records (`None` when they agree, when the trace was salvaged, or when
    /// `exact` is false: a damaged region left the count unknown).
    pub fn record_count_problem(&self, decoded: u64, exact: bool) -> Option<Problem> {
        let nrecords = self.input.nrecords?;
        (exact && decoded != nrecords).then(|| Problem {
            at: Position {
                offset: self.input.nrecords_offset,
                record_index: None,
                section: 0,
                section_name: String::new(),
                record: None,
                field: None,
            },
            kind: ProblemKind::RecordCount {
                header: nrecords,
                actual: decoded,
            },
        })
    }

    /// Whether section `section` is a **table**: a section that some field reads through a
    /// reference (docs/format.md §8) — a field whose DTD interpretation is `sectionStride` or
    /// `sectionOffset` into it, or one that a metadata record of the trace switches to such an
    /// interpretation. The records of a table are elements: the values of the fields that refer
    /// to them ([`RecordView::get`](super::RecordView::get) gives them as such), not records a
    /// user counts. The split streams of `mtf compact --split` and string tables are tables;
    /// the global region never is.
    ///
    /// The first call reads the metadata records of the whole trace when the trace has a
    /// section that the DTD alone does not make a table (one pass, then remembered).
    pub fn is_table(&self, section: u8) -> bool {
        section != 0 && self.table_sections.get_or_init(|| self.find_tables())[section as usize]
    }

    fn find_tables(&self) -> [bool; 256] {
        let mut tables = [false; 256];
        fn mark(tables: &mut [bool; 256], interp: Interp) {
            if let Interp::SectionOffset(n) | Interp::SectionStride { section: n, .. } = interp {
                tables[n as usize] = true;
            }
        }
        for rt in &self.schema.records {
            for slot in &rt.slots {
                mark(&mut tables, slot.interp);
            }
        }
        // Only a metadata record can make another section of the trace a table.
        // A stream has no pre-pass: a metadata record that makes a section a table stops it
        // (`decode::stream`), so what it does read agrees with this.
        let unknown = !self.input.streamed
            && self
                .input
                .regions
                .iter()
                .any(|r| r.section != 0 && r.start < r.end && !tables[r.section as usize]);
        if unknown {
            let mut records =
                Records::new(self, (0..self.input.regions.len()).collect(), Mode::Prepass);
            while let Some(event) = records.next() {
                if let Event::Record(r) = event {
                    if let Some(MetaChange {
                        property: MetaProperty::Interp(i),
                        ..
                    }) = r.metadata()
                    {
                        mark(&mut tables, i);
                    }
                }
            }
        }
        tables[0] = false;
        tables
    }

    /// The name of a section id ("" for the global region or an undeclared id).
    pub fn section_name(&self, section: u8) -> &'a str {
        self.schema
            .scope_for(section)
            .map(|s| s.name.as_str())
            .unwrap_or("")
    }
}
