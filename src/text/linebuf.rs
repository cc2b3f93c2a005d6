//! The line a printer builds before writing it out in one piece, and the number formatting
//! that fills it.

// Design: a dump is millions of short lines of a few keys and numbers. Appending each piece to a
// `Vec` costs a call to `memcpy` and a capacity check per piece, and formatting a number through
// `itoa` into its own buffer costs a second copy; together they were most of a dump's time after
// the decoder. Here the line is a zero-filled buffer with a cursor: room for the longest piece
// is made once per piece (a compare, rarely a resize), keys are copied as 16- or 32-byte blocks
// from padded copies made once per record type (a fixed-size copy is two register moves, the
// bytes past the key are overwritten by what follows), hex digits come out of a few shifts and
// masks on the whole 64-bit number at once, and decimal digits likewise, eight at a time
// (`digits8`), then shifted past the leading zeros. Everything here is safe code: an index past the buffer cannot
// happen (room is made first), and would panic rather than write out of bounds.

use std::io;

use crate::dtd::Display;

/// A line being built (see the design note above).
#[derive(Debug, Default, Clone)]
pub(crate) struct LineBuf {
    buf: Vec<u8>,
    n: usize,
}

/// A piece of a line padded to a fixed size, copied whole and then cut to its length.
#[derive(Debug, Clone)]
pub(crate) enum Padded {
    /// Up to 16 bytes.
    Short([u8; 16], u8),
    /// Up to 32 bytes.
    Medium([u8; 32], u8),
    /// Longer: copied as it is.
    Long(Box<[u8]>),
}

impl Padded {
    pub(crate) fn new(b: &[u8]) -> Padded {
        if b.len() <= 16 {
            let mut p = [0u8; 16];
            p[..b.len()].copy_from_slice(b);
            Padded::Short(p, b.len() as u8)
        } else if b.len() <= 32 {
            let mut p = [0u8; 32];
            p[..b.len()].copy_from_slice(b);
            Padded::Medium(p, b.len() as u8)
        } else {
            Padded::Long(b.into())
        }
    }

    /// The bytes it stands for.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Padded::Short(p, n) => &p[..*n as usize],
            Padded::Medium(p, n) => &p[..*n as usize],
            Padded::Long(b) => b,
        }
    }
}

impl Default for Padded {
    fn default() -> Padded {
        Padded::Short([0; 16], 0)
    }
}

