//! A check (`mtf check`): decode every record and report every problem, run the semantic pass
//! the DTD's analysis declarations ask for (docs/format.md §14), verify the seek index beside
//! the trace, and come to a verdict. Problems go to a [`CheckSink`] as they are found, in trace
//! order, on one thread or several; the counts and the verdict come back as a [`CheckReport`].

use std::fmt::Display;
use std::io;
use std::path::Path;

use crate::analysis::check::Check;
use crate::analysis::stats::Place;
use crate::analysis::{Finding, FindingKind, Severity};
use crate::decode::{Event, EventStream, Reader, ScanStop, ScanValues, Scanned};
use crate::index::{Builder, Index, IndexError};
use crate::parallel::ChunkPlan;
use crate::Opened;

use super::jobs::{self, Faults, Jobs};
use super::seek::SeekOptions;
use super::slice::{Slice, Slicer};
use super::{CommandError, Warning};

mod parallel;
mod semantic;
mod text;

/// What a check does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOptions {
    /// Problems given to the sink at most (all are counted).
    pub max_errors: u64,
    /// Run the semantic pass the DTD's analysis declarations ask for.
    pub semantic: bool,
    /// Ids, open nesting levels and keys tracked at once (semantic checks stop beyond).
    pub max_ids: usize,
    /// Pieces of information (ids alive at the end) given to the sink at most.
    pub max_info: u64,
    /// Only the problems of this slice (the trace is still decoded from its start).
    pub slice: Slice,
    /// Threads decoding; by default one per core when validating only, else one.
    pub jobs: Jobs,
    /// Step over records that cannot be invalid but for their length without events (the
    /// result is the same either way).
    pub scan: bool,
    /// The seek index to verify (when the whole trace is checked).
    pub seek: SeekOptions,
}

impl Default for CheckOptions {
    fn default() -> CheckOptions {
        CheckOptions {
            max_errors: 100,
            semantic: true,
            max_ids: crate::analysis::DEFAULT_MAX_TRACKED,
            max_info: 10,
            slice: Slice::default(),
            jobs: Jobs::default(),
            scan: true,
            seek: SeekOptions::default(),
        }
    }
}

impl CheckOptions {
    /// Whether `trace`, when it cannot be mapped, is best opened to be streamed: unless several
    /// threads are asked for or an index is there to verify.
    pub fn streams(&self, trace: &Path) -> bool {
        self.jobs.is_single() && !self.seek.has_index(trace)
    }
}

/// Where a check's findings go, as they are found.
pub trait CheckSink {
    /// A problem of the trace (decoding, damage, record count), among the first
    /// [`CheckOptions::max_errors`].
    fn problem(&mut self, problem: &dyn Display) -> io::Result<()>;
    /// A problem of the seek index (it cannot be read, or differs from a full decode).
    fn index_problem(&mut self, e: &IndexError) -> io::Result<()>;
    /// A finding of the semantic pass, described: an error, or (`info`) a piece of
    /// information among the first [`CheckOptions::max_info`].
    fn finding(&mut self, text: &str, info: bool) -> io::Result<()>;
    /// The seek index verified valid: its name, its checkpoints, and with `threads`, only the
    /// decoder's states were compared (on that many threads); with `states` too, the semantic
    /// pass ran on the threads from that many analysis states (§15.4), the ones verified.
    fn index_valid(
        &mut self,
        name: &str,
        checkpoints: usize,
        threads: Option<usize>,
        states: Option<usize>,
    ) -> io::Result<()>;
    /// Progress: the decode is at `offset` with `records` records read.
    fn progress(&mut self, offset: u64, records: u64) {
        let _ = (offset, records);
    }
    /// The pass is over (before the index's verdict).
    fn done(&mut self) {}
    /// Something noticed on the way.
    fn warning(&mut self, w: Warning);
}

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No problem.
    Valid,
    /// The trace decodes, but the semantic checks stopped at [`CheckOptions::max_ids`].
    Incomplete,
    /// The trace is valid, its seek index is not (it should be rebuilt or deleted).
    IndexInvalid,
    /// Problems.
    Invalid,
}

