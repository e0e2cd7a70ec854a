//! `generalize(value, 'hierarchy', level)`: the label of `value` at `level` of a registered hierarchy.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, exec_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};

use super::registry::Registry;
use crate::hierarchy::{HierarchyRows, generalize, generalized_type};

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        datafusion::logical_expr::DocSection {
            include: true,
            label: "pbg",
            description: Some("Property based generalization"),
        },
        "Returns the label of `value` at `level` of the named generalization hierarchy (a QI of a \
         registered profile). Values are matched by their text form; nulls stay null. Vectorized: \
         the result is a dictionary array.",
        "generalize(value, 'hierarchy', level)",
    )
    .with_sql_example(
        "SELECT generalize(age, 'age', 2) AS age, count(*) FROM adult GROUP BY 1 ORDER BY 1;",
    )
    .with_argument("value", "The column to generalize (any type).")
    .with_argument(
        "hierarchy",
        "A hierarchy name: a QI of a registered profile, or `profile.qi`; a constant, or a column naming each row's own.",
    )
    .with_argument(
        "level",
        "The level, 0 (leaves) to the hierarchy's height: a constant, or a column giving each row its own level.",
    )
    .build()
});

/// The `generalize` scalar function.
#[derive(Debug)]
pub struct GeneralizeFunc {
    signature: Signature,
    registry: Arc<Registry>,
}

impl GeneralizeFunc {
    /// Creates the function over a registry.
    pub fn new(registry: Arc<Registry>) -> Self {
        GeneralizeFunc {
            signature: Signature::user_defined(Volatility::Immutable),
            registry,
        }
    }
}

impl PartialEq for GeneralizeFunc {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.registry, &other.registry)
    }
}

impl Eq for GeneralizeFunc {}

impl Hash for GeneralizeFunc {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.registry) as usize).hash(state);
    }
}

fn level_of(v: &ScalarValue) -> Result<u8> {
    if v.is_null() {
        return exec_err!("generalize: the level must not be NULL");
    }
    let l = match v.cast_to(&DataType::Int64) {
        Ok(ScalarValue::Int64(Some(l))) => l,
        _ => return exec_err!("generalize: the level must be an integer, got {v}"),
    };
    u8::try_from(l).or_else(|_| exec_err!("generalize: level {l} is out of range"))
}

