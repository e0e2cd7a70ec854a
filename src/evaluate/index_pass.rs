//! The index pass: every index of a node from its cell tables, under the suppression rule.

use std::collections::BTreeMap;

use super::{Evaluator, NodeTables};
use crate::classes::CellTable;
use crate::distribution::Distances;
use crate::indices::NodeIndices;
use crate::suppression::suppression_threshold_capped;

impl Evaluator {
    /// Per QI, the GLM loss of each group at `node`'s level (for [`Self::class_loss`]).
    pub fn node_losses(&self, node: &[u8]) -> Vec<&[f64]> {
        self.dataset
            .qis
            .iter()
            .zip(node)
            .map(|(q, &l)| q.hierarchy.level(l).loss.as_slice())
            .collect()
    }

    /// GLM loss of one tuple of the class `class_key` at `node` (sum over QIs), given the
    /// node's keys ([`Self::node_keys`]) and [`Self::node_losses`].
    #[inline]
    pub fn class_loss(
        &self,
        keys: &crate::classes::NodeKeys,
        node: &[u8],
        losses: &[&[f64]],
        class_key: u64,
    ) -> f64 {
        let qis = &self.dataset.qis;
        losses
            .iter()
            .enumerate()
            .map(|(d, l)| l[keys.code(qis, node, class_key, d) as usize])
            .sum()
    }

