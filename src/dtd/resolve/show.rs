//! Showing a resolved width expression with slot names (`vfield.length.value + 2`), for
//! diagnostics and `mtf dtd show`.

use super::FlatSlot;
use crate::dtd::schema::{Expr, Slot};

/// Show a width expression with slot names (`vfield.length.value + 2`).
pub fn show_expr(e: &Expr, slots: &[impl SlotName]) -> String {
    fn go(e: &Expr, slots: &[impl SlotName], out: &mut String, parent_prec: u8) {
        let (prec, op, a, b) = match e {
            Expr::Const(c) => return out.push_str(&c.to_string()),
            Expr::Value(s) => {
                out.push_str(slots.get(*s as usize).map_or("?", |s| s.slot_name()));
                return out.push_str(".value");
            }
            Expr::Add(a, b) => (1, " + ", a, b),
            Expr::Sub(a, b) => (1, " - ", a, b),
            Expr::Mul(a, b) => (2, " * ", a, b),
        };
        if prec < parent_prec {
            out.push('(');
        }
        go(a, slots, out, prec);
        out.push_str(op);
        // Right operands of `-` need parentheses at equal precedence: a - (b + c).
        go(b, slots, out, prec + 1);
        if prec < parent_prec {
            out.push(')');
        }
    }
    let mut s = String::new();
    go(e, slots, &mut s, 0);
    s
}

/// Anything with a slot name, for [`show_expr`].
pub trait SlotName {
    /// The slot's display name.
    fn slot_name(&self) -> &str;
}

impl SlotName for Slot {
    fn slot_name(&self) -> &str {
        &self.name
    }
}

impl SlotName for FlatSlot {
    fn slot_name(&self) -> &str {
        &self.full
    }
}
