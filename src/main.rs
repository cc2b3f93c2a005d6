//! The `mtf` command-line tool; all logic lives in `metatf::cli`.
fn main() {
    std::process::exit(metatf::cli::main());
}
