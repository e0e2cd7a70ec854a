//! Independent check of a written release: the file is streamed back and its classes, k, l and
//! GLM are recomputed from the text labels alone (no engine codes, no roll-ups), every label is
//! checked against its hierarchy level, and the row accounting is checked against the input.

use std::collections::HashMap;
use std::path::Path;

use serde::Serialize;

use crate::encode::Dataset;
use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::indices::NodeIndices;
use crate::io::StreamInput;
use crate::lattice::Node;
use crate::statistics::{CountColumn, count_tuples};

/// What a release file holds, recomputed from its labels.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReleaseCheck {
    /// The node the labels belong to (given, or inferred: per QI the lowest level holding every label).
    pub node: Node,
    /// Rows in the release.
    pub rows: u64,
    /// Input rows minus released rows.
    pub suppressed: u64,
    /// Equivalence classes.
    pub classes: u64,
    /// Smallest class.
    pub k: u64,
    /// Fewest distinct sensitive values in a class.
    pub l_distinct: u64,
    /// exp of the smallest class entropy.
    pub l_entropy: f64,
    /// Smallest class size / most frequent sensitive count.
    pub l_probabilistic: f64,
    /// GLM, with every suppressed row losing 1 per QI.
    pub glm: f64,
    /// Every (class as group codes of the node's levels, sensitive value) with its count.
    #[serde(skip)]
    pub cells: Vec<(Vec<u32>, String, u64)>,
}

/// Streams the release at `path` and recomputes its indices from the labels. With `node`, every
/// label must belong to that node's level; without, the node is inferred. `dataset` supplies the
/// hierarchies, the sensitive attribute's name and the input's row count.
pub fn check_release(
    dataset: &Dataset,
    path: &Path,
    delimiter: u8,
    node: Option<&[u8]>,
) -> Result<ReleaseCheck> {
    let fail = |message: String| PbgError::Verification {
        path: path.to_path_buf(),
        message,
    };
    let input = StreamInput::open(path, delimiter)?;
    let mut spec = Vec::new();
    for q in &dataset.qis {
        spec.push(CountColumn {
            index: input.column_index(&q.name)?,
            null_as: None,
            null_hint: "a release holds no nulls in its QI columns".into(),
        });
    }
    spec.push(CountColumn {
        index: input.column_index(&dataset.sensitive.name)?,
        null_as: None,
        null_hint: "the sensitive attribute must not be null".into(),
    });
    let counts = count_tuples(&input, &spec)?;
    if counts.rows > dataset.num_tuples() {
        return Err(fail(format!(
            "row accounting: {} released rows but the input has only {}",
            counts.rows,
            dataset.num_tuples()
        )));
    }
    if counts.rows == 0 {
        return Err(fail("the release has no rows".into()));
    }
    // Per QI: the level, and the loss of each label id.
    let mut levels = Vec::with_capacity(dataset.qis.len());
    let mut loss_of_id: Vec<Vec<f64>> = Vec::with_capacity(dataset.qis.len());
    let mut group_of_id: Vec<Vec<u32>> = Vec::with_capacity(dataset.qis.len());
    for (d, q) in dataset.qis.iter().enumerate() {
        let seen = &counts.columns[d];
        let h = &q.hierarchy;
        let level = match node {
            Some(n) => n[d],
            None => (0..=h.height())
                .find(|&l| {
                    let labels: std::collections::HashSet<&str> =
                        h.level(l).labels.iter().map(String::as_str).collect();
                    seen.values.iter().all(|v| labels.contains(v.as_str()))
                })
                .ok_or_else(|| {
                    fail(format!(
                        "column `{}` mixes levels or holds values that are no label of its hierarchy: no level has all of its {} distinct values",
                        q.name,
                        seen.values.len()
                    ))
                })?,
        };
        let index: HashMap<&str, usize> = h
            .level(level)
            .labels
            .iter()
            .enumerate()
            .map(|(g, s)| (s.as_str(), g))
            .collect();
        let mut losses = Vec::with_capacity(seen.values.len());
        let mut groups = Vec::with_capacity(seen.values.len());
        for (v, &row) in seen.values.iter().zip(&seen.first_row) {
            match index.get(v.as_str()) {
                Some(&g) => {
                    losses.push(h.level(level).loss[g]);
                    groups.push(g as u32);
                }
                None => {
                    return Err(fail(format!(
                        "column `{}` row {}: `{v}` is not a label of level {level} of its hierarchy (finer or foreign value)",
                        q.name,
                        row + 1
                    )));
                }
            }
        }
        levels.push(level);
        loss_of_id.push(losses);
        group_of_id.push(groups);
    }
    // Classes: combinations of QI labels, with their sensitive histograms.
    let q = dataset.qis.len();
    let mut classes: HashMap<&[u32], HashMap<u32, u64>> = HashMap::new();
    let mut glm = 0.0;
    for (ids, count) in &counts.combos {
        *classes
            .entry(&ids[..q])
            .or_default()
            .entry(ids[q])
            .or_default() += count;
        let loss: f64 = ids[..q]
            .iter()
            .zip(&loss_of_id)
            .map(|(&id, l)| l[id as usize])
            .sum();
        glm += *count as f64 * loss;
    }
    let sens_text = &counts.columns[q].values;
    let mut cells: Vec<(Vec<u32>, String, u64)> = counts
        .combos
        .iter()
        .map(|(ids, count)| {
            let groups = ids[..q]
                .iter()
                .zip(&group_of_id)
                .map(|(&id, g)| g[id as usize])
                .collect();
            (groups, sens_text[ids[q] as usize].clone(), *count)
        })
        .collect();
    cells.sort();
    let suppressed = dataset.num_tuples() - counts.rows;
    glm += suppressed as f64 * q as f64;
    let mut k = u64::MAX;
    let mut l_distinct = u64::MAX;
    let mut min_entropy = f64::INFINITY;
    let mut l_probabilistic = f64::INFINITY;
    for hist in classes.values() {
        let size: u64 = hist.values().sum();
        let most = hist.values().copied().max().unwrap_or(1);
        let entropy: f64 = -hist
            .values()
            .map(|&c| {
                let p = c as f64 / size as f64;
                p * p.ln()
            })
            .sum::<f64>();
        k = k.min(size);
        l_distinct = l_distinct.min(hist.len() as u64);
        min_entropy = min_entropy.min(if hist.len() == 1 { 0.0 } else { entropy });
        l_probabilistic = l_probabilistic.min(size as f64 / most as f64);
    }
    Ok(ReleaseCheck {
        node: levels,
        rows: counts.rows,
        suppressed,
        classes: classes.len() as u64,
        k,
        l_distinct,
        l_entropy: min_entropy.exp(),
        l_probabilistic,
        glm,
        cells,
    })
}

