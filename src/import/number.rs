//! Number spelling: how a number token is written in the foreign text (decimal, hex with or
//! without `0x`, letter case, zero padding), scanned and rendered so that a token is accepted
//! only when rendering its value gives back exactly the bytes read.

/// The spelling of a number token, from a pattern's type name (`dec`, `int`, `hex`, `HEX`,
/// `0xhex`, `0xHEX`, each optionally followed by `/N` for zero padding to N digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumSpell {
    /// Hexadecimal (else decimal).
    pub hex: bool,
    /// Upper-case hex letters.
    pub upper: bool,
    /// Written with a `0x` prefix.
    pub prefix: bool,
    /// A leading `-` is allowed (two's complement value).
    pub signed: bool,
    /// Minimum number of digits (zero padded); 0 or 1 means no padding.
    pub pad: u8,
    /// C's `%#x`: the `0x` prefix is left out when the value is zero (`0`, not `0x0`).
    pub alt: bool,
}

impl NumSpell {
    /// Parse a type name such as `dec`, `0xHEX/8`; `None` if it is not a number type.
    pub fn from_type(name: &str) -> Option<NumSpell> {
        let (base, pad) = match name.split_once('/') {
            Some((b, p)) => (b, p.parse::<u8>().ok().filter(|p| (1..=20).contains(p))?),
            None => (name, 0),
        };
        let mut s = NumSpell {
            hex: false,
            upper: false,
            prefix: false,
            signed: false,
            pad,
            alt: false,
        };
        match base {
            "dec" => {}
            "int" => s.signed = true,
            "hex" => s.hex = true,
            "HEX" => (s.hex, s.upper) = (true, true),
            "0xhex" => (s.hex, s.prefix) = (true, true),
            "0xHEX" => (s.hex, s.prefix, s.upper) = (true, true, true),
            "#hex" => (s.hex, s.prefix, s.alt) = (true, true, true),
            "#HEX" => (s.hex, s.prefix, s.upper, s.alt) = (true, true, true, true),
            _ => return None,
        }
        Some(s)
    }

    /// The type name this spelling was parsed from.
    pub fn type_name(&self) -> String {
        let base = match (self.hex, self.prefix, self.upper, self.signed) {
            (false, _, _, false) => "dec",
            (false, _, _, true) => "int",
            (true, false, false, _) => "hex",
            (true, false, true, _) => "HEX",
            (true, true, false, _) if self.alt => "#hex",
            (true, true, true, _) if self.alt => "#HEX",
            (true, true, false, _) => "0xhex",
            (true, true, true, _) => "0xHEX",
        };
        if self.pad > 1 {
            format!("{base}/{}", self.pad)
        } else {
            base.to_string()
        }
    }

    /// Scan a number at `pos`; returns its value and the end position only when the text is
    /// exactly what [`NumSpell::render`] writes for that value.
    pub fn scan(&self, s: &[u8], pos: usize) -> Option<(u64, usize)> {
        let mut i = pos;
        let neg = self.signed && s.get(i) == Some(&b'-');
        if neg {
            i += 1;
        }
        if self.prefix {
            if s.get(i..i + 2) == Some(b"0x") {
                i += 2;
            } else if self.alt
                && s.get(i) == Some(&b'0')
                && !s.get(i + 1).is_some_and(|c| c.is_ascii_alphanumeric())
            {
                return Some((0, i + 1)); // `%#x` of zero
            } else {
                return None;
            }
        }
        let start = i;
        let mut v: u64 = 0;
        if self.hex {
            while let Some(&c) = s.get(i) {
                let d = match c {
                    b'0'..=b'9' => c - b'0',
                    b'a'..=b'f' if !self.upper => c - b'a' + 10,
                    b'A'..=b'F' if self.upper => c - b'A' + 10,
                    b'a'..=b'f' | b'A'..=b'F' => return None, // wrong case: not this spelling
                    _ => break,
                };
                v = v.checked_mul(16)?.checked_add(d as u64)?;
                i += 1;
            }
        } else {
            while let Some(&c) = s.get(i) {
                if !c.is_ascii_digit() {
                    break;
                }
                v = v.checked_mul(10)?.checked_add((c - b'0') as u64)?;
                i += 1;
            }
        }
        let ndigits = i - start;
        if ndigits == 0 {
            return None;
        }
        // Canonical: exactly `pad` digits (zero padded), or more with no leading zero.
        let pad = (self.pad as usize).max(1);
        if ndigits < pad || (ndigits > pad && s[start] == b'0') {
            return None; // leading zeros other than the padding, or too short
        }
        if self.alt && v == 0 {
            return None; // `%#x` writes zero as `0`
        }
        if neg {
            if v == 0 || v > 1 << 63 {
                return None; // "-0" is not canonical; below i64::MIN does not fit
            }
            v = v.wrapping_neg();
        } else if self.signed && v > i64::MAX as u64 {
            return None;
        }
        Some((v, i))
    }

