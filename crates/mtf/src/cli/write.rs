//! Writing what a subcommand made (a page, a picture): through [`Output`] (atomic for a regular
//! file), or to standard output.

use std::io::Write;
use std::path::Path;

use metatf::io::{Output, StdoutSink};

use super::common::{io_failure, Failure};

/// Writes bytes to `path` through [`Output`] (atomic for a regular file), or standard output.
#[cfg_attr(not(feature = "plot"), allow(dead_code))]
pub fn write_file(path: &Path, data: &[u8]) -> Result<(), Failure> {
    if path.as_os_str() == "-" {
        let mut out = StdoutSink::new();
        out.write_all(data)?;
        out.finish()?;
        return Ok(());
    }
    let mut out = Output::create(path).map_err(|e| io_failure(&e))?;
    out.write_all(data).map_err(|e| io_failure(&out.error(e)))?;
    out.commit().map_err(|e| io_failure(&e))
}

/// Writes a drawn picture's bytes into `out` (atomically).
#[cfg_attr(not(feature = "plot"), allow(dead_code))]
pub fn write_bytes(out: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let mut o = Output::create(out).map_err(|e| io_failure(&e))?;
    o.write_all(bytes).map_err(|e| io_failure(&o.error(e)))?;
    o.commit().map_err(|e| io_failure(&e))
}
