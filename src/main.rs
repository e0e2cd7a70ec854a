//! The `pbg` command line: a thin face over the `pbg` library.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, which turns a closed pipe into a panic in println!; restore the default
    // so that `pbg ... | head` ends quietly. Not for cluster roles and clients: they write to
    // sockets, where a peer that went away must be an error, not a silent death of the process.
    let networked = std::env::args()
        .skip(1)
        .any(|a| a == "cluster" || a == "--cluster" || a.starts_with("--cluster="));
    #[cfg(unix)]
    if !networked {
        // SAFETY: called first thing in main, before any thread exists; SIG_DFL is always valid.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    if networked {
        // With SIGPIPE ignored, printing to a closed pipe (`pbg sql --cluster .. | head`) panics
        // in println!: end quietly as the signal would, with its status.
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let text = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| info.payload().downcast_ref::<&str>().copied())
                .unwrap_or("");
            if text.contains("failed printing to stdout") && text.contains("Broken pipe") {
                std::process::exit(141);
            }
            default(info);
        }));
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
            // Output to a closed pipe, with SIGPIPE ignored: end as the signal would.
            if networked && message.contains("Broken pipe (os error 32)") {
                return ExitCode::from(141);
            }
            eprintln!("pbg: error: {message}");
            ExitCode::FAILURE
        }
    }
}
