//! A dump (`mtf dump`): the records of a trace that pass a filter (sections, record types,
//! data only) and a cut (a slice, `--skip`, `--limit`), written in the text form, JSON lines
//! or CSV to a caller's writer, problems given to a [`DumpSink`] after the records before them.
//! Decoded on one thread, or on several with the output in trace order (the same bytes).

use std::io::{self, Write};
use std::path::Path;

use crate::analysis::stats::{Bound, Place};
use crate::decode::{Damage, Event, EventStream, Problem, Reader, RecordView};
use crate::dtd::{RecordType, Schema};
use crate::index::Target;
use crate::text::{CsvPrinter, DumpHeader, Format, Options, Printer};
use crate::Opened;

use super::jobs::{self, Faults, Jobs};
use super::seek::{self, SeekOptions};
use super::slice::{past_end_note, Slice, Slicer};
use super::{CommandError, UsageError, Warning};

mod parallel;

/// The form records are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DumpFormat {
    /// `record key=value …` lines (what `mtf pack` reads).
    #[default]
    Text,
    /// One JSON object per line, after a header object.
    Jsonl,
    /// CSV: one record type, a header row, one row per record.
    Csv,
}

/// What a dump writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpOptions {
    /// Only these sections (name, id, or `global`); all when empty.
    pub sections: Vec<String>,
    /// Only these record types; all when empty.
    pub records: Vec<String>,
    /// Skip the first N records that pass the filters.
    pub skip: u64,
    /// At most N records.
    pub limit: Option<u64>,
    /// Prefix every record with `@offset`.
    pub offsets: bool,
    /// Show stored values too (`value~0xraw`).
    pub raw: bool,
    /// No metadata, section, comment records, nor elements of tables.
    pub data_only: bool,
    /// The form.
    pub format: DumpFormat,
    /// Write the header line (text, JSON lines) or the column names (CSV).
    pub header: bool,
    /// JSON lines: integers as strings.
    pub int_strings: bool,
    /// Only the records of this slice.
    pub slice: Slice,
    /// The seek index `--from` and `--skip` start from, and `-j` cuts at.
    pub seek: SeekOptions,
    /// Threads decoding; by default one per core.
    pub jobs: Jobs,
    /// Write lines 64 KiB at a time rather than each as it comes (to a pipe or a file).
    pub batched: bool,
}

impl Default for DumpOptions {
    fn default() -> DumpOptions {
        DumpOptions {
            sections: Vec::new(),
            records: Vec::new(),
            skip: 0,
            limit: None,
            offsets: false,
            raw: false,
            data_only: false,
            format: DumpFormat::Text,
            header: true,
            int_strings: false,
            slice: Slice::default(),
            seek: SeekOptions::default(),
            jobs: Jobs::default(),
            batched: false,
        }
    }
}

impl DumpOptions {
    /// Refuses what no trace can be dumped with: CSV of other than one record type.
    pub fn check(&self) -> Result<(), UsageError> {
        if self.format == DumpFormat::Csv && self.records.len() != 1 {
            return Err(UsageError::CsvTypes {
                given: self.records.len(),
            });
        }
        Ok(())
    }

    /// Refuses what these `traces` cannot be dumped with: what [`DumpOptions::check`] refuses,
    /// a single trace read from standard input with its index, and one index named for several
    /// traces (the others would each warn that it is not theirs).
    pub fn check_traces<P: AsRef<Path>>(&self, traces: &[P]) -> Result<(), UsageError> {
        self.check()?;
        if let [trace] = traces {
            self.seek.refuse_both_stdin(trace.as_ref())?;
        }
        if self.seek.index.is_some() && traces.len() > 1 {
            return Err(UsageError::IndexOfMany {
                traces: traces.len(),
            });
        }
        Ok(())
    }

    /// Whether `trace`, when it cannot be mapped, is best opened to be streamed: unless several
    /// threads are asked for or an index is there to seek with.
    pub fn streams(&self, trace: &Path) -> bool {
        self.jobs.is_single() && !self.seek.has_index(trace)
    }

