//! Integration tests: one binary, one module per topic.

mod check_errors;
mod cli;
mod fixtures;
#[cfg(feature = "import")]
mod import;
#[cfg(feature = "import")]
mod import_alloc;
mod mirror;
mod roundtrip_prop;
#[cfg(unix)]
mod safe_io;
mod salvage;
mod util;
mod writer;
