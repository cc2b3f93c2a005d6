//! `mtf dump TRACE`: one line per record, streamed.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use metatf::analysis::stats::{Bound, Place};
use metatf::decode::{Event, Reader, RecordView};
use metatf::index::Target;
use metatf::text::{CsvPrinter, DumpHeader, Format, Options, Printer};

use metatf::io::{classify, StdoutFailure, StdoutSink};

use super::common::{
    error, input_name, io_failure, line_to_stderr, problem_text, quiet, section_arg, Failure,
};
use super::progress::Progress;
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// Output format of `mtf dump`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DumpFormat {
    /// `record key=value …` lines (what `mtf pack` reads).
    Text,
    /// One JSON object per line, after a header object (what `mtf pack` reads).
    Jsonl,
    /// CSV for spreadsheets: one record type (`--record NAME`), a header row, one row per record.
    Csv,
}

/// Arguments of `mtf dump`.
#[derive(Debug, Args)]
pub struct DumpArgs {
    /// The traces (`-` for standard input; pipes and gzip/zstd/xz/bzip2-compressed traces too,
    /// decoded as they arrive unless -j N or a seek index asks for the whole trace),
    /// dumped one after the other.
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<PathBuf>,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Only these sections (name, id, or `global`); repeatable.
    #[arg(short, long = "section", value_name = "SECTION")]
    pub sections: Vec<String>,
    /// Only these record types; repeatable.
    #[arg(short, long = "record", value_name = "NAME")]
    pub records: Vec<String>,
    /// Skip the first N records that pass the filters.
    #[arg(long, default_value_t = 0)]
    pub skip: u64,
    /// Print at most N records (per trace).
    #[arg(short = 'n', long)]
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
    #[arg(short, long, value_enum, default_value_t = DumpFormat::Text)]
    pub format: DumpFormat,
    /// Leave out the header line (`%mtf …`, the JSON header object, the CSV column names).
    /// `mtf pack` needs the header of text and JSON lines.
    #[arg(long)]
    pub no_header: bool,
    /// JSON lines: write integer values as strings ("18446744073709551615"), for tools that
    /// lose precision above 2^53; `mtf pack` reads them back.
    #[arg(long)]
    pub int_strings: bool,
    /// Only the records of a slice (`--from`/`--to`: record index, or `tTIME`). With a seek
    /// index (`TRACE.idx`, `mtf index`), `--from` (and `--skip` without filters) start at the
    /// nearest checkpoint before: problems in the records before it are not seen.
    #[command(flatten)]
    pub slice: super::stats::SliceArgs,
    /// Which seek index to use.
    #[command(flatten)]
    pub seek: super::index::SeekArgs,
    #[command(flatten)]
    pub jobs: super::jobs::JobsArgs,
}

/// Run `mtf dump`: every trace in turn; the exit status is the worst of them.
pub fn run(args: &DumpArgs) -> Result<i32, Failure> {
    if args.format == DumpFormat::Csv && args.records.len() != 1 {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::csv",
            format!(
                "--format csv prints one record type (a CSV file has one set of \
                 columns): give exactly one -r NAME ({} given), e.g. \
                 `mtf dump -f csv -r alloc T > alloc.csv`",
                args.records.len()
            ),
        ));
    }
    if let [trace] = args.traces.as_slice() {
        super::index::refuse_both_stdin(trace, args.seek.index.as_deref())?;
    }
    if args.seek.index.is_some() && args.traces.len() > 1 {
        // One index belongs to one trace: the others would each warn that it is not theirs.
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::index",
            format!(
                "--index names the seek index of one trace, and {} traces are given: dump them \
                 one at a time, or leave --index out (each trace's own TRACE.idx is used)",
                args.traces.len()
            ),
        ));
    }
    let mut w = StdoutSink::new();
    let mut status = EXIT_OK;
    for trace in &args.traces {
        let s = match dump_one(args, trace, &mut w) {
            Ok(s) => s,
            // A closed pipe (`mtf dump t | head`) is a normal way to stop reading.
            Err(StdoutFailure::Closed) => return Ok(status),
            Err(StdoutFailure::Failed(e)) => return Err(io_failure(&e)),
        };
        status = status.max(s);
    }
    Ok(status)
}

