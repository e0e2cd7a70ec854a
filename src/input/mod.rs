//! Inputs are DataFusion tables. A profile's input is a path — one file, a directory (hive
//! partitions included) or a glob of CSV or Parquet files — opened as a listing table, or the name
//! of a table already registered in the session. Every pass of pbg (statistics, release,
//! verification, whole-table reads) starts from the [`DataFrame`] this module opens, so all of them
//! run in DataFusion's execution (its partitions, its memory pool) and see the table as it is now.
//!
//! CSV is read as text: every column is `Utf8`, so a value reaches the engine and the release byte
//! for byte as written (`01302` stays `01302`, `12.50` stays `12.50`); hierarchies that need
//! numbers (intervals) parse the text themselves.

use std::fmt;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::Array;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::Column;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig};
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::logical_expr::Expr;
use datafusion::prelude::{DataFrame, SessionConfig, SessionContext};
use futures::StreamExt;

use crate::error::{PbgError, Result};

mod csv_scan;
mod files;
mod local_files;
mod nested_text;
mod quoting;
mod runtime;
pub mod text;
mod words;

pub use csv_scan::{Begin, TextCsvFormat, TextDecoder, keyed_type};
use files::check_files;
pub use files::{FileKind, InputStamps, kind_of, note_read, note_written_csv, was_read};
pub(crate) use files::{NOT_REGULAR, NOT_WRITABLE, status_change};
pub(crate) use files::{first_record, has_glob, is_glob};
pub use local_files::{failed_write_under, stop_writes};
use quoting::Quoting;
pub use runtime::{
    block_on, building_runtime, checked_runtime, runtime_handle, start_threads, thread_refused,
};

/// Where a profile's rows come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A file, a directory or a glob of CSV or Parquet files.
    Path(PathBuf),
    /// A table registered in the session (SQL: `CREATE EXTERNAL TABLE`, `register_parquet`, ...).
    Table(String),
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Input::Path(p) => write!(f, "{}", p.display()),
            Input::Table(t) => write!(f, "table `{t}`"),
        }
    }
}

impl Input {
    /// The input as a path for error messages (a table's name for registered tables).
    pub fn as_path(&self) -> PathBuf {
        match self {
            Input::Path(p) => p.clone(),
            Input::Table(t) => PathBuf::from(format!("table `{t}`")),
        }
    }

    /// The file path, when the input is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Input::Path(p) => Some(p),
            Input::Table(_) => None,
        }
    }

    /// A name for the input as a table (a path's file stem, `-` and `.` as `_`).
    pub fn table_name(&self) -> String {
        match self {
            Input::Table(t) => t.clone(),
            Input::Path(p) => p
                .file_stem()
                .map(|s| s.to_string_lossy().replace(['-', '.', '*'], "_"))
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "input".to_string()),
        }
    }
}

/// The error of a DataFusion call on `input`, on one line (DataFusion chains causes over lines).
pub fn df_error(input: &Input, e: impl fmt::Display) -> PbgError {
    let text = e.to_string();
    let message = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != "caused by")
        .collect::<Vec<_>>()
        .join(": ");
    PbgError::Format {
        path: input.as_path(),
        message,
    }
}

/// Refuses a schema with two columns of the same name (a raw copy of a QI could reach a release).
pub fn check_unique_columns(input: &Input, schema: &Schema) -> Result<()> {
    check_unique_names(
        &input.as_path(),
        schema.fields().iter().map(|f| f.name().as_str()),
    )
}

/// Refuses column names of `path` of which one repeats an earlier one, naming both columns. By
/// a map of the names seen: a pairwise search took minutes on a 174 000-column header.
fn check_unique_names<'a>(path: &Path, names: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (i, name) in names.into_iter().enumerate() {
        if let Some(&j) = seen.get(name) {
            return Err(PbgError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "column `{name}` appears twice (columns {} and {}): rename one, pbg refuses ambiguous column names",
                    j + 1,
                    i + 1
                ),
            });
        }
        seen.insert(name, i);
    }
    Ok(())
}

