//! Date hierarchies over `YYYY-MM-DD` text forms (Arrow dates and timestamps print so).

use super::Hierarchy;
use crate::error::{PbgError, Result};

fn is_date(v: &str) -> bool {
    let b = v.as_bytes();
    b.len() >= 10
        && b[4] == b'-'
        && b[7] == b'-'
        && [0, 1, 2, 3, 5, 6, 8, 9]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
}

pub(super) fn build(
    column: &str,
    values: &[(String, usize)],
    levels: &[String],
) -> Result<Hierarchy> {
    let err = |message: String| PbgError::Hierarchy {
        column: column.to_string(),
        source_name: "date hierarchy".into(),
        message,
    };
    let order = ["month", "year", "decade"];
    let mut last = None;
    for l in levels {
        let pos = order
            .iter()
            .position(|o| o == l)
            .ok_or_else(|| err(format!("unknown level `{l}` (use month, year, decade)")))?;
        if last.is_some_and(|p| p >= pos) {
            return Err(err(
                "levels must go from fine to coarse: month, year, decade".into(),
            ));
        }
        last = Some(pos);
    }
    let mut rows = Vec::with_capacity(values.len());
    for (v, row) in values {
        if !is_date(v) {
            return Err(PbgError::ValueNotInHierarchy {
                column: column.to_string(),
                value: v.clone(),
                row: *row,
                source_name: "date hierarchy: the value is not a YYYY-MM-DD date".into(),
            });
        }
        let mut r = vec![v.clone()];
        for l in levels {
            r.push(match l.as_str() {
                "month" => v[..7].to_string(),
                "year" => v[..4].to_string(),
                _ => format!("{}0s", &v[..3]),
            });
        }
        r.push("*".into());
        rows.push(r);
    }
    rows.sort();
    Hierarchy::from_rows(column, "date hierarchy", &rows)
}
