//! Node evaluation: direct (from the encoded rows) and by roll-up (from a finer node's cell
//! tables), and the sweep of the whole lattice built on roll-ups.

use std::sync::Arc;

use rayon::prelude::*;

use crate::classes::key::bits_for;
use crate::classes::{CellTable, KeyLayout};
use crate::encode::Dataset;
use crate::error::Result;
use crate::indices::NodeIndices;
use crate::lattice::{Lattice, Node};
use crate::suppression::suppression_threshold;

/// A node's cell tables: sensitive values and (with a class attribute) class labels per class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeTables {
    /// (class, sensitive value) counts.
    pub sens: CellTable,
    /// (class, class label) counts, when the profile has a class attribute.
    pub labels: Option<CellTable>,
}

/// Evaluates nodes of one encoded dataset. Cheap to share across threads.
#[derive(Debug, Clone)]
pub struct Evaluator {
    dataset: Arc<Dataset>,
    lattice: Lattice,
    layout: KeyLayout,
    sens_bits: u32,
    label_bits: u32,
    /// Σ over rows of the GLM loss of QI d at level l, before suppression: `glm_base[d][l]`.
    glm_base: Vec<Vec<f64>>,
    /// ln c for c in 0..=N, so that class entropies need no logarithm per cell.
    ln: Vec<f64>,
}

impl Evaluator {
    /// Prepares the evaluation of `dataset`'s lattice.
    pub fn new(dataset: Arc<Dataset>) -> Result<Self> {
        let names: Vec<&str> = dataset.qis.iter().map(|q| q.name.as_str()).collect();
        let leaves: Vec<usize> = dataset
            .qis
            .iter()
            .map(|q| q.hierarchy.leaf_count())
            .collect();
        let sens_n = dataset.sensitive.labels.len();
        let label_n = dataset.class.as_ref().map_or(1, |c| c.labels.len());
        let layout = KeyLayout::new(&names, &leaves, &[sens_n, label_n])?;
        let glm_base = dataset
            .qis
            .iter()
            .map(|q| {
                q.hierarchy
                    .levels()
                    .iter()
                    .map(|level| {
                        q.leaf_rows
                            .iter()
                            .zip(&level.group_of_leaf)
                            .map(|(&rows, &g)| rows as f64 * level.loss[g as usize])
                            .sum()
                    })
                    .collect()
            })
            .collect();
        let n = dataset.num_rows();
        let ln = (0..=n)
            .map(|c| if c == 0 { 0.0 } else { (c as f64).ln() })
            .collect();
        Ok(Evaluator {
            lattice: Lattice::new(dataset.heights()),
            layout,
            sens_bits: bits_for(sens_n),
            label_bits: bits_for(label_n),
            glm_base,
            ln,
            dataset,
        })
    }

    /// The dataset.
    pub fn dataset(&self) -> &Arc<Dataset> {
        &self.dataset
    }

    /// The lattice.
    pub fn lattice(&self) -> &Lattice {
        &self.lattice
    }

    /// The class-key layout.
    pub fn layout(&self) -> &KeyLayout {
        &self.layout
    }

    /// QI names in node order.
    pub fn qi_names(&self) -> Vec<&str> {
        self.dataset.qis.iter().map(|q| q.name.as_str()).collect()
    }

    /// Parses and checks a node `L1,L2,...`.
    pub fn parse_node(&self, text: &str) -> Result<Node> {
        self.lattice.parse(text, &self.qi_names())
    }

    /// Direct evaluation: the node's cell tables from the rows.
    pub fn tables(&self, node: &[u8]) -> Result<NodeTables> {
        self.lattice.check(node, &self.qi_names())?;
        let ds = &self.dataset;
        let sens = CellTable::from_rows(
            &ds.qis,
            node,
            &self.layout,
            &ds.sensitive.codes,
            self.sens_bits,
        )?;
        let labels = match &ds.class {
            Some(c) => Some(CellTable::from_rows(
                &ds.qis,
                node,
                &self.layout,
                &c.codes,
                self.label_bits,
            )?),
            None => None,
        };
        Ok(NodeTables { sens, labels })
    }

    /// Roll-up: the tables of `node`, one level above `parent` in QI `d`, from `parent`'s tables.
    pub fn rollup(&self, parent: &NodeTables, node: &[u8], d: usize) -> NodeTables {
        let up = &self.dataset.qis[d].hierarchy.level(node[d] - 1).up;
        NodeTables {
            sens: parent.sens.rollup(&self.layout, d, up),
            labels: parent
                .labels
                .as_ref()
                .map(|t| t.rollup(&self.layout, d, up)),
        }
    }

    /// Evaluates one node directly from the rows.
    pub fn evaluate(&self, node: &[u8]) -> Result<NodeIndices> {
        let tables = self.tables(node)?;
        Ok(self.indices(node, &tables))
    }

    /// GLM loss of one tuple of the class `class_key` at `node` (sum over QIs).
    pub fn class_loss(&self, node: &[u8], class_key: u64) -> f64 {
        self.dataset
            .qis
            .iter()
            .enumerate()
            .map(|(d, q)| q.hierarchy.level(node[d]).loss[self.layout.code(class_key, d) as usize])
            .sum()
    }

    /// The suppression threshold j of a node's classes (classes of size ≤ j are suppressed).
    pub fn threshold(&self, tables: &NodeTables) -> u64 {
        let eta = self.dataset.eta;
        let mut small = Vec::new();
        let mut max_size = 0;
        for class in tables.sens.classes() {
            let size: u64 = class.iter().map(|c| c.count).sum();
            max_size = max_size.max(size);
            if size <= eta {
                small.push(size);
            }
        }
        suppression_threshold(&mut small, eta, max_size)
    }

