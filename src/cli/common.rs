//! What several subcommands share: opening a trace with its DTD, rendering diagnostics, and
//! reporting failures with the right exit status.

use std::io::IsTerminal;
use std::path::Path;

use miette::{Diagnostic, GraphicalTheme};

use metatf::container::ContainerError;
use metatf::dtd::{DtdLoadError, Schema};
use metatf::{OpenError, Opened};

use super::{EXIT_BAD_DTD, EXIT_INVALID_TRACE, EXIT_USAGE};

/// A failure that ends a subcommand.
#[derive(Debug)]
pub struct Failure {
    /// Exit status.
    pub code: i32,
    /// Message for standard error (empty if already printed).
    pub message: String,
}

impl Failure {
    /// A failure with a message.
    pub fn new(code: i32, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
        }
    }

    /// A failure whose diagnostic is rendered like every other (code, help, snippet).
    pub fn diagnostic(code: i32, d: &dyn Diagnostic) -> Failure {
        Failure::new(code, render(d).trim_end().to_string())
    }
}

/// Render a diagnostic for standard error: in colour on a terminal, plain otherwise.
pub fn render(d: &dyn Diagnostic) -> String {
    if std::io::stderr().is_terminal() {
        metatf::dtd::render_with(d, GraphicalTheme::default())
    } else {
        metatf::dtd::render_plain(d)
    }
}

/// The exit status for a container error: I/O errors are usage errors, the rest make the trace
/// invalid.
pub fn container_code(e: &ContainerError) -> i32 {
    match e.innermost() {
        ContainerError::Io { .. } => EXIT_USAGE,
        _ => EXIT_INVALID_TRACE,
    }
}

/// Print a DTD's warnings.
pub fn print_warnings(w: &[metatf::dtd::DtdWarning]) {
    for w in w {
        eprint!("{}", render(w));
    }
}

/// The failure for a DTD that could not be loaded.
pub fn dtd_failure(e: &DtdLoadError) -> Failure {
    match e {
        DtdLoadError::Invalid(errors) => {
            eprint!("{}", render(errors));
            Failure::new(EXIT_BAD_DTD, String::new())
        }
        other => Failure::diagnostic(EXIT_USAGE, other),
    }
}

/// Load a DTD file named on the command line.
pub fn load_schema_file(path: &Path) -> Result<Schema, Failure> {
    let loaded = metatf::dtd::load(path).map_err(|e| dtd_failure(&e))?;
    print_warnings(&loaded.warnings);
    let mut schema = loaded.schema;
    if let Some(n) = path.file_name() {
        schema.name = n.to_string_lossy().into_owned();
    }
    Ok(schema)
}

/// Open a trace and find, load and resolve its DTD (docs/format.md §10).
pub fn open(path: &Path, dtd: Option<&Path>) -> Result<Opened, Failure> {
    let opened = match dtd {
        Some(d) => metatf::open_with_dtd(path, d),
        None => metatf::open(path),
    };
    match opened {
        Ok(o) => {
            print_warnings(o.warnings());
            Ok(o)
        }
        Err(OpenError::Container(e)) => Err(Failure::diagnostic(container_code(&e), &e)),
        Err(OpenError::Dtd(e)) => Err(dtd_failure(&e)),
        Err(e @ OpenError::DtdNotFound { explicit, .. }) => {
            // A `--dtd` file that does not exist is a usage error; a DTD the trace names but
            // that is nowhere to be found makes the trace unreadable for want of a DTD.
            let code = if explicit { EXIT_USAGE } else { EXIT_BAD_DTD };
            Err(Failure::diagnostic(code, &e))
        }
    }
}

/// Resolve a `--section` argument (a name, an id, or `global`) against a schema. A section the
/// DTD names `global` is found by that name; the global region is then `0`.
pub fn section_arg(schema: &Schema, arg: &str) -> Result<u8, Failure> {
    if let Ok(n) = arg.parse::<u8>() {
        if schema.scope_for(n).is_some() {
            return Ok(n);
        }
    }
    if let Some(s) = schema.scopes.iter().find(|s| s.id != 0 && s.name == arg) {
        return Ok(s.id);
    }
    if arg == "global" {
        return Ok(0);
    }
    let names: Vec<_> = schema
        .scopes
        .iter()
        .filter(|s| s.id != 0)
        .map(|s| format!("{} ({})", s.name, s.id))
        .collect();
    Err(Failure::new(
        EXIT_USAGE,
        format!(
            "error: no section `{arg}` in the DTD; it declares: global (0), {}",
            names.join(", ")
        ),
    ))
}
