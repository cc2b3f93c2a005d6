//! `mtf check TRACE`: decode everything, report every problem (up to a limit) and a summary.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use metatf::analysis::check::Check;
use metatf::analysis::stats::Place;
use metatf::analysis::{Finding, FindingKind, Severity};
use metatf::decode::Event;
use metatf::io::StdoutSink;

use super::common::{input_name, quiet, Failure};
use super::progress::Progress;
use super::{EXIT_INVALID_TRACE, EXIT_OK};

/// Arguments of `mtf check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The trace (`-` for standard input; pipes and gzip/zstd/xz/bzip2-compressed traces too,
    /// decoded as they arrive from a window of MTF_STREAM_WINDOW bytes, with no temporary file;
    /// a trace whose DTD reads sections as tables, or one given with -j N or a seek index, is
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
    #[command(flatten)]
    pub jobs: super::jobs::JobsArgs,
    /// Decode every record through the decoder's events, never stepping over records that
    /// cannot be invalid but for their length (for tests: the output must be the same).
    #[arg(long, hide = true)]
    pub no_scan: bool,
    /// The seek index to verify (when the whole trace is checked): every checkpoint must be
    /// the one a full decode takes there. With `-j N` and no semantic pass, its checkpoints
    /// also cut the trace, and each thread compares the decoder's state where its part ends
    /// with the stored checkpoint (the checkpoints' declared times are verified by `-j 1`).
    #[command(flatten)]
    pub seek: super::index::SeekArgs,
}

