//! `-j N` of `mtf check`, `dump`, `stats` and `export` as a command-line option, and the
//! command line's policy for the faults of a streamed trace (`metatf::command::jobs`).

use clap::Args;

use metatf::command::jobs::{Faults, Jobs};
use metatf::decode::{EventStream, Reader};
use metatf::parallel::{self, ChunkPlan};
use metatf::stream::StreamError;
use metatf::Opened;

use super::common::{line_to_stderr, Failure};

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
    /// The library's options.
    pub fn jobs(&self) -> Jobs {
        Jobs {
            jobs: self.jobs,
            chunk_bytes: self.chunk_bytes,
            inline_bytes: self.inline_bytes,
        }
    }

    /// The library's options, with the default decided ([`Jobs::decide`]).
    pub fn decide(&self, sequential: bool) -> Jobs {
        self.jobs().decide(sequential)
    }
}

/// The plan for `reader`'s trace on `jobs` threads ([`Jobs::plan`]); an index that does not fit
/// is a warning. The caller loads the index (once: `--index -` reads standard input).
pub fn plan<'r>(
    reader: &'r Reader<'r>,
    jobs: &Jobs,
    index: Option<&metatf::index::Index>,
) -> Option<ChunkPlan> {
    jobs.plan(reader, index, &mut super::common::warn)
}

/// Let `f` read every event of the trace in trace order ([`metatf::command::jobs::read`]),
/// the faults of a streamed trace handled as [`faults`] says.
pub fn with_events<'r, T>(
    o: &'r Opened,
    reader: &'r Reader<'r>,
    plan: Option<&ChunkPlan>,
    jobs: &Jobs,
    skip_values: bool,
    f: impl FnOnce(&mut dyn EventStream) -> T,
) -> T {
    metatf::command::jobs::read(o, reader, plan, jobs.threads(), skip_values, faults(o), f)
}

/// What the command line does with the faults of a streamed trace: a damaged container or a
/// corrupt compressed stream is found where the stream reaches it, and reported as opening the
/// same bytes as a file reports it, with its status. A damaged container is found at the
/// stream's end, after every record the bytes hold was given out: the consumer finishes (its
/// output written) and the damage is reported after it. Anything else stops the command where
/// it is found.
pub fn faults(o: &Opened) -> Faults<'static> {
    let path = o
        .trace()
        .path()
        .map_or_else(|| std::path::PathBuf::from("-"), |p| p.to_path_buf());
    let at_end = path.clone();
    Faults {
        on_fault: Some(Box::new(move |e| {
            if !matches!(e, StreamError::Container(_)) {
                let f = super::common::stream_failure(&path, e);
                line_to_stderr(&f.message);
                std::process::exit(f.code);
            }
        })),
        // A compressed stream cut short (salvaged): its records were given out as those of the
        // bytes it holds, and its fault is reported with the damage it left.
        on_end: Some(Box::new(move |ended| {
            let cut = ended.input_fault.as_ref().map(super::common::io_failure);
            let damage = ended
                .fault
                .as_ref()
                .filter(|e| matches!(e, StreamError::Container(_)))
                .map(|e| super::common::stream_failure(&at_end, e));
            report_end(cut, damage)
        })),
    }
}

/// After a streamed pass: the fault of a stream cut short and the damage found at its end.
fn report_end(cut: Option<Failure>, mut damage: Option<Failure>) {
    let defers = super::common::defers_damage();
    if defers {
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
        if defers {
            super::common::mark_damaged();
        } else {
            std::process::exit(code);
        }
    }
}
