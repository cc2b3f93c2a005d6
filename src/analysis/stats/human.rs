//! Byte counts for people: the one formatting every text form, plot and report uses, kept with
//! the stack profiles' text forms (`metatf::stacks`, which uses nothing of `analysis`).

pub use crate::stacks::human_bytes;
