//! Making untrusted text safe to show on a terminal.

// Design: a trace header's DTD name, the names in a DTD and the paths a user passes are shown
// in messages; a terminal interprets control characters (ESC sequences can rewrite the screen or
// the title) and bidi controls reorder what is displayed (CVE-2021-42574). Such characters are
// shown as escapes instead: `\n`, `\t`, `\r`, `\xHH` for the other C0 controls, DEL and bytes
// that are not UTF-8, `\u{HHHH}` for C1 controls, bidi controls and the line/paragraph
// separators; a backslash is shown as `\\`, so that every escape reads back to exactly one input.
// `\xHH` with HH < 80 is an ASCII control, with HH >= 80 a raw byte of invalid UTF-8: a C1
// control is a (valid) character and is written `\u{0080}`..`\u{009F}`, so the two never meet.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::Path;

/// Whether `c` is shown as an escape.
fn needs_escape(c: char) -> bool {
    c == '\\' || is_unsafe(c)
}

/// Whether `c` must never reach a terminal raw: a C0 or C1 control, DEL, a bidi control, a line
/// or paragraph separator.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\0'..='\x1f' | '\x7f' | '\u{80}'..='\u{9f}'
        // Bidi embeddings and overrides, isolates, marks, the Arabic letter mark.
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
        // Line and paragraph separators: some terminals and viewers break lines on them.
        | '\u{2028}' | '\u{2029}')
}

fn push_escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        if !needs_escape(c) {
            out.push(c);
            continue;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0'..='\x1f' | '\x7f' => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            _ => {
                let _ = write!(out, "\\u{{{:04X}}}", c as u32);
            }
        }
    }
}

/// `s` with every control character, bidi control and backslash escaped (see the module notes);
/// borrowed when nothing needs escaping.
///
/// ```
/// use metatf::escape::escape_for_terminal;
/// assert_eq!(escape_for_terminal("hatf10"), "hatf10");
/// assert_eq!(escape_for_terminal("a\x1b[2Jb\n"), "a\\x1B[2Jb\\n");
/// assert_eq!(escape_for_terminal("\u{202e}cod.exe"), "\\u{202E}cod.exe");
/// ```
pub fn escape_for_terminal(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    push_escaped(&mut out, s);
    Cow::Owned(out)
}

/// Like [`escape_for_terminal`] for bytes that may not be UTF-8: each byte of an invalid
/// sequence is shown as `\xHH`. Borrowed when the bytes are UTF-8 and nothing needs escaping.
///
/// ```
/// use metatf::io::escape_bytes_for_terminal;
/// assert_eq!(escape_bytes_for_terminal(b"ok"), "ok");
/// assert_eq!(escape_bytes_for_terminal(b"a\xffb\\"), "a\\xFFb\\\\");
/// ```
pub fn escape_bytes_for_terminal(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return escape_for_terminal(s);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        push_escaped(&mut out, chunk.valid());
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02X}");
        }
    }
    Cow::Owned(out)
}

/// A path escaped for the terminal: on Unix its raw bytes go through
/// [`escape_bytes_for_terminal`], elsewhere its lossy UTF-8 form through
/// [`escape_for_terminal`].
pub fn escape_path(path: &Path) -> Cow<'_, str> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        escape_bytes_for_terminal(path.as_os_str().as_bytes())
    }
    #[cfg(not(unix))]
    {
        match path.to_string_lossy() {
            Cow::Borrowed(s) => escape_for_terminal(s),
            Cow::Owned(s) => Cow::Owned(escape_for_terminal(&s).into_owned()),
        }
    }
}

/// The inverse of [`escape_bytes_for_terminal`], for tests: `None` on a malformed escape.
#[cfg(test)]
pub(crate) fn unescape(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next()? {
            '\\' => out.push(b'\\'),
            'n' => out.push(b'\n'),
            't' => out.push(b'\t'),
            'r' => out.push(b'\r'),
            'x' => {
                let hex: String = chars.by_ref().take(2).collect();
                out.push(u8::from_str_radix(&hex, 16).ok()?);
            }
            'u' => {
                if chars.next()? != '{' {
                    return None;
                }
                let hex: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let c = char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?;
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn is_bidi(c: char) -> bool {
        matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
    }

    fn assert_safe(s: &str) {
        for c in s.chars() {
            assert!(!c.is_control(), "control {c:?} in {s:?}");
            assert!(!is_bidi(c), "bidi {c:?} in {s:?}");
        }
    }

    #[test]
    fn borrows_when_clean() {
        assert!(matches!(
            escape_for_terminal("héllo wörld ✓"),
            Cow::Borrowed(_)
        ));
        assert!(matches!(
            escape_bytes_for_terminal(b"plain"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn escapes_each_class() {
        assert_eq!(escape_for_terminal("\n\t\r\0\x7f"), "\\n\\t\\r\\x00\\x7F");
        assert_eq!(escape_for_terminal("\u{85}\u{9b}"), "\\u{0085}\\u{009B}");
        assert_eq!(
            escape_for_terminal("\u{200e}\u{200f}\u{61c}\u{2066}\u{2069}\u{202a}"),
            "\\u{200E}\\u{200F}\\u{061C}\\u{2066}\\u{2069}\\u{202A}"
        );
        assert_eq!(escape_for_terminal("C:\\x41"), "C:\\\\x41");
        assert_eq!(escape_bytes_for_terminal(b"\xc3"), "\\xC3");
        // A C1 control (valid UTF-8) and the raw byte of the same value read differently.
        assert_eq!(escape_bytes_for_terminal("\u{80}".as_bytes()), "\\u{0080}");
        assert_eq!(escape_bytes_for_terminal(b"\x80"), "\\x80");
    }

    #[test]
    fn paths_are_escaped() {
        assert_eq!(escape_path(Path::new("a/b\x1b.mtf")), "a/b\\x1B.mtf");
    }

    proptest! {
        #[test]
        fn str_escape_is_safe_and_reversible(s in any::<String>()) {
            let e = escape_for_terminal(&s);
            assert_safe(&e);
            prop_assert_eq!(unescape(&e), Some(s.into_bytes()));
        }

        #[test]
        fn byte_escape_is_safe_and_reversible(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let e = escape_bytes_for_terminal(&b);
            assert_safe(&e);
            prop_assert_eq!(unescape(&e), Some(b));
        }

        #[test]
        fn control_heavy_strings_round_trip(
            s in proptest::string::string_regex("[\\x00-\\x20\\x7f-\\u{a0}\\u{200e}\\u{202a}-\\u{202e}\\u{2066}-\\u{2069}\\\\a-c]{0,32}").unwrap()
        ) {
            let e = escape_for_terminal(&s);
            assert_safe(&e);
            prop_assert_eq!(unescape(&e), Some(s.into_bytes()));
        }
    }
}
