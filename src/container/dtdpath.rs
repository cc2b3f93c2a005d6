//! Locating the DTD a trace names (docs/format.md §10).
//!
//! Order: the user's explicit file; the header's name in the trace's folder; the name in each
//! folder of `MTF_DTD_PATH`; the DTDs built into `mtf`. Only the last component of the header's
//! name is ever used, and nothing is fetched from the network.

// Design: lookup is a pure function of its inputs (the environment variable's value is passed
// in, not read here) so that tests do not race on process-global state.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use thiserror::Error;

/// The DTDs built into `mtf`: `(file name, text)`.
// Every file of the repository's `dtds/` folder; a test checks that none is missing.
const SHIPPED: &[(&str, &str)] = &[
    ("hatf10.dtd", include_str!("../../dtds/hatf10.dtd")),
    (
        "hatf10-split.dtd",
        include_str!("../../dtds/hatf10-split.dtd"),
    ),
    ("et_merlin.dtd", include_str!("../../dtds/et_merlin.dtd")),
    ("et3.dtd", include_str!("../../dtds/et3.dtd")),
    (
        "hatf-android.dtd",
        include_str!("../../dtds/hatf-android.dtd"),
    ),
    (
        "hatf-valgrind.dtd",
        include_str!("../../dtds/hatf-valgrind.dtd"),
    ),
    (
        "hatf-mtrace.dtd",
        include_str!("../../dtds/hatf-mtrace.dtd"),
    ),
    (
        "hatf-malloclab.dtd",
        include_str!("../../dtds/hatf-malloclab.dtd"),
    ),
    (
        "hatf-heaptrack.dtd",
        include_str!("../../dtds/hatf-heaptrack.dtd"),
    ),
    (
        "hatf-heaptrack-raw.dtd",
        include_str!("../../dtds/hatf-heaptrack-raw.dtd"),
    ),
    ("jvm_trace.dtd", include_str!("../../dtds/jvm_trace.dtd")),
    ("tptp.dtd", include_str!("../../dtds/tptp.dtd")),
];

/// The text of the DTD built into `mtf` under `name`, if any.
pub fn shipped_dtd(name: &str) -> Option<&'static str> {
    SHIPPED
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// The names of the DTDs built into `mtf`.
pub fn shipped_names() -> impl ExactSizeIterator<Item = &'static str> {
    SHIPPED.iter().map(|(n, _)| *n)
}

/// Why a DTD name from a trace header cannot be used as a file name.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DtdNameError {
    /// Nothing remains after the last `/` or `\`.
    #[error("DTD name {0:?} has an empty final component")]
    Empty(String),
    /// The final component starts with `.` (hidden files, `.` and `..`).
    #[error("DTD name {0:?} starts with '.'")]
    LeadingDot(String),
    /// The name contains a NUL byte.
    #[error("DTD name {0:?} contains NUL")]
    Nul(String),
    /// The final component is not a plain file name on this platform (e.g. `C:x` on Windows).
    #[error("DTD name {0:?} is not a plain file name")]
    NotPlain(String),
    /// The final component does not end in `.dtd` (in any case).
    #[error("DTD name {0:?} does not end in .dtd")]
    NotDtd(String),
}

/// The part of a header's DTD name that may be looked up: its final component (§10 safety rule).
///
/// Everything up to the last `/` or `\` is dropped, so `http://h/a/b.dtd` gives `b.dtd` and
/// `../../etc/passwd` gives `passwd` (which is then looked up only in the allowed folders). The
/// result must be non-empty, must not start with `.`, must not contain NUL and must end in `.dtd`
/// (in any case), so that no other kind of file (`passwd`, a key, a `/proc` file) is ever read
/// as a DTD, or shown in a DTD's error messages.
pub fn sanitize_dtd_name(name: &str) -> Result<&str, DtdNameError> {
    if name.contains('\0') {
        return Err(DtdNameError::Nul(name.to_owned()));
    }
    let last = name.rsplit(['/', '\\']).next().unwrap_or(name);
    if last.is_empty() {
        return Err(DtdNameError::Empty(name.to_owned()));
    }
    if last.starts_with('.') {
        return Err(DtdNameError::LeadingDot(name.to_owned()));
    }
    // Defence in depth: on Unix the rules above already make `last` one normal component; on
    // Windows this also rejects drive prefixes such as `C:x`, which `Path::join` would honour.
    let mut parts = Path::new(last).components();
    if !matches!(
        (parts.next(), parts.next()),
        (Some(Component::Normal(_)), None)
    ) {
        return Err(DtdNameError::NotPlain(name.to_owned()));
    }
    if !has_dtd_suffix(last) {
        return Err(DtdNameError::NotDtd(name.to_owned()));
    }
    Ok(last)
}

