//! Strict comparators (EDBT 2009 Table 4) on vectors oriented so that larger is better, and on sets
//! (tuples) of such vectors, one per property.

/// How two vectors relate under strong dominance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    /// The first strongly dominates the second.
    ADominates,
    /// The second strongly dominates the first.
    BDominates,
    /// Equal vectors.
    Equal,
    /// Neither dominates (non-dominance).
    Incomparable,
}

impl Relation {
    /// `a_dominates`, `b_dominates`, `equal` or `incomparable`.
    pub fn name(&self) -> &'static str {
        match self {
            Relation::ADominates => "a_dominates",
            Relation::BDominates => "b_dominates",
            Relation::Equal => "equal",
            Relation::Incomparable => "incomparable",
        }
    }
}

/// Weak dominance: `a_i ≥ b_i` for every i ("not worse than").
pub fn weakly_dominates<T: PartialOrd>(a: &[T], b: &[T]) -> bool {
    a.iter().zip(b).all(|(x, y)| x >= y)
}

/// Strong dominance: weak dominance and `a_j > b_j` for some j ("better than").
pub fn strongly_dominates<T: PartialOrd>(a: &[T], b: &[T]) -> bool {
    weakly_dominates(a, b) && a.iter().zip(b).any(|(x, y)| x > y)
}

/// Non-dominance: each is larger somewhere ("incomparable").
pub fn non_dominated<T: PartialOrd>(a: &[T], b: &[T]) -> bool {
    a.iter().zip(b).any(|(x, y)| x < y) && a.iter().zip(b).any(|(x, y)| x > y)
}

/// The relation of `a` to `b`.
pub fn relation<T: PartialOrd>(a: &[T], b: &[T]) -> Relation {
    if strongly_dominates(a, b) {
        Relation::ADominates
    } else if strongly_dominates(b, a) {
        Relation::BDominates
    } else if weakly_dominates(a, b) && weakly_dominates(b, a) {
        Relation::Equal
    } else {
        Relation::Incomparable
    }
}

/// Weak dominance of sets of property vectors: every property's vector weakly dominates.
pub fn sets_weakly_dominate(a: &[Vec<f64>], b: &[Vec<f64>]) -> bool {
    a.iter().zip(b).all(|(x, y)| weakly_dominates(x, y))
}

/// Strong dominance of sets: weak on every property, strong on one.
pub fn sets_strongly_dominate(a: &[Vec<f64>], b: &[Vec<f64>]) -> bool {
    sets_weakly_dominate(a, b) && a.iter().zip(b).any(|(x, y)| strongly_dominates(x, y))
}

/// Non-dominance of sets: each set strongly dominates the other on some property.
pub fn sets_non_dominated(a: &[Vec<f64>], b: &[Vec<f64>]) -> bool {
    a.iter().zip(b).any(|(x, y)| strongly_dominates(x, y))
        && a.iter().zip(b).any(|(x, y)| strongly_dominates(y, x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_comparators() {
        assert!(weakly_dominates(&[1, 2], &[1, 2]));
        assert!(!strongly_dominates(&[1, 2], &[1, 2]));
        assert!(strongly_dominates(&[1, 3], &[1, 2]));
        assert!(non_dominated(&[1, 3], &[2, 2]));
        assert_eq!(relation(&[1, 3], &[2, 2]), Relation::Incomparable);
        assert_eq!(relation(&[2, 2], &[2, 2]), Relation::Equal);
        assert_eq!(relation(&[1, 2], &[2, 2]), Relation::BDominates);
    }

    #[test]
    fn set_comparators() {
        let a = vec![vec![2.0, 2.0], vec![1.0]];
        let b = vec![vec![1.0, 2.0], vec![1.0]];
        assert!(sets_weakly_dominate(&a, &b) && sets_strongly_dominate(&a, &b));
        let c = vec![vec![1.0, 2.0], vec![3.0]];
        assert!(sets_non_dominated(&a, &c));
    }
}
