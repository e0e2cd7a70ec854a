//! Generalization hierarchies (DGHs): level 0 is the leaves, the top level is one group.
//!
//! Every source (ARX CSV, inline table, numeric intervals, masking, dates) is turned into rows
//! `leaf; level1; ...; top` and validated by one builder, so every source gets the same checks:
//! rectangular, at least two levels, unique leaves, nested, a single top group.

mod arx;
mod date;
mod generalize;
mod interval;
mod mask;
mod spec;

use crate::encode::TextMap;

use crate::error::{PbgError, Result};

pub use generalize::{generalize, generalize_with, generalized_type};
pub use spec::HierarchySpec;

/// The most levels a hierarchy may have (levels are stored in a byte: 0..=255).
pub const MAX_LEVELS: usize = 256;

/// One level of a hierarchy: the partition of the leaves it induces.
#[derive(Debug, Clone)]
pub struct Level {
    /// Group code of every leaf code.
    pub group_of_leaf: Vec<u32>,
    /// Label of every group code.
    pub labels: Vec<String>,
    /// Number of hierarchy leaves in every group (the M of GLM).
    pub leaves_in_group: Vec<u32>,
    /// GLM loss of a value generalized to each group.
    pub loss: Vec<f64>,
    /// Group code at the next level up for every group code (empty at the top level).
    pub up: Vec<u32>,
}

/// A validated hierarchy for one quasi-identifier.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    column: String,
    source: String,
    leaves: Vec<String>,
    leaf_index: TextMap<String, u32>,
    levels: Vec<Level>,
    /// Position of every leaf code in the rows the hierarchy was given (before the canonical sort).
    file_rank: Vec<u32>,
}

/// How GLM measures a group's loss.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LossModel<'a> {
    /// (M − 1) / (|A| − 1) over the hierarchy's leaves.
    LeafCount,
    /// (U − L) / (max − min) over numeric bounds of each group: one `(L, U)` per label per level
    /// (same shape as the rows' levels), clamped to the leaves' range.
    Range(&'a [TextMap<String, (f64, f64)>]),
}

impl Hierarchy {
    /// Builds and validates a hierarchy from rows `leaf, level1, ..., top`.
    pub(crate) fn from_rows(
        column: &str,
        source: &str,
        rows: &[Vec<String>],
        loss: LossModel<'_>,
    ) -> Result<Self> {
        let err = |message: String| PbgError::Hierarchy {
            column: column.to_string(),
            source_name: source.to_string(),
            message,
        };
        let first = rows.first().ok_or_else(|| err("it has no rows".into()))?;
        let width = first.len();
        if width < 2 {
            return Err(err(format!(
                "it has {width} level; a hierarchy needs at least 2 (the leaves and a top group such as *)"
            )));
        }
        // Node levels are bytes: a hierarchy of more than 256 levels would be truncated.
        if width > MAX_LEVELS {
            return Err(err(format!(
                "it has {width} levels; pbg supports at most {MAX_LEVELS} (leaves + 255 generalizations)"
            )));
        }
        let mut leaf_index = TextMap::with_capacity_and_hasher(rows.len(), Default::default());
        for (r, row) in rows.iter().enumerate() {
            if row.len() != width {
                return Err(err(format!(
                    "row {} (leaf `{}`) has {} levels but row 1 has {width}",
                    r + 1,
                    row.first().map(String::as_str).unwrap_or(""),
                    row.len()
                )));
            }
            if leaf_index.insert(row[0].clone(), r as u32).is_some() {
                return Err(err(format!(
                    "leaf `{}` appears twice (again at row {})",
                    row[0],
                    r + 1
                )));
            }
        }
        let leaves: Vec<String> = rows.iter().map(|r| r[0].clone()).collect();
        let n_leaves = leaves.len();
        let mut levels: Vec<Level> = Vec::with_capacity(width);
        for l in 0..width {
            let mut codes: TextMap<&str, u32> = TextMap::default();
            let mut labels = Vec::new();
            let mut group_of_leaf = Vec::with_capacity(n_leaves);
            let mut leaves_in_group: Vec<u32> = Vec::new();
            for row in rows {
                let label = row[l].as_str();
                let code = *codes.entry(label).or_insert_with(|| {
                    labels.push(label.to_string());
                    leaves_in_group.push(0);
                    (labels.len() - 1) as u32
                });
                leaves_in_group[code as usize] += 1;
                group_of_leaf.push(code);
            }
            levels.push(Level {
                group_of_leaf,
                labels,
                leaves_in_group,
                loss: Vec::new(),
                up: Vec::new(),
            });
        }
        // Nesting: a leaf's group at level l+1 must be a function of its group at level l.
        for l in 0..width - 1 {
            let (lower, upper) = (&levels[l], &levels[l + 1]);
            let mut up = vec![u32::MAX; lower.labels.len()];
            for (leaf, (&g, &h)) in lower
                .group_of_leaf
                .iter()
                .zip(&upper.group_of_leaf)
                .enumerate()
            {
                let slot = &mut up[g as usize];
                if *slot == u32::MAX {
                    *slot = h;
                } else if *slot != h {
                    return Err(err(format!(
                        "not nested: group `{}` at level {l} goes to both `{}` and `{}` at level {} (leaf `{}`)",
                        lower.labels[g as usize],
                        upper.labels[*slot as usize],
                        upper.labels[h as usize],
                        l + 1,
                        leaves[leaf]
                    )));
                }
            }
            levels[l].up = up;
        }
        // Canonical leaf order: rows sorted by their groups from the top down, so that group codes
        // (first appearance) make every `up` map monotone. Roll-ups rely on it to keep cell tables
        // sorted with local merges instead of a full sort.
        let mut order: Vec<usize> = (0..n_leaves).collect();
        let inner = &levels[1..width - 1];
        order.sort_by(|&a, &b| {
            let ka = inner.iter().rev().map(|lv| lv.group_of_leaf[a]);
            ka.cmp(inner.iter().rev().map(|lv| lv.group_of_leaf[b]))
        });
        if order.iter().enumerate().any(|(i, &r)| i != r) {
            let sorted: Vec<Vec<String>> = order.iter().map(|&r| rows[r].clone()).collect();
            let mut h = Self::from_rows(column, source, &sorted, loss)?;
            for (r, row) in rows.iter().enumerate() {
                if let Some(code) = h.leaf_code(&row[0]) {
                    h.file_rank[code as usize] = r as u32;
                }
            }
            return Ok(h);
        }
        let top = &levels[width - 1];
        if top.labels.len() != 1 {
            return Err(err(format!(
                "the top level {} has {} groups (`{}`, `{}`, ...); it must be a single group such as *",
                width - 1,
                top.labels.len(),
                top.labels[0],
                top.labels[1]
            )));
        }
        for (l, level) in levels.iter_mut().enumerate() {
            level.loss = match loss {
                LossModel::LeafCount => level
                    .leaves_in_group
                    .iter()
                    .map(|&m| {
                        if n_leaves > 1 {
                            (m as f64 - 1.0) / (n_leaves as f64 - 1.0)
                        } else {
                            0.0
                        }
                    })
                    .collect(),
                LossModel::Range(bounds) => range_losses(&level.labels, &bounds[l], &bounds[0], l)?,
            };
        }
        Ok(Hierarchy {
            column: column.to_string(),
            source: source.to_string(),
            leaves,
            leaf_index,
            levels,
            file_rank: (0..n_leaves as u32).collect(),
        })
    }

