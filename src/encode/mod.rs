//! Encode once: every QI becomes leaf codes of its hierarchy, the sensitive and class attributes
//! become value codes. One encoder serves both kinds of input: the table's rows (each one tuple) and
//! class statistics (each distinct combination standing for its count of tuples) — rows are
//! statistics of weight 1. Values are matched by their text form, whatever type the reader chose
//! (an Int64 `age` of 39 matches the leaf `39`); strings are not touched again until output.

mod accumulate;
pub mod draft;
pub mod hierarchy;
pub mod narrow;
pub(crate) mod packed;
pub mod profile;
pub mod statistics;

use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray, UInt32Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::RecordBatch;

use crate::error::{PbgError, Result};
use crate::hierarchy::Hierarchy;
pub use crate::input::text::{TextColumn, text_column};
use crate::input::{self, Input};
use crate::profile::Profile;

/// A quasi-identifier encoded as leaf codes.
#[derive(Debug, Clone)]
pub struct EncodedQi {
    /// Column name.
    pub name: String,
    /// Column index in the input table.
    pub column: usize,
    /// The validated hierarchy.
    pub hierarchy: Arc<Hierarchy>,
    /// Leaf code per encoded row.
    pub codes: UInt32Array,
    /// The same codes in one or two bytes per row where the leaves fit (read by the gathers of
    /// class keys).
    pub narrow: narrow::NarrowCodes,
    /// Number of tuples holding each leaf.
    pub leaf_rows: Vec<u64>,
}

/// A categorical attribute (sensitive or class) encoded as value codes.
#[derive(Debug, Clone)]
pub struct EncodedAttribute {
    /// Column name.
    pub name: String,
    /// Column index in the input table.
    pub column: usize,
    /// Text form of each value code.
    pub labels: Vec<String>,
    /// Value code per encoded row.
    pub codes: UInt32Array,
    /// Number of tuples holding each value.
    pub counts: Vec<u64>,
}

impl EncodedAttribute {
    /// The value code of a text form, if the input holds it (labels are in text order).
    pub fn code_of(&self, text: &str) -> Option<u32> {
        self.labels
            .binary_search_by(|l| l.as_str().cmp(text))
            .ok()
            .map(|i| i as u32)
    }
}

/// The input with its profile, encoded once for every later evaluation.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The profile it was loaded with.
    pub profile: Profile,
    /// The input's schema (every column, in order).
    pub schema: SchemaRef,
    /// Quasi-identifiers in node order.
    pub qis: Vec<EncodedQi>,
    /// The sensitive attribute.
    pub sensitive: EncodedAttribute,
    /// The sensitive hierarchy, if the profile gives one, with the leaf of every sensitive value code.
    pub sensitive_hierarchy: Option<(Arc<Hierarchy>, Vec<u32>)>,
    /// The class attribute, if the profile names one.
    pub class: Option<EncodedAttribute>,
    /// Identifier columns (indices), dropped from releases.
    pub identifiers: Vec<usize>,
    /// The suppression limit η in rows.
    pub eta: u64,
    /// Tuples each encoded row stands for, when the rows are class statistics (distinct
    /// combinations with their counts) rather than the input's rows; `None`: one tuple per row.
    pub weights: Option<Vec<u64>>,
    /// Number of tuples N (Σ weights, or the row count).
    pub tuples: u64,
}

/// A hash map for the encoder's text keys: keyed like std's (random per process, so hostile
/// values cannot force collisions) but several times faster on short strings.
pub(crate) type TextMap<K, V> = HashMap<K, V, ahash::RandomState>;

/// The distinct text forms of one column.
#[derive(Debug, Clone, Default)]
pub struct ColumnValues {
    /// Text form of each id.
    pub values: Vec<String>,
    index: TextMap<String, u32>,
}

impl ColumnValues {
    /// Id of `value`, added when new.
    pub fn id(&mut self, value: &str) -> u32 {
        if let Some(&id) = self.index.get(value) {
            return id;
        }
        let id = self.values.len() as u32;
        self.values.push(value.to_string());
        self.index.insert(value.to_string(), id);
        id
    }

    /// Id of `value` if it has been seen.
    pub fn get(&self, value: &str) -> Option<u32> {
        self.index.get(value).copied()
    }
}

/// One column to encode, with the text that stands for null (else a null is an error with `null_hint`).
#[derive(Debug, Clone)]
pub struct CountColumn {
    /// Column name.
    pub name: String,
    /// Text a null stands for.
    pub null_as: Option<String>,
    /// What to do about a null when `null_as` is not set.
    pub null_hint: String,
}

