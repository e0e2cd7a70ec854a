//! Quality of a search against the exact front: convergence error (CE) and representation ratio (RR).

use std::collections::HashSet;

use super::Point;
use super::archive::cell_of;
use crate::dominance::strongly_dominates;
use crate::objective::Objective;

/// CE: the sum over archive nodes of the Euclidean distance to the nearest front node, each objective
/// divided by its largest absolute value over the front.
pub fn convergence_error(archive: &[Point], front: &[Point]) -> f64 {
    let Some(first) = front.first() else {
        return 0.0;
    };
    let scale: Vec<f64> = (0..first.values.len())
        .map(|i| {
            let m = front.iter().map(|p| p.values[i].abs()).fold(0.0, f64::max);
            if m > 0.0 { m } else { 1.0 }
        })
        .collect();
    archive
        .iter()
        .map(|a| {
            front
                .iter()
                .map(|f| {
                    a.values
                        .iter()
                        .zip(&f.values)
                        .zip(&scale)
                        .map(|((x, y), s)| ((x - y) / s).powi(2))
                        .sum::<f64>()
                        .sqrt()
                })
                .fold(f64::INFINITY, f64::min)
        })
        .sum()
}

/// RR: the share of the front's non-dominated boxes (under `epsilon`) that hold an archive node.
pub fn representation_ratio(
    archive: &[Point],
    front: &[Point],
    objectives: &[Objective],
    epsilon: &[f64],
) -> f64 {
    let boxes: HashSet<Vec<i64>> = front
        .iter()
        .map(|p| cell_of(objectives, epsilon, &p.values))
        .collect();
    let marked: Vec<&Vec<i64>> = boxes
        .iter()
        .filter(|b| !boxes.iter().any(|o| strongly_dominates(o, b)))
        .collect();
    if marked.is_empty() {
        return 1.0;
    }
    let held: HashSet<Vec<i64>> = archive
        .iter()
        .map(|p| cell_of(objectives, epsilon, &p.values))
        .collect();
    marked.iter().filter(|b| held.contains(**b)).count() as f64 / marked.len() as f64
}