impl GeneralizeFunc {
    /// `value` generalized by hierarchy `name` to `level` (a constant, or one per row); `row_of`
    /// names a row's place in the batch (for messages).
    fn generalize_as(
        &self,
        name: &str,
        value: ColumnarValue,
        level: &ColumnarValue,
        rows: usize,
        row_of: &dyn Fn(usize) -> usize,
    ) -> Result<ColumnarValue> {
        let h = self.registry.hierarchy("generalize", name)?;
        // One level over `array`, whose row `i` is the batch's `row_of(i)` (for messages).
        let run = |level: u8, array: &ArrayRef, row_of: &dyn Fn(usize) -> usize| {
            generalize(&h, level, array).map_err(|e| {
                let message = match e {
                    // A scalar function sees the query's rows a batch at a time: the row is the
                    // batch's (calling it a data row named row 6808 for the 15,000th).
                    crate::PbgError::ValueNotInHierarchy {
                        column,
                        value,
                        row,
                        source_name,
                    } => format!(
                        "column `{column}`: value `{value}` (row {} of the batch) is not a leaf of its hierarchy ({source_name})",
                        row_of(row.saturating_sub(1)) + 1
                    ),
                    e => e.to_string(),
                };
                datafusion::common::DataFusionError::Execution(format!("generalize: {message}"))
            })
        };
        let level = match super::table::constant(level)? {
            Some(s) => level_of(&s)?,
            None => {
                // A level per row (local recoding): each level over its own rows, then every
                // row takes its label.
                let levels = checked_levels(&level.clone().into_array(rows)?, row_of)?;
                let array = value.into_array(rows)?;
                return by_row_key(&levels, |level, picked| {
                    let subset = arrow::compute::take(&array, picked, None)?;
                    run(level, &subset, &|i| row_of(picked.value(i) as usize))
                })
                .map(ColumnarValue::Array);
            }
        };
        let scalar = matches!(value, ColumnarValue::Scalar(_));
        let array = value.into_array(if scalar { 1 } else { rows })?;
        let out = run(level, &array, row_of)?;
        if scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
}

impl ScalarUDFImpl for GeneralizeFunc {
    fn name(&self) -> &str {
        "generalize"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != 3 {
            return plan_err!(
                "generalize: expected generalize(value, 'hierarchy', level), got {} argument(s)",
                arg_types.len()
            );
        }
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let text = |t: &DataType| {
            matches!(
                t,
                DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null
            )
        };
        // A dictionary of names too (a column of hierarchy names read from Parquet).
        let named = match &args[1] {
            DataType::Dictionary(_, values) => text(values),
            t => text(t),
        };
        if !named {
            return plan_err!(
                "generalize: the hierarchy name must be a string, got {}",
                args[1]
            );
        }
        if !args[2].is_integer() && args[2] != DataType::Null {
            return plan_err!("generalize: the level must be an integer, got {}", args[2]);
        }
        Ok(generalized_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let [value, hierarchy, level] =
            datafusion::common::utils::take_function_args(self.name(), args.args)?;
        match super::table::constant(&hierarchy)? {
            Some(s) if !s.is_null() => {
                self.generalize_as(&s.to_string(), value, &level, rows, &|row| row)
            }
            Some(_) => exec_err!("generalize: the hierarchy name must not be NULL"),
            None => {
                // A hierarchy per row: each name over its own rows, then every row takes its
                // label (a batch holding one name was taken as a constant and one holding
                // several refused, so the same query failed or not by how rows fell in batches).
                let names = arrow::compute::cast(&hierarchy.into_array(rows)?, &DataType::Utf8)?;
                let names = checked_names(&names)?;
                let take = |c: &ColumnarValue, picked: &arrow::array::UInt32Array| {
                    Ok::<_, datafusion::common::DataFusionError>(match c {
                        ColumnarValue::Scalar(s) => ColumnarValue::Scalar(s.clone()),
                        ColumnarValue::Array(a) => {
                            ColumnarValue::Array(arrow::compute::take(a, picked, None)?)
                        }
                    })
                };
                by_row_key(&names, |name, picked| {
                    let row_of = |i: usize| picked.value(i) as usize;
                    let (value, level) = (take(&value, picked)?, take(&level, picked)?);
                    self.generalize_as(name, value, &level, picked.len(), &row_of)?
                        .into_array(picked.len())
                })
                .map(ColumnarValue::Array)
            }
        }
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
}

/// Each row's level in `levels` (integers); a NULL or out-of-range level is an error naming
/// the row (`row_of`: its place in the batch).
fn checked_levels(levels: &ArrayRef, row_of: &dyn Fn(usize) -> usize) -> Result<Vec<u8>> {
    use arrow::array::{Array, AsArray};
    let levels = arrow::compute::cast(levels, &DataType::Int64)?;
    let levels = levels.as_primitive::<arrow::datatypes::Int64Type>();
    (0..levels.len())
        .map(|row| {
            if levels.is_null(row) {
                return exec_err!(
                    "generalize: the level must not be NULL (row {} of the batch)",
                    row_of(row) + 1
                );
            }
            let l = levels.value(row);
            u8::try_from(l).or_else(|_| {
                exec_err!(
                    "generalize: level {l} is out of range (row {} of the batch)",
                    row_of(row) + 1
                )
            })
        })
        .collect()
}

/// Each row's hierarchy name in `names` (Utf8); a NULL name is an error naming the row.
fn checked_names(names: &ArrayRef) -> Result<Vec<&str>> {
    use arrow::array::{Array, AsArray};
    let names = names.as_string::<i32>();
    (0..names.len())
        .map(|row| match names.is_null(row) {
            true => exec_err!(
                "generalize: the hierarchy name must not be NULL (row {} of the batch)",
                row + 1
            ),
            false => Ok(names.value(row)),
        })
        .collect()
}

/// The rows grouped by their key (a level, a hierarchy name), each group's labels given by
/// `run` over its rows (their indices in the batch), put back in row order.
fn by_row_key<K: PartialEq + Copy>(
    keys: &[K],
    run: impl Fn(K, &arrow::array::UInt32Array) -> Result<ArrayRef>,
) -> Result<ArrayRef> {
    let mut groups: Vec<(K, Vec<u32>)> = Vec::new();
    let mut picks: Vec<(usize, usize)> = Vec::with_capacity(keys.len());
    for (row, &key) in keys.iter().enumerate() {
        let at = match groups.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                groups.push((key, Vec::new()));
                groups.len() - 1
            }
        };
        picks.push((at, groups[at].1.len()));
        groups[at].1.push(row as u32);
    }
    if groups.is_empty() {
        return Ok(arrow::array::new_empty_array(&generalized_type()));
    }
    let outs = groups
        .into_iter()
        .map(|(key, rows)| run(key, &arrow::array::UInt32Array::from(rows)))
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&dyn arrow::array::Array> = outs.iter().map(|a| a.as_ref()).collect();
    Ok(arrow::compute::interleave(&refs, &picks)?)
}

/// Marks `generalize`'s wire form.
const WIRE_TAG: &[u8] = b"pbg-generalize/1\n";

/// The bytes that carry a `generalize` function to a cluster's executors: the hierarchies its
/// registry names (the executors have no registry of their own); `None` for other functions.
pub fn encode_generalize_udf(udf: &datafusion::logical_expr::ScalarUDF) -> Option<Vec<u8>> {
    let inner: &dyn std::any::Any = udf.inner().as_ref();
    let f = inner.downcast_ref::<GeneralizeFunc>()?;
    let named: Vec<(String, HierarchyRows)> = f
        .registry
        .hierarchies()
        .into_iter()
        .map(|(name, h)| (name, h.to_wire()))
        .collect();
    let mut out = WIRE_TAG.to_vec();
    serde_json::to_writer(&mut out, &named).ok()?;
    Some(out)
}

/// Rebuilds `generalize` from [`encode_generalize_udf`]'s bytes, over a registry holding the
/// hierarchies it carried; `Ok(None)` when the bytes are not its.
pub fn decode_generalize_udf(buf: &[u8]) -> Result<Option<datafusion::logical_expr::ScalarUDF>> {
    let Some(body) = buf.strip_prefix(WIRE_TAG) else {
        return Ok(None);
    };
    let named: Vec<(String, HierarchyRows)> = serde_json::from_slice(body).map_err(|e| {
        datafusion::common::DataFusionError::Internal(format!("generalize: bad wire form: {e}"))
    })?;
    let registry = Registry::default();
    for (name, rows) in named {
        let h = rows
            .build()
            .map_err(|e| datafusion::common::DataFusionError::External(Box::new(e)))?;
        registry.add_hierarchy(&name, Arc::new(h));
    }
    Ok(Some(datafusion::logical_expr::ScalarUDF::from(
        GeneralizeFunc::new(Arc::new(registry)),
    )))
}
