//! The box-dominance archive (DBSEC 2010, Algorithm 1).

use super::Point;
use crate::dominance::strongly_dominates;
use crate::error::{PbgError, Result};
use crate::objective::Objective;

#[derive(Debug, Clone)]
struct Member {
    point: Point,
    oriented: Vec<f64>,
    /// Box coordinates floor(I_i / ε_i), oriented like the values.
    cell: Vec<i64>,
}

/// An archive that keeps at most one node per box of the ε-grid and only non-dominated boxes.
#[derive(Debug, Clone)]
pub struct BoxArchive {
    objectives: Vec<Objective>,
    epsilon: Vec<f64>,
    members: Vec<Member>,
}

impl BoxArchive {
    /// An empty archive for `objectives` with discretization vector `epsilon` (all > 0).
    pub fn new(objectives: &[Objective], epsilon: &[f64]) -> Result<Self> {
        if epsilon.len() != objectives.len() {
            return Err(PbgError::argument(
                "epsilon",
                format!(
                    "{} values for {} objectives",
                    epsilon.len(),
                    objectives.len()
                ),
            ));
        }
        if let Some(e) = epsilon.iter().find(|e| !(e.is_finite() && **e > 0.0)) {
            return Err(PbgError::argument(
                "epsilon",
                format!("{e} is not a positive number"),
            ));
        }
        Ok(BoxArchive {
            objectives: objectives.to_vec(),
            epsilon: epsilon.to_vec(),
            members: Vec::new(),
        })
    }

    /// The box of raw values, oriented (larger is better).
    pub fn cell(&self, values: &[f64]) -> Vec<i64> {
        cell_of(&self.objectives, &self.epsilon, values)
    }

    fn member(&self, point: Point) -> Member {
        Member {
            oriented: point.oriented(&self.objectives),
            cell: self.cell(&point.values),
            point,
        }
    }

    /// Offers a candidate (Algorithm 1); returns whether it entered the archive.
    pub fn offer(&mut self, point: Point) -> bool {
        let cand = self.member(point);
        // Steps 2–3: drop the members the candidate box-dominates.
        self.members.retain(|m| !box_dominates(&cand, m));
        // Steps 4–6: enter only if nothing box-dominates it and its box is free.
        let dominated = self.members.iter().any(|m| box_dominates(m, &cand));
        let same_box = self.members.iter().any(|m| m.cell == cand.cell);
        if dominated || same_box {
            return false;
        }
        self.members.push(cand);
        true
    }

    /// The archived nodes, in order of entry.
    pub fn points(&self) -> Vec<Point> {
        self.members.iter().map(|m| m.point.clone()).collect()
    }

    /// Number of archived nodes.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether the archive is empty.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

/// The oriented box of raw values under `epsilon`.
pub(crate) fn cell_of(objectives: &[Objective], epsilon: &[f64], values: &[f64]) -> Vec<i64> {
    objectives
        .iter()
        .zip(epsilon)
        .zip(values)
        .map(|((o, e), v)| {
            let b = (v / e).floor() as i64;
            if o.maximize() { b } else { -b }
        })
        .collect()
}

/// Box dominance: by boxes when they differ, by the values inside one box.
fn box_dominates(a: &Member, b: &Member) -> bool {
    if a.cell != b.cell {
        strongly_dominates(&a.cell, &b.cell)
    } else {
        strongly_dominates(&a.oriented, &b.oriented)
    }
}