/// Dump one trace; a trace that cannot be opened is reported and gives its status.
fn dump_one(args: &DumpArgs, trace: &Path, w: &mut StdoutSink) -> Result<i32, StdoutFailure> {
    match dump_trace(args, trace, w) {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(classify(e)),
        Err(f) => {
            w.flush().map_err(classify)?;
            if !f.message.is_empty() {
                line_to_stderr(&f.message);
            }
            Ok(f.code)
        }
    }
}

fn dump_trace(
    args: &DumpArgs,
    trace: &Path,
    w: &mut StdoutSink,
) -> Result<std::io::Result<i32>, Failure> {
    // Decoded as it arrives unless -j asks for threads or an index is there to seek with.
    let stream =
        args.jobs.jobs.is_none_or(|j| j == 1) && !super::index::has_index(trace, &args.seek);
    let (o, damaged) = super::common::open_for_pass(trace, args.dtd.as_deref(), true, stream)?;
    let schema = o.schema();
    args.slice.need_declared_time(schema, trace)?;
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
            return Err(error(
                EXIT_USAGE,
                "mtf::usage::record",
                format!("the DTD has no record type `{name}`"),
            ));
        }
    }
    if args.data_only {
        for (i, r) in schema.records.iter().enumerate() {
            if r.builtin.is_some() || super::common::is_import_record(r) {
                want_record[i] = false;
            }
        }
    }
    let reader = o.reader();
    let mut slicer = super::heap::Slicer::new(&o, args.slice.window()?)?;
    let mut printer = Printer::new(
        &reader,
        Options {
            format: match args.format {
                DumpFormat::Jsonl => Format::Jsonl,
                _ => Format::Text,
            },
            offsets: args.offsets,
            raw: args.raw,
        },
    )
    .with_int_strings(args.int_strings)
    .with_logical_values(args.data_only)
    // To a pipe or a file, lines go out 64 KiB at a time: `printer.write_pending(w)` before
    // anything else is written or flushed. To a terminal, each line as it comes.
    .with_batched_output(!std::io::stdout().is_terminal());
    // CSV: one printer per record type of that name (one per section that defines it), all
    // with the same columns.
    let mut csv: Vec<CsvPrinter> = Vec::new();
    if args.format == DumpFormat::Csv {
        for (i, _) in want_record.iter().enumerate().filter(|(_, w)| **w) {
            let p = CsvPrinter::new(&reader, i as u32);
            if csv.first().is_some_and(|f| f.columns() != p.columns()) {
                return Err(error(
                    EXIT_USAGE,
                    "mtf::usage::csv",
                    format!(
                        "record types named `{}` differ from section to section: choose \
                         one with -s SECTION",
                        args.records[0]
                    ),
                ));
            }
            csv.push(p);
        }
        // With sections chosen, only the types those sections use.
        csv.retain(|p| {
            let scope = schema.record(p.record_id()).scope;
            scope == 0 || want_section[scope as usize]
        });
    }
    let h = o.trace().header();
    let header = DumpHeader {
        dtd: &h.dtd_name,
        class: h.class,
        order: h.byte_order,
    };
    // A damaged container was reported when it was opened; what it holds is still shown.
    let mut status = if damaged { EXIT_INVALID_TRACE } else { EXIT_OK };
    // Dumping to a file or a pipe shows progress on a terminal's standard error; dumping to
    // the terminal does not (the bar would mix with the records).
    let mut bar = Progress::when(
        reader.bytes().len() as u64,
        "dumping",
        !quiet() && std::io::stderr().is_terminal() && !std::io::stdout().is_terminal(),
    );
    let jobs_args = args.jobs.decide(false);
    let jobs = jobs_args.threads();
    // Records are formatted on the worker threads unless the output is cut (--skip, -n, a
    // slice): then they are decoded there and formatted here, in order.
    // The index is loaded once (`--index -` reads standard input), and only when it is used.
    let index = if jobs > 1 || args.slice.from.is_some() || args.skip > 0 {
        super::index::load_for(trace, &args.seek)
    } else {
        None
    };
    let plan = super::jobs::plan(&reader, &jobs_args, index.as_ref());
    let cut = args.skip > 0 || args.limit.is_some() || !args.slice.window()?.is_all();
    // JSON lines and CSV show each record's index, which a worker knows only when its chunk
    // starts at a known record (a checkpoint); chunks cut at regions are formatted here.
    let indexed = args.format != DumpFormat::Text;
    let plan = plan.filter(|p| !indexed || p.chunks.iter().all(|c| c.first_index.is_some()));
    let result = (|| -> std::io::Result<()> {
        if !args.no_header {
            match csv.first() {
                Some(p) => p.header(w)?,
                None if args.format == DumpFormat::Csv => {}
                None => printer.header(w, &header)?,
            }
        }
        if let Some(plan) = plan.as_ref().filter(|_| !cut) {
            let filter = Filter {
                want_section,
                want_record: want_record.clone(),
                data_only: args.data_only,
            };
            let invalid =
                parallel_dump(trace, &o, &reader, args, plan, jobs, &filter, w, &mut bar)?;
            if invalid {
                status = EXIT_INVALID_TRACE;
            }
            return w.flush();
        }
        let mut seen = 0u64;
        // With an index, start at the checkpoint nearest before `--from`, or before `--skip`
        // when no filter hides records (then every record is seen, and `seen` is its index).
        let unfiltered = args.sections.is_empty() && args.records.is_empty() && !args.data_only;
        let target = match args.slice.from {
            Some(Bound::Record(r)) => Some(Target::Record(r)),
            Some(Bound::Time(t)) => Some(Target::Time(t)),
            None if unfiltered && args.skip > 0 => Some(Target::Record(args.skip)),
            None => None,
        };
        let started = target.and_then(|t| super::index::start(index.as_ref()?, &reader, t));
        if let Some(r) = &started {
            // Started for `--skip`: the records before the checkpoint count as seen. Not for
            // `--from`, where `--skip` counts from the first record of the slice.
            if unfiltered && args.slice.from.is_none() {
                seen = r.count();
            }
        }
        let mut printed = 0u64;
        let mut n = 0u64;
        // Whether a record reached the slice (or passed it): a `--from` past the end of the
        // trace is said, not silent.
        let mut reached = false;
        let path = input_name(trace);
        let status = &mut status;
        let mut run = |records: &mut dyn metatf::decode::EventStream| -> std::io::Result<()> {
            while let Some(event) = records.next_event() {
                match event {
                    Event::Record(view) => {
                        n += 1;
                        bar.record(view.offset(), n);
                        match slicer.place(&view) {
                            Place::Before => continue,
                            Place::After => {
                                reached = true;
                                break;
                            }
                            Place::Inside => reached = true,
                        }
                        // --data-only: no built-ins, and no elements of tables (split streams,
                        // string tables): their values show in the fields that refer to them.
                        if !want_section[view.section() as usize]
                            || !want_record[view.record_id() as usize]
                            || (args.data_only && !view.is_data())
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
                        if args.format == DumpFormat::Csv {
                            if let Some(p) =
                                csv.iter_mut().find(|p| p.record_id() == view.record_id())
                            {
                                p.record(w, &view)?;
                            }
                        } else {
                            printer.record(w, &view)?;
                        }
                        printed += 1;
                    }
                    Event::Problem(p) => {
                        printer.write_pending(w)?;
                        w.flush()?;
                        bar.suspend(|| line_to_stderr(&problem_text(&path, &*p)));
                        *status = EXIT_INVALID_TRACE;
                    }
                    Event::Damage(d) => {
                        printer.write_pending(w)?;
                        w.flush()?;
                        bar.suspend(|| line_to_stderr(&problem_text(&path, &*d)));
                        *status = EXIT_INVALID_TRACE;
                    }
                }
            }
            printer.write_pending(w)?;
            w.flush()
        };
        match started {
            Some(mut records) => run(&mut records),
            None => super::jobs::with_events(&o, &reader, plan.as_ref(), &jobs_args, false, run),
        }?;
        if !reached && *status == EXIT_OK {
            let past = match args.slice.from {
                Some(Bound::Record(r)) => Some(format!("record {r}")),
                Some(Bound::Time(t)) => Some(format!("time {t}")),
                None => None,
            };
            if let Some(past) = past {
                bar.suspend(|| {
                    line_to_stderr(&format!(
                        "{path}: no record at or after --from ({past}): the trace has {} records",
                        o.trace().header().nrecords
                    ))
                });
            }
        }
        Ok(())
    })();
    bar.finish();
    Ok(result.map(|()| status))
}

