//! [`Reader`]: a trace's bytes and regions bound to a compiled schema; the source of decoders.

use std::cell::OnceCell;

use crate::dtd::{Builtin, RecordId, Schema};

use super::decoder::{Decoder, Mode};
use super::error::{DecodeError, ErrorKind};
use super::program::Compiled;
use super::value::{ElementRef, Value};

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

/// What the decoder needs to know about the container.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    /// The whole trace file.
    pub bytes: &'a [u8],
    /// Byte order: `true` for big-endian.
    pub big_endian: bool,
    /// The metadata value word size: 4 (class 1) or 8 (class 2).
    pub word_size: u8,
    /// Regions in file order: the global region first (possibly empty), then each section.
    pub regions: Vec<Region>,
    /// `nrecords` from the header.
    pub nrecords: u64,
    /// Where `nrecords` is stored in the header (for error messages).
    pub nrecords_offset: u64,
}

/// The elements of one section used as a table (docs/format.md §8).
#[derive(Debug, Clone, Default)]
pub struct ElementIndex {
    /// Absolute offset of the section's content (after its `section` record).
    pub content_start: u64,
    /// Size of the content in bytes.
    pub content_len: u64,
    /// Offset of each element relative to `content_start`, ascending.
    pub offsets: Vec<u64>,
    /// Each element's value (its last decoded field).
    pub values: Vec<Value>,
    /// Each element's record type.
    pub records: Vec<RecordId>,
    /// The error that stopped the scan, if the section is damaged.
    pub error: Option<DecodeError>,
}

/// A reference followed to its element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// Section of the element.
    pub section: u8,
    /// Index of the element in its section.
    pub index: u64,
    /// Record type of the element.
    pub record: RecordId,
    /// The element's value (never itself a reference unless the chain was too long).
    pub value: Value,
}

/// A trace bound to its schema.
///
/// ```
/// # fn demo(reader: &metatf::decode::Reader) {
/// let mut records = reader.records();
/// while let Some(item) = records.next() {
///     match item {
///         Ok(view) => println!("{} at byte {}", view.name(), view.offset),
///         Err(e) => eprintln!("{e}"),
///     }
/// }
/// # }
/// ```
pub struct Reader<'a> {
    pub(crate) input: Input<'a>,
    pub(crate) schema: &'a Schema,
    pub(crate) compiled: Compiled,
    pub(crate) region_of_section: Vec<Option<usize>>,
    tables: Vec<OnceCell<Option<ElementIndex>>>,
}

/// How many references a chain may follow (docs/format.md §8).
pub const MAX_REF_HOPS: usize = 16;

impl<'a> Reader<'a> {
    /// Bind an input to a schema. Compiles the schema's programs.
    pub fn new(input: Input<'a>, schema: &'a Schema) -> Reader<'a> {
        let mut region_of_section = vec![None; 256];
        for (i, r) in input.regions.iter().enumerate() {
            if r.section != 0 {
                region_of_section[r.section as usize] = Some(i);
            }
        }
        Reader {
            compiled: Compiled::new(schema),
            input,
            schema,
            region_of_section,
            tables: (0..256).map(|_| OnceCell::new()).collect(),
        }
    }

    /// Bind an opened trace to its schema.
    pub fn from_trace(trace: &'a crate::container::Trace<'_>, schema: &'a Schema) -> Reader<'a> {
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
        let input = Input {
            bytes: trace.bytes(),
            big_endian: header.byte_order == crate::container::ByteOrder::Big,
            word_size: header.class.word_size() as u8,
            regions,
            nrecords: header.nrecords,
            nrecords_offset: crate::container::OFF_INTEGERS + 2 * header.int_width as u64,
        };
        Reader::new(input, schema)
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

    /// Whether integers are big-endian.
    pub fn big_endian(&self) -> bool {
        self.input.big_endian
    }

    /// The metadata value word size (4 or 8).
    pub fn word_size(&self) -> u8 {
        self.input.word_size
    }

    /// `nrecords` from the header.
    pub fn header_nrecords(&self) -> u64 {
        self.input.nrecords
    }

    /// A decoder over every record of the trace, in file order.
    pub fn records(&self) -> Decoder<'_> {
        Decoder::new(self, (0..self.input.regions.len()).collect(), Mode::Main)
    }

    /// The element table of a section, built on first use; `None` if the trace has no such
    /// section or the DTD does not declare it.
    pub fn table(&self, section: u8) -> Option<&ElementIndex> {
        self.tables[section as usize]
            .get_or_init(|| self.build_table(section))
            .as_ref()
    }

    fn build_table(&self, section: u8) -> Option<ElementIndex> {
        let ri = self.region_of_section[section as usize]?;
        self.schema.scope_for(section)?;
        let region = self.input.regions[ri];
        let mut idx = ElementIndex {
            content_start: region.end,
            ..ElementIndex::default()
        };
        let mut dec = Decoder::new(self, vec![ri], Mode::Prepass);
        let mut first = true;
        while let Some(item) = dec.next() {
            match item {
                Ok(view) => {
                    if first {
                        idx.content_start = view.offset + view.len;
                        first = false;
                        continue;
                    }
                    if view.record().builtin.is_some() {
                        continue;
                    }
                    let Some(last) = view.values().last() else {
                        continue;
                    };
                    idx.offsets.push(view.offset - idx.content_start);
                    idx.values.push(last.value);
                    idx.records.push(view.record_id);
                }
                Err(e) => {
                    idx.error = Some(e);
                    break;
                }
            }
        }
        idx.content_len = region.end.saturating_sub(idx.content_start);
        Some(idx)
    }

    /// Find the element a reference names, checking it (docs/format.md §8). Does not follow
    /// chains; see [`Reader::resolve`].
    pub fn element(&self, r: ElementRef) -> Result<(u64, RecordId, Value), ErrorKind> {
        let section = r.section();
        let table = self
            .table(section)
            .ok_or(ErrorKind::MissingSection { section })?;
        match r {
            ElementRef::Offset { offset, .. } => match table.offsets.binary_search(&offset) {
                Ok(i) => Ok((i as u64, table.records[i], table.values[i])),
                Err(_) => Err(ErrorKind::BadSectionOffset {
                    section,
                    offset,
                    content: table.content_len,
                }),
            },
            ElementRef::Index { index, .. } => {
                if index >= 0 && (index as u64) < table.values.len() as u64 {
                    let i = index as usize;
                    Ok((i as u64, table.records[i], table.values[i]))
                } else {
                    Err(ErrorKind::BadSectionIndex {
                        section,
                        index,
                        count: table.values.len() as u64,
                    })
                }
            }
        }
    }

    /// Follow a reference (and references it leads to, at most [`MAX_REF_HOPS`]) to a value.
    pub fn resolve(&self, mut r: ElementRef) -> Result<Resolved, ErrorKind> {
        let mut hops = 0;
        loop {
            let (index, record, value) = self.element(r)?;
            hops += 1;
            match value {
                Value::Ref(next) if hops < MAX_REF_HOPS => r = next,
                _ => {
                    return Ok(Resolved {
                        section: r.section(),
                        index,
                        record,
                        value,
                    })
                }
            }
        }
    }

    /// The name of a section id ("" for the global region or an undeclared id).
    pub fn section_name(&self, section: u8) -> &str {
        self.schema
            .scope_for(section)
            .map(|s| s.name.as_str())
            .unwrap_or("")
    }

    pub(crate) fn is_builtin(&self, rid: RecordId, which: Builtin) -> bool {
        self.schema.record(rid).builtin == Some(which)
    }
}
