//! `mtf simulate TRACE`: classic allocator policies modelled over a trace's allocation events,
//! all chosen policies in one pass.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use metatf::io::{escape_path, StdoutSink};
use metatf::simulate::{Options, Policy, Report, Simulator};

use super::common::{open, Failure};
use super::replay::{for_each_event, Format};
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

/// Run `mtf simulate`.
pub fn run(args: &SimulateArgs) -> Result<i32, Failure> {
    let mut policies = Vec::new();
    for name in &args.policy {
        let name = name.trim();
        let chosen: Vec<Policy> = if name == "all" {
            Policy::ALL.to_vec()
        } else {
            match Policy::from_name(name) {
                Some(p) => vec![p],
                None => {
                    return Err(super::common::error(
                        EXIT_USAGE,
                        "mtf::usage::policy",
                        format!(
                            "unknown policy '{}': first-fit, next-fit, best-fit, segregated, buddy or all",
                            metatf::escape::escape_for_terminal(name)
                        ),
                    ))
                }
            }
        };
        for p in chosen {
            if !policies.contains(&p) {
                policies.push(p);
            }
        }
    }
    if !args.align.is_power_of_two() {
        return Err(super::common::error(
            EXIT_USAGE,
            "mtf::usage::align",
            format!("--align {}: an alignment is a power of two", args.align),
        ));
    }
    if let Some(out) = &args.output {
        super::replay::picture_format(out)?;
    }
    let opened = open(&args.trace, args.dtd.as_deref())?;
    let mut sims: Vec<Simulator> = policies
        .iter()
        .map(|&policy| {
            Simulator::new(Options {
                policy,
                align: args.align,
                header: args.header,
                max_block_size: args.max_block_size,
            })
        })
        .collect();
    let start = std::time::Instant::now();
    let reading = for_each_event(&opened, &args.trace, |e| {
        for s in sims.iter_mut() {
            s.feed(e);
        }
    })?;
    super::replay::warn_reading(&args.trace, &reading);
    let problems = reading.problems + u64::from(reading.stopped_at.is_some());
    let mut reports: Vec<Report> = sims.into_iter().map(Simulator::finish).collect();
    for r in reports.iter_mut() {
        // The interpreter saw them (no event): they count as the simulator's own.
        r.unknown_frees += reading.unknown_frees;
    }
    let elapsed = start.elapsed();

    if let Some(out) = &args.output {
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
            for r in &reports {
                series.push(Series {
                    name: format!("heap extent, {}", r.options.policy.name()),
                    points: r.samples.iter().map(|s| (s.event, s.heap)).collect(),
                });
            }
            let title = format!("mtf simulate {}: heap extent", escape_path(&args.trace));
            let format = super::replay::picture_format(out)?;
            let bytes =
                lines(format, &title, &series).map_err(|e| Failure::diagnostic(EXIT_USAGE, &e))?;
            let mut o =
                metatf::io::Output::create(out).map_err(|e| super::common::io_failure(&e))?;
            o.write_all(&bytes)
                .map_err(|e| super::common::io_failure(&o.error(e)))?;
            o.commit().map_err(|e| super::common::io_failure(&e))?;
        }
        #[cfg(not(feature = "plot"))]
        super::replay::picture_format(out)?;
    }

    let mut w = StdoutSink::new();
    match args.format {
        Format::Json => {
            let doc = json!({
                "trace": escape_path(&args.trace).to_string(),
                "undecodable_records": problems,
                "align": args.align,
                "header": args.header,
                "max_block_size": args.max_block_size,
                "policies": reports.iter().map(|r| json!({
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
        }
        Format::Table => {
            if let Some(r) = reports.first() {
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
                    elapsed.as_secs_f64(),
                    reports.len(),
                    if reports.len() == 1 { "y" } else { "ies" }
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
                if problems > 0 {
                    writeln!(
                        w,
                        "       {problems} records could not be decoded (mtf check shows them)"
                    )?;
                }
            }
            writeln!(w)?;
            writeln!(
                w,
                "{:<11} {:>16} {:>16} {:>12} {:>12}",
                "policy", "peak heap", "peak live", "utilisation", "live blocks"
            )?;
            for r in &reports {
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
        }
    }
    w.flush()?;
    Ok(if problems > 0 {
        EXIT_INVALID_TRACE
    } else {
        EXIT_OK
    })
}
