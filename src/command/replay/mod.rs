//! `mtf replay`: a trace's block events decoded once into an operations file
//! ([`crate::replay::ops`]), then played against each allocator in a fresh process (the `mtf`
//! binary, re-executed with its hidden `replay-child` subcommand, which calls [`run_child`]),
//! the runs' reports collected for the caller to render.

use std::collections::HashMap;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::blocks::{for_each_block_event_resident, NoAllocations, Reading};
use crate::analysis::event::HeapOp;
use crate::io::{escape_path, IoError, TempFile};
use crate::replay::{
    self, ops, probe, Allocator, OpsBuilder, OpsReader, Probe, Report, ThreadMode, Timing,
    TraceSummary,
};
use crate::simulate::{BlockKey, LiveMap};
use crate::Opened;

pub mod render;

/// How to replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayOptions {
    /// The allocators, each measured side by side.
    pub allocators: Vec<Allocator>,
    /// Runs per allocator, each in a fresh process.
    pub repeat: u32,
    /// Threads in the trace's order or free-running.
    pub threads: ThreadMode,
    /// As fast as possible, or keeping the trace's recorded gaps.
    pub timing: Timing,
    /// Write to every page of each new block, so that RSS counts it.
    pub touch: bool,
    /// Larger requests are refused (counted, not made); `None`: the machine's physical memory.
    pub max_block_size: Option<u64>,
    /// The executable that measures one run (`EXE replay-child OPS ...`, the `mtf` binary);
    /// `None`: the running executable.
    pub executable: Option<PathBuf>,
    /// Sites kept in the tables of waste (the JSON has this many too); 0: no tables.
    pub top: usize,
}

impl Default for ReplayOptions {
    /// The system allocator, 3 runs, threads in trace order, pages not touched.
    fn default() -> Self {
        ReplayOptions {
            allocators: vec![Allocator::System],
            repeat: 3,
            threads: ThreadMode::Ordered,
            timing: Timing::Fast,
            touch: false,
            max_block_size: None,
            executable: None,
            top: 10,
        }
    }
}

/// Why a replay did not run.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum ReplayRunError {
    /// The trace's DTD declares no allocations.
    #[error(transparent)]
    #[diagnostic(transparent)]
    NoAllocations(#[from] NoAllocations),
    /// The temporary file of the operations could not be made.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Temp(IoError),
    /// Writing the operations failed.
    #[error("writing the replay operations to a temporary file: {0}")]
    #[diagnostic(code(mtf::io::temp))]
    Write(std::io::Error),
    /// The executable that measures a run was not found.
    #[error("finding the mtf executable to run: {0}")]
    #[diagnostic(code(mtf::io::exe))]
    Exe(std::io::Error),
    /// The operations file given to a child could not be read.
    #[error("{path}: {source}")]
    #[diagnostic(code(mtf::io::ops))]
    Ops {
        /// The operations file (escaped for a terminal).
        path: String,
        /// What failed.
        source: std::io::Error,
    },
    /// A measured run failed.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Run(#[from] replay::ReplayError),
    /// An allocator library cannot be used (the measuring process's words).
    #[error("{message}")]
    #[diagnostic(code(mtf::replay::library))]
    Library {
        /// Why.
        message: String,
        /// What to do, where there is advice.
        #[help]
        help: Option<String>,
    },
    /// `--timing recorded` of a trace without times.
    #[error("--timing recorded needs the times of the operations, and {0}")]
    #[diagnostic(
        code(mtf::usage::timing),
        help("times come from a field the DTD declares with `F.time = ns;` (or us, ms, s): docs/format.md §14.4; without them, replay with --timing fast")
    )]
    NoTimes(String),
}

/// A trace's operations, decoded and written once, ready to be played.
#[derive(Debug)]
pub struct Prepared {
    ops: TempFile,
    /// The site of each block-making operation's record, for the children's [`Probe`].
    sites: TempFile,
    /// The names of the sites, as `mtf stats` names them.
    site_names: HashMap<(u32, u64), String>,
    /// What the trace says (the reference the runs are set beside); frees of blocks not live
    /// counted in `counts.unknown_frees`.
    pub summary: TraceSummary,
    /// What the reading met besides the events.
    pub reading: Reading,
}

