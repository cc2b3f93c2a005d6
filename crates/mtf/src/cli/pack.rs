//! `mtf pack --dtd DTD INPUT -o OUT`: the text form (or JSON lines) back into a binary trace.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};

use metatf::encode::{EncodeError, EncodeErrorKind, TraceWriter};
use metatf::io::{escape_path, Input, IoError, Output};
use metatf::pack::{finish_error, pack_lines, pack_lines_ahead, read_header, LineMap, PackError};
use metatf::text::{InputFormat, LineReader, TextErrorKind};

use metatf::container::{locate_dtd, Located};
use metatf::dtd::{DtdLoadError, Schema};

use miette::Diagnostic;

use super::common::{
    dtd_failure, error, input_name, io_failure, line_to_stderr, load_schema_file, print_warnings,
    Failure, Flat,
};
use super::{EXIT_BAD_DTD, EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// Input format of `mtf pack`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PackFormat {
    /// Decide from the first character (`{` means JSON lines).
    Auto,
    /// The text form.
    Text,
    /// JSON lines.
    Jsonl,
}

/// Arguments of `mtf pack`.
#[derive(Debug, Args)]
pub struct PackArgs {
    /// The DTD that describes the records. Without it, the DTD the input's header names is
    /// looked up beside the input, in `MTF_DTD_PATH` and among the built-in DTDs.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// The input (`-` for standard input), as printed by `mtf dump`; it may be gzip, zstd, xz
    /// or bzip2-compressed.
    pub input: PathBuf,
    /// The trace to write (`-` for standard output). A regular file (or a symbolic link's
    /// target) is replaced only when the trace is complete and keeps its permissions; a device
    /// or FIFO is written directly.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Input format.
    #[arg(short, long, value_enum, default_value_t = PackFormat::Auto)]
    pub format: PackFormat,
    /// Threads: with 2 or more (0: one per core), the input is read and its lines parsed on a
    /// thread of its own, a batch ahead of the one that encodes them (the encoding is
    /// sequential, so more than 2 gives nothing more). By default one thread: a second one
    /// pays only where a core is free, and costs more CPU time (docs/performance.md, "Pack,
    /// round 3"). The trace and the errors are the same.
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<usize>,
    /// The seek index beside the output.
    #[command(flatten)]
    pub index: super::seek::WriteIndexArgs,
}

/// The I/O error inside a writer error, if it is one (the output or the spool could not be
/// written).
fn file_error(e: &EncodeError) -> Option<&IoError> {
    match e.kind() {
        EncodeErrorKind::File(io) => Some(io),
        _ => None,
    }
}

/// The failure for an I/O error of the output: a closed pipe on standard output ends quietly
/// with status 0, as for every command that prints; anything else is status 2.
fn output_failure(e: &IoError) -> Failure {
    if let IoError::Write { path, source } = e {
        if path.as_os_str() == "-" && source.kind() == std::io::ErrorKind::BrokenPipe {
            return Failure::new(EXIT_OK, String::new());
        }
    }
    io_failure(e)
}

/// A read error of the input: it carries the `IoError` that names the input (see
/// `Input::reader`).
fn read_failure(input_name: &str, e: &std::io::Error) -> Failure {
    match e.get_ref().and_then(|e| e.downcast_ref()) {
        Some(io) => io_failure(io),
        None => error(
            EXIT_USAGE,
            "mtf::io::read",
            format!("cannot read {input_name}: {e}"),
        ),
    }
}

/// The failure for a pack error: a line's error at `location:line:column`, an output that
/// cannot be written as every I/O error.
fn pack_failure(e: PackError, location: &str, input_name: &str) -> Failure {
    match e {
        PackError::Io(e) => read_failure(input_name, &e),
        PackError::Text(t) => match &t.kind {
            TextErrorKind::Encode(w) if file_error(w).is_some() => {
                output_failure(file_error(w).expect("checked"))
            }
            kind => Failure::diagnostic(
                EXIT_INVALID_TRACE,
                &Flat::new(
                    format!("{location}:{}:{}: {kind}", t.line, t.column),
                    &t.code().map_or("mtf::pack::text".into(), |c| c.to_string()),
                    t.help().map(|h| h.to_string()),
                ),
            ),
        },
        PackError::Write(w) => match file_error(&w) {
            Some(io) => output_failure(io),
            None => Failure::diagnostic(
                EXIT_INVALID_TRACE,
                &Flat::new(
                    format!("{location}: {w}"),
                    &Diagnostic::code(&w).map_or("mtf::encode".into(), |c| c.to_string()),
                    Diagnostic::help(&w).map(|h| h.to_string()),
                ),
            ),
        },
    }
}

