//! The trace container: header, section index, DTD lookup (docs/format.md §2, §10).
//!
//! * [`Header`] parses and encodes the fixed header (§2.1), with [`ByteOrder`] and [`Class`];
//! * [`SectionIndex`] checks the section header table (§2.2);
//! * [`Trace`] holds a file's bytes (mapped, owned or borrowed) with both, checked;
//! * [`locate_dtd`] finds the DTD a trace names (§10).
//!
//! Nothing here decodes records; errors are [`ContainerError`] and carry byte offsets.

mod dtdpath;
mod error;
mod header;
mod int;
mod salvage;
mod section;
#[cfg(test)]
mod testutil;
mod trace;

pub use dtdpath::{
    candidate, has_dtd_suffix, locate_dtd, sanitize_dtd_name, shipped_dtd, shipped_names,
    Candidate, DtdNameError, Located, NotFound,
};
pub use error::{ContainerError, HeaderEncodeError, MAGIC};
pub use header::{
    Header, EXT_LIVE, FIXED_LEN, KNOWN_EXTENSIONS, OFF_BYTEORDER, OFF_CLASS, OFF_DTDLENGTH,
    OFF_EXTENSIONS, OFF_INTEGERS, OFF_INTWIDTH, OFF_RESERVED,
};
pub use int::{fits_signed, fits_unsigned, sign_extend, truncate, ByteOrder, Class};
pub use section::{SectionHeader, SectionIndex};
pub use trace::{Trace, TraceData};
