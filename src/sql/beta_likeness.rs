//! `beta_likeness(sensitive, 'profile')`: basic β-likeness of a group's sensitive values against
//! the named profile's input.

use std::sync::LazyLock;

use arrow::datatypes::DataType;
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::Documentation;

use super::histogram::{Finish, HistogramAggregate, HistogramSpec, Profiles, no_param};

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        super::table::doc_section(),
        "Basic β-likeness of a group: the largest relative gain (p_E(s) − p(s)) / p(s) of a sensitive value's share in the group over its share in the profile's input, among values more frequent in the group (0 when there is none). NULLs are ignored; an empty group gives NULL. The profile's input is read once per \
         query (its distribution); a value absent from it is an error. Worked example: a value held by 1 of 9 input rows and 1 of the group's 3: (1/3 − 1/9) / (1/9) = 2.",
        "beta_likeness(sensitive, 'profile')",
    )
    .with_sql_example("SELECT max(beta_likeness(occupation, 'adult')) FROM adult GROUP BY generalize(age, 'age', 3);")
    .with_argument(
        "sensitive",
        "The sensitive attribute (any type, compared by text form with the profile's values).",
    )
    .with_argument("profile", "A declared profile (pbg_profile), as a string constant.")
    .build()
});

fn check(args: &[DataType]) -> Result<()> {
    if !matches!(
        args[1],
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    ) {
        return plan_err!(
            "beta_likeness: the second argument must be a profile name, got {}",
            args[1]
        );
    }
    Ok(())
}

static SPEC: HistogramSpec = HistogramSpec {
    name: "beta_likeness",
    arity: 2,
    check,
    param: no_param,
    finish: Finish::Distance(|d| d.beta),
    doc: || &DOC,
};

/// The `beta_likeness` aggregate over the profiles of `profiles`.
pub(super) fn beta_likeness(profiles: Profiles) -> HistogramAggregate {
    HistogramAggregate::with_profiles(&SPEC, profiles)
}
