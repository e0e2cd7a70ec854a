//! `pbg_correlation('table' [, 'a,b,..'])`: χ² and φ² for every pair of columns of a registered
//! table (all its columns by default), one row per pair: `a`, `b`, `chi_square`, `phi_squared`.
//! Numeric columns with more than 10 distinct values are cut into 10 equal-frequency bins, as in
//! `pbg correlate`.
//!
//! ```sql
//! SELECT a, b, phi_squared FROM pbg_correlation('adult', 'age,education,occupation')
//! ORDER BY phi_squared DESC;
//! ```

/// The usage line `\\f` of `pbg sql` shows.
pub const USAGE: &str =
    "pbg_correlation('table' [, 'a,b,..']): chi-square and phi-squared of every pair of columns";

use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{Result, plan_err};

use super::table::{Producer, arity, emit_sliced, exec, lazy_table, string_arg};
use crate::io::Table;
use crate::slicing::correlation::correlate;

const NAME: &str = "pbg_correlation";

/// Bins for numeric columns.
const BINS: usize = 10;

/// The `pbg_correlation` table function.
#[derive(Debug)]
pub struct PbgCorrelationFunc {
    registry: Arc<super::registry::Registry>,
}

impl PbgCorrelationFunc {
    /// Creates the function over a registry (which knows how to read a foreign session's tables).
    pub fn new(registry: Arc<super::registry::Registry>) -> Self {
        PbgCorrelationFunc { registry }
    }
}

impl TableFunctionImpl for PbgCorrelationFunc {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        arity(NAME, exprs, 1, 2, "pbg_correlation('table' [, 'a,b,..'])")?;
        let name = string_arg(NAME, exprs, 0, "the table")?;
        let columns: Vec<String> = if exprs.len() > 1 {
            string_arg(NAME, exprs, 1, "the columns")?
                .split(',')
                .map(|c| c.trim().to_string())
                .filter(|c| !c.is_empty())
                .collect()
        } else {
            Vec::new()
        };
        let state = self
            .registry
            .context_with_table(NAME, args.session(), &name)?
            .state();
        let schema_provider = state.schema_for_ref(name.as_str())?;
        let table_name = name.rsplit('.').next().unwrap_or(&name).to_string();
        // Registered tables are looked up without I/O, so waiting here does not block a runtime.
        let Some(provider) = futures::executor::block_on(schema_provider.table(&table_name))?
        else {
            return plan_err!("{NAME}: no table named `{name}`");
        };
        for c in &columns {
            if provider.schema().index_of(c).is_err() {
                return plan_err!("{NAME}: table `{name}` has no column `{c}`");
            }
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Utf8, false),
            Field::new("b", DataType::Utf8, false),
            Field::new("chi_square", DataType::Float64, false),
            Field::new("phi_squared", DataType::Float64, false),
        ]));
        let out = schema.clone();
        let produce: Arc<Producer> = Arc::new(move |size, sink| {
            // On a blocking thread of the runtime: scan the table, then correlate.
            let handle = tokio::runtime::Handle::current();
            let batches = handle.block_on(async {
                let plan = provider.scan(&state, None, &[], None).await?;
                datafusion::physical_plan::collect(plan, state.task_ctx()).await
            })?;
            let table = Table {
                path: PathBuf::from(&name),
                schema: provider.schema(),
                batches,
            };
            let m = correlate(&table, &columns, BINS).map_err(|e| exec(NAME, e))?;
            let (mut a, mut b, mut chi, mut phi) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            for i in 0..m.columns.len() {
                for j in i + 1..m.columns.len() {
                    a.push(m.columns[i].clone());
                    b.push(m.columns[j].clone());
                    chi.push(m.chi_square[i][j]);
                    phi.push(m.phi_squared[i][j]);
                }
            }
            let cols: Vec<ArrayRef> = vec![
                Arc::new(StringArray::from(a)),
                Arc::new(StringArray::from(b)),
                Arc::new(Float64Array::from(chi)),
                Arc::new(Float64Array::from(phi)),
            ];
            emit_sliced(&RecordBatch::try_new(out.clone(), cols)?, size, sink);
            Ok(())
        });
        lazy_table(schema, produce)
    }
}
