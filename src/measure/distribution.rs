//! Sensitive-distribution models of a class (SPEC §7): the distance of a class's distribution of
//! sensitive values p_E from the whole input's p — t-closeness with the equal, ordered and
//! hierarchical ground distances (EMD, Li, Li & Venkatasubramanian, ICDE 2007), basic β-likeness
//! and δ-disclosure. Written once: the index pass, the release verifier and the SQL aggregates
//! all measure classes through [`SensitiveModel::class`].

use std::cell::RefCell;

use crate::hierarchy::Hierarchy;

/// The distances of one class (or the largest over several classes, see [`Distances::max`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Distances {
    /// EMD with equal ground distance (total variation distance).
    pub t_equal: f64,
    /// EMD over the ordered sensitive domain.
    pub t_ordered: f64,
    /// EMD over the sensitive hierarchy (NaN without one).
    pub t_hierarchical: f64,
    /// Basic β-likeness: the largest relative gain (p_E − p) / p over values with p_E > p.
    pub beta: f64,
    /// δ-disclosure: the largest |ln(p_E / p)| over values present in the class.
    pub delta: f64,
}

impl Distances {
    /// The value of a node without released classes: every distance 0 (NaN stays NaN).
    pub fn zero(hierarchical: bool) -> Self {
        Distances {
            t_equal: 0.0,
            t_ordered: 0.0,
            t_hierarchical: if hierarchical { 0.0 } else { f64::NAN },
            beta: 0.0,
            delta: 0.0,
        }
    }

    /// Not computed (the tables hold no per-value counts).
    pub const UNKNOWN: Distances = Distances {
        t_equal: f64::NAN,
        t_ordered: f64::NAN,
        t_hierarchical: f64::NAN,
        beta: f64::NAN,
        delta: f64::NAN,
    };

    /// Component-wise maximum (the node's value is the worst class's).
    pub fn max(self, o: Distances) -> Distances {
        // f64::max ignores a NaN operand; a missing hierarchy is NaN on both sides.
        Distances {
            t_equal: self.t_equal.max(o.t_equal),
            t_ordered: self.t_ordered.max(o.t_ordered),
            t_hierarchical: self.t_hierarchical.max(o.t_hierarchical),
            beta: self.beta.max(o.beta),
            delta: self.delta.max(o.delta),
        }
    }
}

/// The sensitive hierarchy as the EMD needs it: per level above the leaves, each group's parent
/// and probability mass.
#[derive(Debug, Clone)]
struct Tree {
    /// H: levels run 0..=H.
    height: usize,
    /// Leaf of every value code.
    leaf_of_value: Vec<u32>,
    /// Group at level 1 of every leaf.
    group_of_leaf: Vec<u32>,
    /// `up[l - 1][g]`: the parent (at level l + 1) of group g at level l, for l in 1..H.
    up: Vec<Vec<u32>>,
    /// `mass[l - 1][g]`: p of group g at level l (Σ over its leaves), for l in 1..=H.
    mass: Vec<Vec<f64>>,
}

/// The input's distribution of the sensitive attribute, with what each distance needs.
#[derive(Debug, Clone)]
pub struct SensitiveModel {
    /// p(v) by value code.
    p: Vec<f64>,
    /// ln p(v).
    ln_p: Vec<f64>,
    /// Position of each value code in the order of `t_ordered`.
    rank: Vec<u32>,
    /// P(i) = Σ_{j ≤ i} p(v_j) by rank.
    cum: Vec<f64>,
    /// Σ_{j < i} P(j), i in 0..=M.
    cum_prefix: Vec<f64>,
    tree: Option<Tree>,
}

/// How a value domain is ordered for `t_ordered` (SPEC §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The leaf order of the sensitive hierarchy (its file's row order).
    Hierarchy,
    /// Numerically: every value parses as a number.
    Numeric,
    /// By text, byte order.
    Text,
}

