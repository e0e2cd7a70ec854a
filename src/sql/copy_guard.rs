//! A safety net for SQL `COPY ... TO`: an analyzer rule that refuses to write where a table of
//! the query reads — the same file, a file inside a scanned directory, or one a scanned glob
//! matches — so that `COPY (SELECT * FROM pbg_anonymize('p', ..)) TO '<the input>'` cannot
//! replace the input with its release. Only local listing tables are compared. Nor may it write
//! over a declared profile's files: its input, its TOML file, its QI and sensitive hierarchies.
//! A relative target is made absolute here, so that a cluster's executors (whose working
//! directory differs) write where the guard looked.

use std::path::PathBuf;

use datafusion::catalog::TableProvider;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::listing::ListingTable;
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::AnalyzerRule;

use crate::input::Input;

/// The analyzer rule (registered by [`super::register`]), with the registry whose profiles'
/// files it protects.
pub struct CopyGuard {
    /// The profiles declared in the session.
    pub registry: std::sync::Arc<super::Registry>,
    /// The session, where a profile declared over a table (`table = "t"`) finds its files.
    pub session: super::SessionSource,
}

/// The local paths a plan's listing tables read (globs kept as patterns); with `released`, only
/// those a release reads (below a pin).
fn scanned_paths(plan: &LogicalPlan, released: bool) -> Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    // Subqueries too: `COPY (… WHERE id IN (SELECT id FROM t)) TO '<t's file>'` reads t.
    plan.apply_with_subqueries(|node| {
        let LogicalPlan::TableScan(scan) = node else {
            return Ok(TreeNodeRecursion::Continue);
        };
        let Ok(provider) = source_as_provider(&scan.source) else {
            return Ok(TreeNodeRecursion::Continue);
        };
        table_paths(&provider, released, &mut paths)?;
        // Views are inlined before this rule runs; their scans are visited here too.
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(paths)
}

/// Appends the local paths `provider`'s listing tables read (globs kept as patterns); with
/// `released`, only those a release reads (below a pin).
fn table_paths(
    provider: &std::sync::Arc<dyn TableProvider>,
    released: bool,
    paths: &mut Vec<PathBuf>,
) -> Result<()> {
    // A release's input is pinned (`PinnedInput`): the files are those of the table below.
    let mut tables = Vec::new();
    match released {
        true => super::pinned_input::released_leaves(provider, &mut tables)?,
        false => super::pinned_input::leaves(provider, &mut tables)?,
    }
    for table in &tables {
        let Some(listing) = (table.as_ref() as &dyn std::any::Any).downcast_ref::<ListingTable>()
        else {
            continue;
        };
        for url in listing.table_paths() {
            if url.scheme() != "file" {
                continue;
            }
            // The decoded path (a prefix is percent-encoded: `#`, `%`, `{`, …).
            let mut path = url
                .get_url()
                .to_file_path()
                .unwrap_or_else(|_| PathBuf::from(format!("/{}", url.prefix().as_ref())));
            if let Some(glob) = url.get_glob() {
                path.push(glob.as_str());
            }
            paths.push(path);
        }
    }
    Ok(())
}

/// Refuses an `INSERT INTO` a listing table whose location DataFusion took for a glob
/// (`LOCATION 'new[1]/'`): the rows went to a file of a random name in the glob's base
/// directory, reported as inserted, and the table read none of them.
fn refuse_insert_into_glob(dml: &datafusion::logical_expr::DmlStatement) -> Result<()> {
    if !matches!(dml.op, datafusion::logical_expr::WriteOp::Insert(_)) {
        return Ok(());
    }
    let Ok(provider) = source_as_provider(&dml.target) else {
        return Ok(());
    };
    let Some(listing) = (provider.as_ref() as &dyn std::any::Any).downcast_ref::<ListingTable>()
    else {
        return Ok(());
    };
    // DataFusion gives a directory whose schema it infers the glob `*.<format's extension>`:
    // the file an insert adds there (`<random>.<extension>`) matches it. Not with a compression
    // (`*.csv.gz`): the insert writes a plain `.csv` file, which that glob does not read.
    let ext = listing.options().format.get_ext();
    let own = |glob: &str| glob == format!("*.{ext}");
    match listing
        .table_paths()
        .iter()
        .find_map(|u| u.get_glob().as_ref().filter(|g| !own(g.as_str())))
    {
        Some(glob) if glob.as_str().starts_with(&format!("*.{ext}.")) => {
            Err(DataFusionError::Plan(format!(
                "INSERT INTO {}: the table reads compressed files (`{}`), but DataFusion would write the rows to a plain `.{ext}` file, which the table does not read; insert into a table without compression",
                dml.table_name,
                glob.as_str()
            )))
        }
        Some(glob) => Err(DataFusionError::Plan(format!(
            "INSERT INTO {}: its location holds a glob (`{}`): DataFusion would write the rows to a file of another name; give the table a location without `*`, `?` or `[`",
            dml.table_name,
            glob.as_str()
        ))),
        None => Ok(()),
    }
}

/// Moves a `COPY`'s format options (`format.*`: a CSV target's delimiter, a Parquet target's
/// compression, …) into its file format, so that they travel with the plan: DataFusion 55's plan
/// serialization drops a `COPY`'s options (it decodes them as none), and on a cluster the
/// target was written with its format's defaults. Locally the format applies them as before.
/// Options a format does not take are left where they were, for DataFusion to refuse, and so
/// are all of a COPY's options when some are not its format's (those are then lost on a cluster).
fn fold_format_options(
    copy: &mut datafusion::logical_expr::dml::CopyTo,
    config: &ConfigOptions,
) -> Result<()> {
    use datafusion::common::config::{ConfigFileType, TableOptions};
    use datafusion::datasource::file_format::csv::CsvFormatFactory;
    use datafusion::datasource::file_format::json::JsonFormatFactory;
    use datafusion::datasource::file_format::parquet::ParquetFormatFactory;
    use datafusion::datasource::file_format::{
        FileFormatFactory, file_type_to_format, format_as_file_type,
    };

    let (format, rest): (std::collections::HashMap<_, _>, _) = copy
        .options
        .clone()
        .into_iter()
        .partition(|(k, _)| k.starts_with("format."));
    // Only a COPY whose options are all its format's: DataFusion hands the format every option
    // left (`execution.keep_partition_by_columns`, …), which a format holding options refuses.
    if format.is_empty() || !rest.is_empty() {
        return Ok(());
    }
    let Ok(factory) = file_type_to_format(&copy.file_type) else {
        return Ok(());
    };
    // A format already holding options is left as it is (its own options win).
    let kind = if factory
        .downcast_ref::<CsvFormatFactory>()
        .is_some_and(|f| f.options.is_none())
    {
        ConfigFileType::CSV
    } else if factory
        .downcast_ref::<ParquetFormatFactory>()
        .is_some_and(|f| f.options.is_none())
    {
        ConfigFileType::PARQUET
    } else if factory
        .downcast_ref::<JsonFormatFactory>()
        .is_some_and(|f| f.options.is_none())
    {
        ConfigFileType::JSON
    } else {
        return Ok(());
    };
    // The session's defaults for the format, then the COPY's own (as DataFusion applies them).
    let mut table = TableOptions::default_from_session_config(config);
    table.set_config_format(kind.clone());
    if table.alter_with_string_hash_map(&format).is_err() {
        return Ok(());
    }
    let folded: std::sync::Arc<dyn FileFormatFactory> = match kind {
        ConfigFileType::CSV => std::sync::Arc::new(CsvFormatFactory::new_with_options(table.csv)),
        ConfigFileType::PARQUET => {
            std::sync::Arc::new(ParquetFormatFactory::new_with_options(table.parquet))
        }
        ConfigFileType::JSON => {
            std::sync::Arc::new(JsonFormatFactory::new_with_options(table.json))
        }
    };
    copy.file_type = format_as_file_type(folded);
    copy.options = rest;
    Ok(())
}

/// A relative local `COPY` target made absolute against this process's directory (a trailing `/`,
/// which asks for a directory, kept): whoever writes it — this process or a cluster's executor,
/// whose directory differs — writes the place the guard checked.
fn absolute_target(output: &str) -> Result<String> {
    if output.contains("://") || PathBuf::from(output).is_absolute() {
        return Ok(output.to_string());
    }
    let mut absolute = std::path::absolute(output)
        .map_err(|e| DataFusionError::Plan(format!("COPY: {output}: {e}")))?
        .to_string_lossy()
        .into_owned();
    if output.ends_with('/') && !absolute.ends_with('/') {
        absolute.push('/');
    }
    Ok(absolute)
}

impl std::fmt::Debug for CopyGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyGuard")
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

impl CopyGuard {
    /// Refuses a write (`what`, named in the message) to `output` (a file, or the directory a
    /// partitioned write fills) that would replace or land inside one of the tables `sources`,
    /// or, if `profiles`, a declared profile's files.
    fn refuse_write_over(
        &self,
        what: &str,
        output: &std::path::Path,
        partitioned: bool,
        sources: Vec<PathBuf>,
        profiles: bool,
    ) -> Result<()> {
        let refuse = |what: &str, e: crate::PbgError| DataFusionError::Plan(format!("{what}: {e}"));
        for source in sources {
            let source = Input::Path(source);
            crate::io::refuse_overwrite(output, &source).map_err(|e| refuse(what, e))?;
            if partitioned {
                crate::io::refuse_partitioned_over(output, &source).map_err(|e| refuse(what, e))?;
            }
        }
        if !profiles {
            return Ok(());
        }
        for profile in self.registry.profiles()? {
            profile.protect(output).map_err(|e| refuse(what, e))?;
            if partitioned {
                crate::io::refuse_partitioned_over(output, &profile.input)
                    .map_err(|e| refuse(what, e))?;
            }
            // A profile over a table reads that table's files: a COPY over one of them changed
            // the input under a view of its release (on a cluster, unpinned, into a release
            // that broke k).
            if let Input::Table(table) = &profile.input {
                for source in self.files_of(table)? {
                    let source = Input::Path(source);
                    crate::io::refuse_overwrite(output, &source).map_err(|e| refuse(what, e))?;
                    if partitioned {
                        crate::io::refuse_partitioned_over(output, &source)
                            .map_err(|e| refuse(what, e))?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Refuses, on a cluster, a `COPY` holding options its file format could not take in:
    /// DataFusion 55's plan serialization drops them, and the executors wrote the target without
    /// them (a `format.*` option along with one outside it, or one the format refuses, which
    /// the scheduler never saw to refuse).
    fn refuse_options_lost_on_a_cluster(
        &self,
        copy: &datafusion::logical_expr::dml::CopyTo,
    ) -> Result<()> {
        if copy.options.is_empty() {
            return Ok(());
        }
        let distributed = (self.session)().is_some_and(|s| {
            s.config()
                .get_extension::<crate::input::Distributed>()
                .is_some()
        });
        if !distributed {
            return Ok(());
        }
        let mut names: Vec<&str> = copy.options.keys().map(String::as_str).collect();
        names.sort_unstable();
        Err(DataFusionError::Plan(format!(
            "COPY to {} on a cluster: the option(s) {} would not reach the executors (DataFusion 55's plan serialization drops a COPY's options; only `format.*` options, given alone, travel, moved into the file format): give only `format.*` options, or run this COPY without --cluster",
            copy.output_url,
            names.join(", ")
        )))
    }

    /// The local files table `table` of the session reads (none when the session is gone or
    /// holds no such table: the profile then reads nothing here).
    fn files_of(&self, table: &str) -> Result<Vec<PathBuf>> {
        let Some(state) = (self.session)() else {
            return Ok(Vec::new());
        };
        let ctx = datafusion::prelude::SessionContext::new_with_state(state);
        let table = table.to_string();
        let provider = crate::input::block_on(async move { ctx.table_provider(table).await })
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let mut paths = Vec::new();
        if let Ok(provider) = provider {
            table_paths(&provider, false, &mut paths)?;
        }
        Ok(paths)
    }

    /// Refuses an `INSERT INTO` a local listing table of release rows whose new file would land
    /// in the release's input: a table over the input's directory (or a link to it) took the
    /// release into the input, whose next read held it.
    fn refuse_insert_into_input(&self, dml: &datafusion::logical_expr::DmlStatement) -> Result<()> {
        if !matches!(dml.op, datafusion::logical_expr::WriteOp::Insert(_)) {
            return Ok(());
        }
        let Ok(provider) = source_as_provider(&dml.target) else {
            return Ok(());
        };
        let Some(listing) =
            (provider.as_ref() as &dyn std::any::Any).downcast_ref::<ListingTable>()
        else {
            return Ok(());
        };
        let partitioned = !listing.options().table_partition_cols.is_empty();
        let ext = listing.options().format.get_ext();
        for url in listing.table_paths() {
            let Ok(path) = url.get_url().to_file_path() else {
                continue;
            };
            // The file an insert adds: a new file in a directory, else the file itself.
            let written = match url.is_collection() {
                true => path.join(format!("insert.{ext}")),
                false => path.clone(),
            };
            let (output, partitioned) = match partitioned {
                true => (path, true),
                false => (written, false),
            };
            // Only the tables a release reads: an insert of raw rows into a table (even one a
            // profile reads, or from itself) is the table's own business.
            let what = format!("INSERT INTO {}", dml.table_name);
            let released = scanned_paths(&dml.input, true)?;
            self.refuse_write_over(&what, &output, partitioned, released, false)?;
        }
        Ok(())
    }
}

impl AnalyzerRule for CopyGuard {
    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        if let LogicalPlan::Dml(dml) = &plan {
            refuse_insert_into_glob(dml)?;
            self.refuse_insert_into_input(dml)?;
        }
        let LogicalPlan::Copy(mut copy) = plan else {
            return Ok(plan);
        };
        // DataFusion takes a target holding glob characters for a glob: `COPY .. TO 'x[2].csv'`
        // wrote a file of a random name into the directory and reported its rows as written.
        if !copy.output_url.contains("://") && crate::input::has_glob(&copy.output_url) {
            return Err(DataFusionError::Plan(format!(
                "COPY: {}: DataFusion reads a path holding `*`, `?` or `[` as a glob and would write a file of another name: choose a name without them",
                copy.output_url
            )));
        }
        copy.output_url = absolute_target(&copy.output_url)?;
        // A file URL is compared as the path it names (percent-decoded).
        let output = match url::Url::parse(&copy.output_url) {
            Ok(u) if u.scheme() == "file" => {
                u.to_file_path().unwrap_or_else(|_| PathBuf::from(u.path()))
            }
            _ => PathBuf::from(&copy.output_url),
        };
        // Written to a staged file renamed over the target, a named pipe or a device would be
        // replaced (the store refuses it too, but DataFusion's writer reports that only as a
        // failure to finalize its writes).
        crate::io::refuse_special_target(&output)
            .map_err(|e| DataFusionError::Plan(format!("COPY: {e}")))?;
        fold_format_options(&mut copy, config)?;
        self.refuse_options_lost_on_a_cluster(&copy)?;
        let partitioned = !copy.partition_by.is_empty();
        let sources = scanned_paths(&copy.input, false)?;
        self.refuse_write_over("COPY", &output, partitioned, sources, true)?;
        Ok(LogicalPlan::Copy(copy))
    }

    fn name(&self) -> &str {
        "pbg_copy_guard"
    }
}
