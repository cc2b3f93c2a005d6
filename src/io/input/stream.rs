//! [`StreamInput`]: an input handed over unread, to be decoded as it arrives.

use std::fmt;
use std::io::{self, Cursor, Read};
use std::path::{Path, PathBuf};

use super::spool::{classify, drain, Kept};
use super::{Compression, Input, InputData, InputOptions};
use crate::io::IoError;

/// An input opened to be read from start to end once ([`Input::open_stream`]): a regular
/// file mapped as [`Input::open_with`] maps it, or anything else as a stream.
#[derive(Debug)]
pub enum Opening {
    /// A regular, uncompressed file, mapped.
    Whole(Input),
    /// A pipe, standard input, a FIFO, a device or a compressed input, not read yet.
    Stream(StreamInput),
}

/// An input read as a stream, decompressed on the fly if it starts with a compression magic
/// ([`Input::open_stream`]). Its reads count the bytes against the cap of its
/// [`InputOptions`], as [`Input::open_with`] would.
pub struct StreamInput {
    src: Box<dyn Read + Send>,
    path: PathBuf,
    compression: Option<Compression>,
    cap: u64,
    read: u64,
    /// An error met after some bytes of a read: those bytes are returned first, the error by
    /// the next read.
    pending: Option<IoError>,
}

impl fmt::Debug for StreamInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamInput")
            .field("path", &self.path)
            .field("compression", &self.compression)
            .field("read", &self.read)
            .finish_non_exhaustive()
    }
}

impl StreamInput {
    /// `src`, read from `path` (decompressed when `compression` is set), at most `cap` bytes.
    pub(super) fn new(
        src: Box<dyn Read + Send>,
        path: &Path,
        compression: Option<Compression>,
        cap: u64,
    ) -> StreamInput {
        StreamInput {
            src,
            path: path.to_path_buf(),
            compression,
            cap,
            read: 0,
            pending: None,
        }
    }

    /// An input that is already at its end (what is left of one handed over).
    pub(crate) fn empty() -> StreamInput {
        StreamInput {
            src: Box::new(io::empty()),
            path: PathBuf::new(),
            compression: None,
            cap: u64::MAX,
            read: 0,
            pending: None,
        }
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this is standard input (the path `-`).
    pub fn is_stdin(&self) -> bool {
        self.path.as_os_str() == "-"
    }

    /// The compression of the input, if any.
    pub fn compression(&self) -> Option<Compression> {
        self.compression
    }

    /// Bytes (decompressed) read so far.
    pub fn bytes_read(&self) -> u64 {
        self.read
    }

    /// The error met after the bytes the last [`StreamInput::read_full`] returned, which the
    /// next call would return: taken, so that a reader that stops at a short read learns why.
    pub fn take_fault(&mut self) -> Option<IoError> {
        self.pending.take()
    }

    /// Reads up to `buf.len()` bytes (fewer only at the end: `0` is the end of the input).
    /// Errors as [`Input::open_with`] reports them: [`IoError::Read`],
    /// [`IoError::Decompress`], [`IoError::InputTooLarge`] past the cap.
    ///
    /// The bytes read before an error are returned first (a compressed stream cut short gives
    /// all it holds, as `zstd -dc` does), the error by the next call.
    pub fn read_full(&mut self, buf: &mut [u8]) -> Result<usize, IoError> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        let mut n = 0;
        while n < buf.len() {
            match self.src.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let e = classify(e, &self.path, self.compression);
                    if n == 0 {
                        return Err(e);
                    }
                    self.pending = Some(e);
                    break;
                }
            }
        }
        self.read += n as u64;
        if self.read > self.cap {
            return Err(IoError::InputTooLarge {
                path: self.path.clone(),
                cap: self.cap,
            });
        }
        Ok(n)
    }

    /// The whole input after all, as [`Input::open_with`] reads it (kept in memory or spooled
    /// to a temporary file), `head` being the bytes read from it so far.
    pub fn into_input(
        self,
        head: Vec<u8>,
        options: &InputOptions,
    ) -> Result<(Input, Option<IoError>), IoError> {
        let options = options.clone().cap(self.cap);
        if let Some(e) = self.pending {
            // The stream already failed after `head`: what `drain` makes of that error.
            if options.salvage && !head.is_empty() && matches!(e, IoError::Decompress { .. }) {
                let input = Input {
                    data: InputData::Owned(head),
                    path: self.path,
                    compression: self.compression,
                };
                return Ok((input, Some(e)));
            }
            return Err(e);
        }
        let (data, fault) = drain(
            Cursor::new(head).chain(self.src),
            &self.path,
            self.compression,
            &options,
        )?;
        Ok((
            Input {
                data,
                path: self.path,
                compression: self.compression,
            },
            fault,
        ))
    }

    /// As [`StreamInput::into_input`] for a reader that kept the bytes it dropped (`kept`,
    /// the input's first bytes) and holds the next ones (`head`): the whole input mapped from
    /// the spool, at most the cap in all.
    pub(crate) fn into_input_kept(
        mut self,
        kept: Kept,
        head: Vec<u8>,
        options: &InputOptions,
    ) -> Result<(Input, Option<IoError>), IoError> {
        let salvage = options.salvages();
        // The stream already failed after `head`: what `drain` makes of that error.
        let pending = match self.pending.take() {
            Some(e) if salvage && matches!(e, IoError::Decompress { .. }) => Some(e),
            Some(e) => return Err(e),
            None => None,
        };
        let mut rest: Box<dyn Read + Send> = match pending {
            Some(_) => Box::new(io::empty()),
            None => self.src,
        };
        let (map, total, fault) = kept.finish(head, &mut rest, &self.path, self.cap)?;
        let fault = match (pending, fault) {
            (Some(e), _) => Some(e),
            (None, Some(e)) => Some(classify(e, &self.path, self.compression)),
            (None, None) => None,
        };
        let input = Input {
            data: InputData::Spooled(map),
            path: self.path,
            compression: self.compression,
        };
        match fault {
            Some(e) if salvage && total > 0 && matches!(e, IoError::Decompress { .. }) => {
                Ok((input, Some(e)))
            }
            Some(e) => Err(e),
            None => Ok((input, None)),
        }
    }
}
