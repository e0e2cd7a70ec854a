//! Masking of trailing characters (zip codes, phone prefixes, ...).

use super::{Hierarchy, LossModel};
use crate::error::Result;

fn masked(value: &str, n: usize, mask: char) -> String {
    let len = value.chars().count();
    let keep = len.saturating_sub(n);
    value
        .chars()
        .take(keep)
        .chain(std::iter::repeat_n(mask, len - keep))
        .collect()
}

pub(super) fn build(
    column: &str,
    values: &[(String, usize)],
    steps: Option<usize>,
    mask: char,
) -> Result<Hierarchy> {
    let mut leaves: Vec<&str> = values.iter().map(|(v, _)| v.as_str()).collect();
    leaves.sort_unstable();
    let longest = leaves.iter().map(|v| v.chars().count()).max().unwrap_or(1);
    let steps = steps.unwrap_or(longest).max(1);
    let mut rows: Vec<Vec<String>> = leaves
        .iter()
        .map(|v| (0..=steps).map(|i| masked(v, i, mask)).collect())
        .collect();
    let last: std::collections::HashSet<&String> = rows.iter().map(|r| &r[steps]).collect();
    if last.len() > 1 {
        for r in &mut rows {
            r.push("*".to_string());
        }
    }
    Hierarchy::from_rows(column, "mask hierarchy", &rows, LossModel::LeafCount)
}
