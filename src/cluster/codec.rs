//! How pbg's plans cross process boundaries on a cluster: Ballista's own codecs, plus pbg's
//! functions that carry data (the release functions their hierarchy and suppressed classes,
//! `generalize` its registry's hierarchies), which cannot travel by name, and the small result tables of pbg's table functions (materialized on the client, where
//! the search runs, and shipped as Arrow IPC).

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::catalog::TableProvider;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::common::{DataFusionError, Result, TableReference};
use datafusion::datasource::MemTable;
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Extension, LogicalPlan, ScalarUDF};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};

use crate::input::block_on;
use crate::release::{decode_release_udf, encode_release_udf};
use crate::sql::{decode_generalize_udf, encode_generalize_udf};

/// Marks a table shipped by value (Arrow IPC stream follows).
const TABLE_TAG: &[u8] = b"pbg-table/1\n";

/// The logical codec of pbg's client, scheduler and executors.
#[derive(Debug)]
pub struct PbgLogicalCodec {
    inner: Arc<dyn LogicalExtensionCodec>,
}

impl Default for PbgLogicalCodec {
    fn default() -> Self {
        PbgLogicalCodec {
            inner: Arc::new(BallistaLogicalExtensionCodec::default()),
        }
    }
}

/// The physical codec of pbg's scheduler and executors.
#[derive(Debug)]
pub struct PbgPhysicalCodec {
    inner: Arc<dyn PhysicalExtensionCodec>,
}

impl Default for PbgPhysicalCodec {
    fn default() -> Self {
        PbgPhysicalCodec {
            inner: Arc::new(BallistaPhysicalExtensionCodec::default()),
        }
    }
}

/// pbg's functions that carry data travel with it; the others by name.
fn encode_udf(
    inner: impl FnOnce(&mut Vec<u8>) -> Result<()>,
    node: &ScalarUDF,
    buf: &mut Vec<u8>,
) -> Result<()> {
    match encode_release_udf(node).or_else(|| encode_generalize_udf(node)) {
        Some(bytes) => {
            buf.extend_from_slice(&bytes);
            Ok(())
        }
        None => inner(buf),
    }
}

fn decode_udf(
    inner: impl FnOnce() -> Result<Arc<ScalarUDF>>,
    name: &str,
    buf: &[u8],
) -> Result<Arc<ScalarUDF>> {
    if let Some(udf) = decode_release_udf(name, buf)? {
        return Ok(Arc::new(udf));
    }
    if let Some(udf) = decode_generalize_udf(buf)? {
        return Ok(Arc::new(udf));
    }
    inner()
}

impl LogicalExtensionCodec for PbgLogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match buf.strip_prefix(TABLE_TAG) {
            Some(ipc) => decode_table(ipc, schema),
            None => self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let any: &dyn std::any::Any = node.as_ref();
        if any.is::<MemTable>() || any.is::<StreamingTable>() {
            buf.extend_from_slice(TABLE_TAG);
            return encode_table(node, buf);
        }
        self.inner
            .try_encode_table_provider(table_ref, node, buf)
            .map_err(|e| {
                DataFusionError::NotImplemented(format!(
                    "table `{table_ref}` cannot run on the cluster: its provider has no codec (register it as a Parquet or CSV table, or a view): {e}"
                ))
            })
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        self.inner
            .try_encode_file_format(buf, csv_quote_style_for_the_wire(node))
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        decode_udf(|| self.inner.try_decode_udf(name, buf), name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        encode_udf(|b| self.inner.try_encode_udf(node, b), node, buf)
    }
}

impl PhysicalExtensionCodec for PbgPhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner.try_decode(buf, inputs, ctx, proto_converter)
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        self.inner.try_encode(node, buf, proto_converter)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        decode_udf(|| self.inner.try_decode_udf(name, buf), name, buf)
    }

    fn try_encode_udf(&self, node: &ScalarUDF, buf: &mut Vec<u8>) -> Result<()> {
        encode_udf(|b| self.inner.try_encode_udf(node, b), node, buf)
    }
}

