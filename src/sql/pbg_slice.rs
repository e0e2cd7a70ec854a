//! `pbg_slice('profile', l, 'mode' [, seed])`: the sliced release of a registered profile's data —
//! `bucket`, then `c{i}.{attribute}` columns — with l-diverse buckets (p(t,s) ≤ 1/l), the
//! attributes partitioned by chi_matrix, every column permuted inside each bucket with the seed
//! (default 0). Checked independently before any row is returned.
//!
//! ```sql
//! SELECT bucket, count(*) FROM pbg_slice('adult', 5, 'bucketization', 7) GROUP BY bucket;
//! ```

/// The usage line `\\f` of `pbg sql` shows.
pub const USAGE: &str =
    "pbg_slice('profile', l, 'mode' [, seed]): the sliced release, l-diverse buckets";

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{Result, plan_err};

use super::registry::Registry;
use super::table::{Producer, arity, emit_sliced, int_arg, lazy_table, plan, string_arg};
use crate::slicing::table::SliceMode;
use crate::slicing::{PartitionChoice, SliceOptions, slice_table};

const NAME: &str = "pbg_slice";

/// The `pbg_slice` table function.
#[derive(Debug)]
pub struct PbgSliceFunc {
    registry: Arc<Registry>,
}

impl PbgSliceFunc {
    /// Creates the function over a registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        PbgSliceFunc { registry }
    }
}

impl TableFunctionImpl for PbgSliceFunc {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        arity(
            NAME,
            exprs,
            3,
            4,
            "pbg_slice('profile', l, 'mode' [, seed])",
        )?;
        let name = string_arg(NAME, exprs, 0, "the profile")?;
        let profile = self.registry.declaration(NAME, &name)?;
        let ctx = self.registry.context_for(NAME, args.session(), &profile)?;
        let l = int_arg(NAME, exprs, 1, "l")?;
        if l < 1 {
            return plan_err!("{NAME}: l must be at least 1, got {l}");
        }
        let mode = SliceMode::parse(&string_arg(NAME, exprs, 2, "the mode")?)
            .map_err(|e| plan(NAME, e))?;
        let seed = if exprs.len() > 3 {
            let s = int_arg(NAME, exprs, 3, "the seed")?;
            if s < 0 {
                return plan_err!("{NAME}: the seed must not be negative, got {s}");
            }
            s as u64
        } else {
            0
        };
        let options = SliceOptions {
            l: l as u64,
            mode,
            partition: PartitionChoice::Chi,
            seed,
            generalize: None,
            diversity: crate::slicing::diversity::Diversity::Tuple,
        };
        // The rows are read now, and slicing is planned here so that an infeasible l fails at
        // planning with its reason.
        let table = crate::input::block_on(crate::io::read_table_in(
            &ctx,
            &profile.input,
            profile.delimiter,
        ))
        .map_err(|e| plan(NAME, e))?
        .map_err(|e| plan(NAME, e))?;
        let batch = slice_table(&profile, &table, &options).map_err(|e| plan(NAME, e))?;
        let schema = batch.schema();
        let produce: Arc<Producer> = Arc::new(move |size, sink| {
            emit_sliced(&batch, size, sink);
            Ok::<(), datafusion::error::DataFusionError>(())
        });
        lazy_table(schema, produce)
    }
}
