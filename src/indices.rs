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
