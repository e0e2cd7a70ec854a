//! Numeric interval hierarchies built over the values found in the data.

use super::{Hierarchy, LevelCodes, LossModel};
use crate::error::{PbgError, Result};

/// Formats a bound without a trailing `.0` for whole numbers.
fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

pub(super) fn build(
    column: &str,
    values: &[(String, usize)],
    widths: &[f64],
    origin: f64,
    cuts: &[Vec<f64>],
) -> Result<Hierarchy> {
    let source = "interval hierarchy";
    let err = |message: String| PbgError::Hierarchy {
        column: column.to_string(),
        source_name: source.to_string(),
        message,
    };
    if widths.is_empty() == cuts.is_empty() {
        return Err(err(
            "give either `widths` or `cuts` (one list per level), not both or neither".into(),
        ));
    }
    if let Some(w) = widths.iter().find(|w| !(w.is_finite() && **w > 0.0)) {
        return Err(err(format!("width {w} is not a positive number")));
    }
    if !origin.is_finite() {
        return Err(err(format!("origin {origin} is not a finite number")));
    }
    for (l, c) in cuts.iter().enumerate() {
        if let Some(x) = c.iter().find(|x| !x.is_finite()) {
            return Err(err(format!(
                "cut point {x} of level {} is not a finite number",
                l + 1
            )));
        }
        if let Some(i) = (1..c.len()).find(|&i| c[i] <= c[i - 1]) {
            return Err(err(format!(
                "the cut points of level {} must increase: {} comes after {}",
                l + 1,
                num(c[i]),
                num(c[i - 1])
            )));
        }
    }
    let mut leaves: Vec<(f64, &str)> = Vec::with_capacity(values.len());
    for (text, row) in values {
        let v: f64 = text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| PbgError::ValueNotInHierarchy {
                column: column.to_string(),
                value: text.clone(),
                row: *row,
                source_name: "interval hierarchy: the value is not a finite number".into(),
            })?;
        leaves.push((v, text));
    }
    leaves.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (min, max) = (leaves[0].0, leaves[leaves.len() - 1].0);
    let n_levels = widths.len().max(cuts.len());
    // Per level above the leaves, each leaf's bin (codes in order of appearance) and each bin's
    // label and bounds; the top level last.
    let mut above: Vec<LevelCodes> = vec![LevelCodes::default(); n_levels + 1];
    let mut bounds: Vec<Vec<(f64, f64)>> = vec![Vec::new(); n_levels + 2];
    let mut names = Vec::with_capacity(leaves.len());
    // Leaves ascend, so a level's bin changes only between neighbours: each bin's label is
    // formatted, and its bounds recorded, once.
    let mut last: Vec<Option<f64>> = vec![None; n_levels];
    for &(v, text) in &leaves {
        names.push(text.to_string());
        bounds[0].push((v, v));
        for l in 0..n_levels {
            // The bin's lower bound identifies it (cut levels: the cut below, or -inf).
            let key = if !widths.is_empty() {
                origin + ((v - origin) / widths[l]).floor() * widths[l]
            } else {
                cuts[l]
                    .iter()
                    .rposition(|&x| v >= x)
                    .map_or(f64::NEG_INFINITY, |i| cuts[l][i])
            };
            let level = &mut above[l];
            if last[l] != Some(key) {
                let (label, lo, hi) = if !widths.is_empty() {
                    let w = widths[l];
                    (format!("[{},{})", num(key), num(key + w)), key, key + w)
                } else {
                    let c = &cuts[l];
                    match c.iter().position(|&x| v < x) {
                        Some(0) => (format!("<{}", num(c[0])), min, c[0]),
                        Some(i) => (format!("[{},{})", num(c[i - 1]), num(c[i])), c[i - 1], c[i]),
                        None if c.is_empty() => ("*".to_string(), min, max),
                        None => (format!(">={}", num(c[c.len() - 1])), c[c.len() - 1], max),
                    }
                };
                level.labels.push(label);
                bounds[l + 1].push((lo, hi));
                last[l] = Some(key);
            }
            level.group_of_leaf.push(level.labels.len() as u32 - 1);
        }
    }
    let top = &mut above[n_levels];
    top.labels.push("*".to_string());
    top.group_of_leaf = vec![0; leaves.len()];
    bounds[n_levels + 1].push((min, max));
    Hierarchy::from_levels(column, source, names, above, LossModel::Range(&bounds))
}
