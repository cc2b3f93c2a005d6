//! `-j N` of `mtf check`, `dump`, `stats` and `export` as a command-line option, and the
//! command line's policy for the faults of a streamed trace (`metatf::command::jobs`).

use clap::Args;

use metatf::command::jobs::Jobs;
use metatf::decode::{EventStream, Reader};
use metatf::parallel::{self, ChunkPlan};
use metatf::Opened;

use super::common::faults;

/// The `-j` option.
#[derive(Debug, Args, Clone, Copy)]
pub struct JobsArgs {
    /// Decode on N threads, the output in trace order and the same as with one; 0: one per
    /// core. The trace is cut at the checkpoints of its seek index (`TRACE.idx` or `--index`;
    /// `mtf index T` makes one) or else at its regions (the global region and each section
    /// decode independently): without an index, a trace of one large section decodes on one
    /// thread whatever N. `check`'s semantic pass and `stats` of the whole trace cut only at
    /// checkpoints whose analysis state the index holds (`mtf index T` writes them), each part
    /// analysed on its own thread from that state and the parts joined: the same figures and
    /// findings. By default, one per core for `dump` and `check --no-semantic`; one for
    /// `check`, `stats` and `export`, whose threads each hold a part's live blocks (memory:
    /// docs/stats.md). `-j 1`: one thread, nothing cut.
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
