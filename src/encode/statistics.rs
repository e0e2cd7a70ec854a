//! Pass 1 in DataFusion: the class statistics of a profile's input — the distinct combinations of
//! its QIs, sensitive and class attribute, with counts — computed by a hash GROUP BY over the
//! scan's batches (dealt over the session's partitions, counted in parallel inside the session's
//! memory pool), never the rows.
//! The engine evaluates them as a weighted dataset: every node index comes out the same as from the
//! rows. The rows themselves (for per-tuple vectors) are read by the same plane, in file order.

use arrow::array::Array;
use arrow::record_batch::RecordBatch;

use crate::input::text::{TextColumn, text_column_named};
use datafusion::functions_aggregate::count::count_all;
use datafusion::prelude::{DataFrame, SessionContext};

use super::accumulate::Accumulator;
use crate::encode::{Combinations, CountColumn, Dataset, profile_columns};
use crate::error::{PbgError, Result};
use crate::input::{self, block_on, df_error};
use crate::profile::Profile;

/// Name of the count column of a statistics plan.
pub const COUNT: &str = "__pbg_tuples";

/// The statistics plan of `df`: `SELECT cols.., count(*) FROM df GROUP BY cols..`.
pub fn statistics_plan(
    df: DataFrame,
    spec: &[CountColumn],
) -> datafusion::common::Result<DataFrame> {
    let group = spec.iter().map(|c| input::column(&c.name)).collect();
    df.aggregate(group, vec![count_all().alias(COUNT)])
}

/// Something computed from every batch of a statistics scan besides the counts (the verifier's
/// fingerprint of all columns), so that one read serves both.
pub trait Companion: Clone + Send + 'static {
    /// Whether it needs every column of a table of `schema` (else only the counted ones are read).
    fn all_columns(&self, schema: &arrow::datatypes::Schema) -> bool;
    /// Takes one batch (every column of the table when it asked for all) with the text form of
    /// each of its columns.
    fn add(&mut self, batch: &RecordBatch, texts: &[TextColumn]) -> Result<()>;
    /// Whether it still takes batches (a companion that gave up is no longer fed, and the
    /// scan computes only the counted columns' text forms); it may free what it held.
    fn wants_more(&mut self) -> bool {
        true
    }
    /// Takes another partition's result.
    fn merge(&mut self, other: Self);
    /// Whether its result depends on the order of the rows (then the scan keeps the table's own
    /// partitions, each in file order; else batches may be dealt over more partitions).
    fn keeps_order(&self) -> bool {
        true
    }
}

/// No companion: only the counted columns are read.
impl Companion for () {
    fn all_columns(&self, _schema: &arrow::datatypes::Schema) -> bool {
        false
    }
    fn add(&mut self, _batch: &RecordBatch, _texts: &[TextColumn]) -> Result<()> {
        Ok(())
    }
    fn merge(&mut self, _other: Self) {}
}

/// Counts the distinct combinations of `spec`'s columns of `df` (text forms, nulls replaced or
/// refused): the scan's batches, dealt round-robin over the session's partitions, are counted by
/// pbg's aggregate on packed keys as they stream, then the partitions' counts are merged. Memory
/// (each partition's distinct combinations, then the merge's) is reserved in the session's memory
/// pool. A null where none is allowed names the first such column in `spec`'s order.
pub async fn count_combinations(
    df: DataFrame,
    input: &input::Input,
    spec: &[CountColumn],
) -> Result<Combinations> {
    Ok(count_combinations_with(df, input, spec, ()).await?.0)
}

