//! `recursive_cl(sensitive, c)`: the largest l for which the group is recursive (c,l)-diverse.

use std::sync::LazyLock;

use arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::logical_expr::Documentation;
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::physical_expr::expressions::Literal;

use super::histogram::{Finish, HistogramAggregate, HistogramSpec};

static DOC: LazyLock<Documentation> =
    LazyLock::new(|| {
        Documentation::builder(
        super::table::doc_section(),
        "Largest l for which the group is recursive (c,l)-diverse: with the value counts sorted \
         descending r1 ≥ r2 ≥ … ≥ rm, r1 < c · (r_l + … + r_m). 0 when no l qualifies; NULL for an \
         empty group.",
        "recursive_cl(sensitive, c)",
    )
    .with_sql_example(
        "SELECT min(recursive_cl(occupation, 3)) FROM adult GROUP BY generalize(age, 'age', 3);",
    )
    .with_argument("sensitive", "The sensitive attribute (any type, compared by text form).")
    .with_argument("c", "The constant c > 0.")
    .build()
    });

/// Largest l with r1 < c · Σ_{i ≥ l} r_i (counts sorted descending), 0 if none.
pub(crate) fn recursive_l(counts: &[u64], c: f64) -> Option<f64> {
    let mut r = counts.to_vec();
    r.sort_unstable_by(|a, b| b.cmp(a));
    let first = *r.first()? as f64;
    let mut tail: u64 = r.iter().sum();
    let mut best = 0;
    for (i, &ri) in r.iter().enumerate() {
        // tail = r_{i+1} + … + r_m (1-based l = i + 1)
        if first < c * tail as f64 {
            best = i + 1;
        }
        tail -= ri;
    }
    Some(best as f64)
}

fn c_of(args: &AccumulatorArgs) -> Result<f64> {
    let lit = args.exprs.get(1).and_then(|e| e.downcast_ref::<Literal>());
    let Some(lit) = lit else {
        return plan_err!("recursive_cl: c must be a constant");
    };
    match lit.value().cast_to(&DataType::Float64) {
        Ok(ScalarValue::Float64(Some(c))) if c > 0.0 => Ok(c),
        _ => plan_err!(
            "recursive_cl: c must be a positive number, got {}",
            lit.value()
        ),
    }
}

fn check(_: &str, args: &[DataType]) -> Result<()> {
    if !args[1].is_numeric() {
        return plan_err!("recursive_cl: c must be a number, got {}", args[1]);
    }
    Ok(())
}

static SPEC: HistogramSpec = HistogramSpec {
    name: "recursive_cl",
    arity: 2,
    check,
    param: c_of,
    finish: Finish::Counts(recursive_l),
    doc: || &DOC,
};

/// The `recursive_cl` aggregate.
pub fn recursive_cl() -> HistogramAggregate {
    HistogramAggregate::new(&SPEC)
}

#[cfg(test)]
mod tests {
    use super::recursive_l;

    #[test]
    fn recursive_cl_by_hand() {
        // r = 5,3,2: l=1: 5 < 3·10 ✓; l=2: 5 < 3·5 ✓; l=3: 5 < 3·2 ✓ → 3.
        assert_eq!(recursive_l(&[2, 5, 3], 3.0), Some(3.0));
        // c = 1: l=1: 5 < 10 ✓; l=2: 5 < 5 ✗; l=3: 5 < 2 ✗ → 1.
        assert_eq!(recursive_l(&[2, 5, 3], 1.0), Some(1.0));
        assert_eq!(recursive_l(&[4], 0.5), Some(0.0));
    }
}
