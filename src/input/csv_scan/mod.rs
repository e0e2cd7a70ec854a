//! pbg's CSV scan: DataFusion's CSV format with a faster record decoder for files whose records
//! are lines (no quoted value spans one: most ETL extracts), everything else DataFusion's.
//!
//! [`TextCsvFormat`] is a [`FileFormat`] that wraps DataFusion's [`CsvFormat`]: the listing, the
//! schema (the header), the byte ranges a large file is split into, the alignment of each range
//! on line breaks, the projection and the partition columns all stay DataFusion's, and so do the
//! execution and its memory pool. Only the decoding of each range's bytes into `Utf8` columns is
//! pbg's own [`decoder::TextDecoder`], which gives the arrays arrow's decoder gives for such text
//! (a proptest holds the two together) at a fraction of the cost: on adult × 100, the decode
//! was half the CPU time of a whole pick. A file holding a quoted value across lines is read by
//! [`CsvFormat`] whole (the input module picks the format after checking every file's quoting).

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{DataType, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::{Result, Statistics};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{
    CsvSource, FileOpenFuture, FileOpener, FileScanConfig, FileScanConfigBuilder, FileSource,
};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::physical_plan::{DisplayFormatType, ExecutionPlan};
use datafusion_datasource::decoder::{DecoderDeserializer, deserialize_stream};
use datafusion_datasource::projection::{ProjectionOpener, SplitProjection};
use futures::{StreamExt, TryStreamExt};
use object_store::{GetOptions, ObjectMeta, ObjectStore, ObjectStoreExt};

mod decoder;
mod reads;

pub use decoder::{Begin, TextDecoder, keyed_type};

/// DataFusion's CSV format (header, delimiter, every column as text) whose scan decodes with
/// [`TextDecoder`]; for files whose quoting is checked (every quoted value closed on its line).
#[derive(Debug)]
pub struct TextCsvFormat {
    csv: CsvFormat,
}

impl TextCsvFormat {
    /// The format of `csv` (its options: header, delimiter) with pbg's decoder.
    pub fn new(csv: CsvFormat) -> Self {
        TextCsvFormat { csv }
    }
}

#[async_trait]
impl FileFormat for TextCsvFormat {
    fn get_ext(&self) -> String {
        self.csv.get_ext()
    }

    fn get_ext_with_compression(&self, compression: &FileCompressionType) -> Result<String> {
        self.csv.get_ext_with_compression(compression)
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        self.csv.compression_type()
    }

    async fn infer_schema(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> Result<SchemaRef> {
        self.csv.infer_schema(state, store, objects).await
    }

    async fn infer_stats(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> Result<Statistics> {
        self.csv
            .infer_stats(state, store, table_schema, object)
            .await
    }

    async fn create_physical_plan(
        &self,
        state: &dyn Session,
        conf: FileScanConfig,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // As DataFusion's CSV format plans it (options the format leaves open settled from the
        // session), with the source wrapped.
        let mut options = self.csv.options().clone();
        let catalog = &state.config_options().catalog;
        options.has_header = Some(options.has_header.unwrap_or(catalog.has_header));
        options.newlines_in_values = Some(
            options
                .newlines_in_values
                .unwrap_or(catalog.newlines_in_values),
        );
        let compression: FileCompressionType = options.compression.into();
        // pbg's decoder reads plain text with csv-core's defaults into text or keyed text (what
        // pbg opens); any other setting or type (for a library user's format) is planned and
        // read as DataFusion's CSV.
        let plain = !compression.is_compressed()
            && !matches!(options.delimiter, b'\n' | b'\r' | b'"')
            && options.quote == b'"'
            && options.terminator.is_none()
            && options.escape.is_none()
            && options.comment.is_none()
            && options.null_regex.is_none()
            && options.newlines_in_values != Some(true)
            && options.truncated_rows != Some(true)
            && conf
                .file_schema()
                .fields()
                .iter()
                .all(|f| *f.data_type() == DataType::Utf8 || *f.data_type() == keyed_type());
        if !plain {
            let csv_conf = FileScanConfigBuilder::from(conf.clone())
                .with_source(Arc::new(csv_source(conf.file_source.as_ref())?.clone()))
                .build();
            return self.csv.create_physical_plan(state, csv_conf).await;
        }
        let batch_size = conf
            .file_source
            .downcast_ref::<TextCsvSource>()
            .and_then(|t| t.batch_size);
        let csv = csv_source(conf.file_source.as_ref())?
            .clone()
            .with_csv_options(options);
        let config = FileScanConfigBuilder::from(conf)
            .with_file_compression_type(compression)
            .with_source(Arc::new(TextCsvSource { csv, batch_size }))
            .build();
        Ok(DataSourceExec::from_data_source(config))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        let csv = self.csv.file_source(table_schema);
        match csv.downcast_ref::<CsvSource>() {
            Some(csv) => Arc::new(TextCsvSource::new(csv.clone())),
            None => csv,
        }
    }
}

/// The CSV source inside `source` (pbg's or DataFusion's own).
fn csv_source(source: &dyn FileSource) -> Result<&CsvSource> {
    if let Some(text) = source.downcast_ref::<TextCsvSource>() {
        return Ok(&text.csv);
    }
    source.downcast_ref::<CsvSource>().ok_or_else(|| {
        datafusion::common::DataFusionError::Internal(format!(
            "pbg's CSV scan expected a CSV source, got `{}`",
            source.file_type()
        ))
    })
}

/// DataFusion's [`CsvSource`] (options, schema, projection, metrics) opening files with
/// [`TextDecoder`].
#[derive(Clone)]
pub struct TextCsvSource {
    csv: CsvSource,
    batch_size: Option<usize>,
}

impl TextCsvSource {
    /// `csv`'s settings, decoded by pbg.
    pub fn new(csv: CsvSource) -> Self {
        TextCsvSource {
            csv,
            batch_size: None,
        }
    }
}

impl FileSource for TextCsvSource {
    fn create_file_opener(
        &self,
        object_store: Arc<dyn ObjectStore>,
        _base_config: &FileScanConfig,
        _partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        let file_schema = Arc::clone(self.csv.table_schema().file_schema());
        let projection = match self.csv.projection() {
            Some(p) => SplitProjection::new(&file_schema, p),
            None => SplitProjection::unprojected(self.csv.table_schema()),
        };
        let opener = Arc::new(TextOpener {
            schema: Arc::new(file_schema.project(&projection.file_indices)?),
            projection: projection.file_indices.clone(),
            columns: file_schema.fields().len(),
            delimiter: self.csv.delimiter(),
            has_header: self.csv.has_header(),
            batch_size: self.batch_size.unwrap_or(8192),
            // Local files in large pieces (object_store reads them 8 KiB at a time).
            store: Arc::new(reads::LargeReads::new(object_store)),
        });
        ProjectionOpener::try_new(projection, opener, &file_schema)
    }

    fn table_schema(&self) -> &TableSchema {
        self.csv.table_schema()
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        Arc::new(TextCsvSource {
            batch_size: Some(batch_size),
            ..self.clone()
        })
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> Result<Option<Arc<dyn FileSource>>> {
        let Some(pushed) = self.csv.try_pushdown_projection(projection)? else {
            return Ok(None);
        };
        let csv = csv_source(pushed.as_ref())?.clone();
        Ok(Some(Arc::new(TextCsvSource {
            csv,
            ..self.clone()
        })))
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        self.csv.projection()
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        self.csv.metrics()
    }

    fn file_type(&self) -> &str {
        "csv"
    }

    fn supports_repartitioning(&self) -> bool {
        self.csv.supports_repartitioning()
    }

    fn fmt_extra(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.csv.fmt_extra(t, f)?;
        if matches!(t, DisplayFormatType::Default | DisplayFormatType::Verbose) {
            write!(f, ", decoder=pbg")?;
        }
        Ok(())
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(
            &Arc<dyn datafusion::physical_expr::PhysicalExpr>,
        ) -> Result<datafusion::common::tree_node::TreeNodeRecursion>,
    ) -> Result<datafusion::common::tree_node::TreeNodeRecursion> {
        self.csv.apply_expressions(f)
    }
}

/// Opens one file, or one byte range of it, as a stream of batches decoded by [`TextDecoder`].
struct TextOpener {
    /// The projected file columns' schema (the decoder's output).
    schema: SchemaRef,
    projection: Vec<usize>,
    columns: usize,
    delimiter: u8,
    has_header: bool,
    batch_size: usize,
    store: Arc<dyn ObjectStore>,
}

impl FileOpener for TextOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        // The range at the file's start holds the header (and a byte-order mark); a later one
        // only when blank lines alone come before it ([`header_next`]).
        let range = file
            .range
            .as_ref()
            .map(|r| (r.start.max(0) as u64, r.end.max(0) as u64));
        // The store's paths have no leading `/` (local files are under the root).
        let path = format!("/{}", file.object_meta.location);
        let origin = match range {
            // DataFusion's range starts after the first line end at or after the byte before
            // `start` (0-based): `tail -c +start` (1-based) prints from that byte.
            Some((start, _)) if start > 0 => format!(
                "in {path}, a byte range read in parallel, whose lines are counted from its start: `tail -c +{start} {path}` prints the end of the line before its line 1, then line 1 (blank lines are not counted)"
            ),
            _ => format!("in {path}"),
        };
        let decode = {
            let (schema, projection) = (Arc::clone(&self.schema), self.projection.clone());
            let (delimiter, columns, batch_size) = (self.delimiter, self.columns, self.batch_size);
            move |begin| {
                TextDecoder::new(schema, delimiter, columns, &projection, batch_size, begin)
                    .with_origin(origin)
            }
        };
        let has_header = self.has_header;
        let store = Arc::clone(&self.store);
        let listed = file.object_meta.size;
        Ok(Box::pin(async move {
            // A range past the end of a file cut since it was listed: named as such (the store
            // says only that the range is invalid).
            let cut =
                |e: object_store::Error| match (std::fs::metadata(&path).map(|m| m.len()), range) {
                    (Ok(now), Some((start, end))) if now < listed => {
                        datafusion::common::DataFusionError::External(
                            format!("{path}: {}", reads::shorter(now, &(start..end))).into(),
                        )
                    }
                    _ => e.into(),
                };
            let location = file.object_meta.location.clone();
            let begin = match range {
                Some((start, _)) if start > 0 => {
                    if has_header
                        && header_next(&store, &location, start, listed)
                            .await
                            .map_err(cut)?
                    {
                        Begin::HeaderNext
                    } else {
                        Begin::Inside
                    }
                }
                _ => Begin::FileStart { header: has_header },
            };
            let decoder = decode(begin);
            let bytes = match range {
                // DataFusion's alignment of a range on whole lines, as its CSV scan does.
                Some((start, end)) => {
                    datafusion_datasource::boundary_stream::AlignedBoundaryStream::new(
                        Arc::clone(&store),
                        location,
                        start,
                        end,
                        file.object_meta.size,
                        b'\n',
                    )
                    .await
                    .map_err(cut)?
                    .boxed()
                }
                None => store
                    .get_opts(&location, GetOptions::default())
                    .await?
                    .into_stream(),
            };
            let bytes = bytes.map_err(datafusion::common::DataFusionError::from);
            let batches = deserialize_stream(bytes, DecoderDeserializer::new(Decoding(decoder)));
            Ok(batches.map_err(Into::into).boxed())
        }))
    }
}

/// Whether the byte range from `start` (> 0) of the file at `location` (`size` bytes) begins
/// with the file's header: when only blank lines (and a byte-order mark) come before the line
/// the range begins at, the first line end at or after byte `start - 1` (DataFusion's alignment).
/// A range cut inside the blank lines a file opens with read the header as a row: released and
/// counted, and the verifier, reading the same way, agreed. Decided at the file's first
/// non-blank byte: its first byte for any file that opens with its header. Read through the
/// scan's store, as the range is: any store the format is given, special files refused alike.
async fn header_next(
    store: &Arc<dyn ObjectStore>,
    location: &object_store::path::Path,
    start: u64,
    size: u64,
) -> object_store::Result<bool> {
    const PIECE: u64 = 64 << 10;
    let mut at = 0u64;
    while at < size {
        let piece = store
            .get_range(location, at..(at + PIECE).min(size))
            .await?;
        for (i, &b) in piece.iter().enumerate() {
            let i = at + i as u64;
            match b {
                b'\n' if i + 1 >= start => return Ok(true),
                b'\n' | b'\r' => {}
                0xEF | 0xBB | 0xBF if i < 3 && piece.starts_with(decoder::BOM) => {}
                _ => return Ok(false),
            }
        }
        at += piece.len().max(1) as u64;
    }
    Ok(false)
}

/// [`TextDecoder`] as DataFusion's streaming decoder.
#[derive(Debug)]
struct Decoding(TextDecoder);

impl datafusion_datasource::decoder::Decoder for Decoding {
    fn decode(&mut self, buf: &[u8]) -> std::result::Result<usize, arrow::error::ArrowError> {
        self.0.decode(buf)
    }

    fn flush(
        &mut self,
    ) -> std::result::Result<Option<arrow::array::RecordBatch>, arrow::error::ArrowError> {
        self.0.flush()
    }

    fn can_flush_early(&self) -> bool {
        self.0.is_full()
    }
}

impl fmt::Debug for TextCsvSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TextCsvSource")
            .field("batch_size", &self.batch_size)
            .finish_non_exhaustive()
    }
}
