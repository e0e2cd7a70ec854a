//! Node evaluation: direct (from the encoded rows) and by roll-up (from a finer node's cell
//! tables), and the sweep of the whole lattice built on roll-ups.

use std::sync::Arc;

use crate::classes::{CellTable, ClassKeys, NodeKeys};
use crate::encode::Dataset;
use crate::encode::packed::bits_for;
use crate::error::Result;
use crate::lattice::{Lattice, Node};

pub use probe::Probed;
pub use suppression::Suppression;

mod index_pass;
pub mod json;
pub mod lattice;
mod probe;
mod singletons;
mod suppression;
mod sweep;
mod tables;

/// The class keys of a dataset's QIs, whose cells also hold `sens_values` sensitive codes (or
/// masks) and the class labels: packed when they fit, first rows otherwise.
fn class_keys(ds: &Dataset, sens_values: usize) -> ClassKeys {
    let (names, groups, values) = key_domains(ds, sens_values);
    ClassKeys::new(&names, groups, &values)
}

/// The number of groups at every level of every QI: `groups[d][l]`.
fn level_groups(ds: &Dataset) -> Vec<Vec<usize>> {
    ds.qis
        .iter()
        .map(|q| {
            q.hierarchy
                .levels()
                .iter()
                .map(|l| l.labels.len())
                .collect()
        })
        .collect()
}

/// QI names, the group count of every QI's levels, and the value domains of the cells.
fn key_domains(ds: &Dataset, sens_values: usize) -> (Vec<&str>, Vec<Vec<usize>>, Vec<usize>) {
    let names: Vec<&str> = ds.qis.iter().map(|q| q.name.as_str()).collect();
    let label_n = ds.class.as_ref().map_or(1, |c| c.labels.len());
    (names, level_groups(ds), vec![sens_values, label_n])
}

/// Counts whose logarithm is cached. A cell of a class holds more rows only in the few largest
/// classes; filling a cache of 2^20 logarithms took 0.03 s of every run over 3 M rows, on one
/// core, between pass 1 and the search.
const LN_CACHE: usize = 1 << 16;

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
    keys: ClassKeys,
    sens_bits: u32,
    label_bits: u32,
    /// Σ over rows of the GLM loss of QI d at level l, before suppression: `glm_base[d][l]`.
    glm_base: Vec<Vec<f64>>,
    /// ln c for c in 0..=min(N, [`LN_CACHE`]), so that class entropies need no logarithm per
    /// cell.
    ln: Vec<f64>,
    /// The input's sensitive distribution, for the distances of classes from it.
    model: Arc<crate::distribution::SensitiveModel>,
    /// Non-uniform entropy per QI and level.
    nu: Arc<crate::loss::NuEntropy>,
    /// Height of every QI's hierarchy.
    heights: Vec<u8>,
    /// Which distances the index pass computes ([`crate::distribution::Wanted`]).
    distances: u8,
    /// Whether the index pass computes entropy and probabilistic l and S_l (NaN otherwise).
    entropy: bool,
    /// All-zero value codes, set for an evaluator that ignores the sensitive attribute.
    class_only: Option<Arc<arrow::array::UInt32Array>>,
    /// Sensitive cell tables hold each class's set of values as a bit mask (one cell per class).
    sens_mask: bool,
    /// Which classes a node suppresses (the profile's, unless [`Self::with_rule`] set another).
    rule: crate::suppression::SuppressionRule,
    /// The suppression limit η in tuples (the dataset's, unless
    /// [`Self::with_suppression_limit`] set another).
    eta: u64,
    /// Row parts for probes, built on first use and shared by the evaluator's variants.
    row_parts: Arc<std::sync::OnceLock<Vec<probe::RowParts>>>,
}

