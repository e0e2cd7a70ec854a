//! The release of a node: QIs replaced by their generalized labels, identifiers dropped,
//! suppressed rows removed, other columns kept byte for byte. Pass 1 (statistics) and pass 2 (the
//! release plan) run in DataFusion; a CSV release of a CSV input applies the same kernel and
//! filter to text batches instead (module `text`: from the rows pass 1 kept, `kept`, or read again in
//! ordered ranges, `stream`), in input order. The written output is re-read and verified by the
//! one verifier before a temporary file is renamed into place.

mod check;
mod fingerprint;
mod job;
mod kept;
mod kept_table;
mod ordered;
mod plan;
mod stream;
mod text;
mod udf;

pub use check::{ReleaseCheck, check_release_alone, confirm, verify_release, verify_release_under};
pub use fingerprint::{Fingerprint, FingerprintExec, FingerprintFunc, fingerprint};
pub use job::{Job, suppression_rule};
pub use kept::{KEEP_LIMIT, KeptBatch, KeptRows, write_kept_csv};
pub use kept_table::write_kept_release;
pub use plan::{
    look_alike_columns, parquet_caveats, release_frame, release_notes, release_plan, same_columns,
    suppressed_classes,
};
pub use stream::write_streamed_csv;
pub use text::{CsvRelease, ReleasedText, TextRelease};
pub use udf::{
    BoundGeneralize, KeepClasses, SuppressedClasses, decode_release_udf, encode_release_udf,
};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use datafusion::common::config::CsvOptions;
use datafusion::prelude::{DataFrame, SessionContext};
use serde::Serialize;

use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::indices::NodeIndices;
use crate::input::{self, block_on};
use crate::io::{AtomicFile, OutputFormat};
use crate::lattice::Node;
use crate::profile::Profile;

/// Seconds spent in each phase of an anonymization.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Timings {
    /// Pass 1: reading the input into class statistics.
    pub statistics_s: f64,
    /// Choosing the node.
    pub choice_s: f64,
    /// Pass 2: writing the release.
    pub release_s: f64,
    /// Re-reading and checking the release.
    pub verify_s: f64,
    /// All of it.
    pub total_s: f64,
}

/// What `anonymize` reports.
#[derive(Debug, Clone, Serialize)]
pub struct ReleaseSummary {
    /// The file written.
    pub output: PathBuf,
    /// The node applied.
    pub node: Node,
    /// Input rows.
    pub rows_in: u64,
    /// Rows in the release.
    pub rows_released: u64,
    /// Rows suppressed.
    pub suppressed: u64,
    /// Times the input was read: 1 when the release was written from the rows pass 1 kept (the
    /// release of a text input that fits [`KEEP_LIMIT`], on one machine), else 2.
    pub input_reads: u32,
    /// The suppression threshold j: rows of classes of size ≤ j were suppressed.
    pub threshold: u64,
    /// The node's indices, from the statistics.
    pub indices: NodeIndices,
    /// The release passed the independent check.
    pub verified: bool,
    /// The indices recomputed from the written file.
    pub check: ReleaseCheck,
    /// Seconds per phase.
    pub timings: Timings,
}

/// Writes a release plan to one file in `format` with DataFusion's writer (the
/// [`crate::io::AtomicFile`] it belongs to syncs it); returns the rows written and the fingerprint of every row that went to the writer.
pub async fn write_frame(
    df: DataFrame,
    path: &Path,
    format: OutputFormat,
) -> Result<(u64, Fingerprint)> {
    let fail = |e: datafusion::error::DataFusionError| PbgError::Format {
        path: path.to_path_buf(),
        message: format!("while writing: {e}"),
    };
    let (state, plan) = df.into_parts();
    let state = input::in_order_state(state);
    let copy = copy_plan(plan, path, format).map_err(fail)?;
    // The release goes to a temporary file of its own: the write node itself is needed here.
    let sink = crate::io::GuardedWriteExec::unguarded(
        state.create_physical_plan(&copy).await.map_err(fail)?,
    );
    // The sink's input is the release; fingerprint it on its way to the writer.
    let acc = Arc::new(std::sync::Mutex::new(Fingerprint::default()));
    let child = sink
        .children()
        .first()
        .map(|c| (*c).clone())
        .ok_or_else(|| PbgError::Format {
            path: path.to_path_buf(),
            message: "the write plan has no input".into(),
        })?;
    // DataFusion merges the partitions a single file is written from as they arrive: concatenate
    // them in partition order instead, so that the release is the same file on every run; and,
    // for Parquet (whose pages depend on the batches its writer is given), in batches of one
    // size, so that it is the same file on any number of cores.
    let ahead = state.config().target_partitions();
    let even = format == OutputFormat::Parquet;
    let child: Arc<dyn datafusion::physical_plan::ExecutionPlan> =
        // A merge by the order a Parquet input's sorting columns declare (which DataFusion
        // trusts) takes ties from the partitions in turn: its partitions are byte ranges in
        // order too, so concatenating them is the input's order (true or not).
        if matches!(
            child.name(),
            "CoalescePartitionsExec" | "SortPreservingMergeExec"
        ) && child.children().len() == 1
        {
            Arc::new(ordered::OrderedConcatExec::new(
                child.children()[0].clone(),
                ahead,
                even,
            ))
        } else if even && child.properties().partitioning.partition_count() == 1 {
            Arc::new(ordered::OrderedConcatExec::new(child, ahead, even))
        } else {
            child
        };
    let wrapped = FingerprintExec::wrap(child, &acc).map_err(fail)?;
    #[allow(deprecated)]
    let sink = sink.with_new_children(vec![wrapped]).map_err(fail)?;
    let batches = datafusion::physical_plan::collect(sink, state.task_ctx())
        .await
        .map_err(fail)?;
    let rows = written_rows(&batches);
    let fingerprint = acc.lock().map(|f| f.clone()).unwrap_or_default();
    Ok((rows, fingerprint))
}

