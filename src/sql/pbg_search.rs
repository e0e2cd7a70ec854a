//! `pbg_search('profile', 'k,glm', 'exhaustive'|'ea' [, seed])`: the minimal PBGs, one row each: a
//! level column per QI, then one column per objective (named as given): UInt64 for counts
//! (`k`, `classes`, `uniques`, ...), Float64 for the rest.
//!
//! ```sql
//! SELECT * FROM pbg_search('adult', 'k,glm', 'ea', 42) ORDER BY k;
//! ```

/// The usage line `\\f` of `pbg sql` shows.
pub const USAGE: &str =
    "pbg_search('profile', 'k,glm', 'exhaustive'|'ea' [, seed]): the minimal PBGs (Pareto front)";

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, UInt8Array, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{Result, plan_err};

use super::registry::Registry;
use super::table::{Producer, arity, emit_sliced, exec, int_arg, lazy_table, plan, string_arg};
use crate::objective::Objective;
use crate::search::{EaConfig, exhaustive, pbg_ea};

const NAME: &str = "pbg_search";

/// The `pbg_search` table function.
#[derive(Debug)]
pub struct PbgSearchFunc {
    registry: Arc<Registry>,
}

impl PbgSearchFunc {
    /// Creates the function over a registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        PbgSearchFunc { registry }
    }
}

impl TableFunctionImpl for PbgSearchFunc {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        arity(
            NAME,
            exprs,
            3,
            4,
            "pbg_search('profile', 'O1,O2,..', 'exhaustive'|'ea' [, seed])",
        )?;
        let ev = self.registry.statistics(
            NAME,
            &string_arg(NAME, exprs, 0, "the profile")?,
            args.session(),
        )?;
        let objectives = Objective::parse_list(
            &string_arg(NAME, exprs, 1, "the objectives")?,
            crate::indices::Present::of(ev.dataset()),
        )
        .map_err(|e| plan(NAME, e))?;
        let algorithm = string_arg(NAME, exprs, 2, "the algorithm")?;
        if algorithm != "exhaustive" && algorithm != "ea" {
            return plan_err!("{NAME}: unknown algorithm '{algorithm}' (use 'exhaustive' or 'ea')");
        }
        let seed = if exprs.len() == 4 {
            if algorithm == "exhaustive" {
                return plan_err!(
                    "{NAME}: a seed is for the evolutionary search ('ea'); the exhaustive search evaluates every node and takes none"
                );
            }
            int_arg(NAME, exprs, 3, "the seed")?
        } else {
            0
        };
        let seed =
            u64::try_from(seed).or_else(|_| plan_err!("{NAME}: the seed must not be negative"))?;
        let names: Vec<String> = ev.qi_names().iter().map(|s| s.to_string()).collect();
        let mut fields: Vec<Field> = names
            .iter()
            .map(|n| Field::new(n, DataType::UInt8, false))
            .collect();
        // Counts (k, classes, uniques, ...) are integers, the rest reals.
        let counts: Vec<bool> = objectives
            .iter()
            .map(|o| o.info().kind == crate::indices::Kind::Count)
            .collect();
        fields.extend(objectives.iter().zip(&counts).map(|(o, &count)| {
            let t = if count {
                DataType::UInt64
            } else {
                DataType::Float64
            };
            Field::new(o.name(), t, false)
        }));
        let schema = Arc::new(Schema::new(fields));
        let out_schema = schema.clone();
        let produce: Arc<Producer> = Arc::new(move |size, sink| {
            let result = if algorithm == "ea" {
                pbg_ea(
                    &ev,
                    &objectives,
                    &EaConfig {
                        seed,
                        ..EaConfig::default()
                    },
                )
            } else {
                exhaustive(&ev, &objectives)
            }
            .map_err(|e| exec(NAME, e))?;
            let mut cols: Vec<ArrayRef> = Vec::new();
            for d in 0..names.len() {
                cols.push(Arc::new(UInt8Array::from_iter_values(
                    result.front.iter().map(|p| p.node[d]),
                )));
            }
            for (i, &count) in counts.iter().enumerate() {
                let values = result.front.iter().map(|p| p.values[i]);
                cols.push(if count {
                    Arc::new(UInt64Array::from_iter_values(values.map(|v| v as u64)))
                } else {
                    Arc::new(Float64Array::from_iter_values(values))
                });
            }
            emit_sliced(&RecordBatch::try_new(out_schema.clone(), cols)?, size, sink);
            Ok(())
        });
        lazy_table(schema, produce)
    }
}
