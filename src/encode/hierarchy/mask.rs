//! Masking of trailing characters (zip codes, phone prefixes, ...).

use super::{Hierarchy, MAX_LEVELS};
use crate::error::{PbgError, Result};

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
    let err = |message: String| PbgError::Hierarchy {
        column: column.to_string(),
        source_name: "mask hierarchy".into(),
        message,
    };
    let steps = match steps {
        Some(0) => return Err(err("`steps = 0` masks nothing: give at least 1".into())),
        Some(s) => s,
        None => {
            let (longest, value) = values
                .iter()
                .map(|(v, _)| (v.chars().count(), v.as_str()))
                .max_by_key(|(n, _)| *n)
                .unwrap_or((1, ""));
            if longest + 2 > MAX_LEVELS {
                let shown: String = value.chars().take(20).collect();
                return Err(err(format!(
                    "a value of {longest} characters (`{shown}...`) would need {longest} masking steps; at most {} fit: declare `steps`",
                    MAX_LEVELS - 2
                )));
            }
            longest.max(1)
        }
    };
    if steps + 2 > MAX_LEVELS {
        return Err(err(format!(
            "`steps = {steps}`: at most {} masking steps fit",
            MAX_LEVELS - 2
        )));
    }
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
    Hierarchy::from_rows(column, "mask hierarchy", &rows)
}