impl Evaluator {
    /// Prepares the evaluation of `dataset`'s lattice.
    pub fn new(dataset: Arc<Dataset>) -> Result<Self> {
        if dataset.num_tuples() > u32::MAX as u64 {
            return Err(crate::error::PbgError::argument(
                "input",
                format!(
                    "{} tuples: the engine counts at most {} per dataset",
                    dataset.num_tuples(),
                    u32::MAX
                ),
            ));
        }
        let sens_n = dataset.sensitive.labels.len();
        let keys = class_keys(&dataset, sens_n);
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
        // Cached up to a bound so that memory does not grow with N (larger counts compute ln).
        let n = (dataset.num_tuples() as usize).min(LN_CACHE);
        let ln = (0..=n)
            .map(|c| if c == 0 { 0.0 } else { (c as f64).ln() })
            .collect();
        let model = Arc::new(crate::distribution::SensitiveModel::new(
            &dataset.sensitive.labels,
            &dataset.sensitive.counts,
            dataset
                .sensitive_hierarchy
                .as_ref()
                .map(|(h, leaves)| (h.as_ref(), leaves.as_slice())),
        ));
        let nu = Arc::new(crate::loss::NuEntropy::new(&dataset));
        Ok(Evaluator {
            lattice: Lattice::new(dataset.heights()),
            keys,
            model,
            nu,
            heights: dataset.heights(),
            distances: crate::distribution::Wanted::ALL,
            entropy: true,
            sens_bits: bits_for(sens_n),
            label_bits: bits_for(dataset.class.as_ref().map_or(1, |c| c.labels.len())),
            glm_base,
            ln,
            class_only: None,
            sens_mask: false,
            rule: dataset.profile.suppression_rule.clone(),
            eta: dataset.eta,
            row_parts: Arc::default(),
            dataset,
        })
    }

    /// The same evaluator under suppression rule `rule` (the encoded dataset is shared). Call it
    /// on a full evaluator, before [`Self::lightest`]: a lighter one may lack the sensitive
    /// counts the rule judges classes by.
    pub fn with_rule(&self, rule: crate::suppression::SuppressionRule) -> Self {
        Evaluator {
            rule,
            ..self.clone()
        }
    }

    /// The same evaluator under suppression limit `eta` tuples (the encoded dataset is shared).
    pub fn with_suppression_limit(&self, eta: u64) -> Self {
        Evaluator {
            eta,
            ..self.clone()
        }
    }

    /// The suppression limit η in tuples nodes are evaluated under.
    pub fn suppression_limit(&self) -> u64 {
        self.eta
    }

    /// Whether the cell tables hold what the rule judges a class by (a lighter evaluator's may
    /// not: see [`Self::with_rule`]).
    fn judges_classes(&self) -> bool {
        let (counts, distinct, _) = crate::indices::Index::needs(&self.rule.class_indices());
        let values = self.class_only.is_none();
        (!counts || values && !self.sens_mask) && (!distinct || values)
    }

    /// The suppression rule nodes are evaluated under.
    pub fn suppression_rule(&self) -> &crate::suppression::SuppressionRule {
        &self.rule
    }

    /// An evaluator of the same dataset whose sensitive tables keep, per equivalence class, only
    /// the set of its sensitive values (a bit mask): one cell per class, so roll-ups and index
    /// passes are several times cheaper. Meaningful indices: those of [`Self::class_only`] plus
    /// distinct l. None when the sensitive attribute has more values than fit a cell key.
    pub fn distinct_only(&self) -> Option<Self> {
        let ds = &self.dataset;
        let sens_n = ds.sensitive.labels.len();
        // A class judged by more than its distinct values needs the counts.
        let (counts, _, _) = crate::indices::Index::needs(&self.rule.class_indices());
        if sens_n > 32 || counts {
            return None;
        }
        let keys = match &self.keys {
            ClassKeys::Wide(_) => self.wide_keys(1usize << sens_n, self.keys.max_bits()),
            ClassKeys::Packed(_) => match class_keys(ds, 1usize << sens_n) {
                // Not onto the wide path for a mask: it would not pay.
                ClassKeys::Wide(_) => return None,
                packed => packed,
            },
        };
        Some(Evaluator {
            keys,
            sens_bits: sens_n as u32,
            sens_mask: true,
            class_only: None,
            ..self.clone()
        })
    }

    /// An evaluator of the same dataset that ignores the sensitive attribute: its cell tables
    /// hold one cell per equivalence class, so roll-ups and index passes are several times
    /// cheaper. Only the indices that do not involve the sensitive attribute are meaningful (k,
    /// classes, max class, suppressed, GLM, S_k, CM); searches use it when their objectives
    /// are among those.
    pub fn class_only(&self) -> Result<Self> {
        let (counts, distinct, _) = crate::indices::Index::needs(&self.rule.class_indices());
        if counts || distinct {
            // The rule judges classes by their sensitive values: keep them.
            return Ok(self.clone());
        }
        let ds = &self.dataset;
        let keys = match &self.keys {
            ClassKeys::Wide(_) => self.wide_keys(1, self.keys.max_bits()),
            ClassKeys::Packed(_) => class_keys(ds, 1),
        };
        Ok(Evaluator {
            keys,
            sens_bits: 0,
            sens_mask: false,
            class_only: Some(Arc::new(arrow::array::UInt32Array::from(vec![
                0u32;
                ds.num_rows()
            ]))),
            ..self.clone()
        })
    }

