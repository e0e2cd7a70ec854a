//! `beta_likeness(sensitive, 'profile')`: basic β-likeness of a group's sensitive values against
//! the named profile's input.

use std::sync::LazyLock;

use datafusion::logical_expr::Documentation;

use super::histogram::{
    Finish, HistogramAggregate, HistogramSpec, Profiles, distance_doc, no_param, profile_arg,
};

static DOC: LazyLock<Documentation> = LazyLock::new(|| {
    distance_doc(
        "beta_likeness",
        "Basic β-likeness of a group: the largest relative gain (p_E(s) − p(s)) / p(s) of a \
         sensitive value's share in the group over its share in the profile's input, among values \
         more frequent in the group (0 when there is none).",
        "a value held by 1 of 9 input rows and 1 of the group's 3: (1/3 − 1/9) / (1/9) = 2",
        "SELECT max(b) FROM (SELECT beta_likeness(occupation, 'adult') AS b FROM adult \
         GROUP BY generalize(age, 'age', 3));",
    )
});

static SPEC: HistogramSpec = HistogramSpec {
    name: "beta_likeness",
    arity: 2,
    check: profile_arg,
    param: no_param,
    finish: Finish::Distance(|d| d.beta),
    doc: || &DOC,
};

/// The `beta_likeness` aggregate over the profiles of `profiles`.
pub(super) fn beta_likeness(profiles: Profiles) -> HistogramAggregate {
    HistogramAggregate::with_profiles(&SPEC, profiles)
}
