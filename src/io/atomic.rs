//! Atomic output: write to a temporary file beside the target, verify, then sync it to disk and
//! rename it into place. The sync is the atomic file's job (writers do not sync), so it can run
//! while the file is verified: on a 30 M-row CSV release it is seconds of kernel time.

use std::path::{Path, PathBuf};

use crate::error::{PbgError, Result};

/// A temporary file that becomes `target` only on [`AtomicFile::commit`]; dropped uncommitted, it is
/// removed, so a failed or killed run never leaves a partial output and never touches the old one.
#[derive(Debug)]
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    committed: bool,
    /// The sync started by [`AtomicFile::sync_in_background`], joined by the commit.
    syncing: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    /// Removes the temporary file (and what the object store staged for it) if the process is
    /// interrupted meanwhile, instead of leaving it to the next run to the same output.
    _interrupted: super::interrupt::Pending,
}

/// Temporary files this process has named: each output's number is its own.
static TEMPORARY_FILES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl AtomicFile {
    /// Plans an atomic write of `target`; the temporary file lives in the same directory so that
    /// the final rename cannot cross file systems.
    pub fn new(target: &Path) -> Result<Self> {
        let name = target
            .file_name()
            .ok_or_else(|| {
                PbgError::profile(
                    "command line",
                    format!("output {} names no file", target.display()),
                )
            })?
            .to_string_lossy()
            .into_owned();
        let dir = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !dir.is_dir() {
            return Err(PbgError::io(
                dir,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "output directory does not exist",
                ),
            ));
        }
        // A target named like a temporary file would be taken for one: another output's
        // cleanup could remove it, or its temporary file could be this one.
        if name.contains(".pbg-tmp-") {
            return Err(PbgError::io(
                target,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "named like a temporary file of pbg (`.pbg-tmp-`): choose another name",
                ),
            ));
        }
        // The temporary name adds about 30 bytes to the target's: say so rather than let the
        // file system refuse the temporary file as if the name given were too long.
        // In bytes as the file system counts them (not as the lossy text of a name that is not
        // UTF-8).
        let bytes = target.file_name().map_or(0, |n| n.as_encoded_bytes().len());
        if bytes + 40 > 255 {
            return Err(PbgError::io(
                target,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "its name is {bytes} bytes: at most 215 leave room for its temporary file"
                    ),
                ),
            ));
        }
        if target.is_dir() {
            return Err(PbgError::io(
                target,
                std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "the output is a directory: name a file",
                ),
            ));
        }
        refuse_special_target(target)?;
        // Keep the extension last so format detection by extension still works on the temp file.
        // A name already taken (by an input named so) is never written over: the next free one
        // is used. Each output of the process numbers its own: two threads of one process
        // (Python) writing the same output took the same free name, and one verified the
        // other's release.
        let ext = extension(target);
        let pid = std::process::id();
        let temp = loop {
            let n = TEMPORARY_FILES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let temp = dir.join(temporary_name(&name, pid, n, &ext));
            if std::fs::symlink_metadata(&temp).is_err() {
                break temp;
            }
        };
        let undo = super::interrupt::on_interrupt(super::interrupt::Undo::Remove(temp.clone()))
            .map_err(|e| PbgError::io(target, e))?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            temp,
            committed: false,
            syncing: None,
            _interrupted: undo,
        })
    }

    /// The temporary path to write to.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// `e` naming the output where it names the temporary file: a failed write or check
    /// removes that file, and its hidden name (`.out.csv.pbg-tmp-…`) told the user nothing.
    pub fn named(&self, e: PbgError) -> PbgError {
        let (temp, target) = (
            self.temp.display().to_string(),
            self.target.display().to_string(),
        );
        let path = |p: PathBuf| {
            if p == self.temp {
                self.target.clone()
            } else {
                p
            }
        };
        match e {
            PbgError::Io { path: p, source } => PbgError::Io {
                path: path(p),
                source,
            },
            PbgError::Format { path: p, message } => PbgError::Format {
                path: path(p),
                message: message.replace(&temp, &target),
            },
            PbgError::Verification { path: p, message } => PbgError::Verification {
                path: path(p),
                message: message.replace(&temp, &target),
            },
            e => e,
        }
    }

    /// Starts syncing the written temporary file to disk on another thread, so that it can be
    /// checked meanwhile; [`AtomicFile::commit`] waits for it. Call it once the file is written.
    pub fn sync_in_background(&mut self) {
        let temp = self.temp.clone();
        // Without a thread (the system refuses one), the commit syncs it.
        self.syncing = std::thread::Builder::new()
            .name("pbg-sync".into())
            .spawn(move || sync_path(&temp))
            .ok();
    }

    /// Syncs the temporary file to disk (or waits for the sync started in the background), then
    /// renames it into place: a crash after the rename finds the whole new file, never a hole.
    pub fn commit(self) -> Result<()> {
        AtomicFile::commit_together(self, Vec::new())
    }

    /// Commits `first`, then each of `rest` right after it: each is synced and checked before any
    /// is renamed, so nothing but the renames lies between them (a release and its report
    /// page). A failed rename leaves those before it in place; the caller's guards
    /// ([`super::TargetGuard`]) put them back.
    pub fn commit_together(first: AtomicFile, rest: Vec<AtomicFile>) -> Result<()> {
        let mut files = rest;
        files.insert(0, first);
        for file in &mut files {
            file.ready()?;
        }
        // Files that land together are renamed under a lock of their directories: two runs to
        // the same release and page interleaved their renames (one run's release beside the
        // other's page).
        let _locks = (files.len() > 1).then(|| lock_directories(&files));
        // As one step against an interrupt: once one is taken, nothing more lands (its undo
        // has run or is about to).
        let renamed = super::interrupt::unless_interrupted(|| -> Result<()> {
            for file in &mut files {
                std::fs::rename(&file.temp, &file.target)
                    .map_err(|e| PbgError::io(&file.target, e))?;
                file.committed = true;
                super::restore::note_landed(&file.target);
                // What this run wrote is kept like what it read from any later cleanup.
                crate::input::note_read(&file.target);
            }
            Ok(())
        });
        renamed.ok_or_else(|| {
            PbgError::io(
                &files[0].target,
                std::io::Error::new(std::io::ErrorKind::Interrupted, "interrupted"),
            )
        })??;
        // Only once the outputs are in place: a failed run removes nothing but its own
        // temporary files.
        for file in &files {
            file.remove_stale();
        }
        Ok(())
    }

    /// Syncs the temporary file to disk (or waits for the sync started in the background) and
    /// checks its target again: ready to be renamed.
    fn ready(&mut self) -> Result<()> {
        let synced = match self.syncing.take() {
            Some(handle) => handle.join().unwrap_or_else(|_| {
                Err(std::io::Error::other(
                    "the thread syncing the output failed",
                ))
            }),
            None => sync_path(&self.temp),
        };
        synced.map_err(|e| PbgError::io(&self.temp, e))?;
        // Checked again at the last moment: a named pipe or a device made there during the run
        // was replaced by the release (`new` saw none).
        refuse_special_target(&self.target)?;
        // The output replaced keeps its access (a `0600` release came back `0644`).
        super::restore::carry_permissions(&self.target, &self.temp);
        Ok(())
    }

    /// Removes the stale temporary files of earlier runs to the same target.
    fn remove_stale(&self) {
        if let (Some(dir), Some(name)) = (
            super::restore::directory_of(&self.target),
            self.target.file_name(),
        ) {
            remove_stale(dir, &name.to_string_lossy(), &extension(&self.target));
        }
    }
}