/// [`count_combinations`], computing companion `C` from the same batches in the same read: each
/// partition starts from a clone of `companion`, and the partitions' results are merged into it in
/// partition order.
pub async fn count_combinations_with<C: Companion>(
    df: DataFrame,
    input: &input::Input,
    spec: &[CountColumn],
    mut companion: C,
) -> Result<(Combinations, C)> {
    use datafusion::execution::memory_pool::MemoryConsumer;
    use futures::StreamExt;

    let schema = df.schema().as_arrow().clone();
    let whole = df.clone();
    let mut counted = Vec::with_capacity(spec.len());
    for c in spec {
        counted.push(input::column_index(input, &schema, &c.name)?);
    }
    let all = companion.all_columns(&input::declared_schema(&schema));
    if input::is_distributed(&df) && !all {
        // On a cluster the GROUP BY distributes; only the combinations come back.
        return Ok((count_grouped(df, input, spec).await?, companion));
    }
    let pool = df.task_ctx().memory_pool().clone();
    let (df, counted) = if all {
        (df, counted)
    } else {
        let projected = df
            .select(
                spec.iter()
                    .map(|c| input::column(&c.name))
                    .collect::<Vec<_>>(),
            )
            .map_err(|e| df_error(input, e))?;
        (projected, (0..spec.len()).collect())
    };
    // Counts do not depend on row order; a companion may (kept rows are kept in input order).
    let streams = if all && companion.keeps_order() {
        df.execute_stream_partitioned().await
    } else {
        input::unordered_streams(df).await
    }
    .map_err(|e| df_error(input, e))?;
    let tasks: Vec<_> = streams
        .into_iter()
        .map(|mut stream| {
            let spec = spec.to_vec();
            let counted = counted.clone();
            let source = input.clone();
            let reservation = MemoryConsumer::new("pbg class statistics").register(&pool);
            let mut companion = companion.clone();
            tokio::spawn(async move {
                let mut acc = Accumulator::new(spec.len());
                while let Some(batch) = stream.next().await {
                    let batch = batch.map_err(|e| df_error(&source, e))?;
                    if all && companion.wants_more() {
                        // Each column's text form once, for the counts and the companion.
                        let texts = batch
                            .columns()
                            .iter()
                            .zip(batch.schema().fields())
                            .map(|(c, f)| text_column_named(c, f.name()))
                            .collect::<Result<Vec<_>>>()
                            .map_err(|e| PbgError::Format {
                                path: source.as_path(),
                                message: e.to_string(),
                            })?;
                        companion.add(&batch, &texts)?;
                        let part: Vec<&TextColumn> = counted.iter().map(|&i| &texts[i]).collect();
                        acc.add_texts(&spec, &part, batch.num_rows())?;
                    } else if all {
                        let part = batch.project(&counted).map_err(|e| df_error(&source, e))?;
                        acc.add_batch(&spec, &part)?;
                    } else {
                        acc.add_batch(&spec, &batch)?;
                    }
                    reservation
                        .try_resize(acc.size())
                        .map_err(|e| df_error(&source, e))?;
                }
                Ok::<_, PbgError>((acc, companion))
            })
        })
        .collect();
    let mut parts = Vec::with_capacity(tasks.len());
    for task in tasks {
        match task.await.map_err(|e| df_error(input, e))? {
            Ok((acc, part)) => {
                companion.merge(part);
                parts.push(acc);
            }
            // Which partition meets a null first depends on how batches were dealt: name the
            // first column in spec order that holds one, whatever the timing.
            Err(e @ PbgError::NullValue { .. }) => {
                return Err(first_null_column(whole, spec).await.unwrap_or(e));
            }
            Err(e) => return Err(e),
        }
    }
    if parts.is_empty() {
        parts.push(Accumulator::new(spec.len()));
    }
    // The merge holds every partition's combinations at once (a combination seen by several
    // partitions once per partition) with a sort key each.
    let entries: usize = parts.iter().map(Accumulator::combinations).sum();
    if u32::try_from(entries).is_err() {
        return Err(df_error(
            input,
            format!("{entries} distinct combinations across partitions: at most 2^32 are counted"),
        ));
    }
    let merge = MemoryConsumer::new("pbg class statistics merge").register(&pool);
    merge
        .try_grow(entries.saturating_mul(spec.len() * 4 + 48))
        .map_err(|e| df_error(input, e))?;
    let combos = Combinations::from_accumulators(parts);
    drop(merge);
    Ok((combos, companion))
}

/// The first column of `spec` that refuses nulls (no `null_as`) and holds one in `df`, as the
/// error for it (its row is found later, see [`with_row`]); None when the query finds none.
async fn first_null_column(df: DataFrame, spec: &[CountColumn]) -> Option<PbgError> {
    use arrow::array::AsArray;
    use datafusion::functions_aggregate::expr_fn::bool_or;
    let refused: Vec<&CountColumn> = spec.iter().filter(|c| c.null_as.is_none()).collect();
    let flags = refused
        .iter()
        .enumerate()
        .map(|(i, c)| bool_or(input::column(&c.name).is_null()).alias(format!("null_{i}")))
        .collect();
    let batches = df.aggregate(vec![], flags).ok()?.collect().await.ok()?;
    let batch = batches.iter().find(|b| b.num_rows() > 0)?;
    let column = (0..refused.len()).find(|&i| {
        let flag = batch.column(i).as_boolean();
        flag.is_valid(0) && flag.value(0)
    })?;
    let c = refused[column];
    Some(PbgError::NullValue {
        column: c.name.clone(),
        row: 0,
        hint: c.null_hint.clone(),
    })
}

