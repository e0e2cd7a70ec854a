//! `pbg_evaluate('profile', 'L1,L2,..')`: one row with every index of one node (the fields of
//! `pbg evaluate`: a level column per QI, classes, k, max_class, l_distinct, suppressed, s_k, s_l,
//! l_entropy, l_probabilistic, glm and cm when the profile has a class attribute).
//!
//! ```sql
//! SELECT k, l_distinct, suppressed, glm FROM pbg_evaluate('adult', '2,1,1,1,0,1,2,1');
//! ```

/// The usage line `\\f` of `pbg sql` shows.
pub const USAGE: &str = "pbg_evaluate('profile', 'L1,L2,..'): every index of one node, one row";

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::Result;

use super::registry::Registry;
use super::table::{Producer, emit_sliced, exec, lazy_table, profile_and_node};
use crate::indices::{indices_batch, indices_schema};

const NAME: &str = "pbg_evaluate";

/// The `pbg_evaluate` table function.
#[derive(Debug)]
pub struct PbgEvaluateFunc {
    registry: Arc<Registry>,
}

impl PbgEvaluateFunc {
    /// Creates the function over a registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        PbgEvaluateFunc { registry }
    }
}

impl TableFunctionImpl for PbgEvaluateFunc {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let (ev, node) = profile_and_node(&self.registry, NAME, &args, false)?;
        let present = crate::indices::Present::of(ev.dataset());
        let schema = indices_schema(&ev.qi_names(), present);
        let produce: Arc<Producer> = Arc::new(move |size, sink| {
            let ix = ev.evaluate(&node).map_err(|e| exec(NAME, e))?;
            emit_sliced(&indices_batch(&ev.qi_names(), &[ix], present)?, size, sink);
            Ok(())
        });
        lazy_table(schema, produce)
    }
}
