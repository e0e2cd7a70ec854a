//! `max_frequency(sensitive)`: the largest share of one value in the group; the group is
//! probabilistically l-diverse when it is at most 1/l.

use std::sync::LazyLock;

use datafusion::logical_expr::Documentation;

use super::histogram::{Finish, HistogramAggregate, HistogramSpec, any_types, no_param};

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        super::table::doc_section(),
        "Largest relative frequency of one value of the argument in the group (probabilistic \
         l-diversity holds for l ≤ 1 / max_frequency). NULLs are ignored; an empty group gives NULL.",
        "max_frequency(sensitive)",
    )
    .with_sql_example(
        "SELECT 1 / max(f) AS l FROM (SELECT max_frequency(occupation) AS f FROM adult \
         GROUP BY generalize(age, 'age', 3));",
    )
    .with_argument("sensitive", "The sensitive attribute (any type, compared by text form).")
    .build()
});

fn finish(counts: &[u64], _: f64) -> Option<f64> {
    let n: u64 = counts.iter().sum();
    counts.iter().max().map(|&m| m as f64 / n as f64)
}

static SPEC: HistogramSpec = HistogramSpec {
    name: "max_frequency",
    arity: 1,
    check: any_types,
    param: no_param,
    finish: Finish::Counts(finish),
    doc: || &DOC,
};

/// The `max_frequency` aggregate.
pub fn max_frequency() -> HistogramAggregate {
    HistogramAggregate::new(&SPEC)
}

#[cfg(test)]
mod tests {
    #[test]
    fn share_of_the_most_frequent_value() {
        assert_eq!(super::finish(&[1, 3], 0.0), Some(0.75));
    }
}
