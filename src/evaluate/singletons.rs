//! What a node's singleton tuples imply: a node with more than η tuples alone in their class
//! suppresses nothing, and neither does any finer node (see [`SingletonIndices`]), so a search
//! that wants only the indices that then follow need not evaluate the nodes below it.

use super::{Evaluator, NodeTables};
use crate::indices::{Index, SingletonIndices};
use crate::suppression::SuppressionRule;

impl Evaluator {
    /// Tuples alone in their class in a node's tables (before suppression).
    pub fn singleton_tuples(tables: &NodeTables) -> u64 {
        tables.sens.sizes().filter(|&(size, _)| size == 1).count() as u64
    }

    /// Whether more than η singleton tuples at a node make the rule suppress nothing there. The
    /// DBSEC rule stops at the first size whose tuples overrun η; the requirement rule with k ≥ 2
    /// fails every singleton, so its failing classes overrun η and it falls back to that size
    /// rule (with k ≤ 1 it may remove singletons for a requirement judged on each class).
    pub fn singletons_suppress_nothing(&self) -> bool {
        match self.suppression_rule() {
            SuppressionRule::Dbsec => true,
            SuppressionRule::Requirements { k, .. } => *k >= 2,
        }
    }

    /// Whether [`Self::singleton_indices`] gives every one of `indices`.
    pub fn singletons_imply(&self, indices: &[Index]) -> bool {
        self.singletons_suppress_nothing() && indices.iter().all(|&i| SingletonIndices::implies(i))
    }

    /// The indices of `node`, given that it has more than η singleton tuples (for instance, that
    /// it is finer than a node that has): None when the rule might still suppress there.
    pub fn singleton_indices(&self, node: &[u8]) -> Option<SingletonIndices> {
        if !self.singletons_suppress_nothing() {
            return None;
        }
        let n = self.dataset.num_tuples();
        Some(SingletonIndices::new(
            node.to_vec(),
            self.glm_bound(node),
            crate::loss::precision(node, &self.heights, n, 0),
            self.nu.base(node),
        ))
    }
}