/// Run `mtf check`.
pub fn run(args: &CheckArgs) -> Result<i32, Failure> {
    super::index::refuse_both_stdin(&args.trace, args.seek.index.as_deref())?;
    // Decoded as it arrives unless -j asks for threads or an index is there to verify.
    let stream =
        args.jobs.jobs.is_none_or(|j| j == 1) && !super::index::has_index(&args.trace, &args.seek);
    let (o, damaged) =
        super::common::open_for_pass(&args.trace, args.dtd.as_deref(), false, stream)?;
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
    args.slice.need_declared_time(o.schema(), &args.trace)?;
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
    // Validating only, over the whole trace: the workers count and collect the problems
    // themselves, and only those cross to this thread.
    let validate_only = !semantic && args.slice.window()?.is_all();
    let jobs = args.jobs.decide(!validate_only);
    // Design: an index found beside the trace is verified by building the one a full decode
    // takes, checkpoint by checkpoint, with its spacing and declared times, which needs the
    // whole decode on one thread: so it is by default. With `-j N` asked for, validating only,
    // its checkpoints cut the trace instead and each thread compares the decoder's state where
    // its part ends with the stored checkpoint; the spacing and times are left to `-j 1` (or
    // `mtf index --check`), and the message says so.
    let asked = args.jobs.jobs.is_some_and(|n| n != 1);
    let plan = match &index {
        Some(idx) if validate_only && asked && jobs.threads() > 1 => {
            metatf::parallel::plan_indexed(&reader, idx).ok()
        }
        Some(_) => None,
        None => super::jobs::plan(&reader, &jobs, None),
    };
    if let Some(plan) = plan.as_ref().filter(|_| validate_only) {
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
        let (dropped, differs) = parallel_validate(
            &o,
            &reader,
            plan,
            &jobs,
            args.max_errors,
            !args.no_scan,
            &mut per_type,
            &mut bar,
            &mut shown,
        )?;
        bar.finish();
        total += dropped;
        if let Some(idx) = &index {
            let verdict = match differs {
                None => Ok(()),
                Some(i) => Err(metatf::index::IndexError::Mismatch {
                    name: idx.name().to_string(),
                    checkpoint: i,
                    record: idx.entries()[i].record,
                    what: "the metadata state differs".into(),
                }),
            };
            if report_index(
                idx,
                verdict,
                Some(jobs.threads()),
                &mut total,
                &mut reported,
                args.max_errors,
                &mut out,
            )? {
                index_problems += 1;
            }
        }
    } else {
        let mut builder = index
            .as_ref()
            .map(|i| metatf::index::Builder::new(&reader, i.options()));
        // Validating only on one thread: records that cannot be invalid but for their length
        // are stepped over without events (`Records::scan`).
        let scan =
            validate_only && !args.no_scan && !builder.as_ref().is_some_and(|b| b.needs_values());
        let dropped = super::jobs::with_events(
            &o,
            &reader,
            plan.as_ref(),
            &jobs,
            !semantic && !builder.as_ref().is_some_and(|b| b.needs_values()),
            |records| -> Result<u64, Failure> {
                // The index is verified only on one thread (no plan): `records` is then the
                // decoder itself, whose checkpoints the builder takes.
                loop {
                    if let Some(b) = builder.as_mut() {
                        if let Some(r) = records.as_records() {
                            b.before_next(r);
                        }
                    }
                    if scan {
                        scan_some(records, &mut builder, &mut per_type, &mut n, &mut bar);
                    }
                    let Some(event) = records.next_event() else {
                        break;
                    };
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
                Ok(records.dropped_problems())
            },
        )?;
        if semantic {
            check.finish_each(|check, f| {
                show(
                    check,
                    std::slice::from_ref(f),
                    &mut reported,
                    &mut info_shown,
                    &mut bar,
                    &mut out,
                )
            })?;
        }
        bar.finish();
        total += dropped;
        if let (Some(idx), Some(b)) = (&index, builder) {
            let verdict = idx
                .fits(&reader)
                .and_then(|()| idx.verify(&b.finish(idx.name())));
            if report_index(
                idx,
                verdict,
                None,
                &mut total,
                &mut reported,
                args.max_errors,
                &mut out,
            )? {
                index_problems += 1;
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
        // The command that rebuilds the index checked: with `--index FILE`, that file.
        let rebuild = match args.seek.index.as_deref().filter(|i| i.as_os_str() != "-") {
            Some(i) => {
                let i = input_name(i);
                format!("rebuild it with `mtf index {path} -o {i}`, or delete {i}")
            }
            None => format!("rebuild it with `mtf index {path}`, or delete it"),
        };
        writeln!(out, "{path}: valid, but its seek index is not: {rebuild}")?;
        EXIT_INVALID_TRACE
    } else {
        writeln!(out, "{path}: INVALID, {total} problem(s)")?;
        EXIT_INVALID_TRACE
    };
    out.finish()?;
    Ok(status)
}

/// Bytes scanned between two updates of the progress bar.
const SCAN_STEP: u64 = 8 << 20;

/// Step over the records from here that cannot be invalid but for their length (validating
/// only): counted per type and in `n`, stopping where `builder` may take a checkpoint.
fn scan_some(
    records: &mut dyn metatf::decode::EventStream,
    builder: &mut Option<metatf::index::Builder<'_>>,
    per_type: &mut [u64],
    n: &mut u64,
    bar: &mut Progress,
) {
    let Some(at) = records.as_records().map(|r| r.offset()) else {
        return;
    };
    let mut stop = builder
        .as_ref()
        .map_or(metatf::decode::ScanStop::NONE, |b| b.scan_stop());
    stop.offset = stop.offset.min(at.saturating_add(SCAN_STEP));
    let k = records.scan(per_type, stop);
    if k == 0 {
        return;
    }
    *n += k;
    if let Some(r) = records.as_records() {
        bar.set(r.offset(), *n);
        if let Some(b) = builder.as_mut() {
            b.scanned(r, k);
            b.before_next(r);
        }
    }
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
    /// Whether the decoder's state where the chunk ends differs from the stored checkpoint the
    /// next chunk starts at.
    differs: bool,
}

enum Found {
    Problem(Box<metatf::decode::Problem>),
    Damage(Box<metatf::decode::Damage>),
}

/// `mtf check --no-semantic` (or a DTD without analysis declarations) on several threads: each
/// worker counts its chunk's records per type and keeps its first problems; here they are
/// shown in trace order with the trace's record numbers, as one thread shows them. The
/// problems dropped by the decoders, and the first checkpoint of the plan's index at which the
/// decoder's state differs from the stored one.
#[allow(clippy::too_many_arguments)]
fn parallel_validate(
    o: &metatf::Opened,
    reader: &metatf::decode::Reader<'_>,
    plan: &metatf::parallel::Plan,
    jobs: &super::jobs::JobsArgs,
    max_errors: u64,
    scan: bool,
    per_type: &mut [u64],
    bar: &mut Progress,
    show: &mut dyn FnMut(&dyn std::fmt::Display, &mut Progress) -> std::io::Result<()>,
) -> Result<(u64, Option<usize>), Failure> {
    use metatf::parallel::From;
    let types = per_type.len();
    let ids: Vec<usize> = (0..plan.chunks.len()).collect();
    let work = |r: &mut metatf::decode::Reader<'_>, &i: &usize| {
        let chunk = &plan.chunks[i];
        let mut v = Validated {
            per_type: vec![0; types],
            problems: Vec::new(),
            more: 0,
            records: 0,
            damaged: false,
            dropped: 0,
            end: chunk.bytes,
            differs: false,
        };
        let mut records = chunk.records(r);
        records.skip_values(true);
        while chunk.before(&records) {
            if records.next().is_none() {
                break;
            }
        }
        let (start, dropped) = (records.count(), records.dropped_problems());
        let stop = metatf::decode::ScanStop {
            records: chunk.until.unwrap_or(u64::MAX),
            offset: u64::MAX,
        };
        while !chunk.ended(&records) {
            // Records that cannot be invalid but for their length, without events.
            if scan && records.scan(&mut v.per_type, stop) > 0 {
                v.end = records.offset();
                if chunk.ended(&records) {
                    break;
                }
            }
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
        // Where the next chunk resumes, the decoder must stand as the stored checkpoint says.
        if let Some(From::Checkpoint(cp)) = plan.chunks.get(i + 1).map(|c| &c.from) {
            let (mut here, mut stored) = (Vec::new(), Vec::new());
            records.checkpoint().to_bytes(r.schema(), &mut here);
            cp.to_bytes(r.schema(), &mut stored);
            v.differs = here != stored;
        }
        v
    };
    metatf::parallel::ordered(
        jobs.threads(),
        &ids,
        || o.reader(),
        work,
        |outputs| -> Result<(u64, Option<usize>), Failure> {
            let (mut first, mut exact, mut dropped) = (0u64, true, 0u64);
            let (mut checkpoints, mut differs) = (0usize, None);
            for chunk in &plan.chunks {
                if matches!(chunk.from, From::Checkpoint(_)) {
                    checkpoints += 1;
                }
                metatf::parallel::release_behind(o, reader, chunk);
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
                if v.differs && differs.is_none() {
                    // The checkpoint the next chunk starts at.
                    differs = Some(checkpoints);
                }
                bar.record(v.end, first);
            }
            if !plan.counted {
                if let Some(p) = reader.record_count_problem(first, exact) {
                    show(&p, bar)?;
                }
            }
            Ok((dropped, differs))
        },
    )
}

/// Report the verdict on a verified index: a line when it is valid, else a problem (`check`
/// fails until the index is rebuilt). Returns whether it was a problem.
fn report_index(
    idx: &metatf::index::Index,
    verdict: Result<(), metatf::index::IndexError>,
    threads: Option<usize>,
    total: &mut u64,
    reported: &mut u64,
    max_errors: u64,
    out: &mut StdoutSink,
) -> std::io::Result<bool> {
    match verdict {
        Ok(()) => {
            if !quiet() {
                match threads {
                    None => writeln!(
                        out,
                        "{}: index valid ({} checkpoints)",
                        idx.name(),
                        idx.entries().len()
                    )?,
                    Some(n) => writeln!(
                        out,
                        "{}: index states valid ({} checkpoints, on {n} threads; their spacing \
                         and times are verified by -j 1)",
                        idx.name(),
                        idx.entries().len()
                    )?,
                }
            }
        }
        Err(e) => {
            *total += 1;
            if *reported < max_errors {
                *reported += 1;
                writeln!(out, "{e}")?;
            }
            return Ok(true);
        }
    }
    Ok(false)
}