/// What a check found.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// Records checked per record type (in the slice).
    pub per_type: Vec<u64>,
    /// Findings of the semantic pass in the slice per kind and severity (none zero).
    pub findings: Vec<(FindingKind, Severity, u64)>,
    /// Problems in all: of decoding, the index, and the semantic pass's errors.
    pub problems: u64,
    /// Problems given to the sink.
    pub reported: u64,
    /// Pieces of information given to the sink.
    pub infos_shown: u64,
    /// Problems of the seek index.
    pub index_problems: u64,
    /// Whether the semantic pass ran.
    pub semantic: bool,
    /// Whether the DTD declares anything for it to check.
    pub declared: bool,
    /// Whether the semantic checks stopped at the limit of tracked ids.
    pub stopped: bool,
    /// The verdict.
    pub verdict: Verdict,
}

impl CheckReport {
    /// Findings of a severity.
    pub fn count(&self, severity: Severity) -> u64 {
        self.findings
            .iter()
            .filter(|x| x.1 == severity)
            .map(|x| x.2)
            .sum()
    }
}

/// The counts of a check as it goes, and its sink.
struct Tally<'a> {
    options: &'a CheckOptions,
    sink: &'a mut dyn CheckSink,
    per_type: Vec<u64>,
    total: u64,
    reported: u64,
    infos_shown: u64,
    index_problems: u64,
    /// Records counted.
    n: u64,
}

impl Tally<'_> {
    /// A problem: counted, and given to the sink while under the limit.
    fn problem(&mut self, p: &dyn Display) -> io::Result<()> {
        self.total += 1;
        if self.reported < self.options.max_errors {
            self.reported += 1;
            self.sink.problem(p)?;
        }
        Ok(())
    }

    /// Findings of the semantic pass, described by `check`.
    fn findings(&mut self, check: &Check<'_>, found: &[Finding]) -> io::Result<()> {
        for f in found {
            let info = match f.severity {
                Severity::Error if self.reported < self.options.max_errors => {
                    self.reported += 1;
                    false
                }
                Severity::Info if self.infos_shown < self.options.max_info => {
                    self.infos_shown += 1;
                    true
                }
                _ => continue,
            };
            self.sink.finding(&check.describe(f), info)?;
        }
        Ok(())
    }

    /// The verdict on a verified index: valid, or a problem (the check fails until the index
    /// is rebuilt).
    fn index_verdict(
        &mut self,
        idx: &Index,
        verdict: Result<(), IndexError>,
        threads: Option<usize>,
        states: Option<usize>,
    ) -> io::Result<()> {
        match verdict {
            Ok(()) => self
                .sink
                .index_valid(idx.name(), idx.entries().len(), threads, states),
            Err(e) => {
                self.total += 1;
                self.index_problems += 1;
                if self.reported < self.options.max_errors {
                    self.reported += 1;
                    self.sink.index_problem(&e)?;
                }
                Ok(())
            }
        }
    }
}

