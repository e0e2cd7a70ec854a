//! The `pbg` command line: a thin face over the `pbg` library.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, which turns a closed pipe into a panic in println!; restore the default.
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is always valid.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match cli::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pbg: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
