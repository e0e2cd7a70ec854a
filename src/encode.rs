//! Encode once: every QI column becomes leaf codes of its hierarchy, the sensitive and class
//! attributes become value codes. Values are matched by their text form, whatever type the reader
//! chose (an Int64 `age` of 39 matches the leaf `39`); strings are not touched again until output.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringArray, UInt32Array};
use arrow::compute::{cast, take};
use arrow::datatypes::{DataType, UInt32Type};

use crate::error::{PbgError, Result};
use crate::hierarchy::Hierarchy;
use crate::io::{Table, read_table};
use crate::profile::Profile;

/// A quasi-identifier encoded as leaf codes.
#[derive(Debug, Clone)]
pub struct EncodedQi {
    /// Column name.
    pub name: String,
    /// Column index in the input table.
    pub column: usize,
    /// The validated hierarchy.
    pub hierarchy: Arc<Hierarchy>,
    /// Leaf code per row.
    pub codes: UInt32Array,
    /// Number of rows holding each leaf.
    pub leaf_rows: Vec<u64>,
}

/// A categorical attribute (sensitive or class) encoded as value codes.
#[derive(Debug, Clone)]
pub struct EncodedAttribute {
    /// Column name.
    pub name: String,
    /// Column index in the input table.
    pub column: usize,
    /// Text form of each value code.
    pub labels: Vec<String>,
    /// Value code per row.
    pub codes: UInt32Array,
    /// Number of rows holding each value.
    pub counts: Vec<u64>,
}

/// The input table with its profile, encoded once for every later evaluation.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The profile it was loaded with.
    pub profile: Profile,
    /// The raw table (kept for releases: pass-through columns).
    pub table: Table,
    /// Quasi-identifiers in node order.
    pub qis: Vec<EncodedQi>,
    /// The sensitive attribute.
    pub sensitive: EncodedAttribute,
    /// The class attribute, if the profile names one.
    pub class: Option<EncodedAttribute>,
    /// Identifier columns (indices), dropped from releases.
    pub identifiers: Vec<usize>,
    /// The suppression limit η in rows.
    pub eta: u64,
    /// Tuples each encoded row stands for, when the rows are class statistics (distinct
    /// combinations with their counts) rather than the input's rows; `None`: one tuple per row.
    pub weights: Option<Vec<u64>>,
    /// Number of tuples N (Σ weights, or the row count).
    pub tuples: u64,
}

/// A column's distinct text forms (dictionary) with the 0-based row of each value's first occurrence.
struct TextDictionary {
    values: Vec<String>,
    first_row: Vec<usize>,
    keys: UInt32Array,
}

fn text_dictionary(
    column: &ArrayRef,
    name: &str,
    null_as: Option<&str>,
    null_hint: &str,
) -> Result<TextDictionary> {
    let mut text = cast(column, &DataType::Utf8)?;
    if text.null_count() > 0 {
        match null_as {
            Some(fill) => {
                let s = text.as_string::<i32>();
                text = Arc::new(
                    s.iter()
                        .map(|v| Some(v.unwrap_or(fill)))
                        .collect::<StringArray>(),
                );
            }
            None => {
                let row = (0..text.len()).find(|&r| text.is_null(r)).unwrap_or(0);
                return Err(PbgError::NullValue {
                    column: name.to_string(),
                    row: row + 1,
                    hint: null_hint.to_string(),
                });
            }
        }
    }
    let dict = cast(
        &text,
        &DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8)),
    )?;
    let dict = dict.as_dictionary::<UInt32Type>();
    let values = dict.values().as_string::<i32>();
    let keys = dict.keys().clone();
    let mut first_row = vec![usize::MAX; values.len()];
    for (r, &k) in keys.values().iter().enumerate() {
        let slot = &mut first_row[k as usize];
        if *slot == usize::MAX {
            *slot = r;
        }
    }
    Ok(TextDictionary {
        values: values.iter().map(|v| v.unwrap_or("").to_string()).collect(),
        first_row,
        keys,
    })
}