    /// The cheapest evaluator that still computes `objectives` exactly (see [`Self::lightest`]).
    pub fn for_objectives(&self, objectives: &[crate::objective::Objective]) -> Result<Self> {
        self.lightest(objectives)
    }

    /// The cheapest evaluator that computes `indices` exactly: with per-value counts (entropy and
    /// probabilistic l, S_l) and only the distances (and entropies, S_l) among them, or [`Self::distinct_only`]
    /// (distinct l), or [`Self::class_only`]. Other indices of its nodes are meaningless (the
    /// distances not asked for are NaN).
    pub fn lightest(&self, indices: &[crate::indices::Index]) -> Result<Self> {
        // What the suppression rule judges classes by is needed too.
        let mut all = indices.to_vec();
        all.extend(self.rule.class_indices());
        let indices = all.as_slice();
        let (counts, distinct, distances) = crate::indices::Index::needs(indices);
        if counts {
            use crate::indices::Index;
            let entropy = indices
                .iter()
                .any(|i| matches!(i, Index::LEntropy | Index::LProbabilistic | Index::SL));
            return Ok(Evaluator {
                distances,
                entropy,
                ..self.clone()
            });
        }
        if distinct {
            return Ok(self.distinct_only().unwrap_or_else(|| self.clone()));
        }
        self.class_only()
    }

    /// ln c, from the cache when c is small.
    #[inline]
    fn ln_count(&self, c: u64) -> f64 {
        match self.ln.get(c as usize) {
            Some(&v) => v,
            None => (c as f64).ln(),
        }
    }

    /// The input's sensitive distribution (what class distances are measured against).
    pub fn sensitive_model(&self) -> &crate::distribution::SensitiveModel {
        &self.model
    }

    /// The dataset.
    pub fn dataset(&self) -> &Arc<Dataset> {
        &self.dataset
    }

    /// The lattice.
    pub fn lattice(&self) -> &Lattice {
        &self.lattice
    }

    /// How class keys name the classes (packed codes or first rows).
    pub fn class_keys(&self) -> &ClassKeys {
        &self.keys
    }

    /// The same evaluator on the wide path whatever the QIs' widths, nodes packing their own
    /// codes only within `max_bits` (0: every node keyed by first rows): the cross-check of the
    /// packed path, and of the wide path's two kinds of nodes and the roll-ups between them.
    pub fn with_wide_keys(&self, max_bits: u32) -> Self {
        let sens = if self.sens_mask {
            1usize << self.sens_bits
        } else if self.class_only.is_some() {
            1
        } else {
            self.dataset.sensitive.labels.len()
        };
        Evaluator {
            keys: self.wide_keys(sens, max_bits),
            ..self.clone()
        }
    }

    fn wide_keys(&self, sens_values: usize, max_bits: u32) -> ClassKeys {
        let (names, groups, values) = key_domains(&self.dataset, sens_values);
        ClassKeys::wide(&names, groups, &values, max_bits)
    }

    /// The keys of `node`'s cell tables.
    pub fn node_keys(&self, node: &[u8]) -> NodeKeys {
        self.keys.at(node)
    }

    /// QI names in node order.
    pub fn qi_names(&self) -> Vec<&str> {
        self.dataset.qis.iter().map(|q| q.name.as_str()).collect()
    }

    /// Checks a node against the lattice (its QIs' names are gathered only for an error).
    pub fn check_node(&self, node: &[u8]) -> Result<()> {
        match self.lattice.fits(node) {
            true => Ok(()),
            false => self.lattice.check(node, &self.qi_names()),
        }
    }

    /// Parses and checks a node `L1,L2,...`.
    pub fn parse_node(&self, text: &str) -> Result<Node> {
        self.lattice.parse(text, &self.qi_names())
    }
}