/// Items over some columns: the rows of a table (weight 1 each) or distinct combinations with
/// their counts. Ids per column index the column's distinct text forms, in text order.
#[derive(Debug, Clone, Default)]
pub struct Combinations {
    /// Per column, the text form of each id (distinct, in text order).
    pub columns: Vec<Vec<String>>,
    /// Per column, the id of every item.
    pub ids: Vec<Vec<u32>>,
    /// Tuples per item; `None`: one each (rows).
    pub weights: Option<Vec<u64>>,
    /// Number of tuples (Σ weights or the item count).
    pub tuples: u64,
}

impl Combinations {
    /// Number of items.
    pub fn len(&self) -> usize {
        self.ids.first().map_or(0, Vec::len)
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Gathers items from record batches holding `spec`'s columns (by name) and, for
    /// statistics, a count column: combinations whose text forms coincide (a null and its
    /// `null_as`, two numbers printing alike) are merged, and the items are sorted.
    pub fn gather(
        batches: &[RecordBatch],
        spec: &[CountColumn],
        count: Option<&str>,
    ) -> Result<Self> {
        let mut columns = vec![ColumnValues::default(); spec.len()];
        let mut ids: Vec<Vec<u32>> = vec![Vec::new(); spec.len()];
        let mut weights: Vec<u64> = Vec::new();
        for batch in batches {
            let n = batch.num_rows();
            for ((c, values), out) in spec.iter().zip(columns.iter_mut()).zip(ids.iter_mut()) {
                let index = batch.schema().index_of(&c.name).map_err(PbgError::Arrow)?;
                let text = text_column(batch.column(index))?;
                let local: Vec<u32> = (0..text.values.len())
                    .map(|i| values.id(text.values.value(i)))
                    .collect();
                let null_id = c.null_as.as_deref().map(|fill| values.id(fill));
                out.reserve(n);
                for r in 0..n {
                    if text.keys.is_null(r) {
                        match null_id {
                            Some(id) => out.push(id),
                            None => {
                                return Err(PbgError::NullValue {
                                    column: c.name.clone(),
                                    row: 0,
                                    hint: c.null_hint.clone(),
                                });
                            }
                        }
                    } else {
                        out.push(local[text.keys.values()[r] as usize]);
                    }
                }
            }
            if let Some(name) = count {
                let index = batch.schema().index_of(name).map_err(PbgError::Arrow)?;
                let counts = cast(batch.column(index), &DataType::UInt64)?;
                let counts = counts.as_primitive::<arrow::datatypes::UInt64Type>();
                weights.extend(counts.iter().map(|c| c.unwrap_or(0)));
            }
        }
        Ok(Combinations::normalize(
            columns,
            ids,
            count.map(|_| weights),
        ))
    }

    /// The distinct combinations the [`accumulate::Accumulator`]s of a table's partitions
    /// counted.
    pub(crate) fn from_accumulators(parts: Vec<accumulate::Accumulator>) -> Self {
        let (columns, ids, weights) = accumulate::Accumulator::concat(parts);
        debug_assert_eq!(ids.len(), columns.len());
        Combinations::normalize(columns, ids, Some(weights))
    }

    /// Drops values no item uses, renumbers ids in text order and, with weights, merges items
    /// whose text forms coincide and sorts them: the same result whatever order the values and
    /// partitions came in.
    fn normalize(
        columns: Vec<ColumnValues>,
        mut ids: Vec<Vec<u32>>,
        weights: Option<Vec<u64>>,
    ) -> Self {
        // Columns in parallel (a wide table's are many, some with 10^5+ values to sort).
        let columns: Vec<Vec<String>> = columns
            .into_par_iter()
            .zip(ids.par_iter_mut())
            .map(|(values, out)| {
                let mut values = values.values;
                let mut used = vec![false; values.len()];
                for &i in out.iter() {
                    used[i as usize] = true;
                }
                // Values are distinct: sorting the used ones by text gives their new ids.
                let mut kept: Vec<u32> = (0..values.len() as u32)
                    .filter(|&i| used[i as usize])
                    .collect();
                kept.par_sort_unstable_by(|&a, &b| values[a as usize].cmp(&values[b as usize]));
                let mut remap = vec![u32::MAX; values.len()];
                for (new, &old) in kept.iter().enumerate() {
                    remap[old as usize] = new as u32;
                }
                for i in out.iter_mut() {
                    *i = remap[*i as usize];
                }
                kept.iter()
                    .map(|&o| std::mem::take(&mut values[o as usize]))
                    .collect()
            })
            .collect();
        let n = ids.first().map_or(0, Vec::len);
        let Some(weights) = weights else {
            return Combinations {
                columns,
                ids,
                weights: None,
                tuples: n as u64,
            };
        };
        // Combinations in ascending id order (column by column), equal ones merged: the leading
        // columns that fit 128 bits are packed into one sort key per combination, and only ties
        // on it compare the other columns.
        let mut widths: Vec<u32> = Vec::new();
        for values in &columns {
            let b = packed::bits_for(values.len());
            if widths.iter().sum::<u32>() + b > u128::BITS {
                break;
            }
            widths.push(b);
        }
        let lead = widths.len();
        let cmp_from = |from: usize, a: u32, b: u32| {
            ids[from..]
                .iter()
                .map(|c| c[a as usize].cmp(&c[b as usize]))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        };
        let mut keyed: Vec<(u128, u32)> = (0..n as u32)
            .into_par_iter()
            .map(|r| {
                let key = ids[..lead]
                    .iter()
                    .zip(&widths)
                    .fold(0u128, |k, (c, &w)| (k << w) | c[r as usize] as u128);
                (key, r)
            })
            .collect();
        keyed.par_sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| cmp_from(lead, a.1, b.1)));
        let mut kept: Vec<(u32, u64)> = Vec::with_capacity(n);
        let mut last_key = None;
        for &(key, r) in &keyed {
            let w = weights[r as usize];
            match kept.last_mut() {
                Some((first, total))
                    if last_key == Some(key) && cmp_from(lead, *first, r).is_eq() =>
                {
                    *total += w
                }
                _ => kept.push((r, w)),
            }
            last_key = Some(key);
        }
        kept.retain(|&(_, w)| w > 0);
        let tuples = kept.iter().map(|&(_, w)| w).sum();
        let ids: Vec<Vec<u32>> = ids
            .iter()
            .map(|c| kept.iter().map(|&(r, _)| c[r as usize]).collect())
            .collect();
        let weights: Vec<u64> = kept.iter().map(|&(_, w)| w).collect();
        Combinations {
            columns,
            ids,
            weights: Some(weights),
            tuples,
        }
    }

    /// Tuples per item.
    pub fn weight(&self, item: usize) -> u64 {
        self.weights.as_ref().map_or(1, |w| w[item])
    }
}

