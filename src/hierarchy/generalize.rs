//! The generalization kernel: any Arrow array of leaf values → a dictionary array of the labels at
//! a level. Vectorized: the input is dictionary-encoded once, each distinct value is looked up once,
//! and the keys are remapped with the `take` kernel; no string is built per row.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, DictionaryArray, StringArray, UInt32Array};
use arrow::compute::{cast, take};
use arrow::datatypes::{DataType, UInt32Type};

use super::Hierarchy;
use crate::error::{PbgError, Result};

/// The data type [`generalize`] returns.
pub fn generalized_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8))
}

/// Generalizes `values` (any type, matched by text form) to `level` of `h`.
///
/// # Null Handling
/// Null values stay null. A non-null value that is not a leaf of `h` is an error naming the value
/// and its (0-based) position in `values`.
pub fn generalize(h: &Hierarchy, level: u8, values: &ArrayRef) -> Result<ArrayRef> {
    if level > h.height() {
        return Err(PbgError::argument(
            format!("hierarchy `{}`", h.column()),
            format!("level {level} is out of range (levels 0..={})", h.height()),
        ));
    }
    let dict = cast(values, &generalized_type())?;
    let dict = dict.as_dictionary::<UInt32Type>();
    let distinct = cast(dict.values(), &DataType::Utf8)?;
    let distinct = distinct.as_string::<i32>();
    let groups = &h.level(level).group_of_leaf;
    let mut mapping = Vec::with_capacity(distinct.len());
    for (i, v) in distinct.iter().enumerate() {
        let v = v.unwrap_or("");
        match h.leaf_code(v) {
            Some(leaf) => mapping.push(groups[leaf as usize]),
            None => {
                let row = dict.keys().iter().position(|k| k == Some(i as u32));
                let Some(row) = row else {
                    mapping.push(0); // a dictionary value no row uses
                    continue;
                };
                return Err(PbgError::ValueNotInHierarchy {
                    column: h.column().to_string(),
                    value: v.to_string(),
                    row: row + 1,
                    source_name: h.source().to_string(),
                });
            }
        }
    }
    let keys = take(&UInt32Array::from(mapping), dict.keys(), None)?;
    let labels = StringArray::from_iter_values(h.level(level).labels.iter());
    let out = DictionaryArray::<UInt32Type>::try_new(
        keys.as_primitive::<UInt32Type>().clone(),
        Arc::new(labels),
    )?;
    Ok(Arc::new(out))
}