/// Exclusive locks (`flock`) of the directories `files` land in, taken in one order (no two
/// runs wait for each other), held until dropped; a directory that cannot be locked is not.
fn lock_directories(files: &[AtomicFile]) -> Vec<std::fs::File> {
    let mut dirs: Vec<PathBuf> = files
        .iter()
        .filter_map(|f| f.temp.parent())
        .map(|d| {
            let d = if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            };
            std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf())
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs.iter()
        .filter_map(|d| std::fs::File::open(d).ok())
        .inspect(|dir| {
            #[cfg(unix)]
            {
                use std::os::fd::AsRawFd;
                // SAFETY: a valid open descriptor; the lock ends when the file is closed.
                unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX) };
            }
        })
        .collect()
}

/// Fails if `target`, at any place it can lead a writer to ([`resolutions`]: through symbolic
/// links, or `nope/../f.csv` read by its text as `COPY` reads it), is a named pipe or a device:
/// the rename into place would replace it (as root, `--output /dev/null` replaced the system's
/// /dev/null with the release).
pub fn refuse_special_target(target: &Path) -> Result<()> {
    let special = resolutions(target)
        .iter()
        .any(|p| std::fs::metadata(p).is_ok_and(|m| !m.is_file() && !m.is_dir()));
    match special {
        true => Err(PbgError::io(
            target,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, crate::input::NOT_WRITABLE),
        )),
        false => Ok(()),
    }
}

