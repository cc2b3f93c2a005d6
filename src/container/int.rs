//! Integers on disk: the byte order and class of a trace, and the width arithmetic every layer
//! shares (reading, writing, range checks, sign extension).

// Design: one type for the byte order and one for the class, used by the header parser, the
// decoder and the encoder alike, so the rule "every multi-byte integer uses the header's byte
// order" is written once; the range checks below are the only ones in the crate.

/// Byte order of every multi-byte integer in a trace (header byte 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// `byteorder = 1`.
    Little,
    /// `byteorder = 2`.
    Big,
}

impl ByteOrder {
    /// The header byte for this order: 1 (little) or 2 (big).
    pub fn to_byte(self) -> u8 {
        match self {
            ByteOrder::Little => 1,
            ByteOrder::Big => 2,
        }
    }

    /// The order a header byte names, if any.
    pub fn from_byte(b: u8) -> Option<ByteOrder> {
        match b {
            1 => Some(ByteOrder::Little),
            2 => Some(ByteOrder::Big),
            _ => None,
        }
    }

    /// Reads an unsigned integer of `width` bytes (0..=8) from the start of `bytes`.
    ///
    /// Width 0 reads nothing and returns 0 (docs/format.md §6.1).
    ///
    /// # Panics
    ///
    /// If `width > 8` or `bytes.len() < width`; callers check region bounds first.
    #[inline(always)]
    pub fn read_uint(self, bytes: &[u8], width: usize) -> u64 {
        // With 8 bytes to hand (every field but those at the very end of a file), one unaligned
        // 8-byte load and a shift: no call to memcpy for a variable-length copy, no per-byte
        // loop. Shifting by 64 is avoided for width 0.
        if let Some(word) = bytes.first_chunk::<8>() {
            assert!(width <= 8, "integer width over 8 bytes");
            if width == 0 {
                return 0;
            }
            let unused = 64 - 8 * width as u32;
            return match self {
                ByteOrder::Little => (u64::from_le_bytes(*word) << unused) >> unused,
                ByteOrder::Big => u64::from_be_bytes(*word) >> unused,
            };
        }
        let src = &bytes[..width];
        let mut buf = [0u8; 8];
        match self {
            ByteOrder::Little => {
                buf[..width].copy_from_slice(src);
                u64::from_le_bytes(buf)
            }
            ByteOrder::Big => {
                buf[8 - width..].copy_from_slice(src);
                u64::from_be_bytes(buf)
            }
        }
    }

    /// Writes the low `width` bytes (0..=8) of `value` to the start of `out`.
    ///
    /// Higher bytes of `value` are discarded; use [`fits_unsigned`] first when that matters.
    ///
    /// # Panics
    ///
    /// If `width > 8` or `out.len() < width`.
    #[inline]
    pub fn write_uint(self, value: u64, width: usize, out: &mut [u8]) {
        let dst = &mut out[..width];
        match self {
            ByteOrder::Little => dst.copy_from_slice(&value.to_le_bytes()[..width]),
            ByteOrder::Big => dst.copy_from_slice(&value.to_be_bytes()[8 - width..]),
        }
    }

    /// Appends the low `width` bytes (0..=8) of `value` to `out`, as [`ByteOrder::write_uint`].
    #[inline]
    pub fn push_uint(self, value: u64, width: usize, out: &mut Vec<u8>) {
        let at = out.len();
        out.resize(at + width, 0);
        self.write_uint(value, width, &mut out[at..]);
    }
}

/// Address size of the traced program (header byte 4); sets the metadata word size (§5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// `class = 1`: 32-bit, 4-byte metadata words.
    Bits32,
    /// `class = 2`: 64-bit, 8-byte metadata words.
    Bits64,
}

impl Class {
    /// Size in bytes of a metadata value word: 4 or 8.
    pub fn word_size(self) -> usize {
        match self {
            Class::Bits32 => 4,
            Class::Bits64 => 8,
        }
    }

    /// The header byte for this class: 1 or 2.
    pub fn to_byte(self) -> u8 {
        match self {
            Class::Bits32 => 1,
            Class::Bits64 => 2,
        }
    }

    /// The class a header byte names, if any.
    pub fn from_byte(b: u8) -> Option<Class> {
        match b {
            1 => Some(Class::Bits32),
            2 => Some(Class::Bits64),
            _ => None,
        }
    }
}

/// Whether `v` fits in `width` bytes (0..=8) as an unsigned value.
#[inline]
pub fn fits_unsigned(v: u64, width: u8) -> bool {
    width >= 8 || v >> (8 * width as u32) == 0
}

/// Whether `v` fits in `width` bytes (0..=8) as a two's-complement signed value.
#[inline]
pub fn fits_signed(v: i64, width: u8) -> bool {
    if width >= 8 {
        true
    } else if width == 0 {
        v == 0
    } else {
        let bits = 8 * width as u32;
        let min = -(1i64 << (bits - 1));
        let max = (1i64 << (bits - 1)) - 1;
        (min..=max).contains(&v)
    }
}

/// The low `width` bytes of `v`.
#[inline]
pub fn truncate(v: u64, width: u8) -> u64 {
    if width >= 8 {
        v
    } else {
        v & ((1u64 << (8 * width as u32)) - 1)
    }
}

/// The low `width` bytes of `raw`, sign-extended to 64 bits (0 for width 0).
#[inline]
pub fn sign_extend(raw: u64, width: u8) -> i64 {
    if width == 0 {
        0
    } else if width >= 8 {
        raw as i64
    } else {
        let shift = 64 - 8 * width as u32;
        ((raw << shift) as i64) >> shift
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_extension() {
        assert_eq!(sign_extend(0xff, 1), -1);
        assert_eq!(sign_extend(0x7f, 1), 127);
        assert_eq!(sign_extend(0x8000, 2), -32768);
        assert_eq!(sign_extend(0, 0), 0);
        assert_eq!(sign_extend(u64::MAX, 8), -1);
        assert_eq!(sign_extend(0xff_ffff, 3), -1);
    }

    #[test]
    fn fitting() {
        assert!(fits_unsigned(255, 1));
        assert!(!fits_unsigned(256, 1));
        assert!(fits_unsigned(0, 0));
        assert!(!fits_unsigned(1, 0));
        assert!(fits_unsigned(u64::MAX, 8));
        assert!(fits_signed(-128, 1));
        assert!(!fits_signed(128, 1));
        assert!(fits_signed(i64::MIN, 8));
        assert_eq!(truncate(0x1234, 1), 0x34);
    }

    #[test]
    fn byte_orders_round_trip() {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            for w in 0..=8usize {
                let v = truncate(0x0102_0304_0506_0708, w as u8);
                let mut out = Vec::new();
                order.push_uint(v, w, &mut out);
                assert_eq!(out.len(), w);
                assert_eq!(order.read_uint(&out, w), v);
            }
        }
        let mut out = Vec::new();
        ByteOrder::Big.push_uint(0x0102, 2, &mut out);
        assert_eq!(out, [1, 2]);
    }
}