/// The columns a profile needs, in encoder order: QIs (node order), sensitive, class.
pub fn profile_columns(profile: &Profile) -> Vec<CountColumn> {
    let mut spec: Vec<CountColumn> = profile
        .qis
        .iter()
        .map(|q| CountColumn {
            name: q.name.clone(),
            null_as: q.null_as.clone(),
            null_hint: "declare `null_as = \"...\"` for this QI, with a leaf of its hierarchy, or fill the nulls".into(),
        })
        .collect();
    let role_hint = |role: &str| {
        format!("the {role} attribute must not be null: fill or drop those rows first")
    };
    spec.push(CountColumn {
        name: profile.sensitive.clone(),
        null_as: None,
        null_hint: role_hint("sensitive"),
    });
    if let Some(c) = &profile.class {
        spec.push(CountColumn {
            name: c.clone(),
            null_as: None,
            null_hint: role_hint("class"),
        });
    }
    spec
}

/// One QI encoded: its hierarchy built against its distinct `values` (text forms, ids in order),
/// and every item's leaf code from its value id in `ids`.
fn encode_qi(
    q: &crate::profile::QiSpec,
    values: &[(String, usize)],
    ids: &[u32],
    weight: &(impl Fn(usize) -> u64 + Sync),
    schema: &SchemaRef,
) -> Result<EncodedQi> {
    let hierarchy = Arc::new(q.hierarchy.build(&q.name, values)?);
    let mut leaf_of_id = Vec::with_capacity(values.len());
    for (v, _) in values {
        match hierarchy.leaf_code(v) {
            Some(c) => leaf_of_id.push(c),
            None => {
                return Err(PbgError::ValueNotInHierarchy {
                    column: q.name.clone(),
                    value: v.clone(),
                    row: 0,
                    source_name: hierarchy.source().to_string(),
                });
            }
        }
    }
    let codes: UInt32Array = ids.iter().map(|&i| leaf_of_id[i as usize]).collect();
    let mut leaf_rows = vec![0u64; hierarchy.leaf_count()];
    for (i, &c) in codes.values().iter().enumerate() {
        leaf_rows[c as usize] += weight(i);
    }
    let narrow = narrow::NarrowCodes::of(codes.values(), hierarchy.leaf_count());
    Ok(EncodedQi {
        name: q.name.clone(),
        column: schema.index_of(&q.name)?,
        hierarchy,
        codes,
        narrow,
        leaf_rows,
    })
}

