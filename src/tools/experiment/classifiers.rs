//! Classifiers for the utility experiment, on categorical codes: naive Bayes (Laplace smoothing)
//! and a C4.5-style decision tree (multiway splits on the attribute with the best gain ratio, at
//! least two examples per leaf, no attribute twice on a path), with k-fold cross-validation folds.

use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand::seq::SliceRandom;

/// Training or test examples: feature codes per attribute, and the target code.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Examples {
    /// `features[a][i]`: code of attribute a in example i.
    pub features: Vec<Vec<u32>>,
    /// Target code of every example.
    pub target: Vec<u32>,
}

impl Examples {
    /// Number of examples.
    pub fn len(&self) -> usize {
        self.target.len()
    }

    /// Whether there are no examples.
    pub fn is_empty(&self) -> bool {
        self.target.is_empty()
    }
}

/// Domain sizes: one per feature, and the number of target classes.
#[derive(Debug, Clone, PartialEq)]
pub struct Domains {
    /// Codes per feature.
    pub features: Vec<usize>,
    /// Target classes.
    pub classes: usize,
}

/// A trained classifier.
pub trait Classifier {
    /// The predicted class of one example (feature codes in attribute order).
    fn predict(&self, x: &[u32]) -> u32;
}

/// Share of `test` examples classified correctly.
pub fn accuracy(model: &dyn Classifier, test: &Examples) -> f64 {
    if test.is_empty() {
        return 0.0;
    }
    let mut x = vec![0u32; test.features.len()];
    let mut right = 0usize;
    for i in 0..test.len() {
        for (a, f) in test.features.iter().enumerate() {
            x[a] = f[i];
        }
        right += (model.predict(&x) == test.target[i]) as usize;
    }
    right as f64 / test.len() as f64
}

/// Naive Bayes with Laplace smoothing, in log space.
#[derive(Debug, Clone)]
pub struct NaiveBayes {
    log_prior: Vec<f64>,
    /// `log_like[a][value * classes + class]`.
    log_like: Vec<Vec<f64>>,
    classes: usize,
}

impl NaiveBayes {
    /// Trains on `data`.
    pub fn train(data: &Examples, d: &Domains) -> Self {
        let k = d.classes;
        let mut class_count = vec![0f64; k];
        for &y in &data.target {
            class_count[y as usize] += 1.0;
        }
        let n = data.len() as f64;
        let log_prior = class_count
            .iter()
            .map(|&c| ((c + 1.0) / (n + k as f64)).ln())
            .collect();
        let log_like = data
            .features
            .iter()
            .zip(&d.features)
            .map(|(f, &m)| {
                let mut count = vec![0f64; m * k];
                for (&v, &y) in f.iter().zip(&data.target) {
                    count[v as usize * k + y as usize] += 1.0;
                }
                (0..m * k)
                    .map(|i| ((count[i] + 1.0) / (class_count[i % k] + m as f64)).ln())
                    .collect()
            })
            .collect();
        NaiveBayes {
            log_prior,
            log_like,
            classes: k,
        }
    }
}

impl Classifier for NaiveBayes {
    fn predict(&self, x: &[u32]) -> u32 {
        let k = self.classes;
        let mut best = (f64::NEG_INFINITY, 0u32);
        for y in 0..k {
            let mut s = self.log_prior[y];
            for (a, &v) in x.iter().enumerate() {
                s += self.log_like[a][v as usize * k + y];
            }
            if s > best.0 {
                best = (s, y as u32);
            }
        }
        best.1
    }
}

/// A node of the tree.
#[derive(Debug, Clone)]
enum Node {
    Leaf(u32),
    Split {
        attribute: usize,
        /// Child per value code (`None`: no training example had it, predict `majority`).
        children: Vec<Option<usize>>,
        majority: u32,
    },
}

/// A C4.5-style decision tree on categorical attributes.
#[derive(Debug, Clone)]
pub struct DecisionTree {
    nodes: Vec<Node>,
}

/// Entropy (bits) of class counts summing to `n`.
fn entropy(counts: &[u32], n: u32) -> f64 {
    if n == 0 {
        return 0.0;
    }
    let n = n as f64;
    -counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            p * p.log2()
        })
        .sum::<f64>()
}

const MIN_LEAF: u32 = 2;

impl DecisionTree {
    /// Grows a tree on `data`.
    pub fn train(data: &Examples, d: &Domains) -> Self {
        let mut tree = DecisionTree { nodes: Vec::new() };
        let rows: Vec<u32> = (0..data.len() as u32).collect();
        let mut used = vec![false; d.features.len()];
        tree.grow(data, d, rows, &mut used);
        tree
    }