fn encode_attribute(table: &Table, name: &str, role: &str) -> Result<EncodedAttribute> {
    let column = table.column_index(name)?;
    let hint = format!("the {role} attribute must not be null: fill or drop those rows first");
    let dict = text_dictionary(&table.column(column)?, name, None, &hint)?;
    let mut counts = vec![0u64; dict.values.len()];
    for &k in dict.keys.values() {
        counts[k as usize] += 1;
    }
    Ok(EncodedAttribute {
        name: name.to_string(),
        column,
        labels: dict.values,
        codes: dict.keys,
        counts,
    })
}

impl Dataset {
    /// Reads the profile's input, builds and validates every hierarchy against the data, and encodes.
    pub fn load(profile: &Profile) -> Result<Self> {
        let table = read_table(&profile.input, profile.delimiter)?;
        Self::from_table(profile, table)
    }

    /// Encodes an already read table.
    pub fn from_table(profile: &Profile, table: Table) -> Result<Self> {
        let mut qis = Vec::with_capacity(profile.qis.len());
        for q in &profile.qis {
            let column = table.column_index(&q.name)?;
            let hint = "declare `null_as = \"...\"` for this QI, with a leaf of its hierarchy, or fill the nulls";
            let dict =
                text_dictionary(&table.column(column)?, &q.name, q.null_as.as_deref(), hint)?;
            let values: Vec<(String, usize)> = dict
                .values
                .iter()
                .zip(&dict.first_row)
                .filter(|(_, r)| **r != usize::MAX)
                .map(|(v, r)| (v.clone(), r + 1))
                .collect();
            let hierarchy = Arc::new(q.hierarchy.build(&q.name, &values)?);
            let mut mapping = Vec::with_capacity(dict.values.len());
            for (v, &r) in dict.values.iter().zip(&dict.first_row) {
                match hierarchy.leaf_code(v) {
                    Some(c) => mapping.push(c),
                    None if r == usize::MAX => mapping.push(0),
                    None => {
                        return Err(PbgError::ValueNotInHierarchy {
                            column: q.name.clone(),
                            value: v.clone(),
                            row: r + 1,
                            source_name: hierarchy.source().to_string(),
                        });
                    }
                }
            }
            let codes = take(&UInt32Array::from(mapping), &dict.keys, None)?;
            let codes = codes.as_primitive::<UInt32Type>().clone();
            let mut leaf_rows = vec![0u64; hierarchy.leaf_count()];
            for &c in codes.values() {
                leaf_rows[c as usize] += 1;
            }
            qis.push(EncodedQi {
                name: q.name.clone(),
                column,
                hierarchy,
                codes,
                leaf_rows,
            });
        }
        let sensitive = encode_attribute(&table, &profile.sensitive, "sensitive")?;
        let class = match &profile.class {
            Some(c) => Some(encode_attribute(&table, c, "class")?),
            None => None,
        };
        let identifiers = profile
            .identifiers
            .iter()
            .map(|i| table.column_index(i))
            .collect::<Result<Vec<_>>>()?;
        let eta = profile.suppression.rows(table.num_rows());
        let tuples = table.num_rows() as u64;
        Ok(Dataset {
            profile: profile.clone(),
            table,
            qis,
            sensitive,
            class,
            identifiers,
            eta,
            weights: None,
            tuples,
        })
    }

    /// Number of encoded rows (the input's rows, or the distinct combinations of statistics).
    pub fn num_rows(&self) -> usize {
        self.sensitive.codes.len()
    }

    /// Number of tuples N that the indices are over.
    pub fn num_tuples(&self) -> u64 {
        self.tuples
    }

    /// Fails when the dataset holds class statistics instead of rows: `what` needs the rows.
    pub fn require_rows(&self, what: &str) -> Result<()> {
        match self.weights {
            None => Ok(()),
            Some(_) => Err(PbgError::argument(
                what,
                "needs the input's rows, but this dataset holds class statistics only".to_string(),
            )),
        }
    }

    /// Hierarchy heights N_i in node order.
    pub fn heights(&self) -> Vec<u8> {
        self.qis.iter().map(|q| q.hierarchy.height()).collect()
    }
}
