//! Attribute correlation: chi-square and the mean-square contingency coefficient
//! φ² = χ² / (n · (min(d1, d2) − 1)) of pairs of columns. Numeric columns with more distinct
//! values than the bin count are binned first (equal frequency).

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type};
use serde::Serialize;

use crate::error::{PbgError, Result};
use crate::io::Table;

/// A column reduced to category codes `0..categories`.
#[derive(Debug, Clone, PartialEq)]
pub struct Categorical {
    /// Column name.
    pub name: String,
    /// Code per row.
    pub codes: Vec<u32>,
    /// Number of codes.
    pub categories: usize,
}

/// The counts of a two-way contingency table.
#[derive(Debug, Clone, PartialEq)]
pub struct Contingency {
    rows: usize,
    cols: usize,
    counts: Vec<u64>,
}

impl Contingency {
    /// Counts the pairs `(a[i], b[i])`; codes must be below `da` and `db`.
    pub fn new(a: &[u32], da: usize, b: &[u32], db: usize) -> Self {
        let mut counts = vec![0u64; da * db];
        for (&x, &y) in a.iter().zip(b) {
            counts[x as usize * db + y as usize] += 1;
        }
        Contingency {
            rows: da,
            cols: db,
            counts,
        }
    }

    /// From explicit counts, row by row.
    pub fn from_counts(rows: usize, cols: usize, counts: Vec<u64>) -> Self {
        Contingency { rows, cols, counts }
    }

    fn margins(&self) -> (Vec<u64>, Vec<u64>, u64) {
        let mut r = vec![0u64; self.rows];
        let mut c = vec![0u64; self.cols];
        for (ri, row) in r.iter_mut().zip(self.counts.chunks(self.cols.max(1))) {
            for (cj, &v) in c.iter_mut().zip(row) {
                *ri += v;
                *cj += v;
            }
        }
        let n = r.iter().sum();
        (r, c, n)
    }

    /// Pearson's χ² = Σ (O − E)² / E over cells of non-empty rows and columns.
    pub fn chi_square(&self) -> f64 {
        let (r, c, n) = self.margins();
        if n == 0 {
            return 0.0;
        }
        let mut chi = 0.0;
        for (&ri, row) in r.iter().zip(self.counts.chunks(self.cols.max(1))) {
            for (&cj, &o) in c.iter().zip(row) {
                let e = ri as f64 * cj as f64 / n as f64;
                if e > 0.0 {
                    let d = o as f64 - e;
                    chi += d * d / e;
                }
            }
        }
        chi
    }

    /// φ² = χ² / (n · (min(d1, d2) − 1)) in [0, 1], d counting the non-empty rows and columns;
    /// 0 when either attribute takes a single value.
    pub fn phi_squared(&self) -> f64 {
        let (r, c, n) = self.margins();
        let d1 = r.iter().filter(|&&x| x > 0).count();
        let d2 = c.iter().filter(|&&x| x > 0).count();
        let d = d1.min(d2);
        if d < 2 || n == 0 {
            return 0.0;
        }
        (self.chi_square() / (n as f64 * (d as f64 - 1.0))).clamp(0.0, 1.0)
    }
}

/// Codes a column: numeric columns with more than `bins` distinct values are cut into `bins`
/// equal-frequency bins (equal values always share a bin); anything else by its distinct text forms.
pub fn categorical(name: &str, column: &ArrayRef, bins: usize) -> Result<Categorical> {
    if let Some(row) = (0..column.len()).find(|&r| column.is_null(r)) {
        return Err(PbgError::NullValue {
            column: name.to_string(),
            row: row + 1,
            hint: "correlation needs every value: fill or drop those rows first".into(),
        });
    }
    // Text read from CSV is numeric when every value reads as a finite number.
    let numbers: Option<Vec<f64>> = if column.data_type().is_numeric() {
        let values = cast(column, &DataType::Float64)?;
        Some(values.as_primitive::<Float64Type>().values().to_vec())
    } else {
        let text = crate::encode::text_column(column)?;
        let parsed: Option<Vec<f64>> = (0..text.values.len())
            .map(|i| {
                text.values
                    .value(i)
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
            })
            .collect();
        parsed
            .filter(|p| !p.is_empty())
            .map(|p| text.keys.values().iter().map(|&k| p[k as usize]).collect())
    };
    if let Some(values) = numbers.as_deref()
        && bins >= 1
    {
        let mut sorted = values.to_vec();
        sorted.sort_by(|a, b| a.total_cmp(b));
        sorted.dedup();
        if sorted.len() > bins {
            let mut all = values.to_vec();
            all.sort_by(|a, b| a.total_cmp(b));
            let mut cuts: Vec<f64> = (1..bins).map(|i| all[i * all.len() / bins]).collect();
            cuts.dedup();
            let codes = values
                .iter()
                .map(|v| cuts.partition_point(|c| c <= v) as u32)
                .collect();
            return Ok(Categorical {
                name: name.to_string(),
                codes,
                categories: cuts.len() + 1,
            });
        }
    }
    // Categories in text order, so that the sums do not depend on the order rows arrive in.
    let text = crate::encode::text_column(column)?;
    let mut order: Vec<u32> = (0..text.values.len() as u32).collect();
    order.sort_by(|&a, &b| {
        text.values
            .value(a as usize)
            .cmp(text.values.value(b as usize))
    });
    let mut rank = vec![0u32; order.len()];
    let mut categories = 0u32;
    for (i, &o) in order.iter().enumerate() {
        if i > 0 && text.values.value(order[i - 1] as usize) != text.values.value(o as usize) {
            categories += 1;
        }
        rank[o as usize] = categories;
    }
    Ok(Categorical {
        name: name.to_string(),
        codes: text
            .keys
            .values()
            .iter()
            .map(|&k| rank[k as usize])
            .collect(),
        categories: if order.is_empty() {
            0
        } else {
            categories as usize + 1
        },
    })
}

