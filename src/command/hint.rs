//! What a file that is not a Meta-TF trace looks like, for the help of the error that refuses
//! it (`mtf stats systemui.txt`): the text form, which `mtf pack` writes, or a foreign trace,
//! which `mtf import` converts.

use std::path::Path;

use crate::escape::escape_path;

/// The help for the trace at `path` (`-`: standard input) whose first bytes, `found`, are not
/// Meta-TF's magic: what to run on it, or `None` when it looks like nothing known.
pub fn not_a_trace_help(path: &Path, found: &[u8]) -> Option<String> {
    let stdin = path.as_os_str() == "-";
    let name = if stdin { "-".into() } else { escape_path(path) };
    let stem = path
        .file_stem()
        .filter(|_| !stdin)
        .map(|s| escape_path(Path::new(s)).into_owned())
        .unwrap_or_else(|| "trace".to_string());
    // Never the input's own name (`x.mtf` that is not a trace).
    let stem = if path.extension().is_some_and(|x| x == "mtf") {
        format!("{stem}-converted")
    } else {
        stem
    };
    let import = format!(
        "convert it with `mtf import {name} -o {stem}.mtf` (`mtf import --list` names the \
         formats it reads)"
    );
    if found.starts_with(b"%mtf") || found.starts_with(b"{\"mt") {
        return Some(format!(
            "this is the text form of a trace (`mtf dump`'s): write the trace with \
             `mtf pack {name} -o {stem}.mtf`"
        ));
    }
    if found.starts_with(b"PK\x03\x04") {
        return Some(format!(
            "this is a ZIP archive, not Meta-TF: if it holds a foreign trace, {import}"
        ));
    }
    let sample = if stdin { None } else { head(path, found) };
    let sample = sample.as_deref().unwrap_or(found);
    (!sample.is_empty() && looks_like_text(sample)).then(|| {
        format!(
            "this looks like a text trace, not Meta-TF: {import}; if it is `mtf dump`'s text \
             form, `mtf pack {name} -o {stem}.mtf` writes it"
        )
    })
}

/// The first 512 bytes of the file at `path`, if they start with `found`: text is printable
/// ASCII and whitespace throughout (a damaged trace has binary bytes after its magic).
fn head(path: &Path, found: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    let f = std::fs::File::open(path).ok()?;
    let mut head = Vec::new();
    (f.take(512).read_to_end(&mut head).is_ok() && head.starts_with(found)).then_some(head)
}

/// Whether the first bytes of a file are text: UTF-8 (the last character may be cut) without
/// control characters other than whitespace.
fn looks_like_text(b: &[u8]) -> bool {
    let valid = match std::str::from_utf8(b) {
        Ok(s) => s,
        // Cut inside a character at the end of the sample: the part before it.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&b[..e.valid_up_to()]).unwrap_or("")
        }
        Err(_) => return false,
    };
    !valid.is_empty() && valid.chars().all(|c| !c.is_control() || c.is_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_form_zip_and_text_get_their_help() {
        let p = Path::new("x.mtf");
        assert!(not_a_trace_help(p, b"%mtf")
            .unwrap()
            .contains("mtf pack x.mtf -o x-converted.mtf"));
        assert!(not_a_trace_help(Path::new("-"), b"PK\x03\x04")
            .unwrap()
            .contains("ZIP"));
        assert!(not_a_trace_help(Path::new("-"), b"a 1 ")
            .unwrap()
            .contains("mtf import - -o trace.mtf"));
        assert!(not_a_trace_help(Path::new("-"), b"\x00\x01\x02\x03").is_none());
    }
}
