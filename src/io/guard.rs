//! A write's target kept as it was until the write is settled: [`TargetGuard`] holds a
//! [`Before`] of the target, registered with [`super::interrupt`] so that an interrupted process
//! puts it back too. Used by the guarded `COPY` writes and by a release that must land together
//! with its report page.

use std::path::Path;
use std::sync::{Arc, Mutex};

use super::interrupt::{Pending, Undo, lock, on_interrupt};
use super::restore::{Before, Target};

/// A target's [`Before`], settled once: committed when its write (or writes) succeeded, else
/// restored — when dropped uncommitted (a failure, a stream dropped unfinished) or when the
/// process is interrupted (a signal the binary watches: see [`super::interrupt`]).
#[derive(Debug)]
pub struct TargetGuard {
    before: Arc<Mutex<Before>>,
    _undo: Pending,
}

impl TargetGuard {
    /// Keeps what `target` holds before its write; an error (nothing written yet) when its
    /// previous file cannot be kept.
    fn keep(target: &Target) -> std::io::Result<TargetGuard> {
        let before = Arc::new(Mutex::new(Before::take(target)?));
        let undo = on_interrupt(Undo::Restore(before.clone()));
        Ok(TargetGuard {
            before,
            _undo: undo,
        })
    }

    /// [`TargetGuard::keep`] for a `COPY`'s write, its error DataFusion's.
    pub(super) fn before(target: &Target) -> datafusion::common::Result<TargetGuard> {
        TargetGuard::keep(target).map_err(|e| {
            datafusion::error::DataFusionError::Execution(format!("{}: {e}", target.path.display()))
        })
    }

    /// Keeps the file `path` as it is now (or its absence) until [`TargetGuard::commit`]: an
    /// atomic release renamed over it meanwhile is undone unless the run commits, as when a
    /// release's report page could not be written after it.
    pub fn file(path: &Path) -> crate::error::Result<TargetGuard> {
        let target = Target {
            path: path.to_path_buf(),
            single_file: true,
            extension: String::new(),
        };
        TargetGuard::keep(&target).map_err(|e| crate::error::PbgError::io(path, e))
    }

    /// The writes succeeded: the target stays as they left it.
    pub fn commit(self) {
        lock(&self.before).commit();
    }
}

impl Drop for TargetGuard {
    fn drop(&mut self) {
        lock(&self.before).restore();
    }
}
