//! Loss metrics of a node besides GLM (SPEC §7): precision and non-uniform entropy. Each is a
//! per-level sum prepared once from the leaf counts, plus a term for suppressed classes.

use crate::encode::Dataset;

/// Non-uniform entropy (Gionis & Tassa): a tuple whose value v of QI q is generalized to g loses
/// −log2(c_q(v) / c_q(g)) bits; suppressed, it loses −log2(c_q(v) / N).
#[derive(Debug, Clone)]
pub struct NuEntropy {
    /// `base[d][l]`: Σ over tuples of the loss of QI d at level l, nothing suppressed.
    base: Vec<Vec<f64>>,
    /// `suppressed[d][l][g]`: what a tuple of group g at level l loses more when suppressed:
    /// log2 N − log2 c_q(g).
    suppressed: Vec<Vec<Vec<f64>>>,
}

impl NuEntropy {
    /// The tables of `dataset` (c_q counts tuples, weights included).
    pub fn new(dataset: &Dataset) -> Self {
        let log2_n = (dataset.num_tuples().max(1) as f64).log2();
        let mut base = Vec::with_capacity(dataset.qis.len());
        let mut suppressed = Vec::with_capacity(dataset.qis.len());
        for q in &dataset.qis {
            let mut b = Vec::new();
            let mut s = Vec::new();
            for level in q.hierarchy.levels() {
                let mut in_group = vec![0u64; level.labels.len()];
                for (&rows, &g) in q.leaf_rows.iter().zip(&level.group_of_leaf) {
                    in_group[g as usize] += rows;
                }
                let log2_group: Vec<f64> = in_group
                    .iter()
                    .map(|&c| if c == 0 { 0.0 } else { (c as f64).log2() })
                    .collect();
                b.push(
                    q.leaf_rows
                        .iter()
                        .zip(&level.group_of_leaf)
                        .filter(|(rows, _)| **rows > 0)
                        .map(|(&rows, &g)| {
                            rows as f64 * (log2_group[g as usize] - (rows as f64).log2())
                        })
                        .sum(),
                );
                s.push(log2_group.iter().map(|x| log2_n - x).collect());
            }
            base.push(b);
            suppressed.push(s);
        }
        NuEntropy { base, suppressed }
    }

    /// The node's loss with nothing suppressed: a lower bound of its `nu_entropy` that never
    /// decreases at coarser nodes.
    pub fn base(&self, node: &[u8]) -> f64 {
        node.iter()
            .enumerate()
            .map(|(d, &l)| self.base[d][l as usize])
            .sum()
    }

    /// Per QI, what one suppressed tuple of each group at `node`'s level adds to the base.
    pub fn suppressed_extra(&self, node: &[u8]) -> Vec<&[f64]> {
        node.iter()
            .enumerate()
            .map(|(d, &l)| self.suppressed[d][l as usize].as_slice())
            .collect()
    }
}

/// Precision (Sweeney): (R · Σ_q level_q / H_q + S · Q) / (N · Q) for R released and S suppressed
/// of N tuples over Q QIs of heights H_q.
pub fn precision(node: &[u8], heights: &[u8], released: u64, suppressed: u64) -> f64 {
    let q = node.len() as f64;
    let n = (released + suppressed) as f64;
    if n == 0.0 || q == 0.0 {
        return 0.0;
    }
    let per_tuple: f64 = node
        .iter()
        .zip(heights)
        .map(|(&l, &h)| if h == 0 { 0.0 } else { l as f64 / h as f64 })
        .sum();
    (released as f64 * per_tuple + suppressed as f64 * q) / (n * q)
}
