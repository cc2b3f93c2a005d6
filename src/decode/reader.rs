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

/// The bytes a [`Reader`] decodes, addressed by absolute offset in the trace file.
#[derive(Debug)]
pub(crate) enum Bytes<'a> {
    /// A whole trace, borrowed (its pages are released behind the cursor:
    /// [`Trace::release_before`]).
    Trace(&'a Trace<'a>),
    /// A whole trace, owned (a stream read whole after all, `crate::stream`).
    OwnedTrace(Box<Trace<'static>>),
    /// Bytes that are not a trace file (a section of a trace being written, `encode`).
    Slice(&'a [u8]),
    /// A window of a stream: the bytes of the file from offset `base` on (`crate::stream`).
    Window { buf: Vec<u8>, base: u64 },
}

impl Bytes<'_> {
    /// The bytes held and the offset in the file of the first.
    #[inline]
    pub(crate) fn parts(&self) -> (&[u8], u64) {
        match self {
            Bytes::Trace(t) => (t.bytes(), 0),
            Bytes::OwnedTrace(t) => (t.bytes(), 0),
            Bytes::Slice(b) => (b, 0),
            Bytes::Window { buf, base } => (buf, *base),
        }
    }
}

/// What the decoder needs to know about the container, checked by whoever builds it: the bytes
/// and where its regions lie in them.
#[derive(Debug)]
pub(crate) struct Window<'a> {
    /// The whole trace file (or the part the regions lie in), or a window of it.
    pub(crate) bytes: Bytes<'a>,
    /// Whether the trace is read as a stream (no random access: no pre-pass for tables).
    pub(crate) streamed: bool,
    pub(crate) order: ByteOrder,
    pub(crate) class: Class,
    /// Regions in file order: the global region first (possibly empty), then each section;
    /// every region lies within the bytes (or, for a window, within the file).
    pub(crate) regions: Vec<Region>,
    /// `nrecords` from the header, when the count is to be checked.
    pub(crate) nrecords: Option<u64>,
    /// Where `nrecords` is stored in the header (for messages).
    pub(crate) nrecords_offset: u64,
    /// Whether the header declares extension `live/1` (docs/format.md §13).
    pub(crate) live: bool,
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
    pub(crate) input: Window<'a>,
    pub(crate) schema: &'a Schema,
    pub(crate) compiled: Arc<Compiled>,
    pub(crate) wire: Wire,
    pub(crate) region_of_section: Vec<Option<usize>>,
    pub(crate) tables: Vec<OnceCell<Option<ElementIndex>>>,
    /// Which sections are tables ([`Reader::is_table`]), found on first use.
    table_sections: OnceCell<[bool; 256]>,
    /// The tables a pass over the whole trace assumes meanwhile: the DTD's alone
    /// ([`Reader::speculate_tables`]), until a metadata record refutes them.
    speculated: OnceCell<[bool; 256]>,
    refuted: std::cell::Cell<bool>,
}

