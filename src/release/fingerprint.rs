//! An order-independent fingerprint of a table's rows by their text: every value is hashed with
//! its column's name, a row's hash mixes its values', and the table's fingerprint sums its rows'
//! 64-bit hashes and counts them. Two tables have equal fingerprints when
//! they hold the same multiset of rows, whatever their row order, column order, partitioning or
//! file format — so the verifier can check that a release keeps every passed-through value byte
//! for byte, on the row it belongs to. Per-column sums say which column differs.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};

use arrow::array::{Array, AsArray};
use arrow::record_batch::RecordBatch;
use datafusion::prelude::DataFrame;
use futures::StreamExt;

use crate::encode::TextColumn;
use crate::error::{PbgError, Result};
use crate::input::text::text_column_named;
use crate::input::{Input, df_error};

/// The fingerprint of a table.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fingerprint {
    /// Rows.
    pub rows: u64,
    /// Σ over rows of the (mixed) row hash.
    pub sum: u64,
    /// Per column: Σ over rows of the value hash (which column differs).
    pub columns: BTreeMap<String, u64>,
    /// Per column holding any: its nulls. The hashes count a null as the empty text (a CSV
    /// file cannot tell them apart); a typed release (Parquet) must keep the nulls too.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub nulls: BTreeMap<String, u64>,
    /// Per column holding any: its empty texts (not nulls). A column holding both nulls and
    /// empty texts cannot go to CSV, which writes both as an empty field.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub empties: BTreeMap<String, u64>,
    /// What `sum` would add if nulls were hashed apart from empty texts: Σ over rows holding a
    /// null of the change of their row hash (0 without nulls). Compared for typed releases.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub null_shift: u64,
}

/// Whether a shift is zero (not serialized then, so fingerprints without nulls read as before).
fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The hash seed (fixed: the same text hashes the same in both tables of one comparison).
const SEED: u64 = 0x5eed_0001;

/// The fixed-key hash of the values of one column (the same value hashes the same in both
/// tables of one comparison): the hasher's state after the seed and the column's name, taken up
/// again for each value (a column of unique values hashed its name once per row).
#[derive(Clone)]
struct ColumnHash {
    prefix: std::collections::hash_map::DefaultHasher,
}

impl ColumnHash {
    /// The hash of the values of `column`, seeded with `seed`.
    fn new(seed: u64, column: &str) -> Self {
        let state =
            std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default();
        let mut prefix = state.build_hasher();
        prefix.write_u64(seed);
        prefix.write(column.as_bytes());
        ColumnHash { prefix }
    }

    /// The hash of a text, or of `None` for a null told apart from the empty text (its
    /// separator byte 0xfe never occurs in UTF-8, where a text's 0xff neither does, so no text
    /// hashes like it).
    fn value(&self, text: Option<&str>) -> u64 {
        let mut h = self.prefix.clone();
        match text {
            Some(t) => {
                h.write_u8(0xff);
                h.write(t.as_bytes());
            }
            None => h.write_u8(0xfe),
        }
        h.finish()
    }
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
            .zip(batch.schema().fields())
            .map(|(c, f)| text_column_named(c, f.name()))
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
        // Per row, what telling its nulls from empty texts adds to its hash (only when a
        // column holds a null).
        let mut null_delta: Vec<u64> = Vec::new();
        for (&name, text) in names.iter().zip(texts) {
            let hash = ColumnHash::new(SEED, name);
            let empty = hash.value(Some(""));
            let shift = hash.value(None).wrapping_sub(empty);
            // One hash per distinct value; the null key (if any) last.
            let mut hashes: Vec<u64> = (0..text.values.len())
                .map(|i| {
                    if text.values.is_null(i) {
                        empty
                    } else {
                        hash.value(Some(text.values.value(i)))
                    }
                })
                .collect();
            let mut col_sum = 0u64;
            let mut nulls = 0u64;
            // The key of the empty text, if the batch holds it (at most one: keys are distinct).
            let empty_key = (0..text.values.len())
                .find(|&i| !text.values.is_null(i) && text.values.value(i).is_empty());
            if let Some(e) = empty_key {
                let n = text.keys.iter().filter(|k| *k == Some(e as u32)).count() as u64;
                if n > 0 {
                    *self.empties.entry(name.to_string()).or_default() += n;
                }
            }
            if text.keys.null_count() == 0 && text.values.null_count() == 0 {
                for (r, &k) in rows.iter_mut().zip(text.keys.values().iter()) {
                    let h = hashes[k as usize];
                    *r = r.wrapping_add(h);
                    col_sum = col_sum.wrapping_add(h);
                }
            } else {
                hashes.push(empty);
                let null = hashes.len() - 1;
                null_delta.resize(n, 0);
                for ((r, k), d) in rows.iter_mut().zip(text.keys.iter()).zip(&mut null_delta) {
                    let k = k.map_or(null, |k| k as usize);
                    let h = hashes[k];
                    *r = r.wrapping_add(h);
                    col_sum = col_sum.wrapping_add(h);
                    if k == null || text.values.is_null(k) {
                        *d = d.wrapping_add(shift);
                        nulls += 1;
                    }
                }
            }
            let entry = self.columns.entry(name.to_string()).or_default();
            *entry = entry.wrapping_add(col_sum);
            if nulls > 0 {
                *self.nulls.entry(name.to_string()).or_default() += nulls;
            }
        }
        for &s in &rows {
            self.sum = self.sum.wrapping_add(mix(s));
        }
        // The rows holding nulls, hashed again with their nulls told apart.
        for (&s, &d) in rows.iter().zip(&null_delta) {
            if d != 0 {
                let change = mix(s.wrapping_add(d)).wrapping_sub(mix(s));
                self.null_shift = self.null_shift.wrapping_add(change);
            }
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
        for (name, n) in &other.nulls {
            *self.nulls.entry(name.clone()).or_default() += n;
        }
        for (name, n) in &other.empties {
            *self.empties.entry(name.clone()).or_default() += n;
        }
        self.null_shift = self.null_shift.wrapping_add(other.null_shift);
    }

