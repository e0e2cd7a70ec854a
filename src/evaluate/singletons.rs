//! What a node's singleton tuples imply: a node with more than η tuples alone in their class
//! suppresses nothing, and neither does any finer node (see [`SingletonIndices`]), so a search
//! that wants only the indices that then follow need not evaluate the nodes below it.

use super::{Evaluator, NodeTables};
use crate::classes::{NodeKeys, RowKeys, row_class_keys, singletons_in_part};
use crate::error::Result;
use crate::indices::{Index, SingletonIndices};
use crate::suppression::SuppressionRule;

/// A probe counts the singleton tuples of the classes in one hash part of this many: an eighth of
/// the rows, enough to show more than η of them at a node where most tuples are alone.
const PROBE_PARTS: u64 = 8;

/// Rows up to which a probe keeps every row's class key (8 bytes each, per node evaluated in
/// parallel); larger datasets are not probed, so that memory stays bounded by the blocks of a
/// direct evaluation (their nodes are still found singleton-rich by full evaluations).
const PROBE_MAX_ROWS: usize = 1 << 22;

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

    /// Whether `keys` (every row's class key) prove more than η singleton tuples, with the rule
    /// then suppressing nothing: counted exactly over one hash part of the classes.
    fn proves_singleton_rich(&self, keys: &[u64]) -> bool {
        self.singletons_suppress_nothing()
            && singletons_in_part(keys, self.dataset.weights.as_deref(), PROBE_PARTS)
                > self.dataset.eta
    }

    /// Every row's class key at `node`, when the node can be probed: its keys pack and the
    /// dataset has at most 2^22 rows (the probe holds every row's key). Checks the node.
    fn probe_keys(&self, node: &[u8]) -> Result<Option<Vec<u64>>> {
        self.lattice.check(node, &self.qi_names())?;
        let ds = &self.dataset;
        Ok(match self.keys.at(node) {
            NodeKeys::Packed(layout) if ds.num_rows() <= PROBE_MAX_ROWS => {
                Some(row_class_keys(&ds.qis, node, &layout, ds.num_rows()))
            }
            _ => None,
        })
    }

    /// Whether `node` provably has more than η singleton tuples (so that it and every node below
    /// it have their [`SingletonIndices`]), judged on one part of its classes: false means not
    /// shown, and so does a node that cannot be probed (first-row keys, more than 2^22 rows).
    /// Costs one pass of key gathers.
    pub fn singleton_rich(&self, node: &[u8]) -> Result<bool> {
        Ok(self
            .probe_keys(node)?
            .is_some_and(|keys| self.proves_singleton_rich(&keys)))
    }

    /// A direct evaluation that stops once the rows' class keys show more than η singleton tuples
    /// (None: see [`Self::singleton_rich`]); otherwise the node's tables, from the same keys.
    pub fn tables_unless_singleton_rich(&self, node: &[u8]) -> Result<Option<NodeTables>> {
        match self.probe_keys(node)? {
            None => self.tables(node).map(Some),
            Some(keys) if self.proves_singleton_rich(&keys) => Ok(None),
            Some(keys) => self.tables_keyed(node, &RowKeys::Classes(&keys)).map(Some),
        }
    }
}
