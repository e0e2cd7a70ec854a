//! The file an output replaces, freed off the run's path. The rename that lands an output frees
//! the file it replaces inside the rename itself when that held its last link: 0.15 s for a
//! 250 MB release and 2.1 s for a 2.5 GB one on a disk mounted with online discard, at the very
//! end of the run, where nothing overlaps it. Held open across the rename, the old file is freed
//! when it is closed instead: by a thread in a process that goes on (the library, Python), or,
//! where the process is about to end ([`free_after_exit`], the command line), by a helper
//! process that holds it until this one has ended. The old file's contents are never touched.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Files smaller than this are closed in place: they cost the rename little.
const LEAST_BYTES: u64 = 16 << 20;

/// Whether replaced files are freed after the process ends ([`free_after_exit`]).
static AFTER_EXIT: AtomicBool = AtomicBool::new(false);

/// Frees the files this process's outputs replace after it has ended, by a helper process
/// holding them until then: for a process that ends right after its last output lands (the
/// command line), so that its end does not wait for the file system to free them.
pub fn free_after_exit() {
    AFTER_EXIT.store(true, Ordering::Relaxed);
}

/// The file at `target` opened for reading if renaming over it would free it: a regular file
/// (not through a symbolic link, which the rename replaces instead of what it names) of one
/// link and at least [`LEAST_BYTES`]. Opening it changes nothing.
pub(crate) fn hold(target: &Path) -> Option<std::fs::File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
        let file = std::fs::OpenOptions::new()
            .read(true)
            // No wait on a named pipe made there meanwhile.
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(target)
            .ok()?;
        let meta = file.metadata().ok()?;
        (meta.file_type().is_file() && meta.nlink() == 1 && meta.len() >= LEAST_BYTES)
            .then_some(file)
    }
    #[cfg(not(unix))]
    {
        let _ = target;
        None
    }
}

/// Frees `file`, which a rename has just replaced, off the caller's path: closed by a thread, or
/// after the process ends ([`free_after_exit`]); closed in place if neither can be started.
pub(crate) fn free(file: std::fs::File) {
    #[cfg(unix)]
    if AFTER_EXIT.load(Ordering::Relaxed) {
        // The pipe's writing end is closed by the process's end (never written); the helper
        // is reaped by whoever adopts it then. A helper that cannot start closes the file here.
        if let Ok((_helper, ends)) = helper_holding(file) {
            std::mem::forget(ends);
        }
        return;
    }
    let _ = std::thread::Builder::new()
        .name("pbg-free".into())
        .spawn(move || drop(file));
}

/// A helper process holding `file` until the returned pipe's writing end is closed, then
/// ending, which frees it. It holds the file before the caller closes its own descriptor, so
/// that close frees nothing.
#[cfg(unix)]
fn helper_holding(
    file: std::fs::File,
) -> std::io::Result<(std::process::Child, std::io::PipeWriter)> {
    let (waits, ends) = std::io::pipe()?;
    let helper = std::process::Command::new("/bin/sh")
        .args(["-c", "read -r _"])
        // Nothing from the environment reaches the shell (no startup file it could name).
        .env_clear()
        .stdin(waits)
        // Never written: the helper only holds it.
        .stdout(file)
        .stderr(std::process::Stdio::null())
        .spawn()?;
    Ok((helper, ends))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn holds_only_large_regular_files_of_one_link() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.csv");
        std::fs::write(&small, b"a\n1\n").unwrap();
        assert!(hold(&small).is_none());
        let big = dir.path().join("big.csv");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(LEAST_BYTES)
            .unwrap();
        let link = dir.path().join("link.csv");
        std::os::unix::fs::symlink(&big, &link).unwrap();
        assert!(hold(&link).is_none(), "a symbolic link");
        let hard = dir.path().join("hard.csv");
        std::fs::hard_link(&big, &hard).unwrap();
        assert!(hold(&big).is_none(), "a file of two links");
        std::fs::remove_file(&hard).unwrap();
        assert!(hold(&big).is_some(), "a large file of one link");
        assert!(hold(&dir.path().join("none.csv")).is_none());
        assert!(hold(dir.path()).is_none(), "a directory");
    }

    #[test]
    fn a_replaced_file_is_freed_after_the_helper_ends() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old.csv");
        std::fs::write(&old, b"previous release\n").unwrap();
        let file = std::fs::File::open(&old).unwrap();
        let ino = file.metadata().unwrap().ino();
        std::fs::remove_file(&old).unwrap();
        let (mut helper, ends) = helper_holding(file).unwrap();
        let held = |pid: u32| {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .map(|fds| {
                    fds.flatten()
                        .any(|fd| std::fs::metadata(fd.path()).is_ok_and(|m| m.ino() == ino))
                })
                .unwrap_or(false)
        };
        assert!(held(helper.id()), "the helper holds the replaced file");
        drop(ends);
        helper.wait().unwrap();
    }
}
