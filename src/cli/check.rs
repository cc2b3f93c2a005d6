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
    /// The trace (`-` for standard input; pipes and gzip/zstd/xz/bzip2-compressed traces too,
    /// read through an unlinked temporary file in TMPDIR as large as the decompressed trace).
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
    /// The seek index to verify (when the whole trace is checked): every checkpoint must be
    /// the one a full decode takes there.
    #[command(flatten)]
    pub seek: super::index::SeekArgs,
}

/// Run `mtf check`.
pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    super::index::refuse_both_stdin(&args.trace, args.seek.index.as_deref())?;
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
    // The index beside the trace is verified on the way (not with a slice: reading may stop
    // early).
    let mut index_problems = 0u64;
    let found = if args.slice.from.is_none() && args.slice.to.is_none() {
        super::index::find_for(&args.trace, &args.seek)
    } else {
        if let Some(named) = &args.seek.index {
            // Named but not verified: said, not silently ignored.
            super::common::line_to_stderr(&format!(
                "warning: {} is not verified: only a check of the whole trace (without --from \
                 or --to) verifies a seek index",
                input_name(named)
            ));
        }
        None
    };
    let index = match found {
        Some(Ok(idx)) => Some(idx),
        Some(Err(e)) => {
            // An index that cannot be read is reported like a problem.
            total += 1;
            index_problems += 1;
            reported += 1;
            writeln!(out, "{e}")?;
            None
        }
        None => None,
    };
    let mut builder = index
        .as_ref()
        .map(|i| metatf::index::Builder::new(&reader, i.options()));
    let mut records = reader.records();
    // Without the semantic pass, no value is read: the decoder validates only.
    records.skip_values(!semantic && !builder.as_ref().is_some_and(|b| b.needs_values()));
    loop {
        if let Some(b) = builder.as_mut() {
            b.before_next(&records);
        }
        let Some(event) = records.next() else { break };
        let problem: &dyn std::fmt::Display = match &event {
            Event::Record(v) => {
                if let Some(b) = builder.as_mut() {
                    b.record(v);
                }
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
    total += records.dropped_problems();
    if let (Some(idx), Some(b)) = (index, builder) {
        match idx
            .fits(&reader)
            .and_then(|()| idx.verify(&b.finish(idx.name())))
        {
            Ok(()) => {
                if !quiet() {
                    writeln!(
                        out,
                        "{}: index valid ({} checkpoints)",
                        idx.name(),
                        idx.entries().len()
                    )?;
                }
            }
            Err(e) => {
                // A wrong index is reported like a problem: `check` fails until it is rebuilt.
                total += 1;
                index_problems += 1;
                if reported < args.max_errors {
                    reported += 1;
                    writeln!(out, "{e}")?;
                }
            }
        }
    }
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
    } else if total == index_problems {
        // Only the index is wrong: the trace itself is not called invalid.
        writeln!(
            out,
            "{path}: valid, but its seek index is not: rebuild it with `mtf index`, or delete it"
        )?;
        EXIT_INVALID_TRACE
    } else {
        writeln!(out, "{path}: INVALID, {total} problem(s)")?;
        EXIT_INVALID_TRACE
    };
    out.finish()?;
    Ok(status)
}
