//! `emd_equal(sensitive, 'profile')`: t-closeness (equal ground distance) of a group's sensitive
//! values against the named profile's input.

use std::sync::LazyLock;

use arrow::datatypes::DataType;
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::Documentation;

use super::histogram::{Finish, HistogramAggregate, HistogramSpec, Profiles, no_param};

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        super::table::doc_section(),
        "t-closeness with equal ground distance of a group: the earth mover's distance (here the total variation distance ½ Σ |p_E(s) − p(s)|) between the distribution of the argument's values in the group and the distribution of the sensitive attribute over the whole input of the named profile. The group is t-close for every t at or above this value. NULLs are ignored; an empty group gives NULL. The profile's input is read once per \
         query (its distribution); a value absent from it is an error. Worked example: p_E = (1/3, 1/3, 1/3) on three of six values whose input shares are (1, 2, 2, 1, 2, 1)/9: ½ (2/9 + 2/9 + 1/9 + 1/9 + 2/9 + 2/9) = 5/9.",
        "emd_equal(sensitive, 'profile')",
    )
    .with_sql_example("SELECT max(emd_equal(occupation, 'adult')) FROM adult GROUP BY generalize(age, 'age', 3), sex;")
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
            "emd_equal: the second argument must be a profile name, got {}",
            args[1]
        );
    }
    Ok(())
}

static SPEC: HistogramSpec = HistogramSpec {
    name: "emd_equal",
    arity: 2,
    check,
    param: no_param,
    finish: Finish::Distance(|d| d.t_equal),
    doc: || &DOC,
};

/// The `emd_equal` aggregate over the profiles of `profiles`.
pub(super) fn emd_equal(profiles: Profiles) -> HistogramAggregate {
    HistogramAggregate::with_profiles(&SPEC, profiles)
}
