//! The table to slice: each attribute (the QIs, then the sensitive attribute) as ordered codes with
//! their text, and the columns of the slicing (which attributes are released together, and which
//! columns hold the sensitive attribute).

use std::collections::HashMap;

use arrow::array::{Array, ArrayRef};

use crate::encode::text_column;
use crate::error::{PbgError, Result};

/// The id of the combination `key` in `ids`, added as the next id when new (no allocation when
/// it is known).
pub(crate) fn intern_combination(ids: &mut HashMap<Vec<u32>, u32>, key: &[u32]) -> u32 {
    if let Some(&id) = ids.get(key) {
        return id;
    }
    let id = ids.len() as u32;
    ids.insert(key.to_vec(), id);
    id
}

/// The release modes of SPEC §6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceMode {
    /// QIs kept together, sensitive values permuted within buckets.
    Bucketization,
    /// Attribute partition into columns; the sensitive attribute in one of them.
    Slicing,
    /// As slicing, with the sensitive attribute added to every column.
    Overlapping,
}

impl SliceMode {
    /// Parses `bucketization`, `slicing` or `overlapping`.
    pub fn parse(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "bucketization" => Ok(SliceMode::Bucketization),
            "slicing" => Ok(SliceMode::Slicing),
            "overlapping" | "overlapping-slicing" => Ok(SliceMode::Overlapping),
            other => Err(PbgError::argument(
                "mode",
                format!("unknown mode `{other}` (use slicing, overlapping or bucketization)"),
            )),
        }
    }

    /// The name used on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            SliceMode::Bucketization => "bucketization",
            SliceMode::Slicing => "slicing",
            SliceMode::Overlapping => "overlapping",
        }
    }
}

/// One attribute as codes ordered like its values (numbers numerically, text by its order).
#[derive(Debug, Clone, PartialEq)]
pub struct SliceAttribute {
    /// Attribute name.
    pub name: String,
    /// Code per row.
    pub codes: Vec<u32>,
    /// Text of every code.
    pub labels: Vec<String>,
}

impl SliceAttribute {
    /// Codes a column by its text form; numeric columns are ordered by value. Works on the
    /// column's dictionary (distinct values), never formatting every row.
    pub fn from_column(name: &str, column: &ArrayRef) -> Result<Self> {
        if column.null_count() > 0 {
            let row = (0..column.len()).find(|&r| column.is_null(r)).unwrap_or(0);
            return Err(PbgError::NullValue {
                column: name.to_string(),
                row: row + 1,
                hint: "slicing needs every value: fill or drop those rows first".into(),
            });
        }
        let text = text_column(column)?;
        // Distinct texts (a dictionary may repeat a text or hold unused entries).
        let mut index: HashMap<&str, u32> = HashMap::new();
        let mut first: Vec<&str> = Vec::new();
        let mut first_key: Vec<usize> = Vec::new();
        let mut used = vec![false; text.values.len()];
        for &k in text.keys.values() {
            used[k as usize] = true;
        }
        let dict_to_distinct: Vec<u32> = (0..text.values.len())
            .map(|i| {
                let v = text.values.value(i);
                if !used[i] {
                    return u32::MAX;
                }
                *index.entry(v).or_insert_with(|| {
                    first.push(v);
                    first_key.push(i);
                    first.len() as u32 - 1
                })
            })
            .collect();
        // Order the distinct values: numerically for numeric columns, else as text.
        let mut order: Vec<u32> = (0..first.len() as u32).collect();
        // Text read from CSV orders numerically when every value reads as a finite number.
        let numeric = column.data_type().is_numeric()
            || (!first.is_empty()
                && first
                    .iter()
                    .all(|t| t.trim().parse::<f64>().is_ok_and(f64::is_finite)));
        if numeric {
            let value: Vec<f64> = first
                .iter()
                .map(|t| t.trim().parse::<f64>().unwrap_or(f64::NAN))
                .collect();
            order.sort_by(|&a, &b| value[a as usize].total_cmp(&value[b as usize]));
        } else {
            order.sort_by(|&a, &b| first[a as usize].cmp(first[b as usize]));
        }
        let mut rank = vec![0u32; first.len()];
        for (r, &c) in order.iter().enumerate() {
            rank[c as usize] = r as u32;
        }
        let code_of_key: Vec<u32> = dict_to_distinct
            .iter()
            .map(|&d| if d == u32::MAX { 0 } else { rank[d as usize] })
            .collect();
        Ok(SliceAttribute {
            name: name.to_string(),
            codes: text
                .keys
                .values()
                .iter()
                .map(|&k| code_of_key[k as usize])
                .collect(),
            labels: order
                .iter()
                .map(|&c| first[c as usize].to_string())
                .collect(),
        })
    }

    /// Number of distinct values.
    pub fn domain(&self) -> usize {
        self.labels.len()
    }
}

/// The table and the columns of a slicing.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceLayout {
    /// The attributes: QIs first, the sensitive attribute last.
    pub attributes: Vec<SliceAttribute>,
    /// Index of the sensitive attribute in `attributes`.
    pub sensitive: usize,
    /// Attribute indices of every column, in release order.
    pub columns: Vec<Vec<usize>>,
    /// Columns that hold the sensitive attribute (each is checked as the sensitive column).
    pub sensitive_columns: Vec<usize>,
    /// The mode the columns were built for.
    pub mode: SliceMode,
}

impl SliceLayout {
    /// Builds the columns for `mode` from an attribute partition (ignored for bucketization, whose
    /// columns are all QIs together and the sensitive attribute alone). A partition that leaves
    /// the sensitive attribute out gets it as a column of its own (slicing) or in every column
    /// (overlapping).
    pub fn new(
        attributes: Vec<SliceAttribute>,
        partition: &[Vec<usize>],
        mode: SliceMode,
    ) -> Result<Self> {
        let sensitive = attributes.len() - 1;
        if attributes.len() < 2 {
            return Err(PbgError::argument(
                "qi",
                "slicing needs at least one quasi-identifier besides the sensitive attribute",
            ));
        }
        let mut columns: Vec<Vec<usize>> = match mode {
            SliceMode::Bucketization => vec![(0..sensitive).collect(), vec![sensitive]],
            _ => partition.to_vec(),
        };
        match mode {
            SliceMode::Overlapping => {
                for c in columns.iter_mut() {
                    if !c.contains(&sensitive) {
                        c.push(sensitive);
                    }
                }
            }
            SliceMode::Slicing if !columns.iter().any(|c| c.contains(&sensitive)) => {
                columns.push(vec![sensitive]);
            }
            _ => {}
        }
        let sensitive_columns: Vec<usize> = (0..columns.len())
            .filter(|&c| columns[c].contains(&sensitive))
            .collect();
        if mode != SliceMode::Bucketization && columns.len() < 2 {
            return Err(PbgError::argument(
                "partition",
                "a slicing needs at least two columns",
            ));
        }
        Ok(SliceLayout {
            attributes,
            sensitive,
            columns,
            sensitive_columns,
            mode,
        })
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.attributes[0].codes.len()
    }

    /// Names of a column's attributes.
    pub fn column_names(&self, c: usize) -> Vec<&str> {
        self.columns[c]
            .iter()
            .map(|&a| self.attributes[a].name.as_str())
            .collect()
    }
}
