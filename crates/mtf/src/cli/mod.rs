//! The `mtf` command line: one file per subcommand; `main.rs` only calls [`main`].

// Design: the helpers that several subcommands share (`common`, `jobs`, `progress`) are written
// once for the whole set; a build without some of the optional subcommands (`--no-default-features
// --features cli,compression`, what benches/compare.sh builds) leaves a few of them unused, which
// is expected there and not worth a `cfg` on each helper.
#![cfg_attr(
    not(all(
        feature = "parquet",
        feature = "import",
        feature = "flamegraph",
        feature = "plot",
        feature = "compression"
    )),
    allow(dead_code)
)]

mod dtd;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod blocks;
mod check;
mod common;
mod compact;
mod diff;
mod dump;
#[cfg(feature = "flamegraph")]
mod flamegraph;
mod index;
mod info;
mod jobs;
mod pack;
#[cfg(feature = "plot")]
mod plot;
mod progress;
mod replay;
#[cfg(feature = "plot")]
mod report;
mod seek;
mod shell;
mod simulate;
#[cfg(feature = "compression")]
mod size_report;
mod sql;
mod stats;
mod write;

use common::line_to_stderr;
#[cfg(feature = "import")]
mod export;
#[cfg(feature = "import")]
mod import;

mod exit;
pub use exit::{EXIT_BAD_DTD, EXIT_INVALID_TRACE, EXIT_OK, EXIT_USAGE};

/// mtf — read, check, dump and write Meta-TF traces.
#[derive(Debug, Parser)]
#[command(name = "mtf", version, about, long_about = None)]
pub struct Cli {
    /// When to use colours on standard error (`NO_COLOR` set means `never` under `auto`).
    #[arg(long, global = true, value_enum, default_value_t = common::ColorMode::Auto)]
    pub color: common::ColorMode,
    /// No progress bar (and for `check`, only the problems and the verdict).
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show a trace's header, sections and records per type.
    Info(info::InfoArgs),
    /// Print every record, one per line, with field names and interpreted values.
    Dump(dump::DumpArgs),
    /// Decode the whole trace and report every problem.
    Check(check::CheckArgs),
    /// Build the seek index beside a trace (`TRACE.idx`), with which `dump --from`/`--skip`
    /// start in the middle; `--check` verifies one.
    Index(index::IndexArgs),
    /// Turn `mtf dump` output (text or JSON lines) back into a binary trace.
    Pack(pack::PackArgs),
    /// Check or show a DTD.
    Dtd(dtd::DtdArgs),
    /// Heap statistics: peak live bytes and when, leaks, lifetimes, sizes, top sites; records
    /// and integer fields per type (for every DTD).
    Stats(stats::StatsArgs),
    /// Where the bytes come from: a flame graph (SVG) of allocations, bytes, temporary
    /// allocations, the peak or leaks by call stack or calling context, at any moment; or the
    /// folded stacks flamegraph.pl reads (for heaptrack, those heaptrack_print -F writes).
    #[cfg(feature = "flamegraph")]
    Flamegraph(flamegraph::FlamegraphArgs),
    /// Compare two traces' heap figures (same or different DTDs), sorted by change.
    Diff(diff::DiffArgs),
    /// Draw live bytes and blocks over a trace (the peak marked), the size and lifetime
    /// histograms and the top sites, as SVG or PNG.
    #[cfg(feature = "plot")]
    Plot(plot::PlotArgs),
    /// Write one self-contained HTML page with a trace's heap summary, tables and charts.
    #[cfg(feature = "plot")]
    Report(report::ReportArgs),
    /// Re-encode a trace with the widths and interpretations that make it small (`encode` is
    /// the old name, still accepted).
    #[command(alias = "encode")]
    Compact(compact::CompactArgs),
    /// Measure a trace's size in the paper's Table 4 forms, plain and compressed.
    #[cfg(feature = "compression")]
    SizeReport(size_report::SizeReportArgs),
    /// Import foreign text traces with a format mapping (docs/mappings.md).
    #[cfg(feature = "import")]
    Import(import::ImportArgs),
    /// Write an imported trace back in its foreign format, byte for byte; or, with
    /// `--to parquet` or `--to arrow`, any trace as columnar files: one per record type, and
    /// the heap tables `events` and `blocks` (`--table`); or, with `--to heaptrack`, `pprof`,
    /// `speedscope`, `dhat` or `chrome`, any trace's heap for those viewers (docs/formats.md).
    #[cfg(feature = "import")]
    Export(export::ExportArgs),
    /// SQL over raw traces (Apache DataFusion): the tables `records`, `events`, `blocks` and one
    /// per record type, read from the traces with no conversion step (built with the feature
    /// `sql`).
    Sql(sql::SqlArgs),
    /// Replay a trace's allocation events against real allocators (system, jemalloc,
    /// mimalloc, or a library by path), each in a fresh process, as fast as possible or at the
    /// recorded times: speed, latency, RSS beside live bytes, page faults.
    Replay(replay::ReplayArgs),
    /// Simulate classic allocator policies over a trace's allocation events: heap extent and
    /// utilisation (peak live payload / peak heap).
    Simulate(simulate::SimulateArgs),
    /// One measured replay (run by `mtf replay` in a fresh process).
    #[command(hide = true)]
    ReplayChild(replay::ChildArgs),
    /// Print a completion script for a shell (`mtf completions bash > /etc/bash_completion.d/mtf`).
    Completions(shell::CompletionsArgs),
    /// Print the manual page (roff), or write one page per subcommand into a folder.
    Man(shell::ManArgs),
}

