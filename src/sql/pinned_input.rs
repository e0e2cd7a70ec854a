//! The input of a release planned from SQL, pinned to the rows its statistics were read from.
//! `pbg_anonymize` reads the class statistics (and picks the node) when a query is planned, and
//! the rows when it runs; a `CREATE VIEW` keeps the plan, so rows inserted, updated or deleted in
//! between were released under the old statistics (an inserted row could form a class of one).
//! [`PinnedInput`] notes what the table was made of before the statistics are read — a listing
//! table's files (name, size, modification and status change times, e-tag, listed afresh), a
//! memory table's batches (held, so that a freed batch's memory taken by a new one cannot pass
//! for it), the session's settings that decide how rows are read — and refuses to be scanned once
//! that has changed. Tables of other kinds (a provider of another library) are not pinned.
//! Inputs that differ at every query by their definition are refused before: `steady_input`.

use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use async_trait::async_trait;
use datafusion::catalog::{ScanArgs, ScanResult, Session, TableProvider};
use datafusion::common::tree_node::{Transformed, TreeNodeRecursion};
use datafusion::common::{Constraints, Result, Statistics, plan_err};
use datafusion::datasource::listing::{ListingTable, ListingTableUrl};
use datafusion::datasource::{MemTable, TableType, provider_as_source, source_as_provider};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::{Expr, LogicalPlan, TableProviderFilterPushDown};
use datafusion::object_store::{self as object_store, ObjectMeta, ObjectStore, ObjectStoreExt};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{DataFrame, SessionContext};
use futures::TryStreamExt;

/// One source of a table's rows, as it was when pinned.
#[derive(Debug, Clone)]
enum Source {
    /// A listing table's files, in location order.
    Files(Vec<FileStamp>),
    /// A memory table's partitions, their batches held (compared by identity).
    Batches(Vec<Vec<RecordBatch>>),
}

/// What a file was when pinned.
#[derive(Debug, Clone, PartialEq)]
struct FileStamp {
    location: String,
    size: u64,
    /// Modification time (ns), as the store gives it.
    modified: i64,
    e_tag: Option<String>,
    /// A local file's status change time (ns): a rewrite of the same size whose modification
    /// time was set back (`touch -d`) still changes it.
    changed: Option<i128>,
}

/// A table whose rows a release was planned on: scanning it fails once they have changed.
#[derive(Debug)]
pub(super) struct PinnedInput {
    inner: Arc<dyn TableProvider>,
    /// The function and table named in the refusal.
    function: &'static str,
    table: String,
    sources: Vec<Source>,
    /// The session's [`READ_SETTINGS`] when pinned.
    settings: Vec<(String, Option<String>)>,
    /// Whether an operator above the scan in the input's plan, or in the table's own (a
    /// view's), may use the order its scans declare: an aggregate, join, `DISTINCT` or window
    /// ([`super::steady_input::uses_row_order`]).
    uses_order: bool,
}

impl PinnedInput {
    /// Pins `inner` (named `table` in messages, as `Input::as_path` says it) as it is now, or
    /// gives `None` when no source of its rows can be pinned (a provider of another kind, with
    /// nothing known below it).
    pub(super) async fn pin(
        state: &dyn Session,
        function: &'static str,
        table: String,
        inner: Arc<dyn TableProvider>,
        uses_order: bool,
    ) -> Result<Option<PinnedInput>> {
        let Sources {
            sources,
            cache_differs,
        } = sources_of(state, &inner).await?;
        if let Some(why) = cache_differs {
            return plan_err!("{function}: {why}");
        }
        // Reading settings matter to files only (a memory table holds its values).
        let files = sources.iter().any(|s| matches!(s, Source::Files(_)));
        Ok(match sources.is_empty() {
            true => None,
            false => Some(PinnedInput {
                uses_order: uses_order
                    || match inner.get_logical_plan() {
                        Some(plan) => super::steady_input::uses_row_order(&plan)?,
                        None => false,
                    },
                inner,
                function,
                table,
                sources,
                settings: match files {
                    true => read_settings(state),
                    false => Vec::new(),
                },
            }),
        })
    }

