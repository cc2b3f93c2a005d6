//! Integration tests: one binary, one module per topic.

mod check_errors;
mod cli;
mod fixtures;
mod import;
mod roundtrip_prop;
mod util;
mod writer;