/// Opens a path as a listing table: Parquet as written, CSV with every column as text (keyed as
/// read if `keyed` and pbg's scan decodes the files, see [`open_keyed`]).
async fn open_path(
    ctx: &SessionContext,
    path: &Path,
    delimiter: u8,
    keyed: bool,
) -> Result<DataFrame> {
    let input = Input::Path(path.to_path_buf());
    let (kind, ext) = kind_of(path)?;
    let url = files::listing_url(path)?;
    let state = ctx.state();
    // A quoted value spanning lines makes DataFusion read each file whole (no byte ranges).
    let checked = check_files(&state, path, &url, kind, &ext, delimiter).await?;
    let quoting = checked.quoting;
    let csv = || {
        CsvFormat::default()
            .with_has_header(true)
            .with_delimiter(delimiter)
            .with_newlines_in_values(quoting == Quoting::LineBreaks)
            // Every column is read as text, named by pbg's header read (below): no records
            // are ever parsed to guess types.
            .with_schema_infer_max_rec(0)
    };
    // Records that are lines (no quoted value spans one) are decoded by pbg's scan, unless the
    // plan is to run on a cluster, whose executors know DataFusion's sources only.
    let pbg_scan = kind == FileKind::Csv && quoting != Quoting::LineBreaks && !distributed(&state);
    let format: Arc<dyn FileFormat> = match kind {
        // The session's Parquet reading options (pbg's own sessions read text as the file
        // declares it, not as views: a release then declares the input's types).
        FileKind::Parquet => {
            Arc::new(ParquetFormat::default().with_options(state.default_table_options().parquet))
        }
        FileKind::Csv if pbg_scan => Arc::new(TextCsvFormat::new(csv())),
        FileKind::Csv => Arc::new(csv()),
    };
    let options = ListingOptions::new(format).with_file_extension(ext);
    // A CSV table's columns are those of pbg's header read (quote-aware, arrow's rules, checked
    // to agree across files), every one text. DataFusion's schema inference is not asked: it cut
    // a quoted name holding a line break at the break (the release renamed that column), and it
    // refused a valid file whose lines end in `\r` alone and hold a `"` inside an unquoted value
    // (its line splitter took the whole file for one line with an unclosed quote). Whether the
    // header has the records' width, the decoders check on every record (a ragged record is an
    // error naming its line).
    let schema: SchemaRef = match kind {
        FileKind::Parquet => options
            .infer_schema(&state, &url)
            .await
            .map_err(|e| df_error(&input, e))?,
        FileKind::Csv => Arc::new(Schema::new(
            checked
                .header
                .iter()
                .map(|name| match keyed && pbg_scan {
                    true => Field::new(name, keyed_type(), true).with_metadata(
                        [(KEYED.to_string(), "true".to_string())]
                            .into_iter()
                            .collect(),
                    ),
                    false => Field::new(name, DataType::Utf8, true),
                })
                .collect::<Vec<_>>(),
        )),
    };
    if schema.fields().is_empty() {
        return Err(PbgError::EmptyTable {
            path: path.to_path_buf(),
        });
    }
    // On the names the table is read with (pbg's for CSV).
    check_unique_columns(&input, &schema)?;
    let partitions = options
        .infer_partitions(&state, &url)
        .await
        .map_err(|e| df_error(&input, e))?;
    files::check_partition_paths(path, &checked, &partitions)?;
    for p in &partitions {
        if schema.field_with_name(p).is_ok() {
            return Err(PbgError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "column `{p}` is both a partition directory (`{p}=...`) and a column of the files"
                ),
            });
        }
    }
    let options = options.with_table_partition_cols(
        partitions
            .into_iter()
            .map(|p| (p, DataType::Utf8))
            .collect(),
    );
    let config = ListingTableConfig::new(url)
        .with_listing_options(options)
        .with_schema(schema);
    let table = ListingTable::try_new(config).map_err(|e| df_error(&input, e))?;
    ctx.read_table(Arc::new(table))
        .map_err(|e| df_error(&input, e))
}