/// One allocator's runs.
#[derive(Debug, Clone)]
pub struct Runs {
    /// The allocator.
    pub alloc: Allocator,
    /// The reports of the runs that succeeded, in the order run.
    pub reports: Vec<Report>,
    /// Why each failed run failed.
    pub failures: Vec<String>,
}

/// The figures of a replay.
#[derive(Debug, Clone)]
pub struct Replayed {
    /// Each allocator's runs, in the order of [`ReplayOptions::allocators`].
    pub runs: Vec<Runs>,
    /// The largest request made.
    pub max_block_size: u64,
    /// The options it ran with (the renderers of [`render`] state them).
    pub options: ReplayOptions,
}

/// Decodes the block events of `opened` into a temporary operations file.
pub fn prepare(opened: &Opened) -> Result<Prepared, ReplayRunError> {
    let temp = TempFile::new().map_err(ReplayRunError::Temp)?;
    let sites = TempFile::new().map_err(ReplayRunError::Temp)?;
    let mut builder = OpsBuilder::with_time_unit(opened.reader().schema().analysis.time_unit);
    let mut w = ops::OpsWriter::new(temp.file()).map_err(ReplayRunError::Write)?;
    let mut sw = BufWriter::with_capacity(1 << 16, sites.file());
    let mut site_of: LiveMap<BlockKey, Option<u64>> = LiveMap::new();
    let mut seen: std::collections::HashSet<(u32, u64)> = std::collections::HashSet::new();
    let mut err = None;
    let reader = opened.reader();
    let mut present_blocks = 0;
    let (reading, interp) = for_each_block_event_resident(&reader, |e, resident| {
        let (op, present) = builder.op_resident(e, resident);
        if err.is_none() {
            err = w.write(&op).err();
        }
        if let (Some((index, bytes)), None) = (present, &err) {
            present_blocks += 1;
            err = w.set_present(index, bytes).err();
        }
        // The site of each block the replay makes: its allocation's; a reallocation's own,
        // else the site of the block it reallocates.
        let made = match e.op {
            HeapOp::Alloc { id, .. } => {
                site_of.insert(BlockKey::of(e, id), e.site);
                Some(e.site)
            }
            HeapOp::Free { id } => {
                site_of.remove(&BlockKey::of(e, id));
                None
            }
            HeapOp::Move { old, new, size } => {
                let before = site_of.remove(&BlockKey::of(e, old));
                let site = e.site.or(before.flatten());
                if size.is_some() || before.is_some() {
                    site_of.insert(BlockKey::of(e, new), site);
                }
                size.map(|_| site)
            }
        };
        if let Some(site) = made {
            if let Some(id) = site {
                seen.insert((e.space, id));
            }
            if err.is_none() {
                err = probe::write_site(&mut sw, e.record, e.space, site).err();
            }
        }
    })?;
    if let Some(e) = err {
        return Err(ReplayRunError::Write(e));
    }
    sw.flush().map_err(ReplayRunError::Write)?;
    drop(sw);
    let site_names = seen
        .into_iter()
        .filter_map(|(space, id)| interp.site_name(space, id).map(|n| ((space, id), n)))
        .collect();
    w.finish(builder.threads()).map_err(ReplayRunError::Write)?;
    let mut file = temp.file();
    ops::mark_last_ops(&mut file, builder.last_ops()).map_err(ReplayRunError::Write)?;
    let mut summary = builder.finish();
    summary.counts.unknown_frees += reading.unknown_frees;
    summary.present_blocks = present_blocks;
    Ok(Prepared {
        ops: temp,
        sites,
        site_names,
        summary,
        reading,
    })
}

