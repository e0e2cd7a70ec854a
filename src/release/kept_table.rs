//! The kept rows as a DataFusion table: a release that is not CSV text (Parquet) of a text input
//! runs the release plan ([`super::plan`]) and its writer over the rows pass 1 kept, instead of
//! reading the input a second time. Contiguous runs of kept batches are the table's partitions,
//! concatenated in partition order by the writer, so the rows stay in input order.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::prelude::SessionContext;

use super::fingerprint::Fingerprint;
use super::kept::KeptBatch;
use super::plan::release_frame;
use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::io::OutputFormat;

/// One partition of the kept table: a contiguous run of kept batches, rebuilt one at a time.
#[derive(Debug)]
struct KeptPartition {
    schema: SchemaRef,
    batches: Arc<[KeptBatch]>,
    range: Range<usize>,
}

impl PartitionStream for KeptPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (schema, batches) = (self.schema.clone(), self.batches.clone());
        let rebuilt = self.range.clone().map(move |i| {
            batches[i]
                .record_batch(&schema)
                .map_err(|e| DataFusionError::External(Box::new(e)))
        });
        Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            futures::stream::iter(rebuilt),
        ))
    }
}

/// Writes the release of `node` to `path` in `format` through the release plan over the kept
/// rows `kept` (every column of `ev`'s input, in input order) in session `ctx`.
/// Returns the rows written and the fingerprint of what the writer was given.
pub async fn write_kept_release(
    ctx: &SessionContext,
    ev: &Evaluator,
    node: &[u8],
    kept: Arc<[KeptBatch]>,
    path: &Path,
    format: OutputFormat,
) -> Result<(u64, Fingerprint)> {
    let schema = ev.dataset().schema.clone();
    let parts = ctx.state().config().target_partitions().max(1);
    let per = kept.len().div_ceil(parts).max(1);
    let partitions: Vec<Arc<dyn PartitionStream>> = (0..kept.len())
        .step_by(per)
        .map(|start| {
            Arc::new(KeptPartition {
                schema: schema.clone(),
                batches: kept.clone(),
                range: start..(start + per).min(kept.len()),
            }) as Arc<dyn PartitionStream>
        })
        .collect();
    let fail = |e: DataFusionError| PbgError::Format {
        path: path.to_path_buf(),
        message: format!("while releasing the kept rows: {e}"),
    };
    let table = StreamingTable::try_new(schema, partitions).map_err(fail)?;
    let df = ctx.read_table(Arc::new(table)).map_err(fail)?;
    super::write_frame(release_frame(df, ev, node)?, path, format).await
}
