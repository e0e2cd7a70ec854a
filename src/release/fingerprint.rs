//! An order-independent fingerprint of a table's rows by their text: every value is hashed with
//! its column's name, a row's hash mixes its values', and the table's fingerprint sums its rows'
//! 64-bit hashes and counts them. Two tables have equal fingerprints when
//! they hold the same multiset of rows, whatever their row order, column order, partitioning or
//! file format — so the verifier can check that a release keeps every passed-through value byte
//! for byte, on the row it belongs to. Per-column sums say which column differs.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};

use arrow::array::Array;
use arrow::record_batch::RecordBatch;
use datafusion::prelude::DataFrame;
use futures::StreamExt;

use crate::encode::{TextColumn, text_column};
use crate::error::{PbgError, Result};
use crate::input::{Input, df_error};

/// The fingerprint of a table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fingerprint {
    /// Rows.
    pub rows: u64,
    /// Σ over rows of the (mixed) row hash.
    pub sum: u64,
    /// Per column: Σ over rows of the value hash (which column differs).
    pub columns: BTreeMap<String, u64>,
}

/// The hash seed (fixed: the same text hashes the same in both tables of one comparison).
const SEED: u64 = 0x5eed_0001;

/// A fixed-key hasher: the same text hashes the same in both tables of one comparison.
fn hash_text(seed: u64, column: &str, text: &str) -> u64 {
    let state =
        std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default();
    let mut h = state.build_hasher();
    h.write_u64(seed);
    h.write(column.as_bytes());
    h.write_u8(0xff);
    h.write(text.as_bytes());
    h.finish()
}

/// splitmix64's finalizer: a row's summed value hashes become one well-mixed row hash.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Fingerprint {
    /// Adds a batch's rows. A null counts as the empty text (a CSV file cannot tell them apart).
    pub fn add(&mut self, batch: &RecordBatch) -> Result<()> {
        let texts = batch
            .columns()
            .iter()
            .map(text_column)
            .collect::<Result<Vec<_>>>()?;
        self.add_batch_texts(batch, &texts);
        Ok(())
    }

    /// Adds a batch's rows given the text form of each of its columns.
    pub fn add_batch_texts(&mut self, batch: &RecordBatch, texts: &[TextColumn]) {
        let names: Vec<&str> = batch
            .schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        self.add_texts(&names, texts, batch.num_rows());
    }

    /// Adds `n` rows given as the text form of each column, named `names`.
    pub fn add_texts(&mut self, names: &[&str], texts: &[TextColumn], n: usize) {
        let mut rows = vec![0u64; n];
        for (&name, text) in names.iter().zip(texts) {
            // One hash per distinct value; the null key (if any) last.
            let mut hashes: Vec<u64> = (0..text.values.len())
                .map(|i| {
                    let v = if text.values.is_null(i) {
                        ""
                    } else {
                        text.values.value(i)
                    };
                    hash_text(SEED, name, v)
                })
                .collect();
            let mut col_sum = 0u64;
            if text.keys.null_count() == 0 {
                for (r, &k) in rows.iter_mut().zip(text.keys.values().iter()) {
                    let h = hashes[k as usize];
                    *r = r.wrapping_add(h);
                    col_sum = col_sum.wrapping_add(h);
                }
            } else {
                hashes.push(hash_text(SEED, name, ""));
                let null = hashes.len() - 1;
                for (r, k) in rows.iter_mut().zip(text.keys.iter()) {
                    let h = hashes[k.map_or(null, |k| k as usize)];
                    *r = r.wrapping_add(h);
                    col_sum = col_sum.wrapping_add(h);
                }
            }
            let entry = self.columns.entry(name.to_string()).or_default();
            *entry = entry.wrapping_add(col_sum);
        }
        for s in rows {
            self.sum = self.sum.wrapping_add(mix(s));
        }
        self.rows += n as u64;
    }

    /// Adds another fingerprint (of other rows).
    pub fn merge(&mut self, other: &Fingerprint) {
        self.rows += other.rows;
        self.sum = self.sum.wrapping_add(other.sum);
        for (name, sum) in &other.columns {
            let entry = self.columns.entry(name.clone()).or_default();
            *entry = entry.wrapping_add(*sum);
        }
    }

    /// The columns whose values differ between two fingerprints.
    pub fn differing_columns(&self, other: &Fingerprint) -> Vec<String> {
        let mut names: Vec<&String> = self.columns.keys().chain(other.columns.keys()).collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter(|n| self.columns.get(*n) != other.columns.get(*n))
            .cloned()
            .collect()
    }
}