    /// Whether the output is cut (a slice, `--skip`, `--limit`): records are then decoded on
    /// several threads but written by the calling one.
    fn is_cut(&self) -> bool {
        self.skip > 0 || self.limit.is_some() || !self.slice.is_all()
    }
}

/// Where a dump's problems and progress go.
pub trait DumpSink {
    /// A problem of the trace, after the records before it were written and the writer flushed.
    fn problem(&mut self, problem: &dyn miette::Diagnostic);
    /// Progress: the decode is at `offset` with `records` records read.
    fn progress(&mut self, offset: u64, records: u64) {
        let _ = (offset, records);
    }
    /// Something noticed on the way.
    fn warning(&mut self, w: Warning);
}

/// What a dump found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DumpReport {
    /// Whether a problem was found (and given to the sink).
    pub invalid: bool,
}

/// Resolve a section as a user names it (a name, an id, or `global`) against a schema. A
/// section the DTD names `global` is found by that name; the global region is then `0`.
pub fn section_id(schema: &Schema, arg: &str) -> Result<u8, UsageError> {
    if let Ok(n) = arg.parse::<u8>() {
        if schema.scope_for(n).is_some() {
            return Ok(n);
        }
    }
    if let Some(s) = schema.scopes.iter().find(|s| s.id != 0 && s.name == arg) {
        return Ok(s.id);
    }
    if arg == "global" {
        return Ok(0);
    }
    let declared: Vec<_> = schema
        .scopes
        .iter()
        .filter(|s| s.id != 0)
        .map(|s| format!("{} ({})", s.name, s.id))
        .collect();
    Err(UsageError::NoSection {
        asked: arg.to_string(),
        declared: declared.join(", "),
    })
}

/// Whether `r` is one of the records `mtf import` writes beside the format's own (the built-in
/// fragment `import`, docs/format.md §3.5: the origin with its mapping file, parts, ZIP
/// entries, lines kept verbatim): a data-only dump leaves them out, as it leaves out built-ins,
/// for they are the import's bookkeeping. The fragment's records are the only ones of the
/// global scope named `import_…` with a tag in 247..=254 (a DTD that includes it cannot
/// declare another).
pub fn is_import_record(r: &RecordType) -> bool {
    r.name.starts_with("import_") && (247..=254).contains(&r.tag)
}

/// Which records a dump shows.
#[derive(Clone)]
struct Filter {
    want_section: [bool; 256],
    want_record: Vec<bool>,
    data_only: bool,
}

impl Filter {
    fn new(schema: &Schema, options: &DumpOptions) -> Result<Filter, UsageError> {
        let mut want_section = [options.sections.is_empty(); 256];
        for s in &options.sections {
            want_section[section_id(schema, s)? as usize] = true;
        }
        let mut want_record = vec![options.records.is_empty(); schema.records.len()];
        for name in &options.records {
            let mut found = false;
            for (i, r) in schema.records.iter().enumerate() {
                if &r.name == name {
                    want_record[i] = true;
                    found = true;
                }
            }
            if !found {
                return Err(UsageError::NoRecord { name: name.clone() });
            }
        }
        if options.data_only {
            for (i, r) in schema.records.iter().enumerate() {
                if r.builtin.is_some() || is_import_record(r) {
                    want_record[i] = false;
                }
            }
        }
        Ok(Filter {
            want_section,
            want_record,
            data_only: options.data_only,
        })
    }

    fn wants(&self, view: &RecordView<'_>) -> bool {
        // --data-only: no built-ins, and no elements of tables (split streams, string tables):
        // their values show in the fields that refer to them.
        self.want_section[view.section() as usize]
            && self.want_record[view.record_id() as usize]
            && (!self.data_only || view.is_data())
    }
}

/// The printers of one thread: the text or JSON printer, or for CSV one per record type of the
/// name asked for (one per section that defines it), all with the same columns.
struct Printers {
    printer: Printer,
    csv: Vec<CsvPrinter>,
}

