//! PBG search: the exact front of the lattice, the box-dominance archive and PBG-EA.

mod archive;
pub(crate) mod cache;
mod ea;
mod front;
mod metrics;

use serde::Serialize;

use crate::error::Result;
use crate::evaluate::Evaluator;
use crate::lattice::Node;
use crate::objective::{Objective, values};

pub use archive::BoxArchive;
pub use ea::{EaConfig, pbg_ea};
pub use front::pareto_front;
pub use metrics::{convergence_error, representation_ratio};

/// A node with the raw values of the search objectives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// The node.
    pub node: Node,
    /// One value per objective, raw (not oriented).
    pub values: Vec<f64>,
}

impl Point {
    /// Values oriented so that larger is better.
    pub fn oriented(&self, objectives: &[Objective]) -> Vec<f64> {
        objectives
            .iter()
            .zip(&self.values)
            .map(|(o, v)| o.oriented(*v))
            .collect()
    }
}

/// The outcome of a search.
#[derive(Debug, Clone)]
pub struct SearchResult {
    /// `exhaustive` or `ea`.
    pub algorithm: &'static str,
    /// The objectives, in the order given.
    pub objectives: Vec<Objective>,
    /// Nodes in the lattice.
    pub lattice_size: u128,
    /// Unique nodes evaluated (implied ones included).
    pub evaluations: usize,
    /// Of those, nodes whose objectives followed from a coarser node's singleton tuples, with
    /// nothing computed from the data ([`crate::indices::SingletonIndices`]).
    pub implied: usize,
    /// Coarser nodes evaluated only to look for singleton tuples that imply generated ones (not
    /// counted in `evaluations`).
    pub probes: usize,
    /// The minimal PBGs found (the exact front, or the archive).
    pub front: Vec<Point>,
}

/// Nodes evaluated at a time by [`exhaustive`]: the front of each block is merged into the
/// front so far, so that the lattice is never held whole.
const EXHAUSTIVE_BLOCK: usize = 1 << 18;

/// Exhaustive search: every node evaluated (by roll-ups, in parallel), the exact set of minimal PBGs.
pub fn exhaustive(ev: &Evaluator, objectives: &[Objective]) -> Result<SearchResult> {
    // The cheapest tables that still give the objectives exactly (one cell per class when the
    // sensitive attribute matters at most through distinct l).
    let light = ev.for_objectives(objectives)?;
    let ev = &light;
    let mut front = Vec::new();
    let mut evaluations = 0;
    // The front of the nodes so far and a block is the front of both: a node one of them
    // dominates is dominated.
    ev.sweep_lattice(EXHAUSTIVE_BLOCK, &|| {}, &mut |block| {
        evaluations += block.len();
        let mut points = std::mem::take(&mut front);
        points.extend(block.iter().map(|ix| Point {
            node: ix.node.clone(),
            values: values(objectives, ix),
        }));
        front = pareto_front(points, objectives);
        Ok(true)
    })?;
    Ok(SearchResult {
        algorithm: "exhaustive",
        objectives: objectives.to_vec(),
        lattice_size: ev.lattice().size_exact(),
        evaluations,
        implied: 0,
        probes: 0,
        front,
    })
}
