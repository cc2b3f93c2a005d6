//! What `replay` and `simulate` share on the command line: the output format, the picture
//! that `-o` names, and the warnings about what a trace's block events leave out.

use std::path::Path;

use clap::ValueEnum;

use metatf::command::blocks::Reading;
use metatf::io::escape_path;

use super::common::{error, line_to_stderr, Failure};
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

/// Says on standard error what the events leave out.
pub fn warn_reading(trace: &Path, r: &Reading) {
    for line in r.warnings(&escape_path(trace)) {
        line_to_stderr(&line);
    }
}