/// Writes `text` to a temporary file beside `path`, then renames it into place.
pub fn write_text_atomic(path: &Path, text: &str) -> Result<()> {
    let file = AtomicFile::new(path)?;
    std::fs::write(file.temp_path(), text).map_err(|e| PbgError::io(path, e))?;
    file.commit()
}

/// Syncs a written file to disk (every atomic output is one file).
fn sync_path(path: &Path) -> std::io::Result<()> {
    std::fs::File::open(path)?.sync_all()
}

/// Removes temporary files left beside `name` by runs that were killed (their process is gone,
/// the file unchanged for [`STALE_AGE`](super::restore::STALE_AGE)), so that a killed job
/// leaves no garbage once a later one succeeds — but never a file this run read (an input,
/// profile or hierarchy named like a temporary file is the user's data).
fn remove_stale(dir: &Path, name: &str, ext: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(pid) = file.to_str().and_then(|f| temporary_name_pid(f, name, ext)) else {
            continue;
        };
        let unchanged = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= super::restore::STALE_AGE);
        if super::restore::gone(pid) && unchanged && !crate::input::was_read(&entry.path()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The `n`th temporary file name of process `pid` for the output `name` (the first bears no
/// number); the extension last, so that the format is still told by it.
fn temporary_name(name: &str, pid: u32, n: usize, ext: &str) -> String {
    match n {
        0 => format!(".{name}.pbg-tmp-{pid}.{ext}"),
        n => format!(".{name}.pbg-tmp-{pid}-{n}.{ext}"),
    }
}

/// The process id in `file`, if it is a name [`temporary_name`] makes for the output `name`
/// (`.NAME.pbg-tmp-PID.EXT` or `.NAME.pbg-tmp-PID-N.EXT`, numbers written as pbg writes them),
/// or the object store's staging file of one (`#1` after it): a name a user chose that only
/// begins so (`.r.csv.pbg-tmp-2024-11-29.csv`, a backup) is theirs.
fn temporary_name_pid(file: &str, name: &str, ext: &str) -> Option<u32> {
    let file = super::restore::unstaged(file).unwrap_or(file);
    let numbers = file
        .strip_prefix(&format!(".{name}.pbg-tmp-"))?
        .strip_suffix(&format!(".{ext}"))?;
    let (pid, n) = match numbers.split_once('-') {
        Some((pid, n)) => (pid, Some(n)),
        None => (numbers, None),
    };
    // The first temporary file of a process bears no number.
    if n.is_some_and(|n| super::restore::decimal(n).is_none_or(|n| n == 0)) {
        return None;
    }
    super::restore::decimal(pid).and_then(|p| u32::try_from(p).ok())
}

fn extension(p: &Path) -> String {
    p.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("out")
        .to_string()
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Whether two paths name the same file, also through `./`, `..` or symbolic links (either may
/// not exist yet).
pub fn same_path(a: &Path, b: &Path) -> bool {
    let b = resolutions(b);
    resolutions(a).iter().any(|place| b.contains(place))
}

/// The places a path that may not exist yet can lead a writer to, absolute and symlink-free:
/// walked as the system walks it (each existing step resolved, so `link/..` is the parent of the
/// link's target), and with its `..` first taken lexically, as DataFusion's `COPY` takes them
/// (`nope/../link/a.csv` is `link/a.csv` there, though `nope` does not exist). Comparing the path
/// as written, or resolving only its existing ancestor and taking the rest as written, let
/// `nope/../in.csv` and `nope/../link/in.csv` pass for other files than the input.
fn resolutions(path: &Path) -> Vec<PathBuf> {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut places = vec![walked(&absolute, true)];
    let lexical = walked(&walked(&absolute, false), true);
    if !places.contains(&lexical) {
        places.push(lexical);
    }
    places
}

/// `path` (absolute) walked step by step: `..` goes to the parent of where the walk stands,
/// and with `follow` each step that exists is resolved (symlinks followed) as the system walks
/// it; without, the path is only normalized lexically.
fn walked(path: &Path, follow: bool) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => {
                out.push(other);
                if let Some(real) = follow.then(|| out.canonicalize().ok()).flatten() {
                    out = real;
                }
            }
        }
    }
    out
}

/// [`resolutions`]' first place: where the system's own walk of the path leads.
fn resolved(path: &Path) -> PathBuf {
    resolutions(path).swap_remove(0)
}

/// Refuses, before anything is read, an output that would replace or land inside an input: the
/// same file (also through symlinks or `./`), a file inside an input directory, or a file a glob
/// input would match.
pub fn refuse_overwrite(output: &Path, input: &crate::input::Input) -> Result<()> {
    let Some(source) = input.path() else {
        return Ok(());
    };
    let refuse = |why: &str| {
        Err(PbgError::argument(
            "output",
            format!(
                "{} {why} {}: pbg never writes over its input; choose another output path",
                output.display(),
                source.display()
            ),
        ))
    };
    // Every place the output may lead a writer to.
    for out in resolutions(output) {
        if let Some(why) = lands_in(&out, output, source) {
            return refuse(why);
        }
    }
    Ok(())
}

/// Why a write to `out` (a place `output` leads to) would replace or land inside the input at
/// `source`, if it would.
fn lands_in(out: &Path, output: &Path, source: &Path) -> Option<&'static str> {
    // (An existing path holding glob characters is read as that path, not as a glob.)
    if crate::input::is_glob(source) {
        // DataFusion matches a glob's file names under the directory before its first glob
        // segment, partition directories included: refuse any output there whose name matches.
        let is_glob =
            |c: &std::path::Component<'_>| crate::input::has_glob(&c.as_os_str().to_string_lossy());
        let base: PathBuf = source.components().take_while(|c| !is_glob(c)).collect();
        let name_pattern = source
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // A file the glob matches, or a directory under its base (files written there would
        // join the next read).
        let directory_target =
            output.to_string_lossy().ends_with('/') || out.is_dir() || out.extension().is_none();
        return (out.starts_with(resolved(&base))
            && (glob_match(&name_pattern, &name) || directory_target))
            .then_some("matches the input pattern or lies under its directory");
    }
    let src = resolved(source);
    if out == src {
        return Some("is the input");
    }
    if super::restore::same_file(out, &src) {
        return Some("is another name (a hard link) of the input");
    }
    if src.is_dir() {
        if out.starts_with(&src) {
            return Some("is inside the input directory");
        }
        // Symlinks inside the directory reach files and folders elsewhere: protect those too.
        let mut reached = Vec::new();
        linked_targets(&src, 0, &mut reached);
        if reached
            .iter()
            .any(|t| out == *t || (t.is_dir() && out.starts_with(t)))
        {
            return Some("is reached through a symbolic link inside the input directory");
        }
    }
    None
}