impl Prepared {
    /// Plays the operations `options.repeat` times per allocator, round-robin over the
    /// allocators (so that a drift of the machine touches each alike), each run in a fresh
    /// process. A failed run is recorded in its allocator's [`Runs::failures`].
    pub fn run(&self, options: &ReplayOptions) -> Result<Replayed, ReplayRunError> {
        let exe = match &options.executable {
            Some(p) => p.clone(),
            None => std::env::current_exe().map_err(ReplayRunError::Exe)?,
        };
        if options.timing == Timing::Recorded {
            self.check_times()?;
        }
        for &a in &options.allocators {
            if let Allocator::Library(_) = a {
                check_library(&exe, a)?;
            }
        }
        let max_block_size = options.max_block_size.unwrap_or_else(physical_memory);
        let mut runs: Vec<Runs> = options
            .allocators
            .iter()
            .map(|&alloc| Runs {
                alloc,
                reports: Vec::new(),
                failures: Vec::new(),
            })
            .collect();
        let child = ChildOptions {
            threads: options.threads,
            timing: options.timing,
            touch: options.touch,
            max_block_size,
            sample_every: self.summary.every,
        };
        let probe = Probe::new(
            Some(self.summary.peak_event).filter(|&e| e > 0),
            Some(self.sites.path().to_path_buf()),
        );
        for _ in 0..options.repeat {
            for r in runs.iter_mut() {
                match spawn_child(&exe, self.ops.path(), r.alloc, &child, &probe) {
                    Ok(mut report) => {
                        self.name_sites(&mut report, options.top);
                        r.reports.push(report)
                    }
                    Err(msg) => r.failures.push(msg),
                }
            }
        }
        Ok(Replayed {
            runs,
            max_block_size,
            options: options.clone(),
        })
    }

    /// Whether the trace has the times `--timing recorded` needs, and if not, why not.
    pub fn check_times(&self) -> Result<(), ReplayRunError> {
        let s = &self.summary;
        let why = match s.time_unit {
            None => "the trace's DTD declares no time field (analysis/1)".to_string(),
            Some("tick") => {
                "the trace's DTD declares its times in ticks, a logical clock with no duration"
                    .to_string()
            }
            Some(_) if s.events == 0 => "the trace has no heap events".to_string(),
            Some(_) if s.timed == 0 => format!(
                "none of the trace's {} heap events has a time (its DTD declares them, the records hold none)",
                s.events
            ),
            Some(_) => return Ok(()),
        };
        Err(ReplayRunError::NoTimes(why))
    }
}

// Design: an allocator library built with initial-exec thread-local storage (Debian's jemalloc)
// can only be loaded with `dlopen` where the C library keeps spare static TLS, 512 bytes by
// default ("cannot allocate memory in static TLS block"). The child that loads a library gets
// 16 KiB of it through glibc's tunable (an address range in each thread's block, not memory
// until used); built-in allocators run without it, as before.
const STATIC_TLS: &str = "glibc.rtld.optional_static_tls=16384";

/// Gives a child that loads `alloc`, when it is a library, the static TLS it may need.
fn library_env(cmd: &mut Command, alloc: Allocator) {
    if alloc.path().is_some() {
        let t = match std::env::var("GLIBC_TUNABLES") {
            Ok(t) if !t.is_empty() => format!("{t}:{STATIC_TLS}"),
            _ => STATIC_TLS.to_string(),
        };
        cmd.env("GLIBC_TUNABLES", t);
    }
}

/// Loads an allocator library in a process of its own (`EXE replay-child --check`), so that a
/// path that is no library, or a library without `malloc` and `free`, is refused with its
/// reason before any run, and this process never loads it.
fn check_library(exe: &Path, alloc: Allocator) -> Result<(), ReplayRunError> {
    let mut cmd = Command::new(exe);
    library_env(&mut cmd, alloc);
    let out = cmd
        .arg("replay-child")
        .arg("--check")
        .arg("--allocator")
        .arg(alloc.spec().as_ref())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(ReplayRunError::Exe)?;
    if out.status.success() {
        return Ok(());
    }
    // The reason on the first line, the advice (if any) on the second.
    let said = String::from_utf8_lossy(&out.stdout);
    let mut lines = said.trim().lines();
    let message = match lines.next() {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => format!(
            "{}: loading it failed ({}): {}",
            escape_path(alloc.path().unwrap_or(Path::new(alloc.name()))),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    };
    Err(ReplayRunError::Library {
        message,
        help: lines.next().map(str::to_string),
    })
}

impl Prepared {
    /// Keeps the `top` sites of a report's tables of waste, named as `mtf stats` names them.
    fn name_sites(&self, report: &mut Report, top: usize) {
        for s in [&mut report.frag.at_peak, &mut report.frag.at_end]
            .into_iter()
            .flatten()
        {
            s.sites.truncate(top);
            for x in s.sites.iter_mut() {
                if let Some(id) = x.site {
                    x.name = self.site_names.get(&(x.space, id)).cloned();
                }
            }
        }
    }
}

/// The machine's physical memory in bytes (1 TiB where it cannot be told).
pub fn physical_memory() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(1 << 40, |kb| kb * 1024)
}

