//! `mtf check TRACE`: decode everything, report every problem (up to a limit) and a summary.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use metatf::analysis::check::Check;
use metatf::analysis::stats::Place;
use metatf::analysis::{Finding, FindingKind, Severity};
use metatf::decode::Event;
use metatf::io::StdoutSink;

use super::common::{input_name, open_salvaging_as, quiet, Failure};
use super::progress::Progress;
use super::{EXIT_INVALID_TRACE, EXIT_OK};

/// Arguments of `mtf check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The trace (`-` for standard input; pipes and gzip/zstd/xz/bzip2-compressed traces too).
    pub trace: PathBuf,
    /// The DTD to use instead of the one the header names.
    #[arg(short, long)]
    pub dtd: Option<PathBuf>,
    /// Report at most N problems (all are counted).
    #[arg(long, default_value_t = 100)]
    pub max_errors: u64,
    /// Decode only: skip the checks the DTD's analysis declarations ask for (ids defined
    /// before use, nesting, monotonic values; docs/format.md §14).
    #[arg(long)]
    pub no_semantic: bool,
    /// Track at most N ids, open nesting levels and keys at once (semantic checks stop beyond).
    #[arg(long, default_value_t = metatf::analysis::DEFAULT_MAX_TRACKED, value_name = "N")]
    pub max_ids: usize,
    /// Show at most N pieces of information (ids alive at the end); all are counted.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub max_info: u64,
    /// Report only the problems of a slice (`--from`/`--to`: record index, or `tTIME`); the
    /// trace is still decoded and interpreted from its start.
    #[command(flatten)]
    pub slice: super::stats::SliceArgs,
    #[command(flatten)]
    pub jobs: super::jobs::JobsArgs,
    /// The seek index whose checkpoints cut the trace for `-j`.
    #[command(flatten)]
    pub seek: super::index::SeekArgs,
}

