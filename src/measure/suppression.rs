//! The DBSEC suppression rule with a limit of η tuples.

/// The threshold j of the suppression rule: every class of size ≤ j is suppressed.
///
/// With E_i the tuples in classes of size exactly i, j is the smallest integer with
/// |E_1| + … + |E_{j+1}| > η; the release is then k-anonymous with k = j + 1. `sizes` gives, in
/// ascending order of size, each class size present with its tuple count |E_size| (sizes above η
/// may be left out: they can never be suppressed). Classes of the largest size `max_size` are never
/// suppressed, so a release is never empty even when η ≥ N.
pub fn suppression_threshold(
    sizes: impl IntoIterator<Item = (u64, u64)>,
    eta: u64,
    max_size: u64,
) -> u64 {
    let mut suppressed = 0u64;
    let mut j = 0u64;
    for (size, tuples) in sizes {
        if size >= max_size || suppressed + tuples > eta {
            break;
        }
        suppressed += tuples;
        j = size;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::suppression_threshold;

    #[test]
    fn follows_the_dbsec_rule() {
        // E_1 = 50 tuples, E_3 = 300 tuples: with η = 301 only the singletons go (k = 3).
        let sizes = [(1, 50), (3, 300)];
        assert_eq!(suppression_threshold(sizes, 301, 500), 1);
        assert_eq!(suppression_threshold(sizes, 350, 500), 3);
        assert_eq!(suppression_threshold(sizes, 49, 500), 0);
        // Never the largest classes.
        assert_eq!(suppression_threshold([(2, 4), (3, 3)], 100, 3), 2);
    }
}
