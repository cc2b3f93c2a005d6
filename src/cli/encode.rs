//! `mtf encode INPUT -o OUT`: re-encode a trace of any DTD with the widths and interpretations
//! that make it small (metatf::compact), optionally compressing the whole file (zstd or xz,
//! read back transparently by every subcommand).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};

use metatf::compact::{
    encode_split, encode_with_progress, plan_split, verify, Measure, Options, SplitPlan,
};
use metatf::encode::TraceWriter;
use metatf::io::{Output, TempFile};

use super::common::{io_failure, line_to_stderr, open, render, Failure};
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// Whole-file compression of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Compress {
    /// No compression.
    None,
    /// zstd (default level 19).
    Zstd,
    /// xz (default level 9).
    Xz,
    /// gzip (default level 9).
    Gzip,
}

impl Compress {
    /// The default level.
    pub fn default_level(self) -> u32 {
        match self {
            Compress::None => 0,
            Compress::Zstd => 19,
            Compress::Xz | Compress::Gzip => 9,
        }
    }
}

/// Compress `input` into `out`.
pub fn compress(
    kind: Compress,
    level: u32,
    input: &mut impl Read,
    out: &mut impl Write,
) -> std::io::Result<()> {
    match kind {
        Compress::None => std::io::copy(input, out).map(|_| ()),
        Compress::Zstd => zstd::stream::copy_encode(input, out, level as i32),
        Compress::Xz => {
            let mut e = xz2::write::XzEncoder::new(out, level);
            std::io::copy(input, &mut e)?;
            e.finish().map(|_| ())
        }
        Compress::Gzip => {
            let mut e = flate2::write::GzEncoder::new(out, flate2::Compression::new(level));
            std::io::copy(input, &mut e)?;
            e.finish().map(|_| ())
        }
    }
}

/// Arguments of `mtf encode`.
#[derive(Debug, Args)]
pub struct EncodeArgs {
    /// The trace to re-encode (`-` for standard input; compressed traces too).
    pub input: PathBuf,
    /// The trace to write (`-` for standard output).
    #[arg(short, long)]
    pub output: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(long)]
    pub dtd: Option<PathBuf>,
    /// Compress the whole output file; the cost model then estimates compressed sizes.
    #[arg(long, value_enum, default_value_t = Compress::None)]
    pub compress: Compress,
    /// Compression level (zstd 1..22, xz and gzip 0..9).
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
    /// `sectionStride`), which helps a compressor: the output then names a derived DTD, written
    /// beside it as NAME.split-HASH.dtd, which must travel with the trace.
    #[arg(long)]
    pub split: bool,
    /// Read the output back and check that it decodes to the input's values.
    #[arg(long)]
    pub verify: bool,
    /// Print nothing on success.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Run `mtf encode`.
