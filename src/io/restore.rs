//! What a write's target held before it, and putting it back: the previous file of a
//! single-file target kept aside, the files and directories of a directory target listed. Kept
//! as data so that it can be settled by the write (its commit, or a failed or dropped write)
//! or by an interrupt ([`super::interrupt`]).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where a write lands: one file, or files DataFusion names in a directory.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The file, or the directory.
    pub(super) path: PathBuf,
    /// Whether the write makes the one file `path`.
    pub(super) single_file: bool,
    /// The extension of the files a directory write makes.
    pub(super) extension: String,
    /// Written only by pbg's atomic renames, which note what they land ([`note_landed`]): a
    /// file found there that none of them landed is another run's, and is left as it is.
    pub(super) atomic: bool,
}

/// The files pbg's atomic renames put in place in this process, newest last: their device and
/// inode, each held open so that its inode is not freed and given to another file meanwhile
/// (a file written just after one was replaced got its inode, and was taken for it).
static LANDED: std::sync::Mutex<std::collections::VecDeque<(std::fs::File, (u64, u64))>> =
    std::sync::Mutex::new(std::collections::VecDeque::new());

/// The most landed files held open: far more than the writes of a run that can fail together.
const LANDED_HELD: usize = 64;

/// Notes the file at `path` as landed by this process (just renamed into place).
pub(super) fn note_landed(path: &Path) {
    let mut open = std::fs::OpenOptions::new();
    open.read(true);
    #[cfg(target_os = "linux")]
    {
        // The inode only, whatever its permissions.
        use std::os::unix::fs::OpenOptionsExt;
        open.custom_flags(libc::O_PATH | libc::O_NOFOLLOW);
    }
    let (Ok(file), Some(id)) = (open.open(path), entry_identity(path)) else {
        return;
    };
    let mut landed = LANDED.lock().unwrap_or_else(|e| e.into_inner());
    if landed.len() == LANDED_HELD {
        landed.pop_front();
    }
    landed.push_back((file, id));
}

/// Whether this process landed the file `id`.
fn landed(id: (u64, u64)) -> bool {
    LANDED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .any(|(_, l)| *l == id)
}

/// Distinguishes the kept files of writes in one process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// How a single-file target's previous file is kept while the write runs.
#[derive(Debug)]
enum Kept {
    /// Under a hard link beside it: the target stays in place.
    Linked(PathBuf),
    /// Copied beside it, where no link can be made (a file system without them, or another
    /// user's file under `fs.protected_hardlinks`): the target stays in place.
    Copied(PathBuf),
    /// Renamed aside, where it cannot be copied either: the target is absent meanwhile.
    Moved(PathBuf),
}

impl Kept {
    /// Where the previous file is kept.
    fn path(&self) -> &Path {
        match self {
            Kept::Linked(p) | Kept::Copied(p) | Kept::Moved(p) => p,
        }
    }
}

/// What a write's target held before it, until the write succeeds.
#[derive(Debug)]
pub(crate) struct Before {
    target: Target,
    /// The previous file of a single-file target.
    previous: Option<Kept>,
    /// The files under a directory target before the write.
    files_before: HashSet<PathBuf>,
    /// The directories under a directory target before the write (its partitions').
    dirs_before: HashSet<PathBuf>,
    /// The outermost directory the write's target lies in that did not exist before it: what
    /// the writer created on the way (`COPY .. TO 'new/sub/x.csv'`).
    created: Option<PathBuf>,
    /// The object store's staged files of a single-file target before the write (`out.csv#1`,
    /// left by a killed run): not this write's to remove.
    staged_before: HashSet<PathBuf>,
    /// A single-file target that was there but is no file to keep (a directory, a named pipe,
    /// a device): never removed (the write is refused over it; a failed release with a report
    /// page removed the named pipe it was refused over).
    untouched: bool,
    /// The device and inode of a single-file target before the write, symbolic links not
    /// followed: a target still the same entry was never replaced, and its kept copy goes
    /// (renamed back, the copy took the place of the user's file: another owner, its other
    /// hard links cut).
    identity: Option<(u64, u64)>,
    /// Committed or restored.
    settled: bool,
}