/// Check `o` (opened from `trace`, salvaging and without reporting the damage: it is the
/// first problem here), giving problems to `sink` as they are found.
pub fn check<'o>(
    o: &'o Opened,
    trace: &Path,
    options: &CheckOptions,
    faults: Faults<'o>,
    sink: &mut dyn CheckSink,
) -> Result<CheckReport, CommandError> {
    let reader = o.reader();
    let mut t = Tally {
        options,
        sink,
        per_type: vec![0u64; o.schema().records.len()],
        total: 0,
        reported: 0,
        infos_shown: 0,
        index_problems: 0,
        n: 0,
    };
    if let Some(e) = o.damage() {
        t.total += 1;
        t.reported += 1;
        t.sink.problem(e.innermost())?;
    } else if o.input_fault().is_some() {
        // The compressed stream ended early (the caller reported it when it was read).
        t.total += 1;
    }
    let mut check = Check::new(o.schema());
    check.set_limit(options.max_ids);
    let semantic = options.semantic && check.is_declared();
    options.slice.need_declared_time(o.schema(), trace)?;
    let window = options.slice.window()?;
    let index = find_index(&mut t, trace)?;
    // Validating only, over the whole trace: the workers count and collect the problems
    // themselves, and only those cross to this thread.
    let validate_only = !semantic && window.is_all();
    let jobs = options.jobs.decide(!validate_only);
    // Design: an index found beside the trace is verified by building the one a full decode
    // takes, checkpoint by checkpoint, with its spacing and declared times, which needs the
    // whole decode on one thread: so it is by default. With `-j N` asked for, validating only,
    // its checkpoints cut the trace instead and each thread compares the decoder's state where
    // its part ends with the stored checkpoint; the spacing and times are left to `-j 1` (or
    // `mtf index --check`), and the sink is told so.
    let asked = options.jobs.jobs.is_some_and(|n| n != 1);
    // The semantic pass of the whole trace on several threads, from the analysis states at the
    // index's checkpoints (check/semantic.rs); without them, on one thread.
    if let Some(idx) = index
        .as_ref()
        .filter(|_| semantic && window.is_all() && asked)
    {
        if jobs.threads() > 1
            && semantic::run(o, &reader, trace, idx, jobs.threads(), &mut t, &mut check)?.is_some()
        {
            return Ok(report(t, &check, semantic, Vec::new()));
        }
    }
    let plan = match &index {
        Some(idx) if validate_only && asked && jobs.threads() > 1 => {
            crate::parallel::plan_indexed(&reader, idx).ok()
        }
        Some(_) => None,
        None => jobs.plan(&reader, None, &mut |w| t.sink.warning(w)),
    };
    let mut before = None;
    match plan.as_ref().filter(|_| validate_only) {
        Some(plan) => {
            let threads = jobs.threads();
            let (dropped, differs) = parallel::validate(o, &reader, plan, threads, &mut t)?;
            t.sink.done();
            t.total += dropped;
            if let Some(idx) = &index {
                let verdict = match differs {
                    None => Ok(()),
                    Some(i) => Err(IndexError::Mismatch {
                        name: idx.name().to_string(),
                        checkpoint: i,
                        record: idx.entries()[i].record,
                        what: "the metadata state differs".into(),
                    }),
                };
                t.index_verdict(idx, verdict, Some(threads), None)?;
            }
        }
        None => {
            let pass = Sequential {
                o,
                reader: &reader,
                plan: plan.as_ref(),
                jobs,
                semantic,
                validate_only,
                index: index.as_ref(),
            };
            before = pass.run(&mut t, &mut check, faults)?;
        }
    }
    Ok(report(t, &check, semantic, before.unwrap_or_default()))
}

/// The index to verify: only when the whole trace is checked (reading a slice may stop
/// early). One that cannot be read is a problem.
fn find_index(t: &mut Tally<'_>, trace: &Path) -> io::Result<Option<Index>> {
    let found = if t.options.slice.is_all() {
        t.options.seek.find(trace)
    } else {
        if let Some(named) = &t.options.seek.index {
            // Named but not verified: said, not silently ignored.
            let index = if named.as_os_str() == "-" {
                "standard input".to_string()
            } else {
                crate::escape::escape_path(named).into_owned()
            };
            t.sink.warning(Warning::IndexNotVerified { index });
        }
        None
    };
    match found {
        Some(Ok(idx)) => Ok(Some(idx)),
        Some(Err(e)) => {
            t.total += 1;
            t.index_problems += 1;
            t.reported += 1;
            t.sink.index_problem(&e)?;
            Ok(None)
        }
        None => Ok(None),
    }
}