impl SensitiveModel {
    /// The model of a sensitive attribute whose value code `v` has text `labels[v]` and
    /// `counts[v]` tuples in the input; `hierarchy` is the sensitive hierarchy with the leaf of
    /// every value code (the caller checked that every value is a leaf).
    pub fn new(labels: &[String], counts: &[u64], hierarchy: Option<(&Hierarchy, &[u32])>) -> Self {
        let total: u64 = counts.iter().sum();
        let n = total.max(1) as f64;
        let p: Vec<f64> = counts.iter().map(|&c| c as f64 / n).collect();
        let ln_p = p.iter().map(|x| x.ln()).collect();
        let (order, _) = Self::order(labels, hierarchy);
        let mut rank = vec![0u32; labels.len()];
        for (r, &v) in order.iter().enumerate() {
            rank[v as usize] = r as u32;
        }
        let mut cum = Vec::with_capacity(order.len());
        let mut acc = 0u64;
        for &v in &order {
            acc += counts[v as usize];
            cum.push(acc as f64 / n);
        }
        let mut cum_prefix = Vec::with_capacity(cum.len() + 1);
        cum_prefix.push(0.0);
        for &c in &cum {
            cum_prefix.push(cum_prefix.last().copied().unwrap_or(0.0) + c);
        }
        let tree = hierarchy.map(|(h, leaf_of_value)| {
            let height = h.height() as usize;
            let mut leaf_mass = vec![0u64; h.leaf_count()];
            for (v, &leaf) in leaf_of_value.iter().enumerate() {
                leaf_mass[leaf as usize] += counts[v];
            }
            let mass = (1..=height)
                .map(|l| {
                    let level = h.level(l as u8);
                    let mut m = vec![0u64; level.labels.len()];
                    for (leaf, &g) in level.group_of_leaf.iter().enumerate() {
                        m[g as usize] += leaf_mass[leaf];
                    }
                    m.into_iter().map(|c| c as f64 / n).collect()
                })
                .collect();
            Tree {
                height,
                leaf_of_value: leaf_of_value.to_vec(),
                group_of_leaf: h.level(1).group_of_leaf.clone(),
                up: (1..height).map(|l| h.level(l as u8).up.clone()).collect(),
                mass,
            }
        });
        SensitiveModel {
            p,
            ln_p,
            rank,
            cum,
            cum_prefix,
            tree,
        }
    }

    /// The value codes in the order of `t_ordered`, and which order it is.
    pub fn order(labels: &[String], hierarchy: Option<(&Hierarchy, &[u32])>) -> (Vec<u32>, Order) {
        let mut order: Vec<u32> = (0..labels.len() as u32).collect();
        if let Some((h, leaf_of_value)) = hierarchy {
            order.sort_by_key(|&v| h.file_rank(leaf_of_value[v as usize]));
            return (order, Order::Hierarchy);
        }
        let numbers: Option<Vec<f64>> = labels
            .iter()
            .map(|l| l.trim().parse::<f64>().ok().filter(|x| x.is_finite()))
            .collect();
        match numbers {
            Some(x) => {
                order.sort_by(|&a, &b| {
                    x[a as usize]
                        .total_cmp(&x[b as usize])
                        .then_with(|| labels[a as usize].cmp(&labels[b as usize]))
                });
                (order, Order::Numeric)
            }
            None => {
                order.sort_by(|&a, &b| labels[a as usize].cmp(&labels[b as usize]));
                (order, Order::Text)
            }
        }
    }

    /// Whether a sensitive hierarchy was given (`t_hierarchical` is defined).
    pub fn has_hierarchy(&self) -> bool {
        self.tree.is_some()
    }

    /// The distances of one class of `size` tuples holding `cells` (value code, count), each
    /// value at most once, in any order.
    pub fn class(&self, cells: impl Iterator<Item = (u32, u64)>, size: u64) -> Distances {
        SCRATCH.with_borrow_mut(|s| self.class_with(cells, size, s))
    }

