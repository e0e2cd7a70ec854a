//! pbg's own tokio runtime, for running DataFusion from synchronous code.

use std::future::Future;
use std::path::PathBuf;
use std::sync::LazyLock;

use crate::error::{PbgError, Result};

static RUNTIME: LazyLock<std::result::Result<tokio::runtime::Runtime, String>> =
    LazyLock::new(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("pbg-datafusion")
            // DataFusion and Ballista plan deep expressions recursively on worker threads too.
            .thread_stack_size(16 << 20)
            .build()
            .map_err(|e| e.to_string())
    });

/// Runs a DataFusion future to completion from synchronous code — the CLI, the engine, or a table
/// function being planned inside another runtime — on pbg's own runtime, from a fresh thread so that
/// no runtime is ever entered twice. Engine (rayon) work stays off tokio's workers.
pub fn block_on<F>(future: F) -> Result<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
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
            Err(e) => Err(PbgError::io("thread", e)),
        }
    })
}

/// A handle to pbg's runtime, for code that crosses into pbg from another runtime (the Python
/// module hands it to datafusion-ffi, which enters it while polling pbg's streams).
pub fn runtime_handle() -> Result<tokio::runtime::Handle> {
    RUNTIME
        .as_ref()
        .map(|r| r.handle().clone())
        .map_err(|e| PbgError::Format {
            path: PathBuf::from("tokio runtime"),
            message: e.clone(),
        })
}