/// Fails unless a release's recomputed indices are those the engine computed for its node, and
/// its classes hold exactly the sensitive values the input's released classes hold.
pub fn confirm(
    ev: &Evaluator,
    check: &ReleaseCheck,
    expected: &NodeIndices,
    path: &Path,
) -> Result<()> {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    let mut wrong = Vec::new();
    if check.node != expected.node {
        wrong.push(format!(
            "labels are at node {:?}, expected {:?}",
            check.node, expected.node
        ));
    }
    if check.suppressed != expected.suppressed {
        wrong.push(format!(
            "row accounting: {} rows missing from the release, {} suppressed by the node",
            check.suppressed, expected.suppressed
        ));
    }
    for (name, got, want) in [
        ("classes", check.classes, expected.classes),
        ("k", check.k, expected.k),
        ("l", check.l_distinct, expected.l_distinct),
    ] {
        if got != want {
            wrong.push(format!("{name} = {got} in the file, {want} by the engine"));
        }
    }
    for (name, got, want) in [
        ("glm", check.glm, expected.glm),
        ("l_entropy", check.l_entropy, expected.l_entropy),
    ] {
        if !close(got, want) {
            wrong.push(format!("{name} = {got} in the file, {want} by the engine"));
        }
    }
    if wrong.is_empty() && check.node == expected.node {
        // The input's released cells, from the engine's tables.
        let ds = ev.dataset();
        let tables = ev.tables(&expected.node)?;
        let mut cells: Vec<(Vec<u32>, String, u64)> = Vec::new();
        for class in tables.sens.classes() {
            if class.size <= expected.threshold {
                continue;
            }
            let key = class.key;
            let groups: Vec<u32> = (0..ds.qis.len())
                .map(|d| ev.layout().code(key, d))
                .collect();
            for c in class.cells() {
                let value = ds.sensitive.labels[c.value as usize].clone();
                cells.push((groups.clone(), value, c.count as u64));
            }
        }
        cells.sort();
        if cells != check.cells {
            let first = cells
                .iter()
                .zip(&check.cells)
                .find(|(a, b)| a != b)
                .map(|(a, b)| (a.clone(), b.clone()));
            let labels = |g: &[u32]| -> String {
                g.iter()
                    .enumerate()
                    .map(|(d, &c)| {
                        ds.qis[d].hierarchy.level(expected.node[d]).labels[c as usize].as_str()
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let detail = match first {
                Some((want, got)) => format!(
                    "first difference: the file has {} rows of `{}` in class ({}), the input's release {} rows of `{}` in class ({})",
                    got.2,
                    got.1,
                    labels(&got.0),
                    want.2,
                    want.1,
                    labels(&want.0)
                ),
                None => format!(
                    "{} cells in the file, {} in the input's release",
                    check.cells.len(),
                    cells.len()
                ),
            };
            wrong.push(format!(
                "the classes' sensitive values differ from the input's: {detail}"
            ));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(PbgError::Verification {
            path: path.to_path_buf(),
            message: wrong.join("; "),
        })
    }
}
