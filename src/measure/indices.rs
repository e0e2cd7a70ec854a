//! Worst-case and sum indices of a node, computed from its cell tables (SPEC §2–§3).

use serde::Serialize;

use crate::lattice::Node;

/// Every index of one node under the suppression rule. Worst-case indices (k, l, max class, class
/// count, distances, risks) are over the released classes; sums count suppressed tuples as fully
/// protected; losses count them with the largest loss (SPEC §2, §3, §7).
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
    /// t-closeness with equal ground distance: the largest total variation distance of a released
    /// class's sensitive distribution from the input's.
    pub t_equal: f64,
    /// t-closeness over the ordered sensitive domain (EMD).
    pub t_ordered: f64,
    /// t-closeness over the sensitive hierarchy (EMD), with a sensitive hierarchy.
    pub t_hierarchical: Option<f64>,
    /// Basic β-likeness: the largest relative gain (p_E(s) − p(s)) / p(s) of a released class.
    pub beta: f64,
    /// δ-disclosure: the largest |ln(p_E(s) / p(s))| over values present in a released class.
    pub delta_disclosure: f64,
    /// Average re-identification risk: released classes / released tuples.
    pub risk_average: f64,
    /// Share of all tuples that are released alone in their class.
    pub uniques: f64,
    /// Suppressed tuples.
    pub suppressed: u64,
    /// GLM (Iyengar), summed over tuples; a suppressed tuple loses 1 per QI.
    pub glm: f64,
    /// Average equivalence class size: released tuples / released classes (N without any).
    pub aecs: f64,
    /// Precision (Sweeney): the mean over tuples and QIs of level / height (1 when suppressed).
    pub precision: f64,
    /// Non-uniform entropy (Gionis & Tassa), bits, summed over tuples and QIs.
    pub nu_entropy: f64,
    /// S_k: sum of P_equiv (class size; N for suppressed tuples). Also the discernibility metric.
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

/// The indices that follow for a node with more than η tuples alone in their class, without its
/// classes: the suppression threshold j is then 0 (the size-1 classes alone overrun the limit,
/// see [`crate::suppression::suppression_threshold_capped`]), so nothing is suppressed and a
/// class of one tuple is released. k, every l and the prosecutor risk are 1, and the losses that
/// depend on the generalization alone (GLM, precision, non-uniform entropy, height) are the
/// node's. A tuple alone in its class at a node is alone at every finer node, so one such node
/// implies this for every node below it.
#[derive(Debug, Clone, PartialEq)]
pub struct SingletonIndices(NodeIndices);

impl SingletonIndices {
    /// The indices implied at `node`, whose losses with nothing suppressed are given.
    pub fn new(node: Node, glm: f64, precision: f64, nu_entropy: f64) -> Self {
        // Fields that need the classes hold placeholders; `value` never reads them.
        SingletonIndices(NodeIndices {
            node,
            classes: 1,
            k: 1,
            max_class: 0,
            l_distinct: 1,
            l_entropy: 1.0,
            l_probabilistic: 1.0,
            t_equal: f64::NAN,
            t_ordered: f64::NAN,
            t_hierarchical: None,
            beta: f64::NAN,
            delta_disclosure: f64::NAN,
            risk_average: f64::NAN,
            uniques: f64::NAN,
            suppressed: 0,
            glm,
            aecs: f64::NAN,
            precision,
            nu_entropy,
            s_k: 0,
            s_l: 0,
            cm: None,
            threshold: 0,
        })
    }

    /// Whether the value of `index` follows (the others need the classes).
    pub fn implies(index: Index) -> bool {
        matches!(
            index,
            Index::K
                | Index::L
                | Index::LEntropy
                | Index::LProbabilistic
                | Index::RiskProsecutor
                | Index::Suppressed
                | Index::Glm
                | Index::Precision
                | Index::Height
                | Index::NuEntropy
        )
    }

    /// The value of `index`, when it follows.
    pub fn value(&self, index: Index) -> Option<f64> {
        Self::implies(index).then(|| index.of(&self.0))
    }
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
    /// t-closeness, equal ground distance.
    TEqual,
    /// t-closeness, ordered ground distance.
    TOrdered,
    /// t-closeness, hierarchical ground distance.
    THierarchical,
    /// Basic β-likeness.
    Beta,
    /// δ-disclosure privacy.
    DeltaDisclosure,
    /// Prosecutor risk: the highest re-identification risk of a released record.
    RiskProsecutor,
    /// Average re-identification risk.
    RiskAverage,
    /// Share of unique records.
    Uniques,
    /// Suppressed tuples.
    Suppressed,
    /// GLM loss.
    Glm,
    /// Discernibility metric.
    Discernibility,
    /// Average equivalence class size.
    Aecs,
    /// Precision loss.
    Precision,
    /// Height of the node.
    Height,
    /// Non-uniform entropy.
    NuEntropy,
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
    /// A real number only defined with a sensitive hierarchy (nullable Float64).
    HierarchyReal,
}