/// Opens `input` in `ctx` as a DataFrame over all its columns. Nothing is read but metadata (and,
/// for CSV, the header).
pub async fn open(ctx: &SessionContext, input: &Input, delimiter: u8) -> Result<DataFrame> {
    open_as(ctx, input, delimiter, false).await
}

/// The field metadata marking a column that [`open_keyed`] has pbg's scan key as it reads.
const KEYED: &str = "pbg.keyed_text";

/// [`open`] for a pass that takes every value by its text alone (statistics, verification): the
/// columns of unquoted CSV files come keyed by pbg's decoder as it reads them ([`keyed_type`],
/// what [`text::text_column`] makes of any text column), which saves copying each value and
/// hashing it again. The values are the same texts; [`declared_schema`] gives the table's schema
/// as [`open`] has it.
pub async fn open_keyed(ctx: &SessionContext, input: &Input, delimiter: u8) -> Result<DataFrame> {
    open_as(ctx, input, delimiter, true).await
}

/// `schema` with the columns that [`open_keyed`] keys shown as the text they are (`Utf8`): those
/// of [`keyed_type`] carrying its mark (a Parquet file's field may carry any metadata, so the
/// mark alone must not make another type text).
pub fn declared_schema(schema: &Schema) -> Schema {
    Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(
                |f| match f.metadata().contains_key(KEYED) && *f.data_type() == keyed_type() {
                    true => Arc::new(Field::new(f.name(), DataType::Utf8, f.is_nullable())),
                    false => Arc::clone(f),
                },
            )
            .collect::<Vec<_>>(),
        schema.metadata().clone(),
    )
}

/// [`open`], or [`open_keyed`] if `keyed`.
async fn open_as(
    ctx: &SessionContext,
    input: &Input,
    delimiter: u8,
    keyed: bool,
) -> Result<DataFrame> {
    let df = match input {
        Input::Path(p) => open_path(ctx, p, delimiter, keyed).await?,
        Input::Table(t) => {
            // A name as registered (dots and all), else as SQL reads it (`schema.table`).
            let bare = ctx
                .table(datafusion::common::TableReference::bare(t.as_str()))
                .await;
            match bare {
                Err(_) if t.contains('.') => {
                    ctx.table(datafusion::common::TableReference::from(t.as_str()))
                        .await
                }
                other => other,
            }
            .map_err(|e| {
                let mut known: Vec<String> = ctx
                    .catalog_names()
                    .iter()
                    .filter_map(|c| ctx.catalog(c))
                    .flat_map(|c| {
                        c.schema_names()
                            .into_iter()
                            .filter_map(move |s| c.schema(&s))
                            .flat_map(|s| s.table_names())
                    })
                    .collect();
                known.sort();
                PbgError::Format {
                    path: input.as_path(),
                    message: format!("{e} (tables in the session: {})", known.join(", ")),
                }
            })?
        }
    };
    check_unique_columns(input, df.schema().as_arrow())?;
    Ok(df)
}

/// An unqualified column reference (names with `-`, `.` or spaces are taken as written).
pub fn column(name: &str) -> Expr {
    Expr::Column(Column::new_unqualified(name))
}

/// The index of column `name` in `schema`, or an error naming the input and its columns.
pub fn column_index(input: &Input, schema: &Schema, name: &str) -> Result<usize> {
    schema.index_of(name).map_err(|_| {
        PbgError::unknown_column(
            input.as_path(),
            name.to_string(),
            name,
            schema.fields().iter().map(|f| f.name().as_str()),
        )
    })
}

