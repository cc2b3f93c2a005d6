//! One input of an import, opened once: a file, `-`, a pipe or a FIFO, plain or compressed, a
//! text or a ZIP. What format detection reads is kept and replayed into the import.

// Design: standard input and pipes can be read only once, so the importer never opens a name
// twice. An input is opened here; detection asks for a *sample* (the first lines, read into a
// buffer that the import then reads again before the rest of the stream); a ZIP, which must be
// read with seeks, is read from the file itself when it is a regular uncompressed file, and
// otherwise (standard input, a pipe, a compressed ZIP) copied once to a temporary file.

use std::io::{BufRead, Cursor, Read, Write};
use std::path::Path;

use super::error::{ImportError, ImportErrorKind};
use super::zipio;

/// What detection reads of a text input: up to this many lines…
pub(crate) const SAMPLE_LINES: usize = 200;
/// …or this many bytes, whichever comes first.
pub(crate) const SAMPLE_BYTES: usize = 1 << 20;

pub(crate) enum Body {
    /// A text: the bytes read so far (replayed first), then the rest of the stream.
    Text {
        head: Vec<u8>,
        rest: Box<dyn BufRead + Send>,
        eof: bool,
    },
    /// A ZIP archive, and the temporary file it was copied to when it was not a regular file.
    Zip(zipio::Reader, Option<crate::io::TempFile>),
}

/// An input opened for import ([`ImportInput::open`]).
pub struct ImportInput {
    /// The name as shown in messages (the path, or `-`).
    pub(crate) name: String,
    /// The file name a mapping part is chosen by (`stdin` for `-`).
    pub(crate) base: String,
    /// The size in bytes when known in advance: a regular file, neither compressed nor a ZIP.
    pub(crate) size: Option<u64>,
    pub(crate) body: Body,
}

impl std::fmt::Debug for ImportInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportInput")
            .field("name", &self.name)
            .field("zip", &self.is_zip())
            .finish()
    }
}

const ZIP_MAGIC: &[u8; 4] = b"PK\x03\x04";

