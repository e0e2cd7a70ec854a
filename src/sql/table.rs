//! Shared plumbing of the table functions: literal arguments, and tables whose batches are produced
//! on a blocking thread (rayon work must not run on tokio workers) and streamed through a bounded
//! channel, so a large result is never held whole.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::common::{DataFusionError, Result, ScalarValue, plan_err};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{DocSection, Expr};
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;

use crate::error::PbgError;

/// The documentation section of every pbg function.
pub(super) fn doc_section() -> DocSection {
    DocSection {
        include: true,
        label: "pbg",
        description: Some("Property based generalization"),
    }
}

/// An engine error as a DataFusion execution error prefixed with the function name.
pub(super) fn exec(function: &str, e: PbgError) -> DataFusionError {
    DataFusionError::Execution(format!("{function}: {e}"))
}

/// An engine error found while planning (bad node, objectives, ...).
pub(super) fn plan(function: &str, e: PbgError) -> DataFusionError {
    DataFusionError::Plan(format!("{function}: {e}"))
}

/// Checks the number of arguments.
pub(super) fn arity(
    function: &str,
    exprs: &[Expr],
    min: usize,
    max: usize,
    usage: &str,
) -> Result<()> {
    if exprs.len() < min || exprs.len() > max {
        return plan_err!(
            "{function}: expected {usage}, got {} arguments",
            exprs.len()
        );
    }
    Ok(())
}

fn literal<'a>(function: &str, exprs: &'a [Expr], i: usize, what: &str) -> Result<&'a ScalarValue> {
    match &exprs[i] {
        Expr::Literal(v, _) if v.is_null() => plan_err!("{function}: {what} must not be NULL"),
        Expr::Literal(v, _) => Ok(v),
        other => plan_err!("{function}: {what} must be a constant, got {other}"),
    }
}

/// A string literal argument.
pub(super) fn string_arg(function: &str, exprs: &[Expr], i: usize, what: &str) -> Result<String> {
    match literal(function, exprs, i, what)? {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::Utf8View(Some(s))
        | ScalarValue::LargeUtf8(Some(s)) => Ok(s.clone()),
        other => plan_err!(
            "{function}: {what} must be a string, got {other} ({})",
            other.data_type()
        ),
    }
}

/// An integer literal argument.
pub(super) fn int_arg(function: &str, exprs: &[Expr], i: usize, what: &str) -> Result<i64> {
    let v = literal(function, exprs, i, what)?;
    if !v.data_type().is_integer() {
        return plan_err!(
            "{function}: {what} must be an integer, got {v} ({})",
            v.data_type()
        );
    }
    match v.cast_to(&arrow::datatypes::DataType::Int64)? {
        ScalarValue::Int64(Some(x)) => Ok(x),
        other => plan_err!("{function}: {what} must be an integer, got {other}"),
    }
}

/// The profile (argument 0, read now: statistics, or rows when `rows`) and node (argument 1) of
/// a `fn('profile', 'L1,..')` call.
pub(super) fn profile_and_node(
    registry: &super::Registry,
    function: &str,
    args: &datafusion::catalog::TableFunctionArgs,
    rows: bool,
) -> Result<(Arc<crate::evaluate::Evaluator>, crate::lattice::Node)> {
    let exprs = args.exprs();
    arity(
        function,
        exprs,
        2,
        2,
        &format!("{function}('profile', 'L1,L2,..')"),
    )?;
    let name = string_arg(function, exprs, 0, "the profile")?;
    let ev = if rows {
        registry.rows(function, &name, args.session())?
    } else {
        registry.statistics(function, &name, args.session())?
    };
    let node = ev
        .parse_node(&string_arg(function, exprs, 1, "the node")?)
        .map_err(|e| plan(function, e))?;
    Ok((ev, node))
}

/// Produces batches of about the given size, passing each to the sink; the sink returns false
/// when the consumer is gone.
pub(super) type Producer =
    dyn Fn(usize, &mut dyn FnMut(RecordBatch) -> bool) -> Result<()> + Send + Sync;

