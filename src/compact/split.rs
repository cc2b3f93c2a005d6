//! Split streams (`mtf compact --split`, docs/compression.md): each varying integer field of a
//! section moves into a section of its own, read back through `sectionStride`, so that a
//! whole-file compressor sees each field's values as one run (the paper's *split stream*).
//! Whether that pays depends on the trace: `mtf compact` writes both and keeps the smaller.
//!
//! Meta-TF 1.0 can express this only with a section declared in the DTD for every stream, so the
//! output names a **derived DTD**: the input's DTD text with one section appended per stream.
//! Nothing in the input DTD changes, so the record types of the input keep their ids.

// Design: the streams are chosen from facts the first pass gathers (a field whose values all
// agree is not worth a stream; a field in a live set stays, since live sets are per section;
// references, byte strings, repeats and sections kept byte for byte stay too). The values of a
// stream are spooled to a scratch file while their section is written, then written as the
// stream's section through the same windows and cost model as any section.

use std::fmt::Write as _;

use crate::dtd::{Interp, RecordId, Schema, SlotId};

use super::live::Key;

/// The streams of a derived DTD: which input field each holds.
#[derive(Debug, Clone)]
pub struct SplitPlan {
    /// The derived DTD's text.
    pub dtd_text: String,
    /// (section, record type, slot) of each stream's field, with its section id and the name of
    /// its record type in the derived DTD.
    pub(crate) streams: Vec<(Key, u8, String)>,
}

impl SplitPlan {
    /// How many fields move into streams.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// Whether no field moves.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// One line per stream: `section 200 (stream_1): heap alloc.size`.
    pub fn describe(&self, schema: &Schema) -> Vec<String> {
        self.streams
            .iter()
            .map(|((section, rid, slot), id, _)| {
                let r = schema.record(*rid);
                let scope = schema.scope_for(*section).map_or("", |s| s.name.as_str());
                format!(
                    "stream section {id}: {}{}.{}",
                    if scope.is_empty() {
                        String::new()
                    } else {
                        format!("{scope} ")
                    },
                    r.name,
                    r.slots[*slot as usize].name
                )
            })
            .collect()
    }
}

/// The derived DTD for `keys` (fields of `schema`, whose text is `text`), or `None` when there
/// are no free section ids or tags for the streams.
pub(crate) fn derive(text: &str, schema: &Schema, keys: &[Key]) -> Option<SplitPlan> {
    // A tag not used by any global record type (global types are visible in every section).
    let global = schema.scope_for(0)?;
    let max_tag = if schema.tag_width >= 8 {
        u64::MAX
    } else {
        (1u64 << (8 * schema.tag_width as u32)) - 1
    };
    let tag = (4..=max_tag.min(1 << 16)).find(|t| !global.by_tag.contains_key(t))?;
    let mut free_ids = (1..=255u8)
        .rev()
        .filter(|&id| schema.scope_for(id).is_none());
    // Names that no DTD is likely to use; checked against the schema anyway.
    let taken = |name: &str| {
        schema.records.iter().any(|r| r.name == name)
            || schema.scopes.iter().any(|s| s.name == name)
    };
    let mut out = String::with_capacity(text.len() + 200 * keys.len());
    out.push_str(text);
    out.push_str(
        "\n\n// Split streams written by `mtf compact --split` (docs/compression.md): each\n",
    );
    out.push_str("// section holds one field's values, read through `sectionStride`.\n");
    let mut streams = Vec::with_capacity(keys.len());
    let mut n = 0usize;
    for &key in keys {
        let id = free_ids.next()?;
        let (section_name, record, value) = loop {
            n += 1;
            let s = format!("mtf_stream_{n}");
            let r = format!("mtf_stream_{n}_value");
            let v = format!("mtf_stream_{n}_v");
            if !taken(&s) && !taken(&r) && !taken(&v) {
                break (s, r, v);
            }
        };
        let rt = schema.record(key.1);
        // The field's own declared width: a compressor sees the values as they were.
        let width = match rt.slots[key.2 as usize].kind {
            crate::dtd::SlotKind::Int { width } if width > 0 => width,
            _ => 8,
        };
        let _ = writeln!(
            out,
            "// {}.{}\n{value}.width = {width}; {value}.interpretation = none;\n\
             section {section_name} {id} {{ {record} : (tag, value : {value}) {{ tag.value = {tag}; }} }}",
            rt.name, rt.slots[key.2 as usize].name
        );
        streams.push((key, id, record));
    }
    Some(SplitPlan {
        dtd_text: out,
        streams,
    })
}

/// Whether the derived schema keeps every record type of the original at the same id.
pub(crate) fn compatible(original: &Schema, derived: &Schema) -> bool {
    original.records.len() <= derived.records.len()
        && original
            .records
            .iter()
            .zip(&derived.records)
            .all(|(a, b)| a.name == b.name && a.slots.len() == b.slots.len())
}

/// The interpretation that reads a stream from the main section.
pub(crate) fn stream_interp(id: u8) -> Interp {
    Interp::SectionStride {
        section: id,
        stride: 1,
    }
}

/// The record type of a stream in the derived schema.
pub(crate) fn stream_record(derived: &Schema, id: u8, name: &str) -> Option<RecordId> {
    derived.record_by_name(id, name)
}

/// Slots whose value the record's layout reads: a byte string's length (`.value` in a width)
/// and a repeat's count. Read through `sectionStride`, such a field would yield its element
/// index instead (docs/format.md §3.4), so it never moves into a stream.
pub(crate) fn layout_slots(rt: &crate::dtd::RecordType) -> Vec<SlotId> {
    use crate::dtd::{Expr, SlotKind};
    use crate::layout::Shape;
    fn expr(e: &Expr, out: &mut Vec<SlotId>) {
        match e {
            Expr::Const(_) => {}
            Expr::Value(s) => out.push(*s),
            Expr::Add(a, b) | Expr::Sub(a, b) | Expr::Mul(a, b) => {
                expr(a, out);
                expr(b, out);
            }
        }
    }
    // The counts of the record's repeats, from its shape.
    fn counts(shape: &[Shape], out: &mut Vec<SlotId>) {
        for s in shape {
            match s {
                Shape::List { count, item, .. } => {
                    out.push(*count);
                    counts(item, out);
                }
                Shape::Group { members, .. } => counts(members, out),
                Shape::Field { .. } => {}
            }
        }
    }
    let mut out = Vec::new();
    for s in &rt.slots {
        if let SlotKind::Bytes { width } = &s.kind {
            expr(width, &mut out);
        }
    }
    counts(&Shape::of(rt), &mut out);
    out
}

/// Slot of a stream record's value.
pub(crate) const VALUE_SLOT: SlotId = 1;
