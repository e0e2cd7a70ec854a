//! `max_frequency(sensitive)`: the largest share of one value in the group; the group is
//! probabilistically l-diverse when it is at most 1/l.

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

/// The `max_frequency` aggregate.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct MaxFrequencyFunc {
    signature: Signature,
}

impl MaxFrequencyFunc {
    /// Creates the function.
    pub fn new() -> Self {
        MaxFrequencyFunc {
            signature: Signature::one_of(vec![TypeSignature::Any(1)], Volatility::Immutable),
        }
    }
}

impl AggregateUDFImpl for MaxFrequencyFunc {
    fn name(&self) -> &str {
        "max_frequency"
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
    fn share_of_the_most_frequent_value() {
        assert_eq!(super::finish(&[1, 3], 0.0), Some(0.75));
    }
}
