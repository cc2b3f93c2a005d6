//! The text form of a check's counts and verdict (`mtf check`'s last lines).

use std::fmt::Write as _;

use crate::analysis::Severity;
use crate::escape::escape_path;
use crate::Opened;

use super::{CheckOptions, CheckReport, Verdict};

impl CheckReport {
    /// The records checked per type, the findings of the semantic pass per kind, and how many
    /// problems and pieces of information were not shown. With `quiet`, only the problems not
    /// shown.
    pub fn summary_text(&self, o: &Opened, options: &CheckOptions, quiet: bool) -> String {
        let mut out = String::new();
        if !quiet {
            let checked: u64 = self.per_type.iter().sum();
            let _ = writeln!(out, "records checked: {checked}");
            for (rid, n) in self.per_type.iter().enumerate() {
                if *n > 0 {
                    let _ = writeln!(out, "  {:<24} {n:>12}", o.schema().record(rid as u32).name);
                }
            }
        }
        if self.semantic && !quiet {
            let infos = self.count(Severity::Info);
            let _ = writeln!(
                out,
                "semantic checks (analysis/{}): {} problem(s), {infos} piece(s) of information",
                o.schema().analysis.version,
                self.count(Severity::Error)
            );
            for (kind, sev, n) in &self.findings {
                let _ = writeln!(out, "  {:<32} {:<6} {n:>12}", kind.name(), sev.keyword());
            }
            if infos > self.infos_shown {
                let _ = writeln!(
                    out,
                    "… {} more piece(s) of information not shown (--max-info {})",
                    infos - self.infos_shown,
                    options.max_info
                );
            }
        } else if !options.semantic && self.declared && !quiet {
            let _ = writeln!(out, "semantic checks skipped (--no-semantic)");
        }
        if self.problems > self.reported {
            let _ = writeln!(
                out,
                "… {} more problem(s) not shown (--max-errors {})",
                self.problems - self.reported,
                options.max_errors
            );
        }
        out
    }

    /// The verdict's line for the trace shown as `path` (already escaped for a terminal).
    pub fn verdict_text(&self, path: &str, options: &CheckOptions) -> String {
        match self.verdict {
            Verdict::Valid => format!("{path}: valid\n"),
            // Only the limit: the trace decodes, but its declarations were not all checked.
            Verdict::Incomplete => format!(
                "{path}: INCOMPLETE, decodes, but semantic checks stopped at --max-ids {}\n",
                options.max_ids
            ),
            Verdict::IndexInvalid => {
                // Only the index is wrong: the trace itself is not called invalid. The command
                // that rebuilds the index checked: with `--index FILE`, that file.
                let rebuild = match options
                    .seek
                    .index
                    .as_deref()
                    .filter(|i| i.as_os_str() != "-")
                {
                    // An index named with --index that does not exist: made, not rebuilt.
                    Some(i) if !i.exists() => {
                        let i = escape_path(i);
                        format!("there is no {i}: make it with `mtf index {path} -o {i}`")
                    }
                    // A file that is not an index at all (the trace itself, named by mistake):
                    // neither rebuilt over nor deleted, it may be the user's data.
                    Some(i) if !looks_like_index(i) => {
                        let i = escape_path(i);
                        format!(
                            "{i} is not a seek index; name the trace's index, or make one with \
                             `mtf index {path} -o FILE`"
                        )
                    }
                    Some(i) => {
                        let i = escape_path(i);
                        format!("rebuild it with `mtf index {path} -o {i}`, or delete {i}")
                    }
                    None => format!("rebuild it with `mtf index {path}`, or delete it"),
                };
                format!("{path}: valid, but its seek index is not: {rebuild}\n")
            }
            Verdict::Invalid => format!("{path}: INVALID, {} problem(s)\n", self.problems),
        }
    }
}

/// Whether `path` is a regular file that starts as a seek index does ([`crate::index::MAGIC`]):
/// one that may be rebuilt over or deleted.
fn looks_like_index(path: &std::path::Path) -> bool {
    use std::io::Read;
    if !path.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut head = [0u8; 4];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| head == crate::index::MAGIC)
}
