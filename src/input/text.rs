//! Values by their text: a batch column as keys into its distinct text forms, formatted once
//! per distinct value. Every pass matches values this way, whatever type the reader chose.

use arrow::array::{ArrayRef, AsArray, StringArray, UInt32Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, UInt32Type};

use crate::error::Result;

/// A batch column as dictionary keys into its distinct text forms (the same text as a cast of
/// each value to Utf8). Nulls stay null in `keys`.
#[derive(Debug, Clone)]
pub struct TextColumn {
    /// Key of every row.
    pub keys: UInt32Array,
    /// Distinct text forms (may include values no key points to).
    pub values: StringArray,
}

/// Dictionary-encodes a column by its text form without formatting every row: dictionary
/// columns keep their dictionary, numbers are packed by value first and only the distinct
/// values are formatted.
pub fn text_column(column: &ArrayRef) -> Result<TextColumn> {
    let dict_type =
        |v: &DataType| DataType::Dictionary(Box::new(DataType::UInt32), Box::new(v.clone()));
    let dict = match column.data_type() {
        DataType::Dictionary(_, v) if matches!(v.as_ref(), DataType::Utf8View) => {
            cast(&cast(column, &DataType::Utf8)?, &dict_type(&DataType::Utf8))?
        }
        DataType::Dictionary(_, v) => cast(column, &dict_type(v))?,
        DataType::Utf8 | DataType::LargeUtf8 => cast(column, &dict_type(&DataType::Utf8))?,
        t if t.is_primitive() => cast(column, &dict_type(t))?,
        t if t.is_nested() => cast(&display_text(column)?, &dict_type(&DataType::Utf8))?,
        _ => cast(&cast(column, &DataType::Utf8)?, &dict_type(&DataType::Utf8))?,
    };
    let dict = dict.as_dictionary::<UInt32Type>();
    let values = cast(dict.values(), &DataType::Utf8)?;
    Ok(TextColumn {
        keys: dict.keys().clone(),
        values: values.as_string::<i32>().clone(),
    })
}

/// Nested values (structs, lists, maps) as their display text, which no cast provides.
fn display_text(column: &ArrayRef) -> Result<ArrayRef> {
    use arrow::array::Array;
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let formatter = ArrayFormatter::try_new(column.as_ref(), &FormatOptions::default())?;
    let values: StringArray = (0..column.len())
        .map(|r| {
            if column.is_null(r) {
                None
            } else {
                Some(formatter.value(r).to_string())
            }
        })
        .collect();
    Ok(std::sync::Arc::new(values))
}