/// Whether a file name ends in `.dtd`, in any case.
pub fn has_dtd_suffix(name: &str) -> bool {
    name.len() > 4
        && name
            .get(name.len() - 4..)
            .is_some_and(|s| s.eq_ignore_ascii_case(".dtd"))
}

/// What is in a folder under a DTD's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidate {
    /// A regular file inside the folder: it may be read.
    Found(PathBuf),
    /// Nothing, a dangling link, or a folder.
    Missing(PathBuf),
    /// Something that must not be read (docs/format.md §10): the path and why.
    Refused(PathBuf, &'static str),
}

/// Looks up the file `name` (already reduced by [`sanitize_dtd_name`]) in `folder` under the
/// rules of docs/format.md §10: it must be a regular file once links are followed (never a
/// FIFO, which would block, or a device), its real path must lie inside the folder's real path
/// (a link pointing out of the folder is refused), and it must not be a file of `/proc`,
/// `/sys` or `/dev`.
// Design: the checks run before the file is opened; a file swapped for a link between the check
// and the open is still read at most `MAX_DTD_BYTES`, and must still end in `.dtd` and parse.
pub fn candidate(folder: &Path, name: &str) -> Candidate {
    let p = folder.join(name);
    let meta = match std::fs::metadata(&p) {
        Ok(m) => m,
        Err(_) => return Candidate::Missing(p),
    };
    if meta.is_dir() {
        return Candidate::Missing(p);
    }
    if !meta.is_file() {
        return Candidate::Refused(p, "not a regular file (a device, FIFO or socket)");
    }
    let (Ok(real), Ok(real_folder)) = (std::fs::canonicalize(&p), std::fs::canonicalize(folder))
    else {
        return Candidate::Refused(p, "its real path cannot be found");
    };
    if !real.starts_with(&real_folder) {
        return Candidate::Refused(p, "a symbolic link to a file outside its folder");
    }
    if ["/proc", "/sys", "/dev"]
        .iter()
        .any(|d| real.starts_with(d))
    {
        return Candidate::Refused(p, "a file of /proc, /sys or /dev");
    }
    Candidate::Found(p)
}

/// Where a DTD was found, or where it was looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Located {
    /// The file the user named (`mtf --dtd PATH`).
    Explicit(PathBuf),
    /// The header's name in the folder that holds the trace.
    TraceDir(PathBuf),
    /// The header's name in a folder of `MTF_DTD_PATH`.
    EnvPath(PathBuf),
    /// A DTD built into `mtf`: its name and text.
    Shipped(&'static str, &'static str),
    /// Not found anywhere.
    NotFound(NotFound),
}

/// The places a DTD was looked for without success; its `Display` is a complete message.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub struct NotFound {
    /// The DTD name as stored in the trace header.
    pub header_name: String,
    /// Why the header name was not used, if it was rejected by [`sanitize_dtd_name`].
    pub rejected: Option<DtdNameError>,
    /// Every file checked, in order.
    pub tried: Vec<PathBuf>,
    /// The files of `tried` that exist but were not used, and why (docs/format.md §10).
    pub refused: Vec<(PathBuf, &'static str)>,
    /// Whether the built-in DTDs were searched (false when the name was rejected or an explicit
    /// file was given).
    pub searched_shipped: bool,
}

impl fmt::Display for NotFound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The name comes from the trace: escaped as the paths below are, never shown raw.
        write!(
            f,
            "cannot find the DTD \"{}\"",
            crate::escape::escape_for_terminal(&self.header_name)
        )?;
        if let Some(why) = &self.rejected {
            write!(f, " ({why}; give the DTD with --dtd)")?;
        }
        if self.tried.is_empty() && !self.searched_shipped {
            return Ok(());
        }
        write!(f, "; tried:")?;
        for p in &self.tried {
            // The header's name is part of each path: never shown raw on a terminal.
            write!(f, "\n  {}", crate::escape::escape_path(p))?;
            if let Some((_, why)) = self.refused.iter().find(|(r, _)| r == p) {
                write!(f, " (not used: {why})")?;
            }
        }
        if self.searched_shipped {
            let names: Vec<_> = shipped_names().collect();
            if names.is_empty() {
                write!(f, "\n  the DTDs built into mtf (none)")?;
            } else {
                write!(f, "\n  the DTDs built into mtf ({})", names.join(", "))?;
            }
        }
        Ok(())
    }
}

