//! A trace's header, regions and records per type (`mtf info`), in one pass.

use std::fmt::Write as _;

use crate::decode::Event;
use crate::escape::escape_for_terminal;
use crate::events::{self, EventOptions};
use crate::stream::StreamError;
use crate::Opened;

use super::jobs::Faults;

/// One region of the trace: the global region or a section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionInfo {
    /// The section's id (0: the global region).
    pub section: u8,
    /// Whether the section is read as a table (its records are the values of fields).
    pub table: bool,
    /// The region's first byte.
    pub start: u64,
    /// Its length in bytes.
    pub size: u64,
    /// Records decoded in it.
    pub records: u64,
}

/// Records of one type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeInfo {
    /// The record type's id in the schema.
    pub record_id: u32,
    /// Records decoded.
    pub count: u64,
    /// Whether the type belongs to a section read as a table: its records are the values of
    /// the fields that refer to them, not data records.
    pub element: bool,
}

/// What `mtf info` shows besides the header.
#[derive(Debug, Clone, Default)]
pub struct InfoReport {
    /// The trace's length in bytes (decompressed; for a stream, as read).
    pub bytes: u64,
    /// The regions, in file order (an empty global region left out).
    pub regions: Vec<RegionInfo>,
    /// The record types with at least one record, by id.
    pub types: Vec<TypeInfo>,
    /// Data records ([`crate::decode::RecordView::is_data`]).
    pub data_records: u64,
    /// Problems met while decoding (dropped ones counted).
    pub problems: u64,
}

/// Decode `o` once, counting records per region and per type.
pub fn info<'o>(o: &'o Opened, faults: Faults<'o>) -> InfoReport {
    let reader = o.reader();
    // The whole trace is read: the DTD's tables are assumed, and the data records counted
    // again where a metadata record made another section a table (`Reader::speculate_tables`).
    let speculating = reader.speculate_tables();
    let mut per_region = vec![0u64; reader.regions().len()];
    let mut per_type = vec![0u64; o.schema().records.len()];
    let mut report = InfoReport::default();
    // A stream's last region ends where the stream does (known at its end).
    let region_of = |offset: u64| {
        reader
            .regions()
            .iter()
            .position(|r| (r.start..r.end).contains(&offset))
    };
    let Faults {
        mut on_fault,
        on_end,
    } = faults;
    let on_fault = |e: &StreamError| {
        if let Some(f) = on_fault.as_mut() {
            f(e);
        }
    };
    let (dropped, mut ended) = events::read(o, &reader, &EventOptions::new(), on_fault, |events| {
        while let Some(event) = events.next_event() {
            match event {
                Event::Record(v) => {
                    per_type[v.record_id() as usize] += 1;
                    report.data_records += u64::from(v.is_data());
                    if let Some(i) = region_of(v.offset()) {
                        per_region[i] += 1;
                    }
                }
                Event::Problem(_) | Event::Damage(_) => report.problems += 1,
            }
        }
        events.dropped_problems()
    });
    report.problems += dropped;
    if speculating && reader.tables_refuted() {
        let mut records = reader.records();
        let mut data = 0;
        while let Some(event) = records.next() {
            if let Event::Record(v) = event {
                data += u64::from(v.is_data());
            }
        }
        report.data_records = data;
    }
    let (bytes, regions, tables) = match ended.stream.take() {
        Some(s) => (s.bytes, s.regions, s.tables),
        None => (
            o.trace().bytes().len() as u64,
            reader.regions().to_vec(),
            Vec::new(),
        ),
    };
    if let Some(on_end) = on_end {
        on_end(ended);
    }
    report.bytes = bytes;
    let is_table = |section: u8| reader.is_table(section) || tables.contains(&section);
    report.regions = regions
        .iter()
        .zip(&per_region)
        .filter(|(r, _)| !(r.section == 0 && r.start == r.end))
        .map(|(r, &records)| RegionInfo {
            section: r.section,
            table: r.section != 0 && is_table(r.section),
            start: r.start,
            size: r.end - r.start,
            records,
        })
        .collect();
    report.types = per_type
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(rid, &count)| {
            let rt = o.schema().record(rid as u32);
            TypeInfo {
                record_id: rid as u32,
                count,
                element: rt.scope != 0 && is_table(rt.scope),
            }
        })
        .collect();
    report
}