impl<'a> Window<'a> {
    /// The window of a trace's head (`trace`) and its regions, checked as a file's.
    pub(crate) fn of_head(
        bytes: Bytes<'a>,
        header: &crate::container::Header,
        regions: Vec<Region>,
        check_count: bool,
        streamed: bool,
    ) -> Window<'a> {
        Window {
            bytes,
            order: header.byte_order,
            class: header.class,
            regions,
            nrecords: check_count.then_some(header.nrecords),
            nrecords_offset: crate::container::OFF_INTEGERS + 2 * header.int_width as u64,
            live: header.extensions & crate::container::EXT_LIVE != 0,
            streamed,
        }
    }

    /// One section's records, `bytes` (from its section record on), alone: for checking the
    /// references into a section being written (`encode`). Its elements are found by offset
    /// within `bytes`; live sets are allowed.
    pub(crate) fn of_section(
        bytes: &'a [u8],
        section: u8,
        order: ByteOrder,
        class: Class,
    ) -> Window<'a> {
        let len = bytes.len() as u64;
        Window {
            bytes: Bytes::Slice(bytes),
            order,
            class,
            regions: vec![
                Region {
                    section: 0,
                    start: 0,
                    end: 0,
                },
                Region {
                    section,
                    start: 0,
                    end: len,
                },
            ],
            nrecords: None,
            nrecords_offset: 0,
            live: true,
            streamed: false,
        }
    }

    /// The `len` bytes of the file at absolute offset `offset` (which the window holds).
    #[inline]
    pub(crate) fn slice(&self, offset: u64, len: u64) -> &[u8] {
        let (bytes, base) = self.bytes.parts();
        let at = (offset - base) as usize;
        &bytes[at..at + len as usize]
    }

    /// The bytes of the file from absolute offset `offset` to the end of the window.
    #[inline(always)]
    pub(crate) fn from(&self, offset: u64) -> &[u8] {
        let (bytes, base) = self.bytes.parts();
        &bytes[(offset - base) as usize..]
    }

    /// The absolute offset one past the window.
    #[inline]
    pub(crate) fn window_end(&self) -> u64 {
        let (bytes, base) = self.bytes.parts();
        base + bytes.len() as u64
    }

    /// The trace the bytes are, when they are one (for releasing its pages).
    #[inline]
    pub(crate) fn trace(&self) -> Option<&Trace<'_>> {
        match &self.bytes {
            Bytes::Trace(t) => Some(t),
            Bytes::OwnedTrace(t) => Some(t),
            _ => None,
        }
    }

    /// The window of a whole trace, `bytes` being its bytes.
    fn of_trace(bytes: Bytes<'a>, trace: &Trace<'_>) -> Window<'a> {
        Window::of_head(
            bytes,
            trace.header(),
            Window::regions_of(trace),
            // A salvaged trace holds fewer records than its header says.
            trace.damage().is_none(),
            trace.is_head(),
        )
    }

    /// The regions of a trace as its section table gives them: the global region first.
    pub(crate) fn regions_of(trace: &Trace<'_>) -> Vec<Region> {
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
        regions
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
        Reader::from_window(
            Window::of_trace(Bytes::Trace(trace), trace),
            schema,
            compiled,
        )
    }

    /// As [`Reader::with_compiled`], owning the trace.
    pub(crate) fn owning(
        trace: Trace<'static>,
        schema: &'a Schema,
        compiled: Arc<Compiled>,
    ) -> Reader<'a> {
        let window = Window::of_trace(Bytes::Slice(&[]), &trace);
        let window = Window {
            bytes: Bytes::OwnedTrace(Box::new(trace)),
            ..window
        };
        Reader::from_window(window, schema, compiled)
    }

    /// Bind a checked window to a schema and its compiled programs.
    pub(crate) fn from_window(
        input: Window<'a>,
        schema: &'a Schema,
        compiled: Arc<Compiled>,
    ) -> Reader<'a> {
        debug_assert!(
            input.streamed
                || input
                    .regions
                    .iter()
                    .all(|r| r.start <= r.end && r.end <= input.window_end())
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
            speculated: OnceCell::new(),
            refuted: std::cell::Cell::new(false),
        }
    }

    /// Whether the trace is read as a stream ([`crate::events::read`]): its records come from
    /// windows of it, never all at once, and a reader of its head ([`crate::Opened::reader`])
    /// gives its schema and regions but no records.
    pub fn is_streamed(&self) -> bool {
        self.input.streamed
    }

    /// The schema.
    pub fn schema(&self) -> &'a Schema {
        self.schema
    }

    /// The trace bytes (of a trace read as a stream, [`Reader::is_streamed`], the window
    /// read last).
    pub fn bytes(&self) -> &[u8] {
        self.input.bytes.parts().0
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
    /// section that the DTD alone does not make a table (one pass, then remembered), unless a
    /// decode resumed from a seek index whose tables file (docs/format.md §15.6) gave the
    /// answer.
    // Design: not inlined: its callers are per scan or per view, and inlined into the scan
    // its tests made the scan's loop longer (about 0.7 % more instructions of `mtf check`).
    #[inline(never)]
    pub fn is_table(&self, section: u8) -> bool {
        if !self.refuted.get() {
            if let Some(t) = self.speculated.get() {
                return section != 0 && t[section as usize];
            }
        }
        section != 0 && self.table_sections()[section as usize]
    }

    /// For a pass that reads the whole trace from its start on this reader, in order: let
    /// [`Reader::is_table`] answer as the DTD alone does, without the pass over the trace's
    /// metadata records, until a metadata record that the general path applies makes another
    /// section a table ([`Reader::tables_refuted`]; from then on it answers as without this).
    /// True if it does so (the answer was not known, and needed that pass).
    // Design: that pass costs 3–12 % of `mtf stats` and 8–19 % of `mtf info` (60 to 270
    // instructions a record), and almost no trace makes a table by metadata. Every metadata
    // record that could is met by a pass over the whole trace (the scan stops before those
    // that do not change a width or an arithmetic interpretation, so the general path applies
    // them), so a pass that finds none had the answer the pre-pass would have given; one that
    // finds one is run again by its caller, from the start, with the answer of the pre-pass.
    // A stream has no pre-pass.
    #[cfg(feature = "parallel")]
    pub(crate) fn speculate_tables(&self) -> bool {
        if self.tables_known() || self.input.streamed || !self.tables_need_pass() {
            return false;
        }
        self.speculated.set(self.dtd_tables()).is_ok()
    }

    /// Whether a metadata record refuted the tables assumed by [`Reader::speculate_tables`]:
    /// what was read meanwhile is to be read again.
    #[cfg(feature = "parallel")]
    pub(crate) fn tables_refuted(&self) -> bool {
        self.refuted.get()
    }

    /// A metadata record applied that gives a field interpretation `interp`: one that reads a
    /// section through a reference (what the tables pre-pass marks, `mark_table`) refutes
    /// assumed tables without that section.
    pub(crate) fn note_table(&self, interp: Interp) {
        if let (Some(t), Some(n)) = (self.speculated.get(), table_read_by(interp)) {
            if n != 0 && !t[n as usize] {
                self.refuted.set(true);
            }
        }
    }

    /// The sections found to be tables ([`Reader::is_table`], the pre-pass done once), to give
    /// another reader of the same trace ([`Reader::knowing_tables`]) on another thread.
    #[cfg(feature = "parallel")]
    pub(crate) fn tables_found(&self) -> [bool; 256] {
        *self.table_sections()
    }

    /// This reader, told which sections are tables (`tables`: [`Reader::tables_found`] of a
    /// reader of the same trace), so that it does not read the trace's metadata again.
    #[cfg(feature = "parallel")]
    pub(crate) fn knowing_tables(self, tables: [bool; 256]) -> Self {
        let _ = self.table_sections.set(tables);
        self
    }

    /// [`Reader::is_table`] of every section.
    pub(crate) fn table_sections(&self) -> &[bool; 256] {
        self.table_sections.get_or_init(|| self.find_tables())
    }

    /// Whether [`Reader::is_table`] needs the pass over the trace's metadata records: the trace
    /// has a section with records that the DTD alone does not make a table (and is not a
    /// stream, which has no such pass).
    pub(crate) fn tables_need_pass(&self) -> bool {
        let tables = self.dtd_tables();
        // A stream has no pre-pass: a metadata record that makes a section a table stops it
        // (`decode::stream`), so what it does read agrees with this.
        !self.input.streamed
            && self
                .input
                .regions
                .iter()
                .any(|r| r.section != 0 && r.start < r.end && !tables[r.section as usize])
    }

    /// Whether [`Reader::is_table`] is answered already (the pass made, or an answer given).
    pub(crate) fn tables_known(&self) -> bool {
        self.table_sections.get().is_some()
    }

    /// Take `tables` as [`Reader::is_table`]'s answer, unless it is known already: what a seek
    /// index's tables file (docs/format.md §15.6, checked against the trace and the DTD by its
    /// caller) says the pass would find.
    pub(crate) fn assume_tables(&self, mut tables: [bool; 256]) {
        tables[0] = false;
        let _ = self.table_sections.set(tables);
    }

    /// The sections the DTD's own interpretations read as tables.
    pub(crate) fn dtd_tables(&self) -> [bool; 256] {
        let mut tables = [false; 256];
        for rt in &self.schema.records {
            for slot in &rt.slots {
                mark_table(&mut tables, slot.interp);
            }
        }
        tables
    }

    fn find_tables(&self) -> [bool; 256] {
        let mut tables = self.dtd_tables();
        // Only a metadata record can make another section of the trace a table.
        if self.tables_need_pass() {
            let mut records =
                Records::new(self, (0..self.input.regions.len()).collect(), Mode::Prepass);
            records.lengths_only();
            // Only metadata records that make a field read a section matter: the records a
            // fixed plan decodes are stepped over (`Records::scan`), and so are the metadata
            // records that change a width or an arithmetic interpretation (applied by the scan
            // as `next` applies them); the scan stops before every other one, decoded here.
            let mut per_type = vec![0u64; self.schema.records.len()];
            loop {
                records.scan(&mut per_type, super::ScanStop::NONE);
                let Some(event) = records.next() else {
                    break;
                };
                if let Event::Record(r) = event {
                    if let Some(MetaChange {
                        property: MetaProperty::Interp(i),
                        ..
                    }) = r.metadata()
                    {
                        mark_table(&mut tables, i);
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

/// The section an interpretation reads through a reference (docs/format.md §8), if any.
fn table_read_by(interp: Interp) -> Option<u8> {
    match interp {
        Interp::SectionOffset(n) | Interp::SectionStride { section: n, .. } => Some(n),
        _ => None,
    }
}

/// Marks the section an interpretation reads through a reference.
fn mark_table(tables: &mut [bool; 256], interp: Interp) {
    if let Some(n) = table_read_by(interp) {
        tables[n as usize] = true;
    }
}
