//! Reading input one line at a time, as the text form defines a line: UTF-8, at most
//! [`MAX_LINE`] bytes, so memory stays bounded whatever the input.

use std::io::{BufRead, Read};

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

/// Lines of a `BufRead`, numbered from 1.
pub struct LineReader<R> {
    input: R,
    buf: String,
    line: usize,
}

impl<R: BufRead> LineReader<R> {
    /// Read lines from `input`.
    pub fn new(input: R) -> LineReader<R> {
        LineReader {
            input,
            buf: String::new(),
            line: 0,
        }
    }

    /// The number of the line last returned.
    pub fn line_number(&self) -> usize {
        self.line
    }

    /// The next line's number and text without its line end, or `None` at the end of the
    /// input.
    pub fn next_line(&mut self) -> Result<Option<(usize, &str)>, LineError> {
        self.buf.clear();
        let line = self.line + 1;
        match self.input.by_ref().take(MAX_LINE).read_line(&mut self.buf) {
            Ok(0) => Ok(None),
            Ok(n) => {
                if n as u64 == MAX_LINE && !self.buf.ends_with('\n') {
                    return Err(LineError::Text(TextError {
                        line,
                        column: 1,
                        kind: TextErrorKind::LineTooLong {
                            mib: MAX_LINE >> 20,
                        },
                    }));
                }
                self.line = line;
                let s = self.buf.strip_suffix('\n').unwrap_or(&self.buf);
                Ok(Some((line, s.strip_suffix('\r').unwrap_or(s))))
            }
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                Err(LineError::Text(TextError {
                    line,
                    column: 1,
                    kind: TextErrorKind::Syntax("the line is not valid UTF-8"),
                }))
            }
            Err(e) => Err(LineError::Io(e)),
        }
    }
}
