//! Attribute partitioning: which attributes share a column of the sliced table. The paper's
//! chi_matrix pairing (pairs of the most correlated attributes by χ², each attribute in one pair),
//! k-medoids (PAM) on the distance 1 − φ², or a partition the user gives.

use crate::error::{PbgError, Result};

use super::correlation::CorrelationMatrix;

/// A partition of attributes (indices into a name list) into columns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributePartition {
    /// The columns, each a list of attribute indices.
    pub columns: Vec<Vec<usize>>,
}

/// chi_matrix (IJERT 2013 §5.1): every pair sorted by χ² descending; a pair becomes a column when
/// neither attribute is taken yet and χ² > 0; attributes left over are columns of their own.
pub fn chi_matrix(m: &CorrelationMatrix) -> AttributePartition {
    let n = m.columns.len();
    let mut pairs: Vec<(f64, usize, usize)> = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            pairs.push((m.chi_square[i][j], i, j));
        }
    }
    // Descending χ²; ties by position so the result does not depend on the sort.
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2))));
    let mut used = vec![false; n];
    let mut columns = Vec::new();
    for (chi, i, j) in pairs {
        if chi <= 0.0 {
            break; // uncorrelated from here on
        }
        if !used[i] && !used[j] {
            used[i] = true;
            used[j] = true;
            columns.push(vec![i, j]);
        }
    }
    columns.extend((0..n).filter(|&i| !used[i]).map(|i| vec![i]));
    AttributePartition { columns }
}

/// Total distance of every point to its nearest medoid.
fn cost(d: &[Vec<f64>], medoids: &[usize]) -> f64 {
    (0..d.len())
        .map(|i| {
            medoids
                .iter()
                .map(|&m| d[i][m])
                .fold(f64::INFINITY, f64::min)
        })
        .sum()
}

/// k-medoids by PAM (BUILD, then SWAP until no swap lowers the cost) on 1 − φ²; deterministic.
/// `k` columns (at least 1, at most the number of attributes).
pub fn pam(m: &CorrelationMatrix, k: usize) -> Result<AttributePartition> {
    let n = m.columns.len();
    if k == 0 || k > n {
        return Err(PbgError::argument(
            "columns",
            format!("PAM needs between 1 and {n} columns, got {k}"),
        ));
    }
    let d: Vec<Vec<f64>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if i == j {
                        0.0
                    } else {
                        1.0 - m.phi_squared[i][j]
                    }
                })
                .collect()
        })
        .collect();
    // BUILD: greedily add the medoid that lowers the cost most.
    let mut medoids: Vec<usize> = Vec::with_capacity(k);
    while medoids.len() < k {
        let best = (0..n)
            .filter(|c| !medoids.contains(c))
            .map(|c| {
                let mut with = medoids.clone();
                with.push(c);
                (cost(&d, &with), c)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        match best {
            Some((_, c)) => medoids.push(c),
            None => break,
        }
    }
    // SWAP: the best improving (medoid, non-medoid) exchange, until none improves.
    loop {
        let current = cost(&d, &medoids);
        let mut best: Option<(f64, usize, usize)> = None;
        for mi in 0..medoids.len() {
            for o in (0..n).filter(|o| !medoids.contains(o)) {
                let mut trial = medoids.clone();
                trial[mi] = o;
                let c = cost(&d, &trial);
                if c < current - 1e-12 && best.is_none_or(|b| c < b.0) {
                    best = Some((c, mi, o));
                }
            }
        }
        match best {
            Some((_, mi, o)) => medoids[mi] = o,
            None => break,
        }
    }
    medoids.sort_unstable();
    let mut columns: Vec<Vec<usize>> = vec![Vec::new(); medoids.len()];
    for (i, row) in d.iter().enumerate() {
        let nearest = (0..medoids.len())
            .min_by(|&a, &b| row[medoids[a]].total_cmp(&row[medoids[b]]).then(a.cmp(&b)))
            .unwrap_or(0);
        columns[nearest].push(i);
    }
    columns.retain(|c| !c.is_empty());
    Ok(AttributePartition { columns })
}

/// A partition written as `a+b,c+d`: every attribute of `names` in exactly one column, except
/// those listed in `optional`, which may also be left out.
pub fn parse_partition(
    text: &str,
    names: &[String],
    optional: &[usize],
) -> Result<AttributePartition> {
    let arg = "partition";
    let mut seen = vec![false; names.len()];
    let mut columns = Vec::new();
    for col in text.split(',') {
        let mut c = Vec::new();
        for a in col.split('+') {
            let a = a.trim();
            let i = names.iter().position(|n| n == a).ok_or_else(|| {
                PbgError::argument(
                    arg,
                    format!(
                        "`{a}` is not an attribute of the slicing (they are: {})",
                        names.join(", ")
                    ),
                )
            })?;
            if seen[i] {
                return Err(PbgError::argument(arg, format!("`{a}` is in two columns")));
            }
            seen[i] = true;
            c.push(i);
        }
        columns.push(c);
    }
    if let Some(i) = (0..names.len()).find(|&i| !seen[i] && !optional.contains(&i)) {
        return Err(PbgError::argument(
            arg,
            format!("`{}` is in no column: every attribute needs one", names[i]),
        ));
    }
    Ok(AttributePartition { columns })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(chi: Vec<Vec<f64>>) -> CorrelationMatrix {
        let n = chi.len();
        let phi = chi
            .iter()
            .map(|r| r.iter().map(|v| (v / 100.0).min(1.0)).collect())
            .collect();
        CorrelationMatrix {
            columns: (0..n).map(|i| format!("a{i}")).collect(),
            chi_square: chi,
            phi_squared: phi,
        }
    }

    #[test]
    fn chi_matrix_pairs_the_most_correlated_first() {
        // a0–a2 90, a1–a3 50, a0–a1 80 (a0 already taken), a4 left alone.
        let chi = vec![
            vec![0.0, 80.0, 90.0, 1.0, 2.0],
            vec![80.0, 0.0, 3.0, 50.0, 4.0],
            vec![90.0, 3.0, 0.0, 5.0, 6.0],
            vec![1.0, 50.0, 5.0, 0.0, 7.0],
            vec![2.0, 4.0, 6.0, 7.0, 0.0],
        ];
        let p = chi_matrix(&matrix(chi));
        assert_eq!(p.columns, vec![vec![0, 2], vec![1, 3], vec![4]]);
    }

    #[test]
    fn pam_groups_close_attributes() {
        // Two tight groups {0,1} and {2,3}.
        let chi = vec![
            vec![100.0, 90.0, 5.0, 5.0],
            vec![90.0, 100.0, 5.0, 5.0],
            vec![5.0, 5.0, 100.0, 95.0],
            vec![5.0, 5.0, 95.0, 100.0],
        ];
        let p = pam(&matrix(chi), 2).unwrap();
        assert_eq!(p.columns, vec![vec![0, 1], vec![2, 3]]);
        assert!(pam(&matrix(vec![vec![0.0]]), 2).is_err());
    }

    #[test]
    fn user_partitions_are_checked() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            parse_partition("a+c,b", &names, &[]).unwrap().columns,
            vec![vec![0, 2], vec![1]]
        );
        assert!(parse_partition("a+x,b,c", &names, &[]).is_err());
        assert!(parse_partition("a+b,b+c", &names, &[]).is_err());
        assert!(parse_partition("a+b", &names, &[]).is_err());
        assert_eq!(
            parse_partition("a+b", &names, &[2]).unwrap().columns,
            vec![vec![0, 1]]
        );
    }
}
