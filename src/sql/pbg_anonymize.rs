//! `pbg_anonymize('profile', 'L1,L2,..')`: the release of a node as a table — QIs replaced by their
//! labels, identifiers dropped, suppressed rows removed — streamed chunk by chunk. With COPY it is
//! the ETL step.
//!
//! ```sql
//! COPY (SELECT * FROM pbg_anonymize('adult', '2,1,1,1,0,1,2,1')) TO 'adult-release.parquet';
//! ```

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::Result;

use super::registry::Registry;
use super::table::{Producer, exec, lazy_table, profile_and_node};
use crate::release::{release_chunks, release_schema};

const NAME: &str = "pbg_anonymize";

/// The `pbg_anonymize` table function.
#[derive(Debug)]
pub struct PbgAnonymizeFunc {
    registry: Arc<Registry>,
}

impl PbgAnonymizeFunc {
    /// Creates the function over a registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        PbgAnonymizeFunc { registry }
    }
}

impl TableFunctionImpl for PbgAnonymizeFunc {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let (ev, node) = profile_and_node(&self.registry, NAME, args.exprs())?;
        let schema = release_schema(&ev);
        let produce: Arc<Producer> = Arc::new(move |size, sink| {
            release_chunks(&ev, &node, size, &mut |b| Ok(sink(b))).map_err(|e| exec(NAME, e))?;
            Ok(())
        });
        lazy_table(schema, produce)
    }
}
