//! What an interrupted process undoes before it ends. A `COPY` stopped by Ctrl-C or `kill` left
//! the object store's staged part of its target (`out.csv#1`, a visible partial release) and the
//! hidden link to the previous file; a release's temporary file waited for the next run to the
//! same output. Writes register an undo while they run ([`on_interrupt`]); the binary's signal
//! watcher runs them all ([`undo_all`]) and then ends the process as the signal would. A library
//! user without such a watcher loses nothing: the undo of a write that ends is withdrawn.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// An undo action.
type Undo = Arc<dyn Fn() + Send + Sync>;

/// Undo actions of the writes running now, by their number.
pub(crate) struct Undos {
    pending: Mutex<Vec<(u64, Undo)>>,
    next: AtomicU64,
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
            pending: Mutex::new(Vec::new()),
            next: AtomicU64::new(0),
        }
    }

    fn register(&'static self, undo: Undo) -> Pending {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.push((id, undo));
        Pending { undos: self, id }
    }

    fn run_all(&self) {
        let pending = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|e| e.into_inner()));
        // Newest first: a write's undo may rely on an older one's state.
        for (_, undo) in pending.into_iter().rev() {
            undo();
        }
    }
}

/// Registers `undo`, to be run if the process is interrupted before the returned [`Pending`]
/// is dropped.
pub fn on_interrupt(undo: impl Fn() + Send + Sync + 'static) -> Pending {
    UNDOS.register(Arc::new(undo))
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut pending = self.undos.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|(id, _)| *id != self.id);
    }
}

/// Runs every registered undo action once (the interrupted process's last act).
pub fn undo_all() {
    UNDOS.run_all();
}

/// Whether `name` is `stem` with the object store's staging suffix (`#` and digits): the file a
/// local write fills before it renames it into place.
pub(crate) fn staged_name_of(name: &str, stem: &str) -> bool {
    name.strip_prefix(stem)
        .and_then(|rest| rest.strip_prefix('#'))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The object store's staged files of `file` (`file#1`, ...) beside it.
pub(crate) fn staged_files(file: &std::path::Path) -> HashSet<PathBuf> {
    let (Some(dir), Some(stem)) = (file.parent(), file.file_name()) else {
        return HashSet::new();
    };
    let stem = stem.to_string_lossy();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return HashSet::new();
    };
    entries
        .flatten()
        .filter(|e| staged_name_of(&e.file_name().to_string_lossy(), &stem))
        .map(|e| e.path())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undo_runs_once_unless_withdrawn() {
        // A registry of the test's own: the process's holds other tests' writes.
        static LOCAL: Undos = Undos::new();
        let runs = Arc::new(AtomicU64::new(0));
        let counted = |runs: &Arc<AtomicU64>| -> Undo {
            let runs = runs.clone();
            Arc::new(move || {
                runs.fetch_add(1, Ordering::Relaxed);
            })
        };
        let kept = LOCAL.register(counted(&runs));
        drop(LOCAL.register(counted(&runs)));
        LOCAL.run_all();
        LOCAL.run_all();
        assert_eq!(runs.load(Ordering::Relaxed), 1);
        drop(kept);
    }

    #[test]
    fn staged_names_are_the_stores() {
        assert!(staged_name_of("out.csv#1", "out.csv"));
        assert!(staged_name_of("out.csv#12", "out.csv"));
        assert!(!staged_name_of("out.csv#", "out.csv"));
        assert!(!staged_name_of("out.csv#1x", "out.csv"));
        assert!(!staged_name_of("out.csv", "out.csv"));
        assert!(!staged_name_of("out.csv2#1", "out.csv"));
    }
}
