//! Integration tests: one binary, one module per topic.

mod check_errors;
mod cli;
mod fixtures;
mod mirror;
mod roundtrip_prop;
mod salvage;
mod util;
mod writer;