impl Before {
    /// A `Before` of `target` that keeps nothing and puts nothing back.
    pub(super) fn settled(target: &Target) -> Before {
        Before {
            target: target.clone(),
            previous: None,
            files_before: HashSet::new(),
            dirs_before: HashSet::new(),
            created: None,
            staged_before: HashSet::new(),
            untouched: true,
            identity: None,
            settled: true,
        }
    }

    /// What `target` holds before its write; an error (nothing written yet) when its previous
    /// file cannot be kept.
    pub(super) fn take(target: &Target) -> std::io::Result<Before> {
        let mut guard = Before {
            staged_before: staged_files(&target.path),
            untouched: false,
            settled: false,
            ..Before::settled(target)
        };
        let within = match target.single_file {
            true => target.path.parent(),
            false => Some(target.path.as_path()),
        };
        guard.created = within.and_then(|dir| {
            dir.ancestors()
                .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
                .last()
                .map(Path::to_path_buf)
        });
        if target.single_file {
            guard.identity = entry_identity(&target.path);
            remove_stale_kept_links(&target.path, STALE_AGE);
        }
        match target.single_file {
            true if target.path.is_file() => {
                let kept = match link_aside(&target.path) {
                    Ok(kept) => Kept::Linked(kept),
                    Err(_) => match copy_aside(&target.path) {
                        Ok(kept) => Kept::Copied(kept),
                        Err(_) => Kept::Moved(move_aside(&target.path).map_err(|e| {
                            std::io::Error::new(
                                e.kind(),
                                format!(
                                    "its previous file cannot be kept aside while the write runs ({e}): nothing was written"
                                ),
                            )
                        })?),
                    },
                };
                guard.previous = Some(kept);
            }
            // A symbolic link that leads to no file (dangling, or to a directory) is kept as
            // it is, by a link to the link itself.
            true if std::fs::symlink_metadata(&target.path).is_ok_and(|m| m.is_symlink()) => {
                match link_aside(&target.path) {
                    Ok(kept) => guard.previous = Some(Kept::Linked(kept)),
                    Err(_) => guard.untouched = true,
                }
            }
            true => guard.untouched = std::fs::symlink_metadata(&target.path).is_ok(),
            false => (guard.files_before, guard.dirs_before) = tree(&target.path),
        }
        Ok(guard)
    }

    /// The write succeeded: the kept previous file goes.
    pub(super) fn commit(&mut self) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        if let Some(kept) = self.previous.take() {
            carry_permissions(kept.path(), &self.target.path);
            let _ = std::fs::remove_file(kept.path());
        }
    }

    /// Puts the target back as it was (once: a settled write is left as it is).
    pub(crate) fn restore(&mut self) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        if self.target.single_file {
            // What the object store staged for the target (an interrupted write's part).
            for staged in staged_files(&self.target.path).difference(&self.staged_before) {
                let _ = std::fs::remove_file(staged);
            }
            let now = entry_identity(&self.target.path);
            let unchanged = self.identity.is_some() && now == self.identity;
            // Another run's file, landed after this one began (runs to the same output): a
            // failed run put back over it what it had found at its start.
            let others = self.target.atomic && !unchanged && now.is_some_and(|id| !landed(id));
            match self.previous.take() {
                // A write that failed before it replaced the target leaves it as it was: the
                // kept link or copy goes (`rename` of two links to one file does nothing, and a
                // copy renamed back would replace the user's file).
                Some(kept @ (Kept::Linked(_) | Kept::Copied(_))) if unchanged || others => {
                    let _ = std::fs::remove_file(kept.path());
                }
                Some(kept) => {
                    let _ = std::fs::rename(kept.path(), &self.target.path);
                }
                None if self.untouched || others => {}
                None => {
                    let _ = std::fs::remove_file(&self.target.path);
                }
            }
        } else {
            let (files, dirs) = tree(&self.target.path);
            for file in files.difference(&self.files_before) {
                if written_by_datafusion(file, &self.target.extension) {
                    let _ = std::fs::remove_file(file);
                }
            }
            // The partition directories the write made (`p=0/`), deepest first; only empty
            // ones go.
            let mut made: Vec<&PathBuf> = dirs.difference(&self.dirs_before).collect();
            made.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
            for dir in made {
                let _ = std::fs::remove_dir(dir);
            }
        }
        // The directories made on the way to the target, if the write left them empty.
        if let Some(created) = &self.created {
            remove_empty_dirs(created);
        }
    }
}

