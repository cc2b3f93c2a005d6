//! Integration tests: one binary, one module per topic.

mod check_errors;
mod cli;
mod fixtures;
#[cfg(feature = "import")]
mod import;
mod roundtrip_prop;
mod util;
mod writer;
