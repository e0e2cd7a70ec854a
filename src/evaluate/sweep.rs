//! The lattice sweep: every node, depth first over a spanning tree of roll-ups.

use rayon::prelude::*;

use super::{Evaluator, NodeTables};
use crate::error::Result;
use crate::indices::NodeIndices;

impl Evaluator {
    /// Evaluates every node of the lattice depth first over a spanning tree: the bottom directly,
    /// every other node rolled up from its tree parent — the predecessor with the fewest possible
    /// classes (product of its group counts), the cheapest to roll up in expectation, with a
    /// small bias toward rolling up a low field of the class key (fewer blocks to sort) —
    /// children of a node in parallel. Only the tables on the active paths are alive, so memory
    /// stays bounded by threads × height × the largest table, and each parent table is still in
    /// cache when its children read it. `progress` is called once per evaluated node. Results are
    /// in lattice index order.
    pub fn evaluate_lattice(&self, progress: &(dyn Fn() + Sync)) -> Result<Vec<NodeIndices>> {
        let mut all = Vec::new();
        self.sweep_lattice(usize::MAX, progress, &mut |block| {
            all.extend(block);
            Ok(true)
        })?;
        Ok(all)
    }

    /// [`Self::evaluate_lattice`] in blocks of at most `block` nodes (more only when one level
    /// of the last QI exceeds it), handed to `emit` in lattice index order, so that a caller
    /// writing them out holds one block at a time (4.78 M nodes held at once took 2.7 GB);
    /// `emit` returns whether to go on (a consumer that has had enough stops the sweep). A
    /// block is the nodes sharing their levels in the leading QIs: consecutive in index order,
    /// swept from its least node, whose tables are computed directly (the bottom's for the
    /// first block).
    pub fn sweep_lattice(
        &self,
        block: usize,
        progress: &(dyn Fn() + Sync),
        emit: &mut dyn FnMut(Vec<NodeIndices>) -> Result<bool>,
    ) -> Result<()> {
        self.lattice.enumerable("lattice size")?;
        let size = self.lattice.size();
        // The leading QIs fixed within a block: the fewest that bring its size under `block`.
        let (mut fixed, mut span) = (0, size);
        while span > block.max(1) && fixed + 1 < self.heights.len() {
            span /= self.heights[fixed] as usize + 1;
            fixed += 1;
        }
        let children = self.spanning_tree(fixed, span);
        for first in (0..size).step_by(span) {
            let least = self.lattice.node(first);
            let tables = self.tables(&least)?;
            let slots: Vec<std::sync::OnceLock<NodeIndices>> =
                (0..span).map(|_| std::sync::OnceLock::new()).collect();
            self.visit(first, 0, tables, &children, &slots, progress);
            let mut out = Vec::with_capacity(span);
            for slot in slots {
                // Every node of a block has a tree parent in it, so its least node reaches them
                // all.
                out.push(slot.into_inner().expect("every node visited"));
            }
            if !emit(out)? {
                break;
            }
        }
        Ok(())
    }

    /// The spanning tree of a block of `span` nodes whose leading `fixed` QIs are fixed (indices
    /// within the block; the same for every block): each node's children, with the QI rolled up
    /// to reach each.
    fn spanning_tree(&self, fixed: usize, span: usize) -> Vec<Vec<(usize, usize)>> {
        let groups: Vec<Vec<f64>> = super::level_groups(&self.dataset)
            .into_iter()
            .map(|g| g.into_iter().map(|n| n as f64).collect())
            .collect();
        // The fixed QIs add the same to every node's estimate: those of the first block serve.
        let estimate = |node: &[u8]| -> f64 {
            node.iter()
                .enumerate()
                .map(|(d, &l)| groups[d][l as usize].ln())
                .sum()
        };
        let mut children: Vec<Vec<(usize, usize)>> = vec![Vec::new(); span];
        for i in 1..span {
            let node = self.lattice.node(i);
            let mut best: Option<(f64, usize, usize)> = None;
            let mut parent = node.clone();
            for d in fixed..node.len() {
                if node[d] == 0 {
                    continue;
                }
                parent[d] -= 1;
                // Rolling up a high key field leaves more blocks to sort; on adult any weight in
                // 0.1..3 per bit of shift gives the same sweep time, none is 25 % slower.
                let shift = match &self.keys {
                    crate::classes::ClassKeys::Packed(layout) => layout.shift(d),
                    crate::classes::ClassKeys::Wide(_) => 0,
                };
                let e = estimate(&parent) + 0.3 * (shift as f64);
                if best.is_none_or(|(b, _, _)| e < b) {
                    best = Some((e, self.lattice.index(&parent), d));
                }
                parent[d] += 1;
            }
            if let Some((_, p, d)) = best {
                children[p].push((i, d));
            }
        }
        children
    }

    /// Evaluates node `first + i` from its tables, then its subtree (`i` within the block).
    fn visit(
        &self,
        first: usize,
        i: usize,
        tables: NodeTables,
        children: &[Vec<(usize, usize)>],
        slots: &[std::sync::OnceLock<NodeIndices>],
        progress: &(dyn Fn() + Sync),
    ) {
        let node = self.lattice.node(first + i);
        let ix = self.indices(&node, &tables);
        let _ = slots[i].set(ix);
        progress();
        children[i].par_iter().for_each(|&(c, d)| {
            let t = self.rollup(&tables, &self.lattice.node(first + c), d);
            self.visit(first, c, t, children, slots, progress);
        });
    }
}
