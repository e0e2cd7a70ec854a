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
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use arrow::array::Array;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::Column;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::Expr;
use datafusion::prelude::{DataFrame, SessionConfig, SessionContext};
use futures::{StreamExt, TryStreamExt};

use crate::error::{PbgError, Result};

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

/// The file format of a path input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// CSV with a header row.
    Csv,
    /// Parquet.
    Parquet,
}

/// Whether a path names a Parquet file (by its extension).
pub fn is_parquet(path: &Path) -> bool {
    matches!(extension(path).as_deref(), Some("parquet" | "parq"))
}

fn extension(path: &Path) -> Option<String> {
    path.extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase())
}

fn has_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// Every regular file under `dir` (recursively), skipping hidden and temporary names.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| PbgError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| PbgError::io(dir, e))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// The format and the extension filter of a path input (the extension as spelled on disk:
/// DataFusion filters files by a case-sensitive suffix).
fn kind_of(path: &Path) -> Result<(FileKind, String)> {
    let text = path.to_string_lossy();
    let of_ext = |ext: Option<&str>| match ext {
        Some(e) if matches!(e.to_ascii_lowercase().as_str(), "parquet" | "parq") => {
            (FileKind::Parquet, format!(".{e}"))
        }
        Some(e) => (FileKind::Csv, format!(".{e}")),
        None => (FileKind::Csv, String::new()),
    };
    let raw_ext = |p: &Path| p.extension().map(|e| e.to_string_lossy().into_owned());
    if has_glob(&text) {
        // `lake/*.parquet`: the pattern's extension decides; `lake/*` holds CSV unless it says.
        let last = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let ext = last
            .as_deref()
            .and_then(|n| n.rsplit_once('.'))
            .map(|(_, e)| e.to_string())
            .filter(|e| !has_glob(e));
        return Ok(of_ext(ext.as_deref()));
    }
    let meta = std::fs::metadata(path).map_err(|e| PbgError::io(path, e))?;
    if !meta.is_dir() {
        return Ok(of_ext(raw_ext(path).as_deref()));
    }
    let mut files = Vec::new();
    files_under(path, &mut files)?;
    let spelled = |kind: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = files
            .iter()
            .filter_map(|f| raw_ext(f))
            .filter(|e| kind.contains(&e.to_ascii_lowercase().as_str()))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let (parquet, csv) = (spelled(&["parquet", "parq"]), spelled(&["csv"]));
    let mixed = |v: &[String]| {
        Err(PbgError::Format {
            path: path.to_path_buf(),
            message: format!(
                "the directory mixes files named {}; name one kind with a glob such as `{}/*.{}`",
                v.iter()
                    .map(|e| format!(".{e}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                path.display(),
                v[0]
            ),
        })
    };
    match (parquet.as_slice(), csv.as_slice()) {
        ([], []) if files.is_empty() => Err(PbgError::Format {
            path: path.to_path_buf(),
            message: "the directory holds no files".into(),
        }),
        ([], []) => Err(PbgError::Format {
            path: path.to_path_buf(),
            message: format!(
                "the directory holds no .parquet or .csv files ({} other files); name them with a glob such as `{}/*.txt`",
                files.len(),
                path.display()
            ),
        }),
        ([e], []) => Ok((FileKind::Parquet, format!(".{e}"))),
        ([], [e]) => Ok((FileKind::Csv, format!(".{e}"))),
        _ => {
            let all: Vec<String> = parquet.iter().chain(&csv).cloned().collect();
            mixed(&all)
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
    let fields = schema.fields();
    for (i, f) in fields.iter().enumerate() {
        if let Some(j) = fields[..i].iter().position(|g| g.name() == f.name()) {
            return Err(PbgError::Format {
                path: input.as_path(),
                message: format!(
                    "column `{}` appears twice (columns {} and {}): rename one, pbg refuses ambiguous column names",
                    f.name(),
                    j + 1,
                    i + 1
                ),
            });
        }
    }
    Ok(())
}

/// The header of a CSV file: its first record, split on `delimiter` outside double quotes.
fn csv_header(path: &Path, delimiter: u8) -> Result<Vec<String>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| PbgError::io(path, e))?;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 8192];
    let mut quoted = false;
    'read: loop {
        let n = file.read(&mut chunk).map_err(|e| PbgError::io(path, e))?;
        if n == 0 {
            break;
        }
        for &b in &chunk[..n] {
            if b == b'"' {
                quoted = !quoted;
            }
            if b == b'\n' && !quoted {
                break 'read;
            }
            bytes.push(b);
        }
        if bytes.len() > 16 << 20 {
            return Err(PbgError::Format {
                path: path.to_path_buf(),
                message: "the header line is longer than 16 MiB".into(),
            });
        }
    }
    let text = String::from_utf8_lossy(&bytes);
    let text = text.trim_start_matches('\u{feff}').trim_end_matches('\r');
    let mut names = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c as u32 == delimiter as u32 && !quoted => names.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    names.push(field);
    Ok(names)
}

