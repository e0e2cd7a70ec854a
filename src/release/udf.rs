//! The two scalar functions a release plan binds to its node: one generalizes a QI column to the
//! node's level of its hierarchy, the other keeps the rows whose equivalence class the suppression
//! rule did not remove. Both carry their data (hierarchy, suppressed class set), so the plan is
//! self-contained: planning it reads nothing and executing it needs no registry. For a cluster
//! they travel with their data ([`encode_release_udf`], [`decode_release_udf`]).

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray};
use arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use serde::{Deserialize, Serialize};

use crate::encode::text_column;
use crate::hierarchy::{Hierarchy, HierarchyRows, generalize_with, generalized_type};

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
        let name = format!("pbg_generalize[{}@{level}]", hierarchy.column());
        Self::named(name, hierarchy, level, null_as)
    }

    fn named(
        name: String,
        hierarchy: Arc<Hierarchy>,
        level: u8,
        null_as: Option<String>,
    ) -> ScalarUDF {
        ScalarUDF::from(BoundGeneralize {
            name,
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

/// The classes a release removes, named by their group codes at the node.
#[derive(Debug)]
pub enum SuppressedClasses {
    /// Packed keys: QI `d`'s group code shifted by `shifts[d]`, or-ed.
    Packed {
        /// Bit offset of each QI's field.
        shifts: Vec<u32>,
        /// The keys of the suppressed classes.
        keys: HashSet<u64>,
    },
    /// The group codes of each suppressed class, QI by QI (for QIs too wide to pack).
    Codes(HashSet<Vec<u32>>),
}

impl SuppressedClasses {
    /// The rows to keep (those whose class is not suppressed), given per QI the group code of
    /// every row at the node.
    pub fn keep(&self, codes: &[&[u32]], rows: usize) -> BooleanArray {
        match self {
            SuppressedClasses::Packed { shifts, keys } => {
                let mut packed = vec![0u64; rows];
                for (column, &s) in codes.iter().zip(shifts) {
                    for (p, &g) in packed.iter_mut().zip(column.iter()) {
                        *p |= (g as u64) << s;
                    }
                }
                packed.iter().map(|k| Some(!keys.contains(k))).collect()
            }
            SuppressedClasses::Codes(classes) => {
                let mut row = vec![0u32; codes.len()];
                (0..rows)
                    .map(|r| {
                        for (x, column) in row.iter_mut().zip(codes) {
                            *x = column[r];
                        }
                        Some(!classes.contains(&row))
                    })
                    .collect()
            }
        }
    }
}

/// `pbg_keep(qi_1, .., qi_n)`: false for rows whose class (their generalized labels) the
/// suppression rule removes.
#[derive(Debug)]
pub struct KeepClasses {
    signature: Signature,
    /// Per QI, the group code of each label at the node's level.
    groups: Vec<HashMap<String, u32>>,
    suppressed: Arc<SuppressedClasses>,
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
    /// The filter for the classes `suppressed`; `labels[d]` are QI d's labels at the node's
    /// level, in group order.
    pub fn udf(labels: Vec<&[String]>, suppressed: SuppressedClasses) -> ScalarUDF {
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
        // Per QI, the group code of every row.
        let mut codes: Vec<Vec<u32>> = Vec::with_capacity(self.groups.len());
        for (arg, groups) in args.args.into_iter().zip(&self.groups) {
            let array: ArrayRef = arg.into_array(rows)?;
            let text = text_column(&array).map_err(|e| DataFusionError::External(Box::new(e)))?;
            let local: Vec<Option<u32>> = (0..text.values.len())
                .map(|i| groups.get(text.values.value(i)).copied())
                .collect();
            let mut column = Vec::with_capacity(rows);
            for key in text.keys.iter() {
                let Some(g) = key.and_then(|key| local[key as usize]) else {
                    return exec_err!("pbg_keep: a value that is no label of the node's level");
                };
                column.push(g);
            }
            codes.push(column);
        }
        let codes: Vec<&[u32]> = codes.iter().map(Vec::as_slice).collect();
        Ok(ColumnarValue::Array(Arc::new(
            self.suppressed.keep(&codes, rows),
        )))
    }
}

/// The wire form of a release function: its data, so that an executor can rebuild it.
#[derive(Serialize, Deserialize)]
enum Wire {
    Generalize {
        hierarchy: HierarchyRows,
        level: u8,
        null_as: Option<String>,
    },
    Keep {
        /// Per QI, the labels of the node's level in group-code order.
        labels: Vec<Vec<String>>,
        suppressed: WireSuppressed,
    },
}

#[derive(Serialize, Deserialize)]
enum WireSuppressed {
    Packed { shifts: Vec<u32>, keys: Vec<u64> },
    Codes(Vec<Vec<u32>>),
}

/// Marks pbg's release-function payloads (a foreign codec's bytes are never taken for ours).
const WIRE_TAG: &[u8] = b"pbg-release-udf/1\n";

/// The bytes that carry `udf` to another process when it is one of the release functions
/// ([`BoundGeneralize`], [`KeepClasses`]); `None` for any other function (which travels by name).
pub fn encode_release_udf(udf: &ScalarUDF) -> Option<Vec<u8>> {
    let inner: &dyn std::any::Any = udf.inner().as_ref();
    let wire = if let Some(g) = inner.downcast_ref::<BoundGeneralize>() {
        Wire::Generalize {
            hierarchy: g.hierarchy.to_wire(),
            level: g.level,
            null_as: g.null_as.clone(),
        }
    } else if let Some(k) = inner.downcast_ref::<KeepClasses>() {
        let labels = k
            .groups
            .iter()
            .map(|groups| {
                let mut labels = vec![String::new(); groups.len()];
                for (label, &g) in groups {
                    labels[g as usize] = label.clone();
                }
                labels
            })
            .collect();
        let suppressed = match k.suppressed.as_ref() {
            SuppressedClasses::Packed { shifts, keys } => {
                let mut keys: Vec<u64> = keys.iter().copied().collect();
                keys.sort_unstable();
                WireSuppressed::Packed {
                    shifts: shifts.clone(),
                    keys,
                }
            }
            SuppressedClasses::Codes(classes) => {
                let mut classes: Vec<Vec<u32>> = classes.iter().cloned().collect();
                classes.sort_unstable();
                WireSuppressed::Codes(classes)
            }
        };
        Wire::Keep { labels, suppressed }
    } else {
        return None;
    };
    let mut out = WIRE_TAG.to_vec();
    serde_json::to_writer(&mut out, &wire).ok()?;
    Some(out)
}

/// Rebuilds a release function named `name` from [`encode_release_udf`]'s bytes; `Ok(None)` when
/// the bytes are not pbg's.
pub fn decode_release_udf(name: &str, buf: &[u8]) -> Result<Option<ScalarUDF>> {
    let Some(body) = buf.strip_prefix(WIRE_TAG) else {
        return Ok(None);
    };
    let wire: Wire = serde_json::from_slice(body).map_err(|e| {
        DataFusionError::Internal(format!("release function {name}: bad wire form: {e}"))
    })?;
    Ok(Some(match wire {
        Wire::Generalize {
            hierarchy,
            level,
            null_as,
        } => {
            let h = hierarchy
                .build()
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            BoundGeneralize::named(name.to_string(), Arc::new(h), level, null_as)
        }
        Wire::Keep { labels, suppressed } => {
            let labels: Vec<&[String]> = labels.iter().map(Vec::as_slice).collect();
            let suppressed = match suppressed {
                WireSuppressed::Packed { shifts, keys } => SuppressedClasses::Packed {
                    shifts,
                    keys: keys.into_iter().collect(),
                },
                WireSuppressed::Codes(classes) => {
                    SuppressedClasses::Codes(classes.into_iter().collect())
                }
            };
            KeepClasses::udf(labels, suppressed)
        }
    }))
}
