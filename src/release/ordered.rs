//! The partitions of a plan one after another, in partition order, a few read ahead. DataFusion
//! merges the partitions a single-file writer is given as they arrive, so a release of a
//! multi-partition input came out in a different row order from run to run; taken in order, the
//! partitions are the input in order (see `input::new_context`) and the release is the same file
//! every time. On request the rows come out in batches of the session's batch size whatever the
//! partitions' boundaries, so that a writer whose pages depend on the batches it is given (Parquet)
//! writes the same bytes on any number of cores. Memory stays bounded: each partition read ahead holds at most
//! [`BUFFER`] batches.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::BatchCoalescer;
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
    input: Arc<dyn ExecutionPlan>,
    context: Arc<TaskContext>,
    coalescer: Option<BatchCoalescer>,
    finished: bool,
}

impl Concat {
    /// The next batch, or `None` at the end.
    async fn next(&mut self, n: usize) -> Option<Result<RecordBatch>> {
        loop {
            if let Some(batch) = self
                .coalescer
                .as_mut()
                .and_then(|c| c.next_completed_batch())
            {
                return Some(Ok(batch));
            }
            if self.finished {
                return None;
            }
            let received = match self.pending.front_mut() {
                Some((rx, _)) => rx.recv().await,
                None => {
                    self.finished = true;
                    if let Some(Err(e)) = self.coalescer.as_mut().map(|c| c.finish_buffered_batch())
                    {
                        return Some(Err(e.into()));
                    }
                    continue;
                }
            };
            let failed = match received {
                Some(Ok(batch)) => match self.coalescer.as_mut() {
                    Some(c) => c.push_batch(batch).err().map(Into::into),
                    None => return Some(Ok(batch)),
                },
                Some(Err(e)) => Some(e),
                None => {
                    // This partition is done: its task ended (a panic there closed the channel
                    // too, and its rows would be lost unseen: it is an error), start the next.
                    let ended = match self.pending.pop_front() {
                        Some((_, task)) => task.join().await.err(),
                        None => None,
                    };
                    if let Some(e) = ended {
                        Some(datafusion::error::DataFusionError::Execution(format!(
                            "a partition of the release ended abnormally: {e}"
                        )))
                    } else if self.next < n {
                        let started = start(&self.input, self.next, &self.context);
                        self.next += 1;
                        match started {
                            Ok(p) => {
                                self.pending.push_back(p);
                                None
                            }
                            Err(e) => Some(e),
                        }
                    } else {
                        None
                    }
                }
            };
            if let Some(e) = failed {
                self.finished = true;
                self.pending.clear();
                return Some(Err(e));
            }
        }
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
            input: self.input.clone(),
            context,
            coalescer,
            finished: false,
        };
        let stream = futures::stream::unfold(state, move |mut s| async move {
            let item = s.next(n).await?;
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
