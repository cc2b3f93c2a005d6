//! What each `mtf` subcommand decides, as library calls: an options value in (no argument
//! parser's types), a report value out, which the command line only renders. The Python
//! package and the SQL provider call the same functions.

pub mod blocks;
pub mod index;
// The children report in JSON.
#[cfg(all(feature = "replay", feature = "json"))]
pub mod replay;
pub mod simulate;
#[cfg(feature = "compression")]
pub mod size_report;