    /// The QI column this hierarchy generalizes.
    pub fn column(&self) -> &str {
        &self.column
    }

    /// Where the hierarchy came from (file or kind), for messages.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Height N: levels run 0..=N.
    pub fn height(&self) -> u8 {
        (self.levels.len() - 1) as u8
    }

    /// Number of leaves |A|.
    pub fn leaf_count(&self) -> usize {
        self.leaves.len()
    }

    /// The leaf labels, indexed by leaf code.
    pub fn leaves(&self) -> &[String] {
        &self.leaves
    }

    /// Leaf code of a value's text form.
    pub fn leaf_code(&self, value: &str) -> Option<u32> {
        self.leaf_index.get(value).copied()
    }

    /// Position of a leaf in the rows the hierarchy was declared with (its file's order).
    pub fn file_rank(&self, leaf: u32) -> u32 {
        self.file_rank[leaf as usize]
    }

    /// Level `l` (0 = leaves).
    pub fn level(&self, l: u8) -> &Level {
        &self.levels[l as usize]
    }

    /// All levels, bottom first.
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The hierarchy in the form that rebuilds it in another process (a cluster's executors).
    pub fn to_wire(&self) -> HierarchyRows {
        let rows = (0..self.leaves.len())
            .map(|leaf| {
                self.levels
                    .iter()
                    .map(|level| level.labels[level.group_of_leaf[leaf] as usize].clone())
                    .collect()
            })
            .collect();
        HierarchyRows {
            column: self.column.clone(),
            source: self.source.clone(),
            rows,
        }
    }
}

/// A hierarchy as rows `leaf, level1, ..., top` (what [`Hierarchy::to_wire`] gives): the same
/// leaves and labels at every level, validated again when rebuilt (losses by leaf count: what
/// travels is for generalizing, not for measuring).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct HierarchyRows {
    /// The QI column.
    pub column: String,
    /// Where it came from, for messages.
    pub source: String,
    /// One row per leaf.
    pub rows: Vec<Vec<String>>,
}

impl HierarchyRows {
    /// Rebuilds the hierarchy.
    pub fn build(&self) -> Result<Hierarchy> {
        Hierarchy::from_rows(&self.column, &self.source, &self.rows, LossModel::LeafCount)
    }
}

/// (U − L) / (max − min), bounds clamped to the leaves' range; leaves themselves lose nothing.
fn range_losses(
    labels: &[String],
    bounds: &TextMap<String, (f64, f64)>,
    leaf_bounds: &TextMap<String, (f64, f64)>,
    level: usize,
) -> Result<Vec<f64>> {
    let (min, max) = leaf_bounds
        .values()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &(lo, hi)| {
            (a.min(lo), b.max(hi))
        });
    let span = max - min;
    Ok(labels
        .iter()
        .map(|label| {
            if level == 0 || span <= 0.0 {
                return 0.0;
            }
            match bounds.get(label) {
                Some(&(lo, hi)) => ((hi.min(max) - lo.max(min)) / span).clamp(0.0, 1.0),
                None => 1.0,
            }
        })
        .collect())
}
