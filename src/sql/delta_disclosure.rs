//! `delta_disclosure(sensitive, 'profile')`: δ-disclosure of a group's sensitive values against
//! the named profile's input.

use std::sync::LazyLock;

use datafusion::logical_expr::Documentation;

use super::histogram::{
    Finish, HistogramAggregate, HistogramSpec, Profiles, distance_doc, no_param, profile_arg,
};

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    distance_doc(
        "delta_disclosure",
        "δ-disclosure of a group: the largest |ln(p_E(s) / p(s))| over the sensitive values \
         present in the group, against the profile's input.",
        "a value held by 1 of 9 input rows and 1 of the group's 3: ln 3",
        "SELECT max(d) FROM (SELECT delta_disclosure(occupation, 'adult') AS d FROM adult \
         GROUP BY generalize(age, 'age', 3));",
    )
});

static SPEC: HistogramSpec = HistogramSpec {
    name: "delta_disclosure",
    arity: 2,
    check: profile_arg,
    param: no_param,
    finish: Finish::Distance(|d| d.delta),
    doc: || &DOC,
};

/// The `delta_disclosure` aggregate over the profiles of `profiles`.
pub(super) fn delta_disclosure(profiles: Profiles) -> HistogramAggregate {
    HistogramAggregate::with_profiles(&SPEC, profiles)
}