    /// Whether two fingerprints hold the same rows by their text (nulls as empty texts).
    pub fn same_texts(&self, other: &Fingerprint) -> bool {
        self.rows == other.rows && self.sum == other.sum && self.columns == other.columns
    }

    /// Whether two fingerprints hold the same rows with nulls told from empty texts (given the
    /// same rows by their text).
    pub fn same_nulls(&self, other: &Fingerprint) -> bool {
        self.nulls == other.nulls && self.null_shift == other.null_shift
    }

    /// The columns holding both nulls and empty texts (which CSV cannot tell apart).
    pub fn nulls_and_empties(&self) -> Vec<&str> {
        self.nulls
            .keys()
            .filter(|c| self.empties.contains_key(*c))
            .map(String::as_str)
            .collect()
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
    fn keeps_order(&self) -> bool {
        false // sums of row hashes
    }
}

/// The fingerprint of a DataFrame's rows, its partitions hashed in parallel — on a cluster by the
/// [`FingerprintFunc`] aggregate on the executors (only the fingerprint comes back).
pub async fn fingerprint(df: DataFrame, source: &Input) -> Result<Fingerprint> {
    if crate::input::is_distributed(&df) {
        return fingerprint_aggregate(df, source).await;
    }
    let streams = crate::input::unordered_streams(df)
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

/// `SELECT pbg_fingerprint(every column) FROM df`.
async fn fingerprint_aggregate(df: DataFrame, source: &Input) -> Result<Fingerprint> {
    use datafusion::logical_expr::AggregateUDF;

    let columns: Vec<_> = df
        .schema()
        .fields()
        .iter()
        .map(|f| crate::input::column(f.name()))
        .collect();
    let f = AggregateUDF::from(FingerprintFunc::new());
    let batches = df
        .aggregate(vec![], vec![f.call(columns).alias("fingerprint")])
        .map_err(|e| df_error(source, e))?
        .collect()
        .await
        .map_err(|e| df_error(source, e))?;
    let mut total = Fingerprint::default();
    for b in &batches {
        let text = arrow::compute::cast(b.column(0), &arrow::datatypes::DataType::Utf8)
            .map_err(|e| df_error(source, e))?;
        let text = text.as_string::<i32>();
        for v in text.iter().flatten() {
            total.merge(&parse(v).map_err(|e| df_error(source, e))?);
        }
    }
    Ok(total)
}

fn parse(json: &str) -> datafusion::common::Result<Fingerprint> {
    serde_json::from_str(json).map_err(|e| {
        datafusion::common::DataFusionError::Execution(format!(
            "pbg_fingerprint: not a fingerprint ({e})"
        ))
    })
}

static FINGERPRINT_DOC: std::sync::LazyLock<datafusion::logical_expr::Documentation> =
    std::sync::LazyLock::new(|| {
        datafusion::logical_expr::Documentation::builder(
            datafusion::logical_expr::DocSection {
                include: true,
                label: "pbg",
                description: Some("Property based generalization"),
            },
            "The order-independent fingerprint of the rows, as JSON: the row count, the sum of \
             the rows' hashes and per column the sum of its values' hashes (values by their text \
             form, hashed with their column's name; NULL as the empty text). Two tables hold the \
             same multiset of rows when their fingerprints are equal, whatever the row order, \
             partitioning or file format; pbg's verifier compares a release with the input's \
             release this way (on a cluster, where the rows are).",
            "pbg_fingerprint(column_1, .., column_n)",
        )
        .with_sql_example("SELECT pbg_fingerprint(age, occupation) FROM adult;")
        .with_argument(
            "column_i",
            "Columns of any type, named (the name is hashed).",
        )
        .build()
    });

/// `pbg_fingerprint(c1, .., cn)`: the [`Fingerprint`] of the rows as JSON. An aggregate, so that a
/// cluster computes it where the rows are and only the fingerprint travels.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FingerprintFunc {
    signature: datafusion::logical_expr::Signature,
}

impl Default for FingerprintFunc {
    fn default() -> Self {
        Self::new()
    }
}

impl FingerprintFunc {
    /// The function.
    pub fn new() -> Self {
        FingerprintFunc {
            signature: datafusion::logical_expr::Signature::variadic_any(
                datafusion::logical_expr::Volatility::Immutable,
            ),
        }
    }
}

impl datafusion::logical_expr::AggregateUDFImpl for FingerprintFunc {
    fn name(&self) -> &str {
        "pbg_fingerprint"
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn return_type(
        &self,
        _args: &[arrow::datatypes::DataType],
    ) -> datafusion::common::Result<arrow::datatypes::DataType> {
        Ok(arrow::datatypes::DataType::Utf8)
    }

    fn accumulator(
        &self,
        args: datafusion::logical_expr::function::AccumulatorArgs,
    ) -> datafusion::common::Result<Box<dyn datafusion::logical_expr::Accumulator>> {
        Ok(Box::new(FingerprintAccumulator {
            names: args.expr_fields.iter().map(|f| f.name().clone()).collect(),
            fingerprint: Fingerprint::default(),
        }))
    }

    fn state_fields(
        &self,
        args: datafusion::logical_expr::function::StateFieldsArgs,
    ) -> datafusion::common::Result<Vec<arrow::datatypes::FieldRef>> {
        Ok(vec![std::sync::Arc::new(arrow::datatypes::Field::new(
            datafusion::logical_expr::utils::format_state_name(args.name, "fingerprint"),
            arrow::datatypes::DataType::Utf8,
            true,
        ))])
    }

    fn documentation(&self) -> Option<&datafusion::logical_expr::Documentation> {
        Some(&FINGERPRINT_DOC)
    }
}

#[derive(Debug)]
struct FingerprintAccumulator {
    names: Vec<String>,
    fingerprint: Fingerprint,
}

impl datafusion::logical_expr::Accumulator for FingerprintAccumulator {
    fn update_batch(
        &mut self,
        values: &[arrow::array::ArrayRef],
    ) -> datafusion::common::Result<()> {
        let Some(first) = values.first() else {
            return Ok(());
        };
        let texts = values
            .iter()
            .zip(&self.names)
            .map(|(c, name)| text_column_named(c, name))
            .collect::<Result<Vec<_>>>()
            .map_err(|e| datafusion::common::DataFusionError::External(Box::new(e)))?;
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        self.fingerprint.add_texts(&names, &texts, first.len());
        Ok(())
    }

