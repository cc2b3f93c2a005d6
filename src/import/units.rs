//! Cutting input into units: lines (with their line end kept apart) or XML tags and text runs.
//! Streaming: one unit is held at a time, capped at [`MAX_UNIT`] bytes.

use std::io::{self, BufRead};

/// The longest unit accepted (a longer line or tag is an input error).
pub const MAX_UNIT: usize = 64 << 20;

/// The error inside the `io::Error` of a unit longer than [`MAX_UNIT`]: the input, not the
/// reading, is at fault.
#[derive(Debug)]
pub(crate) struct TooLong(pub(crate) &'static str);

impl std::fmt::Display for TooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} longer than {MAX_UNIT} bytes", self.0)
    }
}

impl std::error::Error for TooLong {}

/// A line end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eol {
    /// `\n`.
    Lf,
    /// `\r\n`.
    CrLf,
    /// None: the last line of a file without a final line end.
    None,
}

impl Eol {
    /// The bytes.
    pub fn bytes(self) -> &'static [u8] {
        match self {
            Eol::Lf => b"\n",
            Eol::CrLf => b"\r\n",
            Eol::None => b"",
        }
    }

    /// The code stored in a part record: 0 LF, 1 CRLF.
    pub fn code(self) -> u64 {
        match self {
            Eol::CrLf => 1,
            _ => 0,
        }
    }

    /// From the stored code.
    pub fn from_code(c: u64) -> Eol {
        if c == 1 {
            Eol::CrLf
        } else {
            Eol::Lf
        }
    }
}

/// A source of units.
pub struct UnitReader<R> {
    r: R,
    xml: bool,
    /// The current unit, including its line end in line mode.
    pub buf: Vec<u8>,
    /// 1-based line where the current unit starts.
    pub line: u64,
    /// 1-based column (byte) where the current unit starts.
    pub col: u64,
    next_line: u64,
    next_col: u64,
    /// Bytes read so far.
    pub bytes: u64,
}

impl<R: BufRead> UnitReader<R> {
    /// A reader of lines (`xml = false`) or XML units.
    pub fn new(r: R, xml: bool) -> UnitReader<R> {
        UnitReader {
            r,
            xml,
            buf: Vec::with_capacity(256),
            line: 1,
            col: 1,
            next_line: 1,
            next_col: 1,
            bytes: 0,
        }
    }

    /// Read the next unit into `buf`; `false` at the end of input.
    pub fn next_unit(&mut self) -> io::Result<bool> {
        self.buf.clear();
        self.line = self.next_line;
        self.col = self.next_col;
        if self.xml {
            self.read_xml()?;
        } else {
            read_until_capped(&mut self.r, b'\n', &mut self.buf)?;
        }
        if self.buf.is_empty() {
            return Ok(false);
        }
        self.bytes += self.buf.len() as u64;
        // A line unit holds at most its final newline; an XML unit may hold several.
        let nl = if self.xml {
            self.buf.iter().filter(|&&c| c == b'\n').count() as u64
        } else {
            (self.buf.last() == Some(&b'\n')) as u64
        };
        if nl == 0 {
            self.next_col += self.buf.len() as u64;
        } else {
            self.next_line += nl;
            let last = self.buf.iter().rposition(|&c| c == b'\n').unwrap_or(0);
            self.next_col = (self.buf.len() - last) as u64;
        }
        Ok(true)
    }

    /// Split the current line unit into content and line end.
    pub fn split_line(&self) -> (&[u8], Eol) {
        let b = &self.buf[..];
        if let Some(s) = b.strip_suffix(b"\r\n") {
            (s, Eol::CrLf)
        } else if let Some(s) = b.strip_suffix(b"\n") {
            (s, Eol::Lf)
        } else {
            (b, Eol::None)
        }
    }

