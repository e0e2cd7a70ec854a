//! `recursive_cl(sensitive, c)`: the largest l for which the group is recursive (c,l)-diverse.

use std::sync::LazyLock;

use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, Documentation, GroupsAccumulator, Signature, TypeSignature,
    Volatility,
};
use datafusion::physical_expr::expressions::Literal;

use super::histogram::{HistogramAccumulator, HistogramGroups, state_fields};

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

/// The `recursive_cl` aggregate.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RecursiveClFunc {
    signature: Signature,
}

impl RecursiveClFunc {
    /// Creates the function.
    pub fn new() -> Self {
        RecursiveClFunc {
            signature: Signature::one_of(vec![TypeSignature::Any(2)], Volatility::Immutable),
        }
    }
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

impl AggregateUDFImpl for RecursiveClFunc {
    fn name(&self) -> &str {
        "recursive_cl"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !args[1].is_numeric() {
            return plan_err!("recursive_cl: c must be a number, got {}", args[1]);
        }
        Ok(DataType::Float64)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(HistogramAccumulator(HistogramGroups::new(
            recursive_l,
            c_of(&args)?,
        ))))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        state_fields(args)
    }

    fn groups_accumulator_supported(&self, _: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(HistogramGroups::new(recursive_l, c_of(&args)?)))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
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
