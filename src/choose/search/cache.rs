//! Evaluations for a generator (PBG-EA) or the pruned pick: each node evaluated once, by roll-up
//! from the cheapest cached finer node, so that a search touches the rows only for the bottom
//! node; a node below one with more than η singleton tuples is not evaluated at all when its
//! wanted indices follow from that ([`SingletonIndices`]), nor, for a user that requires
//! `k >= K`, one whose probe shows more than η tuples in classes smaller than K.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rayon::prelude::*;

use crate::classes::NodeKeys;
use crate::error::Result;
use crate::evaluate::{Evaluator, NodeTables, Probed};
use crate::indices::{Index, NodeIndices, SingletonIndices};
use crate::lattice::Node;

/// Cached cells at most (16 bytes each): bounds the memory a search keeps for roll-ups.
const CELL_BUDGET: usize = 1 << 22;

/// Node evaluations made so far, and the cell tables kept to roll new nodes up from.
pub(crate) struct EvaluationCache<'a> {
    ev: &'a Evaluator,
    indices: HashMap<Node, NodeIndices>,
    tables: Vec<(Node, Arc<NodeTables>)>,
    cells: usize,
    /// Whether the wanted indices follow from singleton tuples (set by [`Self::wanting`]).
    imply: bool,
    /// Nodes with more than η singleton tuples, none below another: every node below one of them
    /// has its [`SingletonIndices`].
    singleton_rich: Vec<Node>,
    /// Nodes whose indices were implied rather than evaluated.
    implied: HashMap<Node, SingletonIndices>,
    /// Coarser nodes evaluated only to look for singleton tuples ([`Self::probe_covers`]).
    probed: HashSet<Node>,
    /// The K of a `k >= K` its user requires ([`Self::failing_k`]).
    fails_below: Option<u64>,
    /// Nodes a probe showed failing `k >= K`, none below another: every node below one fails too.
    failing: Vec<Node>,
    /// Nodes a probe showed failing (each counts as an evaluation).
    failed: usize,
}

impl<'a> EvaluationCache<'a> {
    pub(crate) fn new(ev: &'a Evaluator) -> Self {
        EvaluationCache {
            ev,
            indices: HashMap::new(),
            tables: Vec::new(),
            cells: 0,
            imply: false,
            singleton_rich: Vec::new(),
            implied: HashMap::new(),
            probed: HashSet::new(),
            fails_below: None,
            failing: Vec::new(),
            failed: 0,
        }
    }

    /// A cache whose user requires `k >= K` (`k`): a node whose probe shows more than η tuples in
    /// classes of fewer than K tuples is only noted as failing ([`Self::fails_k`]), not evaluated.
    pub(crate) fn failing_k(self, k: Option<u64>) -> Self {
        EvaluationCache {
            fails_below: k.filter(|&k| k > 1),
            ..self
        }
    }

    /// Whether `node` is known to fail the `k >= K` of [`Self::failing_k`] without its indices:
    /// it is below (or is) a node a probe showed failing.
    pub(crate) fn fails_k(&self, node: &[u8]) -> bool {
        self.failing.iter().any(|m| below(node, m))
    }

    /// A cache whose users read only `wanted` ([`Self::values`]): nodes whose values follow from
    /// a coarser node's singleton tuples are then implied, not evaluated.
    pub(crate) fn wanting(ev: &'a Evaluator, wanted: &[Index]) -> Self {
        EvaluationCache {
            imply: ev.singletons_imply(wanted),
            ..Self::new(ev)
        }
    }

    /// Unique nodes evaluated, implied or probed failing.
    pub(crate) fn evaluations(&self) -> usize {
        self.indices.len() + self.implied.len() + self.failed
    }

    /// Unique nodes whose indices were implied by a coarser node's singleton tuples.
    pub(crate) fn implied(&self) -> usize {
        self.implied.len()
    }

    /// Coarser nodes evaluated only to look for singleton tuples.
    pub(crate) fn probes(&self) -> usize {
        self.probed.len()
    }

    /// The values of `indices` at an evaluated or implied node (implied: only those given to
    /// [`Self::wanting`]).
    pub(crate) fn values(&self, node: &[u8], indices: &[Index]) -> Option<Vec<f64>> {
        if let Some(ix) = self.indices.get(node) {
            return Some(indices.iter().map(|i| i.of(ix)).collect());
        }
        let implied = self.implied.get(node)?;
        indices.iter().map(|&i| implied.value(i)).collect()
    }

