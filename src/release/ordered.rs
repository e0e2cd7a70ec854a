//! The partitions of a plan one after another, in partition order, a few read ahead. DataFusion
//! merges the partitions a single-file writer is given as they arrive, so a release of a
//! multi-partition input came out in a different row order from run to run; taken in order, the
//! partitions are the input in order (see `input::new_context`) and the release is the same file
//! every time. On request the rows come out in batches of the session's batch size whatever the
//! partitions' boundaries, so that a writer whose pages depend on the batches it is given
//! (Parquet) writes the same bytes on any number of cores. Memory stays bounded: each partition
//! read ahead holds at most [`BUFFER`] batches.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::BatchCoalescer;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties,
};
use futures::StreamExt;
use tokio::sync::mpsc;

/// Batches buffered per partition read ahead.
const BUFFER: usize = 2;

/// One partition whose input partitions are concatenated in order.
#[derive(Debug)]
pub struct OrderedConcatExec {
    input: Arc<dyn ExecutionPlan>,
    ahead: usize,
    even: bool,
    properties: Arc<PlanProperties>,
}

impl OrderedConcatExec {
    /// Concatenates the partitions of `input`, reading up to `ahead` of them at once; `even`: in
    /// batches of the session's batch size (the last may be shorter), else as they come.
    pub fn new(input: Arc<dyn ExecutionPlan>, ahead: usize, even: bool) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(input.schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        OrderedConcatExec {
            input,
            ahead: ahead.max(1),
            even,
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for OrderedConcatExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "OrderedConcatExec: ahead={}, even={}",
            self.ahead, self.even
        )
    }
}

/// A partition read on its own task into a bounded channel.
type Pending = (mpsc::Receiver<Result<RecordBatch>>, SpawnedTask<()>);

/// The state of the concatenation: the partitions read ahead, the next one to start, and (when
/// even) the rows cut into batches of the session's batch size.
struct Concat {
    pending: VecDeque<Pending>,
    next: usize,
    /// The input's partitions.
    n: usize,
    input: Arc<dyn ExecutionPlan>,
    context: Arc<TaskContext>,
    coalescer: Option<BatchCoalescer>,
    finished: bool,
}

impl Concat {
    /// The next batch, or `None` at the end.
    async fn next(&mut self) -> Option<Result<RecordBatch>> {
        loop {
            let cut = self
                .coalescer
                .as_mut()
                .and_then(|c| c.next_completed_batch());
            if let Some(batch) = cut {
                return Some(Ok(batch));
            }
            if self.finished {
                return None;
            }
            match self.step().await {
                Ok(Some(batch)) => return Some(Ok(batch)),
                Ok(None) => {}
                Err(e) => {
                    self.finished = true;
                    self.pending.clear();
                    return Some(Err(e));
                }
            }
        }
    }

    /// One receive: a batch to pass on as it came, or none yet (a batch taken into the
    /// coalescer, a partition ended, or the end reached).
    async fn step(&mut self) -> Result<Option<RecordBatch>> {
        let Some((rx, _)) = self.pending.front_mut() else {
            self.finished = true;
            if let Some(c) = &mut self.coalescer {
                c.finish_buffered_batch()?;
            }
            return Ok(None);
        };
        match (rx.recv().await, &mut self.coalescer) {
            (Some(batch), Some(c)) => {
                c.push_batch(batch?)?;
                Ok(None)
            }
            (Some(batch), None) => batch.map(Some),
            (None, _) => {
                self.next_partition().await?;
                Ok(None)
            }
        }
    }

    /// The front partition has ended: its task is joined (a panic there closed the channel too,
    /// and the rows it had not sent would be lost unseen: it is an error), and the next partition
    /// started.
    async fn next_partition(&mut self) -> Result<()> {
        if let Some((_, task)) = self.pending.pop_front() {
            task.join().await.map_err(|e| {
                DataFusionError::Execution(format!(
                    "a partition of the release ended abnormally: {e}"
                ))
            })?;
        }
        if self.next < self.n {
            self.pending
                .push_back(start(&self.input, self.next, &self.context)?);
            self.next += 1;
        }
        Ok(())
    }
}

fn start(
    input: &Arc<dyn ExecutionPlan>,
    partition: usize,
    context: &Arc<TaskContext>,
) -> Result<Pending> {
    let mut stream = input.execute(partition, context.clone())?;
    let (tx, rx) = mpsc::channel(BUFFER);
    let task = SpawnedTask::spawn(async move {
        while let Some(batch) = stream.next().await {
            let failed = batch.is_err();
            if tx.send(batch).await.is_err() || failed {
                break;
            }
        }
    });
    Ok((rx, task))
}

impl ExecutionPlan for OrderedConcatExec {
    fn name(&self) -> &str {
        "OrderedConcatExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(OrderedConcatExec::new(
            children.swap_remove(0),
            self.ahead,
            self.even,
        )))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return datafusion::common::internal_err!(
                "OrderedConcatExec has one partition, not {partition}"
            );
        }
        let n = self.input.output_partitioning().partition_count();
        let mut pending: VecDeque<Pending> = VecDeque::new();
        for p in 0..self.ahead.min(n) {
            pending.push_back(start(&self.input, p, &context)?);
        }
        let coalescer = self.even.then(|| {
            BatchCoalescer::new(
                self.input.schema(),
                context.session_config().batch_size().max(1),
            )
        });
        let state = Concat {
            pending,
            next: self.ahead.min(n),
            n,
            input: self.input.clone(),
            context,
            coalescer,
            finished: false,
        };
        let stream = futures::stream::unfold(state, move |mut s| async move {
            let item = s.next().await?;
            Some((item, s))
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.input.schema(),
            stream,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_plan::test::exec::PanicExec;

    /// A partition that panics fails the concatenation, both ways: its task's end closed the
    /// channel like the partition's end, and the rows it had not sent were missing unseen.
    #[test]
    fn a_partition_that_panics_fails_the_concatenation() {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::UInt32, false)]));
        for even in [false, true] {
            let input = Arc::new(
                PanicExec::new(schema.clone(), 2)
                    .with_partition_panic(0, 1)
                    .with_partition_panic(1, 2),
            );
            let plan = Arc::new(OrderedConcatExec::new(input, 2, even));
            let got = crate::input::block_on(datafusion::physical_plan::collect(
                plan,
                Arc::new(TaskContext::default()),
            ))
            .unwrap();
            let e = got.unwrap_err().to_string();
            assert!(e.contains("ended abnormally"), "{e}");
        }
    }
}
