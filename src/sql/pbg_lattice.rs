//! `pbg_lattice('profile')`: one row per lattice node (a level column per QI, then the fields of
//! `pbg_evaluate`), computed by roll-ups in parallel in blocks of nodes and streamed in batches.
//!
//! ```sql
//! SELECT * FROM pbg_lattice('adult') WHERE k >= 10 AND l_distinct >= 3 ORDER BY glm LIMIT 5;
//! ```

/// The usage line `\\f` of `pbg sql` shows.
pub const USAGE: &str =
    "pbg_lattice('profile'): every node of the lattice with every index, one row each";

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::Result;

use super::registry::Registry;
use super::table::{Producer, arity, exec, lazy_table, string_arg};
use crate::indices::{indices_batch, indices_schema};

const NAME: &str = "pbg_lattice";

/// Nodes swept at a time.
const BLOCK_NODES: usize = 1 << 18;

/// The `pbg_lattice` table function.
#[derive(Debug)]
pub struct PbgLatticeFunc {
    registry: Arc<Registry>,
}

impl PbgLatticeFunc {
    /// Creates the function over a registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        PbgLatticeFunc { registry }
    }
}

impl TableFunctionImpl for PbgLatticeFunc {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        arity(NAME, exprs, 1, 1, "pbg_lattice('profile')")?;
        let ev = self.registry.statistics(
            NAME,
            &string_arg(NAME, exprs, 0, "the profile")?,
            args.session(),
        )?;
        let present = crate::indices::Present::of(ev.dataset());
        let schema = indices_schema(&ev.qi_names(), present);
        let produce: Arc<Producer> = Arc::new(move |size, sink| {
            // Swept in blocks, each sent as batches as it is done (the lattice is never held
            // whole); a consumer that has had enough (a LIMIT) stops the sweep.
            ev.sweep_lattice(BLOCK_NODES, &|| {}, &mut |block| {
                for chunk in block.chunks(size.max(1)) {
                    if !sink(indices_batch(&ev.qi_names(), chunk, present)?) {
                        return Ok(false);
                    }
                }
                Ok(true)
            })
            .map_err(|e| exec(NAME, e))
        });
        lazy_table(schema, produce)
    }
}