impl Printers {
    fn new(
        reader: &Reader<'_>,
        options: &DumpOptions,
        filter: &Filter,
        batched: bool,
    ) -> Result<Printers, UsageError> {
        let format = match options.format {
            DumpFormat::Jsonl => Format::Jsonl,
            _ => Format::Text,
        };
        let printer = Printer::new(
            reader,
            Options {
                format,
                offsets: options.offsets,
                raw: options.raw,
            },
        )
        .with_int_strings(options.int_strings)
        .with_logical_values(options.data_only)
        .with_batched_output(batched);
        let mut csv: Vec<CsvPrinter> = Vec::new();
        if options.format == DumpFormat::Csv {
            for (i, _) in filter.want_record.iter().enumerate().filter(|(_, w)| **w) {
                let p = CsvPrinter::new(reader, i as u32);
                if csv.first().is_some_and(|f| f.columns() != p.columns()) {
                    return Err(UsageError::CsvColumns {
                        name: options.records[0].clone(),
                    });
                }
                csv.push(p);
            }
            // With sections chosen, only the types those sections use.
            csv.retain(|p| {
                let scope = reader.schema().record(p.record_id()).scope;
                scope == 0 || filter.want_section[scope as usize]
            });
        }
        Ok(Printers { printer, csv })
    }

    fn header(
        &self,
        w: &mut impl Write,
        options: &DumpOptions,
        h: &DumpHeader<'_>,
    ) -> io::Result<()> {
        match self.csv.first() {
            Some(p) => p.header(w),
            None if options.format == DumpFormat::Csv => Ok(()),
            None => self.printer.header(w, h),
        }
    }

    fn record(&mut self, w: &mut impl Write, view: &RecordView<'_>) -> io::Result<()> {
        if self.csv.is_empty() {
            return self.printer.record(w, view);
        }
        match self
            .csv
            .iter_mut()
            .find(|p| p.record_id() == view.record_id())
        {
            Some(p) => p.record(w, view),
            None => Ok(()),
        }
    }

    /// Before anything else is written to `w`, or it is flushed.
    fn write_pending(&mut self, w: &mut impl Write) -> io::Result<()> {
        self.printer.write_pending(w)
    }
}

/// A problem found by a decoder.
enum Found {
    Problem(Box<Problem>),
    Damage(Box<Damage>),
}

impl Found {
    fn diagnostic(&self) -> &dyn miette::Diagnostic {
        match self {
            Found::Problem(p) => &**p,
            Found::Damage(d) => &**d,
        }
    }
}

/// Dump `o` (opened from `trace`, salvaging) to `w`, problems to `sink`.
pub fn dump<'o, W: Write>(
    o: &'o Opened,
    trace: &Path,
    options: &DumpOptions,
    faults: Faults<'o>,
    w: &mut W,
    sink: &mut dyn DumpSink,
) -> Result<DumpReport, CommandError> {
    let schema = o.schema();
    options.slice.need_declared_time(schema, trace)?;
    let filter = Filter::new(schema, options)?;
    let reader = o.reader();
    let window = options.slice.window()?;
    let mut printers = Printers::new(&reader, options, &filter, options.batched)?;
    let h = o.trace().header();
    let header = DumpHeader {
        dtd: &h.dtd_name,
        class: h.class,
        order: h.byte_order,
    };
    let jobs = options.jobs.decide(false);
    // The index is loaded once (`--index -` reads standard input), and only when it is used.
    let index = if jobs.threads() > 1 || options.slice.from.is_some() || options.skip > 0 {
        options.seek.load(trace, &mut |x| sink.warning(x))
    } else {
        None
    };
    let plan = jobs.plan(&reader, index.as_ref(), &mut |x| sink.warning(x));
    // JSON lines and CSV show each record's index, which a worker knows only when its chunk
    // starts at a known record (a checkpoint); chunks cut at regions are formatted here.
    let indexed = options.format != DumpFormat::Text;
    let plan = plan.filter(|p| !indexed || p.chunks.iter().all(|c| c.first_index.is_some()));
    if options.header {
        printers.header(w, options, &header)?;
    }
    // Records are formatted on the worker threads unless the output is cut: then they are
    // decoded there and formatted here, in order.
    if let Some(plan) = plan.as_ref().filter(|_| !options.is_cut()) {
        let run = parallel::Run {
            o,
            reader: &reader,
            options,
            filter: &filter,
            plan,
            threads: jobs.threads(),
        };
        let invalid = run.dump(w, sink)?;
        w.flush()?;
        return Ok(DumpReport { invalid });
    }
    let mut pass = Sequential {
        options,
        filter: &filter,
        slicer: Slicer::new(o, window),
        seen: 0,
        printed: 0,
        n: 0,
        reached: false,
        invalid: false,
    };
    let target = pass.target();
    let started =
        target.and_then(|t| seek::start(index.as_ref()?, &reader, t, &mut |x| sink.warning(x)));
    if let Some(r) = &started {
        // Started for `--skip`: the records before the checkpoint count as seen. Not for
        // `--from`, where `--skip` counts from the first record of the slice.
        if pass.unfiltered() && options.slice.from.is_none() {
            pass.seen = r.count();
        }
    }
    let mut each = |records: &mut dyn EventStream| pass.run(records, &mut printers, w, sink);
    match started {
        Some(mut records) => each(&mut records),
        None => jobs::read(
            o,
            &reader,
            plan.as_ref(),
            jobs.threads(),
            false,
            faults,
            each,
        ),
    }?;
    let trace_name = display_name(trace);
    let records = o.trace().header().nrecords;
    // A damaged trace said so already.
    let damaged = o.damage().is_some() || o.input_fault().is_some();
    let reached = pass.reached || pass.invalid || damaged;
    if let Some(note) = past_end_note(&options.slice, reached, &trace_name, records) {
        sink.warning(Warning::PastEnd(note));
    }
    Ok(DumpReport {
        invalid: pass.invalid,
    })
}

