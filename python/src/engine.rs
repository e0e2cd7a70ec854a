//! pbg's own session for the Pythonic layer: Arrow data registered as tables, profiles declared
//! from TOML, and the engine's jobs run on them. The GIL is released while the engine works.

use std::path::Path;
use std::sync::Arc;

use arrow::array::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use pbg::Evaluator;
use pbg::indices::Present;
use pbg::input::block_on;
use pbg::policy::PolicyText;
use pbg::profile::Profile;
use pbg::release::Job;
use pbg::sql::Registry;
use pyo3::prelude::*;

use crate::arrow_stream::{ArrowStream, import};
use crate::error::{datafusion, pbg};

/// Rows per slice of registered Arrow data: slices (zero-copy) are spread over the session's
/// partitions, in order, so that pass 1 runs in parallel and partitions taken in order are the
/// data in order.
const SLICE_ROWS: usize = 1 << 16;

/// A pbg session: its DataFusion context (with every pbg function) and its profile registry.
#[pyclass(module = "pbg._pbg", frozen)]
pub struct Engine {
    ctx: SessionContext,
    registry: Arc<Registry>,
}

impl Engine {
    fn profile(&self, name: &str) -> PyResult<Profile> {
        self.registry.declaration("pbg", name).map_err(datafusion)
    }
}

/// `batches` cut into slices of at most [`SLICE_ROWS`] rows, dealt in order into `n` partitions.
fn partitions(batches: Vec<RecordBatch>, n: usize) -> Vec<Vec<RecordBatch>> {
    let mut slices = Vec::new();
    for b in batches {
        let mut offset = 0;
        while offset < b.num_rows() {
            let len = SLICE_ROWS.min(b.num_rows() - offset);
            slices.push(b.slice(offset, len));
            offset += len;
        }
    }
    let n = n.clamp(1, slices.len().max(1));
    let per = slices.len().div_ceil(n).max(1);
    let mut out: Vec<Vec<RecordBatch>> = slices.chunks(per).map(|c| c.to_vec()).collect();
    if out.is_empty() {
        out.push(Vec::new());
    }
    out
}

#[pymethods]
impl Engine {
    /// A fresh session.
    #[new]
    fn new() -> Self {
        let ctx = pbg::input::new_context();
        let registry = pbg::sql::register(&ctx);
        Engine { ctx, registry }
    }

    /// Registers Arrow data (`__arrow_c_stream__`: pyarrow, polars, ...) as table `name`, without
    /// copying its buffers.
    fn register_arrow(&self, name: &str, data: &Bound<'_, PyAny>) -> PyResult<()> {
        let (schema, batches) = import(data, &format!("table `{name}`"))?;
        // Refused here, before DataFusion sees the schema, with the engine's message.
        pbg::input::check_unique_columns(&pbg::input::Input::Table(name.to_string()), &schema)
            .map_err(pbg)?;
        let n = self.ctx.state().config().target_partitions();
        let table = MemTable::try_new(schema, partitions(batches, n)).map_err(datafusion)?;
        self.ctx.deregister_table(name).map_err(datafusion)?;
        self.ctx
            .register_table(name, Arc::new(table))
            .map_err(datafusion)?;
        Ok(())
    }

    /// Declares profile `name` from TOML text whose relative paths are relative to `base`; with
    /// `table` (or `path`), the profile reads that registered table (or path) instead of its own
    /// input. `file` is the profile's file when it was read from one: messages name it, and no
    /// output may replace it (a release written over its own profile was not refused).
    #[pyo3(signature = (name, toml, base, table=None, path=None, file=None))]
    fn declare(
        &self,
        name: &str,
        toml: &str,
        base: &str,
        table: Option<String>,
        path: Option<String>,
        file: Option<String>,
    ) -> PyResult<()> {
        let origin = file.unwrap_or_else(|| format!("profile '{name}'"));
        let mut profile = Profile::from_toml_str(toml, Path::new(base), &origin).map_err(pbg)?;
        if let Some(t) = table {
            profile.input = pbg::input::Input::Table(t);
        }
        if let Some(p) = path {
            profile.input = pbg::input::Input::Path(p.into());
        }
        self.registry.declare(name, profile).map_err(datafusion)
    }

    /// Runs SQL in the session; the result as an Arrow stream.
    fn sql(&self, py: Python<'_>, query: &str) -> PyResult<ArrowStream> {
        let ctx = self.ctx.clone();
        let (schema, batches) = py
            .detach(|| {
                block_on(async move {
                    let df = ctx.sql(query).await?;
                    let schema = Arc::new(df.schema().as_arrow().clone());
                    let batches = df.collect().await?;
                    Ok::<_, datafusion::error::DataFusionError>((schema, batches))
                })
            })
            .map_err(pbg)?
            .map_err(datafusion)?;
        Ok(ArrowStream::new(schema, batches))
    }

    /// The indices of `node` under profile `name`, as the CLI's `evaluate` prints them (JSON).
    fn evaluate(&self, py: Python<'_>, name: &str, node: &str) -> PyResult<String> {
        let profile = self.profile(name)?;
        let ctx = self.ctx.clone();
        py.detach(|| {
            let ds = block_on(pbg::statistics::statistics_in(&ctx, &profile))??;
            let ev = Evaluator::new(Arc::new(ds))?;
            let node = ev.parse_node(node)?;
            let present = Present::of(ev.dataset());
            let mut m = pbg::evaluate::json::node_json(&ev.evaluate(&node)?, ev.lattice(), present);
            m.insert("qis".into(), serde_json::json!(ev.qi_names()));
            Ok::<_, pbg::PbgError>(serde_json::Value::Object(m).to_string())
        })
        .map_err(pbg)
    }

    /// Releases profile `name` to `output` (CSV or Parquet, written atomically and verified), as
    /// the CLI's `anonymize`; returns its JSON report.
    #[pyo3(signature = (name, output, node=None, pick=None, require=None, minimize=None,
        maximize=None, objectives=None, significance=None, goal=None, weights=None,
        suppression_rule=None))]
    #[allow(clippy::too_many_arguments)]
    fn anonymize(
        &self,
        py: Python<'_>,
        name: &str,
        output: &str,
        node: Option<String>,
        pick: Option<String>,
        require: Option<String>,
        minimize: Option<String>,
        maximize: Option<String>,
        objectives: Option<String>,
        significance: Option<String>,
        goal: Option<String>,
        weights: Option<String>,
        suppression_rule: Option<String>,
    ) -> PyResult<String> {
        let job = Job {
            node,
            policy: PolicyText {
                comparator: pick,
                require,
                minimize,
                maximize,
                objectives,
                significance,
                goal,
                weights,
                evaluations: None,
            },
            suppression_rule,
        };
        let mut profile = self.profile(name)?;
        let ctx = self.ctx.clone();
        py.detach(|| {
            job.apply_rule(&mut profile)?;
            let report = job.run(
                &ctx,
                &profile,
                Path::new(output),
                &|_: &Evaluator, _: &pbg::Node| Ok(()),
                &|_| Ok(Vec::new()),
                &|_| {},
            )?;
            Ok::<_, pbg::PbgError>(report.to_string())
        })
        .map_err(pbg)
    }
}
