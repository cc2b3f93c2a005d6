//! How values are written in the text form (docs/text-format.md): integers by their display
//! property, byte strings as escaped text or hex, references with what they lead to.

use std::io::{self, Write};

use crate::decode::{ElementRef, Field, Reader, Value};
use crate::dtd::Display;

/// The display of the value of an element of a table (its record's last field).
pub(crate) fn element_display(reader: &Reader<'_>, record: crate::dtd::RecordId) -> Display {
    let rt = reader.schema().record(record);
    rt.slots.last().map_or(Display::Decimal, |s| s.display)
}

/// The value of a field to print, with the display to print it in: for a reference when
/// `logical`, the value of the element it leads to (an integer in the field's display, as if it
/// were stored in the record; a byte string in the element's); else the field's value as
/// stored.
pub(crate) fn shown<'d>(
    reader: &Reader<'_>,
    f: &Field<'d>,
    logical: bool,
) -> (Value<'d>, crate::dtd::Display) {
    if logical {
        if let Some(Ok(res)) = f.resolve() {
            if let Value::Int(_) = res.value {
                return (res.value, f.def().display);
            }
            if let Value::Bytes(_) = res.value {
                return (res.value, element_display(reader, res.record));
            }
        }
    }
    (f.value(), f.def().display)
}

/// Write a value in the text form.
pub fn write_value(
    w: &mut impl Write,
    reader: &Reader<'_>,
    value: Value<'_>,
    display: Display,
    depth: usize,
) -> io::Result<()> {
    match value {
        Value::Int(v) => write_int(w, v, display),
        Value::Bytes(b) => {
            if display == Display::Text {
                write_string(w, b)
            } else {
                w.write_all(b"x\"")?;
                for x in b {
                    write!(w, "{x:02x}")?;
                }
                w.write_all(b"\"")
            }
        }
        Value::Ref(r) => {
            match r {
                ElementRef::Offset { offset, .. } => write!(w, "@{offset}")?,
                ElementRef::Index { index, .. } => write!(w, "#{index}")?,
            }
            if depth > 0 {
                return Ok(());
            }
            w.write_all(b":")?;
            match reader.resolve(r) {
                Ok(res) => {
                    let d = element_display(reader, res.record);
                    write_value(w, reader, res.value, d, depth + 1)
                }
                Err(_) => w.write_all(b"?"),
            }
        }
    }
}

/// Write an integer in its display (`0x…` for hex, two's complement for signed, else decimal),
/// without the formatting machinery: this is most of what a dump writes.
#[inline]
pub fn write_int(w: &mut impl Write, v: u64, display: Display) -> io::Result<()> {
    match display {
        Display::Hex => {
            // Digits from the right, then `0x` before them.
            let mut buf = [0u8; 18];
            let mut i = buf.len();
            let mut x = v;
            loop {
                i -= 1;
                buf[i] = b"0123456789abcdef"[(x & 15) as usize];
                x >>= 4;
                if x == 0 {
                    break;
                }
            }
            buf[i - 2] = b'0';
            buf[i - 1] = b'x';
            w.write_all(&buf[i - 2..])
        }
        Display::Signed => w.write_all(itoa::Buffer::new().format(v as i64).as_bytes()),
        _ => w.write_all(itoa::Buffer::new().format(v).as_bytes()),
    }
}

/// Write bytes as a quoted string: printable ASCII and valid UTF-8 as is; `\"`, `\\`, `\n`, `\r`,
/// `\t` escaped; any other byte as `\xHH`.
pub fn write_string(w: &mut impl Write, b: &[u8]) -> io::Result<()> {
    w.write_all(b"\"")?;
    let mut rest = b;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                write_str_escaped(w, s)?;
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                write_str_escaped(w, std::str::from_utf8(good).expect("valid prefix"))?;
                let n = e.error_len().unwrap_or(bad.len());
                for x in &bad[..n] {
                    write!(w, "\\x{x:02x}")?;
                }
                rest = &bad[n..];
            }
        }
    }
    w.write_all(b"\"")
}