/// The report at the end: the findings counted within the slice (what was counted before it
/// is taken away), and the verdict.
fn report(
    t: Tally<'_>,
    check: &Check<'_>,
    semantic: bool,
    before: Vec<(FindingKind, Severity, u64)>,
) -> CheckReport {
    let earlier = |kind: FindingKind, sev: Severity| {
        before
            .iter()
            .find(|(k, s, _)| *k == kind && *s == sev)
            .map_or(0, |x| x.2)
    };
    let findings: Vec<(FindingKind, Severity, u64)> = check
        .counts()
        .map(|(k, s, n)| (k, s, n - earlier(k, s)))
        .filter(|x| x.2 > 0)
        .collect();
    let mut report = CheckReport {
        per_type: t.per_type,
        findings,
        problems: t.total,
        reported: t.reported,
        infos_shown: t.infos_shown,
        index_problems: t.index_problems,
        semantic,
        declared: check.is_declared(),
        stopped: check.interpreter().stopped(),
        verdict: Verdict::Valid,
    };
    report.problems += report.count(Severity::Error);
    report.verdict = if report.problems == 0 {
        Verdict::Valid
    } else if report.stopped && report.problems == 1 {
        Verdict::Incomplete
    } else if report.problems == report.index_problems {
        Verdict::IndexInvalid
    } else {
        Verdict::Invalid
    };
    report
}

/// The pass on one thread, or decoded on several with the events consumed here in order
/// (the semantic pass, a slice, an index to verify).
struct Sequential<'a, 'o> {
    o: &'o Opened,
    reader: &'a Reader<'o>,
    plan: Option<&'a ChunkPlan>,
    jobs: Jobs,
    semantic: bool,
    validate_only: bool,
    index: Option<&'a Index>,
}

/// Bytes scanned between two reports of progress.
const SCAN_STEP: u64 = 8 << 20;

