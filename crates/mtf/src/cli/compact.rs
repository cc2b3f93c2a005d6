//! `mtf compact INPUT -o OUT` (formerly `mtf encode`, still accepted): re-encode a trace of any
//! DTD with the widths and interpretations that make it small, optionally compressing the whole
//! file (read back transparently by every subcommand). The choices are the library's
//! ([`metatf::compact::compact_file`]); this file parses, calls and renders.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};

use metatf::compact::{compact_file, Codec, CompactError, CompactOptions, Compression};
use metatf::compact::{FileOptions, Streams};

use super::common::{line_to_stderr, open, Failure};
use super::exit::{self, EXIT_OK};

/// Whole-file compression of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Compress {
    /// No compression.
    None,
    /// zstd (levels 1 to 22, default 19).
    Zstd,
    /// xz (levels 0 to 9, default 9).
    Xz,
    /// gzip (levels 0 to 9, default 9).
    Gzip,
}

impl Compress {
    fn codec(self) -> Option<Codec> {
        match self {
            Compress::None => None,
            Compress::Zstd => Some(Codec::Zstd),
            Compress::Xz => Some(Codec::Xz),
            Compress::Gzip => Some(Codec::Gzip),
        }
    }
}

/// Arguments of `mtf compact`.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// The trace to re-encode (`-` for standard input; compressed traces too).
    pub input: PathBuf,
    /// The trace to write (`-` for standard output).
    #[arg(short, long)]
    pub output: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Compress the whole output file; the cost model then estimates compressed sizes. Without
    /// it, an output named .zst, .xz or .gz is compressed so (and .bz2 with bzip2).
    #[arg(long, value_enum, default_value_t = Compress::None)]
    pub compress: Compress,
    /// Compression level (zstd 1 to 22, xz and gzip 0 to 9); needs --compress or such a name.
    #[arg(long)]
    pub level: Option<u32>,
    /// Address class of the output: 32 makes every metadata value word 4 bytes instead of 8
    /// (for a trace of a 32-bit program imported as class 64). Default: the input's. A value
    /// that a 4-byte word cannot hold is then kept out of metadata.
    #[arg(long, value_parser = ["32", "64"])]
    pub class: Option<String>,
    /// Records per look-ahead window.
    #[arg(long, default_value_t = 4096)]
    pub window: usize,
    /// Also store values as positions in live sets where that pays (a free's address as the
    /// position of its block among the live ones): extension live/1 of docs/format.md §13,
    /// which a Meta-TF 1.0 reader refuses.
    #[arg(long)]
    pub live: bool,
    /// Move every varying field into a section of its own (a split stream, read back through
    /// `sectionStride`), which helps a compressor: both encodings are written and the smaller
    /// kept. With streams, the output names a derived DTD, written beside it as
    /// NAME.split-HASH.dtd, which must travel with the trace.
    #[arg(long)]
    pub split: bool,
    /// Read the output back and check that it decodes to the input's values.
    #[arg(long)]
    pub verify: bool,
    /// Print nothing on success.
    #[arg(long, short)]
    pub quiet: bool,
    /// The seek index beside the output.
    #[command(flatten)]
    pub index: super::seek::WriteIndexArgs,
}

/// The codec of `--compress`, or else the one the output's name asks for (`T.zst`: zstd at
/// compact's level for it), so that the cost model measures what is written; a name that asks
/// for another codec than `--compress` is a usage error.
fn codec_for(args: &CompactArgs) -> Result<Option<Codec>, Failure> {
    use metatf::io::Compression as Named;
    let named = match Named::for_name(&args.output) {
        Some(Named::Zstd) => Some(Codec::Zstd),
        Some(Named::Xz) => Some(Codec::Xz),
        Some(Named::Gzip) => Some(Codec::Gzip),
        // bzip2: written by the output as its name says, not measured.
        _ => None,
    };
    let named_any = Named::for_name(&args.output);
    match (args.compress.codec(), named_any) {
        (Some(c), Some(n)) if named != Some(c) => Err(super::common::error(
            exit::EXIT_USAGE,
            "mtf::usage::compress",
            format!(
                "{} names {n} compression, but --compress asks for {}: give one, or make them agree",
                super::common::input_name(&args.output),
                c.name()
            ),
        )),
        (Some(c), _) => Ok(Some(c)),
        (None, _) => Ok(named),
    }
}

/// Run `mtf compact`.
pub fn run(args: &CompactArgs) -> Result<i32, Failure> {
    let t0 = Instant::now();
    // Arguments first: a bad level is reported before the input is read.
    let compression = Compression::choose(codec_for(args)?, args.level)
        .map_err(|e| Failure::diagnostic(exit::EXIT_USAGE, &e))?;
    super::common::refuse_same_file(&args.input, &args.output)?;
    let o = open(&args.input, args.dtd.as_deref())?;
    let reader = o.reader();
    let h = o.trace().header();
    let opts = FileOptions {
        compact: CompactOptions {
            window: args.window,
            live: args.live,
            ..CompactOptions::default()
        },
        compression,
        class: match args.class.as_deref() {
            Some("32") => Some(metatf::container::Class::Bits32),
            Some(_) => Some(metatf::container::Class::Bits64),
            None => None,
        },
        split: args.split,
        verify: args.verify,
    };
    let quiet = args.quiet || super::common::quiet();
    let mut bar = super::progress::Progress::new(reader.bytes().len() as u64, "compacting", quiet);
    let report = compact_file(
        &reader,
        o.dtd_text(),
        &h.dtd_name,
        &args.output,
        &opts,
        &mut |at, n| bar.record(at, n),
    )
    .map_err(|e| compact_failure(&e, &args.input))?;
    drop(bar);
    // The output names the derived DTD when streams were kept (written beside it), else the
    // input's.
    // The input's DTD file is used wherever it was found: the output's folder need not hold it.
    let out_dtd = match (&report.streams, o.dtd_source()) {
        (Streams::Kept { .. }, _) | (_, metatf::DtdSource::Shipped(_)) => None,
        (
            _,
            metatf::DtdSource::Explicit(p)
            | metatf::DtdSource::TraceDir(p)
            | metatf::DtdSource::EnvPath(p),
        ) => Some(p.as_path()),
    };
    super::seek::after_write(&args.output, out_dtd, &args.index)?;
    if quiet {
        return Ok(EXIT_OK);
    }
    for line in report.summary(&opts, t0.elapsed()) {
        line_to_stderr(&line);
    }
    Ok(EXIT_OK)
}

/// The exit status of a failed compaction: an invalid input (or an output that reads back
/// different) is an invalid trace; files that cannot be read or written, and a split asked
/// for with standard output, are I/O or usage errors.
fn compact_failure(e: &CompactError, input: &std::path::Path) -> Failure {
    if let CompactError::Invalid(m) = e {
        // The message names the input, as every other trace error does.
        let message = format!(
            "{}: the input trace is invalid: {m}",
            super::common::input_name(input)
        );
        return Failure::diagnostic(
            exit::EXIT_INVALID_TRACE,
            &super::common::Flat::new(message, "mtf::compact::invalid_input", None),
        );
    }
    let code = match e {
        CompactError::Invalid(_) | CompactError::Differs { .. } => exit::EXIT_INVALID_TRACE,
        CompactError::Encode(e) => exit::for_encode(e),
        CompactError::DerivedDtd(_) => exit::EXIT_INVALID_TRACE,
        CompactError::Io(_)
        | CompactError::SplitNeedsFile
        | CompactError::DerivedDtdExists { .. } => exit::EXIT_USAGE,
    };
    Failure::diagnostic(code, e)
}
