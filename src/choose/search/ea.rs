//! PBG-EA (DBSEC 2010, Algorithm 2): an evolutionary generator feeding the box-dominance archive.

use rand::rngs::ChaCha8Rng;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};

use super::archive::BoxArchive;
use super::cache::EvaluationCache;
use super::{Point, SearchResult};
use crate::dominance::strongly_dominates;
use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::lattice::Node;
use crate::objective::Objective;

/// Parameters of PBG-EA (defaults as in the paper).
#[derive(Debug, Clone, PartialEq)]
pub struct EaConfig {
    /// Population size N_pop (25).
    pub population: usize,
    /// Iterations (100).
    pub iterations: usize,
    /// Crossover probability (0.8).
    pub p_cross: f64,
    /// Per-attribute mutation probability (default 1 / number of QIs).
    pub p_mut: Option<f64>,
    /// Discretization vector ε (default: 1 per objective, 0.01 for shares in [0, 1] such as
    /// t-closeness, risks, precision and CM; [`crate::indices::Index::default_epsilon`]).
    pub epsilon: Option<Vec<f64>>,
    /// RNG seed: same seed, same archive, on any thread count.
    pub seed: u64,
}

impl Default for EaConfig {
    fn default() -> Self {
        EaConfig {
            population: 25,
            iterations: 100,
            p_cross: 0.8,
            p_mut: None,
            epsilon: None,
            seed: 0,
        }
    }
}

/// Runs PBG-EA; the result's `front` is the final archive, `evaluations` the unique nodes evaluated
/// (or implied: see `EvaluationCache::wanting`).
pub fn pbg_ea(ev: &Evaluator, objectives: &[Objective], cfg: &EaConfig) -> Result<SearchResult> {
    let heights = ev.lattice().heights().to_vec();
    let q = heights.len();
    if cfg.population < 2 {
        return Err(PbgError::argument(
            "population",
            "needs at least 2 nodes (top and bottom)",
        ));
    }
    if !(0.0..=1.0).contains(&cfg.p_cross) {
        return Err(PbgError::argument(
            "p-cross",
            format!("{} is not a probability", cfg.p_cross),
        ));
    }
    let p_mut = cfg.p_mut.unwrap_or(1.0 / q as f64);
    if !(0.0..=1.0).contains(&p_mut) {
        return Err(PbgError::argument(
            "p-mut",
            format!("{p_mut} is not a probability"),
        ));
    }
    let epsilon = cfg
        .epsilon
        .clone()
        .unwrap_or_else(|| objectives.iter().map(|o| o.default_epsilon()).collect());
    let mut archive = BoxArchive::new(objectives, &epsilon)?;
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    // The cheapest tables that still give the objectives exactly (one cell per class when the
    // sensitive attribute matters at most through distinct l).
    let light = ev.for_objectives(objectives)?;
    let ev = &light;
    let mut cache = EvaluationCache::wanting(ev, objectives);

    // Step 2: the top and bottom nodes plus random ones.
    let mut population: Vec<Node> = vec![ev.lattice().top(), ev.lattice().bottom()];
    while population.len() < cfg.population {
        population.push(heights.iter().map(|&h| rng.random_range(0..=h)).collect());
    }
    // Steps 3–4.
    cache.evaluate(&population)?;
    let point = |cache: &EvaluationCache, n: &Node| -> Point {
        Point {
            node: n.clone(),
            values: cache.values(n, objectives).expect("evaluated before use"),
        }
    };
    for n in &population {
        archive.offer(point(&cache, n));
    }
    for _ in 0..cfg.iterations {
        // Step 5: SPEA2-style fitness over P_t ∪ A (the archive's nodes not already in P_t).
        let mut pool: Vec<Point> = population.iter().map(|n| point(&cache, n)).collect();
        for a in archive.points() {
            if !population.contains(&a.node) {
                pool.push(a);
            }
        }
        let oriented: Vec<Vec<f64>> = pool.iter().map(|p| p.oriented(objectives)).collect();
        let dominates: Vec<Vec<usize>> = oriented
            .iter()
            .map(|a| {
                (0..oriented.len())
                    .filter(|&j| strongly_dominates(a, &oriented[j]))
                    .collect()
            })
            .collect();
        let mut fitness = vec![0usize; pool.len()];
        for victims in &dominates {
            for &j in victims {
                fitness[j] += victims.len();
            }
        }
        // Step 6: binary tournaments.
        let mut selected: Vec<Node> = (0..cfg.population)
            .map(|_| {
                let a = rng.random_range(0..pool.len());
                let b = rng.random_range(0..pool.len());
                let winner = if fitness[b] < fitness[a] { b } else { a };
                pool[winner].node.clone()
            })
            .collect();
        // Step 7: single-point crossover on random pairs, then single-step mutation.
        selected.shuffle(&mut rng);
        let mut next: Vec<Node> = Vec::with_capacity(cfg.population);
        let mut i = 0;
        while next.len() < cfg.population {
            let mut a = selected[i % selected.len()].clone();
            let mut b = if i + 1 < selected.len() {
                selected[i + 1].clone()
            } else {
                selected[rng.random_range(0..selected.len())].clone()
            };
            if q > 1 && rng.random_bool(cfg.p_cross) {
                let cut = rng.random_range(1..q);
                for d in cut..q {
                    std::mem::swap(&mut a[d], &mut b[d]);
                }
            }
            next.push(a);
            if next.len() < cfg.population {
                next.push(b);
            }
            i += 2;
        }
        for node in &mut next {
            for (l, &h) in node.iter_mut().zip(&heights) {
                if rng.random_bool(p_mut) {
                    *l = if rng.random_bool(0.5) {
                        l.saturating_add(1).min(h)
                    } else {
                        l.saturating_sub(1)
                    };
                }
            }
        }
        // Step 8.
        cache.evaluate(&next)?;
        for n in &next {
            archive.offer(point(&cache, n));
        }
        population = next;
    }
    Ok(SearchResult {
        algorithm: "ea",
        objectives: objectives.to_vec(),
        lattice_size: ev.lattice().size_exact(),
        evaluations: cache.evaluations(),
        implied: cache.implied(),
        probes: cache.probes(),
        front: archive.points(),
    })
}
