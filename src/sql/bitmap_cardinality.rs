//! `bitmap_cardinality(bitmap)`: the number of row ids in a serialized roaring bitmap.

use std::sync::{Arc, LazyLock};

use arrow::array::{Array, AsArray, UInt64Array};
use arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::class_bitmap::deserialize;

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        super::table::doc_section(),
        "Number of row ids in a bitmap made by class_bitmap. NULL gives NULL.",
        "bitmap_cardinality(bitmap)",
    )
    .with_sql_example("SELECT bitmap_cardinality(class_bitmap(row_id)) FROM t GROUP BY g;")
    .with_argument("bitmap", "A Binary value produced by class_bitmap.")
    .build()
});

/// The `bitmap_cardinality` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BitmapCardinalityFunc {
    signature: Signature,
}

impl BitmapCardinalityFunc {
    /// Creates the function.
    pub fn new() -> Self {
        BitmapCardinalityFunc {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for BitmapCardinalityFunc {
    fn name(&self) -> &str {
        "bitmap_cardinality"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !matches!(args[0], DataType::Binary | DataType::Null) {
            return plan_err!(
                "bitmap_cardinality: expects a Binary bitmap, got {}",
                args[0]
            );
        }
        Ok(DataType::UInt64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [b] = datafusion::common::utils::take_function_args(self.name(), args.args)?;
        let scalar = matches!(b, ColumnarValue::Scalar(_));
        let arr = b.into_array(if scalar { 1 } else { args.number_rows })?;
        if arr.data_type() == &DataType::Null {
            return Ok(ColumnarValue::Scalar(ScalarValue::UInt64(None)));
        }
        let bin = arr.as_binary::<i32>();
        let out: UInt64Array = (0..bin.len())
            .map(|i| {
                if bin.is_null(i) {
                    Ok(None)
                } else {
                    deserialize(self.name(), bin.value(i)).map(|b| Some(b.len()))
                }
            })
            .collect::<Result<_>>()?;
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?)
        } else {
            ColumnarValue::Array(Arc::new(out))
        })
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
}