/// Sets up the process before any file is touched:
///
/// * a `SIGBUS` guard, so that a mapped trace that shrinks while it is read ends in a message
///   and status 2 rather than a silent crash;
/// * `SIGXFSZ` ignored, so that an output over the file-size limit (`ulimit -f`) is an I/O
///   error (`EFBIG`, status 2, naming the file) rather than a killed process;
/// * a thread that waits for SIGINT and SIGTERM, removes every temporary file of this process
///   (`metatf::io::remove_temp_files`) and exits with 130 or 143, as a shell reports a process
///   killed by those signals.
// Design: a signal handler may neither lock nor allocate, so the temporary files are removed
// from an ordinary thread that signal-hook wakes (see src/io/temp.rs).
#[allow(unsafe_code)] // `signal(SIGXFSZ, SIG_IGN)`: docs/architecture.md, *Unsafe code*
#[cfg(unix)]
fn install_signal_handling() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let _ = metatf::io::install_sigbus_guard();
    // SAFETY: setting a signal's disposition to SIG_IGN has no other effect on the process;
    // this runs first thing in `main`, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // Without the watcher (it cannot fail in practice), a signal kills the process as usual.
    if let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) {
        std::thread::spawn(move || {
            if let Some(signal) = signals.forever().next() {
                metatf::io::remove_temp_files();
                std::process::exit(128 + signal);
            }
        });
    }
}

/// The command line's definition, with the exit-status line under every subcommand's help.
pub fn command() -> clap::Command {
    let cmd = exit::with_exit_help(Cli::command());
    // The environment, under `mtf --help` (and `mtf man`): the long help only.
    cmd.after_long_help(format!("{}\n\n{ENVIRONMENT}", exit::EXIT_HELP))
}

/// The environment variables `mtf` reads, for `mtf --help`.
const ENVIRONMENT: &str = "Environment:
  MTF_DTD_PATH     folders (separated like PATH) where a trace's DTD is looked for after the
                   trace's own folder (docs/format.md §10)
  MTF_STREAM_WINDOW  bytes of a piped, standard-input or compressed trace decoded at once by
                   check, dump, stats, info, plot, report and diff, which read it as it
                   arrives (default 4194304, at most 1073741824; 0: spool it instead, as the
                   other commands do)
  TMPDIR           where a piped, standard-input or compressed trace that is not streamed is
                   spooled beyond MTF_SPOOL_ABOVE bytes (an unlinked temporary file; /tmp when
                   unset)
  MTF_SPOOL_ABOVE  bytes of such a trace kept in memory before spooling (default 4194304)
  NO_COLOR         no colours on standard error under --color auto";

