//! Suppression with a limit of η tuples: the DBSEC rule (the papers' searches: spend the budget
//! on the smallest classes) or the requirement rule (ARX's: suppress only the classes that violate
//! the requirements, when they fit the budget).

use serde::Serialize;

use crate::indices::Index;
use crate::requirement::{Op, Requirement};

/// Which classes a node suppresses within the limit η.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "lowercase", tag = "rule")]
pub enum SuppressionRule {
    /// DBSEC 2010: classes of size ≤ j, j as large as the budget allows.
    #[default]
    Dbsec,
    /// Only the classes that violate the requirements: smaller than `k`, or failing one of
    /// `classes` (requirements judged on each class: `l>=3`, `t_equal<=0.2`, ..), when all of
    /// them fit η and leave a class; otherwise as many of the classes smaller than `k`, smallest
    /// first, as fit (the node then misses the requirements, and its indices say so).
    Requirements {
        /// The required k.
        k: u64,
        /// The requirements other than k that a class can violate on its own.
        #[serde(serialize_with = "requirement_texts")]
        classes: Vec<Requirement>,
    },
}

fn requirement_texts<S: serde::Serializer>(r: &[Requirement], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(r.iter().map(Requirement::text))
}

impl SuppressionRule {
    /// The rule named `name` (`requirements` or `dbsec`) for the requirements `require`: the
    /// requirement rule suppresses below the largest lower bound on k and the classes that
    /// fail a requirement a single class can fail ([`class_value`]'s indices, in their safe
    /// direction: lower bounds on l, upper bounds on t, β, δ and the prosecutor risk).
    pub fn named(name: RuleName, require: &[Requirement]) -> SuppressionRule {
        match name {
            RuleName::Dbsec => SuppressionRule::Dbsec,
            RuleName::Requirements => {
                // Lower bounds on k decide what to suppress; an upper bound does not.
                let k = require
                    .iter()
                    .filter_map(Requirement::least_class_size)
                    .max()
                    .unwrap_or(1);
                let classes = require
                    .iter()
                    .filter(|r| r.measure != Index::K && is_class_requirement(r))
                    .cloned()
                    .collect();
                SuppressionRule::Requirements { k, classes }
            }
        }
    }

    /// The rules a release may have been made with, in the order a verifier tries them: the
    /// one named by a flag alone; else the profile's, the requirement rule (when there are
    /// requirements) and the DBSEC rule.
    pub fn candidates(
        flag: Option<RuleName>,
        profile: Option<RuleName>,
        require: &[Requirement],
    ) -> Vec<SuppressionRule> {
        let names: Vec<RuleName> = match flag {
            Some(f) => vec![f],
            None => profile
                .into_iter()
                .chain((!require.is_empty()).then_some(RuleName::Requirements))
                .chain([RuleName::Dbsec])
                .collect(),
        };
        let mut rules: Vec<SuppressionRule> = Vec::new();
        for name in names {
            let rule = SuppressionRule::named(name, require);
            if !rules.contains(&rule) {
                rules.push(rule);
            }
        }
        rules
    }

    /// The largest class size the rule may suppress by size alone.
    pub fn cap(&self) -> u64 {
        match self {
            SuppressionRule::Dbsec => u64::MAX,
            SuppressionRule::Requirements { k, .. } => k.saturating_sub(1),
        }
    }

    /// The requirements judged on each class (none for the DBSEC rule).
    pub fn class_requirements(&self) -> &[Requirement] {
        match self {
            SuppressionRule::Dbsec => &[],
            SuppressionRule::Requirements { classes, .. } => classes,
        }
    }

    /// The indices a class is judged by ([`Self::class_requirements`]'), for the tables an
    /// evaluator must keep.
    pub fn class_indices(&self) -> Vec<Index> {
        self.class_requirements()
            .iter()
            .map(|r| r.measure)
            .collect()
    }

    /// Which rule it is.
    pub fn name(&self) -> RuleName {
        match self {
            SuppressionRule::Dbsec => RuleName::Dbsec,
            SuppressionRule::Requirements { .. } => RuleName::Requirements,
        }
    }

    /// How reports name it.
    pub fn describe(&self) -> String {
        match self {
            SuppressionRule::Dbsec => {
                "dbsec: classes of size <= j, j as large as the limit allows".into()
            }
            SuppressionRule::Requirements { k, classes } if classes.is_empty() => {
                format!("requirements: only classes smaller than k = {k}, within the limit")
            }
            SuppressionRule::Requirements { k, classes } => {
                let each: Vec<String> = classes.iter().map(Requirement::text).collect();
                format!(
                    "requirements: only classes smaller than k = {k} or failing {}, within the limit",
                    each.join(",")
                )
            }
        }
    }
}

/// The name of a suppression rule, as flags and profiles give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleName {
    /// [`SuppressionRule::Dbsec`].
    Dbsec,
    /// [`SuppressionRule::Requirements`].
    Requirements,
}

