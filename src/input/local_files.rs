//! The store of local files in pbg's sessions: object_store's own, except that a path which is
//! neither a file nor a directory (a named pipe, a device) is refused instead of opened or written.
//! Opening a named pipe waits for a writer, so `CREATE EXTERNAL TABLE` over one hung `pbg sql` for
//! good; its bytes come once, while a table is read more than once (its schema, then its rows);
//! and a write (`COPY ... TO`) renames a staged file over the path, which replaced the pipe or
//! the device. Its writes that make or replace a file can be stopped for good when the
//! process is interrupted ([`stop_writes`]).

use std::fmt;
use std::ops::Range;

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions,
};

use super::files::{NOT_REGULAR, NOT_WRITABLE};

/// object_store's local file system, refusing to open what is not a regular file.
#[derive(Debug, Default)]
pub struct RegularFiles {
    local: LocalFileSystem,
}

impl fmt::Display for RegularFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RegularFiles({})", self.local)
    }
}

impl RegularFiles {
    /// Fails with `why` if `location` names a named pipe or a device (a missing file is left to
    /// the store, which says so in its own terms). Only its status is read: nothing is opened.
    fn refuse_special(&self, location: &Path, why: &str) -> object_store::Result<()> {
        let path = self.local.path_to_filesystem(location)?;
        match std::fs::metadata(&path) {
            Ok(m) if !m.is_file() && !m.is_dir() => Err(object_store::Error::Generic {
                store: "local",
                source: format!("{}: {why}", path.display()).into(),
            }),
            _ => Ok(()),
        }
    }
}

#[async_trait]
impl ObjectStore for RegularFiles {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.refuse_special(location, NOT_WRITABLE)?;
        let _writing = begin_write()?;
        let done = self.local.put_opts(location, payload, opts).await;
        if let Err(e) = &done {
            note_failure(&self.local.path_to_filesystem(location)?, e);
        }
        done
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.refuse_special(location, NOT_WRITABLE)?;
        let _writing = begin_write()?;
        let upload = self.local.put_multipart_opts(location, opts).await?;
        let path = self.local.path_to_filesystem(location)?;
        Ok(Box::new(InterruptibleUpload(upload, path)))
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.refuse_special(location, NOT_REGULAR)?;
        self.local.get_opts(location, options).await
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<bytes::Bytes>> {
        self.refuse_special(location, NOT_REGULAR)?;
        self.local.get_ranges(location, ranges).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.local.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.local.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.local.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        let _writing = begin_write()?;
        self.local.copy_opts(from, to, options).await
    }

    async fn rename_opts(
        &self,
        from: &Path,
        to: &Path,
        options: RenameOptions,
    ) -> object_store::Result<()> {
        let _writing = begin_write()?;
        self.local.rename_opts(from, to, options).await
    }
}

/// The writes of the store that make or replace a file: how many are under way, and whether
/// they were stopped ([`stop_writes`]).
static WRITES: std::sync::Mutex<(bool, usize)> = std::sync::Mutex::new((false, 0));

fn writes() -> std::sync::MutexGuard<'static, (bool, usize)> {
    WRITES.lock().unwrap_or_else(|e| e.into_inner())
}

/// A write of the store under way: counted until dropped.
struct Writing(());

impl Drop for Writing {
    fn drop(&mut self) {
        writes().1 -= 1;
    }
}

/// Begins a write that creates a file or renames one into place; an error once writes were
/// stopped (the write would land after an interrupted run's undo: a partitioned write went on
/// adding files after the undo had listed them).
fn begin_write() -> object_store::Result<Writing> {
    let mut writes = writes();
    if writes.0 {
        return Err(object_store::Error::Generic {
            store: "local",
            source: "interrupted: the writes under way are being undone".into(),
        });
    }
    writes.1 += 1;
    Ok(Writing(()))
}

