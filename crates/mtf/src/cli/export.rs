//! `mtf export`: write an imported trace back in its foreign format; or, `--to parquet` and
//! `--to arrow`, any trace as columnar files (`metatf::columnar`): one per record type, and the
//! heap tables `events` and `blocks` (`--table`), with a progress bar on a terminal.

#[cfg(feature = "parquet")]
use std::path::Path;
use std::path::PathBuf;

use clap::Args;

#[cfg(feature = "parquet")]
use metatf::columnar::{
    write_parquet_from, ColumnarFormat, HeapTableError, ParquetError, ParquetOptions, TableSet,
};
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
    /// The trace (made by `mtf import`; any trace with `--to parquet|arrow` or an export for a
    /// viewer: `heaptrack`, `pprof`, `speedscope`, `dhat`, `chrome`).
    pub trace: PathBuf,
    /// `parquet` or `arrow` (columnar files into the folder `-o`: one per record type, and the
    /// heap tables `--table` asks for); an export of the heap for a viewer (docs/formats.md):
    /// `heaptrack` (heaptrack's data file, for heaptrack_print and heaptrack_gui: a trace
    /// imported from heaptrack is written back byte for byte, any other trace's heap events, and
    /// a recording's with `--space`, as heaptrack would have recorded them; `-o x.zst`
    /// compresses), `pprof` (profile.proto, gzip'd, for `go tool pprof`), `speedscope`, `dhat`
    /// (valgrind's dh_view.html) or `chrome` (Chrome/Perfetto trace events); or a shipped import
    /// format to use instead of the mapping stored in the trace (see `mtf import --list`).
    #[arg(long, conflicts_with = "map")]
    pub to: Option<String>,
    /// With `--to parquet|arrow`: which tables, comma-separated: `records` (one file per record
    /// type), `events` (one row per heap event), `blocks` (one row per block lifetime), `all`
    /// (those three). Default `records`.
    #[arg(long, value_delimiter = ',', value_name = "TABLE")]
    pub table: Vec<TableArg>,
    /// With `--to parquet|arrow`: Hive-style partitions, each table a folder of parts.
    /// `records:N`: `TABLE/part=K/data.EXT`, part K holding the rows of data records K×N to
    /// (K+1)×N−1. `time:SPAN` (`time:1s`, `time:500ms`, or `time:N` in the trace's time unit):
    /// `TABLE/time_bucket=S/data.EXT`, the rows of the data records whose clock is in S..S+SPAN.
    #[arg(long, value_name = "records:N|time:SPAN", value_parser = parse_partition)]
    pub partition_by: Option<PartitionArg>,
    /// With `--to heaptrack|pprof|speedscope|dhat|chrome`: the namespace whose allocations are
    /// exported (default: the first that allocates with sizes, one with stacks first; else the
    /// first with sizes).
    #[arg(long, value_name = "NAME")]
    pub space: Option<String>,
    /// Export with this mapping file instead of the one stored in the trace.
    #[arg(long)]
    pub map: Option<PathBuf>,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// The output: a file, `-` for standard output, or a folder for a trace of several files.
    #[arg(short, long)]
    pub output: PathBuf,
    /// With `--to chrome`: at most this many points per counter (the lowest, highest and last of
    /// every stretch kept, so the peak is exact)
    /// (default 10000)
    #[arg(long, value_name = "N")]
    pub points: Option<usize>,
    #[command(flatten)]
    pub jobs: super::jobs::JobsArgs,
    /// Which seek index `-j` cuts the trace at.
    #[command(flatten)]
    pub seek: super::common::SeekArgs,
}

/// What a build without Parquet says of the columnar exports.
#[cfg(not(feature = "parquet"))]
const NO_PARQUET: &str = "--to parquet, --to arrow and --partition-by need mtf built with the feature parquet (cargo install --path crates/mtf, whose defaults have it)";

/// A value of `--partition-by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartitionArg {
    /// `records:N`.
    Records(u64),
    /// `time:SPAN`.
    #[cfg(feature = "parquet")]
    Time(metatf::columnar::TimeSpan),
}

