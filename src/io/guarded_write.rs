//! DataFusion's writes of local files made all-or-nothing. DataFusion 55 finishes every writer of
//! a write, those whose rows failed too (`stateless_serialize_and_write_files` shuts them all
//! down): a `COPY` of a release that failed at its 90,001st row left the rows before it in the
//! target — classes cut short, below the release's k — and one that failed before its first
//! row replaced an existing target with an empty file. [`GuardedWrites`] (a physical optimizer
//! rule of pbg's local sessions) puts a [`GuardedWriteExec`] above each such write: before it
//! runs, the target's previous file is kept under a hard link (renamed aside where the file
//! system has none; the write is refused when neither can be done); when it fails (or is dropped
//! unfinished), that file is put back, or what the write left is removed, and a directory
//! write's new files (`<write id>_<part>.<extension>`, as DataFusion names them) are removed.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::file_format::csv::CsvSink;
use datafusion::datasource::file_format::json::JsonSink;
use datafusion::datasource::file_format::parquet::ParquetSink;
use datafusion::datasource::physical_plan::{FileSink, FileSinkConfig};
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::TryStreamExt;

/// The rule: each write of local files guarded by a [`GuardedWriteExec`].
#[derive(Debug, Default)]
pub struct GuardedWrites;

impl PhysicalOptimizerRule for GuardedWrites {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_down(|node| {
            if node.downcast_ref::<GuardedWriteExec>().is_some() {
                return Ok(Transformed::new(node, false, TreeNodeRecursion::Jump));
            }
            match Target::of(&node) {
                Some(target) => Ok(Transformed::new(
                    Arc::new(GuardedWriteExec {
                        input: node,
                        target,
                    }) as Arc<dyn ExecutionPlan>,
                    true,
                    TreeNodeRecursion::Jump,
                )),
                None => Ok(Transformed::no(node)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "pbg_guarded_writes"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Where a write lands: one file, or files DataFusion names in a directory.
#[derive(Debug, Clone)]
pub(super) struct Target {
    path: PathBuf,
    single_file: bool,
    extension: String,
}

impl Target {
    /// The local target of a file sink at `node`, if it is one.
    fn of(node: &Arc<dyn ExecutionPlan>) -> Option<Target> {
        let exec = node.downcast_ref::<DataSinkExec>()?;
        Target::of_config(file_sink_config(exec.sink())?)
    }

    /// The target of a write configured by `config`, if it is local.
    pub(super) fn of_config(config: &FileSinkConfig) -> Option<Target> {
        if config.object_store_url.as_str() != "file:///" {
            return None;
        }
        let url = config.table_paths.first()?;
        let path = url.get_url().to_file_path().ok()?;
        Some(Target {
            path,
            single_file: config.table_partition_cols.is_empty()
                && config.file_output_mode.single_file_output(url),
            extension: config.file_extension.clone(),
        })
    }
}

/// The configuration of DataFusion's CSV, Parquet and JSON sinks (its Arrow sink is private: its
/// writes are guarded by [`super::guarded_arrow::GuardedArrowFormat`]).
fn file_sink_config(sink: &dyn DataSink) -> Option<&FileSinkConfig> {
    if let Some(s) = sink.downcast_ref::<CsvSink>() {
        return Some(s.config());
    }
    if let Some(s) = sink.downcast_ref::<ParquetSink>() {
        return Some(s.config());
    }
    sink.downcast_ref::<JsonSink>().map(|s| s.config())
}

/// A write of local files that leaves its target as it was unless it succeeds.
#[derive(Debug)]
pub struct GuardedWriteExec {
    input: Arc<dyn ExecutionPlan>,
    target: Target,
}

impl GuardedWriteExec {
    /// `write` guarded: `target` is put back as it was unless `write` succeeds.
    pub(super) fn new(write: Arc<dyn ExecutionPlan>, target: Target) -> Self {
        GuardedWriteExec {
            input: write,
            target,
        }
    }

    /// `plan` without the guard on top (for a writer that already writes a temporary file of its
    /// own, and needs the write node itself).
    pub fn unguarded(plan: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        match plan.downcast_ref::<GuardedWriteExec>() {
            Some(g) => g.input.clone(),
            None => plan,
        }
    }
}

impl DisplayAs for GuardedWriteExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "GuardedWriteExec: {}", self.target.path.display())
    }
}

impl ExecutionPlan for GuardedWriteExec {
    fn name(&self) -> &str {
        "GuardedWriteExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    // A guard planned before the optimizer runs (an Arrow write's) must keep its write as its
    // one child: a round-robin repartition put between them ran the guard once per partition,
    // two guards over one write, one of which committed or restored what the other kept.
    fn required_input_distribution(&self) -> Vec<datafusion::physical_plan::Distribution> {
        vec![datafusion::physical_plan::Distribution::SinglePartition]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(
            &Arc<dyn datafusion::physical_expr::PhysicalExpr>,
        ) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(GuardedWriteExec {
            input: children.swap_remove(0),
            target: self.target.clone(),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let guard = Guard::before(&self.target)?;
        let stream = self.input.execute(partition, context)?;
        let schema = stream.schema();
        // The write's stream yields its count once the write is done: the guard settles then
        // (or when the stream is dropped unfinished).
        let written = futures::stream::once(async move {
            let batches: Result<Vec<_>> = stream.try_collect().await;
            if batches.is_ok() {
                guard.commit();
            }
            batches
        })
        .map_ok(|batches| futures::stream::iter(batches.into_iter().map(Ok)))
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, written)))
    }
}

/// Distinguishes the kept files of writes in one process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// How a single-file target's previous file is kept while the write runs.
#[derive(Debug)]
enum Kept {
    /// Under a hard link beside it: the target stays in place.
    Linked(PathBuf),
    /// Renamed aside (a file system without hard links): the target is absent meanwhile.
    Moved(PathBuf),
}

/// A write's [`Before`], settled once: committed when the write succeeds, else restored — when
/// the write fails, its stream is dropped unfinished, or the process is interrupted (a signal
/// the binary watches: see [`super::interrupt`]).
struct Guard {
    before: Arc<std::sync::Mutex<Before>>,
    _undo: super::interrupt::Pending,
}

/// `m` locked, also after a panic elsewhere (the state is a few paths: still usable).
fn lock(m: &std::sync::Mutex<Before>) -> std::sync::MutexGuard<'_, Before> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Guard {
    /// Keeps what `target` holds before its write; an error (nothing written yet) when its
    /// previous file cannot be kept.
    fn before(target: &Target) -> Result<Guard> {
        let before = Arc::new(std::sync::Mutex::new(Before::take(target)?));
        let shared = before.clone();
        let undo = super::interrupt::on_interrupt(move || lock(&shared).restore());
        Ok(Guard {
            before,
            _undo: undo,
        })
    }

    fn commit(self) {
        lock(&self.before).commit();
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        lock(&self.before).restore();
    }
}

/// What a write's target held before it, until the write succeeds.
#[derive(Debug)]
struct Before {
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
    /// Committed or restored.
    settled: bool,
}

impl Before {
    /// What `target` holds before its write; an error (nothing written yet) when its previous
    /// file cannot be kept.
    fn take(target: &Target) -> Result<Before> {
        let mut guard = Before {
            target: target.clone(),
            previous: None,
            files_before: HashSet::new(),
            dirs_before: HashSet::new(),
            created: None,
            staged_before: super::interrupt::staged_files(&target.path),
            settled: false,
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
        match target.single_file {
            true if target.path.is_file() => {
                // A short name of its own, not the target's name lengthened: past the file
                // system's 255 bytes a name made from a long target's failed, and the failed
                // write then removed the target it could not keep.
                let kept = target.path.with_file_name(format!(
                    ".pbg-previous-{}-{}",
                    std::process::id(),
                    NEXT.fetch_add(1, Ordering::Relaxed)
                ));
                guard.previous = Some(match std::fs::hard_link(&target.path, &kept) {
                    Ok(()) => Kept::Linked(kept),
                    Err(_) => match std::fs::rename(&target.path, &kept) {
                        Ok(()) => Kept::Moved(kept),
                        Err(e) => {
                            return Err(datafusion::error::DataFusionError::Execution(format!(
                                "{}: its previous file cannot be kept aside while the write runs ({e}): nothing was written",
                                target.path.display()
                            )));
                        }
                    },
                });
            }
            true => {}
            false => {
                files_under(&target.path, 0, &mut guard.files_before);
                dirs_under(&target.path, 0, &mut guard.dirs_before);
            }
        }
        Ok(guard)
    }

    fn commit(&mut self) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        if let Some(Kept::Linked(kept) | Kept::Moved(kept)) = self.previous.take() {
            let _ = std::fs::remove_file(kept);
        }
    }

