//! The `pbg` command line: a thin face over the `pbg` library.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cli::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pbg: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