/// The 16 hex digits of `v` (most significant first) as ASCII, in a `u128` whose big-endian
/// bytes are the digits.
#[inline]
fn hex_digits(v: u64) -> u128 {
    // Each nibble of a 32-bit half spread to a byte, the least significant nibble in the least
    // significant byte.
    #[inline(always)]
    fn spread(x: u32) -> u64 {
        let x = x as u64;
        let x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
        let x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
        (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f
    }
    #[inline(always)]
    fn ascii(x: u64) -> u64 {
        // 0x01 in the bytes holding 10..=15 (adding 6 carries into bit 4 exactly there).
        let letters = ((x + 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101;
        // '0' + x, and 'a' - '0' - 10 = 39 more for a letter.
        x + 0x3030_3030_3030_3030 + letters * 39
    }
    let hi = ascii(spread((v >> 32) as u32));
    let lo = ascii(spread(v as u32));
    // Big-endian bytes: `hi`'s most significant byte holds the most significant nibble.
    ((hi as u128) << 64) | lo as u128
}

/// The 8 decimal digits of `v` (below 10⁸, with leading zeros) as ASCII, the most significant
/// in the least significant byte (so that its little-endian bytes read in order).
#[inline(always)]
fn eight_digits(v: u32) -> u64 {
    digits8(v) + 0x3030_3030_3030_3030
}

/// The 8 decimal digits of `v` (below 10⁸) as numbers 0..=9, one per byte, the most
/// significant in the least significant byte.
// Design: SIMD within a register: the number is cut into two halves of 4 digits (one per
// 32-bit lane), each into two pairs (16-bit lanes), each pair into two digits (bytes), dividing
// all lanes at once by multiplying with a reciprocal that is exact in the lanes' ranges
// (x / 100 = x * 10486 >> 20 for x < 10⁴, x / 10 = x * 103 >> 10 for x < 100).
#[inline(always)]
fn digits8(v: u32) -> u64 {
    let (hi, lo) = ((v / 10_000) as u64, (v % 10_000) as u64);
    let x = hi | (lo << 32);
    let hundreds = ((x * 10486) >> 20) & 0x0000_007f_0000_007f;
    let pairs = hundreds | ((x - hundreds * 100) << 16);
    let tens = ((pairs * 103) >> 10) & 0x000f_000f_000f_000f;
    tens | ((pairs - tens * 10) << 8)
}

/// Writes the digits of `v` (below 10⁸) without leading zeros into the first bytes of `out`
/// (8 bytes, the rest overwritten); returns how many.
#[inline(always)]
fn leading8(out: &mut [u8], v: u32) -> usize {
    let d = digits8(v);
    // Leading zero digits are the low zero bytes; a zero keeps one digit.
    let zeros = ((d.trailing_zeros() / 8) as usize).min(7);
    let ascii = (d + 0x3030_3030_3030_3030) >> (8 * zeros);
    out.copy_from_slice(&ascii.to_le_bytes());
    8 - zeros
}

/// How much a printer with batched output keeps before writing it out.
pub(crate) const BATCH: usize = 64 * 1024;

/// Bytes a flat record's line takes at most: `@OFFSET ` or the numbers of a JSON line's head,
/// the `head` and up to four other constant pieces, then each of `fields` and a number (quoted
/// or not) per field, and a newline.
pub(crate) fn line_most(head: &Padded, fields: &[Padded]) -> usize {
    let piece = |p: &Padded| p.len().max(Cursor::MOST_PADDED);
    2 + 4 * Cursor::MOST_NUMBER
        + piece(head)
        + 4 * Cursor::MOST_PADDED
        + fields.iter().map(piece).sum::<usize>()
        + fields.len() * (Cursor::MOST_NUMBER + 2)
}

impl LineBuf {
    /// The end of a planned line: written to `w` now, or, when `batch`, kept with the lines
    /// before it until they are [`BATCH`] bytes.
    #[inline]
    pub(crate) fn line_done(
        &mut self,
        batch: bool,
        w: &mut impl std::io::Write,
    ) -> std::io::Result<()> {
        if !batch || self.len() >= BATCH {
            let r = w.write_all(self.as_bytes());
            self.clear();
            return r;
        }
        Ok(())
    }

    /// Empties the line (its buffer is kept).
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.n = 0;
    }

    /// How many bytes it holds.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.n
    }

    /// The line so far.
    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.n]
    }

    /// Makes room for `extra` bytes past the cursor.
    #[inline(always)]
    fn room(&mut self, extra: usize) {
        if self.buf.len() - self.n < extra {
            self.grow(extra);
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, extra: usize) {
        let want = (self.n + extra).max(256).next_power_of_two();
        self.buf.resize(want, 0);
    }

    /// A cursor over the line with room for `most` more bytes; [`LineBuf::done`] takes its
    /// end back.
    // Design: the cursor is a local (a slice and an index in registers), so that the stores of
    // a line's bytes do not make the compiler reload the buffer's pointer and length after each.
    #[inline(always)]
    pub(crate) fn cursor(&mut self, most: usize) -> Cursor<'_> {
        self.room(most);
        Cursor {
            buf: &mut self.buf,
            n: self.n,
        }
    }

    /// Where a cursor ended.
    #[inline(always)]
    pub(crate) fn done(&mut self, end: usize) {
        self.n = end;
    }

    /// Appends bytes.
    #[inline]
    pub(crate) fn put(&mut self, b: &[u8]) {
        self.room(b.len());
        self.buf[self.n..self.n + b.len()].copy_from_slice(b);
        self.n += b.len();
    }

    /// Appends one byte.
    #[inline]
    pub(crate) fn byte(&mut self, b: u8) {
        self.room(1);
        self.buf[self.n] = b;
        self.n += 1;
    }

    /// Appends what `f` writes through a cursor with room for `most` bytes.
    #[inline]
    fn append(&mut self, most: usize, f: impl FnOnce(&mut Cursor<'_>)) {
        let mut c = self.cursor(most);
        f(&mut c);
        let end = c.n;
        self.done(end);
    }

    /// Appends a padded piece.
    #[inline]
    pub(crate) fn padded(&mut self, p: &Padded) {
        self.append(Cursor::MOST_PADDED.max(p.len()), |c| c.padded(p));
    }

    /// Appends `v` in decimal.
    #[inline]
    #[cfg_attr(not(feature = "json"), allow(dead_code))]
    pub(crate) fn dec(&mut self, v: u64) {
        self.append(Cursor::MOST_NUMBER, |c| c.dec(v));
    }

    /// Appends an integer in its display, as [`super::value::write_int`] writes it.
    #[inline]
    pub(crate) fn int(&mut self, v: u64, display: Display) {
        self.append(Cursor::MOST_NUMBER, |c| c.int(v, display));
    }

    /// Appends `v` in signed decimal.
    #[inline]
    #[cfg_attr(not(feature = "json"), allow(dead_code))]
    pub(crate) fn signed(&mut self, v: i64) {
        self.append(Cursor::MOST_NUMBER, |c| c.signed(v));
    }
}

