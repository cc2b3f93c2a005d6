//! Which sections of a trace are tables (docs/format.md §8), kept beside a seek index:
//! `INDEX.tables` (§15.6), so that a decode resumed at a checkpoint knows it without the pass
//! over the whole trace's metadata records that [`Reader::is_table`] makes otherwise.
//!
//! [`Reader::is_table`]: crate::decode::Reader::is_table

// Design: a file of its own, as the analysis state (§15.4) and the births (§15.5): the index
// of version 1 has no room for it (an older reader refuses any change to `TRACE.idx`), and a
// file it never opens is ignored by construction. It is written only where the answer needs
// that pass (a section with records that the DTD alone does not make a table): elsewhere the
// DTD answers at once. The answer cannot be had more cheaply: any metadata record anywhere in
// the trace may switch any integer field to `sectionOffset` of any declared section (§5.4), and
// a resumed decode has not seen the records before its checkpoint, so neither the DTD nor the
// metadata records seen so far rule a section out. It is bound to its index by the index's
// checksum and to the DTD by the state's hash (§15.4); a file that does not read, of another
// version, of another index or DTD is not used (the pass runs, as without it), and `mtf check
// --index` / `mtf index --check` compare it with the pass's answer.

use std::path::{Path, PathBuf};

use super::fnv1a;
use crate::io::{IoError, Output};

/// The first bytes of a tables file: `\x7fMTT`.
pub const TABLES_MAGIC: [u8; 4] = [0x7F, b'M', b'T', b'T'];
/// The version of the tables file this library reads and writes.
pub const TABLES_VERSION: u8 = 1;
/// Bytes of a version-1 file: magic, version, 3 reserved, index checksum, DTD hash, 32 bytes of
/// sections, checksum.
const SIZE: usize = 4 + 4 + 8 + 8 + 32 + 8;

/// The tables file of an index file: `INDEX.tables` (`None` for standard input).
pub fn tables_path(index: &Path) -> Option<PathBuf> {
    if index.as_os_str() == "-" {
        return None;
    }
    let mut s = index.as_os_str().to_owned();
    s.push(".tables");
    Some(PathBuf::from(s))
}

/// What an index knows of the trace's tables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Tables {
    /// No tables file (the DTD answers, or an index made before them, or from standard input).
    #[default]
    None,
    /// The answer of the pass, for the DTD with this hash.
    Stored {
        /// [`schema_hash`](super::analysis::schema_hash) of the DTD it was made with.
        dtd: u64,
        /// Per section id, whether it is a table.
        sections: Box<[bool; 256]>,
    },
    /// A file that cannot be used: where and why (for `mtf check` and `mtf index --check`).
    Unusable {
        /// Offset in the file.
        at: u64,
        /// What is wrong.
        what: String,
    },
}

/// The stored form (docs/format.md §15.6).
pub(crate) fn to_bytes(index_sum: u64, dtd: u64, sections: &[bool; 256]) -> Vec<u8> {
    let mut out = Vec::with_capacity(SIZE);
    out.extend_from_slice(&TABLES_MAGIC);
    out.push(TABLES_VERSION);
    out.extend_from_slice(&[0, 0, 0]);
    out.extend_from_slice(&index_sum.to_le_bytes());
    out.extend_from_slice(&dtd.to_le_bytes());
    let mut bits = [0u8; 32];
    for (s, _) in sections.iter().enumerate().filter(|(_, t)| **t) {
        bits[s / 8] |= 1 << (s % 8);
    }
    out.extend_from_slice(&bits);
    let sum = fnv1a(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Read the stored form of the tables file of the index whose checksum is `index_sum`.
pub(crate) fn from_bytes(bytes: &[u8], index_sum: u64) -> Tables {
    let bad = |at: usize, what: &str| Tables::Unusable {
        at: at as u64,
        what: what.into(),
    };
    let le = |at: usize| {
        let mut a = [0u8; 8];
        a.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(a)
    };
    if bytes.len() < 5 || bytes[..4] != TABLES_MAGIC {
        return bad(0, "no tables magic (\\x7fMTT)");
    }
    if bytes[4] != TABLES_VERSION {
        return bad(
            4,
            &format!("version {}, this reader knows {TABLES_VERSION}", bytes[4]),
        );
    }
    if bytes.len() != SIZE {
        return bad(
            bytes.len().min(SIZE),
            &format!("{} bytes, a version-1 file has {SIZE}", bytes.len()),
        );
    }
    if bytes[5..8] != [0, 0, 0] {
        return bad(5, "reserved bytes are not zero");
    }
    if fnv1a(&bytes[..SIZE - 8]) != le(SIZE - 8) {
        return bad(SIZE - 8, "checksum mismatch (the file is damaged)");
    }
    if le(8) != index_sum {
        return bad(
            8,
            "it was made for another index: the index was rebuilt since",
        );
    }
    let mut sections = [false; 256];
    for (s, t) in sections.iter_mut().enumerate() {
        *t = bytes[24 + s / 8] & (1 << (s % 8)) != 0;
    }
    if sections[0] {
        return bad(24, "the global region is never a table");
    }
    Tables::Stored {
        dtd: le(16),
        sections: Box::new(sections),
    }
}

/// Read the tables file at `path`, if there is one (a larger file than a version-1 one is read
/// only as far as its head: another version).
pub(crate) fn load(path: &Path, index_sum: u64) -> Tables {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(path) else {
        return Tables::None;
    };
    let mut bytes = Vec::new();
    match file.take(SIZE as u64 + 1).read_to_end(&mut bytes) {
        Ok(_) => from_bytes(&bytes, index_sum),
        Err(e) => Tables::Unusable {
            at: 0,
            what: format!("cannot be read: {e}"),
        },
    }
}

/// Write the tables file at `path` atomically.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), IoError> {
    use std::io::Write;
    let mut out = Output::create(path)?;
    out.write_all(bytes).map_err(|e| out.error(e))?;
    out.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stored_form_reads_back_and_every_damage_is_refused() {
        let mut sections = [false; 256];
        sections[3] = true;
        sections[255] = true;
        let b = to_bytes(7, 9, &sections);
        assert_eq!(b.len(), SIZE);
        assert_eq!(
            from_bytes(&b, 7),
            Tables::Stored {
                dtd: 9,
                sections: Box::new(sections)
            }
        );
        // Another index.
        assert!(matches!(from_bytes(&b, 8), Tables::Unusable { at: 8, .. }));
        // Every byte flipped is refused (the checksum, or the field before it).
        for i in 0..b.len() {
            let mut d = b.clone();
            d[i] ^= 0x10;
            assert!(
                matches!(from_bytes(&d, 7), Tables::Unusable { .. }),
                "byte {i}"
            );
        }
        // Another version is not read, whatever follows.
        let mut v2 = b.clone();
        v2[4] = 2;
        v2.extend_from_slice(&[0; 40]);
        assert!(
            matches!(from_bytes(&v2, 7), Tables::Unusable { at: 4, ref what } if what.contains("version 2"))
        );
        // Cut short, or empty.
        for n in [0, 3, 5, 20, SIZE - 1] {
            assert!(matches!(from_bytes(&b[..n], 7), Tables::Unusable { .. }));
        }
    }
}