impl Located {
    /// The file found, for the variants that name one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Located::Explicit(p) | Located::TraceDir(p) | Located::EnvPath(p) => Some(p),
            Located::Shipped(..) | Located::NotFound(_) => None,
        }
    }

    /// Whether a DTD was found.
    pub fn is_found(&self) -> bool {
        !matches!(self, Located::NotFound(_))
    }

    /// Reads the DTD text: the file's contents (at most [`crate::limits::MAX_DTD_BYTES`]; a
    /// larger file is an error), or the built-in text.
    ///
    /// Returns an [`std::io::ErrorKind::NotFound`] error carrying the [`NotFound`] message when
    /// nothing was found.
    pub fn read_text(&self) -> std::io::Result<Cow<'static, str>> {
        match self {
            Located::Shipped(_, text) => Ok(Cow::Borrowed(text)),
            Located::NotFound(nf) => Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                nf.clone(),
            )),
            Located::Explicit(p) | Located::TraceDir(p) | Located::EnvPath(p) => {
                // At most MAX_DTD_BYTES, whatever the file is (src/limits.rs).
                use std::io::Read;
                let cap = crate::limits::MAX_DTD_BYTES;
                let mut text = String::new();
                std::fs::File::open(p)?
                    .take(cap + 1)
                    .read_to_string(&mut text)?;
                if text.len() as u64 > cap {
                    return Err(std::io::Error::other(format!(
                        "{} holds more than {cap} bytes: not a DTD",
                        crate::escape::escape_path(p)
                    )));
                }
                Ok(Cow::Owned(text))
            }
        }
    }
}

