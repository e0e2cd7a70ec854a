//! Which classes of a node the suppression rule removes: those of at most j tuples (the threshold
//! of the size rule) and, under the requirement rule, the classes that fail a requirement judged
//! on each class, when all the failing classes fit the limit and leave a class to release.

use super::Evaluator;
use crate::classes::{CellTable, ClassCells};
use crate::distribution::{DistanceMax, DistanceScratch, Distances};
use crate::indices::Index;
use crate::suppression::{ClassMeasures, class_value};

/// The classes of one node that the suppression rule removes.
#[derive(Debug, Clone, PartialEq)]
pub struct Suppression {
    threshold: u64,
    /// Under the requirement rule, class by class in key order: whether it fails a requirement
    /// (or is smaller than k). `None`: by size alone.
    failing: Option<Vec<bool>>,
}

impl Suppression {
    /// The threshold j of the size rule: every class of at most j tuples is removed.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    /// Whether classes are removed by the requirements they fail (else by size alone).
    pub fn by_requirements(&self) -> bool {
        self.failing.is_some()
    }

    /// Whether class `i` (in key order), of `size` tuples, is removed.
    #[inline]
    pub fn removes(&self, i: usize, size: u64) -> bool {
        size <= self.threshold || self.failing.as_ref().is_some_and(|f| f[i])
    }
}

impl Evaluator {
    /// The classes of `sens` (a node's sensitive cell table) that the rule removes, given the
    /// threshold `j` of its size rule ([`crate::NodeIndices::threshold`]). Under the requirement
    /// rule with requirements judged on each class, every class that fails one or is smaller than
    /// k is removed when together they fit the limit η and are not the whole table; otherwise
    /// (and under the DBSEC rule) the classes of at most `j` tuples.
    pub fn suppression_of(&self, sens: &CellTable, j: u64) -> Suppression {
        let by_size = Suppression {
            threshold: j,
            failing: None,
        };
        let require = self.rule.class_requirements();
        if require.is_empty() {
            return by_size;
        }
        if !self.judges_classes() {
            debug_assert!(false, "an evaluator without the values its rule judges");
            return by_size;
        }
        let (counts, _, wanted) = Index::needs(&self.rule.class_indices());
        let cap = self.rule.cap();
        let mut scratch = DistanceScratch::default();
        let mut failing = Vec::with_capacity(sens.num_classes());
        let mut removed = 0u64;
        for (i, (size, distinct)) in sens.sizes().enumerate() {
            let fails = size <= cap || {
                let m = if counts {
                    self.class_measures(sens, i, size, wanted, &mut scratch)
                } else {
                    ClassMeasures::of_size(size, distinct)
                };
                require
                    .iter()
                    .any(|r| class_value(r.measure, &m).is_some_and(|v| !r.holds(v)))
            };
            removed += if fails { size } else { 0 };
            failing.push(fails);
        }
        if removed > self.eta || removed >= self.dataset.num_tuples() {
            return by_size;
        }
        Suppression {
            threshold: j,
            failing: Some(failing),
        }
    }

    /// Class `i`'s own measures, computed as the index pass computes the node's from them (so a
    /// class meets a bound exactly when the node's value over it would), the distances among
    /// `wanted` only.
    fn class_measures(
        &self,
        sens: &CellTable,
        i: usize,
        size: u64,
        wanted: u8,
        scratch: &mut DistanceScratch,
    ) -> ClassMeasures {
        let class = sens.class(i);
        let (distinct, most) = class
            .cells()
            .fold((0, 0), |(d, m), c| (d + 1, m.max(u64::from(c.count))));
        let distances = if wanted == 0 {
            Distances::UNKNOWN
        } else {
            let mut dist = DistanceMax::wanting(wanted);
            match sens.single_value(i) {
                Some(v) => self.model.add_single(&mut dist, v),
                None => self.measure(
                    &mut dist,
                    sens,
                    i,
                    size,
                    scratch,
                    crate::distribution::Parts::BOTH,
                ),
            }
            dist.finish(&self.model)
        };
        ClassMeasures {
            size,
            distinct,
            l_entropy: self.class_entropy(&class, size).1,
            most,
            distances,
        }
    }

    /// The Shannon entropy H (natural log) of a class's sensitive values and its entropy l,
    /// exp(H). Where they are exact — one value (H = 0, l = 1), equally frequent values (l = their
    /// number) — they are given exactly, so that `l_entropy>=2` holds for a class of 3 × a, 3 × b
    /// (rounded, exp(ln 6 − ln 3) is 1.9999999999999998).
    pub(super) fn class_entropy(&self, class: &ClassCells<'_>, size: u64) -> (f64, f64) {
        let mut sum_clnc = 0.0;
        let mut distinct = 0u64;
        let mut first = 0;
        let mut uniform = true;
        for c in class.cells() {
            let count = c.count as u64;
            sum_clnc += count as f64 * self.ln_count(count);
            if distinct == 0 {
                first = count;
            }
            uniform &= count == first;
            distinct += 1;
        }
        let entropy = if distinct <= 1 {
            0.0
        } else {
            (self.ln_count(size) - sum_clnc / size as f64).max(0.0)
        };
        let l = if uniform {
            distinct.max(1) as f64
        } else {
            entropy.exp()
        };
        (entropy, l)
    }
}
