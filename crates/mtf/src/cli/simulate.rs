//! `mtf simulate TRACE`: classic allocator policies modelled over a trace's allocation events,
//! all chosen policies in one pass (`metatf::command::simulate`); this file parses, calls and
//! renders.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use metatf::command::simulate::{simulate, SimulateError, SimulateOptions, Simulation};
use metatf::io::{escape_path, StdoutSink};
use metatf::simulate::Policy;

use super::blocks::{picture_format, Format};
use super::common::{error, open, Failure};
use super::{EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// Arguments of `mtf simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// The trace (`-` for standard input; pipes and compressed traces too).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Policies (comma-separated): first-fit, next-fit, best-fit, segregated, buddy; `all`.
    #[arg(short, long, value_delimiter = ',', default_value = "all")]
    pub policy: Vec<String>,
    /// Block alignment in bytes (a power of two).
    #[arg(long, default_value_t = 8)]
    pub align: u64,
    /// Bytes of header per block.
    #[arg(long, default_value_t = 0)]
    pub header: u64,
    /// Refuse (count, do not place) requests larger than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 40)]
    pub max_block_size: u64,
    /// Size classes and sites shown in the tables of waste (0: none, and no attribution: faster).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also draw each policy's heap extent and the live payload over the trace, and the waste
    /// by size class at each policy's peak (`.svg` or `.png`).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The policies `names` choose, each once, in the order named.
fn policies(names: &[String]) -> Result<Vec<Policy>, Failure> {
    let mut policies = Vec::new();
    for name in names {
        let name = name.trim();
        let chosen: Vec<Policy> = if name == "all" {
            Policy::ALL.to_vec()
        } else {
            let p = Policy::from_name(name).ok_or_else(|| {
                error(
                    EXIT_USAGE,
                    "mtf::usage::policy",
                    format!(
                        "unknown policy '{}': first-fit, next-fit, best-fit, segregated, buddy or all",
                        metatf::escape::escape_for_terminal(name)
                    ),
                )
            })?;
            vec![p]
        };
        for p in chosen {
            if !policies.contains(&p) {
                policies.push(p);
            }
        }
    }
    Ok(policies)
}

fn align_failure(align: u64) -> Failure {
    error(
        EXIT_USAGE,
        "mtf::usage::align",
        format!("--align {align}: an alignment is a power of two"),
    )
}

/// Run `mtf simulate`.
pub fn run(args: &SimulateArgs) -> Result<i32, Failure> {
    let options = SimulateOptions {
        policies: policies(&args.policy)?,
        align: args.align,
        header: args.header,
        max_block_size: args.max_block_size,
        top: args.top,
    };
    if !args.align.is_power_of_two() {
        return Err(align_failure(args.align));
    }
    if let Some(out) = &args.output {
        picture_format(out)?;
    }
    let opened = open(&args.trace, args.dtd.as_deref())?;
    let sim = simulate(&opened, &options).map_err(|e| match e {
        SimulateError::Align(a) => align_failure(a),
        SimulateError::NoAllocations(e) => error(
            EXIT_USAGE,
            "mtf::usage::analysis",
            format!("{}: {e}", escape_path(&args.trace)),
        ),
    })?;
    super::blocks::warn_reading(&args.trace, &sim.reading);
    if let Some(out) = &args.output {
        draw(out, &args.trace, &sim)?;
    }
    let mut w = StdoutSink::new();
    match args.format {
        Format::Json => {
            let doc = sim.to_json(&escape_path(&args.trace));
            let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
            writeln!(w, "{text}")?;
        }
        Format::Table => sim.write_text(&mut w)?,
    }
    w.flush()?;
    Ok(if sim.problems() > 0 {
        EXIT_INVALID_TRACE
    } else {
        EXIT_OK
    })
}

/// Each policy's heap extent and the live payload over the trace, into `out`.
fn draw(out: &Path, trace: &Path, sim: &Simulation) -> Result<(), Failure> {
    // Without pictures (feature plot) the format is `()`: only the check that one is asked.
    #[cfg_attr(not(feature = "plot"), allow(clippy::let_unit_value))]
    let format = picture_format(out)?;
    #[cfg(feature = "plot")]
    {
        let title = format!("mtf simulate {}: heap extent", escape_path(trace));
        let bytes = sim
            .chart(format, &title)
            .map_err(|e| Failure::diagnostic(EXIT_USAGE, &e))?;
        super::write::write_bytes(out, &bytes)
    }
    #[cfg(not(feature = "plot"))]
    {
        let _ = (format, trace, sim);
        Ok(())
    }
}
