//! What an interrupted process undoes, before it ends. A `COPY` stopped by Ctrl-C or `kill` left
//! the object store's staged part of its target (`out.csv#1`, a visible partial result) and the
//! hidden copy of the previous file; a release its temporary file, until the next run to the
//! same output. Writes register what would undo them while they run ([`on_interrupt`]). The
//! binary's signal watcher calls [`undo_interrupted`]: from then on no write through pbg's
//! local store begins or finishes ([`crate::input::stop_writes`]: a partitioned write went on
//! adding files after an undo had listed them), no atomic output is renamed into place and no guarded write
//! settles ([`settle`], [`unless_interrupted`]); once the store's writes under way have ended,
//! the registered undo actions run, and the process then ends as the signal ends it. (Handed
//! to a process of its own that undid them after this one had ended, the undo came a moment
//! after the exit, and never in a container whose first process ended with it.)

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::restore::{Before, staged_files};

/// What undoes one write under way.
pub(crate) enum Undo {
    /// Removes a file the write makes (a release's temporary file), with what the object store
    /// staged for it.
    Remove(PathBuf),
    /// Puts a guarded write's target back as it was (unless the write has settled).
    Restore(Arc<Mutex<Before>>),
}

impl Undo {
    fn run(&self) {
        match self {
            Undo::Remove(file) => {
                let _ = std::fs::remove_file(file);
                for staged in staged_files(file) {
                    let _ = std::fs::remove_file(staged);
                }
            }
            Undo::Restore(before) => lock(before).restore(),
        }
    }
}

/// `m` locked, also after a panic elsewhere (its state is a few paths: still usable).
pub(crate) fn lock(m: &Mutex<Before>) -> std::sync::MutexGuard<'_, Before> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Undo actions of the writes running now, by their number.
pub(crate) struct Undos {
    pending: Mutex<Registered>,
    next: AtomicU64,
}

/// The registered actions, and the state of the process's writes.
struct Registered {
    actions: Vec<(u64, Arc<Undo>)>,
    /// Taken by an interrupt: the writes still running settle nothing and begin nothing more;
    /// the interrupt undoes what they guard.
    taken: bool,
    /// The process's work ended ([`finish`]): an interrupt now has nothing to undo.
    finished: bool,
}

/// The process's undo actions.
static UNDOS: Undos = Undos::new();

/// A registered undo action, withdrawn when dropped (its write ended, well or not).
pub struct Pending {
    undos: &'static Undos,
    id: u64,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pending({})", self.id)
    }
}

impl Undos {
    const fn new() -> Self {
        Undos {
            pending: Mutex::new(Registered {
                actions: Vec::new(),
                taken: false,
                finished: false,
            }),
            next: AtomicU64::new(0),
        }
    }

    fn registered(&self) -> std::sync::MutexGuard<'_, Registered> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `undo`; `None` once an interrupt was taken (its undo has run or is running:
    /// a write begun now would be left as it is).
    fn register(&'static self, undo: Undo) -> Option<Pending> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut registered = self.registered();
        if registered.taken {
            return None;
        }
        registered.actions.push((id, Arc::new(undo)));
        Some(Pending { undos: self, id })
    }

    /// The actions registered now, newest first (a write's undo may rely on an older one's
    /// state), taken: none of them runs twice, and the writes they undo settle nothing more.
    fn take(&self) -> Vec<Arc<Undo>> {
        let mut registered = self.registered();
        if registered.finished {
            return Vec::new();
        }
        registered.taken = true;
        let actions = std::mem::take(&mut registered.actions);
        actions.into_iter().rev().map(|(_, u)| u).collect()
    }
}

/// Registers `undo`, to be carried out if the process is interrupted before the returned
/// [`Pending`] is dropped; an error once the process was interrupted (the write must not begin).
pub(crate) fn on_interrupt(undo: Undo) -> std::io::Result<Pending> {
    UNDOS.register(undo).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "interrupted: the writes under way are being undone",
        )
    })
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.undos
            .registered()
            .actions
            .retain(|(id, _)| *id != self.id);
    }
}

/// Runs `settle` (a write's commit or its in-process undo) and withdraws the `pending` actions
/// as one step against an interrupt: unless one was taken already, then it does nothing (the
/// interrupt's undo puts back what they guard). Several writes that must land together (a
/// release and its report page) settle in one call: an interrupt finds them all pending or
/// all settled.
pub(crate) fn settle(pending: &[&Pending], settle: impl FnOnce()) {
    let undos = pending.first().map_or(&UNDOS, |p| p.undos);
    let mut registered = undos.registered();
    if registered.taken {
        return;
    }
    settle();
    registered
        .actions
        .retain(|(id, _)| pending.iter().all(|p| p.id != *id));
}

/// `f()` as one step against an interrupt (renaming atomic outputs into place), or `None` when
/// one was taken: then nothing more may land.
pub(crate) fn unless_interrupted<T>(f: impl FnOnce() -> T) -> Option<T> {
    let registered = UNDOS.registered();
    if registered.taken {
        return None;
    }
    let done = f();
    drop(registered);
    Some(done)
}

/// Marks the process's work as ended, before it exits on its own; false when an interrupt was
/// taken first: the process must not exit then, but wait for the signal watcher to end it once
/// the undo is done (exiting, it ended with status 0 and its writes were not undone).
pub fn finish() -> bool {
    let mut registered = UNDOS.registered();
    if registered.taken {
        return false;
    }
    registered.finished = true;
    true
}

/// Undoes the writes under way, for an interrupt: takes the registered actions (no write
/// begins or settles from then on), waits for the store's writes under way to end (at most
/// `wait`), then carries the actions out. Once per process: a second caller (a signal and a
/// closed standard error at once) returns when the first one's undo is done, and learns that
/// it was not the first (false); the first ends the process. (It exited in the middle of the
/// first one's undo, leaving its kept files.)
pub fn undo_interrupted(wait: Duration) -> bool {
    static ONCE: std::sync::Once = std::sync::Once::new();
    let mut first = false;
    ONCE.call_once(|| {
        first = true;
        let actions = UNDOS.take();
        crate::input::stop_writes(wait);
        for undo in actions {
            undo.run();
        }
    });
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undo_runs_once_unless_withdrawn() {
        // A registry of the test's own: the process's holds other tests' writes.
        static LOCAL: Undos = Undos::new();
        let dir = tempfile::tempdir().unwrap();
        let (kept, gone) = (dir.path().join("kept"), dir.path().join("gone"));
        for f in [&kept, &gone] {
            std::fs::write(f, "x").unwrap();
        }
        std::fs::write(dir.path().join("gone#1"), "x").unwrap();
        let pending = LOCAL.register(Undo::Remove(gone.clone())).unwrap();
        drop(LOCAL.register(Undo::Remove(kept.clone())));
        let taken = LOCAL.take();
        assert_eq!(taken.len(), 1);
        assert!(LOCAL.take().is_empty());
        assert!(LOCAL.registered().taken);
        // Nothing registers after an interrupt.
        assert!(LOCAL.register(Undo::Remove(kept.clone())).is_none());
        for undo in taken {
            undo.run();
        }
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["kept"]);
        drop(pending);
    }
}
