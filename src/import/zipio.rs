//! ZIP wrapping: reading entries of a ZIP input one at a time with their metadata, and writing
//! a ZIP output that keeps as much of it as the `zip` crate can write.
//!
//! Kept (docs/mappings.md, "ZIP and XML"): entry names and order, the compression method, the
//! DOS modification time, Unix permissions, the extra fields (those the local and the central
//! header share, and those only in the central header) and the archive comment. Not written by
//! the `zip` crate, so they can differ: the compressed bytes themselves (another deflate
//! encoder), entry comments, extra fields only in the local header, "version made by", the
//! data-descriptor flag and the layout of headers.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::Path;

use zip::write::{FileOptions, FullFileOptions};
use zip::CompressionMethod;

/// Does the file start with a ZIP local-file header?
pub fn is_zip(path: &Path) -> bool {
    let mut magic = [0u8; 4];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .map(|_| &magic == b"PK\x03\x04")
        .unwrap_or(false)
}

/// What is known of a ZIP entry before reading it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryMeta {
    /// The entry's name (a folder's ends with `/`).
    pub name: String,
    /// The compression method code: 0 stored, 8 deflated.
    pub method: u64,
    /// Whether it is a file (not a folder).
    pub is_file: bool,
    /// The DOS modification date and time: `date << 16 | time` (0: none).
    pub time: u32,
    /// The external attributes (Unix mode in the high 16 bits when made on Unix).
    pub attrs: u32,
    /// "Version made by": the system in the high byte (3 Unix, 0 DOS/FAT).
    pub made_by: u16,
    /// The extra field of the local header.
    pub local_extra: Vec<u8>,
    /// The extra field of the central-directory header.
    pub central_extra: Vec<u8>,
    /// The entry comment.
    pub comment: Vec<u8>,
}

/// A ZIP archive being read.
pub struct Reader {
    z: zip::ZipArchive<File>,
    /// A second handle on the same file, read by position (the headers' raw bytes).
    raw: File,
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

impl Reader {
    /// Open an archive.
    pub fn new(file: File) -> Result<Reader, String> {
        let raw = file.try_clone().map_err(|e| e.to_string())?;
        Ok(Reader {
            z: zip::ZipArchive::new(file).map_err(|e| format!("not a readable ZIP file: {e}"))?,
            raw,
        })
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.z.len()
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.z.len() == 0
    }

    /// The archive comment.
    pub fn comment(&self) -> &[u8] {
        self.z.comment()
    }

    /// `n` bytes at `offset`, read without moving the archive's position.
    fn read_at(&self, offset: u64, n: usize) -> Result<Vec<u8>, String> {
        let mut buf = vec![0u8; n];
        read_exact_at(&self.raw, &mut buf, offset)
            .map_err(|e| format!("cannot read a header at offset {offset}: {e}"))?;
        Ok(buf)
    }

    /// Entry `i`'s metadata, from its central-directory and local headers.
    pub fn meta(&mut self, i: usize) -> Result<EntryMeta, String> {
        let (name, method, is_file, central_at, local_at) = {
            let e = self.z.by_index_raw(i).map_err(|e| e.to_string())?;
            let method = match e.compression() {
                CompressionMethod::Stored => 0,
                _ => 8,
            };
            (
                e.name().to_string(),
                method,
                e.is_file(),
                e.central_header_start(),
                e.header_start(),
            )
        };
        let c = self.read_at(central_at, 46)?;
        if u32_at(&c, 0) != 0x0201_4b50 {
            return Err(format!("entry {name}: no central-directory header"));
        }
        let (n, e, k) = (
            u16_at(&c, 28) as usize,
            u16_at(&c, 30) as usize,
            u16_at(&c, 32) as usize,
        );
        let tail = self.read_at(central_at + 46, n + e + k)?;
        let l = self.read_at(local_at, 30)?;
        if u32_at(&l, 0) != 0x0403_4b50 {
            return Err(format!("entry {name}: no local header"));
        }
        let (ln, le) = (u16_at(&l, 26) as usize, u16_at(&l, 28) as usize);
        // Design: the `zip` crate reads an entry by its central-directory header and only
        // skips over the local one, so an archive whose two headers of an entry disagree reads
        // differently depending on which a reader trusts, and its export (written with the
        // central view) would differ from the input (found by fuzzing: a central entry named ""
        // pointing at the local header of `info/`, and a local method 10 under a central
        // method 0, which the export could not write). Refused: the name and the compression
        // method must be the same in both headers.
        let local_name = self.read_at(local_at + 30, ln)?;
        if local_name != tail[..n] {
            return Err(format!(
                "damaged ZIP archive: entry {} is named {:?} in its central-directory header at offset {central_at} but {:?} in its local header at offset {local_at}",
                i + 1,
                String::from_utf8_lossy(&tail[..n]),
                String::from_utf8_lossy(&local_name),
            ));
        }
        let (cm, lm) = (u16_at(&c, 10), u16_at(&l, 8));
        if cm != lm {
            return Err(format!(
                "damaged ZIP archive: entry {} ({name:?}) has compression method {cm} in its central-directory header at offset {central_at} but {lm} in its local header at offset {local_at}",
                i + 1
            ));
        }
        // Design: export can only write a valid DOS date and time (the `zip` crate refuses
        // others), so an entry with another (found by fuzzing: minute 61) would come back with
        // a different date. Refused rather than changed.
        let (date, time) = (u16_at(&c, 14), u16_at(&c, 12));
        if zip::DateTime::try_from_msdos(date, time).is_err() {
            return Err(format!(
                "damaged ZIP archive: entry {} ({name:?}) has an invalid DOS date and time (date 0x{date:04x}, time 0x{time:04x}) in its central-directory header at offset {central_at}",
                i + 1
            ));
        }
        let local_extra = self.read_at(local_at + 30 + ln as u64, le)?;
        Ok(EntryMeta {
            name,
            method,
            is_file,
            time: (u16_at(&c, 14) as u32) << 16 | u16_at(&c, 12) as u32,
            attrs: u32_at(&c, 38),
            made_by: u16_at(&c, 4),
            local_extra,
            central_extra: tail[n..n + e].to_vec(),
            comment: tail[n + e..].to_vec(),
        })
    }

