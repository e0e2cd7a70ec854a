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

/// Every index of a node that pbg reports, requires, optimizes or compares: one list, from which
/// the output schemas (JSON keys, CSV/Parquet/SQL columns), the parsing of requirements, choices
/// and search objectives, and each index's direction are all derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Index {
    /// Released equivalence classes.
    Classes,
    /// k-anonymity.
    K,
    /// The largest released class.
    MaxClass,
    /// Distinct l-diversity.
    L,
    /// Entropy l-diversity.
    LEntropy,
    /// Probabilistic l-diversity.
    LProbabilistic,
    /// Suppressed tuples.
    Suppressed,
    /// GLM loss.
    Glm,
    /// S_k, the sum of P_equiv.
    SK,
    /// S_l, the sum of P_sens.
    SL,
    /// CM classification penalty (with a class attribute).
    Cm,
}

/// How an index's values are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A count (UInt64).
    Count,
    /// A real number (Float64).
    Real,
    /// A real number only defined with a class attribute (nullable Float64).
    ClassReal,
}

/// What pbg knows about one index.
#[derive(Debug, Clone, Copy)]
pub struct IndexInfo {
    /// The index.
    pub index: Index,
    /// Its name in outputs and arguments.
    pub name: &'static str,
    /// Other accepted spellings.
    pub aliases: &'static [&'static str],
    /// Storage type.
    pub kind: Kind,
    /// Larger values are better (privacy); else smaller are (loss, suppression).
    pub higher_is_better: bool,
    /// Usable as a search objective.
    pub objective: bool,
    /// Involves the sensitive attribute (an evaluator must count sensitive values).
    pub sensitive: bool,
    /// Its value for a node.
    pub value: fn(&NodeIndices) -> f64,
}

/// The indices in output order.
pub const INDICES: [IndexInfo; 11] = [
    IndexInfo {
        index: Index::Classes,
        name: "classes",
        aliases: &[],
        kind: Kind::Count,
        higher_is_better: true,
        objective: false,
        sensitive: false,
        value: |x| x.classes as f64,
    },
    IndexInfo {
        index: Index::K,
        name: "k",
        aliases: &[],
        kind: Kind::Count,
        higher_is_better: true,
        objective: true,
        sensitive: false,
        value: |x| x.k as f64,
    },
    IndexInfo {
        index: Index::MaxClass,
        name: "max_class",
        aliases: &[],
        kind: Kind::Count,
        higher_is_better: false,
        objective: false,
        sensitive: false,
        value: |x| x.max_class as f64,
    },
    IndexInfo {
        index: Index::L,
        name: "l_distinct",
        aliases: &["l"],
        kind: Kind::Count,
        higher_is_better: true,
        objective: true,
        sensitive: true,
        value: |x| x.l_distinct as f64,
    },
    IndexInfo {
        index: Index::LEntropy,
        name: "l_entropy",
        aliases: &[],
        kind: Kind::Real,
        higher_is_better: true,
        objective: true,
        sensitive: true,
        value: |x| x.l_entropy,
    },
    IndexInfo {
        index: Index::LProbabilistic,
        name: "l_probabilistic",
        aliases: &[],
        kind: Kind::Real,
        higher_is_better: true,
        objective: false,
        sensitive: true,
        value: |x| x.l_probabilistic,
    },
    IndexInfo {
        index: Index::Suppressed,
        name: "suppressed",
        aliases: &[],
        kind: Kind::Count,
        higher_is_better: false,
        objective: false,
        sensitive: false,
        value: |x| x.suppressed as f64,
    },
    IndexInfo {
        index: Index::Glm,
        name: "glm",
        aliases: &[],
        kind: Kind::Real,
        higher_is_better: false,
        objective: true,
        sensitive: false,
        value: |x| x.glm,
    },
    IndexInfo {
        index: Index::SK,
        name: "s_k",
        aliases: &["sk"],
        kind: Kind::Count,
        higher_is_better: true,
        objective: true,
        sensitive: false,
        value: |x| x.s_k as f64,
    },
    IndexInfo {
        index: Index::SL,
        name: "s_l",
        aliases: &["sl"],
        kind: Kind::Count,
        higher_is_better: true,
        objective: true,
        sensitive: true,
        value: |x| x.s_l as f64,
    },
    IndexInfo {
        index: Index::Cm,
        name: "cm",
        aliases: &[],
        kind: Kind::ClassReal,
        higher_is_better: false,
        objective: true,
        sensitive: false,
        value: |x| x.cm.unwrap_or(f64::NAN),
    },
];