/// χ² and φ² for every pair of the chosen columns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorrelationMatrix {
    /// The columns, in order.
    pub columns: Vec<String>,
    /// χ² per pair.
    pub chi_square: Vec<Vec<f64>>,
    /// φ² per pair (1 on the diagonal for columns with two or more values).
    pub phi_squared: Vec<Vec<f64>>,
}

/// Correlates `columns` of `table` (all columns when empty; at least two).
pub fn correlate(table: &Table, columns: &[String], bins: usize) -> Result<CorrelationMatrix> {
    let names: Vec<String> = if columns.is_empty() {
        table
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    } else {
        columns.to_vec()
    };
    if names.len() < 2 {
        return Err(PbgError::argument(
            "columns",
            format!(
                "correlation needs at least two columns, got {}",
                names.len()
            ),
        ));
    }
    if table.num_rows() < 2 {
        return Err(PbgError::argument(
            "input",
            "correlation needs at least two rows",
        ));
    }
    let cats = names
        .iter()
        .map(|n| categorical(n, &table.column(table.column_index(n)?)?, bins))
        .collect::<Result<Vec<_>>>()?;
    let k = cats.len();
    let mut chi = vec![vec![0.0; k]; k];
    let mut phi = vec![vec![0.0; k]; k];
    for i in 0..k {
        for j in i..k {
            let t = Contingency::new(
                &cats[i].codes,
                cats[i].categories,
                &cats[j].codes,
                cats[j].categories,
            );
            chi[i][j] = t.chi_square();
            phi[i][j] = t.phi_squared();
            chi[j][i] = chi[i][j];
            phi[j][i] = phi[i][j];
        }
    }
    Ok(CorrelationMatrix {
        columns: names,
        chi_square: chi,
        phi_squared: phi,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_two_by_two() {
        // [[10, 20], [30, 40]]: n = 100, rows 30/70, cols 40/60.
        // E = [[12, 18], [28, 42]]; χ² = 4/12 + 4/18 + 4/28 + 4/42 = 0.7936507936...
        let t = Contingency::from_counts(2, 2, vec![10, 20, 30, 40]);
        assert!((t.chi_square() - 0.793_650_793_650_793_6).abs() < 1e-12);
        assert!((t.phi_squared() - 0.007_936_507_936_507_936).abs() < 1e-12);
    }

    #[test]
    fn hand_computed_two_by_three() {
        // [[5, 0, 5], [0, 10, 0]]: n = 20, rows 10/10, cols 5/10/5; E = [[2.5, 5, 2.5], [2.5, 5, 2.5]].
        // χ² = (2.5² / 2.5) · 4 + (5² / 5) · 2 = 10 + 10 = 20; φ² = 20 / (20 · 1) = 1.
        let t = Contingency::from_counts(2, 3, vec![5, 0, 5, 0, 10, 0]);
        assert!((t.chi_square() - 20.0).abs() < 1e-12);
        assert_eq!(t.phi_squared(), 1.0);
        // Independence gives 0.
        let t = Contingency::from_counts(2, 2, vec![10, 20, 10, 20]);
        assert_eq!(t.chi_square(), 0.0);
    }

    #[test]
    fn equal_frequency_bins_keep_ties_together() {
        let col: ArrayRef = std::sync::Arc::new(arrow::array::Int64Array::from(vec![
            1, 1, 1, 2, 3, 4, 5, 6, 7, 8,
        ]));
        let c = categorical("x", &col, 2).unwrap();
        assert_eq!(c.categories, 2);
        assert_eq!(c.codes[0], c.codes[1]);
        assert_eq!(c.codes[0], c.codes[2]);
        assert!(c.codes[9] > c.codes[0]);
    }
}
