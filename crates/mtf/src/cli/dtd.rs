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

/// `mtf dtd list`: each built-in DTD with the first sentence of its opening comment, in full
/// (wrapped under the name when it is long).
fn list() -> Result<(), Failure> {
    let mut out = StdoutSink::new();
    // One column for every name, as wide as the longest.
    let width = metatf::container::shipped_names()
        .map(str::len)
        .max()
        .unwrap_or(0)
        .max(20);
    for name in metatf::container::shipped_names() {
        let text = metatf::container::shipped_dtd(name).unwrap_or_default();
        let about = about(text);
        let lines = wrap(&about, 100usize.saturating_sub(width + 1).max(40));
        let mut first = true;
        for line in lines {
            if first {
                writeln!(out, "{name:<width$} {line}")?;
                first = false;
            } else {
                writeln!(out, "{:<width$} {line}", "")?;
            }
        }
        if first {
            writeln!(out, "{name}")?;
        }
    }
    Ok(out.finish()?)
}

/// The first sentence of a DTD's opening comment paragraph, without the `name.dtd --` or
/// `name.dtd:` it may start with and without a `Meta-TF version` line.
fn about(text: &str) -> String {
    let mut para = String::new();
    for line in text.lines() {
        let Some(l) = line.trim().strip_prefix("//") else {
            break;
        };
        let l = l.trim();
        if l.is_empty() {
            break;
        }
        if l.starts_with("Meta-TF version") {
            continue;
        }
        if !para.is_empty() {
            para.push(' ');
        }
        para.push_str(l);
    }
    let para = para.split_once(" -- ").map_or(para.as_str(), |(_, r)| r);
    let para = match para.split_once(": ") {
        Some((head, rest)) if head.ends_with(".dtd") && !head.contains(' ') => rest,
        _ => para,
    };
    // The first sentence: up to a full stop followed by a space (or the end).
    let end = para
        .match_indices(". ")
        .map(|(i, _)| i + 1)
        .next()
        .unwrap_or(para.len());
    para[..end].trim().to_string()
}

/// `text` in lines of at most `width` characters, broken at spaces outside `code spans`.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    let mut in_code = false;
    for w in text.split_whitespace() {
        match words.last_mut() {
            Some(last) if in_code => {
                last.push(' ');
                last.push_str(w);
            }
            _ => words.push(w.to_string()),
        }
        if w.matches('`').count() % 2 == 1 {
            in_code = !in_code;
        }
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in &words {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// Run `mtf dtd`; returns the exit status.
pub fn run(args: DtdArgs) -> i32 {
    let (file, show) = match args.command {
        DtdCommand::Check { file } => (file, false),
        DtdCommand::Show { file } => (file, true),
        DtdCommand::List => {
            return match list() {
                Ok(()) => EXIT_OK,
                Err(f) => {
                    if !f.message.is_empty() {
                        line_to_stderr(&f.message);
                    }
                    f.code
                }
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtd_list_descriptions_are_whole_sentences() {
        for name in metatf::container::shipped_names() {
            let a = about(metatf::container::shipped_dtd(name).unwrap_or_default());
            assert!(!a.is_empty(), "{name}");
            // Not cut after `as imported by` or a comma: the sentence ends where it ends.
            assert!(!a.ends_with(" by") && !a.ends_with(','), "{name}: {a}");
            let back = wrap(&a, 40).join(" ");
            assert_eq!(back, a.split_whitespace().collect::<Vec<_>>().join(" "));
        }
        assert_eq!(wrap("a `b c` d", 4), ["a", "`b c`", "d"]);
        let t = "// x.dtd -- Traces of X, as imported by\n// `mtf import --from x`. More.\n";
        assert_eq!(
            about(t),
            "Traces of X, as imported by `mtf import --from x`."
        );
    }
}
