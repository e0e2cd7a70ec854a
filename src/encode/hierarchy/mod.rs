//! Generalization hierarchies (DGHs): level 0 is the leaves, the top level is one group.
//!
//! Every source (ARX CSV, inline table, numeric intervals, masking, dates) is turned into rows
//! `leaf; level1; ...; top` and validated by one builder, so every source gets the same checks:
//! rectangular, at least two levels, unique leaves, nested, a single top group.

mod arx;
pub(crate) mod date;
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
    /// (U − L) / (max − min) over numeric bounds of each group: one `(L, U)` per group code per
    /// level (the codes of the [`LevelCodes`] given), clamped to the leaves' range.
    Range(&'a [Vec<(f64, f64)>]),
}

/// One level of a hierarchy given by codes: every leaf's group (in leaf order) and every
/// group's label. Equal labels must have equal codes.
#[derive(Debug, Clone, Default)]
pub(crate) struct LevelCodes {
    pub(crate) labels: Vec<String>,
    pub(crate) group_of_leaf: Vec<u32>,
}

impl Hierarchy {
    /// Builds and validates a hierarchy from rows `leaf, level1, ..., top` (losses by leaf count).
    pub(crate) fn from_rows(column: &str, source: &str, rows: &[Vec<String>]) -> Result<Self> {
        let err = |message: String| PbgError::Hierarchy {
            column: column.to_string(),
            source_name: source.to_string(),
            message,
        };
        let first = rows.first().ok_or_else(|| err("it has no rows".into()))?;
        let width = first.len();
        check_width(width, &err)?;
        // Row by row, as a reader meets them: a short row or a repeated leaf, whichever is first.
        let mut seen: TextMap<&str, ()> =
            TextMap::with_capacity_and_hasher(rows.len(), Default::default());
        for (r, row) in rows.iter().enumerate() {
            if row.len() != width {
                return Err(err(format!(
                    "row {} (leaf `{}`) has {} levels but row 1 has {width}",
                    r + 1,
                    row.first().map(String::as_str).unwrap_or(""),
                    row.len()
                )));
            }
            // An empty text cannot be told from a missing value once written to CSV (the
            // ARX reader refuses an empty field the same way).
            if let Some(l) = row.iter().position(String::is_empty) {
                return Err(err(format!(
                    "row {} has an empty label at level {l}",
                    r + 1
                )));
            }
            if seen.insert(row[0].as_str(), ()).is_some() {
                return Err(err(format!(
                    "leaf `{}` appears twice (again at row {})",
                    row[0],
                    r + 1
                )));
            }
        }
        let leaves: Vec<String> = rows
            .iter()
            .map(|r| r.first().cloned().unwrap_or_default())
            .collect();
        let levels = (1..width)
            .map(|l| {
                let mut codes: TextMap<&str, u32> = TextMap::default();
                let mut level = LevelCodes::default();
                for row in rows {
                    let label = row[l].as_str();
                    let code = *codes.entry(label).or_insert_with(|| {
                        level.labels.push(label.to_string());
                        (level.labels.len() - 1) as u32
                    });
                    level.group_of_leaf.push(code);
                }
                level
            })
            .collect();
        Self::from_levels(column, source, leaves, levels, LossModel::LeafCount)
    }

