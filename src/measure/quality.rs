//! Quality index functions on property vectors (EDBT 2009, DBSEC 2010 §4.1).
//!
//! Unary indices map one vector to a number (min, sum, average, rank); binary indices compare two
//! vectors of the same length (coverage, spread, hypervolume, P_binary). Vectors are oriented so
//! that larger is better (privacy properties); negate a loss first to use it here.

/// The smallest value (the worst-case index: k for P_equiv).
pub fn min(d: &[f64]) -> f64 {
    d.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The sum S_P; by the DBSEC Observation it orders nodes exactly as the binary spread index.
pub fn sum(d: &[f64]) -> f64 {
    d.iter().sum()
}

/// The average value.
pub fn average(d: &[f64]) -> f64 {
    if d.is_empty() {
        0.0
    } else {
        sum(d) / d.len() as f64
    }
}

/// Rank: the Euclidean distance of `d` to a point of interest `d_max` (smaller is closer).
/// Components within `tolerance` of the point count as reached.
pub fn rank(d: &[f64], d_max: &[f64], tolerance: f64) -> f64 {
    d.iter()
        .zip(d_max)
        .map(|(a, b)| {
            let gap = (b - a).abs();
            if gap <= tolerance { 0.0 } else { gap * gap }
        })
        .sum::<f64>()
        .sqrt()
}

/// Coverage `P_cov(D1,D2) = |{i : d1_i ≥ d2_i}| / N`.
pub fn coverage(d1: &[f64], d2: &[f64]) -> f64 {
    if d1.is_empty() {
        return 0.0;
    }
    d1.iter().zip(d2).filter(|(a, b)| a >= b).count() as f64 / d1.len() as f64
}

/// Spread `P_spr(D1,D2) = Σ max(d1_i − d2_i, 0)`.
pub fn spread(d1: &[f64], d2: &[f64]) -> f64 {
    d1.iter().zip(d2).map(|(a, b)| (a - b).max(0.0)).sum()
}

/// `P_binary(D1,D2) = |{i : d1_i > d2_i}|`.
pub fn binary(d1: &[f64], d2: &[f64]) -> u64 {
    d1.iter().zip(d2).filter(|(a, b)| a > b).count() as u64
}

/// Natural log of the hypervolume `P_hv(D1,D2) = Π d1_i − Π min(d1_i, d2_i)`, computed in log space
/// so that vectors of any length work (the products overflow past ~60 elements). Values must be
/// positive; `-inf` means a hypervolume of zero.
pub fn hypervolume_ln(d1: &[f64], d2: &[f64]) -> f64 {
    if d1.iter().any(|a| *a <= 0.0) {
        return f64::NEG_INFINITY; // Π d1 = 0, and Π min(d1, d2) ≤ it
    }
    if d1.iter().zip(d2).any(|(_, b)| *b <= 0.0) {
        return d1.iter().map(|a| a.ln()).sum(); // Π min(d1, d2) = 0
    }
    let ln_a: f64 = d1.iter().map(|a| a.ln()).sum();
    let ln_b: f64 = d1.iter().zip(d2).map(|(a, b)| a.min(*b).ln()).sum();
    let ratio = (ln_b - ln_a).exp(); // ≤ 1, since min(a, b) ≤ a
    if ratio >= 1.0 {
        f64::NEG_INFINITY
    } else {
        ln_a + (-ratio).ln_1p()
    }
}

/// The hypervolume `P_hv(D1,D2)` itself (may be +inf for long vectors: prefer [`hypervolume_ln`]).
pub fn hypervolume(d1: &[f64], d2: &[f64]) -> f64 {
    hypervolume_ln(d1, d2).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hypervolume_of_long_vectors_is_finite_in_log_space() {
        let a = vec![10.0; 500];
        let b = vec![5.0; 500];
        let ln = hypervolume_ln(&a, &b);
        assert!((ln - 500.0 * 10f64.ln()).abs() < 1e-9);
        assert_eq!(hypervolume_ln(&b, &a), f64::NEG_INFINITY);
    }

    #[test]
    fn rank_is_a_distance_with_tolerance() {
        assert_eq!(rank(&[3.0, 4.0], &[0.0, 0.0], 0.0), 5.0);
        assert_eq!(rank(&[3.0, 4.0], &[3.5, 0.0], 0.5), 4.0);
    }
}
