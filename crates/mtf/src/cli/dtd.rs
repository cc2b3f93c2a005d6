//! `mtf dtd check FILE`, `mtf dtd show FILE|NAME` and `mtf dtd list`.

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
        /// The DTD file, or the name of a built-in DTD (`mtf dtd list`).
        file: PathBuf,
    },
    /// List the DTDs built into `mtf`.
    List,
}

/// The built-in DTD a `show` argument names, when no file of that name exists: `hatf10.dtd`
/// or `hatf10`.
fn builtin(file: &std::path::Path) -> Option<(&'static str, &'static str)> {
    if file.exists() {
        return None;
    }
    let arg = file.to_str()?;
    metatf::container::shipped_names()
        .find(|n| *n == arg || n.strip_suffix(".dtd") == Some(arg))
        .and_then(|n| Some((n, metatf::container::shipped_dtd(n)?)))
}

/// Run `mtf dtd`; returns the exit status.
pub fn run(args: DtdArgs) -> i32 {
    let (file, show) = match args.command {
        DtdCommand::Check { file } => (file, false),
        DtdCommand::Show { file } => (file, true),
        DtdCommand::List => return print(&metatf::text::shipped_listing()),
    };
    let loaded = match builtin(&file) {
        Some((name, text)) => dtd::parse_str(name, text).map_err(DtdLoadError::from),
        None => dtd::load(&file),
    };
    let loaded = match loaded {
        Ok(l) => l,
        Err(e @ DtdLoadError::Io { .. }) => {
            to_stderr(&render(&e));
            return EXIT_USAGE;
        }
        Err(
            e @ (DtdLoadError::TooLarge { .. }
            | DtdLoadError::NotUtf8 { .. }
            | DtdLoadError::NotADtd { .. }),
        ) => {
            to_stderr(&render(&e));
            return EXIT_BAD_DTD;
        }
        Err(e @ DtdLoadError::Invalid(_)) => {
            // Printed as every other command prints a DTD's errors.
            return super::common::dtd_failure(&e).code;
        }
    };
    for w in &loaded.warnings {
        to_stderr(&render(w));
    }
    if show {
        print(&metatf::text::schema_listing(&loaded.schema))
    } else {
        let summary = metatf::text::schema_summary(&loaded.schema);
        print(&format!("{}: ok ({summary})\n", escape_path(&file)))
    }
}

/// Writes `text` to standard output; the exit status. A closed pipe (`mtf dtd show D | head
/// -1`) ends quietly with status 0; a full disk is an I/O error, status 2.
fn print(text: &str) -> i32 {
    let mut out = StdoutSink::new();
    let printed = (|| -> Result<(), Failure> {
        out.write_all(text.as_bytes())?;
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
