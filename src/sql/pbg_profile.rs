//! `pbg_profile('name', '<profile TOML>')`: declares (or replaces) profile `name` in the session
//! and returns one row describing it: `profile`, `input`, `qis`, `levels` (hierarchy heights, `?`
//! for hierarchies built from the data), `lattice_size` (NULL until every height is known),
//! `sensitive`. The TOML is the text of a profile file (`input = "path"` — a file, directory or
//! glob — or `table = "name"` of a registered table); a single line ending in `.toml` names such a
//! file instead. Nothing is read but the declaration and its hierarchy files: every pbg function
//! reads the input afresh when its query runs.
//!
//! ```sql
//! CREATE EXTERNAL TABLE people STORED AS PARQUET LOCATION 'lake/people/';
//! SELECT * FROM pbg_profile('p', $$
//!   table = "people"
//!   sensitive = "occupation"
//!   [[qi]]
//!   name = "age"
//!   hierarchy = { type = "interval", widths = [5, 10, 20] }
//! $$);
//! ```

/// The usage line `\\f` of `pbg sql` shows.
pub const USAGE: &str = "pbg_profile('name', '<profile TOML>'): declares a profile in the session";

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::Result;
use datafusion::datasource::MemTable;

use super::registry::Registry;
use super::table::{arity, plan, string_arg};
use crate::hierarchy::HierarchySpec;
use crate::profile::Profile;

const NAME: &str = "pbg_profile";

/// The `pbg_profile` table function.
#[derive(Debug)]
pub struct PbgProfileFunc {
    registry: Arc<Registry>,
}

impl PbgProfileFunc {
    /// Creates the function over a registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        PbgProfileFunc { registry }
    }
}

/// The height of a hierarchy when it is known without the data.
fn known_height(spec: &HierarchySpec, column: &str) -> Option<u8> {
    match spec {
        HierarchySpec::Arx { .. } | HierarchySpec::Table { .. } => {
            spec.build(column, &[]).ok().map(|h| h.height())
        }
        _ => None,
    }
}

impl TableFunctionImpl for PbgProfileFunc {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        arity(NAME, exprs, 2, 2, "pbg_profile('name', '<profile TOML>')")?;
        let name = string_arg(NAME, exprs, 0, "the profile name")?;
        if name.trim().is_empty() {
            return datafusion::common::plan_err!("{NAME}: the profile name must not be empty");
        }
        let text = string_arg(NAME, exprs, 1, "the profile TOML")?;
        let origin = format!("{NAME}('{name}')");
        let trimmed = text.trim();
        let profile = if !trimmed.contains('\n') && trimmed.ends_with(".toml") {
            Profile::from_toml_file(Path::new(trimmed))
        } else {
            Profile::from_toml_str(&text, Path::new("."), &origin)
        }
        .map_err(|e| plan(NAME, e))?;
        let heights: Vec<Option<u8>> = profile
            .qis
            .iter()
            .map(|q| known_height(&q.hierarchy, &q.name))
            .collect();
        let size = heights
            .iter()
            .try_fold(1u64, |acc, h| h.and_then(|h| acc.checked_mul(h as u64 + 1)));
        let levels = heights
            .iter()
            .map(|h| h.map_or("?".to_string(), |h| h.to_string()))
            .collect::<Vec<_>>()
            .join(",");
        let qis = profile.qi_names().join(",");
        let input = profile.input.to_string();
        let sensitive = profile.sensitive.clone();
        self.registry.declare(&name, profile)?;
        let schema = Arc::new(Schema::new(vec![
            Field::new("profile", DataType::Utf8, false),
            Field::new("input", DataType::Utf8, false),
            Field::new("qis", DataType::Utf8, false),
            Field::new("levels", DataType::Utf8, false),
            Field::new("lattice_size", DataType::UInt64, true),
            Field::new("sensitive", DataType::Utf8, false),
        ]));
        let s = |v: &str| Arc::new(StringArray::from(vec![v.to_string()])) as ArrayRef;
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                s(&name),
                s(&input),
                s(&qis),
                s(&levels),
                Arc::new(UInt64Array::from(vec![size])),
                s(&sensitive),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}
