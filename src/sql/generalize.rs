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
        let run = |level: u8, array: &ArrayRef| {
            generalize(&h, level, array).map_err(|e| {
                // The row of the values given (one hierarchy's rows of the batch) is the batch's.
                let e = match e {
                    crate::PbgError::ValueNotInHierarchy {
                        column,
                        value,
                        row,
                        source_name,
                    } => crate::PbgError::ValueNotInHierarchy {
                        column,
                        value,
                        row: row_of(row.saturating_sub(1)) + 1,
                        source_name,
                    },
                    e => e,
                };
                datafusion::common::DataFusionError::Execution(format!("generalize: {e}"))
            })
        };
        let level = match super::table::constant(level)? {
            Some(s) => level_of(&s)?,
            None => {
                // A level per row (local recoding): each distinct level over the whole column,
                // then every row takes its own level's label.
                let levels = level.clone().into_array(rows)?;
                let array = value.into_array(rows)?;
                return per_row_levels(&levels, &array, row_of, run).map(ColumnarValue::Array);
            }
        };
        let scalar = matches!(value, ColumnarValue::Scalar(_));
        let array = value.into_array(if scalar { 1 } else { rows })?;
        let out = run(level, &array)?;
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
                per_row(&names, |name, picked| {
                    let take = |c: &ColumnarValue| -> Result<ColumnarValue> {
                        Ok(match c {
                            ColumnarValue::Scalar(s) => ColumnarValue::Scalar(s.clone()),
                            ColumnarValue::Array(a) => {
                                ColumnarValue::Array(arrow::compute::take(a, picked, None)?)
                            }
                        })
                    };
                    let row_of = |i: usize| picked.value(i) as usize;
                    self.generalize_as(name, take(&value)?, &take(&level)?, picked.len(), &row_of)?
                        .into_array(picked.len())
                })
            }
        }
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
}

/// The labels of `values`, each at the level of its row in `levels` (integers; NULL and
/// out-of-range levels are errors naming the row), through `run` (one level over a column).
fn per_row_levels(
    levels: &ArrayRef,
    values: &ArrayRef,
    row_of: &dyn Fn(usize) -> usize,
    run: impl Fn(u8, &ArrayRef) -> Result<ArrayRef>,
) -> Result<ArrayRef> {
    use arrow::array::{Array, AsArray};
    let levels = arrow::compute::cast(levels, &DataType::Int64)?;
    let levels = levels.as_primitive::<arrow::datatypes::Int64Type>();
    let mut distinct: Vec<u8> = Vec::new();
    let mut picks: Vec<(usize, usize)> = Vec::with_capacity(levels.len());
    for row in 0..levels.len() {
        if levels.is_null(row) {
            return exec_err!(
                "generalize: the level must not be NULL (row {} of the batch)",
                row_of(row) + 1
            );
        }
        let l = levels.value(row);
        let Ok(l) = u8::try_from(l) else {
            return exec_err!(
                "generalize: level {l} is out of range (row {} of the batch)",
                row_of(row) + 1
            );
        };
        let at = match distinct.iter().position(|&d| d == l) {
            Some(i) => i,
            None => {
                distinct.push(l);
                distinct.len() - 1
            }
        };
        picks.push((at, row));
    }
    let outs = distinct
        .iter()
        .map(|&l| run(l, values))
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&dyn Array> = outs.iter().map(|a| a.as_ref()).collect();
    Ok(arrow::compute::interleave(&refs, &picks)?)
}

/// The labels of every row under its own hierarchy, named per row in `names` (Utf8; a NULL name
/// is an error naming the row): `run` gives the labels of one name's rows (their indices).
fn per_row(
    names: &ArrayRef,
    run: impl Fn(&str, &arrow::array::UInt32Array) -> Result<ArrayRef>,
) -> Result<ColumnarValue> {
    use arrow::array::{Array, AsArray};
    let names = names.as_string::<i32>();
    let mut distinct: Vec<(&str, Vec<u32>)> = Vec::new();
    let mut picks: Vec<(usize, usize)> = Vec::with_capacity(names.len());
    for row in 0..names.len() {
        if names.is_null(row) {
            return exec_err!(
                "generalize: the hierarchy name must not be NULL (row {} of the batch)",
                row + 1
            );
        }
        let name = names.value(row);
        let at = match distinct.iter().position(|(d, _)| *d == name) {
            Some(i) => i,
            None => {
                distinct.push((name, Vec::new()));
                distinct.len() - 1
            }
        };
        picks.push((at, distinct[at].1.len()));
        distinct[at].1.push(row as u32);
    }
    let outs = distinct
        .into_iter()
        .map(|(name, rows)| run(name, &arrow::array::UInt32Array::from(rows)))
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&dyn Array> = outs.iter().map(|a| a.as_ref()).collect();
    Ok(ColumnarValue::Array(arrow::compute::interleave(
        &refs, &picks,
    )?))
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