    /// Write `v` in this spelling.
    pub fn render(&self, v: u64, out: &mut Vec<u8>) {
        let mut v = v;
        if self.signed && (v as i64) < 0 {
            out.push(b'-');
            v = (v as i64).unsigned_abs();
        }
        if self.alt && v == 0 {
            out.push(b'0');
            return;
        }
        if self.prefix {
            out.extend_from_slice(b"0x");
        }
        let base = if self.hex { 16 } else { 10 };
        let n = digits(v, base).max(self.pad as usize);
        let start = out.len();
        out.resize(start + n, b'0');
        let letters = if self.upper { b'A' } else { b'a' };
        let mut i = start + n;
        while v > 0 {
            i -= 1;
            let d = (v % base) as u8;
            out[i] = if d < 10 { b'0' + d } else { letters + d - 10 };
            v /= base;
        }
    }
}

fn digits(mut v: u64, base: u64) -> usize {
    let mut n = 1;
    while v >= base {
        v /= base;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(ty: &str, text: &str) -> Option<u64> {
        let s = NumSpell::from_type(ty).unwrap();
        let (v, end) = s.scan(text.as_bytes(), 0)?;
        assert_eq!(end, text.len(), "{ty} {text}");
        let mut out = Vec::new();
        s.render(v, &mut out);
        assert_eq!(out, text.as_bytes());
        Some(v)
    }

    #[test]
    fn spellings_round_trip_and_refuse_others() {
        assert_eq!(rt("dec", "0"), Some(0));
        assert_eq!(rt("dec", "1283928880"), Some(1283928880));
        assert_eq!(rt("dec", "18446744073709551615"), Some(u64::MAX));
        assert_eq!(
            NumSpell::from_type("dec")
                .unwrap()
                .scan(b"18446744073709551616", 0),
            None
        );
        assert_eq!(NumSpell::from_type("dec").unwrap().scan(b"007", 0), None);
        assert_eq!(rt("dec/9", "375000000"), Some(375000000));
        assert_eq!(rt("dec/9", "000000005"), Some(5));
        assert_eq!(NumSpell::from_type("dec/9").unwrap().scan(b"5", 0), None);
        assert_eq!(rt("hex", "deadbeef"), Some(0xdeadbeef));
        assert_eq!(
            NumSpell::from_type("hex").unwrap().scan(b"DEADBEEF", 0),
            None
        );
        assert_eq!(rt("HEX", "DEADBEEF"), Some(0xdeadbeef));
        assert_eq!(rt("0xhex", "0x7f00"), Some(0x7f00));
        assert_eq!(rt("0xHEX/8", "0x00007F00"), Some(0x7f00));
        assert_eq!(NumSpell::from_type("0xhex").unwrap().scan(b"7f00", 0), None);
        assert_eq!(rt("#hex", "0"), Some(0));
        assert_eq!(rt("#hex", "0x10"), Some(16));
        assert_eq!(NumSpell::from_type("#hex").unwrap().scan(b"0x0", 0), None);
        assert_eq!(NumSpell::from_type("#hex").unwrap().scan(b"07", 0), None);
        assert_eq!(NumSpell::from_type("#hex/4").unwrap().type_name(), "#hex/4");
        assert_eq!(rt("int", "-12"), Some((-12i64) as u64));
        assert_eq!(NumSpell::from_type("int").unwrap().scan(b"-0", 0), None);
        assert_eq!(NumSpell::from_type("dec").unwrap().scan(b"x", 0), None);
        assert!(NumSpell::from_type("float").is_none());
        assert_eq!(
            NumSpell::from_type("0xHEX/8").unwrap().type_name(),
            "0xHEX/8"
        );
    }
}