    /// The evaluations that [`Self::evaluate`] of `node` alone may add to
    /// [`Self::evaluations`]: none when it is known, else one, and one more while the bottom
    /// (evaluated first, as the source of roll-ups) is not evaluated.
    pub(crate) fn cost(&self, node: &[u8]) -> usize {
        if self.known(node) {
            return 0;
        }
        let bottom_first = !node.iter().all(|&l| l == 0)
            && !self
                .indices
                .contains_key(self.ev.lattice().bottom().as_slice());
        1 + usize::from(bottom_first)
    }

    /// Whether `node` was evaluated or implied, or is known to fail ([`Self::fails_k`]).
    fn known(&self, node: &[u8]) -> bool {
        self.indices.contains_key(node) || self.implied.contains_key(node) || self.fails_k(node)
    }

    /// Whether `node` is below a node with more than η singleton tuples.
    fn below_singleton_rich(&self, node: &[u8]) -> bool {
        self.singleton_rich.iter().any(|m| below(node, m))
    }

    /// Records `node` as singleton-rich when it is, keeping only the maximal such nodes.
    fn note_singletons(&mut self, node: &[u8], ix: &NodeIndices, tables: &NodeTables) {
        // k > 1 means every singleton was suppressed, so there were at most η of them.
        if !self.imply || ix.k != 1 || self.below_singleton_rich(node) {
            return;
        }
        if Evaluator::singleton_tuples(tables) > self.ev.suppression_limit() {
            self.add_singleton_rich(node);
        }
    }

    /// Adds a node with more than η singleton tuples, keeping only the maximal ones.
    fn add_singleton_rich(&mut self, node: &[u8]) {
        if self.below_singleton_rich(node) {
            return;
        }
        self.singleton_rich.retain(|m| !below(m, node));
        self.singleton_rich.push(node.to_vec());
    }

    /// Evaluates every node of `nodes` not evaluated yet, in parallel. Results do not depend on the
    /// roll-up source (roll-up = direct evaluation), so they do not depend on the thread count.
    pub(crate) fn evaluate(&mut self, nodes: &[Node]) -> Result<()> {
        let mut fresh: Vec<Node> = Vec::new();
        for n in nodes {
            if !self.known(n) && !fresh.contains(n) {
                fresh.push(n.clone());
            }
        }
        if !self.imply {
            return self.evaluate_fresh(fresh);
        }
        // A node below another fresh one waits for it: its singleton tuples may imply the node.
        let (first, later): (Vec<Node>, Vec<Node>) = fresh
            .iter()
            .cloned()
            .partition(|n| !fresh.iter().any(|m| m != n && below(n, m)));
        self.evaluate_fresh(first)?;
        self.evaluate_fresh(later)
    }