/// Fills in the row of an error raised without one, from a table in memory.
fn locate_in_table(table: &crate::io::Table, e: PbgError) -> PbgError {
    let find = |column: &str, value: Option<&str>| -> Option<usize> {
        let i = table.schema.index_of(column).ok()?;
        let text = text_column(&table.column(i).ok()?).ok()?;
        (0..text.keys.len()).find(|&r| match (value, text.keys.is_null(r)) {
            (None, true) => true,
            (Some(v), false) => text.values.value(text.keys.values()[r] as usize) == v,
            _ => false,
        })
    };
    match e {
        PbgError::NullValue {
            column,
            row: 0,
            hint,
        } => {
            let row = find(&column, None).map_or(0, |r| r + 1);
            PbgError::NullValue { column, row, hint }
        }
        PbgError::ValueNotInHierarchy {
            column,
            value,
            row: 0,
            source_name,
        } => {
            let row = find(&column, Some(&value)).map_or(0, |r| r + 1);
            PbgError::ValueNotInHierarchy {
                column,
                value,
                row,
                source_name,
            }
        }
        other => other,
    }
}

impl Dataset {
    /// The one encoder: builds every hierarchy against the values present (data-driven kinds
    /// take their leaves from them), maps values to leaf and value codes, and checks roles.
    /// `combos` holds [`profile_columns`]; `schema` is the input's.
    pub fn encode(profile: &Profile, schema: SchemaRef, combos: Combinations) -> Result<Self> {
        let source = &profile.input;
        for q in &profile.qis {
            let i = input::column_index(source, &schema, &q.name)?;
            let t = schema.field(i).data_type();
            let float = t.is_floating()
                || matches!(t, DataType::Dictionary(_, v) if v.is_floating())
                || matches!(
                    t,
                    DataType::Decimal32(..)
                        | DataType::Decimal64(..)
                        | DataType::Decimal128(..)
                        | DataType::Decimal256(..)
                );
            let mask = matches!(q.hierarchy, crate::hierarchy::HierarchySpec::Mask { .. });
            if float && mask {
                return Err(PbgError::Format {
                    path: source.as_path(),
                    message: format!(
                        "column `{}` is of type {t}: a mask hides the trailing characters of its text (`13052.0` -> `13052.*` would keep the value); use an interval hierarchy, or store the column as integers or text",
                        q.name
                    ),
                });
            }
            // Times print their fraction without its trailing zeros: a mask of the same length
            // hid whole seconds of one value and kept another to the millisecond.
            let timed = |t: &DataType| {
                matches!(
                    t,
                    DataType::Timestamp(..)
                        | DataType::Time32(_)
                        | DataType::Time64(_)
                        | DataType::Duration(_)
                        | DataType::Interval(_)
                )
            };
            let timed = timed(t) || matches!(t, DataType::Dictionary(_, v) if timed(v));
            if timed && mask {
                return Err(PbgError::Format {
                    path: source.as_path(),
                    message: format!(
                        "column `{}` is of type {t}: a mask hides the trailing characters of its text, whose length varies with the value (`22:13:20` and `22:13:20.5`: a mask of level 2 kept the second of one and the tenth of a second of the other); use a date hierarchy (a timestamp) or an interval hierarchy, or store the column as text of one format",
                        q.name
                    ),
                });
            }
        }
        for c in profile_columns(profile) {
            let i = input::column_index(source, &schema, &c.name)?;
            let t = schema.field(i).data_type();
            if t.is_nested()
                || matches!(
                    t,
                    DataType::Binary
                        | DataType::LargeBinary
                        | DataType::BinaryView
                        | DataType::FixedSizeBinary(_)
                )
            {
                return Err(PbgError::Format {
                    path: source.as_path(),
                    message: format!(
                        "column `{}` is of type {t}: quasi-identifiers, the sensitive and the class attribute must be scalar text, numbers or dates",
                        c.name
                    ),
                });
            }
        }
        if combos.tuples == 0 {
            return Err(PbgError::EmptyTable {
                path: source.as_path(),
            });
        }
        let Combinations {
            mut columns,
            mut ids,
            weights,
            tuples,
        } = combos;
        let weight = |i: usize| weights.as_ref().map_or(1, |w| w[i]);
        // Each column's values are moved, not copied: nothing reads them after encoding.
        let qi_values: Vec<Vec<String>> = columns[..profile.qis.len()]
            .iter_mut()
            .map(std::mem::take)
            .collect();
        // QIs in parallel (hierarchies of data-driven kinds are built over 10^5+ values on wide
        // tables); the first failing QI in node order names the error.
        let encoded: Vec<Result<EncodedQi>> = profile
            .qis
            .par_iter()
            .zip(qi_values)
            .zip(&ids[..profile.qis.len()])
            .map(|((q, column), ids)| {
                let values: Vec<(String, usize)> = column.into_iter().map(|v| (v, 0)).collect();
                encode_qi(q, &values, ids, &weight, &schema)
            })
            .collect();
        let qis = encoded.into_iter().collect::<Result<Vec<EncodedQi>>>()?;
        let mut attribute = |i: usize, name: &str| -> Result<EncodedAttribute> {
            let codes = UInt32Array::from(std::mem::take(&mut ids[i]));
            let labels = std::mem::take(&mut columns[i]);
            let mut totals = vec![0u64; labels.len()];
            for (r, &c) in codes.values().iter().enumerate() {
                totals[c as usize] += weight(r);
            }
            Ok(EncodedAttribute {
                name: name.to_string(),
                column: schema.index_of(name)?,
                labels,
                codes,
                counts: totals,
            })
        };
        let s = profile.qis.len();
        let sensitive = attribute(s, &profile.sensitive)?;
        let class = match &profile.class {
            Some(c) => Some(attribute(s + 1, c)?),
            None => None,
        };
        let sensitive_hierarchy = match &profile.sensitive_hierarchy {
            Some(spec) => {
                let values: Vec<(String, usize)> =
                    sensitive.labels.iter().map(|v| (v.clone(), 0)).collect();
                let h = Arc::new(spec.build(&profile.sensitive, &values)?);
                let leaves = sensitive
                    .labels
                    .iter()
                    .map(|v| {
                        h.leaf_code(v).ok_or_else(|| PbgError::ValueNotInHierarchy {
                            column: profile.sensitive.clone(),
                            value: v.clone(),
                            row: 0,
                            source_name: h.source().to_string(),
                        })
                    })
                    .collect::<Result<Vec<u32>>>()?;
                Some((h, leaves))
            }
            None => None,
        };
        let identifiers = profile
            .identifiers
            .iter()
            .map(|i| input::column_index(source, &schema, i))
            .collect::<Result<Vec<_>>>()?;
        let eta = profile.suppression.rows(tuples as usize);
        Ok(Dataset {
            profile: profile.clone(),
            schema,
            qis,
            sensitive,
            sensitive_hierarchy,
            class,
            identifiers,
            eta,
            weights,
            tuples,
        })
    }

