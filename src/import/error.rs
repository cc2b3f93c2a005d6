//! The errors of an import: typed kinds with diagnostic codes, and the class a command maps to
//! its exit status.

use miette::Diagnostic;

/// What kind of failure an error is, for a command's exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// The input (or the trace, for export) is not what the mapping describes.
    Input,
    /// Reading the input or writing the output failed.
    Io,
    /// The request cannot be met as given: inputs in the wrong order, a DTD that does not fit
    /// the mapping, an output name that does not fit what is written.
    Usage,
}

/// Why an import failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Diagnostic)]
#[non_exhaustive]
pub enum ImportErrorKind {
    /// Reading the input failed (I/O, or a corrupt compressed stream); the message names the
    /// file.
    #[error("{0}")]
    #[diagnostic(code(mtf::import::read))]
    Read(String),
    /// The input cannot be taken as it is (an over-long line, an unreadable ZIP).
    #[error("{0}")]
    #[diagnostic(code(mtf::import::input))]
    Input(String),
    /// Most units of the input match no rule of the mapping: probably another format.
    #[error("{}", unmatched(format, *raw, *units, cause.as_deref()))]
    #[diagnostic(
        code(mtf::import::unmatched),
        help("give the right format (mtf import --list), or import anyway with every unmatched unit kept verbatim")
    )]
    Unmatched {
        /// The format tried.
        format: String,
        /// Units kept raw so far.
        raw: u64,
        /// Units read so far.
        units: u64,
        /// Why units were kept raw when it is not that no rule matched them (values that cannot
        /// be stored, units after the count the header gives), or `None`.
        cause: Option<String>,
    },
    /// No shipped format matches most of the input's first units.
    #[error("{0}")]
    #[diagnostic(
        code(mtf::import::undetected),
        help("give the format (mtf import --list) or a mapping of your own (docs/mappings.md)")
    )]
    Undetected(String),
    /// The mapping refuses a file of this name (`refuse 'GLOB' 'MESSAGE'`): the message.
    #[error("{0}")]
    #[diagnostic(
        code(mtf::import::refused),
        help("the mapping names files of this kind that it cannot read; leave the file out of the import")
    )]
    Refused(String),
    /// No part of the mapping takes a file of this name.
    #[error("no part of mapping `{0}` takes this file")]
    #[diagnostic(code(mtf::import::no_part))]
    NoPart(String),
    /// A section would be written twice: the inputs are not in the order of the parts.
    #[error(
        "section `{0}` was already written: give the inputs in the order of the mapping's parts"
    )]
    #[diagnostic(code(mtf::import::order))]
    Order(String),
    /// Standard input named twice.
    #[error("standard input can be read only once: name `-` once")]
    #[diagnostic(code(mtf::import::stdin_twice))]
    StdinTwice,
    /// A ZIP input among other inputs.
    #[error("a ZIP input must be the only input")]
    #[diagnostic(code(mtf::import::zip_not_alone))]
    ZipNotAlone,
    /// The DTD does not declare what the mapping writes.
    #[error("{0}")]
    #[diagnostic(
        code(mtf::import::dtd),
        help("the DTD must declare every record, field and section the mapping's rules name, and the import records (`include import;`, docs/mappings.md); is it the DTD of this format?")
    )]
    Dtd(String),
    /// Writing the trace (or a temporary spool) failed.
    #[error("{0}")]
    #[diagnostic(code(mtf::import::write))]
    Write(String),
}

fn percent(part: u64, whole: u64) -> u64 {
    (part * 100).checked_div(whole).unwrap_or(0)
}

fn unmatched(format: &str, raw: u64, units: u64, cause: Option<&str>) -> String {
    let pct = percent(raw, units);
    match cause {
        None => format!(
            "{raw} of {units} units ({pct}%) match no rule of format `{format}`: this input is probably not {format}"
        ),
        Some(c) => format!("{raw} of {units} units ({pct}%) would be kept raw by format `{format}`: {c}"),
    }
}

impl ImportErrorKind {
    /// The kind of a failure to read an input: a unit longer than the limit, or a compressed
    /// stream that is cut short or corrupt, is the input's fault (as a damaged trace is,
    /// docs/format.md §9.2); anything else is I/O.
    pub fn of_read(e: &std::io::Error) -> ImportErrorKind {
        let inner = e.get_ref();
        let input = inner.is_some_and(|i| i.is::<super::units::TooLong>())
            || inner
                .and_then(|i| i.downcast_ref::<crate::io::IoError>())
                .is_some_and(|i| matches!(i, crate::io::IoError::Decompress { .. }));
        if input {
            ImportErrorKind::Input(e.to_string())
        } else {
            ImportErrorKind::Read(e.to_string())
        }
    }

    /// The class of the failure.
    pub fn class(&self) -> ErrorClass {
        match self {
            ImportErrorKind::Read(_) | ImportErrorKind::Write(_) => ErrorClass::Io,
            ImportErrorKind::Input(_)
            | ImportErrorKind::Unmatched { .. }
            | ImportErrorKind::Undetected(_)
            | ImportErrorKind::Refused(_) => ErrorClass::Input,
            ImportErrorKind::NoPart(_)
            | ImportErrorKind::Order(_)
            | ImportErrorKind::ZipNotAlone
            | ImportErrorKind::StdinTwice
            | ImportErrorKind::Dtd(_) => ErrorClass::Usage,
        }
    }
}

/// An input the importer cannot take, with the file and, when about a position, its line and
/// column.
#[derive(Debug, Clone, thiserror::Error, Diagnostic)]
#[error("{}", self.render())]
#[diagnostic(forward(kind))]
pub struct ImportError {
    /// The input file (and ZIP entry), or what else the error is about.
    pub file: String,
    /// 1-based line, 0 when not about a position.
    pub line: u64,
    /// 1-based column.
    pub col: u64,
    /// What is wrong.
    pub kind: ImportErrorKind,
}

impl ImportError {
    /// An error about a position of `file`.
    pub fn new(file: &str, line: u64, col: u64, kind: ImportErrorKind) -> ImportError {
        ImportError {
            file: file.to_string(),
            line,
            col,
            kind,
        }
    }

    /// An error about `file` as a whole (an empty `file`: the message names it).
    pub fn at(file: &str, kind: ImportErrorKind) -> ImportError {
        ImportError::new(file, 0, 0, kind)
    }

    /// The class of the failure.
    pub fn class(&self) -> ErrorClass {
        self.kind.class()
    }

    fn render(&self) -> String {
        if self.file.is_empty() {
            self.kind.to_string()
        } else if self.line == 0 {
            format!("{}: {}", self.file, self.kind)
        } else {
            format!("{}:{}:{}: {}", self.file, self.line, self.col, self.kind)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_their_position_and_carry_a_code() {
        let e = ImportError::new("a.txt", 3, 7, ImportErrorKind::Input("bad".into()));
        assert_eq!(e.to_string(), "a.txt:3:7: bad");
        assert_eq!(e.code().unwrap().to_string(), "mtf::import::input");
        let e = ImportError::at(
            "b.txt",
            ImportErrorKind::Unmatched {
                format: "et3".into(),
                raw: 3,
                units: 4,
                cause: None,
            },
        );
        assert_eq!(
            e.to_string(),
            "b.txt: 3 of 4 units (75%) match no rule of format `et3`: this input is probably not et3"
        );
        assert_eq!(e.class(), ErrorClass::Input);
        assert_eq!(e.code().unwrap().to_string(), "mtf::import::unmatched");
    }
}