/// The options of one measured run.
pub type ChildOptions = replay::Options;

/// The name of a thread mode on the child's command line.
pub fn thread_mode_name(mode: ThreadMode) -> &'static str {
    match mode {
        ThreadMode::Ordered => "ordered",
        ThreadMode::Free => "free",
    }
}

/// The name of a timing on the child's command line.
pub fn timing_name(timing: Timing) -> &'static str {
    match timing {
        Timing::Fast => "fast",
        Timing::Recorded => "recorded",
    }
}

/// One measured replay in a fresh process.
fn spawn_child(
    exe: &Path,
    ops: &Path,
    alloc: Allocator,
    options: &ChildOptions,
    probe: &Probe,
) -> Result<Report, String> {
    let mut cmd = Command::new(exe);
    cmd.arg("replay-child")
        .arg(ops)
        .arg("--allocator")
        .arg(alloc.spec().as_ref())
        .arg("--threads")
        .arg(thread_mode_name(options.threads))
        .arg("--timing")
        .arg(timing_name(options.timing))
        .arg("--max-block-size")
        .arg(options.max_block_size.to_string())
        .arg("--every")
        .arg(options.sample_every.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if options.touch {
        cmd.arg("--touch");
    }
    if let Some(at) = probe.at {
        cmd.arg("--frag-at").arg(at.to_string());
    }
    if let Some(sites) = &probe.sites {
        cmd.arg("--sites").arg(sites);
    }
    library_env(&mut cmd, alloc);
    let out = cmd
        .output()
        .map_err(|e| format!("could not start {}: {e}", escape_path(exe)))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "the measuring process failed ({}): {}",
            out.status,
            err.trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("unreadable report: {e}"))
}

/// One measured replay in this process, of the operations file `ops` (what `mtf replay-child`
/// runs).
pub fn run_child(
    ops: &Path,
    alloc: Allocator,
    options: &ChildOptions,
    probe: Probe,
) -> Result<Report, ReplayRunError> {
    let failed = |source| ReplayRunError::Ops {
        path: escape_path(ops).to_string(),
        source,
    };
    let file = std::fs::File::open(ops).map_err(failed)?;
    let reader = OpsReader::new(BufReader::with_capacity(1 << 20, file)).map_err(failed)?;
    let (threads, count) = (reader.threads, reader.count);
    Ok(replay::run_probed(
        alloc, options, threads, count, reader, probe,
    )?)
}

/// The median of `v` (0 for none).
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Runs {
    /// The median of a figure over the runs, and its spread: (max − min) / median.
    pub fn median_spread(&self, f: impl Fn(&Report) -> f64) -> (f64, f64) {
        let v: Vec<f64> = self.reports.iter().map(f).collect();
        let m = median(v.clone());
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let spread = if m > 0.0 && v.len() > 1 {
            (hi - lo) / m
        } else {
            0.0
        };
        (m, spread)
    }

    /// The run whose wall time is the median.
    pub fn median_run(&self) -> Option<&Report> {
        let mut v: Vec<&Report> = self.reports.iter().collect();
        v.sort_by_key(|r| r.wall_ns);
        v.get(v.len() / 2).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(vec![]), 0.0);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn the_operations_of_a_trace_are_written_once() {
        let o = crate::open(concat!(env!("CARGO_MANIFEST_DIR"), "/traces/android.mtf"))
            .expect("the sample trace opens");
        let p = prepare(&o).expect("prepared");
        assert!(p.summary.events > 0);
        assert!(p.summary.counts.allocs > 0);
        let len = std::fs::metadata(p.ops.path()).expect("ops file").len();
        assert!(
            len > p.summary.events,
            "{len} bytes for {} events",
            p.summary.events
        );
    }
}
