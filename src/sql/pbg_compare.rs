//! `pbg_compare('profile', 'A', 'B', 'equiv'|'sens'|'glm'|'cm')`: one row comparing two nodes by a
//! property vector (the fields of `pbg compare`).
//!
//! `hv_log10_ab` is log10 of the hypervolume indicator P_hv(A, B) = Π a_i − Π min(a_i, b_i) over
//! the per-tuple property vectors: the volume A's box covers and B's does not. It is NULL when
//! that volume is 0 (A exceeds B on no tuple, so the logarithm does not exist); `hv_log10_ba`
//! likewise for B over A. Every other column is always set.
//!
//! ```sql
//! SELECT cov_ab, cov_ba, relation FROM pbg_compare('t1', '1,1', '2,2', 'equiv');
//! ```

/// The usage line `\\f` of `pbg sql` shows.
pub const USAGE: &str = "pbg_compare('profile', 'A', 'B', 'equiv'|'sens'|'glm'|'cm'): two nodes compared by a property vector";

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::Result;

use super::registry::Registry;
use super::table::{Producer, arity, emit_sliced, exec, lazy_table, plan, string_arg};
use crate::compare::{Property, compare};

const NAME: &str = "pbg_compare";

/// The `pbg_compare` table function.
#[derive(Debug)]
pub struct PbgCompareFunc {
    registry: Arc<Registry>,
}

impl PbgCompareFunc {
    /// Creates the function over a registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        PbgCompareFunc { registry }
    }
}

impl TableFunctionImpl for PbgCompareFunc {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        arity(
            NAME,
            exprs,
            4,
            4,
            "pbg_compare('profile', 'A', 'B', 'equiv'|'sens'|'glm'|'cm')",
        )?;
        let ev = self.registry.rows(
            NAME,
            &string_arg(NAME, exprs, 0, "the profile")?,
            args.session(),
        )?;
        let a = ev
            .parse_node(&string_arg(NAME, exprs, 1, "node A")?)
            .map_err(|e| plan(NAME, e))?;
        let b = ev
            .parse_node(&string_arg(NAME, exprs, 2, "node B")?)
            .map_err(|e| plan(NAME, e))?;
        let property = Property::parse(&string_arg(NAME, exprs, 3, "the property")?)
            .map_err(|e| plan(NAME, e))?;
        let f = |n: &str| Field::new(n, DataType::Float64, false);
        let u = |n: &str| Field::new(n, DataType::UInt64, false);
        let schema = Arc::new(Schema::new(vec![
            f("cov_ab"),
            f("cov_ba"),
            f("spr_ab"),
            f("spr_ba"),
            u("binary_ab"),
            u("binary_ba"),
            Field::new("hv_log10_ab", DataType::Float64, true),
            Field::new("hv_log10_ba", DataType::Float64, true),
            f("rank_a"),
            f("rank_b"),
            Field::new("relation", DataType::Utf8, false),
        ]));
        let out = schema.clone();
        let produce: Arc<Producer> = Arc::new(move |size, sink| {
            let c = compare(&ev, &a, &b, property).map_err(|e| exec(NAME, e))?;
            let one = |x: f64| Arc::new(Float64Array::from(vec![x])) as ArrayRef;
            let cols: Vec<ArrayRef> = vec![
                one(c.cov_ab),
                one(c.cov_ba),
                one(c.spr_ab),
                one(c.spr_ba),
                Arc::new(UInt64Array::from(vec![c.binary_ab])),
                Arc::new(UInt64Array::from(vec![c.binary_ba])),
                Arc::new(Float64Array::from(vec![c.hv_log10_ab])),
                Arc::new(Float64Array::from(vec![c.hv_log10_ba])),
                one(c.rank_a),
                one(c.rank_b),
                Arc::new(StringArray::from(vec![c.relation.name()])),
            ];
            emit_sliced(&RecordBatch::try_new(out.clone(), cols)?, size, sink);
            Ok(())
        });
        lazy_table(schema, produce)
    }
}
