//! Import and export of foreign text trace formats, described by **format mappings**
//! (docs/mappings.md) rather than code.
//!
//! A mapping says how each unit of a foreign format (a line, or an XML tag or text run)
//! becomes a record of a Meta-TF DTD: literal text, typed tokens with their number spelling,
//! strings interned into string-table sections, optional parts, a header block. The engine
//! here does the rest once for every format:
//!
//! * [`mapping`]: the mapping language, with `file:line:col` errors ([`Mapping::load`],
//!   [`Mapping::load_dtd`]); [`pattern`] and `number`: matching a unit and rendering it back;
//! * [`ImportInput`]: an input opened once (file, `-`, pipe, compressed, ZIP), so that what
//!   [`detect`] reads is imported too; `units`: cutting it into lines or XML units, streaming;
//! * [`Importer`]: the import (the private `engine`, `intern` for string tables laid out before
//!   they are written, `spool` for routed records, `sink`, the one place that calls the trace
//!   writer); [`export()`]: export, through [`source`], the one place that calls the decoder;
//! * [`zipio`]: ZIP inputs and outputs; [`shipped`]: the formats built into `mtf`;
//! * [`ImportError`], [`ExportError`]: typed errors with codes and an [`ErrorClass`].
//!
//! **Lossless by construction**: a unit becomes a record only when rendering the record gives
//! back exactly its bytes; anything else is kept verbatim in a raw-line record, so exporting an
//! import reproduces the input byte for byte.

mod detect;
mod engine;
mod error;
mod export;
mod input;
pub(crate) mod intern;
pub mod mapping;
pub(crate) mod number;
pub mod pattern;
pub mod shipped;
pub(crate) mod sink;
pub mod source;
pub(crate) mod spool;
pub(crate) mod units;
pub mod zipio;

pub use detect::{detect, score, Detection, Score, SAMPLE_UNITS};
pub use engine::{create_writer, order_inputs, ImportReport, Importer, EARLY_CHECK, RAW_LISTED};
pub use error::{ErrorClass, ImportError, ImportErrorKind};
pub use export::{export, export_from, origin, ExportError, ExportReport, Origin, Target};
pub use input::ImportInput;
pub use mapping::{MapError, Mapping, MappingDtdError, MappingLoadError};

/// The record types every DTD used by a mapping declares in its global scope (docs/mappings.md).
pub mod records {
    /// `import_origin : (tag, version, container, files, format : bytes32, mapping : bytes32)`:
    /// first record of the global region; the format name and the whole mapping text.
    pub const ORIGIN: &str = "import_origin";
    /// `import_part : (tag, kind, part, eol, method, name : bytes32)`: starts one input file or
    /// ZIP entry.
    pub const PART: &str = "import_part";
    /// `import_raw : (tag, line : bytes32)`: a unit kept verbatim, with its line end.
    pub const RAW: &str = "import_raw";
    /// `import_noeol : (tag)`: the previous record's line had no line end (end of file).
    pub const NOEOL: &str = "import_noeol";
    /// `import_chunk : (tag, data : bytes32)`: bytes of a ZIP entry kept verbatim.
    pub const CHUNK: &str = "import_chunk";
    /// `import_routed : (tag, target, count)`: the next `count` records of the routed section
    /// number `target` (docs/mappings.md, `record R section S …`) come here in the input. Needed
    /// only by DTDs of mappings that route records.
    pub const ROUTED: &str = "import_routed";
    /// `import_entry : (tag, time, attrs, madeby, extra : bytes32, central : bytes32,
    /// comment : bytes32)`: the metadata of a ZIP entry, after its `import_part` record
    /// (version 2).
    pub const ENTRY: &str = "import_entry";
    /// `import_archive : (tag, comment : bytes32)`: the comment of a ZIP input, after its
    /// entries (version 2).
    pub const ARCHIVE: &str = "import_archive";
    /// Version of this record scheme stored in `import_origin.version`: 1 the first; 2 adds
    /// `import_entry` and `import_archive` (a version-1 trace has neither and still exports).
    pub const VERSION: u64 = 2;
    /// `import_origin.container`: what the input was.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Container {
        /// One or more plain files (code 0).
        Plain,
        /// A ZIP archive (code 1).
        Zip,
    }

    impl Container {
        /// The stored code.
        pub fn code(self) -> u64 {
            match self {
                Container::Plain => 0,
                Container::Zip => 1,
            }
        }

        /// From the stored code (`None` for a code this version does not know).
        pub fn from_code(c: u64) -> Option<Container> {
            match c {
                0 => Some(Container::Plain),
                1 => Some(Container::Zip),
                _ => None,
            }
        }
    }

    /// `import_part.kind`: what an input file or ZIP entry became.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum PartKind {
        /// Units mapped by the part `import_part.part` of the mapping (code 0).
        Mapped,
        /// A ZIP entry kept verbatim: its bytes follow in `import_chunk` records (code 1).
        Verbatim,
        /// A ZIP folder entry (code 2).
        Dir,
    }

    impl PartKind {
        /// The stored code.
        pub fn code(self) -> u64 {
            match self {
                PartKind::Mapped => 0,
                PartKind::Verbatim => 1,
                PartKind::Dir => 2,
            }
        }

        /// From the stored code (`None` for a code this version does not know).
        pub fn from_code(c: u64) -> Option<PartKind> {
            match c {
                0 => Some(PartKind::Mapped),
                1 => Some(PartKind::Verbatim),
                2 => Some(PartKind::Dir),
                _ => None,
            }
        }
    }

    /// The declarations a DTD used by a mapping takes in with `include import;` (the built-in
    /// fragment `import`, docs/format.md §3.5).
    pub const DTD_SNIPPET: &str = include_str!("../dtd/fragment_import.dtd");
}