impl InfoReport {
    /// The text form (`mtf info`): the header of `o`, shown as the trace `name` (already
    /// escaped for a terminal), the table of regions and the records per type.
    pub fn to_text(&self, o: &Opened, name: &str) -> String {
        let mut w = String::new();
        header(&mut w, o, name, self.bytes);
        regions(&mut w, o, self);
        types(&mut w, o, self);
        w
    }
}

/// The header's lines.
fn header(w: &mut String, o: &Opened, name: &str, bytes: u64) {
    let h = o.trace().header();
    // The header's DTD name and the path it was found at come from the trace: never shown raw.
    let dtd_name = escape_for_terminal(&h.dtd_name);
    let source = o.dtd_source().to_string();
    let source = escape_for_terminal(&source);
    let _ = writeln!(w, "file        {} ({bytes} bytes)", name);
    let _ = writeln!(
        w,
        "class       {} ({}-bit addresses, {}-byte metadata words)",
        h.class.to_byte(),
        h.class.word_size() * 8,
        h.class.word_size()
    );
    let _ = writeln!(
        w,
        "byte order  {}",
        if h.byte_order == crate::container::ByteOrder::Big {
            "big-endian"
        } else {
            "little-endian"
        }
    );
    let _ = writeln!(w, "header ints {} bytes", h.int_width);
    if h.extensions & crate::container::EXT_LIVE != 0 {
        let _ = writeln!(
            w,
            "extensions  live/1 (live sets, docs/format.md §13; a Meta-TF 1.0 reader refuses it)"
        );
    }
    let _ = writeln!(w, "dtd         {dtd_name} → {source}");
    let _ = writeln!(w, "start       {}", h.start);
    let _ = writeln!(w, "nrecords    {}", h.nrecords);
    let _ = writeln!(w, "sections    {}", h.nsections);
    let _ = writeln!(w);
}

/// The table of regions, its columns as wide as their longest entry.
fn regions(w: &mut String, o: &Opened, report: &InfoReport) {
    let reader = o.reader();
    let region_name = |r: &RegionInfo| {
        if r.section == 0 {
            "(global)".to_string()
        } else if r.table {
            format!("{} (table)", reader.section_name(r.section))
        } else {
            reader.section_name(r.section).to_string()
        }
    };
    let sw = report
        .regions
        .iter()
        .map(|r| region_name(r).chars().count())
        .max()
        .unwrap_or(0)
        .max(20);
    let _ = writeln!(
        w,
        "{:>4}  {:<sw$} {:>12} {:>12} {:>10}",
        "id", "section", "start", "size", "records"
    );
    for r in &report.regions {
        let _ = writeln!(
            w,
            "{:>4}  {:<sw$} {:>12} {:>12} {:>10}",
            r.section,
            region_name(r),
            r.start,
            r.size,
            r.records
        );
    }
    let _ = writeln!(w);
}

/// Records per type; those of table sections (split streams, string tables) are the values of
/// the fields that refer to them: listed apart, and not data records.
fn types(w: &mut String, o: &Opened, report: &InfoReport) {
    let reader = o.reader();
    let label = |rid: u32| {
        let rt = o.schema().record(rid);
        if rt.scope == 0 {
            rt.name.to_string()
        } else {
            format!("{} [{}]", rt.name, reader.section_name(rt.scope))
        }
    };
    let lw = report
        .types
        .iter()
        .map(|t| label(t.record_id).chars().count())
        .max()
        .unwrap_or(0)
        .max(24);
    let _ = writeln!(w, "{:<lw$} {:>12}", "record", "count");
    for t in report.types.iter().filter(|t| !t.element) {
        let _ = writeln!(w, "{:<lw$} {:>12}", label(t.record_id), t.count);
    }
    let _ = writeln!(w, "{:<lw$} {:>12}", "data records", report.data_records);
    if report.types.iter().any(|t| t.element) {
        let _ = writeln!(
            w,
            "\nelements of tables (the values of fields that refer to them)"
        );
        for t in report.types.iter().filter(|t| t.element) {
            let _ = writeln!(w, "{:<lw$} {:>12}", label(t.record_id), t.count);
        }
    }
}