impl<'o> Sequential<'_, 'o> {
    /// Run the pass; the findings counted before the slice, if it has a start.
    #[allow(clippy::type_complexity)]
    fn run(
        &self,
        t: &mut Tally<'_>,
        check: &mut Check<'o>,
        faults: Faults<'o>,
    ) -> Result<Option<Vec<(FindingKind, Severity, u64)>>, CommandError> {
        let mut builder = self.index.map(|i| Builder::new(self.reader, i.options()));
        let needs_values = builder.as_ref().is_some_and(|b| b.needs_values());
        // Validating only on one thread: records that cannot be invalid but for their length
        // are stepped over without events (`Records::scan`; with an index to verify, reading
        // the times it needs, `Builder::scan`).
        let scan = self.validate_only && t.options.scan;
        let mut slicer = Slicer::new(self.o, t.options.slice.window()?);
        // The semantic pass over the whole trace without an index to verify: the records a scan
        // steps over are checked from the values it reads of them (`Check::record_values`).
        let mut values =
            (self.semantic && t.options.scan && slicer.is_all()).then(|| check.scan_values());
        let mut before = None;
        let dropped = jobs::read(
            self.o,
            self.reader,
            self.plan,
            self.jobs.threads(),
            !self.semantic && !needs_values,
            faults,
            |records| -> Result<u64, CommandError> {
                let mut inside = true;
                // The index is verified only on one thread (no plan): `records` is then the
                // decoder itself, whose checkpoints the builder takes.
                loop {
                    if let (Some(b), Some(r)) = (builder.as_mut(), records.as_records()) {
                        b.before_next(r);
                    }
                    if scan {
                        scan_some(records, &mut builder, t);
                    }
                    if let Some(values) = values.as_mut() {
                        scan_checked(records, &mut builder, check, values, t)?;
                    }
                    let Some(event) = records.next_event() else {
                        break;
                    };
                    let problem: &dyn Display = match &event {
                        Event::Record(v) => {
                            if let Some(b) = builder.as_mut() {
                                b.record(v);
                            }
                            match slicer.place(v) {
                                Place::Before => {
                                    inside = false;
                                    if self.semantic {
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
                            t.per_type[v.record_id() as usize] += 1;
                            t.n += 1;
                            t.sink.progress(v.offset(), t.n);
                            if self.semantic {
                                let found = check.record(v);
                                if !found.is_empty() {
                                    let found = found.to_vec();
                                    t.findings(check, &found)?;
                                }
                            }
                            continue;
                        }
                        Event::Problem(p) => p,
                        Event::Damage(d) => d,
                    };
                    if inside {
                        t.problem(problem)?;
                    }
                }
                Ok(records.dropped_problems())
            },
        )?;
        if self.semantic {
            check.finish_each(|check, f| t.findings(check, std::slice::from_ref(f)))?;
        }
        t.sink.done();
        t.total += dropped;
        if let (Some(idx), Some(b)) = (self.index, builder) {
            let verdict = idx
                .fits(self.reader)
                .and_then(|()| idx.verify(&b.finish(idx.name())));
            t.index_verdict(idx, verdict, None, None)?;
        }
        Ok(before)
    }
}

/// Where a scan from here stops at the latest (`SCAN_STEP` bytes on); `None` where the events
/// do not come straight from a decoder.
fn scan_step(records: &dyn EventStream) -> Option<ScanStop> {
    let at = records.as_records()?.offset();
    Some(ScanStop {
        records: u64::MAX,
        offset: at.saturating_add(SCAN_STEP),
    })
}

/// After a scan stepped over `k` records: counted, the progress shown, and the index being
/// verified told (a checkpoint taken where one is due).
fn scanned(
    records: &dyn EventStream,
    builder: &mut Option<Builder<'_>>,
    t: &mut Tally<'_>,
    k: u64,
) {
    if k == 0 {
        return;
    }
    t.n += k;
    if let Some(r) = records.as_records() {
        t.sink.progress(r.offset(), t.n);
        if let Some(b) = builder.as_mut() {
            b.scanned(r, k);
            b.before_next(r);
        }
    }
}

/// The semantic pass over the records a scan can step over from here (up to `SCAN_STEP` bytes
/// on, and where `builder` may take a checkpoint), each checked from the values the scan reads
/// of it, its findings reported.
fn scan_checked(
    records: &mut dyn EventStream,
    builder: &mut Option<Builder<'_>>,
    check: &mut Check<'_>,
    values: &mut ScanValues,
    t: &mut Tally<'_>,
) -> io::Result<()> {
    let Some(stop) = scan_step(records) else {
        return Ok(());
    };
    let mut failed = None;
    let mut per_type = std::mem::take(&mut t.per_type);
    let mut each = |r: Scanned<'_>| {
        let found = check.record_values(r);
        if found.is_empty() {
            return true;
        }
        let found = found.to_vec();
        match t.findings(check, &found) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e);
                false
            }
        }
    };
    let k = match builder.as_mut() {
        Some(b) => b.scan_values(records, &mut per_type, stop, values, &mut each),
        None => records.scan_values(&mut per_type, stop, values, None, &mut each),
    };
    t.per_type = per_type;
    scanned(records, builder, t, k);
    failed.map_or(Ok(()), Err)
}

/// Step over the records from here that cannot be invalid but for their length (validating
/// only): counted per type, stopping where `builder` may take a checkpoint.
fn scan_some(records: &mut dyn EventStream, builder: &mut Option<Builder<'_>>, t: &mut Tally<'_>) {
    let Some(stop) = scan_step(records) else {
        return;
    };
    let k = match builder.as_mut() {
        Some(b) => b.scan(records, &mut t.per_type, stop),
        None => records.scan(&mut t.per_type, stop),
    };
    scanned(records, builder, t, k);
}