/// `records:N` or `time:SPAN` of `--partition-by`.
fn parse_partition(s: &str) -> Result<PartitionArg, String> {
    #[cfg(not(feature = "parquet"))]
    if s.starts_with("time:") {
        return Err(NO_PARQUET.to_string());
    }
    #[cfg(feature = "parquet")]
    if let Some(span) = s.strip_prefix("time:") {
        // The span's message, naming the whole value.
        return span
            .parse()
            .map(PartitionArg::Time)
            .map_err(|e: String| e.replacen(&format!("`{span}`"), &format!("`{s}`"), 1));
    }
    let n = s.strip_prefix("records:").ok_or_else(|| {
        format!("`{s}`: partitions are by data records, `records:N`, or by time, `time:SPAN` (`time:1s`, `time:500ms`, `time:N` in the trace's time unit)")
    })?;
    match n.parse::<u64>() {
        Ok(n) if n > 0 => Ok(PartitionArg::Records(n)),
        _ => Err(format!(
            "`{n}`: the number of data records per part must be a whole number above 0"
        )),
    }
}

/// A table of `--table`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TableArg {
    /// One file per record type.
    Records,
    /// The heap events.
    Events,
    /// The block lifetimes.
    Blocks,
    /// Records, events and blocks.
    All,
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
    if let Some(f) = viewer_format(args.to.as_deref()) {
        return to_viewer(args, f);
    }
    if args.points.is_some() {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::viewer",
            "--points goes with --to speedscope, dhat or chrome (the heap for viewers)",
        ));
    }
    #[cfg(feature = "parquet")]
    match args.to.as_deref() {
        Some("parquet") => return to_columnar(args, ColumnarFormat::Parquet),
        Some("arrow") => return to_columnar(args, ColumnarFormat::Arrow),
        _ => {}
    }
    #[cfg(not(feature = "parquet"))]
    if matches!(args.to.as_deref(), Some("parquet" | "arrow")) {
        return Err(error(EXIT_USAGE, "mtf::usage::feature", NO_PARQUET));
    }
    if !args.table.is_empty() || args.partition_by.is_some() {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::table",
            "--table and --partition-by go with --to parquet or --to arrow (the tables of a columnar export)",
        ));
    }
    if args.space.is_some() && !matches!(args.to.as_deref(), Some("heaptrack" | "pprof")) {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::space",
            "--space goes with --to heaptrack, pprof, speedscope, dhat or chrome (the namespace a heap analysis shows)",
        ));
    }
    if args.to.as_deref() == Some("pprof") {
        #[cfg(feature = "pprof")]
        return to_pprof(args);
        #[cfg(not(feature = "pprof"))]
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::feature",
            "--to pprof needs mtf built with the feature pprof (cargo install --path crates/mtf, whose defaults have it)",
        ));
    }
    // An unknown format is the user's mistake whatever the trace holds: say so first.
    let to = match &args.to {
        Some(f) => Some(shipped::by_name(f).ok_or_else(|| {
            error(
                EXIT_USAGE,
                "mtf::export::unknown_format",
                format!("unknown format `{f}` (`parquet`, `arrow`, `heaptrack`, `pprof`, `speedscope`, `dhat`, `chrome`, or see mtf import --list)"),
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
    // `--to heaptrack`: a trace imported from heaptrack goes back as it came (the mapping,
    // byte for byte); any other trace, or one namespace asked for with `--space`, is written
    // from its heap events.
    if args.to.as_deref() == Some("heaptrack")
        && args.map.is_none()
        && (args.space.is_some() || !origin(&src).is_ok_and(|org| org.format == "heaptrack"))
    {
        return to_heaptrack(args, &o);
    }
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

/// A columnar export holds every record of a trace or none: a query engine cannot see a
/// warning, so a damaged trace is not exported (it said "exported" and left the files of the
/// records before the damage). Nothing is written, an earlier export is left as it was.
#[cfg(feature = "parquet")]
fn refuse_damaged(trace: &Path, o: &metatf::Opened, format: ColumnarFormat) -> Failure {
    if let Some(e) = o.damage() {
        line_to_stderr(&super::common::container_failure(trace, e).message);
    }
    error(
        EXIT_INVALID_TRACE,
        "mtf::parquet::damaged",
        format!(
            "{}: not exported: the trace is damaged (above); {} export holds every record of a trace or none, and nothing was written",
            input_name(trace),
            match format {
                ColumnarFormat::Parquet => "a Parquet",
                ColumnarFormat::Arrow => "an Arrow IPC",
            }
        ),
    )
}

/// The failure for an export error: the trace named before a damage found while writing.
#[cfg(feature = "parquet")]
fn parquet_failure(trace: &Path, e: ParquetError) -> Failure {
    let named = |f: Failure, what: &str| Failure {
        message: f
            .message
            .replacen(what, &format!("{}: {what}", input_name(trace)), 1),
        ..f
    };
    match e {
        ParquetError::Io(io) => io_failure(&io),
        ParquetError::Damaged { .. } => {
            named(Failure::diagnostic(EXIT_INVALID_TRACE, &e), "not exported")
        }
        ParquetError::Heap(HeapTableError::Damaged { .. }) => {
            named(Failure::diagnostic(EXIT_INVALID_TRACE, &e), "the trace has")
        }
        ParquetError::Heap(HeapTableError::Limit { .. }) => named(
            Failure::diagnostic(EXIT_INVALID_TRACE, &e),
            "too many live ids",
        ),
        ParquetError::Heap(HeapTableError::NoAllocations(_)) => {
            named(Failure::diagnostic(EXIT_USAGE, &e), "its DTD")
        }
        ParquetError::NoClock { .. } | ParquetError::Partition { .. } => {
            let f = Failure::diagnostic(EXIT_USAGE, &e);
            let what = f
                .message
                .find("cannot partition")
                .or_else(|| f.message.find("time:"))
                .or_else(|| f.message.find("partitions are"));
            match what {
                Some(i) => {
                    let mut message = f.message.clone();
                    message.insert_str(i, &format!("{}: ", input_name(trace)));
                    Failure { message, ..f }
                }
                None => f,
            }
        }
        other => Failure::diagnostic(EXIT_USAGE, &other),
    }
}

/// The tables `--table` asks for; `all` leaves out the heap tables of a trace without
/// allocations (and says so), an explicit `events` or `blocks` is refused for one.
#[cfg(feature = "parquet")]
fn table_set(args: &ExportArgs, o: &metatf::Opened) -> Result<TableSet, Failure> {
    if args.table.is_empty() {
        return Ok(TableSet::default());
    }
    let has = |t: TableArg| args.table.contains(&t);
    let all = has(TableArg::All);
    let mut set = TableSet {
        records: all || has(TableArg::Records),
        events: all || has(TableArg::Events),
        blocks: all || has(TableArg::Blocks),
    };
    let heap = o
        .schema()
        .analysis
        .namespaces
        .iter()
        .any(|n| n.kind == metatf::analysis::SpaceKind::Ids);
    if !heap && (set.events || set.blocks) {
        let asked = has(TableArg::Events) || has(TableArg::Blocks);
        let e = ParquetError::Heap(HeapTableError::NoAllocations(if set.blocks {
            metatf::columnar::HeapTable::Blocks
        } else {
            metatf::columnar::HeapTable::Events
        }));
        if asked {
            return Err(parquet_failure(&args.trace, e));
        }
        if !quiet() {
            line_to_stderr(&format!(
                "mtf: {}: no events or blocks tables: its DTD declares no allocations",
                input_name(&args.trace)
            ));
        }
        set.events = false;
        set.blocks = false;
    }
    Ok(set)
}

/// Run `mtf export --to parquet|arrow`.
#[cfg(feature = "parquet")]
fn to_columnar(args: &ExportArgs, format: ColumnarFormat) -> Result<i32, Failure> {
    let (trace, dir) = (&args.trace, &args.output);
    if dir.as_os_str() == "-" {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::parquet_folder",
            format!(
                "{} export writes one file per table: name a folder with -o",
                format.name()
            ),
        ));
    }
    let (o, damaged) = super::common::open_salvaging_as(trace, args.dtd.as_deref(), false)?;
    if damaged {
        return Err(refuse_damaged(trace, &o, format));
    }
    let tables = table_set(args, &o)?;
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
            format,
            tables,
            partition_records: match args.partition_by {
                Some(PartitionArg::Records(n)) => Some(n),
                _ => None,
            },
            partition_time: match args.partition_by {
                Some(PartitionArg::Time(span)) => Some(span),
                _ => None,
            },
            refuse_problems: true,
            source: Some(trace.to_path_buf()),
            ..ParquetOptions::default()
        },
        &mut |p| {
            if p.pass != pass {
                pass = p.pass;
                bar.restart(if p.pass == 3 {
                    "heap tables"
                } else {
                    "writing"
                });
            }
            bar.set(p.position, p.records);
        },
        // Every pass reads the events in trace order, decoded on the threads of `-j`.
        &mut |consume| super::jobs::with_events(&o, &reader, plan.as_ref(), &jobs, false, consume),
    );
    bar.finish();
    let report = report.map_err(|e| parquet_failure(trace, e))?;
    let path = input_name(trace);
    for m in &report.messages {
        line_to_stderr(&error_text("mtf::parquet", format!("{path}: {m}")));
    }
    for n in report.heap.iter().flat_map(|h| &h.namespaces) {
        let name = metatf::io::escape_for_terminal(&n.name);
        if n.unknown_frees > 0 {
            line_to_stderr(&format!(
                "mtf: {path}: {name}: {} frees, reallocations or moves of ids not alive end no lifetime (as mtf stats counts them)",
                n.unknown_frees
            ));
        }
        if n.replaced > 0 {
            line_to_stderr(&format!(
                "mtf: {path}: {name}: {} allocations of a live id end the old block's lifetime without a free (ended_by = replaced)",
                n.replaced
            ));
        }
    }
    if !quiet() {
        let records: Vec<_> = report.tables.iter().filter(|t| t.heap.is_none()).collect();
        let mut parts = Vec::new();
        if tables.records {
            let rows: u64 = records.iter().map(|t| t.rows).sum();
            parts.push(format!("{rows} records of {} types", records.len()));
        }
        for t in report.tables.iter().filter(|t| t.heap.is_some()) {
            if let Some(h) = t.heap {
                parts.push(format!("{} rows of {h}", t.rows));
            }
        }
        line_to_stderr(&format!(
            "exported {path}: {} into {} ({})",
            parts.join(", "),
            escape_path(dir),
            format.name()
        ));
    }
    Ok(if report.problems > 0 {
        EXIT_INVALID_TRACE
    } else {
        EXIT_OK
    })
}

/// Where a viewer's export goes: a file (through [`metatf::io::Output`]: replaced atomically;
/// compressed by its name unless `plain`) or standard output (`-`).
fn viewer_output(
    args: &ExportArgs,
    plain: bool,
    write: &mut dyn FnMut(&mut dyn std::io::Write) -> Result<String, metatf::viewers::ViewerError>,
) -> Result<i32, Failure> {
    use metatf::viewers::ViewerError;
    let fail = |e: ViewerError| match e {
        ViewerError::Write { source, .. } => Failure::from(source),
        e => viewer_failure(args, &e),
    };
    let out = &args.output;
    let summary = if out.as_os_str() == "-" {
        let mut sink = metatf::io::StdoutSink::new();
        let summary = match write(&mut sink) {
            Err(ViewerError::Write { source, .. })
                if source.kind() == std::io::ErrorKind::BrokenPipe =>
            {
                return Ok(EXIT_OK)
            }
            r => r.map_err(fail)?,
        };
        sink.finish()?;
        summary
    } else {
        super::common::guard_files(&[&args.trace], &[out])?;
        let file = if plain {
            metatf::io::Output::create_plain(out)
        } else {
            metatf::io::Output::create(out)
        };
        let mut file = file.map_err(|e| super::common::io_failure(&e))?;
        let summary = match write(&mut file) {
            Err(ViewerError::Write { source, .. }) => {
                return Err(super::common::io_failure(&file.error(source)))
            }
            r => r.map_err(fail)?,
        };
        file.commit().map_err(|e| super::common::io_failure(&e))?;
        summary
    };
    if !super::common::quiet() {
        super::common::line_to_stderr(&summary);
    }
    Ok(EXIT_OK)
}

/// The failure for a trace a viewer's export cannot show (status 2; 1 for a damaged trace or
/// one past the interpreter's limit), naming the trace first.
fn viewer_failure(args: &ExportArgs, e: &metatf::viewers::ViewerError) -> Failure {
    use metatf::viewers::ViewerError as E;
    let status = match e {
        E::Damaged { .. } | E::Limit { .. } => EXIT_INVALID_TRACE,
        _ => EXIT_USAGE,
    };
    let f = Failure::diagnostic(status, e);
    let what = e.to_string();
    let named = format!("{}: {what}", super::common::input_name(&args.trace));
    Failure {
        message: f.message.replacen(&what, &named, 1),
        ..f
    }
}

/// Run `mtf export --to heaptrack` on a trace not imported from heaptrack: its heap events as
/// heaptrack's data file.
fn to_heaptrack(args: &ExportArgs, o: &metatf::Opened) -> Result<i32, Failure> {
    let path = super::common::input_name(&args.trace).into_owned();
    let options = metatf::viewers::HeaptrackOptions {
        space: args.space.clone(),
        executable: path.clone(),
    };
    let reader = o.reader();
    viewer_output(args, false, &mut |w| {
        let r = metatf::viewers::write_heaptrack(&reader, &options, w)?;
        Ok(format!(
            "exported {path} (heaptrack, namespace {}, {}{}): {} allocations, {} temporary, peak {} bytes, leaked {} bytes",
            r.space,
            if r.stacks { "by stack" } else { "by allocation site" },
            if r.timed { ", declared times" } else { ", times are event indices" },
            r.allocations,
            r.temporary,
            r.peak,
            r.leaked
        ))
    })
}

/// Run `mtf export --to pprof`: the trace's figures by stack (or by site) as a gzip'd
/// profile.proto.
#[cfg(feature = "pprof")]
fn to_pprof(args: &ExportArgs) -> Result<i32, Failure> {
    let path = super::common::input_name(&args.trace).into_owned();
    let options = metatf::command::stats::StatsOptions {
        jobs: args.jobs.jobs(),
        seek: args.seek.options(),
        ..Default::default()
    };
    let mut stats = super::common::stats_with(&args.trace, args.dtd.as_deref(), &options)?;
    let chosen = metatf::viewers::profile_of(&mut stats, args.space.as_deref());
    let (profile, by_stack) = chosen.map_err(|e| viewer_failure(args, &e))?;
    let options = metatf::viewers::PprofOptions {
        mapping: path.clone(),
        comments: vec![format!("exported by mtf from {path}")],
    };
    // The bytes are gzip already: a name ending .gz is not compressed again.
    viewer_output(args, true, &mut |w| {
        let r = metatf::viewers::write_pprof(&profile, &options, w)?;
        Ok(format!(
            "exported {path} (pprof, namespace {}, {}): {} samples, {} locations; default sample type inuse_space (bytes live at the peak)",
            profile.space,
            if by_stack { "by stack" } else { "by allocation site" },
            r.samples,
            r.locations
        ))
    })
}

/// The heap exports for viewers made from one pass of their own (`metatf::viewers::read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ViewerFormat {
    Speedscope,
    Dhat,
    Chrome,
}