/// Which records a dump shows.
struct Filter {
    want_section: [bool; 256],
    want_record: Vec<bool>,
    data_only: bool,
}

impl Filter {
    fn wants(&self, view: &RecordView<'_>) -> bool {
        // --data-only: no built-ins, and no elements of tables (split streams, string tables):
        // their values show in the fields that refer to them.
        self.want_section[view.section() as usize]
            && self.want_record[view.record_id() as usize]
            && (!self.data_only || view.is_data())
    }
}

/// What a worker makes of a chunk: the dump's text, and the problems found with where in the
/// text they were found.
struct Formatted {
    text: Vec<u8>,
    problems: Vec<(usize, Found)>,
    records: u64,
    end: u64,
}

enum Found {
    Problem(Box<metatf::decode::Problem>),
    Damage(Box<metatf::decode::Damage>),
}

/// The printers of one thread.
struct Printers {
    printer: Printer,
    csv: Vec<CsvPrinter>,
}

impl Printers {
    fn new(reader: &Reader<'_>, args: &DumpArgs, filter: &Filter) -> Printers {
        let printer = Printer::new(
            reader,
            Options {
                format: match args.format {
                    DumpFormat::Jsonl => Format::Jsonl,
                    _ => Format::Text,
                },
                offsets: args.offsets,
                raw: args.raw,
            },
        )
        .with_int_strings(args.int_strings)
        .with_logical_values(args.data_only);
        let mut csv = Vec::new();
        if args.format == DumpFormat::Csv {
            for (i, _) in filter.want_record.iter().enumerate().filter(|(_, w)| **w) {
                csv.push(CsvPrinter::new(reader, i as u32));
            }
        }
        Printers { printer, csv }
    }