/// Which optional indices a dataset defines (and outputs show).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Present {
    /// The profile has a class attribute (`cm`).
    pub class: bool,
    /// The profile has a sensitive hierarchy (`t_hierarchical`).
    pub sensitive_hierarchy: bool,
}

impl Present {
    /// What `dataset` defines.
    pub fn of(dataset: &crate::encode::Dataset) -> Self {
        Self::of_profile(&dataset.profile)
    }

    /// What a dataset read with `profile` defines.
    pub fn of_profile(profile: &crate::profile::Profile) -> Self {
        Present {
            class: profile.class.is_some(),
            sensitive_hierarchy: profile.sensitive_hierarchy.is_some(),
        }
    }

    /// Whether an index of `kind` is defined.
    pub fn has(&self, kind: Kind) -> bool {
        match kind {
            Kind::Count | Kind::Real => true,
            Kind::ClassReal => self.class,
            Kind::HierarchyReal => self.sensitive_hierarchy,
        }
    }
}

/// What of the sensitive attribute an index needs in the cell tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sensitive {
    /// Nothing: one cell per class suffices.
    No,
    /// The set of values of each class (distinct l).
    Distinct,
    /// The count of every value in each class.
    Counts,
    /// The counts, measured as a distance from the input's distribution (one bit of
    /// [`crate::distribution::Wanted`] per distance).
    Distance(u8),
}

/// When a requirement in the index's good direction (`k >= 5`, `t_equal <= 0.2`) is monotone:
/// if a node meets it, every coarser node does (SPEC §7). A pruned search relies on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Monotone {
    /// With any suppression limit.
    Always,
    /// Only with suppression limit 0.
    WithoutSuppression,
    /// Never.
    Never,
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
    /// Larger values are better (privacy such as k, l); else smaller are (distances, risks, losses).
    pub higher_is_better: bool,
    /// Usable as a search objective.
    pub objective: bool,
    /// What it needs of the sensitive attribute.
    pub sensitive: Sensitive,
    /// When a requirement on it is monotone.
    pub monotone: Monotone,
    /// Its value for a node (NaN where it is not defined).
    pub value: fn(&NodeIndices) -> f64,
}

#[allow(clippy::too_many_arguments)]
const fn info(
    index: Index,
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Kind,
    higher_is_better: bool,
    objective: bool,
    sensitive: Sensitive,
    monotone: Monotone,
    value: fn(&NodeIndices) -> f64,
) -> IndexInfo {
    IndexInfo {
        index,
        name,
        aliases,
        kind,
        higher_is_better,
        objective,
        sensitive,
        monotone,
        value,
    }
}

use Kind::{ClassReal, Count, HierarchyReal, Real};
use Monotone::{Always, Never, WithoutSuppression};
use Sensitive::{Counts, Distinct, No};

