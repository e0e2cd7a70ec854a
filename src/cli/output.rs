//! Rendering of node indices as JSON objects and key/value tables.

use serde_json::{Map, Value};

/// An aligned text table: a header row, then the rows; each column as wide as its widest cell,
/// numbers right-aligned, text left-aligned.
pub fn aligned_table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let numeric: Vec<bool> = (0..header.len())
        .map(|c| {
            !rows.is_empty()
                && rows
                    .iter()
                    .all(|r| r.get(c).is_some_and(|v| v.parse::<f64>().is_ok()))
        })
        .collect();
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (c, cell) in cells.iter().enumerate() {
            let w = width.get(c).copied().unwrap_or(0);
            if c > 0 {
                out.push_str("  ");
            }
            if numeric.get(c).copied().unwrap_or(false) {
                out.push_str(&format!("{cell:>w$}"));
            } else {
                out.push_str(&format!("{cell:<w$}"));
            }
        }
        out.trim_end().to_string()
    };
    let mut out = line(header);
    out.push('\n');
    for row in rows {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

/// A two-column text table of a JSON object (arrays abbreviated).
pub fn key_value_table(m: &Map<String, Value>) -> String {
    let width = m.keys().map(String::len).max().unwrap_or(0);
    let mut out = String::new();
    for (k, v) in m {
        let text = match v {
            Value::Array(a) if a.len() > 12 => format!("[{} values]", a.len()),
            other => other.to_string(),
        };
        out.push_str(&format!("{k:<width$}  {text}\n"));
    }
    out
}