    /// Fails if the table's rows are no longer those it was pinned with: a reading setting, then
    /// the files and batches, then whether the session's list-files cache agrees with them.
    pub(super) async fn check(&self, state: &dyn Session) -> Result<()> {
        let settings = match self.settings.is_empty() {
            true => Vec::new(),
            false => read_settings(state),
        };
        let setting = self
            .settings
            .iter()
            .zip(&settings)
            .find(|(a, b)| a != b)
            .map(|((key, then), (_, now))| {
                let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "unset".into());
                format!(
                    "the session's setting {key} was {} and is {}",
                    text(then),
                    text(now)
                )
            });
        let (change, cache_differs) = match setting {
            Some(s) => (Some(s), None),
            None => {
                let now = sources_of(state, &self.inner).await?;
                (change(&self.sources, &now.sources), now.cache_differs)
            }
        };
        if let Some(change) = change {
            return self.refuse(&change);
        }
        match cache_differs {
            Some(why) => plan_err!("{}: {why}", self.function),
            None => Ok(()),
        }
    }

    /// The table pinned.
    pub(super) fn inner(&self) -> &Arc<dyn TableProvider> {
        &self.inner
    }

    /// Refuses, where the scan is not planned here (on a cluster), a pin whose input may use an
    /// order its files declare (see [`PinnedInput::without_trusted_order`], which cannot run
    /// there): a listing table declaring one (`WITH ORDER`), or reading Parquet, whose sorting
    /// columns DataFusion takes as one.
    pub(super) fn refuse_order_unplanned(&self) -> Result<()> {
        if !self.uses_order {
            return Ok(());
        }
        let mut tables = Vec::new();
        leaves(&self.inner, &mut tables)?;
        let ordered = tables.iter().any(|t| {
            (t.as_ref() as &dyn Any)
                .downcast_ref::<ListingTable>()
                .is_some_and(|l| {
                    !l.options().file_sort_order.is_empty()
                        || l.options().format.get_ext() == "parquet"
                })
        });
        match ordered {
            false => Ok(()),
            true => plan_err!(
                "{}: its input ({}) reads a file table whose rows may declare an order (WITH ORDER, or Parquet sorting columns) under an aggregate, join, DISTINCT or window function; on a cluster the scheduler plans that scan, and pbg cannot make DataFusion stop trusting the order there: if the rows are not in it, the input's rows change with the partitions. Store the rows first (CREATE TABLE ... AS SELECT ...), or run without --cluster",
                self.function,
                self.table
            ),
        }
    }

    /// The refusal of a scan of rows other than those the statistics counted.
    fn refuse<T>(&self, change: &str) -> Result<T> {
        plan_err!(
            "{}: its input ({}) changed since this release was planned ({change}). Its class statistics and node were read from the rows as they were, so its rows cannot be released under them; query {} again (a view keeps the plan it was created with: create it again)",
            self.function,
            self.table,
            self.function
        )
    }

    /// Fails unless every file `plan` reads is one pinned, as it was (name, size, modification
    /// time): the scan lists the files again after [`PinnedInput::check`], and a file added or
    /// rewritten in between would be read without having been counted.
    /// A scan whose rows declare an order (`WITH ORDER`, Parquet sorting columns, a memory
    /// table's sort order) under an operator of the input that may use it (an aggregate, join,
    /// subquery, `DISTINCT` or window): DataFusion trusts the order without checking it, and over
    /// rows not in it a `GROUP BY` ran as a sorted aggregate whose groups depended on the
    /// session's partitions (a `SET` between the statistics and the release released classes of
    /// one). A file scan is given back without the order, so that nothing above relies on it;
    /// any other such plan (a view planned whole, a memory scan) is refused.
    fn without_trusted_order(
        &self,
        plan: Arc<dyn ExecutionPlan>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        use datafusion::datasource::physical_plan::{FileScanConfig, FileScanConfigBuilder};
        use datafusion::datasource::source::DataSourceExec;
        use datafusion::physical_plan::ExecutionPlanProperties;
        fn declared(plan: &Arc<dyn ExecutionPlan>) -> bool {
            (plan.children().is_empty() && plan.output_ordering().is_some())
                || plan.children().into_iter().any(declared)
        }
        if !self.uses_order || !declared(&plan) {
            return Ok(plan);
        }
        let file_scan = plan
            .downcast_ref::<DataSourceExec>()
            .and_then(|e| (e.data_source().as_ref() as &dyn Any).downcast_ref::<FileScanConfig>());
        if let Some(config) = file_scan {
            let unordered = FileScanConfigBuilder::from(config.clone())
                .with_output_ordering(Vec::new())
                .build();
            return Ok(DataSourceExec::from_data_source(unordered));
        }
        plan_err!(
            "{}: its input ({}) reads a table whose rows declare an order (WITH ORDER, or a memory table's sort order) that DataFusion trusts without checking, under an aggregate, join, DISTINCT or window function: if the rows are not in that order, the input's rows change with the session's partitions and batch size, which may differ between the statistics and the release. Store the rows first (CREATE TABLE ... AS SELECT ...), or declare the table without the order",
            self.function,
            self.table
        )
    }

    fn check_files_read(&self, plan: &Arc<dyn ExecutionPlan>) -> Result<()> {
        let pinned: HashSet<(&str, u64, i64)> = self
            .sources
            .iter()
            .filter_map(|s| match s {
                Source::Files(files) => Some(files),
                Source::Batches(_) => None,
            })
            .flatten()
            .map(|f| (f.location.as_str(), f.size, f.modified))
            .collect();
        let mut read = Vec::new();
        files_read(plan, &mut read);
        match read
            .iter()
            .find(|(name, size, modified)| !pinned.contains(&(name.as_str(), *size, *modified)))
        {
            None => Ok(()),
            Some((name, _, _)) => self.refuse(&format!(
                "file {name} is to be read as it was not when the statistics were read"
            )),
        }
    }
}

