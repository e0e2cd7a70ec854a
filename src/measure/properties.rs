//! Per-tuple property vectors of a node (DBSEC Definition 1): class size, count of the tuple's
//! sensitive value in its class, GLM loss, re-identification risk and CM penalty, in input row
//! order.

use roaring::RoaringBitmap;

use crate::classes::{ClassCells, EquivalenceClasses};
use crate::error::Result;
use crate::evaluate::Evaluator;
use crate::indices::NodeIndices;

/// The property vectors of one node (suppressed tuples valued as SPEC §2 says).
#[derive(Debug, Clone, PartialEq)]
pub struct PropertyVectors {
    /// P_equiv: size of the tuple's class (N when suppressed).
    pub p_equiv: Vec<u64>,
    /// P_sens: count of the tuple's sensitive value in its class (in the whole table when suppressed).
    pub p_sens: Vec<u64>,
    /// Per-tuple GLM loss (1 per QI when suppressed).
    pub p_glm: Vec<f64>,
    /// Per-tuple re-identification risk: 1 / class size (0 when suppressed).
    pub p_risk: Vec<f64>,
    /// Per-tuple CM penalty (with a class attribute).
    pub p_cm: Option<Vec<u8>>,
}

/// A node evaluated down to its rows: indices, classes with members, suppressed rows, vectors.
#[derive(Debug, Clone)]
pub struct RowEvaluation {
    /// The node's indices.
    pub indices: NodeIndices,
    /// Its equivalence classes (all, released or not).
    pub classes: EquivalenceClasses,
    /// Rows removed by the suppression rule.
    pub suppressed: RoaringBitmap,
}

impl Evaluator {
    /// Evaluates `node` with class membership: which rows are suppressed.
    pub fn evaluate_rows(&self, node: &[u8]) -> Result<RowEvaluation> {
        self.dataset().require_rows("row membership")?;
        let tables = self.tables(node)?;
        let indices = self.indices(node, &tables);
        let ds = self.dataset();
        let classes =
            EquivalenceClasses::build(&ds.qis, node, &self.node_keys(node), ds.num_rows())?;
        // Classes and cell runs are both in class-key order, so they align index by index.
        let removal = self.suppression_of(&tables.sens, indices.threshold);
        let mut suppressed = RoaringBitmap::new();
        for i in 0..classes.len() {
            if removal.removes(i, classes.members(i).len()) {
                suppressed |= classes.members(i);
            }
        }
        Ok(RowEvaluation {
            indices,
            classes,
            suppressed,
        })
    }

    /// The property vectors of `node`.
    pub fn property_vectors(&self, node: &[u8]) -> Result<(NodeIndices, PropertyVectors)> {
        self.dataset().require_rows("property vectors")?;
        let tables = self.tables(node)?;
        let indices = self.indices(node, &tables);
        let ds = self.dataset();
        let n = ds.num_rows();
        let keys = self.node_keys(node);
        let classes = EquivalenceClasses::build(&ds.qis, node, &keys, n)?;
        // Cell runs and classes are both in class-key order, so they align index by index.
        let runs: Vec<ClassCells> = tables.sens.classes().collect();
        let sizes: Vec<u64> = runs.iter().map(|c| c.size).collect();
        let node_losses = self.node_losses(node);
        let losses: Vec<f64> = classes
            .keys()
            .iter()
            .map(|&k| self.class_loss(&keys, node, &node_losses, k))
            .collect();
        let qis = ds.qis.len() as f64;
        let removal = self.suppression_of(&tables.sens, indices.threshold);
        let mut v = PropertyVectors {
            p_equiv: Vec::with_capacity(n),
            p_sens: Vec::with_capacity(n),
            p_glm: Vec::with_capacity(n),
            p_risk: Vec::with_capacity(n),
            p_cm: None,
        };
        let sens_codes = ds.sensitive.codes.values();
        for (r, &c) in classes.row_class().iter().enumerate() {
            let c = c as usize;
            let value = sens_codes[r];
            if removal.removes(c, sizes[c]) {
                v.p_equiv.push(n as u64);
                v.p_sens.push(ds.sensitive.counts[value as usize]);
                v.p_glm.push(qis);
                v.p_risk.push(0.0);
            } else {
                let count = runs[c].count_of(value) as u64;
                v.p_equiv.push(sizes[c]);
                v.p_sens.push(count);
                v.p_glm.push(losses[c]);
                v.p_risk.push(1.0 / sizes[c] as f64);
            }
        }
        if let (Some(labels), Some(class_attr)) = (&tables.labels, &ds.class) {
            let label_runs: Vec<ClassCells> = labels.classes().collect();
            let codes = class_attr.codes.values();
            let pen = classes
                .row_class()
                .iter()
                .enumerate()
                .map(|(r, &c)| {
                    let c = c as usize;
                    if removal.removes(c, sizes[c]) {
                        return 1;
                    }
                    let run = &label_runs[c];
                    let most = run.cells().map(|x| x.count as u64).max().unwrap_or(0);
                    let mine = run.count_of(codes[r]) as u64;
                    u8::from(mine < most)
                })
                .collect();
            v.p_cm = Some(pen);
        }
        Ok((indices, v))
    }
}
