//! ZIP wrapping: reading entries of a ZIP input one at a time, and writing a ZIP output.

use std::fs::File;
use std::io::{Read, Seek, Write};
use std::path::Path;

use zip::write::SimpleFileOptions;
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryMeta {
    /// The entry's name (a folder's ends with `/`).
    pub name: String,
    /// The compression method code: 0 stored, 8 deflated.
    pub method: u64,
    /// Whether it is a file (not a folder).
    pub is_file: bool,
}

/// A ZIP archive being read.
pub struct Reader<R: Read + Seek> {
    z: zip::ZipArchive<R>,
}

impl<R: Read + Seek> Reader<R> {
    /// Open an archive.
    pub fn new(r: R) -> Result<Reader<R>, String> {
        Ok(Reader {
            z: zip::ZipArchive::new(r).map_err(|e| format!("not a readable ZIP file: {e}"))?,
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

    /// Entry `i`'s metadata.
    pub fn meta(&mut self, i: usize) -> Result<EntryMeta, String> {
        let e = self.z.by_index_raw(i).map_err(|e| e.to_string())?;
        let method = match e.compression() {
            CompressionMethod::Stored => 0,
            _ => 8,
        };
        Ok(EntryMeta {
            name: e.name().to_string(),
            method,
            is_file: e.is_file(),
        })
    }

    /// A reader of entry `i`'s uncompressed bytes.
    pub fn entry(&mut self, i: usize) -> Result<impl Read + '_, String> {
        self.z.by_index(i).map_err(|e| e.to_string())
    }
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

    /// Start an entry (method 0 stored, otherwise deflated; `dir` for a folder entry).
    pub fn start(&mut self, name: &str, method: u64, dir: bool) -> std::io::Result<()> {
        let m = if method == 0 {
            CompressionMethod::Stored
        } else {
            CompressionMethod::Deflated
        };
        let opts = SimpleFileOptions::default()
            .compression_method(m)
            .large_file(false);
        if dir {
            self.z.add_directory(name.trim_end_matches('/'), opts)
        } else {
            self.z.start_file(name, opts)
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