/// Run `mtf check`.
pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    let (o, damaged) = open_salvaging_as(&args.trace, args.dtd.as_deref(), false)?;
    let reader = o.reader();
    let mut per_type = vec![0u64; o.schema().records.len()];
    let mut reported = 0u64;
    let mut total = 0u64;
    let path = input_name(&args.trace);
    // A closed pipe (`mtf check T | head -1`) ends the command quietly with status 0; any other
    // failure to write is an I/O error (status 2): see `Failure::from`.
    let mut out = StdoutSink::new();
    if let Some(e) = o.damage() {
        total += 1;
        reported += 1;
        writeln!(out, "{path}: {}", e.innermost())?;
    } else if damaged {
        // The compressed stream ended early (reported on standard error when it was read).
        total += 1;
    }
    let mut bar = Progress::new(reader.bytes().len() as u64, "checking", quiet());
    let mut n = 0u64;
    let mut check = Check::new(o.schema());
    check.set_limit(args.max_ids);
    let semantic = !args.no_semantic && check.is_declared();
    let mut info_shown = 0u64;
    // Findings are reported after the decoding problems of their record.
    let show = |check: &Check<'_>,
                found: &[Finding],
                reported: &mut u64,
                info_shown: &mut u64,
                bar: &mut Progress,
                out: &mut StdoutSink|
     -> std::io::Result<()> {
        for f in found {
            let line = match f.severity {
                Severity::Error if *reported < args.max_errors => {
                    *reported += 1;
                    format!("{path}: {}", check.describe(f))
                }
                Severity::Info if *info_shown < args.max_info && !quiet() => {
                    *info_shown += 1;
                    format!("{path}: info: {}", check.describe(f))
                }
                _ => continue,
            };
            bar.suspend(|| -> std::io::Result<()> {
                writeln!(out, "{line}")?;
                out.flush()
            })?;
        }
        Ok(())
    };
    // Before a slice, records are interpreted but their findings neither shown nor counted.
    let mut slicer = super::heap::Slicer::new(&o, args.slice.window()?)?;
    let mut inside = true;
    let mut before: Option<Vec<(FindingKind, Severity, u64)>> = None;
    // Without the semantic pass, no value is read: the decoder validates only.
    // Validating only, over the whole trace: the workers count and collect the problems
    // themselves, and only those cross to this thread.
    let validate_only = !semantic && args.slice.window()?.is_all();
    let jobs = args.jobs.decide(!validate_only);
    let plan = super::jobs::plan(&args.trace, &reader, &jobs, &args.seek);
    let dropped = if let Some(plan) = plan.as_ref().filter(|_| validate_only) {
        let mut shown = |p: &dyn std::fmt::Display, bar: &mut Progress| -> std::io::Result<()> {
            total += 1;
            if reported < args.max_errors {
                reported += 1;
                bar.suspend(|| -> std::io::Result<()> {
                    writeln!(out, "{path}: {p}")?;
                    out.flush()
                })?;
            }
            Ok(())
        };
        parallel_validate(
            &o,
            &reader,
            plan,
            &jobs,
            args.max_errors,
            &mut per_type,
            &mut bar,
            &mut shown,
        )?
    } else {
        super::jobs::with_events(&o, &reader, plan.as_ref(), &jobs, !semantic, |records| {
            let r = (|| -> Result<(), Failure> {
                while let Some(event) = records.next_event() {
                    let problem: &dyn std::fmt::Display = match &event {
                        Event::Record(v) => {
                            match slicer.place(v) {
                                Place::Before => {
                                    inside = false;
                                    if semantic {
                                        check.record(v);
                                    }
                                    continue;
                                }
                                Place::After => break,
                                Place::Inside if !inside => {
                                    inside = true;
                                    before = Some(check.counts().collect());
                                }
                                Place::Inside => {}
                            }
                            per_type[v.record_id() as usize] += 1;
                            n += 1;
                            bar.record(v.offset(), n);
                            if semantic {
                                let found = check.record(v);
                                if !found.is_empty() {
                                    let found = found.to_vec();
                                    show(
                                        &check,
                                        &found,
                                        &mut reported,
                                        &mut info_shown,
                                        &mut bar,
                                        &mut out,
                                    )?;
                                }
                            }
                            continue;
                        }
                        Event::Problem(p) => p,
                        Event::Damage(d) => d,
                    };
                    if !inside {
                        continue;
                    }
                    total += 1;
                    if reported < args.max_errors {
                        reported += 1;
                        bar.suspend(|| -> std::io::Result<()> {
                            writeln!(out, "{path}: {problem}")?;
                            out.flush()
                        })?;
                    }
                }
                Ok(())
            })();
            r.map(|()| records.dropped_problems())
        })?
    };
    if semantic {
        let found = check.finish().to_vec();
        show(
            &check,
            &found,
            &mut reported,
            &mut info_shown,
            &mut bar,
            &mut out,
        )?;
    }
    bar.finish();
    total += dropped;
    // Counts within the slice: what was counted before it is taken away.
    let before = before.unwrap_or_default();
    let earlier = |kind: FindingKind, sev: Severity| {
        before
            .iter()
            .find(|(k, s, _)| *k == kind && *s == sev)
            .map_or(0, |x| x.2)
    };
    let counts: Vec<(FindingKind, Severity, u64)> = check
        .counts()
        .map(|(k, s, n)| (k, s, n - earlier(k, s)))
        .filter(|x| x.2 > 0)
        .collect();
    let count = |sev: Severity| -> u64 { counts.iter().filter(|x| x.1 == sev).map(|x| x.2).sum() };
    let semantic_errors = count(Severity::Error);
    total += semantic_errors;
    let checked: u64 = per_type.iter().sum();
    if !quiet() {
        writeln!(out, "records checked: {checked}")?;
        for (rid, n) in per_type.iter().enumerate() {
            if *n > 0 {
                writeln!(out, "  {:<24} {n:>12}", o.schema().record(rid as u32).name)?;
            }
        }
    }
    if semantic && !quiet() {
        let infos = count(Severity::Info);
        writeln!(
            out,
            "semantic checks (analysis/{}): {semantic_errors} problem(s), {infos} piece(s) of information",
            o.schema().analysis.version
        )?;
        for (kind, sev, n) in counts {
            writeln!(out, "  {:<32} {:<6} {n:>12}", kind.name(), sev.keyword())?;
        }
        if infos > info_shown {
            writeln!(
                out,
                "… {} more piece(s) of information not shown (--max-info {})",
                infos - info_shown,
                args.max_info
            )?;
        }
    } else if args.no_semantic && check.is_declared() && !quiet() {
        writeln!(out, "semantic checks skipped (--no-semantic)")?;
    }
    if total > reported {
        writeln!(
            out,
            "… {} more problem(s) not shown (--max-errors {})",
            total - reported,
            args.max_errors
        )?;
    }
    let stopped = check.interpreter().stopped();
    let status = if total == 0 {
        writeln!(out, "{path}: valid")?;
        EXIT_OK
    } else if stopped && total == 1 {
        // Only the limit: the trace decodes, but its declarations were not all checked.
        writeln!(
            out,
            "{path}: INCOMPLETE, decodes, but semantic checks stopped at --max-ids {}",
            args.max_ids
        )?;
        EXIT_INVALID_TRACE
    } else {
        writeln!(out, "{path}: INVALID, {total} problem(s)")?;
        EXIT_INVALID_TRACE
    };
    out.finish()?;
    Ok(status)
}