    /// Every index of `node` from its cell tables, under the suppression rule.
    pub fn indices(&self, node: &[u8], tables: &NodeTables) -> NodeIndices {
        let j = self.threshold(tables);
        let n = self.dataset.num_rows() as u64;
        let totals = &self.dataset.sensitive.counts;
        let qis = self.dataset.qis.len() as f64;
        let sens = &tables.sens;
        let mut out = NodeIndices {
            node: node.to_vec(),
            classes: 0,
            k: u64::MAX,
            max_class: 0,
            l_distinct: u64::MAX,
            l_entropy: f64::INFINITY,
            l_probabilistic: f64::INFINITY,
            suppressed: 0,
            glm: 0.0,
            s_k: 0,
            s_l: 0,
            cm: None,
            threshold: j,
        };
        let mut min_entropy = f64::INFINITY;
        let mut glm_suppressed = 0.0;
        for class in sens.classes() {
            let size: u64 = class.iter().map(|c| c.count).sum();
            if size <= j {
                out.suppressed += size;
                out.s_k += size * n;
                out.s_l += class
                    .iter()
                    .map(|c| c.count * totals[sens.value_of(c) as usize])
                    .sum::<u64>();
                glm_suppressed +=
                    size as f64 * (qis - self.class_loss(node, sens.class_of(&class[0])));
                continue;
            }
            out.classes += 1;
            out.k = out.k.min(size);
            out.max_class = out.max_class.max(size);
            out.l_distinct = out.l_distinct.min(class.len() as u64);
            out.s_k += size * size;
            let mut sum_clnc = 0.0;
            let mut most = 0;
            for c in class {
                out.s_l += c.count * c.count;
                sum_clnc += c.count as f64 * self.ln[c.count as usize];
                most = most.max(c.count);
            }
            // A class with one sensitive value has entropy exactly 0 (no rounding noise).
            let entropy = if class.len() == 1 {
                0.0
            } else {
                (self.ln[size as usize] - sum_clnc / size as f64).max(0.0)
            };
            min_entropy = min_entropy.min(entropy);
            out.l_probabilistic = out.l_probabilistic.min(size as f64 / most as f64);
        }
        out.l_entropy = min_entropy.exp();
        out.glm = node
            .iter()
            .enumerate()
            .map(|(d, &l)| self.glm_base[d][l as usize])
            .sum::<f64>()
            + glm_suppressed;
        out.cm = tables.labels.as_ref().map(|labels| {
            let mut penalties = 0u64;
            for class in labels.classes() {
                let size: u64 = class.iter().map(|c| c.count).sum();
                if size <= j {
                    penalties += size;
                } else {
                    let most = class.iter().map(|c| c.count).max().unwrap_or(0);
                    let majority: u64 = class
                        .iter()
                        .filter(|c| c.count == most)
                        .map(|c| c.count)
                        .sum();
                    penalties += size - majority;
                }
            }
            penalties as f64 / n as f64
        });
        out
    }

    /// Evaluates every node of the lattice, rank by rank: the bottom directly, every other node by
    /// roll-up from the predecessor with the smallest table, nodes of a rank in parallel.
    /// `progress` is called once per evaluated node. Results are in lattice index order.
    pub fn evaluate_lattice(&self, progress: &(dyn Fn() + Sync)) -> Result<Vec<NodeIndices>> {
        let size = self.lattice.size();
        let max_rank: usize = self.lattice.heights().iter().map(|&h| h as usize).sum();
        let mut by_rank: Vec<Vec<usize>> = vec![Vec::new(); max_rank + 1];
        for i in 0..size {
            let rank: usize = self.lattice.node(i).iter().map(|&l| l as usize).sum();
            by_rank[rank].push(i);
        }
        let mut results: Vec<Option<NodeIndices>> = vec![None; size];
        let bottom = self.lattice.bottom();
        let tables = self.tables(&bottom)?;
        results[0] = Some(self.indices(&bottom, &tables));
        progress();
        let mut previous: Vec<Option<NodeTables>> = vec![None; size];
        previous[0] = Some(tables);
        for rank in by_rank.iter().skip(1) {
            let done: Vec<(usize, NodeTables, NodeIndices)> = rank
                .par_iter()
                .map(|&i| {
                    let node = self.lattice.node(i);
                    let (parent, d) = self.smallest_parent(&node, &previous);
                    let tables = self.rollup(parent, &node, d);
                    let indices = self.indices(&node, &tables);
                    progress();
                    (i, tables, indices)
                })
                .collect();
            let mut current: Vec<Option<NodeTables>> = vec![None; size];
            for (i, tables, indices) in done {
                current[i] = Some(tables);
                results[i] = Some(indices);
            }
            previous = current;
        }
        Ok(results.into_iter().flatten().collect())
    }

    /// The predecessor (one level lower in one QI) with the fewest cells, and that QI.
    fn smallest_parent<'t>(
        &self,
        node: &[u8],
        previous: &'t [Option<NodeTables>],
    ) -> (&'t NodeTables, usize) {
        let mut best: Option<(&NodeTables, usize)> = None;
        let mut parent = node.to_vec();
        for d in 0..node.len() {
            if node[d] == 0 {
                continue;
            }
            parent[d] -= 1;
            if let Some(t) = previous[self.lattice.index(&parent)].as_ref()
                && best.is_none_or(|(b, _)| t.sens.len() < b.sens.len())
            {
                best = Some((t, d));
            }
            parent[d] += 1;
        }
        // Every node above the bottom has a predecessor in the previous rank.
        best.expect("a node of rank > 0 has a predecessor")
    }
}
