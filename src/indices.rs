//! Worst-case and sum indices of a node, computed from its cell tables (SPEC §2–§3).

use serde::Serialize;

use crate::lattice::Node;

/// Every index of one node under the suppression rule. Worst-case indices (k, l, max class, class
/// count) are over the released classes; sums count suppressed tuples as fully protected.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeIndices {
    /// The node.
    pub node: Node,
    /// Released equivalence classes.
    pub classes: u64,
    /// k: the smallest released class.
    pub k: u64,
    /// The largest released class.
    pub max_class: u64,
    /// Distinct l: the fewest distinct sensitive values in a released class.
    pub l_distinct: u64,
    /// Entropy l: exp of the smallest Shannon entropy (natural log) of a released class.
    pub l_entropy: f64,
    /// Probabilistic l: the smallest class size / most frequent sensitive count (every released
    /// class then has max frequency ≤ 1/l).
    pub l_probabilistic: f64,
    /// Suppressed tuples.
    pub suppressed: u64,
    /// GLM (Iyengar), summed over tuples; a suppressed tuple loses 1 per QI.
    pub glm: f64,
    /// S_k: sum of P_equiv (class size; N for suppressed tuples).
    pub s_k: u64,
    /// S_l: sum of P_sens (count of the tuple's sensitive value in its class; in the whole table
    /// for suppressed tuples).
    pub s_l: u64,
    /// CM: share of tuples suppressed or not of a majority label of their class (with a class attribute).
    pub cm: Option<f64>,
    /// The suppression threshold j: classes of size ≤ j are suppressed.
    #[serde(skip)]
    pub threshold: u64,
}

/// Node indices as a record batch: one `UInt8` level column per QI (named after it), then
/// `classes`, `k`, `max_class`, `l_distinct`, `suppressed`, `s_k`, `s_l`, `l_entropy`,
/// `l_probabilistic`, `glm` and, with a class attribute, `cm`.
pub fn indices_batch(
    qi_names: &[&str],
    rows: &[NodeIndices],
    with_cm: bool,
) -> Result<arrow::record_batch::RecordBatch, arrow::error::ArrowError> {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Float64Array, UInt8Array, UInt64Array};
    use arrow::record_batch::RecordBatch;

    type Column<T> = (&'static str, fn(&NodeIndices) -> T);
    let u64s: [Column<u64>; 7] = [
        ("classes", |x| x.classes),
        ("k", |x| x.k),
        ("max_class", |x| x.max_class),
        ("l_distinct", |x| x.l_distinct),
        ("suppressed", |x| x.suppressed),
        ("s_k", |x| x.s_k),
        ("s_l", |x| x.s_l),
    ];
    let f64s: [Column<f64>; 3] = [
        ("l_entropy", |x| x.l_entropy),
        ("l_probabilistic", |x| x.l_probabilistic),
        ("glm", |x| x.glm),
    ];
    let mut cols: Vec<ArrayRef> = Vec::new();
    for d in 0..qi_names.len() {
        cols.push(Arc::new(UInt8Array::from_iter_values(
            rows.iter().map(|x| x.node[d]),
        )));
    }
    for (_, get) in u64s {
        cols.push(Arc::new(UInt64Array::from_iter_values(
            rows.iter().map(get),
        )));
    }
    for (_, get) in f64s {
        cols.push(Arc::new(Float64Array::from_iter_values(
            rows.iter().map(get),
        )));
    }
    if with_cm {
        cols.push(Arc::new(
            rows.iter().map(|x| x.cm).collect::<Float64Array>(),
        ));
    }
    RecordBatch::try_new(indices_schema(qi_names, with_cm), cols)
}

/// The schema of [`indices_batch`].
pub fn indices_schema(qi_names: &[&str], with_cm: bool) -> arrow::datatypes::SchemaRef {
    use arrow::datatypes::{DataType, Field, Schema};
    let mut fields: Vec<Field> = qi_names
        .iter()
        .map(|n| Field::new(*n, DataType::UInt8, false))
        .collect();
    for name in [
        "classes",
        "k",
        "max_class",
        "l_distinct",
        "suppressed",
        "s_k",
        "s_l",
    ] {
        fields.push(Field::new(name, DataType::UInt64, false));
    }
    for name in ["l_entropy", "l_probabilistic", "glm"] {
        fields.push(Field::new(name, DataType::Float64, false));
    }
    if with_cm {
        fields.push(Field::new("cm", DataType::Float64, true));
    }
    std::sync::Arc::new(Schema::new(fields))
}