/// Stops the store's writes that make or replace a file, for good (the process was
/// interrupted), and waits for those under way to end, at most `wait`.
pub fn stop_writes(wait: std::time::Duration) {
    writes().0 = true;
    let start = std::time::Instant::now();
    while writes().1 > 0 && start.elapsed() < wait {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The causes of this process's failed writes of local files, by file (the newest few).
/// DataFusion 55 reports a write whose last part or completion fails (a file past `ulimit -f`,
/// a full disk) as "Internal error: Error encountered while finalizing writes! Partial results
/// may have been written ... likely caused by a bug in DataFusion", dropping the cause.
static FAILED_WRITES: std::sync::Mutex<Vec<(std::path::PathBuf, String)>> =
    std::sync::Mutex::new(Vec::new());

/// Failed writes remembered at most.
const FAILED_KEPT: usize = 16;

/// Notes that writing `path` failed with `e`.
fn note_failure(path: &std::path::Path, e: &object_store::Error) {
    let mut failed = FAILED_WRITES.lock().unwrap_or_else(|e| e.into_inner());
    if failed.len() == FAILED_KEPT {
        failed.remove(0);
    }
    failed.push((path.to_path_buf(), e.to_string()));
}

/// The cause of the latest failed write of `target` or of a file under it (a partitioned
/// write's directory); every failure noted there is taken from the record (a partitioned
/// write notes one per file: left behind, they named an earlier write's file in a later
/// failure's message).
pub fn failed_write_under(target: &std::path::Path) -> Option<(std::path::PathBuf, String)> {
    let target = std::path::absolute(target).unwrap_or_else(|_| target.to_path_buf());
    let mut failed = FAILED_WRITES.lock().unwrap_or_else(|e| e.into_inner());
    let mut latest = None;
    failed.retain(|(p, cause)| {
        let under = p.starts_with(&target);
        if under {
            latest = Some((p.clone(), cause.clone()));
        }
        !under
    });
    latest
}

/// A multipart upload (of the file at its path) whose completion (the rename of its staged file
/// into place) waits for no interrupt: once one was taken, it fails. Its failures are noted
/// ([`failed_write_under`]).
#[derive(Debug)]
struct InterruptibleUpload(Box<dyn MultipartUpload>, std::path::PathBuf);

#[async_trait]
impl MultipartUpload for InterruptibleUpload {
    fn put_part(&mut self, data: PutPayload) -> object_store::UploadPart {
        use futures::FutureExt;
        let path = self.1.clone();
        self.0
            .put_part(data)
            .inspect(move |done| {
                if let Err(e) = done {
                    note_failure(&path, e);
                }
            })
            .boxed()
    }

    async fn complete(&mut self) -> object_store::Result<PutResult> {
        let _writing = begin_write()?;
        let done = self.0.complete().await;
        if let Err(e) = &done {
            note_failure(&self.1, e);
        }
        done
    }

    async fn abort(&mut self) -> object_store::Result<()> {
        self.0.abort().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;

    /// A named pipe is refused at once, by name, where opening it would wait for a writer, and
    /// is not written over (a write renamed a staged file over it); a file reads as before.
    #[test]
    fn a_named_pipe_is_refused_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = dir.path().join("p.csv");
        let made = std::process::Command::new("mkfifo").arg(&pipe).status();
        assert!(made.unwrap().success());
        let file = dir.path().join("f.csv");
        std::fs::write(&file, "a\n1\n").unwrap();
        let store = RegularFiles::default();
        let at = |p: &std::path::Path| Path::from_filesystem_path(p).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (pipe_at, file_at) = (at(&pipe), at(&file));
        std::thread::spawn(move || {
            let got = futures::executor::block_on(async {
                (
                    store.get(&pipe_at).await.map(|_| ()),
                    store.get_ranges(&pipe_at, &[0..1, 2..3]).await.map(|_| ()),
                    store.put(&pipe_at, "a\n".into()).await.map(|_| ()),
                    match store.get(&file_at).await {
                        Ok(got) => got.bytes().await,
                        Err(e) => Err(e),
                    },
                )
            });
            let _ = tx.send(got);
        });
        let (get, ranges, put, file) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the store opened the pipe and waited for a writer");
        for e in [get.unwrap_err(), ranges.unwrap_err(), put.unwrap_err()] {
            let e = e.to_string();
            assert!(e.contains("p.csv") && e.contains("named pipe"), "{e}");
        }
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&pipe).unwrap().file_type().is_fifo());
        assert_eq!(&file.unwrap()[..], b"a\n1\n");
    }

    /// The failures a partitioned write notes (one per file) are all taken with the latest:
    /// left behind, an earlier write's file was named in a later failure's message.
    #[test]
    fn every_failure_under_a_target_is_taken_with_the_latest() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out");
        let other = dir.path().join("other.csv");
        let failure = |what: &str| object_store::Error::Generic {
            store: "local",
            source: what.to_string().into(),
        };
        note_failure(&target.join("p=0/a.csv"), &failure("first"));
        note_failure(&other, &failure("elsewhere"));
        note_failure(&target.join("p=1/b.csv"), &failure("second"));
        let (file, cause) = failed_write_under(&target).unwrap();
        assert_eq!(file, target.join("p=1/b.csv"));
        assert!(cause.contains("second"), "{cause}");
        assert!(failed_write_under(&target).is_none());
        assert!(failed_write_under(&other).unwrap().1.contains("elsewhere"));
    }
}
