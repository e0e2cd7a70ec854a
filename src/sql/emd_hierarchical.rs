//! `emd_hierarchical(sensitive, 'profile')`: t-closeness (hierarchical ground distance) of a
//! group's sensitive values against the named profile's input and sensitive hierarchy.

use std::sync::LazyLock;

use arrow::datatypes::DataType;
use datafusion::common::{Result, plan_err};
use datafusion::logical_expr::Documentation;

use super::histogram::{Finish, HistogramAggregate, HistogramSpec, Profiles, no_param};

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        super::table::doc_section(),
        "t-closeness with hierarchical ground distance: the earth mover's distance over the profile's sensitive hierarchy (Li, Li & Venkatasubramanian, ICDE 2007), moving mass between two leaves costing the level of their lowest common group over the hierarchy's height. NULL when the profile has no sensitive hierarchy. NULLs are ignored; an empty group gives NULL. The profile's input is read once per \
         query (its distribution); a value absent from it is an error. Worked example: the ICDE 2007 disease classes of Table 4: 7/27, 8/27 and 5/27.",
        "emd_hierarchical(sensitive, 'profile')",
    )
    .with_sql_example("SELECT max(emd_hierarchical(disease, 'patients')) FROM patients GROUP BY substr(zip, 1, 4);")
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
            "emd_hierarchical: the second argument must be a profile name, got {}",
            args[1]
        );
    }
    Ok(())
}

static SPEC: HistogramSpec = HistogramSpec {
    name: "emd_hierarchical",
    arity: 2,
    check,
    param: no_param,
    finish: Finish::Distance(|d| d.t_hierarchical),
    doc: || &DOC,
};

/// The `emd_hierarchical` aggregate over the profiles of `profiles`.
pub(super) fn emd_hierarchical(profiles: Profiles) -> HistogramAggregate {
    HistogramAggregate::with_profiles(&SPEC, profiles)
}