/// `df` over its tables pinned as they are now: every scan in its plan, for a registered table
/// may be a view (inlined, its scans below) over several tables. A table nothing can be pinned
/// in is scanned as it is, and the second value says there was one. `function` and `table` name
/// them in refusals.
pub(super) fn pin_scans(
    ctx: &SessionContext,
    function: &'static str,
    table: &str,
    df: DataFrame,
) -> Result<(DataFrame, bool)> {
    let state = ctx.state();
    let uses_order = super::steady_input::uses_row_order(df.logical_plan())?;
    let mut unpinned = false;
    let pinned = df
        .logical_plan()
        .clone()
        .transform_up_with_subqueries(|node| {
            let LogicalPlan::TableScan(scan) = &node else {
                return Ok(Transformed::no(node));
            };
            let provider = source_as_provider(&scan.source)?;
            let pin = PinnedInput::pin(&state, function, table.to_string(), provider, uses_order);
            let pinned =
                crate::input::block_on(pin).map_err(|e| super::table::plan(function, e))??;
            match pinned {
                Some(table) => {
                    let mut scan = scan.clone();
                    scan.source = provider_as_source(Arc::new(table));
                    Ok(Transformed::yes(LogicalPlan::TableScan(scan)))
                }
                None => {
                    unpinned = true;
                    Ok(Transformed::no(node))
                }
            }
        })?;
    Ok((DataFrame::new(state, pinned.data), unpinned))
}

/// The files the file scans of `plan` read: name (as [`file_name`] gives it), size and
/// modification time (ns).
fn files_read(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<(String, u64, i64)>) {
    use datafusion::datasource::physical_plan::FileScanConfig;
    use datafusion::datasource::source::DataSourceExec;
    if let Some(config) = plan
        .downcast_ref::<DataSourceExec>()
        .and_then(|e| (e.data_source().as_ref() as &dyn Any).downcast_ref::<FileScanConfig>())
    {
        for file in config.file_groups.iter().flat_map(|g| g.files()) {
            let m = &file.object_meta;
            let name = file_name(&config.object_store_url, &m.location);
            out.push((name, m.size, modified(m)));
        }
    }
    for child in plan.children() {
        files_read(child, out);
    }
}

