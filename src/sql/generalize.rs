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
    .with_argument("hierarchy", "A hierarchy name: a QI of a registered profile, or `profile.qi`.")
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
        if !matches!(
            args[1],
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null
        ) {
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
        let name = match super::table::constant(&hierarchy)? {
            Some(s) if !s.is_null() => s.to_string(),
            Some(_) => {
                return exec_err!("generalize: the hierarchy name must not be NULL");
            }
            None => {
                return exec_err!("generalize: the hierarchy name must be a constant");
            }
        };
        let h = self.registry.hierarchy("generalize", &name)?;
        let run = |level: u8, array: &ArrayRef| {
            generalize(&h, level, array).map_err(|e| {
                datafusion::common::DataFusionError::Execution(format!("generalize: {e}"))
            })
        };
        let level = match super::table::constant(&level)? {
            Some(s) => level_of(&s)?,
            None => {
                // A level per row (local recoding): each distinct level over the whole column,
                // then every row takes its own level's label.
                let levels = level.into_array(rows)?;
                let array = value.into_array(rows)?;
                return per_row_levels(&levels, &array, run).map(ColumnarValue::Array);
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

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
}

/// The labels of `values`, each at the level of its row in `levels` (integers; NULL and
/// out-of-range levels are errors naming the row), through `run` (one level over a column).
fn per_row_levels(
    levels: &ArrayRef,
    values: &ArrayRef,
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
                row + 1
            );
        }
        let l = levels.value(row);
        let Ok(l) = u8::try_from(l) else {
            return exec_err!(
                "generalize: level {l} is out of range (row {} of the batch)",
                row + 1
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
