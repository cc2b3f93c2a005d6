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

fn write_str_escaped(w: &mut impl Write, s: &str) -> io::Result<()> {
    for c in s.chars() {
        match c {
            '"' => w.write_all(b"\\\"")?,
            '\\' => w.write_all(b"\\\\")?,
            '\n' => w.write_all(b"\\n")?,
            '\r' => w.write_all(b"\\r")?,
            '\t' => w.write_all(b"\\t")?,
            c if (c as u32) < 0x20 || c == '\u{7f}' => write!(w, "\\x{:02x}", c as u32)?,
            c => write!(w, "{c}")?,
        }
    }
    Ok(())
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