/// The providers whose rows make up `provider`: itself, or the tables a view (any provider with
/// a logical plan) or a pinned table reads.
pub(super) fn leaves(
    provider: &Arc<dyn TableProvider>,
    out: &mut Vec<Arc<dyn TableProvider>>,
) -> Result<()> {
    leaves_below(provider, out, true)
}

/// The tables [`leaves`] finds under `provider` that a release reads: those below a pin.
pub(super) fn released_leaves(
    provider: &Arc<dyn TableProvider>,
    out: &mut Vec<Arc<dyn TableProvider>>,
) -> Result<()> {
    leaves_below(provider, out, false)
}

/// [`leaves`], keeping a table only if `kept` or it lies below a pin.
fn leaves_below(
    provider: &Arc<dyn TableProvider>,
    out: &mut Vec<Arc<dyn TableProvider>>,
    kept: bool,
) -> Result<()> {
    let any = provider.as_ref() as &dyn Any;
    if let Some(pinned) = any.downcast_ref::<PinnedInput>() {
        return leaves_below(&pinned.inner, out, true);
    }
    // A view's plan: a `CREATE VIEW`'s, or a DataFrame's registered as a table.
    let Some(view) = provider.get_logical_plan() else {
        if kept {
            out.push(Arc::clone(provider));
        }
        return Ok(());
    };
    view.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node
            && let Ok(provider) = source_as_provider(&scan.source)
        {
            leaves_below(&provider, out, kept)?;
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(())
}

/// The settings of a session that change which rows a table's scan reads, or their values: a
/// CSV table without its own header option takes the session's when it is scanned (a row became
/// a header), Parquet reading options change values' types and texts, the listing rules which
/// files are read, the time zone how times are read. Settings of writers and of speed are not
/// pinned (a `SET` of the Parquet compression refused every query of a CSV release).
const READ_SETTINGS: [&str; 9] = [
    "datafusion.catalog.has_header",
    "datafusion.catalog.newlines_in_values",
    "datafusion.execution.parquet.binary_as_string",
    "datafusion.execution.parquet.schema_force_view_types",
    "datafusion.execution.parquet.coerce_int96",
    "datafusion.execution.parquet.coerce_int96_tz",
    "datafusion.execution.parquet.skip_metadata",
    "datafusion.execution.listing_table_ignore_subdirectory",
    "datafusion.execution.time_zone",
];

/// The session's [`READ_SETTINGS`] and their values.
fn read_settings(state: &dyn Session) -> Vec<(String, Option<String>)> {
    state
        .config_options()
        .entries()
        .into_iter()
        .filter(|e| READ_SETTINGS.contains(&e.key.as_str()))
        .map(|e| (e.key, e.value))
        .collect()
}

/// What the rows of `provider` are made of now: one source per listing or memory table below it.
async fn sources_of(state: &dyn Session, provider: &Arc<dyn TableProvider>) -> Result<Sources> {
    let mut tables = Vec::new();
    leaves(provider, &mut tables)?;
    let mut sources = Vec::new();
    let mut cache_differs = None;
    for table in &tables {
        let any = table.as_ref() as &dyn Any;
        if let Some(listing) = any.downcast_ref::<ListingTable>() {
            let ext = &listing.options().file_extension;
            let below = !state
                .config_options()
                .execution
                .listing_table_ignore_subdirectory;
            let mut files = Vec::new();
            for url in listing.table_paths() {
                refuse_special_file(url)?;
                let store = state.runtime_env().object_store(url.object_store())?;
                let metas = files_now(url, store.as_ref(), ext, below).await?;
                if cache_differs.is_none() {
                    cache_differs =
                        cache_differs_from(state, url, store.as_ref(), ext, &metas).await?;
                }
                let local = url.scheme() == "file";
                let changed: Vec<Option<i128>> = match local {
                    true => status_changes(&metas).await?,
                    false => vec![None; metas.len()],
                };
                files.extend(
                    metas
                        .into_iter()
                        .zip(changed)
                        .map(|(m, changed)| FileStamp {
                            changed,
                            location: file_name(&url.object_store(), &m.location),
                            size: m.size,
                            modified: modified(&m),
                            e_tag: m.e_tag,
                        }),
                );
            }
            files.sort_by(|a, b| a.location.cmp(&b.location));
            sources.push(Source::Files(files));
        } else if let Some(memory) = any.downcast_ref::<MemTable>() {
            let mut partitions = Vec::with_capacity(memory.batches.len());
            for p in &memory.batches {
                partitions.push(p.read().await.clone());
            }
            sources.push(Source::Batches(partitions));
        }
    }
    Ok(Sources {
        sources,
        cache_differs,
    })
}

/// Refuses a local table path that is a named pipe or a device: its bytes come once (and
/// opening a pipe waits for a writer), so the statistics and the release would read different
/// rows, or the query would hang.
fn refuse_special_file(url: &ListingTableUrl) -> Result<()> {
    if url.scheme() != "file" || url.is_collection() {
        return Ok(());
    }
    let Ok(path) = url.get_url().to_file_path() else {
        return Ok(());
    };
    match std::fs::metadata(&path) {
        Ok(m) if !m.is_file() && !m.is_dir() => {
            plan_err!("{}: {}", path.display(), crate::input::NOT_REGULAR)
        }
        _ => Ok(()),
    }
}

/// What a table's rows are made of, and whether the session's list-files cache disagrees.
struct Sources {
    sources: Vec<Source>,
    /// How the cache's listing of a directory differs from the directory, if it does.
    cache_differs: Option<String>,
}

/// A file's name as messages give it and stamps are keyed by: its path for a local file, else
/// its store's URL and its key (two buckets may hold the same key).
fn file_name(store: &ObjectStoreUrl, location: &object_store::path::Path) -> String {
    match store.as_str().starts_with("file://") {
        true => format!("/{location}"),
        false => format!("{}{location}", store.as_str()),
    }
}

/// A file's modification time in ns (as pinned and as a scan reads it).
fn modified(meta: &ObjectMeta) -> i64 {
    meta.last_modified.timestamp_nanos_opt().unwrap_or(i64::MIN)
}

/// The files of `url` with extension `ext` as the store lists them now. Not through DataFusion's
/// listing: a session's list-files cache (on by default, without expiry) gives the names, sizes
/// and times it listed first, so a file rewritten in a directory would pass for unchanged.
async fn files_now(
    url: &ListingTableUrl,
    store: &dyn ObjectStore,
    ext: &str,
    below: bool,
) -> Result<Vec<ObjectMeta>> {
    let prefix = url.prefix();
    let listed: Vec<ObjectMeta> = match url.is_collection() {
        true => store.list(Some(prefix)).try_collect().await?,
        false => match store.head(prefix).await {
            Ok(meta) => vec![meta],
            // DataFusion too lists a path that is no object as a prefix.
            Err(object_store::Error::NotFound { .. }) => {
                store.list(Some(prefix)).try_collect().await?
            }
            Err(e) => return Err(e.into()),
        },
    };
    Ok(listed
        .into_iter()
        .filter(|m| m.location.as_ref().ends_with(ext) && url.contains(&m.location, !below))
        .collect())
}

/// How the session's listing of `url` (through its list-files cache, when it keeps one) differs
/// from the files `now` names, with their sizes and times, if it does: the statistics and the
/// rows are read through that listing, and a cache holding the directory as it was, then dropped
/// (`SET datafusion.runtime.list_files_cache_limit = '0'`, or its TTL run out) made the rows of
/// files the statistics never counted pass for pinned.
async fn cache_differs_from(
    state: &dyn Session,
    url: &ListingTableUrl,
    store: &dyn ObjectStore,
    ext: &str,
    now: &[ObjectMeta],
) -> Result<Option<String>> {
    if state
        .runtime_env()
        .cache_manager
        .get_list_files_cache()
        .is_none()
    {
        return Ok(None);
    }
    let listed: Vec<ObjectMeta> = url
        .list_all_files(state, store, ext)
        .await?
        .try_collect()
        .await?;
    let key = |m: &ObjectMeta| (m.location.clone(), m.size, m.last_modified);
    let cached: HashSet<_> = listed.iter().map(key).collect();
    let fresh: HashSet<_> = now.iter().map(key).collect();
    if cached == fresh {
        return Ok(None);
    }
    let differing = fresh
        .difference(&cached)
        .chain(cached.difference(&fresh))
        .map(|f| f.0.clone())
        .min()
        .map_or_else(String::new, |f| {
            format!(", e.g. {}", file_name(&url.object_store(), &f))
        });
    Ok(Some(format!(
        "this session's list-files cache lists {} otherwise than it is now{differing}: the class statistics and the rows could be read from different files. Run SET datafusion.runtime.list_files_cache_limit = '0' (pbg's own sessions keep no such cache), then query again",
        url.as_str()
    )))
}

/// The status change times (ns) of local files, read off the async runtime's threads (one
/// `stat` each: a directory of many files would hold a worker).
async fn status_changes(metas: &[ObjectMeta]) -> Result<Vec<Option<i128>>> {
    let locations: Vec<_> = metas.iter().map(|m| m.location.clone()).collect();
    tokio::task::spawn_blocking(move || {
        let local = object_store::local::LocalFileSystem::new();
        locations.iter().map(|l| status_change(&local, l)).collect()
    })
    .await
    .map_err(|e| datafusion::common::DataFusionError::External(Box::new(e)))
}

/// The status change time (ns) of the local file at `location`, where the platform has one.
fn status_change(
    local: &object_store::local::LocalFileSystem,
    location: &object_store::path::Path,
) -> Option<i128> {
    let path = local.path_to_filesystem(location).ok()?;
    crate::input::status_change(&std::fs::metadata(path).ok()?)
}

/// Whether two batches are the same arrays (a memory table's insert, update or delete replaces
/// or adds batches; the ones pinned are held, so their memory is never another's).
fn same_batch(a: &RecordBatch, b: &RecordBatch) -> bool {
    a.num_rows() == b.num_rows()
        && a.num_columns() == b.num_columns()
        && a.columns()
            .iter()
            .zip(b.columns())
            .all(|(x, y)| Arc::ptr_eq(x, y))
}

/// What changed between two pinnings, said for a user, or `None`.
fn change(then: &[Source], now: &[Source]) -> Option<String> {
    if then.len() != now.len() {
        return Some("the tables it reads are not the same".into());
    }
    for (a, b) in then.iter().zip(now) {
        match (a, b) {
            (Source::Files(a), Source::Files(b)) => {
                if let Some(text) = file_change(a, b) {
                    return Some(text);
                }
            }
            (Source::Batches(a), Source::Batches(b)) => {
                let rows = |p: &[Vec<RecordBatch>]| -> usize {
                    p.iter().flatten().map(RecordBatch::num_rows).sum()
                };
                let same = a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| {
                        x.len() == y.len() && x.iter().zip(y).all(|(u, v)| same_batch(u, v))
                    });
                if !same {
                    return Some(format!(
                        "its rows were inserted, updated or deleted: {} rows then, {} now",
                        rows(a),
                        rows(b)
                    ));
                }
            }
            _ => return Some("the tables it reads are not the same".into()),
        }
    }
    None
}