impl RuleName {
    /// Parses `requirements` or `dbsec`; the error says what is accepted.
    pub fn parse(text: &str) -> Result<RuleName, String> {
        match text.trim() {
            "dbsec" => Ok(RuleName::Dbsec),
            "requirements" => Ok(RuleName::Requirements),
            other => Err(format!(
                "unknown suppression rule `{other}` (use requirements or dbsec)"
            )),
        }
    }

    /// The rule a job runs: the one named by a flag, else the profile's, else the requirement
    /// rule when there are requirements and the DBSEC rule without.
    pub fn choose(flag: Option<RuleName>, profile: Option<RuleName>, has_require: bool) -> Self {
        flag.or(profile).unwrap_or(if has_require {
            RuleName::Requirements
        } else {
            RuleName::Dbsec
        })
    }
}

/// Whether a single class can violate `r` on its own: a lower bound on k or an l, or an upper
/// bound on a distance, β, δ or the prosecutor risk (each class's own value, [`class_value`]).
pub fn is_class_requirement(r: &Requirement) -> bool {
    let lower = matches!(r.op, Op::Ge | Op::Gt);
    let upper = matches!(r.op, Op::Le | Op::Lt);
    match r.measure {
        Index::K | Index::L | Index::LEntropy | Index::LProbabilistic => lower,
        Index::TEqual
        | Index::TOrdered
        | Index::THierarchical
        | Index::Beta
        | Index::DeltaDisclosure
        | Index::RiskProsecutor => upper,
        _ => false,
    }
}

/// What one class contributes to a class-level index (the node's value is the minimum — k, the
/// l's — or maximum — the rest — of these over its released classes); `None` for an index that is
/// not a class's.
pub fn class_value(index: Index, c: &ClassMeasures) -> Option<f64> {
    Some(match index {
        Index::K => c.size as f64,
        Index::L => c.distinct as f64,
        Index::LEntropy => c.l_entropy,
        Index::LProbabilistic => c.size as f64 / c.most as f64,
        Index::RiskProsecutor => 1.0 / c.size as f64,
        Index::TEqual => c.distances.t_equal,
        Index::TOrdered => c.distances.t_ordered,
        Index::THierarchical => c.distances.t_hierarchical,
        Index::Beta => c.distances.beta,
        Index::DeltaDisclosure => c.distances.delta,
        _ => return None,
    })
}

/// One class's own measures, for [`class_value`].
#[derive(Debug, Clone, Copy)]
pub struct ClassMeasures {
    /// Tuples in the class.
    pub size: u64,
    /// Distinct sensitive values.
    pub distinct: u64,
    /// Its entropy l: exp of the Shannon entropy of its sensitive values (exactly the number of
    /// values when they are equally frequent).
    pub l_entropy: f64,
    /// Count of its most frequent sensitive value.
    pub most: u64,
    /// Its distances from the table's distribution.
    pub distances: crate::distribution::Distances,
}

impl ClassMeasures {
    /// A class known by its size and distinct values only (the rest unknown: NaN).
    pub fn of_size(size: u64, distinct: u64) -> Self {
        ClassMeasures {
            size,
            distinct,
            l_entropy: f64::NAN,
            most: 0,
            distances: crate::distribution::Distances::UNKNOWN,
        }
    }
}

/// The threshold j of the suppression rule: every class of size ≤ j is suppressed.
///
/// With E_i the tuples in classes of size exactly i, j is the smallest integer with
/// |E_1| + … + |E_{j+1}| > η; the release is then k-anonymous with k = j + 1. `sizes` gives, in
/// ascending order of size, each class size present with its tuple count |E_size| (sizes above η
/// may be left out: they can never be suppressed). Classes of the largest size `max_size` are never
/// suppressed, so a release is never empty even when η ≥ N.
pub fn suppression_threshold(
    sizes: impl IntoIterator<Item = (u64, u64)>,
    eta: u64,
    max_size: u64,
) -> u64 {
    suppression_threshold_capped(sizes, eta, max_size, u64::MAX)
}

/// [`suppression_threshold`] that never suppresses classes larger than `cap` (the requirement
/// rule: `cap` = k − 1).
pub fn suppression_threshold_capped(
    sizes: impl IntoIterator<Item = (u64, u64)>,
    eta: u64,
    max_size: u64,
    cap: u64,
) -> u64 {
    let mut suppressed = 0u64;
    let mut j = 0u64;
    for (size, tuples) in sizes {
        if size > cap || size >= max_size || suppressed + tuples > eta {
            break;
        }
        suppressed += tuples;
        j = size;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::suppression_threshold;

    #[test]
    fn follows_the_dbsec_rule() {
        // E_1 = 50 tuples, E_3 = 300 tuples: with η = 301 only the singletons go (k = 3).
        let sizes = [(1, 50), (3, 300)];
        assert_eq!(suppression_threshold(sizes, 301, 500), 1);
        assert_eq!(suppression_threshold(sizes, 350, 500), 3);
        assert_eq!(suppression_threshold(sizes, 49, 500), 0);
        // Never the largest classes.
        assert_eq!(suppression_threshold([(2, 4), (3, 3)], 100, 3), 2);
    }
}
