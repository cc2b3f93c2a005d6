//! Integration tests: one binary, one module per topic.

#[cfg(feature = "cli")]
mod analysis;
mod api;
#[cfg(feature = "cli")]
mod bench_shapes;
#[cfg(all(feature = "cli", feature = "import"))]
mod bionic;
mod check_errors;
mod checkpoint;
mod cli;
#[cfg(feature = "parquet")]
mod columnar;
#[cfg(all(feature = "parquet", feature = "cli", feature = "import"))]
mod columnar_heap;
mod compact;
mod fast_path;
mod fixtures;
#[cfg(all(
    feature = "cli",
    feature = "compression",
    feature = "import",
    feature = "replay"
))]
mod frag;
#[cfg(all(feature = "import", feature = "replay"))]
mod fuzz_regressions;
#[cfg(feature = "import")]
mod import;
#[cfg(feature = "import")]
mod import_alloc;
#[cfg(all(feature = "import", feature = "json"))]
mod import_fixes;
#[cfg(all(feature = "import", feature = "compression"))]
mod import_inputs;
#[cfg(feature = "import")]
mod import_refusals;
mod index;
mod layering;
#[cfg(feature = "import")]
mod limits;
#[cfg(all(feature = "cli", feature = "import"))]
mod malloclab;
mod messages;
mod mirror;
#[cfg(all(
    feature = "cli",
    feature = "compression",
    feature = "import",
    feature = "plot"
))]
mod outputs;
#[cfg(all(unix, feature = "cli", feature = "compression"))]
mod pack_fast;
mod pack_identity;
#[cfg(feature = "cli")]
mod parallel;
mod print_plans;
#[cfg(all(feature = "import", feature = "replay"))]
mod replay;
#[cfg(all(unix, feature = "import"))]
mod resolution;
#[cfg(all(feature = "cli", feature = "import", feature = "json"))]
mod resume;
mod roundtrip_prop;
#[cfg(unix)]
mod safe_io;
mod salvage;
mod scan;
#[cfg(feature = "cli")]
mod spec_analysis;
mod spec_cases;
// `mtf sql`: built with `--features sql` only (`cargo test -p metatf-cli --features sql`).
mod spec_cases_dtd;
mod split_streams;
#[cfg(all(feature = "sql", feature = "import", feature = "compression"))]
mod sql;
#[cfg(not(feature = "sql"))]
mod sql_absent;
#[cfg(feature = "flamegraph")]
mod stacks;
#[cfg(all(feature = "cli", feature = "import", feature = "plot"))]
mod stats;
#[cfg(all(feature = "cli", feature = "import", feature = "json"))]
mod stats_exact;
#[cfg(feature = "compression")]
mod stream_inputs;
#[cfg(all(feature = "cli", feature = "compression"))]
mod stream_window;
#[cfg(all(feature = "cli", feature = "compression"))]
mod users;
mod util;
#[cfg(all(feature = "cli", feature = "import", feature = "pprof"))]
mod viewers;
#[cfg(all(unix, feature = "import", feature = "parquet", feature = "plot"))]
mod viewers_json;
mod write_failures;
mod writer;