/// The first difference between two listings of files, or `None` (by name: a directory may
/// hold many files).
fn file_change(then: &[FileStamp], now: &[FileStamp]) -> Option<String> {
    let now_by_name: HashMap<&str, &FileStamp> =
        now.iter().map(|f| (f.location.as_str(), f)).collect();
    for old in then {
        match now_by_name.get(old.location.as_str()) {
            None => return Some(format!("file {} is gone", old.location)),
            Some(&new) if new != old => {
                let status_only = FileStamp {
                    changed: old.changed,
                    ..new.clone()
                } == *old;
                return Some(match (status_only, new.size == old.size) {
                    // A rewrite whose time was set back, or a change of permissions or links:
                    // pbg cannot tell them apart.
                    (true, _) => format!(
                        "the status of file {} changed (ctime), though not its size or modification time: it may have been rewritten with its time set back (or its permissions or links changed)",
                        old.location
                    ),
                    (false, true) => format!("file {} was modified", old.location),
                    (false, false) => format!(
                        "file {} was modified: {} bytes then, {} now",
                        old.location, old.size, new.size
                    ),
                });
            }
            Some(_) => {}
        }
    }
    let then_names: HashSet<&str> = then.iter().map(|f| f.location.as_str()).collect();
    now.iter()
        .find(|f| !then_names.contains(f.location.as_str()))
        .map(|f| format!("file {} is new", f.location))
}

