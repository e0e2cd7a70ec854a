//! Suppression with a limit of η tuples: the DBSEC rule (the papers' searches: spend the budget
//! on the smallest classes) or the requirement rule (ARX's: suppress only the classes smaller than
//! the required k, when they fit the budget).

use serde::Serialize;

/// Which classes a node suppresses within the limit η.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase", tag = "rule")]
pub enum SuppressionRule {
    /// DBSEC 2010: classes of size ≤ j, j as large as the budget allows.
    #[default]
    Dbsec,
    /// Only classes smaller than `k` (those that violate `k>=K`), when all of them fit η;
    /// otherwise as many of the smallest as fit (the node then misses the requirement).
    Requirements {
        /// The required k.
        k: u64,
    },
}

impl SuppressionRule {
    /// The largest class size the rule may suppress.
    pub fn cap(&self) -> u64 {
        match self {
            SuppressionRule::Dbsec => u64::MAX,
            SuppressionRule::Requirements { k } => k.saturating_sub(1),
        }
    }

    /// How reports name it.
    pub fn describe(&self) -> String {
        match self {
            SuppressionRule::Dbsec => {
                "dbsec: classes of size <= j, j as large as the limit allows".into()
            }
            SuppressionRule::Requirements { k } => {
                format!("requirements: only classes smaller than k = {k}, within the limit")
            }
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
