//! `mtf export --to parquet TRACE -o DIR`: one Parquet file per record type
//! (`metatf::columnar`), with a progress bar on a terminal.

use std::path::Path;

use metatf::columnar::{write_parquet_from, ParquetError, ParquetOptions};
use metatf::io::escape_path;

use super::common::{error, error_text, input_name, io_failure, line_to_stderr, quiet, Failure};
use super::progress::Progress;
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// Run `mtf export --to parquet`.
pub fn run(
    trace: &Path,
    dtd: Option<&Path>,
    dir: &Path,
    jobs: &super::jobs::JobsArgs,
    seek: &super::index::SeekArgs,
) -> Result<i32, Failure> {
    if dir.as_os_str() == "-" {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::parquet_folder",
            "Parquet export writes one file per record type: name a folder with -o",
        ));
    }
    let (o, damaged) = super::common::open_salvaging_as(trace, dtd, false)?;
    // A Parquet export holds every record of a trace or none: a query engine cannot see a
    // warning, so a damaged trace is not exported (it said "exported" and left the files of
    // the records before the damage). Nothing is written, an earlier export is left as it was.
    if damaged {
        if let Some(e) = o.damage() {
            line_to_stderr(&super::common::container_failure(trace, e).message);
        }
        return Err(error(
            EXIT_INVALID_TRACE,
            "mtf::parquet::damaged",
            format!(
                "{}: not exported: the trace is damaged (above); a Parquet export holds every record of a trace or none, and nothing was written",
                input_name(trace)
            ),
        ));
    }
    let reader = o.reader();
    let total = reader.bytes().len() as u64;
    let mut bar = Progress::new(total, "scanning", quiet());
    let jobs = jobs.decide(true);
    let index = if jobs.threads() > 1 {
        super::index::load_for(trace, seek)
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
    let report = report.map_err(|e| match e {
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
    })?;
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
    Ok(if report.problems > 0 || damaged {
        EXIT_INVALID_TRACE
    } else {
        EXIT_OK
    })
}
