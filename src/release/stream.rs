//! The release of a text input (CSV) that pass 1 could not keep: the input is read again in many
//! file ranges, a few at a time in parallel; each range is released as text ([`super::text`])
//! and the ranges are appended in order, so the file is the input's rows in input order (as from
//! kept rows) with memory bounded by the ranges in flight.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;

use datafusion::prelude::SessionContext;
use futures::StreamExt;

use super::fingerprint::Fingerprint;
use super::plan::same_columns;
use super::text::{CsvRelease, ReleasedText, TextRelease};
use crate::encode::text_column;
use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::input::{self, df_error};

/// Bytes of input per range: bounds what one range's release holds in memory.
const RANGE_BYTES: u64 = 16 << 20;

/// Writes the CSV release of `node` to `path` reading the input afresh in ordered ranges.
/// Returns the rows written and the fingerprint of every row written.
pub async fn write_streamed_csv(
    ctx: &SessionContext,
    ev: &Evaluator,
    node: &[u8],
    path: &Path,
) -> Result<(u64, Fingerprint)> {
    let source = ev.dataset().input();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let ranges = input::size_of(source)
        .map_or(64, |bytes| bytes.div_ceil(RANGE_BYTES) as usize)
        .max(threads);
    let ranged = input::ranged_context(ctx, ranges);
    // The release is made from the text of each value: keyed as read, like pass 1.
    let df = input::open_keyed(&ranged, source, ev.dataset().profile.delimiter).await?;
    same_columns(ev, &df)?;
    let plan = df
        .create_physical_plan()
        .await
        .map_err(|e| df_error(source, e))?;
    let partitions = plan.properties().partitioning.partition_count();
    let task_ctx = ranged.task_ctx();
    let release = Arc::new(TextRelease::new(ev, node)?);
    let mut file = CsvRelease::create(path, &release)?;
    let mut running: VecDeque<tokio::task::JoinHandle<Result<Vec<ReleasedText>>>> = VecDeque::new();
    let mut next = 0;
    // One range more than threads in flight: the next is read while the first is written.
    while next < partitions || !running.is_empty() {
        while next < partitions && running.len() <= threads {
            let mut stream = plan
                .execute(next, task_ctx.clone())
                .map_err(|e| df_error(source, e))?;
            let release = release.clone();
            let source = source.clone();
            running.push_back(tokio::spawn(async move {
                let mut parts = Vec::new();
                while let Some(batch) = stream.next().await {
                    let batch = batch.map_err(|e| df_error(&source, e))?;
                    let texts = batch
                        .columns()
                        .iter()
                        .map(text_column)
                        .collect::<Result<Vec<_>>>()?;
                    parts.push(release.batch(batch.num_rows(), &texts)?);
                }
                Ok(parts)
            }));
            next += 1;
        }
        if let Some(task) = running.pop_front() {
            let parts = task.await.map_err(|e| PbgError::Format {
                path: source.as_path(),
                message: format!("release task failed: {e}"),
            })??;
            for part in parts {
                file.append(part)?;
            }
        }
    }
    file.finish()
}
