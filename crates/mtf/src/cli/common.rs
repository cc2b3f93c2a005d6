//! What several subcommands share: opening a trace with its DTD, rendering diagnostics, and
//! reporting failures with the right exit status.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use miette::{Diagnostic, GraphicalTheme};

use metatf::container::ContainerError;
use metatf::dtd::{DtdLoadError, Schema};
pub use metatf::io::input_name;
use metatf::io::{escape_path, IoError, StdoutFailure};
pub use metatf::Message as Flat;
use metatf::{OpenError, OpenOptions, Opened};

use super::exit;
use super::{EXIT_BAD_DTD, EXIT_OK, EXIT_USAGE};

/// A failure that ends a subcommand.
#[derive(Debug)]
pub struct Failure {
    /// Exit status.
    pub code: i32,
    /// Message for standard error (empty if already printed).
    pub message: String,
}

impl Failure {
    /// A failure with a message.
    pub fn new(code: i32, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A failure whose diagnostic is rendered like every other (code, help, snippet).
    pub fn diagnostic(code: i32, d: &dyn Diagnostic) -> Failure {
        Failure::new(code, render(d).trim_end().to_string())
    }
}

/// A failure with a message in the one style of every error `mtf` prints (miette's, as
/// [`render`] draws it: the code, then `× message`): `code` names the kind of error.
pub fn error(exit: i32, code: &str, message: impl Into<String>) -> Failure {
    Failure::diagnostic(exit, &Flat::new(message.into(), code, None))
}

/// An error that does not end the command, in the same style as [`error`], for standard error.
pub fn error_text(code: &str, message: impl Into<String>) -> String {
    render(&Flat::new(message.into(), code, None))
        .trim_end()
        .to_string()
}

/// clap's text for a usage error (`error: …`, a tip, the usage line) in the one style: the first
/// paragraph is the message, the others the help.
pub fn usage_error_text(clap_text: &str) -> String {
    let mut paragraphs = clap_text.split("\n\n").map(|p| {
        p.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
    });
    let first = paragraphs.next().unwrap_or_default().join(" ");
    let message = first.strip_prefix("error: ").unwrap_or(&first).to_string();
    let help: Vec<String> = paragraphs
        .filter(|p| !p.is_empty())
        .map(|p| p.join(" "))
        .map(|l| l.strip_prefix("tip: ").map(str::to_string).unwrap_or(l))
        .collect();
    let help = (!help.is_empty()).then(|| help.join("\n"));
    format!(
        "{}\n",
        render(&Flat::new(message, "mtf::usage", help)).trim_end()
    )
}

/// A diagnostic that does not end the command, with `what` (the trace, as the user named it)
/// before its message, in the same style as [`error`].
pub fn problem_text(what: &str, d: &dyn Diagnostic) -> String {
    let flat = Flat::of(d);
    let code = flat
        .code
        .clone()
        .unwrap_or_else(|| "mtf::trace::invalid".into());
    render(&Flat::new(
        format!("{what}: {}", flat.message),
        &code,
        flat.help,
    ))
    .trim_end()
    .to_string()
}

impl From<StdoutFailure> for Failure {
    /// A closed pipe ends the command quietly with status 0 (the reader has what it wanted);
    /// any other failure to write standard output is an I/O error, status 2.
    fn from(f: StdoutFailure) -> Failure {
        match f {
            StdoutFailure::Closed => Failure::new(EXIT_OK, String::new()),
            StdoutFailure::Failed(e) => io_failure(&e),
        }
    }
}

impl From<std::io::Error> for Failure {
    /// An error from writing to a [`metatf::io::StdoutSink`].
    fn from(e: std::io::Error) -> Failure {
        Failure::from(metatf::io::classify(e))
    }
}

/// The failure for an input that cannot be read or an output that cannot be written: status 2
/// (also for a full disk and a file over the size limit), with the message naming the path; a
/// compressed trace that cannot be decompressed is an invalid trace (status 1, [`exit::for_io`]).
pub fn io_failure(e: &IoError) -> Failure {
    Failure::diagnostic(exit::for_io(e), &Flat::of(e))
}

/// The failure for a trace whose container is invalid (status 1) or that cannot be read
/// (status 2): the trace is named once, then what is wrong.
pub fn container_failure(path: &Path, e: &ContainerError) -> Failure {
    let inner = e.innermost();
    let code = match inner {
        ContainerError::Io { .. } => "mtf::trace::io",
        _ => "mtf::trace::invalid",
    };
    let message = match inner {
        // Its message already names the path.
        ContainerError::Io { path, source } => {
            format!("cannot read trace {}: {source}", input_name(path))
        }
        _ => format!("{}: {inner}", input_name(path)),
    };
    let mut help = inner.help().map(|h| h.to_string());
    if let ContainerError::BadMagic { found, .. } = inner {
        help = metatf::command::not_a_trace_help(path, found).or(help);
    }
    Failure::diagnostic(exit::for_container(e), &Flat::new(message, code, help))
}

/// Writes `text` to standard error, ignoring a failure: with standard error full or closed
/// there is nowhere left to report it, and the exit status still says what happened
/// (`eprint!` would panic, exit 101).
pub fn to_stderr(text: &str) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// [`to_stderr`] with a newline.
pub fn line_to_stderr(text: &str) {
    to_stderr(&format!("{text}\n"));
}

/// `--color`: when to colour what is written to standard error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorMode {
    /// When standard error is a terminal and `NO_COLOR` is unset or empty.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

static COLOR: AtomicU8 = AtomicU8::new(0);
static QUIET: AtomicBool = AtomicBool::new(false);

/// Set the process-wide `--color` and `--quiet` choices (once, in `main`).
pub fn set_globals(color: ColorMode, quiet: bool) {
    let c = match color {
        ColorMode::Auto => 0,
        ColorMode::Always => 1,
        ColorMode::Never => 2,
    };
    COLOR.store(c, Ordering::Relaxed);
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `--quiet` was given: no progress bars, fewer messages.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Whether `NO_COLOR` is set to a non-empty value (<https://no-color.org>).
pub fn no_color_env() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Whether standard error gets colours: `--color always`, or `auto` on a terminal without
/// `NO_COLOR`.
pub fn color_enabled() -> bool {
    match COLOR.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => std::io::stderr().is_terminal() && !no_color_env(),
    }
}

/// Render a diagnostic for standard error: in colour on a terminal (see [`color_enabled`]),
/// plain otherwise.
pub fn render(d: &dyn Diagnostic) -> String {
    if color_enabled() {
        metatf::dtd::render_with(d, GraphicalTheme::unicode())
    } else {
        metatf::dtd::render_plain(d)
    }
}

/// Print a DTD's warnings.
pub fn print_warnings(w: &[metatf::dtd::DtdWarning]) {
    for w in w {
        to_stderr(&render(w));
    }
}

/// The failure for a DTD that could not be loaded.
pub fn dtd_failure(e: &DtdLoadError) -> Failure {
    match e {
        DtdLoadError::Invalid(errors) => {
            // Each error in the one style of every other message (code, then `×`), not as
            // "related" errors (which miette prefixes with `Error:`); the count comes last.
            for e in &errors.errors {
                to_stderr(&render(e));
            }
            if errors.omitted > 0 {
                line_to_stderr(&format!("{} more errors not shown", errors.omitted));
            }
            line_to_stderr(&errors.summary);
            Failure::new(EXIT_BAD_DTD, String::new())
        }
        // A DTD file that cannot be read (missing, a folder, no permission), is too large or is
        // not UTF-8 is as unusable as an invalid one: status 3 for every DTD that cannot be had,
        // so that a script tells "the DTD" from "the trace or another file" (status 2).
        other => Failure::diagnostic(EXIT_BAD_DTD, other),
    }
}

/// Load a DTD file named on the command line.
pub fn load_schema_file(path: &Path) -> Result<Schema, Failure> {
    let loaded = metatf::dtd::load(path).map_err(|e| dtd_failure(&e))?;
    print_warnings(&loaded.warnings);
    let mut schema = loaded.schema;
    if let Some(n) = path.file_name() {
        schema.name = n.to_string_lossy().into_owned();
    }
    Ok(schema)
}

/// Open a trace and find, load and resolve its DTD (docs/format.md §10).
///
/// `path` may be `-` (standard input), a pipe, a FIFO, `/dev/stdin`, a process substitution or
/// a gzip/zstd/xz/bzip2-compressed trace: what cannot be memory-mapped is read as a stream and
/// spooled to an unlinked temporary file in TMPDIR beyond a few MiB ([`Input::open`],
/// [`open_options`]). The DTD named in the header is looked up beside a trace given by path
/// (not beside standard input).
pub fn open(path: &Path, dtd: Option<&Path>) -> Result<Opened, Failure> {
    let o = open_options()?
        .dtd_opt(dtd)
        .open(path)
        .map_err(|e| open_failure(path, dtd, &e))?;
    protect_dtd(&o);
    print_warnings(o.warnings());
    Ok(o)
}

/// As [`open`], but a trace whose container is damaged (cut short by a crashed tracer) still
/// opens with the regions that can be trusted: the container error is printed here, and
/// the second value tells the caller to exit 1 after showing what the trace holds: the container
/// is damaged ([`Opened::damage`]) or the compressed stream it came from ended early.
pub fn open_salvaging(path: &Path, dtd: Option<&Path>) -> Result<(Opened, bool), Failure> {
    open_salvaging_as(path, dtd, true)
}

/// As [`open_salvaging`]; with `report_damage` false, a damaged container is not reported here
/// (`check` lists it with the other problems, so that it is said once).
pub fn open_salvaging_as(
    path: &Path,
    dtd: Option<&Path>,
    report_damage: bool,
) -> Result<(Opened, bool), Failure> {
    open_salvaging_with(path, dtd, report_damage, None)
}

fn open_salvaging_with(
    path: &Path,
    dtd: Option<&Path>,
    report_damage: bool,
    stream: Option<usize>,
) -> Result<(Opened, bool), Failure> {
    let mut options = open_options()?.dtd_opt(dtd).salvage(true);
    if let Some(window) = stream {
        options = options.stream_window(window);
    }
    let o = options
        .open(path)
        .map_err(|e| open_failure(path, dtd, &e))?;
    protect_dtd(&o);
    if let Some(e) = o.input_fault() {
        // A compressed trace cut short: what was decompressed is shown, the fault reported.
        line_to_stderr(io_failure(e).message.trim_end());
    }
    if let Some(e) = o.damage().filter(|_| report_damage) {
        let f = container_failure(path, e);
        line_to_stderr(&format!(
            "{}\n  (showing the records of the regions that can still be read)",
            f.message
        ));
    }
    print_warnings(o.warnings());
    let damaged = o.input_fault().is_some() || o.damage().is_some();
    Ok((o, damaged))
}

/// Open a trace for one pass from its start to its end, as [`open_salvaging_as`], but a trace
/// that cannot be mapped (`-`, a pipe, a compressed trace) is read as a stream from a bounded
/// window (`MTF_STREAM_WINDOW`, [`OpenOptions::env_stream_window`]) when `stream` is true: the caller reads its events with
/// `cli/jobs.rs`'s `with_events`.
pub fn open_for_pass(
    path: &Path,
    dtd: Option<&Path>,
    report_damage: bool,
    stream: bool,
) -> Result<(Opened, bool), Failure> {
    let window =
        OpenOptions::env_stream_window().map_err(|e| Failure::diagnostic(EXIT_USAGE, &e))?;
    match window.filter(|_| stream) {
        Some(window) => open_salvaging_with(path, dtd, report_damage, Some(window)),
        None => open_salvaging_as(path, dtd, report_damage),
    }
}

/// The failure for a trace read as a stream that could not be read to its end: what opening
/// the same bytes as a file reports.
pub fn stream_failure(path: &Path, e: &metatf::stream::StreamError) -> Failure {
    use metatf::stream::StreamError;
    match e {
        StreamError::Io(e) => io_failure(e),
        StreamError::Container(c) => container_failure(path, c),
        other => Failure::diagnostic(EXIT_USAGE, &Flat::of(other)),
    }
}

/// The options every subcommand opens a trace with ([`OpenOptions::from_env`]: `MTF_SPOOL_ABOVE`).
pub fn open_options() -> Result<OpenOptions, Failure> {
    OpenOptions::from_env().map_err(|e| Failure::diagnostic(EXIT_USAGE, &e))
}

fn open_failure(path: &Path, dtd: Option<&Path>, e: &OpenError) -> Failure {
    match e {
        OpenError::Io(e) => io_failure(e),
        OpenError::Container(c) => container_failure(path, c),
        OpenError::Dtd(d) => dtd_failure(d),
        OpenError::DtdNotFound {
            explicit, reason, ..
        } => {
            // A `--dtd` file that does not exist, as a DTD the trace names that is nowhere to be
            // found: the trace cannot be read for want of a DTD (status 3 both).
            let code = EXIT_BAD_DTD;
            if let (true, Some(d)) = (*explicit, dtd) {
                // The user named the DTD: say that file is missing, not the header's name.
                let message = format!(
                    "the DTD given with --dtd, {}, is not a file",
                    escape_path(d)
                );
                return Failure::diagnostic(
                    code,
                    &Flat::new(
                        message,
                        "mtf::dtd::not_found",
                        Some("check the path; without --dtd the DTD the trace names is looked up beside it, in MTF_DTD_PATH and among the built-in DTDs".to_string()),
                    ),
                );
            }
            // The reason escapes the header's name and the paths tried; the trace is named as
            // the user gave it (the library says `<memory>` for standard input).
            let message = format!("{}: {reason}", input_name(path));
            let help = e.help().map(|h| h.to_string());
            Failure::diagnostic(code, &Flat::new(message, "mtf::dtd::not_found", help))
        }
    }
}

static DEFER_DAMAGE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static DAMAGED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// This command writes its output after reading the trace (`stats`, `plot`, `report`,
/// `diff`, `export`): damage found at the end of a streamed trace is reported there and the
/// command goes on, to exit 1 at its end ([`final_status`]), rather than exiting at once.
pub fn defer_damage() {
    DEFER_DAMAGE.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether [`defer_damage`] was called.
pub fn defers_damage() -> bool {
    DEFER_DAMAGE.load(std::sync::atomic::Ordering::Relaxed)
}

/// The trace read was damaged (salvaged) and the damage reported: the command's success is
/// status 1 ([`final_status`]).
pub fn mark_damaged() {
    DAMAGED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// The exit status of a command that returned `code`: 1 instead of 0 when it read a damaged
/// trace ([`mark_damaged`]).
pub fn final_status(code: i32) -> i32 {
    if code == EXIT_OK && DAMAGED.load(std::sync::atomic::Ordering::Relaxed) {
        super::EXIT_INVALID_TRACE
    } else {
        code
    }
}

/// Refuse to write `output` when it is the file `input` is read from (as `cp a a` refuses): the
/// input would be replaced by the output before it was read. [`guard_files`] for one of each.
pub fn refuse_same_file(input: &Path, output: &Path) -> Result<(), Failure> {
    guard_files(&[input], &[output])
}

/// Registers `inputs` as files no output of this command may replace
/// ([`metatf::io::protect_input`]: `metatf::io::Output` refuses them by identity, also through a
/// symbolic or hard link, and also for files written later, such as the parts of an export), and
/// refuses now any of `outputs` that is one of them (status 2, `mtf::io::overwrites_input`),
/// before any work is done.
pub fn guard_files(inputs: &[&Path], outputs: &[&Path]) -> Result<(), Failure> {
    for input in inputs {
        metatf::io::protect_input(input);
    }
    for output in outputs {
        metatf::io::refuse_overwrite(output).map_err(|e| io_failure(&e))?;
    }
    Ok(())
}

/// Registers the DTD file an opened trace was read with as an input ([`guard_files`]): a DTD
/// found beside the trace is read as much as one given with `--dtd`.
fn protect_dtd(o: &Opened) {
    use metatf::DtdSource;
    if let DtdSource::Explicit(p) | DtdSource::TraceDir(p) | DtdSource::EnvPath(p) = o.dtd_source()
    {
        metatf::io::protect_input(p);
    }
}

// ------------------------------------------------------------------------------------------
// What the reading subcommands share: their options as clap arguments (turned into the
// library's `metatf::command` options), the library's warnings and errors rendered, and the
// statistics run of `stats`, `diff`, `plot` and `report`.

/// The slice of a trace: `--from`/`--to`.
#[derive(Debug, clap::Args, Clone)]
pub struct SliceArgs {
    /// Start at this record index (`1234`) or declared time (`t1234`), inclusive.
    #[arg(long, value_name = "RECORD|tTIME")]
    pub from: Option<metatf::analysis::stats::Bound>,
    /// End before this record index (`1234`) or declared time (`t1234`).
    #[arg(long, value_name = "RECORD|tTIME")]
    pub to: Option<metatf::analysis::stats::Bound>,
}

impl SliceArgs {
    /// The library's slice.
    pub fn slice(&self) -> metatf::command::slice::Slice {
        metatf::command::slice::Slice {
            from: self.from,
            to: self.to,
        }
    }

    /// The window; an empty one is a usage error.
    pub fn window(&self) -> Result<metatf::analysis::stats::Window, Failure> {
        self.slice().window().map_err(|e| usage_failure(&e))
    }
}

/// Where the reading subcommands find a seek index.
#[derive(Debug, clap::Args, Clone, Default)]
pub struct SeekArgs {
    /// The seek index (default: `TRACE.idx` when it exists; made by `mtf index`, `pack`,
    /// `compact`, `import`; `-` for standard input): `dump --from`/`--skip` start from it,
    /// `check` verifies it, `-j` cuts the trace at its checkpoints.
    #[arg(long, value_name = "FILE")]
    pub index: Option<std::path::PathBuf>,
    /// Ignore the index beside the trace.
    #[arg(long, conflicts_with = "index")]
    pub no_index: bool,
}

impl SeekArgs {
    /// The library's options.
    pub fn options(&self) -> metatf::command::seek::SeekOptions {
        metatf::command::seek::SeekOptions {
            index: self.index.clone(),
            no_index: self.no_index,
        }
    }
}

/// The index a reading subcommand uses for `trace` (`--index FILE`, else `TRACE.idx`); one that
/// cannot be read is a warning (reading then starts at the beginning).
pub fn load_for(trace: &Path, args: &SeekArgs) -> Option<metatf::index::Index> {
    args.options().load(trace, &mut warn)
}

/// Shows a warning of the library's commands on standard error.
pub fn warn(w: metatf::command::Warning) {
    use metatf::command::Warning;
    let text = match w {
        Warning::IndexSkipped(e) => format!(
            "{}\n  (warning: decoding from the start of the trace instead)",
            problem_text("index", &e)
        ),
        Warning::TablesSkipped(e) => format!(
            "{}\n  (warning: finding them with a pass over the trace's metadata records instead)",
            problem_text("index", &e)
        ),
        Warning::IndexNotForPlan(e) => format!(
            "{}\n  (warning: decoding without the index)",
            problem_text("index", &e)
        ),
        Warning::IndexNotVerified { index } => format!(
            "warning: {index} is not verified: only a check of the whole trace (without --from \
             or --to) verifies a seek index"
        ),
        Warning::NoAnalysisState { index } => format!(
            "warning: {index} carries no analysis state: the analysis runs on one thread \
             (`mtf index TRACE` writes an index with one)"
        ),
        Warning::PastEnd(note) => note,
        other => format!("warning: {other:?}"),
    };
    line_to_stderr(&text);
}

/// The failure for a request a command cannot carry out as asked ([`exit::for_usage`]).
pub fn usage_failure(e: &metatf::command::UsageError) -> Failure {
    Failure::diagnostic(exit::for_usage(e), &Flat::of(e))
}

/// The failure for a command that stopped: a usage error, or its output not written (a closed
/// pipe ends the command quietly, status 0).
pub fn command_failure(e: metatf::command::CommandError) -> Failure {
    use metatf::command::CommandError;
    match e {
        CommandError::Usage(u) => usage_failure(&u),
        CommandError::Write(e) => Failure::from(e),
        other => Failure::diagnostic(EXIT_USAGE, &other),
    }
}

/// Output format of `mtf stats` and `mtf diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StatsFormat {
    /// Tables for people.
    Text,
    /// One JSON document (schema in docs/stats.md).
    Json,
}

/// Opens a trace and computes its statistics (one thread, the index beside it unused).
pub fn stats_of(
    trace: &Path,
    dtd: Option<&Path>,
    window: metatf::analysis::stats::Window,
) -> Result<metatf::analysis::stats::Stats, Failure> {
    let options = metatf::command::stats::StatsOptions {
        slice: metatf::command::slice::Slice {
            from: window.from,
            to: window.to,
        },
        jobs: metatf::command::jobs::Jobs::one(),
        ..Default::default()
    };
    stats_with(trace, dtd, &options)
}

/// Opens a trace (salvaging: a damaged trace's figures are those of the records it holds, the
/// damage reported, and the command exits 1 once its output is written) and computes its
/// statistics.
pub fn stats_with(
    trace: &Path,
    dtd: Option<&Path>,
    options: &metatf::command::stats::StatsOptions,
) -> Result<metatf::analysis::stats::Stats, Failure> {
    defer_damage();
    let (o, damaged) = open_for_pass(trace, dtd, true, options.streams(trace))?;
    if damaged {
        mark_damaged();
    }
    let faults = faults(&o);
    let stats = metatf::command::stats::stats(&o, trace, options, faults, &mut warn)
        .map_err(|e| usage_failure(&e))?;
    warn_other_dtd(trace, dtd, &o, stats.problems);
    Ok(stats)
}

/// [`stats_with`] for a stack profile (`mtf flamegraph`, `stats --by stack`, `diff
/// --flamegraph`).
pub fn stacks_with(
    trace: &Path,
    dtd: Option<&Path>,
    options: &metatf::command::stacks::StackOptions,
) -> Result<metatf::command::stacks::Profiled, Failure> {
    defer_damage();
    let (o, damaged) = open_for_pass(trace, dtd, true, options.stats.streams(trace))?;
    if damaged {
        mark_damaged();
    }
    let faults = faults(&o);
    let p = metatf::command::stacks::stack_profile(&o, trace, options, faults, &mut warn)
        .map_err(|e| usage_failure(&e))?;
    warn_other_dtd(trace, dtd, &o, p.stats.problems);
    Ok(p)
}

/// Pretty JSON with a final newline.
pub fn json_text(v: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

/// Writes `text` to `output` (a file through [`metatf::io::Output`], atomically) or standard
/// output.
pub fn emit(output: Option<&Path>, text: &str) -> Result<(), Failure> {
    emit_bytes(output, text.as_bytes())
}

/// [`emit`] for bytes (a picture).
pub fn emit_bytes(output: Option<&Path>, bytes: &[u8]) -> Result<(), Failure> {
    use std::io::Write;
    match output {
        Some(p) if p.as_os_str() != "-" => {
            let mut out = metatf::io::Output::create(p).map_err(|e| io_failure(&e))?;
            out.write_all(bytes)
                .map_err(|e| io_failure(&out.error(e)))?;
            out.commit().map_err(|e| io_failure(&e))
        }
        _ => {
            let mut out = metatf::io::StdoutSink::new();
            out.write_all(bytes)?;
            out.finish()?;
            Ok(())
        }
    }
}

/// After a trace was read with `--dtd`: the library's warning that the DTD given is likely the
/// wrong one, on standard error.
pub fn warn_other_dtd(trace: &Path, dtd: Option<&Path>, o: &Opened, problems: u64) {
    if let Some(w) = metatf::other_dtd_warning(o, trace, dtd, problems) {
        to_stderr(&render(&w));
    }
}

/// What the command line does with the faults of a streamed trace: a damaged container or a
/// corrupt compressed stream is found where the stream reaches it, and reported as opening the
/// same bytes as a file reports it, with its status. A damaged container is found at the
/// stream's end, after every record the bytes hold was given out: the consumer finishes (its
/// output written) and the damage is reported after it. Anything else stops the command where
/// it is found.
pub fn faults(o: &Opened) -> metatf::command::jobs::Faults<'static> {
    let path = o
        .trace()
        .path()
        .map_or_else(|| std::path::PathBuf::from("-"), |p| p.to_path_buf());
    let at_end = path.clone();
    metatf::command::jobs::Faults {
        on_fault: Some(Box::new(move |e| {
            if !matches!(e, metatf::stream::StreamError::Container(_)) {
                let f = super::common::stream_failure(&path, e);
                line_to_stderr(&f.message);
                std::process::exit(f.code);
            }
        })),
        // A compressed stream cut short (salvaged): its records were given out as those of the
        // bytes it holds, and its fault is reported with the damage it left.
        on_end: Some(Box::new(move |ended| {
            let cut = ended.input_fault.as_ref().map(super::common::io_failure);
            let damage = ended
                .fault
                .as_ref()
                .filter(|e| matches!(e, metatf::stream::StreamError::Container(_)))
                .map(|e| super::common::stream_failure(&at_end, e));
            report_end(cut, damage)
        })),
    }
}

/// After a streamed pass: the fault of a stream cut short and the damage found at its end.
fn report_end(cut: Option<Failure>, mut damage: Option<Failure>) {
    let defers = defers_damage();
    if defers {
        // Said as for a file whose damage is found when it is opened.
        if let Some(f) = damage.as_mut() {
            f.message = format!(
                "{}\n  (showing the records of the regions that can still be read)",
                f.message.trim_end()
            );
        }
    }
    let code = [&cut, &damage]
        .iter()
        .filter_map(|f| f.as_ref())
        .map(|f| f.code)
        .max();
    for f in [cut, damage].into_iter().flatten() {
        line_to_stderr(f.message.trim_end());
    }
    if let Some(code) = code {
        // A command whose output comes after its pass (stats) writes it, and exits 1.
        if defers {
            mark_damaged();
        } else {
            std::process::exit(code);
        }
    }
}