impl Padded {
    /// How many bytes it stands for.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        match self {
            Padded::Short(_, n) | Padded::Medium(_, n) => *n as usize,
            Padded::Long(b) => b.len(),
        }
    }
}

/// A cursor into a line buffer with room made beforehand (see [`LineBuf::cursor`]): each piece
/// needs at most [`Cursor::MOST_PADDED`] (a padded piece, or its length if longer) or
/// [`Cursor::MOST_NUMBER`] bytes of that room. Writing past it would panic, never corrupt.
pub(crate) struct Cursor<'a> {
    buf: &'a mut [u8],
    /// The end of the line so far.
    pub(crate) n: usize,
}

impl Cursor<'_> {
    /// Room a padded piece of up to 32 bytes takes.
    pub(crate) const MOST_PADDED: usize = 32;
    /// Room a number takes, in any display (with `0x`, a sign or JSON quotes).
    pub(crate) const MOST_NUMBER: usize = 26;

    /// Appends one byte.
    #[inline(always)]
    pub(crate) fn byte(&mut self, b: u8) {
        self.buf[self.n] = b;
        self.n += 1;
    }

    /// Appends a padded piece.
    #[inline(always)]
    pub(crate) fn padded(&mut self, p: &Padded) {
        match p {
            Padded::Short(b, len) => {
                self.buf[self.n..self.n + 16].copy_from_slice(b);
                self.n += *len as usize;
            }
            Padded::Medium(b, len) => {
                self.buf[self.n..self.n + 32].copy_from_slice(b);
                self.n += *len as usize;
            }
            Padded::Long(b) => {
                self.buf[self.n..self.n + b.len()].copy_from_slice(b);
                self.n += b.len();
            }
        }
    }

    /// Appends `v` as `{:#x}` writes it: `0x` and its digits without leading zeros.
    #[inline(always)]
    pub(crate) fn hex(&mut self, v: u64) {
        // Digits needed: at least one.
        let digits = ((67 - v.leading_zeros()) / 4).max(1) as usize;
        // The last `digits` digits moved to the front.
        let d = hex_digits(v) << (8 * (16 - digits));
        let out = &mut self.buf[self.n..self.n + 18];
        out[..2].copy_from_slice(b"0x");
        out[2..].copy_from_slice(&d.to_be_bytes());
        self.n += 2 + digits;
    }

    /// Appends `v` in decimal.
    #[inline(always)]
    pub(crate) fn dec(&mut self, v: u64) {
        if v < 100_000_000 {
            self.n += leading8(&mut self.buf[self.n..self.n + 8], v as u32);
            return;
        }
        if v >= 10_000_000_000_000_000 {
            return self.dec_huge(v);
        }
        // 9 to 16 digits: the first half without its leading zeros, then 8.
        let top = (v / 100_000_000) as u32;
        let low = (v - top as u64 * 100_000_000) as u32;
        self.n += leading8(&mut self.buf[self.n..self.n + 8], top);
        self.buf[self.n..self.n + 8].copy_from_slice(&eight_digits(low).to_le_bytes());
        self.n += 8;
    }

    /// Appends `v`, at least 10¹⁶, in decimal.
    #[inline(never)]
    fn dec_huge(&mut self, v: u64) {
        let (top, low) = (v / 100_000_000, (v % 100_000_000) as u32);
        // 17 to 20 digits: at most 4 before the last 16.
        let (first, mid) = ((top / 100_000_000) as u32, (top % 100_000_000) as u32);
        self.n += leading8(&mut self.buf[self.n..self.n + 8], first);
        self.buf[self.n..self.n + 8].copy_from_slice(&eight_digits(mid).to_le_bytes());
        self.n += 8;
        self.buf[self.n..self.n + 8].copy_from_slice(&eight_digits(low).to_le_bytes());
        self.n += 8;
    }

    /// Appends `v` in signed decimal.
    #[inline(always)]
    pub(crate) fn signed(&mut self, v: i64) {
        if v < 0 {
            self.byte(b'-');
        }
        self.dec(v.unsigned_abs());
    }

    /// Appends an integer in its display, as [`super::value::write_int`] writes it.
    #[inline(always)]
    pub(crate) fn int(&mut self, v: u64, display: Display) {
        match display {
            Display::Hex => self.hex(v),
            Display::Signed => self.signed(v as i64),
            _ => self.dec(v),
        }
    }
}

