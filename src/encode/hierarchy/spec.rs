//! The declaration of a hierarchy in a profile, and its construction.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Hierarchy, arx, date, interval, mask};
use crate::error::Result;

/// A hierarchy as declared in a profile (`hierarchy = "file.csv"` or an inline table with `type`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum HierarchySpec {
    /// ARX-format CSV: one row per leaf, `leaf;level1;...;*` (`;` or `,` separated).
    Arx {
        /// The file (relative paths are resolved against the profile's directory).
        path: PathBuf,
    },
    /// An explicit value → group table written inline: one row per leaf, as in ARX files.
    Table {
        /// `[leaf, level1, ..., top]` per leaf.
        rows: Vec<Vec<String>>,
        /// Where the rows came from, for messages (a registered table's rows, read for a
        /// `sql` hierarchy); `None`: written inline.
        #[serde(skip)]
        source: Option<String>,
    },
    /// Numeric intervals: bin widths per level (each a multiple of the one below) or cut points per
    /// level (each level's cuts a subset of the level below); a top `*` level is added.
    Interval {
        /// Bin width per level, e.g. `[5, 10, 20]`.
        #[serde(default)]
        widths: Vec<f64>,
        /// Where bins start (default 0).
        #[serde(default)]
        origin: f64,
        /// Cut points per level, e.g. `[[20, 30, 40], [40]]`.
        #[serde(default)]
        cuts: Vec<Vec<f64>>,
    },
    /// Masking of trailing characters (`13053` → `1305*` → `130**`); a `*` top is added when the last
    /// step still leaves more than one group.
    Mask {
        /// Number of masking steps (default: the longest value's length).
        steps: Option<usize>,
        /// The masking character (default `*`).
        #[serde(default = "default_mask_char")]
        char: char,
    },
    /// A table registered in the SQL session: the leaf column, then one column per level
    /// (`hierarchy = { type = "sql", table = "age_levels" }`); read when a query reads the profile.
    Sql {
        /// The registered table's name.
        table: String,
    },
    /// Dates `YYYY-MM-DD...`: day → month → year (→ decade) → `*`.
    Date {
        /// Coarser levels in order, from `month`, `year`, `decade` (default month, year).
        #[serde(default = "default_date_levels")]
        levels: Vec<String>,
    },
}

fn default_mask_char() -> char {
    '*'
}

fn default_date_levels() -> Vec<String> {
    vec!["month".into(), "year".into()]
}

impl HierarchySpec {
    /// Resolves relative file paths against `base` (the profile's directory).
    pub fn resolve_paths(&mut self, base: &Path) {
        if let HierarchySpec::Arx { path } = self
            && path.is_relative()
        {
            *path = base.join(&*path);
        }
    }

    /// Whether the hierarchy needs the data or the session (intervals, masking, dates, SQL tables)
    /// rather than only its declaration.
    pub fn is_data_driven(&self) -> bool {
        matches!(
            self,
            HierarchySpec::Interval { .. }
                | HierarchySpec::Mask { .. }
                | HierarchySpec::Date { .. }
                | HierarchySpec::Sql { .. }
        )
    }

    /// Builds the hierarchy for `column`; data-driven kinds take their leaves from `values`
    /// (the column's distinct text forms, each with the 1-based row of its first occurrence).
    pub fn build(&self, column: &str, values: &[(String, usize)]) -> Result<Hierarchy> {
        match self {
            HierarchySpec::Arx { path } => arx::load(column, path),
            HierarchySpec::Table { rows, source } => Hierarchy::from_rows(
                column,
                source.as_deref().unwrap_or("inline table"),
                rows,
            ),
            HierarchySpec::Interval {
                widths,
                origin,
                cuts,
            } => interval::build(column, values, widths, *origin, cuts),
            HierarchySpec::Mask { steps, char } => mask::build(column, values, *steps, *char),
            HierarchySpec::Date { levels } => date::build(column, values, levels),
            HierarchySpec::Sql { table } => Err(crate::error::PbgError::Hierarchy {
                column: column.to_string(),
                source_name: format!("table `{table}`"),
                message: "a hierarchy from a registered table needs a SQL session: declare the profile with pbg_profile (or read it through pbg::statistics on a SessionContext)".into(),
            }),
        }
    }
}