impl Index {
    /// Its row of [`INDICES`].
    pub fn info(self) -> &'static IndexInfo {
        INDICES
            .iter()
            .find(|i| i.index == self)
            .unwrap_or(&INDICES[0])
    }

    /// Parses a name or alias (any case); `what` names the argument in the error.
    pub fn parse_as(name: &str, what: &str) -> crate::error::Result<Self> {
        let n = name.trim().to_ascii_lowercase();
        INDICES
            .iter()
            .find(|i| i.name == n || i.aliases.contains(&n.as_str()))
            .map(|i| i.index)
            .ok_or_else(|| {
                crate::error::PbgError::argument(
                    what,
                    format!(
                        "unknown index `{}` (use {})",
                        name.trim(),
                        INDICES
                            .iter()
                            .map(|i| i.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
    }

    /// The name used in outputs and arguments (`l` for distinct l, as it is written in
    /// requirements and objectives).
    pub fn name(&self) -> &'static str {
        match self {
            Index::L => "l",
            other => other.info().name,
        }
    }

    /// The value for a node (`cm` is NaN without a class attribute).
    pub fn of(&self, ix: &NodeIndices) -> f64 {
        (self.info().value)(ix)
    }

    /// Whether larger values are better.
    pub fn maximize(&self) -> bool {
        self.info().higher_is_better
    }

    /// Whether evaluating it needs the sensitive values' counts.
    pub fn uses_sensitive(&self) -> bool {
        self.info().sensitive
    }
}

/// Node indices as a record batch: one `UInt8` level column per QI (named after it), then every
/// index of [`INDICES`] in order (`cm` only with a class attribute).
pub fn indices_batch(
    qi_names: &[&str],
    rows: &[NodeIndices],
    with_cm: bool,
) -> Result<arrow::record_batch::RecordBatch, arrow::error::ArrowError> {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Float64Array, UInt8Array, UInt64Array};
    use arrow::record_batch::RecordBatch;

    let mut cols: Vec<ArrayRef> = Vec::new();
    for d in 0..qi_names.len() {
        cols.push(Arc::new(UInt8Array::from_iter_values(
            rows.iter().map(|x| x.node[d]),
        )));
    }
    for info in INDICES
        .iter()
        .filter(|i| with_cm || i.kind != Kind::ClassReal)
    {
        let value = info.value;
        cols.push(match info.kind {
            Kind::Count => Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|x| value(x) as u64),
            )),
            Kind::Real => Arc::new(Float64Array::from_iter_values(rows.iter().map(value))),
            Kind::ClassReal => Arc::new(rows.iter().map(|x| x.cm).collect::<Float64Array>()),
        });
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
    for info in INDICES
        .iter()
        .filter(|i| with_cm || i.kind != Kind::ClassReal)
    {
        fields.push(match info.kind {
            Kind::Count => Field::new(info.name, DataType::UInt64, false),
            Kind::Real => Field::new(info.name, DataType::Float64, false),
            Kind::ClassReal => Field::new(info.name, DataType::Float64, true),
        });
    }
    std::sync::Arc::new(Schema::new(fields))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> NodeIndices {
        NodeIndices {
            node: vec![1, 2],
            classes: 3,
            k: 4,
            max_class: 9,
            l_distinct: 2,
            l_entropy: 1.5,
            l_probabilistic: 1.25,
            suppressed: 5,
            glm: 7.5,
            s_k: 100,
            s_l: 60,
            cm: Some(0.25),
            threshold: 1,
        }
    }

    #[test]
    fn every_index_parses_from_its_names_and_reads_its_field() {
        let ix = sample();
        let expected = [3.0, 4.0, 9.0, 2.0, 1.5, 1.25, 5.0, 7.5, 100.0, 60.0, 0.25];
        for (info, want) in INDICES.iter().zip(expected) {
            assert_eq!(Index::parse_as(info.name, "x").unwrap(), info.index);
            for a in info.aliases {
                assert_eq!(Index::parse_as(a, "x").unwrap(), info.index);
            }
            assert_eq!(Index::parse_as(info.index.name(), "x").unwrap(), info.index);
            assert_eq!(info.index.of(&ix), want, "{}", info.name);
            assert_eq!(info.index.info().name, info.name);
        }
        assert!(Index::parse_as("zzz", "x").is_err());
        let mut none = ix.clone();
        none.cm = None;
        assert!(
            Index::Cm.of(&none).is_nan(),
            "a missing cm is NaN everywhere"
        );
    }

    #[test]
    fn the_schema_and_the_batch_follow_the_index_list() {
        for with_cm in [false, true] {
            let batch = indices_batch(&["a", "b"], &[sample()], with_cm).unwrap();
            let names: Vec<String> = batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            let mut expected = vec!["a".to_string(), "b".to_string()];
            expected.extend(
                INDICES
                    .iter()
                    .filter(|i| with_cm || i.kind != Kind::ClassReal)
                    .map(|i| i.name.to_string()),
            );
            assert_eq!(names, expected);
        }
    }
}
