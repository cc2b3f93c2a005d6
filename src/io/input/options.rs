//! [`InputOptions`]: how an input that cannot be mapped is read.

use std::path::PathBuf;

use super::Input;

/// How [`Input::open_with`] reads an input that cannot be memory-mapped (a pipe, standard
/// input, a FIFO, a device, a compressed file).
///
/// ```
/// use metatf::io::{Input, InputOptions};
/// // Spool everything that cannot be mapped, in this folder, up to 1 GiB decompressed.
/// let options = InputOptions::new()
///     .spool_above(0)
///     .spool_dir(std::env::temp_dir())
///     .cap(1 << 30);
/// let (input, fault) = Input::open_with("traces/hatf-le32.mtf", &options)?;
/// assert!(input.is_mapped() && fault.is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct InputOptions {
    pub(super) cap: u64,
    pub(super) salvage: bool,
    pub(super) spool_above: u64,
    pub(super) spool_dir: Option<PathBuf>,
}

impl Default for InputOptions {
    fn default() -> InputOptions {
        InputOptions::new()
    }
}

impl InputOptions {
    /// How many bytes of an input that cannot be mapped are kept in memory by default (4 MiB);
    /// a longer one is spooled to a temporary file.
    pub const DEFAULT_SPOOL_ABOVE: u64 = 4 << 20;

    /// The defaults: a cap of [`Input::DEFAULT_CAP`], no salvage, inputs over
    /// [`InputOptions::DEFAULT_SPOOL_ABOVE`] spooled to the system's temporary folder
    /// ([`std::env::temp_dir`], which honours `TMPDIR`).
    pub fn new() -> InputOptions {
        InputOptions {
            cap: Input::DEFAULT_CAP,
            salvage: false,
            spool_above: InputOptions::DEFAULT_SPOOL_ABOVE,
            spool_dir: None,
        }
    }

    /// The most bytes an input that cannot be mapped may hold once decompressed (in memory and
    /// in its temporary file together); more is [`IoError::InputTooLarge`]. A mapped file has
    /// no such limit.
    pub fn cap(mut self, cap: u64) -> InputOptions {
        self.cap = cap;
        self
    }

    /// With `true`, a compressed input that ends early or is corrupt after some output yields
    /// the bytes decompressed before the fault, with the error beside them.
    pub fn salvage(mut self, yes: bool) -> InputOptions {
        self.salvage = yes;
        self
    }

    /// Keep at most `bytes` of an input that cannot be mapped in memory: a longer one is copied
    /// to an unlinked temporary file as it is read, then mapped (on Unix; elsewhere it is read
    /// into memory). `0` spools every such input that is not empty.
    pub fn spool_above(mut self, bytes: u64) -> InputOptions {
        self.spool_above = bytes;
        self
    }

    /// The folder of the temporary file ([`std::env::temp_dir`] by default).
    pub fn spool_dir(mut self, folder: impl Into<PathBuf>) -> InputOptions {
        self.spool_dir = Some(folder.into());
        self
    }

    /// Whether a compressed input cut short is salvaged ([`InputOptions::salvage`]).
    pub fn salvages(&self) -> bool {
        self.salvage
    }

    /// The cap ([`InputOptions::cap`]).
    pub fn max_bytes(&self) -> u64 {
        self.cap
    }
}