/// The partition streams of `df` for a consumer whose result does not depend on row order
/// (counts, fingerprints): the scan's batches dealt round-robin over the session's target
/// partitions, as DataFusion's own plans do below an aggregate, so that the consumer's work runs
/// on every core even when the scan's partitions are uneven (a Parquet file of one row group is
/// read by one of them, whatever byte ranges the others were given).
pub async fn unordered_streams(
    df: DataFrame,
) -> datafusion::common::Result<Vec<datafusion::physical_plan::SendableRecordBatchStream>> {
    use datafusion::physical_plan::{Partitioning, repartition::RepartitionExec};
    let task_ctx = Arc::new(df.task_ctx());
    let target = task_ctx.session_config().target_partitions().max(1);
    let plan = df.create_physical_plan().await?;
    let plan = Arc::new(RepartitionExec::try_new(
        plan,
        Partitioning::RoundRobinBatch(target),
    )?);
    datafusion::physical_plan::execute_stream_partitioned(plan, task_ctx)
}

/// The session of `ctx` (its tables, pool and settings) scanning with one partition, so that rows
/// come in file order (files by path, then rows).
pub fn ordered_context(ctx: &SessionContext) -> SessionContext {
    let config = ctx
        .state()
        .config()
        .clone()
        .with_target_partitions(1)
        .with_repartition_file_scans(false);
    derived_context(ctx, config)
}

/// A session sharing `ctx`'s tables, functions and pool, with `config` (made from `ctx`'s, its
/// extensions kept: a cluster session's mark among them, without which a derived session read
/// CSV through pbg's scan, which a cluster's plans cannot carry). The catalogs are shared,
/// so the new session must not create the default catalog again: that replaced the one holding
/// the session's tables (in the caller's session too), and a registered table vanished.
fn derived_context(ctx: &SessionContext, config: SessionConfig) -> SessionContext {
    SessionContext::new_with_state(derived_state(ctx.state(), config))
}

/// [`derived_context`]'s session state.
fn derived_state(state: SessionState, mut config: SessionConfig) -> SessionState {
    let catalog = &mut config.options_mut().catalog;
    if state
        .catalog_list()
        .catalog(&catalog.default_catalog)
        .is_some()
    {
        catalog.create_default_catalog_and_schema = false;
    }
    SessionStateBuilder::new_from_existing(state)
        .with_config(config)
        .build()
}

/// `state` planning with its partitions in input order: taken in order, the partitions of a plan
/// over a scan are then the input in order. DataFusion's optimizer otherwise deals the scan's
/// batches round-robin over the partitions of a plan that computes (a Parquet file too small to
/// split, read in one range, had its release come out of order, differently on each core count).
pub fn in_order_state(state: SessionState) -> SessionState {
    let mut config = state.config().clone();
    let options = config.options_mut();
    options.optimizer.enable_round_robin_repartition = false;
    options.execution.enable_file_stream_work_stealing = false;
    derived_state(state, config)
}

/// The session of `ctx` scanning in up to `partitions` file ranges (split by bytes, files in
/// order): taken in order, the partitions are the input in order.
pub fn ranged_context(ctx: &SessionContext, partitions: usize) -> SessionContext {
    let mut config = ctx
        .state()
        .config()
        .clone()
        .with_target_partitions(partitions.max(1))
        .with_repartition_file_scans(true);
    let options = config.options_mut();
    options.execution.enable_file_stream_work_stealing = false;
    options.optimizer.enable_round_robin_repartition = false;
    derived_context(ctx, config)
}

/// Bytes of input per byte range at least, for [`balanced_context`].
const BALANCED_RANGE_BYTES: u64 = 64 << 20;

