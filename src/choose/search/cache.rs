//! Evaluations for a generator (PBG-EA): each node evaluated once, by roll-up from the cheapest
//! cached finer node, so that a search touches the rows only for the bottom node.

use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::Result;
use crate::evaluate::{Evaluator, NodeTables};
use crate::indices::NodeIndices;
use crate::lattice::Node;

/// Cached cells at most (16 bytes each): bounds the memory a search keeps for roll-ups.
const CELL_BUDGET: usize = 1 << 22;

/// Node evaluations made so far, and the cell tables kept to roll new nodes up from.
pub(crate) struct EvaluationCache<'a> {
    ev: &'a Evaluator,
    indices: HashMap<Node, NodeIndices>,
    tables: Vec<(Node, Arc<NodeTables>)>,
    cells: usize,
}

impl<'a> EvaluationCache<'a> {
    pub(crate) fn new(ev: &'a Evaluator) -> Self {
        EvaluationCache {
            ev,
            indices: HashMap::new(),
            tables: Vec::new(),
            cells: 0,
        }
    }

    /// Unique nodes evaluated.
    pub(crate) fn evaluations(&self) -> usize {
        self.indices.len()
    }

    /// The indices of an evaluated node.
    pub(crate) fn get(&self, node: &[u8]) -> Option<&NodeIndices> {
        self.indices.get(node)
    }

    /// Evaluates every node of `nodes` not evaluated yet, in parallel. Results do not depend on the
    /// roll-up source (roll-up = direct evaluation), so they do not depend on the thread count.
    pub(crate) fn evaluate(&mut self, nodes: &[Node]) -> Result<()> {
        let mut fresh: Vec<Node> = Vec::new();
        for n in nodes {
            if !self.indices.contains_key(n) && !fresh.contains(n) {
                fresh.push(n.clone());
            }
        }
        if fresh.is_empty() {
            return Ok(());
        }
        let bottom = self.ev.lattice().bottom();
        if !self.indices.contains_key(&bottom) {
            let t = self.ev.tables(&bottom)?;
            self.indices
                .insert(bottom.clone(), self.ev.indices(&bottom, &t));
            self.admit(bottom, t);
            fresh.retain(|n| !self.indices.contains_key(n));
        }
        let sources: Vec<Option<(Node, Arc<NodeTables>)>> = fresh
            .iter()
            .map(|n| self.best(n).map(|i| self.tables[i].clone()))
            .collect();
        let done: Vec<(Node, NodeTables, NodeIndices)> = fresh
            .into_par_iter()
            .zip(sources)
            .map(|(node, source)| -> Result<_> {
                let tables = match source {
                    Some((from, src)) => self.climb(&src, &from, &node),
                    None => self.ev.tables(&node)?,
                };
                let ix = self.ev.indices(&node, &tables);
                Ok((node, tables, ix))
            })
            .collect::<Result<_>>()?;
        for (node, tables, ix) in done {
            self.indices.insert(node.clone(), ix);
            self.admit(node, tables);
        }
        Ok(())
    }

    /// Keeps `tables` for later roll-ups, evicting larger cached tables when the budget is full:
    /// small tables (coarse nodes) are the cheap sources, and a search spends most of its
    /// evaluations among them once it has left its first random nodes.
    fn admit(&mut self, node: Node, tables: NodeTables) {
        let size = tables.sens.len();
        if size > CELL_BUDGET {
            return;
        }
        while self.cells + size > CELL_BUDGET {
            let Some((i, largest)) = self
                .tables
                .iter()
                .enumerate()
                .map(|(i, (_, t))| (i, t.sens.len()))
                .max_by_key(|&(i, len)| (len, std::cmp::Reverse(i)))
            else {
                return;
            };
            if largest <= size {
                return;
            }
            self.cells -= largest;
            self.tables.remove(i);
        }
        self.cells += size;
        self.tables.push((node, Arc::new(tables)));
    }

    /// Index into `tables` of the cached finer node cheapest to roll up from (cost: classes ×
    /// levels to climb), or None when evaluating from the encoded rows costs less (a climb of
    /// many levels from a table about as large as the rows, as on wide data).
    fn best(&self, node: &[u8]) -> Option<usize> {
        // A direct evaluation touches every encoded row about twice (keys, then counts).
        let direct = self.ev.dataset().num_rows().saturating_mul(2);
        let mut best: Option<(usize, usize)> = None;
        for (i, (m, t)) in self.tables.iter().enumerate() {
            if m.iter().zip(node).all(|(a, b)| a <= b) {
                let steps: usize = node.iter().zip(m).map(|(a, b)| (a - b) as usize).sum();
                let cost = t.sens.num_classes().saturating_mul(steps.max(1));
                if best.is_none_or(|(c, _)| cost < c) {
                    best = Some((cost, i));
                }
            }
        }
        best.filter(|&(cost, _)| cost <= direct).map(|(_, i)| i)
    }

    /// Rolls `tables` of node `from` up to `to`, one level of one QI at a time.
    fn climb(&self, tables: &NodeTables, from: &[u8], to: &[u8]) -> NodeTables {
        let mut at = from.to_vec();
        let mut current = tables.clone();
        for d in 0..to.len() {
            while at[d] < to[d] {
                at[d] += 1;
                current = self.ev.rollup(&current, &at, d);
            }
        }
        current
    }
}