/// A CSV format as DataFusion 55's encoder must be given it to arrive as it is. The encoder
/// writes a quote style as its position in `CsvQuoteStyle` (`Always` 0, `Necessary` 1) while the
/// wire's numbers are `Necessary` 0 and `Always` 1, so the default `Necessary` arrived as
/// `Always` and the executors quoted every field of a CSV target: the two are swapped before
/// encoding (a format without options is given the defaults, which the decoder makes of it
/// anyway).
fn csv_quote_style_for_the_wire(node: Arc<dyn FileFormatFactory>) -> Arc<dyn FileFormatFactory> {
    use datafusion::common::parsers::CsvQuoteStyle;
    use datafusion::datasource::file_format::csv::CsvFormatFactory;

    let Some(csv) = node.downcast_ref::<CsvFormatFactory>() else {
        return node;
    };
    let mut options = csv.options.clone().unwrap_or_default();
    options.quote_style = match options.quote_style {
        CsvQuoteStyle::Always => CsvQuoteStyle::Necessary,
        CsvQuoteStyle::Necessary => CsvQuoteStyle::Always,
        other => other,
    };
    Arc::new(CsvFormatFactory::new_with_options(options))
}

/// Runs a (small) table on the client and appends its rows as an Arrow IPC stream.
fn encode_table(table: Arc<dyn TableProvider>, buf: &mut Vec<u8>) -> Result<()> {
    let state = datafusion::execution::SessionStateBuilder::new().build();
    let batches: Vec<RecordBatch> = block_on(async move {
        let plan = table.scan(&state, None, &[], None).await?;
        datafusion::physical_plan::collect(plan, state.task_ctx()).await
    })
    .map_err(|e| DataFusionError::External(Box::new(e)))??;
    let schema = match batches.first() {
        Some(b) => b.schema(),
        None => Arc::new(arrow::datatypes::Schema::empty()),
    };
    let mut writer = arrow::ipc::writer::StreamWriter::try_new(&mut *buf, &schema)?;
    for b in &batches {
        writer.write(b)?;
    }
    writer.finish()?;
    Ok(())
}

fn decode_table(ipc: &[u8], schema: SchemaRef) -> Result<Arc<dyn TableProvider>> {
    let reader = arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(ipc), None)?;
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    let batches = batches
        .into_iter()
        .map(|b| {
            // Same columns, the declared schema (field metadata and nullability as planned).
            RecordBatch::try_new(schema.clone(), b.columns().to_vec())
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(Arc::new(MemTable::try_new(schema, vec![batches])?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::common::config::CsvOptions;
    use datafusion::common::parsers::CsvQuoteStyle;
    use datafusion::datasource::file_format::csv::CsvFormatFactory;

    /// Every quote style of a CSV format (and a format without options) arrives as it left.
    #[test]
    fn a_csv_format_crosses_the_wire_with_its_quote_style() {
        let codec = PbgLogicalCodec::default();
        let ctx = TaskContext::default();
        let styles = [
            CsvQuoteStyle::Always,
            CsvQuoteStyle::Necessary,
            CsvQuoteStyle::NonNumeric,
            CsvQuoteStyle::Never,
        ];
        let mut sent: Vec<(Option<CsvOptions>, CsvQuoteStyle)> = styles
            .iter()
            .map(|&s| {
                let mut o = CsvOptions::default().with_delimiter(b';');
                o.quote_style = s;
                (Some(o), s)
            })
            .collect();
        sent.push((None, CsvQuoteStyle::Necessary));
        for (options, style) in sent {
            let factory = Arc::new(CsvFormatFactory {
                options: options.clone(),
            });
            let mut buf = Vec::new();
            codec.try_encode_file_format(&mut buf, factory).unwrap();
            let back = codec.try_decode_file_format(&buf, &ctx).unwrap();
            let back = back.downcast_ref::<CsvFormatFactory>().unwrap();
            let got = back.options.clone().unwrap();
            assert_eq!(got.quote_style, style, "sent {options:?}");
            let delimiter = options.map_or(b',', |o| o.delimiter);
            assert_eq!(got.delimiter, delimiter);
        }
    }
}
