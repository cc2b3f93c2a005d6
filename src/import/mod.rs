//! Import and export of foreign text trace formats, described by **format mappings**
//! (docs/mappings.md) rather than code.
//!
//! A mapping says how each unit of a foreign format (a line, or an XML tag or text run)
//! becomes a record of a Meta-TF DTD: literal text, typed tokens with their number spelling,
//! strings interned into string-table sections, optional parts, a header block. The engine
//! here does the rest once for every format:
//!
//! * [`mapping`]: the mapping language, with `file:line:col` errors;
//! * [`pattern`] and [`number`]: matching a unit and rendering it back;
//! * [`units`]: cutting input into lines or XML units, streaming;
//! * [`intern`]: string tables laid out before they are written;
//! * [`zipio`]: ZIP inputs and outputs;
//! * [`sink`]: the one place that calls the trace writer; [`source`]: the one place that calls
//!   the decoder;
//! * [`engine`]: import; [`mod@export`]: export; [`shipped`]: the formats built into `mtf`.
//!
//! **Lossless by construction**: a unit becomes a record only when rendering the record gives
//! back exactly its bytes; anything else is kept verbatim in a raw-line record, so exporting an
//! import reproduces the input byte for byte.

pub mod engine;
pub mod export;
pub mod intern;
pub mod mapping;
pub mod number;
pub mod pattern;
pub mod shipped;
pub mod sink;
pub mod source;
pub mod units;
pub mod zipio;

pub use engine::{ImportReport, Importer};
pub use export::{export, origin, ExportError, ExportReport, Origin, Target};
pub use mapping::{MapError, Mapping};

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
    /// Version of this record scheme stored in `import_origin.version`.
    pub const VERSION: u64 = 1;
    /// `import_part.kind`: units mapped by the part `import_part.part` of the mapping.
    pub const KIND_MAPPED: u64 = 0;
    /// `import_part.kind`: a ZIP entry kept verbatim (its bytes follow in chunks).
    pub const KIND_VERBATIM: u64 = 1;
    /// `import_part.kind`: a ZIP folder entry.
    pub const KIND_DIR: u64 = 2;
    /// `import_origin.container`: the input was a plain file.
    pub const CONTAINER_PLAIN: u64 = 0;
    /// `import_origin.container`: the input was a ZIP file.
    pub const CONTAINER_ZIP: u64 = 1;

    /// The declarations to paste into a DTD used by a mapping.
    pub const DTD_SNIPPET: &str = include_str!("import_records.dtd");
}

/// An input the importer cannot take, with the file, line and column.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", self.render())]
pub struct ImportError {
    /// The input file (and ZIP entry).
    pub file: String,
    /// 1-based line, 0 when not about a position.
    pub line: u64,
    /// 1-based column.
    pub col: u64,
    /// What is wrong.
    pub message: String,
}

impl ImportError {
    /// A new error.
    pub fn new(file: &str, line: u64, col: u64, message: impl Into<String>) -> ImportError {
        ImportError {
            file: file.to_string(),
            line,
            col,
            message: message.into(),
        }
    }

    fn render(&self) -> String {
        if self.line == 0 {
            format!("{}: {}", self.file, self.message)
        } else {
            format!("{}:{}:{}: {}", self.file, self.line, self.col, self.message)
        }
    }
}
