//! `mtf dtd check FILE` and `mtf dtd show FILE`.

// Design: the output of `show` is built by `metatf::text::schema_listing`, a pure function of the schema, so
// that it can be golden-tested without running the binary. Diagnostics go to stderr, coloured
// only when stderr is a terminal; otherwise they are plain Unicode, byte-for-byte stable.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{EXIT_BAD_DTD, EXIT_OK, EXIT_USAGE};
use metatf::dtd::{self, DtdLoadError};

use metatf::io::{escape_path, StdoutSink};

use super::common::{line_to_stderr, render, to_stderr, Failure};

/// `mtf dtd …`: check or show a DTD.
#[derive(Debug, Args)]
pub struct DtdArgs {
    /// What to do with the DTD.
    #[command(subcommand)]
    pub command: DtdCommand,
}

/// The `mtf dtd` subcommands.
#[derive(Debug, Subcommand)]
pub enum DtdCommand {
    /// Check a DTD: exit 0 if it is usable, else print every error and exit 3.
    Check {
        /// The DTD file.
        file: PathBuf,
    },
    /// Print every record type of every scope, with its slots and properties.
    Show {
        /// The DTD file.
        file: PathBuf,
    },
}

/// Run `mtf dtd`; returns the exit status.
pub fn run(args: DtdArgs) -> i32 {
    let (file, show) = match args.command {
        DtdCommand::Check { file } => (file, false),
        DtdCommand::Show { file } => (file, true),
    };
    let loaded = match dtd::load(&file) {
        Ok(l) => l,
        Err(e @ DtdLoadError::Io { .. }) => {
            line_to_stderr(&format!("mtf: {e}"));
            return EXIT_USAGE;
        }
        Err(e @ (DtdLoadError::TooLarge { .. } | DtdLoadError::NotUtf8 { .. })) => {
            line_to_stderr(&format!("mtf: {e}"));
            return EXIT_BAD_DTD;
        }
        Err(DtdLoadError::Invalid(errs)) => {
            to_stderr(&render(&errs));
            return EXIT_BAD_DTD;
        }
    };
    for w in &loaded.warnings {
        to_stderr(&render(w));
    }
    // A closed pipe (`mtf dtd show D | head -1`) ends quietly with status 0; a full disk is
    // an I/O error, status 2.
    let mut out = StdoutSink::new();
    let printed = (|| -> Result<(), Failure> {
        if show {
            out.write_all(metatf::text::schema_listing(&loaded.schema).as_bytes())?;
        } else {
            let summary = metatf::text::schema_summary(&loaded.schema);
            writeln!(out, "{}: ok ({summary})", escape_path(&file))?;
        }
        Ok(out.finish()?)
    })();
    match printed {
        Ok(()) => EXIT_OK,
        Err(f) => {
            if !f.message.is_empty() {
                line_to_stderr(&f.message);
            }
            f.code
        }
    }
}
