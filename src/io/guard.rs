//! A write's target kept as it was until the write is settled: [`TargetGuard`] holds a
//! [`Before`] of the target, registered with [`super::interrupt`] so that an interrupted process
//! puts it back too. Used by the guarded `COPY` writes and by a release that must land together
//! with its report page.

use std::path::Path;
use std::sync::{Arc, Mutex};

use super::interrupt::{Pending, Undo, lock, on_interrupt, settle};
use super::restore::{Before, Target};

/// The longest file name, in bytes, of the file systems pbg writes to (Linux's `NAME_MAX`).
const NAME_MAX: usize = 255;

/// What the object store adds to a file's name while it stages it (`#1`).
const STAGED_SUFFIX: usize = 2;

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
        // Registered before the previous file is kept aside, and held while it is: an interrupt
        // meanwhile waits for it, then puts it back (kept after the interrupt's undo had run, a
        // file renamed aside was left under its hidden name).
        let before = Arc::new(Mutex::new(Before::settled(target)));
        let mut held = lock(&before);
        let undo = on_interrupt(Undo::Restore(before.clone()))?;
        *held = Before::take(target)?;
        drop(held);
        Ok(TargetGuard {
            before,
            _undo: undo,
        })
    }

    /// [`TargetGuard::keep`] for a `COPY`'s write, its error DataFusion's.
    pub(super) fn before(target: &Target) -> datafusion::common::Result<TargetGuard> {
        // The object store stages a single file as `NAME#1`: a name too long for that failed
        // after the write with DataFusion's "Internal error ... a bug in DataFusion's code".
        let bytes = target
            .path
            .file_name()
            .map_or(0, |n| n.as_encoded_bytes().len());
        if target.single_file && bytes + STAGED_SUFFIX > NAME_MAX {
            return Err(datafusion::error::DataFusionError::Execution(format!(
                "{}: its name is {bytes} bytes; the writer stages it as NAME#1, which must fit the file system's {NAME_MAX}: at most {} (nothing was written)",
                target.path.display(),
                NAME_MAX - STAGED_SUFFIX
            )));
        }
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
            atomic: true,
        };
        TargetGuard::keep(&target).map_err(|e| crate::error::PbgError::io(path, e))
    }

    /// The writes succeeded: the target stays as they left it (unless the process was
    /// interrupted meanwhile: the interrupt's undo puts the target back).
    pub fn commit(self) {
        TargetGuard::commit_all(vec![self]);
    }

    /// Commits `guards` in one step against an interrupt: it finds every target kept or every
    /// one settled (a release and its report page: the new pair or the previous one, not the
    /// new release beside the previous page).
    pub fn commit_all(guards: Vec<TargetGuard>) {
        let pending: Vec<&Pending> = guards.iter().map(|g| &g._undo).collect();
        settle(&pending, || {
            for g in &guards {
                lock(&g.before).commit();
            }
        });
    }
}

impl Drop for TargetGuard {
    fn drop(&mut self) {
        // Settled already (a no-op then), or put back here unless an interrupt's undo has it.
        settle(&[&self._undo], || lock(&self.before).restore());
    }
}
