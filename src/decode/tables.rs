//! Sections used as tables (docs/format.md §8): the element index of a section, built on first
//! use by a pre-pass over its region, and following references through it.

use crate::dtd::RecordId;

use super::error::{Damage, RefError};
use super::reader::Reader;
use super::records::{Mode, Records};
use super::value::{ElementRef, Val, Value};
use super::Event;

pub use crate::limits::MAX_REF_HOPS;

/// Most words of [`ElementIndex::starts`] per element: the bits of a section's element starts
/// cost at most twice the offsets beside them (elements of 128 bytes or less on average).
// Design: a `sectionOffset` checked by the scan (`Records::scan`, every reference of every
// record it steps over) was a binary search through the offsets, about 170 instructions a
// record on an mtrace trace's callers; a bit per content byte answers with one load. Tables of
// long elements keep the binary search, so the bits never cost more than the offsets do.
const STARTS_PER_ELEMENT: u64 = 2;

/// The elements of one section.
#[derive(Debug, Clone, Default)]
pub(crate) struct ElementIndex {
    /// Absolute offset of the section's content (after its `section` record).
    pub(crate) content_start: u64,
    /// Size of the content in bytes.
    pub(crate) content_len: u64,
    /// Offset of each element relative to `content_start`, ascending.
    pub(crate) offsets: Vec<u64>,
    /// Where the content is no longer than [`STARTS_PER_ELEMENT`] words per element: a bit
    /// per content byte, set at each element's start (else empty).
    pub(crate) starts: Vec<u64>,
    /// Each element's value (its last decoded field).
    pub(crate) values: Vec<Val>,
    /// Each element's record type.
    pub(crate) records: Vec<RecordId>,
    /// The damage that stopped the scan, if the section is damaged.
    pub(crate) damage: Option<Damage>,
    /// Whether every element's value is a byte string (a string table).
    pub(crate) strings: bool,
}

/// A reference followed to its element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved<'a> {
    /// Section of the element.
    pub section: u8,
    /// Index of the element in its section.
    pub index: u64,
    /// Record type of the element.
    pub record: RecordId,
    /// The element's value (a reference only when the chain was longer than
    /// [`MAX_REF_HOPS`]).
    pub value: Value<'a>,
}

impl<'a> Reader<'a> {
    /// The element table of a section, built on first use; `None` if the trace has no such
    /// section or the DTD does not declare it.
    pub(crate) fn table(&self, section: u8) -> Option<&ElementIndex> {
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
        let mut records = Records::new(self, vec![ri], Mode::Prepass);
        let mut first = true;
        while let Some(event) = records.next() {
            match event {
                Event::Record(view) => {
                    if first {
                        idx.content_start = view.offset() + view.len();
                        first = false;
                        continue;
                    }
                    if view.record().builtin.is_some() {
                        continue;
                    }
                    let Some(last) = view.values.last() else {
                        continue;
                    };
                    idx.offsets.push(view.offset() - idx.content_start);
                    idx.values.push(last.value);
                    idx.records.push(view.record_id());
                }
                Event::Problem(_) => {}
                Event::Damage(d) => {
                    idx.damage = Some(*d);
                    break;
                }
            }
        }
        idx.content_len = region.end.saturating_sub(idx.content_start);
        idx.strings = idx.values.iter().all(|v| matches!(v, Val::Bytes { .. }));
        let words = idx.content_len.div_ceil(64);
        if words <= STARTS_PER_ELEMENT * idx.offsets.len() as u64 {
            let mut starts = vec![0u64; words as usize];
            for &o in &idx.offsets {
                if let Some(w) = starts.get_mut((o / 64) as usize) {
                    *w |= 1 << (o % 64);
                }
            }
            idx.starts = starts;
        }
        Some(idx)
    }

    /// The element a reference names, checked (docs/format.md §8); does not follow chains.
    pub(crate) fn element(&self, r: ElementRef) -> Result<(u64, RecordId, Val), RefError> {
        let section = r.section();
        let table = self
            .table(section)
            .ok_or(RefError::MissingSection { section })?;
        let damaged = |table: &ElementIndex| match &table.damage {
            Some(d) => RefError::DamagedSection {
                section,
                at: d.at.offset,
            },
            None => RefError::MissingSection { section },
        };
        match r {
            ElementRef::Offset { offset, .. } => match table.offsets.binary_search(&offset) {
                Ok(i) => Ok((i as u64, table.records[i], table.values[i])),
                Err(_) => {
                    let abs = table.content_start.saturating_add(offset);
                    match &table.damage {
                        Some(d) if abs >= d.at.offset => Err(damaged(table)),
                        _ => Err(RefError::BadOffset {
                            section,
                            offset,
                            content: table.content_len,
                        }),
                    }
                }
            },
            ElementRef::Index { index, .. } => {
                if index >= 0 && (index as u64) < table.values.len() as u64 {
                    let i = index as usize;
                    Ok((i as u64, table.records[i], table.values[i]))
                } else if table.damage.is_some() && index >= 0 {
                    Err(damaged(table))
                } else {
                    Err(RefError::BadIndex {
                        section,
                        index,
                        count: table.values.len() as u64,
                    })
                }
            }
        }
    }

    /// Whether the `sectionOffset` value `offset` into `section` names an element: what
    /// [`Reader::element`] finds for it without an error.
    #[inline]
    pub(crate) fn is_element(&self, section: u8, offset: u64) -> bool {
        let Some(t) = self.table(section) else {
            return false;
        };
        if t.starts.is_empty() {
            return t.offsets.binary_search(&offset).is_ok();
        }
        t.starts
            .get((offset / 64) as usize)
            .is_some_and(|w| w >> (offset % 64) & 1 == 1)
    }

    /// Whether `section` is a table whose elements are all byte strings: a reference into it
    /// carries its offset as its number (`ElementRef::number`).
    pub(crate) fn is_string_table(&self, section: u8) -> bool {
        self.table(section).is_some_and(|t| t.strings)
    }

    /// The absolute byte offset of the record a reference names (not following the reference
    /// that record may hold itself): for telling which record of a table another one links to
    /// (a stack tree's parent, docs/format.md §17).
    pub fn element_offset(&self, r: ElementRef) -> Result<u64, RefError> {
        let (i, _, _) = self.element(r)?;
        let section = r.section();
        let table = self
            .table(section)
            .ok_or(RefError::MissingSection { section })?;
        let rel = table.offsets.get(i as usize).copied().unwrap_or(0);
        Ok(table.content_start.saturating_add(rel))
    }

    /// Follow a reference, and the references it leads to (at most [`MAX_REF_HOPS`] look-ups),
    /// to a value.
    pub fn resolve(&self, mut r: ElementRef) -> Result<Resolved<'_>, RefError> {
        let mut hops = 0;
        loop {
            let (index, record, value) = self.element(r)?;
            hops += 1;
            match value {
                Val::Ref(next) if hops < MAX_REF_HOPS => r = next,
                _ => {
                    return Ok(Resolved {
                        section: r.section(),
                        index,
                        record,
                        value: value.with(&self.input),
                    })
                }
            }
        }
    }
}
