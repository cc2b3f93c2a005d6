//! `mtf info TRACE`: header, DTD origin, section table, records per type.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use metatf::command::info::{info, InfoReport, RegionInfo};
use metatf::command::jobs::Faults;
use metatf::Opened;

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
    let path = args.trace.clone();
    let faults = Faults {
        on_fault: Some(Box::new(move |e| {
            let f = super::common::stream_failure(&path, e);
            super::common::line_to_stderr(&f.message);
            std::process::exit(f.code);
        })),
        ..Faults::default()
    };
    let report = info(&o, faults);
    let errors = report.problems + u64::from(damaged);
    let mut w = StdoutSink::new();
    header(&mut w, &o, &args.trace, report.bytes)?;
    regions(&mut w, &o, &report)?;
    types(&mut w, &o, &report)?;
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

/// The header's lines.
fn header(w: &mut StdoutSink, o: &Opened, trace: &Path, bytes: u64) -> std::io::Result<()> {
    let h = o.trace().header();
    // The header's DTD name and the path it was found at come from the trace: never shown raw.
    let dtd_name = escape_for_terminal(&h.dtd_name);
    let source = o.dtd_source().to_string();
    let source = escape_for_terminal(&source);
    writeln!(w, "file        {} ({bytes} bytes)", input_name(trace))?;
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
    writeln!(w)
}

/// The table of regions, its columns as wide as their longest entry.
fn regions(w: &mut StdoutSink, o: &Opened, report: &InfoReport) -> std::io::Result<()> {
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
    writeln!(
        w,
        "{:>4}  {:<sw$} {:>12} {:>12} {:>10}",
        "id", "section", "start", "size", "records"
    )?;
    for r in &report.regions {
        writeln!(
            w,
            "{:>4}  {:<sw$} {:>12} {:>12} {:>10}",
            r.section,
            region_name(r),
            r.start,
            r.size,
            r.records
        )?;
    }
    writeln!(w)
}

/// Records per type; those of table sections (split streams, string tables) are the values of
/// the fields that refer to them: listed apart, and not data records.
fn types(w: &mut StdoutSink, o: &Opened, report: &InfoReport) -> std::io::Result<()> {
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
    writeln!(w, "{:<lw$} {:>12}", "record", "count")?;
    for t in report.types.iter().filter(|t| !t.element) {
        writeln!(w, "{:<lw$} {:>12}", label(t.record_id), t.count)?;
    }
    writeln!(w, "{:<lw$} {:>12}", "data records", report.data_records)?;
    if report.types.iter().any(|t| t.element) {
        writeln!(
            w,
            "\nelements of tables (the values of fields that refer to them)"
        )?;
        for t in report.types.iter().filter(|t| t.element) {
            writeln!(w, "{:<lw$} {:>12}", label(t.record_id), t.count)?;
        }
    }
    Ok(())
}
