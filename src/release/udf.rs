//! The two scalar functions a release plan binds to its node: one generalizes a QI column to the
//! node's level of its hierarchy, the other keeps the rows whose equivalence class the suppression
//! rule did not remove. Both carry their data (hierarchy, suppressed class set), so the plan is
//! self-contained: planning it reads nothing and executing it needs no registry.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray};
use arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::encode::text_column;
use crate::hierarchy::{Hierarchy, generalize_with, generalized_type};

/// `pbg_release_<qi>(value)`: the label of `value` at the node's level (nulls as `null_as`).
#[derive(Debug)]
pub struct BoundGeneralize {
    name: String,
    signature: Signature,
    hierarchy: Arc<Hierarchy>,
    level: u8,
    null_as: Option<String>,
}

impl PartialEq for BoundGeneralize {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.hierarchy, &other.hierarchy)
            && self.level == other.level
            && self.null_as == other.null_as
    }
}

impl Eq for BoundGeneralize {}

impl Hash for BoundGeneralize {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.hierarchy) as usize).hash(state);
        self.level.hash(state);
        self.null_as.hash(state);
    }
}

impl BoundGeneralize {
    /// The function generalizing QI `hierarchy.column()` to `level`.
    pub fn udf(hierarchy: Arc<Hierarchy>, level: u8, null_as: Option<String>) -> ScalarUDF {
        ScalarUDF::from(BoundGeneralize {
            name: format!("pbg_generalize[{}@{level}]", hierarchy.column()),
            signature: Signature::any(1, Volatility::Immutable),
            hierarchy,
            level,
            null_as,
        })
    }
}

impl ScalarUDFImpl for BoundGeneralize {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(generalized_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let [value] = datafusion::common::utils::take_function_args(self.name(), args.args)?;
        let array = value.into_array(rows)?;
        let out = generalize_with(&self.hierarchy, self.level, &array, self.null_as.as_deref())
            .map_err(|e| {
                DataFusionError::Execution(format!(
                    "release: {e} (was the input changed since the statistics were read?)"
                ))
            })?;
        if out.null_count() > 0 {
            return exec_err!(
                "release: column `{}` holds a null and its profile declares no `null_as` (was the input changed since the statistics were read?)",
                self.hierarchy.column()
            );
        }
        Ok(ColumnarValue::Array(out))
    }
}

/// `pbg_keep(qi_1, .., qi_n)`: false for rows whose class (their generalized labels) the
/// suppression rule removes.
#[derive(Debug)]
pub struct KeepClasses {
    signature: Signature,
    /// Per QI, the group code of each label at the node's level.
    groups: Vec<HashMap<String, u32>>,
    shifts: Vec<u32>,
    suppressed: Arc<HashSet<u64>>,
}

impl PartialEq for KeepClasses {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.suppressed, &other.suppressed)
    }
}

impl Eq for KeepClasses {}

impl Hash for KeepClasses {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.suppressed) as usize).hash(state);
    }
}

impl KeepClasses {
    /// The filter for the classes `suppressed` (keys packed with `shifts` from group codes);
    /// `labels[d]` are QI d's labels at the node's level, in group order.
    pub fn udf(labels: Vec<&[String]>, shifts: Vec<u32>, suppressed: HashSet<u64>) -> ScalarUDF {
        let groups = labels
            .iter()
            .map(|l| {
                l.iter()
                    .enumerate()
                    .map(|(g, s)| (s.clone(), g as u32))
                    .collect()
            })
            .collect::<Vec<_>>();
        ScalarUDF::from(KeepClasses {
            signature: Signature::any(groups.len(), Volatility::Immutable),
            groups,
            shifts,
            suppressed: Arc::new(suppressed),
        })
    }
}

impl ScalarUDFImpl for KeepClasses {
    fn name(&self) -> &str {
        "pbg_keep"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let mut keys = vec![0u64; rows];
        for ((arg, groups), &shift) in args.args.into_iter().zip(&self.groups).zip(&self.shifts) {
            let array: ArrayRef = arg.into_array(rows)?;
            let text = text_column(&array).map_err(|e| DataFusionError::External(Box::new(e)))?;
            let local: Vec<u64> = (0..text.values.len())
                .map(|i| {
                    groups
                        .get(text.values.value(i))
                        .map_or(u64::MAX, |&g| g as u64)
                })
                .collect();
            for (k, key) in keys.iter_mut().zip(text.keys.iter()) {
                let g = key.map_or(u64::MAX, |key| local[key as usize]);
                if g == u64::MAX {
                    return exec_err!("pbg_keep: a value that is no label of the node's level");
                }
                *k |= g << shift;
            }
        }
        let keep: BooleanArray = keys
            .iter()
            .map(|k| Some(!self.suppressed.contains(k)))
            .collect();
        Ok(ColumnarValue::Array(Arc::new(keep)))
    }
}
