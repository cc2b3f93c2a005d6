//! The listing of `mtf dtd list`: each DTD built into `mtf`, with the first sentence of its
//! opening comment.

use crate::container::{shipped_dtd, shipped_names};

/// The text of `mtf dtd list`: one line per built-in DTD, its name in a column as wide as the
/// longest (at least 20), then the first sentence of its opening comment in full, wrapped under
/// the name when it is long (lines of at most 100 characters).
pub fn shipped_listing() -> String {
    let width = shipped_names().map(str::len).max().unwrap_or(0).max(20);
    let mut out = String::new();
    for name in shipped_names() {
        let lines = wrap(
            &about(shipped_dtd(name).unwrap_or_default()),
            100usize.saturating_sub(width + 1).max(40),
        );
        if lines.is_empty() {
            out.push_str(name);
            out.push('\n');
        }
        for (i, line) in lines.iter().enumerate() {
            let head = if i == 0 { name } else { "" };
            out.push_str(&format!("{head:<width$} {line}\n"));
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtd_list_descriptions_are_whole_sentences() {
        for name in crate::container::shipped_names() {
            let a = about(crate::container::shipped_dtd(name).unwrap_or_default());
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
