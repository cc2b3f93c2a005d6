//! `mtf simulate TRACE`: classic allocator policies modelled over a trace's allocation events,
//! all chosen policies in one pass (`metatf::command::simulate`); this file parses, calls and
//! renders.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::json;

use metatf::command::simulate::{simulate, SimulateError, SimulateOptions, Simulation};
use metatf::io::{escape_path, StdoutSink};
use metatf::simulate::{Policy, Report};

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
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Also draw each policy's heap extent and the live payload over the trace (`.svg` or
    /// `.png`).
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
        draw(out, &args.trace, &sim.reports)?;
    }
    let mut w = StdoutSink::new();
    match args.format {
        Format::Json => json_out(&mut w, args, &sim)?,
        Format::Table => table(&mut w, args, &sim)?,
    }
    w.flush()?;
    Ok(if sim.problems() > 0 {
        EXIT_INVALID_TRACE
    } else {
        EXIT_OK
    })
}

/// Each policy's heap extent and the live payload over the trace, into `out`.
fn draw(out: &Path, trace: &Path, reports: &[Report]) -> Result<(), Failure> {
    #[cfg(feature = "plot")]
    {
        use metatf::replay::plot::{lines, Series};
        let mut series = Vec::new();
        if let Some(first) = reports.first() {
            series.push(Series {
                name: "live payload".into(),
                points: first.samples.iter().map(|s| (s.event, s.live)).collect(),
            });
        }
        for r in reports {
            series.push(Series {
                name: format!("heap extent, {}", r.options.policy.name()),
                points: r.samples.iter().map(|s| (s.event, s.heap)).collect(),
            });
        }
        let title = format!("mtf simulate {}: heap extent", escape_path(trace));
        let format = picture_format(out)?;
        let bytes =
            lines(format, &title, &series).map_err(|e| Failure::diagnostic(EXIT_USAGE, &e))?;
        super::write::write_bytes(out, &bytes)
    }
    #[cfg(not(feature = "plot"))]
    {
        let _ = (trace, reports);
        picture_format(out).map(drop)
    }
}

fn json_out(w: &mut StdoutSink, args: &SimulateArgs, sim: &Simulation) -> Result<(), Failure> {
    let doc = json!({
        "trace": escape_path(&args.trace).to_string(),
        "undecodable_records": sim.problems(),
        "align": args.align,
        "header": args.header,
        "max_block_size": args.max_block_size,
        "policies": sim.reports.iter().map(|r| json!({
            "policy": r.options.policy.name(),
            "events": r.events,
            "allocs": r.allocs,
            "frees": r.frees,
            "reallocs": r.reallocs,
            "moves": r.moves,
            "unknown_frees": r.unknown_frees,
            "unknown_moves": r.unknown_moves,
            "refused": r.refused,
            "largest_refused": r.largest_refused.map(|(rec, size)| json!({"data_record": rec, "bytes": size})),
            "peak_live": r.peak_live,
            "peak_heap": r.peak_heap,
            "utilisation": r.utilisation(),
            "final_live": r.final_live,
            "final_blocks": r.final_blocks,
            "samples": r.samples.iter().map(|s| json!([s.event, s.heap, s.live])).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    writeln!(
        w,
        "{}",
        serde_json::to_string_pretty(&doc).unwrap_or_default()
    )?;
    Ok(())
}

/// The summary lines above the table: the trace's events and what was left out.
fn summary(w: &mut StdoutSink, args: &SimulateArgs, sim: &Simulation) -> Result<(), Failure> {
    let Some(r) = sim.reports.first() else {
        return Ok(());
    };
    let n = sim.reports.len();
    writeln!(
        w,
        "trace: {} events ({} allocs, {} frees, {} reallocs placed); peak live payload {} bytes; \
         alignment {}, header {} bytes; {:.2} s for {} polic{}",
        r.events,
        r.allocs,
        r.frees,
        r.reallocs,
        r.peak_live,
        args.align,
        args.header,
        sim.elapsed.as_secs_f64(),
        n,
        if n == 1 { "y" } else { "ies" }
    )?;
    if r.unknown_frees > 0 || r.unknown_moves > 0 {
        writeln!(
            w,
            "       {} frees and reallocs of blocks not live (allocated before tracing began): skipped",
            r.unknown_frees + r.unknown_moves
        )?;
    }
    if r.refused > 0 {
        let largest = r
            .largest_refused
            .map(|(rec, size)| format!(" (largest {size} bytes, data record {rec})"))
            .unwrap_or_default();
        writeln!(
            w,
            "       {} requests larger than --max-block-size refused{largest}",
            r.refused
        )?;
    }
    let problems = sim.problems();
    if problems > 0 {
        writeln!(
            w,
            "       {problems} records could not be decoded (mtf check shows them)"
        )?;
    }
    Ok(())
}

fn table(w: &mut StdoutSink, args: &SimulateArgs, sim: &Simulation) -> Result<(), Failure> {
    summary(w, args, sim)?;
    writeln!(w)?;
    writeln!(
        w,
        "{:<11} {:>16} {:>16} {:>12} {:>12}",
        "policy", "peak heap", "peak live", "utilisation", "live blocks"
    )?;
    for r in &sim.reports {
        writeln!(
            w,
            "{:<11} {:>16} {:>16} {:>12.4} {:>12}",
            r.options.policy.name(),
            r.peak_heap,
            r.peak_live,
            r.utilisation(),
            r.final_blocks
        )?;
    }
    Ok(())
}