/// The bytes [`write_string`] escapes: `"`, `\\`, the controls and DEL.
const ESCAPED: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[0x7f] = true;
    t
};

/// `s` escaped as [`write_string`] says, the runs between the bytes that need an escape written
/// whole (a byte of a multi-byte character never does).
fn write_str_escaped(w: &mut impl Write, s: &str) -> io::Result<()> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let b = s.as_bytes();
    let mut from = 0;
    while from < b.len() {
        let Some(n) = b[from..].iter().position(|&x| ESCAPED[x as usize]) else {
            break;
        };
        let i = from + n;
        let x = b[i];
        let hex;
        let esc: &[u8] = match x {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            _ => {
                hex = [b'\\', b'x', HEX[(x >> 4) as usize], HEX[(x & 15) as usize]];
                &hex
            }
        };
        w.write_all(&b[from..i])?;
        w.write_all(esc)?;
        from = i + 1;
    }
    w.write_all(&b[from..])
}

/// The display of each field of a flat program.
pub(crate) fn flat_displays(
    prog: &crate::layout::Program,
    rt: &crate::dtd::RecordType,
) -> Vec<crate::dtd::Display> {
    prog.ops
        .iter()
        .map(|op| {
            let (crate::layout::Op::Int(slot) | crate::layout::Op::Bytes(slot, _)) = op else {
                unreachable!("a flat program holds fields only")
            };
            rt.slots[*slot as usize].display
        })
        .collect()
}

#[cfg(test)]
mod string_tests {
    use super::*;
    use proptest::prelude::*;

    /// The escapes of [`write_string`], a character at a time (as it was written before runs
    /// were copied whole).
    fn escaped_by_char(s: &str) -> String {
        let mut out = String::new();
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 || c == '\u{7f}' => {
                    out.push_str(&format!("\\x{:02x}", c as u32))
                }
                c => out.push(c),
            }
        }
        out
    }

    proptest! {
        /// Any string, with every escape and multi-byte characters, is written as the writer a
        /// character at a time writes it.
        #[test]
        fn runs_are_written_as_characters_are(s in "[a\"\\\\\n\r\t\u{0}-\u{1f}\u{7f}é€😀 ]{0,40}") {
            let mut got = Vec::new();
            write_str_escaped(&mut got, &s).unwrap();
            prop_assert_eq!(String::from_utf8(got).unwrap(), escaped_by_char(&s));
        }
    }

    #[test]
    fn bytes_that_are_not_utf8_are_written_in_hex() {
        let mut got = Vec::new();
        write_string(&mut got, b"a\"b\xff\x01c\xe2\x82").unwrap();
        assert_eq!(
            String::from_utf8(got).unwrap(),
            "\"a\\\"b\\xff\\x01c\\xe2\\x82\""
        );
    }
}

#[cfg(test)]
mod int_tests {
    use super::*;

    #[test]
    fn integers_are_written_as_the_formatter_writes_them() {
        let values = [
            0,
            1,
            9,
            10,
            15,
            16,
            255,
            256,
            0xdead_beef,
            1 << 63,
            u64::MAX,
            12345678901,
        ];
        for v in values.into_iter().chain((0..64).map(|b| 1u64 << b)) {
            for (display, want) in [
                (Display::Hex, format!("{v:#x}")),
                (Display::Signed, format!("{}", v as i64)),
                (Display::Decimal, format!("{v}")),
            ] {
                let mut out = Vec::new();
                write_int(&mut out, v, display).unwrap();
                assert_eq!(String::from_utf8(out).unwrap(), want);
                let mut out = super::super::linebuf::LineBuf::default();
                out.put(b"x");
                out.int(v, display);
                assert_eq!(
                    String::from_utf8(out.as_bytes().to_vec()).unwrap(),
                    format!("x{want}")
                );
            }
        }
    }
}
