//! The layout core shared by reading and writing: record programs compiled from a schema, the
//! one walker that steps through them, the live metadata state, the metadata property table and
//! the built-ins' wire layout.
//!
//! [`decode`](crate::decode) and [`encode`](crate::encode) are mirrors built on this module; the
//! printers and the text reader use the same walker, so the structure of a record is computed in
//! one place. Nothing here touches bytes of a trace.

pub(crate) mod arith;
mod liveset;
mod meta;
mod program;
mod state;
mod walk;
mod wire;

pub(crate) use liveset::Undo as LiveUndo;
pub use liveset::MAX_SETS as MAX_LIVE_SETS;
pub(crate) use liveset::{FastMap, LiveSets};
pub use meta::{MetaProperty, MetaRefused};
pub use program::Shape;
pub(crate) use program::{Compiled, Op, Program, TagTable};
pub use state::ScopeState;
pub(crate) use state::SlotState;
pub(crate) use walk::{Step, Walk};
pub(crate) use wire::Wire;

use crate::dtd::Expr;

pub use crate::limits::{MAX_EMPTY_REPEAT, MAX_FIELDS_PER_RECORD};

/// Why a width expression cannot be evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WidthError {
    /// A sum or product over 2⁶⁴−1.
    #[error("width expression overflows")]
    Overflow,
    /// A difference below zero.
    #[error("width expression is negative")]
    Negative,
}

/// Evaluate a width expression over the most recent values of a record's slots (indexed by slot).
pub fn eval_width(expr: &Expr, last: &[u64]) -> Result<u64, WidthError> {
    Ok(match expr {
        Expr::Const(c) => *c,
        Expr::Value(s) => last[*s as usize],
        Expr::Add(a, b) => eval_width(a, last)?
            .checked_add(eval_width(b, last)?)
            .ok_or(WidthError::Overflow)?,
        Expr::Sub(a, b) => eval_width(a, last)?
            .checked_sub(eval_width(b, last)?)
            .ok_or(WidthError::Negative)?,
        Expr::Mul(a, b) => eval_width(a, last)?
            .checked_mul(eval_width(b, last)?)
            .ok_or(WidthError::Overflow)?,
    })
}