    fn read_xml(&mut self) -> io::Result<()> {
        // A tag runs from `<` to the first `>` outside quotes (quotes count only in start and
        // end tags, `<name …>`); text runs up to the next `<`.
        let mut first = true;
        let mut tag = false;
        let mut quote = 0u8;
        let mut quotes_count = false;
        loop {
            let avail = self.r.fill_buf()?;
            if avail.is_empty() {
                return Ok(());
            }
            let mut used = 0;
            let mut done = false;
            for (i, &c) in avail.iter().enumerate() {
                if first {
                    first = false;
                    tag = c == b'<';
                    if tag {
                        quotes_count = avail.get(i + 1).is_some_and(|n| n.is_ascii_alphabetic());
                        used = i + 1;
                        continue;
                    }
                } else if self.buf.len() + i == 1 && tag {
                    // second byte of a tag that straddled a buffer boundary
                    quotes_count = c.is_ascii_alphabetic();
                }
                if tag {
                    if quote != 0 {
                        if c == quote {
                            quote = 0;
                        }
                    } else if quotes_count && (c == b'"' || c == b'\'') {
                        quote = c;
                    } else if c == b'>' && !in_comment(&self.buf, &avail[..i]) {
                        used = i + 1;
                        done = true;
                        break;
                    }
                } else if c == b'<' {
                    used = i;
                    done = true;
                    break;
                }
                used = i + 1;
            }
            self.buf.extend_from_slice(&avail[..used]);
            self.r.consume(used);
            if done {
                return Ok(());
            }
            if self.buf.len() > MAX_UNIT {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    TooLong("an XML unit"),
                ));
            }
        }
    }
}

/// Inside an XML comment `<!-- … -->` a `>` ends the unit only after `--`; `before` is the
/// part of the current buffer chunk before the `>`.
fn in_comment(buf: &[u8], before: &[u8]) -> bool {
    let head = |k: usize| -> Option<u8> {
        // byte k of the unit so far (buf followed by `before`)
        if k < buf.len() {
            Some(buf[k])
        } else {
            before.get(k - buf.len()).copied()
        }
    };
    let total = buf.len() + before.len();
    let is_comment = (0..4).all(|k| head(k) == Some(b"<!--"[k]));
    if !is_comment {
        return false;
    }
    // `<!-->` is not a closed comment; the unit must end with `--` before `>` past the opener.
    !(total >= 6 && head(total - 1) == Some(b'-') && head(total - 2) == Some(b'-'))
}

fn read_until_capped<R: BufRead>(r: &mut R, delim: u8, buf: &mut Vec<u8>) -> io::Result<()> {
    loop {
        let avail = r.fill_buf()?;
        if avail.is_empty() {
            return Ok(());
        }
        match avail.iter().position(|&c| c == delim) {
            Some(i) => {
                buf.extend_from_slice(&avail[..=i]);
                r.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = avail.len();
                buf.extend_from_slice(avail);
                r.consume(n);
                if buf.len() > MAX_UNIT {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        TooLong("a line"),
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(s: &str, xml: bool, cap: usize) -> Vec<String> {
        let r = io::BufReader::with_capacity(cap, s.as_bytes());
        let mut u = UnitReader::new(r, xml);
        let mut out = Vec::new();
        while u.next_unit().unwrap() {
            out.push(String::from_utf8(u.buf.clone()).unwrap());
        }
        out
    }

    #[test]
    fn lines_and_xml_units_cover_the_input() {
        assert_eq!(units("a\r\nb\n\nc", false, 2), ["a\r\n", "b\n", "\n", "c"]);
        for cap in [1, 2, 3, 64] {
            let x = "<?xml version=\"1.0\"?>\n<T>\n<a b=\"x>y\"/>t<!-- it's > -->";
            let u = units(x, true, cap);
            assert_eq!(
                u,
                [
                    "<?xml version=\"1.0\"?>",
                    "\n",
                    "<T>",
                    "\n",
                    "<a b=\"x>y\"/>",
                    "t",
                    "<!-- it's > -->"
                ],
                "cap {cap}"
            );
        }
    }
}