/// The indices in output order.
pub const INDICES: [IndexInfo; 24] = [
    info(
        Index::Classes,
        "classes",
        &[],
        Count,
        true,
        false,
        No,
        Never,
        |x| x.classes as f64,
    ),
    info(Index::K, "k", &[], Count, true, true, No, Always, |x| {
        x.k as f64
    }),
    info(
        Index::MaxClass,
        "max_class",
        &[],
        Count,
        false,
        false,
        No,
        Never,
        |x| x.max_class as f64,
    ),
    // SPEC §7 calls distinct l monotone under any suppression; it is not under the DBSEC rule
    // (tests/optimal.rs has a counterexample), so a pruned search uses it only without suppression.
    info(
        Index::L,
        "l_distinct",
        &["l"],
        Count,
        true,
        true,
        Distinct,
        WithoutSuppression,
        |x| x.l_distinct as f64,
    ),
    info(
        Index::LEntropy,
        "l_entropy",
        &[],
        Real,
        true,
        true,
        Counts,
        WithoutSuppression,
        |x| x.l_entropy,
    ),
    info(
        Index::LProbabilistic,
        "l_probabilistic",
        &[],
        Real,
        true,
        false,
        Counts,
        Never,
        |x| x.l_probabilistic,
    ),
    info(
        Index::TEqual,
        "t_equal",
        &["t"],
        Real,
        false,
        true,
        Sensitive::Distance(crate::distribution::Wanted::T_EQUAL),
        WithoutSuppression,
        |x| x.t_equal,
    ),
    info(
        Index::TOrdered,
        "t_ordered",
        &[],
        Real,
        false,
        true,
        Sensitive::Distance(crate::distribution::Wanted::T_ORDERED),
        WithoutSuppression,
        |x| x.t_ordered,
    ),
    info(
        Index::THierarchical,
        "t_hierarchical",
        &[],
        HierarchyReal,
        false,
        true,
        Sensitive::Distance(crate::distribution::Wanted::T_HIERARCHICAL),
        WithoutSuppression,
        |x| x.t_hierarchical.unwrap_or(f64::NAN),
    ),
    info(
        Index::Beta,
        "beta",
        &["beta_likeness"],
        Real,
        false,
        true,
        Sensitive::Distance(crate::distribution::Wanted::BETA),
        Never,
        |x| x.beta,
    ),
    info(
        Index::DeltaDisclosure,
        "delta_disclosure",
        &["delta"],
        Real,
        false,
        true,
        Sensitive::Distance(crate::distribution::Wanted::DELTA),
        Never,
        |x| x.delta_disclosure,
    ),
    info(
        Index::RiskProsecutor,
        "risk_prosecutor",
        &[],
        Real,
        false,
        true,
        No,
        WithoutSuppression,
        |x| {
            if x.classes == 0 {
                0.0
            } else {
                1.0 / x.k as f64
            }
        },
    ),
    info(
        Index::RiskAverage,
        "risk_average",
        &[],
        Real,
        false,
        true,
        No,
        WithoutSuppression,
        |x| x.risk_average,
    ),
    info(
        Index::Uniques,
        "uniques",
        &[],
        Real,
        false,
        true,
        No,
        WithoutSuppression,
        |x| x.uniques,
    ),
    info(
        Index::Suppressed,
        "suppressed",
        &[],
        Count,
        false,
        false,
        No,
        Never,
        |x| x.suppressed as f64,
    ),
    info(Index::Glm, "glm", &[], Real, false, true, No, Never, |x| {
        x.glm
    }),
    info(
        Index::Discernibility,
        "discernibility",
        &["dm"],
        Count,
        false,
        true,
        No,
        Never,
        |x| x.s_k as f64,
    ),
    info(
        Index::Aecs,
        "aecs",
        &[],
        Real,
        false,
        true,
        No,
        Never,
        |x| x.aecs,
    ),
    info(
        Index::Precision,
        "precision",
        &[],
        Real,
        false,
        true,
        No,
        Never,
        |x| x.precision,
    ),
    info(
        Index::Height,
        "height",
        &[],
        Count,
        false,
        true,
        No,
        Never,
        |x| x.node.iter().map(|&l| l as f64).sum(),
    ),
    info(
        Index::NuEntropy,
        "nu_entropy",
        &[],
        Real,
        false,
        true,
        No,
        Never,
        |x| x.nu_entropy,
    ),
    info(
        Index::SK,
        "s_k",
        &["sk"],
        Count,
        true,
        true,
        No,
        Never,
        |x| x.s_k as f64,
    ),
    info(
        Index::SL,
        "s_l",
        &["sl"],
        Count,
        true,
        true,
        Counts,
        Never,
        |x| x.s_l as f64,
    ),
    info(
        Index::Cm,
        "cm",
        &[],
        ClassReal,
        false,
        true,
        No,
        Never,
        |x| x.cm.unwrap_or(f64::NAN),
    ),
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

    /// Fails unless a dataset with `present` defines the index: `cm` needs a class attribute,
    /// `t_hierarchical` a hierarchy of the sensitive attribute.
    pub fn check_defined(&self, present: Present) -> crate::error::Result<()> {
        let message = match self.info().kind {
            Kind::ClassReal if !present.class => {
                "`cm` needs a class attribute in the profile (class = ... or --class)"
            }
            Kind::HierarchyReal if !present.sensitive_hierarchy => {
                "`t_hierarchical` needs a hierarchy of the sensitive attribute (sensitive_hierarchy = ... in the profile, or --sensitive-hierarchy NAME=HIERARCHY_CSV)"
            }
            _ => return Ok(()),
        };
        Err(crate::error::PbgError::argument(self.name(), message))
    }

    /// The default box size ε of PBG-EA's archive for this objective: 1 (the DBSEC setting) for
    /// counts and unbounded values, 0.01 for shares in [0, 1], which a box of 1 would merge into one.
    pub fn default_epsilon(&self) -> f64 {
        match self {
            Index::TEqual
            | Index::TOrdered
            | Index::THierarchical
            | Index::RiskProsecutor
            | Index::RiskAverage
            | Index::Uniques
            | Index::Precision
            | Index::Cm => 0.01,
            _ => 1.0,
        }
    }

    /// What evaluating it needs of the sensitive attribute.
    pub fn uses_sensitive(&self) -> Sensitive {
        self.info().sensitive
    }

    /// What evaluating all of `indices` needs: per-value counts, value sets (distinct l), and
    /// which distances (a [`crate::distribution::Wanted`] mask).
    pub fn needs(indices: &[Index]) -> (bool, bool, u8) {
        let mut out = (false, false, 0u8);
        for i in indices {
            match i.uses_sensitive() {
                Sensitive::No => {}
                Sensitive::Distinct => out.1 = true,
                Sensitive::Counts => out.0 = true,
                Sensitive::Distance(bit) => {
                    out.0 = true;
                    out.2 |= bit;
                }
            }
        }
        out
    }
}