/// [`count_combinations`] as the [`statistics_plan`] (a `GROUP BY` the session may distribute):
/// only its result, one row per combination of typed values with its count, comes back.
async fn count_grouped(
    df: DataFrame,
    input: &input::Input,
    spec: &[CountColumn],
) -> Result<Combinations> {
    let plan = statistics_plan(df, spec).map_err(|e| df_error(input, e))?;
    let batches = plan.collect().await.map_err(|e| df_error(input, e))?;
    Combinations::gather(&batches, spec, Some(COUNT))
}

/// Names the first row of the culprit in errors raised without one (the parallel passes do not
/// number rows): a null, or a value that is no leaf of its hierarchy.
pub async fn with_row(ctx: &SessionContext, profile: &Profile, e: PbgError) -> PbgError {
    let delimiter = profile.delimiter;
    match e {
        PbgError::NullValue {
            column,
            row: 0,
            hint,
        } => {
            let row = input::locate(ctx, &profile.input, delimiter, &column, None)
                .await
                .unwrap_or(0);
            PbgError::NullValue { column, row, hint }
        }
        PbgError::ValueNotInHierarchy {
            column,
            value,
            row: 0,
            source_name,
        } => {
            let mut row = input::locate(ctx, &profile.input, delimiter, &column, Some(&value))
                .await
                .unwrap_or(0);
            let mut source_name = source_name;
            let fill = profile
                .qis
                .iter()
                .find(|q| q.name == column)
                .and_then(|q| q.null_as.as_deref());
            if row == 0 && fill == Some(value.as_str()) {
                // The value stands for nulls (`null_as`): name the first null.
                row = input::locate(ctx, &profile.input, delimiter, &column, None)
                    .await
                    .unwrap_or(0);
                source_name =
                    format!("{source_name}; it is this QI's `null_as`, given to its nulls");
            }
            PbgError::ValueNotInHierarchy {
                column,
                value,
                row,
                source_name,
            }
        }
        other => other,
    }
}

/// The profile with every hierarchy declared as a registered table (`type = "sql"`) read from
/// `ctx` now: the table's first column holds the leaves, each further column one level.
pub async fn resolve_hierarchy_tables(ctx: &SessionContext, profile: &Profile) -> Result<Profile> {
    use crate::encode::hierarchy::HierarchySpec;
    let mut profile = profile.clone();
    let sensitive = profile.sensitive.clone();
    let specs = profile
        .qis
        .iter_mut()
        .map(|q| (q.name.clone(), &mut q.hierarchy))
        .chain(profile.sensitive_hierarchy.as_mut().map(|h| (sensitive, h)));
    for (name, spec) in specs {
        let HierarchySpec::Sql { table } = &*spec else {
            continue;
        };
        *spec = HierarchySpec::Table {
            rows: hierarchy_rows(ctx, &name, table).await?,
            source: Some(table_source(table)),
        };
    }
    Ok(profile)
}

/// How messages name hierarchy table `table`: Python registers the tables it is given under
/// names of its own, which the user never wrote.
fn table_source(table: &str) -> String {
    match table.starts_with("__pbg_hierarchy_") {
        true => "the table given as its hierarchy".to_string(),
        false => format!("table `{table}`"),
    }
}

/// The rows `leaf, level1, ...` of a hierarchy held in registered table `table`, for `column`.
async fn hierarchy_rows(
    ctx: &SessionContext,
    column: &str,
    table: &str,
) -> Result<Vec<Vec<String>>> {
    let source = input::Input::Table(table.to_string());
    let df = input::open(ctx, &source, b',').await?;
    let batches = df.collect().await.map_err(|e| df_error(&source, e))?;
    let mut rows: Vec<Vec<String>> = Vec::new();
    for batch in &batches {
        let texts = batch
            .columns()
            .iter()
            .map(crate::encode::text_column)
            .collect::<Result<Vec<_>>>()?;
        for r in 0..batch.num_rows() {
            let mut row = Vec::with_capacity(texts.len());
            for (l, t) in texts.iter().enumerate() {
                if t.keys.is_null(r) {
                    let source_name = table_source(table);
                    let what = if l == 0 { "leaf" } else { "label" };
                    return Err(PbgError::Hierarchy {
                        column: column.to_string(),
                        source_name,
                        message: format!("row {} has a null {what} at level {l}", rows.len() + 1),
                    });
                }
                row.push(t.values.value(t.keys.values()[r] as usize).to_string());
            }
            rows.push(row);
        }
    }
    Ok(rows)
}