    fn class_with(
        &self,
        cells: impl Iterator<Item = (u32, u64)>,
        size: u64,
        s: &mut Scratch,
    ) -> Distances {
        let n = size as f64;
        let ln_n = n.ln();
        let (mut abs_present, mut p_present) = (0.0, 0.0);
        let (mut beta, mut delta) = (0.0f64, 0.0f64);
        s.ordered.clear();
        for (v, c) in cells {
            let (q, p) = (c as f64 / n, self.p[v as usize]);
            abs_present += (q - p).abs();
            p_present += p;
            if q > p {
                beta = beta.max((q - p) / p);
            }
            delta = delta.max(((c as f64).ln() - ln_n - self.ln_p[v as usize]).abs());
            s.ordered.push((self.rank[v as usize], q, v));
        }
        // Values absent from the class each differ by their whole p.
        let t_equal = 0.5 * (abs_present + (1.0 - p_present).max(0.0));
        if !s.ordered.is_sorted_by_key(|x| x.0) {
            s.ordered.sort_unstable_by_key(|x| x.0);
        }
        let t_ordered = self.ordered_emd(&s.ordered);
        let t_hierarchical = match &self.tree {
            Some(t) => {
                let ordered = std::mem::take(&mut s.ordered);
                let emd = self.hierarchical_emd(t, &ordered, s);
                s.ordered = ordered;
                emd
            }
            None => f64::NAN,
        };
        Distances {
            t_equal,
            t_ordered,
            t_hierarchical,
            beta,
            delta,
        }
    }

    /// (1/(M−1)) Σ_i |C(i) − P(i)| where C is the class's cumulative distribution by rank: C is
    /// constant between the class's values, so each run is summed in O(log M) from prefix sums.
    fn ordered_emd(&self, sorted: &[(u32, f64, u32)]) -> f64 {
        let m = self.cum.len();
        if m <= 1 {
            return 0.0;
        }
        let mut total = 0.0;
        let mut c = 0.0;
        let mut start = 0usize;
        for &(r, q, _) in sorted {
            total += self.run(start, r as usize, c);
            c += q;
            start = r as usize;
        }
        total += self.run(start, m, c);
        total / (m - 1) as f64
    }

    /// Σ_{i in a..b} |c − P(i)|, P non-decreasing.
    fn run(&self, a: usize, b: usize, c: f64) -> f64 {
        if a >= b {
            return 0.0;
        }
        let t = a + self.cum[a..b].partition_point(|&x| x <= c);
        let below = (t - a) as f64 * c - (self.cum_prefix[t] - self.cum_prefix[a]);
        let above = (self.cum_prefix[b] - self.cum_prefix[t]) - (b - t) as f64 * c;
        below + above
    }

    /// The hierarchical EMD, visiting only the ancestors of the class's values: a group none of
    /// whose leaves the class holds has extra = −p(group), all negative, and costs nothing.
    fn hierarchical_emd(&self, t: &Tree, cells: &[(u32, f64, u32)], s: &mut Scratch) -> f64 {
        let h = t.height;
        if h == 0 {
            return 0.0;
        }
        s.prepare(t);
        for &(_, q, v) in cells {
            let leaf = t.leaf_of_value[v as usize];
            let extra = q - self.p[v as usize];
            s.add(0, t.group_of_leaf[leaf as usize], extra, self.p[v as usize]);
        }
        let mut cost = 0.0;
        for l in 1..=h {
            let touched = std::mem::take(&mut s.touched[l - 1]);
            for &g in &touched {
                let acc = std::mem::take(&mut s.acc[l - 1][g as usize]);
                // Children the class does not reach: extra = −p(child), summing to the rest of p(g).
                let mass = t.mass[l - 1][g as usize];
                let neg = acc.neg + (mass - acc.touched).max(0.0);
                cost += (l as f64 / h as f64) * acc.pos.min(neg);
                if l < h {
                    let parent = t.up[l - 1][g as usize];
                    s.add(l, parent, acc.pos - neg, mass);
                }
            }
            s.touched[l - 1] = touched;
            s.touched[l - 1].clear();
        }
        cost
    }
}

