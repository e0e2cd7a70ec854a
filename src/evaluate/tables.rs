//! Direct evaluation of a node from the rows, and roll-ups from a finer node's tables.

use super::{Evaluator, NodeTables};
use crate::classes::{CellTable, NodeKeys, RowKeys, first_rows_of_all};
use crate::error::Result;
use crate::indices::NodeIndices;

impl Evaluator {
    /// Direct evaluation: the node's cell tables from the rows.
    pub fn tables(&self, node: &[u8]) -> Result<NodeTables> {
        self.check_node(node)?;
        let ds = &self.dataset;
        let node_keys = self.keys.at(node);
        // First rows are found once for both tables.
        let firsts = match &node_keys {
            NodeKeys::Packed(_) => Vec::new(),
            NodeKeys::FirstRow => first_rows_of_all(&ds.qis, node, ds.num_rows()),
        };
        let keys = match &node_keys {
            NodeKeys::Packed(layout) => RowKeys::Packed(layout),
            NodeKeys::FirstRow => RowKeys::FirstRow(&firsts),
        };
        self.tables_keyed(node, &keys)
    }

    /// Direct evaluation with the rows' class keys given.
    pub(super) fn tables_keyed(&self, node: &[u8], keys: &RowKeys<'_>) -> Result<NodeTables> {
        let ds = &self.dataset;
        let sens = CellTable::from_rows(
            &ds.qis,
            node,
            keys,
            self.class_only.as_deref().unwrap_or(&ds.sensitive.codes),
            self.sens_bits,
            ds.weights.as_deref(),
            self.sens_mask,
        )?;
        let labels = match &ds.class {
            Some(c) => Some(CellTable::from_rows(
                &ds.qis,
                node,
                keys,
                &c.codes,
                self.label_bits,
                ds.weights.as_deref(),
                false,
            )?),
            None => None,
        };
        Ok(NodeTables { sens, labels })
    }

    /// Roll-up: the tables of `node`, one level above `parent` in QI `d`, from `parent`'s tables.
    pub fn rollup(&self, parent: &NodeTables, node: &[u8], d: usize) -> NodeTables {
        let qis = &self.dataset.qis;
        let up = &qis[d].hierarchy.level(node[d] - 1).up;
        let to = self.keys.at(node);
        let from = if self.keys.is_wide() {
            let mut parent = node.to_vec();
            parent[d] -= 1;
            self.keys.at(&parent)
        } else {
            to.clone()
        };
        NodeTables {
            sens: parent.sens.rollup(&from, &to, qis, node, d, up),
            labels: parent
                .labels
                .as_ref()
                .map(|t| t.rollup(&from, &to, qis, node, d, up)),
        }
    }

    /// Evaluates one node directly from the rows.
    pub fn evaluate(&self, node: &[u8]) -> Result<NodeIndices> {
        let tables = self.tables(node)?;
        Ok(self.indices(node, &tables))
    }
}