#[derive(Clone)]
struct LazyPartition {
    schema: SchemaRef,
    produce: Arc<Producer>,
}

impl std::fmt::Debug for LazyPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LazyPartition({:?})", self.schema)
    }
}

impl PartitionStream for LazyPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let batch_size = ctx.session_config().batch_size();
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(2);
        let produce = self.produce.clone();
        tokio::task::spawn_blocking(move || {
            let mut sink = |b: RecordBatch| tx.blocking_send(Ok(b)).is_ok();
            // A panic would close the channel like the end of the table, and the rows not yet
            // sent would be missing unseen: it is sent as an error.
            let produced = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                produce(batch_size, &mut sink)
            }));
            let failed = match produced {
                Ok(result) => result.err(),
                Err(panic) => Some(DataFusionError::Execution(format!(
                    "the table function failed: {}",
                    panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "a panic".into())
                ))),
            };
            if let Some(e) = failed {
                let _ = tx.blocking_send(Err(e));
            }
        });
        let stream =
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), stream))
    }
}

/// A table computed when scanned and streamed batch by batch.
pub(super) fn lazy_table(
    schema: SchemaRef,
    produce: Arc<Producer>,
) -> Result<Arc<dyn TableProvider>> {
    let partition = Arc::new(LazyPartition {
        schema: schema.clone(),
        produce,
    });
    Ok(Arc::new(StreamingTable::try_new(schema, vec![partition])?))
}

/// Emits `batch` in slices of `size` rows (zero-copy); false when the consumer is gone.
pub(super) fn emit_sliced(
    batch: &RecordBatch,
    size: usize,
    sink: &mut dyn FnMut(RecordBatch) -> bool,
) -> bool {
    let mut start = 0;
    while start < batch.num_rows() {
        let len = size.max(1).min(batch.num_rows() - start);
        if !sink(batch.slice(start, len)) {
            return false;
        }
        start += len;
    }
    true
}

/// The value of a constant argument: a scalar, or an array whose values are all the same (a
/// caller across datafusion-ffi passes constants as arrays); `None` when the values differ.
pub(super) fn constant(
    value: &datafusion::logical_expr::ColumnarValue,
) -> Result<Option<ScalarValue>> {
    use arrow::array::{Array, Scalar};
    use datafusion::logical_expr::ColumnarValue;
    match value {
        ColumnarValue::Scalar(s) => Ok(Some(s.clone())),
        ColumnarValue::Array(a) if a.is_empty() => Ok(None),
        ColumnarValue::Array(a) => {
            let first = a.slice(0, 1);
            let same = if first.is_null(0) {
                a.null_count() == a.len()
            } else {
                let eq = arrow::compute::kernels::cmp::eq(a, &Scalar::new(&first))?;
                eq.true_count() == a.len()
            };
            Ok(same
                .then(|| ScalarValue::try_from_array(a, 0))
                .transpose()?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::UInt32Array;
    use arrow::datatypes::{DataType, Field, Schema};

    /// A producer that panics after its first batch fails the query: the panic closed the
    /// channel like the table's end, and the query returned the first batch as the whole table.
    #[test]
    fn a_producer_that_panics_fails_the_query() {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::UInt32, false)]));
        let first = RecordBatch::try_new(
            schema.clone(),
            vec![Arc::new(UInt32Array::from(vec![1, 2, 3]))],
        )
        .unwrap();
        let produce: Arc<Producer> = Arc::new(move |_, sink| {
            sink(first.clone());
            panic!("an invariant broke");
        });
        let table = lazy_table(schema, produce).unwrap();
        let ctx = datafusion::prelude::SessionContext::new();
        let got = crate::input::block_on(async { ctx.read_table(table)?.collect().await }).unwrap();
        let e = got.unwrap_err().to_string();
        assert!(e.contains("an invariant broke"), "{e}");
    }
}
