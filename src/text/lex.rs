//! The tokens of the text form (docs/text-format.md): numbers, strings, byte strings,
//! references, lists and groups, with the column of every error.

use super::error::{TextError, TextErrorKind};

/// A parsed value of the text form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TVal {
    /// A non-negative integer.
    Int(u64),
    /// A negative integer.
    Neg(i64),
    /// A quoted string or `x"…"` byte string.
    Bytes(Vec<u8>),
    /// `@offset`.
    Offset(u64),
    /// `#index`.
    Index(u64),
    /// `[ … ]`.
    List(Vec<TVal>),
    /// `{ key=value … }`.
    Group(Vec<(String, usize, TVal)>),
    /// A bare word (only in annotations and `section NAME`).
    Word(String),
}

pub(crate) struct Lexer<'a> {
    pub(crate) s: &'a str,
    pub(crate) pos: usize,
    pub(crate) line: usize,
}

impl<'a> Lexer<'a> {
    pub(crate) fn err(&self, at: usize, kind: TextErrorKind) -> TextError {
        TextError {
            line: self.line,
            column: self.column(at),
            kind,
        }
    }
    pub(crate) fn syntax(&self, at: usize, m: &'static str) -> TextError {
        self.err(at, TextErrorKind::Syntax(m))
    }
    /// The 1-based column, in characters, of byte offset `at`.
    pub(crate) fn column(&self, at: usize) -> usize {
        self.s[..at.min(self.s.len())].chars().count() + 1
    }
    pub(crate) fn skip_ws(&mut self) {
        while let Some(c) = self.s[self.pos..].chars().next() {
            if c == ' ' || c == '\t' || c == '\r' {
                self.pos += 1;
            } else {
                break;
            }
        }
    }
    pub(crate) fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }
    pub(crate) fn at_end(&mut self) -> bool {
        self.skip_ws();
        self.pos >= self.s.len() || self.peek() == Some('#') && self.s[self.pos..].starts_with("# ")
    }
    pub(crate) fn word(&mut self) -> Option<&'a str> {
        self.skip_ws();
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                self.pos += c.len_utf8();
            } else {
                break;
            }
        }
        (self.pos > start).then(|| &self.s[start..self.pos])
    }
    pub(crate) fn int(&mut self) -> Result<u64, TextError> {
        let start = self.pos;
        let neg = self.s[self.pos..].starts_with('-');
        if neg {
            self.pos += 1;
        }
        let body_start = self.pos;
        let hex = self.s[self.pos..].starts_with("0x") || self.s[self.pos..].starts_with("0X");
        if hex {
            self.pos += 2;
        }
        let digits_start = self.pos;
        while let Some(c) = self.peek() {
            if (hex && c.is_ascii_hexdigit()) || c.is_ascii_digit() {
                self.pos += 1;
            } else {
                break;
            }
        }
        let digits = &self.s[digits_start..self.pos];
        if digits.is_empty() {
            return Err(self.syntax(start, "expected a number"));
        }
        let v = if hex {
            u64::from_str_radix(digits, 16)
        } else {
            digits.parse::<u64>()
        }
        .map_err(|_| {
            self.err(
                body_start,
                TextErrorKind::NumberTooLarge {
                    digits: digits.to_string(),
                },
            )
        })?;
        if neg {
            if v > 1u64 << 63 {
                return Err(self.syntax(start, "negative number below -2^63"));
            }
            Ok((v as i64).wrapping_neg() as u64)
        } else {
            Ok(v)
        }
    }
    fn string(&mut self) -> Result<Vec<u8>, TextError> {
        let start = self.pos;
        self.pos += 1; // opening quote
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.syntax(start, "unterminated string"));
            };
            self.pos += c.len_utf8();
            match c {
                '"' => return Ok(out),
                '\\' => {
                    let Some(e) = self.peek() else {
                        return Err(self.syntax(start, "unterminated string"));
                    };
                    self.pos += 1;
                    match e {
                        'n' => out.push(b'\n'),
                        'r' => out.push(b'\r'),
                        't' => out.push(b'\t'),
                        '0' => out.push(0),
                        '"' => out.push(b'"'),
                        '\\' => out.push(b'\\'),
                        'x' => {
                            let h = self.s.get(self.pos..self.pos + 2).unwrap_or("");
                            let b = u8::from_str_radix(h, 16).map_err(|_| {
                                self.syntax(self.pos - 2, "\\x needs two hex digits")
                            })?;
                            self.pos += 2;
                            out.push(b);
                        }
                        _ => {
                            return Err(
                                self.err(self.pos - 2, TextErrorKind::UnknownEscape { escape: e })
                            )
                        }
                    }
                }
                c => {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
    }
    pub(crate) fn hexbytes(&mut self) -> Result<Vec<u8>, TextError> {
        let start = self.pos;
        self.pos += 2; // x"
        let end = self.s[self.pos..]
            .find('"')
            .ok_or_else(|| self.syntax(start, "unterminated byte string"))?;
        let h = &self.s[self.pos..self.pos + end];
        if let Some(i) = h.find(|c: char| !c.is_ascii_hexdigit()) {
            return Err(self.syntax(self.pos + i, "bad hex digit in a byte string"));
        }
        if !h.len().is_multiple_of(2) {
            return Err(self.syntax(start, "a byte string needs an even number of hex digits"));
        }
        let mut out = Vec::with_capacity(h.len() / 2);
        for i in (0..h.len()).step_by(2) {
            out.push(
                u8::from_str_radix(&h[i..i + 2], 16)
                    .map_err(|_| self.syntax(self.pos + i, "bad hex digit"))?,
            );
        }
        self.pos += end + 1;
        Ok(out)
    }
    /// A value with its optional `:annotation` and `~raw` (both ignored).
    pub(crate) fn value(&mut self, depth: usize) -> Result<TVal, TextError> {
        if depth > 32 {
            return Err(self.syntax(self.pos, "nesting too deep"));
        }
        self.skip_ws();
        let start = self.pos;
        let v = match self.peek() {
            Some('"') => TVal::Bytes(self.string()?),
            Some('x') if self.s[self.pos..].starts_with("x\"") => TVal::Bytes(self.hexbytes()?),
            Some('@') => {
                self.pos += 1;
                TVal::Offset(self.int()?)
            }
            Some('#') => {
                self.pos += 1;
                TVal::Index(self.int()?)
            }
            Some('[') => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    self.skip_ws();
                    match self.peek() {
                        Some(']') => {
                            self.pos += 1;
                            break;
                        }
                        Some(',') => self.pos += 1,
                        None => return Err(self.syntax(start, "unterminated list")),
                        _ => items.push(self.value(depth + 1)?),
                    }
                }
                TVal::List(items)
            }
            Some('{') => {
                self.pos += 1;
                let mut fields = Vec::new();
                loop {
                    self.skip_ws();
                    match self.peek() {
                        Some('}') => {
                            self.pos += 1;
                            break;
                        }
                        None => return Err(self.syntax(start, "unterminated group")),
                        _ => fields.push(self.pair(depth + 1)?),
                    }
                }
                TVal::Group(fields)
            }
            Some('-') => TVal::Neg(self.int()? as i64),
            Some(c) if c.is_ascii_digit() => TVal::Int(self.int()?),
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                TVal::Word(self.word().unwrap_or("").to_string())
            }
            _ => return Err(self.syntax(start, "expected a value")),
        };
        if self.peek() == Some(':') {
            self.pos += 1;
            if self.peek() == Some('?') {
                self.pos += 1;
            } else {
                self.value(depth + 1)?;
            }
        }
        if self.peek() == Some('~') {
            self.pos += 1;
            self.int()?;
        }
        Ok(v)
    }
    pub(crate) fn pair(&mut self, depth: usize) -> Result<(String, usize, TVal), TextError> {
        self.skip_ws();
        let at = self.pos;
        let Some(k) = self.word() else {
            return Err(self.syntax(at, "expected `name=value`"));
        };
        if self.peek() != Some('=') {
            return Err(self.err(
                self.pos,
                TextErrorKind::ExpectedEquals { key: k.to_string() },
            ));
        }
        self.pos += 1;
        let v = self.value(depth)?;
        Ok((k.to_string(), at, v))
    }
}
