//! Reading input one line at a time, as the text form defines a line: UTF-8, at most
//! [`MAX_LINE`] bytes, so memory stays bounded whatever the input.

use std::io::{BufRead, ErrorKind};

use super::error::{TextError, TextErrorKind};

pub use crate::limits::MAX_LINE;

/// Why a line could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// The line is malformed (too long, not UTF-8).
    #[error(transparent)]
    Text(#[from] TextError),
    /// Reading failed.
    #[error("{0}")]
    Io(#[source] std::io::Error),
}

/// How much is read at a time (the block grows only for a line longer than this).
const BLOCK: usize = 1 << 20;

/// How many bytes of the block are scanned for line ends at a time.
const SCAN: usize = 1 << 14;

/// Lines of a `BufRead`, numbered from 1.
// Design: the input is read in blocks of a megabyte into one buffer and each line is a slice of
// it: no read call, copy or allocation per line. A line that runs past the end of the block
// moves, with what follows it, to the start of the buffer before the next read; the buffer grows
// only for a line longer than a block, up to MAX_LINE (then the line is refused, so memory stays
// bounded). Each line is checked for UTF-8 on its own, so an error names it. The line ends are
// found for 16 KiB of the block at a time, sixteen bytes a step, into a list the lines are then
// taken from: a call to `memchr` per line cost about as much as the scan itself for lines of
// the length a dump has (a hundred bytes).
pub struct LineReader<R> {
    input: R,
    block: Vec<u8>,
    /// The unread bytes are `block[start..end]`.
    start: usize,
    end: usize,
    /// `block[..scan_to]` has been scanned: the line ends in it from `start` on are
    /// `ends[next_end..]`.
    scan_to: usize,
    ends: Vec<usize>,
    next_end: usize,
    eof: bool,
    line: usize,
}

impl<R: BufRead> LineReader<R> {
    /// Read lines from `input`.
    pub fn new(input: R) -> LineReader<R> {
        LineReader {
            input,
            block: Vec::new(),
            start: 0,
            end: 0,
            scan_to: 0,
            ends: Vec::new(),
            next_end: 0,
            eof: false,
            line: 0,
        }
    }

    /// The number of the line last returned.
    pub fn line_number(&self) -> usize {
        self.line
    }

    /// Read more input after `block[..end]`, moving the unread bytes to the front first.
    fn refill(&mut self) -> Result<(), LineError> {
        // (Called only when every line end found is used: none is left to move.)
        if self.start > 0 {
            self.block.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scan_to -= self.start;
            self.start = 0;
        }
        if self.block.len() - self.end < BLOCK / 2 {
            // At most a line of MAX_LINE bytes, its line end and one byte more to tell.
            let cap = (self.end + BLOCK)
                .min(MAX_LINE as usize + 2)
                .max(self.end + 1);
            self.block.resize(cap, 0);
        }
        loop {
            match self.input.read(&mut self.block[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(LineError::Io(e)),
            }
        }
    }

    /// The next line's number and text without its line end, or `None` at the end of the
    /// input.
    pub fn next_line(&mut self) -> Result<Option<(usize, &str)>, LineError> {
        match self.next_bytes()? {
            None => Ok(None),
            Some((n, b)) => Ok(Some((n, line_str(n, b)?))),
        }
    }

    /// [`LineReader::next_line`] before the UTF-8 check, which [`line_str`] makes: for a
    /// reader that takes only ASCII and hands anything else to [`line_str`].
    pub fn next_bytes(&mut self) -> Result<Option<(usize, &[u8])>, LineError> {
        let line = self.line + 1;
        let too_long = || {
            LineError::Text(TextError {
                line,
                column: 1,
                kind: TextErrorKind::LineTooLong {
                    mib: MAX_LINE >> 20,
                },
            })
        };
        // The line's end (exclusive) and where the next line starts.
        let (stop, next) = loop {
            if let Some(&stop) = self.ends.get(self.next_end) {
                self.next_end += 1;
                break (stop, stop + 1);
            }
            if self.scan_to < self.end {
                let to = self.end.min(self.scan_to + SCAN);
                self.ends.clear();
                self.next_end = 0;
                line_ends(&self.block[self.scan_to..to], self.scan_to, &mut self.ends);
                self.scan_to = to;
                continue;
            }
            if (self.end - self.start) as u64 >= MAX_LINE {
                return Err(too_long());
            }
            if self.eof {
                if self.end == self.start {
                    return Ok(None);
                }
                break (self.end, self.end);
            }
            self.refill()?;
        };
        if (stop - self.start) as u64 >= MAX_LINE {
            return Err(too_long());
        }
        let bytes = &self.block[self.start..stop];
        self.start = next;
        self.line = line;
        Ok(Some((line, bytes.strip_suffix(b"\r").unwrap_or(bytes))))
    }
}

/// Append to `ends` the place of every `\n` of `b`, plus `base`.
// Design: memchr's iterator scans the block with the processor's vector instructions and is
// safe code; a hand-written SSE2 loop measured about 40 instructions a line fewer (of ~1 300 a
// line for `pack`), not worth an `unsafe` call of code of our own.
#[inline]
fn line_ends(b: &[u8], base: usize, ends: &mut Vec<usize>) {
    ends.extend(memchr::memchr_iter(b'\n', b).map(|i| base + i));
}

/// Line `n` as text: an error if it is not UTF-8.
pub fn line_str(n: usize, b: &[u8]) -> Result<&str, LineError> {
    std::str::from_utf8(b).map_err(|_| {
        LineError::Text(TextError {
            line: n,
            column: 1,
            kind: TextErrorKind::Syntax("the line is not valid UTF-8"),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8]) -> Vec<String> {
        let mut r = LineReader::new(input);
        let mut out = Vec::new();
        while let Some((n, s)) = r.next_line().unwrap() {
            assert_eq!(n, out.len() + 1);
            out.push(s.to_string());
        }
        out
    }

    #[test]
    fn lines_as_read_line_gives_them() {
        assert_eq!(all(b""), Vec::<String>::new());
        assert_eq!(all(b"\n"), vec![""]);
        assert_eq!(all(b"a\r\nb"), vec!["a", "b"]);
        assert_eq!(all(b"a\n\nb\n"), vec!["a", "", "b"]);
        assert_eq!(all(b"a\r\r\n"), vec!["a\r"]);
        // Lines across block boundaries, and one longer than a block.
        let mut big = Vec::new();
        let mut want = Vec::new();
        for i in 0..40_000 {
            let s = format!("line {i} {}", "x".repeat(i % 97));
            big.extend_from_slice(s.as_bytes());
            big.push(b'\n');
            want.push(s);
        }
        let long = "y".repeat(3 * BLOCK + 5);
        big.extend_from_slice(long.as_bytes());
        want.push(long);
        assert_eq!(all(&big), want);
    }

    /// The line ends found sixteen bytes a step are `memchr`'s, at every length and offset.
    #[test]
    fn line_ends_as_memchr_finds_them() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for len in 0..200 {
            for _ in 0..20 {
                let b: Vec<u8> = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        [b'\n', b'a', b'\r', 0x8a, 0x0a ^ 0x80, b' '][(seed % 6) as usize]
                    })
                    .collect();
                let base = (seed % 1000) as usize;
                let mut ends = vec![7];
                line_ends(&b, base, &mut ends);
                let want: Vec<usize> = std::iter::once(7)
                    .chain(memchr::memchr_iter(b'\n', &b).map(|i| i + base))
                    .collect();
                assert_eq!(ends, want, "{b:?}");
            }
        }
    }

    #[test]
    fn a_bad_line_is_named() {
        let mut r = LineReader::new(&b"ok\n\xff\n"[..]);
        assert!(r.next_line().unwrap().is_some());
        match r.next_line() {
            Err(LineError::Text(t)) => assert_eq!((t.line, t.column), (2, 1)),
            _ => panic!("not refused"),
        }
    }
}