    fn record(&mut self, w: &mut impl Write, view: &RecordView<'_>) -> std::io::Result<()> {
        if self.csv.is_empty() {
            self.printer.record(w, view)
        } else {
            match self
                .csv
                .iter_mut()
                .find(|p| p.record_id() == view.record_id())
            {
                Some(p) => p.record(w, view),
                None => Ok(()),
            }
        }
    }
}

/// Dump on `jobs` threads: chunks formatted by the workers, written here in trace order, each
/// problem after the records before it (on standard error, as `-j 1` does). Whether a problem
/// was found.
#[allow(clippy::too_many_arguments)]
fn parallel_dump(
    trace: &Path,
    o: &metatf::Opened,
    reader: &Reader<'_>,
    args: &DumpArgs,
    plan: &metatf::parallel::Plan,
    jobs: usize,
    filter: &Filter,
    w: &mut StdoutSink,
    bar: &mut Progress,
) -> std::io::Result<bool> {
    let path = input_name(trace);
    let init = || {
        let r = o.reader();
        let p = Printers::new(&r, args, filter);
        (r, p)
    };
    let work = |(r, p): &mut (Reader<'_>, Printers), chunk: &metatf::parallel::Chunk| {
        if chunk.inline {
            return Ok(None);
        }
        let mut out = Formatted {
            text: Vec::with_capacity(chunk.bytes as usize * 4),
            problems: Vec::new(),
            records: 0,
            end: 0,
        };
        let mut records = chunk.records(r);
        while chunk.before(&records) {
            if records.next().is_none() {
                break;
            }
        }
        let start = records.count();
        while !chunk.ended(&records) {
            let Some(e) = records.next() else { break };
            match e {
                Event::Record(view) => {
                    out.end = view.offset() + view.len();
                    if filter.wants(&view) {
                        p.record(&mut out.text, &view)?;
                    }
                }
                Event::Problem(x) => out.problems.push((out.text.len(), Found::Problem(x))),
                Event::Damage(x) => out.problems.push((out.text.len(), Found::Damage(x))),
            }
        }
        out.records = records.count() - start;
        Ok::<_, std::io::Error>(Some(out))
    };
    let mut mine = Printers::new(reader, args, filter);
    metatf::parallel::ordered(jobs, &plan.chunks, init, work, |outputs| {
        let mut first = 0u64;
        let mut exact = true;
        let mut invalid = false;
        let report = |w: &mut StdoutSink,
                      bar: &mut Progress,
                      mut found: Found,
                      first: u64,
                      exact: bool|
         -> std::io::Result<bool> {
            w.flush()?;
            let at = match &mut found {
                Found::Problem(p) => &mut p.at,
                Found::Damage(d) => &mut d.at,
            };
            at.record_index = at.record_index.filter(|_| exact).map(|i| i + first);
            let text = match &found {
                Found::Problem(p) => problem_text(&path, &**p),
                Found::Damage(d) => problem_text(&path, &**d),
            };
            bar.suspend(|| line_to_stderr(&text));
            Ok(matches!(found, Found::Damage(_)))
        };
        for chunk in &plan.chunks {
            metatf::parallel::release_behind(o, reader, chunk);
            match outputs.next() {
                Some(Ok(Some(out))) => {
                    // A chunk from a checkpoint counts records as the whole trace does.
                    if let Some(f) = chunk.first_index {
                        first = f;
                    }
                    let (shift, keep) = match chunk.first_index {
                        Some(_) => (0, true),
                        None => (first, exact),
                    };
                    let mut at = 0;
                    let mut damaged = false;
                    for (pos, found) in out.problems {
                        w.write_all(&out.text[at..pos])?;
                        at = pos;
                        invalid = true;
                        damaged |= report(w, bar, found, shift, keep)?;
                    }
                    w.write_all(&out.text[at..])?;
                    first += out.records;
                    exact &= !damaged;
                    bar.record(out.end, first);
                }
                Some(Ok(None)) => {
                    let mut records = chunk.records(reader);
                    while chunk.before(&records) {
                        if records.next().is_none() {
                            break;
                        }
                    }
                    if chunk.first_index.is_none() {
                        records.count_from(first, exact);
                    }
                    // Every chunk before it is written, the workers are after it.
                    records.release_pages(true);
                    while !chunk.ended(&records) {
                        let Some(e) = records.next() else { break };
                        match e {
                            Event::Record(view) => {
                                bar.record(view.offset(), view.index() + 1);
                                if filter.wants(&view) {
                                    mine.record(w, &view)?;
                                }
                            }
                            Event::Problem(p) => {
                                invalid = true;
                                report(w, bar, Found::Problem(p), 0, true)?;
                            }
                            Event::Damage(d) => {
                                invalid = true;
                                report(w, bar, Found::Damage(d), 0, true)?;
                            }
                        }
                    }
                    first = records.count();
                    exact = records.is_exact();
                }
                Some(Err(e)) => return Err(e),
                None => break,
            }
        }
        if let Some(p) = reader
            .record_count_problem(first, exact)
            .filter(|_| !plan.counted)
        {
            invalid = true;
            report(w, bar, Found::Problem(Box::new(p)), 0, true)?;
        }
        Ok(invalid)
    })
}
