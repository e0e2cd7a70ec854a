//! The `pbg` command line: a thin face over the `pbg` library.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, which turns a closed pipe into an error or a panic in println!:
    // both end the process quietly with the signal's shell status (below), after the writes
    // under way are undone (the signal's default action killed the process in the middle of
    // them, when a note went to a closed standard error). Cluster roles and clients write to
    // sockets too, where a peer that went away must be an error.
    // A file grown past `ulimit -f` fails its write (EFBIG) instead of killing the process:
    // a failed write is put back like any other (SIGXFSZ left a partial `out.csv#1`).
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; SIG_IGN is always valid.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // Cluster roles keep Ballista's own handling of SIGINT and SIGTERM (an executor deregisters).
    #[cfg(unix)]
    // The command is the first argument that is no flag (`pbg --quiet cluster executor`: the
    // only global flag takes no value).
    if std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .as_deref()
        != Some("cluster")
    {
        watch_interrupts();
    }
    // With SIGPIPE ignored, printing to a closed pipe (`pbg lattice .. | head`) panics in
    // println! or eprintln!: the writes under way are undone, and the process ends quietly as
    // the signal would, with its status.
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        // Tokio's panic when the system refuses its first thread, while a runtime is built, is
        // caught and told as an error (`pbg::input::checked_runtime`).
        if text.starts_with("OS can't spawn worker thread") && pbg::input::building_runtime() {
            return;
        }
        if text.contains("failed printing to std") && text.contains("Broken pipe") {
            // A signal taken first ends the process itself, once its undo is done (the wait
            // is bounded).
            if !pbg::io::interrupt::undo_interrupted(std::time::Duration::from_secs(10)) {
                std::thread::sleep(std::time::Duration::from_secs(60));
            }
            std::process::exit(141);
        }
        default(info);
    }));
    let code = run();
    // An interrupt taken meanwhile ends the process once its undo is done: the writes it
    // guards are put back, whatever this run reached (the wait is bounded, should the watcher
    // never end the process).
    if !pbg::io::interrupt::finish() {
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
    code
}

/// Runs the command; its exit status.
fn run() -> ExitCode {
    // The threads first: one the system refuses (`ulimit -u`) is then an error, not a panic
    // inside the engine or a query that waits for good.
    let ran = pbg::input::start_threads()
        .map_err(anyhow::Error::from)
        .and_then(|()| cli::run());
    match ran {
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
            if message.contains("Broken pipe (os error 32)") {
                return ExitCode::from(141);
            }
            eprintln!("pbg: error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Ends the process on SIGINT, SIGTERM, SIGHUP or SIGQUIT as the signal would, after undoing what the
/// writes under way leave behind ([`pbg::io::interrupt`]): a `COPY` stopped by Ctrl-C left a
/// visible partial target (`out.csv#1`) and a hidden link to the previous file; a release its
/// temporary file. The signals are blocked in every thread and taken by one watching thread.
#[cfg(unix)]
fn watch_interrupts() {
    // SAFETY: called in main before any other thread exists, so every thread the process starts
    // inherits the mask; the set is built by the libc calls meant for it.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
            // A signal the process was started ignoring (`nohup`, a background job's SIGINT)
            // stays ignored: Linux queues a blocked signal even so, and the watcher took it.
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) == 0
                && current.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            libc::sigaddset(&mut set, signal);
        }
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        set
    };
    let watcher = std::thread::Builder::new()
        .name("pbg-signals".into())
        .spawn(move || {
            let mut signal: libc::c_int = 0;
            // SAFETY: `set` is a valid signal set; `signal` receives the one taken.
            if unsafe { libc::sigwait(&set, &mut signal) } != 0 {
                return;
            }
            // The writes under way are undone before the process ends: a script that reads
            // the output right after the exit finds it as it was.
            let _ = pbg::io::interrupt::undo_interrupted(std::time::Duration::from_secs(10));
            // Only the signal taken is unblocked: a second one already pending (`kill -INT`,
            // then `kill -TERM`) ended the process with its own status instead.
            // SAFETY: the default action restored and the signal unblocked in this thread, the
            // raised signal ends the process with its status, as it would have.
            unsafe {
                let mut taken: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut taken);
                libc::sigaddset(&mut taken, signal);
                libc::signal(signal, libc::SIG_DFL);
                libc::pthread_sigmask(libc::SIG_UNBLOCK, &taken, std::ptr::null_mut());
                libc::raise(signal);
                // The first process of a PID namespace (`docker run IMAGE pbg ..`) ignores a
                // signal it has no handler for: it ends with the signal's shell status.
                libc::_exit(128 + signal);
            }
        });
    if watcher.is_err() {
        // No watcher: the signals end the process as before, unblocked.
        // SAFETY: the set is valid; unblocking restores the mask main started with.
        unsafe {
            libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}
