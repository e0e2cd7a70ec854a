//! pbg's own tokio runtime, for running DataFusion from synchronous code.

use std::future::Future;
use std::path::PathBuf;
use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{PbgError, Result};

/// The runtime's worker threads that have started.
static STARTED: AtomicUsize = AtomicUsize::new(0);

static RUNTIME: LazyLock<std::result::Result<tokio::runtime::Runtime, String>> =
    LazyLock::new(|| {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let build = || {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(workers)
                .enable_all()
                .thread_name("pbg-datafusion")
                // DataFusion and Ballista plan deep expressions recursively on worker threads
                // too.
                .thread_stack_size(16 << 20)
                // Its threads for blocking work (file reads) stay once made: see below.
                .thread_keep_alive(std::time::Duration::from_secs(24 * 3600))
                .on_thread_start(|| {
                    STARTED.fetch_add(1, Ordering::SeqCst);
                })
                .build()
        };
        // Tokio panics when the system refuses its first worker a thread.
        let runtime = std::panic::catch_unwind(build)
            .map_err(|_| refused("the query threads did not start".into()))?
            .map_err(|e| e.to_string())?;
        // A worker the system refused a thread for (a limit on processes, `ulimit -u`) waits in
        // tokio's queue for another thread to be free, which a worker never is: every query
        // then waited for good.
        let start = std::time::Instant::now();
        while STARTED.load(Ordering::SeqCst) < workers {
            if start.elapsed() > std::time::Duration::from_secs(10) {
                let started = STARTED.load(Ordering::SeqCst);
                runtime.shutdown_background();
                return Err(refused(format!(
                    "{started} of its {workers} query threads started"
                )));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // A blocking task (a file read) the system refuses a thread for waits in tokio's queue
        // for a blocking thread to be free; with none but the workers, never free, it waited
        // for good. One is made now (kept, like those made later) or the runtime is refused.
        let probe = std::panic::catch_unwind(|| {
            runtime.block_on(async {
                let made = runtime.spawn_blocking(|| ());
                tokio::time::timeout(std::time::Duration::from_secs(10), made).await
            })
        });
        if !matches!(probe, Ok(Ok(Ok(())))) {
            runtime.shutdown_background();
            return Err(refused(
                "the query runtime's thread for file reads did not start".into(),
            ));
        }
        Ok(runtime)
    });

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
    let fail = |message: &String| PbgError::Format {
        path: PathBuf::from("threads"),
        message: message.clone(),
    };
    ENGINE_THREADS.as_ref().map_err(fail)?;
    RUNTIME.as_ref().map(|_| ()).map_err(fail)
}

/// Runs a DataFusion future to completion from synchronous code — the CLI, the engine, or a table
/// function being planned inside another runtime — on pbg's own runtime, from a fresh thread so that
/// no runtime is ever entered twice. Engine (rayon) work stays off tokio's workers.
pub fn block_on<F>(future: F) -> Result<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    start_threads()?;
    let runtime = RUNTIME.as_ref().map_err(|e| PbgError::Format {
        path: PathBuf::from("tokio runtime"),
        message: e.clone(),
    })?;
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
            Err(e) => Err(PbgError::Format {
                path: PathBuf::from("threads"),
                message: refused(format!("a thread for the query did not start ({e})")),
            }),
        }
    })
}

/// A handle to pbg's runtime, for code that crosses into pbg from another runtime (the Python
/// module hands it to datafusion-ffi, which enters it while polling pbg's streams).
pub fn runtime_handle() -> Result<tokio::runtime::Handle> {
    start_threads()?;
    RUNTIME
        .as_ref()
        .map(|r| r.handle().clone())
        .map_err(|e| PbgError::Format {
            path: PathBuf::from("tokio runtime"),
            message: e.clone(),
        })
}
