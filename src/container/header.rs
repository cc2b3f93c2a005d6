//! The fixed trace header (docs/format.md §2.1): raw layout constants and the parsed [`Header`],
//! with its encoder. Byte order and class live in `int.rs`.

// Design: as in gimli/object, the on-disk layout (the `OFF_*` constants below) is kept apart
// from the parsed view. Parsing checks every claim against the slice length before it is used,
// so no allocation or index depends on an unchecked header integer. The only allocation is the
// DTD name, bounded by 255 bytes by the format itself.

use super::error::{ContainerError, HeaderEncodeError, MAGIC};
use super::int::{ByteOrder, Class};

/// Offset of the `class` byte.
pub const OFF_CLASS: u64 = 4;
/// Offset of the `byteorder` byte.
pub const OFF_BYTEORDER: u64 = 5;
/// Offset of the `dtdlength` byte.
pub const OFF_DTDLENGTH: u64 = 6;
/// Offset of the `intwidth` byte.
pub const OFF_INTWIDTH: u64 = 7;
/// Offset of the `extensions` byte (the first of the paper's reserved bytes; docs/format.md
/// §13): 0 in a plain Meta-TF 1.0 trace, which a 1.0 reader requires.
pub const OFF_EXTENSIONS: u64 = 8;
/// Offset of the first of the seven bytes that stay reserved.
pub const OFF_RESERVED: u64 = 9;
/// Bit of the `extensions` byte that declares extension `live/1` (docs/format.md §13).
pub const EXT_LIVE: u8 = 1;
/// Every extension bit this reader knows.
pub const KNOWN_EXTENSIONS: u8 = EXT_LIVE;
/// Offset of `nsections`, the first header integer; `start` and `nrecords` follow at `+W`,
/// `+2W`.
pub const OFF_INTEGERS: u64 = 16;
/// Length of the part of the header that does not depend on `W` or the DTD name.
pub const FIXED_LEN: usize = 16;

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
    /// The `extensions` byte: [`EXT_LIVE`] or 0 (docs/format.md §13).
    pub extensions: u8,
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