/// What a worker finds in a chunk when validating only.
struct Validated {
    per_type: Vec<u64>,
    /// The first problems, in order (at most `--max-errors`: no more can be shown).
    problems: Vec<Found>,
    /// Problems beyond those.
    more: u64,
    records: u64,
    damaged: bool,
    dropped: u64,
    end: u64,
}

enum Found {
    Problem(Box<metatf::decode::Problem>),
    Damage(Box<metatf::decode::Damage>),
}

/// `mtf check --no-semantic` (or a DTD without analysis declarations) on several threads: each
/// worker counts its chunk's records per type and keeps its first problems; here they are
/// shown in trace order with the trace's record numbers, as one thread shows them. The
/// problems dropped by the decoders.
#[allow(clippy::too_many_arguments)]
fn parallel_validate(
    o: &metatf::Opened,
    reader: &metatf::decode::Reader<'_>,
    plan: &metatf::parallel::Plan,
    jobs: &super::jobs::JobsArgs,
    max_errors: u64,
    per_type: &mut [u64],
    bar: &mut Progress,
    show: &mut dyn FnMut(&dyn std::fmt::Display, &mut Progress) -> std::io::Result<()>,
) -> Result<u64, Failure> {
    let types = per_type.len();
    let work = |r: &mut metatf::decode::Reader<'_>, chunk: &metatf::parallel::Chunk| {
        let mut v = Validated {
            per_type: vec![0; types],
            problems: Vec::new(),
            more: 0,
            records: 0,
            damaged: false,
            dropped: 0,
            end: chunk.bytes,
        };
        let mut records = chunk.records(r);
        records.skip_values(true);
        while chunk.before(&records) {
            if records.next().is_none() {
                break;
            }
        }
        let (start, dropped) = (records.count(), records.dropped_problems());
        while !chunk.ended(&records) {
            let Some(e) = records.next() else { break };
            let found = match e {
                Event::Record(view) => {
                    v.per_type[view.record_id() as usize] += 1;
                    v.end = view.offset() + view.len();
                    continue;
                }
                Event::Problem(p) => Found::Problem(p),
                Event::Damage(d) => {
                    v.damaged = true;
                    Found::Damage(d)
                }
            };
            if (v.problems.len() as u64) < max_errors {
                v.problems.push(found);
            } else {
                v.more += 1;
            }
        }
        v.records = records.count() - start;
        v.dropped = records.dropped_problems() - dropped;
        v
    };
    metatf::parallel::ordered(
        jobs.threads(),
        &plan.chunks,
        || o.reader(),
        work,
        |outputs| -> Result<u64, Failure> {
            let (mut first, mut exact, mut dropped) = (0u64, true, 0u64);
            for chunk in &plan.chunks {
                let Some(v) = outputs.next() else { break };
                // A chunk from a checkpoint counts records as the whole trace does.
                let (shift, keep) = match chunk.first_index {
                    Some(f) => {
                        first = f;
                        (0, true)
                    }
                    None => (first, exact),
                };
                for found in v.problems {
                    match found {
                        Found::Problem(mut p) => {
                            metatf::parallel::shift_position(&mut p.at, shift, keep);
                            show(&p, bar)?;
                        }
                        Found::Damage(mut d) => {
                            metatf::parallel::shift_position(&mut d.at, shift, keep);
                            show(&d, bar)?;
                        }
                    }
                }
                for _ in 0..v.more {
                    show(&"", bar)?;
                }
                for (t, n) in per_type.iter_mut().zip(&v.per_type) {
                    *t += n;
                }
                first += v.records;
                exact &= !v.damaged;
                dropped += v.dropped;
                bar.record(v.end, first);
            }
            if !plan.counted {
                if let Some(p) = reader.record_count_problem(first, exact) {
                    show(&p, bar)?;
                }
            }
            Ok(dropped)
        },
    )
}