    fn grow(&mut self, data: &Examples, d: &Domains, rows: Vec<u32>, used: &mut [bool]) -> usize {
        let k = d.classes;
        let mut counts = vec![0u32; k];
        for &r in &rows {
            counts[data.target[r as usize] as usize] += 1;
        }
        let n = rows.len() as u32;
        let majority = (0..k)
            .max_by_key(|&y| (counts[y], std::cmp::Reverse(y)))
            .unwrap_or(0) as u32;
        let id = self.nodes.len();
        self.nodes.push(Node::Leaf(majority));
        if n < 2 * MIN_LEAF || counts[majority as usize] == n {
            return id;
        }
        let base = entropy(&counts, n);
        // The attribute with the best gain ratio among those with positive gain at least the
        // average gain (C4.5's guard against many-valued attributes with tiny gains).
        let mut candidates: Vec<(usize, f64, f64)> = Vec::new();
        for (a, f) in data.features.iter().enumerate() {
            if used[a] {
                continue;
            }
            let m = d.features[a];
            let mut table = vec![0u32; m * k];
            let mut per_value = vec![0u32; m];
            for &r in &rows {
                let v = f[r as usize] as usize;
                table[v * k + data.target[r as usize] as usize] += 1;
                per_value[v] += 1;
            }
            let big = per_value.iter().filter(|&&c| c >= MIN_LEAF).count();
            if big < 2 {
                continue;
            }
            let mut rest = 0.0;
            let mut split_info = 0.0;
            for v in 0..m {
                let nv = per_value[v];
                if nv == 0 {
                    continue;
                }
                let p = nv as f64 / n as f64;
                rest += p * entropy(&table[v * k..(v + 1) * k], nv);
                split_info -= p * p.log2();
            }
            let gain = base - rest;
            if gain > 1e-12 && split_info > 1e-12 {
                candidates.push((a, gain, gain / split_info));
            }
        }
        if candidates.is_empty() {
            return id;
        }
        let average = candidates.iter().map(|c| c.1).sum::<f64>() / candidates.len() as f64;
        let Some(&(attribute, _, _)) = candidates
            .iter()
            .filter(|c| c.1 >= average - 1e-12)
            .max_by(|x, y| x.2.total_cmp(&y.2).then(y.0.cmp(&x.0)))
        else {
            return id;
        };
        let m = d.features[attribute];
        let mut parts: Vec<Vec<u32>> = vec![Vec::new(); m];
        for &r in &rows {
            parts[data.features[attribute][r as usize] as usize].push(r);
        }
        used[attribute] = true;
        let mut children = vec![None; m];
        for (v, part) in parts.into_iter().enumerate() {
            if !part.is_empty() {
                children[v] = Some(self.grow(data, d, part, used));
            }
        }
        used[attribute] = false;
        self.nodes[id] = Node::Split {
            attribute,
            children,
            majority,
        };
        id
    }

    /// Number of nodes.
    pub fn size(&self) -> usize {
        self.nodes.len()
    }
}

impl Classifier for DecisionTree {
    fn predict(&self, x: &[u32]) -> u32 {
        let mut i = 0;
        loop {
            match &self.nodes[i] {
                Node::Leaf(y) => return *y,
                Node::Split {
                    attribute,
                    children,
                    majority,
                } => match children.get(x[*attribute] as usize).copied().flatten() {
                    Some(c) => i = c,
                    None => return *majority,
                },
            }
        }
    }
}

/// `k` cross-validation folds of `n` examples: a seeded shuffle cut into k nearly equal parts.
pub fn folds(n: usize, k: usize, seed: u64) -> Vec<Vec<u32>> {
    let mut idx: Vec<u32> = (0..n as u32).collect();
    idx.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    (0..k)
        .map(|f| {
            let mut part: Vec<u32> = idx[f * n / k..(f + 1) * n / k].to_vec();
            part.sort_unstable();
            part
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(rows: &[(&[u32], u32)]) -> Examples {
        let a = rows[0].0.len();
        Examples {
            features: (0..a)
                .map(|j| rows.iter().map(|r| r.0[j]).collect())
                .collect(),
            target: rows.iter().map(|r| r.1).collect(),
        }
    }

    #[test]
    fn naive_bayes_by_hand() {
        // P(y=0) = 3/5, P(y=1) = 2/5 (smoothed: 4/7, 3/7); x=1 seen with y=1 twice, y=0 never.
        let d = data(&[(&[0], 0), (&[0], 0), (&[0], 0), (&[1], 1), (&[1], 1)]);
        let dom = Domains {
            features: vec![2],
            classes: 2,
        };
        let nb = NaiveBayes::train(&d, &dom);
        assert_eq!(nb.predict(&[0]), 0);
        assert_eq!(nb.predict(&[1]), 1);
        // log P(y=1) + log P(x=1 | y=1) = ln(3/7) + ln(3/4)
        let s1 = nb.log_prior[1] + nb.log_like[0][2 + 1];
        assert!((s1 - ((3.0f64 / 7.0).ln() + (3.0f64 / 4.0).ln())).abs() < 1e-12);
        assert_eq!(accuracy(&nb, &d), 1.0);
    }

    #[test]
    fn tree_learns_a_multiplexer_that_naive_bayes_cannot() {
        // y = a0 when a2 = 0, else a1; a3 is noise. Each pattern twice so leaves hold >= 2.
        let mut rows: Vec<(Vec<u32>, u32)> = Vec::new();
        for noise in 0..2u32 {
            for a0 in 0..2 {
                for a1 in 0..2 {
                    for a2 in 0..2 {
                        let y = if a2 == 0 { a0 } else { a1 };
                        rows.push((vec![a0, a1, a2, noise], y));
                    }
                }
            }
        }
        let refs: Vec<(&[u32], u32)> = rows.iter().map(|(x, y)| (x.as_slice(), *y)).collect();
        let d = data(&refs);
        let dom = Domains {
            features: vec![2, 2, 2, 2],
            classes: 2,
        };
        let t = DecisionTree::train(&d, &dom);
        assert_eq!(accuracy(&t, &d), 1.0);
        assert!(accuracy(&NaiveBayes::train(&d, &dom), &d) < 1.0);
    }

    #[test]
    fn folds_partition_the_examples() {
        let f = folds(103, 10, 1);
        assert_eq!(f.len(), 10);
        let mut all: Vec<u32> = f.concat();
        all.sort_unstable();
        assert_eq!(all, (0..103).collect::<Vec<u32>>());
        assert!(f.iter().all(|p| p.len() == 10 || p.len() == 11));
        assert_eq!(folds(103, 10, 1), f);
    }
}