/// A name of its own beside `target` for its kept previous file: short, not the target's name
/// lengthened (past the file system's 255 bytes a name made from a long target's failed, and
/// the failed write then removed the target it could not keep), and made unique by the time
/// too: a process id comes again (in every container), and a killed run's kept file may still
/// bear the name.
fn kept_name(target: &Path) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    target.with_file_name(format!(
        ".pbg-previous-{}-{}-{nanos:08x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The process id in a kept file's name, for names [`kept_name`] makes alone
/// (`.pbg-previous-PID-N-TIME`: decimals without a sign or leading zero, the time as 8
/// lowercase hex digits), so that a name a user chose (`.pbg-previous-2024-11-29`, a backup)
/// is never taken for one.
fn kept_name_pid(name: &str) -> Option<u32> {
    let mut parts = name.strip_prefix(".pbg-previous-")?.split('-');
    let (pid, n, time) = (parts.next()?, parts.next()?, parts.next()?);
    let time = time.len() == 8 && time.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    (parts.next().is_none() && decimal(n).is_some() && time)
        .then(|| decimal(pid).and_then(|p| u32::try_from(p).ok()))
        .flatten()
}

/// `s` as a number written as pbg writes numbers into the names it makes (decimal digits, no
/// sign, no leading zero), or `None`: a name written otherwise is not pbg's.
pub(super) fn decimal(s: &str) -> Option<u64> {
    s.parse::<u64>().ok().filter(|v| v.to_string() == s)
}

/// How long what a killed run left (a temporary file unchanged, a kept link's file) must have
/// been left before it is taken for a killed run's: a process id is only known in this
/// process's PID namespace, and a run in another (a container sharing the directory) lost the
/// file it was writing to this cleanup.
pub(super) const STALE_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Whether no process `pid` runs here (`kill(pid, 0)` finds none): a process that runs, or
/// that cannot be asked, may still need what it left (a kept file, a temporary file). Only
/// this PID namespace is seen.
pub(super) fn gone(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(id) = libc::pid_t::try_from(pid) else {
            return false;
        };
        if pid == std::process::id() || id <= 0 {
            return false;
        }
        // SAFETY: signal 0 sends nothing; it only asks whether the process exists.
        let sent = unsafe { libc::kill(id, 0) };
        sent == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

/// Removes the kept links that killed runs left beside `target` (their process gone, the file's
/// links unchanged for `settled_for`) which are only another name of the file the target still
/// holds: they keep nothing the target does not, but once the target is replaced they would
/// hold the replaced release's blocks for good (2.5 GB a run). Kept copies, previous files
/// renamed aside, links to any other file and those of a process that still runs stay: they
/// may be the only copy of a previous file.
fn remove_stale_kept_links(target: &Path, settled_for: std::time::Duration) {
    let (Some(dir), Some(identity)) = (directory_of(target), entry_identity(target)) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        // The target itself, named like a kept file, is no other name of its file.
        if Some(name.as_os_str()) == target.file_name() {
            continue;
        }
        let Some(pid) = kept_name_pid(&name.to_string_lossy()) else {
            continue;
        };
        let path = entry.path();
        if entry_identity(&path) == Some(identity) && gone(pid) && links_settled(&path, settled_for)
        {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// Whether the links of the file `path` names have been left unchanged for `age` (its inode's
/// change time: making a kept link sets it). A process id is only known in this PID namespace:
/// a run in another (a container sharing the directory) made its kept link within
/// [`STALE_AGE`], or touched the file since.
fn links_settled(path: &Path, age: std::time::Duration) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(m) = std::fs::symlink_metadata(path) else {
            return false;
        };
        let changed = std::time::UNIX_EPOCH
            + std::time::Duration::new(
                m.ctime().max(0) as u64,
                m.ctime_nsec().clamp(0, 999_999_999) as u32,
            );
        changed.elapsed().is_ok_and(|a| a >= age)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// The most names [`kept_name`] tries before it gives up.
const KEPT_NAME_TRIES: usize = 64;

/// Makes `keep(name)` under a fresh [`kept_name`] that no file bears: `keep` must fail with
/// `AlreadyExists` on a name taken, never write through it (a copy through a name a killed
/// run left linked to a user's file emptied and rewrote that file).
fn aside(target: &Path, keep: impl Fn(&Path) -> std::io::Result<()>) -> std::io::Result<PathBuf> {
    for _ in 0..KEPT_NAME_TRIES {
        let kept = kept_name(target);
        match keep(&kept) {
            Ok(()) => return Ok(kept),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        "no free name to keep it under",
    ))
}

/// A hard link to `target` (to a symbolic link itself, not where it leads) under a new name.
fn link_aside(target: &Path) -> std::io::Result<PathBuf> {
    aside(target, |kept| std::fs::hard_link(target, kept))
}

/// A copy of the file `target` under a new name, created for the copy alone.
fn copy_aside(target: &Path) -> std::io::Result<PathBuf> {
    aside(target, |kept| copy_to_new(target, kept))
}

/// Copies the file `target` to `kept`, a file it creates (`AlreadyExists` if the name is taken).
fn copy_to_new(target: &Path, kept: &Path) -> std::io::Result<()> {
    let mut to = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(kept)?;
    let copied = std::fs::File::open(target).and_then(|mut from| {
        std::io::copy(&mut from, &mut to)?;
        to.set_permissions(from.metadata()?.permissions())
    });
    if let Err(e) = copied {
        let _ = std::fs::remove_file(kept);
        // Not `AlreadyExists`: no other name would do better.
        return Err(std::io::Error::other(e));
    }
    Ok(())
}

/// `target` renamed to a new name, made for it first (`rename` replaces what a name holds).
fn move_aside(target: &Path) -> std::io::Result<PathBuf> {
    aside(target, |kept| {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(kept)?;
        std::fs::rename(target, kept).inspect_err(|_| {
            let _ = std::fs::remove_file(kept);
        })
    })
}

/// The deepest directories a directory target's files are looked for in (hive partitions: one
/// level a partition column).
const MAX_DEPTH: usize = 256;

/// The files and the directories under `dir`, to [`MAX_DEPTH`], through symbolic links to
/// directories too (a partition directory may be one: the write's files land where it leads),
/// each directory walked once.
fn tree(dir: &Path) -> (HashSet<PathBuf>, HashSet<PathBuf>) {
    fn walk(
        dir: &Path,
        depth: usize,
        seen: &mut HashSet<PathBuf>,
        out: &mut (HashSet<PathBuf>, HashSet<PathBuf>),
    ) {
        if depth > MAX_DEPTH || !std::fs::canonicalize(dir).is_ok_and(|c| seen.insert(c)) {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            // The entry itself, or where a symbolic link leads.
            match std::fs::metadata(&path) {
                Ok(m) if m.is_dir() => {
                    walk(&path, depth + 1, seen, out);
                    out.1.insert(path);
                }
                Ok(m) if m.is_file() => {
                    out.0.insert(path);
                }
                _ => {}
            }
        }
    }
    let mut out = (HashSet::new(), HashSet::new());
    walk(dir, 0, &mut HashSet::new(), &mut out);
    out
}

/// Removes `dir` and the directories under it, deepest first, as far as they are empty (a file
/// anywhere keeps its directories).
fn remove_empty_dirs(dir: &Path) {
    let mut dirs: Vec<PathBuf> = tree(dir).1.into_iter().collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for d in dirs {
        let _ = std::fs::remove_dir(d);
    }
    let _ = std::fs::remove_dir(dir);
}

/// Whether `file` is named as DataFusion names the files of a directory write:
/// `<16 letters or digits>_<part>.<extension>`, or `<16 letters or digits>.<extension>` in a
/// partition directory.
fn written_by_datafusion(file: &Path, extension: &str) -> bool {
    let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    // A file the object store is still filling (an interrupted write's) ends in `#<digits>`.
    let name = unstaged(name).unwrap_or(name);
    let Some(stem) = name.strip_suffix(&format!(".{extension}")) else {
        return false;
    };
    // `<id>_<part>` in a directory, `<id>` in a partition directory.
    let (id, part) = stem.split_once('_').unwrap_or((stem, "0"));
    id.len() == 16
        && id.bytes().all(|b| b.is_ascii_alphanumeric())
        && !part.is_empty()
        && part.bytes().all(|b| b.is_ascii_digit())
}

/// Whether `a` and `b` both exist and are one file (a hard link has its own path: the release
/// renamed over it replaced, under that name, the very rows it was made from).
pub(super) fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.is_file() && x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// The device and inode of the entry `path` names, symbolic links not followed.
fn entry_identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(path)
            .ok()
            .map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// Gives the file `to` the permissions of the file `from` (where it leads): a file written
/// over a previous one keeps its access (a `0600` release came back `0644`, readable by all).
pub(super) fn carry_permissions(from: &Path, to: &Path) {
    if let (Ok(m), Ok(t)) = (std::fs::metadata(from), std::fs::symlink_metadata(to))
        && m.is_file()
        && t.is_file()
    {
        let _ = std::fs::set_permissions(to, m.permissions());
    }
}

/// The directory `file` lies in, to list its siblings: `.` for a bare name, whose parent is
/// the empty path (a listing of which fails, and found no sibling).
pub(super) fn directory_of(file: &Path) -> Option<&Path> {
    file.parent().map(|dir| match dir.as_os_str().is_empty() {
        true => Path::new("."),
        false => dir,
    })
}

/// `name` without the object store's staging suffix (`#` and digits: the file a local write
/// fills before it renames it into place), if it has one.
pub(super) fn unstaged(name: &str) -> Option<&str> {
    name.rsplit_once('#')
        .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .map(|(file, _)| file)
}

/// Whether `name` is `stem` staged by the object store.
fn staged_name_of(name: &str, stem: &str) -> bool {
    unstaged(name) == Some(stem)
}

/// The object store's staged files of `file` (`file#1`, ...) beside it.
pub(crate) fn staged_files(file: &std::path::Path) -> HashSet<PathBuf> {
    let (Some(dir), Some(stem)) = (directory_of(file), file.file_name()) else {
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

    /// The single-file CSV target `file`, written by pbg's atomic renames or not.
    fn csv_file(file: &Path, atomic: bool) -> Target {
        Target {
            path: file.to_path_buf(),
            single_file: true,
            extension: "csv".into(),
            atomic,
        }
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

    /// A single-file target as a write leaves it when `restore` runs: a dangling symbolic link
    /// replaced by a file comes back; a named pipe or a directory the write was refused over
    /// stays (a failed release with a report page removed the named pipe).
    #[test]
    fn targets_that_are_no_files_are_kept_as_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let target = |name: &str| Target {
            path: dir.path().join(name),
            single_file: true,
            extension: "csv".into(),
            atomic: false,
        };
        let link = dir.path().join("link.csv");
        std::os::unix::fs::symlink("nowhere.csv", &link).unwrap();
        let fifo = dir.path().join("fifo.csv");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string naming a path in the test's directory.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        std::fs::create_dir(dir.path().join("d.csv")).unwrap();
        for (name, replaced) in [
            ("link.csv", true),
            ("link.csv", false),
            ("fifo.csv", false),
            ("d.csv", false),
        ] {
            let mut before = Before::take(&target(name)).unwrap();
            if replaced {
                std::fs::write(dir.path().join("new"), "x").unwrap();
                std::fs::rename(dir.path().join("new"), &link).unwrap();
            }
            before.restore();
        }
        assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("nowhere.csv"));
        let kinds = |p: &Path| std::fs::symlink_metadata(p).unwrap().file_type();
        use std::os::unix::fs::FileTypeExt;
        assert!(kinds(&fifo).is_fifo() && kinds(&dir.path().join("d.csv")).is_dir());
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["d.csv", "fifo.csv", "link.csv"]);
    }

    /// A previous file kept as a copy (no link could be made) of a target that the write never
    /// replaced: the copy goes, and the user's file stays the same file (renamed back, the
    /// copy took its place: another owner, its other hard links cut).
    #[test]
    fn a_kept_copy_of_an_unchanged_target_is_removed() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let (file, other) = (dir.path().join("r.csv"), dir.path().join("backup.csv"));
        std::fs::write(&file, "previous").unwrap();
        std::fs::hard_link(&file, &other).unwrap();
        let inode = std::fs::metadata(&file).unwrap().ino();
        let target = csv_file(&file, false);
        let mut before = Before::take(&target).unwrap();
        // As when the link was refused: the previous file copied instead.
        let kept = before.previous.take().unwrap().path().to_path_buf();
        std::fs::remove_file(&kept).unwrap();
        std::fs::copy(&file, &kept).unwrap();
        before.previous = Some(Kept::Copied(kept.clone()));
        before.restore();
        assert_eq!(std::fs::metadata(&file).unwrap().ino(), inode);
        assert_eq!(std::fs::metadata(&other).unwrap().nlink(), 2);
        assert!(!kept.exists());
    }

    /// A killed run's kept link that is another name of the target's file goes with the next
    /// write to the target; a kept copy, a link to another file, a link of a process that runs
    /// and a name not of pbg's making stay.
    #[test]
    fn stale_kept_links_of_the_target_go() {
        let dir = tempfile::tempdir().unwrap();
        let (file, other) = (dir.path().join("r.csv"), dir.path().join("other.csv"));
        std::fs::write(&file, "previous release").unwrap();
        std::fs::write(&other, "another file").unwrap();
        // A process id no process holds: a child's, once it was waited for.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        assert!(gone(dead));
        let name = |pid: u32, n: u32| dir.path().join(format!(".pbg-previous-{pid}-{n}-0badcafe"));
        let stale = name(dead, 0);
        std::fs::hard_link(&file, &stale).unwrap();
        let copy = name(dead, 1);
        std::fs::copy(&file, &copy).unwrap();
        let elsewhere = name(dead, 2);
        std::fs::hard_link(&other, &elsewhere).unwrap();
        let running = name(1, 3);
        std::fs::hard_link(&file, &running).unwrap();
        let mine = name(std::process::id(), 4);
        std::fs::hard_link(&file, &mine).unwrap();
        // Names pbg never makes: a user's backups.
        let users: Vec<PathBuf> = [
            format!(".pbg-previous-{dead}-11-29"),
            format!(".pbg-previous-0{dead}-0-0badcafe"),
            format!(".pbg-previous-+{dead}-0-0badcafe"),
            format!(".pbg-previous-{dead}-0-0BADCAFE"),
            format!(".pbg-previous-{dead}-x-0badcafe"),
        ]
        .iter()
        .map(|n| dir.path().join(n))
        .collect();
        for user in &users {
            std::fs::hard_link(&file, user).unwrap();
        }
        let target = csv_file(&file, true);
        // Made within the hour: a run in another PID namespace may still need it.
        let mut before = Before::take(&target).unwrap();
        assert!(stale.exists());
        before.restore();
        remove_stale_kept_links(&file, std::time::Duration::ZERO);
        assert!(!stale.exists());
        for kept in [&copy, &elsewhere, &running, &mine]
            .into_iter()
            .chain(&users)
        {
            assert!(kept.exists(), "{}", kept.display());
        }
        assert_eq!(std::fs::read(&copy).unwrap(), b"previous release");
        assert_eq!(std::fs::read(&elsewhere).unwrap(), b"another file");
        assert_eq!(std::fs::read(&file).unwrap(), b"previous release");
        // A target named like a kept file is not another name of itself.
        let named = name(dead, 5);
        std::fs::write(&named, "the target").unwrap();
        remove_stale_kept_links(&named, std::time::Duration::ZERO);
        assert_eq!(std::fs::read(&named).unwrap(), b"the target");
    }

    /// A bare output name's siblings are listed in `.`, not in the empty path.
    #[test]
    fn a_bare_names_directory_is_the_current_one() {
        assert_eq!(directory_of(Path::new("r.csv")), Some(Path::new(".")));
        assert_eq!(directory_of(Path::new("d/r.csv")), Some(Path::new("d")));
        assert_eq!(directory_of(Path::new("/")), None);
    }

    #[test]
    fn kept_names_are_read_back() {
        assert_eq!(kept_name_pid(".pbg-previous-123-0-00ff00aa"), Some(123));
        let made = kept_name(Path::new("/x/r.csv"));
        let made = made.file_name().unwrap().to_string_lossy();
        assert_eq!(kept_name_pid(&made), Some(std::process::id()));
        for name in [
            ".pbg-previous-taken",
            ".pbg-previous-2024-11-29",
            ".pbg-previous-012-0-00ff00aa",
            ".pbg-previous-12-00-00ff00aa",
            ".pbg-previous-12-0-00FF00AA",
            ".pbg-previous-12-0-0ff00aa",
            ".pbg-previous-12-0",
            ".pbg-previous-12-0-ff-1",
            ".pbg-previous--0-ff",
            ".pbg-previous-12-a-ff",
            ".pbg-previous-12-0-xyz",
            "pbg-previous-12-0-ff",
        ] {
            assert_eq!(kept_name_pid(name), None, "{name}");
        }
    }

    /// A kept file's name is never written through: a name taken (a killed run's kept link to
    /// a user's file, its process id come again) is passed over, and the file it names is left
    /// as it is (a copy through it emptied and rewrote that file).
    #[test]
    fn kept_names_taken_are_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let (target, users) = (dir.path().join("r.csv"), dir.path().join("users.csv"));
        std::fs::write(&target, "previous release").unwrap();
        std::fs::write(&users, "the user's file").unwrap();
        let taken = dir.path().join(".pbg-previous-taken");
        std::fs::hard_link(&users, &taken).unwrap();
        let err = copy_to_new(&target, &taken).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&users).unwrap(), b"the user's file");
        // `aside` tries another name then.
        let tried = std::sync::Mutex::new(Vec::new());
        let kept = aside(&target, |k| {
            tried.lock().unwrap().push(k.to_path_buf());
            match tried.lock().unwrap().len() {
                1 => copy_to_new(&target, &taken),
                _ => copy_to_new(&target, k),
            }
        })
        .unwrap();
        let tried = tried.into_inner().unwrap();
        assert_eq!(tried.len(), 2);
        assert_eq!(std::fs::read(&kept).unwrap(), b"previous release");
        assert_eq!(std::fs::read(&users).unwrap(), b"the user's file");
        let other = link_aside(&target).unwrap();
        assert!(other != kept && other.exists());
    }

    /// A failed run puts back what it found only over what it wrote itself: another run's file
    /// landed meanwhile stays (runs to the same output).
    #[test]
    fn another_runs_file_is_not_replaced_by_a_failed_run() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("r.csv");
        let target = csv_file(&file, true);
        let replace = |text: &str| {
            let new = dir.path().join("new");
            std::fs::write(&new, text).unwrap();
            std::fs::rename(&new, &file).unwrap();
        };
        for (ours, left) in [(true, "previous"), (false, "another run's")] {
            std::fs::write(&file, "previous").unwrap();
            let mut before = Before::take(&target).unwrap();
            match ours {
                true => {
                    replace("this run's");
                    note_landed(&file);
                }
                false => replace("another run's"),
            }
            before.restore();
            assert_eq!(std::fs::read_to_string(&file).unwrap(), left);
            let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(names.len(), 1, "the kept file is gone");
        }
    }

    #[test]
    fn datafusion_names_are_recognized() {
        let ok = |n: &str| written_by_datafusion(Path::new(n), "csv");
        assert!(ok("/d/AbCdEfGh12345678_0.csv"));
        assert!(ok("/d/x=1/AbCdEfGh12345678_12.csv"));
        assert!(ok("/d/x=1/AbCdEfGh12345678.csv"));
        assert!(ok("/d/AbCdEfGh12345678_0.csv#1"));
        assert!(!ok("/d/AbCdEfGh12345678_0.csv#"));
        assert!(!ok("/d/people.csv"));
        assert!(!ok("/d/AbCdEfGh12345678_0.parquet"));
        assert!(!ok("/d/AbCdEfGh1234567_0.csv"));
        assert!(!ok("/d/AbCdEfGh12345678_.csv"));
        assert!(!ok("/d/AbCdEfGh12345678_x.csv"));
    }
}
