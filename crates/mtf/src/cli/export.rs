//! `mtf export`: write an imported trace back in its foreign format; or, `--to parquet`, any
//! trace as one Parquet file per record type (`metatf::columnar`), with a progress bar on a
//! terminal.

#[cfg(feature = "parquet")]
use std::path::Path;
use std::path::PathBuf;

use clap::Args;

#[cfg(feature = "parquet")]
use metatf::columnar::{write_parquet_from, ParquetError, ParquetOptions};
use metatf::import::source::TraceSource;
use metatf::import::{export_from, origin, shipped, ExportError, Mapping, Origin, Target};
#[cfg(feature = "parquet")]
use metatf::io::escape_path;

use super::common::{error, render, Failure};
#[cfg(feature = "parquet")]
use super::common::{error_text, input_name, io_failure, line_to_stderr, quiet};
#[cfg(feature = "parquet")]
use super::progress::Progress;
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// Arguments of `mtf export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The trace (made by `mtf import`).
    pub trace: PathBuf,
    /// `parquet` (one Parquet file per record type, into the folder `-o`), or a shipped import
    /// format to use instead of the mapping stored in the trace (see `mtf import --list`).
    #[arg(long, conflicts_with = "map")]
    pub to: Option<String>,
    /// Export with this mapping file instead of the one stored in the trace.
    #[arg(long)]
    pub map: Option<PathBuf>,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// The output: a file, `-` for standard output, or a folder for a trace of several files.
    #[arg(short, long)]
    pub output: PathBuf,
    #[command(flatten)]
    pub jobs: super::jobs::JobsArgs,
    /// Which seek index `-j` cuts the trace at.
    #[command(flatten)]
    pub seek: super::common::SeekArgs,
}

/// The failure for an export error: its class decides the exit status; the trace's name leads
/// messages about the trace or the request.
fn export_failure(path: &str, e: ExportError) -> Failure {
    let code = super::exit::for_import(e.class());
    let e = match e {
        ExportError::Usage(m) => ExportError::Usage(format!("{path}: {m}")),
        ExportError::Trace(m) => ExportError::Trace(format!("{path}: {m}")),
        ExportError::NotImported { .. } => ExportError::NotImported {
            trace: path.to_string(),
        },
        other => other,
    };
    Failure::diagnostic(code, &e)
}

/// The mapping to export with: `--map FILE`, `--to FORMAT`, else the one stored in the trace.
fn mapping_for(
    args: &ExportArgs,
    path: &str,
    org: &Origin,
    to: Option<Mapping>,
) -> Result<Mapping, Failure> {
    if let Some(p) = &args.map {
        Mapping::load(p).map_err(|e| {
            eprint!("{}", render(&e));
            Failure::new(EXIT_USAGE, String::new())
        })
    } else if let Some(m) = to {
        Ok(m)
    } else {
        Mapping::parse(
            &format!("{path} (stored mapping `{}`)", org.format),
            &org.mapping,
        )
        .map_err(|e| Failure::diagnostic(EXIT_INVALID_TRACE, &*e))
    }
}

/// Run `mtf export`.
pub fn run(args: &ExportArgs) -> Result<i32, Failure> {
    #[cfg(feature = "parquet")]
    if args.to.as_deref() == Some("parquet") {
        return to_parquet(args);
    }
    // An unknown format is the user's mistake whatever the trace holds: say so first.
    let to = match &args.to {
        Some(f) => Some(shipped::by_name(f).ok_or_else(|| {
            error(
                EXIT_USAGE,
                "mtf::export::unknown_format",
                format!("unknown format `{f}` (`parquet`, or see mtf import --list)"),
            )
        })?),
        None => None,
    };
    // A damaged trace is rendered as far as it can be read (a crashed tracer's trace gives
    // back the text it had written), the damage reported, and the export exits 1.
    super::common::defer_damage();
    let (o, damaged) = super::common::open_salvaging(&args.trace, args.dtd.as_deref())?;
    if damaged {
        super::common::mark_damaged();
    }
    let src = TraceSource::from_reader(o.reader(), o.trace().dtd_name()).salvaging(true);
    let path = super::common::input_name(&args.trace).into_owned();
    let org = origin(&src).map_err(|e| export_failure(&path, e))?;
    let m = mapping_for(args, &path, &org, to)?;
    let target = if args.output.as_os_str() == "-" {
        Target::Stdout
    } else {
        Target::Path(args.output.clone())
    };
    // Decoding on the threads of `-j`, the records rendered here in trace order.
    let jobs = args.jobs.decide(true);
    let index = if jobs.threads() > 1 {
        super::common::load_for(&args.trace, &args.seek)
    } else {
        None
    };
    let plan = super::jobs::plan(src.reader(), &jobs, index.as_ref());
    let rep = match export_from(&src, &m, &org, target, &mut |consume| {
        super::jobs::with_events(&o, src.reader(), plan.as_ref(), &jobs, false, consume)
    }) {
        Ok(rep) => rep,
        // `mtf export T -o - | head`: a reader that stops early is not an error.
        Err(e) if e.is_closed_pipe() => return Ok(EXIT_OK),
        Err(e) => return Err(export_failure(&path, e)),
    };
    // The damage of a trace cut short: the records before it were rendered.
    for d in src.damage() {
        super::common::line_to_stderr(&super::common::error_text(
            "mtf::export::damage",
            format!("{path}: {d}"),
        ));
        super::common::mark_damaged();
    }
    if super::common::quiet() {
        return Ok(EXIT_OK);
    }
    eprintln!(
        "exported {path} ({}): {} bytes in {} file(s), {} records rendered, {} raw lines copied",
        m.name,
        rep.bytes,
        rep.parts.len(),
        rep.rendered,
        rep.raw
    );
    Ok(EXIT_OK)
}