/// The session of `ctx` reading a large path input in more byte ranges than it has target
/// partitions (a whole number per partition, up to 4, of about 64 MiB each; taken in order,
/// still the input in order). pbg's decoder keys the values in the scan itself, so one range per
/// core left a core idle while the other finished its range (1.5 s of a 5 s pass over 30 M
/// rows); and each range runs to its end on one core, so with one range more than a multiple of
/// the cores the last ran alone (3 ranges on 2 cores took as long as 4). Other inputs, and
/// sessions running on a cluster, keep `ctx`.
pub fn balanced_context(ctx: &SessionContext, input: &Input) -> SessionContext {
    let state = ctx.state();
    let target = state.config().target_partitions().max(1);
    let ranges = size_of(input).map_or(0, |bytes| (bytes / BALANCED_RANGE_BYTES) as usize);
    if distributed(&state) || ranges <= target {
        return ctx.clone();
    }
    ranged_context(ctx, ranges.div_ceil(target).min(4) * target)
}

/// The bytes of a path input (a file, or every file under a directory); `None` for globs and
/// registered tables.
pub fn size_of(input: &Input) -> Option<u64> {
    let path = input.path()?;
    if files::is_glob(path) {
        return None;
    }
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_dir() {
        return Some(meta.len());
    }
    let mut all = Vec::new();
    files::files_under(path, &mut all).ok()?;
    Some(
        all.iter()
            .filter_map(|f| std::fs::metadata(f).ok())
            .map(|m| m.len())
            .sum(),
    )
}

/// Marks a session whose plans run on a cluster (the cluster face sets it): pass 1 then runs as a
/// `GROUP BY` plan, so that the aggregation distributes and only the combinations come back.
#[derive(Debug, Default)]
pub struct Distributed {
    /// The scheduler's address, for messages.
    pub scheduler: String,
}

/// Whether `df` runs on a cluster (its session carries [`Distributed`]).
pub fn is_distributed(df: &DataFrame) -> bool {
    df.task_ctx()
        .session_config()
        .get_extension::<Distributed>()
        .is_some()
}

/// Whether plans of `state` run on a cluster.
fn distributed(state: &SessionState) -> bool {
    state.config().get_extension::<Distributed>().is_some()
}

/// A session for pbg's own commands: Parquet strings read as written (not as view types),
/// files in subdirectories of an input directory read too, and each partition reading exactly
/// its planned file ranges (no work stealing between partitions), so that the partitions, taken
/// in order, are the input in order whatever the timing — a release written from them is the
/// same file on every run.
pub fn new_context() -> SessionContext {
    context_with(session_config())
}

/// A session of `config` on pbg's runtime ([`runtime_env`]).
pub fn context_with(config: SessionConfig) -> SessionContext {
    SessionContext::new_with_state(state_builder(config).build())
}

/// A session state of `config` with DataFusion's default features, on pbg's runtime.
pub fn state_builder(config: SessionConfig) -> SessionStateBuilder {
    let builder = SessionStateBuilder::new()
        .with_default_features()
        .with_config(config);
    match runtime_env(None) {
        Ok(runtime) => builder.with_runtime_env(runtime),
        // Building a runtime of default parts does not fail; DataFusion's own is the fallback.
        Err(_) => builder,
    }
}

/// pbg's runtime, for every session it makes (local ones, a cluster's client, scheduler and
/// executors): DataFusion's, spilling under `temp_dir` when given, without its list-files cache.
/// That cache (on by default, without expiry) kept a directory's first listing for the life of a
/// session: a file added later was never read, a removed one failed the scan by its name, and
/// pbg's listing checks took the stale listing for files DataFusion skips. Its local files are
/// read through a store that refuses named pipes and devices (see `local_files`) rather than
/// opening them, which waits for a writer (`CREATE EXTERNAL TABLE` hung).
pub fn runtime_env(
    temp_dir: Option<&Path>,
) -> datafusion::common::Result<Arc<datafusion::execution::runtime_env::RuntimeEnv>> {
    use datafusion::execution::cache::cache_manager::CacheManagerConfig;
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    let mut builder = RuntimeEnvBuilder::new()
        .with_cache_manager(CacheManagerConfig::default().with_list_files_cache_limit(0));
    if let Some(dir) = temp_dir {
        builder = builder.with_temp_file_path(dir);
    }
    let runtime = builder.build_arc()?;
    let url = url::Url::parse("file://")
        .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
    runtime.register_object_store(&url, Arc::new(local_files::RegularFiles::default()));
    Ok(runtime)
}