pub fn run(args: &EncodeArgs) -> Result<i32, Failure> {
    let t0 = Instant::now();
    super::common::refuse_same_file(&args.input, &args.output)?;
    let o = open(&args.input, args.dtd.as_deref())?;
    let reader = o.reader();
    let h = o.trace().header();
    let class = match args.class.as_deref() {
        Some("32") => metatf::container::Class::Bits32,
        Some(_) => metatf::container::Class::Bits64,
        None => h.class,
    };
    let opts = Options {
        window: args.window,
        measure: if args.compress == Compress::None {
            Measure::Bytes
        } else {
            Measure::Compressed
        },
        live: args.live,
        ..Options::default()
    };
    let fail = |e: &dyn miette::Diagnostic| Failure::new(EXIT_INVALID_TRACE, render(e));
    let split = if args.split {
        split_plan(args, &o, &opts)?
    } else {
        None
    };
    let quiet = args.quiet || super::common::quiet();
    let mut bar = super::progress::Progress::new(reader.bytes().len() as u64, "encoding", quiet);
    let mut progress = |at: u64, n: u64| bar.record(at, n);
    // Encode (with the streams of `plan`, or not) into `to`, compressed as asked.
    let mut produce = |plan: Option<&(SplitPlan, metatf::dtd::Schema, String)>,
                       to: &std::path::Path|
     -> Result<(metatf::compact::Stats, u64), Failure> {
        let (schema, dtd_name) = match plan {
            Some((_, schema, name)) => (schema, name.as_str()),
            None => (o.schema(), h.dtd_name.as_str()),
        };
        let encode = |w: &mut TraceWriter<'_>, progress: &mut dyn FnMut(u64, u64)| match plan {
            Some((plan, _, _)) => encode_split(&reader, w, &opts, plan, progress),
            None => encode_with_progress(&reader, w, &opts, progress),
        };
        if args.compress == Compress::None {
            let mut w = TraceWriter::create(schema, to, class, h.byte_order, dtd_name)
                .map_err(|e| Failure::new(EXIT_USAGE, render(&e)))?;
            let stats = encode(&mut w, &mut progress).map_err(|e| fail(&e))?;
            let s = w
                .finish()
                .map_err(|e| Failure::new(EXIT_USAGE, render(&e)))?;
            return Ok((stats, s.bytes));
        }
        let mut tmp = TempFile::new().map_err(|e| io_failure(&e))?;
        let mut w = TraceWriter::create(schema, tmp.path(), class, h.byte_order, dtd_name)
            .map_err(|e| Failure::new(EXIT_USAGE, render(&e)))?;
        let stats = encode(&mut w, &mut progress).map_err(|e| fail(&e))?;
        let s = w
            .finish()
            .map_err(|e| Failure::new(EXIT_USAGE, render(&e)))?;
        let mut out = Output::create(to).map_err(|e| io_failure(&e))?;
        let mut f = std::fs::File::open(tmp.path())
            .map_err(|e| Failure::new(EXIT_USAGE, format!("{}: {e}", tmp.path().display())))?;
        let level = args.level.unwrap_or(args.compress.default_level());
        let mut buf = std::io::BufWriter::with_capacity(1 << 16, &mut out);
        compress(args.compress, level, &mut f, &mut buf)
            .map_err(|e| Failure::new(EXIT_USAGE, format!("{}: {e}", to.display())))?;
        buf.flush()
            .map_err(|e| Failure::new(EXIT_USAGE, format!("{}: {e}", to.display())))?;
        drop(buf);
        out.commit().map_err(|e| io_failure(&e))?;
        let _ = tmp.rewind();
        Ok((stats, s.bytes))
    };
    // With streams: both encodings, and the smaller is kept (streams pay on some traces and
    // not on others, docs/compression.md).
    let mut streams_kept = false;
    let (stats, raw_bytes) = match &split {
        None => produce(None, &args.output)?,
        Some(plan) => {
            let folder = args
                .output
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            let rows = TempFile::new_in(folder).map_err(|e| io_failure(&e))?;
            let cols = TempFile::new_in(folder).map_err(|e| io_failure(&e))?;
            let plain = produce(None, rows.path())?;
            let streamed = produce(Some(plan), cols.path())?;
            let size = |t: &TempFile| std::fs::metadata(t.path()).map(|m| m.len()).unwrap_or(0);
            let (chosen, result) = if size(&cols) < size(&rows) {
                write_derived_dtd(folder, &plan.2, &plan.0.dtd_text)?;
                streams_kept = true;
                (cols, streamed)
            } else {
                (rows, plain)
            };
            let mut out = Output::create(&args.output).map_err(|e| io_failure(&e))?;
            let mut f = std::fs::File::open(chosen.path()).map_err(|e| {
                Failure::new(EXIT_USAGE, format!("{}: {e}", chosen.path().display()))
            })?;
            std::io::copy(&mut f, &mut out).map_err(|e| io_failure(&out.error(e)))?;
            out.commit().map_err(|e| io_failure(&e))?;
            result
        }
    };
    let elapsed = t0.elapsed();
    if args.verify && args.output.as_os_str() != "-" {
        // With streams, the output names the derived DTD, beside it.
        let dtd = match &split {
            Some(_) if streams_kept => None,
            _ => super::size_report::dtd_path(&o, args.dtd.as_deref()),
        };
        let back = open(&args.output, dtd.as_deref())?;
        let n = verify(&reader, &back.reader()).map_err(|e| fail(&e))?;
        if !args.quiet {
            line_to_stderr(&format!("verified: {n} records decode to the same values"));
        }
    }
    if !args.quiet {
        let file = std::fs::metadata(&args.output)
            .map(|m| m.len())
            .unwrap_or(raw_bytes);
        let per = |b: u64| b as f64 / stats.data_records.max(1) as f64;
        line_to_stderr(&format!(
            "{} records ({} data) → {} bytes ({:.3} B/record){}; {} interpretation and {} width changes; {:.2} s",
            stats.records_in,
            stats.data_records,
            raw_bytes,
            per(raw_bytes),
            if args.compress == Compress::None {
                String::new()
            } else {
                format!(", {file} bytes compressed ({:.3} B/record)", per(file))
            },
            stats.interp_changes,
            stats.width_changes,
            elapsed.as_secs_f64()
        ));
        for line in &stats.live_sets {
            line_to_stderr(line);
        }
        if streams_kept {
            for line in &stats.streams {
                line_to_stderr(line);
            }
        }
        match &split {
            Some((_, _, name)) if streams_kept => line_to_stderr(&format!(
                "streams kept (smaller): the output names the derived DTD {name}, written beside it"
            )),
            Some(_) => line_to_stderr(
                "streams not kept: the trace without them is smaller, and uses the input's DTD",
            ),
            None => {}
        }
        if args.live && stats.live_sets.is_empty() {
            line_to_stderr("no field pays as a live-set position: the output is plain Meta-TF 1.0");
        }
    }
    Ok(EXIT_OK)
}

