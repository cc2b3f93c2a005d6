//! The DTD-driven trace writer (the decoder's mirror).
//!
//! [`Encoder`] turns values into record bytes under the live metadata state; [`TraceWriter`]
//! adds sections, the header and safe file output.

mod encoder;
mod error;
mod writer;

pub use encoder::{Encoder, In};
pub use error::{WriteError, WriteErrorKind};
pub use writer::{Summary, TraceWriter};