    /// A reader of entry `i`'s uncompressed bytes.
    pub fn entry(&mut self, i: usize) -> Result<impl Read + '_, String> {
        self.z.by_index(i).map_err(|e| e.to_string())
    }
}

#[cfg(unix)]
fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, offset)
}

#[cfg(not(unix))]
fn read_exact_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    // Elsewhere the handles share a position: read the headers before the entry's data.
    let mut f = f;
    f.seek(std::io::SeekFrom::Start(offset))?;
    f.read_exact(buf)
}

/// The fields of an extra-field block: (header id, data).
fn extra_fields(b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 4 <= b.len() {
        let (id, len) = (u16_at(b, i), u16_at(b, i + 2) as usize);
        let Some(data) = b.get(i + 4..i + 4 + len) else {
            break;
        };
        out.push((id, data));
        i += 4 + len;
    }
    out
}

/// A ZIP archive being written.
pub struct Writer<W: Write + Seek> {
    z: zip::ZipWriter<W>,
}

impl<W: Write + Seek> Writer<W> {
    /// Start an archive.
    pub fn new(w: W) -> Writer<W> {
        Writer {
            z: zip::ZipWriter::new(w),
        }
    }

    /// Set the archive comment.
    pub fn set_comment(&mut self, comment: &[u8]) {
        self.z.set_raw_comment(comment.into());
    }

    /// Start an entry with the metadata of `e` that the `zip` crate can write: method (0
    /// stored, otherwise deflated), time, Unix permissions, the extra fields the local and
    /// central headers share, and those only in the central one (`dir` for a folder entry).
    pub fn start(&mut self, e: &EntryMeta, dir: bool) -> std::io::Result<()> {
        let m = if e.method == 0 {
            CompressionMethod::Stored
        } else {
            CompressionMethod::Deflated
        };
        let mut opts: FullFileOptions<'_> = FileOptions::default()
            .compression_method(m)
            .large_file(false);
        // No time recorded (a trace of an older import): the ZIP epoch, 1980-01-01.
        let time =
            zip::DateTime::try_from_msdos((e.time >> 16) as u16, e.time as u16).unwrap_or_default();
        opts = opts.last_modified_time(time);
        if e.made_by >> 8 == 3 && e.attrs >> 16 != 0 {
            opts = opts.unix_permissions(e.attrs >> 16);
        }
        let local = extra_fields(&e.local_extra);
        for (id, data) in extra_fields(&e.central_extra) {
            let shared = local.contains(&(id, data));
            // A field the crate refuses (it writes some itself) is left out.
            let _ = opts.add_extra_data(id, data.into(), !shared);
        }
        if dir {
            self.z.add_directory(e.name.trim_end_matches('/'), opts)
        } else {
            self.z.start_file(e.name.as_str(), opts)
        }
        .map_err(std::io::Error::other)
    }

    /// Finish the archive.
    pub fn finish(self) -> std::io::Result<W> {
        self.z.finish().map_err(std::io::Error::other)
    }
}

impl<W: Write + Seek> Write for Writer<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.z.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.z.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_metadata_survives_a_rewrite() {
        let e = EntryMeta {
            name: "a.txt".into(),
            method: 8,
            is_file: true,
            time: (((2007 - 1980) << 9 | 2 << 5 | 12) << 16) | (11 << 11 | 8 << 5 | 29),
            attrs: 0o100640 << 16,
            made_by: 3 << 8 | 30,
            local_extra: vec![0x75, 0x78, 3, 0, 1, 2, 3],
            central_extra: vec![0x75, 0x78, 3, 0, 1, 2, 3, 0x34, 0x12, 1, 0, 9],
            comment: Vec::new(),
        };
        let mut w = Writer::new(std::io::Cursor::new(Vec::new()));
        w.set_comment(b"an archive");
        w.start(&e, false).unwrap();
        w.write_all(b"hello").unwrap();
        let bytes = w.finish().unwrap().into_inner();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.zip");
        std::fs::write(&p, &bytes).unwrap();
        let mut r = Reader::new(File::open(&p).unwrap()).unwrap();
        assert_eq!(r.comment(), b"an archive");
        let got = r.meta(0).unwrap();
        assert_eq!(got.name, e.name);
        assert_eq!(got.time, e.time);
        assert_eq!(got.attrs >> 16 & 0o777, 0o640);
        assert_eq!(got.local_extra, e.local_extra);
        assert_eq!(got.central_extra, e.central_extra);
    }

    #[test]
    fn extra_fields_are_split_and_a_cut_field_ignored() {
        let b = [1, 0, 2, 0, 9, 9, 2, 0, 0, 0, 3, 0, 5];
        assert_eq!(extra_fields(&b), vec![(1, &[9u8, 9][..]), (2, &[][..])]);
    }
}