/// The arrow schema stored in a Parquet file's footer (no data read).
fn parquet_schema(path: &Path) -> Result<SchemaRef> {
    let file = std::fs::File::open(path).map_err(|e| PbgError::io(path, e))?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| PbgError::Format {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    Ok(builder.schema().clone())
}

/// Checks every file of a path input before DataFusion reads it: no repeated column names, CSV
/// headers that agree (CSV is read by position), and no file that the listing would skip.
async fn check_files(
    state: &datafusion::execution::SessionState,
    path: &Path,
    url: &ListingTableUrl,
    kind: FileKind,
    ext: &str,
    delimiter: u8,
) -> Result<()> {
    let input = Input::Path(path.to_path_buf());
    let store = state
        .runtime_env()
        .object_store(url)
        .map_err(|e| df_error(&input, e))?;
    let metas: Vec<object_store::ObjectMeta> = url
        .list_all_files(state, store.as_ref(), ext)
        .await
        .map_err(|e| df_error(&input, e))?
        .try_collect()
        .await
        .map_err(|e| df_error(&input, e))?;
    let mut files: Vec<PathBuf> = metas
        .iter()
        .map(|m| PathBuf::from(format!("/{}", m.location.as_ref())))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(PbgError::Format {
            path: path.to_path_buf(),
            message: format!("no files match (extension `{ext}`)"),
        });
    }
    if path.is_dir() {
        // Every data file under the directory must be one DataFusion reads.
        let mut all = Vec::new();
        files_under(path, &mut all)?;
        let skipped: Vec<&PathBuf> = all
            .iter()
            .filter(|f| f.to_string_lossy().ends_with(ext))
            .filter(|f| {
                let f = f.canonicalize().unwrap_or_else(|_| (*f).clone());
                !files
                    .iter()
                    .any(|g| g.canonicalize().unwrap_or_else(|_| g.clone()) == f)
            })
            .collect();
        if let Some(first) = skipped.first() {
            return Err(PbgError::Format {
                path: path.to_path_buf(),
                message: format!(
                    "{} file(s) in subdirectories that are not partition directories (`name=value`) would be skipped, e.g. {}: move them, or set datafusion.execution.listing_table_ignore_subdirectory = false",
                    skipped.len(),
                    first.display()
                ),
            });
        }
    }
    let mut first: Option<(PathBuf, Vec<String>)> = None;
    for f in &files {
        let names: Vec<String> = match kind {
            FileKind::Csv => csv_header(f, delimiter)?,
            FileKind::Parquet => parquet_schema(f)?
                .fields()
                .iter()
                .map(|x| x.name().clone())
                .collect(),
        };
        if names.iter().all(|n| n.is_empty()) {
            let empty = std::fs::metadata(f).map(|m| m.len() <= 1).unwrap_or(false);
            if kind == FileKind::Csv && empty {
                return Err(PbgError::EmptyTable { path: f.clone() });
            }
        }
        for (i, n) in names.iter().enumerate() {
            if let Some(j) = names[..i].iter().position(|m| m == n) {
                return Err(PbgError::Format {
                    path: f.clone(),
                    message: format!(
                        "column `{n}` appears twice (columns {} and {}): rename one, pbg refuses ambiguous column names",
                        j + 1,
                        i + 1
                    ),
                });
            }
        }
        match &first {
            None => first = Some((f.clone(), names)),
            Some((g, header)) if kind == FileKind::Csv && *header != names => {
                return Err(PbgError::Format {
                    path: f.clone(),
                    message: format!(
                        "its header ({}) differs from that of {} ({}): CSV files of one input must have the same columns in the same order",
                        names.join(", "),
                        g.display(),
                        header.join(", ")
                    ),
                });
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Opens a path as a listing table: Parquet as written, CSV with every column as text.
async fn open_path(ctx: &SessionContext, path: &Path, delimiter: u8) -> Result<DataFrame> {
    let input = Input::Path(path.to_path_buf());
    let (kind, ext) = kind_of(path)?;
    let text = path.to_string_lossy();
    let url = ListingTableUrl::parse(text.as_ref()).map_err(|e| df_error(&input, e))?;
    let format: Arc<dyn FileFormat> = match kind {
        FileKind::Parquet => Arc::new(ParquetFormat::default()),
        FileKind::Csv => Arc::new(
            CsvFormat::default()
                .with_has_header(true)
                .with_delimiter(delimiter),
        ),
    };
    let state = ctx.state();
    check_files(&state, path, &url, kind, &ext, delimiter).await?;
    let options = ListingOptions::new(format).with_file_extension(ext);
    let schema = options
        .infer_schema(&state, &url)
        .await
        .map_err(|e| df_error(&input, e))?;
    check_unique_columns(&input, &schema)?;
    if schema.fields().is_empty() {
        return Err(PbgError::EmptyTable {
            path: path.to_path_buf(),
        });
    }
    let schema: SchemaRef = match kind {
        FileKind::Parquet => schema,
        FileKind::Csv => Arc::new(Schema::new(
            schema
                .fields()
                .iter()
                .map(|f| Field::new(f.name(), DataType::Utf8, true))
                .collect::<Vec<_>>(),
        )),
    };
    let partitions = options
        .infer_partitions(&state, &url)
        .await
        .map_err(|e| df_error(&input, e))?;
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
    let df = match input {
        Input::Path(p) => open_path(ctx, p, delimiter).await?,
        Input::Table(t) => ctx
            .table(datafusion::common::TableReference::bare(t.as_str()))
            .await
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
            })?,
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
    schema.index_of(name).map_err(|_| PbgError::UnknownColumn {
        path: input.as_path(),
        column: name.to_string(),
        available: schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// A session for pbg's own commands: Parquet strings read as written (not as view types),
/// files in subdirectories of an input directory read too.
pub fn new_context() -> SessionContext {
    let mut config = SessionConfig::new();
    let options = config.options_mut();
    options.execution.parquet.schema_force_view_types = false;
    options.execution.listing_table_ignore_subdirectory = false;
    SessionContext::new_with_config(config)
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
    // One partition, so that rows come in file order.
    let config = SessionConfig::from(ctx.state().config().options().as_ref().clone())
        .with_target_partitions(1)
        .with_repartition_file_scans(false);
    let state = SessionStateBuilder::new_from_existing(ctx.state())
        .with_config(config)
        .build();
    let one = SessionContext::new_with_state(state);
    let df = open(&one, input, delimiter).await.ok()?;
    let df = df.select(vec![column(column_name)]).ok()?;
    let mut stream = df.execute_stream().await.ok()?;
    let mut row = 0usize;
    while let Some(batch) = stream.next().await {
        let batch = batch.ok()?;
        let text = crate::encode::text_column(batch.column(0)).ok()?;
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

static RUNTIME: LazyLock<std::result::Result<tokio::runtime::Runtime, String>> =
    LazyLock::new(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_name("pbg-datafusion")
            .build()
            .map_err(|e| e.to_string())
    });

/// Runs a DataFusion future to completion from synchronous code — the CLI, the engine, or a table
/// function being planned inside another runtime — on pbg's own runtime, from a fresh thread so that
/// no runtime is ever entered twice. Engine (rayon) work stays off tokio's workers.
pub fn block_on<F>(future: F) -> Result<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let runtime = RUNTIME.as_ref().map_err(|e| PbgError::Format {
        path: PathBuf::from("tokio runtime"),
        message: e.clone(),
    })?;
    std::thread::scope(|s| {
        match std::thread::Builder::new()
            .name("pbg-plan".into())
            // DataFusion plans deep expressions recursively: give it room.
            .stack_size(64 << 20)
            .spawn_scoped(s, || runtime.block_on(future))
        {
            Ok(handle) => match handle.join() {
                Ok(out) => Ok(out),
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(e) => Err(PbgError::io("thread", e)),
        }
    })
}
