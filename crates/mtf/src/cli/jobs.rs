//! `-j N` of `mtf check`, `dump`, `stats` and `export`: decoding on several threads, results in
//! trace order (`metatf::parallel`).

use clap::Args;

use metatf::decode::{EventStream, Reader};
use metatf::parallel::{self, Plan};
use metatf::Opened;

use super::common::{line_to_stderr, problem_text};

/// The `-j` option.
#[derive(Debug, Args, Clone, Copy)]
pub struct JobsArgs {
    /// Decode on N threads, the output in trace order and the same as with one; 0: one per
    /// core. By default, one per core where the threads do most of the work (`dump`; `check`
    /// without the semantic pass), one where every record goes through one sequential pass
    /// anyway (`check`'s semantic pass, `stats`, `export`: decoding apart measured no faster
    /// there). The
    /// trace is cut at the checkpoints of its seek index (`TRACE.idx` or `--index`;
    /// `mtf index T` makes one) or else at its regions (the global region and each section
    /// decode independently): without an index, a trace of one large section decodes on one
    /// thread whatever N. `-j 1`: one thread, nothing cut.
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<usize>,
    /// Trace bytes per chunk decoded apart (for tests: 1 cuts at every region).
    #[arg(long, hide = true, value_name = "BYTES", default_value_t = parallel::CHUNK_BYTES)]
    pub chunk_bytes: u64,
    /// Regions larger than this are decoded by the thread that writes the output (for tests).
    #[arg(long, hide = true, value_name = "BYTES", default_value_t = parallel::CHUNK_BYTES)]
    pub inline_bytes: u64,
}

impl JobsArgs {
    /// One thread.
    pub fn one() -> JobsArgs {
        JobsArgs {
            jobs: Some(1),
            chunk_bytes: parallel::CHUNK_BYTES,
            inline_bytes: parallel::CHUNK_BYTES,
        }
    }

    /// With the default decided: one thread when a sequential pass over every record bounds the
    /// time (`sequential`), else one per core.
    pub fn decide(&self, sequential: bool) -> JobsArgs {
        JobsArgs {
            jobs: Some(self.jobs.unwrap_or(if sequential { 1 } else { 0 })),
            ..*self
        }
    }

    /// Threads to use.
    pub fn threads(&self) -> usize {
        match self.jobs {
            Some(0) => parallel::available(),
            Some(n) => n,
            None => 1,
        }
    }
}

/// The plan for `reader`'s trace on `jobs` threads, or `None` when one thread does it all: cut
/// at the checkpoints of its seek index when it has one (`TRACE.idx`, or `--index`), else at
/// its regions.
///
/// The caller loads the index (once: `--index -` reads standard input).
pub fn plan<'r>(
    reader: &'r Reader<'r>,
    jobs: &JobsArgs,
    index: Option<&metatf::index::Index>,
) -> Option<Plan> {
    // A stream is read once, in order.
    if jobs.threads() <= 1 || reader.is_streamed() {
        return None;
    }
    if let Some(idx) = index {
        match parallel::plan_indexed(reader, idx) {
            Ok(plan) if plan.is_parallel() => return Some(plan),
            Ok(_) => {}
            Err(e) => line_to_stderr(&format!(
                "{}\n  (warning: decoding without the index)",
                problem_text("index", &e)
            )),
        }
    }
    let plan = parallel::plan_with(reader, jobs.chunk_bytes, jobs.inline_bytes);
    plan.is_parallel().then_some(plan)
}

/// Let `f` read every event of the trace in trace order: from `reader.records()` on one thread
/// (no plan), or decoded on `jobs` threads as `plan` cuts the trace.
pub fn with_events<'r, T>(
    o: &Opened,
    reader: &'r Reader<'r>,
    plan: Option<&Plan>,
    jobs: &JobsArgs,
    skip_values: bool,
    f: impl FnOnce(&mut dyn EventStream) -> T,
) -> T {
    if let Some(mut stream) = o.stream() {
        stream.skip_values(skip_values);
        // A damaged container or a corrupt compressed stream is found where the stream reaches
        // it: reported as opening the same bytes as a file reports it, with its status.
        let path = o
            .trace()
            .path()
            .map_or_else(|| std::path::PathBuf::from("-"), |p| p.to_path_buf());
        // A damaged container is found at the stream's end, after every record the bytes
        // hold was given out: the consumer finishes (its output written) and the damage is
        // reported after it. Anything else stops the command where it is found.
        let at_end = std::rc::Rc::new(std::cell::RefCell::new(None));
        let later = at_end.clone();
        stream.on_fault(move |e| {
            let f = super::common::stream_failure(&path, e);
            if matches!(e, metatf::stream::StreamError::Container(_)) {
                *later.borrow_mut() = Some(f);
                return;
            }
            line_to_stderr(&f.message);
            std::process::exit(f.code);
        });
        let out = f(&mut stream);
        // A compressed stream cut short (salvaged): its records were given out as those of the
        // bytes it holds, and its fault is reported with the damage it left.
        let cut = stream.input_fault().map(super::common::io_failure);
        drop(stream);
        let mut damage = at_end.borrow_mut().take();
        if super::common::defers_damage() {
            // Said as for a file whose damage is found when it is opened.
            if let Some(f) = damage.as_mut() {
                f.message = format!(
                    "{}\n  (showing the records of the regions that can still be read)",
                    f.message.trim_end()
                );
            }
        }
        let code = [&cut, &damage]
            .iter()
            .filter_map(|f| f.as_ref())
            .map(|f| f.code)
            .max();
        for f in [cut, damage].into_iter().flatten() {
            line_to_stderr(f.message.trim_end());
        }
        if let Some(code) = code {
            // A command whose output comes after its pass (stats) writes it, and exits 1.
            if super::common::defers_damage() {
                super::common::mark_damaged();
            } else {
                std::process::exit(code);
            }
        }
        return out;
    }
    match plan {
        None => {
            let mut records = reader.records();
            records.skip_values(skip_values);
            f(&mut records)
        }
        Some(plan) => parallel::events(o, reader, plan, jobs.threads(), skip_values, |e| f(e)),
    }
}
