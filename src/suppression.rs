//! The DBSEC suppression rule with a limit of η tuples.

/// The threshold j of the suppression rule: every class of size ≤ j is suppressed.
///
/// With E_i the tuples in classes of size exactly i, j is the smallest integer with
/// |E_1| + … + |E_{j+1}| > η; the release is then k-anonymous with k = j + 1. `small_sizes` holds the
/// sizes of the classes of size ≤ η (larger ones can never be suppressed). The classes of the
/// largest size `max_size` are never suppressed, so a release is never empty even when η ≥ N.
pub fn suppression_threshold(small_sizes: &mut [u64], eta: u64, max_size: u64) -> u64 {
    small_sizes.sort_unstable();
    let mut suppressed = 0u64;
    let mut j = 0u64;
    for run in small_sizes.chunk_by(|a, b| a == b) {
        let size = run[0];
        let tuples = size * run.len() as u64;
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
        let mut sizes = vec![1; 50];
        sizes.extend(vec![3; 100]);
        assert_eq!(suppression_threshold(&mut sizes, 301, 500), 1);
        assert_eq!(suppression_threshold(&mut sizes, 350, 500), 3);
        assert_eq!(suppression_threshold(&mut sizes, 49, 500), 0);
        // Never the largest classes.
        assert_eq!(suppression_threshold(&mut [2, 2, 3], 100, 3), 2);
    }
}
