//! The `mtf` command-line tool: argument parsing, rendering and exit codes live in `cli/`; all
//! the work is done by the `metatf` library.
mod cli;

fn main() {
    std::process::exit(cli::main());
}