    fn evaluate(&mut self) -> datafusion::common::Result<datafusion::scalar::ScalarValue> {
        let json = serde_json::to_string(&self.fingerprint)
            .map_err(|e| datafusion::common::DataFusionError::External(Box::new(e)))?;
        Ok(datafusion::scalar::ScalarValue::Utf8(Some(json)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self.names.iter().map(|n| n.len() * 2 + 48).sum::<usize>()
            + self.fingerprint.columns.len() * 64
    }

    fn state(&mut self) -> datafusion::common::Result<Vec<datafusion::scalar::ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn merge_batch(&mut self, states: &[arrow::array::ArrayRef]) -> datafusion::common::Result<()> {
        let Some(state) = states.first() else {
            return Ok(());
        };
        let text = arrow::compute::cast(state, &arrow::datatypes::DataType::Utf8)?;
        for v in text.as_string::<i32>().iter().flatten() {
            self.fingerprint.merge(&parse(v)?);
        }
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A value's hash is the hash of the seed, the column's name and the value written at once
    /// (as fingerprints were computed before the column's state was kept): fingerprints do not
    /// change, whichever build computed them (a cluster's executors, a stored report).
    #[test]
    fn a_column_hash_is_the_hash_of_seed_name_and_value() {
        let whole = |column: &str, text: Option<&str>| {
            let mut h = std::collections::hash_map::DefaultHasher::default();
            h.write_u64(SEED);
            h.write(column.as_bytes());
            match text {
                Some(t) => {
                    h.write_u8(0xff);
                    h.write(t.as_bytes());
                }
                None => h.write_u8(0xfe),
            }
            h.finish()
        };
        for column in [
            "",
            "a",
            "native-country",
            "a column name longer than a block",
        ] {
            let hash = ColumnHash::new(SEED, column);
            for text in [
                None,
                Some(""),
                Some("x"),
                Some("United-States"),
                Some("é\"long value, 30 bytes"),
            ] {
                assert_eq!(hash.value(text), whole(column, text), "{column} {text:?}");
            }
        }
        assert_ne!(
            ColumnHash::new(SEED, "a").value(Some("")),
            ColumnHash::new(SEED, "a").value(None)
        );
    }
}