/// Run `mtf pack`.
pub fn run(args: &PackArgs) -> Result<i32, Failure> {
    super::common::refuse_same_file(&args.input, &args.output)?;
    let explicit = match &args.dtd {
        Some(p) => Some(load_schema_file(p)?),
        None => None,
    };
    if args.output.as_os_str() == "-" && std::io::stdout().is_terminal() {
        return Err(error(
            EXIT_USAGE,
            "mtf::usage::terminal",
            "not writing a binary trace to a terminal; redirect standard output or name \
             a file with -o",
        ));
    }
    let input_name = input_name(&args.input);
    // `file:line:column` prefixes keep `-` for standard input, as compilers do.
    let location = escape_path(&args.input);
    let mut input = Input::reader(&args.input).map_err(|e| io_failure(&e))?;
    let read_failure = |e: &std::io::Error| read_failure(&input_name, e);
    let format = match args.format {
        PackFormat::Text => InputFormat::Text,
        PackFormat::Jsonl => InputFormat::Jsonl,
        PackFormat::Auto => {
            let buf = input.fill_buf().map_err(|e| read_failure(&e))?;
            match buf.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'{') => InputFormat::Jsonl,
                _ => InputFormat::Text,
            }
        }
    };
    let fail = |e: PackError| pack_failure(e, &location, &input_name);
    let mut lines = LineReader::new(input);
    let h = read_header(&mut lines, format).map_err(fail)?;
    // The DTD file used, to read the output back for its seek index (its folder need not
    // hold the DTD the header names).
    let (schema, dtd_file) = match explicit {
        Some(s) => (s, args.dtd.clone()),
        None => header_schema(&h.dtd, &args.input)?,
    };
    let out = Output::create(&args.output).map_err(|e| io_failure(&e))?;
    let mut writer = TraceWriter::to_output(&schema, out, h.class, h.order, &h.dtd)
        .map_err(|e| fail(PackError::Write(e)))?;
    let mut map = LineMap::default();
    let threads = match args.jobs {
        Some(0) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        Some(n) => n,
        None => 1,
    };
    if threads > 1 {
        pack_lines_ahead(&mut lines, format, &mut writer, &mut map)
    } else {
        pack_lines(&mut lines, format, &mut writer, &mut map)
    }
    .map_err(fail)?;
    // If anything above failed, `writer` is dropped here and its temporary files removed:
    // nothing appears under the output name.
    let summary = writer.finish().map_err(|e| fail(finish_error(e, &map)))?;
    let output_name = if args.output.as_os_str() == "-" {
        "standard output".into()
    } else {
        escape_path(&args.output)
    };
    // `-q`: nothing but problems, as `import -q` and `export -q`.
    if !super::common::quiet() {
        line_to_stderr(&format!(
            "{output_name}: {} records, {} bytes",
            summary.nrecords, summary.bytes
        ));
    }
    super::seek::after_write(&args.output, dtd_file.as_deref(), &args.index)?;
    Ok(EXIT_OK)
}

/// The DTD the header names (docs/format.md §10): beside the input (not beside standard
/// input), in `MTF_DTD_PATH`, or built into `mtf`; with the file it was read from (`None` for a
/// built-in DTD).
fn header_schema(name: &str, input: &Path) -> Result<(Schema, Option<PathBuf>), Failure> {
    let dir = (input.as_os_str() != "-")
        .then(|| input.parent())
        .flatten()
        .map(|d| {
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            }
        });
    let env = std::env::var_os("MTF_DTD_PATH");
    match locate_dtd(None, name, dir, env.as_deref()) {
        Located::Shipped(n, text) => {
            let loaded =
                metatf::dtd::parse_str(n, text).map_err(|e| dtd_failure(&DtdLoadError::from(e)))?;
            print_warnings(&loaded.warnings);
            Ok((loaded.schema, None))
        }
        Located::NotFound(nf) => Err(Failure::diagnostic(
            EXIT_BAD_DTD,
            &Flat::new(
                format!("{}: {nf}", input_name(input)),
                "mtf::dtd::not_found",
                Some("name the DTD with --dtd FILE".to_string()),
            ),
        )),
        found => {
            let path = found.path().expect("a file was found").to_path_buf();
            Ok((load_schema_file(&path)?, Some(path)))
        }
    }
}