/// Refuses a directory `output` that a partitioned write (`COPY … PARTITIONED BY`) fills with
/// directories of its own (`column=value/…`) when an input directory, or a glob's base, lies
/// under it: the files written there join the input's next read. (A single input file under it
/// is left as it is, and so is its next read.)
pub fn refuse_partitioned_over(output: &Path, input: &crate::input::Input) -> Result<()> {
    let Some(source) = input.path() else {
        return Ok(());
    };
    let is_glob =
        |c: &std::path::Component<'_>| crate::input::has_glob(&c.as_os_str().to_string_lossy());
    let listed: PathBuf = match crate::input::is_glob(source) {
        true => source.components().take_while(|c| !is_glob(c)).collect(),
        false if source.is_dir() => source.to_path_buf(),
        false => return Ok(()),
    };
    let listed = resolved(&listed);
    if resolutions(output)
        .iter()
        .any(|out| listed.starts_with(out))
    {
        return Err(PbgError::argument(
            "output",
            format!(
                "{}: a partitioned write fills directories under it, where the input {} lies (its files would join the input's next read): pbg never writes into its input; choose another output directory",
                output.display(),
                source.display()
            ),
        ));
    }
    Ok(())
}

/// The resolved targets of the symbolic links below `dir` (and below the directories they reach),
/// to a bounded depth.
fn linked_targets(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > 16 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_link = entry.file_type().map(|t| t.is_symlink()).unwrap_or(false);
        if is_link && let Ok(target) = path.canonicalize() {
            if !out.contains(&target) {
                out.push(target.clone());
                if target.is_dir() {
                    linked_targets(&target, depth + 1, out);
                }
            }
        } else if path.is_dir() {
            linked_targets(&path, depth + 1, out);
        }
    }
}

