//! The exact Pareto front (set of minimal PBGs) of a set of evaluated nodes.

use std::cmp::Ordering;

use super::Point;
use crate::dominance::strongly_dominates;
use crate::objective::Objective;

fn lexicographic_desc(a: &[f64], b: &[f64]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match y.total_cmp(x) {
            Ordering::Equal => continue,
            other => return other,
        }
    }
    Ordering::Equal
}

/// The points no other point strongly dominates (nodes with equal values are all kept), sorted by
/// their values (first objective ascending, then the next, then by node).
///
/// Points are scanned in decreasing lexicographic order of their oriented values: a dominator
/// always comes first, and a dominated dominator is itself dominated by a front member, so each
/// point is only checked against the front found so far.
pub fn pareto_front(points: Vec<Point>, objectives: &[Objective]) -> Vec<Point> {
    let mut oriented: Vec<(Vec<f64>, Point)> = points
        .into_iter()
        .map(|p| (p.oriented(objectives), p))
        .collect();
    oriented.sort_by(|a, b| lexicographic_desc(&a.0, &b.0).then_with(|| a.1.node.cmp(&b.1.node)));
    let mut front: Vec<(Vec<f64>, Point)> = Vec::new();
    for (o, p) in oriented {
        if !front.iter().any(|(f, _)| strongly_dominates(f, &o)) {
            front.push((o, p));
        }
    }
    let mut front: Vec<Point> = front.into_iter().map(|(_, p)| p).collect();
    front.sort_by(|a, b| {
        a.values
            .iter()
            .zip(&b.values)
            .map(|(x, y)| x.total_cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.node.cmp(&b.node))
    });
    front
}