// The general printers write into the line too (a record with a byte string or a reference).
impl io::Write for LineBuf {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.put(buf);
        Ok(buf.len())
    }

    #[inline]
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.put(buf);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn samples() -> Vec<u64> {
        let mut v = vec![0, 1, 9, 10, 15, 16, 99, 100, 255, 256, 999, 1000, u64::MAX];
        for s in 0..64 {
            let p = 1u64 << s;
            v.extend([p - 1, p, p + 1]);
        }
        let mut p = 1u64;
        while let Some(q) = p.checked_mul(10) {
            v.extend([p - 1, p, p + 1, q - 1]);
            p = q;
        }
        v
    }

    fn formats(v: u64) {
        let mut l = LineBuf::default();
        l.put(b"k=");
        l.int(v, Display::Hex);
        l.byte(b' ');
        l.dec(v);
        l.byte(b' ');
        l.signed(v as i64);
        assert_eq!(
            std::str::from_utf8(l.as_bytes()).unwrap(),
            format!("k={v:#x} {v} {}", v as i64)
        );
    }

    #[test]
    fn numbers_as_core_fmt_writes_them() {
        for v in samples() {
            formats(v);
        }
    }

    proptest! {
        #[test]
        fn any_number_as_core_fmt_writes_it(v in any::<u64>(), shift in 0u32..64) {
            formats(v);
            formats(v >> shift);
        }

        #[test]
        fn padded_pieces_are_their_bytes(parts in proptest::collection::vec(
            proptest::collection::vec(any::<u8>(), 0..48), 0..20)) {
            let mut l = LineBuf::default();
            let mut want = Vec::new();
            for p in &parts {
                let padded = Padded::new(p);
                prop_assert_eq!(padded.bytes(), &p[..]);
                l.padded(&padded);
                want.extend_from_slice(p);
            }
            l.put(b"\n");
            want.push(b'\n');
            prop_assert_eq!(l.as_bytes(), &want[..]);
        }
    }
}