    /// [`Self::evaluate`] of nodes not evaluated before: those implied by singleton tuples are
    /// noted as such, the others rolled up or evaluated from the rows.
    fn evaluate_fresh(&mut self, mut fresh: Vec<Node>) -> Result<()> {
        fresh.retain(|n| !self.known(n) && !self.imply_singletons(n));
        if self.imply && !fresh.is_empty() {
            self.probe_covers(&fresh)?;
            fresh.retain(|n| !self.imply_singletons(n));
        }
        if fresh.is_empty() {
            return Ok(());
        }
        let bottom = self.ev.lattice().bottom();
        if !self.indices.contains_key(&bottom) {
            let t = self.ev.tables(&bottom)?;
            let ix = self.ev.indices(&bottom, &t);
            // Evaluated now for its tables, it counts once.
            self.implied.remove(&bottom);
            self.note_singletons(&bottom, &ix, &t);
            self.indices.insert(bottom.clone(), ix);
            self.admit(bottom, t);
            fresh.retain(|n| !self.indices.contains_key(n));
        }
        let sources: Vec<Option<(Node, Arc<NodeTables>)>> = fresh
            .iter()
            .map(|n| self.best(n).map(|i| self.tables[i].clone()))
            .collect();
        // Tables, or what a probe of the node's keys settled on its way to a direct evaluation.
        let done: Vec<(Node, Outcome)> = fresh
            .into_par_iter()
            .zip(sources)
            .map(|(node, source)| -> Result<_> {
                let probed = match source {
                    Some((from, src)) => Probed::Tables(self.climb(&src, &from, &node)),
                    None if self.imply || self.fails_below.is_some() => self
                        .ev
                        .tables_unless_decided(&node, self.imply, self.fails_below)?,
                    None => Probed::Tables(self.ev.tables(&node)?),
                };
                let outcome = match probed {
                    Probed::Tables(t) => {
                        let ix = self.ev.indices(&node, &t);
                        Outcome::Evaluated(t, Box::new(ix))
                    }
                    Probed::SingletonRich => Outcome::SingletonRich,
                    Probed::FailsK => Outcome::FailsK,
                };
                Ok((node, outcome))
            })
            .collect::<Result<_>>()?;
        for (node, outcome) in done {
            match outcome {
                Outcome::Evaluated(tables, ix) => {
                    self.note_singletons(&node, &ix, &tables);
                    self.indices.insert(node.clone(), *ix);
                    self.admit(node, tables);
                }
                Outcome::SingletonRich => {
                    self.add_singleton_rich(&node);
                    let implied = self.imply_singletons(&node);
                    debug_assert!(implied, "a singleton-rich node implies its own indices");
                }
                // A batch may hold comparable nodes: keep the failing ones an antichain.
                Outcome::FailsK if self.fails_k(&node) => self.failed += 1,
                Outcome::FailsK => {
                    self.failed += 1;
                    self.failing.retain(|m| !below(m, &node));
                    self.failing.push(node);
                }
            }
        }
        Ok(())
    }

    /// Notes `node`'s [`SingletonIndices`] when they follow from a singleton-rich node above it.
    fn imply_singletons(&mut self, node: &[u8]) -> bool {
        if !self.imply || !self.below_singleton_rich(node) {
            return false;
        }
        match self.ev.singleton_indices(node) {
            Some(implied) => {
                self.implied.insert(node.to_vec(), implied);
                true
            }
            None => false,
        }
    }

    /// Looks for singleton tuples above the costliest of `fresh`: nodes keyed by first rows with
    /// no finer table to roll up from, whose direct evaluation is a hash group-by of wide keys
    /// into about as many classes as rows. The nearest coarser node that packs
    /// ([`crate::classes::ClassKeys::packed_cover`]) is evaluated instead, several times more
    /// cheaply; when it shows more than η singleton tuples ([`Evaluator::singleton_rich`]), the
    /// node (and all below the cover) is implied. A cover without them costs one pass of key
    /// gathers.
    fn probe_covers(&mut self, fresh: &[Node]) -> Result<()> {
        let mut covers: Vec<Node> = Vec::new();
        for n in fresh {
            if !matches!(self.ev.node_keys(n), NodeKeys::FirstRow) || self.best(n).is_some() {
                continue;
            }
            let Some(cover) = self.ev.class_keys().packed_cover(n) else {
                continue;
            };
            if !self.probed.contains(&cover) && !covers.contains(&cover) {
                covers.push(cover);
            }
        }
        let probed: Vec<(Node, bool)> = covers
            .into_par_iter()
            .map(|c| -> Result<_> {
                let rich = self.ev.singleton_rich(&c)?;
                Ok((c, rich))
            })
            .collect::<Result<_>>()?;
        for (cover, rich) in probed {
            if rich {
                self.add_singleton_rich(&cover);
            }
            self.probed.insert(cover);
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
        // Looking through more cached tables than the rows costs more than evaluating from the
        // rows (both per QI): on 100 QIs of 50 rows, a pick of 15 000 evaluations spent most of
        // its time here.
        if self.tables.len() > direct {
            return None;
        }
        let mut best: Option<(usize, usize)> = None;
        for (i, (m, t)) in self.tables.iter().enumerate() {
            if below(m, node) {
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

/// A fresh node's outcome: evaluated, or settled by a probe of its class keys.
enum Outcome {
    Evaluated(NodeTables, Box<NodeIndices>),
    SingletonRich,
    FailsK,
}

/// Whether node `a` is below `b` or equal to it (every level at most `b`'s).
fn below(a: &[u8], b: &[u8]) -> bool {
    a.iter().zip(b).all(|(x, y)| x <= y)
}
