//! `pbg_vectors('profile', 'L1,L2,..')`: one row per input tuple, in input order: `row_id`,
//! `p_equiv`, `p_sens`, `p_glm`, `p_risk` (and `p_cm` with a class attribute), streamed in batches.
//!
//! ```sql
//! SELECT p_equiv, count(*) FROM pbg_vectors('adult', '1,1,1,1,1,1,1,1') GROUP BY p_equiv ORDER BY 1;
//! ```

/// The usage line `\\f` of `pbg sql` shows.
pub const USAGE: &str =
    "pbg_vectors('profile', 'L1,L2,..'): the property vectors of a node, one row per tuple";

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, UInt8Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::Result;

use super::registry::Registry;
use super::table::{Producer, exec, lazy_table, profile_and_node};

const NAME: &str = "pbg_vectors";

/// The `pbg_vectors` table function.
#[derive(Debug)]
pub struct PbgVectorsFunc {
    registry: Arc<Registry>,
}

impl PbgVectorsFunc {
    /// Creates the function over a registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        PbgVectorsFunc { registry }
    }
}

impl TableFunctionImpl for PbgVectorsFunc {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let (ev, node) = profile_and_node(&self.registry, NAME, &args, true)?;
        let with_cm = ev.dataset().class.is_some();
        let mut fields = vec![
            Field::new("row_id", DataType::UInt64, false),
            Field::new("p_equiv", DataType::UInt64, false),
            Field::new("p_sens", DataType::UInt64, false),
            Field::new("p_glm", DataType::Float64, false),
            Field::new("p_risk", DataType::Float64, false),
        ];
        if with_cm {
            fields.push(Field::new("p_cm", DataType::UInt8, false));
        }
        let schema = Arc::new(Schema::new(fields));
        let out = schema.clone();
        let produce: Arc<Producer> = Arc::new(move |size, sink| {
            let (_, v) = ev.property_vectors(&node).map_err(|e| exec(NAME, e))?;
            let n = v.p_equiv.len();
            let mut start = 0;
            while start < n {
                let end = (start + size.max(1)).min(n);
                let mut cols: Vec<ArrayRef> = vec![
                    Arc::new(UInt64Array::from_iter_values(start as u64..end as u64)),
                    Arc::new(UInt64Array::from(v.p_equiv[start..end].to_vec())),
                    Arc::new(UInt64Array::from(v.p_sens[start..end].to_vec())),
                    Arc::new(Float64Array::from(v.p_glm[start..end].to_vec())),
                    Arc::new(Float64Array::from(v.p_risk[start..end].to_vec())),
                ];
                if let Some(cm) = &v.p_cm {
                    cols.push(Arc::new(UInt8Array::from(cm[start..end].to_vec())));
                }
                if !sink(RecordBatch::try_new(out.clone(), cols)?) {
                    break;
                }
                start = end;
            }
            Ok(())
        });
        lazy_table(schema, produce)
    }
}
