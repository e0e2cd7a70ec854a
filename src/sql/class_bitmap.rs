//! `class_bitmap(row_id)`: the group's row ids as a serialized roaring bitmap (Binary).

use std::sync::{Arc, LazyLock};

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, BinaryBuilder, BooleanArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, FieldRef, Int64Type};
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, Documentation, EmitTo, GroupsAccumulator, Signature, Volatility,
};
use roaring::RoaringBitmap;

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        super::table::doc_section(),
        "The row ids of the group as a roaring bitmap, serialized (portable format) into a Binary \
         value; read it with bitmap_cardinality and bitmap_contains. Row ids must lie in 0..2^32; \
         NULLs are ignored.",
        "class_bitmap(row_id)",
    )
    .with_sql_example(
        "SELECT bitmap_cardinality(class_bitmap(row_id)) FROM pbg_vectors('adult', '1,1,1,1,1,1,1,1') \
         GROUP BY p_equiv;",
    )
    .with_argument("row_id", "An integer row id.")
    .build()
});

pub(super) fn serialize(b: &RoaringBitmap) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(b.serialized_size());
    b.serialize_into(&mut out)
        .map_err(|e| datafusion::common::DataFusionError::External(Box::new(e)))?;
    Ok(out)
}

pub(super) fn deserialize(function: &str, bytes: &[u8]) -> Result<RoaringBitmap> {
    RoaringBitmap::deserialize_from(bytes)
        .or_else(|e| exec_err!("{function}: the value is not a serialized roaring bitmap ({e})"))
}

/// Row ids as u32 (None for nulls), rejecting ids outside 0..2^32.
fn row_ids(values: &ArrayRef) -> Result<Vec<Option<u32>>> {
    let ids = cast(values, &DataType::Int64)?;
    ids.as_primitive::<Int64Type>()
        .iter()
        .map(|v| match v {
            None => Ok(None),
            Some(v) => u32::try_from(v)
                .map(Some)
                .or_else(|_| exec_err!("class_bitmap: row id {v} is outside 0..4294967295")),
        })
        .collect()
}

/// Bitmaps per group.
#[derive(Debug, Default)]
struct BitmapGroups {
    groups: Vec<RoaringBitmap>,
}

impl BitmapGroups {
    fn binary(groups: &[RoaringBitmap]) -> Result<ArrayRef> {
        let mut b = BinaryBuilder::new();
        for g in groups {
            b.append_value(serialize(g)?);
        }
        Ok(Arc::new(b.finish()))
    }
}

impl GroupsAccumulator for BitmapGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.groups
            .resize_with(total_num_groups, RoaringBitmap::new);
        for (i, (&g, id)) in group_indices.iter().zip(row_ids(&values[0])?).enumerate() {
            let keep = opt_filter.is_none_or(|f| f.is_valid(i) && f.value(i));
            if let (true, Some(id)) = (keep, id) {
                self.groups[g].insert(id);
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        Self::binary(&emit_to.take_needed(&mut self.groups))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![Self::binary(&emit_to.take_needed(&mut self.groups))?])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.groups
            .resize_with(total_num_groups, RoaringBitmap::new);
        let bin: &BinaryArray = values[0].as_binary::<i32>();
        for (i, &g) in group_indices.iter().enumerate() {
            if bin.is_valid(i) {
                self.groups[g] |= deserialize("class_bitmap", bin.value(i))?;
            }
        }
        Ok(())
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let mut b = BinaryBuilder::new();
        for (i, id) in row_ids(&values[0])?.into_iter().enumerate() {
            let keep = opt_filter.is_none_or(|f| f.is_valid(i) && f.value(i));
            let mut bm = RoaringBitmap::new();
            if let (true, Some(id)) = (keep, id) {
                bm.insert(id);
            }
            b.append_value(serialize(&bm)?);
        }
        Ok(vec![Arc::new(b.finish())])
    }

    fn size(&self) -> usize {
        self.groups.iter().map(|g| g.serialized_size() + 32).sum()
    }
}

/// The single-group accumulator.
#[derive(Debug, Default)]
struct BitmapAccumulator(BitmapGroups);

impl Accumulator for BitmapAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0
            .update_batch(values, &vec![0; values[0].len()], None, 1)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.0.groups.resize_with(1, RoaringBitmap::new);
        Ok(ScalarValue::Binary(Some(serialize(&self.0.groups[0])?)))
    }

    fn size(&self) -> usize {
        self.0.size()
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.evaluate()?])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.0.merge_batch(states, &vec![0; states[0].len()], 1)
    }
}

/// The `class_bitmap` aggregate.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ClassBitmapFunc {
    signature: Signature,
}

impl ClassBitmapFunc {
    /// Creates the function.
    pub fn new() -> Self {
        ClassBitmapFunc {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl AggregateUDFImpl for ClassBitmapFunc {
    fn name(&self) -> &str {
        "class_bitmap"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !args[0].is_integer() && args[0] != DataType::Null {
            return plan_err!(
                "class_bitmap: the row id must be an integer, got {}",
                args[0]
            );
        }
        Ok(DataType::Binary)
    }

    fn accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::<BitmapAccumulator>::default())
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format_state_name(args.name, "bitmap"),
            DataType::Binary,
            true,
        ))])
    }

    fn groups_accumulator_supported(&self, _: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::<BitmapGroups>::default())
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
}