    /// Builds and validates a hierarchy from its leaves (in the order given: a leaf's position
    /// is its row in messages and its [`Self::file_rank`]) and its levels above them, the last
    /// being the top: at least one level, unique leaves, nested levels, a single top group.
    pub(crate) fn from_levels(
        column: &str,
        source: &str,
        mut leaves: Vec<String>,
        mut above: Vec<LevelCodes>,
        loss: LossModel<'_>,
    ) -> Result<Self> {
        let err = |message: String| PbgError::Hierarchy {
            column: column.to_string(),
            source_name: source.to_string(),
            message,
        };
        if leaves.is_empty() {
            return Err(err("it has no rows".into()));
        }
        let width = above.len() + 1;
        check_width(width, &err)?;
        let n_leaves = leaves.len();
        {
            let mut seen: TextMap<&str, u32> =
                TextMap::with_capacity_and_hasher(n_leaves, Default::default());
            for (r, leaf) in leaves.iter().enumerate() {
                if seen.insert(leaf.as_str(), r as u32).is_some() {
                    return Err(err(format!(
                        "leaf `{leaf}` appears twice (again at row {})",
                        r + 1
                    )));
                }
            }
        }
        let mut bounds: Option<Vec<Vec<(f64, f64)>>> = match loss {
            LossModel::Range(b) => Some(b.to_vec()),
            LossModel::LeafCount => None,
        };
        // Nesting, judged in the order given (so that messages name the rows as written).
        for l in 0..width - 1 {
            let lower = |leaf: usize| match l {
                0 => leaf as u32,
                _ => above[l - 1].group_of_leaf[leaf],
            };
            let lower_label = |g: u32| match l {
                0 => &leaves[g as usize],
                _ => &above[l - 1].labels[g as usize],
            };
            let upper = &above[l];
            let groups = if l == 0 {
                n_leaves
            } else {
                above[l - 1].labels.len()
            };
            let mut up = vec![u32::MAX; groups];
            for (leaf, &h) in upper.group_of_leaf.iter().enumerate() {
                let g = lower(leaf);
                let slot = &mut up[g as usize];
                if *slot == u32::MAX {
                    *slot = h;
                } else if *slot != h {
                    return Err(err(format!(
                        "not nested: group `{}` at level {l} goes to both `{}` and `{}` at level {} (leaf `{}`)",
                        lower_label(g),
                        upper.labels[*slot as usize],
                        upper.labels[h as usize],
                        l + 1,
                        leaves[leaf]
                    )));
                }
            }
        }
        // Group codes in order of first appearance (as rows give them), bounds following.
        let identity: Vec<u32> = (0..n_leaves as u32).collect();
        reorder_levels(&mut above, bounds.as_mut(), &identity, false);
        // Canonical leaf order: leaves sorted by their groups from the top down, so that group
        // codes (first appearance) make every `up` map monotone. Roll-ups rely on it to keep cell
        // tables sorted with local merges instead of a full sort.
        let mut order = identity;
        let inner = &above[..width - 2];
        let key = |r: usize| inner.iter().rev().map(move |lv| lv.group_of_leaf[r]);
        if (1..n_leaves).any(|i| key(i - 1).cmp(key(i)).is_gt()) {
            order.sort_by(|&a, &b| key(a as usize).cmp(key(b as usize)));
            leaves = order
                .iter()
                .map(|&r| std::mem::take(&mut leaves[r as usize]))
                .collect();
            reorder_levels(&mut above, bounds.as_mut(), &order, true);
        }
        let leaf_index: TextMap<String, u32> = leaves
            .iter()
            .enumerate()
            .map(|(i, leaf)| (leaf.clone(), i as u32))
            .collect();
        let mut levels: Vec<Level> = Vec::with_capacity(width);
        levels.push(Level {
            group_of_leaf: (0..n_leaves as u32).collect(),
            labels: leaves.clone(),
            leaves_in_group: vec![1; n_leaves],
            loss: Vec::new(),
            up: Vec::new(),
        });
        for level in above {
            let mut leaves_in_group = vec![0u32; level.labels.len()];
            for &g in &level.group_of_leaf {
                leaves_in_group[g as usize] += 1;
            }
            levels.push(Level {
                group_of_leaf: level.group_of_leaf,
                labels: level.labels,
                leaves_in_group,
                loss: Vec::new(),
                up: Vec::new(),
            });
        }
        // Up-maps (nesting was checked above; a failure here would be an internal error).
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
            level.loss = match &bounds {
                None => level
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
                Some(b) => range_losses(level.labels.len(), &b[l], &b[0], l),
            };
        }
        Ok(Hierarchy {
            column: column.to_string(),
            source: source.to_string(),
            leaves,
            leaf_index,
            levels,
            file_rank: order,
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
        Hierarchy::from_rows(&self.column, &self.source, &self.rows)
    }
}

/// A hierarchy's level count must fit a node's byte and include a level above the leaves.
fn check_width(width: usize, err: &dyn Fn(String) -> PbgError) -> Result<()> {
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
    Ok(())
}

/// (U − L) / (max − min), bounds clamped to the leaves' range; leaves themselves lose nothing.
fn range_losses(
    groups: usize,
    bounds: &[(f64, f64)],
    leaf_bounds: &[(f64, f64)],
    level: usize,
) -> Vec<f64> {
    let (min, max) = leaf_bounds
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &(lo, hi)| {
            (a.min(lo), b.max(hi))
        });
    let span = max - min;
    (0..groups)
        .map(|g| {
            if level == 0 || span <= 0.0 {
                return 0.0;
            }
            match bounds.get(g) {
                Some(&(lo, hi)) => ((hi.min(max) - lo.max(min)) / span).clamp(0.0, 1.0),
                None => 1.0,
            }
        })
        .collect()
}

/// Whether codes appear in order 0, 1, 2, ... (each new code one above the largest so far).
fn first_appearance(codes: &[u32]) -> bool {
    let mut next = 0u32;
    codes.iter().all(|&c| {
        if c == next {
            next += 1;
        }
        c < next
    })
}

