//! `mtf dump TRACE`: one line per record, streamed.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use metatf::decode::Event;
use metatf::text::{DumpHeader, Format, Options, Printer};

use metatf::io::{classify, StdoutFailure, StdoutSink};

use super::common::{input_name, line_to_stderr, open_salvaging, section_arg, Failure};
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// Output format of `mtf dump`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DumpFormat {
    /// `record key=value …` lines (what `mtf pack` reads).
    Text,
    /// One JSON object per line.
    Jsonl,
}

/// Arguments of `mtf dump`.
#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The trace (`-` for standard input; pipes and gzip/zstd/xz/bzip2-compressed traces too).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(long)]
    pub dtd: Option<PathBuf>,
    /// Only these sections (name, id, or `global`); repeatable.
    #[arg(long = "section", value_name = "SECTION")]
    pub sections: Vec<String>,
    /// Only these record types; repeatable.
    #[arg(long = "record", value_name = "NAME")]
    pub records: Vec<String>,
    /// Skip the first N records that pass the filters.
    #[arg(long, default_value_t = 0)]
    pub skip: u64,
    /// Print at most N records.
    #[arg(long)]
    pub limit: Option<u64>,
    /// Prefix every record with `@offset`.
    #[arg(long)]
    pub offsets: bool,
    /// Show stored values too (`value~0xraw`).
    #[arg(long)]
    pub raw: bool,
    /// Hide metadata, section and comment records (shown by default, so that the dump can be
    /// packed back into the same trace).
    #[arg(long)]
    pub data_only: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DumpFormat::Text)]
    pub format: DumpFormat,
}

/// Run `mtf dump`.
pub fn run(args: &DumpArgs) -> Result<i32, Failure> {
    let o = open_salvaging(&args.trace, args.dtd.as_deref())?;
    let schema = o.schema();
    let mut want_section = [args.sections.is_empty(); 256];
    for s in &args.sections {
        want_section[section_arg(schema, s)? as usize] = true;
    }
    let mut want_record = vec![args.records.is_empty(); schema.records.len()];
    for name in &args.records {
        let mut found = false;
        for (i, r) in schema.records.iter().enumerate() {
            if &r.name == name {
                want_record[i] = true;
                found = true;
            }
        }
        if !found {
            return Err(Failure::new(
                EXIT_USAGE,
                format!("error: the DTD has no record type `{name}`"),
            ));
        }
    }
    if args.data_only {
        for (i, r) in schema.records.iter().enumerate() {
            if r.builtin.is_some() {
                want_record[i] = false;
            }
        }
    }
    let reader = o.reader();
    let mut printer = Printer::new(
        &reader,
        Options {
            format: match args.format {
                DumpFormat::Text => Format::Text,
                DumpFormat::Jsonl => Format::Jsonl,
            },
            offsets: args.offsets,
            raw: args.raw,
        },
    );
    let mut w = StdoutSink::new();
    let h = o.trace().header();
    let header = DumpHeader {
        dtd: &h.dtd_name,
        class: h.class,
        order: h.byte_order,
    };
    // A damaged container was reported when it was opened; what it holds is still shown.
    let mut status = if o.damage().is_some() {
        EXIT_INVALID_TRACE
    } else {
        EXIT_OK
    };
    let result = (|| -> std::io::Result<()> {
        printer.header(&mut w, &header)?;
        let mut records = reader.records();
        let mut seen = 0u64;
        let mut printed = 0u64;
        let path = input_name(&args.trace);
        while let Some(event) = records.next() {
            match event {
                Event::Record(view) => {
                    if !want_section[view.section() as usize]
                        || !want_record[view.record_id() as usize]
                    {
                        continue;
                    }
                    seen += 1;
                    if seen <= args.skip {
                        continue;
                    }
                    if args.limit.is_some_and(|l| printed >= l) {
                        break;
                    }
                    printer.record(&mut w, &view)?;
                    printed += 1;
                }
                Event::Problem(p) => {
                    w.flush()?;
                    line_to_stderr(&format!("error: {path}: {p}"));
                    status = EXIT_INVALID_TRACE;
                }
                Event::Damage(d) => {
                    w.flush()?;
                    line_to_stderr(&format!("error: {path}: {d}"));
                    status = EXIT_INVALID_TRACE;
                }
            }
        }
        w.flush()
    })();
    match result.map_err(classify) {
        Ok(()) => Ok(status),
        // A closed pipe (`mtf dump t | head`) is a normal way to stop reading.
        Err(StdoutFailure::Closed) => Ok(status),
        Err(e) => Err(e.into()),
    }
}