/// The whole batch job: pass 1 into statistics, `choose` a node on them, pass 2 (the release plan,
/// over the rows pass 1 kept of a text input when they fit; a CSV release of a text input is
/// written as text from the kept rows or from ordered ranges)
/// into a temporary file beside `output`, the independent check of that file, then the rename. A
/// failure at any step (or a kill) leaves `output` as it was; an output that is (or is inside, or
/// matches) the input is refused before anything is read.
pub fn anonymize(
    profile: &Profile,
    choose: &dyn Fn(&Evaluator) -> Result<Node>,
    output: &Path,
) -> Result<ReleaseSummary> {
    anonymize_with(profile, choose, output, &|_| {})
}

/// [`anonymize`], telling `stage` the name of each stage as it starts (for progress display).
pub fn anonymize_with(
    profile: &Profile,
    choose: &dyn Fn(&Evaluator) -> Result<Node>,
    output: &Path,
    stage: &dyn Fn(&'static str),
) -> Result<ReleaseSummary> {
    anonymize_in(&input::new_context(), profile, choose, output, stage)
}

/// [`anonymize_with`] in session `ctx`. On a cluster session (see [`input::Distributed`]) both
/// row passes and the verifier's reads run on the cluster: the statistics as a distributed
/// `GROUP BY`, the release as the plan written by the executors (to a path they and this process
/// share), checked by the same verifier before the rename.
pub fn anonymize_in(
    ctx: &SessionContext,
    profile: &Profile,
    choose: &dyn Fn(&Evaluator) -> Result<Node>,
    output: &Path,
    stage: &dyn Fn(&'static str),
) -> Result<ReleaseSummary> {
    anonymize_together(ctx, profile, choose, output, &|_| Ok(Vec::new()), stage)
}

/// [`anonymize_in`] with files that land with the release (a report page): `with_release` gets
/// the summary of the verified release before it is renamed and returns the files it wrote,
/// which are synced with it and renamed right after it, so that a kill between finds the
/// previous files or the new ones but for the instant between two renames.
pub fn anonymize_together(
    ctx: &SessionContext,
    profile: &Profile,
    choose: &dyn Fn(&Evaluator) -> Result<Node>,
    output: &Path,
    with_release: &dyn Fn(&ReleaseSummary) -> Result<Vec<AtomicFile>>,
    stage: &dyn Fn(&'static str),
) -> Result<ReleaseSummary> {
    let start = Instant::now();
    stage("pass 1: class statistics");
    profile.protect(output)?;
    let format = OutputFormat::of(output)?;
    let mut file = AtomicFile::new(output)?;
    // The input's files before the first read: a file changed during the run is named as the
    // cause of any failure, and refused at the end.
    let stamps = input::InputStamps::take(&profile.input);
    let blame = |e: PbgError| match &stamps {
        Some(s) => s.blame(e),
        None => e,
    };
    let steady = || stamps.as_ref().map_or(Ok(()), input::InputStamps::check);
    let distributed = ctx
        .state()
        .config()
        .get_extension::<input::Distributed>()
        .is_some();
    // The release of a text input is written from the rows pass 1 keeps (when they fit).
    let keep = KeptRows::new(
        if distributed { 0 } else { KEEP_LIMIT },
        Some(&ctx.runtime_env().memory_pool),
    );
    let (dataset, kept) = block_on(crate::statistics::statistics_with(ctx, profile, keep))
        .and_then(|read| read)
        .map_err(blame)?;
    if format == OutputFormat::Csv {
        for (i, f) in dataset.schema.fields().iter().enumerate() {
            let binary = matches!(
                f.data_type(),
                arrow::datatypes::DataType::Binary
                    | arrow::datatypes::DataType::LargeBinary
                    | arrow::datatypes::DataType::BinaryView
                    | arrow::datatypes::DataType::FixedSizeBinary(_)
            );
            if (f.data_type().is_nested() || binary) && !dataset.identifiers.contains(&i) {
                return Err(PbgError::argument(
                    "output",
                    format!(
                        "column `{}` is of type {}, which a CSV release cannot hold: write .parquet, or drop it as an identifier",
                        f.name(),
                        f.data_type()
                    ),
                ));
            }
        }
    }
    if format != OutputFormat::Csv {
        for (i, f) in dataset.schema.fields().iter().enumerate() {
            let qi = dataset.qis.iter().any(|q| &q.name == f.name());
            if !qi && !dataset.identifiers.contains(&i) && parquet_cannot_hold(f.data_type()) {
                return Err(PbgError::argument(
                    "output",
                    format!(
                        "column `{}` is of type {}, which the Parquet writer cannot hold: cast it (a dictionary of views to plain text, say), write .csv, or drop it as an identifier",
                        f.name(),
                        f.data_type()
                    ),
                ));
            }
        }
    }
    let ev = Evaluator::new(Arc::new(dataset))?;
    let t1 = Instant::now();
    stage("choosing the node");
    let node = choose(&ev)?;
    let indices = ev.evaluate(&node)?;
    let t2 = Instant::now();
    stage("pass 2: writing the release");
    // The release of a text input comes from the kept rows (CSV as text, Parquet through the
    // release plan over them); else a CSV release reads the input again in ordered ranges, and
    // anything else goes through the release plan over the input.
    let text = ev
        .dataset()
        .schema
        .fields()
        .iter()
        .all(|f| text::is_text(f.data_type()));
    let temp = file.temp_path();
    let written = || -> Result<_> {
        Ok(match (kept.into_batches(), format) {
            (Some(batches), OutputFormat::Csv) => {
                let (rows, fp) = write_kept_csv(&ev, &node, &batches, temp)?;
                (1, (rows, Some(fp)))
            }
            (Some(batches), _) => {
                let (rows, fp) =
                    block_on(write_kept_release(ctx, &ev, &node, batches, temp, format))??;
                (1, (rows, Some(fp)))
            }
            (None, OutputFormat::Csv) if text && !distributed => {
                let (rows, fp) = block_on(write_streamed_csv(ctx, &ev, &node, temp))??;
                (2, (rows, Some(fp)))
            }
            (None, _) => (2, block_on(write_release(ctx, &ev, &node, temp, format))??),
        })
    };
    let (input_reads, (rows_out, written)) = written().map_err(blame).map_err(|e| file.named(e))?;
    let t3 = Instant::now();
    stage("verifying the release");
    // The written file goes to disk while it is read back and checked.
    file.sync_in_background();
    // Without the fingerprint of what the writer was given (the executors wrote it), the verifier
    // fingerprints the input's release afresh.
    let (check, _) = block_on(verify_release(
        ctx,
        &ev,
        file.temp_path(),
        Some(&node),
        written.as_ref(),
    ))
    .and_then(|checked| checked)
    .map_err(blame)
    .and_then(|checked| steady().map(|()| checked))
    .map_err(|e| file.named(e))?;
    let t4 = Instant::now();
    let secs = |a: Instant, b: Instant| (b - a).as_secs_f64();
    let rows_in = ev.dataset().num_tuples();
    let summary = ReleaseSummary {
        output: output.to_path_buf(),
        node,
        rows_in,
        rows_released: rows_out,
        suppressed: indices.suppressed,
        input_reads,
        threshold: indices.threshold,
        indices,
        verified: true,
        check,
        timings: Timings {
            statistics_s: secs(start, t1),
            choice_s: secs(t1, t2),
            release_s: secs(t2, t3),
            verify_s: secs(t3, t4),
            total_s: secs(start, t4),
        },
    };
    let together = with_release(&summary)?;
    AtomicFile::commit_together(file, together)?;
    Ok(summary)
}

/// Whether arrow's Parquet writer panics on a column of type `t` (it does not refuse it): a union
/// anywhere in it, or a dictionary of text or binary views (polars' categorical columns).
fn parquet_cannot_hold(t: &arrow::datatypes::DataType) -> bool {
    use arrow::datatypes::DataType;
    match t {
        DataType::Union(..) => true,
        DataType::Dictionary(_, v) => {
            matches!(v.as_ref(), DataType::Utf8View | DataType::BinaryView)
                || parquet_cannot_hold(v)
        }
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => parquet_cannot_hold(f.data_type()),
        DataType::RunEndEncoded(_, v) => parquet_cannot_hold(v.data_type()),
        DataType::Struct(fields) => fields.iter().any(|f| parquet_cannot_hold(f.data_type())),
        _ => false,
    }
}

/// Pass 2: opens the input afresh in `ctx` and writes the release of `node` to `path`; returns
/// the rows written and, when the plan ran in this process, the fingerprint of what the writer
/// was given.
pub async fn write_release(
    ctx: &SessionContext,
    ev: &Evaluator,
    node: &[u8],
    path: &Path,
    format: OutputFormat,
) -> Result<(u64, Option<Fingerprint>)> {
    let source = ev.dataset().input();
    let df = input::open(ctx, source, ev.dataset().profile.delimiter).await?;
    same_columns(ev, &df)?;
    let frame = release_frame(df, ev, node)?;
    if input::is_distributed(&frame) {
        return Ok((write_remote(frame, path, format).await?, None));
    }
    let (rows, fp) = write_frame(frame, path, format).await?;
    Ok((rows, Some(fp)))
}

/// The `COPY` plan writing `df` to the single file `path` in `format`.
fn copy_plan(
    plan: datafusion::logical_expr::LogicalPlan,
    path: &Path,
    format: OutputFormat,
) -> datafusion::common::Result<datafusion::logical_expr::LogicalPlan> {
    use datafusion::datasource::file_format::csv::CsvFormatFactory;
    use datafusion::datasource::file_format::format_as_file_type;
    use datafusion::datasource::file_format::parquet::ParquetFormatFactory;
    use datafusion::logical_expr::LogicalPlanBuilder;

    let file_type = match format {
        OutputFormat::Parquet => {
            // No min/max statistics: computing them per value costs ~20 % of the release pass
            // (1.1 s of 5.6 s on 30 M rows), and the labels of a release are few and known.
            let mut options = datafusion::common::config::TableParquetOptions::default();
            options.global.statistics_enabled = Some("none".into());
            format_as_file_type(Arc::new(ParquetFormatFactory::new_with_options(options)))
        }
        OutputFormat::Csv => format_as_file_type(Arc::new(CsvFormatFactory::new_with_options(
            CsvOptions::default().with_has_header(true),
        ))),
    };
    let options = [("single_file_output".to_string(), "true".to_string())]
        .into_iter()
        .collect();
    // DataFusion reads a plain path holding glob characters as a glob and writes a file of
    // another name (`o[1].parquet` failed at the rename); a file URL is taken as it is.
    let text = path.to_string_lossy().into_owned();
    let target = match crate::input::has_glob(&text) {
        true => std::path::absolute(path)
            .ok()
            .and_then(|p| url::Url::from_file_path(p).ok())
            .map_or(text, |u| u.to_string()),
        false => text,
    };
    LogicalPlanBuilder::copy_to(plan, target, file_type, options, vec![])?.build()
}

/// Writes a release plan to `path` through a cluster session: the executors run the plan and
/// write the file (so `path` must be on storage they share with this process, and absolute).
async fn write_remote(df: DataFrame, path: &Path, format: OutputFormat) -> Result<u64> {
    let fail = |e: datafusion::error::DataFusionError| PbgError::Format {
        path: path.to_path_buf(),
        message: format!("while writing on the cluster: {e}"),
    };
    let absolute = std::path::absolute(path).map_err(|e| PbgError::io(path, e))?;
    let (state, plan) = df.into_parts();
    let copy = copy_plan(plan, &absolute, format).map_err(fail)?;
    let batches = DataFrame::new(state, copy).collect().await.map_err(fail)?;
    let rows = written_rows(&batches);
    std::fs::File::open(&absolute).map_err(|e| {
        PbgError::io(
            path,
            std::io::Error::new(
                e.kind(),
                format!("{e}: the executors wrote the release where this process cannot read it (input and output paths must be on storage shared by the client and every executor)"),
            ),
        )
    })?;
    Ok(rows)
}

/// The row count a `COPY` plan reports.
fn written_rows(batches: &[arrow::record_batch::RecordBatch]) -> u64 {
    batches
        .iter()
        .filter_map(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<arrow::array::UInt64Array>()
                .map(|a| a.iter().flatten().sum::<u64>())
        })
        .sum()
}