    /// Encodes the rows of a table already in memory (one tuple per row, in table order).
    pub fn from_table(profile: &Profile, table: crate::io::Table) -> Result<Self> {
        let spec = profile_columns(profile);
        for c in &spec {
            table.column_index(&c.name)?;
        }
        let encoded = Combinations::gather(&table.batches, &spec, None)
            .and_then(|combos| Dataset::encode(profile, table.schema.clone(), combos));
        encoded.map_err(|e| locate_in_table(&table, e))
    }

    /// Number of encoded rows (the input's rows, or the distinct combinations of statistics).
    pub fn num_rows(&self) -> usize {
        self.sensitive.codes.len()
    }

    /// Number of tuples N that the indices are over.
    pub fn num_tuples(&self) -> u64 {
        self.tuples
    }

    /// Fails when the dataset holds class statistics instead of rows: `what` needs the rows.
    pub fn require_rows(&self, what: &str) -> Result<()> {
        match self.weights {
            None => Ok(()),
            Some(_) => Err(PbgError::argument(
                what,
                "needs the input's rows, but this dataset holds class statistics only".to_string(),
            )),
        }
    }

    /// Hierarchy heights N_i in node order.
    pub fn heights(&self) -> Vec<u8> {
        self.qis.iter().map(|q| q.hierarchy.height()).collect()
    }

    /// The input as it is named in messages.
    pub fn input(&self) -> &Input {
        &self.profile.input
    }
}