/// Run the command line; returns the process exit status.
pub fn main() -> i32 {
    #[cfg(unix)]
    install_signal_handling();
    let parsed = command()
        .color(shell::clap_color())
        .try_get_matches()
        .and_then(|m| Ok((Cli::from_arg_matches(&m)?, m)));
    let (cli, matches) = match parsed {
        Ok(c) => c,
        // `--help` and `--version` are printed as clap prints them; a usage error in the one
        // style of every error (common.rs).
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return EXIT_OK;
        }
        // A subcommand group named alone (`mtf dtd`): its help as clap lays it out, with
        // status 2 (the help is the message; folding it into one line made it unreadable).
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return EXIT_USAGE;
        }
        Err(e) => {
            common::to_stderr(&common::usage_error_text(&e.render().to_string()));
            return EXIT_USAGE;
        }
    };
    common::set_globals(cli.color, cli.quiet);
    if let Err(f) = guard(&matches) {
        line_to_stderr(&f.message);
        return f.code;
    }
    let result = match cli.command {
        Command::Dtd(args) => return dtd::run(args),
        Command::Info(a) => info::run(&a),
        Command::Dump(a) => dump::run(&a),
        Command::Check(a) => check::run(&a),
        Command::Index(a) => index::run(&a),
        Command::Pack(a) => pack::run(&a),
        Command::Compact(a) => compact::run(&a),
        Command::Stats(a) => stats::run(&a),
        #[cfg(feature = "flamegraph")]
        Command::Flamegraph(a) => flamegraph::run(&a),
        Command::Diff(a) => diff::run(&a),
        #[cfg(feature = "plot")]
        Command::Plot(a) => plot::run(&a),
        #[cfg(feature = "plot")]
        Command::Report(a) => report::run(&a),
        #[cfg(feature = "compression")]
        Command::SizeReport(a) => size_report::run(&a),
        #[cfg(feature = "import")]
        Command::Import(a) => import::run(&a),
        #[cfg(feature = "import")]
        Command::Export(a) => export::run(&a),
        Command::Sql(a) => sql::run(&a),
        Command::Replay(a) => replay::run(&a),
        Command::Simulate(a) => simulate::run(&a),
        Command::ReplayChild(a) => replay::run_child(&a),
        Command::Completions(a) => shell::completions(&a),
        Command::Man(a) => shell::man(&a),
    };
    match result {
        Ok(code) => common::final_status(code),
        Err(f) => {
            if !f.message.is_empty() {
                line_to_stderr(&f.message);
            }
            f.code
        }
    }
}

/// The subcommands that write a file: [`guard`] registers the files they read.
const WRITERS: [&str; 12] = [
    "index", "pack", "compact", "stats", "diff", "plot", "report", "import", "export", "replay",
    "simulate", "sql",
];

/// Registers the files a writing subcommand reads (every path it was given but `--output`, the
/// DTDs, maps and seek indexes included) and refuses an output that is one of them, before any
/// work ([`common::guard_files`]): no command writes over one of its inputs.
fn guard(matches: &clap::ArgMatches) -> Result<(), common::Failure> {
    use std::path::{Path, PathBuf};
    let Some((_, m)) = matches.subcommand().filter(|(n, _)| WRITERS.contains(n)) else {
        return Ok(());
    };
    let (mut inputs, mut outputs): (Vec<&Path>, Vec<&Path>) = (Vec::new(), Vec::new());
    for id in m.ids() {
        let Ok(Some(paths)) = m.try_get_many::<PathBuf>(id.as_str()) else {
            continue;
        };
        let to = if id.as_str() == "output" {
            &mut outputs
        } else {
            &mut inputs
        };
        to.extend(paths.map(PathBuf::as_path));
    }
    common::guard_files(&inputs, &outputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subcommand_help_ends_with_the_exit_status_line() {
        fn walk(cmd: &clap::Command, path: &str) {
            let help = cmd.clone().render_long_help().to_string();
            assert!(
                help.contains(exit::EXIT_HELP),
                "{path}: no exit-status line"
            );
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()));
            }
        }
        walk(&command(), "mtf");
    }

    #[test]
    fn the_main_help_names_the_environment() {
        let help = command().render_long_help().to_string();
        for var in [
            "MTF_DTD_PATH",
            "MTF_STREAM_WINDOW",
            "TMPDIR",
            "MTF_SPOOL_ABOVE",
            "NO_COLOR",
        ] {
            assert!(help.contains(var), "{var} missing from mtf --help");
        }
        assert!(help.contains(exit::EXIT_HELP));
    }

    #[test]
    fn every_subcommand_that_takes_dtd_takes_d() {
        fn walk(cmd: &clap::Command, found: &mut usize) {
            for a in cmd.get_arguments() {
                if a.get_long() == Some("dtd") {
                    assert_eq!(
                        a.get_short(),
                        Some('d'),
                        "{}: --dtd without -d",
                        cmd.get_name()
                    );
                    *found += 1;
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, found);
            }
        }
        let mut found = 0;
        walk(&command(), &mut found);
        assert!(found >= 8, "only {found} subcommands take --dtd");
        command().debug_assert();
    }
}
