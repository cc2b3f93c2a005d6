//! `mtf info TRACE`: header, DTD origin, section table, records per type.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use metatf::decode::{Event, EventStream};

use metatf::io::{escape_for_terminal, StdoutSink};

use super::common::{input_name, open_for_pass, Failure};
use super::{EXIT_INVALID_TRACE, EXIT_OK};

/// Arguments of `mtf info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// The trace (`-` for standard input; pipes and gzip/zstd/xz/bzip2-compressed traces too,
    /// decoded as they arrive from a window of MTF_STREAM_WINDOW bytes, with no temporary file;
    /// a trace whose DTD reads sections as tables is read through an unlinked temporary file in
    /// TMPDIR as large as the decompressed trace).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
}

/// Run `mtf info`.
pub fn run(args: &InfoArgs) -> Result<i32, Failure> {
    // One pass: a piped or compressed trace is decoded as it arrives.
    let (o, damaged) = open_for_pass(&args.trace, args.dtd.as_deref(), true, true)?;
    let h = o.trace().header();
    let reader = o.reader();
    let nregions = reader.regions().len();
    let mut per_region = vec![0u64; nregions];
    let mut per_type = vec![0u64; o.schema().records.len()];
    let mut data = 0u64;
    let mut errors = u64::from(damaged);
    let mut stream = o.stream();
    let mut records = reader.records();
    let events: &mut dyn EventStream = match stream.as_mut() {
        Some(s) => {
            let path = args.trace.clone();
            s.on_fault(move |e| {
                let f = super::common::stream_failure(&path, e);
                super::common::line_to_stderr(&f.message);
                std::process::exit(f.code);
            });
            s
        }
        None => &mut records,
    };
    // A stream's last region ends where the stream does (known at its end).
    let region_of = |offset: u64| {
        reader
            .regions()
            .iter()
            .position(|r| (r.start..r.end).contains(&offset))
    };
    while let Some(event) = events.next_event() {
        match event {
            Event::Record(v) => {
                per_type[v.record_id() as usize] += 1;
                data += u64::from(v.is_data());
                if let Some(i) = region_of(v.offset()) {
                    per_region[i] += 1;
                }
            }
            Event::Problem(_) | Event::Damage(_) => errors += 1,
        }
    }
    errors += events.dropped_problems();
    let (file_len, regions) = match &stream {
        Some(s) => (s.bytes_read() as usize, s.regions().to_vec()),
        None => (o.trace().bytes().len(), reader.regions().to_vec()),
    };
    let mut w = StdoutSink::new();
    // The header's DTD name and the path it was found at come from the trace: never shown raw.
    let dtd_name = escape_for_terminal(&h.dtd_name);
    let source = o.dtd_source().to_string();
    let source = escape_for_terminal(&source);
    writeln!(
        w,
        "file        {} ({file_len} bytes)",
        input_name(&args.trace)
    )?;
    writeln!(
        w,
        "class       {} ({}-bit addresses, {}-byte metadata words)",
        h.class.to_byte(),
        h.class.word_size() * 8,
        h.class.word_size()
    )?;
    writeln!(
        w,
        "byte order  {}",
        if h.byte_order == metatf::container::ByteOrder::Big {
            "big-endian"
        } else {
            "little-endian"
        }
    )?;
    writeln!(w, "header ints {} bytes", h.int_width)?;
    if h.extensions & metatf::container::EXT_LIVE != 0 {
        writeln!(
            w,
            "extensions  live/1 (live sets, docs/format.md §13; a Meta-TF 1.0 reader refuses it)"
        )?;
    }
    writeln!(w, "dtd         {dtd_name} → {source}")?;
    writeln!(w, "start       {}", h.start)?;
    writeln!(w, "nrecords    {}", h.nrecords)?;
    writeln!(w, "sections    {}", h.nsections)?;
    writeln!(w)?;
    // A stream decoded whole after all (its metadata made a section a table) knows its tables.
    let is_table = |section: u8| {
        reader.is_table(section) || stream.as_ref().is_some_and(|s| s.is_table(section))
    };
    let region_name = |section: u8| {
        if section == 0 {
            "(global)".to_string()
        } else if is_table(section) {
            format!("{} (table)", reader.section_name(section))
        } else {
            reader.section_name(section).to_string()
        }
    };
    let shown = |r: &&metatf::decode::Region| !(r.section == 0 && r.start == r.end);
    // Columns as wide as their longest entry, so that long names keep the table aligned.
    let sw = regions
        .iter()
        .filter(shown)
        .map(|r| region_name(r.section).chars().count())
        .max()
        .unwrap_or(0)
        .max(20);
    writeln!(
        w,
        "{:>4}  {:<sw$} {:>12} {:>12} {:>10}",
        "id", "section", "start", "size", "records"
    )?;
    for (i, r) in regions.iter().enumerate() {
        if !shown(&r) {
            continue;
        }
        writeln!(
            w,
            "{:>4}  {:<sw$} {:>12} {:>12} {:>10}",
            r.section,
            region_name(r.section),
            r.start,
            r.end - r.start,
            per_region[i]
        )?;
    }
    writeln!(w)?;
    let label = |rid: usize| {
        let rt = o.schema().record(rid as u32);
        if rt.scope == 0 {
            rt.name.to_string()
        } else {
            format!("{} [{}]", rt.name, reader.section_name(rt.scope))
        }
    };
    let lw = per_type
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(rid, _)| label(rid).chars().count())
        .max()
        .unwrap_or(0)
        .max(24);
    writeln!(w, "{:<lw$} {:>12}", "record", "count")?;
    // Records of table sections (split streams, string tables) are the values of the fields
    // that refer to them: listed apart, and not data records.
    let type_line = |w: &mut StdoutSink, rid: usize, n: u64| -> std::io::Result<()> {
        writeln!(w, "{:<lw$} {:>12}", label(rid), n)
    };
    let is_element = |rid: usize| {
        let rt = o.schema().record(rid as u32);
        rt.scope != 0 && is_table(rt.scope)
    };
    for (rid, n) in per_type.iter().enumerate() {
        if *n > 0 && !is_element(rid) {
            type_line(&mut w, rid, *n)?;
        }
    }
    writeln!(w, "{:<lw$} {:>12}", "data records", data)?;
    if (0..per_type.len()).any(|rid| per_type[rid] > 0 && is_element(rid)) {
        writeln!(
            w,
            "\nelements of tables (the values of fields that refer to them)"
        )?;
        for (rid, n) in per_type.iter().enumerate() {
            if *n > 0 && is_element(rid) {
                type_line(&mut w, rid, *n)?;
            }
        }
    }
    if errors > 0 {
        writeln!(w, "\n{errors} problem(s): run `mtf check` for details")?;
    }
    // A closed pipe ends quietly with status 0; a full disk is status 2 (`Failure::from`).
    w.finish()?;
    Ok(if errors > 0 {
        EXIT_INVALID_TRACE
    } else {
        EXIT_OK
    })
}
