//! The `mtf` command line: one file per subcommand; `main.rs` only calls [`main`].

pub mod dtd;

use clap::{Parser, Subcommand};

pub mod check;
pub mod common;
pub mod dump;
#[cfg(feature = "import")]
pub mod export;
#[cfg(feature = "import")]
pub mod import;
pub mod info;
pub mod pack;

/// Exit status: success (trace or DTD valid).
pub const EXIT_OK: i32 = 0;
/// Exit status: the trace is invalid (`check` found problems, or `dump` met a bad record).
pub const EXIT_INVALID_TRACE: i32 = 1;
/// Exit status: I/O error or bad usage.
pub const EXIT_USAGE: i32 = 2;
/// Exit status: the DTD is unusable.
pub const EXIT_BAD_DTD: i32 = 3;

/// mtf — read, check, dump and write Meta-TF traces.
#[derive(Debug, Parser)]
#[command(name = "mtf", version, about, long_about = None, after_help = EXIT_HELP)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

const EXIT_HELP: &str =
    "Exit status: 0 valid, 1 invalid trace, 2 I/O or usage error, 3 unusable DTD.";

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show a trace's header, sections and records per type.
    #[command(after_help = EXIT_HELP)]
    Info(info::InfoArgs),
    /// Print every record, one per line, with field names and interpreted values.
    #[command(after_help = EXIT_HELP)]
    Dump(dump::DumpArgs),
    /// Decode the whole trace and report every problem.
    #[command(after_help = EXIT_HELP)]
    Check(check::CheckArgs),
    /// Turn `mtf dump` output (text or JSON lines) back into a binary trace.
    #[command(after_help = EXIT_HELP)]
    Pack(pack::PackArgs),
    /// Check or show a DTD.
    #[command(after_help = EXIT_HELP)]
    Dtd(dtd::DtdArgs),
    /// Import foreign text traces with a format mapping (docs/mappings.md).
    #[cfg(feature = "import")]
    Import(import::ImportArgs),
    /// Write an imported trace back in its foreign format, byte for byte.
    #[cfg(feature = "import")]
    Export(export::ExportArgs),
}

/// Run the command line; returns the process exit status.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { EXIT_USAGE } else { EXIT_OK };
        }
    };
    let result = match cli.command {
        Command::Dtd(args) => return dtd::run(args),
        Command::Info(a) => info::run(&a),
        Command::Dump(a) => dump::run(&a),
        Command::Check(a) => check::run(&a),
        Command::Pack(a) => pack::run(&a),
        #[cfg(feature = "import")]
        Command::Import(a) => import::run(&a),
        #[cfg(feature = "import")]
        Command::Export(a) => export::run(&a),
    };
    match result {
        Ok(code) => code,
        Err(f) => {
            if !f.message.is_empty() {
                eprintln!("{}", f.message);
            }
            f.code
        }
    }
}