/// A minimal glob match (`*` within a segment, `**` across, `?` one character).
fn glob_match(pattern: &str, text: &str) -> bool {
    fn go(p: &[u8], t: &[u8]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some(b'*'), _) if p.get(1) == Some(&b'*') => {
                (0..=t.len()).any(|i| go(&p[2..], &t[i..]))
            }
            (Some(b'*'), _) => (0..=t.len())
                .take_while(|&i| i == 0 || t[i - 1] != b'/')
                .any(|i| go(&p[1..], &t[i..])),
            (Some(b'?'), Some(&c)) if c != b'/' => go(&p[1..], &t[1..]),
            (Some(&a), Some(&b)) if a == b => go(&p[1..], &t[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::Ordering;

    /// Only the names pbg makes for an output's temporary files are read as such.
    #[test]
    fn temporary_names_are_read_back() {
        let pid = |f: &str| temporary_name_pid(f, "r.csv", "csv");
        for n in [0, 1, 17] {
            assert_eq!(pid(&temporary_name("r.csv", 123, n, "csv")), Some(123));
        }
        assert_eq!(pid(".r.csv.pbg-tmp-123.csv"), Some(123));
        assert_eq!(pid(".r.csv.pbg-tmp-123-4.csv"), Some(123));
        assert_eq!(pid(".r.csv.pbg-tmp-123.csv#1"), Some(123));
        for user in [
            ".r.csv.pbg-tmp-2024-11-29.csv",
            ".r.csv.pbg-tmp-0123.csv",
            ".r.csv.pbg-tmp-123-backup.csv",
            ".r.csv.pbg-tmp-123-0.csv",
            ".r.csv.pbg-tmp-123-04.csv",
            ".r.csv.pbg-tmp-123.keep",
            ".r.csv.pbg-tmp-+123.csv",
            ".r.csv.pbg-tmp-.csv",
            ".r.csv.pbg-tmp-123-4-5.csv",
            ".x.csv.pbg-tmp-123.csv",
            ".r.csv.pbg-tmp-123.csv#",
            ".r.csv.pbg-tmp-123.csv#x",
        ] {
            assert_eq!(pid(user), None, "{user}");
        }
    }

    /// A named pipe made where the output goes while the run writes is not replaced: the commit
    /// looks again, fails naming it, and leaves the pipe and no temporary file.
    #[test]
    fn a_pipe_made_over_the_target_during_the_run_is_not_replaced() {
        use std::os::unix::fs::FileTypeExt;
        let (dir, target, out) = over_old_target();
        std::fs::write(out.temp_path(), "new\n").unwrap();
        std::fs::remove_file(&target).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(&target)
            .status()
            .unwrap();
        assert!(made.success());
        let temp = out.temp_path().to_path_buf();
        let e = out.commit().unwrap_err().to_string();
        assert!(e.contains("out.csv") && e.contains("named pipe"), "{e}");
        assert!(std::fs::metadata(&target).unwrap().file_type().is_fifo());
        assert!(!temp.exists());
        drop(dir);
    }

    /// A scratch directory (removed when dropped) holding `out.csv` = "old\n", and an atomic
    /// file planned over it.
    fn over_old_target() -> (tempfile::TempDir, PathBuf, AtomicFile) {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.csv");
        std::fs::write(&target, "old\n").unwrap();
        let file = AtomicFile::new(&target).unwrap();
        (dir, target, file)
    }

    /// A file already named as this run's temporary file (an input, say) is neither written
    /// over nor removed: the next free name is used, and a failed run leaves the file alone.
    #[test]
    fn a_file_named_as_the_temporary_file_is_kept() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path();
        let target = dir.join("out.csv");
        // The names the next outputs of this process would take (tests in other threads plan
        // outputs too).
        let (pid, next) = (std::process::id(), TEMPORARY_FILES.load(Ordering::Relaxed));
        for n in next..next + 64 {
            let name = temporary_name("out.csv", pid, n, "csv");
            std::fs::write(dir.join(name), "user data\n").unwrap();
        }
        let taken = dir.join(format!(".out.csv.pbg-tmp-{pid}-{}.csv", next + 1));
        let file = AtomicFile::new(&target).unwrap();
        assert!(std::fs::read_to_string(file.temp_path()).is_err());
        std::fs::write(file.temp_path(), "partial").unwrap();
        drop(file);
        assert_eq!(std::fs::read_to_string(&taken).unwrap(), "user data\n");
        let file = AtomicFile::new(&target).unwrap();
        std::fs::write(file.temp_path(), "release\n").unwrap();
        file.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&taken).unwrap(), "user data\n");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "release\n");
    }

    /// Outputs of one target planned at once in one process (threads of a Python program) each
    /// get a temporary file of their own: they took the same name, and one run verified and
    /// renamed the other's release.
    #[test]
    fn outputs_planned_at_once_get_their_own_temporary_files() {
        let scratch = tempfile::tempdir().unwrap();
        let target = scratch.path().join("out.csv");
        let files: Vec<AtomicFile> = std::thread::scope(|s| {
            let planned: Vec<_> = (0..8)
                .map(|_| s.spawn(|| AtomicFile::new(&target).unwrap()))
                .collect();
            planned.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let temps: HashSet<&Path> = files.iter().map(|f| f.temp_path()).collect();
        assert_eq!(temps.len(), 8);
    }

    /// A file synced in the background while it is read, then committed: the target holds it
    /// and no temporary file is left.
    #[test]
    fn background_sync_then_commit_replaces_the_target() {
        let (dir, target, mut file) = over_old_target();
        std::fs::write(file.temp_path(), "a,b\n1,2\n").unwrap();
        file.sync_in_background();
        assert_eq!(
            std::fs::read_to_string(file.temp_path()).unwrap(),
            "a,b\n1,2\n"
        );
        file.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "a,b\n1,2\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// An output spelled through a directory that does not exist (`nope/..`, which a writer
    /// creating missing directories goes through) is the path it leads to: the input itself, or
    /// a file inside an input directory, is refused; another file is not.
    #[test]
    fn an_output_through_a_missing_directory_is_the_path_it_leads_to() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path();
        std::fs::create_dir(dir.join("in")).unwrap();
        let input = dir.join("in/a.csv");
        std::fs::write(&input, "a\n1\n").unwrap();
        let file = crate::input::Input::Path(input.clone());
        let folder = crate::input::Input::Path(dir.join("in"));
        for spelled in [
            "nope/../in/a.csv",
            "nope/x/../../in/./a.csv",
            "in/nope/../a.csv",
        ] {
            let out = dir.join(spelled);
            let e = refuse_overwrite(&out, &file).unwrap_err().to_string();
            assert!(e.contains("is the input"), "{spelled}: {e}");
            let e = refuse_overwrite(&out, &folder).unwrap_err().to_string();
            assert!(e.contains("inside the input directory"), "{spelled}: {e}");
        }
        // Through a symbolic link to the input's directory, after a directory that does not
        // exist: DataFusion takes the `..` lexically and writes through the link.
        std::os::unix::fs::symlink(dir.join("in"), dir.join("link")).unwrap();
        for spelled in ["nope/../link/a.csv", "link/nope/../a.csv"] {
            let e = refuse_overwrite(&dir.join(spelled), &file)
                .unwrap_err()
                .to_string();
            assert!(e.contains("is the input"), "{spelled}: {e}");
        }
        let e = refuse_overwrite(&dir.join("nope/../link/b.csv"), &folder)
            .unwrap_err()
            .to_string();
        assert!(e.contains("inside the input directory"), "{e}");
        assert!(refuse_partitioned_over(&dir.join("nope/../link/"), &folder).is_err());
        assert!(refuse_partitioned_over(&dir.join("nope/../"), &folder).is_err());
        assert!(refuse_partitioned_over(&dir.join("out/"), &folder).is_ok());
        assert!(refuse_overwrite(&dir.join("nope/../in/b.csv"), &file).is_ok());
        assert!(refuse_overwrite(&dir.join("nope/../out/a.csv"), &folder).is_ok());
        assert_eq!(
            resolved(&dir.join("nope/../..")),
            resolved(dir).parent().unwrap()
        );
    }

    /// A failed check after the sync started: dropping the file leaves the old target as it was
    /// and removes the temporary file.
    #[test]
    fn background_sync_then_drop_keeps_the_old_target() {
        let (dir, target, mut file) = over_old_target();
        std::fs::write(file.temp_path(), "new\n").unwrap();
        file.sync_in_background();
        drop(file);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    /// Nothing was written: the commit fails (the sync finds no file) and the target stays.
    #[test]
    fn commit_without_a_written_file_fails_and_keeps_the_target() {
        let (_dir, target, mut file) = over_old_target();
        file.sync_in_background();
        assert!(file.commit().is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "old\n");
    }
}
