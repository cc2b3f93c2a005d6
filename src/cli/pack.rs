//! `mtf pack --dtd DTD INPUT -o OUT`: the text form (or JSON lines) back into a binary trace.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use clap::{Args, ValueEnum};

use metatf::encode::TraceWriter;
use metatf::pack::{finish_error, pack_lines, read_header, LineMap, PackError};
use metatf::text::{InputFormat, LineReader};

use super::common::{load_schema_file, render, Failure};
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

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
    /// The DTD that describes the records.
    #[arg(long)]
    pub dtd: PathBuf,
    /// The input (`-` for standard input), as printed by `mtf dump`.
    pub input: PathBuf,
    /// The trace to write; it appears only when complete.
    #[arg(short, long)]
    pub output: PathBuf,
    /// Input format.
    #[arg(long, value_enum, default_value_t = PackFormat::Auto)]
    pub format: PackFormat,
}

/// Run `mtf pack`.
pub fn run(args: &PackArgs) -> Result<i32, Failure> {
    let schema = load_schema_file(&args.dtd)?;
    let input_name = args.input.display().to_string();
    let mut input: Box<dyn BufRead> = if args.input.as_os_str() == "-" {
        Box::new(BufReader::with_capacity(1 << 16, std::io::stdin().lock()))
    } else {
        let f = File::open(&args.input).map_err(|e| {
            Failure::new(EXIT_USAGE, format!("error: cannot read {input_name}: {e}"))
        })?;
        Box::new(BufReader::with_capacity(1 << 16, f))
    };
    let format = match args.format {
        PackFormat::Text => InputFormat::Text,
        PackFormat::Jsonl => InputFormat::Jsonl,
        PackFormat::Auto => {
            let buf = input.fill_buf().map_err(|e| {
                Failure::new(EXIT_USAGE, format!("error: reading {input_name}: {e}"))
            })?;
            match buf.iter().find(|b| !b.is_ascii_whitespace()) {
                Some(b'{') => InputFormat::Jsonl,
                _ => InputFormat::Text,
            }
        }
    };
    let fail = |e: PackError| match e {
        PackError::Io(e) => Failure::new(EXIT_USAGE, format!("error: reading {input_name}: {e}")),
        PackError::Text(t) => Failure::new(
            EXIT_INVALID_TRACE,
            format!("error: {input_name}:{}:{}: {}", t.line, t.column, t.kind),
        ),
        PackError::Write(w) => Failure::new(
            EXIT_INVALID_TRACE,
            format!("error: {input_name}: {}", render(&w).trim_end()),
        ),
    };
    let mut lines = LineReader::new(input);
    let h = read_header(&mut lines, format).map_err(fail)?;
    let mut writer = TraceWriter::create(&schema, &args.output, h.class, h.order, &h.dtd)
        .map_err(|e| Failure::new(EXIT_USAGE, format!("error: {}: {e}", args.output.display())))?;
    let mut map = LineMap::default();
    pack_lines(&mut lines, format, &mut writer, &mut map).map_err(fail)?;
    // If anything above failed, `writer` is dropped here and its temporary file removed: nothing
    // appears under the output name.
    let summary = writer.finish().map_err(|e| fail(finish_error(e, &map)))?;
    eprintln!(
        "{}: {} records, {} bytes",
        args.output.display(),
        summary.nrecords,
        summary.bytes
    );
    Ok(EXIT_OK)
}
