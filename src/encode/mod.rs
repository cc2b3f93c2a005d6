//! The DTD-driven trace writer, the decoder's mirror.
//!
//! [`TraceWriter`] writes records given by name ([`TraceWriter::write`],
//! [`TraceWriter::write_fields`]) or as ordered values ([`TraceWriter::record`]), metadata and
//! sections, and refuses everything a reader would reject, with the record and field named.

mod assemble;
mod encoder;
mod error;
mod writer;

pub use assemble::{FieldIn, Fields};
pub use encoder::In;
pub use error::{EncodeError, EncodeErrorKind};
pub use writer::{RecordBuilder, Summary, TraceWriter};