/// The verifier fingerprints a release in the same read that counts its classes.
impl crate::statistics::Companion for Fingerprint {
    fn all_columns(&self, _schema: &arrow::datatypes::Schema) -> bool {
        true
    }
    fn add(&mut self, batch: &RecordBatch, texts: &[TextColumn]) -> Result<()> {
        self.add_batch_texts(batch, texts);
        Ok(())
    }
    fn merge(&mut self, other: Self) {
        Fingerprint::merge(self, &other)
    }
}

/// The fingerprint of a DataFrame's rows, its partitions hashed in parallel.
pub async fn fingerprint(df: DataFrame, source: &Input) -> Result<Fingerprint> {
    let streams = df
        .execute_stream_partitioned()
        .await
        .map_err(|e| df_error(source, e))?;
    let tasks: Vec<_> = streams
        .into_iter()
        .map(|mut stream| {
            let source = source.clone();
            tokio::spawn(async move {
                let mut fp = Fingerprint::default();
                while let Some(batch) = stream.next().await {
                    let batch = batch.map_err(|e| df_error(&source, e))?;
                    fp.add(&batch)?;
                }
                Ok::<_, PbgError>(fp)
            })
        })
        .collect();
    let mut total = Fingerprint::default();
    for task in tasks {
        let part = task.await.map_err(|e| df_error(source, e))??;
        total.merge(&part);
    }
    Ok(total)
}

/// A pass-through node that fingerprints every batch flowing to the release writer, so the
/// verifier compares the written file with what the plan produced without reading the input again.
#[derive(Debug)]
pub struct FingerprintExec {
    input: std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>,
    acc: std::sync::Arc<std::sync::Mutex<Fingerprint>>,
}

impl FingerprintExec {
    /// Wraps `plan` (below any node that merges partitions, so hashing stays parallel); the
    /// fingerprint accumulates into `acc`.
    pub fn wrap(
        plan: std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        acc: &std::sync::Arc<std::sync::Mutex<Fingerprint>>,
    ) -> datafusion::common::Result<std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>>
    {
        if plan.name() == "CoalescePartitionsExec" && plan.children().len() == 1 {
            let child = FingerprintExec::wrap(plan.children()[0].clone(), acc)?;
            #[allow(deprecated)]
            return plan.with_new_children(vec![child]);
        }
        Ok(std::sync::Arc::new(FingerprintExec {
            input: plan,
            acc: acc.clone(),
        }))
    }
}

impl datafusion::physical_plan::DisplayAs for FingerprintExec {
    fn fmt_as(
        &self,
        _t: datafusion::physical_plan::DisplayFormatType,
        f: &mut std::fmt::Formatter,
    ) -> std::fmt::Result {
        write!(f, "FingerprintExec")
    }
}

impl datafusion::physical_plan::ExecutionPlan for FingerprintExec {
    fn name(&self) -> &str {
        "FingerprintExec"
    }

    fn properties(&self) -> &std::sync::Arc<datafusion::physical_plan::PlanProperties> {
        self.input.properties()
    }

    fn children(&self) -> Vec<&std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(
            &std::sync::Arc<dyn datafusion::physical_expr::PhysicalExpr>,
        ) -> datafusion::common::Result<
            datafusion::common::tree_node::TreeNodeRecursion,
        >,
    ) -> datafusion::common::Result<datafusion::common::tree_node::TreeNodeRecursion> {
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: std::sync::Arc<Self>,
        mut children: Vec<std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>>,
    ) -> datafusion::common::Result<std::sync::Arc<dyn datafusion::physical_plan::ExecutionPlan>>
    {
        Ok(std::sync::Arc::new(FingerprintExec {
            input: children.swap_remove(0),
            acc: self.acc.clone(),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: std::sync::Arc<datafusion::execution::TaskContext>,
    ) -> datafusion::common::Result<datafusion::execution::SendableRecordBatchStream> {
        let stream = self.input.execute(partition, context)?;
        let schema = stream.schema();
        let acc = self.acc.clone();
        let mapped = stream.map(move |batch| {
            let batch = batch?;
            let mut fp = Fingerprint::default();
            fp.add(&batch)
                .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
            if let Ok(mut total) = acc.lock() {
                total.merge(&fp);
            }
            Ok(batch)
        });
        Ok(Box::pin(
            datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(schema, mapped),
        ))
    }
}
