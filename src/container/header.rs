//! The fixed trace header (docs/format.md §2.1): raw layout constants, [`ByteOrder`], [`Class`]
//! and the parsed [`Header`], with its encoder.

// Design: as in gimli/object, the on-disk layout (the `OFF_*` constants below) is kept apart
// from the parsed view. Parsing checks every claim against the slice length before it is used,
// so no allocation or index depends on an unchecked header integer. The only allocation is the
// DTD name, bounded by 255 bytes by the format itself.

use super::error::{ContainerError, EncodeError, MAGIC};

/// Offset of the `class` byte.
pub const OFF_CLASS: u64 = 4;
/// Offset of the `byteorder` byte.
pub const OFF_BYTEORDER: u64 = 5;
/// Offset of the `dtdlength` byte.
pub const OFF_DTDLENGTH: u64 = 6;
/// Offset of the `intwidth` byte.
pub const OFF_INTWIDTH: u64 = 7;
/// Offset of the first of the eight reserved bytes.
pub const OFF_RESERVED: u64 = 8;
/// Offset of `nsections`, the first header integer; `start` and `nrecords` follow at `+W`,
/// `+2W`.
pub const OFF_INTEGERS: u64 = 16;
/// Length of the part of the header that does not depend on `W` or the DTD name.
pub const FIXED_LEN: usize = 16;

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
    #[inline]
    pub fn read_uint(self, bytes: &[u8], width: usize) -> u64 {
        // Copying into a fixed 8-byte buffer and using from_{le,be}_bytes compiles to a load
        // plus a shift/bswap, with no per-byte loop.
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
    /// Higher bytes of `value` are discarded; use [`fits_in`] first when that matters.
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

/// Whether `value` is representable as an unsigned integer of `width` bytes (0..=8).
#[inline]
pub fn fits_in(value: u64, width: usize) -> bool {
    width >= 8 || value >> (8 * width) == 0
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

/// A parsed and checked trace header.
///
/// [`Header::parse`] guarantees: the section header table `[header_len, start)` lies within the
/// file, `start == header_len + nsections·3W`, and `nrecords ≤ file length − start`. The
/// section headers themselves are checked by [`SectionIndex::parse`](super::SectionIndex::parse).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// Address size of the traced program.
    pub class: Class,
    /// Byte order of the whole file.
    pub byte_order: ByteOrder,
    /// `W`: the width in bytes of the header integers, 4 (`intwidth = 0`) or 8 (`intwidth = 8`).
    pub int_width: u8,
    /// Number of section headers.
    pub nsections: u64,
    /// Byte offset of the first record; the end of the section header table.
    pub start: u64,
    /// Number of records after `start`, of every kind.
    pub nrecords: u64,
    /// The DTD name exactly as stored (1..255 bytes of UTF-8); see
    /// [`sanitize_dtd_name`](super::sanitize_dtd_name) before using it as a file name.
    pub dtd_name: String,
    /// Length of the header up to and including the DTD name, `16 + 3W + dtdlength`: the
    /// offset of the section header table.
    pub header_len: u64,
}

/// Where a slice of `len` bytes at `offset` would run past `total`; `Ok` when it fits.
fn need(total: usize, offset: usize, len: usize, what: &'static str) -> Result<(), ContainerError> {
    let available = total.saturating_sub(offset);
    if len > available {
        return Err(ContainerError::TruncatedHeader {
            offset: offset as u64,
            what,
            needed: len as u64,
            available: available as u64,
        });
    }
    Ok(())
}

impl Header {
    /// Parses and checks the header at the start of a whole trace file.
    ///
    /// `bytes` must be the entire file: the header's claims (`nsections`, `start`, `nrecords`)
    /// are checked against its length.
    pub fn parse(bytes: &[u8]) -> Result<Header, ContainerError> {
        let n = MAGIC.len().min(bytes.len());
        if bytes[..n] != MAGIC[..n] {
            return Err(ContainerError::BadMagic {
                offset: 0,
                found: bytes[..n].to_vec(),
            });
        }
        need(bytes.len(), 0, FIXED_LEN, "fixed header")?;

        let class =
            Class::from_byte(bytes[OFF_CLASS as usize]).ok_or(ContainerError::BadClass {
                offset: OFF_CLASS,
                value: bytes[OFF_CLASS as usize],
            })?;
        let b = bytes[OFF_BYTEORDER as usize];
        let byte_order = ByteOrder::from_byte(b).ok_or(ContainerError::BadByteOrder {
            offset: OFF_BYTEORDER,
            value: b,
        })?;
        let dtd_len = bytes[OFF_DTDLENGTH as usize] as usize;
        if dtd_len == 0 {
            return Err(ContainerError::EmptyDtdName {
                offset: OFF_DTDLENGTH,
            });
        }
        let w: usize = match bytes[OFF_INTWIDTH as usize] {
            0 => 4,
            8 => 8,
            value => {
                return Err(ContainerError::BadIntWidth {
                    offset: OFF_INTWIDTH,
                    value,
                })
            }
        };
        for (i, &value) in bytes[OFF_RESERVED as usize..FIXED_LEN].iter().enumerate() {
            if value != 0 {
                return Err(ContainerError::ReservedNotZero {
                    offset: OFF_RESERVED + i as u64,
                    index: i as u8,
                    value,
                });
            }
        }

        let ints = OFF_INTEGERS as usize;
        need(bytes.len(), ints, 3 * w, "header integers")?;
        let nsections = byte_order.read_uint(&bytes[ints..], w);
        let start = byte_order.read_uint(&bytes[ints + w..], w);
        let nrecords = byte_order.read_uint(&bytes[ints + 2 * w..], w);

        let name_at = ints + 3 * w;
        need(bytes.len(), name_at, dtd_len, "DTD name")?;
        let dtd_name = std::str::from_utf8(&bytes[name_at..name_at + dtd_len])
            .map_err(|e| ContainerError::DtdNameNotUtf8 {
                offset: name_at as u64,
                bad_offset: (name_at + e.valid_up_to()) as u64,
            })?
            .to_owned();

        let header_len = (name_at + dtd_len) as u64;
        let file_len = bytes.len() as u64;
        // Checked before anything is sized by `nsections`: the table must fit in the file.
        let available = file_len - header_len;
        let needed = nsections.saturating_mul(3 * w as u64);
        if needed > available {
            return Err(ContainerError::TooManySections {
                offset: OFF_INTEGERS,
                nsections,
                needed,
                available,
            });
        }
        let expected = header_len + needed;
        if start != expected {
            return Err(ContainerError::BadStart {
                offset: OFF_INTEGERS + w as u64,
                start,
                expected,
            });
        }
        // Every record begins with a tag of at least one byte (§4.3: tag width 1..8).
        if nrecords > file_len - start {
            return Err(ContainerError::TooManyRecords {
                offset: OFF_INTEGERS + 2 * w as u64,
                nrecords,
                available: file_len - start,
            });
        }

        Ok(Header {
            class,
            byte_order,
            int_width: w as u8,
            nsections,
            start,
            nrecords,
            dtd_name,
            header_len,
        })
    }

    /// The length of a header with header integers of `int_width` bytes (4 or 8), a DTD name of
    /// `dtd_len` bytes and `nsections` section headers: the value of `start`.
    pub fn encoded_len(int_width: u8, dtd_len: usize, nsections: usize) -> u64 {
        let w = int_width as u64;
        FIXED_LEN as u64 + 3 * w + dtd_len as u64 + nsections as u64 * 3 * w
    }

    /// Encodes a header and section header table, for a writer.
    ///
    /// The record stream that follows the returned bytes is laid out as `global_len` bytes of
    /// global-region records, then each section of `sections` in order, given as
    /// `(section id, size in bytes)` where the size counts the section's `section` record. The
    /// returned vector's length is `start`; the trace is these bytes followed by the records.
    ///
    /// `intwidth` is 0 (4-byte header integers) unless some header integer does not fit in 32
    /// bits (§2.1). Section ids must be 1..255 and distinct, sizes non-zero, `nrecords` at most
    /// the number of record bytes, and the DTD name 1..255 bytes.
    // Design: the section table is given as sizes, not absolute offsets, because absolute
    // offsets depend on `start`, which depends on `W`, which depends on the offsets. Taking
    // sizes makes every valid call produce a valid table (rules 1 and 2 hold by construction).
    pub fn encode(
        class: Class,
        byte_order: ByteOrder,
        dtd_name: &str,
        nrecords: u64,
        global_len: u64,
        sections: &[(u8, u64)],
    ) -> Result<Vec<u8>, EncodeError> {
        let name = dtd_name.as_bytes();
        if name.is_empty() || name.len() > 255 {
            return Err(EncodeError::BadDtdName { len: name.len() });
        }
        let mut seen = [None::<usize>; 256];
        for (index, &(number, size)) in sections.iter().enumerate() {
            if number == 0 {
                return Err(EncodeError::BadSectionNumber { index });
            }
            if let Some(first) = seen[number as usize] {
                return Err(EncodeError::DuplicateSection {
                    number,
                    first,
                    second: index,
                });
            }
            seen[number as usize] = Some(index);
            if size == 0 {
                return Err(EncodeError::EmptySection { index });
            }
        }
        // Distinct non-zero u8 ids bound the table at 255 entries.
        let body_len = sections
            .iter()
            .try_fold(global_len, |acc, &(_, size)| acc.checked_add(size))
            .ok_or(EncodeError::TooLarge)?;
        if nrecords > body_len {
            return Err(EncodeError::TooManyRecords {
                nrecords,
                available: body_len,
            });
        }

        // Choose W: 4 unless some stored integer needs more. With W = 4, the largest stored
        // integers are `nrecords`, the sizes, and `start` and the `sh_start`s, which are all at
        // most the last `sh_start` (or `start` when there are no sections). The file length
        // itself is not stored, so a large global region alone does not force W = 8.
        let start4 = Header::encoded_len(4, name.len(), sections.len());
        let last_start = match sections.last() {
            Some(&(_, last_size)) => start4.checked_add(body_len - last_size),
            None => Some(start4),
        };
        let fits4 = last_start.is_some_and(|s| s <= u32::MAX as u64)
            && sections.iter().all(|&(_, s)| s <= u32::MAX as u64)
            && nrecords <= u32::MAX as u64;
        let (w, intwidth) = if fits4 { (4u8, 0u8) } else { (8u8, 8u8) };
        let start = Header::encoded_len(w, name.len(), sections.len());
        start.checked_add(body_len).ok_or(EncodeError::TooLarge)?;

        let wu = w as usize;
        let mut out = Vec::with_capacity(start as usize);
        out.extend_from_slice(&MAGIC);
        out.push(class.to_byte());
        out.push(byte_order.to_byte());
        out.push(name.len() as u8);
        out.push(intwidth);
        out.extend_from_slice(&[0; 8]);
        byte_order.push_uint(sections.len() as u64, wu, &mut out);
        byte_order.push_uint(start, wu, &mut out);
        byte_order.push_uint(nrecords, wu, &mut out);
        out.extend_from_slice(name);
        let mut at = start + global_len;
        for &(number, size) in sections {
            byte_order.push_uint(number as u64, wu, &mut out);
            byte_order.push_uint(at, wu, &mut out);
            byte_order.push_uint(size, wu, &mut out);
            at += size;
        }
        debug_assert_eq!(out.len() as u64, start);
        Ok(out)
    }
}