    /// The GLM of `node`'s generalization with nothing suppressed: no larger than the node's `glm`
    /// (a suppressed tuple carries the largest loss) and never smaller at a coarser node, so a
    /// lower bound of `glm` at the node and above it, computed without evaluating anything.
    pub fn glm_bound(&self, node: &[u8]) -> f64 {
        node.iter()
            .enumerate()
            .map(|(d, &l)| self.glm_base[d][l as usize])
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
        let j = suppression_threshold_capped(
            sizes.iter().map(|(s, a)| (*s, s * a.classes)),
            eta,
            pass.max_size,
            self.dataset.profile.suppression_rule.cap(),
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
        let counts = !sens.is_mask() && self.class_only.is_none();
        let shape_needed = released.min_distinct > 1 && counts;
        let distances = counts && released.classes > 0 && self.distances != 0;
        // Suppressed tuples count their value's frequency in the whole table in S_l.
        let shape = if shape_needed || j > 0 {
            self.shape_pass(node, sens, j, shape_needed)
        } else {
            Shape::EMPTY
        };
        s_l = s_l - shape.sum_sq + shape.sum_tot;
        let (l_entropy, l_probabilistic) = if shape_needed || released.classes == 0 {
            (shape.min_entropy.exp(), shape.min_prob)
        } else {
            (1.0, 1.0)
        };
        let dist = if !counts {
            Distances::UNKNOWN
        } else if distances {
            self.distances_of(sens, j, released.max_size)
        } else {
            // No released class (each wanted distance 0), or no distance wanted.
            crate::distribution::DistanceMax::wanting(self.distances).finish(&self.model)
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
        let base = self.glm_bound(node);
        let kept = n - suppressed;
        NodeIndices {
            node: node.to_vec(),
            classes: released.classes,
            k: released.min_size,
            max_class: released.max_size,
            l_distinct: released.min_distinct,
            l_entropy,
            l_probabilistic,
            t_equal: dist.t_equal,
            t_ordered: dist.t_ordered,
            t_hierarchical: self.model.has_hierarchy().then_some(dist.t_hierarchical),
            beta: dist.beta,
            delta_disclosure: dist.delta,
            risk_average: if kept == 0 {
                0.0
            } else {
                released.classes as f64 / kept as f64
            },
            // Classes of one tuple are released only when nothing is suppressed (j = 0).
            uniques: if j == 0 {
                pass.ones as f64 / n as f64
            } else {
                0.0
            },
            suppressed,
            glm: base + shape.glm_suppressed,
            aecs: if released.classes == 0 {
                n as f64
            } else {
                kept as f64 / released.classes as f64
            },
            precision: crate::loss::precision(node, &self.heights, kept, suppressed),
            nu_entropy: self.nu.base(node) + shape.nu_suppressed,
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
            ones: 0,
        };
        pass.sum_sq = sens.sum_sq();
        for (size, distinct) in sens.sizes() {
            pass.max_size = pass.max_size.max(size);
            pass.ones += u64::from(size == 1);
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

    /// The pass over classes that needs logarithms, keys or cells: for classes larger than `j`,
    /// the smallest entropy and size / most-frequent-count (when `shape`); for the classes of at
    /// most `j` tuples, the GLM and non-uniform entropy their suppression loses and Σ count × the
    /// value's count in the whole table (their part of S_l).
    fn shape_pass(&self, node: &[u8], sens: &CellTable, j: u64, shape: bool) -> Shape {
        let qis = self.dataset.qis.len() as f64;
        let totals = &self.dataset.sensitive.counts;
        let mut out = Shape::EMPTY;
        let losses = self.node_losses(node);
        let nu_extra = self.nu.suppressed_extra(node);
        let keys = self.node_keys(node);
        let dqis = &self.dataset.qis;
        for i in 0..sens.num_classes() {
            let size = sens.class_size(i);
            if size > j && !shape {
                continue;
            }
            let class = sens.class(i);
            if size <= j {
                // One read of each QI's group gives both losses of suppressing the class.
                let (mut glm, mut nu) = (0.0, 0.0);
                for (d, (l, x)) in losses.iter().zip(&nu_extra).enumerate() {
                    let g = keys.code(dqis, node, class.key, d) as usize;
                    glm += l[g];
                    nu += x[g];
                }
                out.glm_suppressed += size as f64 * (qis - glm);
                out.nu_suppressed += size as f64 * nu;
                if !sens.is_mask() {
                    // Suppressed: count the value's frequency in the table instead of the class.
                    for c in class.cells() {
                        let count = c.count as u64;
                        out.sum_tot += count * totals[c.value as usize];
                        out.sum_sq += count * count;
                    }
                }
                continue;
            }
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
            out.min_entropy = out.min_entropy.min(entropy);
            out.min_prob = out.min_prob.min(size as f64 / most as f64);
        }
        out
    }

    /// The wanted distances of the classes larger than `j` (the largest `max_class` tuples).
    /// Single-value classes count once per value (a precomputed table); on dense tables they
    /// come first, and every other class is measured only if its values' bounds could raise the
    /// maximum ([`crate::distribution::SensitiveModel::cannot_change`]).
    fn distances_of(&self, sens: &CellTable, j: u64, max_class: u64) -> Distances {
        use crate::distribution::{DistanceMax, DistanceScratch, SingleValues};
        let model = &self.model;
        let mut dist = DistanceMax::wanting(self.distances);
        let mut scratch = DistanceScratch::default();
        let mut singles = SingleValues::default();
        let mut measure = |dist: &mut DistanceMax, i: usize, size: u64| {
            let class = sens.class(i);
            match class.histogram() {
                Some(h) => model.add_histogram(dist, h, size, &mut scratch),
                None => {
                    let cells = class.cells().map(|c| (c.value, c.count as u64));
                    model.add_class(dist, cells, size, &mut scratch);
                }
            }
        };
        match sens.value_sets() {
            Some(sets) => {
                let one = sets
                    .filter(|&(size, set)| size > j && set.is_power_of_two())
                    .fold(0u32, |a, (_, set)| a | set);
                singles.mark_set(one);
                singles.drain_into(model, &mut dist);
                if !model.settled(&dist, max_class) {
                    let (dominated, small) = model.dominated(&dist);
                    let sets = sens.value_sets().into_iter().flatten();
                    for (i, (size, set)) in sets.enumerate() {
                        let skip = size <= j
                            || set.is_power_of_two()
                            || (set & !dominated == 0 && size <= small)
                            || model.cannot_change(&dist, set, size);
                        if !skip {
                            measure(&mut dist, i, size);
                        }
                    }
                }
            }
            None => {
                for i in 0..sens.num_classes() {
                    let size = sens.class_size(i);
                    if size <= j {
                        continue;
                    }
                    match sens.single_value(i) {
                        Some(v) => singles.mark(v),
                        None => measure(&mut dist, i, size),
                    }
                }
                singles.drain_into(model, &mut dist);
            }
        }
        dist.finish(model)
    }
}

/// What [`Evaluator::shape_pass`] yields.
struct Shape {
    min_entropy: f64,
    min_prob: f64,
    glm_suppressed: f64,
    nu_suppressed: f64,
    sum_tot: u64,
    sum_sq: u64,
}

impl Shape {
    const EMPTY: Shape = Shape {
        min_entropy: f64::INFINITY,
        min_prob: f64::INFINITY,
        glm_suppressed: 0.0,
        nu_suppressed: 0.0,
        sum_tot: 0,
        sum_sq: 0,
    };
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
    /// Classes of one tuple.
    ones: u64,
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
