//! `mtf export`: write an imported trace back in its foreign format.

use std::path::PathBuf;

use clap::Args;

use metatf::import::source::TraceSource;
use metatf::import::{export_from, origin, shipped, ExportError, Mapping, Target};

use super::common::{error, render, Failure};
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
    pub seek: super::index::SeekArgs,
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

/// Run `mtf export`.
pub fn run(args: &ExportArgs) -> Result<i32, Failure> {
    #[cfg(feature = "parquet")]
    if args.to.as_deref() == Some("parquet") {
        return super::columnar::run(
            &args.trace,
            args.dtd.as_deref(),
            &args.output,
            &args.jobs,
            &args.seek,
        );
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
    let m = if let Some(p) = &args.map {
        Mapping::load(p).map_err(|e| {
            eprint!("{}", render(&e));
            Failure::new(EXIT_USAGE, String::new())
        })?
    } else if let Some(m) = to {
        m
    } else {
        Mapping::parse(
            &format!("{path} (stored mapping `{}`)", org.format),
            &org.mapping,
        )
        .map_err(|e| Failure::diagnostic(EXIT_INVALID_TRACE, &*e))?
    };
    let target = if args.output.as_os_str() == "-" {
        Target::Stdout
    } else {
        Target::Path(args.output.clone())
    };
    // Decoding on the threads of `-j`, the records rendered here in trace order.
    let jobs = args.jobs.decide(true);
    let index = if jobs.threads() > 1 {
        super::index::load_for(&args.trace, &args.seek)
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
