//! What an interrupted process undoes. A `COPY` stopped by Ctrl-C or `kill` left the object
//! store's staged part of its target (`out.csv#1`, a visible partial result) and the hidden copy
//! of the previous file; a release its temporary file, until the next run to the same output.
//! Writes register what would undo them while they run ([`on_interrupt`]). The binary's signal
//! watcher hands a record of them ([`pending_record`]) to a process of its own, which carries
//! them out ([`undo_recorded`]) once the interrupted process has ended: undone while its
//! writers still ran, a partitioned write went on adding files after the cleanup had listed
//! them (an attack round found 100 of 2000 partitions left). Writes that are still running
//! then settle nothing ([`settle`]): what they guard is the undo's.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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
    /// The action as data, for the process that carries it out.
    fn record(&self) -> serde_json::Value {
        match self {
            Undo::Remove(file) => serde_json::json!({ "remove": file }),
            Undo::Restore(before) => serde_json::json!({ "restore": &*lock(before) }),
        }
    }
}

/// `m` locked, also after a panic elsewhere (its state is a few paths: still usable).
pub(crate) fn lock(m: &Mutex<Before>) -> std::sync::MutexGuard<'_, Before> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes `file` and the object store's staged files of it.
fn remove_with_staged(file: &std::path::Path) {
    let _ = std::fs::remove_file(file);
    for staged in staged_files(file) {
        let _ = std::fs::remove_file(staged);
    }
}

/// Undo actions of the writes running now, by their number.
pub(crate) struct Undos {
    pending: Mutex<Registered>,
    next: AtomicU64,
}

/// The registered actions, and whether they were taken for an interrupted process's undo.
struct Registered {
    actions: Vec<(u64, Arc<Undo>)>,
    /// Taken ([`pending_record`]): the writes still running are undone by the process they
    /// were handed to, and settle nothing themselves meanwhile.
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

    fn register(&'static self, undo: Undo) -> Pending {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.registered().actions.push((id, Arc::new(undo)));
        Pending { undos: self, id }
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

/// Runs `settle` (a write's commit or its in-process undo) and withdraws the `pending` actions
/// as one step against an interrupt: unless they were taken for an interrupted process's undo
/// already, then it does nothing (that undo puts back what they guard). Several writes that
/// must land together (a release and its report page) settle in one call: an interrupt finds
/// them all pending or all settled.
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

/// Registers `undo`, to be carried out if the process is interrupted before the returned
/// [`Pending`] is dropped.
pub(crate) fn on_interrupt(undo: Undo) -> Pending {
    UNDOS.register(undo)
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.undos
            .registered()
            .actions
            .retain(|(id, _)| *id != self.id);
    }
}

/// Marks the process's work as ended, before it exits on its own; false when an interrupt was
/// taken first: the process must not exit then, but wait for the signal watcher to end it once
/// the undo is handed over (exiting, it ended with status 0 while the undo process read an
/// empty record, and the kept previous files were left).
pub fn finish() -> bool {
    let mut registered = UNDOS.registered();
    if registered.taken {
        return false;
    }
    registered.finished = true;
    true
}

/// Every registered undo action as a record (JSON) for [`undo_recorded`], taken: this process
/// carries none of them out any more.
pub fn pending_record() -> String {
    let records: Vec<serde_json::Value> = UNDOS.take().iter().map(|u| u.record()).collect();
    serde_json::Value::Array(records).to_string()
}

/// Carries out the undo actions of `record` ([`pending_record`]), in order.
pub fn undo_recorded(record: &str) -> Result<(), String> {
    let records: Vec<serde_json::Value> =
        serde_json::from_str(record).map_err(|e| format!("an undo record: {e}"))?;
    for record in records {
        if let Some(file) = record.get("remove") {
            let file: PathBuf =
                serde_json::from_value(file.clone()).map_err(|e| format!("an undo record: {e}"))?;
            remove_with_staged(&file);
        } else if let Some(before) = record.get("restore") {
            let mut before: Before = serde_json::from_value(before.clone())
                .map_err(|e| format!("an undo record: {e}"))?;
            before.restore();
        }
    }
    Ok(())
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
        let pending = LOCAL.register(Undo::Remove(gone.clone()));
        drop(LOCAL.register(Undo::Remove(kept.clone())));
        let taken = LOCAL.take();
        assert_eq!(taken.len(), 1);
        assert!(LOCAL.take().is_empty());
        // Through its record, as the process the binary hands it to carries it out.
        let record = serde_json::Value::Array(taken.iter().map(|u| u.record()).collect());
        undo_recorded(&record.to_string()).unwrap();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["kept"]);
        drop(pending);
    }
}
