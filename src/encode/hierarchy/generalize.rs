//! The generalization kernel: any Arrow array of leaf values → a dictionary array of the labels at
//! a level. Vectorized: the input is dictionary-encoded by text once, each distinct value is looked
//! up once, and the keys are remapped with the `take` kernel; no string is built per row.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringArray, UInt32Array};
use arrow::compute::take;
use arrow::datatypes::{DataType, UInt32Type};

use super::Hierarchy;
use crate::encode::text_column;
use crate::error::{PbgError, Result};

/// The data type [`generalize`] returns.
pub fn generalized_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8))
}

/// Generalizes `values` (any type, matched by text form) to `level` of `h`; a null takes the
/// group of `null_as` when given.
///
/// # Null Handling
/// Without `null_as`, null values stay null. A non-null value that is not a leaf of `h` is an
/// error naming the value and its (1-based) position in `values`.
pub fn generalize_with(
    h: &Hierarchy,
    level: u8,
    values: &ArrayRef,
    null_as: Option<&str>,
) -> Result<ArrayRef> {
    if level > h.height() {
        return Err(PbgError::argument(
            format!("hierarchy `{}`", h.column()),
            format!("level {level} is out of range (levels 0..={})", h.height()),
        ));
    }
    let text = text_column(values)?;
    let groups = &h.level(level).group_of_leaf;
    let mut mapping = Vec::with_capacity(text.values.len() + 1);
    for i in 0..text.values.len() {
        let v = text.values.value(i);
        match h.leaf_code(v) {
            Some(leaf) => mapping.push(groups[leaf as usize]),
            None => {
                let row = text.keys.iter().position(|k| k == Some(i as u32));
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
    let keys = match null_as {
        Some(fill) if text.keys.null_count() > 0 => {
            let leaf = h
                .leaf_code(fill)
                .ok_or_else(|| PbgError::ValueNotInHierarchy {
                    column: h.column().to_string(),
                    value: fill.to_string(),
                    row: 0,
                    source_name: format!("{} (the null_as value)", h.source()),
                })?;
            let null_key = mapping.len() as u32;
            mapping.push(groups[leaf as usize]);
            UInt32Array::from_iter_values(text.keys.iter().map(|k| k.unwrap_or(null_key)))
        }
        _ => text.keys,
    };
    let keys = take(&UInt32Array::from(mapping), &keys, None)?;
    let labels = StringArray::from_iter_values(h.level(level).labels.iter());
    let out = crate::input::text::dictionary(
        keys.as_primitive::<UInt32Type>().clone(),
        Arc::new(labels),
    )?;
    Ok(Arc::new(out))
}

/// Generalizes `values` to `level` of `h`; nulls stay null (see [`generalize_with`]).
pub fn generalize(h: &Hierarchy, level: u8, values: &ArrayRef) -> Result<ArrayRef> {
    generalize_with(h, level, values, None)
}
