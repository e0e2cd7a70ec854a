//! Node evaluation: direct (from the encoded rows) and by roll-up (from a finer node's cell
//! tables), and the sweep of the whole lattice built on roll-ups.

use std::collections::BTreeMap;
use std::sync::Arc;

use rayon::prelude::*;

use crate::classes::key::bits_for;
use crate::classes::{CellTable, KeyLayout};
use crate::encode::Dataset;
use crate::error::Result;
use crate::indices::NodeIndices;
use crate::lattice::{Lattice, Node};
use crate::suppression::suppression_threshold;

/// The class-key layout of a dataset's QIs, whose cells also hold `sens_values` sensitive codes
/// (or masks) and the class labels.
fn key_layout(ds: &Dataset, sens_values: usize) -> Result<KeyLayout> {
    let names: Vec<&str> = ds.qis.iter().map(|q| q.name.as_str()).collect();
    let leaves: Vec<usize> = ds.qis.iter().map(|q| q.hierarchy.leaf_count()).collect();
    let label_n = ds.class.as_ref().map_or(1, |c| c.labels.len());
    KeyLayout::new(&names, &leaves, &[sens_values, label_n])
}

/// Counts whose logarithm is cached.
const LN_CACHE: usize = 1 << 20;

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
    /// All-zero value codes, set for an evaluator that ignores the sensitive attribute.
    class_only: Option<Arc<arrow::array::UInt32Array>>,
    /// Sensitive cell tables hold each class's set of values as a bit mask (one cell per class).
    sens_mask: bool,
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
        let layout = key_layout(&dataset, sens_n)?;
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
        Ok(Evaluator {
            lattice: Lattice::new(dataset.heights()),
            layout,
            sens_bits: bits_for(sens_n),
            label_bits: bits_for(dataset.class.as_ref().map_or(1, |c| c.labels.len())),
            glm_base,
            ln,
            dataset,
            class_only: None,
            sens_mask: false,
        })
    }

    /// An evaluator of the same dataset whose sensitive tables keep, per equivalence class, only
    /// the set of its sensitive values (a bit mask): one cell per class, so roll-ups and index
    /// passes are several times cheaper. Meaningful indices: those of [`Self::class_only`] plus
    /// distinct l. None when the sensitive attribute has more values than fit the key.
    pub fn distinct_only(&self) -> Option<Self> {
        let ds = &self.dataset;
        let sens_n = ds.sensitive.labels.len();
        if sens_n > 32 {
            return None;
        }
        let layout = key_layout(ds, 1usize << sens_n).ok()?;
        Some(Evaluator {
            layout,
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
        let ds = &self.dataset;
        Ok(Evaluator {
            layout: key_layout(ds, 1)?,
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
        use crate::objective::Objective;
        self.lightest(
            objectives
                .iter()
                .any(|o| matches!(o, Objective::LEntropy | Objective::SL)),
            objectives.contains(&Objective::L),
        )
    }

    /// The cheapest evaluator for indices that need the per-value sensitive counts
    /// (`value_counts`: entropy l, probabilistic l, S_l) or only distinct l (`distinct`): a clone,
    /// [`Self::distinct_only`], or [`Self::class_only`].
    pub fn lightest(&self, value_counts: bool, distinct: bool) -> Result<Self> {
        if value_counts {
            return Ok(self.clone());
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
            self.class_only.as_deref().unwrap_or(&ds.sensitive.codes),
            self.sens_bits,
            ds.weights.as_deref(),
            self.sens_mask,
        )?;
        let labels = match &ds.class {
            Some(c) => Some(CellTable::from_rows(
                &ds.qis,
                node,
                &self.layout,
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

    /// Per QI, the GLM loss of each group at `node`'s level (for [`Self::class_loss`]).
    pub fn node_losses(&self, node: &[u8]) -> Vec<&[f64]> {
        self.dataset
            .qis
            .iter()
            .zip(node)
            .map(|(q, &l)| q.hierarchy.level(l).loss.as_slice())
            .collect()
    }

    /// GLM loss of one tuple of the class `class_key` (sum over QIs), given the node's
    /// [`Self::node_losses`].
    #[inline]
    pub fn class_loss(&self, losses: &[&[f64]], class_key: u64) -> f64 {
        losses
            .iter()
            .enumerate()
            .map(|(d, l)| l[self.layout.code(class_key, d) as usize])
            .sum()
    }

    /// Every index of `node` from its cell tables, under the suppression rule.
    ///
    /// One integer pass over the sensitive cells gives each class's size, distinct values and
    /// Σ count², folded into one accumulator for the classes larger than η (never suppressed) and
    /// one per size below; the threshold j then comes from the per-size tuple counts. Entropy and
    /// probabilistic l need a second pass only when no released class has a single sensitive
    /// value (then both are exactly 1), and the GLM of suppressed classes only when j > 0: on
    /// adult that skips logarithms for 93 % of the cells of the lattice.
    pub fn indices(&self, node: &[u8], tables: &NodeTables) -> NodeIndices {
        BY_SIZE.with_borrow_mut(|by_size| self.indices_with(node, tables, by_size))
    }

    /// [`Self::indices`] with a per-thread buffer of per-size accumulators: only the sizes a node
    /// touches are read and reset, so no per-node allocation or full scan.
    fn indices_with(&self, node: &[u8], tables: &NodeTables, scratch: &mut BySize) -> NodeIndices {
        let eta = self.dataset.eta;
        let n = self.dataset.num_tuples();
        let sens = &tables.sens;
        scratch.prepare(eta);
        let pass = self.size_pass(sens, scratch);
        let sizes = scratch.drain_sorted();
        let j = suppression_threshold(
            sizes.iter().map(|(s, a)| (*s, s * a.classes)),
            eta,
            pass.max_size,
        );
        // Released = the big classes and every size above j; the rest is suppressed.
        let mut released = pass.big;
        let mut suppressed = 0;
        let mut s_l = pass.sum_sq;
        let mut s_k = pass.sum_size_sq;
        for &(size, acc) in &sizes {
            if size <= j {
                suppressed += size * acc.classes;
                s_k -= size * size * acc.classes;
            } else {
                released.classes += acc.classes;
                released.min_size = released.min_size.min(size);
                released.max_size = released.max_size.max(size);
                released.min_distinct = released.min_distinct.min(acc.min_distinct);
            }
        }
        s_k += suppressed * n;
        // A released class with one sensitive value has entropy 0 and max frequency 1: both l
        // are then exactly 1 (mask tables carry no per-value counts and report 1 as well).
        let shape_needed = released.min_distinct > 1 && !sens.is_mask();
        // Suppressed tuples count their value's frequency in the whole table in S_l.
        let (min_entropy, min_prob, glm_suppressed, sum_tot, sum_sq) = if shape_needed || j > 0 {
            self.shape_pass(node, sens, j, shape_needed)
        } else {
            (f64::INFINITY, f64::INFINITY, 0.0, 0, 0)
        };
        s_l = s_l - sum_sq + sum_tot;
        let (l_entropy, l_probabilistic) = if shape_needed || released.classes == 0 {
            (min_entropy.exp(), min_prob)
        } else {
            (1.0, 1.0)
        };
        let cm = tables.labels.as_ref().map(|labels| {
            let mut penalties = 0u64;
            for class in labels.classes() {
                let size = class.size;
                if size <= j {
                    penalties += size;
                } else {
                    let most = class.cells().map(|c| c.count as u64).max().unwrap_or(0);
                    let majority: u64 = class
                        .cells()
                        .filter(|c| c.count as u64 == most)
                        .map(|c| c.count as u64)
                        .sum();
                    penalties += size - majority;
                }
            }
            penalties as f64 / n as f64
        });
        let base: f64 = node
            .iter()
            .enumerate()
            .map(|(d, &l)| self.glm_base[d][l as usize])
            .sum();
        NodeIndices {
            node: node.to_vec(),
            classes: released.classes,
            k: released.min_size,
            max_class: released.max_size,
            l_distinct: released.min_distinct,
            l_entropy,
            l_probabilistic,
            suppressed,
            glm: base + glm_suppressed,
            s_k,
            s_l,
            cm,
            threshold: j,
        }
    }

    /// The integer pass over a node's classes (size, distinct values, Σ count²), into `scratch` by
    /// size for classes of at most η tuples.
    fn size_pass(&self, sens: &CellTable, scratch: &mut BySize) -> SizePass {
        let eta = self.dataset.eta;
        let mut pass = SizePass {
            big: Released::EMPTY,
            max_size: 0,
            sum_sq: 0,
            sum_size_sq: 0,
        };
        pass.sum_sq = sens.sum_sq();
        for (size, distinct) in sens.sizes() {
            pass.max_size = pass.max_size.max(size);
            pass.sum_size_sq += size * size;
            if size > eta {
                let b = &mut pass.big;
                b.classes += 1;
                b.min_size = b.min_size.min(size);
                b.max_size = b.max_size.max(size);
                b.min_distinct = b.min_distinct.min(distinct);
            } else {
                scratch.add(size, distinct);
            }
        }
        pass
    }

    /// The pass over classes that needs logarithms, keys or cells: the smallest entropy and
    /// size / most-frequent-count over classes larger than `j` (when `shape`), and for the
    /// classes of at most `j` tuples the GLM their suppression loses and Σ count × the value's
    /// count in the whole table (their part of S_l).
    fn shape_pass(
        &self,
        node: &[u8],
        sens: &CellTable,
        j: u64,
        shape: bool,
    ) -> (f64, f64, f64, u64, u64) {
        let qis = self.dataset.qis.len() as f64;
        let totals = &self.dataset.sensitive.counts;
        let mut min_entropy = f64::INFINITY;
        let mut min_prob = f64::INFINITY;
        let mut glm = 0.0;
        let (mut sum_tot, mut sum_sq) = (0, 0);
        let losses = self.node_losses(node);
        for i in 0..sens.num_classes() {
            let size = sens.class_size(i);
            if size > j && !shape {
                continue;
            }
            let class = sens.class(i);
            if size <= j {
                glm += size as f64 * (qis - self.class_loss(&losses, class.key));
                if !sens.is_mask() {
                    // Suppressed: count the value's frequency in the table instead of the class.
                    for c in class.cells() {
                        let count = c.count as u64;
                        sum_tot += count * totals[c.value as usize];
                        sum_sq += count * count;
                    }
                }
            } else if shape {
                let mut sum_clnc = 0.0;
                let mut most = 0;
                let mut distinct = 0;
                for c in class.cells() {
                    let count = c.count as u64;
                    sum_clnc += count as f64 * self.ln_count(count);
                    most = most.max(count);
                    distinct += 1;
                }
                // A class with one sensitive value has entropy exactly 0 (no rounding noise).
                let entropy = if distinct == 1 {
                    0.0
                } else {
                    (self.ln_count(size) - sum_clnc / size as f64).max(0.0)
                };
                min_entropy = min_entropy.min(entropy);
                min_prob = min_prob.min(size as f64 / most as f64);
            }
        }
        (min_entropy, min_prob, glm, sum_tot, sum_sq)
    }

    /// Evaluates every node of the lattice depth first over a spanning tree: the bottom directly,
    /// every other node rolled up from its tree parent — the predecessor with the fewest possible
    /// classes (product of its group counts), the cheapest to roll up in expectation, with a
    /// small bias toward rolling up a low field of the class key (fewer blocks to sort) —
    /// children of a node in parallel. Only the tables on the active paths are alive, so memory
    /// stays bounded by threads × height × the largest table, and each parent table is still in
    /// cache when its children read it. `progress` is called once per evaluated node. Results are
    /// in lattice index order.
    pub fn evaluate_lattice(&self, progress: &(dyn Fn() + Sync)) -> Result<Vec<NodeIndices>> {
        let size = self.lattice.size();
        let groups: Vec<Vec<f64>> = self
            .dataset
            .qis
            .iter()
            .map(|q| {
                q.hierarchy
                    .levels()
                    .iter()
                    .map(|l| l.labels.len() as f64)
                    .collect()
            })
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
                let e = estimate(&parent) + 0.3 * (self.layout.shift(d) as f64);
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

thread_local! {
    /// Per-size accumulators reused across the nodes a thread evaluates.
    static BY_SIZE: std::cell::RefCell<BySize> = std::cell::RefCell::new(BySize::default());
}

/// Sizes up to which per-size accumulators are a dense array (larger small classes are rare).
const DENSE_SIZES: u64 = 4096;

/// What the integer pass over a node's cells yields besides the per-size accumulators.
struct SizePass {
    /// The classes larger than η, never suppressed.
    big: Released,
    /// The largest class.
    max_size: u64,
    /// Σ count² over every cell.
    sum_sq: u64,
    /// Σ size² over every class.
    sum_size_sq: u64,
}

/// Aggregates of released classes.
#[derive(Debug, Clone, Copy)]
struct Released {
    classes: u64,
    min_size: u64,
    max_size: u64,
    min_distinct: u64,
}

impl Released {
    const EMPTY: Released = Released {
        classes: 0,
        min_size: u64::MAX,
        max_size: 0,
        min_distinct: u64::MAX,
    };
}

/// Aggregates of the classes of one size.
#[derive(Debug, Clone, Copy)]
struct SizeAcc {
    classes: u64,
    min_distinct: u64,
}

impl SizeAcc {
    const EMPTY: SizeAcc = SizeAcc {
        classes: 0,
        min_distinct: u64::MAX,
    };
}

/// Per-size accumulators of the classes of at most η tuples: a dense array over sizes up to
/// min(η, [`DENSE_SIZES`]) (sized by [`Self::prepare`], so adding has no branch), a map above.
/// Empty between nodes.
#[derive(Default)]
struct BySize {
    dense: Vec<SizeAcc>,
    sparse: BTreeMap<u64, SizeAcc>,
}

impl BySize {
    /// Makes room for the dense sizes of a dataset with suppression limit `eta`.
    fn prepare(&mut self, eta: u64) {
        let len = eta.min(DENSE_SIZES) as usize + 1;
        if self.dense.len() < len {
            self.dense.resize(len, SizeAcc::EMPTY);
        }
    }

    #[inline(always)]
    fn add(&mut self, size: u64, distinct: u64) {
        let acc = match self.dense.get_mut(size as usize) {
            Some(acc) => acc,
            None => self.sparse.entry(size).or_insert(SizeAcc::EMPTY),
        };
        acc.classes += 1;
        acc.min_distinct = acc.min_distinct.min(distinct);
    }

    /// The accumulated sizes in ascending order, leaving the buffer empty.
    fn drain_sorted(&mut self) -> Vec<(u64, SizeAcc)> {
        let mut out: Vec<(u64, SizeAcc)> = Vec::new();
        for (s, acc) in self.dense.iter_mut().enumerate() {
            if acc.classes > 0 {
                out.push((s as u64, std::mem::replace(acc, SizeAcc::EMPTY)));
            }
        }
        out.extend(std::mem::take(&mut self.sparse));
        out
    }
}