#[async_trait]
impl TableProvider for PinnedInput {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.inner.constraints()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.check(state).await?;
        let plan = self.inner.scan(state, projection, filters, limit).await?;
        self.check_files_read(&plan)?;
        self.without_trusted_order(plan)
    }

    async fn scan_with_args<'a>(
        &self,
        state: &dyn Session,
        args: ScanArgs<'a>,
    ) -> Result<ScanResult> {
        self.check(state).await?;
        let scan = self.inner.scan_with_args(state, args).await?;
        self.check_files_read(scan.plan())?;
        Ok(ScanResult::new(
            self.without_trusted_order(scan.into_inner())?,
        ))
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        self.inner.supports_filters_pushdown(filters)
    }

    fn statistics(&self) -> Option<Statistics> {
        self.inner.statistics()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table path that is a named pipe is refused before it is opened (opening one waits for
    /// a writer); a file and a directory are not.
    #[test]
    fn a_named_pipe_table_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let pipe = dir.path().join("p.csv");
        let made = std::process::Command::new("mkfifo")
            .arg(&pipe)
            .status()
            .unwrap();
        assert!(made.success());
        let url = |p: &std::path::Path| ListingTableUrl::parse(p.to_str().unwrap()).unwrap();
        let e = refuse_special_file(&url(&pipe)).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let file = dir.path().join("a.csv");
        std::fs::write(&file, "a\n1\n").unwrap();
        assert!(refuse_special_file(&url(&file)).is_ok());
        assert!(refuse_special_file(&url(dir.path())).is_ok());
    }

    /// The files a scan reads are found in its plan (pbg's CSV scan and DataFusion's Parquet
    /// scan), named as the pin names them, so that a file the pin lacks is caught.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_files_a_scan_reads_are_those_pinned() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("a.csv");
        std::fs::write(&csv, "zip,disease\n13053,flu\n13068,cold\n").unwrap();
        let ctx = crate::input::new_context();
        let parquet = dir.path().join("b.parquet");
        let copy = format!(
            "COPY (SELECT 1 AS x) TO '{}' STORED AS PARQUET",
            parquet.display()
        );
        ctx.sql(&copy).await.unwrap().collect().await.unwrap();
        for path in [&csv, &parquet] {
            let input = crate::input::Input::Path(path.clone());
            let df = crate::input::open(&ctx, &input, b',').await.unwrap();
            let LogicalPlan::TableScan(scan) = df.logical_plan() else {
                panic!("not a scan");
            };
            let provider = source_as_provider(&scan.source).unwrap();
            let state = ctx.state();
            let pin = PinnedInput::pin(&state, "t", "t".into(), provider, false)
                .await
                .unwrap()
                .unwrap();
            let plan = pin.inner.scan(&state, None, &[], None).await.unwrap();
            let mut read = Vec::new();
            files_read(&plan, &mut read);
            let size = std::fs::metadata(path).unwrap().len();
            assert!(
                read.iter()
                    .any(|(name, s, _)| name == &path.display().to_string() && *s == size),
                "{read:?}"
            );
            pin.check_files_read(&plan).unwrap();
            // A pin of other files refuses this scan.
            let mut other = pin;
            if let Some(Source::Files(files)) = other.sources.first_mut() {
                files[0].size += 1;
            }
            let err = other.check_files_read(&plan).unwrap_err().to_string();
            assert!(err.contains("is to be read as it was not"), "{err}");
        }
    }
}
