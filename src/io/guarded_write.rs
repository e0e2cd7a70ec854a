//! DataFusion's writes of local files made all-or-nothing. DataFusion 55 finishes every writer of
//! a write, those whose rows failed too (`stateless_serialize_and_write_files` shuts them all
//! down): a `COPY` of a release that failed at its 90,001st row left the rows before it in the
//! target — classes cut short, below the release's k — and one that failed before its first
//! row replaced an existing target with an empty file. [`GuardedWrites`] (a physical optimizer
//! rule of pbg's local sessions) puts a [`GuardedWriteExec`] above each such write: before it
//! runs, the target's previous file is kept under a hard link (copied where none can be made,
//! renamed aside where it cannot be copied; the write is refused when none of these works); when it fails (or is dropped
//! unfinished), that file is put back, or what the write left is removed, and a directory
//! write's new files (`<write id>_<part>.<extension>`, as DataFusion names them) are removed.

use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::file_format::csv::CsvSink;
use datafusion::datasource::file_format::json::JsonSink;
use datafusion::datasource::file_format::parquet::ParquetSink;
use datafusion::datasource::physical_plan::{FileSink, FileSinkConfig};
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::TryStreamExt;

use super::guard::TargetGuard;
use super::restore::Target;

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
            atomic: false,
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
        let guard = TargetGuard::before(&self.target)?;
        // No earlier write's failure is told as this one's.
        let _ = crate::input::failed_write_under(&self.target.path);
        let stream = self.input.execute(partition, context)?;
        let schema = stream.schema();
        let target = self.target.path.clone();
        // The write's stream yields its count once the write is done: the guard settles then
        // (or when the stream is dropped unfinished).
        let written = futures::stream::once(async move {
            let batches: Result<Vec<_>> = stream.try_collect().await;
            match batches {
                Ok(batches) => {
                    guard.commit();
                    Ok(batches)
                }
                Err(e) => {
                    // Put back before the failure is told.
                    drop(guard);
                    Err(with_cause(e, &target))
                }
            }
        })
        .map_ok(|batches| futures::stream::iter(batches.into_iter().map(Ok)))
        .try_flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, written)))
    }
}

/// `e` told with the file whose write failed and the failure's cause. DataFusion 55 reports a
/// write whose last part or completion failed (a file past `ulimit -f`, a full disk) as an
/// internal error blaming a bug in DataFusion and warning of partial results, the cause dropped,
/// though the guard has put the target back; a part that failed earlier is told without its
/// file.
fn with_cause(e: DataFusionError, target: &std::path::Path) -> DataFusionError {
    let Some((file, cause)) = crate::input::failed_write_under(target) else {
        return e;
    };
    let text = e.message();
    let dropped = text.contains("Error encountered while finalizing writes")
        || text.contains("Error encountered during writing to ObjectStore");
    DataFusionError::Execution(match dropped {
        true => format!(
            "{}: the write failed: {cause}; the target is put back as it was before the write",
            file.display()
        ),
        false => format!("{}: {text}", file.display()),
    })
}
