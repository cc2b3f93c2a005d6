//! The generic decoder: compiled record programs + live metadata state → borrowed record views.
//!
//! Build a [`Reader`] from a trace and its schema, then walk [`Reader::records`].

mod decoder;
mod error;
mod program;
mod reader;
pub mod state;
mod value;
mod view;

pub use decoder::{
    eval_width, Decoder, MAX_EMPTY_REPEAT, MAX_FIELDS_PER_RECORD, MAX_KEPT_PROBLEMS,
};
pub use error::{DecodeError, ErrorKind};
pub use program::{Compiled, Loops, Op, Program, TagTable};
pub use reader::{ElementIndex, Input, Reader, Region, Resolved, MAX_REF_HOPS};
pub use state::{MetaProperty, ScopeState, SlotState};
pub use value::{ElementRef, FieldValue, Value};
pub use view::{Field, MetaChange, RecordView};
