//! pbg's own tokio runtime, for running DataFusion from synchronous code.

use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use crate::error::{PbgError, Result};

/// Whether a runtime is being built ([`checked_runtime`]): tokio's panic on a refused first
/// thread is caught and told as an error then, so a face's panic hook may leave it unprinted.
static BUILDING: AtomicBool = AtomicBool::new(false);

/// Whether [`checked_runtime`] is building a runtime now (a face's panic hook asks).
pub fn building_runtime() -> bool {
    BUILDING.load(Ordering::SeqCst)
}

/// A multi-thread tokio runtime named `name` whose worker threads have stacks of `stack` bytes,
/// checked to have started: each worker, and one thread for blocking work (file reads), kept
/// like those made later. A worker the system refused a thread for (a limit on processes,
/// `ulimit -u`) waited in tokio's queue for another thread to be free, which a worker never is,
/// and so did a file read with no blocking thread but the workers: every query then waited for
/// good; and tokio panics when the system refuses its first thread.
pub fn checked_runtime(name: &str, stack: usize) -> Result<tokio::runtime::Runtime> {
    started_runtime(name, stack).map_err(threads_error)
}

/// [`checked_runtime`], its failure as the message of a [`threads_error`].
fn started_runtime(
    name: &str,
    stack: usize,
) -> std::result::Result<tokio::runtime::Runtime, String> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let started = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&started);
    let build = || {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .thread_name(name)
            .thread_stack_size(stack)
            // Its threads for blocking work stay once made (see above).
            .thread_keep_alive(std::time::Duration::from_secs(24 * 3600))
            .on_thread_start(move || {
                counted.fetch_add(1, Ordering::SeqCst);
            })
            .build()
    };
    BUILDING.store(true, Ordering::SeqCst);
    let built = std::panic::catch_unwind(build);
    BUILDING.store(false, Ordering::SeqCst);
    let runtime = built
        .map_err(|_| refused("the query threads did not start".into()))?
        .map_err(|e| format!("the query threads did not start ({e})"))?;
    let start = std::time::Instant::now();
    while started.load(Ordering::SeqCst) < workers {
        if start.elapsed() > START_WAIT {
            let n = started.load(Ordering::SeqCst);
            runtime.shutdown_background();
            return Err(refused(format!(
                "{n} of its {workers} query threads started"
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // Waited for on a channel, not by `block_on`: the runtime is made on first use, which may
    // be inside another runtime (a `#[tokio::main]` program's first pbg query), where
    // `block_on` panics, and every query then failed as if threads were refused.
    let (done, ran) = std::sync::mpsc::channel();
    let probe = std::panic::catch_unwind(|| {
        runtime.spawn_blocking(move || {
            let _ = done.send(());
        })
    });
    if probe.is_err() || ran.recv_timeout(START_WAIT).is_err() {
        runtime.shutdown_background();
        return Err(refused(
            "the query runtime's thread for file reads did not start".into(),
        ));
    }
    Ok(runtime)
}

/// How long a runtime's threads may take to start before they count as refused (a thread
/// starts in well under a millisecond).
const START_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The error for a thread the system refused to start for `what`.
pub fn thread_refused(what: &str, e: std::io::Error) -> PbgError {
    threads_error(refused(format!("{what} did not start ({e})")))
}

/// The error of threads that did not start, told by `message`.
fn threads_error(message: String) -> PbgError {
    PbgError::Format {
        path: PathBuf::from("threads"),
        message,
    }
}

// DataFusion and Ballista plan deep expressions recursively on worker threads too.
static RUNTIME: LazyLock<std::result::Result<tokio::runtime::Runtime, String>> =
    LazyLock::new(|| started_runtime("pbg-datafusion", 16 << 20));

/// The engine's thread pool (rayon's global pool), started once: left to start on first use,
/// a refused thread panicked inside the engine.
static ENGINE_THREADS: LazyLock<std::result::Result<(), String>> = LazyLock::new(|| {
    match rayon::ThreadPoolBuilder::new().build_global() {
        Ok(()) => Ok(()),
        // Started already (by the program pbg is part of): in use as it is.
        Err(e) if std::error::Error::source(&e).is_none() => Ok(()),
        Err(e) => Err(refused(format!("the engine's threads did not start ({e})"))),
    }
});

/// The message for threads the system refused.
fn refused(what: String) -> String {
    format!(
        "{what}: the system refuses more threads (a limit on processes or threads, such as `ulimit -u`, counts them)"
    )
}

/// Starts the engine's threads and the query runtime's, or says why they cannot start: called
/// before any work, so that a refused thread is an error rather than a panic or a wait for good.
pub fn start_threads() -> Result<()> {
    runtime().map(|_| ())
}

/// pbg's runtime, once the engine's threads and its own have started ([`start_threads`]).
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    ENGINE_THREADS
        .as_ref()
        .map_err(|message| threads_error(message.clone()))?;
    RUNTIME
        .as_ref()
        .map_err(|message| threads_error(message.clone()))
}

/// Runs a DataFusion future to completion from synchronous code — the CLI, the engine, or a table
/// function being planned inside another runtime — on pbg's own runtime, from a fresh thread so that
/// no runtime is ever entered twice. Engine (rayon) work stays off tokio's workers.
pub fn block_on<F>(future: F) -> Result<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let runtime = runtime()?;
    std::thread::scope(|s| {
        match std::thread::Builder::new()
            .name("pbg-plan".into())
            // DataFusion plans deep expressions recursively: give it room.
            .stack_size(64 << 20)
            .spawn_scoped(s, || runtime.block_on(future))
        {
            Ok(handle) => match handle.join() {
                Ok(out) => Ok(out),
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(e) => Err(thread_refused("a thread for the query", e)),
        }
    })
}

/// A handle to pbg's runtime, for code that crosses into pbg from another runtime (the Python
/// module hands it to datafusion-ffi, which enters it while polling pbg's streams).
pub fn runtime_handle() -> Result<tokio::runtime::Handle> {
    runtime().map(|r| r.handle().clone())
}