impl ImportInput {
    /// Open `path` (`-` for standard input). A compressed input (gzip, zstd, xz, bzip2) is read
    /// decompressed; an input (decompressed) that starts with a ZIP signature is read entry by
    /// entry.
    pub fn open(path: &Path) -> Result<ImportInput, ImportError> {
        let name = crate::escape::escape_path(path).into_owned();
        let stdin = path.as_os_str() == "-";
        let base = if stdin {
            "stdin".to_string()
        } else {
            path.file_name()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let read_err = |e: &dyn std::fmt::Display| {
            ImportError::at(&name, ImportErrorKind::Read(e.to_string()))
        };
        // A regular file that is a ZIP is read in place.
        let meta = (!stdin).then(|| std::fs::metadata(path).ok()).flatten();
        if meta.as_ref().is_some_and(|m| m.is_file()) && zipio::is_zip(path) {
            let file = std::fs::File::open(path).map_err(|e| read_err(&e))?;
            return ImportInput::zip(name, base, file, None);
        }
        // The library's I/O errors name the path themselves.
        let mut rest = crate::io::Input::reader(path)
            .map_err(|e| ImportError::at("", ImportErrorKind::Read(e.to_string())))?;
        let mut head = Vec::new();
        let eof = fill(&mut rest, &mut head, ZIP_MAGIC.len()).map_err(|e| read_err(&e))?;
        if head.starts_with(ZIP_MAGIC) {
            // A ZIP on standard input, from a pipe or compressed: copy it once to a
            // temporary file the ZIP reader can seek in.
            let mut spool = crate::io::TempFile::new().map_err(|e| read_err(&e))?;
            spool.write_all(&head).map_err(|e| read_err(&e))?;
            std::io::copy(&mut rest, &mut spool).map_err(|e| read_err(&e))?;
            spool.flush().map_err(|e| read_err(&e))?;
            let file = spool.file().try_clone().map_err(|e| read_err(&e))?;
            return ImportInput::zip(name, base, file, Some(spool));
        }
        let size = match &meta {
            Some(m) if m.is_file() && !is_compressed(path) => Some(m.len()),
            _ => None,
        };
        Ok(ImportInput {
            name,
            base,
            size,
            body: Body::Text { head, rest, eof },
        })
    }

    /// A text input read from `r` (not decompressed, not a ZIP); `name` is shown in messages
    /// and chooses the mapping's part.
    pub fn from_reader(name: &str, r: impl BufRead + Send + 'static) -> ImportInput {
        ImportInput {
            name: name.to_string(),
            base: name.rsplit(['/', '\\']).next().unwrap_or(name).to_string(),
            size: None,
            body: Body::Text {
                head: Vec::new(),
                rest: Box::new(r),
                eof: false,
            },
        }
    }

    /// A ZIP input read from `file` (`spool`: the temporary file it is, kept while it is read).
    fn zip(
        name: String,
        base: String,
        file: std::fs::File,
        spool: Option<crate::io::TempFile>,
    ) -> Result<ImportInput, ImportError> {
        let z = zipio::Reader::new(file)
            .map_err(|e| ImportError::at(&name, ImportErrorKind::Input(e)))?;
        Ok(ImportInput {
            name,
            base,
            size: None,
            body: Body::Zip(z, spool),
        })
    }

    /// Open every input of an import; standard input (`-`) may be named once.
    pub fn open_all(paths: &[impl AsRef<Path>]) -> Result<Vec<ImportInput>, ImportError> {
        let stdin = paths
            .iter()
            .filter(|p| p.as_ref().as_os_str() == "-")
            .count();
        if stdin > 1 {
            return Err(ImportError::at("-", ImportErrorKind::StdinTwice));
        }
        paths
            .iter()
            .map(|p| ImportInput::open(p.as_ref()))
            .collect()
    }

    /// The name as shown in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file name that chooses the mapping's part (`stdin` for standard input).
    pub fn base_name(&self) -> &str {
        &self.base
    }

    /// Whether the input is a ZIP archive.
    pub fn is_zip(&self) -> bool {
        matches!(self.body, Body::Zip(..))
    }

    /// The size in bytes, when known before reading: a regular file, neither compressed nor a
    /// ZIP (for a progress bar).
    pub fn size(&self) -> Option<u64> {
        self.size
    }

    /// The first lines of a text input (read once, and read again by the import), and whether
    /// they are the whole input; `None` for a ZIP.
    pub(crate) fn sample(&mut self) -> Result<Option<(&[u8], bool)>, ImportError> {
        let Body::Text { head, rest, eof } = &mut self.body else {
            return Ok(None);
        };
        if !*eof && lines(head) < SAMPLE_LINES && head.len() < SAMPLE_BYTES {
            *eof = fill_lines(rest, head)
                .map_err(|e| ImportError::at(&self.name, ImportErrorKind::Read(e.to_string())))?;
        }
        Ok(Some((&head[..], *eof)))
    }
}

/// Whether the regular file `path` starts with a compression magic.
fn is_compressed(path: &Path) -> bool {
    let mut magic = [0u8; 10];
    let n = std::fs::File::open(path)
        .and_then(|mut f| {
            let mut n = 0;
            while n < magic.len() {
                match f.read(&mut magic[n..])? {
                    0 => break,
                    k => n += k,
                }
            }
            Ok(n)
        })
        .unwrap_or(0);
    crate::io::Compression::detect(&magic[..n]).is_some()
}

fn lines(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}

/// Read from `r` into `head` until it holds `SAMPLE_LINES` lines or `SAMPLE_BYTES` bytes;
/// `true` at the end of input.
fn fill_lines(r: &mut dyn BufRead, head: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut n = lines(head);
    while n < SAMPLE_LINES && head.len() < SAMPLE_BYTES {
        let avail = r.fill_buf()?;
        if avail.is_empty() {
            return Ok(true);
        }
        let room = SAMPLE_BYTES - head.len();
        let mut take = avail.len().min(room);
        // Stop right after the line that completes the sample.
        for (i, &c) in avail[..take].iter().enumerate() {
            if c == b'\n' {
                n += 1;
                if n == SAMPLE_LINES {
                    take = i + 1;
                    break;
                }
            }
        }
        head.extend_from_slice(&avail[..take]);
        r.consume(take);
    }
    Ok(false)
}

/// Read from `r` into `head` until it holds `want` bytes; `true` at the end of input.
fn fill(r: &mut dyn BufRead, head: &mut Vec<u8>, want: usize) -> std::io::Result<bool> {
    while head.len() < want {
        let avail = r.fill_buf()?;
        if avail.is_empty() {
            return Ok(true);
        }
        let take = avail.len().min(want - head.len());
        head.extend_from_slice(&avail[..take]);
        r.consume(take);
    }
    Ok(false)
}

/// A text input's whole stream: the sample read so far, then the rest.
pub(crate) fn replay(head: Vec<u8>, rest: Box<dyn BufRead + Send>) -> impl BufRead {
    Cursor::new(head).chain(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_stops_after_its_last_line_and_is_replayed() {
        let text: Vec<u8> = (0..500)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let mut head = Vec::new();
        let mut r: Box<dyn BufRead + Send> = Box::new(std::io::BufReader::with_capacity(
            7,
            Cursor::new(text.clone()),
        ));
        assert!(!fill_lines(&mut r, &mut head).unwrap());
        assert_eq!(lines(&head), SAMPLE_LINES);
        assert!(head.ends_with(b"line 199\n"));
        let mut all = Vec::new();
        replay(head, r).read_to_end(&mut all).unwrap();
        assert_eq!(all, text);
    }
}