/// Per-level accumulator of one group's children.
#[derive(Debug, Clone, Copy, Default)]
struct Acc {
    pos: f64,
    neg: f64,
    touched: f64,
    seen: bool,
}

/// Per-thread buffers, reused across classes (no allocation per class).
#[derive(Default)]
struct Scratch {
    ordered: Vec<(u32, f64, u32)>,
    acc: Vec<Vec<Acc>>,
    touched: Vec<Vec<u32>>,
}

impl Scratch {
    fn prepare(&mut self, t: &Tree) {
        if self.acc.len() != t.mass.len()
            || self
                .acc
                .iter()
                .zip(&t.mass)
                .any(|(a, m)| a.len() != m.len())
        {
            self.acc = t
                .mass
                .iter()
                .map(|m| vec![Acc::default(); m.len()])
                .collect();
            self.touched = vec![Vec::new(); t.mass.len()];
        }
    }

    /// Adds a child with `extra` and mass `p` to group `g` at level `l + 1`.
    fn add(&mut self, l: usize, g: u32, extra: f64, p: f64) {
        let a = &mut self.acc[l][g as usize];
        if !a.seen {
            a.seen = true;
            self.touched[l].push(g);
        }
        if extra > 0.0 {
            a.pos += extra;
        } else {
            a.neg -= extra;
        }
        a.touched += p;
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy::LossModel;

    /// The diseases of Li, Li & Venkatasubramanian (ICDE 2007), Figure 1: leaves, then the
    /// groups at levels 1, 2 and 3 (height 3).
    fn diseases() -> Hierarchy {
        let rows: Vec<Vec<String>> = [
            ("flu", "respiratory infection", "respiratory"),
            ("pneumonia", "respiratory infection", "respiratory"),
            ("bronchitis", "respiratory infection", "respiratory"),
            ("pulmonary edema", "vascular lung", "respiratory"),
            ("pulmonary embolism", "vascular lung", "respiratory"),
            ("gastric ulcer", "stomach", "digestive"),
            ("gastritis", "stomach", "digestive"),
            ("stomach cancer", "stomach", "digestive"),
            ("colitis", "colon", "digestive"),
            ("colon cancer", "colon", "digestive"),
        ]
        .iter()
        .map(|(a, b, c)| vec![a.to_string(), b.to_string(), c.to_string(), "*".to_string()])
        .collect();
        Hierarchy::from_rows("disease", "ICDE 2007", &rows, LossModel::LeafCount).unwrap()
    }

    /// The nine records of the paper's Table 3: (salary in k, disease).
    const RECORDS: [(u32, &str); 9] = [
        (3, "gastric ulcer"),
        (4, "gastritis"),
        (5, "stomach cancer"),
        (6, "gastritis"),
        (11, "flu"),
        (8, "bronchitis"),
        (7, "bronchitis"),
        (9, "pneumonia"),
        (10, "stomach cancer"),
    ];

    /// A model of one attribute of the records, and the class of the given records (1-based).
    fn model_and_class(
        values: &[String],
        hierarchy: Option<&Hierarchy>,
    ) -> (
        SensitiveModel,
        Vec<String>,
        impl Fn(&[usize]) -> Vec<(u32, u64)>,
    ) {
        let mut labels: Vec<String> = values.to_vec();
        labels.sort();
        labels.dedup();
        let code = |v: &str| labels.iter().position(|l| l == v).unwrap() as u32;
        let mut counts = vec![0u64; labels.len()];
        for v in values {
            counts[code(v) as usize] += 1;
        }
        let leaves: Vec<u32> = hierarchy
            .map(|h| labels.iter().map(|l| h.leaf_code(l).unwrap()).collect())
            .unwrap_or_default();
        let model =
            SensitiveModel::new(&labels, &counts, hierarchy.map(|h| (h, leaves.as_slice())));
        let (values, labels2) = (values.to_vec(), labels.clone());
        let class = move |rows: &[usize]| {
            let mut cells: Vec<(u32, u64)> = Vec::new();
            for &r in rows {
                let c = labels2.iter().position(|l| *l == values[r - 1]).unwrap() as u32;
                match cells.iter_mut().find(|x| x.0 == c) {
                    Some(x) => x.1 += 1,
                    None => cells.push((c, 1)),
                }
            }
            cells
        };
        (model, labels, class)
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn ordered_emd_of_the_salary_classes_of_icde_2007() {
        let salaries: Vec<String> = RECORDS.iter().map(|r| format!("{}000", r.0)).collect();
        let (model, labels, class) = model_and_class(&salaries, None);
        // Numeric order, although "10000" < "3000" as text.
        let (order, kind) = SensitiveModel::order(&labels, None);
        assert_eq!(kind, Order::Numeric);
        assert_eq!(labels[order[0] as usize], "3000");
        let emd = |rows: &[usize]| model.class(class(rows).into_iter(), rows.len() as u64);
        assert!(close(emd(&[1, 2, 3]).t_ordered, 0.375));
        assert!(close(emd(&[4, 5, 6]).t_ordered, 1.0 / 6.0));
        assert!(close(emd(&[7, 8, 9]).t_ordered, 17.0 / 72.0));
        // The whole table is at distance 0; equal distance of {3k,4k,5k}: 1/2 (6/9 + 6/9 − ...).
        assert!(close(emd(&[1, 2, 3, 4, 5, 6, 7, 8, 9]).t_ordered, 0.0));
        assert!(close(emd(&[1, 2, 3]).t_equal, 2.0 / 3.0));
    }

    #[test]
    fn hierarchical_emd_of_the_disease_classes_of_icde_2007() {
        let h = diseases();
        let diseases: Vec<String> = RECORDS.iter().map(|r| r.1.to_string()).collect();
        let (model, _, class) = model_and_class(&diseases, Some(&h));
        let emd = |rows: &[usize]| model.class(class(rows).into_iter(), rows.len() as u64);
        // Table 4's classes: 7/27, 8/27 and 5/27 (the paper prints 0.278 for the largest; it is
        // 8/27 = 0.296).
        assert!(close(emd(&[1, 3, 8]).t_hierarchical, 7.0 / 27.0));
        assert!(close(emd(&[4, 5, 6]).t_hierarchical, 8.0 / 27.0));
        assert!(close(emd(&[2, 7, 9]).t_hierarchical, 5.0 / 27.0));
        // Table 3's first class, all stomach diseases: 4/9 moved across the root.
        assert!(close(emd(&[1, 2, 3]).t_hierarchical, 4.0 / 9.0));
        let d = emd(&[1, 3, 8]);
        // p: ulcer 1/9, gastritis 2/9, cancer 2/9, flu 1/9, bronchitis 2/9, pneumonia 1/9.
        assert!(close(d.t_equal, 5.0 / 9.0));
        assert!(close(d.beta, 2.0));
        assert!(close(d.delta, 3f64.ln()));
    }

    #[test]
    fn a_hierarchy_orders_values_by_its_rows() {
        let h = diseases();
        let labels: Vec<String> = ["bronchitis", "colitis", "flu"].map(String::from).to_vec();
        let leaves: Vec<u32> = labels.iter().map(|l| h.leaf_code(l).unwrap()).collect();
        let (order, kind) = SensitiveModel::order(&labels, Some((&h, &leaves)));
        assert_eq!(kind, Order::Hierarchy);
        let names: Vec<&str> = order.iter().map(|&v| labels[v as usize].as_str()).collect();
        assert_eq!(names, ["flu", "bronchitis", "colitis"]);
    }
}