/// How the command line names a trace: `-` is standard input.
fn display_name(trace: &Path) -> String {
    if trace.as_os_str() == "-" {
        "standard input".to_string()
    } else {
        crate::escape::escape_path(trace).into_owned()
    }
}

/// A dump record by record, in trace order, with its cut.
struct Sequential<'a, 'o> {
    options: &'a DumpOptions,
    filter: &'a Filter,
    slicer: Slicer<'o>,
    /// Records that passed the filters (for `--skip`).
    seen: u64,
    printed: u64,
    /// Records decoded.
    n: u64,
    /// Whether a record reached the slice (or passed it): a `--from` past the end of the
    /// trace is said, not silent.
    reached: bool,
    invalid: bool,
}

impl Sequential<'_, '_> {
    /// Whether no filter hides records (then every record is seen, and `seen` is its index).
    fn unfiltered(&self) -> bool {
        self.options.sections.is_empty()
            && self.options.records.is_empty()
            && !self.options.data_only
    }

    /// With an index, where to start: at the checkpoint nearest before `--from`, or before
    /// `--skip` when no filter hides records.
    fn target(&self) -> Option<Target> {
        match self.options.slice.from {
            Some(Bound::Record(r)) => Some(Target::Record(r)),
            Some(Bound::Time(t)) => Some(Target::Time(t)),
            None if self.unfiltered() && self.options.skip > 0 => {
                Some(Target::Record(self.options.skip))
            }
            None => None,
        }
    }

    fn run<W: Write>(
        &mut self,
        records: &mut dyn EventStream,
        printers: &mut Printers,
        w: &mut W,
        sink: &mut dyn DumpSink,
    ) -> io::Result<()> {
        while let Some(event) = records.next_event() {
            let found = match event {
                Event::Record(view) => {
                    self.n += 1;
                    sink.progress(view.offset(), self.n);
                    match self.slicer.place(&view) {
                        Place::Before => continue,
                        Place::After => {
                            self.reached = true;
                            break;
                        }
                        Place::Inside => self.reached = true,
                    }
                    if !self.filter.wants(&view) {
                        continue;
                    }
                    self.seen += 1;
                    if self.seen <= self.options.skip {
                        continue;
                    }
                    if self.options.limit.is_some_and(|l| self.printed >= l) {
                        break;
                    }
                    printers.record(w, &view)?;
                    self.printed += 1;
                    continue;
                }
                Event::Problem(p) => Found::Problem(p),
                Event::Damage(d) => Found::Damage(d),
            };
            printers.write_pending(w)?;
            w.flush()?;
            sink.problem(found.diagnostic());
            self.invalid = true;
        }
        printers.write_pending(w)?;
        w.flush()
    }
}