/// The configuration of [`new_context`].
pub fn session_config() -> SessionConfig {
    let mut config = SessionConfig::new();
    let options = config.options_mut();
    options.execution.parquet.schema_force_view_types = false;
    options.execution.listing_table_ignore_subdirectory = false;
    options.execution.enable_file_stream_work_stealing = false;
    // DataFusion's own CSV scan (tables created in SQL: `CREATE EXTERNAL TABLE .. STORED AS
    // CSV`) reads a file split in byte ranges only when no value may hold a line break, and
    // starts each range after its first line end: a quoted value holding one split its record,
    // and a file opening with blank lines could have its header read as a row. Such tables are
    // read record by record (a table or a `SET` may still ask for ranges); pbg's own inputs
    // settle this per file after their quoting check.
    options.catalog.newlines_in_values = true;
    config
}

/// The 1-based row (in scan order: files by path, then rows) of the first value of `column` whose
/// text is `value` (`None`: the first null). Used to name the row in error messages, after the
/// fact: the parallel passes do not number rows.
pub async fn locate(
    ctx: &SessionContext,
    input: &Input,
    delimiter: u8,
    column_name: &str,
    value: Option<&str>,
) -> Option<usize> {
    let one = ordered_context(ctx);
    let df = open(&one, input, delimiter).await.ok()?;
    let df = df.select(vec![column(column_name)]).ok()?;
    let mut stream = df.execute_stream().await.ok()?;
    let mut row = 0usize;
    while let Some(batch) = stream.next().await {
        let batch = batch.ok()?;
        let text = text::text_column(batch.column(0)).ok()?;
        for r in 0..batch.num_rows() {
            let hit = match (value, text.keys.is_null(r)) {
                (None, true) => true,
                (Some(v), false) => text.values.value(text.keys.values()[r] as usize) == v,
                _ => false,
            };
            if hit {
                return Some(row + r + 1);
            }
        }
        row += batch.num_rows();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CSV this process noted as written without quoted line breaks is read without its
    /// quoting scan. Were it to quote a value across lines after all (changed, its stamp kept),
    /// the byte range holding the value meets it and the read fails: no record is cut in two
    /// and read as rows. Changed with a new stamp, it is scanned and read whole.
    #[test]
    fn a_written_csv_quoting_across_lines_after_all_is_never_read_in_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.csv");
        let rows = |tag: &str| {
            (0..3000)
                .map(|i| format!("{i},{tag}\n"))
                .collect::<String>()
        };
        let text = format!("a,b\n{}7,\"a\n8,b\"\n{}", rows("x"), rows("y"));
        std::fs::write(&path, &text).unwrap();
        note_written_csv(&path);
        let mut config = session_config();
        config.options_mut().optimizer.repartition_file_min_size = 0;
        let ctx = ranged_context(&SessionContext::new_with_config(config), 8);
        let input = Input::Path(path.clone());
        let read = || {
            runtime::block_on(async {
                let df = open_keyed(&ctx, &input, b',').await?;
                let batches = df.collect().await.map_err(|e| df_error(&input, e))?;
                Ok::<usize, PbgError>(batches.iter().map(|b| b.num_rows()).sum())
            })
            .unwrap()
        };
        let e = read().unwrap_err().to_string();
        assert!(e.contains("runs past the end of its line"), "{e}");
        std::fs::write(&path, format!("{text}9,z\n")).unwrap();
        assert_eq!(read().unwrap(), 6002);
    }

    /// A file opening with blank lines, read in byte ranges: the range that begins inside them
    /// begins with the header, which is skipped there too (it was read as a row: released and
    /// counted, and the verifier, reading the same way, agreed).
    #[test]
    fn blank_lines_before_the_header_never_make_it_a_row() {
        let dir = tempfile::tempdir().unwrap();
        let rows: String = (0..3000).map(|i| format!("{i},x\n")).collect();
        for (n, prefix) in [
            "\n".repeat(5000),
            "\r\n".repeat(3000),
            format!("\u{feff}{}", "\r\n".repeat(2000)),
            "\n\r\n".to_string(),
            String::new(),
        ]
        .into_iter()
        .enumerate()
        {
            let path = dir.path().join(format!("b{n}.csv"));
            std::fs::write(&path, format!("{prefix}a,b\n{rows}")).unwrap();
            for partitions in [2, 3, 5, 8, 13] {
                let mut config = session_config();
                config.options_mut().optimizer.repartition_file_min_size = 0;
                let ctx = ranged_context(&SessionContext::new_with_config(config), partitions);
                let input = Input::Path(path.clone());
                let batches = runtime::block_on(async {
                    let df = open_keyed(&ctx, &input, b',').await?;
                    df.collect().await.map_err(|e| df_error(&input, e))
                })
                .unwrap()
                .unwrap();
                let mut a: Vec<String> = Vec::new();
                for b in &batches {
                    let column = text::text_column(b.column(0)).unwrap();
                    a.extend(
                        column
                            .keys
                            .values()
                            .iter()
                            .map(|&k| column.values.value(k as usize).to_string()),
                    );
                }
                // Partitions come in any order: the rows as a set, and none twice.
                a.sort_by_key(|v| v.parse::<u32>().unwrap_or(u32::MAX));
                let header = a.iter().filter(|v| *v == "a").count();
                assert_eq!(
                    (a.len(), header),
                    (3000, 0),
                    "prefix {n}, {partitions} ranges"
                );
                assert!(a.iter().enumerate().all(|(i, v)| *v == i.to_string()));
            }
        }
    }

    /// A large input is read in more byte ranges than the session has partitions (about 64 MiB
    /// each, a whole number per partition, up to 4); a small one, a table and a cluster session
    /// keep the session as it is.
    #[test]
    fn large_inputs_are_read_in_more_ranges_than_cores() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = SessionContext::new_with_config(session_config().with_target_partitions(2));
        let sized = |ctx: &SessionContext, name: &str, mib: u64| {
            let path = dir.path().join(name);
            std::fs::File::create(&path)
                .unwrap()
                .set_len(mib << 20)
                .unwrap();
            // Sparse: only the size is looked at.
            balanced_context(ctx, &Input::Path(path))
                .state()
                .config()
                .target_partitions()
        };
        assert_eq!(sized(&ctx, "small.csv", 100), 2);
        // 3 ranges' worth: 4, so that each core reads 2.
        assert_eq!(sized(&ctx, "three.csv", 200), 4);
        assert_eq!(sized(&ctx, "five.csv", 330), 6);
        assert_eq!(sized(&ctx, "large.csv", 2500), 8);
        let cluster = SessionContext::new_with_config(
            session_config()
                .with_target_partitions(2)
                .with_extension(Arc::new(Distributed::default())),
        );
        assert_eq!(sized(&cluster, "large.csv", 2500), 2);
        let table = Input::Table("t".into());
        // Only a keyed column with the mark is shown as text: a file's own metadata copying the
        // mark onto numbers leaves them numbers.
        let mark = std::collections::HashMap::from([(KEYED.to_string(), "true".to_string())]);
        let schema = Schema::new(vec![
            Field::new("a", keyed_type(), true).with_metadata(mark.clone()),
            Field::new("b", DataType::Int64, true).with_metadata(mark),
            Field::new("c", keyed_type(), true),
        ]);
        let declared: Vec<DataType> = declared_schema(&schema)
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        assert_eq!(declared, [DataType::Utf8, DataType::Int64, keyed_type()]);
        assert_eq!(
            balanced_context(&ctx, &table)
                .state()
                .config()
                .target_partitions(),
            2
        );
    }
}
