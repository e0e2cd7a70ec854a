//! Comparators for several properties at once (EDBT 2009 §5.5–5.7): WTD, LEX and GOAL.
//!
//! Each takes, per property i, the quality index `p[i]` of one generalization (a unary index, or a
//! binary index P(D1_i, D2_i) against the other generalization), oriented so that larger is better.

use std::cmp::Ordering;

/// WTD: the weighted sum Σ w_i · p_i (normalize the p_i first when their scales differ).
pub fn wtd(weights: &[f64], p: &[f64]) -> f64 {
    weights.iter().zip(p).map(|(w, x)| w * x).sum()
}

/// LEX: compares two index vectors property by property in the given order; the first property on
/// which they differ by more than its significance `epsilon[i]` decides. `Greater` means `p1` is better.
pub fn lex(order: &[usize], epsilon: &[f64], p1: &[f64], p2: &[f64]) -> Ordering {
    for &i in order {
        let d = p1[i] - p2[i];
        if d > epsilon[i] {
            return Ordering::Greater;
        }
        if -d > epsilon[i] {
            return Ordering::Less;
        }
    }
    Ordering::Equal
}

/// GOAL: the sum of squared errors Σ (p_i − g_i)² from a goal vector (smaller is better).
pub fn goal(goal: &[f64], p: &[f64]) -> f64 {
    goal.iter().zip(p).map(|(g, x)| (x - g) * (x - g)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparators() {
        assert_eq!(wtd(&[0.5, 0.5], &[2.0, 4.0]), 3.0);
        // Property 0 differs by 0.5 only (≤ ε 1): property 1 decides.
        assert_eq!(
            lex(&[0, 1], &[1.0, 0.0], &[3.0, 1.0], &[3.5, 2.0]),
            Ordering::Less
        );
        assert_eq!(
            lex(&[1, 0], &[1.0, 5.0], &[3.0, 1.0], &[5.0, 2.0]),
            Ordering::Less
        );
        assert_eq!(
            lex(&[0, 1], &[1.0, 5.0], &[3.0, 1.0], &[3.5, 2.0]),
            Ordering::Equal
        );
        assert_eq!(goal(&[1.0, 1.0], &[2.0, 3.0]), 5.0);
    }
}