/// Applies [`LevelCodes::reorder`] to every level (only to those whose codes are out of order of
/// appearance unless `all`), with each level's bounds, and the leaves' bounds when `all`.
fn reorder_levels(
    above: &mut [LevelCodes],
    mut bounds: Option<&mut Vec<Vec<(f64, f64)>>>,
    order: &[u32],
    all: bool,
) {
    for (l, level) in above.iter_mut().enumerate() {
        if !all && first_appearance(&level.group_of_leaf) {
            continue;
        }
        let renumber = level.reorder(order);
        if let Some(b) = bounds.as_deref_mut() {
            let old = std::mem::take(&mut b[l + 1]);
            b[l + 1] = renumber.iter().map(|&c| old[c as usize]).collect();
        }
    }
    if let Some(b) = bounds.filter(|_| all) {
        let old = std::mem::take(&mut b[0]);
        b[0] = order.iter().map(|&r| old[r as usize]).collect();
    }
}

impl LevelCodes {
    /// Reorders the leaves to `order` (new position → old) and renumbers the groups by first
    /// appearance; returns new code → old code.
    fn reorder(&mut self, order: &[u32]) -> Vec<u32> {
        let mut new_of_old = vec![u32::MAX; self.labels.len()];
        let mut old_of_new = Vec::with_capacity(self.labels.len());
        self.group_of_leaf = order
            .iter()
            .map(|&r| {
                let old = self.group_of_leaf[r as usize];
                let slot = &mut new_of_old[old as usize];
                if *slot == u32::MAX {
                    *slot = old_of_new.len() as u32;
                    old_of_new.push(old);
                }
                *slot
            })
            .collect();
        self.labels = old_of_new
            .iter()
            .map(|&o| std::mem::take(&mut self.labels[o as usize]))
            .collect();
        old_of_new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Levels given out of canonical order (and codes not in order of appearance) are sorted with
    /// their bounds: the same leaves, groups and file ranks as from rows, losses by range.
    #[test]
    fn levels_out_of_order_are_sorted_with_their_bounds() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let leaves = s(&["a", "b", "c", "d"]);
        let above = vec![
            LevelCodes {
                labels: s(&["y", "x"]),
                group_of_leaf: vec![1, 0, 1, 0],
            },
            LevelCodes {
                labels: s(&["*"]),
                group_of_leaf: vec![0; 4],
            },
        ];
        // Leaf values 1..4; x spans [1, 3], y [2, 3]; the top the whole range.
        let bounds = vec![
            vec![(1.0, 1.0), (2.0, 2.0), (3.0, 3.0), (4.0, 4.0)],
            vec![(2.0, 3.0), (1.0, 3.0)],
            vec![(1.0, 4.0)],
        ];
        let h =
            Hierarchy::from_levels("q", "test", leaves, above, LossModel::Range(&bounds)).unwrap();
        assert_eq!(h.leaves(), &s(&["a", "c", "b", "d"])[..]);
        assert_eq!(
            (0..4).map(|l| h.file_rank(l)).collect::<Vec<_>>(),
            [0, 2, 1, 3]
        );
        let level = h.level(1);
        assert_eq!(level.labels, s(&["x", "y"]));
        assert_eq!(level.group_of_leaf, [0, 0, 1, 1]);
        assert_eq!(level.loss, [2.0 / 3.0, 1.0 / 3.0]);
        assert_eq!(h.level(2).loss, [1.0]);
        assert_eq!(h.leaf_code("b"), Some(2));
        let rows: Vec<Vec<String>> = ["a;x", "b;y", "c;x", "d;y"]
            .iter()
            .map(|r| r.split(';').map(String::from).chain(["*".into()]).collect())
            .collect();
        let r = Hierarchy::from_rows("q", "test", &rows).unwrap();
        assert_eq!(r.leaves(), h.leaves());
        for l in 0..3 {
            assert_eq!(r.level(l).labels, h.level(l).labels);
            assert_eq!(r.level(l).group_of_leaf, h.level(l).group_of_leaf);
            assert_eq!(r.level(l).up, h.level(l).up);
        }
        assert_eq!(r.level(1).loss, [1.0 / 3.0, 1.0 / 3.0]);
    }

    /// Bad rows are reported as a reader meets them, in the order written: the first short row or
    /// repeated leaf, a hierarchy without levels, a group that splits (named as in the file).
    #[test]
    fn bad_rows_are_reported_in_file_order() {
        let rows = |text: &[&str]| -> Vec<Vec<String>> {
            text.iter()
                .map(|r| match *r {
                    "" => Vec::new(),
                    r => r.split(';').map(String::from).collect(),
                })
                .collect()
        };
        let message = |text: &[&str]| match Hierarchy::from_rows("q", "test", &rows(text)) {
            Err(PbgError::Hierarchy { message, .. }) => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            message(&["a;*", "a;*", "b"]),
            "leaf `a` appears twice (again at row 2)"
        );
        assert!(message(&["a", "b;*"]).starts_with("it has 1 level;"));
        assert!(message(&[""]).starts_with("it has 0 level;"));
        assert_eq!(
            message(&["d;w;R;S;*", "a;x;P;T;*", "c;x;Q;S;*"]),
            "not nested: group `x` at level 1 goes to both `P` and `Q` at level 2 (leaf `c`)"
        );
    }
}
