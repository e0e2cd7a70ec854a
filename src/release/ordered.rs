//! The partitions of a plan one after another, in partition order, a few read ahead. DataFusion
//! merges the partitions a single-file writer is given as they arrive, so a release of a
//! multi-partition input came out in a different row order from run to run; taken in order, the
//! partitions are the input in order (see `input::new_context`) and the release is the same file
//! every time. Memory stays bounded: each partition read ahead holds at most [`BUFFER`] batches.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow::array::RecordBatch;
use datafusion::common::Result;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::tree_node::TreeNodeRecursion;
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
    properties: Arc<PlanProperties>,
}

impl OrderedConcatExec {
    /// Concatenates the partitions of `input`, reading up to `ahead` of them at once.
    pub fn new(input: Arc<dyn ExecutionPlan>, ahead: usize) -> Self {
        let properties = PlanProperties::new(
            EquivalenceProperties::new(input.schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        OrderedConcatExec {
            input,
            ahead: ahead.max(1),
            properties: Arc::new(properties),
        }
    }
}

impl DisplayAs for OrderedConcatExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "OrderedConcatExec: ahead={}", self.ahead)
    }
}

/// A partition read on its own task into a bounded channel.
type Pending = (mpsc::Receiver<Result<RecordBatch>>, SpawnedTask<()>);

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
        let state = (pending, self.ahead.min(n), self.input.clone(), context);
        let stream = futures::stream::unfold(state, move |mut s| async move {
            loop {
                let (rx, _) = s.0.front_mut()?;
                match rx.recv().await {
                    Some(batch) => return Some((batch, s)),
                    None => {
                        // This partition is done: drop it, start the next one.
                        s.0.pop_front();
                        if s.1 < n {
                            match start(&s.2, s.1, &s.3) {
                                Ok(p) => s.0.push_back(p),
                                Err(e) => {
                                    s.1 = n;
                                    s.0.clear();
                                    return Some((Err(e), s));
                                }
                            }
                            s.1 += 1;
                        }
                    }
                }
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.input.schema(),
            stream,
        )))
    }
}