fn viewer_format(to: Option<&str>) -> Option<ViewerFormat> {
    match to? {
        "speedscope" => Some(ViewerFormat::Speedscope),
        "dhat" => Some(ViewerFormat::Dhat),
        "chrome" => Some(ViewerFormat::Chrome),
        _ => None,
    }
}

/// Run `mtf export --to speedscope|dhat|chrome`: one pass over the heap events, one file.
fn to_viewer(args: &ExportArgs, format: ViewerFormat) -> Result<i32, Failure> {
    use metatf::viewers::{read, write_chrome, write_dhat, write_speedscope, ViewOptions};
    if !args.table.is_empty() || args.partition_by.is_some() || args.map.is_some() {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::viewer",
            "--table, --partition-by and --map go with other exports, not --to speedscope, dhat or chrome",
        ));
    }
    let points = args.points.unwrap_or(metatf::viewers::DEFAULT_POINTS);
    if points < 3 {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::points",
            "--points must be at least 3 (the lowest, the highest and the last point of a stretch)",
        ));
    }
    if args.output.as_os_str() != "-" {
        super::common::guard_files(&[&args.trace], &[&args.output])?;
    }
    let (o, damaged) = super::common::open_for_pass(&args.trace, args.dtd.as_deref(), true, true)?;
    let path = super::common::input_name(&args.trace).into_owned();
    if damaged {
        return Err(viewer_failure(
            args,
            &metatf::viewers::ViewerError::Damaged {
                message: "its container is damaged (above)".into(),
            },
        ));
    }
    let view = read(
        &o,
        &ViewOptions {
            space: args.space.clone(),
            points,
        },
    )
    .map_err(|e| viewer_failure(args, &e))?;
    let output = metatf::io::escape_path(&args.output).into_owned();
    viewer_output(args, false, &mut |out| {
        match format {
            ViewerFormat::Speedscope => write_speedscope(&view, &path, out),
            ViewerFormat::Dhat => write_dhat(&view, &path, out),
            ViewerFormat::Chrome => write_chrome(&view, &path, out),
        }?;
        Ok(format!(
            "exported {path} ({}, namespace {}): {} program points, {} data records, into {output}",
            match format {
                ViewerFormat::Speedscope => "speedscope",
                ViewerFormat::Dhat => "DHAT",
                ViewerFormat::Chrome => "Chrome trace events",
            },
            metatf::io::escape_for_terminal(&view.space),
            view.profile.leaves.len(),
            view.records,
        ))
    })
}
