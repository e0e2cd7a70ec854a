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
    // An empty value would be its own leaf and every level's label, one label for all levels
    // that the hierarchy's own check then refused as an empty label of a row the user never
    // wrote: it is refused here, by its data row.
    if let Some((_, row)) = values.iter().find(|(v, _)| v.is_empty()) {
        return Err(PbgError::ValueNotInHierarchy {
            column: column.to_string(),
            value: String::new(),
            row: *row,
            source_name: "mask hierarchy: an empty value has no characters to mask; fill it, or make it null and declare `null_as`".into(),
        });
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_value_is_refused_by_its_data_row() {
        let values = [("13053".to_string(), 1), (String::new(), 3)];
        let err = build("zip", &values, Some(2), '*').unwrap_err().to_string();
        assert!(
            err.contains("column `zip`") && err.contains("data row 3") && err.contains("empty"),
            "{err}"
        );
        let ok = build("zip", &values[..1], Some(2), '*').unwrap();
        assert_eq!(ok.height(), 2);
    }
}
