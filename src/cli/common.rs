//! What several subcommands share: opening a trace with its DTD, and reporting failures with the
//! right exit status.

use std::path::Path;

use crate::container::{ContainerError, Located, Trace};
use crate::dtd::Schema;

use super::{EXIT_BAD_DTD, EXIT_INVALID_TRACE, EXIT_USAGE};

/// A failure that ends a subcommand: the message is already printed when `printed` is set.
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
}

/// A trace opened together with its schema.
pub struct Opened {
    /// The trace.
    pub trace: Trace<'static>,
    /// Its schema.
    pub schema: Schema,
    /// Where the DTD came from, for `info`.
    pub dtd_origin: String,
}

/// Map a container error to a failure: I/O errors are usage errors, the rest make the trace
/// invalid.
pub fn container_failure(path: &Path, e: ContainerError) -> Failure {
    match e.innermost() {
        ContainerError::Io { .. } => Failure::new(EXIT_USAGE, format!("error: {e}")),
        _ => Failure::new(
            EXIT_INVALID_TRACE,
            format!("error: {}: invalid trace: {e}", path.display()),
        ),
    }
}

/// Load and resolve a DTD from text; on failure print its diagnostics and return the failure.
pub fn load_schema_text(name: &str, text: &str) -> Result<Schema, Failure> {
    match crate::dtd::parse_str(name, text) {
        Ok(loaded) => {
            for w in &loaded.warnings {
                eprint!("{}", super::dtd::render(w));
            }
            Ok(loaded.schema)
        }
        Err(errors) => {
            eprint!("{}", super::dtd::render(&errors));
            Err(Failure::new(EXIT_BAD_DTD, String::new()))
        }
    }
}

/// The largest DTD file `mtf` reads (DTDs are small; this bounds memory on a wrong path).
pub const MAX_DTD_BYTES: u64 = 16 << 20;

/// Load a DTD file.
pub fn load_schema_file(path: &Path) -> Result<Schema, Failure> {
    let len = std::fs::metadata(path)
        .map_err(|e| {
            Failure::new(
                EXIT_USAGE,
                format!("error: cannot read DTD {}: {e}", path.display()),
            )
        })?
        .len();
    if len > MAX_DTD_BYTES {
        return Err(Failure::new(
            EXIT_BAD_DTD,
            format!(
                "error: {}: {len} bytes is too large for a DTD (the limit is 16 MiB)",
                path.display()
            ),
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::new(
            EXIT_USAGE,
            format!("error: cannot read DTD {}: {e}", path.display()),
        )
    })?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    load_schema_text(&path.display().to_string(), &text).map(|mut s| {
        s.name = name;
        s
    })
}

/// Open a trace and find, load and resolve its DTD (docs/format.md §10).
pub fn open(path: &Path, dtd: Option<&Path>) -> Result<Opened, Failure> {
    let trace = Trace::open(path).map_err(|e| container_failure(path, e))?;
    let env = std::env::var_os("MTF_DTD_PATH");
    let located = trace.locate_dtd(dtd, env.as_deref());
    let (schema, dtd_origin) = match located {
        Located::Explicit(p) => (load_schema_file(&p)?, format!("{} (--dtd)", p.display())),
        Located::TraceDir(p) => (
            load_schema_file(&p)?,
            format!("{} (beside the trace)", p.display()),
        ),
        Located::EnvPath(p) => (
            load_schema_file(&p)?,
            format!("{} (MTF_DTD_PATH)", p.display()),
        ),
        Located::Shipped(name, text) => (
            load_schema_text(name, text)?,
            format!("{name} (built into mtf)"),
        ),
        Located::NotFound(nf) => {
            // A `--dtd` file that does not exist is a usage error; a DTD the trace names but
            // that is nowhere to be found makes the trace unreadable for want of a DTD.
            return Err(Failure::new(
                if dtd.is_some() {
                    EXIT_USAGE
                } else {
                    EXIT_BAD_DTD
                },
                format!(
                    "error: {}: {nf}\n  help: name the DTD with --dtd PATH",
                    path.display()
                ),
            ));
        }
    };
    Ok(Opened {
        trace,
        schema,
        dtd_origin,
    })
}

/// Resolve a `--section` argument (a name or an id) against a schema.
pub fn section_arg(schema: &Schema, arg: &str) -> Result<u8, Failure> {
    if let Ok(n) = arg.parse::<u8>() {
        if schema.scope_for(n).is_some() {
            return Ok(n);
        }
    }
    schema
        .scopes
        .iter()
        .find(|s| s.name == arg || (arg == "global" && s.id == 0))
        .map(|s| s.id)
        .ok_or_else(|| {
            let names: Vec<_> = schema
                .scopes
                .iter()
                .filter(|s| s.id != 0)
                .map(|s| format!("{} ({})", s.name, s.id))
                .collect();
            Failure::new(
                EXIT_USAGE,
                format!(
                    "error: no section `{arg}` in the DTD; it declares: global, {}",
                    names.join(", ")
                ),
            )
        })
}