/// Checks that `len` bytes from `offset` lie within a file of `total` bytes.
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
        let header = Header::parse_fields(bytes)?;
        header.check_claims(bytes.len() as u64)?;
        Ok(header)
    }

    /// Reads the header's fields, checking each but not the claims the integers make about the
    /// rest of the file (those are [`Header::check_claims`]).
    pub(crate) fn parse_fields(bytes: &[u8]) -> Result<Header, ContainerError> {
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
        let extensions = bytes[OFF_EXTENSIONS as usize];
        if extensions & !KNOWN_EXTENSIONS != 0 {
            return Err(ContainerError::UnknownExtension {
                offset: OFF_EXTENSIONS,
                value: extensions,
            });
        }
        for (i, &value) in bytes[OFF_RESERVED as usize..FIXED_LEN].iter().enumerate() {
            if value != 0 {
                return Err(ContainerError::ReservedNotZero {
                    offset: OFF_RESERVED + i as u64,
                    index: i as u8 + 1,
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
        Ok(Header {
            class,
            byte_order,
            int_width: w as u8,
            extensions,
            nsections,
            start,
            nrecords,
            dtd_name,
            header_len,
        })
    }

    /// Checks the header integers' claims against a file of `file_len` bytes.
    pub(crate) fn check_claims(&self, file_len: u64) -> Result<(), ContainerError> {
        let (w, header_len, nsections, start, nrecords) = (
            self.int_width as usize,
            self.header_len,
            self.nsections,
            self.start,
            self.nrecords,
        );
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
        Ok(())
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
    ) -> Result<Vec<u8>, HeaderEncodeError> {
        let name = dtd_name.as_bytes();
        if name.is_empty() || name.len() > 255 {
            return Err(HeaderEncodeError::BadDtdName { len: name.len() });
        }
        let mut seen = [None::<usize>; 256];
        for (index, &(number, size)) in sections.iter().enumerate() {
            if number == 0 {
                return Err(HeaderEncodeError::BadSectionNumber { index });
            }
            if let Some(first) = seen[number as usize] {
                return Err(HeaderEncodeError::DuplicateSection {
                    number,
                    first,
                    second: index,
                });
            }
            seen[number as usize] = Some(index);
            if size == 0 {
                return Err(HeaderEncodeError::EmptySection { index });
            }
        }
        // Distinct non-zero u8 ids bound the table at 255 entries.
        let body_len = sections
            .iter()
            .try_fold(global_len, |acc, &(_, size)| acc.checked_add(size))
            .ok_or(HeaderEncodeError::TooLarge)?;
        if nrecords > body_len {
            return Err(HeaderEncodeError::TooManyRecords {
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
        let w = if fits4 { 4 } else { 8 };
        Header::encode_as(w, class, byte_order, name, nrecords, global_len, sections)
    }

    /// Sets the `extensions` byte of a header made by [`Header::encode`] (docs/format.md §13).
    pub fn set_extensions(encoded: &mut [u8], extensions: u8) {
        encoded[OFF_EXTENSIONS as usize] = extensions;
    }

    /// [`Header::encode`] with a given `W` (4 or 8), on already-checked arguments.
    // Separate so that tests can round-trip 8-byte headers without 4 GiB files; the public
    // encoder never chooses W = 8 when 4 suffices (§2.1 makes that a MUST).
    fn encode_as(
        w: u8,
        class: Class,
        byte_order: ByteOrder,
        name: &[u8],
        nrecords: u64,
        global_len: u64,
        sections: &[(u8, u64)],
    ) -> Result<Vec<u8>, HeaderEncodeError> {
        let body_len = sections.iter().map(|&(_, s)| s).sum::<u64>() + global_len;
        let start = Header::encoded_len(w, name.len(), sections.len());
        start
            .checked_add(body_len)
            .ok_or(HeaderEncodeError::TooLarge)?;

        let wu = w as usize;
        let mut out = Vec::with_capacity(start as usize);
        out.extend_from_slice(&MAGIC);
        out.push(class.to_byte());
        out.push(byte_order.to_byte());
        out.push(name.len() as u8);
        out.push(if w == 8 { 8 } else { 0 });
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::testutil::Raw;
    use crate::container::SectionIndex;
    use proptest::prelude::*;

    fn err(raw: &Raw) -> ContainerError {
        Header::parse(&raw.bytes()).expect_err("header should be rejected")
    }

    #[test]
    fn read_write_uint_all_widths() {
        for order in [ByteOrder::Little, ByteOrder::Big] {
            for width in 0..=8usize {
                let value = 0x0102_0304_0506_0708u64;
                let mask = if width == 8 {
                    u64::MAX
                } else {
                    (1u64 << (8 * width)) - 1
                };
                let mut buf = [0u8; 10];
                order.write_uint(value, width, &mut buf);
                assert_eq!(
                    order.read_uint(&buf, width),
                    value & mask,
                    "{order:?} {width}"
                );
                assert!(buf[width..].iter().all(|&b| b == 0));
            }
        }
        assert_eq!(ByteOrder::Little.read_uint(&[1, 2], 2), 0x0201);
        assert_eq!(ByteOrder::Big.read_uint(&[1, 2], 2), 0x0102);
        assert_eq!(ByteOrder::Big.read_uint(&[], 0), 0);
    }

    #[test]
    fn class_and_order_bytes() {
        assert_eq!(Class::Bits32.word_size(), 4);
        assert_eq!(Class::Bits64.word_size(), 8);
        for c in [Class::Bits32, Class::Bits64] {
            assert_eq!(Class::from_byte(c.to_byte()), Some(c));
        }
        for o in [ByteOrder::Little, ByteOrder::Big] {
            assert_eq!(ByteOrder::from_byte(o.to_byte()), Some(o));
        }
        assert_eq!(Class::from_byte(0), None);
        assert_eq!(ByteOrder::from_byte(3), None);
    }

    /// encode → append body → parse, for every class, order and W.
    #[test]
    fn round_trip_all_combinations() {
        let sections = [(7u8, 5u64), (2, 3), (255, 9)];
        let (global_len, nrecords) = (4u64, 6u64);
        for class in [Class::Bits32, Class::Bits64] {
            for order in [ByteOrder::Little, ByteOrder::Big] {
                for w in [4u8, 8] {
                    let mut file = Header::encode_as(
                        w,
                        class,
                        order,
                        b"hatf10.dtd",
                        nrecords,
                        global_len,
                        &sections,
                    )
                    .unwrap();
                    let start = file.len() as u64;
                    assert_eq!(start, Header::encoded_len(w, 10, 3));
                    file.resize(file.len() + 21, 0);
                    let h = Header::parse(&file).unwrap();
                    assert_eq!(h.class, class);
                    assert_eq!(h.byte_order, order);
                    assert_eq!(h.int_width, w);
                    assert_eq!(file[7], if w == 8 { 8 } else { 0 });
                    assert_eq!((h.nsections, h.start, h.nrecords), (3, start, nrecords));
                    assert_eq!(h.dtd_name, "hatf10.dtd");
                    assert_eq!(h.header_len, 16 + 3 * w as u64 + 10);
                    let idx = SectionIndex::parse(&file, &h).unwrap();
                    let got: Vec<_> = idx.regions().collect();
                    let s = start;
                    assert_eq!(
                        got,
                        vec![(7, s + 4..s + 9), (2, s + 9..s + 12), (255, s + 12..s + 21)]
                    );
                    assert_eq!(idx.global_region(), s..s + 4);
                }
            }
        }
    }

    #[test]
    fn encode_picks_intwidth() {
        let small =
            Header::encode(Class::Bits64, ByteOrder::Little, "a", 1, 10, &[(1, 2)]).unwrap();
        assert_eq!(small[OFF_INTWIDTH as usize], 0);
        // A large global region alone stores no large integer when there are no sections.
        let big_global =
            Header::encode(Class::Bits64, ByteOrder::Little, "a", 0, 1 << 40, &[]).unwrap();
        assert_eq!(big_global[OFF_INTWIDTH as usize], 0);
        // ... but it pushes a following section's sh_start past 32 bits.
        let big_start =
            Header::encode(Class::Bits64, ByteOrder::Big, "a", 0, 1 << 32, &[(1, 2)]).unwrap();
        assert_eq!(big_start[OFF_INTWIDTH as usize], 8);
        // A large last section: its start fits, its size does not.
        let big_size =
            Header::encode(Class::Bits32, ByteOrder::Little, "a", 0, 0, &[(1, 1 << 32)]).unwrap();
        assert_eq!(big_size[OFF_INTWIDTH as usize], 8);
        let many =
            Header::encode(Class::Bits32, ByteOrder::Little, "a", 1 << 32, 1 << 33, &[]).unwrap();
        assert_eq!(many[OFF_INTWIDTH as usize], 8);
        // Exactly u32::MAX still fits.
        let edge = Header::encode(
            Class::Bits32,
            ByteOrder::Little,
            "a",
            0,
            0,
            &[(1, u32::MAX as u64)],
        )
        .unwrap();
        assert_eq!(edge[OFF_INTWIDTH as usize], 0);
    }

    #[test]
    fn encode_rejects_bad_requests() {
        let enc = |name: &str, nrec, global, secs: &[(u8, u64)]| {
            Header::encode(Class::Bits32, ByteOrder::Little, name, nrec, global, secs)
        };
        assert_eq!(
            enc("", 0, 0, &[]),
            Err(HeaderEncodeError::BadDtdName { len: 0 })
        );
        let long = "x".repeat(256);
        assert_eq!(
            enc(&long, 0, 0, &[]),
            Err(HeaderEncodeError::BadDtdName { len: 256 })
        );
        assert!(enc(&"x".repeat(255), 0, 0, &[]).is_ok());
        assert_eq!(
            enc("a", 0, 0, &[(1, 1), (0, 1)]),
            Err(HeaderEncodeError::BadSectionNumber { index: 1 })
        );
        assert_eq!(
            enc("a", 0, 0, &[(4, 1), (5, 1), (4, 1)]),
            Err(HeaderEncodeError::DuplicateSection {
                number: 4,
                first: 0,
                second: 2
            })
        );
        assert_eq!(
            enc("a", 0, 0, &[(4, 0)]),
            Err(HeaderEncodeError::EmptySection { index: 0 })
        );
        assert_eq!(
            enc("a", 4, 1, &[(4, 2)]),
            Err(HeaderEncodeError::TooManyRecords {
                nrecords: 4,
                available: 3
            })
        );
        assert_eq!(
            enc("a", 0, u64::MAX, &[(4, 1)]),
            Err(HeaderEncodeError::TooLarge)
        );
        assert_eq!(
            enc("a", 0, u64::MAX - 10, &[]),
            Err(HeaderEncodeError::TooLarge)
        );
    }

    #[test]
    fn minimal_trace_parses() {
        let raw = Raw::default();
        let h = Header::parse(&raw.bytes()).unwrap();
        assert_eq!((h.start, h.nsections, h.nrecords), (33, 0, 0));
        assert_eq!(h.dtd_name, "t.dtd");
        // Byte-for-byte what Header::encode makes.
        let enc = Header::encode(Class::Bits32, ByteOrder::Little, "t.dtd", 0, 0, &[]).unwrap();
        assert_eq!(enc, raw.bytes());
    }

    #[test]
    fn bad_magic() {
        let raw = Raw {
            magic: *b"\x7FMTX",
            ..Raw::default()
        };
        assert!(
            matches!(err(&raw), ContainerError::BadMagic { offset: 0, ref found } if found == b"\x7FMTX")
        );
        // A short file that is not a trace is reported as such, not as truncated.
        let e = Header::parse(b"GI").unwrap_err();
        assert!(
            matches!(e, ContainerError::BadMagic { offset: 0, .. }),
            "{e}"
        );
        assert_eq!(e.offset(), Some(0));
    }

    #[test]
    fn truncated_fixed_header() {
        for len in [0usize, 3, 4, 15] {
            let bytes = &Raw::default().bytes()[..len];
            match Header::parse(bytes).unwrap_err() {
                ContainerError::TruncatedHeader {
                    offset: 0,
                    needed: 16,
                    available,
                    ..
                } => assert_eq!(available, len as u64),
                e => panic!("{len}: {e}"),
            }
        }
    }

    #[test]
    fn bad_class_order_dtdlength_intwidth() {
        let e = err(&Raw {
            class: 3,
            ..Raw::default()
        });
        assert!(
            matches!(
                e,
                ContainerError::BadClass {
                    offset: 4,
                    value: 3
                }
            ),
            "{e}"
        );
        let e = err(&Raw {
            order: 0,
            ..Raw::default()
        });
        assert!(
            matches!(
                e,
                ContainerError::BadByteOrder {
                    offset: 5,
                    value: 0
                }
            ),
            "{e}"
        );
        let e = err(&Raw {
            dtdlength: Some(0),
            ..Raw::default()
        });
        assert!(
            matches!(e, ContainerError::EmptyDtdName { offset: 6 }),
            "{e}"
        );
        let e = err(&Raw {
            intwidth: 4,
            ..Raw::default()
        });
        assert!(
            matches!(
                e,
                ContainerError::BadIntWidth {
                    offset: 7,
                    value: 4
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn reserved_bytes_each() {
        let mut raw = Raw::default();
        raw.reserved[0] = 0x80;
        assert!(matches!(
            err(&raw),
            ContainerError::UnknownExtension {
                offset: 8,
                value: 0x80
            }
        ));
        for i in 1..8u8 {
            let mut raw = Raw::default();
            raw.reserved[i as usize] = 0x80;
            match err(&raw) {
                ContainerError::ReservedNotZero {
                    offset,
                    index,
                    value: 0x80,
                } => {
                    assert_eq!((offset, index), (8 + i as u64, i));
                }
                e => panic!("{e}"),
            }
        }
    }

    #[test]
    fn truncated_integers_and_name() {
        for (intwidth, needed) in [(0u8, 12u64), (8, 24)] {
            let raw = Raw {
                intwidth,
                ..Raw::default()
            };
            let bytes = raw.bytes();
            let e = Header::parse(&bytes[..20]).unwrap_err();
            assert!(
                matches!(e, ContainerError::TruncatedHeader { offset: 16, needed: n, available: 4, .. } if n == needed),
                "{e}"
            );
            // Name cut after two of its five bytes.
            let name_at = 16 + needed as usize;
            let e = Header::parse(&bytes[..name_at + 2]).unwrap_err();
            match e {
                ContainerError::TruncatedHeader {
                    offset,
                    needed: 5,
                    available: 2,
                    what: "DTD name",
                } => assert_eq!(offset, name_at as u64),
                e => panic!("{e}"),
            }
        }
    }

    #[test]
    fn dtd_name_not_utf8() {
        let raw = Raw {
            dtd: b"ab\xFFc".to_vec(),
            ..Raw::default()
        };
        let e = err(&raw);
        assert!(
            matches!(
                e,
                ContainerError::DtdNameNotUtf8 {
                    offset: 28,
                    bad_offset: 30
                }
            ),
            "{e}"
        );
    }

    /// A tiny file claiming billions of sections is rejected from the header alone, before
    /// anything is sized by the claim.
    #[test]
    fn huge_nsections_on_tiny_file() {
        let raw = Raw {
            nsections: Some(u32::MAX as u64),
            ..Raw::default()
        };
        match err(&raw) {
            ContainerError::TooManySections {
                offset: 16,
                nsections,
                needed,
                available: 0,
            } => assert_eq!((nsections, needed), (u32::MAX as u64, u32::MAX as u64 * 12)),
            e => panic!("{e}"),
        }
        let raw = Raw {
            intwidth: 8,
            nsections: Some(u64::MAX),
            body_len: 100,
            ..Raw::default()
        };
        match err(&raw) {
            ContainerError::TooManySections {
                offset: 16,
                needed: u64::MAX,
                available: 100,
                ..
            } => {}
            e => panic!("{e}"),
        }
    }

    #[test]
    fn bad_start() {
        for (intwidth, off) in [(0u8, 20u64), (8, 24)] {
            let raw = Raw {
                intwidth,
                start: Some(1000),
                body_len: 2,
                ..Raw::default()
            };
            let expected = raw.table_end();
            match err(&raw) {
                ContainerError::BadStart {
                    offset,
                    start: 1000,
                    expected: e,
                } => assert_eq!((offset, e), (off, expected)),
                e => panic!("{e}"),
            }
        }
        // One section header fits in the file, but start claims none.
        let mut raw = Raw {
            sections: vec![(1, 0, 4)],
            body_len: 4,
            ..Raw::default()
        };
        raw.start = Some(raw.header_len());
        assert!(matches!(
            err(&raw),
            ContainerError::BadStart { offset: 20, .. }
        ));
    }

    #[test]
    fn too_many_records() {
        let raw = Raw {
            nrecords: 4,
            body_len: 3,
            ..Raw::default()
        };
        let e = err(&raw);
        assert!(
            matches!(
                e,
                ContainerError::TooManyRecords {
                    offset: 24,
                    nrecords: 4,
                    available: 3
                }
            ),
            "{e}"
        );
        let raw = Raw {
            nrecords: 3,
            body_len: 3,
            ..Raw::default()
        };
        assert!(Header::parse(&raw.bytes()).is_ok());
    }

    fn arb_order() -> impl Strategy<Value = ByteOrder> {
        prop_oneof![Just(ByteOrder::Little), Just(ByteOrder::Big)]
    }

    fn arb_class() -> impl Strategy<Value = Class> {
        prop_oneof![Just(Class::Bits32), Just(Class::Bits64)]
    }

    proptest! {
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(h) = Header::parse(&bytes) {
                let _ = SectionIndex::parse(&bytes, &h);
            }
        }

        /// Arbitrary bytes after a plausible fixed header reach the deeper checks.
        #[test]
        fn parse_never_panics_after_magic(
            class in 1u8..=2, order in 1u8..=2, dl in any::<u8>(), iw in prop_oneof![Just(0u8), Just(8)],
            rest in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut bytes = vec![0x7F, b'M', b'T', b'F', class, order, dl, iw, 0, 0, 0, 0, 0, 0, 0, 0];
            bytes.extend_from_slice(&rest);
            if let Ok(h) = Header::parse(&bytes) {
                let _ = SectionIndex::parse(&bytes, &h);
            }
        }

        #[test]
        fn encode_parse_round_trip(
            class in arb_class(),
            order in arb_order(),
            name in "[a-zA-Z0-9_./:-]{1,40}",
            global_len in 0u64..64,
            ids in proptest::sample::subsequence((1u8..=255).collect::<Vec<_>>(), 0..20),
            sizes in proptest::collection::vec(1u64..64, 20),
            shuffle in any::<u64>(),
            nrec_frac in 0u64..=100,
            force8 in any::<bool>(),
        ) {
            // Section ids in any order, not only increasing.
            let mut ids = ids;
            let n = ids.len();
            if n > 1 {
                ids.rotate_left((shuffle % n as u64) as usize);
            }
            let sections: Vec<(u8, u64)> = ids.iter().copied().zip(sizes.iter().copied()).collect();
            let body: u64 = global_len + sections.iter().map(|s| s.1).sum::<u64>();
            let nrecords = body * nrec_frac / 100;
            let mut file = if force8 {
                Header::encode_as(8, class, order, name.as_bytes(), nrecords, global_len, &sections).unwrap()
            } else {
                Header::encode(class, order, &name, nrecords, global_len, &sections).unwrap()
            };
            let start = file.len() as u64;
            file.resize((start + body) as usize, 0);
            let h = Header::parse(&file).unwrap();
            prop_assert_eq!(h.class, class);
            prop_assert_eq!(h.byte_order, order);
            prop_assert_eq!(h.int_width, if force8 { 8 } else { 4 });
            prop_assert_eq!(h.start, start);
            prop_assert_eq!(h.nrecords, nrecords);
            prop_assert_eq!(h.nsections, sections.len() as u64);
            prop_assert_eq!(&h.dtd_name, &name);
            let idx = SectionIndex::parse(&file, &h).unwrap();
            prop_assert_eq!(idx.global_region(), start..start + global_len);
            let mut at = start + global_len;
            for (i, (&(num, size), got)) in sections.iter().zip(idx.sections()).enumerate() {
                prop_assert_eq!(*got, crate::container::SectionHeader { number: num, start: at, size });
                prop_assert_eq!(idx.by_number(num), Some(got));
                prop_assert_eq!(idx.index_of(num), Some(i));
                at += size;
            }
            prop_assert_eq!(at, file.len() as u64);
        }
    }
}