    /// Puts the target back as it was (once: a settled write is left as it is).
    fn restore(&mut self) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        if self.target.single_file {
            // What the object store staged for the target (an interrupted write's part).
            for staged in
                super::interrupt::staged_files(&self.target.path).difference(&self.staged_before)
            {
                let _ = std::fs::remove_file(staged);
            }
            match self.previous.take() {
                // A write that failed before it replaced the target leaves the link and the
                // target one file, which `rename` leaves both names of: the link is removed.
                Some(Kept::Linked(link)) if super::atomic::same_file(&link, &self.target.path) => {
                    let _ = std::fs::remove_file(link);
                }
                Some(Kept::Linked(kept) | Kept::Moved(kept)) => {
                    let _ = std::fs::rename(&kept, &self.target.path);
                }
                None => {
                    let _ = std::fs::remove_file(&self.target.path);
                }
            }
        } else {
            let mut now = HashSet::new();
            files_under(&self.target.path, 0, &mut now);
            for file in now.difference(&self.files_before) {
                if written_by_datafusion(file, &self.target.extension) {
                    let _ = std::fs::remove_file(file);
                }
            }
            // The partition directories the write made (`p=0/`), deepest first; only empty
            // ones go.
            let mut dirs = HashSet::new();
            dirs_under(&self.target.path, 0, &mut dirs);
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

/// The deepest directories a directory target's files are looked for in (hive partitions).
const MAX_DEPTH: usize = 16;

/// The files under `dir`, to [`MAX_DEPTH`].
fn files_under(dir: &Path, depth: usize, out: &mut HashSet<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() && depth < MAX_DEPTH => files_under(&path, depth + 1, out),
            Ok(t) if t.is_file() => {
                out.insert(path);
            }
            _ => {}
        }
    }
}

/// The directories under `dir`, to [`MAX_DEPTH`].
fn dirs_under(dir: &Path, depth: usize, out: &mut HashSet<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) && depth < MAX_DEPTH {
            let path = entry.path();
            dirs_under(&path, depth + 1, out);
            out.insert(path);
        }
    }
}

/// Removes `dir` and the directories under it, deepest first, as far as they are empty (a file
/// anywhere keeps its directories).
fn remove_empty_dirs(dir: &Path) {
    let mut dirs = HashSet::new();
    dirs_under(dir, 0, &mut dirs);
    let mut dirs: Vec<PathBuf> = dirs.into_iter().collect();
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
    let name = match name.rsplit_once('#') {
        Some((file, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => file,
        _ => name,
    };
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

#[cfg(test)]
mod tests {
    use super::*;

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
