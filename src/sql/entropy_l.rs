//! `entropy_l(sensitive)`: exp of the Shannon entropy (nats) of the group's sensitive values — the
//! group is entropy-l-diverse for every l up to this value.

use std::sync::LazyLock;

use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, Documentation, GroupsAccumulator, Signature, TypeSignature,
    Volatility,
};

use super::histogram::{HistogramAccumulator, HistogramGroups, state_fields};

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
    Some(if counts.len() == 1 { 1.0 } else { h.exp() })
}

/// The `entropy_l` aggregate.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct EntropyLFunc {
    signature: Signature,
}

impl EntropyLFunc {
    /// Creates the function.
    pub fn new() -> Self {
        EntropyLFunc {
            signature: Signature::one_of(vec![TypeSignature::Any(1)], Volatility::Immutable),
        }
    }
}

impl AggregateUDFImpl for EntropyLFunc {
    fn name(&self) -> &str {
        "entropy_l"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(HistogramAccumulator(HistogramGroups::new(
            finish, 0.0,
        ))))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        state_fields(args)
    }

    fn groups_accumulator_supported(&self, _: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(HistogramGroups::new(finish, 0.0)))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOC)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn uniform_histogram_has_entropy_l_equal_to_its_support() {
        assert!((super::finish(&[3, 3, 3], 0.0).unwrap() - 3.0).abs() < 1e-12);
        assert_eq!(super::finish(&[5], 0.0), Some(1.0));
    }
}
