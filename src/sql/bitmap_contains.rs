//! `bitmap_contains(bitmap, row_id)`: whether a serialized roaring bitmap holds a row id.

use std::sync::{Arc, LazyLock};

use arrow::array::{Array, AsArray, BooleanArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::class_bitmap::deserialize;

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        super::table::doc_section(),
        "True when the bitmap (from class_bitmap) holds the row id. NULL in, NULL out.",
        "bitmap_contains(bitmap, row_id)",
    )
    .with_sql_example("SELECT bitmap_contains(class_bitmap(row_id), 7) FROM t GROUP BY g;")
    .with_argument("bitmap", "A Binary value produced by class_bitmap.")
    .with_argument("row_id", "An integer row id.")
    .build()
});

/// The `bitmap_contains` scalar function.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BitmapContainsFunc {
    signature: Signature,
}

impl BitmapContainsFunc {
    /// Creates the function.
    pub fn new() -> Self {
        BitmapContainsFunc {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for BitmapContainsFunc {
    fn name(&self) -> &str {
        "bitmap_contains"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !matches!(args[0], DataType::Binary | DataType::Null) {
            return plan_err!("bitmap_contains: expects a Binary bitmap, got {}", args[0]);
        }
        if !args[1].is_integer() && args[1] != DataType::Null {
            return plan_err!(
                "bitmap_contains: the row id must be an integer, got {}",
                args[1]
            );
        }
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [b, r] = datafusion::common::utils::take_function_args(self.name(), args.args)?;
        let scalar = matches!(
            (&b, &r),
            (ColumnarValue::Scalar(_), ColumnarValue::Scalar(_))
        );
        let n = if scalar { 1 } else { args.number_rows };
        let (b, r) = (b.into_array(n)?, r.into_array(n)?);
        if b.data_type() == &DataType::Null || r.data_type() == &DataType::Null {
            return Ok(ColumnarValue::Scalar(ScalarValue::Boolean(None)));
        }
        let bin = b.as_binary::<i32>();
        let ids = cast(&r, &DataType::Int64)?;
        let ids = ids.as_primitive::<Int64Type>();
        let out: BooleanArray = (0..n)
            .map(|i| {
                if bin.is_null(i) || ids.is_null(i) {
                    return Ok(None);
                }
                let id = ids.value(i);
                let bm = deserialize(self.name(), bin.value(i))?;
                Ok(Some(u32::try_from(id).is_ok_and(|id| bm.contains(id))))
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
