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
        self.lattice.enumerable("lattice size")?;
        let size = self.lattice.size();
        let groups: Vec<Vec<f64>> = super::level_groups(&self.dataset)
            .into_iter()
            .map(|g| g.into_iter().map(|n| n as f64).collect())
            .collect();
        let estimate = |node: &[u8]| -> f64 {
            node.iter()
                .enumerate()
                .map(|(d, &l)| groups[d][l as usize].ln())
                .sum()
        };
        let mut children: Vec<Vec<(usize, usize)>> = vec![Vec::new(); size];
        for i in 1..size {
            let node = self.lattice.node(i);
            let mut best: Option<(f64, usize, usize)> = None;
            let mut parent = node.clone();
            for d in 0..node.len() {
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
        let bottom = self.lattice.bottom();
        let tables = self.tables(&bottom)?;
        let slots: Vec<std::sync::OnceLock<NodeIndices>> =
            (0..size).map(|_| std::sync::OnceLock::new()).collect();
        self.visit(0, tables, &children, &slots, progress);
        let mut out = Vec::with_capacity(size);
        for slot in slots {
            // Every node has a tree parent, so the bottom reaches them all.
            out.push(slot.into_inner().expect("every node visited"));
        }
        Ok(out)
    }

    /// Evaluates node `i` from its tables, then its subtree.
    fn visit(
        &self,
        i: usize,
        tables: NodeTables,
        children: &[Vec<(usize, usize)>],
        slots: &[std::sync::OnceLock<NodeIndices>],
        progress: &(dyn Fn() + Sync),
    ) {
        let node = self.lattice.node(i);
        let ix = self.indices(&node, &tables);
        let _ = slots[i].set(ix);
        progress();
        children[i].par_iter().for_each(|&(c, d)| {
            let t = self.rollup(&tables, &self.lattice.node(c), d);
            self.visit(c, t, children, slots, progress);
        });
    }
}