/// Pass 1 on `ctx`: the profile's input read into class statistics and encoded.
pub async fn statistics_in(ctx: &SessionContext, profile: &Profile) -> Result<Dataset> {
    Ok(statistics_with(ctx, profile, ()).await?.0)
}

/// [`statistics_in`], computing `companion` from the same read (see [`count_combinations_with`]).
pub async fn statistics_with<C: Companion>(
    ctx: &SessionContext,
    profile: &Profile,
    companion: C,
) -> Result<(Dataset, C)> {
    statistics_over(ctx, profile, None, companion).await
}

/// [`statistics_in`] read through `frame`, the profile's input as the caller opened it, instead
/// of a new open of it: a release planned over `frame` then reads the very tables its statistics
/// counted, even if a name the input resolves through is given another table in between.
pub async fn statistics_from(
    ctx: &SessionContext,
    profile: &Profile,
    frame: &DataFrame,
) -> Result<Dataset> {
    Ok(statistics_over(ctx, profile, Some(frame), ()).await?.0)
}

/// Pass 1 over `frame`, else over the input opened now.
async fn statistics_over<C: Companion>(
    ctx: &SessionContext,
    profile: &Profile,
    frame: Option<&DataFrame>,
    companion: C,
) -> Result<(Dataset, C)> {
    let profile = &resolve_hierarchy_tables(ctx, profile).await?;
    let run = async {
        let balanced = input::balanced_context(ctx, &profile.input);
        let df = match frame {
            Some(frame) => DataFrame::new(balanced.state(), frame.logical_plan().clone()),
            None => input::open_keyed(&balanced, &profile.input, profile.delimiter).await?,
        };
        let schema = std::sync::Arc::new(input::declared_schema(df.schema().as_arrow()));
        let spec = profile_columns(profile);
        let (combos, companion) =
            count_combinations_with(df, &profile.input, &spec, companion).await?;
        Ok((Dataset::encode(profile, schema, combos)?, companion))
    };
    match run.await {
        Ok(ds) => Ok(ds),
        Err(e) => Err(with_row(ctx, profile, e).await),
    }
}

/// The profile's rows on `ctx`, in file order, encoded (one tuple per row): what per-tuple
/// vectors and the experiments need.
pub async fn rows_in(ctx: &SessionContext, profile: &Profile) -> Result<Dataset> {
    let profile = &resolve_hierarchy_tables(ctx, profile).await?;
    let run = async {
        let ordered = input::ordered_context(ctx);
        let df = input::open_keyed(&ordered, &profile.input, profile.delimiter).await?;
        let schema = std::sync::Arc::new(input::declared_schema(df.schema().as_arrow()));
        let spec = profile_columns(profile);
        for c in &spec {
            input::column_index(&profile.input, &schema, &c.name)?;
        }
        let df = df
            .select(
                spec.iter()
                    .map(|c| input::column(&c.name))
                    .collect::<Vec<_>>(),
            )
            .map_err(|e| df_error(&profile.input, e))?;
        let batches = df
            .collect()
            .await
            .map_err(|e| df_error(&profile.input, e))?;
        let combos = Combinations::gather(&batches, &spec, None)?;
        Dataset::encode(profile, schema, combos)
    };
    match run.await {
        Ok(ds) => Ok(ds),
        Err(e) => Err(with_row(ctx, profile, e).await),
    }
}

impl Dataset {
    /// Pass 1 of a batch job on a default session: the input read once into class statistics
    /// (memory bounded by the distinct combinations), ready to evaluate.
    pub fn load_statistics(profile: &Profile) -> Result<Self> {
        let ctx = input::new_context();
        block_on(statistics_in(&ctx, profile))?
    }

    /// Reads the profile's rows (in file order) and encodes them, one tuple per row.
    pub fn load(profile: &Profile) -> Result<Self> {
        let ctx = input::new_context();
        block_on(rows_in(&ctx, profile))?
    }
}