/// With `--split`: the plan, the derived DTD's schema and its name.
fn split_plan(
    args: &EncodeArgs,
    o: &metatf::Opened,
    opts: &Options,
) -> Result<Option<(SplitPlan, metatf::dtd::Schema, String)>, Failure> {
    if args.output.as_os_str() == "-" {
        return Err(Failure::new(
            EXIT_USAGE,
            "error: --split writes a derived DTD beside the output, so the output must be a file, not -",
        ));
    }
    let plan = plan_split(&o.reader(), o.dtd_text(), opts)
        .map_err(|e| Failure::new(EXIT_INVALID_TRACE, render(&e)))?;
    let Some(plan) = plan else {
        if !args.quiet {
            line_to_stderr("--split: no field varies; the output uses the input's DTD");
        }
        return Ok(None);
    };
    // The name: the input DTD's, with a hash of the derived text (different plans never share
    // a name).
    let h = o.trace().header();
    let base = h.dtd_name.rsplit(['/', '\\']).next().unwrap_or("trace.dtd");
    let stem = base.strip_suffix(".dtd").unwrap_or(base);
    let mut hash = 0xcbf29ce484222325u64;
    for b in plan.dtd_text.bytes() {
        hash = (hash ^ b as u64).wrapping_mul(0x100000001b3);
    }
    let name = format!("{stem}.split-{:08x}.dtd", hash as u32);
    let schema = metatf::dtd::parse_str(&name, &plan.dtd_text)
        .map_err(|e| Failure::new(EXIT_USAGE, metatf::dtd::render_plain(&e)))?
        .schema;
    Ok(Some((plan, schema, name)))
}

/// Write the derived DTD `name` into `folder` (before the trace that names it), unless a file
/// with the same text is there; a different file of that name is an error.
fn write_derived_dtd(folder: &std::path::Path, name: &str, text: &str) -> Result<(), Failure> {
    let path = folder.join(name);
    match std::fs::read(&path) {
        Ok(existing) if existing == text.as_bytes() => Ok(()),
        Ok(_) => Err(Failure::new(
            EXIT_USAGE,
            format!(
                "error: {} exists with other contents; remove it or write the output elsewhere",
                path.display()
            ),
        )),
        Err(_) => {
            let mut out = Output::create(&path).map_err(|e| io_failure(&e))?;
            out.write_all(text.as_bytes())
                .map_err(|e| io_failure(&out.error(e)))?;
            out.commit().map_err(|e| io_failure(&e))
        }
    }
}
