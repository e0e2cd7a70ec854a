//! `pbg_verify('profile', 'path' [, 'k>=5,l>=3'])`: checks a written release — a file or a
//! directory (partitioned `COPY` output included) — against the profile's input, with the same
//! verifier as `pbg anonymize` and `pbg verify`: the node is inferred from the labels, the release
//! must be exactly that node's release of the input (columns, classes, k, l, GLM, every class's
//! sensitive values, row accounting) under one of the suppression rules it may have been made
//! with (the profile's, the requirement rule of the requirements given, the DBSEC rule), then
//! every requirement must hold. One row on success
//! (`release`, `node`, `rows_in`, `rows_released`, `suppressed`, `classes`, `k`, `l`,
//! `l_entropy`, `glm`, `verified`); an error saying why otherwise.
//!
//! ```sql
//! SELECT node, k, l, verified FROM pbg_verify('adult', 'out/adult/', 'k>=10,l>=3');
//! ```

/// The usage line `\\f` of `pbg sql` shows.
pub const USAGE: &str =
    "pbg_verify('profile', 'path' [, 'k>=5,l>=3']): checks a written release against the input";

use std::path::PathBuf;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Float64Array, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{Result, plan_err};
use datafusion::datasource::MemTable;

use super::registry::Registry;
use super::table::{arity, plan, string_arg};
use crate::input::block_on;
use crate::policy::Requirement;
use crate::release::verify_release_under;
use crate::suppression::SuppressionRule;

const NAME: &str = "pbg_verify";

/// The `pbg_verify` table function.
#[derive(Debug)]
pub struct PbgVerifyFunc {
    registry: Arc<Registry>,
}

impl PbgVerifyFunc {
    /// Creates the function over a registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        PbgVerifyFunc { registry }
    }
}

impl TableFunctionImpl for PbgVerifyFunc {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        arity(
            NAME,
            exprs,
            2,
            3,
            "pbg_verify('profile', 'path' [, 'k>=5,l>=3'])",
        )?;
        let name = string_arg(NAME, exprs, 0, "the profile")?;
        let release = PathBuf::from(string_arg(NAME, exprs, 1, "the release path")?);
        let require = match exprs.len() {
            3 => Requirement::parse_list(&string_arg(NAME, exprs, 2, "the requirements")?)
                .map_err(|e| plan(NAME, e))?,
            _ => Vec::new(),
        };
        let ev = self.registry.statistics(NAME, &name, args.session())?;
        let ctx = self
            .registry
            .context_for(NAME, args.session(), &ev.dataset().profile)?;
        let present = crate::indices::Present::of(ev.dataset());
        for r in &require {
            r.measure
                .check_defined(present)
                .map_err(|e| plan(NAME, e))?;
        }
        // The rules the release may have been made with: the profile's, the requirement rule of
        // the requirements given, the DBSEC rule (as `pbg verify` tries them).
        let rules = SuppressionRule::candidates(None, ev.dataset().profile.rule_name, &require);
        let (check, expected, ev) =
            block_on(verify_release_under(&ctx, &ev, &release, None, &rules))
                .map_err(|e| plan(NAME, e))?
                .map_err(|e| plan(NAME, e))?;
        let failed: Vec<String> = crate::policy::judge(&require, &check, Some(&expected))
            .map_err(|e| plan(NAME, e))?
            .into_iter()
            .zip(&require)
            .filter(|(j, _)| !j.holds)
            .map(|(j, r)| format!("{} ({} = {})", j.requirement, r.measure.name(), j.value))
            .collect();
        if !failed.is_empty() {
            return plan_err!(
                "{NAME}: {} is a correct release of node {:?} but does not meet {}",
                release.display(),
                check.node,
                failed.join(", ")
            );
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("release", DataType::Utf8, false),
            Field::new("node", DataType::Utf8, false),
            Field::new("rows_in", DataType::UInt64, false),
            Field::new("rows_released", DataType::UInt64, false),
            Field::new("suppressed", DataType::UInt64, false),
            Field::new("classes", DataType::UInt64, false),
            Field::new("k", DataType::UInt64, false),
            Field::new("l", DataType::UInt64, false),
            Field::new("l_entropy", DataType::Float64, false),
            Field::new("glm", DataType::Float64, false),
            Field::new("verified", DataType::Boolean, false),
        ]));
        let node = check
            .node
            .iter()
            .map(|l| l.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let u = |v: u64| Arc::new(UInt64Array::from(vec![v])) as ArrayRef;
        let f = |v: f64| Arc::new(Float64Array::from(vec![v])) as ArrayRef;
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(vec![release.display().to_string()])),
                Arc::new(StringArray::from(vec![node])),
                u(ev.dataset().num_tuples()),
                u(check.rows),
                u(check.suppressed),
                u(check.classes),
                u(check.k),
                u(check.l_distinct),
                f(check.l_entropy),
                f(check.glm),
                Arc::new(BooleanArray::from(vec![true])),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}
