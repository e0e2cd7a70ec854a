//! `entropy_l(sensitive)`: exp of the Shannon entropy (nats) of the group's sensitive values — the
//! group is entropy-l-diverse for every l up to this value.

use std::sync::LazyLock;

use datafusion::logical_expr::Documentation;

use super::histogram::{Finish, HistogramAggregate, HistogramSpec, any_types, no_param};

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        super::table::doc_section(),
        "Entropy l-diversity of a group: exp of the Shannon entropy (natural log) of the \
         distribution of the argument's values. NULLs are ignored; an empty group gives NULL.",
        "entropy_l(sensitive)",
    )
    .with_sql_example(
        "SELECT min(l) FROM (SELECT entropy_l(occupation) AS l FROM adult \
         GROUP BY generalize(age, 'age', 2), generalize(sex, 'sex', 0));",
    )
    .with_argument(
        "sensitive",
        "The sensitive attribute (any type, compared by text form).",
    )
    .build()
});

fn finish(counts: &[u64], _: f64) -> Option<f64> {
    let n: u64 = counts.iter().sum();
    let h: f64 = counts
        .iter()
        .map(|&c| {
            let p = c as f64 / n as f64;
            -p * p.ln()
        })
        .sum();
    // Equally frequent values: exactly their number (exp(H) would round it, e.g. to 1.9999999999999998).
    let uniform = counts.iter().all(|&c| c == counts[0]);
    Some(if uniform {
        counts.len() as f64
    } else {
        h.exp()
    })
}

static SPEC: HistogramSpec = HistogramSpec {
    name: "entropy_l",
    arity: 1,
    check: any_types,
    param: no_param,
    finish: Finish::Counts(finish),
    doc: || &DOC,
};

/// The `entropy_l` aggregate.
pub fn entropy_l() -> HistogramAggregate {
    HistogramAggregate::new(&SPEC)
}

#[cfg(test)]
mod tests {
    #[test]
    fn uniform_histogram_has_entropy_l_equal_to_its_support() {
        assert_eq!(super::finish(&[3, 3, 3], 0.0), Some(3.0));
        assert_eq!(super::finish(&[3, 3], 0.0), Some(2.0));
        assert!((super::finish(&[1, 3], 0.0).unwrap() - 1.7547653).abs() < 1e-6);
        assert_eq!(super::finish(&[5], 0.0), Some(1.0));
    }
}
