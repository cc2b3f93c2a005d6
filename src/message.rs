//! `Message`: a diagnostic of one message with a code, a help and a severity, for what a caller
//! decides to say about a run (a warning that the DTD given is likely the wrong one, the command
//! line's own errors), rendered like every typed error of the library.

use std::fmt;

use miette::{Diagnostic, Severity};

/// A diagnostic shown as one message, with the code and help of the error it stands for but
/// without miette's list of causes: the messages of `metatf` errors already say their cause, and
/// the list would repeat it.
#[derive(Debug)]
pub struct Message {
    /// The message, one line or more.
    pub message: String,
    /// The code (`mtf::…`), if any.
    pub code: Option<String>,
    /// What to do about it, if anything.
    pub help: Option<String>,
    /// A warning (`⚠`) rather than an error (`×`).
    pub warning: bool,
}

impl Message {
    /// `d`'s message, code and help.
    pub fn of(d: &dyn Diagnostic) -> Message {
        Message {
            message: d.to_string(),
            code: d.code().map(|c| c.to_string()),
            help: d.help().map(|h| h.to_string()),
            warning: d.severity() == Some(Severity::Warning),
        }
    }

    /// A message with a code and help.
    pub fn new(message: String, code: &str, help: Option<String>) -> Message {
        Message {
            message,
            code: Some(code.to_string()),
            help,
            warning: false,
        }
    }

    /// A warning (`⚠` where an error has `×`) with a code and help.
    pub fn warning(message: String, code: &str, help: Option<String>) -> Message {
        Message {
            warning: true,
            ..Message::new(message, code, help)
        }
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Message {}

impl Diagnostic for Message {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.code
            .as_ref()
            .map(|c| Box::new(c) as Box<dyn fmt::Display>)
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn severity(&self) -> Option<Severity> {
        self.warning.then_some(Severity::Warning)
    }
}