/// Node indices as a record batch: one `UInt8` level column per QI (named after it), then every
/// index of [`INDICES`] in order (the optional ones only where `present` defines them).
pub fn indices_batch(
    qi_names: &[&str],
    rows: &[NodeIndices],
    present: Present,
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
    for info in INDICES.iter().filter(|i| present.has(i.kind)) {
        let value = info.value;
        cols.push(match info.kind {
            Kind::Count => Arc::new(UInt64Array::from_iter_values(
                rows.iter().map(|x| value(x) as u64),
            )),
            Kind::Real => Arc::new(Float64Array::from_iter_values(rows.iter().map(value))),
            Kind::ClassReal | Kind::HierarchyReal => Arc::new(
                rows.iter()
                    .map(|x| Some(value(x)).filter(|v| !v.is_nan()))
                    .collect::<Float64Array>(),
            ),
        });
    }
    RecordBatch::try_new(indices_schema(qi_names, present), cols)
}

/// The schema of [`indices_batch`].
pub fn indices_schema(qi_names: &[&str], present: Present) -> arrow::datatypes::SchemaRef {
    use arrow::datatypes::{DataType, Field, Schema};
    let mut fields: Vec<Field> = qi_names
        .iter()
        .map(|n| Field::new(*n, DataType::UInt8, false))
        .collect();
    for info in INDICES.iter().filter(|i| present.has(i.kind)) {
        fields.push(match info.kind {
            Kind::Count => Field::new(info.name, DataType::UInt64, false),
            Kind::Real => Field::new(info.name, DataType::Float64, false),
            Kind::ClassReal | Kind::HierarchyReal => Field::new(info.name, DataType::Float64, true),
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
            t_equal: 0.5,
            t_ordered: 0.25,
            t_hierarchical: Some(0.125),
            beta: 2.0,
            delta_disclosure: 1.75,
            risk_average: 0.1,
            uniques: 0.0625,
            suppressed: 5,
            glm: 7.5,
            aecs: 6.5,
            precision: 0.375,
            nu_entropy: 11.0,
            s_k: 100,
            s_l: 60,
            cm: Some(0.25),
            threshold: 1,
        }
    }

    #[test]
    fn every_index_parses_from_its_names_and_reads_its_field() {
        let ix = sample();
        let expected = [
            3.0, 4.0, 9.0, 2.0, 1.5, 1.25, 0.5, 0.25, 0.125, 2.0, 1.75, 0.25, 0.1, 0.0625, 5.0,
            7.5, 100.0, 6.5, 0.375, 3.0, 11.0, 100.0, 60.0, 0.25,
        ];
        assert_eq!(expected.len(), INDICES.len());
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
        none.t_hierarchical = None;
        assert!(
            Index::Cm.of(&none).is_nan() && Index::THierarchical.of(&none).is_nan(),
            "a missing cm or t_hierarchical is NaN everywhere"
        );
    }

    #[test]
    fn the_schema_and_the_batch_follow_the_index_list() {
        for (class, sensitive_hierarchy) in
            [(false, false), (true, false), (false, true), (true, true)]
        {
            let present = Present {
                class,
                sensitive_hierarchy,
            };
            let batch = indices_batch(&["a", "b"], &[sample()], present).unwrap();
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
                    .filter(|i| present.has(i.kind))
                    .map(|i| i.name.to_string()),
            );
            assert_eq!(names, expected);
        }
    }
}
