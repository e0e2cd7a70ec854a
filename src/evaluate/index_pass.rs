//! The index pass: every index of a node from its cell tables, under the suppression rule.

use std::collections::BTreeMap;

use super::{Evaluator, NodeTables, Suppression};
use crate::classes::{CellTable, Histogram};
use crate::distribution::{Distances, Parts};
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

    /// What raising QI `d` from `level` to the next adds to [`Self::glm_bound`] (its terms are
    /// per QI): one subtraction, where the bound of the raised node sums every QI again.
    pub fn glm_bound_step(&self, d: usize, level: u8) -> f64 {
        let base = &self.glm_base[d];
        base[level as usize + 1] - base[level as usize]
    }

    /// Every index of `node` from its cell tables, under the suppression rule.
    ///
    /// One integer pass over the sensitive cells gives each class's size, distinct values and
    /// Σ count², folded into one accumulator for the classes larger than η (never suppressed) and
    /// one per size below; the threshold j then comes from the per-size tuple counts, and the
    /// removed classes from [`Self::suppression_of`]. Entropy and probabilistic l need a second
    /// pass only when no released class has a single sensitive value (then both are exactly 1),
    /// and the GLM of suppressed classes only when some are: on adult that skips logarithms for
    /// 93 % of the cells of the lattice.
    pub fn indices(&self, node: &[u8], tables: &NodeTables) -> NodeIndices {
        BY_SIZE.with_borrow_mut(|by_size| self.indices_with(node, tables, by_size))
    }

    /// [`Self::indices`] with a per-thread buffer of per-size accumulators: only the sizes a node
    /// touches are read and reset, so no per-node allocation or full scan.
    fn indices_with(&self, node: &[u8], tables: &NodeTables, scratch: &mut BySize) -> NodeIndices {
        let eta = self.eta;
        let n = self.dataset.num_tuples();
        let sens = &tables.sens;
        scratch.prepare(eta);
        // Distances over a dense table: the same pass collects what they need (see `fused_pass`).
        let sets = sens
            .value_sets()
            .filter(|_| self.distances != 0 && !sens.is_mask() && self.class_only.is_none());
        let fuse = sets.is_some();
        let pass = match sets {
            Some(sets) => self.fused_pass(sens, sets, scratch),
            None => self.size_pass(sens, scratch),
        };
        let sizes = scratch.drain_sorted(pass.max_small);
        let j = suppression_threshold_capped(
            sizes.iter().map(|(s, a)| (*s, s * a.classes)),
            eta,
            pass.big.max_size.max(pass.max_small),
            self.rule.cap(),
        );
        let removal = self.suppression_of(sens, j);
        // Released = the big classes and every size above j; the rest is suppressed (or, under
        // the requirement rule, every class that passes its requirements).
        let mut released = pass.big;
        let mut singles = pass.big_singles;
        let mut suppressed = 0;
        let mut s_k = pass.big_size_sq;
        let mut ones = pass.big_ones;
        if removal.by_requirements() {
            released = Released::EMPTY;
            (s_k, ones) = (0, 0);
            for (i, (size, distinct)) in sens.sizes().enumerate() {
                if removal.removes(i, size) {
                    suppressed += size;
                } else {
                    released.add(size, distinct);
                    s_k += size * size;
                    ones += u64::from(size == 1);
                }
            }
        } else {
            for &(size, acc) in &sizes {
                if size <= j {
                    suppressed += size * acc.classes;
                } else {
                    s_k += size * size * acc.classes;
                    ones += if size == 1 { acc.classes } else { 0 };
                    released.classes += acc.classes;
                    released.min_size = released.min_size.min(size);
                    released.max_size = released.max_size.max(size);
                    released.min_distinct = released.min_distinct.min(acc.min_distinct);
                    singles |= acc.singles;
                }
            }
        }
        s_k += suppressed * n;
        // A released class with one sensitive value has entropy 0 and max frequency 1: both l
        // are then exactly 1 (mask tables carry no per-value counts and report 1 as well).
        let counts = !sens.is_mask() && self.class_only.is_none();
        let shape_needed = released.min_distinct > 1 && counts && self.entropy;
        let distances = counts && released.classes > 0 && self.distances != 0;
        // Suppressed tuples count their value's frequency in the whole table in S_l.
        let shape = if shape_needed || suppressed > 0 {
            self.shape_pass(node, sens, &removal, shape_needed)
        } else {
            Shape::EMPTY
        };
        // Without Σ count² (S_l not wanted: a lighter evaluator's), S_l is left 0.
        let s_l = if self.entropy {
            pass.sum_sq - shape.sum_sq + shape.sum_tot
        } else {
            0
        };
        let (l_entropy, l_probabilistic) = if counts && !self.entropy {
            (f64::NAN, f64::NAN)
        } else if shape_needed || released.classes == 0 {
            (shape.min_l_entropy, shape.min_prob)
        } else {
            (1.0, 1.0)
        };
        let dist = if !counts {
            Distances::UNKNOWN
        } else if distances && fuse && !removal.by_requirements() {
            self.fused_distances(
                sens,
                j,
                released.max_size,
                singles,
                &scratch.multi[..scratch.multi_len],
            )
        } else if distances {
            self.distances_of(sens, &removal)
        } else {
            // No released class (each wanted distance 0), or no distance wanted.
            crate::distribution::DistanceMax::wanting(self.distances).finish(&self.model)
        };
        let cm = tables.labels.as_ref().map(|labels| {
            let mut penalties = 0u64;
            for (i, class) in labels.classes().enumerate() {
                let size = class.size;
                if removal.removes(i, size) {
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
            // The released classes of one tuple.
            uniques: ones as f64 / n as f64,
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
        let eta = self.eta;
        let mut pass = SizePass::new(sens, self.entropy);
        for (size, distinct) in sens.sizes() {
            pass.add(scratch, eta, size, distinct, 0);
        }
        pass
    }

    /// [`Self::size_pass`] over a dense table's value `sets` that also gathers, for [`Self::fused_distances`],
    /// the values of single-value classes (per size, as the threshold is not known yet) and the
    /// indices of the other classes: the distances then need no second pass over every class (on
    /// adult's lattice, 25 M classes, of which 1.4 M are measured).
    fn fused_pass(
        &self,
        sens: &CellTable,
        sets: impl Iterator<Item = (u64, u32)>,
        scratch: &mut BySize,
    ) -> SizePass {
        let eta = self.eta;
        let mut pass = SizePass::new(sens, self.entropy);
        let mut multi = std::mem::take(&mut scratch.multi);
        if multi.len() < sens.num_classes() {
            multi.resize(sens.num_classes(), 0);
        }
        // Written without a branch on the class's kind (about half the classes of adult's
        // lattice hold one value, so a branch would be mispredicted): every class is stored at
        // the end of the list, which grows by one only for a multi-value class.
        let mut len = 0;
        for (i, (size, set)) in sets.enumerate() {
            let distinct = u64::from(crate::classes::popcount16(set));
            let one = u32::from(distinct == 1);
            let single = set & one.wrapping_neg();
            // Class indices fit 32 bits: a dataset has at most u32::MAX tuples.
            multi[len] = i as u32;
            len += (one ^ 1) as usize;
            pass.add(scratch, eta, size, distinct, single);
        }
        scratch.multi = multi;
        scratch.multi_len = len;
        pass
    }

    /// The wanted distances of the classes larger than `j` (the largest `max_class` tuples) of a
    /// dense table, from what [`Self::fused_pass`] gathered: `singles`, the values of the
    /// released single-value classes (counted once per value, from a precomputed table), and
    /// `multi`, the indices of the other classes, each measured only if its values' bounds could
    /// raise the maximum ([`crate::distribution::SensitiveModel::cannot_change`]).
    fn fused_distances(
        &self,
        sens: &CellTable,
        j: u64,
        max_class: u64,
        singles: u32,
        multi: &[u32],
    ) -> Distances {
        use crate::distribution::{DistanceMax, DistanceScratch, SensitiveModel, SingleValues};
        let model = &self.model;
        let mut dist = DistanceMax::wanting(self.distances);
        let mut one = SingleValues::default();
        one.mark_set(singles);
        one.drain_into(model, &mut dist);
        if !model.settled(&dist, max_class) {
            let mut scratch = DistanceScratch::default();
            // `cannot_change` in halves: the EMD half as a set test against values that only
            // grow (recomputed when an EMD rose), the ratio half only when β or δ is wanted.
            let ratios = SensitiveModel::wants_ratios(&dist);
            let (dominated, small) = model.dominated(&dist);
            let mut emd_dominated = model.emd_dominated(&dist);
            for &i in multi {
                let Some((size, set)) = sens.value_set(i as usize) else {
                    continue;
                };
                if size <= j {
                    continue;
                }
                let parts = Parts {
                    emd: set & !emd_dominated != 0,
                    ratios: ratios
                        && !((set & !dominated == 0 && size <= small)
                            || model.ratios_cannot_change(&dist, set, size)),
                };
                if parts.emd || parts.ratios {
                    let emd = dist.emd;
                    self.measure(&mut dist, sens, i as usize, size, &mut scratch, parts);
                    if dist.emd != emd {
                        emd_dominated = model.emd_dominated(&dist);
                    }
                }
            }
        }
        dist.finish(model)
    }

    /// Adds class `i` of `sens` (`size` tuples) to `dist`; of a dense class, only the `parts`
    /// that it can change.
    #[inline]
    pub(super) fn measure(
        &self,
        dist: &mut crate::distribution::DistanceMax,
        sens: &CellTable,
        i: usize,
        size: u64,
        scratch: &mut crate::distribution::DistanceScratch,
        parts: Parts,
    ) {
        let model = &self.model;
        let class = sens.class(i);
        match class.histogram() {
            Some(Histogram::Narrow(h)) => model.add_histogram_parts(dist, h, size, scratch, parts),
            Some(Histogram::Wide(h)) => model.add_histogram_parts(dist, h, size, scratch, parts),
            None => {
                let cells = class.cells().map(|c| (c.value, c.count as u64));
                self.model.add_class(dist, cells, size, scratch);
            }
        }
    }

    /// The pass over classes that needs logarithms, keys or cells: for the released classes, the
    /// smallest entropy, entropy l and size / most-frequent-count (when `shape`); for the classes
    /// `removal` removes, the GLM and non-uniform entropy their suppression loses and Σ count ×
    /// the value's count in the whole table (their part of S_l).
    fn shape_pass(
        &self,
        node: &[u8],
        sens: &CellTable,
        removal: &Suppression,
        shape: bool,
    ) -> Shape {
        let qis = self.dataset.qis.len() as f64;
        let totals = &self.dataset.sensitive.counts;
        let mut out = Shape::EMPTY;
        let losses = self.node_losses(node);
        let nu_extra = self.nu.suppressed_extra(node);
        let keys = self.node_keys(node);
        let dqis = &self.dataset.qis;
        // Packed keys: each QI's field, loss and non-uniform entropy side by side, so that a
        // suppressed class costs one shift, mask and two reads per QI.
        let fields: Option<Vec<PackedField<'_>>> = match &keys {
            crate::classes::NodeKeys::Packed(layout) => Some(
                losses
                    .iter()
                    .zip(&nu_extra)
                    .enumerate()
                    .map(|(d, (l, x))| (layout.shift(d), layout.mask(d), *l, *x))
                    .collect(),
            ),
            crate::classes::NodeKeys::FirstRow => None,
        };
        for i in 0..sens.num_classes() {
            let size = sens.class_size(i);
            let removed = removal.removes(i, size);
            if !removed && !shape {
                continue;
            }
            let class = sens.class(i);
            if removed {
                // One read of each QI's group gives both losses of suppressing the class.
                let (mut glm, mut nu) = (0.0, 0.0);
                match &fields {
                    Some(fields) => {
                        for &(shift, mask, l, x) in fields {
                            let g = ((class.key >> shift) & mask) as usize;
                            glm += l[g];
                            nu += x[g];
                        }
                    }
                    None => {
                        for (d, (l, x)) in losses.iter().zip(&nu_extra).enumerate() {
                            let g = keys.code(dqis, node, class.key, d) as usize;
                            glm += l[g];
                            nu += x[g];
                        }
                    }
                }
                out.glm_suppressed += size as f64 * (qis - glm);
                out.nu_suppressed += size as f64 * nu;
                if !sens.is_mask() {
                    // Suppressed: count the value's frequency in the table instead of the class
                    // (over a dense histogram without a branch: absent values add 0).
                    match class.histogram() {
                        Some(Histogram::Narrow(h)) => out.add_suppressed(h, totals),
                        Some(Histogram::Wide(h)) => out.add_suppressed(h, totals),
                        None => {
                            for c in class.cells() {
                                let count = c.count as u64;
                                out.sum_tot += count * totals[c.value as usize];
                                out.sum_sq += count * count;
                            }
                        }
                    }
                }
                continue;
            }
            let most = match class.histogram() {
                Some(h) => h.max() as u64,
                None => class.cells().map(|c| c.count as u64).max().unwrap_or(0),
            };
            out.min_prob = out.min_prob.min(size as f64 / most as f64);
            // The entropy is at least the min-entropy ln(size / most): a class whose bound is
            // above the smallest entropy so far cannot lower it (the slack covers rounding).
            let bound = self.ln_count(size) - self.ln_count(most);
            if bound - 1e-9 > out.min_entropy {
                continue;
            }
            let (entropy, l) = self.class_entropy(&class, size);
            out.min_entropy = out.min_entropy.min(entropy);
            out.min_l_entropy = out.min_l_entropy.min(l);
        }
        out
    }

    /// The wanted distances of the released classes, for tables with per-value cells (more than
    /// 16 values) or classes removed by their requirements (dense tables otherwise go through
    /// [`Self::fused_distances`]): single-value classes count once per value (a precomputed
    /// table), every other class is measured.
    fn distances_of(&self, sens: &CellTable, removal: &Suppression) -> Distances {
        use crate::distribution::{DistanceMax, DistanceScratch, SingleValues};
        let model = &self.model;
        let mut dist = DistanceMax::wanting(self.distances);
        let mut scratch = DistanceScratch::default();
        let mut singles = SingleValues::default();
        for i in 0..sens.num_classes() {
            let size = sens.class_size(i);
            if removal.removes(i, size) {
                continue;
            }
            match sens.single_value(i) {
                Some(v) => singles.mark(v),
                None => self.measure(&mut dist, sens, i, size, &mut scratch, Parts::BOTH),
            }
        }
        singles.drain_into(model, &mut dist);
        dist.finish(model)
    }
}

/// One QI of a node with packed keys, for the suppressed classes of [`Evaluator::shape_pass`]:
/// its field's shift and mask, and the GLM loss and non-uniform entropy of each of its groups.
type PackedField<'a> = (u32, u64, &'a [f64], &'a [f64]);

/// What [`Evaluator::shape_pass`] yields.
struct Shape {
    /// The smallest class entropy (for the min-entropy bound).
    min_entropy: f64,
    /// The smallest class entropy l (exact where exp(H) is, see [`Evaluator::class_entropy`]).
    min_l_entropy: f64,
    min_prob: f64,
    glm_suppressed: f64,
    nu_suppressed: f64,
    sum_tot: u64,
    sum_sq: u64,
}

impl Shape {
    /// Adds a suppressed class's histogram `h` to the S_l sums: Σ count × the value's count in
    /// the whole table (`totals`) and Σ count², without a branch (absent values add 0).
    #[inline(always)]
    fn add_suppressed<T: Copy + Into<u64>>(&mut self, h: &[T], totals: &[u64]) {
        for (&c, &t) in h.iter().zip(totals) {
            let count: u64 = c.into();
            self.sum_tot += count * t;
            self.sum_sq += count * count;
        }
    }

    const EMPTY: Shape = Shape {
        min_entropy: f64::INFINITY,
        min_l_entropy: f64::INFINITY,
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

/// What the integer pass over a node's cells yields besides the per-size accumulators (which
/// hold the small classes' share of everything: the loop over classes keeps as few running
/// values as it can, so that they stay in registers).
struct SizePass {
    /// The classes larger than η, never suppressed.
    big: Released,
    /// Σ count² over every cell.
    sum_sq: u64,
    /// Σ size² over the classes of `big`.
    big_size_sq: u64,
    /// Classes of one tuple among `big` (only when η is 0).
    big_ones: u64,
    /// The values of the single-value classes among `big` ([`Evaluator::fused_pass`] only).
    big_singles: u32,
    /// The largest class of at most η tuples.
    max_small: u64,
}

impl SizePass {
    /// Adds one class: to `big` when it is larger than `eta` (never suppressed), else to its
    /// size's accumulator in `scratch`; `single` is its value set if it holds one value.
    #[inline(always)]
    fn add(&mut self, scratch: &mut BySize, eta: u64, size: u64, distinct: u64, single: u32) {
        if size > eta {
            self.big.add(size, distinct);
            self.big_singles |= single;
            self.big_size_sq += size * size;
            self.big_ones += u64::from(size == 1);
        } else {
            self.max_small = self.max_small.max(size);
            scratch.add(size, distinct, single);
        }
    }

    /// An empty pass; Σ count² is summed only when `sum_sq` (S_l is wanted).
    fn new(sens: &CellTable, sum_sq: bool) -> Self {
        SizePass {
            big: Released::EMPTY,
            sum_sq: if sum_sq { sens.sum_sq() } else { 0 },
            big_size_sq: 0,
            big_ones: 0,
            big_singles: 0,
            max_small: 0,
        }
    }
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
    /// Adds a released class.
    #[inline(always)]
    fn add(&mut self, size: u64, distinct: u64) {
        self.classes += 1;
        self.min_size = self.min_size.min(size);
        self.max_size = self.max_size.max(size);
        self.min_distinct = self.min_distinct.min(distinct);
    }

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
    /// The values of the single-value classes of this size ([`Evaluator::fused_pass`] only).
    singles: u32,
}

impl SizeAcc {
    const EMPTY: SizeAcc = SizeAcc {
        classes: 0,
        min_distinct: u64::MAX,
        singles: 0,
    };
}

/// Per-size accumulators of the classes of at most η tuples: a dense array over sizes up to
/// min(η, [`DENSE_SIZES`]) (sized by [`Self::prepare`], so adding has no branch), a map above.
/// Empty between nodes.
#[derive(Default)]
struct BySize {
    dense: Vec<SizeAcc>,
    sparse: BTreeMap<u64, SizeAcc>,
    /// The multi-value classes of the node ([`Evaluator::fused_pass`]), by index.
    multi: Vec<u32>,
    /// How many entries of `multi` the node filled (the rest is stale: the buffer only grows, so
    /// that it is not written twice).
    multi_len: usize,
}

impl BySize {
    /// Makes room for the dense sizes of a dataset with suppression limit `eta`.
    fn prepare(&mut self, eta: u64) {
        let len = eta.min(DENSE_SIZES) as usize + 1;
        if self.dense.len() < len {
            self.dense.resize(len, SizeAcc::EMPTY);
        }
    }

    /// Adds a class of `size` tuples and `distinct` values, `singles` its values if it holds one.
    #[inline(always)]
    fn add(&mut self, size: u64, distinct: u64, singles: u32) {
        let acc = match self.dense.get_mut(size as usize) {
            Some(acc) => acc,
            None => self.sparse.entry(size).or_insert(SizeAcc::EMPTY),
        };
        acc.classes += 1;
        acc.min_distinct = acc.min_distinct.min(distinct);
        acc.singles |= singles;
    }

    /// The accumulated sizes in ascending order, leaving the buffer empty.
    /// `max_small` bounds the sizes added, so that a node whose small classes are all small
    /// reads only the start of the dense array.
    fn drain_sorted(&mut self, max_small: u64) -> Vec<(u64, SizeAcc)> {
        let mut out: Vec<(u64, SizeAcc)> = Vec::new();
        let end = (max_small as usize + 1).min(self.dense.len());
        for (s, acc) in self.dense[..end].iter_mut().enumerate() {
            if acc.classes > 0 {
                out.push((s as u64, std::mem::replace(acc, SizeAcc::EMPTY)));
            }
        }
        out.extend(std::mem::take(&mut self.sparse));
        out
    }
}
