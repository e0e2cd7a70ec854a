//! `emd_ordered(sensitive, 'profile')`: t-closeness (ordered ground distance) of a group's
//! sensitive values against the named profile's input.

use std::sync::LazyLock;

use arrow::datatypes::DataType;
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::Documentation;

use super::histogram::{Finish, HistogramAggregate, HistogramSpec, Profiles, no_param};

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        super::table::doc_section(),
        "t-closeness with ordered ground distance: the earth mover's distance over the sensitive values ordered (by the sensitive hierarchy's rows when the profile has one, numerically when every value is a number, else by text), (1/(M−1)) Σ_i |Σ_{j≤i} (p_E(v_j) − p(v_j))| with M the number of distinct sensitive values in the profile's input. NULLs are ignored; an empty group gives NULL. The profile's input is read once per \
         query (its distribution); a value absent from it is an error. Worked example: salaries 3k..11k (one each), group {3k, 4k, 5k}: 0.375.",
        "emd_ordered(sensitive, 'profile')",
    )
    .with_sql_example("SELECT max(emd_ordered(salary, 'salaries')) FROM people GROUP BY zip;")
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
            "emd_ordered: the second argument must be a profile name, got {}",
            args[1]
        );
    }
    Ok(())
}

static SPEC: HistogramSpec = HistogramSpec {
    name: "emd_ordered",
    arity: 2,
    check,
    param: no_param,
    finish: Finish::Distance(|d| d.t_ordered),
    doc: || &DOC,
};

/// The `emd_ordered` aggregate over the profiles of `profiles`.
pub(super) fn emd_ordered(profiles: Profiles) -> HistogramAggregate {
    HistogramAggregate::with_profiles(&SPEC, profiles)
}
