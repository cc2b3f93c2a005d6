//! [`Compression`]: the formats recognised by their magic bytes, and their decoders.

use std::fmt;
use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};

use super::spool::drain;
use super::{InputData, InputOptions};
use crate::io::IoError;

/// A compression format, recognised by its magic bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Compression {
    /// gzip (`1f 8b 08`); concatenated members are read as one stream, as `gzip -d` does.
    Gzip,
    /// Zstandard (`28 b5 2f fd`); several frames are read as one stream.
    Zstd,
    /// xz (`fd 37 7a 58 5a 00`); several streams are read as one.
    Xz,
    /// bzip2 (`BZh` + level `1`..`9` + a block or end-of-stream magic).
    Bzip2,
}

/// The most bytes [`Compression::detect`] looks at.
pub(super) const MAGIC_LEN: usize = 10;

impl Compression {
    /// The format whose magic `prefix` starts with, if any; give at least 10 bytes when the
    /// input has them.
    // Design: gzip also needs its method byte (8 = deflate) and bzip2 its level digit and the
    // 48-bit magic of the first block (or of the end of an empty stream): `BZh` alone is three
    // printable letters a text input may well start with.
    pub fn detect(prefix: &[u8]) -> Option<Compression> {
        const BZ_BLOCK: [u8; 6] = [0x31, 0x41, 0x59, 0x26, 0x53, 0x59];
        const BZ_END: [u8; 6] = [0x17, 0x72, 0x45, 0x38, 0x50, 0x90];
        if prefix.starts_with(&[0x1f, 0x8b, 0x08]) {
            Some(Compression::Gzip)
        } else if prefix.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Some(Compression::Zstd)
        } else if prefix.starts_with(&[0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]) {
            Some(Compression::Xz)
        } else if prefix.len() >= MAGIC_LEN
            && prefix.starts_with(b"BZh")
            && (b'1'..=b'9').contains(&prefix[3])
            && (prefix[4..10] == BZ_BLOCK || prefix[4..10] == BZ_END)
        {
            Some(Compression::Bzip2)
        } else {
            None
        }
    }

    /// The format's usual name: `gzip`, `zstd`, `xz`, `bzip2`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Xz => "xz",
            Compression::Bzip2 => "bzip2",
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bytes held in memory, decompressed if they start with a compression magic, as
/// [`Input::open_with`] treats a file (spooled beyond `options.spool_above`, at most
/// `options.cap` bytes once decompressed); bytes that are not compressed are given back as
/// they are.
pub(crate) fn decompress_bytes(
    bytes: Vec<u8>,
    options: &InputOptions,
) -> Result<(InputData, Option<IoError>), IoError> {
    let path = Path::new("<memory>");
    match Compression::detect(&bytes) {
        None => Ok((InputData::Owned(bytes), None)),
        Some(format) => drain(
            decoder(&bytes[..], format, path)?,
            path,
            Some(format),
            options,
        ),
    }
}

/// A decoder of `format` reading from `src`.
#[cfg(feature = "compression")]
pub(super) fn decoder<'a, R: io::BufRead + Send + 'a>(
    src: R,
    format: Compression,
    path: &Path,
) -> Result<Box<dyn Read + Send + 'a>, IoError> {
    Ok(match format {
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(src)),
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(src).map_err(
            |source| IoError::Decompress {
                path: path.to_path_buf(),
                format,
                source,
            },
        )?),
        Compression::Xz => Box::new(xz2::bufread::XzDecoder::new_multi_decoder(src)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(src)),
    })
}

/// Without the `compression` feature every compressed input is refused.
#[cfg(not(feature = "compression"))]
pub(super) fn decoder<'a, R: io::BufRead + Send + 'a>(
    _src: R,
    format: Compression,
    path: &Path,
) -> Result<Box<dyn Read + Send + 'a>, IoError> {
    Err(IoError::NoCompressionSupport {
        path: path.to_path_buf(),
        format,
    })
}

/// A reader whose errors name the input.
pub(super) struct Named<R> {
    pub(super) inner: R,
    pub(super) path: PathBuf,
    pub(super) format: Option<Compression>,
}

impl<R> Named<R> {
    fn wrap(path: &Path, format: Option<Compression>, source: io::Error) -> io::Error {
        if source.get_ref().is_some_and(|e| e.is::<IoError>()) {
            return source;
        }
        let kind = source.kind();
        let path = path.to_path_buf();
        let err = match format {
            Some(format) => IoError::Decompress {
                path,
                format,
                source,
            },
            None => IoError::Read { path, source },
        };
        io::Error::new(kind, err)
    }
}

impl<R: Read> Read for Named<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner
            .read(buf)
            .map_err(|e| Self::wrap(&self.path, self.format, e))
    }
}

impl<R: BufRead> BufRead for Named<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let (path, format) = (&self.path, self.format);
        self.inner
            .fill_buf()
            .map_err(|e| Self::wrap(path, format, e))
    }

    fn consume(&mut self, amt: usize) {
        self.inner.consume(amt)
    }
}