/// A Parquet export holds every record of a trace or none: a query engine cannot see a
/// warning, so a damaged trace is not exported (it said "exported" and left the files of the
/// records before the damage). Nothing is written, an earlier export is left as it was.
#[cfg(feature = "parquet")]
fn refuse_damaged(trace: &Path, o: &metatf::Opened) -> Failure {
    if let Some(e) = o.damage() {
        line_to_stderr(&super::common::container_failure(trace, e).message);
    }
    error(
        EXIT_INVALID_TRACE,
        "mtf::parquet::damaged",
        format!(
            "{}: not exported: the trace is damaged (above); a Parquet export holds every record of a trace or none, and nothing was written",
            input_name(trace)
        ),
    )
}

/// The failure for a Parquet error: the trace named before a damage found while writing.
#[cfg(feature = "parquet")]
fn parquet_failure(trace: &Path, e: ParquetError) -> Failure {
    match e {
        ParquetError::Io(io) => io_failure(&io),
        ParquetError::Damaged { .. } => {
            let f = Failure::diagnostic(EXIT_INVALID_TRACE, &e);
            Failure {
                message: f.message.replacen(
                    "not exported",
                    &format!("{}: not exported", input_name(trace)),
                    1,
                ),
                ..f
            }
        }
        other => Failure::diagnostic(EXIT_USAGE, &other),
    }
}

/// Run `mtf export --to parquet`.
#[cfg(feature = "parquet")]
fn to_parquet(args: &ExportArgs) -> Result<i32, Failure> {
    let (trace, dir) = (&args.trace, &args.output);
    if dir.as_os_str() == "-" {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::parquet_folder",
            "Parquet export writes one file per record type: name a folder with -o",
        ));
    }
    let (o, damaged) = super::common::open_salvaging_as(trace, args.dtd.as_deref(), false)?;
    if damaged {
        return Err(refuse_damaged(trace, &o));
    }
    let reader = o.reader();
    let mut bar = Progress::new(reader.bytes().len() as u64, "scanning", quiet());
    let jobs = args.jobs.decide(true);
    let index = if jobs.threads() > 1 {
        super::common::load_for(trace, &args.seek)
    } else {
        None
    };
    let plan = super::jobs::plan(&reader, &jobs, index.as_ref());
    let mut pass = 1;
    let report = write_parquet_from(
        &reader,
        dir,
        &ParquetOptions {
            refuse_problems: true,
            source: Some(trace.to_path_buf()),
            ..ParquetOptions::default()
        },
        &mut |p| {
            if p.pass != pass {
                pass = p.pass;
                bar.restart("writing");
            }
            bar.set(p.position, p.records);
        },
        // Both passes read the events in trace order, decoded on the threads of `-j`.
        &mut |consume| super::jobs::with_events(&o, &reader, plan.as_ref(), &jobs, false, consume),
    );
    bar.finish();
    let report = report.map_err(|e| parquet_failure(trace, e))?;
    let path = input_name(trace);
    for m in &report.messages {
        line_to_stderr(&error_text("mtf::parquet", format!("{path}: {m}")));
    }
    if !quiet() {
        let rows: u64 = report.tables.iter().map(|t| t.rows).sum();
        line_to_stderr(&format!(
            "exported {path}: {rows} records of {} types into {}",
            report.tables.len(),
            escape_path(dir)
        ));
    }
    Ok(if report.problems > 0 {
        EXIT_INVALID_TRACE
    } else {
        EXIT_OK
    })
}
