//! What `replay` and `simulate` share on the command line: the output format, the picture
//! that `-o` names, and the warnings about what a trace's block events leave out.

use std::io::Write;
use std::path::Path;

use clap::ValueEnum;

use metatf::command::blocks::Reading;
use metatf::io::escape_path;

use super::common::{error, io_failure, line_to_stderr, Failure};
use super::EXIT_USAGE;

/// Output of `replay` and `simulate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A table on the terminal.
    Table,
    /// One JSON document.
    Json,
}

#[cfg(feature = "plot")]
pub type PictureFormat = metatf::replay::plot::PictureFormat;
#[cfg(not(feature = "plot"))]
pub type PictureFormat = ();

/// The picture format `-o` names, or a usage error.
pub fn picture_format(out: &Path) -> Result<PictureFormat, Failure> {
    #[cfg(feature = "plot")]
    {
        PictureFormat::of(out).ok_or_else(|| {
            error(
                EXIT_USAGE,
                "mtf::usage::output",
                format!(
                    "{}: a picture is written as .svg or .png (the name's extension says which)",
                    escape_path(out)
                ),
            )
        })
    }
    #[cfg(not(feature = "plot"))]
    Err(error(
        EXIT_USAGE,
        "mtf::usage::output",
        format!(
            "{}: this mtf was built without pictures (feature plot)",
            escape_path(out)
        ),
    ))
}

#[cfg_attr(not(feature = "plot"), allow(dead_code))]
/// Writes a drawn picture's bytes into `out` (atomically).
pub fn write_bytes(out: &Path, bytes: &[u8]) -> Result<(), Failure> {
    let mut o = metatf::io::Output::create(out).map_err(|e| io_failure(&e))?;
    o.write_all(bytes).map_err(|e| io_failure(&o.error(e)))?;
    o.commit().map_err(|e| io_failure(&e))
}

/// Says on standard error what the events leave out.
pub fn warn_reading(trace: &Path, r: &Reading) {
    let name = escape_path(trace);
    if r.problems > 0 {
        line_to_stderr(&format!(
            "mtf: {name}: {} records could not be decoded and are not replayed (mtf check shows them)",
            r.problems
        ));
    }
    if r.raw_lines > 0 {
        line_to_stderr(&format!(
            "mtf: {name}: {} lines the import kept verbatim (not records of the format, or values \
             too wide for its DTD) are not replayed",
            r.raw_lines
        ));
    }
    if let Some(at) = r.stopped_at {
        line_to_stderr(&format!(
            "mtf: {name}: too many live ids to track: the events after data record {at} are missing"
        ));
    }
}
