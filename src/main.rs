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
            // The cause chain, minus causes whose text an outer message already includes. The
            // library names arguments plainly (`objectives`); here they are flags (`--objectives`).
            let mut message = match e.downcast_ref::<pbg::PbgError>() {
                Some(pbg::PbgError::Argument { name, message })
                    if !name.is_empty()
                        && !name.starts_with('-')
                        && name.chars().all(|c| c.is_ascii_lowercase() || c == '-') =>
                {
                    format!("--{name}: {message}")
                }
                _ => e.to_string(),
            };
            for cause in e.chain().skip(1) {
                let text = cause.to_string();
                if !message.contains(&text) {
                    message.push_str(": ");
                    message.push_str(&text);
                }
            }
            eprintln!("pbg: error: {message}");
            ExitCode::FAILURE
        }
    }
}