/// Finds the DTD for a trace (docs/format.md §10).
///
/// * `explicit`: the user's `--dtd PATH`. When given it is the only candidate: it is returned
///   as [`Located::Explicit`] if it is a file, otherwise the result is `NotFound` listing it.
/// * `header_name`: the DTD name from the trace header, reduced by [`sanitize_dtd_name`]; if
///   rejected, nothing else is searched.
/// * `trace_dir`: the folder that holds the trace, if the trace came from a file.
/// * `env_path`: the value of `MTF_DTD_PATH`, split like `PATH` on this platform (`:` on Unix,
///   `;` on Windows); empty entries are skipped.
///
/// Candidates must be regular files (or links to them); a folder with the DTD's name is skipped.
pub fn locate_dtd(
    explicit: Option<&Path>,
    header_name: &str,
    trace_dir: Option<&Path>,
    env_path: Option<&OsStr>,
) -> Located {
    let mut nf = NotFound {
        header_name: header_name.to_owned(),
        rejected: None,
        tried: Vec::new(),
        refused: Vec::new(),
        searched_shipped: false,
    };
    if let Some(p) = explicit {
        // An explicit choice is never silently replaced by another DTD.
        if p.is_file() {
            return Located::Explicit(p.to_path_buf());
        }
        nf.tried.push(p.to_path_buf());
        return Located::NotFound(nf);
    }
    let name = match sanitize_dtd_name(header_name) {
        Ok(name) => name,
        Err(e) => {
            nf.rejected = Some(e);
            return Located::NotFound(nf);
        }
    };
    let mut look = |dir: &Path| match candidate(dir, name) {
        Candidate::Found(p) => Some(p),
        Candidate::Missing(p) => {
            nf.tried.push(p);
            None
        }
        Candidate::Refused(p, why) => {
            nf.tried.push(p.clone());
            nf.refused.push((p, why));
            None
        }
    };
    if let Some(dir) = trace_dir {
        if let Some(p) = look(dir) {
            return Located::TraceDir(p);
        }
    }
    if let Some(value) = env_path {
        for dir in std::env::split_paths(value) {
            if dir.as_os_str().is_empty() {
                continue;
            }
            if let Some(p) = look(&dir) {
                return Located::EnvPath(p);
            }
        }
    }
    nf.searched_shipped = true;
    match SHIPPED.iter().find(|(n, _)| *n == name) {
        Some(&(n, text)) => Located::Shipped(n, text),
        None => Located::NotFound(nf),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::fs;

    #[test]
    fn sanitize_keeps_last_component() {
        assert_eq!(sanitize_dtd_name("hatf10.dtd"), Ok("hatf10.dtd"));
        assert_eq!(
            sanitize_dtd_name("../../etc/passwd"),
            Err(DtdNameError::NotDtd("../../etc/passwd".into()))
        );
        assert_eq!(sanitize_dtd_name("../../etc/x.dtd"), Ok("x.dtd"));
        assert_eq!(sanitize_dtd_name("HATF10.DTD"), Ok("HATF10.DTD"));
        assert!(matches!(
            sanitize_dtd_name(".dtd"),
            Err(DtdNameError::LeadingDot(_))
        ));
        assert_eq!(sanitize_dtd_name("/abs/x.dtd"), Ok("x.dtd"));
        assert_eq!(sanitize_dtd_name("http://h/a/b.dtd"), Ok("b.dtd"));
        assert_eq!(
            sanitize_dtd_name("http://example.org/dtds/hatf10.dtd"),
            Ok("hatf10.dtd")
        );
        assert_eq!(sanitize_dtd_name(r"C:\dtds\win.dtd"), Ok("win.dtd"));
        assert_eq!(sanitize_dtd_name(r"a/b\c.dtd"), Ok("c.dtd"));
        assert_eq!(sanitize_dtd_name("x.y.dtd"), Ok("x.y.dtd"));
        assert_eq!(sanitize_dtd_name("a b.dtd"), Ok("a b.dtd"));
    }

    #[test]
    fn sanitize_rejects() {
        for name in ["", "a/", r"a\"] {
            let got = sanitize_dtd_name(name);
            assert!(
                matches!(got, Err(DtdNameError::Empty(_))),
                "{name:?}: {got:?}"
            );
        }
        for name in ["..", ".", "a/..", ".hidden"] {
            let got = sanitize_dtd_name(name);
            assert!(
                matches!(got, Err(DtdNameError::LeadingDot(_))),
                "{name:?}: {got:?}"
            );
        }
        // NUL anywhere, even in a discarded component.
        for name in ["x\0.dtd", "\0/x.dtd"] {
            let got = sanitize_dtd_name(name);
            assert!(
                matches!(got, Err(DtdNameError::Nul(_))),
                "{name:?}: {got:?}"
            );
        }
    }

    #[test]
    fn shipped_table_lookup() {
        assert_eq!(shipped_dtd("no-such.dtd"), None);
        assert_eq!(shipped_names().len(), SHIPPED.len());
        for (name, text) in SHIPPED {
            assert_eq!(shipped_dtd(name), Some(*text));
        }
    }

    struct Dirs {
        _root: tempfile::TempDir,
        trace: PathBuf,
        env1: PathBuf,
        env2: PathBuf,
    }

    fn dirs() -> Dirs {
        let root = tempfile::tempdir().unwrap();
        let mk = |n: &str| {
            let p = root.path().join(n);
            fs::create_dir(&p).unwrap();
            p
        };
        Dirs {
            trace: mk("trace"),
            env1: mk("env1"),
            env2: mk("env2"),
            _root: root,
        }
    }

    fn env(ds: &[&Path]) -> OsString {
        std::env::join_paths(ds).unwrap()
    }

    #[test]
    fn locate_order() {
        let d = dirs();
        let envv = env(&[&d.env1, &d.env2]);
        let name = "http://example.org/t.dtd";
        let loc = |explicit: Option<&Path>| locate_dtd(explicit, name, Some(&d.trace), Some(&envv));

        // Nothing anywhere: every candidate listed, then the built-ins.
        match loc(None) {
            Located::NotFound(nf) => {
                assert_eq!(
                    nf.tried,
                    vec![
                        d.trace.join("t.dtd"),
                        d.env1.join("t.dtd"),
                        d.env2.join("t.dtd")
                    ]
                );
                assert!(nf.searched_shipped);
                assert_eq!(nf.rejected, None);
                let msg = nf.to_string();
                assert!(msg.contains("t.dtd") && msg.contains("env2"), "{msg}");
            }
            other => panic!("{other:?}"),
        }

        fs::write(d.env2.join("t.dtd"), "env2").unwrap();
        assert_eq!(loc(None), Located::EnvPath(d.env2.join("t.dtd")));
        fs::write(d.env1.join("t.dtd"), "env1").unwrap();
        assert_eq!(loc(None), Located::EnvPath(d.env1.join("t.dtd")));
        fs::write(d.trace.join("t.dtd"), "trace").unwrap();
        let found = loc(None);
        assert_eq!(found, Located::TraceDir(d.trace.join("t.dtd")));
        assert_eq!(found.read_text().unwrap(), "trace");

        let explicit = d.env2.join("other.dtd");
        fs::write(&explicit, "explicit").unwrap();
        let found = loc(Some(&explicit));
        assert_eq!(found, Located::Explicit(explicit.clone()));
        assert_eq!(found.path(), Some(explicit.as_path()));
        assert_eq!(found.read_text().unwrap(), "explicit");
    }

    #[test]
    fn explicit_missing_does_not_fall_back() {
        let d = dirs();
        fs::write(d.trace.join("t.dtd"), "trace").unwrap();
        let missing = d.env1.join("nope.dtd");
        match locate_dtd(Some(&missing), "t.dtd", Some(&d.trace), None) {
            Located::NotFound(nf) => {
                assert_eq!(nf.tried, vec![missing]);
                assert!(!nf.searched_shipped);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rejected_name_searches_nothing() {
        let d = dirs();
        fs::write(d.trace.join(".hidden"), "x").unwrap();
        let found = locate_dtd(None, "a/.hidden", Some(&d.trace), None);
        match &found {
            Located::NotFound(nf) => {
                assert!(matches!(nf.rejected, Some(DtdNameError::LeadingDot(_))));
                assert!(nf.tried.is_empty() && !nf.searched_shipped);
                assert!(nf.to_string().contains("--dtd"));
            }
            other => panic!("{other:?}"),
        }
        let e = found.read_text().unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        // But an explicit file still works.
        let explicit = d.env1.join("mine.dtd");
        fs::write(&explicit, "x").unwrap();
        assert_eq!(
            locate_dtd(Some(&explicit), "..", Some(&d.trace), None),
            Located::Explicit(explicit)
        );
    }

    /// A traversal name is reduced to its last component and looked up only in allowed folders.
    #[test]
    fn traversal_stays_in_allowed_folders() {
        let d = dirs();
        // A file that `trace/../env1/t.dtd` would reach if the name were joined whole.
        fs::write(d.env1.join("t.dtd"), "x").unwrap();
        match locate_dtd(None, "../env1/t.dtd", Some(&d.trace), None) {
            Located::NotFound(nf) => assert_eq!(nf.tried, vec![d.trace.join("t.dtd")]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn folders_and_empty_env_entries_are_skipped() {
        let d = dirs();
        fs::create_dir(d.trace.join("t.dtd")).unwrap();
        fs::write(d.env2.join("t.dtd"), "x").unwrap();
        let mut envv = OsString::from(if cfg!(windows) { ";" } else { ":" });
        envv.push(env(&[&d.env2]));
        match locate_dtd(None, "t.dtd", Some(&d.trace), Some(&envv)) {
            Located::EnvPath(p) => assert_eq!(p, d.env2.join("t.dtd")),
            other => panic!("{other:?}"),
        }
        // No trace folder, no env: only the built-ins are searched.
        match locate_dtd(None, "t.dtd", None, None) {
            Located::NotFound(nf) => assert!(nf.tried.is_empty() && nf.searched_shipped),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn not_found_message_escapes_the_header_name() {
        let name = "\x1b]0;pwned\x07\u{202e}t.dtd";
        let msg = match locate_dtd(None, name, Some(Path::new("dir")), None) {
            Located::NotFound(nf) => nf.to_string(),
            other => panic!("{other:?}"),
        };
        assert!(
            !msg.contains('\x1b') && !msg.contains('\x07') && !msg.contains('\u{202e}'),
            "{msg:?}"
        );
        assert!(
            msg.starts_with("cannot find the DTD \"\\x1B]0;pwned\\x07\\u{202E}t.dtd\"; tried:"),
            "{msg}"
        );
        assert!(msg.contains("\\x1B]0;pwned\\x07\\u{202E}t.dtd\n"), "{msg}");
    }
}
